// Vantage launches: `kernel.launch(device, grid, args...)` with every argument checked against the
// kernel's signature before anything runs (docs/design.md section 7). A launch looks its specialization
// up in the kernel's own table (compiling it once on a miss, however many threads ask at once),
// evaluates the residual guards, checks each argument (count, kind, element type, constness, which
// device its memory is on, extent against its length, alignment for vector accesses, overlap of a
// writable buffer with any other) and the launch shape against the device, then packs the arguments
// and launches: `cuLaunchKernel` on a GPU, the reference interpreter elsewhere. A failed check throws
// LaunchError naming the parameter; nothing runs. The hit path allocates nothing and takes no lock.
#pragma once

#include <array>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "vantage/diagnostics.hpp"
#include "vantage/kernel.hpp"
#include "vantage/runtime.hpp"
#include "vantage/spec.hpp"
#include "vantage/types.hpp"

namespace vantage {

/// The launch shape: blocks in the grid and threads per block (0: the kernel's declared count).
struct Grid {
  std::int64_t blocks = 1;
  std::int64_t threads = 0;
  /// A 2-D or 3-D launch as CUDA writes it, `<<<dim3(gx, gy), dim3(bx, by)>>>`: gx * gy blocks of
  /// bx * by threads, which the kernel splits with `Scope::block_xyz` and `Scope::thread_xyz`.
  static Grid of(Dim3 blocks, Dim3 threads) { return Grid{blocks.count(), threads.count()}; }
};

/// One launch argument: a scalar of exactly the parameter's type, host memory with its length (for
/// devices that run on host memory), or a device buffer. A `const std::vector<T>`, `std::span<const
/// T>` or `Buffer<const T>` may only be passed for a read-only pointer.
class LaunchArg {
 public:
  enum class Kind : std::uint8_t { Scalar, HostMemory, DeviceMemory };

  template <class T>
  requires(std::is_arithmetic_v<T>) LaunchArg(T v) : type_(scalar_of<T>) {  // NOLINT
    if constexpr (std::is_floating_point_v<T>)
      f_ = static_cast<double>(v);
    else
      i_ = static_cast<std::int64_t>(v);
  }
  /// 16-bit floats by their bits.
  LaunchArg(half v) : type_(ScalarType::F16), i_(v.bits) {}       // NOLINT
  LaunchArg(bfloat16 v) : type_(ScalarType::BF16), i_(v.bits) {}  // NOLINT
  /// 8-bit floats by their bits.
  LaunchArg(fp8_e4m3 v) : type_(ScalarType::F8E4M3), i_(v.bits) {}  // NOLINT
  LaunchArg(fp8_e5m2 v) : type_(ScalarType::F8E5M2), i_(v.bits) {}  // NOLINT
  template <class T>
  LaunchArg(std::vector<T>& v) : LaunchArg(std::span<T>(v)) {}  // NOLINT
  template <class T>
  LaunchArg(const std::vector<T>& v) : LaunchArg(std::span<const T>(v)) {}  // NOLINT
  template <class T>
  LaunchArg(std::span<T> s)  // NOLINT
      : kind_(Kind::HostMemory),
        is_const_(std::is_const_v<T>),
        type_(scalar_of<std::remove_const_t<T>>),
        address_(reinterpret_cast<std::uint64_t>(s.data())),
        length_(static_cast<std::int64_t>(s.size())) {}
  template <class T>
  LaunchArg(PinnedBuffer<T>& p) : LaunchArg(p.span()) {}  // NOLINT
  template <class T>
  LaunchArg(const PinnedBuffer<T>& p) : LaunchArg(p.span()) {}  // NOLINT
  template <class T>
  LaunchArg(Buffer<T> b)  // NOLINT
      : kind_(Kind::DeviceMemory),
        is_const_(std::is_const_v<T>),
        device_kind_(b.device_kind()),
        type_(scalar_of<std::remove_const_t<T>>),
        ordinal_(b.device_ordinal()),
        address_(b.address()),
        length_(b.size()) {}
  template <class T>
  LaunchArg(DeviceBuffer<T>& b) : LaunchArg(b.view()) {}  // NOLINT
  template <class T>
  LaunchArg(const DeviceBuffer<T>& b) : LaunchArg(b.view()) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_buffer() const { return kind_ != Kind::Scalar; }
  bool is_const() const { return is_const_; }
  ScalarType type() const { return type_; }
  /// Integers (and bool) in the IR's representation; 16-bit floats: their bits.
  std::int64_t int_value() const { return i_; }
  double float_value() const { return f_; }
  /// Host pointer (host memory) or device address (device memory).
  std::uint64_t address() const { return address_; }
  void* data() const { return reinterpret_cast<void*>(address_); }
  std::int64_t length() const { return length_; }
  DeviceKind device_kind() const { return device_kind_; }
  int device_ordinal() const { return ordinal_; }

