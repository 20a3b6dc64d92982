// Vantage perspective checker. One walk over the IR keeps the code's perspective (a stack of frames
// pushed by group, split branches and destruct), the perspective every variable and memory name
// lives at, and the shared memory in use. Size rules that depend on the launch shape are decided
// when threads per block (T) or blocks (B) are known, and otherwise become obligations.
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

namespace vantage::check {
namespace {

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

std::string q(const std::string& name) { return "'" + name + "'"; }

class Checker {
 public:
  Checker(Knowledge k, std::int64_t budget, SourceLoc budget_loc)
      : know_(k), budget_(budget), budget_loc_(budget_loc) {}

  CheckResult run_kernel(const KernelNode& k) {
    maps_ = &k.tensor_maps;
    in_kernel_ = true;
    frames_.push_back({grid(1), k.loc, "the kernel starts at grid(1)"});
    push_scope();
    check_launch_shape(k);
    check_params(k.params, std::nullopt);
    for (const auto& p : k.params) {
      if (!p.extent) continue;
      if (!is_integer(p.extent->type))
        error("V0904", p.loc,
              "extent of " + q(p.name) + " must be an integer expression, not " + type_name(p.extent->type));
      if (!extent_uses_params_only(p.extent))
        error("V0904", p.loc, "extent of " + q(p.name) + " may only use the kernel's scalar parameters");
      check_expr(p.extent, p.loc);
    }
    for (const auto& m : k.tensor_maps) {
      for (const ExprPtr& e : {m.rows, m.cols}) {
        if (!e) continue;
        if (!is_integer(e->type) || !extent_uses_params_only(e) || !integers_only(e))
          error("V0916", m.loc,
                "tensor map " + q(m.name) +
                    ": its rows and columns are integer expressions over the kernel's scalar parameters");
        check_expr(e, m.loc);
      }
    }
    for (const auto& r : k.requirements) {
      if (r.cond->type != ScalarType::Bool)
        error("V0912", r.loc, "a requirement is a condition (bool), not " + std::string(type_name(r.cond->type)));
      if (!extent_uses_params_only(r.cond) || !integers_only(r.cond))
        error("V0912", r.loc, "a requirement may only use the kernel's integer scalar parameters and constants");
      check_expr(r.cond, r.loc);
    }
    if (!k.body) {
      error("V0905", k.loc, "kernel " + q(k.name) + " has no body");
    } else {
      returns_ = std::nullopt;
      stmt(k.body);
    }
    pop_scope();
    return finish();
  }

  CheckResult run_function(const FunctionNode& f) {
    if (valid(f.signature, f.signature_loc, "signature")) {
      frames_.push_back({f.signature, f.signature_loc, "the function's signature requires it"});
    } else {
      frames_.push_back({thread(1), f.signature_loc, "the function's signature"});
    }
    push_scope();
    check_params(f.params, f.signature);
    returns_ = f.returns;
    check_budget();
    if (!f.body) {
      error("V0905", f.loc, "function " + q(f.name) + " has no body");
    } else {
      stmt(f.body);
      if (f.returns && !ends_with_return(f.body))
        error(
            "V0804", f.loc,
            "function " + q(f.name) + " returns " + type_name(*f.returns) + " but its body does not end with a return");
    }
    pop_scope();
    return finish();
  }

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

  CheckResult finish() {
    CheckResult r;
    r.errors = std::move(errors_);
    r.obligations = std::move(obligations_);
    r.shared_peak = layout_.layout().peak;
    return r;
  }

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
  void check_launch_shape(const KernelNode& k) {
    know_.threads = k.threads;
    know_.blocks = k.grid_blocks;
    know_.grid_multiple = std::max<std::int64_t>(k.grid_multiple, 1);
    if (k.threads && (*k.threads < 1 || *k.threads > target::max_threads_per_block()))
      error("V0901", k.threads_loc,
            "threads per block must be between 1 and " + std::to_string(target::max_threads_per_block()) + ", not " +
                std::to_string(*k.threads));
    if (k.grid_blocks && *k.grid_blocks < 1)
      error("V0901", k.grid_loc, "the grid must have at least one block, not " + std::to_string(*k.grid_blocks));
    if (k.grid_multiple < 1)
      error("V0901", k.grid_loc, "grid_multiple_of needs a positive number, not " + std::to_string(k.grid_multiple));
    check_budget();
  }

  /// The declared shared-memory budget: not negative, within the device limit.
  void check_budget() {
    if (budget_ < 0) error("V0403", budget_loc_, "shared-memory budget must not be negative");
    if (budget_ > target::max_shared_bytes())
      error("V0404", budget_loc_,
            "shared-memory budget of " + std::to_string(budget_) + " bytes exceeds the device limit of " +
                std::to_string(target::max_shared_bytes()) + " bytes");
  }

  void check_params(const std::vector<ParamNode>& params, std::optional<Perspective> sig) {
    std::unordered_map<std::string, SourceLoc> seen;
    for (const auto& p : params) {
      auto [it, fresh] = seen.emplace(p.name, p.loc);
      if (!fresh) {
        auto& d = error("V0902", p.loc, "parameter " + q(p.name) + " is declared twice");
        note(d, it->second, "first declared here");
      }
      if (p.specialized && (!p.var || !is_integer(p.var->type)))
        error("V0903", p.loc, "only integer scalar parameters can be specialized; " + q(p.name) + " is not one");
      Perspective at = kTop;
      if (sig) {
        at = p.at.value_or(*sig);
        if (!valid(at, p.loc, "a parameter")) at = *sig;
      }
      if (p.var) declare(p.var, at);
      if (p.mem) declare(p.mem, at, p.loc);
    }
  }

  /// Whether an extent reads only scalar parameters (no ids, loads or other variables).
  static bool integers_only(const ExprPtr& e) {
    struct Scan : IRVisitor {
      bool ok = true;
      void visit(const VarRef& n) override { ok = ok && is_integer(n.var->type); }
      void visit(const Literal& n) override { ok = ok && (is_integer(n.type) || n.type == ScalarType::Bool); }
      void visit(const MathCall&) override { ok = false; }
    } scan;
    scan.walk(e);
    return scan.ok;
  }
  static bool extent_uses_params_only(const ExprPtr& e) {
    struct Scan : IRVisitor {
      bool ok = true;
      void visit(const VarRef& n) override { ok = ok && n.var->origin == VarNode::Origin::Param; }
      void visit(const Load&) override { ok = false; }
      void visit(const Id&) override { ok = false; }
    } scan;
    scan.walk(e);
    return scan.ok;
  }

