// Vantage runtime: where kernels run and the memory they run on. A Device is the reference
// interpreter (any machine), a GPU (through the CUDA driver, loaded at run time: the library runs on
// hosts without one), or the CPU backend (native code through LLVM ORC on the host's cores, where the
// build has it). Streams and events order and time work on a device;
// DeviceBuffer<T> owns memory on a device and knows its length and device; Buffer<T> is the
// non-owning view a launch takes; PinnedBuffer<T> is page-locked host memory for fast copies. Owners
// are move-only and their destructors never throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "vantage/device.hpp"
#include "vantage/report.hpp"
#include "vantage/target.hpp"
#include "vantage/types.hpp"

namespace vantage {

/// The placement advice's model (vantage/report.hpp) for this GPU: its memory bandwidth, FP32 peak
/// and warp issue rate from its multiprocessors, clock and memory bus, in place of the data-sheet
/// H200's; the CPU backend on `cpu_threads` host threads. Properties without a multiprocessor count
/// or clock (a host device's) keep the data sheet's GPU.
PlacementModel placement_model(const DeviceProperties& gpu, int cpu_threads = 1);

class Stream;
template <class T>
class Buffer;
template <class T>
class DeviceBuffer;

/// Where kernels run. A cheap value: copies name the same device.
class Device {
 public:
  /// The reference interpreter: exact, checked, slow (docs/semantics.md).
  static Device interpreter(InterpreterOptions options = {});
  /// The CPU backend: native code through LLVM ORC, blocks spread over `threads` host threads (0:
  /// one per core). Throws ToolchainError when the library was built without it.
  static Device cpu(int threads = 0);
  /// Whether this build has the CPU backend.
  static bool cpu_available();
  /// GPU `ordinal`; throws DriverError when there is no such GPU (the message says why).
  static Device gpu(int ordinal = 0);
  /// A GPU if one can be used, else the CPU backend, else the interpreter. The choice and the reason
  /// are logged once (info level).
  static Device best();
  /// Every device this host offers: its GPUs, the CPU backend, the interpreter.
  static std::vector<Device> all();
  /// GPUs the driver reports (0 without a driver or without GPUs).
  static int gpu_count();
  /// Why there is no GPU ("" when there is one): no driver, the driver failed to start, no device.
  static std::string gpu_problem();

  DeviceKind kind() const { return kind_; }
  int ordinal() const { return ordinal_; }
  bool is_gpu() const { return kind_ == DeviceKind::Gpu; }
  /// Runs on host memory (the interpreter and the CPU backend).
  bool is_host() const { return kind_ != DeviceKind::Gpu; }
  /// "interpreter", "GPU 0 (NVIDIA H100 80GB HBM3, sm_90)".
  std::string name() const;
  const DeviceProperties& properties() const;
  /// What the code a kernel becomes here depends on: Vantage's version and NVRTC's fingerprint (a
  /// GPU), LLVM's version and the host CPU's name and features (the CPU backend). Results measured
  /// with one toolchain are not reused with another (the tuner's stored results).
  std::string toolchain() const;
  const InterpreterOptions& interpreter_options() const { return options_; }
  /// Host threads the CPU backend runs blocks on.
  int host_threads() const { return threads_; }
  /// A checked view of `count` elements of T in memory Vantage did not allocate (a PyTorch or CuPy
  /// tensor's, another library's): on a GPU the driver says what it is, and memory that is not
  /// device memory, is another GPU's, was freed, ends before `count` elements or is misaligned for T
  /// is refused (LaunchError naming `name`). Host devices take host memory as it is. The memory
  /// stays the application's: it must outlive the launches that use it.
  template <class T>
  Buffer<T> wrap(std::uint64_t address, std::int64_t count, const std::string& name = "external memory") const;
  /// Waits for everything queued on the device.
  void synchronize() const;

  /// `n` elements of T on this device.
  template <class T>
  DeviceBuffer<T> alloc(std::int64_t n) const;

  /// Same kind and ordinal (interpreter options do not count).
  bool operator==(const Device& o) const { return kind_ == o.kind_ && ordinal_ == o.ordinal_; }

