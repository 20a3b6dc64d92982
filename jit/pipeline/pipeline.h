// Vantage pipeline: drives the stages for one (kernel, specialization, target): specialize, place
// barriers and emit CUDA C++, compile with NVRTC. The public entry points (specialize_for, compile,
// compile_many) are in vantage/compile.hpp; the cache compiles through `compile_specialized` so that
// there is one way to turn a specialization into machine code.
#pragma once

#include <string>
#include <string_view>

#include "jit/lower/lower.h"
#include "jit/specialize/specialize.h"
#include "vantage/compile.hpp"

namespace vantage::pipeline {

/// A kernel specialized and lowered for one Spec: what every backend starts from.
struct LoweredKernel {
  specialization::Result specialized;
  lower::Lowered lowered;
};
/// Specializes and lowers; throws CheckError when the Spec breaks a rule or something cannot be
/// lowered (a grid-wide barrier, no barrier id left).
LoweredKernel lower_for(const Kernel& kernel, const Spec& spec);

/// A kernel's entry symbol: `prefix`, the kernel's name with every character that is not a letter
/// or a digit made '_', then '_' and `hash` (its content's hash in hex). The CUDA and CPU backends'
/// one spelling.
std::string entry_symbol(std::string_view prefix, std::string_view kernel, std::string_view hash);

/// NVRTC on a specialization made by `specialize_for`: the compiled result, with the canonical
/// options (exactly those the cache key holds) and the time NVRTC took.
Compiled compile_specialized(Specialized spec, Output output);

}  // namespace vantage::pipeline