  static bool ends_with_return(const StmtPtr& s) {
    if (!s) return false;
    if (as<Return>(*s)) return true;
    if (const auto* seq = as<Seq>(*s)) return !seq->stmts.empty() && ends_with_return(seq->stmts.back());
    if (const auto* i = as<If>(*s)) return ends_with_return(i->then_body) && ends_with_return(i->else_body);
    return false;
  }

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

  void check_claim_use(MemInfo& info, SourceLoc loc) {
    int branch = -1;
    Perspective bp;
    SourceLoc bloc;
    // The innermost split branch opened inside the claim owns the region.
    for (std::size_t i = frames_.size(); i-- > info.claim_depth;) {
      if (frames_[i].branch_id >= 0) {
        branch = frames_[i].branch_id;
        bp = frames_[i].code;
        bloc = frames_[i].at;
        break;
      }
    }
    const std::string& name = info.node->name;
    if (branch < 0) {
      auto& d = error("V0306", loc, "claimed memory " + q(name) + " may only be used inside one split branch");
      note(d, info.narrowed_at, "claimed for " + info.claim_p.str() + " here");
      return;
    }
    if (narrower_eq(bp, info.claim_p) == Truth::No) {
      auto& d = error("V0306", loc,
                      "claimed memory " + q(name) + " is used in a branch at " + bp.str() +
                          ", wider than the claim at " + info.claim_p.str());
      note(d, bloc, "branch starts here");
    }
    if (info.claim_branch < 0) {
      info.claim_branch = branch;
      info.claim_first_use = loc;
    } else if (info.claim_branch != branch) {
      auto& d = error("V0307", loc, "claimed memory " + q(name) + " is used in two branches of a split");
      note(d, info.claim_first_use, "first used in another branch here");
    }
  }

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

  void binary_types(const Binary& n, SourceLoc here) {
    ScalarType a = n.a->type, b = n.b->type;
    if (!operands_agree(n.op, a, b)) {
      error("V0701", here,
            std::string("operands of ") + name_of(n.op) + " have different types: " + type_name(a) + " and " +
                type_name(b) + " (use cast<T>())");
      return;
    }
    if (!defined_for(n.op, a))
      error("V0702", here, std::string("operator ") + name_of(n.op) + " is not defined for " + type_name(a));
  }

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

  void check(const Seq& n) {
    push_scope();
    layout_.open();
    for (const auto& c : n.stmts) stmt(c);
    layout_.close();
    pop_scope();
  }

  void check(const Let& n) {
    Perspective v = check_expr(n.value, n.loc);
    if (n.value && n.var && n.value->type != n.var->type)
      error("V0705", n.loc,
            "variable " + q(n.var->name) + " is " + type_name(n.var->type) + " but the value is " +
                type_name(n.value->type));
    Perspective p = meet(code(), v);
    if (n.at && valid(*n.at, n.loc, "let")) {
      p = *n.at;
      if (narrower_eq(p, code()) == Truth::No) {
        auto& d = error("V0206", n.loc,
                        "variable " + q(n.var->name) + " cannot live at " + p.str() +
                            ", wider than the code's perspective " + code().str());
        note_code(d);
      }
      rule(narrower_eq(p, v), Obligation::Kind::Divides, p.count, v.count, "V0201", n.loc, [&] {
        return std::string("the value of " + q(n.var->name) + " varies with " + v.str() +
                           ", faster than its perspective " + p.str());
      });
    }
    declare(n.var, p);
  }

  /// Writes to a thread-local (variable or local array) living at p: write down only.
  void write_down(const std::string& name, Perspective p, SourceLoc decl, Perspective value, SourceLoc loc) {
    if (narrower_eq(p, code()) == Truth::No) {
      auto& d =
          error("V0202", loc, q(name) + " lives at " + p.str() + " and cannot be written from code at " + code().str());
      note(d, decl, "declared here");
      note_code(d);
    }
    if (narrower_eq(p, value) == Truth::No) {
      auto& d = error("V0201", loc,
                      "a value that varies with " + value.str() + " cannot be written into " + q(name) +
                          ", which lives at " + p.str());
      note(d, decl, "declared here");
    } else {
      rule(narrower_eq(p, value), Obligation::Kind::Divides, p.count, value.count, "V0201", loc,
           [&] { return std::string("value written into " + q(name) + " must not vary faster than " + p.str()); });
    }
  }

  void check(const Assign& n) {
    Perspective v = check_expr(n.value, n.loc);
    if (!n.var) return;
    auto it = vars_.find(n.var.get());
    if (it == vars_.end()) {
      auto& d = error("V0207", n.loc, "variable " + q(n.var->name) + " is not in scope here");
      note(d, n.var->loc, "declared here");
      return;
    }
    if (it->second.loop) error("V0208", n.loc, "loop variable " + q(n.var->name) + " cannot be assigned");
    if (n.value && n.value->type != n.var->type)
      error("V0705", n.loc,
            "variable " + q(n.var->name) + " is " + type_name(n.var->type) + " but the value is " +
                type_name(n.value->type));
    write_down(n.var->name, it->second.persp, it->second.decl, v, n.loc);
  }

  void check(const Store& n) {
    Perspective v = check_expr(n.value, n.loc);
    MemInfo* info = use_mem(n.mem, n.loc);
    Perspective idx = kTop;
    check_indices(*n.mem, n.indices, n.loc, idx);
    if (n.value && n.value->type != n.mem->elem)
      error("V0705", n.loc,
            "cannot store " + std::string(type_name(n.value->type)) + " into " + q(n.mem->name) + " of " +
                type_name(n.mem->elem));
    if (!info) return;
    if (n.mem->is_const) {
      auto& d = error("V0310", n.loc, "cannot write to " + q(n.mem->name) + ": it is const");
      note(d, n.mem->loc, "declared here");
    }
    if (info->async)
      error("V0315", n.loc, "async memory " + q(n.mem->name) + " can only be written by async-copy intrinsics");
    if (n.mem->space == MemSpace::Local) {
      write_down(n.mem->name, info->persp, n.mem->loc, meet(v, idx), n.loc);
      return;
    }
    if (!one_thread(info->persp)) {
      auto& d = error("V0301", n.loc,
                      "cannot write to " + q(n.mem->name) + ", which lives at " + info->persp.str() +
                          "; narrow it to thread(1) with partition or claim first");
      note(d, info->narrowed_at, "its perspective " + info->persp.str() + " comes from here");
    }
  }