 private:
  Device(DeviceKind k, int ordinal, InterpreterOptions o, int threads = 0)
      : kind_(k), ordinal_(ordinal), options_(o), threads_(threads) {}
  DeviceKind kind_ = DeviceKind::Interpreter;
  int ordinal_ = 0;
  InterpreterOptions options_;
  int threads_ = 0;
};

/// An ordered queue of work on one device. Host devices run work at once, so their streams are
/// trivial. Move-only; the destructor waits for nothing and never throws.
class Stream {
 public:
  /// A new stream on `device`.
  explicit Stream(const Device& device);
  ~Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// The device's default stream (the legacy null stream of a GPU); not owned.
  static Stream default_for(const Device& device);
  /// The application's own stream (a CUstream, or the cudaStream_t of the CUDA runtime: the same
  /// handle), not owned: launches on it are ordered with the application's work on it. Refused
  /// (LaunchError naming `name`) when the driver does not know it or it belongs to another context
  /// than the device's primary one, where Vantage works (as the CUDA runtime does). On a host device
  /// the handle must be null.
  static Stream adopt(const Device& device, void* handle, const std::string& name = "stream");

  const Device& device() const { return device_; }
  void synchronize() const;
  /// The CUstream, or null for a default or host stream.
  void* native() const { return handle_; }

 private:
  Stream(const Device& d, void* h, bool owned) : device_(d), handle_(h), owned_(owned) {}
  Device device_;
  void* handle_ = nullptr;
  bool owned_ = false;
};

/// A point in a stream's work, for timing and waiting. Move-only.
class Event {
 public:
  explicit Event(const Device& device);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  void synchronize() const;
  /// Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms(const Event& start) const;

 private:
  Device device_;
  void* handle_ = nullptr;
  double host_ms_ = 0;  ///< host devices: when it was recorded
};

namespace detail {
/// Untyped memory on a device (host memory for host devices). Move-only.
class Memory {
 public:
  Memory() = default;
  Memory(const Device& device, std::size_t bytes);
  ~Memory();
  Memory(Memory&& o) noexcept;
  Memory& operator=(Memory&& o) noexcept;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  std::uint64_t address() const { return address_; }
  std::size_t bytes() const { return bytes_; }
  const Device& device() const { return device_; }
  void copy_in(const void* host, std::size_t bytes, std::size_t offset) const;
  void copy_out(void* host, std::size_t bytes, std::size_t offset) const;
  void copy_in_async(const void* host, std::size_t bytes, std::size_t offset, const Stream& s) const;
  void copy_out_async(void* host, std::size_t bytes, std::size_t offset, const Stream& s) const;
  void fill_zero() const;

 private:
  void release() noexcept;
  Device device_ = Device::interpreter();
  std::uint64_t address_ = 0;
  std::size_t bytes_ = 0;
};

/// Page-locked host memory (plain aligned memory without a GPU). Move-only.
class HostMemory {
 public:
  HostMemory() = default;
  explicit HostMemory(std::size_t bytes);
  ~HostMemory();
  HostMemory(HostMemory&& o) noexcept;
  HostMemory& operator=(HostMemory&& o) noexcept;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  bool pinned_ = false;
};

[[noreturn]] void throw_copy_size(const char* what, std::int64_t given, std::int64_t have);
/// Device::wrap's checks of memory from elsewhere (runtime/external.cpp).
void check_external(const Device& device, std::uint64_t address, std::int64_t count, std::size_t element_bytes,
                    std::size_t alignment, const std::string& name);
}  // namespace detail

/// A view of `size()` elements of T on one device: what a launch takes for a pointer parameter.
/// `Buffer<const T>` is a read-only view; a `Buffer<T>` converts to it.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  /// A view of device memory at `address`, unchecked: prefer Device::wrap, which asks the driver.
  Buffer(std::uint64_t address, std::int64_t size, const Device& device)
      : address_(address), size_(size), kind_(device.kind()), ordinal_(device.ordinal()) {}
  template <class U>
  requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>) Buffer(const Buffer<U>& o)  // NOLINT
      : address_(o.address()), size_(o.size()), kind_(o.device_kind()), ordinal_(o.device_ordinal()) {}

  std::uint64_t address() const { return address_; }
  std::int64_t size() const { return size_; }
  std::size_t bytes() const { return static_cast<std::size_t>(size_) * sizeof(T); }
  DeviceKind device_kind() const { return kind_; }
  int device_ordinal() const { return ordinal_; }
  /// Elements [offset, offset + count) of this view.
  Buffer sub(std::int64_t offset, std::int64_t count) const {
    Buffer b = *this;
    b.address_ += static_cast<std::uint64_t>(offset) * sizeof(T);
    b.size_ = count;
    return b;
  }

 private:
  std::uint64_t address_ = 0;
  std::int64_t size_ = 0;
  DeviceKind kind_ = DeviceKind::Interpreter;
  int ordinal_ = 0;
};

