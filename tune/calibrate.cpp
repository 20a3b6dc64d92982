// The placement advice's figures measured on this host (include/vantage/tune.hpp, docs/report.md).
// CPU side: probe kernels run on the CPU backend, each timed and counted by its own cost report, and
// the model's costs (a launch, a warp step, a lane exchange and a barrier beyond a step, a byte in and
// out of the cache) solved from them, so that the advice is this host's rather than the development
// host's (which had AVX-512, where lane exchanges are cheap). GPU side, where there is one: the
// copies between pinned host memory and the GPU (a fixed cost and a bandwidth, each way) and a
// launch's latency, which the data sheet does not give (the first H100 run had copies at about twice
// the 25 GB/s assumed, docs/gpu-validation.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <vector>

#include "vantage/builder.hpp"
#include "vantage/library.hpp"
#include "vantage/tune.hpp"

namespace vantage::tune {
namespace {

constexpr int kThreads = 256;

/// The shortest of `runs` launches of `k` on `cpu` (after one, which compiles it), in ns: the least
/// disturbed by whatever else the host runs.
double shortest_ns(const Kernel& k, const Device& cpu, std::int64_t n, int runs, const std::vector<float>& x,
                   std::vector<float>& out) {
  const Grid grid{std::max<std::int64_t>(1, n / kThreads), kThreads};
  k.launch(cpu, grid, static_cast<int>(n), x, out);
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    k.launch(cpu, grid, static_cast<int>(n), x, out);
    t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  return *std::min_element(t.begin(), t.end());
}

/// A kernel of n threads, 256 a block: `body(b, t, v)` at block(1) works on v (a float of each
/// thread, from x), which is then stored to out.
Kernel block_probe(const char* name, const std::function<void(Scope& b, Expr t, Var v)>& body) {
  KernelBuilder k(name);
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(kThreads);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * kThreads + i; },
        [&](Scope& g, View out_b) {
          g.group(block(1), [&](Scope& b) {
            auto t = b.let("t", b.id(thread(1)));
            auto v = b.let("v", x[blk * kThreads + t], at(thread(1)));
            body(b, t, v);
            b.partition(
                out_b, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = v; }); });
          });
        });
  });
  return k.build();
}
/// One thread per element, as `lib::for_each` hands them out: out[i] = value(th, x[i]).
Kernel thread_probe(const char* name, const std::function<Expr(Scope& th, Expr xi)>& value) {
  KernelBuilder k(name);
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(kThreads);
  k.body([&](Scope& g) { lib::for_each(g, out, n, [&](Scope& th, Expr i, ElemRef o) { o = value(th, x[i]); }); });
  return k.build();
}

/// What one probe took and what its report counts.
struct Sample {
  double ns = 0, work = 0, looped = 0, exchanges = 0, barriers = 0, bytes = 0;
};
Sample measure(const Kernel& k, const Device& cpu, std::int64_t n, int runs) {
  std::vector<float> x(static_cast<std::size_t>(n), 1.0f), out(static_cast<std::size_t>(n));
  const CostReport r = k.report(Spec{}, {{"n", n}}, std::max<std::int64_t>(1, n / kThreads));
  return {shortest_ns(k, cpu, n, runs, x, out), r.work, r.looped, r.exchanges, r.barriers, r.cpu_bytes()};
}

