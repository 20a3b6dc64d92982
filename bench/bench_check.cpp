// Frontend benchmarks: building and checking a real kernel, and the checker's growth with kernel
// size. BM_CheckLargeKernel times the checker alone on an IR built beforehand.
#include <benchmark/benchmark.h>

#include "jit/check/check.h"
#include "jit/pipeline/handles.h"
#include "kernels/paper_kernels.hpp"

namespace {

using namespace vantage;

void BM_BuildAndCheckSgemm(benchmark::State& state) {
  for (auto _ : state) {
    Kernel k = examples::sgemm_smem();
    benchmark::DoNotOptimize(k.structural_hash());
  }
}
BENCHMARK(BM_BuildAndCheckSgemm)->Unit(benchmark::kMicrosecond);

/// A block-level kernel with `n` statements (lets, assignments, branches, partitions with stores,
/// loops and barriers), the shape real kernels have, just longer.
Kernel large_kernel(std::int64_t n) {
  KernelBuilder k("large");
  auto len = k.param<int>("len");
  auto y = k.param<GlobalPtr<float>>("y");
  k.block_threads(256);
  k.shared_budget(4096);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        y, block(1), [&](Expr i) { return blk * 256 + i; },
        [&](Scope& g, View y_b) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<float>("s", 256);
            auto t = b.let("t", b.id(thread(1)));
            auto acc = b.let("acc", 0.0f, at(thread(1)));
            std::int64_t count = 6;
            Expr prev = t;
            for (std::int64_t i = 0; count < n; ++i) {
              switch (i % 5) {
                case 0:
                  prev = b.let("v", prev * 3 + t);
                  count += 1;
                  break;
                case 1:
                  b.assign(acc, acc + cast<float>(prev));
                  count += 1;
                  break;
                case 2:
                  b.if_(len > static_cast<int>(i), [&](Scope& b) { b.sync_threads(); });
                  count += 2;
                  break;
                case 3:
                  b.partition(
                      s, thread(1), [&](Expr j) { return t + j; },
                      [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = acc; }); });
                  count += 3;
                  break;
                default: b.for_("k", 0, 4, [&](Scope& b, Expr kk) { b.assign(acc, acc + s[kk]); }); count += 2;
              }
            }
            b.partition(
                y_b, thread(1), [&](Expr j) { return t + j; },
                [&](Scope& b, View y_t) { b.group(thread(1), [&](Scope&) { y_t[0] = acc; }); });
          });
        });
  });
  return k.build();
}

void BM_CheckLargeKernel(benchmark::State& state) {
  Kernel k = large_kernel(state.range(0));
  for (auto _ : state) {
    auto result = check::check(detail::KernelAccess::ir(k));
    if (!result.ok()) state.SkipWithError("large kernel does not check");
    benchmark::DoNotOptimize(result.shared_peak);
  }
  state.SetComplexityN(state.range(0));
  state.counters["ns_per_stmt"] =
      benchmark::Counter(static_cast<double>(state.range(0)) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CheckLargeKernel)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity(benchmark::oN);

}  // namespace

BENCHMARK_MAIN();
