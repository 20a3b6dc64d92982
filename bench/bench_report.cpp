// The static cost report (docs/report.md), per example: BM_Report/I is `Kernel::report` (specialize,
// lower, analyse) of example I of examples::all() at large sizes (n = 2^24, M = N = K = 2048), where
// most blocks and loop iterations are counted from representatives rather than followed. Goal: every
// example under 10 ms. The label names the example; the counter `analysis_ms` is the analysis alone.
#include <benchmark/benchmark.h>

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

}  // namespace

BENCHMARK_MAIN();
