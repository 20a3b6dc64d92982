// Vantage specialization: binds the launch shape and the specialized sizes of one launch, decides
// the size rules the checker deferred (diagnostics show the numbers), and turns rules on the grid
// into residual guards that the launcher evaluates instead of recompiling.
#pragma once

#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jit/ir/ir.h"
#include "vantage/spec.hpp"

namespace vantage::specialization {

struct Result {
  std::shared_ptr<const ir::KernelNode> kernel;  ///< sizes replaced by constants, threads bound
  std::int64_t threads = 0;
  std::optional<std::int64_t> blocks;  ///< the grid when the Spec or the kernel fixes it
  std::int64_t max_blocks = 0;         ///< the most blocks a launch may have (ids fit an i32)
  std::vector<Guard> guards;
  std::vector<ParamInfo> params;
  /// The ranges the Spec's assumptions give unspecialized parameters (their variables).
  std::unordered_map<const ir::VarNode*, std::pair<std::int64_t, std::int64_t>> param_ranges;
  std::unordered_map<const ir::VarNode*, std::int64_t> param_multiples;  ///< where one is more than 1
};

/// Throws CheckError when the numbers break a rule or the Spec does not fit the kernel.
Result run(const ir::KernelNode& kernel, const std::vector<Obligation>& obligations, const Spec& spec);

}  // namespace vantage::specialization
