// Vantage CPU backend: the helpers generated code calls (see helpers.h). Each computes exactly what
// the interpreter computes: the same float16 conversions (support/float16.h), the same mma
// (jit/ir/collective), the error record the GPU's vt_fail writes.
#include "jit/cpu/helpers.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "jit/ir/collective.h"
#include "jit/ir/print_format.h"
#include "support/float16.h"
#include "support/float8.h"

namespace vantage::cpu {
namespace {

extern "C" {

float vt_cpu_f16_to_f32(std::uint16_t h) { return float16::half_to_float(h); }
float vt_cpu_bf16_to_f32(std::uint16_t b) { return float16::bf16_to_float(b); }
std::uint16_t vt_cpu_f32_to_f16(float f) { return float16::float_to_half(f); }
std::uint16_t vt_cpu_f32_to_bf16(float f) { return float16::float_to_bf16(f); }
/// One rounding from f64, or from an integer of any size, to f16 (`bf16` 0) or bf16 (1).
std::uint16_t vt_cpu_f64_to_16(double x, std::int32_t bf16) { return float16::f64_to_16bit(x, bf16 != 0); }
/// An 8-bit float's value (e4m3 where `e5m2` is 0), and a double rounded once to one (satfinite).
float vt_cpu_fp8_to_f32(std::uint8_t b, std::int32_t e5m2) { return static_cast<float>(float8::decode(b, e5m2 != 0)); }
std::uint8_t vt_cpu_f64_to_fp8(double x, std::int32_t e5m2) { return float8::encode(x, e5m2 != 0); }
std::uint16_t vt_cpu_int_to_16(std::int64_t v, std::int32_t is_unsigned, std::int32_t bf16) {
  return float16::int_to_16bit(v, is_unsigned != 0, bf16 != 0);
}

/// The first failed check of a launch: the kernel's tag, then site, block, thread, index, bound.
void vt_cpu_fail(std::uint64_t* record, std::uint64_t tag, std::int32_t site, std::int64_t block, std::int32_t thread,
                 std::int64_t index, std::int64_t bound) {
  if (!record) return;
  std::uint64_t expected = 0;
  auto* first = reinterpret_cast<std::atomic<std::uint64_t>*>(record);
  if (!first->compare_exchange_strong(expected, tag)) return;
  record[1] = static_cast<std::uint64_t>(site);
  record[2] = static_cast<std::uint64_t>(block);
  record[3] = static_cast<std::uint64_t>(thread);
  record[4] = static_cast<std::uint64_t>(index);
  record[5] = static_cast<std::uint64_t>(bound);
}

/// mma.sync for warp `w` on fragments in the layout [element][thread] of `threads` threads. A and B
/// are f32 (`kind` 0), or f16 (1) or bf16 (2) bits, with C and D f32; or s8 (3) with C and D s32.
void vt_cpu_mma(std::int32_t shape, void* d, const void* a, const void* b, const void* c, std::int32_t threads,
                std::int32_t w, std::int32_t kind) {
  auto at = [&](int lane, int i) { return static_cast<std::int64_t>(i) * threads + w * 32 + lane; };
  auto in16 = [&](const void* p, int lane, int i) -> double {
    std::uint16_t bits = static_cast<const std::uint16_t*>(p)[at(lane, i)];
    return kind == 1 ? float16::half_to_float(bits) : float16::bf16_to_float(bits);
  };
  ir::mma_sync(
      static_cast<ir::MmaShape>(shape),
      [&](int lane, int operand, int i) -> double {
        if (kind == 3)
          return operand == 3 ? static_cast<const std::int32_t*>(c)[at(lane, i)]
                              : static_cast<const std::int8_t*>(operand == 1 ? a : b)[at(lane, i)];
        if (operand == 3) return static_cast<const float*>(c)[at(lane, i)];
        const void* p = operand == 1 ? a : b;
        return kind == 0 ? static_cast<const float*>(p)[at(lane, i)] : in16(p, lane, i);
      },
      [&](int lane, int i, double v) {
        if (kind == 3)  // s32 sums wrap
          static_cast<std::int32_t*>(d)[at(lane, i)] =
              static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::int64_t>(v)));
        else
          static_cast<float*>(d)[at(lane, i)] = static_cast<float>(v);
      });
}

/// ldmatrix.x{count} for warp `w`: lane 8m + r gives (in `rows`, an element index of `src`) the row
/// address of row r of matrix m; lane l receives word 4 (l % 4) of row l / 4 of matrix m in
/// register m of `dst` (u32, [element][thread]). A row outside `src` is recorded and reads zeros.
void vt_cpu_ldmatrix(std::int32_t count, std::uint32_t* dst, const unsigned char* src, const std::int64_t* rows,
                     std::int32_t threads, std::int32_t w, std::int64_t elem_bytes, std::int64_t bound,
                     std::uint64_t* record, std::uint64_t tag, std::int64_t block, std::int32_t site) {
  unsigned char row[32][16] = {};
  for (int l = 0; l < 8 * count; ++l) {
    std::int64_t first = rows[w * 32 + l];
    std::int64_t last = first + 16 / elem_bytes - 1;
    if (first < 0 || last >= bound) {
      vt_cpu_fail(record, tag, site, block, w * 32 + l, first < 0 ? first : last, bound);
      continue;
    }
    std::memcpy(row[l], src + first * elem_bytes, 16);
  }
  for (int l = 0; l < 32; ++l)
    for (int m = 0; m < count; ++m) {
      std::uint32_t word;
      std::memcpy(&word, row[8 * m + l / 4] + 4 * (l % 4), 4);
      dst[static_cast<std::int64_t>(m) * threads + w * 32 + l] = word;
    }
}

}  // extern "C"

}  // namespace