 private:
  Kind kind_ = Kind::Scalar;
  bool is_const_ = false;
  DeviceKind device_kind_ = DeviceKind::Interpreter;
  ScalarType type_ = ScalarType::I32;
  int ordinal_ = 0;
  std::int64_t i_ = 0;
  double f_ = 0;
  std::uint64_t address_ = 0;
  std::int64_t length_ = 0;
};

/// What one launch did.
struct LaunchReport {
  std::int64_t threads = 0;
  std::int64_t thread_statements = 0;  ///< interpreter: statements executed, summed over threads
  double seconds = 0;                  ///< host devices: how long it ran (GPU launches return at once)
  /// Interpreter with InterpreterOptions::measure: the launch's memory requests and branches as they
  /// ran, in the units of `kernel.report` (work, span and flops left at 0); null otherwise.
  std::shared_ptr<const CostReport> measured;
};

/// Checks the arguments, then runs the kernel on `device` (a GPU: its default stream, asynchronously).
/// Throws LaunchError (naming the parameter) before anything runs, CheckError when the launch shape
/// breaks a rule of the kernel, CompileError when NVRTC rejects it, DriverError when the driver
/// fails, and ExecutionError when the kernel goes wrong as it runs on the interpreter.
LaunchReport launch(const Kernel& kernel, const Device& device, Grid grid, std::span<const LaunchArg> args);
/// The same on `stream`, asynchronously for a GPU.
LaunchReport launch(const Kernel& kernel, const Stream& stream, Grid grid, std::span<const LaunchArg> args);

template <class... A>
LaunchReport Kernel::launch(const Device& device, Grid grid, A&&... args) const {
  const std::array<LaunchArg, sizeof...(A)> packed{LaunchArg(std::forward<A>(args))...};
  return vantage::launch(*this, device, grid, packed);
}
template <class... A>
LaunchReport Kernel::launch(const Stream& stream, Grid grid, A&&... args) const {
  const std::array<LaunchArg, sizeof...(A)> packed{LaunchArg(std::forward<A>(args))...};
  return vantage::launch(*this, stream, grid, packed);
}

/// Statistics of one kernel's launches (its own table of loaded specializations).
struct LaunchStats {
  std::int64_t launches = 0;  ///< launches that found their specialization ready
  std::int64_t misses = 0;    ///< launches (or prepares) that had to wait for a compile
  std::int64_t compiles = 0;  ///< specializations made (compiled or read from the cache, then loaded)
  std::int64_t failures = 0;  ///< specializations that failed to compile or load
  double compile_ms = 0;      ///< time spent making them
};
LaunchStats launch_stats(const Kernel& kernel);

/// Compiles and loads the specialization of `spec` for `device` in the background, so that the first
/// launch finds it ready. The future holds the error, if making it failed. A launch uses the variant
/// for the size classes of its integer arguments (automatic specialization, docs/runtime.md): give
/// `spec` those (`launch_spec`) to prepare the one a launch will find.
std::shared_future<void> prepare(const Kernel& kernel, const Device& device, const Spec& spec);

/// `spec` with the assumptions a launch makes of the kernel's unspecialized integer parameters when
/// `values` holds their arguments (by name; others are left out): the variant such a launch uses.
/// Throws std::invalid_argument for a value its parameter's type cannot hold.
Spec launch_spec(const Kernel& kernel, Spec spec, const std::map<std::string, std::int64_t>& values);

/// For a kernel that leaves its threads per block open: the count, among 64, 128, 256, 512 and 1024
/// that the kernel's rules accept and `device` allows, that keeps the most of a multiprocessor busy
/// (occupancy from the compiled kernel's registers and shared memory where NVRTC is at hand; ties go
/// to the count nearest 256). Throws LaunchError when no count fits.
std::int64_t best_threads(const Kernel& kernel, const Device& device, Spec spec = {});

/// A kernel whose signature is also a C++ type: `TypedKernel<void(int, float, Buffer<const float>,
/// Buffer<float>)>`. Making one checks the types against the kernel's parameters (LaunchError naming
/// the first that differs); `launch` then takes exactly those types, checked by the C++ compiler.
template <class Signature>
class TypedKernel;

namespace detail {
template <class P>
struct TypedParam {
  static constexpr bool valid =
      (std::is_arithmetic_v<P> && !std::is_same_v<P, char>) || std::is_same_v<P, half> || std::is_same_v<P, bfloat16>;
  static constexpr bool pointer = false;
  static constexpr bool is_const = false;
  static ScalarType type() { return scalar_of<P>; }
};
template <class T>
struct TypedParam<Buffer<T>> {
  static constexpr bool valid = true;
  static constexpr bool pointer = true;
  static constexpr bool is_const = std::is_const_v<T>;
  static ScalarType type() { return scalar_of<std::remove_const_t<T>>; }
};
/// An argument of C++ type A may be passed for parameter type P: the same scalar type exactly, or
/// something that converts to the Buffer view.
template <class P, class A>
constexpr bool typed_accepts() {
  using D = std::remove_cvref_t<A>;
  if constexpr (TypedParam<P>::pointer)
    return std::is_convertible_v<A, P>;
  else
    return std::is_same_v<D, P>;
}
struct TypedParamInfo {
  bool pointer;
  bool is_const;
  ScalarType type;
};
/// Throws LaunchError naming the first parameter of `kernel` whose type differs from `params`.
void check_typed_signature(const Kernel& kernel, std::span<const TypedParamInfo> params);
}  // namespace detail

template <class... P>
class TypedKernel<void(P...)> {
  static_assert((detail::TypedParam<P>::valid && ...),
                "TypedKernel parameters are arithmetic types (int, float, ...) or Buffer<T> / Buffer<const T>");

