// The static cost report (docs/report.md), per example: BM_Report/I is `Kernel::report` (specialize,
// lower, analyse) of example I of examples::all() at large sizes (n = 2^24, M = N = K = 2048), where
// most blocks and loop iterations are counted from representatives rather than followed. Goal: every
// example under 10 ms. The label names the example; the counter `analysis_ms` is the analysis alone.
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <regex>

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

// The placement advice's CPU side against the CPU backend: BM_PlacementCpu/<kernel>/<log2 size> runs
// the kernel on the CPU backend (one host thread) and reports the advice's estimate beside it:
// `estimate_ms` and `ratio` (estimate / measured; goal: within 2x, 0.5 to 2). Kernels: 0 saxpy (n),
// 1 block_reduce (n), 2 sgemm_smem (M = N = K).
void BM_PlacementCpu(benchmark::State& state) {
  if (!Device::cpu_available()) {
    state.SkipWithError("no CPU backend in this build");
    return;
  }
  const int which = static_cast<int>(state.range(0));
  const std::int64_t n = std::int64_t{1} << state.range(1);
  Device cpu = Device::cpu(1);
  Kernel k = which == 0 ? examples::saxpy() : which == 1 ? examples::block_reduce() : examples::sgemm_smem();
  CostReport r;
  std::vector<float> x, y, z;
  std::function<void()> launch;
  if (which == 0) {
    x.assign(static_cast<std::size_t>(n), 1.0f);
    y.assign(static_cast<std::size_t>(n), 2.0f);
    r = k.report(Spec{}, {{"n", n}}, (n + 255) / 256);
    launch = [&] { k.launch(cpu, Grid{(n + 255) / 256, 256}, static_cast<int>(n), 2.0f, std::as_const(x), y); };
  } else if (which == 1) {
    x.assign(static_cast<std::size_t>(n), 1.0f);
    y.assign(static_cast<std::size_t>((n + 255) / 256), 0.0f);
    r = k.report(Spec{}, {{"n", n}, {"out", (n + 255) / 256}}, (n + 255) / 256);
    launch = [&] { k.launch(cpu, Grid{(n + 255) / 256, 256}, static_cast<int>(n), std::as_const(x), y); };
  } else {
    x.assign(static_cast<std::size_t>(n * n), 1.0f);
    y.assign(static_cast<std::size_t>(n * n), 1.0f);
    z.assign(static_cast<std::size_t>(n * n), 0.0f);
    const std::int64_t blocks = ((n + 31) / 32) * ((n + 31) / 32);
    r = k.report(Spec{}, {{"M", n}, {"N", n}, {"K", n}}, blocks);
    launch = [&] {
      k.launch(cpu, Grid{blocks, 1024}, static_cast<int>(n), static_cast<int>(n), static_cast<int>(n), 1.0f, 0.0f,
               std::as_const(x), std::as_const(y), z);
    };
  }
  launch();  // compiles
  double total_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    launch();
    total_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  PlacementModel model;
  Placement p = r.placement(model);
  const double measured_ms =
      total_s * 1e3 / static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
  state.counters["estimate_ms"] = p.cpu_ms;
  state.counters["ratio"] = p.cpu_ms / measured_ms;
  state.counters["gpu_ms"] = p.gpu_ms;
  state.counters["steps"] = r.work;
  state.counters["bytes"] = r.global_bytes;
  state.SetLabel(std::string(which == 0   ? "saxpy"
                             : which == 1 ? "block_reduce"
                                          : "sgemm_smem") +
                 " " + std::to_string(n) + (p.gpu_faster ? ": GPU" : ": CPU backend"));
}
BENCHMARK(BM_PlacementCpu)
    ->ArgsProduct({{0, 1}, {14, 17, 20, 23}})
    ->ArgsProduct({{2}, {6, 7, 8, 9}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
