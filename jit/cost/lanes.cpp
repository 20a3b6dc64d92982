// Vantage cost analysis: expressions evaluated over a warp's lanes, with how each value moves. See analyzer.h.
#include "jit/cost/analyzer.h"

namespace vantage::cost::detail {

auto SeenLanes::slot(const ExprNode& e, Mask m) const -> std::size_t {
  std::size_t at = static_cast<std::size_t>(e.hash * 31 + m) & (kSlots - 1);
  for (;; at = (at + 1) & (kSlots - 1)) {
    const Slot& s = slots_[at];
    if (s.gen != gen_ || (s.m == m && same_expression(*s.e, e))) return at;
  }
}

auto SeenLanes::find(const ExprNode& e, Mask m) const -> const Lanes* {
  const Slot& s = slots_[slot(e, m)];
  return s.gen == gen_ ? &lanes_[s.lanes] : nullptr;
}

void SeenLanes::keep(const ExprNode& e, Mask m, const Lanes& r) {
  if (lanes_.size() >= kSlots / 2) return;
  slots_[slot(e, m)] = {&e, m, gen_, static_cast<std::uint32_t>(lanes_.size())};
  lanes_.push_back(r);
}

void SeenLanes::forget() {
  if (lanes_.empty()) return;
  lanes_.clear();
  if (++gen_ == 0) {  // (after 2^32 forgettings: every slot's generation is stale again)
    for (auto& s : slots_) s.gen = 0;
    gen_ = 1;
  }
}

auto Analyzer::eval(const ExprPtr& e, Mask m, Lanes& out) -> const Lanes& {
  if (!e) return unknown(out);
  if (!SeenLanes::memoized(*e)) return dispatch(*e, [&](const auto& n) -> const Lanes& { return ev(n, m, out); });
  // The same operation on the same values again (an unrolled tile's guards and indices repeat
  // their row and column): found by its structure, the lanes are as computed before.
  if (const Lanes* seen = seen_.find(*e, m)) return out = *seen;
  const std::uint64_t effects = effects_;
  const Lanes& r = dispatch(*e, [&](const auto& n) -> const Lanes& { return ev(n, m, out); });
  if (effects_ == effects) seen_.keep(*e, m, r);
  return r;
}

auto Analyzer::eval(const ExprPtr& e, Mask m) -> Lanes {
  Lanes out;
  const Lanes& r = eval(e, m, out);
  if (&r != &out) out = r;
  return out;
}

auto unknown(Lanes& out) -> const Lanes& {
  out.known = 0;
  out.uniform = false;
  out.mo = Motion{};
  return out;
}

auto Analyzer::ev(const Unary& n, Mask m, Lanes& out) -> const Lanes& {
  const Lanes& a = eval(n.a, m, out);
  if (!is_integral(n.type)) return unknown(out);
  // `a` may be `out`: its motion and values are read before they are written.
  Motion mo;
  if (a.mo.kind != Motion::Still) {
    if (n.op == UnOp::BitNot) {
      mo = mo_.scale(a.mo, -1);  // ~x is -x - 1 exactly, and never leaves the type
    } else if (n.op == UnOp::Neg) {
      mo = mo_.scale(a.mo, -1);
      bool ok = mo.kind != Motion::Erratic;
      each(m & a.known, [&](int i) { ok = ok && -ir::exact(n.type, a.v[i]) >= Range::of(n.type).lo; });
      Lanes r;
      r.known = m & a.known;
      each(r.known, [&](int i) { r.v[i] = eval_unary(n.op, n.type, a.v[i]); });
      if (!ok || !mo_.stays_in(n.type, r, r.known, mo)) mo = mo_.uniform_always(a, m) ? mo_.loose() : erratic();
    } else {
      mo = mo_.uniform_always(a, m) ? mo_.loose() : erratic();
    }
  }
  if (a.uniform) return all(out, eval_unary(n.op, n.type, a.v[0]), mo);
  const Mask known = m & a.known;
  each(known, [&](int i) { out.v[i] = eval_unary(n.op, n.type, a.v[i]); });
  out.known = known;
  out.uniform = false;
  out.mo = mo;
  return out;
}

auto Analyzer::ev(const Binary& n, Mask m, Lanes& out) -> const Lanes& {
  Lanes ta, tb;
  const Lanes &a = eval(n.a, m, ta), &b = eval(n.b, m, tb);
  const ScalarType t = n.a->type;
  if (!is_integral(t)) {
    if (is_float(n.type) && (n.op == BinOp::Add || n.op == BinOp::Sub || n.op == BinOp::Mul || n.op == BinOp::Div)) {
      flops_ += std::popcount(m) * weight_;
      ++effects_;
    }
    return unknown(out);
  }
  const bool shift = n.op == BinOp::Shl || n.op == BinOp::Shr;
  auto one = [&](std::int64_t x, std::int64_t y) {
    return binary_op(n.op, t, x, shift ? shift_amount(n.b->type, y) : y);
  };
  const bool still = a.mo.kind == Motion::Still && b.mo.kind == Motion::Still;
  if (a.uniform && b.uniform) {
    all(out, one(a.v[0], b.v[0]));
    if (!still) out.mo = mo_.binary_motion(n.op, t, n.b->type, a, b, out);
    return out;
  }
  out.known = m & a.known & b.known;
  out.uniform = false;
  if (!(out.known == kAll && lanewise(n.op, t, a, b, out))) {
    each(out.known, [&](int i) { out.v[i] = one(a.v[i], b.v[i]); });
    // A known false (or true) decides && (||) whatever the other side is.
    if (n.op == BinOp::LAnd || n.op == BinOp::LOr) {
      const std::int64_t decides = n.op == BinOp::LAnd ? 0 : 1;
      each(m & ~out.known, [&](int i) {
        if (((a.known >> i) & 1 && a.v[i] == decides) || ((b.known >> i) & 1 && b.v[i] == decides)) {
          out.v[i] = decides;
          out.known |= Mask{1} << i;
        }
      });
    }
  }
  out.mo = still ? Motion{} : mo_.binary_motion(n.op, t, n.b->type, a, b, out);
  return out;
}

auto Analyzer::ev(const Cast& n, Mask m, Lanes& out) -> const Lanes& {
  const Lanes& a = eval(n.a, m, out);
  if (!is_integral(n.type) || !is_integral(n.a->type)) return unknown(out);
  if (a.mo.kind == Motion::Still) {  // `a` may be `out`: each lane is read before it is written
    if (a.uniform) return all(out, eval_cast(n.a->type, n.type, a.v[0]));
    const Mask known = m & a.known;
    if (keeps_values(n.a->type, n.type)) {
      if (&a != &out) out.v = a.v;
    } else {
      each(known, [&](int i) { out.v[i] = eval_cast(n.a->type, n.type, a.v[i]); });
    }
    out.known = known;
    out.uniform = false;
    out.mo = Motion{};
    return out;
  }
  Lanes r;
  r.known = a.uniform ? kAll : m & a.known;
  each(r.known, [&](int i) { r.v[i] = eval_cast(n.a->type, n.type, a.v[i]); });
  r.mo = mo_.cast_motion(n.a->type, n.type, a, r);
  r.uniform = a.uniform;
  out = r;  // `a` may be `out`: read above
  return out;
}

auto Analyzer::ev(const Select& n, Mask m, Lanes& out) -> const Lanes& {
  Lanes tc, ta, tb;
  const Lanes &c = eval(n.c, m, tc), &a = eval(n.a, m, ta), &b = eval(n.b, m, tb);
  out.known = 0;
  out.uniform = false;
  Mask pick_a = 0;
  each(m & c.known, [&](int i) {
    const Lanes& pick = c.v[i] ? a : b;
    if (c.v[i]) pick_a |= Mask{1} << i;
    if ((pick.known >> i) & 1) {
      out.v[i] = pick.v[i];
      out.known |= Mask{1} << i;
    }
  });
  if (c.mo.kind == Motion::Still)
    out.mo = mo_.chosen(a, b, pick_a, out.known);
  else
    out.mo = mo_.uniform_always(c, m) && mo_.uniform_always(a, m) && mo_.uniform_always(b, m) ? mo_.loose() : erratic();
  return out;
}

auto Analyzer::ev(const MathCall& n, Mask m, Lanes& out) -> const Lanes& {
  if (n.fn == MathFn::Bitcast) {  // bits the analysis does not follow
    for (const auto& a : n.args) eval(a, m, out);
    return unknown(out);
  }
  if (is_integral(n.type) && !is_float_predicate(n.fn) && !n.args.empty()) {  // abs or a bit function
    const Lanes& x = eval(n.args[0], m, out);
    const Mask known = m & x.known;
    const ScalarType xt = n.args[0]->type;
    Motion mo;
    if (x.mo.kind != Motion::Still) {
      // abs of values that keep one sign is the value or its negation; anything else gives up.
      const bool keeps = !is_bit_fn(n.fn) && mo_.one_sign(xt, x, known, x.mo);
      bool negative = false;
      each(known, [&](int i) { negative = negative || ir::exact(xt, x.v[i]) < 0; });
      mo = keeps && (!negative || is_signed(xt)) ? (negative ? mo_.scale(x.mo, -1) : x.mo)
           : mo_.uniform_always(x, m)            ? mo_.loose()
                                                 : erratic();
    }
    each(known, [&](int i) {
      out.v[i] = is_bit_fn(n.fn)                   ? eval_bits(n.fn, xt, x.v[i])
                 : is_signed(n.type) && x.v[i] < 0 ? eval_unary(UnOp::Neg, n.type, x.v[i])
                                                   : x.v[i];
    });
    out.known = known;
    out.uniform = false;
    out.mo = mo;
    if (mo.kind != Motion::Still && mo.kind != Motion::Erratic && !mo_.stays_in(n.type, out, known, mo))
      out.mo = mo_.uniform_always(x, m) ? mo_.loose() : erratic();  // abs(MIN) wraps
    return out;
  }
  for (const auto& a : n.args) eval(a, m, out);
  flops_ += std::popcount(m) * weight_ * (n.fn == MathFn::Fma ? 2 : 1);
  ++effects_;
  return unknown(out);
}

auto Analyzer::ev(const Builtin& n, Mask, Lanes& out) -> const Lanes& {
  switch (n.which) {
    case BuiltinKind::ThreadInBlock: return frames_.back().tid;
    case BuiltinKind::BlockInGrid: return frames_.back().bid;
    case BuiltinKind::BlocksInGrid: return all(out, opt_.blocks);
  }
  return unknown(out);
}

auto Analyzer::ev(const Load& n, Mask m, Lanes& out) -> const Lanes& {
  Lanes ti;
  const Lanes& idx = eval(n.indices[0], m, ti);
  if (n.bound) eval(n.bound, m, out);
  access(&n, n.mem.get(), idx, m, false, type_bytes(n.mem->elem), n.loc);
  return unknown(out);
}

}  // namespace vantage::cost::detail