  void check(const If& n) {
    Perspective v = check_expr(n.cond, n.loc);
    if (n.cond && n.cond->type != ScalarType::Bool)
      error("V0703", n.loc, std::string("if needs a bool condition, not ") + type_name(n.cond->type));
    uniform(v, "V0203", n.loc, "the branch condition");
    body(n.then_body);
    if (n.else_body) body(n.else_body);
  }

  void check(const For& n) {
    Perspective v = meet(check_expr(n.begin, n.loc), meet(check_expr(n.end, n.loc), check_expr(n.step, n.loc)));
    for (const auto& e : {n.begin, n.end, n.step}) {
      if (e && !is_integer(e->type))
        error("V0704", n.loc, std::string("loop bounds must be integers, not ") + type_name(e->type));
      if (e && n.var && e->type != n.var->type && is_integer(e->type))
        error(
            "V0701", n.loc,
            std::string("loop bounds have different types: ") + type_name(e->type) + " and " + type_name(n.var->type));
    }
    if (auto step = const_int(n.step); step && *step == 0) error("V0209", n.loc, "loop step is zero");
    uniform(v, "V0204", n.loc, "the loop bound");
    push_scope();
    declare(n.var, code(), true);
    loops_.push_back({frames_.size(), async_depth_});
    body(n.body);
    loops_.pop_back();
    pop_scope();
  }

  void check(const While& n) {
    Perspective v = check_expr(n.cond, n.loc);
    if (n.cond && n.cond->type != ScalarType::Bool)
      error("V0703", n.loc, std::string("while needs a bool condition, not ") + type_name(n.cond->type));
    uniform(v, "V0205", n.loc, "the loop condition");
    loops_.push_back({frames_.size(), async_depth_});
    body(n.body);
    loops_.pop_back();
  }

  /// break and continue: inside a loop, in thread(1) code that is the loop's own (no group, split or
  /// async scope between them), so that no barrier, collective or async wait can be skipped.
  void check(const Jump& n) {
    const char* what = n.is_break ? "break" : "continue";
    if (loops_.empty()) {
      error("V0211", n.loc, std::string(what) + " outside a loop");
      return;
    }
    const LoopFrame& lp = loops_.back();
    Perspective c = code();
    if (!(c.level == Level::Thread && c.count == Size(1))) {
      auto& d = error("V0212", n.loc,
                      std::string(what) + " in code at " + c.str() +
                          ": only thread(1) code may leave a loop early (wider code could skip a barrier or a "
                          "collective some of its threads still reach); use a while_ whose condition includes a flag");
      note_code(d);
    } else if (frames_.size() != lp.frames || async_depth_ != lp.async_depth) {
      error("V0212", n.loc,
            std::string(what) +
                " would leave a group, split or async scope opened inside its loop; put the loop inside it");
    }
  }

  void check(const Group& n) {
    if (!valid(n.p, n.loc, "group")) return body(n.body);
    if (n.p.level > code().level) {
      auto& d = error(
          "V0101", n.loc,
          "group(" + n.p.str() + ") cannot widen the code's perspective " + code().str() + "; group only narrows");
      note_code(d);
    } else {
      rule(fits_in(n.p, code()), Obligation::Kind::Divides, units(n.p), units(code()), "V0102", n.loc, [&] {
        return std::string("group(" + n.p.str() + "): " + code().str() + " does not divide evenly into aligned " +
                           n.p.str() + " units");
      });
    }
    frames_.push_back({n.p, n.loc, "group"});
    body(n.body);
    frames_.pop_back();
  }

  /// Units of `level` inside the code's perspective.
  std::optional<Size> available(Level level) const {
    Perspective c = code();
    if (level > c.level) return std::nullopt;
    Size s = c.count;
    if (c.level == Level::Grid && level != Level::Grid) s.blocks = true;
    if (c.level != Level::Thread && level == Level::Thread) s.threads = true;
    return s;
  }

  void check(const Split& n) {
    auto avail = available(n.level);
    if (!avail) {
      auto& d = error("V0105", n.loc,
                      std::string("split(") + level_name(n.level) + ") needs code at " + level_name(n.level) +
                          " level or wider; the code is at " + code().str());
      note_code(d);
    }
    std::int64_t offset = 0;
    bool counts_ok = true;
    for (std::size_t i = 0; i < n.counts.size(); ++i) {
      std::int64_t c = n.counts[i];
      SourceLoc bl = i < n.branch_locs.size() && n.branch_locs[i].known() ? n.branch_locs[i] : n.loc;
      if (c < 1) {
        error("V0108", bl, "a split branch needs at least one unit, not " + std::to_string(c));
        counts_ok = false;
        continue;
      }
      if (avail) {
        std::string unit = std::string(level_name(n.level)) + "s";
        if (offset % c != 0) {
          auto& d = error("V0104", bl,
                          "split branch of " + std::to_string(c) + " " + unit + " starts at " + unit + " " +
                              std::to_string(offset) + ", which is not aligned to " + std::to_string(c));
          note_code(d);
        } else {
          rule(divides(c, *avail), Obligation::Kind::Divides, c, *avail, "V0104", bl, [&] {
            return std::string("split branch of " + std::to_string(c) + " " + unit +
                               " is not aligned: " + code().str() + " has " + avail->str() + " " + unit +
                               ", not a multiple of " + std::to_string(c));
          });
        }
      }
      offset += c;
    }
    if (avail && counts_ok) {
      std::string unit = std::string(level_name(n.level)) + "s";
      rule(less_equal(offset, *avail), Obligation::Kind::LessEqual, offset, *avail, "V0103", n.loc, [&] {
        return std::string("split asks for " + std::to_string(offset) + " " + unit + " but " + code().str() +
                           " has only " + avail->str());
      });
    }
    for (std::size_t i = 0; i < n.bodies.size(); ++i) {
      std::int64_t c = i < n.counts.size() ? std::max<std::int64_t>(n.counts[i], 1) : 1;
      SourceLoc bl = i < n.branch_locs.size() && n.branch_locs[i].known() ? n.branch_locs[i] : n.loc;
      frames_.push_back({Perspective{n.level, c}, bl, "split branch", next_branch_++});
      body(n.bodies[i]);
      frames_.pop_back();
    }
  }

