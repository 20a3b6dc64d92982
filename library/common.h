// What the device library's files share: the checks of a helper's preconditions, diagnosed at the
// caller's line.
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>

#include "vantage/builder.hpp"

namespace vantage::lib::detail {

/// The block size a block-level helper needs: declared, a multiple of 32, at most 1024. Diagnoses
/// (V0913, naming `lib::helper`, at the caller's line) and returns nothing otherwise.
std::optional<std::int64_t> warps_block(Scope& s, const char* helper, const std::source_location& loc);

}  // namespace vantage::lib::detail
