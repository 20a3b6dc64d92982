// Vantage integer semantics: see eval.h and docs/semantics.md.
#include "jit/ir/eval.h"

#include <bit>

#include "jit/ir/range.h"
#include "jit/ir/visit.h"

namespace vantage::ir {
namespace {

int width(ScalarType t) { return type_bytes(t) * 8; }

__int128 lo(ScalarType t) { return Range::of(t).lo; }
__int128 hi(ScalarType t) { return Range::of(t).hi; }

}  // namespace

std::int64_t wrap(ScalarType t, __int128 v) {
  auto bits = static_cast<std::uint64_t>(static_cast<unsigned __int128>(v));
  switch (t) {
    case ScalarType::Bool: return v != 0;
    case ScalarType::I8: return static_cast<std::int8_t>(static_cast<std::uint8_t>(bits));
    case ScalarType::U8: return static_cast<std::uint8_t>(bits);
    case ScalarType::I16: return static_cast<std::int16_t>(static_cast<std::uint16_t>(bits));
    case ScalarType::U16: return static_cast<std::uint16_t>(bits);
    case ScalarType::I32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(bits));
    case ScalarType::U32: return static_cast<std::uint32_t>(bits);
    default: return static_cast<std::int64_t>(bits);
  }
}

std::int64_t eval_binary(BinOp op, ScalarType t, std::int64_t a, std::int64_t b, bool* overflowed) {
  __int128 x = exact(t, a), y = exact(t, b);
  auto result = [&](__int128 r) {
    if (overflowed && (r < lo(t) || r > hi(t))) *overflowed = true;
    return wrap(t, r);
  };
  bool is_signed = vantage::is_signed(t);
  switch (op) {
    case BinOp::Add: return result(x + y);
    case BinOp::Sub: return result(x - y);
    case BinOp::Mul:
      if (t == ScalarType::U64) {
        // Two u64 values multiply to up to 2^128 - 2^65 + 1: exact in unsigned __int128, not in
        // __int128 (where it would be undefined).
        auto p = static_cast<unsigned __int128>(x) * static_cast<unsigned __int128>(y);
        if (overflowed && (p >> 64) != 0) *overflowed = true;
        return static_cast<std::int64_t>(static_cast<std::uint64_t>(p));
      }
      return result(x * y);  // |x|, |y| <= 2^63: the product fits
    case BinOp::Div:
      // Division by zero gives all ones (-1 when signed), as RISC-V defines it; the one overflow,
      // MIN / -1, wraps to MIN.
      if (y == 0) {
        if (overflowed) *overflowed = true;
        return wrap(t, -1);
      }
      return result(x / y);
    case BinOp::Mod:
      // x % 0 is x; MIN % -1 is 0. C++ truncation semantics otherwise (the sign of the dividend).
      if (y == 0) {
        if (overflowed) *overflowed = true;
        return a;
      }
      return result(x % y);
    case BinOp::And: return wrap(t, a & b);
    case BinOp::Or: return wrap(t, a | b);
    case BinOp::Xor: return wrap(t, a ^ b);
    case BinOp::Shl:
    case BinOp::Shr: {
      // The amount is unsigned; amounts of the width or more clamp to the width, as PTX's shl and
      // shr do: a left shift gives 0, a logical right shift 0, an arithmetic right shift the sign.
      auto amount = static_cast<std::uint64_t>(b);
      int w = width(t);
      if (op == BinOp::Shl) {
        if (amount >= static_cast<std::uint64_t>(w)) return 0;
        return wrap(t, static_cast<__int128>(static_cast<unsigned __int128>(x) << amount));
      }
      if (amount >= static_cast<std::uint64_t>(w)) return is_signed && x < 0 ? -1 : 0;
      return wrap(t, x >> amount);  // x is exact: >> on a negative __int128 is arithmetic
    }
    case BinOp::LAnd: return (a != 0) && (b != 0);
    case BinOp::LOr: return (a != 0) || (b != 0);
    case BinOp::Eq: return x == y;
    case BinOp::Ne: return x != y;
    case BinOp::Lt: return x < y;
    case BinOp::Le: return x <= y;
    case BinOp::Gt: return x > y;
    case BinOp::Ge: return x >= y;
    case BinOp::Min: return wrap(t, x < y ? x : y);
    case BinOp::Max: return wrap(t, x > y ? x : y);
    case BinOp::Pow: break;
  }
  throw InternalError(std::string("eval_binary: ") + name_of(op) + " is not an integer operation");
}

std::int64_t eval_unary(UnOp op, ScalarType t, std::int64_t a, bool* overflowed) {
  switch (op) {
    case UnOp::Neg: {
      __int128 r = -exact(t, a);
      if (overflowed && (r < lo(t) || r > hi(t))) *overflowed = true;
      return wrap(t, r);
    }
    case UnOp::Not: return a == 0;
    case UnOp::BitNot: return wrap(t, ~a);
  }
  return 0;
}

