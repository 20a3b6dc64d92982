// Vantage public compile vocabulary: target architectures, the specialization of a kernel for one
// launch, residual guards, the run-time signature, generated source, PTX and cubin, compile errors.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "vantage/builder.hpp"

namespace vantage {

/// Target GPU architectures. sm_90a enables Hopper-only instructions (wgmma, TMA multicast).
enum class Arch : std::uint8_t { SM_80, SM_86, SM_89, SM_90, SM_90a };
/// "sm_80", ..., "sm_90a".
const char* arch_name(Arch arch);
/// Compute capability times ten: 80, 86, 89, 90, 90.
int arch_number(Arch arch);

/// What one compiled variant is specialized on: the launch shape, the values of the size
/// parameters marked `specialize`, and the target.
struct Spec {
  std::int64_t threads = 0;                   ///< threads per block; 0 takes the kernel's declared count
  std::optional<std::int64_t> blocks;         ///< the grid, when a rule needs it; otherwise guarded at launch
  std::map<std::string, std::int64_t> sizes;  ///< specialized parameter values by name
  Arch arch = Arch::SM_90;

  Spec& with_threads(std::int64_t t) {
    threads = t;
    return *this;
  }
  Spec& with_blocks(std::int64_t b) {
    blocks = b;
    return *this;
  }
  Spec& with_size(const std::string& name, std::int64_t v) {
    sizes[name] = v;
    return *this;
  }
  Spec& with_arch(Arch a) {
    arch = a;
    return *this;
  }
};

/// A cheap predicate on launch-time values, evaluated by the launcher on every launch instead of
/// recompiling: "blocks % 2 == 0", "n == 1024".
struct Guard {
  enum class Kind : std::uint8_t {
    BlocksDivisibleBy,  ///< grid blocks % value == 0
    BlocksAtLeast,      ///< grid blocks >= value
    BlocksEqual,        ///< grid blocks == value
    ParamEquals,        ///< scalar parameter `param` == value (specialized sizes)
  };
  Kind kind;
  std::int64_t value = 0;
  int param = -1;    ///< parameter index for ParamEquals
  std::string text;  ///< human-readable predicate
  std::string rule;  ///< the checker rule it comes from, if any
  SourceLoc loc;

  /// `scalars[i]` is the value of parameter i when it is an integer scalar (others are ignored).
  bool accepts(std::int64_t blocks, const std::vector<std::int64_t>& scalars) const;
};

/// One parameter of the run-time signature the launcher checks arguments against.
struct ParamInfo {
  std::string name;
  bool is_pointer = false;
  ScalarType type = ScalarType::I32;  ///< scalar type, or element type of a pointer
  bool is_const = false;
  bool specialized = false;
  std::optional<std::int64_t> value;  ///< the specialized value
  std::string extent;                 ///< extent expression in C syntax (pointers), empty if none
  int alignment = 0;                  ///< bytes the base must be aligned to (vectorized accesses), 0 = element
};

/// A kernel specialized for one launch: generated CUDA C++, guards and signature.
struct Specialized {
  std::string entry;   ///< the extern "C" entry point
  std::string source;  ///< self-contained CUDA C++
  std::vector<Guard> guards;
  std::vector<ParamInfo> params;
  std::int64_t threads = 0;
  std::int64_t static_shared_bytes = 0;
  std::int64_t dynamic_shared_bytes = 0;  ///< above 48 KiB shared memory is dynamic
  Arch arch = Arch::SM_90;
  int barriers = 0;  ///< barriers and fences the sync pass placed
};

/// NVRTC rejected generated code. The diagnostics point at builder lines through `#line`.
class CompileError : public std::runtime_error {
 public:
  CompileError(std::string message, std::string log, std::vector<std::string> options, std::string source,
               std::vector<Diagnostic> diagnostics);
  const std::string& log() const { return log_; }
  const std::vector<std::string>& options() const { return options_; }
  const std::string& source() const { return source_; }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::string log_;
  std::vector<std::string> options_;
  std::string source_;
  std::vector<Diagnostic> diagnostics_;
};

/// NVRTC (or another toolchain piece) is missing or failed to load.
class ToolchainError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Binds the launch shape and specialized sizes, re-checks the size rules with the numbers, places
/// synchronization and emits CUDA C++. Throws CheckError when a rule fails for these numbers.
Specialized specialize_for(const Kernel& kernel, const Spec& spec);

/// Compiled machine code (or PTX) for one specialization.
struct Compiled {
  Specialized spec;
  std::vector<char> cubin;  ///< empty when PTX was asked for
  std::string ptx;          ///< empty when a cubin was asked for
  std::string log;          ///< NVRTC's log (empty when clean)
  std::vector<std::string> options;
  double compile_ms = 0;
};

enum class Output : std::uint8_t { Cubin, Ptx };

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
