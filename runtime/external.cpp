// Vantage and the application's own CUDA objects: streams it made and memory it allocated, checked
// with the driver before Vantage uses them (see vantage/runtime.hpp: Stream::adopt, Device::wrap).
#include <cstdio>
#include <string>

#include "backend/driver.h"
#include "backend/gpu.h"
#include "vantage/diagnostics.hpp"
#include "vantage/runtime.hpp"

namespace vantage {
namespace {

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Stream Stream::adopt(const Device& device, void* handle, const std::string& name) {
  if (!device.is_gpu()) {
    if (handle) throw LaunchError(name, name + ": " + device.name() + " has no CUDA streams; pass a null handle");
    return Stream(device, nullptr, false);
  }
  if (!handle) return default_for(device);
  const driver::Table& d = driver::table();
  if (!d.stream_get_ctx)
    throw LaunchError(name, name + ": the CUDA driver at " + d.path + " cannot say which context a stream is of");
  driver::CUcontext ctx = nullptr;
  const driver::CUresult r = d.stream_get_ctx(static_cast<driver::CUstream>(handle), &ctx);
  if (r != driver::kSuccess)
    throw LaunchError(
        name, name + " (" + hex(reinterpret_cast<std::uintptr_t>(handle)) +
                  ") is not a stream the driver knows (destroyed, or another process's): " + driver::describe(r));
  if (ctx != gpu::context(device.ordinal()))
    throw LaunchError(name, name + " belongs to another CUDA context than " + device.name() +
                                "'s primary context, where Vantage allocates and launches (as the CUDA runtime "
                                "does); make it in the primary context, or on that device");
  return Stream(device, handle, false);
}

namespace detail {

void check_external(const Device& device, std::uint64_t address, std::int64_t count, std::size_t element_bytes,
                    std::size_t alignment, const std::string& name) {
  if (count < 0) throw LaunchError(name, name + ": a negative element count (" + std::to_string(count) + ")");
  if (address % alignment != 0)
    throw LaunchError(name, name + " at " + hex(address) + " is not aligned to its elements' " +
                                std::to_string(alignment) + " bytes");
  if (!device.is_gpu()) return;  // host devices run on host memory, which has no owner to ask
  const std::uint64_t bytes = static_cast<std::uint64_t>(count) * element_bytes;
  const driver::Table& d = driver::table();
  if (!d.pointer_get_attribute || !d.mem_get_address_range)
    throw LaunchError(name, name + ": the CUDA driver at " + d.path + " cannot say what memory is");
  gpu::make_current(device.ordinal());
  unsigned type = 0;
  driver::CUresult r = d.pointer_get_attribute(&type, driver::kPointerMemoryType, address);
  if (r != driver::kSuccess)
    throw LaunchError(
        name, name + " at " + hex(address) +
                  " is not memory the driver knows (host memory, freed, or never allocated): " + driver::describe(r));
  if (type == driver::kMemoryHost)
    throw LaunchError(name,
                      name + " at " + hex(address) + " is page-locked host memory, not memory of " + device.name());
  if (type != driver::kMemoryDevice && type != driver::kMemoryUnified)
    throw LaunchError(name, name + " at " + hex(address) + " is not device memory (a CUDA array?)");
  int ordinal = -1;
  r = d.pointer_get_attribute(&ordinal, driver::kPointerDeviceOrdinal, address);
  if (r == driver::kSuccess && ordinal != device.ordinal())
    throw LaunchError(name, name + " at " + hex(address) + " is memory of GPU " + std::to_string(ordinal) +
                                ", not of " + device.name());
  driver::CUdeviceptr base = 0;
  std::size_t size = 0;
  r = d.mem_get_address_range(&base, &size, address);
  if (r != driver::kSuccess)
    throw LaunchError(
        name, name + " at " + hex(address) + " is not memory the driver knows (freed?): " + driver::describe(r));
  const std::uint64_t left = base + size - address;
  if (bytes > left)
    throw LaunchError(name, name + " at " + hex(address) + " holds " + std::to_string(left) +
                                " bytes to the end of its allocation, fewer than the " + std::to_string(count) +
                                " elements of " + std::to_string(element_bytes) + " bytes claimed (" +
                                std::to_string(bytes) + " bytes)");
}

}  // namespace detail
}  // namespace vantage
