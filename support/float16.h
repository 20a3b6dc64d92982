// Vantage 16-bit floats: IEEE binary16 and bfloat16 conversions to and from float, rounding to
// nearest even, exactly as the GPU's cvt.rn does. The interpreter, the launcher and the CPU backend
// share them.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vantage::float16 {

inline float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31 && man) {
    // A NaN keeps its sign and payload (the fraction's top bits), quieted, as bf16's and the
    // hardware's conversions keep them: a load and store of an f16 NaN moves its bits.
    std::uint32_t bits = (sign << 31) | 0x7fc00000u | (man << 13);
    std::memcpy(&v, &bits, 4);
    return v;
  } else if (exp == 31)
    v = INFINITY;
  else
    v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}
inline std::uint16_t float_to_half(float f) {  // round to nearest even
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000;
  std::uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return static_cast<std::uint16_t>(sign | 0x7e00 | ((abs >> 13) & 0x3ff));
  if (abs >= 0x477ff000) return static_cast<std::uint16_t>(sign | 0x7c00);  // rounds to infinity
  if (abs < 0x38800000) {                                                   // subnormal half
    float a;
    std::memcpy(&a, &abs, 4);
    float scaled = a * 16777216.0f;  // 2^24: exact, then round to an integer (nearest even)
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(scaled)));
  }
  std::uint32_t exp = ((abs >> 23) - 112) << 10, man = (abs >> 13) & 0x3ff, rest = abs & 0x1fff;
  std::uint32_t h = exp | man;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}
inline float bf16_to_float(std::uint16_t b) {
  std::uint32_t x = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<std::uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<std::uint16_t>(x >> 16);
}

/// `x` rounded to f32 *to odd*: toward zero, with the last bit set when anything was cut off. A
/// 16-bit type keeps fewer than 22 of f32's 24 bits, so rounding this to it (nearest even) gives x
/// rounded once, as the GPU's `cvt.rn.f16.f64` does. Rounding to f32 to nearest first would not:
/// 1 + 2^-11 + 2^-40 would become the tie 1 + 2^-11, then 1 in f16 instead of 1 + 2^-10.
inline float to_odd_f32(double x) {
  float f = static_cast<float>(x);
  if (x != x || static_cast<double>(f) == x) return f;
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::fabs(static_cast<double>(f)) > std::fabs(x)) --u;  // rounded away from zero: one step back
  u |= 1;
  std::memcpy(&f, &u, 4);
  return f;
}
/// The integer -m (negative) or m rounded to f32 to odd, as to_odd_f32 (exactly, whatever its size).
inline float int_to_odd_f32(bool negative, std::uint64_t m) {
  int s = 0;
  while ((m >> s) >= (std::uint64_t{1} << 24)) ++s;
  std::uint64_t kept = m >> s;
  if (s && (m & ((std::uint64_t{1} << s) - 1))) kept |= 1;
  float f = std::ldexp(static_cast<float>(kept), s);
  return negative ? -f : f;
}
/// An f64 or an integer (its exact value; u64 as unsigned) converted to f16 or bf16 with one
/// rounding to nearest even: what `__double2half`, `__ll2bfloat16_rn` and the rest give on the GPU.
inline std::uint16_t to_16bit(float odd, bool bf16) { return bf16 ? float_to_bf16(odd) : float_to_half(odd); }
inline std::uint16_t f64_to_16bit(double x, bool bf16) { return to_16bit(to_odd_f32(x), bf16); }
inline std::uint16_t int_to_16bit(std::int64_t v, bool is_unsigned, bool bf16) {
  bool negative = !is_unsigned && v < 0;
  std::uint64_t m = negative ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  return to_16bit(int_to_odd_f32(negative, m), bf16);
}
}  // namespace vantage::float16
