// Vantage perspective checker. One walk over the IR keeps the code's perspective (a stack of frames
// pushed by group, split branches and destruct), the perspective every variable and memory name
// lives at, and the shared memory in use. Size rules that depend on the launch shape are decided
// when threads per block (T) or blocks (B) are known, and otherwise become obligations.
//
// Its classes, by concern: the Context (what the walk knows: sizes and perspectives, scopes,
// diagnostics; check.cpp), the ExprChecker (expressions; statements.cpp), the IntrinsicChecker (each
// intrinsic's threads and operands; intrinsics.cpp) and the Checker (kernels, functions and
// statements: groups, splits, partitions, calls, unsafe blocks, returns; check.cpp, statements.cpp).
#pragma once

#include "jit/check/check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "jit/ir/eval.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/shared_layout.h"
#include "jit/ir/visit.h"
#include "jit/target/target.h"
#include "support/float16.h"

namespace vantage::check::detail {

using namespace ir;

enum class Truth : std::uint8_t { No, Yes, Unknown };

constexpr Perspective kTop = grid(1);  // values that are the same everywhere: literals, parameters

/// The most blocks a cluster has (the portable size; sm_90 allows 16 only by opt-in).
constexpr std::int64_t kMaxCluster = 8;
using ir::kMaxBlocksPerSm;

struct Knowledge {
  std::optional<std::int64_t> threads;
  std::optional<std::int64_t> blocks;
  std::int64_t grid_multiple = 1;  ///< with the cluster size: the grid is a multiple of both
  std::int64_t cluster = 1;
  std::int64_t min_blocks = 0;  ///< KernelBuilder::min_blocks_per_sm (0: not asked)
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

/// What indices, loop bounds, extents and lanes take: an integer of 32 or 64 bits. An 8- or 16-bit
/// one is cast first, which `narrow_hint` says.
inline bool is_index_integer(ScalarType t) { return is_integer(t) && !is_narrow_integer(t); }
inline std::string narrow_hint(ScalarType t) {
  return is_narrow_integer(t) ? std::string(" (cast the ") + type_name(t) + " to i32 first: cast<i32>(x))" : "";
}
/// What to write where an 8-bit float meets an operation (nothing for other types).
inline std::string fp8_hint(ScalarType t) {
  return is_fp8(t) ? std::string(" (an ") + type_name(t) + " is for storage: compute in f32, cast<float>(x))" : "";
}
/// "`what` must be an integer of 32 or 64 bits, not T", with the hint.
inline std::string not_index_integer(const std::string& what, ScalarType t) {
  return what + " must be an integer" + (is_narrow_integer(t) ? " of 32 or 64 bits" : "") + ", not " + type_name(t) +
         narrow_hint(t);
}

/// What the walk knows at the statement being checked: the launch shape, the code's perspective (a
/// stack of frames pushed by group, split branches and destruct), the names in scope and the
/// perspectives they live at, and what was found so far (errors, obligations). The rules' classes
/// share one; its sizes and perspectives answer Yes, No or Unknown (an obligation for
/// specialization).
class Context {
 public:
  explicit Context(Knowledge k) : know(k) {}

  // ---------------------------------------------------------------- sizes and perspectives
  Size subst(Size s) const {
    if (s.threads && know.threads) s = {s.coeff * *know.threads, false, s.blocks};
    if (s.blocks && know.blocks) s = {s.coeff * *know.blocks, s.threads, false};
    return s;
  }

  Truth divides(Size a, Size b) const {
    a = subst(a);
    b = subst(b);
    if (a.coeff <= 0 || b.coeff <= 0) return Truth::No;
    if (a.is_static() && b.is_static()) return b.coeff % a.coeff == 0 ? Truth::Yes : Truth::No;
    if ((!a.threads || b.threads) && (!a.blocks || b.blocks)) {
      std::int64_t bc = b.coeff * ((b.blocks && !a.blocks) ? know.grid_multiple : 1);
      if (bc % a.coeff == 0) return Truth::Yes;
    }
    return Truth::Unknown;
  }

