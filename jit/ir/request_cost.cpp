// Vantage: what one warp's memory request costs; see request_cost.h and docs/report.md.
#include "jit/ir/request_cost.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace vantage::ir {

RequestCost request_cost(const std::array<std::int64_t, kWarpLanes>& addr, std::uint32_t mask, int bytes, bool global) {
  RequestCost r;
  if (global) {
    std::array<std::int64_t, 2 * kWarpLanes> sec{};
    std::array<std::int64_t, kWarpLanes> el{};
    int ns = 0, ne = 0;
    for (std::uint32_t m = mask; m; m &= m - 1) {
      const std::int64_t a = addr[static_cast<std::size_t>(std::countr_zero(m))];
      el[static_cast<std::size_t>(ne++)] = a;
      for (std::int64_t b = a >> 5; b <= (a + bytes - 1) >> 5 && ns < 2 * kWarpLanes; ++b)
        sec[static_cast<std::size_t>(ns++)] = b;
    }
    // Lanes in address order (a row of a tile, a strided walk) need no sort.
    if (!std::is_sorted(sec.begin(), sec.begin() + ns)) std::sort(sec.begin(), sec.begin() + ns);
    if (!std::is_sorted(el.begin(), el.begin() + ne)) std::sort(el.begin(), el.begin() + ne);
    r.metric = static_cast<double>(std::unique(sec.begin(), sec.begin() + ns) - sec.begin());
    const auto distinct = std::unique(el.begin(), el.begin() + ne) - el.begin();
    r.ideal = std::ceil(static_cast<double>(distinct) * bytes / 32.0);
    return r;
  }
  const int words = std::max(1, bytes / 4);
  const int per_phase = kWarpLanes / words;
  for (int p = 0; p < words; ++p) {
    std::array<std::array<std::int64_t, kWarpLanes>, 32> bank;  // only the first count[b] of each are used
    std::array<int, 32> count{};
    int lanes = 0, worst = 0;
    for (int i = p * per_phase; i < (p + 1) * per_phase; ++i) {
      if (!((mask >> i) & 1)) continue;
      ++lanes;
      const std::int64_t a = addr[static_cast<std::size_t>(i)];
      for (std::int64_t x = a >> 2; x <= (a + bytes - 1) >> 2; ++x) {
        auto& b = bank[static_cast<std::size_t>(x & 31)];
        int& c = count[static_cast<std::size_t>(x & 31)];
        if (std::find(b.begin(), b.begin() + c, x) != b.begin() + c || c == kWarpLanes) continue;  // a broadcast
        b[static_cast<std::size_t>(c++)] = x;
        worst = std::max(worst, c);
      }
    }
    if (!lanes) continue;
    r.metric += worst;
    r.ideal += 1;
    r.ways = std::max(r.ways, worst);
  }
  return r;
}

}  // namespace vantage::ir
