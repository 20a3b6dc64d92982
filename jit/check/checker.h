// Vantage perspective checker, declared here and defined by concern: check.cpp (kernels and
// functions, sizes and perspectives, names and their scopes, parameters), statements.cpp
// (expressions, statements, groups, splits, partitions, calls), intrinsics.cpp (each intrinsic's
// threads and operands, unsafe blocks, returns).
//
// Vantage perspective checker. One walk over the IR keeps the code's perspective (a stack of frames
// pushed by group, split branches and destruct), the perspective every variable and memory name
// lives at, and the shared memory in use. Size rules that depend on the launch shape are decided
// when threads per block (T) or blocks (B) are known, and otherwise become obligations.
#pragma once

#include "jit/check/check.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include "jit/ir/eval.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/shared_layout.h"
#include "jit/ir/visit.h"
#include "jit/target/target.h"

namespace vantage::check::detail {

using namespace ir;

enum class Truth : std::uint8_t { No, Yes, Unknown };

constexpr Perspective kTop = grid(1);  // values that are the same everywhere: literals, parameters

struct Knowledge {
  std::optional<std::int64_t> threads;
  std::optional<std::int64_t> blocks;
  std::int64_t grid_multiple = 1;
};

struct Frame {
  Perspective code;
  SourceLoc at;
  const char* how;     // what established this perspective, for notes
  int branch_id = -1;  // >= 0 for a split branch
};

struct VarInfo {
  Perspective persp;
  SourceLoc decl;
  bool loop = false;
};

struct MemInfo {
  const MemNode* node = nullptr;
  const MemNode* root = nullptr;  ///< the parameter or array this name is a view of
  Perspective persp;
  SourceLoc narrowed_at;
  bool hidden = false;
  const char* hidden_by = "";
  SourceLoc hidden_at;
  bool async = false;
  bool claimed = false;
  Perspective claim_p;
  std::size_t claim_depth = 0;
  int claim_branch = -1;
  SourceLoc claim_first_use;
  std::int64_t local_count = 0;
};

inline std::string q(const std::string& name) { return "'" + name + "'"; }

class Checker {
 public:
  Checker(Knowledge k, std::int64_t budget, SourceLoc budget_loc)
      : know_(k), budget_(budget), budget_loc_(budget_loc) {}

  CheckResult run_kernel(const KernelNode& k);

  CheckResult run_function(const FunctionNode& f);

 private:
  // ---------------------------------------------------------------- sizes and perspectives
  Size subst(Size s) const;

  Truth divides(Size a, Size b) const;

  Truth less_equal(Size a, Size b) const;

  Truth equal_size(Size a, Size b) const;

  /// The smallest value a (substituted) size can take.
  std::int64_t least(Size s) const { return s.coeff * (s.blocks ? know_.grid_multiple : 1); }

  /// Memory owned by exactly one thread (the only memory that may be written).
  static bool one_thread(Perspective p) { return p.level == Level::Thread && p.count == Size(1); }

  /// The number of threads in one unit of p.
  static Size units(Perspective p);

  /// The paper's order: a is narrower than or equal to b.
  Truth narrower_eq(Perspective a, Perspective b) const;

  /// Units of `inner` tile `outer` evenly and aligned (group, partition, id, calls).
  Truth fits_in(Perspective inner, Perspective outer) const {
    if (inner.level > outer.level) return Truth::No;
    return divides(units(inner), units(outer));
  }

  /// The same set of threads. Across levels only the exact isomorphisms count (block(1) is
  /// thread(T)); "grid(1) is block(1) when the grid has one block" is a mistake, not an obligation.
  Truth same_persp(Perspective a, Perspective b) const {
    if (a.level == b.level) return equal_size(a.count, b.count);
    return equal_size(units(a), units(b)) == Truth::Yes ? Truth::Yes : Truth::No;
  }

  /// The narrowest perspective at which both a and b are uniform.
  Perspective meet(Perspective a, Perspective b) const;

  const Frame& frame() const { return frames_.back(); }
  Perspective code() const { return frames_.back().code; }

  bool valid(Perspective p, SourceLoc loc, const char* what);

  // ---------------------------------------------------------------- diagnostics
  Diagnostic& error(std::string code, SourceLoc loc, std::string message) {
    errors_.push_back({std::move(code), std::move(message), loc, {}});
    return errors_.back();
  }
  void note(Diagnostic& d, SourceLoc loc, std::string message) { d.notes.push_back({std::move(message), loc}); }
  void note_code(Diagnostic& d) {
    note(d, frame().at, "the code's perspective " + code().str() + " comes from here (" + frame().how + ")");
  }

