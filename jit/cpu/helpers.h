// Vantage CPU backend: the functions generated code calls, defined for the JIT by name.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vantage::cpu {

/// Every helper's symbol and address.
const std::vector<std::pair<std::string, void*>>& helper_symbols();

}  // namespace vantage::cpu
