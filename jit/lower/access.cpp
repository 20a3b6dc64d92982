// Lowering's accesses: a view's index resolved to its root's, computed at the width its exact value
// needs, and proven inside its buffer (prove.h) or checked as it runs. See body.h.
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
  return {m, idx.empty() ? lit(0, l) : prover_.quotients(fold(idx[0]), true)};
}

auto BodyLowerer::exact_width(const ExprPtr& e) const -> ExprPtr {
  if (!e || !is_integer(e->type) || e->type == ScalarType::I64 || !is_exact_index_op(*e)) return e;
  // Each operation's envelope (its exact value and intermediates), through prover_.env()'s memo: the
  // indices of neighbouring accesses share their subexpressions.
  auto envelope = [&](const ExprPtr& x) -> std::optional<Range> {
    return x && is_exact_index_op(*x) ? exact_index_range(x, prover_.env()) : std::nullopt;
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

void BodyLowerer::slot_in_bounds(const MemPtr& root, const ExprPtr& index, const std::string& view, SourceLoc l) {
  if (proven_in_bounds(root, index, 1, l)) return;
  c_.out.problems.push_back(
      {"V1009",
       "cannot prove the mbarrier slot " + ir::print(index) + " inside '" + view +
           "' at this specialization; index it with a value known to be in range, such as `k % stages`",
       l,
       {}});
}

namespace {
/// What a wgmma tile's K offset may add to its 8-row group's start: nothing for a TMA box (`max_col`
/// 0), else a K step of 32 bytes (`step` elements) of the 128-byte row.
std::string k_steps(std::int64_t max_col, std::int64_t step) {
  if (max_col == 0) return "";
  return ", plus a K step of 0, " + std::to_string(step) + ", " + std::to_string(2 * step) + " or " +
         std::to_string(3 * step) + " elements";
}
}  // namespace

void BodyLowerer::swizzled_tile(const MemPtr& root, const ExprPtr& first, std::int64_t elems, std::int64_t max_col,
                                const std::string& what, const std::string& view, SourceLoc l) {
  auto fail = [&](const std::string& why) {
    c_.out.problems.push_back({"V1009", what + " in '" + view + "' at " + ir::print(first) + ": " + why, l, {}});
  };
  const std::int64_t eb = type_bytes(root->elem), group = 1024 / eb, row = 128 / eb, step = 32 / eb;
  auto al = aligns_.find(root.get());
  if (root->space != MemSpace::Shared || al == aligns_.end() || al->second < 1024)
    return fail("the array must be a shared array aligned to 1024 bytes (`shared_aligned(..., 1024)`)");
  Affine a = affine(first);
  std::int64_t col = ((a.constant % group) + group) % group;
  bool aligned = col <= max_col && col % step == 0;
  for (const auto& [atom, k] : a.terms) aligned = aligned && k % group == 0;
  if (!aligned || (max_col == 0 && col != 0))
    return fail("its 8-row group must start a multiple of 1024 bytes into the array" + k_steps(max_col, step));
  ExprPtr start = fold(make<Binary>(first->type, BinOp::Sub, first, int_literal(first->type, col, l), l));
  if (!proven_in_bounds(root, start, elems, l))
    fail("cannot prove its " + std::to_string(elems) + " elements (" + std::to_string(elems / row) +
         " rows of 128 bytes) inside the array at this specialization");
}

auto BodyLowerer::proven_in_bounds(const MemPtr& root, const ExprPtr& first, std::int64_t count, SourceLoc l) const
    -> bool {
  ExprPtr ext = extent_of(root, l);
  auto r = exact_value_range(first, prover_.env());
  if (!ext || !r || !prover_.proven_nonnegative(first, *r)) return false;
  ExprPtr last =
      count == 1 ? first : make<Binary>(first->type, BinOp::Add, first, int_literal(first->type, count - 1, l), l);
  return prover_.proven_below(last, ext);
}

}  // namespace vantage::lower::detail