template <class T>
Buffer<T> Device::wrap(std::uint64_t address, std::int64_t count, const std::string& name) const {
  detail::check_external(*this, address, count, sizeof(T), alignof(T), name);
  return Buffer<T>(address, count, *this);
}

/// `n` elements of T owned on one device. Move-only; freed when destroyed.
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceBuffer holds plain element types");

 public:
  DeviceBuffer() = default;
  DeviceBuffer(const Device& device, std::int64_t n)
      : mem_(device, static_cast<std::size_t>(n < 0 ? 0 : n) * sizeof(T)), size_(n < 0 ? 0 : n) {}
  /// A moved-from buffer is empty: its view has no elements, so no launch can reach its old memory.
  DeviceBuffer(DeviceBuffer&& o) noexcept : mem_(std::move(o.mem_)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    mem_ = std::move(o.mem_);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }

  std::int64_t size() const { return size_; }
  const Device& device() const { return mem_.device(); }
  Buffer<T> view() { return Buffer<T>(mem_.address(), size_, mem_.device()); }
  Buffer<const T> view() const { return Buffer<const T>(mem_.address(), size_, mem_.device()); }
  operator Buffer<T>() { return view(); }              // NOLINT
  operator Buffer<const T>() const { return view(); }  // NOLINT

  /// Copies all of `host` (exactly size() elements) to the device, waiting for it.
  void copy_from(std::span<const T> host) {
    check(host.size());
    mem_.copy_in(host.data(), host.size_bytes(), 0);
  }
  /// Copies the device's elements to `host` (exactly size() elements), waiting for it.
  void copy_to(std::span<T> host) const {
    check(host.size());
    mem_.copy_out(host.data(), host.size_bytes(), 0);
  }
  void copy_from_async(std::span<const T> host, const Stream& s) {
    check(host.size());
    mem_.copy_in_async(host.data(), host.size_bytes(), 0, s);
  }
  void copy_to_async(std::span<T> host, const Stream& s) const {
    check(host.size());
    mem_.copy_out_async(host.data(), host.size_bytes(), 0, s);
  }
  /// The elements, copied to a new vector.
  std::vector<T> to_vector() const {
    std::vector<T> v(static_cast<std::size_t>(size_));
    copy_to(v);
    return v;
  }
  void zero() { mem_.fill_zero(); }

 private:
  void check(std::size_t n) const {
    if (static_cast<std::int64_t>(n) != size_) detail::throw_copy_size("copy", static_cast<std::int64_t>(n), size_);
  }
  detail::Memory mem_;
  std::int64_t size_ = 0;
};

template <class T>
DeviceBuffer<T> Device::alloc(std::int64_t n) const {
  return DeviceBuffer<T>(*this, n);
}

/// `n` elements of page-locked host memory (plain aligned memory where there is no GPU): copies from
/// and to it run at full speed and may be asynchronous. Move-only.
template <class T>
class PinnedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "PinnedBuffer holds plain element types");

 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::int64_t n)
      : mem_(static_cast<std::size_t>(n < 0 ? 0 : n) * sizeof(T)), size_(n < 0 ? 0 : n) {}
  T* data() { return static_cast<T*>(mem_.data()); }
  const T* data() const { return static_cast<const T*>(mem_.data()); }
  std::int64_t size() const { return size_; }
  T& operator[](std::int64_t i) { return data()[i]; }
  const T& operator[](std::int64_t i) const { return data()[i]; }
  operator std::span<T>() { return {data(), static_cast<std::size_t>(size_)}; }              // NOLINT
  operator std::span<const T>() const { return {data(), static_cast<std::size_t>(size_)}; }  // NOLINT
  std::span<T> span() { return *this; }
  std::span<const T> span() const { return *this; }

 private:
  detail::HostMemory mem_;
  std::int64_t size_ = 0;
};

/// The fraction of a multiprocessor's thread slots a kernel keeps busy with `threads` per block,
/// `registers` per thread and `shared_bytes` per block on `device` (0 when a block does not fit).
double occupancy(const DeviceProperties& device, std::int64_t threads, int registers, std::int64_t shared_bytes);

}  // namespace vantage
