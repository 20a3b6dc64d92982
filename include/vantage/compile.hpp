// Vantage public compile API: a checked kernel specialized for one launch (generated source, guards,
// run-time signature), compiled to PTX or a cubin by NVRTC, one at a time or many in parallel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vantage/kernel.hpp"
#include "vantage/spec.hpp"
#include "vantage/target.hpp"

namespace vantage {

/// An access the generated code checks as it runs (lowering could not prove it inside its memory):
/// where it is, for the error that names it.
struct CheckedAccess {
  std::string file;
  std::uint32_t line = 0, column = 0;
  std::string memory;  ///< the buffer or array's name; an assertion's text
  bool write = false;
  bool assertion = false;  ///< the site of an assert_that (Scope::assert_that), not of an access
};

/// A kernel specialized for one launch: generated CUDA C++, guards and signature.
struct Specialized {
  std::string entry;   ///< the extern "C" entry point
  std::string source;  ///< self-contained CUDA C++
  std::vector<Guard> guards;
  std::vector<ParamInfo> params;
  std::int64_t threads = 0;
  std::int64_t static_shared_bytes = 0;
  std::int64_t dynamic_shared_bytes = 0;  ///< above the static limit shared memory is dynamic
  Arch arch = Arch::SM_90;
  bool fp_contract = true;
  CompilerOptions compiler;  ///< the Spec's, for NVRTC
  int barriers = 0;          ///< barriers and fences the sync pass placed
  /// The accesses checked as it runs, by site number. The entry point takes the kernel's parameters,
  /// then one `long long` length per pointer parameter, then the error record they write to.
  std::vector<CheckedAccess> checks;
};

/// Binds the launch shape and specialized sizes, re-checks the size rules with the numbers, places
/// synchronization and emits CUDA C++. Throws CheckError when a rule fails for these numbers.
Specialized specialize_for(const Kernel& kernel, const Spec& spec);

/// Compiled machine code (or PTX) for one specialization.
struct Compiled {
  Specialized spec;
  std::vector<char> cubin;           ///< empty when PTX was asked for
  std::string ptx;                   ///< with a cubin too: what a GPU newer than every target runs
  std::string log;                   ///< NVRTC's log (empty when clean)
  std::vector<std::string> options;  ///< the canonical NVRTC options, exactly those the cache key holds
  double compile_ms = 0;
};

/// Specializes and compiles with NVRTC. Throws CheckError, CompileError or ToolchainError.
Compiled compile(const Kernel& kernel, const Spec& spec, Output output = Output::Cubin);

/// One job of `compile_many`; its result holds either the compiled kernel or the error text.
struct CompileJob {
  Kernel kernel;
  Spec spec;
  Output output = Output::Cubin;
};
struct CompileOutcome {
  std::optional<Compiled> compiled;
  std::string error;  ///< what() of the exception when compilation failed
};
/// Compiles every job on `threads` worker threads (0: hardware concurrency); each job fails on its own.
std::vector<CompileOutcome> compile_many(const std::vector<CompileJob>& jobs, int threads = 0);

/// NVRTC's version and build, part of every cache key. Throws ToolchainError when NVRTC is missing.
std::string compiler_fingerprint();
/// Whether NVRTC can be loaded on this host.
bool nvrtc_available();

}  // namespace vantage
