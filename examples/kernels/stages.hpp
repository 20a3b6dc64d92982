// Vantage examples: look at any stage of a kernel from the command line (`--emit=ir|lowered|cuda|ptx|sass`,
// `--arch=sm_XX`), and disassemble cubins with cuobjdump.
#pragma once

#include <string>
#include <vector>

#include "vantage/vantage.hpp"

namespace vantage::examples {

/// Handles `--emit=...` and `--arch=...`. Returns -1 when no stage was asked for (the example then
/// does its own job), else the exit code after printing the stage.
int emit_stage(int argc, char** argv, const Kernel& kernel, Spec spec = {});

/// cuobjdump: $VANTAGE_CUOBJDUMP, the copy scripts/setup installs, the toolkit, or PATH; "" if none.
std::string find_cuobjdump();
/// SASS of a cubin through `cuobjdump --dump-sass`; throws ToolchainError without cuobjdump.
std::string sass(const std::vector<char>& cubin);

}  // namespace vantage::examples
