// Vantage and DLPack (dlpack/dlpack.h; Debian's libdlpack-dev): a tensor of PyTorch, CuPy, JAX or
// any DLPack producer as a checked buffer a launch takes, and Vantage's buffers as DLPack tensors.
//
//   Buffer<const float> x = from_dlpack<const float>(tensor, device, "x");  // checked, not owned
//   DLManagedTensor* t = to_dlpack(device.alloc<float>(n));                 // owns the buffer now
//
// A tensor taken in must be of the buffer's element type, on the device (cuda:N for GPU N, cpu for
// the interpreter and the CPU backend), contiguous in row-major order, and, on a GPU, memory the
// driver vouches for (Device::wrap); otherwise LaunchError names it and says why. Its producer keeps
// owning it: it must outlive the launches that use it.
#pragma once

#include <dlpack/dlpack.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "vantage/diagnostics.hpp"
#include "vantage/runtime.hpp"

namespace vantage {
namespace detail {
/// The data address and the element count of a tensor that passes the checks above but the driver's.
std::pair<std::uint64_t, std::int64_t> check_dlpack(const DLTensor& t, ScalarType element, const Device& device,
                                                    const std::string& name);
/// A DLManagedTensor viewing `count` elements at `address`, shaped `shape` (empty: one dimension);
/// its deleter calls `release` (which frees what it owns), then frees itself.
DLManagedTensor* make_dlpack(std::uint64_t address, std::int64_t count, ScalarType element, DeviceKind kind,
                             int ordinal, std::vector<std::int64_t> shape, std::function<void()> release);
}  // namespace detail

/// A checked view of a DLPack tensor's elements on `device` (see above). Not owned.
template <class T>
Buffer<T> from_dlpack(const DLManagedTensor* tensor, const Device& device, const std::string& name = "tensor") {
  if (!tensor) throw LaunchError(name, name + ": a null DLPack tensor");
  auto [address, count] = detail::check_dlpack(tensor->dl_tensor, scalar_of<std::remove_const_t<T>>, device, name);
  return device.wrap<T>(address, count, name);
}

/// A DLPack tensor that owns `buffer` (freed by its deleter), shaped `shape` (empty: one dimension of
/// all its elements; else the dimensions' product must be its size).
template <class T>
DLManagedTensor* to_dlpack(DeviceBuffer<T>&& buffer, std::vector<std::int64_t> shape = {}) {
  auto* owned = new DeviceBuffer<T>(std::move(buffer));
  try {
    return detail::make_dlpack(owned->view().address(), owned->size(), scalar_of<T>, owned->device().kind(),
                               owned->device().ordinal(), std::move(shape), [owned] { delete owned; });
  } catch (...) {
    delete owned;
    throw;
  }
}

/// A DLPack tensor viewing `view`, owning nothing: the buffer must outlive the tensor's consumer.
template <class T>
DLManagedTensor* to_dlpack(Buffer<T> view, std::vector<std::int64_t> shape = {}) {
  return detail::make_dlpack(view.address(), view.size(), scalar_of<std::remove_const_t<T>>, view.device_kind(),
                             view.device_ordinal(), std::move(shape), nullptr);
}

}  // namespace vantage
