// The static cost report (docs/report.md), per example: BM_Report/I is `Kernel::report` (specialize,
// lower, analyse) of example I of examples::all() at large sizes (n = 2^24, M = N = K = 2048), where
// most blocks and loop iterations are counted from representatives rather than followed. Goal: every
// example under 10 ms. The label names the example; the counter `analysis_ms` is the analysis alone.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <regex>
#include <span>

#include "bench_stats.hpp"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "vantage/vantage.hpp"

namespace {

using namespace vantage;

void BM_Report(benchmark::State& state) {
  const auto& ex = examples::all().at(static_cast<std::size_t>(state.range(0)));
  Kernel k = ex.build();
  static const std::regex kIntParam(R"(param (\w+): (i32|i64|u32|u64)\b)");
  std::map<std::string, std::int64_t> size;
  const std::string all = k.ir_text(), head = all.substr(all.find("kernel ")),
                    ir = head.substr(0, head.find("\n{"));  // the kernel's own parameters
  for (auto it = std::sregex_iterator(ir.begin(), ir.end(), kIntParam); it != std::sregex_iterator(); ++it)
    size[(*it)[1].str()] = (*it)[1].str() == "n" ? (1 << 24) : 2048;
  std::int64_t blocks = examples::default_blocks(ex.name, size);
  Spec spec = ex.spec();
  for (const auto& [name, v] : size) spec.sizes.erase(name);
  double analysis = 0;
  for (auto _ : state) {
    CostReport r = k.report(spec, size, blocks);
    analysis += r.analysis_ms;
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(ex.name + " (" + std::to_string(blocks) + " blocks)");
  state.counters["analysis_ms"] = analysis / static_cast<double>(state.iterations());
}

void all_examples(benchmark::internal::Benchmark* b) {
  for (std::size_t i = 0; i < examples::all().size(); ++i) b->Arg(static_cast<int>(i));
}
BENCHMARK(BM_Report)->Apply(all_examples)->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------------ the placement advice
/// One point of the placement sweep: kernel 0 saxpy (n), 1 block_reduce (n) or 2 sgemm_smem
/// (M = N = K = n), its report at that size, its grid, and its arrays' lengths in parameter order
/// (the last one is written).
struct Point {
  int which = 0;
  std::int64_t n = 0;
  Kernel k;
  CostReport report;
  Grid grid;
  std::vector<std::int64_t> lengths;
};
Point point(int which, std::int64_t n) {
  Point p;
  p.which = which;
  p.n = n;
  if (which == 0) {
    p.k = examples::saxpy();
    p.grid = Grid{(n + 255) / 256, 256};
    p.lengths = {n, n};
    p.report = p.k.report(Spec{}, {{"n", n}}, p.grid.blocks);
  } else if (which == 1) {
    p.k = examples::block_reduce();
    p.grid = Grid{(n + 255) / 256, 256};
    p.lengths = {n, p.grid.blocks};
    p.report = p.k.report(Spec{}, {{"n", n}, {"out", p.grid.blocks}}, p.grid.blocks);
  } else {
    p.k = examples::sgemm_smem();
    p.grid = Grid{((n + 31) / 32) * ((n + 31) / 32), 1024};
    p.lengths = {n * n, n * n, n * n};
    p.report = p.k.report(Spec{}, {{"M", n}, {"N", n}, {"K", n}}, p.grid.blocks);
  }
  return p;
}
/// Launches the point on `d` with `a` (host vectors or device buffers, one per length).
template <class A>
void launch(const Point& p, const Device& d, std::vector<A>& a) {
  const int n = static_cast<int>(p.n);
  if (p.which == 0)
    p.k.launch(d, p.grid, n, 2.0f, std::as_const(a[0]), a[1]);
  else if (p.which == 1)
    p.k.launch(d, p.grid, n, std::as_const(a[0]), a[1]);
  else
    p.k.launch(d, p.grid, n, n, n, 1.0f, 0.0f, std::as_const(a[0]), std::as_const(a[1]), a[2]);
}
std::string label(const Point& p, const Placement& advice) {
  return std::string(p.which == 0   ? "saxpy"
                     : p.which == 1 ? "block_reduce"
                                    : "sgemm_smem") +
         " " + std::to_string(p.n) + (advice.gpu_faster ? ": GPU" : ": CPU backend");
}
/// The point's inputs: small integers, so that every kernel's sums are exact in f32 whatever order
/// it adds in.
std::vector<std::vector<float>> inputs(const Point& p) {
  std::vector<std::vector<float>> a;
  for (std::int64_t len : p.lengths) {
    a.emplace_back(static_cast<std::size_t>(len));
    for (std::int64_t i = 0; i < len; ++i) a.back()[static_cast<std::size_t>(i)] = static_cast<float>(i % 7);
  }
  return a;
}
/// What one launch of the point leaves in its last array, from `in` (the arrays before it), in C++.
std::vector<float> expected(const Point& p, const std::vector<std::vector<float>>& in) {
  const std::int64_t n = p.n;
  std::vector<float> want = in.back();
  if (p.which == 0) {
    for (std::int64_t i = 0; i < n; ++i)
      want[static_cast<std::size_t>(i)] =
          2.0f * in[0][static_cast<std::size_t>(i)] + in[1][static_cast<std::size_t>(i)];
  } else if (p.which == 1) {
    for (std::int64_t b = 0; b < p.grid.blocks; ++b) {
      float sum = 0;
      for (std::int64_t i = b * 256; i < std::min(n, (b + 1) * 256); ++i) sum += in[0][static_cast<std::size_t>(i)];
      want[static_cast<std::size_t>(b)] = sum;
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (std::int64_t k = 0; k < n; ++k)
          sum += in[0][static_cast<std::size_t>(i * n + k)] * in[1][static_cast<std::size_t>(k * n + j)];
        want[static_cast<std::size_t>(i * n + j)] = sum;
      }
  }
  return want;
}
/// Whether `got` is `want` (exact: small integers); a wrong result fails the benchmark.
bool agrees(benchmark::State& state, std::span<const float> got, const std::vector<float>& want) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      state.SkipWithError(("wrong result: element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                           ", expected " + std::to_string(want[i]))
                              .c_str());
      return false;
    }
  return true;
}
void sweep(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{0, 1}, {14, 17, 20, 23}})->ArgsProduct({{2}, {6, 7, 8, 9}});
}

