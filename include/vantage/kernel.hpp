// Vantage public kernel handles: a checked kernel and a checked device function. Both are immutable,
// cheap to copy, and opaque: what they hold is the library's own (see jit/pipeline/handles.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vantage/spec.hpp"

namespace vantage {

class Device;
class Stream;
struct Grid;
struct LaunchReport;
struct CostReport;

namespace detail {
struct KernelData;
struct FunctionData;
struct KernelAccess;
}  // namespace detail

/// A checked, immutable kernel, made by `KernelBuilder::build()`.
class Kernel {
 public:
  Kernel() = default;

  /// False for a default-constructed handle.
  bool defined() const { return data_ != nullptr; }
  const std::string& name() const;
  /// The IR in its stable text form (golden tests, `vantage ir`).
  std::string ir_text() const;
  /// Structural hash: equal for structurally equal kernels (source locations do not count).
  std::uint64_t structural_hash() const;
  bool structurally_equal(const Kernel& other) const;
  /// Size rules that depend on the launch shape and still need to be checked.
  const std::vector<Obligation>& obligations() const;
  /// Peak static shared memory in bytes (with alignment padding), including device functions called.
  std::int64_t shared_bytes() const;

  /// The same kernel whose launches tell NVRTC `options` (fast math, line information, a register
  /// cap, include paths and defines for `unsafe` blocks): a handle of its own, with its own
  /// specializations; the options are part of every cache key.
  Kernel with_compiler(CompilerOptions options) const;
  /// The options its launches use (none for a kernel as built).
  const CompilerOptions& compiler() const;

  /// The generated CUDA C++ for one specialization (see vantage/compile.hpp).
  std::string source(const Spec& spec) const;
  /// PTX from NVRTC for the specialization's architecture.
  std::string ptx(const Spec& spec) const;
  /// A cubin from NVRTC for the specialization's architecture.
  std::vector<char> cubin(const Spec& spec) const;
  /// The lowered IR for one specialization, in its stable text form (`vantage lower`).
  std::string lowered(const Spec& spec) const;
  /// The LLVM IR the CPU backend makes of it (`optimized`: after LLVM's O3 pipeline for this host);
  /// throws ToolchainError when the library was built without the CPU backend.
  std::string llvm_ir(const Spec& spec, bool optimized = false) const;

  /// The static cost report of a launch of `blocks` blocks at this specialization (include
  /// vantage/report.hpp; docs/report.md): `values` gives each scalar parameter the Spec does not
  /// fix, by name, and may give a pointer parameter's length in elements (its extent otherwise).
  CostReport report(const Spec& spec, const std::map<std::string, std::int64_t>& values, std::int64_t blocks) const;

  /// Runs the kernel on `device` with every argument checked first (include vantage/launch.hpp).
  template <class... A>
  LaunchReport launch(const Device& device, Grid grid, A&&... args) const;
  /// The same on `stream` (asynchronous on a GPU).
  template <class... A>
  LaunchReport launch(const Stream& stream, Grid grid, A&&... args) const;

 private:
  friend struct detail::KernelAccess;
  std::shared_ptr<const detail::KernelData> data_;
};

/// A checked device function with a perspective signature and a shared-memory budget, made by
/// `FunctionBuilder::build()` and called with `Scope::call`.
class DeviceFunction {
 public:
  DeviceFunction() = default;
  bool defined() const { return data_ != nullptr; }
  const std::string& name() const;
  std::string ir_text() const;

 private:
  friend struct detail::KernelAccess;
  std::shared_ptr<const detail::FunctionData> data_;
};

}  // namespace vantage
