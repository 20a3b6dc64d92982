// Vantage string helpers: interning (stable `const char*` for source locations made at run time).
#pragma once

#include <cstdint>
#include <string>

namespace vantage::strings {

/// A pointer that stays valid for the life of the process and is equal for equal strings.
const char* intern(const std::string& s);

/// What every device says of a failed `assert_that` (ExecutionError "assert"): `where` ("on the CPU,
/// kernel 'k'"), the block and thread, its text and `at` (the user's line, "file:line:column").
std::string failed_assertion(const std::string& where, std::uint64_t block, std::uint64_t thread,
                             const std::string& what, const std::string& at);

}  // namespace vantage::strings
