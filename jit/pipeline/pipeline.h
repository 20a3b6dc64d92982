// Vantage pipeline: drives the stages for one (kernel, specialization, target), each a value the
// next takes and a caller may hold: `lower_for` (specialized, barriers placed, lowered: what every
// backend starts from), `emit` (CUDA C++ with its guards and signature: a `Specialized`),
// `compile_specialized` (NVRTC: a `Compiled`); a backend then loads it (backend/backend.h: an
// `Executable`). The public entry points (specialize_for, compile, compile_many) are in
// vantage/compile.hpp; the cache compiles through `compile_specialized` so that there is one way to
// turn a specialization into machine code.
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

/// The CUDA C++ of a lowered kernel (`stage`, made by lower_for for the same kernel and Spec), with
/// the guards, parameters and checked accesses a launch needs. Throws CheckError when the kernel
/// needs more shared memory than the architecture allows, or an index cannot be computed exactly.
Specialized emit(const Kernel& kernel, const Spec& spec, LoweredKernel stage);

/// A kernel's entry symbol: `prefix`, the kernel's name with every character that is not a letter
/// or a digit made '_', then '_' and `hash` (its content's hash in hex). The CUDA and CPU backends'
/// one spelling.
std::string entry_symbol(std::string_view prefix, std::string_view kernel, std::string_view hash);

/// NVRTC on a specialization made by `specialize_for`: the compiled result, with the canonical
/// options (exactly those the cache key holds) and the time NVRTC took.
Compiled compile_specialized(Specialized spec, Output output);

}  // namespace vantage::pipeline
