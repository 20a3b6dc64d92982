// The tuner's parallel compiles on the CPU backend: 16 configurations of the shared-memory sgemm
// (tile 8, 16 or 32; threads per block follow) built and compiled through the tuner on 1 worker and
// on 2. Each iteration names its kernels afresh, so that every compile misses the kernel cache and
// runs LLVM; the time is the tuner's compile wall time (first compile started to last finished).
#include <benchmark/benchmark.h>

#include <atomic>
#include <string>

#include "kernels/paper_kernels.hpp"
#include "vantage/vantage.hpp"

namespace {
using namespace vantage;

std::atomic<int> round_counter{0};

void tune_compile(benchmark::State& state) {
  if (!Device::cpu_available()) {
    state.SkipWithError("this build has no CPU backend (VANTAGE_CPU_BACKEND=OFF)");
    return;
  }
  const int workers = static_cast<int>(state.range(0));
  Device dev = Device::cpu(1);
  tune::Space space;
  space.param("tile", {8, 16, 32, 8}).param("copy", {0, 1, 2, 3});  // 16 distinct kernels by name
  tune::Problem nothing;
  nothing.key = "compile only";
  nothing.run = [](const Kernel&, const Device&, Grid) {};
  tune::Options o;
  o.compile_threads = workers;
  o.warmup = 0;
  o.repetitions = 1;
  o.flush_cache = false;
  o.store = false;
  for (auto _ : state) {
    int round = round_counter++;
    std::atomic<int> serial{0};
    auto unique = [&](const tune::Config& c) {
      int tile = static_cast<int>(c.at("tile"));
      std::string name =
          "bench_tune_" + std::to_string(round) + "_" + std::to_string(serial++) + "_t" + std::to_string(tile);
      return tune::Candidate{examples::sgemm_smem(tile, name), Grid{1, tile * tile}, std::nullopt};
    };
    tune::Report r = tune::tune("bench_compile", space, unique, nothing, dev, o);
    if (r.measured != 16 || r.failed != 0) {
      state.SkipWithError(
          ("the tuner measured " + std::to_string(r.measured) + " and failed " + std::to_string(r.failed) + " of 16")
              .c_str());
      return;
    }
    state.SetIterationTime(r.compile_wall_ms / 1000.0);
  }
  state.counters["configs"] = 16;
  state.counters["workers"] = workers;
}
BENCHMARK(tune_compile)->Name("BM_TuneCompile16")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
