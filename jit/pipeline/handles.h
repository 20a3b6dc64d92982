// Vantage pipeline handles: what a Kernel and a DeviceFunction hold, and the library's access to it.
// The public headers name only `detail::KernelData`; the IR stays out of them.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "jit/ir/ir.h"
#include "jit/pipeline/signature.h"
#include "vantage/kernel.hpp"

namespace vantage::detail {

struct KernelData {
  std::shared_ptr<const ir::KernelNode> ir;
  std::vector<Obligation> obligations;
  std::int64_t shared_bytes = 0;
  CompilerOptions compiler;  ///< what launches of this handle tell NVRTC (Kernel::with_compiler)
  mutable std::once_flag launch_once;
  mutable std::unique_ptr<KernelSlot> launch;              ///< set once, under launch_once
  mutable std::atomic<KernelSlot*> launch_ready{nullptr};  ///< `launch`, published once it is made
};

struct FunctionData {
  ir::FunctionPtr ir;
};

/// Makes and opens kernel and function handles (the builder makes them; later stages read them).
struct KernelAccess {
  static Kernel make(std::shared_ptr<const ir::KernelNode> ir, std::vector<Obligation> obligations,
                     std::int64_t shared_bytes, CompilerOptions compiler = {});
  static DeviceFunction make(ir::FunctionPtr ir);
  /// The IR of a built kernel; throws CheckError (V0905) for a default-constructed handle.
  static const ir::KernelNode& ir(const Kernel& k);
  /// Everything a built kernel holds; throws CheckError (V0905) for a default-constructed handle.
  static const KernelData& data(const Kernel& k);
  static const std::shared_ptr<const ir::KernelNode>& ir_ptr(const Kernel& k);
  static const ir::FunctionPtr& ir(const DeviceFunction& f);
};

}  // namespace vantage::detail
