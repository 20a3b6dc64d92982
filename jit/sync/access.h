// What the sync pass records of the statements it walks (see sync.cpp): the memory roots they read
// and write, the indices they use, and the state of accesses since the last barrier. Internal to
// jit/sync.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/ir/ir.h"
#include "jit/ir/range.h"
#include "jit/sync/copies.h"

namespace vantage::sync::pass {

using ir::equal;
using ir::ExprPtr;
using ir::MemNode;
using ir::Range;

/// Root memories, in address order as a std::set would hold them, in one vector: a statement touches
/// a handful of arrays, and every summary and pending state holds several such sets (a set allocated
/// a node per root in each of them).
class Roots {
 public:
  bool insert(const MemNode* r) {
    auto it = std::lower_bound(v_.begin(), v_.end(), r);
    if (it != v_.end() && *it == r) return false;
    v_.insert(it, r);
    return true;
  }
  template <class It>
  void insert(It first, It last) {
    for (; first != last; ++first) insert(*first);
  }
  std::size_t count(const MemNode* r) const { return std::binary_search(v_.begin(), v_.end(), r) ? 1 : 0; }
  std::size_t erase(const MemNode* r) {
    auto it = std::lower_bound(v_.begin(), v_.end(), r);
    if (it == v_.end() || *it != r) return 0;
    v_.erase(it);
    return 1;
  }
  auto begin() const { return v_.begin(); }
  auto end() const { return v_.end(); }
  bool empty() const { return v_.empty(); }
  std::size_t size() const { return v_.size(); }
  void clear() { v_.clear(); }
  bool operator==(const Roots& o) const { return v_ == o.v_; }

