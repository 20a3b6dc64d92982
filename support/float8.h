// Vantage 8-bit floats: the OCP formats e4m3 (4 exponent bits, 3 of mantissa, no infinity, one NaN
// pattern, largest 448) and e5m2 (5 and 2, IEEE-like, largest 57344), converted the way the GPU's
// cvt.rn.satfinite does: rounding to nearest even, and a finite value or an infinity past the largest
// finite one held at it (with its sign); NaN stays NaN. The interpreter, the CPU backend and the tests
// share them (docs/semantics.md, "Floating point").
#pragma once

#include <cmath>
#include <cstdint>

namespace vantage::float8 {

struct Format {
  int mantissa_bits, bias;
  double largest;  ///< the largest finite value
  std::uint8_t largest_code, nan_code;
};
inline constexpr Format kE4M3{3, 7, 448.0, 0x7e, 0x7f};
inline constexpr Format kE5M2{2, 15, 57344.0, 0x7b, 0x7e};
inline const Format& format(bool e5m2) { return e5m2 ? kE5M2 : kE4M3; }

/// The value of an 8-bit pattern.
inline double decode(std::uint8_t bits, bool e5m2) {
  const Format& f = format(e5m2);
  const int exp_bits = 7 - f.mantissa_bits;
  const int exp = (bits >> f.mantissa_bits) & ((1 << exp_bits) - 1), man = bits & ((1 << f.mantissa_bits) - 1);
  const bool negative = (bits & 0x80) != 0;
  double v;
  if (e5m2 && exp == 31)
    v = man ? std::nan("") : INFINITY;
  else if (!e5m2 && exp == 15 && man == 7)
    v = std::nan("");
  else if (exp == 0)
    v = std::ldexp(man, 1 - f.bias - f.mantissa_bits);
  else
    v = std::ldexp(man + (1 << f.mantissa_bits), exp - f.bias - f.mantissa_bits);
  return negative ? -v : v;
}

/// `x` rounded to nearest even in the format, held at its largest finite value (satfinite).
inline std::uint8_t encode(double x, bool e5m2) {
  const Format& f = format(e5m2);
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return static_cast<std::uint8_t>(sign | f.nan_code);
  const double a = std::fabs(x);
  const int min_exp = 1 - f.bias;  // of the smallest normal value
  // The spacing of the values around a: 2^(e - m) among the normal ones, 2^(min_exp - m) below.
  int e = std::isinf(a) || a == 0 ? min_exp : std::ilogb(a);
  if (e < min_exp) e = min_exp;
  const double step = std::ldexp(1.0, e - f.mantissa_bits);
  double r = std::isinf(a) ? INFINITY : std::nearbyint(a / step) * step;  // exact division; ties to even
  if (r > f.largest) return static_cast<std::uint8_t>(sign | f.largest_code);
  if (r == 0) return sign;
  // The pattern of r (a value of the format): an exponent field of 0 below the smallest normal.
  int re = std::ilogb(r);
  if (re < min_exp) return static_cast<std::uint8_t>(sign | static_cast<int>(r / step));
  const int man = static_cast<int>(std::ldexp(r, f.mantissa_bits - re)) - (1 << f.mantissa_bits);
  return static_cast<std::uint8_t>(sign | ((re + f.bias) << f.mantissa_bits) | man);
}

}  // namespace vantage::float8
