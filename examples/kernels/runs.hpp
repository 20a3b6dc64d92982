// Vantage example runs: each example kernel launched on a device at a given size, with inputs made
// deterministically and its result checked against a plain C++ reference (integers bit-exact,
// floats within the tolerance each example states). On a GPU the inputs are copied to device
// buffers and the result back. Shared by `vantage run`, the CTest example runs, the interpreter
// tests and the GPU check.
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
  std::vector<double> output;  ///< what the kernel wrote (to compare one device with another)
};

/// The sizes an example runs at by default (three or more, some not multiples of the block size).
std::vector<std::map<std::string, std::int64_t>> default_sizes(const std::string& name);
/// The blocks its run launches at `size` (what `vantage report` assumes unless told).
std::int64_t default_blocks(const std::string& name, const std::map<std::string, std::int64_t>& size);
/// The grid its run launches at `size`: default_blocks blocks of the threads the kernel declares.
Grid default_grid(const std::string& name, const std::map<std::string, std::int64_t>& size);
/// Runs example `name` at `size` (missing entries take the first default) on `device`.
RunResult run_example(const std::string& name, const std::map<std::string, std::int64_t>& size, const Device& device);
/// Runs `kernel` (a variant of example `name`, e.g. with a barrier removed) the same way.
RunResult run_kernel(const std::string& name, const Kernel& kernel, const std::map<std::string, std::int64_t>& size,
                     const Device& device);

}  // namespace vantage::examples
