// Vantage static cost analysis (docs/report.md): a launch's memory and control costs, computed from
// lowered IR at one specialization. Each warp of a few blocks is followed lane by lane with the
// launch's numbers: integer values are exact, loaded values unknown. Every global access then has
// its 32-byte sectors, every shared access its bank conflicts, every branch whether it splits the
// warp. Loops with many iterations are followed at a few iterations and blocks at a few
// representatives, and the rest counted from them; a number is called exact only when the
// representatives agree and the addresses move by a whole sector (or bank row) between them.
#pragma once

#include <cstdint>
#include <span>

#include "jit/lower/lower.h"
#include "vantage/report.hpp"

namespace vantage::cost {

struct Options {
  std::int64_t blocks = 1;
  /// Blocks followed at most; past them the middle block stands for all, or for all but the first
  /// and last (followed apart) where their costs may differ and the report is not all exact.
  int max_blocks = 8;
  /// Iterations a loop is followed for at most; longer loops are sampled (first, second, last).
  int max_iterations = 4;
};

/// The report of one launch of `lowered` with `values[i]` for each of its user parameters (scalars;
/// a pointer parameter's entry is its length in elements, which the hidden length parameters take).
CostReport analyze(const lower::Lowered& lowered, std::span<const std::int64_t> values, const Options& options);

}  // namespace vantage::cost
