// Vantage's registry of kernels: a kernel library registers its factories, and every `vantage`
// command (`vantage --load libmykernels.so check NAME`, `ir`, `lower`, `cuda`, `ptx`, `compile`,
// `report`, and `run` and `tune` where the kernel says how) works on them as on the built-in examples.
//
//   Kernel scale();                                           // the library's factory
//   VANTAGE_REGISTER_KERNEL(scale, "y[i] = 2 x[i]", scale);   // at namespace scope, in one .cpp
//
// For `vantage run` and `vantage tune`, register the whole record (docs/runtime.md has an example):
//
//   static const bool registered = [] {
//     vantage::register_kernel({.name = "scale", .what = "y[i] = 2 x[i]", .build = [] { return scale(); },
//                               .sizes = {{"n", 4096}}, .run = make_scale_run,
//                               .space = scale_space, .candidate = scale_candidate});
//     return true;
//   }();
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vantage/kernel.hpp"
#include "vantage/launch.hpp"
#include "vantage/tune.hpp"

namespace vantage {

/// Sizes by parameter name ("n", "M"): what `--size NAME=VALUE` gives a tool.
using Sizes = std::map<std::string, std::int64_t>;

/// One launch of a registered kernel that `vantage run` makes and `vantage tune` times: its grid,
/// its arguments on one device, what they point into, and a check of the result.
struct KernelRun {
  Grid grid;
  std::vector<LaunchArg> args;               ///< in the kernel's parameter order
  std::vector<std::shared_ptr<void>> owned;  ///< the buffers the arguments point into, kept alive
  /// After a launch: "" when the output is right, else what is wrong. Null: not checked.
  std::function<std::string()> check = nullptr;
};

/// One kernel a library offers to the tools.
struct RegisteredKernel {
  std::string name;  ///< what the tools call it: letters, digits and '_'
  std::string what;  ///< one line for `vantage examples`
  std::function<Kernel()> build;
  /// Values of its specialized parameters for a tool that compiles it without sizes; also the
  /// sizes `run` gets where the command line gives none.
  Sizes sizes = {};
  /// The target it needs where the default (sm_90) lacks an instruction it uses.
  std::optional<Arch> arch = std::nullopt;
  /// For `vantage run` and `vantage tune`: the launch at `sizes` on a device. Null: they refuse it.
  std::function<KernelRun(const Device&, const Sizes&)> run = nullptr;
  /// For `vantage tune`: its configurations, and the kernel and grid of one at `sizes` (`run` gives
  /// the arguments). Null: not tunable.
  std::function<tune::Space()> space = nullptr;
  std::function<tune::Candidate(const tune::Config&, const Sizes&)> candidate = nullptr;
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
