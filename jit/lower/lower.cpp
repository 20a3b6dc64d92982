// Vantage lowering: see lower.h.
//
// Each code perspective becomes a position: the thread's offset inside its current unit and, while
// the unit spans blocks, the block's offset. The linear position of a thread in its unit is `thread`
// when the unit lies inside one block, else `block * T + thread`. A group takes the linear position
// modulo the unit (a unit of more than T threads keeps whole blocks: `block % (c / T)`), a split
// branch subtracts its offset and tests its range, and `id(p)` divides the position by p's size.
// Views are resolved as they are met: a partition's index function is lowered where the partition
// is, so the ids in it mean what they meant there, and an access substitutes its indices into it,
// down to the root.
#include "jit/lower/lower.h"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <set>
#include <unordered_set>

#include "jit/ir/eval.h"
#include "jit/ir/mutate.h"
#include "jit/ir/printer.h"
#include "jit/ir/range.h"
#include "jit/ir/shared_layout.h"
#include "jit/ir/views.h"
#include "jit/ir/visit.h"
#include "jit/sync/sync.h"
#include "jit/target/target.h"

namespace vantage::lower {
namespace {

using namespace ir;

ExprPtr lit(std::int64_t v, SourceLoc l) { return int_literal(ScalarType::I32, v, l); }
ExprPtr bin(BinOp op, const ExprPtr& a, const ExprPtr& b, SourceLoc l) {
  ScalarType t = is_comparison(op) || op == BinOp::LAnd || op == BinOp::LOr ? ScalarType::Bool : a->type;
  return fold(make<Binary>(t, op, a, b, l));
}
bool is_zero(const ExprPtr& e) {
  auto k = const_int(e);
  return k && *k == 0;
}

/// Hardware ids of named barriers: the user's ids are reserved, id 0 is __syncthreads, and every
/// size of automatic barrier unit gets its own range `base + threadIdx.x / n`, so that no two units
/// of threads that can run at the same time ever share an id.
class BarrierIds {
 public:
  BarrierIds(std::int64_t threads, std::set<std::int64_t> reserved, int count)
      : threads_(threads), used_(std::move(reserved)), count_(count) {
    used_.insert(0);
  }
  std::optional<std::int64_t> base(std::int64_t unit) {
    if (auto it = bases_.find(unit); it != bases_.end()) return it->second;
    std::int64_t need = threads_ / unit;
    for (std::int64_t b = 1; b + need <= count_; ++b) {
      bool free = true;
      for (std::int64_t id = b; id < b + need; ++id) free = free && !used_.count(id);
      if (!free) continue;
      for (std::int64_t id = b; id < b + need; ++id) used_.insert(id);
      bases_[unit] = b;
      return b;
    }
    return std::nullopt;
  }

 private:
  std::int64_t threads_;
  std::set<std::int64_t> used_;
  int count_;
  std::map<std::int64_t, std::int64_t> bases_;
};

/// The user's named-barrier ids in a body and the functions it calls.
std::set<std::int64_t> user_barrier_ids(const StmtPtr& body) {
  struct Scan : IRVisitor {
    std::set<std::int64_t> ids;
    std::set<const FunctionNode*> seen;
    using IRVisitor::walk;
    void walk(const ExprPtr&) override {}
    void visit(const Intrinsic& n) override {
      if (n.op == IntrinsicOp::NamedBarrier && !n.imms.empty()) ids.insert(n.imms[0]);
    }
    void visit(const Call& n) override {
      IRVisitor::visit(n);
      if (n.fn && seen.insert(n.fn.get()).second) walk(n.fn->body);
    }
  } scan;
  scan.walk(body);
  return scan.ids;
}

/// What the whole lowering shares: the options, the results, the barrier ids of the block and the
/// functions lowered so far.
struct Context {
  Options opt;
  Lowered& out;
  std::optional<BarrierIds> ids;
  std::unordered_map<const FunctionNode*, FunctionPtr> functions;
  std::unordered_map<const MemNode*, int> param_index;
  std::unordered_map<const MemNode*, ExprPtr> extents;  ///< kernel pointer parameters with an extent
  /// Every pointer parameter (kernel or function): the hidden i64 parameter holding its length.
  std::unordered_map<const MemNode*, VarPtr> lengths;
  int next_var = 1 << 30;  ///< ids of the hidden variables (after every id a builder gives)
};

/// Appends to `params` one hidden i64 length parameter per pointer parameter, recorded in `c`.
void add_lengths(Context& c, std::vector<ParamNode>& params, SourceLoc l) {
  std::vector<ParamNode> hidden;
  for (const auto& p : params) {
    if (!p.mem) continue;
    auto v = make_var(c.next_var++, "vt_len_" + p.name, ScalarType::I64, VarNode::Origin::Param, p.loc);
    c.lengths[p.mem.get()] = v;
    ParamNode h;
    h.name = v->name;
    h.var = v;
    h.loc = l;
    hidden.push_back(std::move(h));
  }
  params.insert(params.end(), hidden.begin(), hidden.end());
}

struct Pos {
  ExprPtr block;   ///< block offset inside the unit (when the unit spans blocks)
  ExprPtr thread;  ///< thread offset inside the unit (inside the block when in_block)
  bool in_block = false;
  bool thread_below_t = true;  ///< `thread` < T (false in a split branch wider than a block)
  Perspective code;
  std::int64_t replicas = 1;  ///< units of `code` running this code at once in one block
};

struct ViewInfo {
  MemPtr src;
  bool partition = false;
  std::vector<VarPtr> vars;
  ExprPtr index;  ///< lowered where the partition is
};

class BodyLowerer {
 public:
  BodyLowerer(Context& c, const StmtPtr& body, Pos top, Perspective sync_top) : c_(c) {
    std::vector<const StmtNode*> conflicts;
    std::vector<sync::UnwaitedTma> unwaited;
    body_ = sync::insert(body, sync_top, &conflicts, &unwaited, c_.opt.threads);
    for (const auto& u : unwaited) {
      Diagnostic d{"V1010",
                   "this statement uses '" + u.memory +
                       "' while a TMA load into it may still be in flight; wait on its mbarrier '" + u.mbarrier +
                       "' first (a barrier does not wait for TMA)",
                   u.use->loc,
                   {}};
      if (u.load.known()) d.notes.push_back({"the TMA load is here", u.load});
      c_.out.problems.push_back(std::move(d));
    }
    for (const auto& o : sync::overlapping_shares(body, sync_top, c_.opt.threads, c_.opt.blocks)) {
      const auto& part = static_cast<const Partition&>(*o.partition);
      if (o.across_blocks && !c_.opt.blocks) {
        // Right for one block: the launcher refuses more.
        c_.out.guards.push_back({Guard::Kind::BlocksAtMost, 1, -1,
                                 "blocks <= 1, since every block's share of '" + o.memory + "' meets another's",
                                 "V1011", part.loc});
        continue;
      }
      auto local = [](const std::vector<std::int64_t>& at) {
        std::string t;
        for (std::size_t i = 0; i < at.size(); ++i) t += (i ? ", " : "") + std::to_string(at[i]);
        return t;
      };
      Diagnostic d{"V1011",
                   "partition of '" + o.memory + "' into " + part.p.str() + " gives element " +
                       std::to_string(o.element) + " to two units (" + std::to_string(o.units[0]) + " at [" +
                       local(o.locals[0]) + "], " + std::to_string(o.units[1]) + " at [" + local(o.locals[1]) +
                       "]), and its body writes there: the two would race. Give each unit elements of its own, "
                       "claim the memory for one thread, or write with atomic(AtomicOp::Exch, ...) where the last "
                       "writer should win",
                   part.loc,
                   {}};
      const SourceLoc &a = o.writes[0], &b = o.writes[1];
      if (a.line == b.line && a.column == b.column && a.file == b.file) {
        d.notes.push_back({"both write it here", a});
      } else {
        d.notes.push_back({"unit " + std::to_string(o.units[0]) + " writes it here", a});
        d.notes.push_back({"unit " + std::to_string(o.units[1]) + " writes it here", b});
      }
      c_.out.problems.push_back(std::move(d));
    }
    for (const auto* s : conflicts)
      c_.out.problems.push_back(
          {"V1001",
           "this statement touches memory that threads of other blocks wrote or read just before; a GPU cannot "
           "synchronize a whole grid inside a kernel (split the kernel, or narrow the memory to one block first)",
           s->loc,
           {}});
    layout_ = layout_shared(body_);
    reassigned_ = reassigned_vars(body_);
    env_.thread_index = Range{0, c_.opt.threads - 1};
    env_.block_index = Range{0, (c_.opt.blocks ? *c_.opt.blocks : c_.opt.max_blocks) - 1};
    env_.grid_blocks = c_.opt.blocks ? Range::point(*c_.opt.blocks) : Range{1, c_.opt.max_blocks};
    for (const auto& [v, r] : c_.opt.param_ranges) env_.vars[v] = Range{r.first, r.second};
    env_.exact_memo = &exact_memo_;
    frames_.push_back(std::move(top));
  }
  BodyLowerer(const BodyLowerer&) = delete;  // env_ points into it
  BodyLowerer& operator=(const BodyLowerer&) = delete;

