// The interpreter's values: scalar conversions and docs/semantics.md's operations, as free
// functions of the operands (integers through jit/ir/eval, floats rounded to their types). See
// machine.h.
#include <bit>

#include "jit/interp/machine.h"

namespace vantage::interp::detail {

double round_to(ScalarType t, double x) {
  switch (t) {
    case ScalarType::F32: return static_cast<float>(x);
    case ScalarType::F16: return float16::half_to_float(float16::float_to_half(static_cast<float>(x)));
    case ScalarType::BF16: return float16::bf16_to_float(float16::float_to_bf16(static_cast<float>(x)));
    case ScalarType::F8E4M3:
    case ScalarType::F8E5M2: {  // from the value itself, rounded once (satfinite)
      const bool e5m2 = t == ScalarType::F8E5M2;
      return float8::decode(float8::encode(x, e5m2), e5m2);
    }
    default: return x;
  }
}

double from_16bit(ScalarType t, std::uint16_t bits) {
  return t == ScalarType::F16 ? float16::half_to_float(bits) : float16::bf16_to_float(bits);
}

std::int64_t float_to_int(double x, ScalarType to) {
  if (x != x) return 0;
  Range r = Range::of(to);
  double t = std::trunc(x);
  if (t <= static_cast<double>(r.lo)) return wrap(to, r.lo);
  if (t >= static_cast<double>(r.hi)) return wrap(to, r.hi);
  return wrap(to, static_cast<__int128>(t));
}

auto exact_index(ScalarType t, std::int64_t v) -> std::int64_t {
  __int128 x = ir::exact(t, v);
  return x > INT64_MAX ? INT64_MAX : static_cast<std::int64_t>(x);
}

auto int_binary(BinOp op, ScalarType t, std::int64_t a, std::int64_t b) -> std::int64_t {
  // The index arithmetic of every kernel: i32 sums, differences and products, and comparisons of
  // i32, u32 and i64 (held exactly, so compared as they are), without eval_binary's 128-bit path.
  // Equal to it for every operand (Values.IntegerFastPathsAgreeWithEvalBinary).
  const bool exact64 = t == ScalarType::I32 || t == ScalarType::U32 || t == ScalarType::I64;
  const auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  switch (op) {
    case BinOp::Add:
      if (t == ScalarType::I32) return static_cast<std::int32_t>(static_cast<std::uint32_t>(ua + ub));
      break;
    case BinOp::Sub:
      if (t == ScalarType::I32) return static_cast<std::int32_t>(static_cast<std::uint32_t>(ua - ub));
      break;
    case BinOp::Mul:
      if (t == ScalarType::I32) return static_cast<std::int32_t>(static_cast<std::uint32_t>(ua * ub));
      break;
    case BinOp::Lt:
      if (exact64) return a < b;
      break;
    case BinOp::Le:
      if (exact64) return a <= b;
      break;
    case BinOp::Gt:
      if (exact64) return a > b;
      break;
    case BinOp::Ge:
      if (exact64) return a >= b;
      break;
    case BinOp::Eq:
      if (exact64) return a == b;
      break;
    case BinOp::Ne:
      if (exact64) return a != b;
      break;
    default: break;
  }
  return eval_binary(op, t, a, b);
}

auto binary_value(const Binary& n, V a, V b) -> V {
  V v;
  ScalarType t = n.a->type;
  if (is_integral(t)) {
    v.i = int_binary(n.op, t, a.i, n.op == BinOp::Shl || n.op == BinOp::Shr ? shift_amount(n.b->type, b.i) : b.i);
    return v;
  }
  double x = a.f, y = b.f;
  switch (n.op) {
    case BinOp::Add: v.f = x + y; break;
    case BinOp::Sub: v.f = x - y; break;
    case BinOp::Mul: v.f = x * y; break;
    case BinOp::Div: v.f = x / y; break;
    case BinOp::Mod: v.f = std::fmod(x, y); break;
    case BinOp::Min: v.f = std::fmin(x, y); break;
    case BinOp::Max: v.f = std::fmax(x, y); break;
    case BinOp::Pow: v.f = std::pow(x, y); break;
    case BinOp::Eq: v.i = x == y; return v;
    case BinOp::Ne: v.i = x != y; return v;
    case BinOp::Lt: v.i = x < y; return v;
    case BinOp::Le: v.i = x <= y; return v;
    case BinOp::Gt: v.i = x > y; return v;
    case BinOp::Ge: v.i = x >= y; return v;
    default: throw InternalError("interp: an integer operation on floats");
  }
  v.f = round_to(n.type, v.f);
  return v;
}

auto cast_value(ScalarType from, ScalarType to, V a) -> V {
  V v;
  if (is_integral(from) && is_integral(to)) {
    v.i = eval_cast(from, to, a.i);
  } else if (is_fp8(from) || is_fp8(to)) {  // between an 8-bit float and another float (the checker)
    v.f = round_to(to, a.f);
  } else if (from == ScalarType::F64 && is_16bit_float(to)) {
    v.f = from_16bit(to, float16::f64_to_16bit(a.f, to == ScalarType::BF16));  // one rounding
  } else if (is_float(from) && is_float(to)) {
    v.f = round_to(to, a.f);
  } else if (is_float(from)) {
    v.i = to == ScalarType::Bool ? a.f != 0 : float_to_int(a.f, to);
  } else if (is_16bit_float(to) && from != ScalarType::Bool) {  // one rounding, whatever the size
    v.f = from_16bit(to, float16::int_to_16bit(a.i, !is_signed(from), to == ScalarType::BF16));
  } else if (to == ScalarType::F32 && (from == ScalarType::I64 || from == ScalarType::U64)) {
    // One rounding, as cvt.rn.f32.s64 does (through double would round twice).
    v.f = from == ScalarType::I64 ? static_cast<float>(a.i) : static_cast<float>(static_cast<std::uint64_t>(a.i));
  } else {
    v.f = round_to(to, static_cast<double>(ir::exact(from, a.i)));  // exact in double, then one rounding
  }
  return v;
}

auto atomic_value(AtomicKind kind, ScalarType e, V old, V x, V compare) -> V {
  V nv = old;
  if (kind == AtomicKind::Exch || kind == AtomicKind::Store) {
    nv = x;
  } else if (kind == AtomicKind::Inc || kind == AtomicKind::Dec) {  // u32 only (the checker)
    const auto o = static_cast<std::uint32_t>(old.i), bound = static_cast<std::uint32_t>(x.i);
    const std::uint32_t v =
        kind == AtomicKind::Inc ? (o >= bound ? 0u : o + 1u) : (o == 0u || o > bound ? bound : o - 1u);
    nv.i = static_cast<std::int64_t>(v);
  } else if (kind == AtomicKind::Cas) {  // integers only (the checker)
    if (old.i == compare.i) nv = x;
  } else if (is_float(e)) {  // Add, Min, Max (the checker refuses the others on floats)
    nv.f = kind == AtomicKind::Add   ? round_to(e, old.f + x.f)
           : kind == AtomicKind::Min ? std::fmin(old.f, x.f)
                                     : std::fmax(old.f, x.f);
  } else {  // the integer operation of the same name, as docs/semantics.md defines it
    static constexpr BinOp kOps[] = {BinOp::Add, BinOp::Min, BinOp::Max, BinOp::Add, BinOp::And, BinOp::Or, BinOp::Xor};
    nv.i = eval_binary(kOps[static_cast<int>(kind)], e, old.i, x.i);
  }
  return nv;
}

auto math_value(const MathCall& n, const V* x) -> V {
  V v;
  if (n.fn == MathFn::Bitcast) {  // 32 or 64 bits (the checker): the bits through a u64
    const ScalarType from = n.args[0]->type;
    std::uint64_t bits = 0;
    if (from == ScalarType::F32) {
      bits = std::bit_cast<std::uint32_t>(static_cast<float>(x[0].f));
    } else if (from == ScalarType::F64) {
      bits = std::bit_cast<std::uint64_t>(x[0].f);
    } else {
      bits = static_cast<std::uint64_t>(x[0].i);
    }
    if (n.type == ScalarType::F32)
      v.f = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    else if (n.type == ScalarType::F64)
      v.f = std::bit_cast<double>(bits);
    else
      v.i = eval_cast(type_bytes(n.type) == 4 ? ScalarType::U32 : ScalarType::U64, n.type,
                      static_cast<std::int64_t>(type_bytes(n.type) == 4 ? bits & 0xffffffffu : bits));
    return v;
  }
  if (is_bit_fn(n.fn)) {
    v.i = eval_bits(n.fn, n.args[0]->type, x[0].i);
    return v;
  }
  if (is_float_predicate(n.fn)) {
    const double a = x[0].f;
    v.i = n.fn == MathFn::IsNan ? std::isnan(a) : n.fn == MathFn::IsInf ? std::isinf(a) : std::isfinite(a);
    return v;
  }
  if (is_integral(n.type)) {  // abs: the identity on unsigned types (a u64 from 2^63 is held negative)
    v.i = is_signed(n.type) && x[0].i < 0 ? eval_unary(UnOp::Neg, n.type, x[0].i) : x[0].i;
    return v;
  }
  double a = x[0].f;
  switch (n.fn) {
    case MathFn::Sqrt: v.f = std::sqrt(a); break;
    case MathFn::Rsqrt: v.f = 1.0 / std::sqrt(a); break;
    case MathFn::Exp: v.f = std::exp(a); break;
    case MathFn::Exp2: v.f = std::exp2(a); break;
    case MathFn::Log: v.f = std::log(a); break;
    case MathFn::Log2: v.f = std::log2(a); break;
    case MathFn::Sin: v.f = std::sin(a); break;
    case MathFn::Cos: v.f = std::cos(a); break;
    case MathFn::Tanh: v.f = std::tanh(a); break;
    case MathFn::Abs: v.f = std::fabs(a); break;
    case MathFn::Floor: v.f = std::floor(a); break;
    case MathFn::Ceil: v.f = std::ceil(a); break;
    case MathFn::Fma: v.f = n.type == ScalarType::F64 ? std::fma(a, x[1].f, x[2].f) : a * x[1].f + x[2].f; break;
    case MathFn::Tan: v.f = std::tan(a); break;
    case MathFn::Asin: v.f = std::asin(a); break;
    case MathFn::Acos: v.f = std::acos(a); break;
    case MathFn::Atan: v.f = std::atan(a); break;
    case MathFn::Sinh: v.f = std::sinh(a); break;
    case MathFn::Cosh: v.f = std::cosh(a); break;
    case MathFn::Erf: v.f = std::erf(a); break;
    case MathFn::Erfc: v.f = std::erfc(a); break;
    case MathFn::Expm1: v.f = std::expm1(a); break;
    case MathFn::Log1p: v.f = std::log1p(a); break;
    case MathFn::Log10: v.f = std::log10(a); break;
    case MathFn::Cbrt: v.f = std::cbrt(a); break;
    case MathFn::Trunc: v.f = std::trunc(a); break;
    case MathFn::Round: v.f = std::round(a); break;
    case MathFn::Rint: v.f = std::nearbyint(a); break;  // the default rounding mode: halves to even
    case MathFn::Atan2: v.f = std::atan2(a, x[1].f); break;
    case MathFn::Fmod: v.f = std::fmod(a, x[1].f); break;
    case MathFn::Hypot: v.f = std::hypot(a, x[1].f); break;
    case MathFn::Copysign: v.f = std::copysign(a, x[1].f); break;
    case MathFn::IsNan:
    case MathFn::IsInf:
    case MathFn::IsFinite:
    case MathFn::Popc:
    case MathFn::Clz:
    case MathFn::Ffs:
    case MathFn::Brev:
    case MathFn::Bitcast: throw InternalError("interp: a bit function of a float (the checker refuses it)");
  }
  if (n.fn == MathFn::Fma && n.type == ScalarType::F32)
    v.f = std::fmaf(static_cast<float>(a), static_cast<float>(x[1].f), static_cast<float>(x[2].f));
  v.f = round_to(n.type, v.f);
  return v;
}

}  // namespace vantage::interp::detail
