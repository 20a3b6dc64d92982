// Vantage warp collectives: see collective.h.
#include "jit/ir/collective.h"

#include <cstdint>
#include <cstring>

namespace vantage::ir {

double to_tf32(double x) {
  float f = static_cast<float>(x);
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7f800000) != 0x7f800000) b = (b + 0x1000) & 0xffffe000;
  std::memcpy(&f, &b, 4);
  return f;
}

void mma_sync(MmaShape shape, const std::function<double(int lane, int operand, int i)>& in,
              const std::function<void(int lane, int i, double value)>& out) {
  const int K = shape == MmaShape::TF32_M16N8K8 ? 8 : shape == MmaShape::S8_M16N8K32 ? 32 : 16;
  double A[16][32] = {}, B[32][8] = {}, C[16][8] = {};
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, q = l % 4;
    if (shape == MmaShape::TF32_M16N8K8) {
      A[g][q] = to_tf32(in(l, 1, 0));
      A[g + 8][q] = to_tf32(in(l, 1, 1));
      A[g][q + 4] = to_tf32(in(l, 1, 2));
      A[g + 8][q + 4] = to_tf32(in(l, 1, 3));
      B[q][g] = to_tf32(in(l, 2, 0));
      B[q + 4][g] = to_tf32(in(l, 2, 1));
    } else if (shape == MmaShape::S8_M16N8K32) {  // four bytes a register, as the 16-bit shapes' two halves
      for (int h = 0; h < 4; ++h) {
        A[g][4 * q + h] = in(l, 1, h);
        A[g + 8][4 * q + h] = in(l, 1, 4 + h);
        A[g][4 * q + 16 + h] = in(l, 1, 8 + h);
        A[g + 8][4 * q + 16 + h] = in(l, 1, 12 + h);
        B[4 * q + h][g] = in(l, 2, h);
        B[4 * q + 16 + h][g] = in(l, 2, 4 + h);
      }
    } else {
      for (int h = 0; h < 2; ++h) {
        A[g][2 * q + h] = in(l, 1, h);
        A[g + 8][2 * q + h] = in(l, 1, 2 + h);
        A[g][2 * q + 8 + h] = in(l, 1, 4 + h);
        A[g + 8][2 * q + 8 + h] = in(l, 1, 6 + h);
        B[2 * q + h][g] = in(l, 2, h);
        B[2 * q + 8 + h][g] = in(l, 2, 2 + h);
      }
    }
    C[g][2 * q] = in(l, 3, 0);
    C[g][2 * q + 1] = in(l, 3, 1);
    C[g + 8][2 * q] = in(l, 3, 2);
    C[g + 8][2 * q + 1] = in(l, 3, 3);
  }
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, q = l % 4;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * q, 2 * q + 1, 2 * q, 2 * q + 1};
    for (int i = 0; i < 4; ++i) {
      double acc = C[rows[i]][cols[i]];
      for (int kk = 0; kk < K; ++kk) acc += A[rows[i]][kk] * B[kk][cols[i]];
      // An s8 product is exact in a double (32 products below 2^14 each); its sum with C wraps in s32.
      out(l, i, shape == MmaShape::S8_M16N8K32 ? acc : static_cast<float>(acc));
    }
  }
}

}  // namespace vantage::ir
