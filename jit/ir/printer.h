// Vantage IR printer: the stable text form of kernels and device functions, used by golden tests,
// `vantage inspect` and diagnostics. Names are made unique in order of first appearance.
#pragma once

#include <string>

#include "jit/ir/ir.h"

namespace vantage::ir {

/// The kernel, preceded by every device function it calls (each once, callees first).
std::string print(const KernelNode& kernel);
/// One device function, preceded by the functions it calls.
std::string print(const FunctionNode& fn);
/// One expression, with the variables' own names ("(n * 4)").
std::string print(const ExprPtr& e);

}  // namespace vantage::ir
