// How values move between the executions the cost analysis counts from one: the rules of Motion's
// arithmetic (sums, scales, divisions, casts, choices) and the spans the representatives give. See
// analyzer.h.
#include "jit/cost/analyzer.h"

namespace vantage::cost::detail {

auto Motions::span(const Motion& m) const -> Span {
  Span s;
  if (m.kind == Motion::Erratic) s.bounded = false;
  if (m.kind != Motion::Moving) return s;
  for (std::size_t f = 0; f < reps.size(); ++f) {
    const __int128 a = static_cast<__int128>(m.slope[f]) * reps[f].lo,
                   b = static_cast<__int128>(m.slope[f]) * reps[f].hi;
    s.lo += std::min(a, b);
    s.hi += std::max(a, b);
  }
  if (m.rigid) {
    s.bounded = m.bounded;
    s.lo += m.lo;
    s.hi += m.hi;
  }
  return s;
}

auto Motions::moves_by(const Motion& m, std::int64_t p) -> bool {
  if (m.kind != Motion::Moving) return m.kind == Motion::Still && p > 0;
  for (const auto x : m.slope)
    if (x % p) return false;
  return !m.rigid || m.grain % p == 0;
}

auto Motions::grain(const Motion& m) -> std::int64_t {
  std::int64_t g = m.rigid ? m.grain : 0;
  for (const auto x : m.slope) g = std::gcd(g, x < 0 ? -x : x);
  return g ? g : 1;
}

auto Motions::settle(Motion m) -> Motion {
  if (m.kind != Motion::Moving || m.rigid) return m;
  for (const auto x : m.slope)
    if (x) return m;
  return Motion{};
}

auto Motions::same(const Motion& a, const Motion& b) -> bool {
  if (a.kind != b.kind) return false;
  if (a.kind != Motion::Moving) return a.kind == Motion::Still;
  return a.slope == b.slope && a.rigid == b.rigid && (!a.rigid || a.id == b.id);
}

auto Motions::sum(const Motion& a, const Motion& b, int sign) -> Motion {
  if (a.kind == Motion::Erratic || b.kind == Motion::Erratic) return erratic();
  if (b.kind == Motion::Still) return a;
  if (a.kind == Motion::Still && sign > 0) return b;
  Motion m;
  m.kind = Motion::Moving;
  for (std::size_t f = 0; f < kFrames; ++f)
    if (__builtin_mul_overflow(b.slope[f], sign, &m.slope[f]) ||
        __builtin_add_overflow(a.slope[f], m.slope[f], &m.slope[f]))
      return erratic();
  if (a.rigid && b.rigid) {
    if (!(sign < 0 && a.id == b.id)) {  // the same D taken from itself leaves none
      const Span sa{a.lo, a.hi, a.bounded}, sb{b.lo, b.hi, b.bounded};
      m = rigid(std::gcd(a.grain, b.grain),
                Span{sign > 0 ? sa.lo + sb.lo : sa.lo - sb.hi, sign > 0 ? sa.hi + sb.hi : sa.hi - sb.lo,
                     sa.bounded && sb.bounded},
                m);
    }
  } else if (a.rigid) {
    m.rigid = true, m.bounded = a.bounded, m.id = a.id, m.grain = a.grain, m.lo = a.lo, m.hi = a.hi;
  } else if (b.rigid) {
    if (sign > 0)
      m.rigid = true, m.bounded = b.bounded, m.id = b.id, m.grain = b.grain, m.lo = b.lo, m.hi = b.hi;
    else
      m = rigid(b.grain, Span{-static_cast<__int128>(b.hi), -static_cast<__int128>(b.lo), b.bounded}, m);
  }
  return settle(m);
}

auto Motions::scale(const Motion& a, std::int64_t c) -> Motion {
  if (a.kind == Motion::Still || c == 0) return Motion{};
  if (c == 1 || a.kind == Motion::Erratic) return a;
  Motion m = a;
  for (auto& x : m.slope)
    if (__builtin_mul_overflow(x, c, &x)) return erratic();
  if (!a.rigid) return m;
  std::int64_t g = 0;
  if (__builtin_mul_overflow(a.grain, c < 0 ? -c : c, &g)) g = 1;
  const __int128 x = static_cast<__int128>(a.lo) * c, y = static_cast<__int128>(a.hi) * c;
  return rigid(g, Span{std::min(x, y), std::max(x, y), a.bounded}, m);
}

auto Motions::uniform_always(const Lanes& x, Mask known) -> bool {
  if (x.mo.kind == Motion::Erratic) return false;
  if (x.uniform) return true;
  known &= x.known;
  if (!known) return true;
  const std::int64_t v = x.v[static_cast<std::size_t>(std::countr_zero(known))];
  bool same = true;
  each(known, [&](int i) { same = same && x.v[i] == v; });
  return same;
}

auto Motions::constant(const Lanes& x, Mask known) -> std::optional<std::int64_t> {
  if (x.mo.kind != Motion::Still || !(known & x.known)) return std::nullopt;
  if (!uniform_always(x, known)) return std::nullopt;
  return x.v[static_cast<std::size_t>(std::countr_zero(known & x.known))];
}

auto Motions::stays_in(ScalarType t, const Lanes& r, Mask known, const Motion& m) const -> bool {
  if (m.kind == Motion::Still) return true;
  const Span s = span(m);
  if (!s.bounded || !known) return s.bounded;
  const auto [lo, hi] = extremes(t, r, known);
  return lo + s.lo >= Range::of(t).lo && hi + s.hi <= Range::of(t).hi;
}

auto Motions::extremes(ScalarType t, const Lanes& x, Mask known) -> std::pair<__int128, __int128> {
  if (t == ScalarType::U64) {
    __int128 lo = ir::exact(t, x.v[static_cast<std::size_t>(std::countr_zero(known))]), hi = lo;
    each(known, [&](int i) {
      const __int128 v = ir::exact(t, x.v[i]);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    });
    return {lo, hi};
  }
  // Every other type is held as its exact value (u32 zero-extended).
  std::int64_t lo = x.v[static_cast<std::size_t>(std::countr_zero(known))], hi = lo;
  if (known == kAll) {
    for (const auto v : x.v) lo = std::min(lo, v), hi = std::max(hi, v);
  } else {
    each(known, [&](int i) { lo = std::min(lo, x.v[i]), hi = std::max(hi, x.v[i]); });
  }
  return {lo, hi};
}

auto Motions::one_sign(ScalarType t, const Lanes& x, Mask known, const Motion& m) const -> bool {
  const Span s = span(m);
  if (!s.bounded) return false;
  bool ok = true;
  each(known, [&](int i) {
    const __int128 v = ir::exact(t, x.v[i]);
    ok = ok && (v + s.lo >= 0 || v + s.hi <= 0);
  });
  return ok;
}

auto Motions::divided(const Lanes& a, ScalarType t, Mask known, __int128 c, bool quotient, bool floor) -> Motion {
  const Motion& m = a.mo;
  if (m.kind == Motion::Erratic || !(known & a.known)) return erratic();
  known &= a.known;
  const Span s = span(m);
  __int128 xm = 0, xM = 0;
  bool first = true;
  each(known, [&](int i) {
    const __int128 x = ir::exact(t, a.v[i]);
    xm = first ? x : std::min(xm, x);
    xM = first ? x : std::max(xM, x);
    first = false;
  });
  if (moves_by(m, static_cast<std::int64_t>(c)) && (floor || one_sign(t, a, known, m))) {
    if (!quotient) return Motion{};
    Motion r = m;
    for (auto& x : r.slope) x = static_cast<std::int64_t>(x / c);
    if (!m.rigid) return r;
    return rigid(static_cast<std::int64_t>(m.grain / c), Span{m.lo / c, m.hi / c, m.bounded}, r);
  }
  // Rounding toward zero is rounding down for values that never go below 0.
  if (!floor && !(s.bounded && xm + s.lo >= 0)) return uniform_always(a, known) ? loose() : erratic();
  auto fdiv = [](__int128 x, __int128 d) { return x >= 0 ? x / d : -((-x + d - 1) / d); };
  auto fmod = [&](__int128 x, __int128 d) { return x - fdiv(x, d) * d; };
  const __int128 g = gcd128(grain(m), c);
  if (fdiv(xm, g) != fdiv(xM, g)) return erratic();
  if (!s.bounded) return loose();
  const __int128 q = fdiv(xm, c), qlo = fdiv(xm + s.lo, c), qhi = fdiv(xm + s.hi, c);
  if (quotient) return rigid(1, Span{qlo - q, qhi - q, true});
  if (qlo == qhi) return m;  // one quotient throughout: the remainder moves with x
  return rigid(static_cast<std::int64_t>(g), Span{fmod(xm, g) - fmod(xm, c), c - g + fmod(xm, g) - fmod(xm, c), true});
}

auto Motions::binary_motion(BinOp op, ScalarType t, ScalarType bt, const Lanes& a, const Lanes& b, const Lanes& r)
    -> Motion {
  // Operands the same in every lane (r is then too) are checked in one lane.
  const Mask known = r.uniform ? Mask{1} : r.known;
  if (!known) return Motion{};
  auto fallback = [&] { return uniform_always(a, known) && uniform_always(b, known) ? loose() : erratic(); };
  // The result equals the exact operation in every lane (nothing wrapped here), and stays in t.
  auto exact_here = [&](auto&& f) {
    bool ok = true;
    if (t == ScalarType::I32 || t == ScalarType::U32) {  // exact in 64 bits
      each(known, [&](int i) { ok = ok && f(a.v[i], b.v[i]) == r.v[i]; });
      return ok;
    }
    each(known, [&](int i) { ok = ok && f(ir::exact(t, a.v[i]), ir::exact(t, b.v[i])) == ir::exact(t, r.v[i]); });
    return ok;
  };
  auto held = [&](const Motion& m, auto&& f) {
    return m.kind != Motion::Erratic && exact_here(f) && stays_in(t, r, known, m) ? m : fallback();
  };
  const auto ca = constant(a, known), cb = constant(b, known);
  switch (op) {
    case BinOp::Add: return held(sum(a.mo, b.mo, 1), [](__int128 x, __int128 y) { return x + y; });
    case BinOp::Sub: return held(sum(a.mo, b.mo, -1), [](__int128 x, __int128 y) { return x - y; });
    case BinOp::Mul:
      if (cb && ir::exact(t, *cb) <= INT64_MAX)
        return held(scale(a.mo, static_cast<std::int64_t>(ir::exact(t, *cb))),
                    [](__int128 x, __int128 y) { return x * y; });
      if (ca && ir::exact(t, *ca) <= INT64_MAX)
        return held(scale(b.mo, static_cast<std::int64_t>(ir::exact(t, *ca))),
                    [](__int128 x, __int128 y) { return x * y; });
      return fallback();
    case BinOp::Shl: {
      const std::int64_t s = cb ? shift_amount(bt, *cb) : -1;
      if (s < 0 || s >= 62) return fallback();
      return held(scale(a.mo, std::int64_t{1} << s),
                  [s](__int128 x, __int128) { return x * (static_cast<__int128>(1) << s); });
    }
    case BinOp::Div:
    case BinOp::Mod: {
      const __int128 c = cb ? ir::exact(t, *cb) : 0;
      if (c <= 0 || c > INT64_MAX) return fallback();
      return divided(a, t, known, c, op == BinOp::Div, false);
    }
    case BinOp::Shr: {
      const std::int64_t s = cb ? shift_amount(bt, *cb) : -1;
      if (s < 0 || s >= 62) return fallback();
      return divided(a, t, known, static_cast<__int128>(1) << s, true, true);
    }
    case BinOp::And: {  // the low bits below a mask stay when the moves are multiples above it
      const auto mask = cb ? cb : ca;
      const Lanes& other = cb ? a : b;
      if (!mask || *mask < 0 || *mask >= (std::int64_t{1} << 60)) return fallback();
      const auto above = static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(*mask) + 1));
      if (moves_by(other.mo, above)) return Motion{};
      if (above == *mask + 1) return divided(other, t, known, above, false, true);  // x & (2^k - 1): x mod 2^k
      return fallback();
    }
    case BinOp::Lt:
    case BinOp::Le:
    case BinOp::Gt:
    case BinOp::Ge:
    case BinOp::Eq:
    case BinOp::Ne:
    case BinOp::Min:
    case BinOp::Max: {
      // Decided in every lane over every execution when a - b keeps its side of 0 (or stays 0).
      const Motion d = sum(a.mo, b.mo, -1);
      const Span s = span(d);
      Mask a_side = 0;  // Min/Max: the lanes that take a
      bool decided = s.bounded;
      if (decided)
        each(known, [&](int i) {
          const __int128 x = ir::exact(t, a.v[i]) - ir::exact(t, b.v[i]), lo = x + s.lo, hi = x + s.hi;
          const bool lt = (hi < 0), ge = (lo >= 0), le = (hi <= 0), gt = (lo > 0), eq = (lo == 0 && hi == 0);
          switch (op) {
            case BinOp::Lt:
            case BinOp::Ge: decided = decided && (lt || ge); break;
            case BinOp::Le:
            case BinOp::Gt: decided = decided && (le || gt); break;
            case BinOp::Eq:
            case BinOp::Ne: decided = decided && (eq || lt || gt); break;
            case BinOp::Min:
              decided = decided && (le || ge);
              if (le) a_side |= Mask{1} << i;
              break;
            default:
              decided = decided && (le || ge);
              if (ge) a_side |= Mask{1} << i;
              break;
          }
        });
      if (op != BinOp::Min && op != BinOp::Max) return decided ? Motion{} : fallback();
      if (decided) {
        if (a_side == known) return a.mo;
        if (!a_side) return b.mo;
        if (same(a.mo, b.mo)) return a.mo;
      }
      if (!uniform_always(a, known) || !uniform_always(b, known)) return erratic();
      const Span sa = span(a.mo), sb = span(b.mo);
      if (!sa.bounded || !sb.bounded) return loose();
      const std::size_t i = static_cast<std::size_t>(std::countr_zero(known));
      const __int128 va = ir::exact(t, a.v[i]), vb = ir::exact(t, b.v[i]), vr = ir::exact(t, r.v[i]);
      auto pick = [&](__int128 x, __int128 y) { return op == BinOp::Min ? std::min(x, y) : std::max(x, y); };
      return rigid(1, Span{pick(va + sa.lo, vb + sb.lo) - vr, pick(va + sa.hi, vb + sb.hi) - vr, true});
    }
    case BinOp::LAnd:
    case BinOp::LOr: {
      const std::int64_t decides = op == BinOp::LAnd ? 0 : 1;
      for (const Lanes* x : {&a, &b}) {
        if (x->mo.kind != Motion::Still) continue;
        bool all = (known & ~x->known) == 0;
        each(known & x->known, [&](int i) { all = all && (x->v[i] != 0) == (decides != 0); });
        if (all) return Motion{};
      }
      return fallback();
    }
    default: return fallback();
  }
}

