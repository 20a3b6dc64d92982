// Vantage's kernels beside their hand-written twins (bench/twins/*.cu), without a GPU: each example
// and its twin compiled for the same target at the example's benchmark sizes, disassembled, and
// compared by what the machine code spends: registers, spills, shared bytes, and instructions by
// kind (math, global and shared loads and stores by width, integer and predicate work, branches,
// calls, barriers), for the whole kernel and for its hottest loop. tests/test_twins.cpp holds the
// two rules CI enforces; bench/twins/twins_table.cpp prints the table docs/performance.md keeps.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/paper_kernels.hpp"
#include "vantage/vantage.hpp"

namespace vantage::twins {

/// A TMA tensor map a twin takes after its arguments, made by its caller from them: a bf16 matrix
/// (argument `buffer`, row-major, `rows` x `cols` the values of those arguments) read in boxes of
/// box_rows x box_cols in the 128-byte swizzle, as Vantage's launcher makes a TensorMap's.
struct TwinMap {
  int buffer = 0, rows = 0, cols = 0;
  int box_rows = 0, box_cols = 0;
};

/// One example and its twin.
struct Twin {
  std::string example;  ///< the name in examples::all()
  std::string file;     ///< the twin's source, relative to bench/twins/
  std::string entry;    ///< the twin's kernel
  /// The benchmark sizes: the example is compiled at them as the launcher would (its specialized
  /// parameters' values, the others' size classes: Assumption::of); the twin gets them as macros
  /// (TWIN_N, ...).
  std::map<std::string, std::int64_t> sizes;
  std::vector<TwinMap> maps = {};   ///< the tensor maps it takes after its arguments
  std::int64_t dynamic_shared = 0;  ///< the dynamic shared memory it is launched with
};
/// Every example with a twin, in a stable order.
const std::vector<Twin>& all();
/// The twin of example `name`, or null where it has none.
const Twin* find(const std::string& example);

/// The Spec the launcher compiles example `example` with at `sizes`: its specialized parameters'
/// values, and for the others the size classes those values are in (automatic specialization).
Spec variant_spec(const examples::Example& example, const std::map<std::string, std::int64_t>& sizes,
                  Arch arch = Arch::SM_90);
/// The twin's cubin for `arch` at `sizes` (given to its source as macros TWIN_NAME), compiled by
/// NVRTC from its source in `twins_dir` (bench/twins). Throws ToolchainError without NVRTC,
/// CompileError when NVRTC rejects it.
std::vector<char> compile_twin(const Twin& twin, const std::map<std::string, std::int64_t>& sizes,
                               const std::string& twins_dir, Arch arch = Arch::SM_90);

/// What one kernel's machine code spends.
struct Code {
  int registers = 0, stack = 0, local = 0, shared = 0;  ///< cuobjdump's resource usage (bytes but registers)
  std::map<std::string, int> kinds;                     ///< instructions by kind (see `kind_of`), whole kernel
  int instructions = 0;
  /// The hottest loop: the innermost loop with the most math instructions (FFMA, HMMA, ...), or, with
  /// none, the most memory instructions; the kernel's hot code where it has no loop. Only code that
  /// runs with the warp converged counts: not the paths for diverged warps (BRA.DIV) nor functions
  /// called (an access's failure report).
  std::map<std::string, int> loop_kinds;
  int loop_instructions = 0;
  bool has_loop = false;
  /// Math instructions of the hottest loop, or its memory instructions where it has no math.
  int loop_work() const;
  /// Local-memory traffic (STL, LDL): spills, or arrays the compiler could not keep in registers.
  int spills() const;
};

/// The kind of a SASS opcode: "FFMA", "FP" (other float arithmetic), "HMMA", "HGMMA", "LDG.32",
/// "LDG.64", "LDG.128", "STG.*", "LDS.*", "STS.*", "LDGSTS", "LDSM", "ATOM", "SHFL", "INT" (integer
/// arithmetic, logic, moves and conversions), "CONV" (reciprocals and float conversions, which an
/// integer division by a run-time value is made of), "PRED" (comparisons and predicate logic),
/// "BRANCH" (BRA, BSSY, BSYNC, ...), "CALL", "BAR", "LOCAL" (LDL, STL), "OTHER".
std::string kind_of(const std::string& opcode);

/// The code of `function` in a cubin (cuobjdump --dump-sass --dump-resource-usage). Throws
/// ToolchainError without cuobjdump, std::runtime_error when the cubin has no such function.
Code analyse(const std::vector<char>& cubin, const std::string& function);
/// The same from cuobjdump's text (for tests of the parser).
Code analyse_text(const std::string& dump, const std::string& function);

/// One row of the comparison.
struct Row {
  Twin twin;
  Code vantage, hand;
  bool proven = false;  ///< no access of the Vantage kernel is checked as it runs (Specialized::checks)
  int checks = 0;       ///< how many are
  /// The hottest loop's instructions per unit of work (math, or memory), Vantage's over the twin's.
  double loop_ratio() const;
};

/// Compiles the example (at its sizes) and its twin (`twins_dir`: bench/twins) for `arch` with
/// NVRTC and disassembles both. Throws ToolchainError without NVRTC or cuobjdump.
Row compare(const Twin& twin, const std::string& twins_dir, Arch arch = Arch::SM_90);

/// The rows as two Markdown tables: the whole kernel, and its hottest loop.
std::string markdown(const std::vector<Row>& rows);

}  // namespace vantage::twins
