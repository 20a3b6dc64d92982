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
  Size subst(Size s) const {
    if (s.threads && know_.threads) s = {s.coeff * *know_.threads, false, s.blocks};
    if (s.blocks && know_.blocks) s = {s.coeff * *know_.blocks, s.threads, false};
    return s;
  }

  Truth divides(Size a, Size b) const {
    a = subst(a);
    b = subst(b);
    if (a.coeff <= 0 || b.coeff <= 0) return Truth::No;
    if (a.is_static() && b.is_static()) return b.coeff % a.coeff == 0 ? Truth::Yes : Truth::No;
    if ((!a.threads || b.threads) && (!a.blocks || b.blocks)) {
      std::int64_t bc = b.coeff * ((b.blocks && !a.blocks) ? know_.grid_multiple : 1);
      if (bc % a.coeff == 0) return Truth::Yes;
    }
    return Truth::Unknown;
  }

  Truth less_equal(Size a, Size b) const {
    a = subst(a);
    b = subst(b);
    if (a.is_static() && b.is_static()) return a.coeff <= b.coeff ? Truth::Yes : Truth::No;
    if ((!a.threads || b.threads) && (!a.blocks || b.blocks)) {
      std::int64_t least_b = b.coeff * ((b.blocks && !a.blocks) ? know_.grid_multiple : 1);
      if (a.coeff <= least_b) return Truth::Yes;
    }
    return Truth::Unknown;
  }

  Truth equal_size(Size a, Size b) const {
    a = subst(a);
    b = subst(b);
    if (a == b) return Truth::Yes;
    if (a.is_static() && b.is_static()) return Truth::No;
    if (a.is_static() && a.coeff < least(b)) return Truth::No;
    if (b.is_static() && b.coeff < least(a)) return Truth::No;
    return Truth::Unknown;
  }

  /// The smallest value a (substituted) size can take.
  std::int64_t least(Size s) const { return s.coeff * (s.blocks ? know_.grid_multiple : 1); }

  /// Memory owned by exactly one thread (the only memory that may be written).
  static bool one_thread(Perspective p) { return p.level == Level::Thread && p.count == Size(1); }

  /// The number of threads in one unit of p.
  static Size units(Perspective p) {
    Size s = p.count;
    if (p.level != Level::Thread) s.threads = true;
    if (p.level == Level::Grid) s.blocks = true;
    return s;
  }

  /// The paper's order: a is narrower than or equal to b.
  Truth narrower_eq(Perspective a, Perspective b) const {
    if (a.level < b.level) return Truth::Yes;
    if (a.level > b.level) return Truth::No;
    return divides(a.count, b.count);
  }

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
  Perspective meet(Perspective a, Perspective b) const {
    if (narrower_eq(a, b) == Truth::Yes) return a;
    if (narrower_eq(b, a) == Truth::Yes) return b;
    Size x = subst(a.count), y = subst(b.count);
    Size g{std::gcd(x.coeff, y.coeff), x.threads && y.threads, x.blocks && y.blocks};
    return {a.level, g};
  }

  const Frame& frame() const { return frames_.back(); }
  Perspective code() const { return frames_.back().code; }

  bool valid(Perspective p, SourceLoc loc, const char* what) {
    if (p.count.is_static() && p.count.coeff >= 1) return true;
    error(
        "V0108", loc,
        std::string("invalid perspective ") + p.str() + " for " + what + ": the unit count must be a positive number");
    return false;
  }

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
  void pop_scope() {
    for (const auto& d : scopes_.back()) {
      if (d.var) vars_.erase(d.var);
      if (d.mem) mems_.erase(d.mem);
    }
    scopes_.pop_back();
  }
  void declare(const VarPtr& v, Perspective p, bool loop = false) {
    if (!v) return;
    vars_[v.get()] = {p, v->loc, loop};
    scopes_.back().push_back({v.get(), nullptr});
  }
  MemInfo& declare(const MemPtr& m, Perspective p, SourceLoc at) {
    auto& info = mems_[m.get()];
    info = MemInfo{};
    info.node = m.get();
    info.root = m.get();
    info.persp = p;
    info.narrowed_at = at;
    scopes_.back().push_back({nullptr, m.get()});
    return info;
  }

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
  MemInfo* use_mem(const MemPtr& m, SourceLoc loc) {
    if (!m) return nullptr;
    auto it = mems_.find(m.get());
    if (it == mems_.end()) {
      auto& d = error("V0313", loc, "memory " + q(m->name) + " is not in scope here");
      note(d, m->loc, "declared here");
      return nullptr;
    }
    MemInfo& info = it->second;
    if (info.hidden) {
      auto& d = error(
          "V0302", loc,
          "memory " + q(m->name) + " cannot be used inside its own " + info.hidden_by + "; use the narrowed name");
      note(d, info.hidden_at, std::string("narrowed by ") + info.hidden_by + " here");
    }
    if (info.claimed) check_claim_use(info, loc);
    if (m->space == MemSpace::Shared && fits_in(code(), block(1)) == Truth::No) {
      auto& d = error("V0312", loc,
                      "shared memory " + q(m->name) + " is used from code at " + code().str() +
                          "; shared memory belongs to one block");
      note_code(d);
    }
    return &info;
  }

  void check_claim_use(MemInfo& info, SourceLoc loc);

  void check_indices(const MemNode& m, const std::vector<ExprPtr>& idx, SourceLoc loc, Perspective& variance) {
    if (static_cast<int>(idx.size()) != m.dims)
      error("V0311", loc,
            q(m.name) + " takes " + std::to_string(m.dims) + " index(es), not " + std::to_string(idx.size()));
    for (const auto& i : idx) {
      variance = meet(variance, check_expr(i, loc));
      if (i && !is_integer(i->type))
        error("V0704", at(i, loc), "index into " + q(m.name) + " must be an integer, not " + type_name(i->type));
    }
  }

  /// Where to report a problem with `e`: its own location, except for variable references, which
  /// carry their declaration's location; those report at the enclosing use.
  static SourceLoc at(const ExprPtr& e, SourceLoc fallback) {
    if (!e || !e->loc.known() || e->kind == ExprKind::VarRef) return fallback;
    return e->loc;
  }

  // ---------------------------------------------------------------- expressions
  /// Checks an expression and returns the perspective it varies with.
  Perspective check_expr(const ExprPtr& e, SourceLoc loc) {
    if (!e) {
      error("V0706", loc, "missing expression (an undefined Expr was used)");
      return kTop;
    }
    SourceLoc here = at(e, loc);
    return dispatch(*e, [&](const auto& n) { return expr_rule(n, here, loc); });
  }

  Perspective expr_rule(const Literal& n, SourceLoc here, SourceLoc) {
    if (!fits(n.type, n.i))
      error("V0707", here,
            "literal " + std::to_string(n.i) + " does not fit in " + type_name(n.type) +
                " (write it as a wider type, or cast<T>() explicitly)");
    return kTop;
  }
  Perspective expr_rule(const VarRef& n, SourceLoc, SourceLoc loc) {
    auto it = vars_.find(n.var.get());
    if (it == vars_.end()) {
      auto& d = error("V0207", loc, "variable " + q(n.var->name) + " is not in scope here");
      note(d, n.var->loc, "declared here");
      return kTop;
    }
    return it->second.persp;
  }
  Perspective expr_rule(const Unary& n, SourceLoc here, SourceLoc) {
    Perspective v = check_expr(n.a, here);
    if (n.a) {
      ScalarType t = n.a->type;
      if (!defined_for(n.op, t))
        error("V0702", here, std::string("operator ") + name_of(n.op) + " is not defined for " + type_name(t));
    }
    return v;
  }
  Perspective expr_rule(const Binary& n, SourceLoc here, SourceLoc) {
    Perspective v = meet(check_expr(n.a, here), check_expr(n.b, here));
    if (n.a && n.b) binary_types(n, here);
    return v;
  }
  Perspective expr_rule(const Cast& n, SourceLoc here, SourceLoc) { return check_expr(n.a, here); }
  Perspective expr_rule(const Select& n, SourceLoc here, SourceLoc) {
    Perspective v = meet(check_expr(n.c, here), meet(check_expr(n.a, here), check_expr(n.b, here)));
    if (n.c && n.c->type != ScalarType::Bool)
      error("V0703", here, std::string("select needs a bool condition, not ") + type_name(n.c->type));
    if (n.a && n.b && n.a->type != n.b->type)
      error("V0701", here,
            std::string("select operands have different types: ") + type_name(n.a->type) + " and " +
                type_name(n.b->type));
    return v;
  }
  Perspective expr_rule(const MathCall& n, SourceLoc here, SourceLoc) {
    Perspective v = kTop;
    for (const auto& a : n.args) {
      v = meet(v, check_expr(a, here));
      bool defined = is_bit_fn(n.fn) ? a && is_integer(a->type)
                                     : a && (is_float(a->type) || (n.fn == MathFn::Abs && is_integer(a->type)));
      if (a && !defined)
        error("V0702", here,
              std::string(name_of(n.fn)) + " is not defined for " + type_name(a->type) +
                  (is_bit_fn(n.fn) ? " (it takes an integer of 32 or 64 bits)" : ""));
      if (a && n.args.front() && a->type != n.args.front()->type)
        error("V0701", here, std::string(name_of(n.fn)) + " operands have different types");
    }
    return v;
  }
  Perspective expr_rule(const Id& n, SourceLoc here, SourceLoc) {
    if (!valid(n.p, here, "id()")) return thread(1);
    if (fits_in(n.p, code()) == Truth::No) {
      auto& d = error("V0107", here, "id(" + n.p.str() + ") needs a perspective that tiles the code's " + code().str());
      note_code(d);
    } else {
      rule(fits_in(n.p, code()), Obligation::Kind::Divides, units(n.p), units(code()), "V0107", here,
           [&] { return std::string("id(" + n.p.str() + ") needs " + n.p.str() + " to tile " + code().str()); });
    }
    return n.p;
  }
  Perspective expr_rule(const Builtin& n, SourceLoc, SourceLoc) {
    if (n.which == BuiltinKind::BlocksInGrid) return kTop;  // the same for every thread of the launch
    throw InternalError("check: lowered IR (a hardware position) reached the checker");
  }
  Perspective expr_rule(const Load& n, SourceLoc here, SourceLoc) {
    Perspective v = kTop;
    if (MemInfo* info = use_mem(n.mem, here)) {
      v = info->persp;
      if (info->async)
        error("V0315", here, "async memory " + q(n.mem->name) + " can only be used by async-copy intrinsics");
    }
    check_indices(*n.mem, n.indices, here, v);
    return v;
  }

  void binary_types(const Binary& n, SourceLoc here);

  /// A condition or bound must not vary faster than the code's perspective.
  void uniform(Perspective variance, const std::string& code_id, SourceLoc loc, const std::string& what) {
    rule(narrower_eq(code(), variance), Obligation::Kind::Divides, code().count, variance.count, code_id, loc, [&] {
      return std::string(what + " varies with " + variance.str() + ", faster than the code's perspective " +
                         code().str());
    });
  }

  // ---------------------------------------------------------------- statements
  void body(const StmtPtr& s) {
    push_scope();
    stmt(s);
    pop_scope();
  }

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
