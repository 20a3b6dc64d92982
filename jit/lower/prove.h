// Lowering's bounds prover: whether an access's index is inside its buffer, from the conditions the
// code is under, the ranges of its variables and the values of its lets. BodyLowerer keeps one and
// tells it, statement by statement, what holds (add_facts, kill_facts, bind_range, define); every
// access then asks it (proven_below, proven_nonnegative). Private to jit/lower.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jit/ir/range.h"
#include "jit/ir/views.h"

namespace vantage::lower::detail {

using namespace ir;

/// Whether `e` is the literal `true`.
bool is_true(const ExprPtr& e);

class Prover {
 public:
  /// `env`: the ranges of the positions and parameters; `stable`: the kernel's pointer parameters
  /// (those of them that are const global memory never change while it runs); `reassigned`: the
  /// variables assigned after their definition (kept by the caller, filled before the first proof).
  Prover(RangeEnv env, const std::unordered_map<const MemNode*, int>& stable,
         const std::unordered_set<const VarNode*>& reassigned)
      : env_(std::move(env)), stable_(stable), reassigned_(reassigned) {
    env_.exact_memo = &exact_memo_;
  }
  Prover(const Prover&) = delete;  // env_ points into it
  Prover& operator=(const Prover&) = delete;

  const RangeEnv& env() const { return env_; }

  // ------------------------------------------------------------------ what holds
  /// The conditions in force; a scope saves the count and restores it when it ends.
  std::size_t facts() const { return facts_.size(); }
  void restore_facts(std::size_t n) { facts_.resize(n); }
  /// Whether `e` reads a variable of `vars`, or memory whose elements may change while the kernel
  /// runs (any but the kernel's const global pointer parameters, which the launcher keeps apart from
  /// every buffer it writes): its value at one statement need not be its value at a later one.
  bool reads_changing(const ExprPtr& e, const std::unordered_set<const VarNode*>& vars) const;
  /// Facts that read one of `vars` stop holding (the variables are assigned here, or in a loop about
  /// to run). They are cleared in place, so that the scopes' saved counts stay right; a fact cleared
  /// inside a branch stays cleared after it, where the variable may have changed.
  void kill_facts(const std::unordered_set<const VarNode*>& vars);
  void add_facts(const ExprPtr& cond);
  /// The rounds of a block-strided loop: for `for k in [b, a / T)` with T > 0, a step of 1, b at least
  /// 0 (the caller's to know) and a computed exactly, k * T + T <= a in the body (k is at most
  /// a / T - 1; a below 0 runs no round), so that each round's `t + k * T` (t < T) is proven below a.
  void add_rounds_fact(const VarPtr& k, const ExprPtr& end, SourceLoc loc);
  /// A variable's range from here on. Ranges and lets change what proofs find: what they remember
  /// is forgotten (the exact ranges, the usable facts, the normal forms). Each variable is bound
  /// once, before anything that reads it is proven, so nothing remembered reads it yet: the
  /// forgetting only keeps the memos right should a variable ever be bound again (no test can tell
  /// it from keeping them).
  void bind_range(const VarNode* v, Range r);
  /// A let's value stands for its variable in proofs (an integer let nothing assigns, computed
  /// exactly, reading nothing that changes).
  void define(const VarNode* v, const ExprPtr& value) {
    if (defs_.emplace(v, value).second) def_order_.push_back(v);
  }
  /// The ranges as they were before `narrow`, to put back where its branch ends.
  struct Narrowed {
    std::vector<std::pair<const VarNode*, std::optional<Range>>> vars;
    std::optional<std::optional<Range>> thread, block;
  };
  /// The ranges in a branch taken where `cond` holds (`negated`: where it does not; then only a
  /// single comparison counts): a comparison with a constant of the thread's or block's position, or
  /// of a variable nothing assigns, narrows its range, and the lets computed from it (`define`) are
  /// narrowed in turn. A warpgroup's branch `if (tid >= 128 && tid < 256)` makes `t / 128` 1 there,
  /// where t is the thread's position. `restore` puts back what it changed.
  Narrowed narrow(const ExprPtr& cond, bool negated = false);
  void restore(const Narrowed& n);
  /// `f()` (a branch's lowering) with the ranges `narrow(cond, negated)` gives, put back after.
  template <class F>
  auto within(const ExprPtr& cond, bool negated, F&& f) {
    struct Restore {
      Prover& p;
      Narrowed n;
      ~Restore() { p.restore(n); }
    };
    const Restore r{*this, narrow(cond, negated)};
    return f();
  }

