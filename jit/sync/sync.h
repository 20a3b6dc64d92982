// Vantage automatic synchronization: decides where barriers go so that memory written by narrower
// units is complete before anyone else reads it, and read before anyone overwrites it.
#pragma once

#include <unordered_map>
#include <vector>

#include "jit/ir/ir.h"

namespace vantage::sync {

/// A barrier over the threads of the code perspective `over`, placed before a statement.
/// `async_wait` first waits for the thread's outstanding cp.async copies.
struct Barrier {
  Perspective over;
  bool async_wait = false;
};

/// A use of memory a TMA load may still be writing: no wait on its mbarrier stands between them.
struct UnwaitedTma {
  const ir::StmtNode* use;
  SourceLoc load;
  std::string memory, mbarrier;
};

struct Plan {
  std::unordered_map<const ir::StmtNode*, std::vector<Barrier>> before;
  /// Barriers needed across units wider than a block (impossible on a GPU): the statements that
  /// conflict, for a diagnostic.
  std::vector<const ir::StmtNode*> grid_conflicts;
  std::vector<UnwaitedTma> tma_unwaited;
};

/// Plans the barriers of a body that runs at perspective `top` (grid(1) for a kernel, the
/// signature for a device function). With `threads` (T, the threads per block; 0: unknown), two
/// accesses of one shared array whose elements lie in ranges that cannot meet need no barrier.
Plan plan(const ir::StmtPtr& body, Perspective top, std::int64_t threads = 0);

/// The body with an `ir::Barrier` of kind `Planned` before every statement the plan puts a barrier
/// before (jit/lower resolves them to hardware primitives); `grid_conflicts` receives the statements
/// that would need a barrier across blocks.
ir::StmtPtr insert(const ir::StmtPtr& body, Perspective top, std::vector<const ir::StmtNode*>* grid_conflicts,
                   std::vector<UnwaitedTma>* tma_unwaited = nullptr, std::int64_t threads = 0);

}  // namespace vantage::sync
