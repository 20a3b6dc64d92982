// A runtime file that reaches the compiler the way the runtime does, through the backends'
// interface and the kernel's signature: the build must accept it (the control for
// layers.a_wrong_include_fails_the_build, which would otherwise pass on any failure).
#include "backend/backend.h"
#include "jit/pipeline/signature.h"

int layer_probe_right() { return sizeof(vantage::backend::Launch) > 0 ? 0 : 1; }
