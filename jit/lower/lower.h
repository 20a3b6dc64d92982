// Vantage lowering: a checked, specialized kernel becomes lowered IR, the form every backend
// consumes (the CUDA printer, the interpreter, the CPU backend and the cost report).
//
// Lowered IR uses the IR's own node kinds, minus everything about perspectives and views:
// - no Group, Split, Destruct, Partition, Claim, Lower, Async and no `id()`: thread and block
//   positions are explicit arithmetic on `Builtin` (threadIdx.x, blockIdx.x), and a split branch is
//   an `If` on the range of positions it covers;
// - every Load and Store names root memory (a pointer parameter, a shared or local array) with one
//   flat index; every shared array has its byte offset in `shared_offsets`;
// - barriers are `Barrier` statements resolved to a hardware primitive (jit/sync placed them);
// - vector accesses are `VectorCopy` statements, only where their whole extent is proven in bounds;
// - every other Load and Store that lowering cannot prove inside its memory carries a `bound` and a
//   `site` (Lowered::checks): it is checked as it runs, on every backend;
// - after its own parameters, the kernel and every function take one i64 length per pointer
//   parameter (the elements that pointer may reach), which those bounds use where no extent is
//   declared;
// - a call passes each pointer argument as (root, flat offset), then the callee's lengths, then
//   the callee's thread position, block position and shared-memory offset (-1: none) as three
//   trailing value arguments.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit/ir/ir.h"
#include "vantage/spec.hpp"
#include "vantage/target.hpp"

namespace vantage::lower {

struct Options {
  std::int64_t threads = 0;             ///< threads per block (T)
  std::optional<std::int64_t> blocks;   ///< the grid, when fixed
  std::int64_t max_blocks = INT32_MAX;  ///< the most blocks a launch may have (a residual guard)
  Arch arch = Arch::SM_90;
  /// The ranges the variant assumes of kernel parameters (Spec::assume), by variable.
  std::unordered_map<const ir::VarNode*, std::pair<std::int64_t, std::int64_t>> param_ranges;
  std::unordered_map<const ir::VarNode*, std::int64_t> param_multiples;  ///< and what each is a multiple of
};

/// An access checked as it runs (a Load or Store with a bound): where, and what it touches.
struct CheckSite {
  SourceLoc loc;
  std::string memory;  ///< the root's name; an assertion's text
  bool write = false;
  bool assertion = false;  ///< an assert_that's site (its failure records no index or bound)
};

struct Lowered {
  Options options;
  ir::KernelNode kernel;                   ///< parameters as specialized, body lowered
  std::vector<ir::FunctionPtr> functions;  ///< lowered device functions, callees before callers
  std::unordered_map<const ir::MemNode*, std::int64_t> shared_offsets;  ///< every shared array
  std::int64_t shared_bytes = 0;                                        ///< the kernel's peak shared memory
  std::int64_t shared_align = 16;      ///< the largest alignment a shared array asks for (the base is aligned to it)
  int barriers = 0;                    ///< hardware barriers placed automatically
  std::map<int, int> param_alignment;  ///< parameter index -> bytes a vector access needs
  std::vector<Diagnostic> problems;    ///< what cannot be lowered (grid-wide sync, barrier ids)
  /// Residual guards lowering adds to specialization's (a grid whose blocks' shares meet: one block).
  std::vector<Guard> guards;
  std::vector<CheckSite> checks;  ///< every access checked as it runs, by site
  /// The accesses (a Store and its Load) of copy loops of a vector's shape and size kept element by
  /// element, with why (its place not proven inside a buffer, or not a multiple of the vector): the
  /// cost report says it at their line.
  std::unordered_map<const void*, std::string> scalar_copies;
  std::size_t user_params = 0;  ///< the kernel's own parameters; then one length per pointer
};

/// The tag a kernel's code writes into its error record when an access checked as it runs fails
/// (never 0), on every backend: the runtime finds the kernel, and so its sites' builder lines, by it.
std::uint64_t check_tag(const std::string& entry);

/// Lowers a specialized kernel (jit/specialize's output) for one launch shape.
Lowered lower(const ir::KernelNode& kernel, const Options& options);

/// The stable text form of lowered IR (golden files, `vantage lower`, `--emit=lowered`).
std::string print(const Lowered& lowered);

/// Number of trailing ABI arguments of a lowered call (thread position, block position, shared offset).
inline constexpr std::size_t kAbiArgs = 3;

}  // namespace vantage::lower
