// Vantage cost analysis: memory requests: sectors, wavefronts, conflicts, and the hints of the report. See analyzer.h.
#include "jit/cost/analyzer.h"

namespace vantage::cost::detail {

auto Analyzer::resolve(const MemNode* m) const -> MemRef {
  const auto& mems = frames_.back().mems;
  auto it = mems.find(m);
  if (it != mems.end()) return it->second;
  return MemRef{m, Lanes::all(0)};
}

auto Analyzer::access(const void* node, const MemNode* mem, const Lanes& idx, Mask m, bool write, int bytes,
                      SourceLoc loc, int part) -> void {
  ++effects_;
  MemRef r = resolve(mem);
  const MemNode* root = r.root;
  if (root->space == MemSpace::Local || !m) return;
  auto [it, fresh] = sites_.try_emplace(std::make_pair(node, part));
  Site& s = it->second;
  if (fresh) {
    s.order = next_order_++;
    s.c.loc = loc;
    s.c.memory = root->name;
    s.c.space = root->space;
    s.c.write = write;
    s.c.bytes = bytes;
  }
  const Mask known = m & idx.known & r.offset.known;
  if (known != m) {  // an index from loaded data: the lanes that have one are measured, a guess
    s.inexact = true;
    exact_ = false;
  }
  if (!known) {  // the request is made; what it costs, a guess: its bytes, contiguous
    s.weight += weight_;
    s.lanes += weight_ * std::popcount(m);
    const double guess =
        root->space == MemSpace::Global ? std::ceil(std::popcount(m) * bytes / 32.0) : std::max(1, bytes / 4);
    s.metric += weight_ * guess;
    s.ideal += weight_ * guess;
    return;
  }
  const bool global = root->space == MemSpace::Global;
  const std::int64_t eb = type_bytes(root->elem);
  std::array<std::int64_t, kLanes> addr{};
  std::int64_t base = 0;
  if (!global) {
    auto off = l_.shared_offsets.find(root);
    base = frames_.back().smem + (off != l_.shared_offsets.end() ? off->second : 0);
  }
  // In 128 bits, then held to +-2^60: an index far outside any buffer still has a definite address.
  each(known, [&](int i) {
    const __int128 a = base + (static_cast<__int128>(idx.v[i]) + r.offset.v[i]) * eb;
    const __int128 lim = static_cast<__int128>(1) << 60;
    addr[i] = static_cast<std::int64_t>(a > lim ? lim : a < -lim ? -lim : a);
  });
  const Measure here = request_cost(addr, known, bytes, global);
  if (s.weight == 0 && std::popcount(known) > 1) {
    const int i0 = std::countr_zero(known), i1 = std::countr_zero(known & (known - 1));
    const std::int64_t d = (addr[i1] - addr[i0]) / (i1 - i0);
    bool even = (addr[i1] - addr[i0]) % (i1 - i0) == 0;
    each(known, [&](int i) { even = even && addr[i] - addr[i0] == d * (i - i0); });
    s.strided = even;
    s.stride = d;
  }
  s.weight += weight_;
  s.lanes += weight_ * std::popcount(known);
  s.ways = std::max(s.ways, here.ways);
  // This request stands for every execution of the representatives being followed, whose
  // addresses are this one's moved by the same D in every lane (or the cost is a guess). A cost
  // repeats when D moves by its period (a sector, a bank's word), so it is counted by D's residue:
  // the slopes' residues are counted exactly over the frames' steps; a rigid part (a multiple of
  // its grain, nothing more known) is exact only where every residue it may add costs the same.
  const std::int64_t period = ir::period(global);
  const Motion mo = scale(sum(idx.mo, r.offset.mo, 1), eb);
  if (reps_.empty() || moves_by(mo, period)) {
    s.metric += weight_ * here.metric;
    s.ideal += weight_ * here.ideal;
    return;
  }
  if (mo.kind != Motion::Moving) {
    s.metric += weight_ * here.metric;
    s.ideal += weight_ * here.ideal;
    s.inexact = true;
    exact_ = false;
    return;
  }
  std::array<double, 32> dist{};  // executions by the residue of their slopes' move
  dist[0] = 1;
  for (std::size_t f = 0; f < reps_.size(); ++f) {
    const std::int64_t count = reps_[f].hi - reps_[f].lo + 1;
    const std::int64_t step = ((mo.slope[f] % period) + period) % period;
    std::array<double, 32> next{};
    if (step == 0) {
      for (std::int64_t q = 0; q < period; ++q) next[q] = dist[q] * static_cast<double>(count);
    } else {
      std::array<double, 32> h{};  // this frame's moves by residue: P consecutive steps cover them
      for (std::int64_t j = 0; j < std::min<std::int64_t>(count, period); ++j) {
        const std::int64_t d = reps_[f].lo + j;
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
    const Measure c = q == 0 ? here : moved_cost(q);
    for (std::int64_t k = rigid_step; k < period; k += rigid_step)
      if (moved_cost((q + k) % period).metric != c.metric) {
        s.inexact = true;
        exact_ = false;
      }
    s.metric += dist[q] * c.metric;
    s.ideal += dist[q] * c.ideal;
    s.ways = std::max(s.ways, c.ways);
  }
}

auto Analyzer::hint(const AccessCost& c, const Site& s) const -> std::string {
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