  Truth less_equal(Size a, Size b) const {
    a = subst(a);
    b = subst(b);
    if (a.is_static() && b.is_static()) return a.coeff <= b.coeff ? Truth::Yes : Truth::No;
    if ((!a.threads || b.threads) && (!a.blocks || b.blocks)) {
      std::int64_t least_b = b.coeff * ((b.blocks && !a.blocks) ? know.grid_multiple : 1);
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
  std::int64_t least(Size s) const { return s.coeff * (s.blocks ? know.grid_multiple : 1); }

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

  /// Units of `level` inside the code's perspective.
  std::optional<Size> available(Level level) const;

  const Frame& frame() const { return frames.back(); }
  Perspective code() const { return frames.back().code; }

  bool valid(Perspective p, SourceLoc loc, const char* what) {
    if (p.count.is_static() && p.count.coeff >= 1) return true;
    error(
        "V0108", loc,
        std::string("invalid perspective ") + p.str() + " for " + what + ": the unit count must be a positive number");
    return false;
  }

  // ---------------------------------------------------------------- diagnostics
  Diagnostic& error(std::string code, SourceLoc loc, std::string message) {
    errors.push_back({std::move(code), std::move(message), loc, {}});
    return errors.back();
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
    for (const auto& o : obligations)
      if (o.kind == kind && o.lhs == lhs && o.rhs == rhs && o.code == code && o.loc.line == loc.line &&
          o.loc.file == loc.file)
        return true;
    obligations.push_back({kind, lhs, rhs, code, message(), loc});
    return true;
  }

  // ---------------------------------------------------------------- scopes
  struct Decl {
    const VarNode* var = nullptr;
    const MemNode* mem = nullptr;
  };
  void push_scope() { scopes.emplace_back(); }
  void pop_scope() {
    for (const auto& d : scopes.back()) {
      if (d.var) vars.erase(d.var);
      if (d.mem) mems.erase(d.mem);
    }
    scopes.pop_back();
  }
  void declare(const VarPtr& v, Perspective p, bool loop = false) {
    if (!v) return;
    vars[v.get()] = {p, v->loc, loop};
    scopes.back().push_back({v.get(), nullptr});
  }
  MemInfo& declare(const MemPtr& m, Perspective p, SourceLoc at) {
    auto& info = mems[m.get()];
    info = MemInfo{};
    info.node = m.get();
    info.root = m.get();
    info.persp = p;
    info.narrowed_at = at;
    scopes.back().push_back({nullptr, m.get()});
    return info;
  }

  // ---------------------------------------------------------------- memory names
  /// Looks up memory for a use; reports out-of-scope, hidden and misplaced claimed names.
  MemInfo* use_mem(const MemPtr& m, SourceLoc loc) {
    if (!m) return nullptr;
    auto it = mems.find(m.get());
    if (it == mems.end()) {
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

  /// Where to report a problem with `e`: its own location, except for variable references, which
  /// carry their declaration's location; those report at the enclosing use.
  static SourceLoc at(const ExprPtr& e, SourceLoc fallback) {
    if (!e || !e->loc.known() || e->kind == ExprKind::VarRef) return fallback;
    return e->loc;
  }

  Knowledge know;
  const std::vector<TensorMapNode>* maps = nullptr;  ///< the kernel's tensor maps (none in a function)
  std::vector<Frame> frames;
  std::vector<std::vector<Decl>> scopes;
  std::unordered_map<const VarNode*, VarInfo> vars;
  std::unordered_map<const MemNode*, MemInfo> mems;
  std::vector<Diagnostic> errors;
  std::vector<Obligation> obligations;
  int async_depth = 0;  ///< async scopes around the statement
  /// The branches, loops and block splits around the statement whose condition, bounds or branch
  /// may differ between blocks (a value that varies by block): a cluster_sync there may be reached
  /// by some of a cluster's blocks and not the others (V0213).
  std::vector<SourceLoc> block_divergence;
};

/// While alive, the statement being checked runs under `at`, whose value `v` may differ between
/// blocks (its perspective is narrower than the grid's); `by_block` says so outright (a split of blocks).
class BlockDivergence {
 public:
  BlockDivergence(Context& c, Perspective v, SourceLoc at, bool by_block = false)
      : c_(c), on_(by_block || v.level != Level::Grid) {
    if (on_) c_.block_divergence.push_back(at);
  }
  ~BlockDivergence() {
    if (on_) c_.block_divergence.pop_back();
  }
  BlockDivergence(const BlockDivergence&) = delete;
  BlockDivergence& operator=(const BlockDivergence&) = delete;

 private:
  Context& c_;
  bool on_;
};

/// The expression rules: each expression's perspective (the narrowest at which it is the same for
/// every thread), its types, and the names it reads in scope.
class ExprChecker {
 public:
  explicit ExprChecker(Context& c) : c_(c) {}

  void check_indices(const MemNode& m, const std::vector<ExprPtr>& idx, SourceLoc loc, Perspective& variance) {
    if (static_cast<int>(idx.size()) != m.dims)
      c_.error("V0311", loc,
               q(m.name) + " takes " + std::to_string(m.dims) + " index(es), not " + std::to_string(idx.size()));
    for (const auto& i : idx) {
      variance = c_.meet(variance, check_expr(i, loc));
      if (i && !is_index_integer(i->type))
        c_.error("V0704", c_.at(i, loc), not_index_integer("index into " + q(m.name), i->type));
    }
  }

  /// Checks an expression and returns the perspective it varies with.
  Perspective check_expr(const ExprPtr& e, SourceLoc loc) {
    if (!e) {
      c_.error("V0706", loc, "missing expression (an undefined Expr was used)");
      return kTop;
    }
    SourceLoc here = c_.at(e, loc);
    return dispatch(*e, [&](const auto& n) { return expr_rule(n, here, loc); });
  }

  Perspective expr_rule(const Literal& n, SourceLoc here, SourceLoc) {
    if (!fits(n.type, n.i))
      c_.error("V0707", here,
               "literal " + std::to_string(n.i) + " does not fit in " + type_name(n.type) +
                   " (write it as a wider type, or cast<T>() explicitly)");
    if (auto became = float_literal_changes(n.type, n.f)) {
      const std::string t = type_name(n.type);
      std::string fix;
      if (std::isinf(*became) || *became == 0)
        fix = "it is outside " + t + "'s range: compute in a wider type, or scale it";
      else if (n.f == std::floor(n.f))
        fix = "write " + spelled(n.type, *became) + " if that is meant, or compute in a wider type";
      else
        fix = "write " + spelled(n.type, n.f) + " for the nearest " + t + " value, or cast<T>() a wider expression";
      c_.error("V0707", here,
               "literal " + number(n.f) + " is not " + article(n.type) + " value (as one it would be " +
                   number(*became) + "): " + fix);
    }
    return kTop;
  }
  /// What a float literal of value `v` becomes in `t` where that is not `v` (F64 holds every value).
  static std::optional<double> float_literal_changes(ScalarType t, double v) {
    if (!is_float(t) || t == ScalarType::F64 || std::isnan(v)) return std::nullopt;
    double r = static_cast<float>(v);
    if (t == ScalarType::F16) r = float16::half_to_float(float16::f64_to_16bit(v, false));
    if (t == ScalarType::BF16) r = float16::bf16_to_float(float16::f64_to_16bit(v, true));
    if (r == v) return std::nullopt;
    return r;
  }
  static std::string number(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
  }
  static std::string article(ScalarType t) {
    const std::string n = type_name(t);
    return (n[0] == 'f' ? "an " : "a ") + n;
  }
  /// `v` as the user would write a literal of type `t`.
  static std::string spelled(ScalarType t, double v) {
    if (t == ScalarType::F32) return number(v) + (number(v).find_first_of(".e") == std::string::npos ? ".0f" : "f");
    return std::string(t == ScalarType::F16 ? "half(" : "bfloat16(") + number(v) + "f)";
  }
  Perspective expr_rule(const VarRef& n, SourceLoc, SourceLoc loc) {
    auto it = c_.vars.find(n.var.get());
    if (it == c_.vars.end()) {
      auto& d = c_.error("V0207", loc, "variable " + q(n.var->name) + " is not in scope here");
      c_.note(d, n.var->loc, "declared here");
      return kTop;
    }
    return it->second.persp;
  }
  Perspective expr_rule(const Unary& n, SourceLoc here, SourceLoc) {
    Perspective v = check_expr(n.a, here);
    if (n.a) {
      ScalarType t = n.a->type;
      if (!defined_for(n.op, t))
        c_.error("V0702", here,
                 std::string("operator ") + name_of(n.op) + " is not defined for " + type_name(t) + fp8_hint(t));
    }
    return v;
  }
  Perspective expr_rule(const Binary& n, SourceLoc here, SourceLoc) {
    Perspective v = c_.meet(check_expr(n.a, here), check_expr(n.b, here));
    if (n.a && n.b) binary_types(n, here);
    return v;
  }
  Perspective expr_rule(const Cast& n, SourceLoc here, SourceLoc) {
    Perspective v = check_expr(n.a, here);
    // An 8-bit float converts to and from the other floats (one rounding each way), not integers.
    if (n.a && (is_fp8(n.type) || is_fp8(n.a->type))) {
      const ScalarType other = is_fp8(n.type) ? n.a->type : n.type;
      if (!is_float(other) && !is_fp8(other))
        c_.error("V0702", here,
                 std::string("a cast between ") + type_name(n.a->type) + " and " + type_name(n.type) +
                     " is not defined: 8-bit floats convert to and from floats (cast through f32)");
    }
    return v;
  }
  Perspective expr_rule(const Select& n, SourceLoc here, SourceLoc) {
    Perspective v = c_.meet(check_expr(n.c, here), c_.meet(check_expr(n.a, here), check_expr(n.b, here)));
    if (n.c && n.c->type != ScalarType::Bool)
      c_.error("V0703", here, std::string("select needs a bool condition, not ") + type_name(n.c->type));
    if (n.a && n.b && n.a->type != n.b->type)
      c_.error("V0701", here,
               std::string("select operands have different types: ") + type_name(n.a->type) + " and " +
                   type_name(n.b->type));
    return v;
  }
  Perspective expr_rule(const MathCall& n, SourceLoc here, SourceLoc) {
    Perspective v = kTop;
    if (n.fn == MathFn::Bitcast) {
      for (const auto& a : n.args) v = c_.meet(v, check_expr(a, here));
      const ScalarType from = n.args.empty() || !n.args[0] ? n.type : n.args[0]->type;
      auto sized = [](ScalarType t) { return is_index_integer(t) || t == ScalarType::F32 || t == ScalarType::F64; };
      if (!sized(from) || !sized(n.type) || type_bytes(from) != type_bytes(n.type))
        c_.error("V0702", here,
                 std::string("bit_cast takes a type of 32 or 64 bits to another of the same size (i32, u32 or f32; "
                             "i64, u64 or f64), not ") +
                     type_name(from) + " to " + type_name(n.type));
      return v;
    }
    for (const auto& a : n.args) {
      v = c_.meet(v, check_expr(a, here));
      bool defined = is_bit_fn(n.fn) ? a && is_index_integer(a->type)
                                     : a && (is_float(a->type) || (n.fn == MathFn::Abs && is_integer(a->type)));
      if (a && !defined)
        c_.error("V0702", here,
                 std::string(name_of(n.fn)) + " is not defined for " + type_name(a->type) +
                     (is_bit_fn(n.fn) ? " (it takes an integer of 32 or 64 bits)" : fp8_hint(a->type)));
      if (a && n.args.front() && a->type != n.args.front()->type)
        c_.error("V0701", here, std::string(name_of(n.fn)) + " operands have different types");
    }
    return v;
  }
  Perspective expr_rule(const Id& n, SourceLoc here, SourceLoc) {
    if (!c_.valid(n.p, here, "id()")) return thread(1);
    if (c_.fits_in(n.p, c_.code()) == Truth::No) {
      auto& d =
          c_.error("V0107", here, "id(" + n.p.str() + ") needs a perspective that tiles the code's " + c_.code().str());
      c_.note_code(d);
    } else {
      c_.rule(c_.fits_in(n.p, c_.code()), Obligation::Kind::Divides, c_.units(n.p), c_.units(c_.code()), "V0107", here,
              [&] { return std::string("id(" + n.p.str() + ") needs " + n.p.str() + " to tile " + c_.code().str()); });
    }
    return n.p;
  }
  Perspective expr_rule(const Builtin& n, SourceLoc, SourceLoc) {
    if (n.which == BuiltinKind::BlocksInGrid) return kTop;     // the same for every thread of the launch
    if (n.which == BuiltinKind::BlockInGrid) return block(1);  // cluster_rank: the same for a block's threads
    throw InternalError("check: lowered IR (a hardware position) reached the checker");
  }
  Perspective expr_rule(const Load& n, SourceLoc here, SourceLoc) {
    Perspective v = kTop;
    if (MemInfo* info = c_.use_mem(n.mem, here)) {
      v = info->persp;
      if (info->async)
        c_.error("V0315", here, "async memory " + q(n.mem->name) + " can only be used by async-copy intrinsics");
    }
    check_indices(*n.mem, n.indices, here, v);
    return v;
  }

  void binary_types(const Binary& n, SourceLoc here);

  /// A condition or bound must not vary faster than the code's perspective.
  void uniform(Perspective variance, const std::string& code_id, SourceLoc loc, const std::string& what) {
    c_.rule(c_.narrower_eq(c_.code(), variance), Obligation::Kind::Divides, c_.code().count, variance.count, code_id,
            loc, [&] {
              return std::string(what + " varies with " + variance.str() + ", faster than the code's perspective " +
                                 c_.code().str());
            });
  }

 private:
  Context& c_;
};

/// The intrinsic rules: the threads each intrinsic needs (its row of jit/ir/intrinsics.h), its
/// operands' spaces, types and sizes, and what it defines.
class IntrinsicChecker {
 public:
  IntrinsicChecker(Context& c, ExprChecker& x) : c_(c), x_(x) {}

  void check(const Intrinsic& n);

 private:
  void need_exact(Perspective p, const std::string& what, SourceLoc loc);
  /// V0917 where the kernel has no clusters (`what` needs them).
  void need_cluster(const std::string& what, SourceLoc loc);

  void operand_error(const Intrinsic& n, const std::string& msg) {
    c_.error("V0503", n.loc, user_name(n.op) + std::string(": ") + msg);
    operand_failed_ = true;
  }
  /// Marks operand `i` of `n` checked by its intrinsic's rule (value operands, or memory ones).
  void checked(std::vector<bool>& which, std::size_t i) {
    if (i < which.size()) which[i] = true;
  }
  /// After an intrinsic's own rules: an operand none of them checked is refused (V0503), not taken
  /// unchecked, so that an intrinsic whose rule forgets an operand fails loudly.
  void refuse_unchecked(const Intrinsic& n);

  /// A thread-local fragment array: local, at thread(1), given type and size.
  void fragment(const Intrinsic& n, std::size_t i, ScalarType t, std::int64_t count, const char* role);

  MemInfo* operand_mem(const Intrinsic& n, std::size_t i, MemSpace space, std::optional<ScalarType> elem,
                       const char* role);

  Perspective operand_value(const Intrinsic& n, std::size_t i, std::optional<ScalarType> t, const char* role);

  void need_async(const Intrinsic& n, MemInfo* dst);

  Context& c_;
  ExprChecker& x_;
  std::vector<bool> args_checked_, mems_checked_;  ///< of the intrinsic being checked
  bool operand_failed_ = false;                    ///< an operand of it was refused already
};

class Checker {
 public:
  Checker(Knowledge k, std::int64_t budget, SourceLoc budget_loc)
      : c_(k), x_(c_), i_(c_, x_), budget_(budget), budget_loc_(budget_loc) {}
  Checker(const Checker&) = delete;  // the rules refer to c_
  Checker& operator=(const Checker&) = delete;

  CheckResult run_kernel(const KernelNode& k);

  CheckResult run_function(const FunctionNode& f);

 private:
  CheckResult finish();

  // ---------------------------------------------------------------- kernel and function headers
  void check_launch_shape(const KernelNode& k);

  /// The declared shared-memory budget: not negative, within the device limit.
  void check_budget();

  void check_params(const std::vector<ParamNode>& params, std::optional<Perspective> sig);

  // ---------------------------------------------------------------- statements
  void body(const StmtPtr& s) {
    c_.push_scope();
    stmt(s);
    c_.pop_scope();
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

  void check(const Split& n);

  void check(const Destruct& n);

  /// Shared checks of partition, claim, lower and async on the source memory.
  MemInfo* narrow_source(const MemPtr& src, SourceLoc loc, const char* what);

  /// Runs a narrowing construct's body with the source hidden and the new name declared.
  template <class F>
  void narrowed_body(MemInfo* src, const MemPtr& dst, Perspective p, SourceLoc loc, const char* what, const StmtPtr& b,
                     F&& configure) {
    c_.push_scope();
    MemInfo& d = c_.declare(dst, p, loc);
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
    c_.pop_scope();
  }

  void check(const Partition& n);

  void check(const Claim& n);

  void check(const Lower& n);

  void check(const Async& n);

  void check(const SharedAlloc& n);

  void check(const LocalAlloc& n);

  void check(const Call& n);

  void call_arg(const FunctionNode& f, const ParamNode& p, const CallArgNode& a, SourceLoc loc);

  void check(const Barrier&) { throw InternalError("check: a barrier statement reached the checker"); }
  void check(const VectorCopy&) { throw InternalError("check: lowered IR (a vector copy) reached the checker"); }

  void check(const Return& n);
  /// Whether a narrowing scope (partition, claim, lower or async) is open around the statement.
  bool narrowing_open() const;

  struct LoopFrame {
    std::size_t frames;
    int async_depth;
  };
  std::vector<LoopFrame> loops_;  ///< the loops around the statement being checked

  void check(const Unsafe& n);
  void check(const Intrinsic& n) { i_.check(n); }

  Context c_;
  ExprChecker x_;
  IntrinsicChecker i_;
  bool in_kernel_ = false;  ///< checking a kernel, not a device function
  std::int64_t budget_;
  SourceLoc budget_loc_;
  std::optional<ScalarType> returns_;
  SharedLayoutBuilder layout_;  // the shared layout (ir::layout_shared's rules), built as the walk goes
  int next_branch_ = 0;
};

}  // namespace vantage::check::detail
