// Vantage string helpers: interning (stable `const char*` for source locations made at run time).
#pragma once

#include <string>

namespace vantage::strings {

/// A pointer that stays valid for the life of the process and is equal for equal strings.
const char* intern(const std::string& s);

}  // namespace vantage::strings
