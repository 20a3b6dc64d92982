// Vantage integer ranges: see range.h.
#include "jit/ir/range.h"

#include <algorithm>

#include "jit/ir/affine.h"
#include "jit/ir/eval.h"
#include "jit/ir/visit.h"

namespace vantage::ir {
namespace {

constexpr __int128 kLimit = static_cast<__int128>(1) << 120;  // saturation bound, far above any type

__int128 clamp(__int128 v) { return v > kLimit ? kLimit : (v < -kLimit ? -kLimit : v); }
Range make(__int128 a, __int128 b) { return {clamp(std::min(a, b)), clamp(std::max(a, b))}; }
Range unknown_big() { return {-kLimit, kLimit}; }

Range add(Range a, Range b) { return make(a.lo + b.lo, a.hi + b.hi); }
Range sub(Range a, Range b) { return make(a.lo - b.hi, a.hi - b.lo); }
Range mul(Range a, Range b) {
  // Saturated operands keep products below 2^127 (2^120 * 2^120 would not): clamp first.
  auto m = [](__int128 x, __int128 y) -> __int128 {
    constexpr __int128 k = static_cast<__int128>(1) << 62;
    if ((x > k || x < -k) && y != 0) return (x > 0) == (y > 0) ? kLimit : -kLimit;
    if ((y > k || y < -k) && x != 0) return (x > 0) == (y > 0) ? kLimit : -kLimit;
    return clamp(x * y);
  };
  __int128 c[] = {m(a.lo, b.lo), m(a.lo, b.hi), m(a.hi, b.lo), m(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}
Range neg(Range a) { return make(-a.hi, -a.lo); }
/// Truncating division by a constant d != 0.
Range div_const(Range a, __int128 d) { return make(a.lo / d, a.hi / d).join(make(a.lo / d, a.lo / d)); }
/// Remainder by a constant d != 0: the sign of the dividend, magnitude below |d|.
Range mod_const(Range a, __int128 d) {
  __int128 m = (d < 0 ? -d : d) - 1;
  Range r{a.lo < 0 ? -m : 0, a.hi > 0 ? m : 0};
  if (a.within(Range{-m, m})) return a;  // already smaller than the divisor
  return r;
}

std::optional<__int128> constant(const ExprPtr& e) {
  auto f = eval_const(e);
  if (!f || !e || !is_integer(e->type)) return std::nullopt;
  return exact(e->type, f->value);
}

Range exact_op(const Binary& n, Range a, Range b, __int128 k) {
  switch (n.op) {
    case BinOp::Add: return add(a, b);
    case BinOp::Sub: return sub(a, b);
    case BinOp::Mul: return mul(a, b);
    case BinOp::Min: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    case BinOp::Max: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    case BinOp::Div: return div_const(a, k);
    case BinOp::Mod: return mod_const(a, k);
    case BinOp::Shl: return mul(a, Range::point(static_cast<__int128>(1) << static_cast<int>(k)));
    default: return unknown_big();
  }
}

Range value_range_impl(const ExprPtr& e, const RangeEnv& env);

/// The most `n.a / n.b` can be for a divisor d = n.b of at least b.lo >= 1 that the dividend adds k
/// times (k >= 0), computed exactly: a = A + k * d is k + A / d <= k + max(A, 0) / b.lo where a >= 0,
/// and at most 0 where a < 0. A grid-stride loop's rounds, `(tiles - bid + blocks - 1) / blocks`,
/// are then at most `tiles`, however large the grid may be.
std::optional<__int128> quotient_at_most(const Binary& n, const Range& b, const RangeEnv& env) {
  const auto whole = exact_index_range(n.a, env);
  if (!whole || !whole->within(Range::of(n.a->type))) return std::nullopt;
  const Affine f = affine(n.a, true);
  __int128 k = 0;
  Range rest = Range::point(f.constant);
  for (const auto& [atom, c] : f.terms) {
    if (equal(atom, n.b)) {
      k += c;
      continue;
    }
    rest = add(rest, mul(value_range_impl(atom, env), Range::point(c)));
  }
  if (k < 0 || rest.hi >= kLimit) return std::nullopt;
  return std::max<__int128>(0, k + std::max<__int128>(rest.hi, 0) / b.lo);
}

}  // namespace

Range Range::of(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return {0, 1};
    case ScalarType::I8: return {INT8_MIN, INT8_MAX};
    case ScalarType::U8: return {0, UINT8_MAX};
    case ScalarType::I16: return {INT16_MIN, INT16_MAX};
    case ScalarType::U16: return {0, UINT16_MAX};
    case ScalarType::I32: return {INT32_MIN, INT32_MAX};
    case ScalarType::U32: return {0, UINT32_MAX};
    case ScalarType::I64: return {INT64_MIN, INT64_MAX};
    case ScalarType::U64: return {0, static_cast<__int128>(UINT64_MAX)};
    default: return unknown_big();
  }
}

bool is_exact_index_op(const ExprNode& e) {
  if (!is_integer(e.type)) return false;
  if (const auto* u = as<Unary>(e)) return u->op == UnOp::Neg && u->a && u->a->type == e.type;
  const auto* b = as<Binary>(e);
  if (!b || !b->a || !b->b || b->a->type != e.type || b->b->type != e.type) return false;
  switch (b->op) {
    case BinOp::Add:
    case BinOp::Sub:
    case BinOp::Mul:
    case BinOp::Min:
    case BinOp::Max: return true;
    case BinOp::Div:
    case BinOp::Mod: {
      auto k = constant(b->b);
      return k && *k != 0;
    }
    case BinOp::Shl: {
      auto k = constant(b->b);
      return k && *k >= 0 && *k <= 62;
    }
    default: return false;
  }
}

Range value_range(const ExprPtr& e, const RangeEnv& env) { return value_range_impl(e, env); }

namespace {
Range value_range_impl(const ExprPtr& e, const RangeEnv& env) {
  if (!e) return unknown_big();
  Range full = Range::of(e->type);
  if (!is_integer(e->type) && e->type != ScalarType::Bool) return full;
  // A constant subtree needs no special case: its operations on point ranges give its value.
  auto fit = [&](Range r) { return r.within(full) ? r : full; };
  return dispatch(
      *e, Overloaded{
              [&](const Literal& n) { return fits(n.type, n.i) ? Range::point(exact(n.type, n.i)) : full; },
              [&](const VarRef& n) {
                auto it = env.vars.find(n.var.get());
                return it == env.vars.end() ? full : fit(it->second);
              },
              [&](const Unary& n) {
                if (n.op == UnOp::Not) return Range{0, 1};
                Range a = value_range(n.a, env);
                if (n.op == UnOp::Neg) return fit(neg(a));
                return fit(make(-a.hi - 1, -a.lo - 1));  // ~x == -x - 1
              },
              [&](const Binary& n) {
                if (n.type == ScalarType::Bool) return Range{0, 1};
                Range a = value_range(n.a, env), b = value_range(n.b, env);
                auto k = constant(n.b);
                switch (n.op) {
                  case BinOp::Add:
                  case BinOp::Sub:
                  case BinOp::Mul:
                  case BinOp::Min:
                  case BinOp::Max: return fit(exact_op(n, a, b, 0));
                  case BinOp::Div:
                  case BinOp::Mod: {
                    if (k && *k != 0) return fit(exact_op(n, a, b, *k));
                    // A divisor known positive (a size the specialization made a constant
                    // through a variable): a non-negative a stays non-negative.
                    if (a.lo >= 0 && b.lo > 0) {
                      if (n.op == BinOp::Mod) return Range{0, std::min(a.hi, b.hi - 1)};
                      const auto hi = quotient_at_most(n, b, env);
                      return Range{a.lo / b.hi, std::max(a.lo / b.hi, std::min(a.hi / b.lo, hi.value_or(a.hi)))};
                    }
                    if (n.op == BinOp::Div && b.lo > 0)
                      if (auto hi = quotient_at_most(n, b, env)) {
                        const __int128 m = std::max(a.hi < 0 ? -a.hi : a.hi, a.lo < 0 ? -a.lo : a.lo);
                        return fit(Range{-m, std::min(m, *hi)});
                      }
                    // |a / b| and |a % b| are at most |a| (x / 0 is -1, or all ones unsigned; x % 0 is x).
                    __int128 m = std::max(a.hi < 0 ? -a.hi : a.hi, a.lo < 0 ? -a.lo : a.lo);
                    if (!is_signed(n.type)) return n.op == BinOp::Mod ? Range{0, m} : full;
                    if (a.contains(full.lo) && b.contains(-1)) return full;  // MIN / -1 wraps
                    Range r{-m, m};
                    return n.op == BinOp::Div ? r.join(Range::point(-1)) : r;
                  }
                  case BinOp::Shl:
                    if (k && *k >= 0 && *k <= 62) return fit(exact_op(n, a, b, *k));
                    return full;
                  case BinOp::Shr:
                    if (k && *k >= 0 && *k < 63 && a.lo >= 0) return Range{a.lo >> *k, a.hi >> *k};
                    return full;
                  case BinOp::And:
                    if (a.lo >= 0 && b.lo >= 0) return Range{0, std::min(a.hi, b.hi)};
                    if (a.lo >= 0) return Range{0, a.hi};
                    if (b.lo >= 0) return Range{0, b.hi};
                    return full;
                  case BinOp::Or:
                  case BinOp::Xor: {
                    // Of non-negative operands: no bit above the larger one's highest (a swizzle's
                    // `chunk ^ row % 8` stays below 8); an or is at least either operand.
                    if (a.lo < 0 || b.lo < 0) return full;
                    __int128 top = 1;
                    while (top <= std::max(a.hi, b.hi)) top <<= 1;
                    return fit(Range{n.op == BinOp::Or ? std::max(a.lo, b.lo) : 0, top - 1});
                  }
                  default: return full;
                }
              },
              [&](const Cast& n) {
                if (!n.a || !(is_integer(n.a->type) || n.a->type == ScalarType::Bool)) return full;
                return fit(value_range(n.a, env));
              },
              [&](const Select& n) { return fit(value_range(n.a, env).join(value_range(n.b, env))); },
              [&](const MathCall& n) {
                if (is_bit_fn(n.fn) && n.fn != MathFn::Brev && !n.args.empty() && n.args[0])
                  return Range{0, type_bytes(n.args[0]->type) * 8};  // a count of bits
                if (n.fn == MathFn::Abs && !n.args.empty()) {
                  Range a = value_range(n.args[0], env);
                  __int128 m = std::max(a.hi < 0 ? -a.hi : a.hi, a.lo < 0 ? -a.lo : a.lo);
                  return fit(Range{a.lo >= 0 ? a.lo : 0, m});
                }
                return full;
              },
              [&](const Id& n) { return env.id ? fit(env.id(n.p)) : full; },
              [&](const Builtin& n) {
                const auto& r = n.which == BuiltinKind::ThreadInBlock ? env.thread_index
                                : n.which == BuiltinKind::BlockInGrid ? env.block_index
                                                                      : env.grid_blocks;
                return r ? fit(*r) : full;
              },
              [&](const Load&) { return full; },
          });
}

}  // namespace

bool may_overflow(const Binary& b, const RangeEnv& env) {
  Range a = value_range(b.a, env), c = value_range(b.b, env);
  return !exact_op(b, a, c, 0).within(Range::of(b.type));
}

bool may_overflow(const Unary& u, const RangeEnv& env) { return !neg(value_range(u.a, env)).within(Range::of(u.type)); }

namespace {
/// The exact value's range and the envelope of it and every intermediate.
struct Exact {
  Range value, all;
};
std::optional<Exact> exact_ranges_of(const ExprPtr& e, const RangeEnv& env, ExactRanges* each);
/// exact_ranges_of through the environment's memo, where it has one (not where `each` is asked for:
/// that needs every operation visited).
std::optional<Exact> exact_ranges(const ExprPtr& e, const RangeEnv& env, ExactRanges* each) {
  if (!e || !env.exact_memo || each) return exact_ranges_of(e, env, each);
  auto& seen = env.exact_memo->seen;
  if (auto it = seen.find(e); it != seen.end())
    return it->second.ok ? std::optional<Exact>(Exact{it->second.value, it->second.all}) : std::nullopt;
  auto r = exact_ranges_of(e, env, nullptr);
  seen.emplace(e, ExactMemo::Entry{r.has_value(), r ? r->value : Range{}, r ? r->all : Range{}});
  return r;
}
std::optional<Exact> exact_ranges_of(const ExprPtr& e, const RangeEnv& env, ExactRanges* each) {
  if (!e) return std::nullopt;
  if (!is_exact_index_op(*e)) {
    Range v = value_range(e, env);
    return Exact{v, v};
  }
  Range v;
  Range all;
  if (const auto* u = as<Unary>(*e)) {
    auto a = exact_ranges(u->a, env, each);
    if (!a) return std::nullopt;
    v = neg(a->value);
    all = v.join(a->all);
  } else {
    const auto& b = static_cast<const Binary&>(*e);
    auto a = exact_ranges(b.a, env, each), c = exact_ranges(b.b, env, each);
    if (!a || !c) return std::nullopt;
    v = exact_op(b, a->value, c->value, constant(b.b).value_or(1));
    all = v.join(a->all).join(c->all);
  }
  if (all.lo <= -kLimit || all.hi >= kLimit) return std::nullopt;
  if (each) (*each)[e.get()] = all;
  return Exact{v, all};
}
}  // namespace

bool ExactMemo::Same::operator()(const ExprPtr& a, const ExprPtr& b) const { return same_expression(a, b); }

std::optional<Range> exact_index_range(const ExprPtr& e, const RangeEnv& env, ExactRanges* each) {
  auto r = exact_ranges(e, env, each);
  return r ? std::optional<Range>(r->all) : std::nullopt;
}

std::optional<Range> exact_value_range(const ExprPtr& e, const RangeEnv& env) {
  auto r = exact_ranges(e, env, nullptr);
  return r ? std::optional<Range>(r->value) : std::nullopt;
}

}  // namespace vantage::ir
