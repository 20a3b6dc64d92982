// Vantage reference interpreter: the executable definition of what lowered IR means
// (docs/semantics.md). It runs one launch deterministically on the host, a block at a time (a
// cluster's blocks together, their threads side by side), each block as thread loops cut at its
// barriers and warp collectives (docs/design.md section 6): between two such points every thread
// runs on its own, one after the other, in the order the options ask for,
// so a missing barrier changes the result as well as being reported (in a kernel that waits on
// mbarriers, a stretch whose threads may wait for each other runs them as fibers: fibers.h). It
// checks as compute-sanitizer
// does on a GPU, but names the user's builder lines: memcheck (accesses outside an argument's extent
// or an allocation), racecheck (two threads, one address, no barrier covering both, at least one a
// write, not both atomic), synccheck (a barrier or warp collective reached by only some of its
// threads, a block whose threads all wait at mbarriers nothing can complete) and initcheck (a read
// of shared or thread-local memory nothing wrote).
//
// Asked to (Options::measure), it also measures what the static cost report predicts
// (docs/report.md), on every request of the launch: each warp's request of each access is the lanes
// that made it at the same iterations of the same loops, and costs what jit/ir/request_cost says;
// each branch and loop condition a warp evaluates splits it when its lanes disagree.
#pragma once

#include <cstdint>
#include <vector>

#include "jit/lower/lower.h"
#include "vantage/report.hpp"

namespace vantage::interp {

enum class Order : std::uint8_t { Forward, Reverse, Random };

struct Options {
  Order order = Order::Forward;
  std::uint64_t seed = 1;  ///< for Order::Random
  bool checks = true;      ///< racecheck and initcheck (memcheck and synccheck are always on)
  /// Thread-statements one launch may execute before it stops with a "limit" error (a loop that
  /// never ends would otherwise hang the interpreter).
  std::int64_t max_statements = std::int64_t{1} << 31;
  /// Where to put the launch's measured costs (requests, lanes, sectors, wavefronts, conflict ways per
  /// access; evaluations and splits per branch), or null. Work, span and flops are left at 0.
  CostReport* measure = nullptr;
};

/// One argument: a scalar (integers in `i` with the IR's representation, floats in `f`) or host
/// memory with its length in elements.
struct Arg {
  bool is_buffer = false;
  std::int64_t i = 0;
  double f = 0;
  void* data = nullptr;
  std::int64_t length = 0;
  std::int64_t extent = -1;  ///< elements the kernel may touch (its declared extent), -1: length

  static Arg buffer(void* data, std::int64_t length) {
    Arg a;
    a.is_buffer = true;
    a.data = data;
    a.length = length;
    return a;
  }
  static Arg integer(std::int64_t v) {
    Arg a;
    a.i = v;
    return a;
  }
  static Arg real(double v) {
    Arg a;
    a.f = v;
    return a;
  }
};

/// What one launch did.
struct Stats {
  std::int64_t thread_statements = 0;  ///< statements executed, summed over threads
};

/// Runs the lowered kernel over `blocks` blocks; throws ExecutionError on the first finding.
Stats run(const lower::Lowered& kernel, std::int64_t blocks, const std::vector<Arg>& args, const Options& options);

}  // namespace vantage::interp