auto Motions::cast_motion(ScalarType from, ScalarType to, const Lanes& a, const Lanes& r) -> Motion {
  if (to == ScalarType::Bool) {  // x != 0
    const Span s = span(a.mo);
    bool decided = s.bounded;
    each(r.known, [&](int i) {
      const __int128 x = ir::exact(from, a.v[i]);
      decided = decided && (x + s.hi < 0 || x + s.lo > 0 || (x == 0 && s.lo == 0 && s.hi == 0));
    });
    return decided ? Motion{} : uniform_always(a, r.known) ? loose() : erratic();
  }
  // The exact value kept (a widening, or a narrowing of values that fit) keeps the motion.
  bool kept = stays_in(to, r, r.known, a.mo);
  each(r.known, [&](int i) { kept = kept && ir::exact(from, a.v[i]) == ir::exact(to, r.v[i]); });
  return kept ? a.mo : uniform_always(a, r.known) ? loose() : erratic();
}

auto Motions::chosen(const Lanes& a, const Lanes& b, Mask pick_a, Mask known) -> Motion {
  if ((pick_a & known) == known) return a.mo;
  if (!(pick_a & known)) return b.mo;
  return same(a.mo, b.mo) ? a.mo : erratic();
}

auto Motions::frame_slope(std::size_t f, __int128 step) -> Motion {
  if (step > INT64_MAX || step < INT64_MIN) return erratic();
  Motion m;
  m.kind = Motion::Moving;
  m.slope[f] = static_cast<std::int64_t>(step);
  return settle(m);
}

}  // namespace vantage::cost::detail
