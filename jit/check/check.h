// Vantage perspective checker: IR in, diagnostics and deferred size obligations out. Implements the
// rules of DESIGN.md section 3 and appendix A.2 of the Parallax/Prism paper; docs/diagnostics.md
// lists every rule with its code.
#pragma once

#include <cstdint>
#include <vector>

#include "jit/ir/ir.h"

namespace vantage::check {

/// The largest static shared memory a block may use on any supported device (sm_90: 227 KiB).
inline constexpr std::int64_t kDeviceMaxSharedBytes = 232448;
/// Budget of a kernel that declares none: the static shared-memory limit without opt-in.
inline constexpr std::int64_t kDefaultSharedBudget = 48 * 1024;
/// Most threads a block may have.
inline constexpr std::int64_t kMaxBlockThreads = 1024;

struct CheckResult {
  std::vector<Diagnostic> errors;
  std::vector<Obligation> obligations;
  std::int64_t shared_peak = 0;  ///< peak static shared bytes, callee budgets included
  bool ok() const { return errors.empty(); }
};

CheckResult check(const ir::KernelNode& kernel);
CheckResult check(const ir::FunctionNode& fn);

}  // namespace vantage::check
