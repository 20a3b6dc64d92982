// Vantage example runs: each example kernel launched on a device at a given size, with inputs made
// deterministically and its result checked against a plain C++ reference (integers bit-exact,
// floats within the tolerance each example states). Shared by `vantage run`, the CTest example
// runs and the interpreter tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vantage/vantage.hpp"

namespace vantage::examples {

struct RunResult {
  bool ok = false;
  std::string summary;  ///< what ran and what was checked, one line
  LaunchReport report;
};

/// The sizes an example runs at by default (three or more, some not multiples of the block size).
std::vector<std::map<std::string, std::int64_t>> default_sizes(const std::string& name);
/// Runs example `name` at `size` (missing entries take the first default) on `device`.
RunResult run_example(const std::string& name, const std::map<std::string, std::int64_t>& size, const Device& device);
/// Runs `kernel` (a variant of example `name`, e.g. with a barrier removed) the same way.
RunResult run_kernel(const std::string& name, const Kernel& kernel, const std::map<std::string, std::int64_t>& size,
                     const Device& device);

}  // namespace vantage::examples