  void check(const Destruct& n) {
    Perspective c = code();
    Perspective down = thread(1);
    if (c.count == Size(1) && c.level == Level::Block) {
      down = {Level::Thread, Size::T()};
    } else if (c.count == Size(1) && c.level == Level::Grid) {
      down = {Level::Block, Size::B()};
    } else {
      auto& d = error("V0106", n.loc, "destruct needs the code at exactly block(1) or grid(1), not " + c.str());
      note_code(d);
      down = c;
    }
    frames_.push_back({down, n.loc, "destruct"});
    body(n.body);
    frames_.pop_back();
  }

  /// Shared checks of partition, claim, lower and async on the source memory.
  MemInfo* narrow_source(const MemPtr& src, SourceLoc loc, const char* what) {
    MemInfo* info = use_mem(src, loc);
    if (!info) return nullptr;
    if (src->space == MemSpace::Local) {
      error("V0316", loc, std::string("thread-local array ") + q(src->name) + " cannot be narrowed by " + what);
      return nullptr;
    }
    Truth same = same_persp(info->persp, code());
    if (same == Truth::No) {
      auto& d = error("V0303", loc,
                      std::string(what) + " of " + q(src->name) + " needs the code at " + info->persp.str() +
                          ", where " + q(src->name) + " lives; the code is at " + code().str());
      note(d, info->narrowed_at, q(src->name) + " got its perspective here");
      note_code(d);
    } else {
      rule(same, Obligation::Kind::Equal, units(info->persp), units(code()), "V0303", loc, [&] {
        return std::string(std::string(what) + " of " + q(src->name) + " needs the code at its perspective");
      });
    }
    return info;
  }

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

  void check(const Partition& n) {
    MemInfo* src = narrow_source(n.src, n.loc, "partition");
    bool p_ok = valid(n.p, n.loc, "partition");
    if (src && p_ok) {
      if (fits_in(n.p, src->persp) == Truth::No) {
        auto& d = error("V0304", n.loc,
                        "partition of " + q(n.src->name) + " at " + src->persp.str() + " into " + n.p.str() +
                            ": the target must be narrower and divide it evenly");
        note(d, src->narrowed_at, q(n.src->name) + " got its perspective here");
      } else {
        rule(fits_in(n.p, src->persp), Obligation::Kind::Divides, units(n.p), units(src->persp), "V0304", n.loc, [&] {
          return std::string("partition of " + q(n.src->name) + " into " + n.p.str() + " needs " + src->persp.str() +
                             " to divide evenly");
        });
      }
    }
    push_scope();
    for (const auto& v : n.index_vars) declare(v, kTop);
    Perspective v = check_expr(n.index, n.loc);
    if (n.index && !is_integer(n.index->type))
      error("V0704", n.loc, std::string("index function must return an integer, not ") + type_name(n.index->type));
    pop_scope();
    Perspective target = p_ok ? n.p : thread(1);
    if (narrower_eq(target, v) == Truth::No) {
      error("V0305", at(n.index, n.loc),
            "index function varies with " + v.str() + ", faster than the partition's " + target.str() +
                "; each share needs one offset");
    }
    narrowed_body(src, n.dst, target, n.loc, "partition", n.body, [](MemInfo&) {});
  }

  void check(const Claim& n) {
    MemInfo* src = narrow_source(n.src, n.loc, "claim");
    bool p_ok = valid(n.p, n.loc, "claim");
    if (src && p_ok && fits_in(n.p, src->persp) == Truth::No) {
      auto& d = error("V0308", n.loc,
                      "claim of " + q(n.src->name) + " at " + n.p.str() + " is not narrower than " + src->persp.str());
      note(d, src->narrowed_at, q(n.src->name) + " got its perspective here");
    }
    Perspective target = p_ok ? n.p : thread(1);
    std::size_t depth = frames_.size();
    narrowed_body(src, n.dst, target, n.loc, "claim", n.body, [&](MemInfo& d) {
      d.claimed = true;
      d.claim_p = target;
      d.claim_depth = depth;
    });
  }

  void check(const Lower& n) {
    MemInfo* src = narrow_source(n.src, n.loc, "lower");
    Perspective down = thread(1);
    if (src) {
      if (src->persp == block(1) && code().level == Level::Block) {
        down = {Level::Thread, Size::T()};
      } else if (src->persp == grid(1) && code().level == Level::Grid) {
        down = {Level::Block, Size::B()};
      } else {
        auto& d = error("V0309", n.loc,
                        "lower needs " + q(n.src->name) + " at exactly block(1) or grid(1), not " + src->persp.str());
        note(d, src->narrowed_at, q(n.src->name) + " got its perspective here");
      }
    }
    narrowed_body(src, n.dst, down, n.loc, "lower", n.body, [](MemInfo&) {});
  }

  void check(const Async& n) {
    MemInfo* src = narrow_source(n.src, n.loc, "async");
    if (n.src && n.src->space != MemSpace::Shared)
      error("V0317", n.loc, "async copies target shared memory; " + q(n.src->name) + " is " + space_name(n.src->space));
    ++async_depth_;
    narrowed_body(src, n.dst, src ? src->persp : code(), n.loc, "async", n.body, [](MemInfo& d) { d.async = true; });
    --async_depth_;
  }

