// Vantage static cost report: what a launch of a kernel costs, computed from its lowered IR at one
// specialization before it ever runs (docs/report.md). For each memory access: global sectors per
// request against the ideal for its width, shared-memory wavefronts and bank-conflict ways,
// predicated-off lanes; for each branch and loop: how often it splits a warp; for the kernel: global
// bytes, floating-point work, and work and span in warp steps. The units are Nsight Compute's
// (32-byte sectors, shared wavefronts), so the two compare line by line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vantage/diagnostics.hpp"
#include "vantage/types.hpp"

namespace vantage {

/// One memory access of the kernel (a load, a store, an atomic or a vector copy) over the launch.
struct AccessCost {
  SourceLoc loc;       ///< the builder line
  std::string memory;  ///< the buffer or shared array
  MemSpace space = MemSpace::Global;
  bool write = false;
  int bytes = 4;                ///< bytes per lane per request
  std::int64_t requests = 0;    ///< warp-level requests over the launch
  double lanes = 0;             ///< active lanes per request (32 less the predicated-off ones)
  double sectors = 0;           ///< global: 32-byte sectors per request
  double ideal_sectors = 0;     ///< global: what the active lanes' bytes need, contiguous and aligned
  double wavefronts = 0;        ///< shared: wavefronts per request
  double ideal_wavefronts = 0;  ///< shared: what the active lanes' bytes need without conflicts
  int conflict_ways = 1;        ///< shared: the worst request's lanes on one bank (distinct words)
  bool exact = true;            ///< false: sampled (an index the report could not follow exactly)
  std::string hint;             ///< what to do about it, when anything
};

/// A branch or loop whose condition may differ between the lanes of a warp.
struct BranchCost {
  SourceLoc loc;
  std::string what;             ///< "if", "for" or "while"
  std::int64_t executions = 0;  ///< warp-level evaluations of the condition over the launch
  std::int64_t divergent = 0;   ///< of those, the ones that split the warp
  bool exact = true;
};

struct CostReport {
  std::string kernel;
  std::int64_t blocks = 0, threads_per_block = 0;
  std::vector<AccessCost> accesses;  ///< in order of first execution
  std::vector<BranchCost> branches;  ///< those that are ever evaluated
  double global_bytes = 0;           ///< sectors moved from and to global memory, in bytes
  double flops = 0;                  ///< floating-point operations (an fma counts 2) over the launch
  double work = 0;                   ///< warp steps (statements a warp executes) over the launch
  double span = 0;                   ///< per block: the sum over barrier intervals of its slowest warp's steps
  int sampled_blocks = 0;            ///< blocks followed (the rest take their measure from them)
  bool exact = true;                 ///< every number above exact
  double analysis_ms = 0;

  /// Floating-point operations per byte moved from global memory.
  double intensity() const { return global_bytes > 0 ? flops / global_bytes : 0; }
  /// A table: one row per access and per divergent branch, with the line, the metric, the ideal and
  /// the hint; then the kernel's totals.
  std::string text() const;
  std::string json() const;
};

}  // namespace vantage