  // ------------------------------------------------------------------ proofs
  /// `e` with the values of unassigned lets put in and widening integer casts dropped: the form in
  /// which two index expressions are compared as affine sums. An affine sum takes + - * as exact, so
  /// a let's value is put in, and a cast looked through, only where the arithmetic under it cannot
  /// wrap at its own type (`exact`): `let w = u - 5u` is 4294967291 for u = 0, not -5. An extent
  /// (`trusted`) is looked through everywhere: the launcher refuses one whose arithmetic wraps.
  ExprPtr normal(const ExprPtr& e, bool trusted = false, int depth = 0) const;
  /// Whether `e`, computed at its own type, is its exact value: no operation of it may wrap.
  bool exact(const ExprPtr& e) const;
  /// Whether `x < bound` follows from the range of x or from the conditions the code is under whose
  /// arithmetic cannot wrap. With the gap g = bound - x as an affine form, it does when
  /// g = s1 * (hi1 - lo1) + s2 * (hi2 - lo2) + d for one or two such conditions, scales s1, s2 > 0 and
  /// a constant d, and s1 * least1 + s2 * least2 + d >= 1 (least: 1 for `<`, 0 for `<=`). One condition
  /// at scale 1: `if (i < n) x[i]`; with constants, `if (t < 128) s[t + 128]` in 256. Two, the first
  /// scaled by a row length: `if (r < M && c + 4 <= K) a[r * K + c + 3]` in M * K.
  bool proven_below(const ExprPtr& x, const ExprPtr& bound) const;
  /// `e` as written, as an exact sum in which a product of a sum and a variable is multiplied out
  /// (`(r0 + i) * w` is r0 * w + i * w) and every product of two atoms is one canonical atom
  /// (`h * w` and `w * h` alike). Widening casts are left out where the operand is computed exactly
  /// (`normal`): an integer widened to i64 is then the same number (exact_width's rebuilds).
  Affine products(const ExprPtr& e, bool trusted = false) const;
  /// Whether `x >= 0` (an index, computed exactly; its range r) follows from r or from the
  /// conditions the code is under: x + 1 >= 1 as above. `if (i >= 1 && i < n) x[i - 1]`: the
  /// stencil's left neighbour. Here both sides are taken as written, as exact sums: the normal form
  /// puts in the values of lets, which wrap at their own types where the index does not
  /// (`let u = 58u; l[8u - u]` reads l[-50], while 8u - 58u folded at u32 is 4294967246).
  bool proven_nonnegative(const ExprPtr& x, const Range& r) const;
  /// An index with each division and remainder by a constant c of a sum c * q + r, where r is proven
  /// in [0, c) and the sum at least 0, replaced by q and r (docs/semantics.md: an index is computed
  /// exactly). A view composed over a flat share: tile j's element e of a thread's 128,
  /// `(j * 128 + e) / 128`, is j, and `% 128` is e, with no division left to compute. Under an
  /// operation outside the exact part (`exact_part` false: a cast, a division by a variable) only
  /// where neither the division nor what replaces it can wrap at its type.
  ExprPtr quotients(const ExprPtr& e, bool exact_part) const;
  /// A branch's condition with each comparison that holds wherever the branch is reached dropped from
  /// its `&&`, `||` and `!`: `x >= 0` (or `0 <= x`, `x > -1`) with x an integer computed exactly whose
  /// range or the conditions in force prove it at least 0, and `x < y` (`y > x`) on integers computed
  /// exactly where `proven_below(x, y)`. A library tile copy tests a halo's negative rows; a GEMM's
  /// tiles, which start at a block's multiple, pay nothing for it; a thread's `t < T` is dropped.
  ExprPtr decided(const ExprPtr& cond) const;

