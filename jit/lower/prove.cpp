// Lowering's bounds proofs: an access is proven inside its buffer from the facts in force where it
// is (conditions, requirements, loop bounds, the ranges of variables), by affine forms of its index in
// three readings (normal, exact, products); what is not proven is checked as it runs. See body.h.
#include "jit/lower/body.h"

namespace vantage::lower::detail {

auto BodyLowerer::lx(const ExprPtr& e) -> ExprPtr {
  if (!e) return nullptr;
  ExprLowerer l(*this);
  return l.mutate(e);
}

auto BodyLowerer::resolve(MemPtr m, std::vector<ExprPtr> idx, SourceLoc l) const -> std::pair<MemPtr, ExprPtr> {
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

auto BodyLowerer::exact_width(const ExprPtr& e) const -> ExprPtr {
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

auto BodyLowerer::unit_stride(const MemNode* m) const -> bool {
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

auto BodyLowerer::extent_of(const MemPtr& root, SourceLoc l) const -> ExprPtr {
  if (auto it = c_.extents.find(root.get()); it != c_.extents.end()) return it->second;
  if (auto it = counts_.find(root.get()); it != counts_.end()) return lit(it->second, l);
  return nullptr;
}

auto BodyLowerer::bound_of(const MemPtr& root, SourceLoc l) const -> ExprPtr {
  ExprPtr e = extent_of(root, l);
  if (!e) {
    auto it = c_.lengths.find(root.get());
    if (it == c_.lengths.end()) return nullptr;
    return ref(it->second, l);
  }
  return e->type == ScalarType::I64 ? e : fold(make<Cast>(ScalarType::I64, e, l));
}

auto BodyLowerer::check(const MemPtr& root, const ExprPtr& index, bool write, SourceLoc l) const
    -> std::pair<ExprPtr, std::int64_t> {
  if (proven_in_bounds(root, index, 1, l)) return {nullptr, -1};
  ExprPtr b = bound_of(root, l);
  if (!b) throw InternalError("lower: no bound for memory '" + root->name + "'");
  c_.out.checks.push_back({l, root->name, write});
  return {b, static_cast<std::int64_t>(c_.out.checks.size()) - 1};
}

auto BodyLowerer::normal(const ExprPtr& e, bool trusted, int depth) const -> ExprPtr {
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

auto BodyLowerer::exact(const ExprPtr& e) const -> bool {
  auto r = exact_index_range(e, env_);
  return r && r->within(Range::of(e->type));
}

auto BodyLowerer::widening(const Cast& c, bool trusted) const -> bool {
  return is_integer(c.type) && is_integer(c.a->type) && Range::of(c.a->type).within(Range::of(c.type)) &&
         (trusted || exact(c.a));
}

auto BodyLowerer::usable_facts(Form form) const -> const std::vector<Fact>& {
  FactsCache& c = facts_cache_[static_cast<std::size_t>(form)];
  if (c.valid && c.facts == facts_) return c.out;
  c.out = make_usable_facts(form);
  c.facts = facts_;
  c.valid = true;
  return c.out;
}

auto BodyLowerer::make_usable_facts(Form form) const -> std::vector<Fact> {
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

auto BodyLowerer::usable_fact(const ExprPtr& f, Form form) const -> std::optional<Fact> {
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

auto BodyLowerer::in_form(const ExprPtr& x, Form form) const -> Affine {
  switch (form) {
    case Form::Exact: return affine(x, true);
    case Form::Products: return products(x);
    case Form::Normal: break;
  }
  return affine(normal(x));
}

auto BodyLowerer::atom_facts(const Affine& gap, Form form) const -> std::vector<Fact> {
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

auto BodyLowerer::operation(const ExprPtr& atom) const -> const Binary* {
  ExprPtr y = unwidened(atom, false);
  if (const auto* v = as<VarRef>(*y)) {
    auto it = defs_.find(v->var.get());
    if (it == defs_.end()) return nullptr;
    y = unwidened(it->second, false);
  }
  const auto* b = as<Binary>(*y);
  return b && is_integer(b->type) && b->a && b->b ? b : nullptr;
}

auto BodyLowerer::with_atom_facts(std::vector<Fact> facts, const Affine& gap, Form form) const -> std::vector<Fact> {
  std::vector<Fact> more = atom_facts(gap, form);
  facts.insert(facts.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  return facts;
}

auto BodyLowerer::follows(const Affine& gap, Form form, const std::vector<Fact>& facts, int depth) const -> bool {
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

auto BodyLowerer::proven_below(const ExprPtr& x, const ExprPtr& bound) const -> bool {
  auto rx = exact_value_range(x, env_);
  if (auto k = const_int(bound); k && rx && rx->hi < *k) return true;
  Affine gap = affine(normal(bound, true));
  gap.merge(affine(normal(x)), -1);
  return follows(gap, Form::Normal, usable_facts(Form::Normal)) || proven_below_by_a_variable(x, bound);
}

auto BodyLowerer::products(const ExprPtr& e, bool trusted) const -> Affine {
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

auto BodyLowerer::unwidened(const ExprPtr& e, bool trusted) const -> ExprPtr {
  ExprPtr x = e;
  while (const auto* c = as<Cast>(*x)) {
    if (!widening(*c, trusted)) break;
    x = c->a;
  }
  return x;
}

auto BodyLowerer::times(const Affine& a, const ExprPtr& v) -> Affine {
  Affine out;
  if (a.constant != 0) out.add(v, a.constant);
  for (const auto& [atom, k] : a.terms)
    if (k != 0) out.add(product_atom(atom, v), k);
  return out;
}

auto BodyLowerer::product_atom(const ExprPtr& a, const ExprPtr& b) -> ExprPtr {
  const bool swap = a->hash > b->hash;
  return make<Binary>(ScalarType::I64, BinOp::Mul, swap ? b : a, swap ? a : b, SourceLoc{});
}

auto BodyLowerer::proven_below_by_a_variable(const ExprPtr& x, const ExprPtr& bound) const -> bool {
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

auto BodyLowerer::proven_nonnegative(const ExprPtr& x, const Range& r) const -> bool {
  if (r.lo >= 0) return true;
  Affine gap = affine(x, true);
  gap.constant += 1;
  return follows(gap, Form::Exact, usable_facts(Form::Exact)) || nonnegative_by_products(x);
}

auto BodyLowerer::nonnegative_by_products(const ExprPtr& x) const -> bool {
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

auto BodyLowerer::at_least_zero(const ExprPtr& f, const std::vector<Fact>& facts) const -> bool {
  if (auto rf = exact_value_range(f, env_); rf && rf->lo >= 0) return true;
  if (const Binary* b = operation(f); b && exact(b->a) && exact(b->b)) {
    if (b->op == BinOp::Min) return at_least_zero(b->a, facts) && at_least_zero(b->b, facts);
    if (b->op == BinOp::Max) return at_least_zero(b->a, facts) || at_least_zero(b->b, facts);
  }
  Affine g = products(f);
  g.constant += 1;
  return at_least_one(g, facts);
}

auto BodyLowerer::scales(const Affine& rest, const Fact& f) -> std::vector<std::int64_t> {
  std::vector<std::int64_t> out;
  for (const auto& [atom, k] : f.slack.terms) {
    std::int64_t c = rest.coefficient(atom);
    if (k == 0 || c == 0 || c % k != 0 || c / k <= 0) continue;
    if (std::find(out.begin(), out.end(), c / k) == out.end()) out.push_back(c / k);
  }
  return out;
}

auto BodyLowerer::at_least_one(const Affine& gap, const std::vector<Fact>& facts) const -> bool {
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

void BodyLowerer::slot_in_bounds(const MemPtr& root, const ExprPtr& index, const std::string& view, SourceLoc l) {
  if (proven_in_bounds(root, index, 1, l)) return;
  c_.out.problems.push_back(
      {"V1009",
       "cannot prove the mbarrier slot " + ir::print(index) + " inside '" + view +
           "' at this specialization; index it with a value known to be in range, such as `k % stages`",
       l,
       {}});
}

void BodyLowerer::swizzled_tile(const MemPtr& root, const ExprPtr& first, std::int64_t elems, std::int64_t max_col,
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

auto BodyLowerer::proven_in_bounds(const MemPtr& root, const ExprPtr& first, std::int64_t count, SourceLoc l) const
    -> bool {
  ExprPtr ext = extent_of(root, l);
  auto r = exact_value_range(first, env_);
  if (!ext || !r || !proven_nonnegative(first, *r)) return false;
  ExprPtr last =
      count == 1 ? first : make<Binary>(first->type, BinOp::Add, first, int_literal(first->type, count - 1, l), l);
  return proven_below(last, ext);
}

auto BodyLowerer::reads_changing(const ExprPtr& e, const std::unordered_set<const VarNode*>& vars) const -> bool {
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

void BodyLowerer::kill_facts(const std::unordered_set<const VarNode*>& vars) {
  if (vars.empty()) return;
  for (auto& f : facts_)
    if (f && reads_changing(f, vars)) f = nullptr;
}

void BodyLowerer::add_facts(const ExprPtr& cond) {
  if (const auto* b = as<Binary>(*cond); b && b->op == BinOp::LAnd) {
    add_facts(b->a);
    add_facts(b->b);
    return;
  }
  facts_.push_back(cond);
}

}  // namespace vantage::lower::detail
