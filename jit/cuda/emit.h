// Vantage CUDA C++ emitter: turns a specialized kernel into self-contained CUDA C++ with the
// barriers the sync pass placed, `#line` directives at the builder's lines, and no toolkit headers
// unless 16-bit floats need them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "jit/ir/ir.h"
#include "vantage/compile.hpp"

namespace vantage::cuda {

struct EmitOptions {
  std::int64_t threads = 0;  ///< threads per block (T)
  Arch arch = Arch::SM_90;
  std::string entry;  ///< extern "C" name of the kernel
};

struct EmitResult {
  std::string source;
  std::int64_t shared_bytes = 0;
  bool dynamic_shared = false;
  int barriers = 0;
  std::map<int, int> param_alignment;  ///< parameter index -> bytes a vectorized access needs
  std::vector<Diagnostic> problems;    ///< what cannot be generated (grid-wide sync, barrier ids)
};

EmitResult emit(const ir::KernelNode& kernel, const EmitOptions& options);

}  // namespace vantage::cuda
