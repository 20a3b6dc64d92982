// Vantage cost analysis: what it counts: each access's requests (sectors, wavefronts, conflicts)
// over the executions its representatives stand for, each branch's decisions, which numbers are
// estimates, and the report's rows and hints. See analyzer.h.
#include "jit/cost/analyzer.h"

namespace vantage::cost::detail {

auto Tally::site(const void* node, int part, SourceLoc loc, const MemNode& root, bool write, int bytes) -> Site& {
  auto [it, fresh] = sites_.try_emplace(std::make_pair(node, part));
  Site& s = it->second;
  if (fresh) {
    s.order = next_order_++;
    s.c.loc = loc;
    s.c.memory = root.name;
    s.c.space = root.space;
    s.c.write = write;
    s.c.bytes = bytes;
  }
  return s;
}

void Tally::count(Site& s, const std::array<std::int64_t, kLanes>& addr, Mask known, int bytes, bool global,
                  const Motion& mo, const Motions& mos, double weight) {
  const RequestCost here = request_cost(addr, known, bytes, global);
  if (s.weight == 0 && std::popcount(known) > 1) {
    const int i0 = std::countr_zero(known), i1 = std::countr_zero(known & (known - 1));
    const std::int64_t d = (addr[i1] - addr[i0]) / (i1 - i0);
    bool even = (addr[i1] - addr[i0]) % (i1 - i0) == 0;
    each(known, [&](int i) { even = even && addr[i] - addr[i0] == d * (i - i0); });
    s.strided = even;
    s.stride = d;
  }
  s.weight += weight;
  s.lanes += weight * std::popcount(known);
  s.ways = std::max(s.ways, here.ways);
  // This request stands for every execution of the representatives being followed, whose
  // addresses are this one's moved by the same D in every lane (or the cost is a guess). A cost
  // repeats when D moves by its period (a sector, a bank's word), so it is counted by D's residue:
  // the slopes' residues are counted exactly over the frames' steps; a rigid part (a multiple of
  // its grain, nothing more known) is exact only where every residue it may add costs the same.
  const std::int64_t period = ir::period(global);
  if (mos.reps.empty() || Motions::moves_by(mo, period)) {
    s.metric += weight * here.metric;
    s.ideal += weight * here.ideal;
    return;
  }
  if (mo.kind != Motion::Moving) {
    s.metric += weight * here.metric;
    s.ideal += weight * here.ideal;
    inexact(s);
    return;
  }
  std::array<double, 32> dist{};  // executions by the residue of their slopes' move
  dist[0] = 1;
  for (std::size_t f = 0; f < mos.reps.size(); ++f) {
    const std::int64_t count = mos.reps[f].hi - mos.reps[f].lo + 1;
    const std::int64_t step = ((mo.slope[f] % period) + period) % period;
    std::array<double, 32> next{};
    if (step == 0) {
      for (std::int64_t q = 0; q < period; ++q) next[q] = dist[q] * static_cast<double>(count);
    } else {
      std::array<double, 32> h{};  // this frame's moves by residue: P consecutive steps cover them
      for (std::int64_t j = 0; j < std::min<std::int64_t>(count, period); ++j) {
        const std::int64_t d = mos.reps[f].lo + j;
        const std::int64_t q = ((step * (((d % period) + period) % period)) % period);
        h[static_cast<std::size_t>(q)] += static_cast<double>((count - 1 - j) / period + 1);
      }
      for (std::int64_t x = 0; x < period; ++x)
        if (dist[x] != 0)
          for (std::int64_t y = 0; y < period; ++y) next[(x + y) % period] += dist[x] * h[y];
    }
    dist = next;
  }
  const std::int64_t rigid_step = mo.rigid ? std::gcd(mo.grain, period) : period;
  auto moved_cost = [&](std::int64_t q) {
    std::array<std::int64_t, kLanes> moved = addr;
    each(known, [&](int i) { moved[i] += q; });
    return request_cost(moved, known, bytes, global);
  };
  for (std::int64_t q = 0; q < period; ++q) {
    if (dist[q] == 0) continue;
    const RequestCost c = q == 0 ? here : moved_cost(q);
    for (std::int64_t k = rigid_step; k < period; k += rigid_step)
      if (moved_cost((q + k) % period).metric != c.metric) {
        inexact(s);
      }
    s.metric += dist[q] * c.metric;
    s.ideal += dist[q] * c.ideal;
    s.ways = std::max(s.ways, c.ways);
  }
}

auto Tally::branch(const StmtNode* node, const char* what, SourceLoc loc) -> BranchSite& {
  auto [it, fresh] = branches_.try_emplace(node);
  if (fresh) {
    it->second.order = next_order_++;
    it->second.c.loc = loc;
    it->second.c.what = what;
  }
  return it->second;
}

auto Tally::contents(const StmtNode& s) -> const Contents& {
  auto it = contents_.find(&s);
  if (it == contents_.end()) it = contents_.emplace(&s, contents_of(s)).first;
  return it->second;
}

void Tally::taint(const StmtNode& s) {
  const Contents& c = contents(s);
  if (tainted_stmts_.try_emplace(&s, next_order_++).second) {
    for (const AccessAt& a : c.accesses) tainted_.insert(a.node);
    tainted_.insert(c.branches.begin(), c.branches.end());
  }
}

auto Tally::unreached() -> void {
  std::vector<std::pair<Order, const StmtNode*>> tainted;
  for (const auto& [node, order] : tainted_stmts_) tainted.emplace_back(order, node);
  std::sort(tainted.begin(), tainted.end());
  Order next = kUnreached;
  for (const auto& [order, node] : tainted) {
    const Contents* c = &contents(*node);
    for (const AccessAt& a : c->accesses) {
      if (a.mem->space == MemSpace::Local) continue;
      auto [it, fresh] = sites_.try_emplace(std::make_pair(a.node, a.part));
      if (!fresh) continue;
      Site& s = it->second;
      s.order = next++;
      s.c.loc = a.loc;
      s.c.memory = a.mem->name;
      s.c.space = a.mem->space;
      s.c.write = a.write;
      s.c.bytes = a.bytes;  // (an estimate: its node is tainted)
    }
    for (const StmtNode* b : c->branches)
      if (!branches_.count(b)) {
        BranchSite& site = branch(b,
                                  b->kind == StmtKind::If    ? "if"
                                  : b->kind == StmtKind::For ? "for"
                                                             : "while",
                                  b->loc);
        site.order = next++;
      }
  }
}

auto Tally::block_sensitive(const KernelNode& k) const -> bool {
  const BlockDependence dep = block_dependence(k);
  if (dep.everything) return true;
  for (const auto& [key, site] : sites_)
    if ((site.inexact || tainted_.count(key.first)) && dep.nodes.count(key.first)) return true;
  for (const auto& [node, b] : branches_)
    if ((b.inexact || tainted_.count(node)) && dep.nodes.count(node)) return true;
  return false;
}

void Tally::fill(CostReport& r) const {
  std::vector<std::pair<const void*, const Site*>> sites;
  for (const auto& [key, s] : sites_) sites.emplace_back(key.first, &s);
  std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) { return a.second->order < b.second->order; });
  for (auto [node, s] : sites) {
    AccessCost c = s->c;
    c.requests = std::llround(s->weight);
    c.lanes = s->weight > 0 ? s->lanes / s->weight : 0;
    if (c.space == MemSpace::Global) {
      c.sectors = s->weight > 0 ? s->metric / s->weight : 0;
      c.ideal_sectors = s->weight > 0 ? s->ideal / s->weight : 0;
      r.global_bytes += s->metric * 32.0;
    } else {
      c.wavefronts = s->weight > 0 ? s->metric / s->weight : 0;
      c.ideal_wavefronts = s->weight > 0 ? s->ideal / s->weight : 0;
      c.conflict_ways = s->ways;
    }
    c.exact = !s->inexact && !tainted_.count(node);
    r.exact = r.exact && c.exact;
    c.compiler_may_merge = !c.write && mergeable_.count(node) > 0;
    c.async_copy = async_.count(node) > 0;
    c.hint = hint(c, *s);
    if (c.compiler_may_merge)
      c.hint += std::string(c.hint.empty() ? "" : "; ") +
                "next to another load of an adjacent element: the compiler may merge them (a GPU counts fewer)";
    if (auto kept = scalar_copies_.find(node); kept != scalar_copies_.end())
      c.hint += std::string(c.hint.empty() ? "" : "; ") + kept->second;
    r.accesses.push_back(std::move(c));
  }
  std::vector<std::pair<const StmtNode*, const BranchSite*>> branches;
  for (const auto& [node, b] : branches_) branches.emplace_back(node, &b);
  std::sort(branches.begin(), branches.end(),
            [](const auto& a, const auto& b) { return a.second->order < b.second->order; });
  for (auto [node, b] : branches) {
    BranchCost c = b->c;
    c.executions = std::llround(b->exec);
    c.divergent = std::llround(b->div);
    c.exact = !b->inexact && !tainted_.count(node);
    r.exact = r.exact && c.exact;
    r.branches.push_back(std::move(c));
  }
}