  StmtPtr run() { return block(body_); }
  /// A condition every launch meets (a kernel's requirement): a fact for the bounds proofs.
  void assume(const ExprPtr& cond) { add_facts(cond); }
  std::int64_t peak() const { return layout_.peak; }
  std::int64_t shared_align() const { return layout_.align; }

 private:
  // ------------------------------------------------------------------ positions
  std::int64_t T() const { return c_.opt.threads; }
  std::int64_t units(Perspective p) const {
    std::int64_t n = p.count.coeff * (p.count.threads ? T() : 1);
    if (p.level == Level::Block) n *= T();
    return n;
  }
  ExprPtr linear(const Pos& p, SourceLoc l) const {
    if (p.in_block || is_zero(p.block)) return p.thread;
    return bin(BinOp::Add, bin(BinOp::Mul, p.block, lit(T(), l), l), p.thread, l);
  }
  ExprPtr id_of(Perspective q, SourceLoc l) const {
    const Pos& p = frames_.back();
    std::int64_t n = q.count.coeff;
    if (q.level == Level::Grid) return lit(0, l);
    if (q.level == Level::Block) {
      if (p.in_block) return lit(0, l);
      ExprPtr b = p.thread_below_t ? p.block : bin(BinOp::Div, linear(p, l), lit(T(), l), l);
      return n == 1 ? b : bin(BinOp::Div, b, lit(n, l), l);
    }
    ExprPtr pos = linear(p, l);
    return n == 1 ? pos : bin(BinOp::Div, pos, lit(n, l), l);
  }

  // ------------------------------------------------------------------ expressions and accesses
  class ExprLowerer : public IRMutator {
   public:
    explicit ExprLowerer(BodyLowerer& b) : b_(b) {}
    using IRMutator::mutate;

   protected:
    ExprPtr visit(const Id& n, const ExprPtr&) override { return b_.id_of(n.p, n.loc); }
    ExprPtr visit(const Load& n, const ExprPtr&) override {
      std::vector<ExprPtr> idx;
      for (const auto& i : n.indices) idx.push_back(mutate(i));
      auto [root, resolved] = b_.resolve(n.mem, std::move(idx), n.loc);
      ExprPtr flat = b_.exact_width(resolved);
      auto [bound, site] = b_.check(root, flat, false, n.loc);
      return make<Load>(n.type, root, std::vector<ExprPtr>{flat}, bound, site, n.loc);
    }
    ExprPtr visit(const Builtin& n, const ExprPtr& e) override {
      if (n.which == BuiltinKind::BlocksInGrid) return e;  // the launch's grid, read as it runs
      throw InternalError("lower: the input is already lowered");
    }

   private:
    BodyLowerer& b_;
  };

  ExprPtr lx(const ExprPtr& e) {
    if (!e) return nullptr;
    ExprLowerer l(*this);
    return l.mutate(e);
  }

  std::pair<MemPtr, ExprPtr> resolve(MemPtr m, std::vector<ExprPtr> idx, SourceLoc l) const {
    for (auto it = views_.find(m.get()); it != views_.end(); it = views_.find(m.get())) {
      const ViewInfo& v = it->second;
      if (v.partition) {
        VarMap map;
        for (std::size_t i = 0; i < v.vars.size() && i < idx.size(); ++i) map[v.vars[i].get()] = idx[i];
        idx = {fold(substitute(v.index, map))};
      }
      m = v.src;
    }
    return {m, idx.empty() ? lit(0, l) : fold(idx[0])};
  }
  /// An index as every backend must compute it. Index arithmetic is exact (docs/semantics.md): where
  /// the value or an intermediate of its exact part may leave its type's range, that part is
  /// rebuilt in i64 (leaves converted), so that a backend computing in the IR's types computes the
  /// exact value. Otherwise a bound proven on the exact value (min(t + INT_MAX, 5) is 5) would let
  /// an access computed with wrapping (min(INT_MIN + ..., 5)) leave its buffer unchecked.
  ExprPtr exact_width(const ExprPtr& e) const {
    if (!e || !is_integer(e->type) || e->type == ScalarType::I64 || !is_exact_index_op(*e)) return e;
    // Each operation's envelope (its exact value and intermediates), through env_'s memo: the
    // indices of neighbouring accesses share their subexpressions.
    auto envelope = [&](const ExprPtr& x) -> std::optional<Range> {
      return x && is_exact_index_op(*x) ? exact_index_range(x, env_) : std::nullopt;
    };
    const std::optional<Range> whole = envelope(e);
    if (!whole) return e;  // past 64 bits: V1006, elsewhere
    // +, - and * wrap to the exact value's low bits, so a wrapped intermediate only matters where a
    // min, max, division or remainder looks at it, or where the value itself may not fit: wrapped,
    // `l[3] + 4294967295u` (4294967298) would be l[2], inside, and its check would pass.
    std::function<bool(const ExprPtr&)> harmed = [&](const ExprPtr& x) -> bool {
      if (!x || !is_exact_index_op(*x)) return false;
      if (const auto* u = as<Unary>(*x)) return harmed(u->a);
      const auto& b = static_cast<const Binary&>(*x);
      if (b.op == BinOp::Min || b.op == BinOp::Max || b.op == BinOp::Div || b.op == BinOp::Mod)
        for (const ExprPtr& o : {b.a, b.b})
          if (auto r = envelope(o); r && !r->within(Range::of(o->type))) return true;
      return harmed(b.a) || harmed(b.b);
    };
    // An index whose exact value may leave its type would be computed wrapped: `l[3] + 4294967295u`
    // (4294967298, a loaded u32 plus anything) as l[2], inside the buffer, where its check then
    // passes; an i32 `blk * 1024 + t` of a grid of 2^23 blocks past 2^32 the same way, and one from
    // 2^31 as negative, outside a buffer it is inside.
    const bool wraps = !whole->within(Range::of(e->type));
    if (!wraps && !harmed(e)) return e;
    // Rebuilt in i64 where the exact values need it; a part whose envelope fits its type is computed
    // in it and converted.
    std::function<ExprPtr(const ExprPtr&)> in_i64 = [&](const ExprPtr& x) -> ExprPtr {
      auto r = envelope(x);
      bool fits = !r || r->within(Range::of(x->type));
      if (x->type == ScalarType::I64) return x;
      if (fits || !is_exact_index_op(*x)) return fold(make<Cast>(ScalarType::I64, x, x->loc));
      if (const auto* u = as<Unary>(*x)) return make<Unary>(ScalarType::I64, u->op, in_i64(u->a), u->loc);
      const auto& b = static_cast<const Binary&>(*x);
      return make<Binary>(ScalarType::I64, b.op, in_i64(b.a), in_i64(b.b), b.loc);
    };
    return in_i64(e);
  }

  /// Whether `m[i]` is `root[base + i]`, so a pointer to m[0] can stand for m.
  bool unit_stride(const MemNode* m) const {
    for (auto it = views_.find(m); it != views_.end(); it = views_.find(m)) {
      const ViewInfo& v = it->second;
      if (v.partition) {
        if (v.vars.size() != 1) return false;
        if (affine(v.index).coefficient(ref(v.vars[0], {})) != 1) return false;
      }
      m = v.src.get();
    }
    return true;
  }

