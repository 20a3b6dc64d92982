// Vantage version string.
#include "vantage/version.hpp"

namespace vantage {
const char* version() { return "0.1.0"; }
}  // namespace vantage