auto Tally::hint(const AccessCost& c, const Site& s) -> std::string {
  auto num = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", x);
    return std::string(b);
  };
  const std::int64_t eb = std::max(1, c.bytes);
  if (c.space == MemSpace::Global) {
    if (c.sectors <= c.ideal_sectors + 1e-9) return "";
    const std::string cost = num(c.sectors) + " sectors per request where " + num(c.ideal_sectors) + " would do";
    if (s.strided && s.stride == eb)
      return cost +
             ": the warp's elements are contiguous but do not start on a 32-byte boundary (align the first element, "
             "or the rows, to 8 floats)";
    if (s.strided && std::llabs(s.stride) > eb)
      return "stride " + std::to_string(s.stride / eb) + " elements: " + cost +
             "; make consecutive threads touch consecutive elements (transpose through shared memory)";
    return cost +
           ": the lanes' addresses are scattered or cross rows; make consecutive threads touch consecutive elements";
  }
  if (c.conflict_ways <= 1 || c.wavefronts <= c.ideal_wavefronts + 1e-9) return "";
  const std::string cost = std::to_string(c.conflict_ways) + "-way bank conflict (" + num(c.wavefronts) +
                           " wavefronts per request where " + num(c.ideal_wavefronts) + " would do)";
  if (s.strided && s.stride % 4 == 0) {
    const std::int64_t words = std::llabs(s.stride) / 4;
    if (words % 32 == 0)
      return cost + ": lanes " + std::to_string(words) + " words apart hit one bank; pad the row to " +
             std::to_string(words + 1);
    return cost + ": lanes " + std::to_string(words) +
           " words apart share banks; give consecutive lanes consecutive words (sequential addressing)";
  }
  return cost + ": spread the lanes' words over the 32 banks (pad rows by one element)";
}

}  // namespace vantage::cost::detail
