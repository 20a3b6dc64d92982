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
/// `spec` with ptxas's report of each function (`--ptxas-options=-v`) in NVRTC's log.
Spec with_ptxas_report(Spec spec);
/// Of such a log: the bytes the kernel's entry function spills (stores and loads, as ptxas reports
/// them), and the log without the report (a clean compile leaves nothing). A call's saved registers
/// are the callee's (the error path's `vt_fail` is a function of its own), not the kernel's spills.
/// Throws std::runtime_error where the log reports no entry function.
struct PtxasReport {
  long spills = 0;
  long registers = 0;  ///< the entry function's registers a thread ("Used N registers")
  std::string rest;
};
PtxasReport ptxas_report(const std::string& log);

}  // namespace vantage::examples