std::int64_t eval_bits(MathFn fn, ScalarType operand, std::int64_t a) {
  const int width = type_bytes(operand) * 8;
  const std::uint64_t bits =
      width == 64 ? static_cast<std::uint64_t>(a) : static_cast<std::uint64_t>(a) & ((std::uint64_t{1} << width) - 1);
  switch (fn) {
    case MathFn::Popc: return std::popcount(bits);
    case MathFn::Clz: return std::countl_zero(bits) - (64 - width);
    case MathFn::Ffs: return bits == 0 ? 0 : std::countr_zero(bits) + 1;
    case MathFn::Brev: {
      std::uint64_t r = 0;
      for (int i = 0; i < width; ++i) r |= ((bits >> i) & 1) << (width - 1 - i);
      return wrap(operand, static_cast<__int128>(r));
    }
    default: break;
  }
  throw InternalError(std::string("eval_bits: ") + name_of(fn) + " is not a bit function");
}

std::int64_t shift_amount(ScalarType t, std::int64_t b) {
  __int128 x = exact(t, b);
  return x < 0 ? -1 : (x > 4096 ? 4096 : static_cast<std::int64_t>(x));
}

std::int64_t eval_cast(ScalarType from, ScalarType to, std::int64_t a, bool* overflowed) {
  __int128 x = exact(from, a);
  if (to == ScalarType::Bool) return x != 0;
  if (overflowed && (x < lo(to) || x > hi(to))) *overflowed = true;
  return wrap(to, x);
}

namespace {

std::optional<Folded> fold_constant(const ExprPtr& e) {
  if (!e || !is_integral(e->type)) return std::nullopt;
  return dispatch(
      *e, Overloaded{
              [](const Literal& n) -> std::optional<Folded> {
                if (!fits(n.type, n.i)) return std::nullopt;  // the checker reports it (V0707)
                return Folded{n.i, true};
              },
              [](const VarRef&) -> std::optional<Folded> { return std::nullopt; },
              [](const Unary& n) -> std::optional<Folded> {
                auto a = fold_constant(n.a);
                if (!a || n.a->type != n.type) return std::nullopt;
                bool over = false;
                std::int64_t v = eval_unary(n.op, n.type, a->value, &over);
                return Folded{v, a->exact && !over};
              },
              [](const Binary& n) -> std::optional<Folded> {
                if (n.op == BinOp::Pow) return std::nullopt;
                auto a = fold_constant(n.a);  // (one operand not constant settles it: the other is not looked at)
                if (!a) return std::nullopt;
                auto b = fold_constant(n.b);
                if (!b) return std::nullopt;
                bool shift = n.op == BinOp::Shl || n.op == BinOp::Shr;
                if (!shift && n.a->type != n.b->type) return std::nullopt;  // ill-typed: the checker says so
                ScalarType operand = n.a->type;
                bool over = false;
                std::int64_t bv =
                    shift ? static_cast<std::int64_t>(static_cast<std::uint64_t>(exact(n.b->type, b->value)))
                          : b->value;
                if (shift && n.b->type != ScalarType::U64 && exact(n.b->type, b->value) < 0) bv = -1;  // huge amount
                std::int64_t v = eval_binary(n.op, operand, a->value, bv, &over);
                return Folded{v, a->exact && b->exact && !over};
              },
              [](const Cast& n) -> std::optional<Folded> {
                auto a = fold_constant(n.a);
                if (!a) return std::nullopt;
                bool over = false;
                std::int64_t v = eval_cast(n.a->type, n.type, a->value, &over);
                return Folded{v, a->exact && !over};
              },
              [](const Select& n) -> std::optional<Folded> {
                auto c = fold_constant(n.c);
                if (!c) return std::nullopt;
                auto a = fold_constant(n.a);
                if (!a) return std::nullopt;
                auto b = fold_constant(n.b);
                if (!b) return std::nullopt;
                return c->value ? Folded{a->value, c->exact && a->exact} : Folded{b->value, c->exact && b->exact};
              },
              [](const MathCall& n) -> std::optional<Folded> {
                if (!is_bit_fn(n.fn) || n.args.size() != 1 || !n.args[0]) return std::nullopt;
                auto a = fold_constant(n.args[0]);
                if (!a) return std::nullopt;
                return Folded{eval_bits(n.fn, n.args[0]->type, a->value), a->exact};
              },
              [](const Id&) -> std::optional<Folded> { return std::nullopt; },
              [](const Builtin&) -> std::optional<Folded> { return std::nullopt; },
              [](const Load&) -> std::optional<Folded> { return std::nullopt; },
          });
}
}  // namespace

std::optional<Folded> eval_const(const ExprPtr& e) { return fold_constant(e); }

std::optional<std::int64_t> const_int(const ExprPtr& e) {
  if (!e || !is_integer(e->type)) return std::nullopt;
  auto f = fold_constant(e);
  return f ? std::optional<std::int64_t>(f->value) : std::nullopt;
}

std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace vantage::ir
