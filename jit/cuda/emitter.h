// The CUDA C++ emitter's classes, shared by the files that define them: the Emitter prints the
// kernel, its functions and statements (emit.cpp) and the intrinsics (emit_intrinsic.cpp: shuffles,
// atomics, cp.async, mma, wgmma, TMA); the ExprPrinter its expressions and exact indices
// (emit_expr.cpp); the Vocabulary holds the names and helpers in use. cuda_text.cpp spells types,
// names and literals, and the helpers printed on demand. Private to jit/cuda.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "jit/cuda/emit.h"
#include "jit/ir/eval.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/printer.h"
#include "jit/ir/range.h"
#include "jit/ir/visit.h"
#include "jit/target/target.h"

namespace vantage::cuda::detail {

using namespace ir;

const char* ctype_name(ScalarType t);
/// CUDA's double-precision name of a float math function (`sqrt` ... `copysign`; the f32 one adds
/// an `f`); null for the bit functions, bit_cast and the predicates, which are printed otherwise.
const char* math_name(MathFn fn);
/// Whether a name cannot be a variable's in the CUDA: a keyword, a CUDA word, a function the
/// printer calls (a variable of its name would hide it), or a name of ours (`vt_`, `__`).
bool is_reserved(const std::string& s);
std::string identifier(const std::string& name);
std::string quote_path(const char* file);
std::string float_text(double v, bool single);
/// Integer literal text of exactly the C++ type `t` maps to.
std::string int_text(ScalarType t, std::int64_t v);
/// The definition of one helper function (named `vt_<op>` for the C++ type of `t`); the integer
/// ones give the results docs/semantics.md defines where plain C++ would be undefined.
std::string helper_definition(const std::string& op, ScalarType t);
/// The definition of helper `vt_<op>` for `t`, built once per process: every kernel that needs it
/// prints the same text.
const std::string& cached_helper_definition(std::string_view op, ScalarType t);
/// A variable, parameter, id or constant: as cheap to print twice as once.
bool is_leaf(const ExprPtr& e);
/// Whether an expression reads memory (then evaluating it is observable: it may fault).
bool has_load(const ExprPtr& e);
/// IR nodes in a statement: the size the unroll policy weighs.
std::int64_t node_count(const StmtPtr& s);
/// `x` without the parentheses that enclose all of it, if they do.
std::string unparenthesized(const std::string& x);

/// What a kernel's text uses: the C++ names given to its IR nodes (each unique), and the helper
/// functions and headers it needs, printed before it. Shared by the expression printer and the
/// emitter of statements.
class Vocabulary {
 public:
  /// The C++ type of `t`; notes the 16-bit float headers it needs.
  const char* ctype(ScalarType t);
  void note(ScalarType t);
  /// Registers helper `vt_<op>` for `t` (and what it calls) and returns its name.
  std::string helper(std::string_view op, ScalarType t);

  /// A node's C++ name: `base` made an identifier, with a number where another node has it.
  const std::string& name(const void* node, const std::string& base);
  const std::string& name(const VarPtr& v) { return name(v.get(), v->name); }
  const std::string& name(const MemPtr& m) { return name(m.get(), m->name); }
  /// Names start afresh for each function (the helpers stay).
  void clear_names() {
    names_.clear();
    taken_.clear();
  }

  std::string helper_text;  ///< the definitions of the helpers in use
  bool uses_fp8 = false, uses_half = false, uses_bf16 = false, uses_tf32 = false, uses_select = false, uses_and = false,
       uses_or = false, uses_checks = false, uses_wgmma = false, uses_setmaxnreg = false, uses_atomic_helpers = false;

