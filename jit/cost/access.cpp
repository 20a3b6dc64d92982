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
  Site& s = tally_.site(node, part, loc, *root, write, bytes);
  const Mask known = m & idx.known & r.offset.known;
  if (known != m) {  // an index from loaded data: the lanes that have one are measured, a guess
    tally_.inexact(s);
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
  tally_.count(s, addr, known, bytes, global, mo_.scale(mo_.sum(idx.mo, r.offset.mo, 1), type_bytes(root->elem)), mo_,
               weight_);
}

}  // namespace vantage::cost::detail
