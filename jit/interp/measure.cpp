// The interpreter's measurement: the requests a warp's lanes make at one place and the branches
// they take, counted in the units of the cost report (vantage run --measure). See machine.h.
#include "jit/interp/machine.h"

namespace vantage::interp::detail {

void Measurement::enter(Thread& t) {
  if (on_) t.path.push_back(0);
}

void Measurement::at(Thread& t, std::int64_t k) {
  if (on_) t.path.back() = k;
}

void Measurement::leave(Thread& t) {
  if (on_) t.path.pop_back();
}

auto Measurement::path_hash(const std::vector<std::int64_t>& path) -> std::uint64_t {
  std::uint64_t h = 0x243f6a8885a308d3ull;
  for (const auto x : path) {
    h = (h ^ static_cast<std::uint64_t>(x)) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
  }
  return h;
}

void Measurement::request(const Thread& t, const void* node, int part, const Ref& ref, std::int64_t index, int bytes,
                          bool write, SourceLoc loc) {
  const Region& r = *ref.region;
  if (!counting() || r.space == MemSpace::Local) return;
  auto [it, fresh] = sites_.try_emplace(std::make_pair(node, part));
  if (fresh) {
    it->second.order = next_order_++;
    AccessCost& c = it->second.c;
    c.loc = loc;
    c.memory = r.name;
    c.space = r.space;
    c.write = write;
    c.bytes = bytes;
  }
  Request& q = entry(requests_, node, part, t);
  const int lane = t.tid % kWarpLanes;
  q.addr[static_cast<std::size_t>(lane)] =
      (r.space == MemSpace::Shared ? r.at : 0) + (ref.offset + index) * type_bytes(r.elem);
  q.mask |= std::uint32_t{1} << lane;
}

void Measurement::decision(const Thread& t, const void* node, const char* what, SourceLoc loc, bool go) {
  if (!counting()) return;
  auto [it, fresh] = branch_totals_.try_emplace(node);
  if (fresh) {
    it->second.order = next_order_++;
    it->second.c.loc = loc;
    it->second.c.what = what;
  }
  entry(outcomes_, node, 0, t).seen |= go ? 1 : 2;
}

void Measurement::flush() {
  if (!on_) return;
  for (const auto& [place, q] : requests_) {
    Site& s = sites_.at(std::make_pair(place.node, place.part));
    const RequestCost c = request_cost(q.addr, q.mask, s.c.bytes, s.c.space == MemSpace::Global);
    s.c.requests += 1;
    s.lanes += std::popcount(q.mask);
    s.metric += c.metric;
    s.ideal += c.ideal;
    s.c.conflict_ways = std::max(s.c.conflict_ways, c.ways);
  }
  requests_.clear();
  for (const auto& [place, o] : outcomes_) {
    BranchCost& b = branch_totals_.at(place.node).c;
    ++b.executions;
    if (o.seen == 3) ++b.divergent;  // some lanes went on and some did not
  }
  outcomes_.clear();
}

auto Measurement::report(const std::string& kernel, std::int64_t blocks, std::int64_t threads) const -> CostReport {
  CostReport r;
  r.kernel = kernel;
  r.blocks = blocks;
  r.threads_per_block = threads;
  r.sampled_blocks = static_cast<int>(std::min<std::int64_t>(blocks, INT32_MAX));
  r.measured = true;
  std::vector<std::pair<int, AccessCost>> accesses;
  for (const auto& [key, s] : sites_) {
    AccessCost c = s.c;
    const double n = static_cast<double>(c.requests);
    if (n > 0) {
      c.lanes = s.lanes / n;
      (c.space == MemSpace::Global ? c.sectors : c.wavefronts) = s.metric / n;
      (c.space == MemSpace::Global ? c.ideal_sectors : c.ideal_wavefronts) = s.ideal / n;
    }
    if (c.space == MemSpace::Global) r.global_bytes += s.metric * 32.0;
    accesses.emplace_back(s.order, std::move(c));
  }
  std::sort(accesses.begin(), accesses.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [order, c] : accesses) r.accesses.push_back(std::move(c));
  std::vector<std::pair<int, BranchCost>> branches;
  for (const auto& [node, b] : branch_totals_) branches.emplace_back(b.order, b.c);
  std::sort(branches.begin(), branches.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [order, b] : branches) r.branches.push_back(std::move(b));
  return r;
}

}  // namespace vantage::interp::detail