 public:
  explicit TypedKernel(Kernel kernel) : kernel_(std::move(kernel)) {
    const std::array<detail::TypedParamInfo, sizeof...(P)> params{detail::TypedParamInfo{
        detail::TypedParam<P>::pointer, detail::TypedParam<P>::is_const, detail::TypedParam<P>::type()}...};
    detail::check_typed_signature(kernel_, params);
  }
  const Kernel& kernel() const { return kernel_; }

  template <class... A>
  LaunchReport launch(const Device& device, Grid grid, A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P),
                  "TypedKernel::launch: the number of arguments differs from the signature");
    static_assert((detail::typed_accepts<P, A>() && ...),
                  "TypedKernel::launch: an argument's type is not its parameter's (scalars must be exactly the "
                  "parameter's type, e.g. 2.0f for float; buffers a Buffer<T> or DeviceBuffer<T> of its element "
                  "type, read-only ones for Buffer<const T>)");
    const std::array<LaunchArg, sizeof...(A)> packed{LaunchArg(static_cast<P>(std::forward<A>(args)))...};
    return vantage::launch(kernel_, device, grid, packed);
  }
  template <class... A>
  LaunchReport launch(const Stream& stream, Grid grid, A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P),
                  "TypedKernel::launch: the number of arguments differs from the signature");
    static_assert((detail::typed_accepts<P, A>() && ...),
                  "TypedKernel::launch: an argument's type is not its parameter's (scalars must be exactly the "
                  "parameter's type, e.g. 2.0f for float; buffers a Buffer<T> or DeviceBuffer<T> of its element "
                  "type, read-only ones for Buffer<const T>)");
    const std::array<LaunchArg, sizeof...(A)> packed{LaunchArg(static_cast<P>(std::forward<A>(args)))...};
    return vantage::launch(kernel_, stream, grid, packed);
  }

 private:
  Kernel kernel_;
};

}  // namespace vantage
