// Vantage runtime: devices, streams, events and memory (see vantage/runtime.hpp).
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "backend/backend.h"
#include "backend/driver.h"
#include "backend/gpu.h"
#include "jit/target/target.h"
#include "support/log.h"
#include "vantage/compile.hpp"
#include "vantage/diagnostics.hpp"
#include "vantage/runtime.hpp"
#include "vantage/version.hpp"

namespace vantage {
namespace {

using driver::check;

const driver::Table& drv() { return driver::table(); }

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Host memory aligned for any vector access (and cache lines).
constexpr std::size_t kHostAlign = 64;
/// Host buffers of this size or more are aligned to it and asked for transparent huge pages: a
/// memory-bound kernel on the CPU backend streams through them with a 512th of the TLB misses.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

/// Memory for a host device's buffer (freed with std::free).
void* host_alloc(std::size_t bytes) {
  std::size_t align = bytes >= kHugePage ? kHugePage : kHostAlign;
  void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (align == kHugePage) ::madvise(p, (bytes + align - 1) / align * align, MADV_HUGEPAGE);  // a hint only
#endif
  return p;
}

/// The host devices (interpreter, CPU) check kernels against the most capable target, so that a
/// construct they cannot run (wgmma, TMA) reaches them and is refused as UnsupportedOnDevice at the
/// user's line, not as a missing feature of some GPU.
const DeviceProperties& interpreter_properties() {
  static const DeviceProperties p = [] {
    const target::Info& t = target::info(Arch::SM_90a);
    DeviceProperties d;
    d.name = "interpreter";
    d.arch = t.arch;
    d.compute_major = t.number / 10;
    d.compute_minor = t.number % 10;
    d.multiprocessors = 1;
    d.max_threads_per_block = static_cast<int>(t.max_threads_per_block);
    d.shared_per_block = t.shared_static_bytes;
    d.shared_per_block_optin = t.shared_optin_bytes;
    d.shared_per_multiprocessor = t.shared_optin_bytes;
    d.registers_per_block = static_cast<int>(t.registers_per_block);
    d.registers_per_multiprocessor = static_cast<int>(t.registers_per_block);
    return d;
  }();
  return p;
}

std::string size_text(std::size_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

PlacementModel placement_model(const DeviceProperties& g, int cpu_threads) {
  PlacementModel m;
  m.cpu_threads = std::max(1, cpu_threads);
  if (g.multiprocessors <= 0 || g.clock_khz <= 0) return m;
  const double hz = g.clock_khz * 1e3;
  // FP32 lanes per multiprocessor: 64 on sm_80, 128 from sm_86 on (and on sm_90).
  const int lanes = g.compute_major > 8 || (g.compute_major == 8 && g.compute_minor >= 6) ? 128 : 64;
  m.gpu = g.name;
  m.gpu_sms = g.multiprocessors;
  m.gpu_threads_per_sm = g.max_threads_per_multiprocessor;
  if (const double gbs = g.memory_bandwidth_gbs(); gbs > 0) m.gpu_bytes_per_s = gbs * 1e9;
  m.gpu_flops = g.multiprocessors * lanes * 2.0 * hz;  // an FMA is two
  // Four schedulers per multiprocessor, each issuing one instruction a cycle; a warp step is four.
  m.gpu_steps_per_s = g.multiprocessors * 4.0 * hz / 4.0;
  m.gpu_step_s = 4.0 / hz;
  return m;
}

// ---------------------------------------------------------------- devices
Device Device::interpreter(InterpreterOptions options) { return Device(DeviceKind::Interpreter, 0, options); }

bool Device::cpu_available() { return backend::cpu_available(); }

Device Device::cpu(int threads) {
  if (!cpu_available()) throw ToolchainError("this build of Vantage has no CPU backend (VANTAGE_CPU_BACKEND=OFF)");
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return Device(DeviceKind::Cpu, 0, {}, threads);
}

Device Device::gpu(int ordinal) {
  gpu::properties(ordinal);  // throws, naming why, when there is no such GPU
  return Device(DeviceKind::Gpu, ordinal, {});
}

int Device::gpu_count() { return gpu::count(); }
std::string Device::gpu_problem() { return gpu::problem(); }

Device Device::best() {
  static std::once_flag logged;
  if (gpu::count() > 0) {
    Device d = gpu(0);
    std::call_once(logged, [&] { logging::get().info("device: {} (the first GPU)", d.name()); });
    return d;
  }
  if (cpu_available()) {
    Device d = cpu();
    std::call_once(logged, [&] {
      logging::get().info("device: the CPU backend on {} threads, because there is no usable GPU ({})",
                          d.host_threads(), gpu::problem());
    });
    return d;
  }
  Device d = interpreter();
  std::call_once(logged, [&] {
    logging::get().info(
        "device: the interpreter, because there is no usable GPU ({}) and this build has no CPU "
        "backend",
        gpu::problem());
  });
  return d;
}

std::vector<Device> Device::all() {
  std::vector<Device> out;
  for (int i = 0; i < gpu::count(); ++i) out.push_back(gpu(i));
  if (cpu_available()) out.push_back(cpu());
  out.push_back(interpreter());
  return out;
}

std::string Device::name() const {
  if (kind_ == DeviceKind::Cpu) return "CPU (" + std::to_string(threads_) + (threads_ == 1 ? " thread)" : " threads)");
  if (kind_ != DeviceKind::Gpu) return device_kind_name(kind_);
  const DeviceProperties& p = properties();
  if (p.runs_ptx)
    return "GPU " + std::to_string(ordinal_) + " (" + p.name + ", sm_" + std::to_string(p.compute_major) +
           std::to_string(p.compute_minor) + " through " + arch_name(p.arch) + " PTX)";
  return "GPU " + std::to_string(ordinal_) + " (" + p.name + ", " + arch_name(p.arch) + ")";
}

std::string Device::toolchain() const {
  std::string v = std::string("vantage ") + version() + "; ";
  return v + backend::for_kind(kind_).toolchain();
}

const DeviceProperties& Device::properties() const {
  if (kind_ == DeviceKind::Gpu) return gpu::properties(ordinal_);
  return interpreter_properties();
}

void Device::synchronize() const {
  if (kind_ != DeviceKind::Gpu) return;
  gpu::make_current(ordinal_);
  check(drv().ctx_synchronize(), "cuCtxSynchronize", name());
  gpu::raise_recorded_error(ordinal_);
}

// ---------------------------------------------------------------- streams and events
Stream::Stream(const Device& device) : device_(device), owned_(true) {
  if (!device.is_gpu()) return;
  gpu::make_current(device.ordinal());
  driver::CUstream s = nullptr;
  check(drv().stream_create(&s, 0), "cuStreamCreate", device.name());
  handle_ = s;
}
Stream::~Stream() {
  if (owned_ && handle_) drv().stream_destroy(static_cast<driver::CUstream>(handle_));  // result ignored: no throw
}
Stream::Stream(Stream&& o) noexcept : device_(o.device_), handle_(o.handle_), owned_(o.owned_) {
  o.handle_ = nullptr;
  o.owned_ = false;
}
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (owned_ && handle_) drv().stream_destroy(static_cast<driver::CUstream>(handle_));
    device_ = o.device_;
    handle_ = o.handle_;
    owned_ = o.owned_;
    o.handle_ = nullptr;
    o.owned_ = false;
  }
  return *this;
}
Stream Stream::default_for(const Device& device) { return Stream(device, nullptr, false); }
void Stream::synchronize() const {
  if (!device_.is_gpu()) return;
  gpu::make_current(device_.ordinal());
  check(drv().stream_synchronize(static_cast<driver::CUstream>(handle_)), "cuStreamSynchronize", device_.name());
  gpu::raise_recorded_error(device_.ordinal());
}

Event::Event(const Device& device) : device_(device) {
  if (!device.is_gpu()) return;
  gpu::make_current(device.ordinal());
  driver::CUevent e = nullptr;
  check(drv().event_create(&e, 0), "cuEventCreate", device.name());
  handle_ = e;
}
Event::~Event() {
  if (handle_) drv().event_destroy(static_cast<driver::CUevent>(handle_));
}
Event::Event(Event&& o) noexcept : device_(o.device_), handle_(o.handle_), host_ms_(o.host_ms_) { o.handle_ = nullptr; }
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (handle_) drv().event_destroy(static_cast<driver::CUevent>(handle_));
    device_ = o.device_;
    handle_ = o.handle_;
    host_ms_ = o.host_ms_;
    o.handle_ = nullptr;
  }
  return *this;
}
void Event::record(const Stream& stream) {
  if (!device_.is_gpu()) {
    host_ms_ = now_ms();
    return;
  }
  if (!(stream.device() == device_))
    throw std::invalid_argument("Event::record: the event is on " + device_.name() + ", the stream on " +
                                stream.device().name());
  gpu::make_current(device_.ordinal());
  check(drv().event_record(static_cast<driver::CUevent>(handle_), static_cast<driver::CUstream>(stream.native())),
        "cuEventRecord", device_.name());
}
void Event::synchronize() const {
  if (!handle_) return;
  check(drv().event_synchronize(static_cast<driver::CUevent>(handle_)), "cuEventSynchronize", device_.name());
}
float Event::elapsed_ms(const Event& start) const {
  if (!device_.is_gpu()) return static_cast<float>(host_ms_ - start.host_ms_);
  float ms = 0;
  check(
      drv().event_elapsed_time(&ms, static_cast<driver::CUevent>(start.handle_), static_cast<driver::CUevent>(handle_)),
      "cuEventElapsedTime", device_.name());
  return ms;
}