  void check(const SharedAlloc& n) {
    bool at_block = code().level == Level::Block && code().count == Size(1);
    if (!at_block) {
      auto& d = error(
          "V0401", n.loc,
          "shared memory " + q(n.mem->name) + " can only be allocated at block(1); the code is at " + code().str());
      note_code(d);
    }
    check_expr(n.count, n.loc);
    const SharedSlot& slot = layout_.allocate(n);
    auto count = n.count && is_integer(n.count->type) ? eval_const(n.count) : std::nullopt;
    if (!count) {
      error("V0402", n.loc, "shared memory " + q(n.mem->name) + " needs a static size (an integer constant)");
    } else if (!count->exact) {
      error("V0402", n.loc,
            "the size of shared memory " + q(n.mem->name) + " overflows " + type_name(n.count->type) +
                " (or divides by zero) while it is computed");
    } else if (count->value < 1) {
      error("V0402", n.loc,
            "shared memory " + q(n.mem->name) + " needs a positive size, not " + std::to_string(count->value));
    } else if (!slot.size_known) {
      error("V0402", n.loc,
            "shared memory " + q(n.mem->name) + " of " + std::to_string(count->value) + " " + type_name(n.mem->elem) +
                " elements is more bytes than 64 bits count");
    } else if (slot.bytes > target::max_shared_bytes()) {
      error("V0404", n.loc,
            "shared memory " + q(n.mem->name) + " (" + std::to_string(slot.bytes) +
                " bytes) exceeds the device limit of " + std::to_string(target::max_shared_bytes()) + " bytes");
    } else if (slot.end + layout_.layout().pad() > budget_) {
      const std::int64_t pad = layout_.layout().pad();
      auto& d = error("V0403", n.loc,
                      "shared memory reaches " + std::to_string(slot.end + pad) + " bytes with " + q(n.mem->name) +
                          " (" + std::to_string(slot.bytes) + " bytes at offset " + std::to_string(slot.offset) +
                          ", arrays start on 16-byte boundaries" +
                          (pad ? ", and " + std::to_string(pad) + " bytes are kept to align the first" : "") +
                          "), over the budget of " + std::to_string(budget_) + " bytes");
      note(d, budget_loc_, "budget declared here");
    }
    if (n.align > kSharedAlignment && !in_kernel_)
      error("V0402", n.loc,
            "shared memory " + q(n.mem->name) +
                ": arrays aligned past 16 bytes are allocated in a kernel's body, not in a device function");
    declare(n.mem, block(1), n.loc);
  }

  void check(const LocalAlloc& n) {
    if (n.count < 1)
      error("V0210", n.loc, "local array " + q(n.mem->name) + " needs a positive size, not " + std::to_string(n.count));
    Perspective p = code();
    if (n.at && valid(*n.at, n.loc, "local array")) {
      p = *n.at;
      if (narrower_eq(p, code()) == Truth::No) {
        auto& d = error("V0206", n.loc,
                        "local array " + q(n.mem->name) + " cannot live at " + p.str() +
                            ", wider than the code's perspective " + code().str());
        note_code(d);
      }
    }
    declare(n.mem, p, n.loc).local_count = n.count;
  }

  void check(const Call& n) {
    if (!n.fn) throw InternalError("call without a function");
    const FunctionNode& f = *n.fn;
    Truth fits = fits_in(f.signature, code());
    if (fits == Truth::No) {
      auto& d = error("V0601", n.loc,
                      "call to " + q(f.name) + " needs " + f.signature.str() + ", which the code's perspective " +
                          code().str() + " cannot provide");
      note_code(d);
      note(d, f.signature_loc, "signature declared here");
    } else {
      rule(fits, Obligation::Kind::Divides, units(f.signature), units(code()), "V0601", n.loc, [&] {
        return std::string("call to " + q(f.name) + " needs " + code().str() + " to divide into " + f.signature.str());
      });
    }
    if (n.args.size() != f.params.size()) {
      auto& d = error("V0602", n.loc,
                      q(f.name) + " takes " + std::to_string(f.params.size()) + " argument(s), not " +
                          std::to_string(n.args.size()));
      note(d, f.loc, "function declared here");
    }
    for (std::size_t i = 0; i < n.args.size() && i < f.params.size(); ++i) call_arg(f, f.params[i], n.args[i], n.loc);
    for (std::size_t i = f.params.size(); i < n.args.size(); ++i)
      if (n.args[i].value) check_expr(n.args[i].value, n.loc);
    no_overlapping_arguments(n, f);
    if (const SharedSlot* slot = f.shared_budget > 0 ? &layout_.call(n) : nullptr; slot && slot->end > budget_) {
      auto& d = error("V0607", n.loc,
                      q(f.name) + " needs " + std::to_string(f.shared_budget) + " bytes of shared memory from offset " +
                          std::to_string(slot->offset) + ", but the budget is " + std::to_string(budget_) + " bytes");
      note(d, budget_loc_, "budget declared here");
    }
    if (n.result) {
      if (!f.returns)
        error("V0803", n.loc, q(f.name) + " returns no value");
      else if (*f.returns != n.result->type)
        error("V0803", n.loc, q(f.name) + " returns " + type_name(*f.returns));
      declare(n.result, thread(1));
    }
  }

  /// A function's pointer parameters may assume they do not overlap (the emitter marks them
  /// __restrict__), so two arguments naming the same memory are an error when one is mutable.
  void no_overlapping_arguments(const Call& n, const FunctionNode& f) {
    for (std::size_t i = 0; i < n.args.size() && i < f.params.size(); ++i) {
      for (std::size_t j = i + 1; j < n.args.size() && j < f.params.size(); ++j) {
        const MemPtr &a = n.args[i].mem, &b = n.args[j].mem;
        const ParamNode &p = f.params[i], &r = f.params[j];
        if (!a || !b || !p.mem || !r.mem || (p.mem->is_const && r.mem->is_const)) continue;
        auto ia = mems_.find(a.get()), ib = mems_.find(b.get());
        if (ia == mems_.end() || ib == mems_.end() || ia->second.root != ib->second.root) continue;
        auto& d = error("V0609", n.loc,
                        "arguments " + q(p.name) + " and " + q(r.name) + " of " + q(f.name) + " are both " +
                            q(ia->second.root->name) +
                            "; a function's pointer parameters must not overlap when one of them is written");
        note(d, ia->second.narrowed_at, q(p.name) + " is given " + q(a->name) + ", made here");
        note(d, ib->second.narrowed_at, q(r.name) + " is given " + q(b->name) + ", made here");
      }
    }
  }

