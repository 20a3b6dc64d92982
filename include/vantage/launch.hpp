// Vantage launches: a device, host buffers that know their length, and `kernel.launch(device, grid,
// args...)` with every argument checked against the kernel's signature before anything runs
// (DESIGN.md section 7). The device today is the reference interpreter, which runs any kernel on any
// machine with memcheck, racecheck, synccheck and initcheck at the user's builder lines; GPUs and the
// CPU backend come with the runtime issues that follow.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "vantage/kernel.hpp"
#include "vantage/types.hpp"

namespace vantage {

/// What the interpreter device does between barriers: which thread runs first.
enum class ThreadOrder : std::uint8_t { Forward, Reverse, Random };

struct InterpreterOptions {
  ThreadOrder order = ThreadOrder::Forward;
  std::uint64_t seed = 1;  ///< for ThreadOrder::Random
  bool checks = true;      ///< racecheck and initcheck (memcheck and synccheck are always on)
  /// Thread-statements a launch may run before it stops with an ExecutionError of check "limit".
  std::int64_t max_statements = std::int64_t{1} << 31;
};

/// Where a launch runs.
class Device {
 public:
  /// The reference interpreter: exact, checked, slow (see docs/semantics.md).
  static Device interpreter(InterpreterOptions options = {}) { return Device(options); }
  std::string name() const { return "interpreter"; }
  const InterpreterOptions& interpreter_options() const { return options_; }

 private:
  explicit Device(InterpreterOptions o) : options_(o) {}
  InterpreterOptions options_;
};

/// The launch shape: blocks in the grid and threads per block (0: the kernel's declared count).
struct Grid {
  std::int64_t blocks = 1;
  std::int64_t threads = 0;
};

/// One launch argument: a scalar of exactly the parameter's type, or host memory with its length.
/// A `const std::vector<T>` (or `std::span<const T>`) may only be passed for a read-only pointer.
class LaunchArg {
 public:
  template <class T>
  requires(std::is_arithmetic_v<T>) LaunchArg(T v) : type_(scalar_of<T>) {
    if constexpr (std::is_floating_point_v<T>)
      f_ = static_cast<double>(v);
    else
      i_ = static_cast<std::int64_t>(v);
  }
  template <class T>
  LaunchArg(std::vector<T>& v) : LaunchArg(std::span<T>(v)) {}
  template <class T>
  LaunchArg(const std::vector<T>& v) : LaunchArg(std::span<const T>(v)) {}
  template <class T>
  LaunchArg(std::span<T> s)
      : buffer_(true),
        is_const_(std::is_const_v<T>),
        type_(scalar_of<std::remove_const_t<T>>),
        data_(const_cast<std::remove_const_t<T>*>(s.data())),
        length_(static_cast<std::int64_t>(s.size())) {}

  bool is_buffer() const { return buffer_; }
  bool is_const() const { return is_const_; }
  ScalarType type() const { return type_; }
  std::int64_t int_value() const { return i_; }
  double float_value() const { return f_; }
  void* data() const { return data_; }
  std::int64_t length() const { return length_; }

 private:
  bool buffer_ = false, is_const_ = false;
  ScalarType type_ = ScalarType::I32;
  std::int64_t i_ = 0;
  double f_ = 0;
  void* data_ = nullptr;
  std::int64_t length_ = 0;
};

/// What one launch did.
struct LaunchReport {
  std::int64_t threads = 0;
  std::int64_t thread_statements = 0;  ///< interpreter: statements executed, summed over threads
  double seconds = 0;
};

/// Checks the arguments, then runs the kernel. Throws LaunchError (naming the parameter) before
/// anything runs, CheckError when the launch shape breaks a rule of the kernel, and ExecutionError
/// when the kernel goes wrong as it runs.
LaunchReport launch(const Kernel& kernel, const Device& device, Grid grid, const std::vector<LaunchArg>& args);

template <class... A>
LaunchReport Kernel::launch(const Device& device, Grid grid, A&&... args) const {
  return vantage::launch(*this, device, grid, std::vector<LaunchArg>{LaunchArg(std::forward<A>(args))...});
}

}  // namespace vantage
