// `vantage cache ...` subcommands.
#pragma once

#include <string>
#include <vector>

namespace vantage::tools {

/// Runs `vantage cache ARGS...`; returns the process exit code.
int cache_main(const std::vector<std::string>& args);

}  // namespace vantage::tools