// The placement advice's CPU side against the CPU backend: BM_PlacementCpu/<kernel>/<log2 size> runs
// the kernel on the CPU backend (one host thread) and reports the advice's estimate beside it, with
// the CPU figures measured on this host (tune::measured_placement_model): `estimate_ms` and `ratio`
// (estimate / the median launch; goal: within 2x, 0.5 to 2); `ratio_fitted` with the fitted constants.
void BM_PlacementCpu(benchmark::State& state) {
  if (!Device::cpu_available()) {
    state.SkipWithError("no CPU backend in this build");
    return;
  }
  Point p = point(static_cast<int>(state.range(0)), std::int64_t{1} << state.range(1));
  Device cpu = Device::cpu(1);
  std::vector<std::vector<float>> a = inputs(p);
  const std::vector<float> want = expected(p, a);
  launch(p, cpu, a);  // compiles, and is checked
  if (!agrees(state, a.back(), want)) return;
  std::vector<double> times_s;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    launch(p, cpu, a);
    times_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // The advice with the CPU figures measured on this host (once per process), and with the fitted
  // constants beside it.
  static const PlacementModel model = tune::measured_placement_model();
  Placement advice = p.report.placement(model);
  // The median launch, what a caller sees: a spell in which this shared host runs everything slower
  // moves a mean more than the median. (The probes behind the estimate take their shortest run,
  // tune/calibrate.cpp: the least disturbed, for figures solved from differences.)
  const double measured_ms = bench::median(times_s) * 1e3;
  state.counters["measured_ms"] = measured_ms;
  state.counters["estimate_ms"] = advice.cpu_ms;
  state.counters["ratio"] = advice.cpu_ms / measured_ms;
  state.counters["ratio_fitted"] = p.report.placement(PlacementModel{}).cpu_ms / measured_ms;
  state.counters["gpu_ms"] = advice.gpu_ms;
  state.counters["steps"] = p.report.work;
  state.counters["bytes"] = p.report.global_bytes;
  state.SetLabel(label(p, advice));
}
BENCHMARK(BM_PlacementCpu)->Apply(sweep)->Unit(benchmark::kMillisecond)->UseRealTime();

