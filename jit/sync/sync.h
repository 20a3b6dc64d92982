// Vantage automatic synchronization: decides where barriers go so that memory written by narrower
// units is complete before anyone else reads it, and read before anyone overwrites it.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jit/ir/ir.h"

namespace vantage::sync {

/// A barrier over the threads of the code perspective `over`, placed before a statement.
/// `async_wait` first waits for the thread's outstanding cp.async copies (ir::kNoAsyncWait: none;
/// ir::kAsyncWaitAll: all; n > 0: every group but the newest n); `proxy_fence` first fences the
/// generic proxy's shared accesses against the async proxy's after the barrier.
struct Barrier {
  Perspective over;
  std::int64_t async_wait = ir::kNoAsyncWait;
  bool proxy_fence = false;
};

/// A use of memory a TMA load may still be writing (no wait on its mbarrier stands between them), or
/// a write of memory a TMA store may still be reading (no tma_store_wait of its thread covers it):
/// `store`, and then `mbarrier` is empty.
struct UnwaitedTma {
  const ir::StmtNode* use;
  SourceLoc load;
  std::string memory, mbarrier;
  bool store = false;
};

struct Plan {
  std::unordered_map<const ir::StmtNode*, std::vector<Barrier>> before;
  /// Barriers at the end of a `while` loop's body (keyed by the loop): its condition is evaluated
  /// again after every iteration, and reads what the body wrote.
  std::unordered_map<const ir::StmtNode*, std::vector<Barrier>> at_end;
  /// Barriers needed across units wider than a block (impossible on a GPU): the statements that
  /// conflict, for a diagnostic.
  std::vector<const ir::StmtNode*> grid_conflicts;
  std::vector<UnwaitedTma> tma_unwaited;
  /// Statements before which the threads that run them fence the proxies (fence.proxy.async) with no
  /// barrier: a TMA or wgmma access of shared memory the same threads accessed with loads or stores.
  std::unordered_set<const ir::StmtNode*> fences;
};

/// A partition that hands one element to two of its units where its body writes (shares.cpp): the
/// two threads would race, and no barrier can order them.
struct SharedElement {
  const ir::StmtNode* partition;
  std::string memory;                               ///< the partitioned memory's name
  std::array<std::int64_t, 2> units;                ///< the two units, numbered inside the code's unit
  std::int64_t element;                             ///< the element of `memory` both get
  std::array<std::vector<std::int64_t>, 2> locals;  ///< the local index each unit writes it at
  std::array<SourceLoc, 2> writes;                  ///< the writes, in the order of `units`
  /// The units are in two blocks (a partition of the grid's memory): the kernel races only when
  /// launched with two blocks or more.
  bool across_blocks = false;
};

/// The written partitions of a body at perspective `top` whose index function is not injective over
/// its units and the local indices its body writes, as far as evaluating it for every unit of a
/// block (or of the first blocks, for a grid's) with T threads shows: each with one shared element.
/// Only elements whose value is certain for both units are compared, so a partition reported
/// overlaps; one not reported may still overlap where the values are unknown.
std::vector<SharedElement> overlapping_shares(const ir::StmtPtr& body, Perspective top, std::int64_t threads,
                                              std::optional<std::int64_t> blocks = std::nullopt);

/// Plans the barriers of a body that runs at perspective `top` (grid(1) for a kernel, the
/// signature for a device function). With `threads` (T, the threads per block; 0: unknown), two
/// accesses of one shared array whose elements lie in ranges that cannot meet need no barrier.
Plan plan(const ir::StmtPtr& body, Perspective top, std::int64_t threads = 0);

/// The body with an `ir::Barrier` of kind `Planned` before every statement the plan puts a barrier
/// before, and at the end of every loop body it puts one at (jit/lower resolves them to hardware
/// primitives); `grid_conflicts` receives the statements that would need a barrier across blocks.
ir::StmtPtr insert(const ir::StmtPtr& body, Perspective top, std::vector<const ir::StmtNode*>* grid_conflicts,
                   std::vector<UnwaitedTma>* tma_unwaited = nullptr, std::int64_t threads = 0);

}  // namespace vantage::sync