// ---------------------------------------------------------------- memory
namespace detail {

void throw_copy_size(const char* what, std::int64_t given, std::int64_t have) {
  throw std::invalid_argument(std::string(what) + ": the host side has " + std::to_string(given) +
                              " elements, the device buffer " + std::to_string(have) + "; they must be equal");
}

Memory::Memory(const Device& device, std::size_t bytes) : device_(device), bytes_(bytes) {
  if (bytes == 0) return;
  if (device.is_host()) {
    address_ = reinterpret_cast<std::uint64_t>(host_alloc(bytes));
    return;
  }
  gpu::make_current(device.ordinal());
  driver::CUdeviceptr p = 0;
  check(drv().mem_alloc(&p, bytes), "cuMemAlloc", size_text(bytes) + " on " + device.name());
  address_ = p;
}
void Memory::release() noexcept {
  if (!address_) return;
  if (device_.is_host()) {
    std::free(reinterpret_cast<void*>(address_));
  } else {
    try {
      gpu::make_current(device_.ordinal());
      drv().mem_free(address_);  // result ignored: a destructor never throws
    } catch (...) {
    }
  }
  address_ = 0;
}
Memory::~Memory() { release(); }
Memory::Memory(Memory&& o) noexcept : device_(o.device_), address_(o.address_), bytes_(o.bytes_) {
  o.address_ = 0;
  o.bytes_ = 0;
}
Memory& Memory::operator=(Memory&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    address_ = o.address_;
    bytes_ = o.bytes_;
    o.address_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}
void Memory::copy_in(const void* host, std::size_t bytes, std::size_t offset) const {
  if (bytes == 0) return;
  if (device_.is_host()) {
    std::memcpy(reinterpret_cast<void*>(address_ + offset), host, bytes);
    return;
  }
  gpu::make_current(device_.ordinal());
  check(drv().memcpy_htod(address_ + offset, host, bytes), "cuMemcpyHtoD", size_text(bytes) + " to " + device_.name());
}
void Memory::copy_out(void* host, std::size_t bytes, std::size_t offset) const {
  if (bytes == 0) return;
  if (device_.is_host()) {
    std::memcpy(host, reinterpret_cast<const void*>(address_ + offset), bytes);
    return;
  }
  gpu::make_current(device_.ordinal());
  check(drv().memcpy_dtoh(host, address_ + offset, bytes), "cuMemcpyDtoH",
        size_text(bytes) + " from " + device_.name());
  gpu::raise_recorded_error(device_.ordinal());  // the copy waited for the kernels before it
}
void Memory::copy_in_async(const void* host, std::size_t bytes, std::size_t offset, const Stream& s) const {
  if (!device_.is_gpu()) return copy_in(host, bytes, offset);
  gpu::make_current(device_.ordinal());
  check(drv().memcpy_htod_async(address_ + offset, host, bytes, static_cast<driver::CUstream>(s.native())),
        "cuMemcpyHtoDAsync", size_text(bytes) + " to " + device_.name());
}
void Memory::copy_out_async(void* host, std::size_t bytes, std::size_t offset, const Stream& s) const {
  if (!device_.is_gpu()) return copy_out(host, bytes, offset);
  gpu::make_current(device_.ordinal());
  check(drv().memcpy_dtoh_async(host, address_ + offset, bytes, static_cast<driver::CUstream>(s.native())),
        "cuMemcpyDtoHAsync", size_text(bytes) + " from " + device_.name());
}
void Memory::fill_zero() const {
  if (bytes_ == 0) return;
  if (device_.is_host()) {
    std::memset(reinterpret_cast<void*>(address_), 0, bytes_);
    return;
  }
  gpu::make_current(device_.ordinal());
  check(drv().memset_d8(address_, 0, bytes_), "cuMemsetD8", size_text(bytes_) + " on " + device_.name());
}

HostMemory::HostMemory(std::size_t bytes) {
  if (bytes == 0) return;
  if (gpu::count() > 0) {
    gpu::make_current(0);
    check(drv().mem_alloc_host(&data_, bytes), "cuMemAllocHost", size_text(bytes));
    pinned_ = true;
    return;
  }
  data_ = host_alloc(bytes);
}
HostMemory::~HostMemory() {
  if (!data_) return;
  if (pinned_)
    drv().mem_free_host(data_);
  else
    std::free(data_);
}
HostMemory::HostMemory(HostMemory&& o) noexcept : data_(o.data_), pinned_(o.pinned_) { o.data_ = nullptr; }
HostMemory& HostMemory::operator=(HostMemory&& o) noexcept {
  if (this != &o) {
    this->~HostMemory();
    data_ = o.data_;
    pinned_ = o.pinned_;
    o.data_ = nullptr;
  }
  return *this;
}

}  // namespace detail

