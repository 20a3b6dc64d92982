// The cp.async copies in flight: see copies.h.
#include "jit/sync/copies.h"

#include <algorithm>

namespace vantage::sync::pass {

void CopyGroups::apply(const std::vector<CopyEvent>& events, bool ordered) {
  if (!ordered && !unordered_) {
    // Counting ends here: every group so far joins the bag.
    for (const auto& g : groups_) open_.insert(g.begin(), g.end());
    groups_.clear();
    unordered_ = true;
  }
  for (const CopyEvent& e : events) {
    switch (e.kind) {
      case CopyEvent::Kind::Copy:
        if (e.root) open_.insert(e.root);
        break;
      case CopyEvent::Kind::Commit:
        if (unordered_) break;  // the bag may hold committed copies or not
        groups_.push_back(std::move(open_));
        open_.clear();
        if (groups_.size() > kMaxCopyGroups) {
          groups_[1].insert(groups_[0].begin(), groups_[0].end());
          groups_.erase(groups_.begin());
        }
        break;
      case CopyEvent::Kind::Wait:
        if (unordered_) break;  // which copies the wait completes is not known: none, then
        while (static_cast<std::int64_t>(groups_.size()) > std::max<std::int64_t>(e.pending, 0))
          groups_.erase(groups_.begin());
        break;
    }
  }
}

void CopyGroups::join(const CopyGroups& o) {
  open_.insert(o.open_.begin(), o.open_.end());
  if (unordered_ || o.unordered_) {
    for (const auto& g : groups_) open_.insert(g.begin(), g.end());
    for (const auto& g : o.groups_) open_.insert(g.begin(), g.end());
    groups_.clear();
    unordered_ = true;
    return;
  }
  // wait_group counts from the newest group: align the two lists at their ends.
  if (o.groups_.size() > groups_.size()) groups_.insert(groups_.begin(), o.groups_.size() - groups_.size(), Roots{});
  const std::size_t shift = groups_.size() - o.groups_.size();
  for (std::size_t i = 0; i < o.groups_.size(); ++i)
    groups_[shift + i].insert(o.groups_[i].begin(), o.groups_[i].end());
}

void CopyGroups::waited(std::int64_t wait) {
  if (wait == ir::kNoAsyncWait) return;
  if (wait == ir::kAsyncWaitAll) {
    *this = CopyGroups();
    return;
  }
  while (groups_.size() > static_cast<std::size_t>(wait)) groups_.erase(groups_.begin());
}

CopyGroups::Roots CopyGroups::roots() const {
  Roots all = open_;
  for (const auto& g : groups_) all.insert(g.begin(), g.end());
  return all;
}

}  // namespace vantage::sync::pass
