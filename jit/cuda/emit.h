// Vantage CUDA C++ emitter: turns a specialized kernel into self-contained CUDA C++ with the
// barriers the sync pass placed, `#line` directives at the builder's lines, the integer semantics of
// docs/semantics.md made explicit where C++ would leave them undefined, and no toolkit headers
// unless 16-bit floats need them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jit/ir/ir.h"
#include "jit/lower/lower.h"
#include "vantage/target.hpp"

namespace vantage::cuda {

struct EmitOptions {
  std::int64_t threads = 0;             ///< threads per block (T)
  std::optional<std::int64_t> blocks;   ///< the grid, when fixed
  std::int64_t max_blocks = INT32_MAX;  ///< the most blocks a launch may have (a residual guard)
  Arch arch = Arch::SM_90;
  std::string entry;      ///< extern "C" name of the kernel
  int max_registers = 0;  ///< CompilerOptions::max_registers: `__maxnreg__` (0: the launch bounds)
};

struct EmitResult {
  std::string source;
  std::int64_t shared_bytes = 0;
  bool dynamic_shared = false;
  std::vector<Diagnostic> problems;  ///< what cannot be printed (indices that may not fit 64 bits)
};

/// Prints a lowered kernel (jit/lower) as CUDA C++. Its parameters are the kernel's own, then one
/// `long long` length per pointer parameter, then the error record (`unsigned long long*`, or null).
EmitResult emit(const lower::Lowered& lowered, const EmitOptions& options);

/// The unroll policy for a loop of `trips` iterations (a constant) whose body has `size` IR nodes:
/// 0 to unroll it fully (`#pragma unroll`), which loops whose unrolled code stays small get, and loops
/// of at most 4 trips (no larger than the factor would make them: sgemm rung 8's two steps of 4 k
/// each, whose body is large), else the factor to unroll it by (`#pragma unroll 4`). The explicit factor keeps NVRTC's
/// time flat in the trip count: left to itself NVRTC fully unrolls some long loops too (bench/bench_compile.cpp).
int unroll_factor(std::int64_t trips, std::int64_t size);

}  // namespace vantage::cuda