 private:
  /// s as c * q + r with r proven in [0, c) and s at least 0: {q, r}.
  std::optional<std::pair<ExprPtr, ExprPtr>> divided(const ExprPtr& s, std::int64_t c) const;
  /// An integer cast that keeps the value of an operand computed exactly (or `trusted`).
  bool widening(const Cast& c, bool trusted) const;
  /// A condition the code is under, `hi - lo >= least`, as an affine form; none when it is not an
  /// integer comparison or its own arithmetic may wrap (then it says nothing about exact values).
  struct Fact {
    Affine slack;  ///< hi - lo
    std::int64_t least = 1;
  };
  /// How a fact's sides become affine forms: normalized (lets' values put in, constants folded), as
  /// written as exact sums (`affine(x, true)`), or as written with products of a sum and a variable
  /// multiplied out (`products`).
  enum class Form : std::uint8_t { Normal, Exact, Products };
  /// The facts of `facts_` a proof may use, in one form. A proof asks for them many times over (each
  /// atom's sign, each min or max case), and many proofs run under the same conditions: they are
  /// made once per form for as long as neither the conditions nor the ranges and lets change.
  const std::vector<Fact>& usable_facts(Form form) const;
  std::vector<Fact> make_usable_facts(Form form) const;
  /// A condition as a fact in `form`, or none where it is not an integer comparison whose sides are
  /// computed exactly, or reads memory that may change.
  std::optional<Fact> usable_fact(const ExprPtr& f, Form form) const;
  Affine in_form(const ExprPtr& x, Form form) const;
  /// Facts that hold by what the atoms of `gap` are, not by a condition: for m = min(a, b),
  /// a - m >= 0 and b - m >= 0, and m >= 0 when a and b are at least 0 (for max the other way round,
  /// and m >= 0 when one of them is); for q = a % b with a >= 0, q >= 0, and b - q >= 1 when b >= 1.
  /// `x[min(max(i, 0), n - 1)]` under `require(n >= 1)`, or `x[i % n]` with i >= 0. Only atoms whose
  /// operands are computed exactly count (their values are then the sums the form takes); a
  /// product's factors (`products`) and a let's value for its variable are looked at too.
  std::vector<Fact> atom_facts(const Affine& gap, Form form) const;
  /// The integer operation an atom computes: itself seen through widening casts, or for a let's
  /// variable its value (`defs_`: computed exactly).
  const Binary* operation(const ExprPtr& atom) const;
  /// `facts` and those of gap's atoms.
  std::vector<Fact> with_atom_facts(std::vector<Fact> facts, const Affine& gap, Form form) const;
  /// `at_least_one(gap, facts)` with the facts of gap's atoms added; failing that, for a min or max
  /// atom m = min(a, b), both cases: m is a where a <= b, and b where b <= a (up to two atoms deep).
  /// `x[max(min(i, n - 1), 0)]`: below n as n - 1 < n and 0 < n (from n >= 1).
  bool follows(const Affine& gap, Form form, const std::vector<Fact>& facts, int depth = 0) const;
  ExprPtr unwidened(const ExprPtr& e, bool trusted) const;
  /// `a` times the variable `v`: each atom's product with v (one canonical atom per pair), and
  /// a's constant as a multiple of v.
  static Affine times(const Affine& a, const ExprPtr& v);
  static ExprPtr product_atom(const ExprPtr& a, const ExprPtr& b);
  /// `x < bound` where the row length is a variable w: `if (r < h && c < w) m[r * w + c]` in h * w.
  /// The first condition times w (h * w - r * w >= w, as w >= 0) and the second (w - c >= 1) leave
  /// h * w - (r * w + c) >= 1. w must be a variable nothing assigns (its value the same in the
  /// condition's product as in the index), proven at least 0 by its range or the conditions.
  bool proven_below_by_a_variable(const ExprPtr& x, const ExprPtr& bound) const;
  /// `x >= 0` with products multiplied out (`products`): a product of two factors each at least 0
  /// is at least 0 and is left out (`r * w + c` under `r >= 0 && c >= 0 && c < w`), and what is left
  /// must follow from the conditions.
  bool nonnegative_by_products(const ExprPtr& x) const;
  /// `f >= 0` by its range or by `facts` (in the `products` form), or as the min of two such (the
  /// max of one).
  bool at_least_zero(const ExprPtr& f, const std::vector<Fact>& facts) const;
  /// The scales that cancel one of f's atoms against `rest` (a positive whole ratio).
  static std::vector<std::int64_t> scales(const Affine& rest, const Fact& f);
  /// Whether an affine form is at least 1, by itself or by `facts` (proven_below). What is left once
  /// the facts are taken out counts by its atoms' ranges (`t % 4 - 3 + ...` at least -3).
  bool at_least_one(const Affine& gap, const std::vector<Fact>& facts) const;
  RangeEnv env_;
  const std::unordered_map<const MemNode*, int>& stable_;
  const std::unordered_set<const VarNode*>& reassigned_;
  std::vector<ExprPtr> facts_;                        ///< conditions the code is under
  std::unordered_map<const VarNode*, ExprPtr> defs_;  ///< unassigned integer lets computed exactly: their values
  std::vector<const VarNode*> def_order_;             ///< defs_'s variables, in the order defined
  /// Forgets what the proofs remember (the ranges or lets changed).
  void forget();
  // What the proofs remember under the present ranges and lets; bind_range forgets all of it.
  ExactMemo exact_memo_;  ///< env_'s exact ranges
  /// `normal`'s results, by trust and depth: they read defs_ and, through `exact`, env_'s ranges.
  static constexpr int kNormalDepth = 4;
  mutable std::array<
      std::array<std::unordered_map<ExprPtr, ExprPtr, ExactMemo::Hash, ExactMemo::Same>, kNormalDepth + 1>, 2>
      normal_memo_;
  /// usable_facts per form, made from these conditions (kept, so that no address is reused).
  struct FactsCache {
    bool valid = false;
    std::vector<ExprPtr> facts;
    std::vector<Fact> out;
  };
  mutable std::array<FactsCache, 3> facts_cache_;
  /// usable_fact per form of each condition met, found by its structure.
  mutable std::array<std::unordered_map<ExprPtr, std::optional<Fact>, ExactMemo::Hash, ExactMemo::Same>, 3> fact_forms_;
};

}  // namespace vantage::lower::detail
