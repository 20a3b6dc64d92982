// Lowering's bounds proofs: whether an index is proven inside its buffer from the facts in force
// where it is (conditions, requirements, loop bounds, the ranges of variables), by affine forms of the
// index in three readings (normal, exact, products). See prove.h.
#include "jit/lower/prove.h"

#include <algorithm>
#include <functional>

#include "jit/ir/eval.h"
#include "jit/ir/mutate.h"
#include "jit/ir/visit.h"

namespace vantage::lower::detail {

auto Prover::normal(const ExprPtr& e, bool trusted, int depth) const -> ExprPtr {
  class Norm : public IRMutator {
   public:
    Norm(const Prover& b, bool trusted, int d) : b_(b), trusted_(trusted), d_(d) {}
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
    const Prover& b_;
    bool trusted_;
    int d_;
  } norm(*this, trusted, depth);
  return norm.mutate(e);
}

auto Prover::exact(const ExprPtr& e) const -> bool {
  auto r = exact_index_range(e, env_);
  return r && r->within(Range::of(e->type));
}

auto Prover::widening(const Cast& c, bool trusted) const -> bool {
  return is_integer(c.type) && is_integer(c.a->type) && Range::of(c.a->type).within(Range::of(c.type)) &&
         (trusted || exact(c.a));
}

auto Prover::usable_facts(Form form) const -> const std::vector<Fact>& {
  FactsCache& c = facts_cache_[static_cast<std::size_t>(form)];
  if (c.valid && c.facts == facts_) return c.out;
  c.out = make_usable_facts(form);
  c.facts = facts_;
  c.valid = true;
  return c.out;
}

auto Prover::make_usable_facts(Form form) const -> std::vector<Fact> {
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

auto Prover::usable_fact(const ExprPtr& f, Form form) const -> std::optional<Fact> {
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

auto Prover::in_form(const ExprPtr& x, Form form) const -> Affine {
  switch (form) {
    case Form::Exact: return affine(x, true);
    case Form::Products: return products(x);
    case Form::Normal: break;
  }
  return affine(normal(x));
}

auto Prover::atom_facts(const Affine& gap, Form form) const -> std::vector<Fact> {
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

auto Prover::operation(const ExprPtr& atom) const -> const Binary* {
  ExprPtr y = unwidened(atom, false);
  if (const auto* v = as<VarRef>(*y)) {
    auto it = defs_.find(v->var.get());
    if (it == defs_.end()) return nullptr;
    y = unwidened(it->second, false);
  }
  const auto* b = as<Binary>(*y);
  return b && is_integer(b->type) && b->a && b->b ? b : nullptr;
}

auto Prover::with_atom_facts(std::vector<Fact> facts, const Affine& gap, Form form) const -> std::vector<Fact> {
  std::vector<Fact> more = atom_facts(gap, form);
  facts.insert(facts.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  return facts;
}

auto Prover::follows(const Affine& gap, Form form, const std::vector<Fact>& facts, int depth) const -> bool {
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

auto Prover::proven_below(const ExprPtr& x, const ExprPtr& bound) const -> bool {
  auto rx = exact_value_range(x, env_);
  if (auto k = const_int(bound); k && rx && rx->hi < *k) return true;
  Affine gap = affine(normal(bound, true));
  gap.merge(affine(normal(x)), -1);
  return follows(gap, Form::Normal, usable_facts(Form::Normal)) || proven_below_by_a_variable(x, bound);
}

auto Prover::products(const ExprPtr& e, bool trusted) const -> Affine {
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

auto Prover::unwidened(const ExprPtr& e, bool trusted) const -> ExprPtr {
  ExprPtr x = e;
  while (const auto* c = as<Cast>(*x)) {
    if (!widening(*c, trusted)) break;
    x = c->a;
  }
  return x;
}

auto Prover::times(const Affine& a, const ExprPtr& v) -> Affine {
  Affine out;
  if (a.constant != 0) out.add(v, a.constant);
  for (const auto& [atom, k] : a.terms)
    if (k != 0) out.add(product_atom(atom, v), k);
  return out;
}

auto Prover::product_atom(const ExprPtr& a, const ExprPtr& b) -> ExprPtr {
  const bool swap = a->hash > b->hash;
  return make<Binary>(ScalarType::I64, BinOp::Mul, swap ? b : a, swap ? a : b, SourceLoc{});
}

auto Prover::proven_below_by_a_variable(const ExprPtr& x, const ExprPtr& bound) const -> bool {
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

auto Prover::proven_nonnegative(const ExprPtr& x, const Range& r) const -> bool {
  if (r.lo >= 0) return true;
  Affine gap = affine(x, true);
  gap.constant += 1;
  return follows(gap, Form::Exact, usable_facts(Form::Exact)) || nonnegative_by_products(x);
}

auto Prover::nonnegative_by_products(const ExprPtr& x) const -> bool {
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

auto Prover::at_least_zero(const ExprPtr& f, const std::vector<Fact>& facts) const -> bool {
  if (auto rf = exact_value_range(f, env_); rf && rf->lo >= 0) return true;
  if (const Binary* b = operation(f); b && exact(b->a) && exact(b->b)) {
    if (b->op == BinOp::Min) return at_least_zero(b->a, facts) && at_least_zero(b->b, facts);
    if (b->op == BinOp::Max) return at_least_zero(b->a, facts) || at_least_zero(b->b, facts);
  }
  Affine g = products(f);
  g.constant += 1;
  return at_least_one(g, facts);
}

auto Prover::scales(const Affine& rest, const Fact& f) -> std::vector<std::int64_t> {
  std::vector<std::int64_t> out;
  for (const auto& [atom, k] : f.slack.terms) {
    std::int64_t c = rest.coefficient(atom);
    if (k == 0 || c == 0 || c % k != 0 || c / k <= 0) continue;
    if (std::find(out.begin(), out.end(), c / k) == out.end()) out.push_back(c / k);
  }
  return out;
}

auto Prover::at_least_one(const Affine& gap, const std::vector<Fact>& facts) const -> bool {
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

auto Prover::reads_changing(const ExprPtr& e, const std::unordered_set<const VarNode*>& vars) const -> bool {
  struct Scan : IRVisitor {
    const Prover& b;
    const std::unordered_set<const VarNode*>& vars;
    bool found = false;
    Scan(const Prover& b, const std::unordered_set<const VarNode*>& v) : b(b), vars(v) {}
    using IRVisitor::walk;
    void visit(const VarRef& n) override { found = found || vars.count(n.var.get()); }
    void visit(const Load& n) override {
      const MemNode& m = *n.mem;
      found = found || !(m.is_const && m.space == MemSpace::Global && b.stable_.count(&m));
      IRVisitor::visit(n);
    }
  };
  Scan scan(*this, vars);
  scan.walk(e);
  return scan.found;
}

void Prover::bind_range(const VarNode* v, Range r) {
  env_.vars[v] = r;
  forget();
}

void Prover::forget() {
  exact_memo_.clear();
  for (auto& c : facts_cache_) c.valid = false;
  for (auto& m : fact_forms_) m.clear();
  for (auto& by_depth : normal_memo_)
    for (auto& m : by_depth) m.clear();
}

bool is_true(const ExprPtr& e) {
  const auto* l = as<Literal>(*e);
  return l && e->type == ScalarType::Bool && l->i != 0;
}

auto Prover::decided(const ExprPtr& c) const -> ExprPtr {
  if (is_true(c)) return c;
  if (const auto* u = as<Unary>(*c); u && u->op == UnOp::Not) {
    ExprPtr a = decided(u->a);
    return a == u->a ? c : fold(make<Unary>(c->type, UnOp::Not, a, c->loc));
  }
  const auto* b = as<Binary>(*c);
  if (!b) return c;
  if (b->op == BinOp::LAnd || b->op == BinOp::LOr) {
    ExprPtr x = decided(b->a), y = decided(b->b);
    if (x == b->a && y == b->b) return c;
    if (b->op == BinOp::LAnd) {
      if (is_true(x)) return y;
      if (is_true(y)) return x;
    } else if (is_true(x) || is_true(y)) {
      return make<Literal>(ScalarType::Bool, 1, 1.0, c->loc);
    }
    return make<Binary>(c->type, b->op, x, y, c->loc);
  }
  // x < y or y > x, on integers both computed exactly: as a bounds proof would take it.
  if ((b->op == BinOp::Lt || b->op == BinOp::Gt) && is_integer(b->a->type) && exact(b->a) && exact(b->b)) {
    const ExprPtr& lo = b->op == BinOp::Lt ? b->a : b->b;
    const ExprPtr& hi = b->op == BinOp::Lt ? b->b : b->a;
    if (proven_below(lo, hi)) return make<Literal>(ScalarType::Bool, 1, 1.0, c->loc);
  }
  // x >= 0, 0 <= x or x > -1, on integers.
  const ExprPtr* x = nullptr;
  if (b->op == BinOp::Ge && const_int(b->b) == 0) x = &b->a;
  if (b->op == BinOp::Le && const_int(b->a) == 0) x = &b->b;
  if (b->op == BinOp::Gt && const_int(b->b) == -1) x = &b->a;
  // Signed: on an unsigned type `x > -1` compares with the type's largest value.
  if (!x || !is_integer((*x)->type) || !is_signed((*x)->type) || !exact(*x)) return c;
  auto r = exact_value_range(*x, env_);
  if (!r || !proven_nonnegative(*x, *r)) return c;
  return make<Literal>(ScalarType::Bool, 1, 1.0, c->loc);
}

void Prover::kill_facts(const std::unordered_set<const VarNode*>& vars) {
  if (vars.empty()) return;
  for (auto& f : facts_)
    if (f && reads_changing(f, vars)) f = nullptr;
}

void Prover::add_rounds_fact(const VarPtr& k, const ExprPtr& end, SourceLoc loc) {
  const auto* div = as<Binary>(*end);
  if (!div || div->op != BinOp::Div || !is_integer(k->type) || div->type != k->type || !exact(div->a)) return;
  auto T = const_int(div->b);
  if (!T || *T <= 0) return;
  ExprPtr r = ref(k, loc), t = int_literal(k->type, *T, loc);
  add_facts(make<Binary>(ScalarType::Bool, BinOp::Le,
                         make<Binary>(k->type, BinOp::Add, make<Binary>(k->type, BinOp::Mul, r, t, loc), t, loc),
                         div->a, loc));
}

void Prover::add_facts(const ExprPtr& cond) {
  if (const auto* b = as<Binary>(*cond); b && b->op == BinOp::LAnd) {
    add_facts(b->a);
    add_facts(b->b);
    return;
  }
  facts_.push_back(cond);
}

namespace {
/// `x op c` or `c op x` with c an integer literal of x's type, as the range it gives x where it holds
/// (`negated`: where it does not); none for any other condition.
std::optional<std::pair<ExprPtr, Range>> compared(const ExprPtr& cond, bool negated) {
  const auto* b = as<Binary>(*cond);
  if (!b || !b->a || !b->b || !is_integer(b->a->type) || b->a->type != b->b->type) return std::nullopt;
  BinOp op = b->op;
  ExprPtr x = b->a, k = b->b;
  if (as<Literal>(*x)) {  // c op x: x op' c
    std::swap(x, k);
    switch (op) {
      case BinOp::Lt: op = BinOp::Gt; break;
      case BinOp::Le: op = BinOp::Ge; break;
      case BinOp::Gt: op = BinOp::Lt; break;
      case BinOp::Ge: op = BinOp::Le; break;
      default: break;
    }
  }
  const auto* lit = as<Literal>(*k);
  const Range all = Range::of(x->type);
  if (!lit || !all.contains(lit->i)) return std::nullopt;
  const __int128 c = lit->i;
  if (negated) {
    switch (op) {
      case BinOp::Lt: op = BinOp::Ge; break;
      case BinOp::Le: op = BinOp::Gt; break;
      case BinOp::Gt: op = BinOp::Le; break;
      case BinOp::Ge: op = BinOp::Lt; break;
      case BinOp::Ne: op = BinOp::Eq; break;
      default: return std::nullopt;
    }
  }
  Range r = all;
  switch (op) {
    case BinOp::Lt: r.hi = c - 1; break;
    case BinOp::Le: r.hi = c; break;
    case BinOp::Gt: r.lo = c + 1; break;
    case BinOp::Ge: r.lo = c; break;
    case BinOp::Eq: r = Range::point(c); break;
    default: return std::nullopt;
  }
  return std::pair{x, r};
}

/// `cur` met with `r`, if that is narrower and not empty.
bool tighten(Range& cur, const Range& r) {
  const Range t{std::max(cur.lo, r.lo), std::min(cur.hi, r.hi)};
  if (t.lo > t.hi || (t.lo == cur.lo && t.hi == cur.hi)) return false;
  cur = t;
  return true;
}
}  // namespace

auto Prover::narrow(const ExprPtr& cond, bool negated) -> Narrowed {
  Narrowed n;
  std::vector<std::pair<ExprPtr, Range>> found;
  std::function<void(const ExprPtr&)> conjuncts = [&](const ExprPtr& e) {
    if (!e) return;
    if (const auto* b = as<Binary>(*e); b && b->op == BinOp::LAnd && !negated) {
      conjuncts(b->a);
      conjuncts(b->b);
    } else if (auto f = compared(e, negated)) {
      found.push_back(*f);
    }
  };
  conjuncts(cond);
  std::unordered_set<const VarNode*> changed;
  bool thread = false, block = false;
  auto narrow_var = [&](const VarNode* v, const Range& r) {
    auto it = env_.vars.find(v);
    const std::optional<Range> old = it == env_.vars.end() ? std::nullopt : std::optional<Range>(it->second);
    Range cur = old.value_or(Range::of(v->type));
    if (!tighten(cur, r)) return;
    if (!changed.count(v)) n.vars.emplace_back(v, old);
    env_.vars[v] = cur;
    changed.insert(v);
  };
  for (const auto& [x, r] : found) {
    if (const auto* bi = as<Builtin>(*x); bi && bi->which != BuiltinKind::BlocksInGrid) {
      const bool is_thread = bi->which == BuiltinKind::ThreadInBlock;
      std::optional<Range>& slot = is_thread ? env_.thread_index : env_.block_index;
      Range cur = slot.value_or(Range::of(x->type));
      if (!tighten(cur, r)) continue;
      auto& saved = is_thread ? n.thread : n.block;
      if (!saved) saved = slot;
      slot = cur;
      (is_thread ? thread : block) = true;
    } else if (const auto* v = as<VarRef>(*x); v && is_integer(v->var->type) && !reassigned_.count(v->var.get())) {
      narrow_var(v->var.get(), r);
    }
  }
  if (changed.empty() && !thread && !block) return n;
  // The lets computed from what changed, in the order defined (a let may read an earlier one).
  std::function<bool(const ExprPtr&)> reads = [&](const ExprPtr& e) {
    if (!e) return false;
    if (const auto* r = as<VarRef>(*e)) return changed.count(r->var.get()) > 0;
    if (const auto* b = as<Builtin>(*e))
      return (thread && b->which == BuiltinKind::ThreadInBlock) || (block && b->which == BuiltinKind::BlockInGrid);
    bool found = false;
    for_each_child(
        *e, [&](const ExprPtr& c) { found = found || reads(c); }, [](const StmtPtr&) {});
    return found;
  };
  for (const VarNode* v : def_order_) {
    if (reads(defs_.at(v))) narrow_var(v, value_range(defs_.at(v), env_));
  }
  forget();
  return n;
}

void Prover::restore(const Narrowed& n) {
  if (n.vars.empty() && !n.thread && !n.block) return;
  for (const auto& [v, old] : n.vars) {
    if (old)
      env_.vars[v] = *old;
    else
      env_.vars.erase(v);
  }
  if (n.thread) env_.thread_index = *n.thread;
  if (n.block) env_.block_index = *n.block;
  forget();
}

auto Prover::quotients(const ExprPtr& e, bool exact_part) const -> ExprPtr {
  if (!e || !(is_integer(e->type) || e->type == ScalarType::Bool)) return e;
  const bool exact_op = exact_part && is_exact_index_op(*e);
  ExprPtr r = e;
  if (const auto* u = as<Unary>(*e)) {
    ExprPtr a = quotients(u->a, exact_op);
    if (a != u->a) r = fold(make<Unary>(u->type, u->op, a, u->loc));
  } else if (const auto* c = as<Cast>(*e)) {
    ExprPtr a = quotients(c->a, false);
    if (a != c->a) r = fold(make<Cast>(c->type, a, c->loc));
  } else if (const auto* b = as<Binary>(*e)) {
    ExprPtr x = quotients(b->a, exact_op), y = quotients(b->b, exact_op);
    if (x != b->a || y != b->b) r = fold(make<Binary>(b->type, b->op, x, y, b->loc));
  }
  const auto* n = as<Binary>(*r);
  if (!n || (n->op != BinOp::Div && n->op != BinOp::Mod) || !as<Literal>(*n->b)) return r;
  const auto c = const_int(n->b);
  // Outside the index's exact part the operation is computed at its type: it must not wrap there,
  // nor may what replaces it.
  if (!c || *c < 2 || (!exact_op && !exact(r))) return r;
  const auto parts = divided(n->a, *c);
  if (!parts) return r;
  const ExprPtr& out = n->op == BinOp::Div ? parts->first : parts->second;
  return exact_op || exact(out) ? out : r;
}

auto Prover::divided(const ExprPtr& s, std::int64_t c) const -> std::optional<std::pair<ExprPtr, ExprPtr>> {
  // s = c * q + r as exact sums: r takes the terms whose coefficient c does not divide and the
  // constant's remainder, q the rest, divided by c.
  constexpr std::int64_t kBig = std::int64_t{1} << 40;
  const Affine a = affine(s, true);
  if (a.constant >= kBig || a.constant <= -kBig) return std::nullopt;
  const SourceLoc l = s->loc;
  const ScalarType t = s->type;
  auto plus = [&](ExprPtr sum, const ExprPtr& atom, std::int64_t k) -> ExprPtr {
    if (k == 0) return sum;
    ExprPtr term = k == 1 || k == -1 ? atom : make<Binary>(t, BinOp::Mul, atom, int_literal(t, k < 0 ? -k : k, l), l);
    if (!sum) return k < 0 ? make<Unary>(t, UnOp::Neg, term, l) : term;
    return make<Binary>(t, k < 0 ? BinOp::Sub : BinOp::Add, sum, term, l);
  };
  const std::int64_t r0 = (a.constant % c + c) % c, q0 = (a.constant - r0) / c;
  ExprPtr q, r;
  for (const auto& [atom, k] : a.terms) {
    if (k >= kBig || k <= -kBig || atom->type != t) return std::nullopt;
    if (k % c == 0)
      q = plus(q, atom, k / c);
    else
      r = plus(r, atom, k);
  }
  auto with_constant = [&](const ExprPtr& sum, std::int64_t k) {
    if (!sum) return int_literal(t, k, l);
    return k == 0 ? sum : make<Binary>(t, k < 0 ? BinOp::Sub : BinOp::Add, sum, int_literal(t, k < 0 ? -k : k, l), l);
  };
  // s / c is q and s % c is r where s >= 0 and 0 <= r < c (an index's division truncates); where r's
  // range is inside [m * c, (m + 1) * c), they are q + m and r - m * c (`t / 128` is 1 for t in
  // [128, 256)).
  const auto whole = exact_value_range(s, env_);
  if (!whole || !proven_nonnegative(s, *whole)) return std::nullopt;
  const ExprPtr rest = with_constant(r, r0);
  const auto range = exact_value_range(rest, env_);
  if (!range) return std::nullopt;
  const __int128 m = range->lo >= 0 ? range->lo / c : -((-range->lo + c - 1) / c);
  if (range->hi < (m + 1) * c && m > -kBig && m < kBig) {
    const auto mm = static_cast<std::int64_t>(m);
    return std::pair{fold(with_constant(q, q0 + mm)), fold(with_constant(r, r0 - mm * c))};
  }
  // Else by the conditions the code is under: `if (i < 64)`, `(j * 128 + i) % 128` is i.
  if (!proven_nonnegative(rest, *range) || !proven_below(rest, int_literal(t, c, l))) return std::nullopt;
  return std::pair{fold(with_constant(q, q0)), fold(rest)};
}

}  // namespace vantage::lower::detail