 private:
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> taken_;
  std::set<std::pair<std::string_view, ScalarType>> helper_seen_;
};

/// How expressions and indices are printed: the integer semantics made explicit (helpers where C++
/// would be undefined), 32-bit arithmetic where the ranges prove it, and indices computed exactly in
/// 32 or 64 bits, or refused (V1006). The ranges and the variables held narrowed are the emitter's,
/// as they stand at the statement being printed.
class ExprPrinter {
 public:
  ExprPrinter(Vocabulary& v, const RangeEnv& env, const std::unordered_set<const VarNode*>& narrowed,
              std::vector<Diagnostic>& problems)
      : v_(v), env_(env), narrowed_(narrowed), problems_(problems) {}

  std::string expr(const ExprPtr& e);
  /// The value of the i64 expression `e` computed in int, where that is exact: its parts are 32-bit
  /// values widened (casts from i32, literals, narrowed variables) and every operation's range,
  /// and the result's, fit an int (so no int operation can overflow). Nothing otherwise.
  std::optional<std::string> narrow32(const ExprPtr& e, int depth = 0);
  /// An access to root memory at a flat index (lowered IR has no other kind).
  std::string access(const MemPtr& m, const std::vector<ExprPtr>& idx, SourceLoc loc);

  /// An index, computed exactly: in int when every intermediate provably fits 32 bits, in long long
  /// when it fits 64, and otherwise not at all (V1006).
  std::string index(const ExprPtr& e, SourceLoc loc);

 private:
  std::string text(const Literal& l);
  std::string text(const VarRef& n);

  std::string text(const Unary& n);

  /// An operation on 8- or 16-bit integers: the same operation in i32 on its operands widened, its
  /// result narrowed back (`i32_result`, the printed i32 operation). docs/semantics.md wraps each
  /// result to the narrow width, and the i32 operation's own edge cases (a zero divisor, MIN / -1,
  /// shifts past the width) wrap to the narrow type's; C++ would promote the operands to int anyway.
  static ExprPtr widened(const ExprPtr& x);
  std::string narrowed(const std::string& i32_result, ScalarType t);

  /// `x` as float, for 16-bit floats computed through float.
  std::string widen(const std::string& x, ScalarType t);
  std::string narrow(const std::string& x, ScalarType t);

  /// `x % 2^k` of a value that cannot be negative, as the mask `x & (2^k - 1)`; nothing otherwise.
  /// Only in comparisons (`t % 32 < 1`, lane 0's test): in an address NVCC then takes `col % 8 + 8`
  /// for `col | 8` and loses the immediate offset of each shared load.
  std::optional<std::string> masked(const ExprPtr& e);

  std::string text(const Binary& n);

  std::string text(const Cast& n);

  std::string text(const Select& n);

  std::string text(const MathCall& n);

  std::string text(const Id&) { throw InternalError("emit: an id() reached the printer; lower the kernel first"); }
  std::string text(const Builtin& n);
  std::string text(const Load& n);

  /// A 64-bit sum whose products share a factor, as composing a block's partition with a thread's
  /// gives (`brow * 32 * M + bcol * 32 + tr * M + tc`), with those products as one: their other
  /// factors summed in int where that sum fits (`(brow * 32 + tr) * M`), one widening multiply where
  /// there were several. Nothing where no two products share a factor.
  std::optional<std::string> factored_sum(const ExprPtr& e);

  std::string exact_index(const ExprPtr& e, ScalarType w);

  Vocabulary& v_;
  const RangeEnv& env_;
  const std::unordered_set<const VarNode*>& narrowed_;  ///< i64 lets held in an int (Emitter's Let)
  std::vector<Diagnostic>& problems_;
  ExactRanges index_ranges_;  ///< the index being printed: each exact operation's envelope
};

class Emitter {
 public:
  explicit Emitter(const EmitOptions& o) : opt_(o), x_(v_, env_, narrowed_, problems_) {}
  Emitter(const Emitter&) = delete;  // x_ refers to its members
  Emitter& operator=(const Emitter&) = delete;

  EmitResult run(const lower::Lowered& lowered);

 private:
  void name_functions(const std::vector<FunctionPtr>& fns);