 private:
  std::vector<const MemNode*> v_;
};
/// Structurally distinct index expressions, in the order they came. Each is compared by its hash
/// first, so that gathering n distinct indices costs n^2 integer comparisons and no ir::equal
/// between different ones: the wgmma GEMM's epilogue stores at 64 indices, and every construct
/// around them gathers them again.
class IndexList {
 public:
  void add(const ExprPtr& e) {
    if (!contains(e)) {
      hashes_.push_back(e->hash);
      items_.push_back(e);
    }
  }
  bool contains(const ExprPtr& e) const {
    for (std::size_t i = 0; i < hashes_.size(); ++i)
      if (hashes_[i] == e->hash && equal(items_[i], e)) return true;
    return false;
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  std::size_t size() const { return items_.size(); }
  const ExprPtr& operator[](std::size_t i) const { return items_[i]; }

 private:
  std::vector<ExprPtr> items_;
  std::vector<std::uint64_t> hashes_;
};
using Indices = std::map<const MemNode*, IndexList>;

inline void add_index(Indices& m, const MemNode* r, const ExprPtr& e) { m[r].add(e); }

/// Every index in `a` for root r also appears in `b`.
inline bool within(const Indices& a, const Indices& b, const MemNode* r) {
  auto ia = a.find(r), ib = b.find(r);
  if (ia == a.end()) return true;
  if (ib == b.end()) return false;
  for (const auto& e : ia->second)
    if (!ib->second.contains(e)) return false;
  return true;
}

/// A TMA store (its source root and the elements it reads, unknown: every one) or a wait for all but
/// the newest `pending` of its thread's stores.
struct BulkEvent {
  bool wait = false;
  std::int64_t pending = 0;
  const MemNode* root = nullptr;
  std::optional<Range> span;
  SourceLoc loc;
  bool operator==(const BulkEvent& o) const {
    return wait == o.wait && pending == o.pending && root == o.root && span.has_value() == o.span.has_value() &&
           (!span || (span->lo == o.span->lo && span->hi == o.span->hi)) && loc.line == o.loc.line &&
           loc.column == o.loc.column && std::string_view(loc.file) == o.loc.file;
  }
};

/// What statements touch: reads, plain `stores`, other `writes` (calls with mutable pointers, async
/// copies), atomics, and the comparable root indices of reads and stores; a root in `opaque` was
/// also accessed at an index that cannot be compared.
struct Access {
  Roots reads, stores, writes, opaque;
  /// Atomics by root: a bit per AtomicKind done. Atomics of one kind that commutes with itself (add,
  /// min, max) conflict with nothing but each other's absence: any order gives the same memory, and
  /// a barrier between two of them orders nothing the program can see. An exchange conflicts with
  /// every other access of its root, another exchange included (the last one's value stays).
  std::map<const MemNode*, unsigned> atomics;
  /// TMA loads issued (destination root, mbarrier root), and the mbarriers waited on: a TMA load's
  /// data is there only after a wait on its mbarrier, and no barrier replaces that wait.
  std::set<std::pair<const MemNode*, const MemNode*>> tma;
  Roots waits;
  /// Shared roots accessed through the generic proxy (loads, stores, atomics, cp.async) and through
  /// the async proxy (TMA, wgmma): an async access after generic ones needs a proxy fence between.
  Roots generic, async_proxy;
  /// TMA stores and tma_store_waits in program order (a store reads its source until a wait covers
  /// it); `looped`: some are in a loop of the statement, so that their order repeats.
  std::vector<BulkEvent> bulk;
  bool looped = false;
  /// cp.async copies, commits and waits in program order; `cp_ordered` false where a commit or wait
  /// is inside a loop or a branch of the statement, so that their count is not known.
  std::vector<CopyEvent> cp;
  bool cp_ordered = true;
  Indices read_at, store_at;
  /// Shared memory whose bytes these accesses reuse: arrays of scopes that ended, and the regions of
  /// earlier calls, at the same place (jit/ir/shared_layout); any access there conflicts with theirs.
  Roots reuses;
  /// Shared roots: the range every element index of these accesses lies in, unless the root is in
  /// `unspanned` (an access of unknown elements). Accesses of ranges that cannot meet never conflict.
  std::map<const MemNode*, Range> span;
  Roots unspanned;
  void add_span(const MemNode* r, const std::optional<Range>& got) {
    if (!got || unspanned.count(r)) {
      unspanned.insert(r);
      span.erase(r);
      return;
    }
    auto [it, fresh] = span.emplace(r, *got);
    if (!fresh) it->second = it->second.join(*got);
  }
  Indices share_at;   ///< the partition shares the stores went through (see Views::share)
  Indices moving_at;  ///< root indices of stores through shares that change between loop iterations
  Roots unshared;     ///< stored through something other than a partition (a claim, a narrower branch)
  void merge(const Access& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    stores.insert(o.stores.begin(), o.stores.end());
    writes.insert(o.writes.begin(), o.writes.end());
    opaque.insert(o.opaque.begin(), o.opaque.end());
    unshared.insert(o.unshared.begin(), o.unshared.end());
    tma.insert(o.tma.begin(), o.tma.end());
    waits.insert(o.waits.begin(), o.waits.end());
    generic.insert(o.generic.begin(), o.generic.end());
    async_proxy.insert(o.async_proxy.begin(), o.async_proxy.end());
    bulk.insert(bulk.end(), o.bulk.begin(), o.bulk.end());
    cp.insert(cp.end(), o.cp.begin(), o.cp.end());
    cp_ordered = cp_ordered && o.cp_ordered;
    looped = looped || o.looped;
    reuses.insert(o.reuses.begin(), o.reuses.end());
    for (const auto& [r, kinds] : o.atomics) atomics[r] |= kinds;
    for (const auto* r : o.unspanned) add_span(r, std::nullopt);
    for (const auto& [r, g] : o.span) add_span(r, g);
    for (const auto& [r, es] : o.read_at)
      for (const auto& e : es) add_index(read_at, r, e);
    for (const auto& [r, es] : o.store_at)
      for (const auto& e : es) add_index(store_at, r, e);
    for (const auto& [r, es] : o.share_at)
      for (const auto& e : es) add_index(share_at, r, e);
    for (const auto& [r, es] : o.moving_at)
      for (const auto& e : es) add_index(moving_at, r, e);
  }
};

/// Whether the stores of root r in `a` and `b` all went through one partition share.
inline bool one_share(const Access& a, const Access& b, const MemNode* r) {
  const ExprPtr* first = nullptr;
  for (const Access* x : {&a, &b}) {
    auto it = x->share_at.find(r);
    if (it == x->share_at.end()) continue;
    for (const auto& e : it->second) {
      if (!first) first = &e;
      if (!equal(e, *first)) return false;
    }
  }
  return true;
}

/// Accesses since the last barrier.
struct State : Access {
  bool operator==(const State& o) const {
    auto same = [](const Indices& a, const Indices& b) {
      if (a.size() != b.size()) return false;
      for (const auto& [r, es] : a) {
        auto it = b.find(r);
        if (it == b.end() || it->second.size() != es.size()) return false;
        for (std::size_t i = 0; i < es.size(); ++i)
          if (!equal(es[i], it->second[i])) return false;
      }
      return true;
    };
    return reads == o.reads && stores == o.stores && writes == o.writes && copies == o.copies && tma == o.tma &&
           waits == o.waits && generic == o.generic && async_proxy == o.async_proxy && reading == o.reading &&
           opaque == o.opaque && unshared == o.unshared && reuses == o.reuses && atomics == o.atomics &&
           unspanned == o.unspanned &&
           std::equal(span.begin(), span.end(), o.span.begin(), o.span.end(),
                      [](const auto& x, const auto& y) {
                        return x.first == y.first && x.second.lo == y.second.lo && x.second.hi == y.second.hi;
                      }) &&
           same(read_at, o.read_at) && same(store_at, o.store_at) && same(share_at, o.share_at) &&
           same(moving_at, o.moving_at);
  }
  /// A barrier that first waits for the cp.async copies `wait` names (ir::kNoAsyncWait: none)
  /// completes everything pending but TMA loads, which only a wait on their mbarrier does, TMA
  /// stores' reads, which only their thread's tma_store_wait does (`reading`), the copies it leaves
  /// in flight, which stay writes of their roots until a barrier waits for them, and orders nothing
  /// between the proxies, which only a proxy fence does (`generic` stays).
  void clear(std::int64_t wait = ir::kNoAsyncWait) {
    auto keep = std::move(tma);
    auto gen = std::move(generic);
    auto stores = std::move(reading);
    auto flying = std::move(copies);
    *this = State();
    tma = std::move(keep);
    generic = std::move(gen);
    reading = std::move(stores);
    copies = std::move(flying);
    copies.waited(wait);
    for (const auto* r : copies.roots()) {
      writes.insert(r);
      opaque.insert(r);
      add_span(r, std::nullopt);
    }
  }
  /// Where two paths meet: what either left.
  void join(const State& o) {
    merge(o);
    copies.join(o.copies);
  }
  /// TMA stores whose source may still be read, oldest first.
  std::vector<BulkEvent> reading;
  /// The cp.async copies that may be in flight.
  CopyGroups copies;
};

}  // namespace vantage::sync::pass
