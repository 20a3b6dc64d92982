// Vantage version.
#pragma once

namespace vantage {
inline constexpr int kVersionMajor = 0;
inline constexpr int kVersionMinor = 1;
inline constexpr int kVersionPatch = 0;
/// "0.1.0"
const char* version();
}  // namespace vantage
