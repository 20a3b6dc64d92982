// Cache benchmarks in one run: a hit in the in-process table (goal: at most 100 ns), a hit on disk
// (fresh read and verification of a 64 KiB entry; goal: at most 50 us), and a miss that compiles.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "cache/cache.h"
#include "kernels/paper_kernels.hpp"

namespace {

using namespace vantage;
namespace fs = std::filesystem;

fs::path scratch(const char* name) {
  fs::path p = fs::temp_directory_path() / (std::string("vantage_bench_") + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

void BM_CacheHitMemory(benchmark::State& state) {
  if (!nvrtc_available()) return state.SkipWithError("NVRTC not available");
  fs::path dir = scratch("memory");
  CacheConfig c;
  c.dir = dir.string();
  KernelCache cache(c);
  Kernel k = examples::saxpy();
  Spec spec;
  cache.get(k, spec);
  for (auto _ : state) benchmark::DoNotOptimize(cache.get(k, spec).get());
  fs::remove_all(dir);
}
BENCHMARK(BM_CacheHitMemory);

void BM_CacheHitDisk(benchmark::State& state) {
  fs::path dir = scratch("disk");
  cache::DiskStore store(dir, true);
  cache::Entry e;
  e.key = cache::make_key({"bench"});
  e.cubin.assign(64 * 1024 - 200, 'c');
  e.meta["entry"] = "vt_bench";
  store.save("bench0000", e, nullptr);
  for (auto _ : state) {
    auto got = store.load("bench0000", &e.key, nullptr, nullptr);  // read, verify, touch
    if (!got) state.SkipWithError("entry did not load");
    benchmark::DoNotOptimize(got->cubin.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 64 * 1024);
  fs::remove_all(dir);
}
BENCHMARK(BM_CacheHitDisk)->Unit(benchmark::kMicrosecond);

void BM_CacheMissCompile(benchmark::State& state) {
  if (!nvrtc_available()) return state.SkipWithError("NVRTC not available");
  fs::path dir = scratch("miss");
  Kernel k = examples::saxpy();
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove_all(dir);
    CacheConfig c;
    c.dir = dir.string();
    KernelCache cache(c);
    state.ResumeTiming();
    benchmark::DoNotOptimize(cache.get(k, Spec{})->cubin.data());
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_CacheMissCompile)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
