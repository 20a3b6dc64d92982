// Vantage perspective checker: IR in, diagnostics and deferred size obligations out. Implements the
// rules of docs/design.md section 3 (typed perspectives, after Parallax and Prism), the integer rules
// of docs/semantics.md and the operand types every target supports; docs/diagnostics.md lists every
// rule with its code.
#pragma once

#include <cstdint>
#include <vector>

#include "jit/ir/ir.h"
#include "vantage/spec.hpp"

namespace vantage::check {

struct CheckResult {
  std::vector<Diagnostic> errors;
  std::vector<Obligation> obligations;
  std::int64_t shared_peak = 0;  ///< peak shared bytes of the layout, callee budgets included
  bool ok() const { return errors.empty(); }
};

CheckResult check(const ir::KernelNode& kernel);
CheckResult check(const ir::FunctionNode& fn);

/// The shared budget of a kernel that declares none: what every target gives without opt-in.
std::int64_t default_shared_budget();

}  // namespace vantage::check
