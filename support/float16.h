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
  else if (exp == 31)
    v = man ? std::nanf("") : INFINITY;
  else
    v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}
inline std::uint16_t float_to_half(float f) {  // round to nearest even
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000;
  std::uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return static_cast<std::uint16_t>(sign | 0x7e00);
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
}  // namespace vantage::float16