  void call_arg(const FunctionNode& f, const ParamNode& p, const CallArgNode& a, SourceLoc loc) {
    Perspective want = p.at.value_or(f.signature);
    std::string where = "argument " + q(p.name) + " of " + q(f.name);
    if (p.var) {
      if (!a.value) {
        error("V0603", loc, where + " must be a value of type " + type_name(p.var->type) + ", not memory");
        return;
      }
      Perspective v = check_expr(a.value, loc);
      if (a.value->type != p.var->type)
        error("V0603", at(a.value, loc),
              where + " must be " + type_name(p.var->type) + ", not " + type_name(a.value->type));
      if (narrower_eq(want, v) == Truth::No) {
        auto& d =
            error("V0604", at(a.value, loc),
                  where + " varies with " + v.str() + ", faster than the " + want.str() + " the parameter lives at");
        note(d, p.loc, "parameter declared here");
      }
      return;
    }
    if (!a.mem) {
      if (a.value) check_expr(a.value, loc);
      error("V0603", loc,
            where + " must be memory (" + space_name(p.mem->space) + " " + type_name(p.mem->elem) + "), not a value");
      return;
    }
    MemInfo* info = use_mem(a.mem, loc);
    if (a.mem->elem != p.mem->elem || a.mem->space != p.mem->space) {
      error("V0603", loc,
            where + " must be " + space_name(p.mem->space) + " " + type_name(p.mem->elem) + " memory, not " +
                space_name(a.mem->space) + " " + type_name(a.mem->elem));
    }
    if (!info) return;
    if (info->async) error("V0315", loc, "async memory " + q(a.mem->name) + " cannot be passed to a function");
    if (!p.mem->is_const) {
      if (a.mem->is_const) {
        auto& d = error("V0608", loc, where + " is mutable but " + q(a.mem->name) + " is const");
        note(d, p.loc, "parameter declared here");
      }
      Truth same = same_persp(info->persp, want);
      if (same == Truth::No) {
        auto& d = error("V0605", loc,
                        where + " is a mutable pointer living at " + want.str() + "; " + q(a.mem->name) + " lives at " +
                            info->persp.str() + " (mutable pointers must match exactly)");
        note(d, info->narrowed_at, q(a.mem->name) + " got its perspective here");
      } else {
        rule(same, Obligation::Kind::Equal, units(info->persp), units(want), "V0605", loc,
             [&] { return std::string(where + ": mutable pointer perspectives must match"); });
      }
    } else if (narrower_eq(want, info->persp) == Truth::No) {
      auto& d = error(
          "V0606", loc,
          where + " lives at " + want.str() + "; " + q(a.mem->name) + " lives at " + info->persp.str() + ", narrower");
      note(d, info->narrowed_at, q(a.mem->name) + " got its perspective here");
    }
  }

  // ---------------------------------------------------------------- intrinsics
  void need_exact(Perspective p, const std::string& what, SourceLoc loc) {
    Truth t = same_persp(p, code());
    if (t == Truth::No) {
      auto& d = error("V0501", loc, what + " needs exactly " + p.str() + "; the code here is at " + code().str());
      note_code(d);
    } else {
      rule(t, Obligation::Kind::Equal, units(p), units(code()), "V0501", loc,
           [&] { return std::string(what + " needs the code at exactly " + p.str()); });
    }
  }

  void operand_error(const Intrinsic& n, const std::string& msg) {
    error("V0503", n.loc, user_name(n.op) + std::string(": ") + msg);
  }

  /// A thread-local fragment array: local, at thread(1), given type and size.
  void fragment(const Intrinsic& n, std::size_t i, ScalarType t, std::int64_t count, const char* role) {
    if (i >= n.mems.size() || !n.mems[i]) return operand_error(n, std::string("missing ") + role + " operand");
    const MemPtr& m = n.mems[i];
    MemInfo* info = use_mem(m, n.loc);
    if (m->space != MemSpace::Local || m->elem != t || (info && info->local_count != count)) {
      operand_error(n, std::string(role) + " must be a thread-local " + type_name(t) + "[" + std::to_string(count) +
                           "] array; " + q(m->name) + " is " + space_name(m->space) + " " + type_name(m->elem) +
                           (info && info->local_count ? "[" + std::to_string(info->local_count) + "]" : ""));
      return;
    }
    if (info && !one_thread(info->persp))
      operand_error(n, std::string(role) + " " + q(m->name) + " must live at thread(1), not " + info->persp.str());
  }

  MemInfo* operand_mem(const Intrinsic& n, std::size_t i, MemSpace space, std::optional<ScalarType> elem,
                       const char* role) {
    if (i >= n.mems.size() || !n.mems[i]) {
      operand_error(n, std::string("missing ") + role + " operand");
      return nullptr;
    }
    const MemPtr& m = n.mems[i];
    MemInfo* info = use_mem(m, n.loc);
    if (m->space != space || (elem && m->elem != *elem))
      operand_error(n, std::string(role) + " must be " + space_name(space) + " memory" +
                           (elem ? std::string(" of ") + type_name(*elem) : "") + "; " + q(m->name) + " is " +
                           space_name(m->space) + " " + type_name(m->elem));
    return info;
  }

  Perspective operand_value(const Intrinsic& n, std::size_t i, std::optional<ScalarType> t, const char* role) {
    if (i >= n.args.size()) {
      operand_error(n, std::string("missing ") + role);
      return kTop;
    }
    Perspective v = check_expr(n.args[i], n.loc);
    if (n.args[i] && t && n.args[i]->type != *t)
      operand_error(n, std::string(role) + " must be " + type_name(*t) + ", not " + type_name(n.args[i]->type));
    return v;
  }

  void need_async(const Intrinsic& n, MemInfo* dst) {
    if (async_depth_ == 0) error("V0502", n.loc, user_name(n.op) + " must be inside an async scope");
    if (dst && !dst->async)
      error("V0504", n.loc,
            user_name(n.op) + " writes " + q(dst->node->name) +
                ", which is not an async name (open it with async first)");
    if (dst && !one_thread(dst->persp)) {
      auto& d = error("V0301", n.loc,
                      user_name(n.op) + " writes " + q(dst->node->name) + ", which lives at " + dst->persp.str() +
                          "; narrow it to one thread first");
      note(d, dst->narrowed_at, "its perspective comes from here");
    }
  }

