// The interpreter's checks of one block's accesses: memcheck (every index against its memory),
// racecheck (vector clocks per thread, joined where threads meet), initcheck, and the elements of
// copies in flight. See machine.h.
#include "jit/interp/machine.h"

namespace vantage::interp::detail {

auto Checks::describe(const Thread& t) const -> std::string {
  return "block " + std::to_string(block_of(t)) + " thread " + std::to_string(t.tid);
}

auto Checks::element(const Region& r, std::int64_t i) -> std::string {
  const char* space = r.space == MemSpace::Shared ? "shared" : r.space == MemSpace::Local ? "local" : "global";
  return std::string(space) + " '" + r.name + "'[" + std::to_string(i) + "]";
}

void Checks::join(const std::vector<Thread*>& members) {
  if (!on_) return;
  // Each member's clock becomes the elementwise maximum of all of theirs, then ticks its own entry.
  // The members' rows are a few shared rows (one after a barrier of them all, one per warp after
  // the warps' own) with each member's own entry over its row: the maximum is that of the distinct
  // rows, then of the members' own entries, and it becomes the row they all share.
  const auto n = static_cast<std::size_t>(T_ * C_);
  std::vector<const std::vector<std::uint32_t>*> rows;
  rows.reserve(members.size());
  for (const auto* t : members)
    if (const auto& r = seen_[static_cast<std::size_t>(t->run)]) rows.push_back(r.get());
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  auto most = std::make_shared<std::vector<std::uint32_t>>(n, 0);
  std::uint32_t* m = most->data();
  for (const auto* r : rows) {
    const std::uint32_t* row = r->data();
    for (std::size_t u = 0; u < n; ++u) m[u] = row[u] > m[u] ? row[u] : m[u];
  }
  for (const auto* t : members) {
    const auto u = static_cast<std::size_t>(t->run);
    m[u] = std::max(m[u], own_[u]);
  }
  std::shared_ptr<const std::vector<std::uint32_t>> shared = std::move(most);
  for (const auto* t : members) {
    const auto u = static_cast<std::size_t>(t->run);
    seen_[u] = shared;
    own_[u] = (*shared)[u] + 1;
  }
}

void Checks::release(const Thread& t, std::vector<std::uint32_t>& into) {
  if (!on_) return;
  const std::int64_t n = T_ * C_;
  into.resize(static_cast<std::size_t>(n), 0);
  for (std::int64_t u = 0; u < n; ++u)
    into[static_cast<std::size_t>(u)] = std::max(into[static_cast<std::size_t>(u)], clock(t.run, u));
  ++own_[static_cast<std::size_t>(t.run)];
}

void Checks::acquire(const Thread& t, const std::vector<std::uint32_t>& from) {
  if (!on_) return;
  const auto me = static_cast<std::size_t>(t.run);
  auto row = std::make_shared<std::vector<std::uint32_t>>(static_cast<std::size_t>(T_ * C_), 0);
  if (seen_[me]) *row = *seen_[me];
  for (std::size_t u = 0; u < from.size() && u < row->size(); ++u) (*row)[u] = std::max((*row)[u], from[u]);
  // Its own entry stays: no thread has seen more of it than it has.
  seen_[me] = std::move(row);
}

auto Checks::new_site(const SourceLoc& l, std::size_t h) -> std::uint32_t {
  auto [it, added] = site_index_.try_emplace({l.file, l.line, l.column}, static_cast<std::uint32_t>(sites_.size()));
  if (added) sites_.push_back(l);
  site_cache_[h] = {l, it->second};
  return it->second;
}

auto Checks::bounds(const Thread& t, const Ref& ref, std::int64_t index, SourceLoc l, const char* what) const
    -> std::int64_t {
  std::int64_t i = ref.offset + index;
  if (index < 0 || i < 0 || i >= ref.region->length)
    throw ExecutionError("memcheck",
                         describe(t) + " " + what + " " + element(*ref.region, i) + " at " + where(l) +
                             ", outside its " + std::to_string(ref.region->length) + " elements",
                         {l});
  return i;
}

void Checks::proven(const Thread& t, const Ref& ref, std::int64_t index, bool writing, SourceLoc l) const {
  std::int64_t i = ref.offset + index;
  if (index >= 0 && i >= 0 && i < ref.region->length) return;
  throw InternalError("lowering proved the " + std::string(writing ? "write to " : "read of ") +
                      element(*ref.region, i) + " at " + where(l) + " inside its " +
                      std::to_string(ref.region->length) + " elements, and left it unchecked; " + describe(t) +
                      " reaches it (a wrong bounds proof, a bug in Vantage)");
}

auto Checks::ordered_before(const Access& a, const Thread& t) const -> bool {
  // Blocks that do not run together are ordered by nothing but the kernel's end.
  if (a.block < block_ || a.block >= block_ + C_) return false;
  const std::int64_t run = (a.block - block_) * T_ + a.thread;
  if (run == t.run) return true;
  return clock(t.run, run) >= a.clock;
}

void Checks::check_reused(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l) const {
  const std::int64_t size = type_bytes(r.elem), lo = r.at + i * size, hi = lo + size;
  for (const Region* q : r.reused) {
    const std::int64_t qs = type_bytes(q->elem);
    if (q->shadow.empty() || hi <= q->at || lo >= q->at + q->length * qs) continue;
    const std::int64_t first = std::max<std::int64_t>(0, (lo - q->at) / qs);
    const std::int64_t last = std::min<std::int64_t>(q->length - 1, (hi - 1 - q->at) / qs);
    for (std::int64_t j = first; j <= last; ++j) {
      const Shadow& s = q->shadow[static_cast<std::size_t>(j)];
      auto reuse_race = [&](const Access& a, bool wrote) {
        throw ExecutionError("racecheck",
                             describe(t) + (writing ? " writes " : " reads ") + element(r, i) + " at " + where(l) +
                                 ", whose bytes are also " + element(*q, j) + ", which block " +
                                 std::to_string(a.block) + " thread " + std::to_string(a.thread) +
                                 (wrote ? " wrote" : " read") + " at " + where(loc(a)) +
                                 " with no barrier between them covering both threads (shared memory reused)",
                             {l, loc(a)});
      };
      if (s.write.block >= 0 && !ordered_before(s.write, t)) reuse_race(s.write, true);
      if (writing && s.reads)
        for (const auto& a : q->reads[s.reads - 1])
          if (!ordered_before(a, t)) reuse_race(a, false);
    }
  }
}

void Checks::check_inflight(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l) const {
  if (r.inflight.empty()) return;
  auto it = r.inflight.find(i);
  if (it == r.inflight.end()) return;
  const Access& a = it->second;
  if (a.atomic == kStoreRead) {
    if (!writing) return;  // the TMA store only reads it
    throw ExecutionError("racecheck",
                         describe(t) + " writes " + element(r, i) + " at " + where(l) +
                             ", which the TMA store issued by " + "block " + std::to_string(a.block) + " thread " +
                             std::to_string(a.thread) + " at " + where(loc(a)) +
                             " may still be reading (that thread has not waited for it: tma_store_wait)",
                         {l, loc(a)});
  }
  throw ExecutionError("racecheck",
                       describe(t) + (writing ? " writes " : " reads ") + element(r, i) + " at " + where(l) +
                           ", which the " + (a.atomic == kWgmmaWrite ? "wgmma" : "cp.async") + " issued by block " +
                           std::to_string(a.block) + " thread " + std::to_string(a.thread) + " at " + where(loc(a)) +
                           " has not written yet (that thread has not waited for it)",
                       {l, loc(a)});
}

void Checks::uninitialised(const Region& r) const {
  if (r.uninit.empty()) return;
  const auto& [i, a] = *r.uninit.begin();  // the lowest element
  throw ExecutionError("initcheck",
                       "block " + std::to_string(a.block) + " thread " + std::to_string(a.thread) + " reads " +
                           element(r, i) + " at " + where(loc(a)) + ", which nothing in this block wrote before",
                       {loc(a)});
}

void Checks::read(const Thread& t, Region& r, std::int64_t i, SourceLoc l, std::uint8_t atomic, bool record) {
  check_inflight(t, r, i, false, l);
  if (!r.shadow.empty()) {
    Shadow& s = r.shadow[static_cast<std::size_t>(i)];
    // A read before any write is reported when the block ends, unless another thread's write
    // in the same barrier interval turns it into a race first (the likelier missing barrier).
    if (r.initcheck && !s.init && !r.uninit.count(i)) r.uninit.emplace(i, access(t, l, atomic));
    if (r.track) {
      if (s.write.block >= 0 && !ordered_before(s.write, t) && !exclusive(t, s.write, atomic))
        race(t, r, i, false, l, s.write, true);
      if (record) {
        if (!s.reads) {
          if (r.spare.empty()) {
            r.reads.emplace_back();
            s.reads = static_cast<std::uint32_t>(r.reads.size());
          } else {
            s.reads = r.spare.back();
            r.spare.pop_back();
          }
        }
        auto& reads = r.reads[s.reads - 1];
        std::erase_if(reads, [&](const Access& a) { return a.block == block_of(t) && a.thread == t.tid; });
        reads.push_back(access(t, l, atomic));
      }
      if (!r.reused.empty()) check_reused(t, r, i, false, l);
    }
  }
}

void Checks::write(const Thread& t, Region& r, std::int64_t i, SourceLoc l, std::uint8_t atomic) {
  check_inflight(t, r, i, true, l);
  if (!r.shadow.empty()) {
    Shadow& s = r.shadow[static_cast<std::size_t>(i)];
    s.init = true;
    if (r.track) {
      if (s.write.block >= 0 && !ordered_before(s.write, t) && !exclusive(t, s.write, atomic))
        race(t, r, i, true, l, s.write, true);
      if (s.reads) {
        auto& reads = r.reads[s.reads - 1];
        for (const auto& a : reads)
          if (!ordered_before(a, t) && !exclusive(t, a, atomic)) race(t, r, i, true, l, a, false);
        reads.clear();
        r.spare.push_back(s.reads);
        s.reads = 0;
      }
      s.write = access(t, l, atomic);
      if (!r.reused.empty()) check_reused(t, r, i, true, l);
    }
  }
}

}  // namespace vantage::interp::detail