  // ------------------------------------------------------------------ facts and bounds
  /// The number of elements of root memory, when the IR says.
  ExprPtr extent_of(const MemPtr& root, SourceLoc l) const {
    if (auto it = c_.extents.find(root.get()); it != c_.extents.end()) return it->second;
    if (auto it = counts_.find(root.get()); it != counts_.end()) return lit(it->second, l);
    return nullptr;
  }
  /// What an access to root memory must stay below: the declared extent or the array's count, else
  /// the pointer's length (a hidden parameter), as an i64.
  ExprPtr bound_of(const MemPtr& root, SourceLoc l) const {
    ExprPtr e = extent_of(root, l);
    if (!e) {
      auto it = c_.lengths.find(root.get());
      if (it == c_.lengths.end()) return nullptr;
      return ref(it->second, l);
    }
    return e->type == ScalarType::I64 ? e : fold(make<Cast>(ScalarType::I64, e, l));
  }
  /// The bound an access at `index` needs checked as it runs, and its site; {null, -1} when lowering
  /// proves it inside.
  std::pair<ExprPtr, std::int64_t> check(const MemPtr& root, const ExprPtr& index, bool write, SourceLoc l) const {
    if (proven_in_bounds(root, index, 1, l)) return {nullptr, -1};
    ExprPtr b = bound_of(root, l);
    if (!b) throw InternalError("lower: no bound for memory '" + root->name + "'");
    c_.out.checks.push_back({l, root->name, write});
    return {b, static_cast<std::int64_t>(c_.out.checks.size()) - 1};
  }
  /// `e` with the values of unassigned lets put in and widening integer casts dropped: the form in
  /// which two index expressions are compared as affine sums. An affine sum takes + - * as exact, so
  /// a let's value is put in, and a cast looked through, only where the arithmetic under it cannot
  /// wrap at its own type (`exact`): `let w = u - 5u` is 4294967291 for u = 0, not -5. An extent
  /// (`trusted`) is looked through everywhere: the launcher refuses one whose arithmetic wraps.
  ExprPtr normal(const ExprPtr& e, bool trusted = false, int depth = 0) const {
    class Norm : public IRMutator {
     public:
      Norm(const BodyLowerer& b, bool trusted, int d) : b_(b), trusted_(trusted), d_(d) {}
      using IRMutator::mutate;
      // The guards and indices of an unrolled tile repeat their rows and columns: each subexpression
      // is put in this form once under the same lets and ranges (bind_range clears the memo).
      ExprPtr mutate(const ExprPtr& x) override {
        if (!x) return x;
        auto& memo = b_.normal_memo_[trusted_ ? 1 : 0][static_cast<std::size_t>(d_)];
        if (auto it = memo.find(x); it != memo.end()) return it->second;
        ExprPtr r = IRMutator::mutate(x);
        memo.emplace(x, r);
        return r;
      }

     protected:
      ExprPtr visit(const VarRef& n, const ExprPtr& self) override {
        auto it = b_.defs_.find(n.var.get());
        return it != b_.defs_.end() && d_ < kNormalDepth ? b_.normal(it->second, trusted_, d_ + 1) : self;
      }
      ExprPtr visit(const Cast& n, const ExprPtr& self) override {
        if (b_.widening(n, trusted_)) return mutate(n.a);
        return rebuild(n, self);
      }

     private:
      const BodyLowerer& b_;
      bool trusted_;
      int d_;
    } norm(*this, trusted, depth);
    return norm.mutate(e);
  }
  /// Whether `e`, computed at its own type, is its exact value: no operation of it may wrap.
  bool exact(const ExprPtr& e) const {
    auto r = exact_index_range(e, env_);
    return r && r->within(Range::of(e->type));
  }
  /// An integer cast that keeps the value of an operand computed exactly (or `trusted`).
  bool widening(const Cast& c, bool trusted) const {
    return is_integer(c.type) && is_integer(c.a->type) && Range::of(c.a->type).within(Range::of(c.type)) &&
           (trusted || exact(c.a));
  }
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
  const std::vector<Fact>& usable_facts(Form form) const {
    FactsCache& c = facts_cache_[static_cast<std::size_t>(form)];
    if (c.valid && c.facts == facts_) return c.out;
    c.out = make_usable_facts(form);
    c.facts = facts_;
    c.valid = true;
    return c.out;
  }
  std::vector<Fact> make_usable_facts(Form form) const {
    std::vector<Fact> out;
    auto& forms = fact_forms_[static_cast<std::size_t>(form)];
    for (const auto& f : facts_) {
      if (!f) continue;  // killed by an assignment
      // A condition alike to one seen under these lets and ranges has the same form (the row half
      // of a guard recurs at every column of a tile).
      auto [it, fresh] = forms.try_emplace(f);
      if (fresh) it->second = usable_fact(f, form);
      if (it->second) out.push_back(*it->second);
    }
    return out;
  }
  /// A condition as a fact in `form`, or none where it is not an integer comparison whose sides are
  /// computed exactly, or reads memory that may change.
  std::optional<Fact> usable_fact(const ExprPtr& f, Form form) const {
    if (reads_changing(f, {})) return std::nullopt;
    const auto* b = as<Binary>(*f);
    if (!b) return std::nullopt;
    ExprPtr lo, hi;
    bool strict = true;
    switch (b->op) {
      case BinOp::Lt: lo = b->a, hi = b->b; break;
      case BinOp::Le: lo = b->a, hi = b->b, strict = false; break;
      case BinOp::Gt: lo = b->b, hi = b->a; break;
      case BinOp::Ge: lo = b->b, hi = b->a, strict = false; break;
      default: return std::nullopt;
    }
    if (!is_integer(lo->type)) return std::nullopt;
    auto rlo = exact_index_range(lo, env_), rhi = exact_index_range(hi, env_);
    if (!rlo || !rlo->within(Range::of(lo->type)) || !rhi || !rhi->within(Range::of(hi->type))) return std::nullopt;
    Fact fact;
    fact.slack = in_form(hi, form);
    fact.slack.merge(in_form(lo, form), -1);
    fact.least = strict ? 1 : 0;
    return fact;
  }
  Affine in_form(const ExprPtr& x, Form form) const {
    switch (form) {
      case Form::Exact: return affine(x, true);
      case Form::Products: return products(x);
      case Form::Normal: break;
    }
    return affine(normal(x));
  }
  // ---------------------------------------------------------------- what an atom is
  /// Facts that hold by what the atoms of `gap` are, not by a condition: for m = min(a, b),
  /// a - m >= 0 and b - m >= 0, and m >= 0 when a and b are at least 0 (for max the other way round,
  /// and m >= 0 when one of them is); for q = a % b with a >= 0, q >= 0, and b - q >= 1 when b >= 1.
  /// `x[min(max(i, 0), n - 1)]` under `require(n >= 1)`, or `x[i % n]` with i >= 0. Only atoms whose
  /// operands are computed exactly count (their values are then the sums the form takes); a
  /// product's factors (`products`) and a let's value for its variable are looked at too.
  std::vector<Fact> atom_facts(const Affine& gap, Form form) const {
    std::vector<Fact> out;
    std::vector<ExprPtr> seen;
    std::optional<std::vector<Fact>> conditions;  // in the products form, for the operands' signs
    auto at_least = [&](const ExprPtr& e, std::int64_t v) {
      if (auto r = exact_value_range(e, env_); r && r->lo >= v) return true;
      if (!conditions) conditions = usable_facts(Form::Products);
      Affine g = products(e);
      g.constant += 1 - v;
      return at_least_one(g, *conditions);
    };
    auto one = [&](const ExprPtr& atom) {
      if (std::any_of(seen.begin(), seen.end(), [&](const ExprPtr& o) { return equal(o, atom); })) return;
      seen.push_back(atom);
      const Binary* b = operation(atom);
      if (!b || !exact(b->a) || !exact(b->b)) return;
      auto fact = [&](const ExprPtr& hi, const ExprPtr& lo, std::int64_t least) {
        Fact f;
        if (hi) f.slack = in_form(hi, form);
        if (lo) f.slack.merge(in_form(lo, form), -1);
        f.least = least;
        out.push_back(std::move(f));
      };
      switch (b->op) {
        case BinOp::Min:
          fact(b->a, atom, 0);
          fact(b->b, atom, 0);
          if (at_least(b->a, 0) && at_least(b->b, 0)) fact(atom, nullptr, 0);
          break;
        case BinOp::Max:
          fact(atom, b->a, 0);
          fact(atom, b->b, 0);
          if (at_least(b->a, 0) || at_least(b->b, 0)) fact(atom, nullptr, 0);
          break;
        case BinOp::Mod:
          if (!at_least(b->a, 0)) break;
          fact(atom, nullptr, 0);
          if (at_least(b->b, 1)) fact(b->b, atom, 1);
          break;
        default: break;
      }
    };
    for (const auto& [atom, k] : gap.terms) {
      if (k == 0) continue;
      one(atom);
      if (const auto* m = as<Binary>(*atom); m && m->op == BinOp::Mul) {
        one(m->a);
        one(m->b);
      }
    }
    return out;
  }
  /// The integer operation an atom computes: itself seen through widening casts, or for a let's
  /// variable its value (`defs_`: computed exactly).
  const Binary* operation(const ExprPtr& atom) const {
    ExprPtr y = unwidened(atom, false);
    if (const auto* v = as<VarRef>(*y)) {
      auto it = defs_.find(v->var.get());
      if (it == defs_.end()) return nullptr;
      y = unwidened(it->second, false);
    }
    const auto* b = as<Binary>(*y);
    return b && is_integer(b->type) && b->a && b->b ? b : nullptr;
  }
  /// `facts` and those of gap's atoms.
  std::vector<Fact> with_atom_facts(std::vector<Fact> facts, const Affine& gap, Form form) const {
    std::vector<Fact> more = atom_facts(gap, form);
    facts.insert(facts.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    return facts;
  }
  /// `at_least_one(gap, facts)` with the facts of gap's atoms added; failing that, for a min or max
  /// atom m = min(a, b), both cases: m is a where a <= b, and b where b <= a (up to two atoms deep).
  /// `x[max(min(i, n - 1), 0)]`: below n as n - 1 < n and 0 < n (from n >= 1).
  bool follows(const Affine& gap, Form form, const std::vector<Fact>& facts, int depth = 0) const {
    if (at_least_one(gap, with_atom_facts(facts, gap, form))) return true;
    if (depth >= 2) return false;
    for (const auto& [atom, k] : gap.terms) {
      const Binary* b = operation(atom);
      if (k == 0 || !b || (b->op != BinOp::Min && b->op != BinOp::Max) || !exact(b->a) || !exact(b->b)) continue;
      for (const auto& [pick, other] : {std::pair{b->a, b->b}, std::pair{b->b, b->a}}) {
        Affine g = gap;
        g.add(atom, -k);
        g.merge(in_form(pick, form), k);
        Fact when;  // min: pick <= other; max: pick >= other
        when.slack = in_form(b->op == BinOp::Min ? other : pick, form);
        when.slack.merge(in_form(b->op == BinOp::Min ? pick : other, form), -1);
        when.least = 0;
        std::vector<Fact> with = facts;
        with.push_back(std::move(when));
        if (!follows(g, form, with, depth + 1)) return false;
      }
      return true;
    }
    return false;
  }
  /// Whether `x < bound` follows from the range of x or from the conditions the code is under whose
  /// arithmetic cannot wrap. With the gap g = bound - x as an affine form, it does when
  /// g = s1 * (hi1 - lo1) + s2 * (hi2 - lo2) + d for one or two such conditions, scales s1, s2 > 0 and
  /// a constant d, and s1 * least1 + s2 * least2 + d >= 1 (least: 1 for `<`, 0 for `<=`). One condition
  /// at scale 1: `if (i < n) x[i]`; with constants, `if (t < 128) s[t + 128]` in 256. Two, the first
  /// scaled by a row length: `if (r < M && c + 4 <= K) a[r * K + c + 3]` in M * K.
  bool proven_below(const ExprPtr& x, const ExprPtr& bound) const {
    auto rx = exact_value_range(x, env_);
    if (auto k = const_int(bound); k && rx && rx->hi < *k) return true;
    Affine gap = affine(normal(bound, true));
    gap.merge(affine(normal(x)), -1);
    return follows(gap, Form::Normal, usable_facts(Form::Normal)) || proven_below_by_a_variable(x, bound);
  }
  // ---------------------------------------------------------------- rows of a variable length
  /// `e` as written, as an exact sum in which a product of a sum and a variable is multiplied out
  /// (`(r0 + i) * w` is r0 * w + i * w) and every product of two atoms is one canonical atom
  /// (`h * w` and `w * h` alike). Widening casts are left out where the operand is computed exactly
  /// (`normal`): an integer widened to i64 is then the same number (exact_width's rebuilds).
  Affine products(const ExprPtr& e, bool trusted = false) const {
    const ExprPtr x = unwidened(e, trusted);
    auto products = [&](const ExprPtr& y) { return this->products(y, trusted); };  // the same trust below
    if (const auto* l = as<Literal>(*x); l && is_integer(l->type)) return affine(x, true);
    if (const auto* b = as<Binary>(*x)) {
      if (b->op == BinOp::Add || b->op == BinOp::Sub) {
        Affine r = products(b->a);
        r.merge(products(b->b), b->op == BinOp::Add ? 1 : -1);
        return r;
      }
      if (b->op == BinOp::Mul) {
        ExprPtr l = unwidened(b->a, trusted), r = unwidened(b->b, trusted);
        if (as<Literal>(*l) || as<Literal>(*r)) {
          Affine out = products(as<Literal>(*l) ? r : l);
          out.scale(*const_int(as<Literal>(*l) ? l : r));
          return out;
        }
        if (as<VarRef>(*r)) return times(products(l), r);
        if (as<VarRef>(*l)) return times(products(r), l);
      }
    }
    if (const auto* u = as<Unary>(*x); u && u->op == UnOp::Neg) {
      Affine r = products(u->a);
      r.scale(-1);
      return r;
    }
    Affine r;
    r.add(x, 1);
    return r;
  }
  ExprPtr unwidened(const ExprPtr& e, bool trusted) const {
    ExprPtr x = e;
    while (const auto* c = as<Cast>(*x)) {
      if (!widening(*c, trusted)) break;
      x = c->a;
    }
    return x;
  }
  /// `a` times the variable `v`: each atom's product with v (one canonical atom per pair), and
  /// a's constant as a multiple of v.
  static Affine times(const Affine& a, const ExprPtr& v) {
    Affine out;
    if (a.constant != 0) out.add(v, a.constant);
    for (const auto& [atom, k] : a.terms)
      if (k != 0) out.add(product_atom(atom, v), k);
    return out;
  }
  static ExprPtr product_atom(const ExprPtr& a, const ExprPtr& b) {
    const bool swap = a->hash > b->hash;
    return make<Binary>(ScalarType::I64, BinOp::Mul, swap ? b : a, swap ? a : b, SourceLoc{});
  }
  /// `x < bound` where the row length is a variable w: `if (r < h && c < w) m[r * w + c]` in h * w.
  /// The first condition times w (h * w - r * w >= w, as w >= 0) and the second (w - c >= 1) leave
  /// h * w - (r * w + c) >= 1. w must be a variable nothing assigns (its value the same in the
  /// condition's product as in the index), proven at least 0 by its range or the conditions.
  bool proven_below_by_a_variable(const ExprPtr& x, const ExprPtr& bound) const {
    Affine gap = products(bound, true);
    gap.merge(products(x), -1);
    std::vector<ExprPtr> vars;  // the variables the gap's products have
    for (const auto& [atom, k] : gap.terms)
      if (const auto* m = as<Binary>(*atom); m && m->op == BinOp::Mul && m->type == ScalarType::I64 && k != 0)
        for (const ExprPtr& f : {m->a, m->b})
          if (const auto* v = as<VarRef>(*f);
              v && !reassigned_.count(v->var.get()) && is_integer(f->type) &&
              std::none_of(vars.begin(), vars.end(), [&](const ExprPtr& o) { return equal(o, f); }))
            vars.push_back(f);
    if (vars.empty()) return false;
    const std::vector<Fact> facts = with_atom_facts(usable_facts(Form::Products), gap, Form::Products);
    for (const ExprPtr& w : vars) {
      if (!at_least_zero(w, facts)) continue;
      for (const Fact& f : facts) {
        const Fact scaled{times(f.slack, w), 0};
        for (std::int64_t s : scales(gap, scaled)) {
          Affine rest = gap;
          rest.merge(scaled.slack, -s);
          rest.add(w, s * f.least);  // s * w * slack >= s * w * least
          if (at_least_one(rest, facts)) return true;
        }
      }
    }
    return false;
  }
  /// Whether `x >= 0` (an index, computed exactly; its range r) follows from r or from the
  /// conditions the code is under: x + 1 >= 1 as above. `if (i >= 1 && i < n) x[i - 1]`: the
  /// stencil's left neighbour. Here both sides are taken as written, as exact sums: the normal form
  /// puts in the values of lets, which wrap at their own types where the index does not
  /// (`let u = 58u; l[8u - u]` reads l[-50], while 8u - 58u folded at u32 is 4294967246).
  bool proven_nonnegative(const ExprPtr& x, const Range& r) const {
    if (r.lo >= 0) return true;
    Affine gap = affine(x, true);
    gap.constant += 1;
    return follows(gap, Form::Exact, usable_facts(Form::Exact)) || nonnegative_by_products(x);
  }
  /// `x >= 0` with products multiplied out (`products`): a product of two factors each at least 0
  /// is at least 0 and is left out (`r * w + c` under `r >= 0 && c >= 0 && c < w`), and what is left
  /// must follow from the conditions.
  bool nonnegative_by_products(const ExprPtr& x) const {
    const std::vector<Fact> facts = usable_facts(Form::Products);
    Affine gap = products(x), rest;
    rest.constant = gap.constant + 1;
    bool dropped = false;
    for (const auto& [atom, k] : gap.terms) {
      const auto* m = as<Binary>(*atom);
      if (k > 0 && m && m->op == BinOp::Mul && at_least_zero(m->a, facts) && at_least_zero(m->b, facts)) {
        dropped = true;
        continue;
      }
      rest.add(atom, k);
    }
    return dropped && follows(rest, Form::Products, facts);
  }
  /// `f >= 0` by its range or by `facts` (in the `products` form), or as the min of two such (the
  /// max of one).
  bool at_least_zero(const ExprPtr& f, const std::vector<Fact>& facts) const {
    if (auto rf = exact_value_range(f, env_); rf && rf->lo >= 0) return true;
    if (const Binary* b = operation(f); b && exact(b->a) && exact(b->b)) {
      if (b->op == BinOp::Min) return at_least_zero(b->a, facts) && at_least_zero(b->b, facts);
      if (b->op == BinOp::Max) return at_least_zero(b->a, facts) || at_least_zero(b->b, facts);
    }
    Affine g = products(f);
    g.constant += 1;
    return at_least_one(g, facts);
  }
  /// The scales that cancel one of f's atoms against `rest` (a positive whole ratio).
  static std::vector<std::int64_t> scales(const Affine& rest, const Fact& f) {
    std::vector<std::int64_t> out;
    for (const auto& [atom, k] : f.slack.terms) {
      std::int64_t c = rest.coefficient(atom);
      if (k == 0 || c == 0 || c % k != 0 || c / k <= 0) continue;
      if (std::find(out.begin(), out.end(), c / k) == out.end()) out.push_back(c / k);
    }
    return out;
  }
  /// Whether an affine form is at least 1, by itself or by `facts` (proven_below). What is left once
  /// the facts are taken out counts by its atoms' ranges (`t % 4 - 3 + ...` at least -3).
  bool at_least_one(const Affine& gap, const std::vector<Fact>& facts) const {
    std::vector<std::pair<ExprPtr, std::optional<Range>>> ranges;  // of the atoms met, once each
    auto range = [&](const ExprPtr& atom) -> std::optional<Range> {
      for (const auto& [a, r] : ranges)
        if (a.get() == atom.get()) return r;
      ranges.emplace_back(atom, exact_value_range(atom, env_));
      return ranges.back().second;
    };
    // The least value of `a`, or none where an atom's range is unknown or too wide to add up.
    auto least = [&](const Affine& a) -> std::optional<__int128> {
      constexpr __int128 kWide = __int128{1} << 62;
      __int128 v = a.constant;
      for (const auto& [atom, k] : a.terms) {
        if (k == 0) continue;
        auto r = range(atom);
        if (!r || r->lo < -kWide || r->hi > kWide || k > (std::int64_t{1} << 40) || k < -(std::int64_t{1} << 40))
          return std::nullopt;
        v += static_cast<__int128>(k) * (k > 0 ? r->lo : r->hi);
      }
      return v;
    };
    auto holds = [&](const Affine& a, std::int64_t plus) {
      auto v = least(a);
      return v && *v + plus >= 1;
    };
    if (holds(gap, 0)) return true;  // by itself: no condition needed
    for (std::size_t i = 0; i < facts.size(); ++i) {
      for (std::int64_t s1 : scales(gap, facts[i])) {
        Affine rest = gap;
        rest.merge(facts[i].slack, -s1);
        if (holds(rest, s1 * facts[i].least)) return true;
        for (std::size_t j = 0; j < facts.size(); ++j) {
          if (j == i) continue;
          for (std::int64_t s2 : scales(rest, facts[j])) {
            Affine d = rest;
            d.merge(facts[j].slack, -s2);
            if (holds(d, s1 * facts[i].least + s2 * facts[j].least)) return true;
          }
        }
      }
    }
    return false;
  }
  /// An mbarrier slot: proven inside its array, or the kernel is refused (V1009). A barrier operation
  /// has no value to skip to, so it is never checked as it runs.
  void slot_in_bounds(const MemPtr& root, const ExprPtr& index, const std::string& view, SourceLoc l) {
    if (proven_in_bounds(root, index, 1, l)) return;
    c_.out.problems.push_back(
        {"V1009",
         "cannot prove the mbarrier slot " + ir::print(index) + " inside '" + view +
             "' at this specialization; index it with a value known to be in range, such as `k % stages`",
         l,
         {}});
  }
  /// A tile in the 128-byte swizzle layout (rows of 128 bytes in groups of 8, each group on a 1024-byte
  /// boundary) read or written through an address, not an index: `elems` elements from `first`,
  /// less a column offset of at most `max_col` elements (wgmma's K step) inside the first row. The
  /// array must be aligned to 1024 bytes, the group start a multiple of 1024 bytes, and the whole
  /// tile proven inside the array (V1009).
  void swizzled_tile(const MemPtr& root, const ExprPtr& first, std::int64_t elems, std::int64_t max_col,
                     const std::string& what, const std::string& view, SourceLoc l) {
    auto fail = [&](const std::string& why) {
      c_.out.problems.push_back({"V1009", what + " in '" + view + "' at " + ir::print(first) + ": " + why, l, {}});
    };
    const std::int64_t eb = type_bytes(root->elem), group = 1024 / eb, row = 128 / eb;
    auto al = aligns_.find(root.get());
    if (root->space != MemSpace::Shared || al == aligns_.end() || al->second < 1024)
      return fail("the array must be a shared array aligned to 1024 bytes (`shared_aligned(..., 1024)`)");
    Affine a = affine(first);
    std::int64_t col = ((a.constant % group) + group) % group;
    bool aligned = col <= max_col && col % 16 == 0;
    for (const auto& [atom, k] : a.terms) aligned = aligned && k % group == 0;
    if (!aligned || (max_col == 0 && col != 0))
      return fail("its 8-row group must start a multiple of 1024 bytes into the array" +
                  std::string(max_col ? ", plus a K step of 0, 16, 32 or 48 elements" : ""));
    ExprPtr start = fold(make<Binary>(first->type, BinOp::Sub, first, int_literal(first->type, col, l), l));
    if (!proven_in_bounds(root, start, elems, l))
      fail("cannot prove its " + std::to_string(elems) + " elements (" + std::to_string(elems / row) +
           " rows of 128 bytes) inside the array at this specialization");
  }

  bool proven_in_bounds(const MemPtr& root, const ExprPtr& first, std::int64_t count, SourceLoc l) const {
    ExprPtr ext = extent_of(root, l);
    auto r = exact_value_range(first, env_);
    if (!ext || !r || !proven_nonnegative(first, *r)) return false;
    ExprPtr last =
        count == 1 ? first : make<Binary>(first->type, BinOp::Add, first, int_literal(first->type, count - 1, l), l);
    return proven_below(last, ext);
  }
  /// Whether `e` reads a variable of `vars`, or memory whose elements may change while the kernel
  /// runs (any but the kernel's const global pointer parameters, which the launcher keeps apart from
  /// every buffer it writes): its value at one statement need not be its value at a later one.
  bool reads_changing(const ExprPtr& e, const std::unordered_set<const VarNode*>& vars) const {
    struct Scan : IRVisitor {
      const BodyLowerer& b;
      const std::unordered_set<const VarNode*>& vars;
      bool found = false;
      Scan(const BodyLowerer& b, const std::unordered_set<const VarNode*>& v) : b(b), vars(v) {}
      using IRVisitor::walk;
      void visit(const VarRef& n) override { found = found || vars.count(n.var.get()); }
      void visit(const Load& n) override {
        const MemNode& m = *n.mem;
        found = found || !(m.is_const && m.space == MemSpace::Global && b.c_.param_index.count(&m));
        IRVisitor::visit(n);
      }
    } scan(*this, vars);
    scan.walk(e);
    return scan.found;
  }
  /// Facts that read one of `vars` stop holding (the variables are assigned here, or in a loop about
  /// to run). They are cleared in place, so that the scopes' saved counts stay right; a fact cleared
  /// inside a branch stays cleared after it, where the variable may have changed.
  void kill_facts(const std::unordered_set<const VarNode*>& vars) {
    if (vars.empty()) return;
    for (auto& f : facts_)
      if (f && reads_changing(f, vars)) f = nullptr;
  }
  void add_facts(const ExprPtr& cond) {
    if (const auto* b = as<Binary>(*cond); b && b->op == BinOp::LAnd) {
      add_facts(b->a);
      add_facts(b->b);
      return;
    }
    facts_.push_back(cond);
  }

  // ------------------------------------------------------------------ statements
  StmtPtr block(const StmtPtr& s) {
    std::vector<StmtPtr> out;
    stmt(s, out);
    SourceLoc l = s ? s->loc : SourceLoc{};
    return make<Seq>(std::move(out), l);
  }
  StmtPtr scoped(Pos next, const StmtPtr& body) {
    frames_.push_back(std::move(next));
    StmtPtr r = block(body);
    frames_.pop_back();
    return r;
  }
  void stmt(const StmtPtr& s, std::vector<StmtPtr>& out) {
    if (!s) return;
    dispatch(*s, [&](const auto& n) { lower_stmt(n, out); });
  }

  void lower_stmt(const Seq& n, std::vector<StmtPtr>& out) {
    std::size_t facts = facts_.size();
    for (const auto& c : n.stmts) stmt(c, out);
    facts_.resize(facts);
  }
  /// A variable's range from here on. Ranges and lets change what proofs find: what they remember
  /// is forgotten (the exact ranges, the usable facts, the normal forms). Each variable is bound
  /// once, before anything that reads it is proven, so nothing remembered reads it yet: the
  /// forgetting only keeps the memos right should a variable ever be bound again (no test can tell
  /// it from keeping them).
  void bind_range(const VarNode* v, Range r) {
    env_.vars[v] = r;
    exact_memo_.clear();
    for (auto& c : facts_cache_) c.valid = false;
    for (auto& m : fact_forms_) m.clear();
    for (auto& by_depth : normal_memo_)
      for (auto& m : by_depth) m.clear();
  }
  void lower_stmt(const Let& n, std::vector<StmtPtr>& out) {
    ExprPtr v = lx(n.value);
    if (!reassigned_.count(n.var.get()) && is_integer(n.var->type)) {
      bind_range(n.var.get(), value_range(v, env_));
      // The value stands for the variable in proofs only where it means the same everywhere the
      // variable is in scope: not where it reads a variable assigned later, or memory that may change;
      // and only where it is computed exactly, as the proofs' sums take it (`normal`).
      if (!reads_changing(v, reassigned_) && exact(v)) defs_[n.var.get()] = v;
    }
    out.push_back(make<Let>(n.var, v, std::nullopt, n.loc));
  }
  void lower_stmt(const Assign& n, std::vector<StmtPtr>& out) {
    out.push_back(make<Assign>(n.var, lx(n.value), n.loc));
    kill_facts({n.var.get()});
  }
  void lower_stmt(const Store& n, std::vector<StmtPtr>& out) {
    std::vector<ExprPtr> idx;
    for (const auto& i : n.indices) idx.push_back(lx(i));
    auto [root, resolved] = resolve(n.mem, std::move(idx), n.loc);
    ExprPtr flat = exact_width(resolved);
    ExprPtr value = lx(n.value);
    auto [bound, site] = check(root, flat, true, n.loc);
    out.push_back(make<Store>(root, std::vector<ExprPtr>{flat}, value, bound, site, n.loc));
  }
  void lower_stmt(const If& n, std::vector<StmtPtr>& out) {
    ExprPtr c = lx(n.cond);
    std::size_t facts = facts_.size();
    add_facts(c);
    StmtPtr t = block(n.then_body);
    facts_.resize(facts);
    StmtPtr e = n.else_body ? block(n.else_body) : nullptr;
    out.push_back(make<If>(c, t, e, n.loc));
  }
  void lower_stmt(const For& n, std::vector<StmtPtr>& out) {
    ExprPtr b = lx(n.begin), e = lx(n.end), st = lx(n.step);
    // What the body assigns changes between rounds: facts on it do not hold inside the loop (the
    // back edge) or after it. The end is read once, so `var < end` holds only if the body leaves
    // the end's variables alone.
    auto assigned = reassigned_vars(n.body);
    kill_facts(assigned);
    std::size_t facts = facts_.size();
    auto step = const_int(st);
    if (step && *step > 0 && !reads_changing(e, assigned))
      add_facts(make<Binary>(ScalarType::Bool, BinOp::Lt, ref(n.var, n.loc), e, n.loc));
    // The counter's range in the body, for the bounds of vector accesses.
    Range rb = value_range(b, env_), re = value_range(e, env_);
    if (step && *step > 0 && !reassigned_.count(n.var.get()) && is_integer(n.var->type))
      bind_range(n.var.get(), Range{rb.lo, std::max(rb.lo, re.hi - 1)});
    StmtPtr body = block(n.body);
    facts_.resize(facts);
    if (auto v = vector_copy(n, b, e, st, body)) {
      out.push_back(v);
      return;
    }
    out.push_back(make<For>(n.var, b, e, st, body, n.loc));
  }
  void lower_stmt(const While& n, std::vector<StmtPtr>& out) {
    kill_facts(reassigned_vars(n.body));  // as for a for loop
    ExprPtr c = lx(n.cond);
    out.push_back(make<While>(c, block(n.body), n.loc));
  }
  void lower_stmt(const Group& n, std::vector<StmtPtr>& out) {
    const Pos& cur = frames_.back();
    Pos next = cur;
    next.code = n.p;
    std::int64_t c = n.p.count.coeff;
    SourceLoc l = n.loc;
    if (n.p.level == Level::Block) {
      if (!cur.thread_below_t) {
        ExprPtr lin = linear(cur, l);
        next.thread = bin(BinOp::Mod, lin, lit(T(), l), l);
        next.block = bin(BinOp::Div, lin, lit(T(), l), l);
        next.thread_below_t = true;
      }
      next.block = c == 1 ? lit(0, l) : bin(BinOp::Mod, next.block, lit(c, l), l);
      next.in_block = c == 1 || cur.in_block;
    } else if (n.p.level == Level::Thread) {
      std::int64_t u = units(n.p);
      bool whole = u == units(cur.code) && cur.code.level != Level::Grid;
      if (!whole) {
        if (u <= T()) {
          // T is a multiple of u, so the position in the block modulo u is the position in the unit.
          next.thread = bin(BinOp::Mod, cur.thread_below_t ? cur.thread : linear(cur, l), lit(u, l), l);
          next.block = lit(0, l);
          next.in_block = true;
          next.thread_below_t = true;
        } else if (cur.thread_below_t && !cur.in_block) {
          // A unit of whole blocks: the block's offset in it, and the thread in its block.
          next.block = bin(BinOp::Mod, cur.block, lit(u / T(), l), l);
          next.in_block = false;
        } else {
          next.thread = bin(BinOp::Mod, linear(cur, l), lit(u, l), l);
          next.block = lit(0, l);
          next.in_block = false;
          next.thread_below_t = false;
        }
      }
      std::int64_t per_block = cur.in_block ? units(cur.code) : T();
      next.replicas = cur.replicas * std::max<std::int64_t>(1, per_block / std::max<std::int64_t>(u, 1));
    }
    out.push_back(scoped(next, n.body));
  }
  void lower_stmt(const Split& n, std::vector<StmtPtr>& out) {
    const Pos cur = frames_.back();
    std::int64_t offset = 0;
    std::vector<std::pair<ExprPtr, StmtPtr>> branches;
    for (std::size_t i = 0; i < n.bodies.size(); ++i) {
      std::int64_t count = n.counts[i];
      SourceLoc l = i < n.branch_locs.size() ? n.branch_locs[i] : n.loc;
      Pos next = cur;
      next.code = {n.level, count};
      ExprPtr pos;
      if (n.level == Level::Thread) {
        pos = linear(cur, l);
        next.thread = offset == 0 ? pos : bin(BinOp::Sub, pos, lit(offset, l), l);
        next.block = lit(0, l);
        next.in_block = cur.in_block || count <= T();
        next.thread_below_t = count <= T() || (cur.in_block && cur.thread_below_t);
      } else {
        pos = cur.block;
        next.block = offset == 0 ? pos : bin(BinOp::Sub, pos, lit(offset, l), l);
        next.in_block = count == 1;
      }
      ExprPtr cond = bin(BinOp::Lt, pos, lit(offset + count, l), l);
      if (offset != 0) cond = bin(BinOp::LAnd, bin(BinOp::Ge, pos, lit(offset, l), l), cond, l);
      std::size_t facts = facts_.size();
      add_facts(cond);  // the branch's positions: facts for the bounds proofs inside it
      branches.emplace_back(cond, scoped(next, n.bodies[i]));
      facts_.resize(facts);
      offset += count;
    }
    StmtPtr chain;
    for (auto it = branches.rbegin(); it != branches.rend(); ++it)
      chain = make<If>(it->first, it->second, chain, n.loc);
    if (chain) out.push_back(chain);
  }
  void lower_stmt(const Destruct& n, std::vector<StmtPtr>& out) {
    Pos next = frames_.back();
    next.code =
        next.code.level == Level::Block ? Perspective{Level::Thread, Size::T()} : Perspective{Level::Block, Size::B()};
    out.push_back(scoped(next, n.body));
  }
  void lower_stmt(const Partition& n, std::vector<StmtPtr>& out) {
    views_[n.dst.get()] = ViewInfo{n.src, true, n.index_vars, lx(n.index)};
    stmt(n.body, out);
  }
  void view(const MemPtr& dst, const MemPtr& src, const StmtPtr& body, std::vector<StmtPtr>& out) {
    views_[dst.get()] = ViewInfo{src, false, {}, nullptr};
    stmt(body, out);
  }
  void lower_stmt(const Claim& n, std::vector<StmtPtr>& out) { view(n.dst, n.src, n.body, out); }
  void lower_stmt(const Lower& n, std::vector<StmtPtr>& out) { view(n.dst, n.src, n.body, out); }
  void lower_stmt(const Async& n, std::vector<StmtPtr>& out) { view(n.dst, n.src, n.body, out); }
  void lower_stmt(const SharedAlloc& n, std::vector<StmtPtr>& out) {
    c_.out.shared_offsets[n.mem.get()] = layout_.arrays.at(n.mem.get()).offset;
    if (auto k = const_int(n.count)) counts_[n.mem.get()] = *k;
    aligns_[n.mem.get()] = n.align;
    out.push_back(make<SharedAlloc>(n.mem, n.count, n.align, n.loc));
  }
  void lower_stmt(const LocalAlloc& n, std::vector<StmtPtr>& out) {
    counts_[n.mem.get()] = n.count;
    out.push_back(make<LocalAlloc>(n.mem, n.count, std::nullopt, n.loc));
  }
  void lower_stmt(const Call& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Intrinsic& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Unsafe& n, std::vector<StmtPtr>& out) {
    std::vector<NamedExpr> in;
    for (const auto& [name, e] : n.inputs) in.emplace_back(name, lx(e));
    out.push_back(make<Unsafe>(n.needs, n.cuda, std::move(in), n.outputs, n.loc));
    std::unordered_set<const VarNode*> written;
    for (const auto& [name, v] : n.outputs) written.insert(v.get());
    kill_facts(written);
  }
  void lower_stmt(const Jump& n, std::vector<StmtPtr>& out) { out.push_back(make<Jump>(n.is_break, n.loc)); }
  void lower_stmt(const Return& n, std::vector<StmtPtr>& out) { out.push_back(make<Return>(lx(n.value), n.loc)); }
  void lower_stmt(const ir::Barrier& n, std::vector<StmtPtr>& out) {
    if (n.how != BarrierKind::Planned) throw InternalError("lower: the input is already lowered");
    std::int64_t count = units(n.over);
    if (n.over.level == Level::Grid || count <= 1) return;
    BarrierKind how;
    std::int64_t base = 0;
    if (count == 32) {
      how = BarrierKind::Warp;
    } else if (count == T()) {
      how = BarrierKind::Block;
    } else if (count < 32 && 32 % count == 0) {
      how = BarrierKind::WarpPart;
    } else if (auto b = count % 32 == 0 && count < T() ? c_.ids->base(count) : std::nullopt) {
      how = BarrierKind::Named;
      base = *b;
    } else {
      c_.out.problems.push_back(
          {"V1002",
           "a barrier over " + std::to_string(count) +
               " threads is needed here, but only whole blocks, warps (or their power-of-two parts) and warp-aligned "
               "groups with a free barrier id (16 per block, the user's own reserved) can synchronize",
           n.loc,
           {}});
      return;
    }
    out.push_back(make<ir::Barrier>(n.over, how, count, base, n.async_wait, n.loc));
    ++c_.out.barriers;
  }
  void lower_stmt(const VectorCopy&, std::vector<StmtPtr>&) {
    throw InternalError("lower: the input is already lowered");
  }

  /// `for i in [0, N): dst[a + i] = src[b + i]` (lowered) with N elements of 8 or 16 bytes in total,
  /// a and b provably multiples of N and both ranges proven in bounds, becomes one vector copy. The
  /// pointer parameters involved then need that alignment, which the signature records.
  StmtPtr vector_copy(const For& n, const ExprPtr& b, const ExprPtr& e, const ExprPtr& st, const StmtPtr& body) {
    auto kb = const_int(b), ke = const_int(e), ks = const_int(st);
    if (!kb || !ke || !ks || *kb != 0 || *ks != 1) return nullptr;
    std::int64_t count = *ke;
    const auto* seq = as<Seq>(*body);
    if (!seq || seq->stmts.size() != 1) return nullptr;
    const auto* store = as<Store>(*seq->stmts[0]);
    const auto* load = store && store->value ? as<Load>(*store->value) : nullptr;
    if (!store || !load) return nullptr;
    ScalarType t = store->mem->elem;
    if (t != load->mem->elem) return nullptr;
    std::int64_t bytes = count * type_bytes(t);
    if ((bytes != 8 && bytes != 16) || (type_bytes(t) != 4 && type_bytes(t) != 8)) return nullptr;
    // Between memory and a thread's registers (a local array, declared aligned to the vector), or
    // between two memories; not between two local arrays (register moves).
    if (store->mem->space == MemSpace::Local && load->mem->space == MemSpace::Local) return nullptr;
    if (store->mem.get() == load->mem.get()) return nullptr;
    ExprPtr iv = ref(n.var, n.loc);
    // The index as an exact sum (`products`: exact_width's widening casts looked through).
    // Element e of the vector is the loop's element e only if every other term is the same in each
    // round: `(e / 2) * 4 + e` is aligned and has e once, but copies 0 1 6 7, and a term that loads
    // memory the loop may store to can change between rounds.
    const std::unordered_set<const VarNode*> counter{n.var.get()};
    // Lets are put in (`normal`): `x[first + v]` with `let first = blk * 2048 + t * 8` is aligned.
    auto aligned_with_unit_step = [&](const ExprPtr& idx) {
      Affine a = products(normal(idx));
      bool has_var = false;
      if (a.constant % count != 0) return false;
      for (const auto& [atom, k] : a.terms) {
        if (equal(atom, iv)) {
          if (k != 1) return false;
          has_var = true;
        } else if (k % count != 0 || reads_changing(atom, counter)) {
          return false;
        }
      }
      return has_var;
    };
    const ExprPtr& di = store->indices[0];
    const ExprPtr& si = load->indices[0];
    if (!aligned_with_unit_step(di) || !aligned_with_unit_step(si)) return nullptr;
    VarMap zero{{n.var.get(), int_literal(n.var->type, 0, n.loc)}};
    ExprPtr d0 = fold(substitute(di, zero)), s0 = fold(substitute(si, zero));
    // The scalar loop stays where the whole vector is not proven inside both buffers.
    if (!proven_in_bounds(store->mem, d0, count, n.loc) || !proven_in_bounds(load->mem, s0, count, n.loc))
      return nullptr;
    for (const MemNode* r : {store->mem.get(), load->mem.get()}) {
      auto p = c_.param_index.find(r);
      if (p != c_.param_index.end())
        c_.out.param_alignment[p->second] = std::max(c_.out.param_alignment[p->second], static_cast<int>(bytes));
    }
    return make<VectorCopy>(store->mem, d0, load->mem, s0, count, store->loc, make<For>(n.var, b, e, st, body, n.loc));
  }

  Context& c_;
  StmtPtr body_;
  SharedLayout layout_;
  std::unordered_set<const VarNode*> reassigned_;
  RangeEnv env_;
  std::vector<Pos> frames_;
  std::unordered_map<const MemNode*, ViewInfo> views_;
  std::unordered_map<const MemNode*, std::int64_t> counts_;  ///< shared and local arrays: elements
  std::unordered_map<const MemNode*, std::int64_t> aligns_;  ///< shared arrays: bytes their start is aligned to
  std::vector<ExprPtr> facts_;                               ///< conditions the code is under
  std::unordered_map<const VarNode*, ExprPtr> defs_;         ///< unassigned integer lets computed exactly: their values
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

FunctionPtr lower_function(Context& c, const FunctionNode& f);

void BodyLowerer::lower_stmt(const Call& n, std::vector<StmtPtr>& out) {
  const FunctionNode& f = *n.fn;
  FunctionPtr callee = lower_function(c_, f);
  const Pos& p = frames_.back();
  SourceLoc l = n.loc;
  std::vector<CallArgNode> args;
  std::vector<ExprPtr> lengths;  // the callee's hidden length parameters, in order
  for (const auto& a : n.args) {
    if (!a.mem) {
      args.push_back({lx(a.value), nullptr});
      continue;
    }
    if (!unit_stride(a.mem.get()))
      c_.out.problems.push_back({"V1003",
                                 "memory '" + a.mem->name + "' is passed to '" + f.name +
                                     "' as a pointer, but its partition index function is not base + i",
                                 l,
                                 {}});
    auto [root, flat] = resolve(a.mem, {lit(0, l), lit(0, l), lit(0, l)}, l);
    args.push_back({flat, root});
    ExprPtr offset = flat->type == ScalarType::I64 ? flat : fold(make<Cast>(ScalarType::I64, flat, l));
    lengths.push_back(bin(BinOp::Sub, bound_of(root, l), offset, l));
  }
  for (auto& len : lengths) args.push_back({std::move(len), nullptr});
  std::int64_t u = units(f.signature);
  ExprPtr tid = p.thread;
  if (f.signature.level == Level::Thread) {
    ExprPtr lin = p.thread_below_t ? p.thread : linear(p, l);
    tid = u == units(p.code) ? lin : bin(BinOp::Mod, lin, lit(u, l), l);
  }
  auto slot = layout_.calls.find(&n);
  args.push_back({tid, nullptr});
  args.push_back({p.block, nullptr});
  args.push_back({int_literal(ScalarType::I64, slot != layout_.calls.end() ? slot->second.offset : -1, l), nullptr});
  out.push_back(make<Call>(callee, std::move(args), n.result, l));
}

void BodyLowerer::lower_stmt(const Intrinsic& n, std::vector<StmtPtr>& out) {
  SourceLoc l = n.loc;
  std::vector<ExprPtr> args;
  for (const auto& a : n.args) args.push_back(lx(a));
  std::vector<MemPtr> mems = n.mems;
  // A memory operand accessed at an index argument: the root, and the flat index in its place.
  auto at = [&](std::size_t mem, std::size_t arg) {
    auto [root, flat] = resolve(n.mems[mem], {args[arg]}, l);
    mems[mem] = root;
    args[arg] = exact_width(flat);
  };
  // Thread-local fragments: the root array, which must start at the view's first element.
  auto fragment = [&](std::size_t mem) {
    auto [root, flat] = resolve(n.mems[mem], {lit(0, l)}, l);
    if (!is_zero(flat))
      c_.out.problems.push_back(
          {"V1003", "the fragment '" + n.mems[mem]->name + "' must be a whole thread-local array", l, {}});
    mems[mem] = root;
  };
  switch (n.op) {
    case IntrinsicOp::SyncThreads:
      out.push_back(make<ir::Barrier>(vantage::block(1), BarrierKind::Block, T(), 0, false, l));
      return;
    case IntrinsicOp::SyncWarp: out.push_back(make<ir::Barrier>(warp(), BarrierKind::Warp, 32, 0, false, l)); return;
    case IntrinsicOp::NamedBarrier: {
      const Pos& p = frames_.back();
      if (p.replicas > 1)
        c_.out.problems.push_back(
            {"V1007",
             "named_barrier(" + std::to_string(n.imms[0]) + ", " + std::to_string(n.imms[1]) + ") runs in " +
                 std::to_string(p.replicas) + " groups of " + std::to_string(n.imms[1]) +
                 " threads at once, which would all share barrier " + std::to_string(n.imms[0]) +
                 "; let Vantage place the barriers, or give each group its own split branch and id",
             l,
             {}});
      out.push_back(make<ir::Barrier>(p.code, BarrierKind::NamedFixed, n.imms[1], n.imms[0], false, l));
      return;
    }
    case IntrinsicOp::Atomic: {
      // Checked as it runs where not proven, as a store is: the bound becomes a third argument and
      // the site a second immediate (the CPU backend and the interpreter check atomics themselves).
      at(0, 0);
      auto [bound, site] = check(mems[0], args[0], true, l);
      if (bound) {
        args.push_back(bound);
        std::vector<std::int64_t> imms = n.imms;
        imms.push_back(site);
        out.push_back(make<Intrinsic>(n.op, std::move(args), std::move(mems), n.outputs, std::move(imms), l));
        return;
      }
      break;
    }
    case IntrinsicOp::Ldmatrix:
      fragment(0);
      at(1, 0);
      break;
    case IntrinsicOp::CpAsync: {
      at(0, 0);
      at(1, 1);
      // A copy of 8 or 16 bytes needs its source aligned to that: the launch checks the buffer's
      // address, as for a vector copy (shared arrays start at multiples of 16 bytes).
      const int bytes = n.imms.empty() ? 0 : static_cast<int>(n.imms[0]);
      if (auto p = c_.param_index.find(mems[1].get()); bytes > 4 && p != c_.param_index.end())
        c_.out.param_alignment[p->second] = std::max(c_.out.param_alignment[p->second], bytes);
      // Each side's elements proven inside its memory, or checked as the copy runs: then the bounds
      // follow the indices (args 2 and 3) and the sites the size (imms 1 and 2; -1 where proven).
      const std::int64_t count = std::max<std::int64_t>(1, bytes / type_bytes(mems[0]->elem));
      std::array<std::int64_t, 2> sites{-1, -1};
      std::array<ExprPtr, 2> bounds;
      for (std::size_t side = 0; side < 2; ++side) {
        if (proven_in_bounds(mems[side], args[side], count, l)) continue;
        bounds[side] = bound_of(mems[side], l);
        if (!bounds[side]) throw InternalError("lower: no bound for memory '" + mems[side]->name + "'");
        c_.out.checks.push_back({l, mems[side]->name, side == 0});
        sites[side] = static_cast<std::int64_t>(c_.out.checks.size()) - 1;
      }
      if (sites[0] >= 0 || sites[1] >= 0) {
        std::vector<std::int64_t> imms = n.imms;
        for (std::size_t side = 0; side < 2; ++side) {
          args.push_back(bounds[side] ? bounds[side] : int_literal(ScalarType::I64, 0, l));
          imms.push_back(sites[side]);
        }
        out.push_back(make<Intrinsic>(n.op, std::move(args), std::move(mems), n.outputs, std::move(imms), l));
        return;
      }
      break;
    }
    case IntrinsicOp::TmaLoad2D: {
      // args: column, row, the barrier's slot, the destination's first element (both resolved).
      at(0, 3);
      at(1, 2);
      slot_in_bounds(mems[1], args[2], n.mems[1]->name, l);
      const auto& maps = c_.out.kernel.tensor_maps;
      if (n.imms.empty() || n.imms[0] < 0 || n.imms[0] >= static_cast<std::int64_t>(maps.size()))
        throw InternalError("lower: a TMA load without a tensor map");
      const TensorMapNode& m = maps[static_cast<std::size_t>(n.imms[0])];
      swizzled_tile(mems[0], args[3], m.box_rows * m.box_cols, 0, "TMA box of '" + m.name + "'", n.mems[0]->name, l);
      break;
    }
    case IntrinsicOp::MbarrierInit:
    case IntrinsicOp::MbarrierWait:
      at(0, 1);
      slot_in_bounds(mems[0], args[1], n.mems[0]->name, l);
      break;
    case IntrinsicOp::MbarrierArrive:
    case IntrinsicOp::MbarrierExpectTx:
      at(0, 0);
      slot_in_bounds(mems[0], args[0], n.mems[0]->name, l);
      break;
    case IntrinsicOp::Wgmma: {
      fragment(0);
      at(1, 0);
      at(2, 1);
      swizzled_tile(mems[1], args[0], 64 * 64, 48, "wgmma's A tile (64 rows)", n.mems[1]->name, l);
      swizzled_tile(mems[2], args[1], n.imms[0] * 64, 48, "wgmma's B tile (" + std::to_string(n.imms[0]) + " rows)",
                    n.mems[2]->name, l);
      break;
    }
    case IntrinsicOp::SetMaxNreg: break;
    case IntrinsicOp::MmaSync:
      for (std::size_t i = 0; i < mems.size(); ++i) fragment(i);
      break;
    case IntrinsicOp::ShflXor:
    case IntrinsicOp::ShflDown:
    case IntrinsicOp::ShflUp:
    case IntrinsicOp::ShflIdx:
    case IntrinsicOp::VoteAll:
    case IntrinsicOp::VoteAny:
    case IntrinsicOp::Ballot:
    case IntrinsicOp::WgmmaFence:
    case IntrinsicOp::WgmmaCommit:
    case IntrinsicOp::WgmmaWait:
    case IntrinsicOp::CpAsyncCommit:
    case IntrinsicOp::CpAsyncWait: break;
  }
  out.push_back(make<Intrinsic>(n.op, std::move(args), std::move(mems), n.outputs, n.imms, l));
}

FunctionPtr lower_function(Context& c, const FunctionNode& f) {
  if (auto it = c.functions.find(&f); it != c.functions.end()) return it->second;
  SourceLoc l = f.loc;
  bool within = f.signature.level == Level::Thread || f.signature == block(1);
  // A function does not know how many copies of its signature run at once: as many as a block
  // holds, at most.
  std::int64_t per = f.signature.count.coeff * (f.signature.count.threads ? c.opt.threads : 1) *
                     (f.signature.level == Level::Block ? c.opt.threads : 1);
  std::int64_t copies = f.signature.level == Level::Thread
                            ? std::max<std::int64_t>(1, c.opt.threads / std::max<std::int64_t>(per, 1))
                            : 1;
  Pos top{make<Builtin>(ScalarType::I32, BuiltinKind::BlockInGrid, l),
          make<Builtin>(ScalarType::I32, BuiltinKind::ThreadInBlock, l),
          within,
          true,
          f.signature,
          copies};
  auto fn = std::make_shared<FunctionNode>(f);
  add_lengths(c, fn->params, l);
  BodyLowerer b(c, f.body, top, f.signature);
  fn->body = b.run();
  for (auto& p : fn->params) p.at.reset();
  fn->hash = hash_function(*fn);
  c.functions[&f] = fn;
  c.out.functions.push_back(fn);
  return fn;
}

}  // namespace

Lowered lower(const KernelNode& k, const Options& options) {
  Lowered out;
  out.options = options;
  Context c{options, out, std::nullopt, {}, {}, {}};
  c.ids.emplace(options.threads, user_barrier_ids(k.body), target::info(options.arch).named_barriers);
  for (std::size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].mem) {
      c.param_index[k.params[i].mem.get()] = static_cast<int>(i);
      if (k.params[i].extent) c.extents[k.params[i].mem.get()] = k.params[i].extent;
    }
  SourceLoc l = k.loc;
  Pos top{make<Builtin>(ScalarType::I32, BuiltinKind::BlockInGrid, l),
          make<Builtin>(ScalarType::I32, BuiltinKind::ThreadInBlock, l),
          false,
          true,
          grid(1),
          1};
  out.kernel = k;
  out.user_params = k.params.size();
  add_lengths(c, out.kernel.params, l);
  BodyLowerer b(c, k.body, top, grid(1));
  for (const auto& r : k.requirements) b.assume(r.cond);
  out.kernel.body = b.run();
  out.shared_bytes = b.peak();
  out.shared_align = b.shared_align();
  out.kernel.hash = hash_kernel(out.kernel);
  return out;
}

std::string print(const Lowered& lowered) {
  std::string s = "// lowered for " + std::to_string(lowered.options.threads) + " threads per block";
  if (lowered.options.blocks) s += ", " + std::to_string(*lowered.options.blocks) + " blocks";
  s += "; shared memory " + std::to_string(lowered.shared_bytes) + " bytes\n";
  return s + ir::print(lowered.kernel);  // the functions it calls first, once each
}

std::uint64_t check_tag(const std::string& entry) { return XXH3_64bits(entry.data(), entry.size()) | 1u; }

}  // namespace vantage::lower