  /// Applies a rule: No is an error, Unknown an obligation for specialization. Returns false on No.
  /// `message` is a callable making the text; it runs only when the rule fails or is deferred.
  template <class Message>
  bool rule(Truth t, Obligation::Kind kind, Size lhs, Size rhs, const std::string& code, SourceLoc loc,
            Message&& message, bool with_code_note = true) {
    if (t == Truth::Yes) return true;
    if (t == Truth::No) {
      auto& d = error(code, loc, message());
      if (with_code_note) note_code(d);
      return false;
    }
    lhs = subst(lhs);
    rhs = subst(rhs);
    for (const auto& o : obligations_)
      if (o.kind == kind && o.lhs == lhs && o.rhs == rhs && o.code == code && o.loc.line == loc.line &&
          o.loc.file == loc.file)
        return true;
    obligations_.push_back({kind, lhs, rhs, code, message(), loc});
    return true;
  }

  CheckResult finish();

  // ---------------------------------------------------------------- scopes
  struct Decl {
    const VarNode* var = nullptr;
    const MemNode* mem = nullptr;
  };
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope();
  void declare(const VarPtr& v, Perspective p, bool loop = false);
  MemInfo& declare(const MemPtr& m, Perspective p, SourceLoc at);

  // ---------------------------------------------------------------- kernel and function headers
  void check_launch_shape(const KernelNode& k);

  /// The declared shared-memory budget: not negative, within the device limit.
  void check_budget();

  void check_params(const std::vector<ParamNode>& params, std::optional<Perspective> sig);

  /// Whether an extent reads only scalar parameters (no ids, loads or other variables).
  static bool integers_only(const ExprPtr& e);
  static bool extent_uses_params_only(const ExprPtr& e);

  static bool ends_with_return(const StmtPtr& s);

  // ---------------------------------------------------------------- memory names
  /// Looks up memory for a use; reports out-of-scope, hidden and misplaced claimed names.
  MemInfo* use_mem(const MemPtr& m, SourceLoc loc);

  void check_claim_use(MemInfo& info, SourceLoc loc);

  void check_indices(const MemNode& m, const std::vector<ExprPtr>& idx, SourceLoc loc, Perspective& variance);

  /// Where to report a problem with `e`: its own location, except for variable references, which
  /// carry their declaration's location; those report at the enclosing use.
  static SourceLoc at(const ExprPtr& e, SourceLoc fallback) {
    if (!e || !e->loc.known() || e->kind == ExprKind::VarRef) return fallback;
    return e->loc;
  }

  // ---------------------------------------------------------------- expressions
  /// Checks an expression and returns the perspective it varies with.
  Perspective check_expr(const ExprPtr& e, SourceLoc loc);

  Perspective expr_rule(const Literal& n, SourceLoc here, SourceLoc);
  Perspective expr_rule(const VarRef& n, SourceLoc, SourceLoc loc);
  Perspective expr_rule(const Unary& n, SourceLoc here, SourceLoc);
  Perspective expr_rule(const Binary& n, SourceLoc here, SourceLoc);
  Perspective expr_rule(const Cast& n, SourceLoc here, SourceLoc) { return check_expr(n.a, here); }
  Perspective expr_rule(const Select& n, SourceLoc here, SourceLoc);
  Perspective expr_rule(const MathCall& n, SourceLoc here, SourceLoc);
  Perspective expr_rule(const Id& n, SourceLoc here, SourceLoc);
  Perspective expr_rule(const Builtin& n, SourceLoc, SourceLoc) {
    if (n.which == BuiltinKind::BlocksInGrid) return kTop;  // the same for every thread of the launch
    throw InternalError("check: lowered IR (a hardware position) reached the checker");
  }
  Perspective expr_rule(const Load& n, SourceLoc here, SourceLoc);

  void binary_types(const Binary& n, SourceLoc here);

  /// A condition or bound must not vary faster than the code's perspective.
  void uniform(Perspective variance, const std::string& code_id, SourceLoc loc, const std::string& what);

  // ---------------------------------------------------------------- statements
  void body(const StmtPtr& s);

  void stmt(const StmtPtr& s) {
    if (!s) return;
    dispatch(*s, [&](const auto& n) { check(n); });
  }

  void check(const Seq& n);

  void check(const Let& n);

