// A runtime file that reaches past the backends into the CUDA emitter: the build must refuse it
// (the test layers.a_wrong_include_fails_the_build compiles this with the runtime layer's flags).
#include "jit/cuda/emit.h"

int layer_probe_wrong() { return 0; }