  void check(const Intrinsic& n) {
    const std::string& op = user_name(n.op);
    auto imm = [&](std::size_t i) -> std::int64_t { return i < n.imms.size() ? n.imms[i] : 0; };
    auto output = [&](Perspective p) {
      for (const auto& o : n.outputs) declare(o, p);
    };
    // The threads it must run with: its row of the intrinsic table (named_barrier's count is an
    // operand, checked with the others).
    switch (info(n.op).needs) {
      case Needs::Any:
      case Needs::Declared: break;
      case Needs::Thread: need_exact(thread(1), op, n.loc); break;
      case Needs::Warp: need_exact(warp(), op, n.loc); break;
      case Needs::Warpgroup: need_exact(warpgroup(), op, n.loc); break;
      case Needs::Block: need_exact(block(1), op, n.loc); break;
    }
    // Its operands and what it defines.
    switch (n.op) {
      case IntrinsicOp::SyncThreads:
      case IntrinsicOp::SyncWarp: break;
      case IntrinsicOp::NamedBarrier: {
        std::int64_t id = imm(0), threads = imm(1);
        int ids = target::named_barriers();
        if (id < 1 || id >= ids)
          operand_error(n, "barrier id must be 1.." + std::to_string(ids - 1) + " (0 is sync_threads'), not " +
                               std::to_string(id));
        if (threads < 32 || threads % 32 != 0) {
          operand_error(n, "thread count must be a positive multiple of 32, not " + std::to_string(threads));
        } else {
          need_exact(thread(threads), op, n.loc);
        }
        break;
      }
      case IntrinsicOp::ShflXor:
      case IntrinsicOp::ShflDown:
      case IntrinsicOp::ShflUp:
      case IntrinsicOp::ShflIdx: {
        operand_value(n, 0, std::nullopt, "value");
        if (!n.args.empty() && n.args[0] && (n.args[0]->type == ScalarType::Bool))
          operand_error(n, "cannot shuffle a bool");
        Perspective lane = operand_value(n, 1, std::nullopt, "lane operand");
        if (n.args.size() > 1 && n.args[1] && !is_integer(n.args[1]->type))
          operand_error(n, "lane operand must be an integer");
        // Every lane reading the same lane is a broadcast: the result is one value of the warp, so it
        // may bound a loop or guard a sync_warp there.
        bool broadcast = n.op == IntrinsicOp::ShflIdx && narrower_eq(warp(), lane) == Truth::Yes;
        output(broadcast ? warp() : thread(1));
        break;
      }
      case IntrinsicOp::VoteAll:
      case IntrinsicOp::VoteAny:
      case IntrinsicOp::Ballot:
        operand_value(n, 0, ScalarType::Bool, "predicate");
        output(warp());
        break;
      case IntrinsicOp::Atomic: {
        MemInfo* info = nullptr;
        if (!n.mems.empty() && n.mems[0]) {
          info = use_mem(n.mems[0], n.loc);
          const MemNode& m = *n.mems[0];
          if (m.space == MemSpace::Local) operand_error(n, "atomics need global or shared memory");
          if (m.is_const) error("V0310", n.loc, "cannot update " + q(m.name) + " atomically: it is const");
          if (info && info->async) error("V0315", n.loc, "async memory " + q(m.name) + " cannot be used by atomics");
          operand_value(n, 0, std::nullopt, "index");
          if (!n.args.empty() && n.args[0] && !is_integer(n.args[0]->type))
            operand_error(n, "index must be an integer");
          operand_value(n, 1, m.elem, "value");
          auto op = static_cast<AtomicKind>(imm(0));
          if (target::atomic_support(op, m.elem) == target::AtomicSupport::None)
            error("V0505", n.loc,
                  std::string("atomic ") + target::atomic_name(op) + " is not supported on " + type_name(m.elem) +
                      " by any target (it is for " + target::atomic_types(op) + ")");
        } else {
          operand_error(n, "missing memory operand");
        }
        output(thread(1));
        break;
      }
      case IntrinsicOp::MmaSync: {
        auto kind = static_cast<MmaShape>(imm(0));
        ScalarType in = kind == MmaShape::TF32_M16N8K8   ? ScalarType::F32
                        : kind == MmaShape::F16_M16N8K16 ? ScalarType::F16
                                                         : ScalarType::BF16;
        std::int64_t a_n = kind == MmaShape::TF32_M16N8K8 ? 4 : 8;
        std::int64_t b_n = kind == MmaShape::TF32_M16N8K8 ? 2 : 4;
        fragment(n, 0, ScalarType::F32, 4, "d");
        fragment(n, 1, in, a_n, "a");
        fragment(n, 2, in, b_n, "b");
        fragment(n, 3, ScalarType::F32, 4, "c");
        break;
      }
      case IntrinsicOp::Ldmatrix: {
        std::int64_t count = imm(0);
        if (count != 1 && count != 2 && count != 4)
          operand_error(n, "count must be 1, 2 or 4, not " + std::to_string(count));
        else
          fragment(n, 0, ScalarType::U32, count, "destination");
        operand_mem(n, 1, MemSpace::Shared, std::nullopt, "source");
        operand_value(n, 0, std::nullopt, "index");
        break;
      }
      case IntrinsicOp::Wgmma: {
        std::int64_t width = imm(0);
        if (width < 8 || width > 256 || width % 8 != 0)
          operand_error(n, "N must be a multiple of 8 in 8..256, not " + std::to_string(width));
        else
          fragment(n, 0, ScalarType::F32, width / 2, "accumulator");
        MemInfo* a = operand_mem(n, 1, MemSpace::Shared, std::nullopt, "A tile");
        MemInfo* b = operand_mem(n, 2, MemSpace::Shared, std::nullopt, "B tile");
        ScalarType ta = n.mems.size() > 1 && n.mems[1] ? n.mems[1]->elem : ScalarType::F16;
        ScalarType tb = n.mems.size() > 2 && n.mems[2] ? n.mems[2]->elem : ScalarType::F16;
        if (a && ta != ScalarType::F16 && ta != ScalarType::BF16)
          operand_error(n, "the A tile holds f16 or bf16, not " + std::string(type_name(ta)));
        else if (a && b && ta != tb)
          operand_error(
              n, "the A and B tiles hold one type; A holds " + std::string(type_name(ta)) + " and B " + type_name(tb));
        operand_value(n, 0, ScalarType::I32, "A offset");
        operand_value(n, 1, ScalarType::I32, "B offset");
        break;
      }
      case IntrinsicOp::WgmmaFence:
      case IntrinsicOp::WgmmaCommit:
      case IntrinsicOp::WgmmaWait: break;
      case IntrinsicOp::CpAsync: {
        std::int64_t bytes = imm(0);
        if (bytes != 4 && bytes != 8 && bytes != 16)
          operand_error(n, "a copy moves 4, 8 or 16 bytes, not " + std::to_string(bytes));
        MemInfo* dst = operand_mem(n, 0, MemSpace::Shared, std::nullopt, "destination");
        need_async(n, dst);
        MemInfo* src = operand_mem(n, 1, MemSpace::Global, std::nullopt, "source");
        if (src && src->async) error("V0315", n.loc, "the source of cp_async cannot be an async name");
        operand_value(n, 0, std::nullopt, "destination index");
        operand_value(n, 1, std::nullopt, "source index");
        break;
      }
      case IntrinsicOp::CpAsyncCommit:
      case IntrinsicOp::CpAsyncWait: break;
      case IntrinsicOp::TmaLoad2D: {
        // One thread writes the whole box, completing on an mbarrier: no async scope or narrowing
        // (jit/sync refuses a use before a wait on that mbarrier, V1010).
        MemInfo* dst = operand_mem(n, 0, MemSpace::Shared, std::nullopt, "destination");
        if (dst && dst->async)
          error("V0315", n.loc, "tma_load writes shared memory by its own name, not an async name");
        operand_mem(n, 1, MemSpace::Shared, ScalarType::U64, "mbarrier");
        operand_value(n, 3, ScalarType::I32, "destination index");
        operand_value(n, 0, ScalarType::I32, "column");
        operand_value(n, 1, ScalarType::I32, "row");
        operand_value(n, 2, ScalarType::I32, "mbarrier slot");
        std::int64_t index = imm(0);
        if (!maps_ || index < 0 || index >= static_cast<std::int64_t>(maps_->size())) {
          operand_error(n, "the tensor map is not one of this kernel's");
        } else if (dst && n.mems[0] && (*maps_)[index].mem && n.mems[0]->elem != (*maps_)[index].mem->elem) {
          operand_error(n, "tensor map " + q((*maps_)[index].name) + " holds " + type_name((*maps_)[index].mem->elem) +
                               ", and the destination " + type_name(n.mems[0]->elem));
        }
        break;
      }
      case IntrinsicOp::MbarrierInit:
        operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
        operand_value(n, 0, ScalarType::I32, "count");
        operand_value(n, 1, ScalarType::I32, "mbarrier slot");
        break;
      case IntrinsicOp::MbarrierArrive:
        operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
        operand_value(n, 0, ScalarType::I32, "mbarrier slot");
        break;
      case IntrinsicOp::MbarrierExpectTx: {
        operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
        operand_value(n, 0, ScalarType::I32, "mbarrier slot");
        std::int64_t bytes = imm(0);
        if (bytes < 1 || bytes >= (1 << 20))
          operand_error(n, "a phase expects 1 to 2^20 - 1 bytes, not " + std::to_string(bytes));
        break;
      }
      case IntrinsicOp::MbarrierWait:
        operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
        operand_value(n, 0, ScalarType::I32, "phase");
        operand_value(n, 1, ScalarType::I32, "mbarrier slot");
        break;
      case IntrinsicOp::SetMaxNreg: {
        std::int64_t count = imm(0);
        if (count < 24 || count > 256 || count % 8 != 0)
          operand_error(n, "a register limit is a multiple of 8 in 24..256, not " + std::to_string(count));
        break;
      }
    }
  }

