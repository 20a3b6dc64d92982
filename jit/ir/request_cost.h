// Vantage: what one warp's memory request costs, defined once (docs/report.md), in Nsight Compute's
// units. The static cost report (jit/cost) computes it for the requests it follows; the interpreter
// (jit/interp) for every request a launch makes, when asked to measure, so that the two compare.
#pragma once

#include <array>
#include <cstdint>

namespace vantage::ir {

constexpr int kWarpLanes = 32;

struct RequestCost {
  double metric = 0;  ///< global: distinct 32-byte sectors; shared: wavefronts
  double ideal = 0;   ///< what the same bytes need, contiguous from a sector (global) or without conflicts
  int ways = 1;       ///< shared: the most distinct words one bank holds in one phase
};

/// The request of the lanes in `mask`, lane i touching `bytes` bytes from byte address `addr[i]`:
/// - global: the distinct sectors (address / 32) over every lane's bytes; the ideal is the distinct
///   elements' bytes, contiguous from a sector boundary (a broadcast needs one sector);
/// - shared: served in phases of 128 bytes (32 lanes of 4 bytes, 16 of 8, 8 of 16); in each, as many
///   wavefronts as the most distinct 4-byte words any one of the 32 banks holds; the ideal is one per
///   phase with a lane in it.
/// Moving every lane by a multiple of `period(global)` bytes leaves the cost unchanged.
RequestCost request_cost(const std::array<std::int64_t, kWarpLanes>& addr, std::uint32_t mask, int bytes, bool global);

/// Global: 32 (sectors repeat); shared: 4 (a word's move rotates the banks, conflicts stay).
constexpr std::int64_t period(bool global) { return global ? 32 : 4; }

}  // namespace vantage::ir