  /// Writes to a thread-local (variable or local array) living at p: write down only.
  void write_down(const std::string& name, Perspective p, SourceLoc decl, Perspective value, SourceLoc loc);

  void check(const Assign& n);

  void check(const Store& n);

  void check(const If& n);

  void check(const For& n);

  void check(const While& n);

  /// break and continue: inside a loop, in thread(1) code that is the loop's own (no group, split or
  /// async scope between them), so that no barrier, collective or async wait can be skipped.
  void check(const Jump& n);

  void check(const Group& n);

  /// Units of `level` inside the code's perspective.
  std::optional<Size> available(Level level) const;

  void check(const Split& n);

  void check(const Destruct& n);

  /// Shared checks of partition, claim, lower and async on the source memory.
  MemInfo* narrow_source(const MemPtr& src, SourceLoc loc, const char* what);

  /// Runs a narrowing construct's body with the source hidden and the new name declared.
  template <class F>
  void narrowed_body(MemInfo* src, const MemPtr& dst, Perspective p, SourceLoc loc, const char* what, const StmtPtr& b,
                     F&& configure) {
    push_scope();
    MemInfo& d = declare(dst, p, loc);
    if (src) {
      d.async = src->async;
      d.root = src->root;
    }
    configure(d);
    bool was_hidden = src && src->hidden;
    const char* was_by = src ? src->hidden_by : "";
    SourceLoc was_at = src ? src->hidden_at : SourceLoc{};
    if (src && !was_hidden) {
      src->hidden = true;
      src->hidden_by = what;
      src->hidden_at = loc;
    }
    body(b);
    if (src) {
      src->hidden = was_hidden;
      src->hidden_by = was_by;
      src->hidden_at = was_at;
    }
    pop_scope();
  }

  void check(const Partition& n);

  void check(const Claim& n);

  void check(const Lower& n);

  void check(const Async& n);

  void check(const SharedAlloc& n);

  void check(const LocalAlloc& n);

  void check(const Call& n);

  /// A function's pointer parameters may assume they do not overlap (the emitter marks them
  /// __restrict__), so two arguments naming the same memory are an error when one is mutable.
  void no_overlapping_arguments(const Call& n, const FunctionNode& f);

  void call_arg(const FunctionNode& f, const ParamNode& p, const CallArgNode& a, SourceLoc loc);

  // ---------------------------------------------------------------- intrinsics
  void need_exact(Perspective p, const std::string& what, SourceLoc loc);

  void operand_error(const Intrinsic& n, const std::string& msg) {
    error("V0503", n.loc, user_name(n.op) + std::string(": ") + msg);
  }

  /// A thread-local fragment array: local, at thread(1), given type and size.
  void fragment(const Intrinsic& n, std::size_t i, ScalarType t, std::int64_t count, const char* role);

  MemInfo* operand_mem(const Intrinsic& n, std::size_t i, MemSpace space, std::optional<ScalarType> elem,
                       const char* role);

  Perspective operand_value(const Intrinsic& n, std::size_t i, std::optional<ScalarType> t, const char* role);

  void need_async(const Intrinsic& n, MemInfo* dst);

  void check(const Intrinsic& n);

  void check(const Unsafe& n);

  void check(const Barrier&) { throw InternalError("check: a barrier statement reached the checker"); }
  void check(const VectorCopy&) { throw InternalError("check: lowered IR (a vector copy) reached the checker"); }

  void check(const Return& n);

  struct LoopFrame {
    std::size_t frames;
    int async_depth;
  };
  std::vector<LoopFrame> loops_;  ///< the loops around the statement being checked

  bool narrowing_open() const;

  Knowledge know_;
  const std::vector<TensorMapNode>* maps_ = nullptr;  ///< the kernel's tensor maps (none in a function)
  bool in_kernel_ = false;                            ///< checking a kernel, not a device function
  std::int64_t budget_;
  SourceLoc budget_loc_;
  std::optional<ScalarType> returns_;
  std::vector<Frame> frames_;
  std::vector<std::vector<Decl>> scopes_;
  std::unordered_map<const VarNode*, VarInfo> vars_;
  std::unordered_map<const MemNode*, MemInfo> mems_;
  std::vector<Diagnostic> errors_;
  std::vector<Obligation> obligations_;
  SharedLayoutBuilder layout_;  // the shared layout (ir::layout_shared's rules), built as the walk goes
  int next_branch_ = 0;
  int async_depth_ = 0;
};

}  // namespace vantage::check::detail
