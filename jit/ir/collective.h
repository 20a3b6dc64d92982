// Vantage warp collectives, defined once: what mma.sync computes from the fragments the lanes of a
// warp hold (the PTX fragment layouts). The interpreter and the CPU backend both call it, so they
// agree to the bit.
#pragma once

#include <functional>

#include "jit/ir/ir.h"

namespace vantage::ir {

/// `mma.sync` m16n8k8 (tf32), m16n8k16 (f16, bf16) or m16n8k32 (s8) for one warp of 32 lanes:
/// D = A * B + C. Lane l holds group g = l / 4 and thread-in-group q = l % 4 of each fragment;
/// `in(lane, operand, i)` is element i of operand 1 (A), 2 (B) or 3 (C) of that lane; `out(lane, i,
/// value)` stores element i of D. tf32 inputs are rounded as cvt.rna does; products are summed in
/// double, in k order, and rounded to f32 once; s8 products and their sum with C are exact (the
/// caller wraps the sum to s32).
void mma_sync(MmaShape shape, const std::function<double(int lane, int operand, int i)>& in,
              const std::function<void(int lane, int i, double value)>& out);

/// cvt.rna.tf32.f32: 10 mantissa bits, ties away from zero.
double to_tf32(double x);

}  // namespace vantage::ir
