// Vantage backends: see backend.h.
#include "backend/backend.h"

namespace vantage::backend {

// Defined in cuda.cpp, cpu.cpp and interp.cpp.
const Backend& cuda();
const Backend& cpu();
const Backend& interpreter();

const Backend& for_kind(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu: return cuda();
    case DeviceKind::Cpu: return cpu();
    case DeviceKind::Interpreter: break;
  }
  return interpreter();
}

}  // namespace vantage::backend