  void reset(const StmtPtr& body);

  std::string param_decl(const ParamNode& p);

  // ------------------------------------------------------------------ kernel and functions
  void kernel(const KernelNode& k);

  void function(const FunctionNode& f);

  // ------------------------------------------------------------------ statements
  void ind() { out_ << std::string(static_cast<std::size_t>(indent_) * 2, ' '); }
  void line(const SourceLoc& loc);

  void emit(const ir::Barrier& b, const StmtPtr&);
  void emit(const VectorCopy& n, const StmtPtr&);

  void stmt(const StmtPtr& s);

  void nested(const StmtPtr& s);

  void emit(const Seq& n, const StmtPtr&);
  void emit(const Let& n, const StmtPtr&);
  void emit(const Assign& n, const StmtPtr&);
  void emit(const Store& n, const StmtPtr&);
  void emit(const If& n, const StmtPtr&);
  void emit(const For& n, const StmtPtr&);
  void emit(const Jump& n, const StmtPtr&);
  void emit(const While& n, const StmtPtr&);
  template <class N>
  requires(std::is_same_v<N, Group> || std::is_same_v<N, Split> || std::is_same_v<N, Destruct> ||
           std::is_same_v<N, Partition> || std::is_same_v<N, Claim> || std::is_same_v<N, Lower> ||
           std::is_same_v<N, Async>) void emit(const N&, const StmtPtr&) {
    throw InternalError("emit: a perspective or view construct reached the printer; lower the kernel first");
  }
  void emit(const SharedAlloc& n, const StmtPtr&);
  void emit(const LocalAlloc& n, const StmtPtr&);
  void emit(const Call& n, const StmtPtr&);

  void emit(const Unsafe& n, const StmtPtr&);
  void emit(const Return& n, const StmtPtr&);

  void emit(const Intrinsic& n, const StmtPtr&);

  /// The shared-state address (32 bits) of element `index` of memory operand `mem`.
  std::string smem(const Intrinsic& n, std::size_t mem, const ExprPtr& index);
  std::string address(const Intrinsic& n, std::size_t mem, const ExprPtr& index);

  /// An atomic in the form the target table gives: native, or on the bits as unsigned 64-bit. One
  /// lowering could not prove in bounds (a bound argument and a site) runs only inside its memory;
  /// outside, it records the failure as a checked store does, and its old value is 0.
  void atomic(const Intrinsic& n);

  void mma(const Intrinsic& n);

  /// wgmma on tiles in the 128-byte swizzle layout: args are the A and B tiles' first elements (their
  /// K step included), which lowering proved inside their arrays and on 1024-byte groups.

  static std::string vector_type(ScalarType t, std::int64_t count);

  EmitOptions opt_;
  std::ostringstream out_, functions_;
  int indent_ = 1;
  RangeEnv env_;
  std::unordered_set<const VarNode*> reassigned_;
  std::unordered_set<const VarNode*> narrowed_;  ///< i64 lets held in an int (emit(Let))
  const lower::Lowered* lowered_ = nullptr;
  std::unordered_map<const FunctionNode*, std::string> fn_names_;
  std::int64_t kernel_smem_ = 0;
  std::vector<Diagnostic> problems_;
  Vocabulary v_;
  ExprPrinter x_;
  std::unordered_map<const char*, std::string> quoted_;  ///< source file names, quoted for #line
  std::unordered_map<const MemNode*, std::int64_t>
      local_align_;                               ///< local arrays vector copies use: their vector's bytes
  std::unordered_set<const MemNode*> wgmma_acc_;  ///< local arrays a wgmma accumulates into
  std::vector<const LocalAlloc*> acc_in_scope_;   ///< those declared in the enclosing C++ blocks
  void pin_accumulators();                        ///< at a wgmma fence or wait (emit_intrinsic.cpp)
};

}  // namespace vantage::cuda::detail
