// Vantage's registry of kernels: a kernel library registers its factories, and every `vantage`
// command (`vantage --load libmykernels.so check NAME`, `ir`, `lower`, `cuda`, `ptx`, `compile`,
// `report`) works on them as on the built-in examples.
//
//   Kernel scale();                                           // the library's factory
//   VANTAGE_REGISTER_KERNEL(scale, "y[i] = 2 x[i]", scale);   // at namespace scope, in one .cpp
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vantage/kernel.hpp"

namespace vantage {

/// One kernel a library offers to the tools.
struct RegisteredKernel {
  std::string name;  ///< what the tools call it: letters, digits and '_'
  std::string what;  ///< one line for `vantage examples`
  std::function<Kernel()> build;
  /// Values of its specialized parameters for a tool that compiles it without sizes.
  std::map<std::string, std::int64_t> sizes = {};
  /// The target it needs where the default (sm_90) lacks an instruction it uses.
  std::optional<Arch> arch = std::nullopt;
};

/// Adds `k` to the registry; throws std::invalid_argument when its name is not an identifier or
/// another kernel has it.
void register_kernel(RegisteredKernel k);
/// Every kernel registered so far, in the order they were registered.
std::vector<RegisteredKernel> registered_kernels();

}  // namespace vantage

/// Registers `FACTORY` (a callable returning a Kernel) as NAME when the library is loaded.
#define VANTAGE_REGISTER_KERNEL(NAME, WHAT, FACTORY)                                                \
  static const bool vantage_registered_##NAME = [] {                                                \
    ::vantage::register_kernel(::vantage::RegisteredKernel{#NAME, WHAT, [] { return FACTORY(); }}); \
    return true;                                                                                    \
  }()
