// Runs generated CUDA on this machine, for the kernels whose meaning does not depend on a GPU: one
// thread, integers, no shared memory or intrinsics. The host C++ compiler builds the generated source
// with a few definitions for the CUDA words such code uses (__device__, threadIdx, min) and with
// UndefinedBehaviorSanitizer, so a run checks two things the text of the source cannot show: the
// values the emitted helpers and loops compute (tests compare them with jit/ir/eval), and that the
// generated code has no undefined behaviour for those inputs (signed overflow, an oversized shift,
// division by zero abort the run).
#pragma once

#include <string>
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

}  // namespace vantage::test_support