/// A print's line (jit/ir/print_format.h), as the interpreter writes it: the values as 64-bit
/// integers or doubles, by type.
void vt_cpu_print(const char* format, std::int32_t count, const std::uint8_t* types, const std::int64_t* ints,
                  const double* floats) {
  auto parsed = ir::parse_print_format(format, nullptr);
  if (!parsed) return;  // the checker refused every other format
  std::vector<ir::PrintValue> values;
  for (std::int32_t k = 0; k < count; ++k) {
    const auto t = static_cast<ScalarType>(types[k]);
    values.push_back({t, ints[k], floats[k]});
  }
  ir::write_print_line(ir::print_line(*parsed, values));
}

const std::vector<std::pair<std::string, void*>>& helper_symbols() {
  static const std::vector<std::pair<std::string, void*>> all = {
      {"vt_cpu_f16_to_f32", reinterpret_cast<void*>(&vt_cpu_f16_to_f32)},
      {"vt_cpu_bf16_to_f32", reinterpret_cast<void*>(&vt_cpu_bf16_to_f32)},
      {"vt_cpu_f32_to_f16", reinterpret_cast<void*>(&vt_cpu_f32_to_f16)},
      {"vt_cpu_f32_to_bf16", reinterpret_cast<void*>(&vt_cpu_f32_to_bf16)},
      {"vt_cpu_f64_to_16", reinterpret_cast<void*>(&vt_cpu_f64_to_16)},
      {"vt_cpu_int_to_16", reinterpret_cast<void*>(&vt_cpu_int_to_16)},
      {"vt_cpu_fp8_to_f32", reinterpret_cast<void*>(&vt_cpu_fp8_to_f32)},
      {"vt_cpu_f64_to_fp8", reinterpret_cast<void*>(&vt_cpu_f64_to_fp8)},
      {"vt_cpu_fail", reinterpret_cast<void*>(&vt_cpu_fail)},
      {"vt_cpu_mma", reinterpret_cast<void*>(&vt_cpu_mma)},
      {"vt_cpu_ldmatrix", reinterpret_cast<void*>(&vt_cpu_ldmatrix)},
      {"vt_cpu_print", reinterpret_cast<void*>(&vt_cpu_print)},
  };
  return all;
}

}  // namespace vantage::cpu