PlacementModel measure_cpu(PlacementModel m) {
  const Device cpu = Device::cpu(1);
  constexpr int kRounds = 32;
  // Straight-line thread code (one pass over the block's threads): a copy, and the same copy with
  // eight more statements. A loop's rounds (its body runs per iteration), shaped as a tile's inner
  // loop is: an element all lanes read and one a lane each, adjacent, from shared memory, multiplied
  // into a sum carried from round to round. (A chain of dependent multiply-adds, the probe before,
  // priced a round of the sgemm's loop at about 1.6 times what it takes.)
  const Kernel copy = thread_probe("probe_copy", [](Scope&, Expr xi) { return xi * 2.0f; });
  const Kernel straight = thread_probe("probe_straight", [](Scope& th, Expr xi) {
    std::vector<Expr> a;
    for (int k = 0; k < 8; ++k) a.push_back(th.let("a", xi * (1.0f + 0.001f * static_cast<float>(k)) + 0.5f));
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  });
  const Kernel looped = block_probe("probe_loop", [&](Scope& b, Expr t, Var v) {
    View s = b.shared<float>("s", 2 * kThreads);
    b.partition(
        s, thread(1), [&](Expr i) { return 2 * t + i; },
        [&](Scope& b, View mine) {
          b.group(thread(1), [&](Scope&) {
            mine[0] = v;
            mine[1] = v;
          });
        });
    b.group(thread(1), [&](Scope& th) {
      th.for_("r", 0, kRounds, [&](Scope& th, Expr r) { th.assign(v, v + s[r] * s[t + r]); });
    });
  });
  // Lane exchanges: rounds of a warp's butterfly (five shuffles and adds), against the same rounds
  // with each shuffle's value the lane's own (a let): the difference is the exchanges'.
  auto butterflies = [&](bool shuffle) {
    return block_probe(shuffle ? "probe_exchanges" : "probe_no_exchanges", [&](Scope& b, Expr, Var v) {
      b.for_("r", 0, kRounds, [&](Scope& b, Expr) {
        b.group(thread(32), [&](Scope& w) {
          if (shuffle) {
            Var s = lib::warp_reduce(w, "s", v, lib::Op::Sum);
            w.group(thread(1), [&](Scope& th) { th.assign(v, s * 0.03125f); });
            return;
          }
          w.group(thread(1), [&](Scope& th) {
            Var s = th.let("s", v);
            for (int k = 0; k < 5; ++k) th.assign(s, s + th.let("o", s));
            th.assign(v, s * 0.03125f);
          });
        });
      });
    });
  };
  // Barriers: rounds in which every thread writes its element of a shared array and reads its
  // neighbour's (a barrier before the read, one before the next round's write), against the same
  // rounds reading its own element (no barrier).
  auto neighbours = [&](bool other) {
    return block_probe(other ? "probe_barriers" : "probe_no_barriers", [&](Scope& b, Expr t, Var v) {
      View s = b.shared<float>("s", kThreads);
      b.for_("r", 0, kRounds, [&](Scope& b, Expr) {
        b.partition(
            s, thread(1), [&](Expr i) { return t + i; },
            [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = v; }); });
        b.group(thread(1), [&](Scope& th) { th.assign(v, v + s[other ? (t + 1) % kThreads : t] * 0.5f); });
      });
    });
  };
  constexpr std::int64_t kCached = 1 << 17, kMemory = 1 << 24, kBlocks = 1 << 14;
  const Sample launch = measure(copy, cpu, kThreads, 64), cached = measure(copy, cpu, kCached, 32),
               more = measure(straight, cpu, kCached, 32), loop = measure(looped, cpu, kCached, 16),
               memory = measure(copy, cpu, kMemory, 5), shuffled = measure(butterflies(true), cpu, kBlocks, 16),
               unshuffled = measure(butterflies(false), cpu, kBlocks, 16),
               synced = measure(neighbours(true), cpu, kBlocks, 16),
               unsynced = measure(neighbours(false), cpu, kBlocks, 16);
  // Each time less the launch is steps * s + looped steps * s_loop + bytes * b (+ exchanges and
  // barriers): the two copies give s and the cached b, the copy from memory its b, the loop and the
  // barrier pair s_loop and a barrier, the butterflies what an exchange adds.
  const double l = launch.ns;
  auto net = [&](const Sample& p) { return std::max(0.0, p.ns - l); };
  const double s = std::max(1e-3, (net(more) - net(cached)) / std::max(1.0, more.work - cached.work));
  const double bc = std::max(1e-5, (net(cached) - cached.work * s) / std::max(1.0, cached.bytes));
  // The loop probe has a barrier (before its reads) and the barrier pair has loops, so a step in a
  // loop (sl) and a barrier (bar) come from the two together: for each, what it took beyond its
  // steps and bytes is looped * sl + barriers * bar.
  const double a1 = loop.looped, b1 = loop.barriers, c1 = net(loop) - loop.work * s - loop.bytes * bc;
  const double a2 = synced.looped - unsynced.looped, b2 = synced.barriers - unsynced.barriers,
               c2 = (synced.ns - unsynced.ns) - (synced.work - unsynced.work) * s;
  // (Were the two ever alike in their counts, each is taken as if the other cost nothing.)
  const double det = a1 * b2 - a2 * b1;
  const bool apart = std::abs(det) > 1e-6 * std::max(1.0, std::abs(a1 * b2));
  const double sl = std::max(0.0, apart ? (c1 * b2 - c2 * b1) / det : c1 / std::max(1.0, a1));
  const double bar = std::max(0.0, (c2 - a2 * sl) / std::max(1.0, b2));
  auto extra = [&](const Sample& with, const Sample& without, double count) {
    const double d = (with.ns - without.ns) - (with.work - without.work) * s - (with.looped - without.looped) * sl;
    return std::max(0.0, d / std::max(1.0, count));
  };
  m.cpu_launch_us = l * 1e-3;
  m.cpu_ns_per_step = s;
  m.cpu_ns_per_loop_step = sl;
  m.cpu_ns_per_byte_cached = bc;
  m.cpu_ns_per_byte = std::max(bc, (net(memory) - memory.work * s) / std::max(1.0, memory.bytes));
  m.cpu_ns_per_exchange = extra(shuffled, unshuffled, shuffled.exchanges);
  m.cpu_ns_per_barrier = bar;
  m.cpu_figures = "measured";
  return m;
}

