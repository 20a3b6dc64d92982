// Vantage integer semantics, defined once (docs/semantics.md): what every integer and bool operation
// of the IR computes. Constant folding, the checker's size rules, specialization and the backends'
// helpers all use these functions, so that a folded constant is exactly what the kernel would have
// computed at run time.
//
// A value is held in an int64: signed integers sign-extended, u8, u16 and u32 zero-extended, u64 as its bit pattern,
// bool as 0 or 1.
#pragma once

#include <cstdint>
#include <optional>

#include "jit/ir/ir.h"

namespace vantage::ir {

/// Whether `v` is a value of `t` in the representation above (u64: every bit pattern; floats: any).
inline bool fits(ScalarType t, std::int64_t v) {
  switch (t) {
    case ScalarType::Bool: return v == 0 || v == 1;
    case ScalarType::I8: return v == static_cast<std::int8_t>(v);
    case ScalarType::U8: return v == static_cast<std::uint8_t>(v);
    case ScalarType::I16: return v == static_cast<std::int16_t>(v);
    case ScalarType::U16: return v == static_cast<std::uint16_t>(v);
    case ScalarType::I32: return v == static_cast<std::int32_t>(v);
    case ScalarType::U32: return v == static_cast<std::uint32_t>(v);
    default: return true;
  }
}
/// `v` wrapped to the width of `t` (two's complement), bool as `v != 0`.
std::int64_t wrap(ScalarType t, __int128 v);
/// The exact mathematical value of a represented value (u64 as unsigned). Inline: the cost report
/// and the interpreter call it for every lane.
inline __int128 exact(ScalarType t, std::int64_t v) {
  return t == ScalarType::U64 ? static_cast<__int128>(static_cast<std::uint64_t>(v)) : v;
}

/// The result of an integer or bool operation on values of type `operand`; `overflowed` is set when
/// the exact result did not fit and was wrapped (or a division by zero was defined away).
std::int64_t eval_binary(BinOp op, ScalarType operand, std::int64_t a, std::int64_t b, bool* overflowed = nullptr);
std::int64_t eval_unary(UnOp op, ScalarType t, std::int64_t a, bool* overflowed = nullptr);
/// A bit function (`is_bit_fn`) of `a`, a value of the integer type `operand` (32 or 64 bits), read as
/// its bits: popc, clz and ffs give an i32 count, brev a value of `operand`.
std::int64_t eval_bits(MathFn fn, ScalarType operand, std::int64_t a);
/// A shift's amount, a value of type `t`, as eval_binary takes it: negative amounts as -1 (past every
/// width), large ones held at 4096.
std::int64_t shift_amount(ScalarType t, std::int64_t b);
/// Integer or bool to integer or bool conversion.
std::int64_t eval_cast(ScalarType from, ScalarType to, std::int64_t a, bool* overflowed = nullptr);

/// A constant integer or bool expression, folded with those semantics.
struct Folded {
  std::int64_t value = 0;
  bool exact = true;  ///< no intermediate wrapped or divided by zero: the value is the mathematical one
};
/// Folds an expression made only of integer and bool literals and operations; nullopt otherwise.
std::optional<Folded> eval_const(const ExprPtr& e);
/// The folded value of an integer constant expression, or nullopt (not constant, or not an integer).
std::optional<std::int64_t> const_int(const ExprPtr& e);

/// a * b, a + b in 64 bits; nullopt on overflow (sizes and byte counts).
std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b);
std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b);

}  // namespace vantage::ir
