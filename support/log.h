// Vantage logging: one spdlog logger, level from VANTAGE_LOG (trace, debug, info, warn, error, off;
// default warn), writing to stderr.
#pragma once

#include <spdlog/spdlog.h>

namespace vantage::logging {

/// The library's logger, created on first use.
spdlog::logger& get();

}  // namespace vantage::logging