// ---------------------------------------------------------------- occupancy
double occupancy(const DeviceProperties& d, std::int64_t threads, int registers, std::int64_t shared_bytes) {
  if (threads <= 0 || threads > d.max_threads_per_block || shared_bytes > d.shared_per_block_optin) return 0;
  std::int64_t warps = (threads + d.warp_size - 1) / d.warp_size;
  std::int64_t blocks = d.max_blocks_per_multiprocessor;
  blocks = std::min<std::int64_t>(blocks, d.max_threads_per_multiprocessor / (warps * d.warp_size));
  if (registers > 0) {
    // Registers are allocated per warp in units of 256.
    std::int64_t per_warp = (static_cast<std::int64_t>(registers) * d.warp_size + 255) / 256 * 256;
    if (per_warp * warps > d.registers_per_block) return 0;
    blocks = std::min<std::int64_t>(blocks, d.registers_per_multiprocessor / (per_warp * warps));
  }
  if (shared_bytes > 0 && d.shared_per_multiprocessor > 0)
    blocks = std::min<std::int64_t>(blocks, d.shared_per_multiprocessor / shared_bytes);
  if (blocks <= 0) return 0;
  return static_cast<double>(blocks * warps * d.warp_size) / d.max_threads_per_multiprocessor;
}

}  // namespace vantage