// Its GPU side (GPU only; skipped, saying why, without one): BM_PlacementGpu/<kernel>/<log2 size>
// runs the same sweep on the GPU as a caller whose data live on the host does: the inputs copied in
// from pinned memory, the kernel, the output copied back, waited for. Counters: `measured_ms` (the
// median of the iterations), `kernel_ms` (the kernel alone, event-timed, median), `copies_ms` (the
// copies alone, median), the advice's `estimate_ms`, `kernel_estimate_ms` and `copies_estimate_ms`
// with this GPU's own figures (placement_model, its copies and launch measured:
// tune::measured_placement_model, whose figures are `model_copy_us`, `model_launch_us` and
// `model_pcie_gbs`), and `ratio` (estimate / measured; goal: within 2x). With
// BM_PlacementCpu's measured times for the same points, scripts/gpu/placement_pick.py says where the advice picks the
// device measured faster.
void BM_PlacementGpu(benchmark::State& state) {
  if (Device::gpu_count() == 0) {
    state.SkipWithError(("no GPU: " + Device::gpu_problem()).c_str());
    return;
  }
  Point p = point(static_cast<int>(state.range(0)), std::int64_t{1} << state.range(1));
  Device gpu = Device::gpu();
  const std::vector<std::vector<float>> in = inputs(p);
  std::vector<PinnedBuffer<float>> host;
  std::vector<DeviceBuffer<float>> dev;
  for (const auto& v : in) {
    host.emplace_back(static_cast<std::int64_t>(v.size()));
    std::copy(v.begin(), v.end(), host.back().data());
    dev.push_back(gpu.alloc<float>(static_cast<std::int64_t>(v.size())));
  }
  Stream s = Stream::default_for(gpu);
  Event start(gpu), stop(gpu);
  std::vector<double> total, kernel;
  // What the advice counts: every buffer the kernel reads copied in, every one it writes back.
  auto copy_in = [&] {
    for (std::size_t i = 0; i < dev.size(); ++i)
      if (p.report.buffers.at(i).read) dev[i].copy_from(host[i]);
  };
  auto copy_out = [&] {
    for (std::size_t i = 0; i < dev.size(); ++i)
      if (p.report.buffers.at(i).written) dev[i].copy_to(host[i]);
  };
  auto run = [&] {
    copy_in();
    start.record(s);
    launch(p, gpu, dev);
    stop.record(s);
    copy_out();
  };
  run();  // compiles and loads, and is checked
  if (!agrees(state, host.back(), expected(p, in))) return;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    run();
    total.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    kernel.push_back(stop.elapsed_ms(start));
  }
  // The copies alone, as many times, against the advice's transfer estimate: with kernel_ms beside
  // kernel_estimate_ms, what of the total each side of the estimate misses.
  std::vector<double> copies;
  for (std::size_t r = 0; r < total.size() && r < 200; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    copy_in();
    copy_out();
    copies.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const PlacementModel model = tune::measured_placement_model(placement_model(gpu.properties(), 1));
  Placement advice = p.report.placement(model);
  state.counters["measured_ms"] = bench::median(total);
  state.counters["kernel_ms"] = bench::median(kernel);
  state.counters["copies_ms"] = bench::median(copies);
  state.counters["estimate_ms"] = advice.gpu_ms;
  state.counters["kernel_estimate_ms"] = advice.gpu_kernel_ms;
  state.counters["copies_estimate_ms"] = advice.transfer_ms;
  state.counters["model_copy_us"] = model.transfer_us;
  state.counters["model_launch_us"] = model.gpu_launch_us;
  state.counters["model_pcie_gbs"] = model.pcie_bytes_per_s * 1e-9;
  state.counters["ratio"] = advice.gpu_ms / bench::median(total);
  state.counters["cpu_estimate_ms"] = advice.cpu_ms;
  state.SetLabel(label(p, advice));
}
BENCHMARK(BM_PlacementGpu)->Apply(sweep)->Unit(benchmark::kMillisecond)->UseRealTime();

// Why the CPU side counts a store to a buffer the launch never reads twice (CostReport::cpu_bytes):
// BM_CpuCopyAgainstUpdate/0 is `out = 2 x` into a fresh buffer, /1 is `y = 2 x + y` in place, 2^17
// floats each on the CPU backend (one host thread). On a GPU the copy moves two thirds of the
// update's sectors; on a CPU the two take about the same time, since the copy's stores read their
// lines first. Counters: `measured_ms` (median launch), `global_bytes` (the GPU's sectors) and
// `cpu_bytes` (what the model counts).
void BM_CpuCopyAgainstUpdate(benchmark::State& state) {
  if (!Device::cpu_available()) {
    state.SkipWithError("no CPU backend in this build");
    return;
  }
  const bool update = state.range(0) == 1;
  constexpr std::int64_t n = 1 << 17;
  KernelBuilder k(update ? "update" : "copy");
  auto len = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(len));
  auto out = k.param<GlobalPtr<float>>("out", extent(len));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each(g, out, len, [&](Scope&, Expr i, ElemRef o) {
      if (update)
        o = x[i] * 2.0f + o;
      else
        o = x[i] * 2.0f;
    });
  });
  const Kernel kernel = k.build();
  const Grid grid{n / 256, 256};
  const CostReport r = kernel.report(Spec{}, {{"n", n}}, grid.blocks);
  std::vector<float> in(n, 1.0f), o(n, 1.0f);
  const Device cpu = Device::cpu(1);
  kernel.launch(cpu, grid, static_cast<int>(n), std::as_const(in), o);  // compiles
  std::vector<double> times_ms;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    kernel.launch(cpu, grid, static_cast<int>(n), std::as_const(in), o);
    times_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["measured_ms"] = bench::median(times_ms);
  state.counters["global_bytes"] = r.global_bytes;
  state.counters["cpu_bytes"] = r.cpu_bytes();
  state.SetLabel(update ? "y = 2x + y in place" : "out = 2x into a fresh buffer");
}
BENCHMARK(BM_CpuCopyAgainstUpdate)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