/// The median of `runs` calls of `f` (after one more, which warms it), in microseconds.
double median_us(const std::function<void()>& f, int runs) {
  f();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + runs / 2, t.end());
  return t[static_cast<std::size_t>(runs / 2)];
}

/// The GPU side's measured figures: copies of one float and of 64 MiB each way between pinned memory
/// and GPU 0 (the fixed cost, and the bandwidth of what the large copy takes beyond it, both
/// directions averaged, as the model has one figure for each), and a launch of a one-warp kernel
/// waited for (a GPU launch returns at once, so the wait is part of what is timed).
PlacementModel measure_gpu(PlacementModel m) {
  const Device gpu = Device::gpu();
  constexpr std::int64_t kBig = std::int64_t{1} << 24;  // floats: 64 MiB
  PinnedBuffer<float> host(kBig), one(1);
  std::fill(host.data(), host.data() + kBig, 1.0f);
  one[0] = 1.0f;
  DeviceBuffer<float> big = gpu.alloc<float>(kBig), small = gpu.alloc<float>(1);
  const double fixed =
      (median_us([&] { small.copy_from(one.span()); }, 21) + median_us([&] { small.copy_to(one.span()); }, 21)) / 2;
  const double whole =
      (median_us([&] { big.copy_from(host.span()); }, 5) + median_us([&] { big.copy_to(host.span()); }, 5)) / 2;
  KernelBuilder k("probe_launch");
  auto out = k.param<GlobalPtr<float>>("out", extent(1));
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.partition(
        out, thread(1), [&](Expr i) { return i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) { th.if_(th.id(thread(1)) == 0, [&](Scope&) { o[0] = 2.0f; }); });
        });
  });
  const Kernel probe = k.build();
  const double launch = median_us(
      [&] {
        probe.launch(gpu, Grid{1, 32}, small);
        gpu.synchronize();
      },
      21);
  const double bytes = static_cast<double>(kBig) * sizeof(float);
  if (std::isfinite(fixed) && fixed > 0) m.transfer_us = fixed;
  if (whole > fixed) m.pcie_bytes_per_s = bytes / ((whole - fixed) * 1e-6);
  if (std::isfinite(launch) && launch > 0) m.gpu_launch_us = launch;
  m.gpu_figures = "measured";
  return m;
}

}  // namespace

PlacementModel measured_placement_model(PlacementModel base) {
  if (Device::gpu_count() > 0) {
    static std::once_flag once;
    static PlacementModel measured;
    std::call_once(once, [] { measured = measure_gpu({}); });
    base.transfer_us = measured.transfer_us;
    base.pcie_bytes_per_s = measured.pcie_bytes_per_s;
    base.gpu_launch_us = measured.gpu_launch_us;
    base.gpu_figures = measured.gpu_figures;
  }
  if (!Device::cpu_available()) return base;
  static std::once_flag once;
  static PlacementModel measured;
  std::call_once(once, [] { measured = measure_cpu({}); });
  base.cpu_launch_us = measured.cpu_launch_us;
  base.cpu_ns_per_step = measured.cpu_ns_per_step;
  base.cpu_ns_per_loop_step = measured.cpu_ns_per_loop_step;
  base.cpu_ns_per_byte_cached = measured.cpu_ns_per_byte_cached;
  base.cpu_ns_per_byte = measured.cpu_ns_per_byte;
  base.cpu_ns_per_exchange = measured.cpu_ns_per_exchange;
  base.cpu_ns_per_barrier = measured.cpu_ns_per_barrier;
  base.cpu_figures = measured.cpu_figures;
  return base;
}

}  // namespace vantage::tune