  void check(const Unsafe& n) {
    if (valid(n.needs, n.loc, "unsafe")) {
      Truth t = same_persp(n.needs, code());
      if (t == Truth::No) {
        auto& d =
            error("V0801", n.loc, "unsafe block declares " + n.needs.str() + "; the code here is at " + code().str());
        note_code(d);
      } else {
        rule(t, Obligation::Kind::Equal, units(n.needs), units(code()), "V0801", n.loc,
             [&] { return std::string("unsafe block needs the code at exactly " + n.needs.str()); });
      }
    }
    for (const auto& [name, e] : n.inputs) check_expr(e, n.loc);
    for (const auto& [name, v] : n.outputs) {
      if (!v) continue;
      auto it = vars_.find(v.get());
      if (it == vars_.end()) {
        auto& d = error("V0207", n.loc, "variable " + q(v->name) + " is not in scope here");
        note(d, v->loc, "declared here");
        continue;
      }
      write_down(v->name, it->second.persp, it->second.decl, thread(1), n.loc);
    }
  }

  void check(const Barrier&) { throw InternalError("check: a barrier statement reached the checker"); }
  void check(const VectorCopy&) { throw InternalError("check: lowered IR (a vector copy) reached the checker"); }

  void check(const Return& n) {
    if (n.value) check_expr(n.value, n.loc);
    if (frames_.size() > 1 || narrowing_open()) {
      auto& d =
          error("V0802", n.loc,
                "return inside a narrower perspective or a narrowed memory scope; only the whole function may return");
      note_code(d);
    }
    if (n.value && !returns_)
      error("V0803", n.loc, "this function returns no value");
    else if (!n.value && returns_)
      error("V0803", n.loc, std::string("this function must return a ") + type_name(*returns_));
    else if (n.value && returns_ && n.value->type != *returns_)
      error("V0803", n.loc,
            std::string("return value is ") + type_name(n.value->type) + ", the function returns " +
                type_name(*returns_));
  }

  struct LoopFrame {
    std::size_t frames;
    int async_depth;
  };
  std::vector<LoopFrame> loops_;  ///< the loops around the statement being checked

  bool narrowing_open() const {
    for (const auto& [node, info] : mems_)
      if (info.hidden) return true;
    return async_depth_ > 0;
  }

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

}  // namespace

std::int64_t default_shared_budget() { return target::static_shared_bytes(); }

CheckResult check(const ir::KernelNode& kernel) {
  return Checker({}, kernel.shared_budget, kernel.budget_declared ? kernel.budget_loc : kernel.loc).run_kernel(kernel);
}

CheckResult check(const ir::FunctionNode& fn) {
  return Checker({}, fn.shared_budget, fn.budget_loc.known() ? fn.budget_loc : fn.loc).run_function(fn);
}

}  // namespace vantage::check
