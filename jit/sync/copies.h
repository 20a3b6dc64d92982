// The cp.async copies a thread may still have in flight, as the sync pass follows them (sync.cpp).
//
// A thread's copies land when that thread waits for them: `cp.async.wait_group n` completes every
// group it committed but the newest n, `cp.async.wait_all` every copy. A barrier makes the landed
// data visible to the other threads, so a barrier Vantage places before a use of copied data waits
// first for the groups that use touches, and only for those: the newer groups stay in flight across
// it, as a pipeline of several slots needs (the copies of tile k + 2 arriving while tile k is
// multiplied). The groups are followed per root memory, oldest first; where two paths meet (the
// branches of an if, a loop's iterations) they are joined from the newest group backwards, as
// wait_group counts, each group the union of both. Where the pass cannot count (a commit or a wait
// inside a loop or a branch of one statement it summarises), every copy is one bag and a wait for
// any of it is a wait for all.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "jit/ir/ir.h"

namespace vantage::sync::pass {

/// A cp.async statement, in program order: a copy into `root`, a commit of the copies since the
/// last one as a group, or a wait for every committed group but the newest `pending`.
struct CopyEvent {
  enum class Kind : std::uint8_t { Copy, Commit, Wait };
  Kind kind = Kind::Copy;
  const ir::MemNode* root = nullptr;
  std::int64_t pending = 0;
  bool operator==(const CopyEvent&) const = default;
};

/// Groups in flight past this many are merged (the oldest two into one): a loop that commits
/// without waiting reaches a fixed point.
constexpr std::size_t kMaxCopyGroups = 8;

class CopyGroups {
 public:
  using Roots = std::set<const ir::MemNode*>;

  /// A statement's cp.async events, in order; `ordered` false where their count is not known.
  void apply(const std::vector<CopyEvent>& events, bool ordered);
  /// The copies that may be in flight after either of two paths.
  void join(const CopyGroups& o);
  /// What a barrier must wait for first so that every copy into a root `touched` names is
  /// complete: ir::kNoAsyncWait, ir::kAsyncWaitAll, or n > 0 (every group but the newest n).
  template <class Touched>
  std::int64_t wait_for(const Touched& touched) const {
    auto any = [&](const Roots& rs) {
      for (const auto* r : rs)
        if (touched(r)) return true;
      return false;
    };
    if (any(open_)) return ir::kAsyncWaitAll;
    for (std::size_t i = groups_.size(); i-- > 0;)
      if (any(groups_[i])) return static_cast<std::int64_t>(groups_.size() - 1 - i);  // 0: all
    return ir::kNoAsyncWait;
  }
  /// After a barrier's wait (`wait_for`'s answer).
  void waited(std::int64_t wait);
  /// Every root a copy in flight may write.
  Roots roots() const;
  bool empty() const { return groups_.empty() && open_.empty(); }
  bool operator==(const CopyGroups&) const = default;

 private:
  std::vector<Roots> groups_;  ///< committed, oldest first
  Roots open_;                 ///< not yet committed (or, unordered, every copy)
  bool unordered_ = false;     ///< the count of groups is not known
};

}  // namespace vantage::sync::pass
