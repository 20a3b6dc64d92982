// Runs generated CUDA on this machine, for the kernels whose meaning does not depend on a GPU: one
// thread, integers, no shared memory or intrinsics. The host C++ compiler builds the generated source
// with a few definitions for the CUDA words such code uses (__device__, threadIdx, min) and with
// UndefinedBehaviorSanitizer, so a run checks two things the text of the source cannot show: the
// values the emitted helpers and loops compute (tests compare them with jit/ir/eval), and that the
// generated code has no undefined behaviour for those inputs (signed overflow, an oversized shift,
// division by zero abort the run).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vantage::test_support {

/// One kernel, called once per argument list.
struct HostKernel {
  std::string source;              ///< Specialized::source
  std::string entry;               ///< Specialized::entry
  std::string out_type;            ///< C++ type of the output buffer's elements; the last parameter
  std::vector<std::string> calls;  ///< C++ text of the arguments before the output, one per call
};

struct HostRun {
  bool ok = false;
  std::string problem;              ///< why not: the compiler's or the run's output
  std::vector<std::string> values;  ///< out[0] after each call, kernel by kernel, in order
};

/// Compiles every kernel into one program with the compiler that built the tests (VANTAGE_HOST_CXX)
/// and runs it (at most 60 seconds). Without that compiler the run fails: these tests never skip.
HostRun run_on_host(const std::vector<HostKernel>& kernels);

// ---------------------------------------------------------------- whole launches, every thread
// Generated CUDA run as a GPU would run it, on host threads: the blocks one after the other, each
// thread of a block a std::thread, `__syncthreads` and `__syncwarp` std::barriers, shuffles and votes
// exchanged through the warp's slots between two warp barriers, `__shared__` arrays static (one
// block runs at a time), atomics std::atomic_ref. Built with AddressSanitizer and
// UndefinedBehaviorSanitizer, and every buffer is allocated at exactly its length, so an access the
// generated code makes outside a buffer, unchecked, aborts the run. For kernels of integer and f32
// buffers without inline PTX (`runs_on_host` says).

/// One argument of a launch: a buffer (its elements; its length is their count) or a scalar.
struct HostArg {
  std::string type;  ///< C++ type of the scalar or of the buffer's elements
  bool buffer = false;
  std::vector<double> values;  ///< a buffer's elements (each exact in a double)
  double scalar = 0;

  static HostArg of(std::string type, double value) {
    HostArg a;
    a.type = std::move(type);
    a.scalar = value;
    return a;
  }
  template <class T>
  static HostArg of(std::string type, const std::vector<T>& elements) {
    HostArg a;
    a.type = std::move(type);
    a.buffer = true;
    a.values.assign(elements.begin(), elements.end());
    return a;
  }
};

struct HostLaunch {
  std::string source, entry;  ///< Specialized::source and ::entry
  int blocks = 1, threads = 32;
  std::vector<HostArg> args;  ///< the kernel's own parameters in order (lengths and the error record follow)
  /// Whether the kernel takes the lengths and error record Vantage's kernels take after their own
  /// parameters; false for plain CUDA (a hand-written twin, bench/twins).
  bool hidden = true;
};

struct HostLaunchResult {
  bool check_failed = false;  ///< the error record was written: an access was outside
  /// Each buffer argument after the launch, in order: integers as values, floats as their bits.
  std::vector<std::vector<long long>> buffers;
};

struct HostLaunches {
  bool ok = false;
  std::string problem;                    ///< why not: the compiler's output, or the run's (a sanitizer)
  std::vector<HostLaunchResult> results;  ///< one per launch, in order
  std::string printed;                    ///< what the kernels' printf wrote (its lines in no set order)
};

/// Whether a generated source can run on host threads: no inline PTX, dynamic shared memory or
/// 16-bit floats.
bool runs_on_host(const std::string& source);

/// Which sanitizers watch the host program: AddressSanitizer (accesses outside a buffer) or
/// ThreadSanitizer (two threads touching one element with no barrier between them: a barrier the
/// generated code lacks). UndefinedBehaviorSanitizer watches in both.
enum class HostSanitizer { Address, Thread };

/// Every launch in one program (each distinct source compiled once), run at most 120 seconds and a
/// second for each launch past a hundred.
HostLaunches run_launches_on_host(const std::vector<HostLaunch>& launches,
                                  HostSanitizer sanitizer = HostSanitizer::Address);

}  // namespace vantage::test_support
