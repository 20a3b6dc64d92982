// Cache benchmarks in one run: a hit in the in-process table (goal: at most 100 ns), a hit on disk
// (fresh read and verification of a 64 KiB entry; goal: at most 50 us), a hit in the remote tier (a
// real redis-server on loopback: fetch and verify a 64 KiB entry; goals: median at most 0.5 ms, 99th
// percentile at most 2 ms, a signed hit at most 1.2 times an unsigned one), and a miss that compiles.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "cache/cache.h"
#include "cache/remote.h"
#include "kernels/paper_kernels.hpp"
#include "tests/redis_server.hpp"

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

/// Remote hits of a 64 KiB entry, unsigned and signed (verified under a trust list of its key)
/// alternately, so that both see the same moment of the host; the median and 99th percentile of each
/// and their ratio are the counters.
void BM_CacheHitRemote(benchmark::State& state) {
  vantage::test_support::RedisServer redis;
  if (!redis.available()) return state.SkipWithError(redis.problem().c_str());
  fs::path dir = scratch("remote");
  fs::create_directories(dir);
  cache::write_key_pair((dir / "bench").string());
  std::string why;
  auto secret = cache::read_secret_key((dir / "bench.key").string(), &why);
  cache::TrustList trust = cache::TrustList::from_files({(dir / "bench.pub").string()});
  auto cfg = cache::RemoteConfig::parse(redis.url("timeout_ms=1000"), &why);
  cache::RemoteTier plain(*cfg, {}, std::nullopt), signing(*cfg, trust, secret);
  cache::Entry e;
  e.key = cache::make_key({"bench"});
  e.cubin.assign(64 * 1024 - 200, 'c');
  e.meta["entry"] = "vt_bench";
  const std::string unsigned_name = std::string(32, 'a') + ".00000000",
                    signed_name = std::string(32, 'b') + ".00000000";
  plain.save(unsigned_name, e, nullptr);
  signing.save(signed_name, e, nullptr);
  std::vector<double> times[2];
  for (auto _ : state) {
    for (int s = 0; s < 2; ++s) {
      const auto t = std::chrono::steady_clock::now();
      auto r = cache::remote_get_or_produce(s ? signing : plain, s ? signed_name : unsigned_name, e.key,
                                            [&]() -> cache::Entry { throw std::runtime_error("a miss"); });
      times[s].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
      if (!r.hit) state.SkipWithError("the entry was not a hit");
      benchmark::DoNotOptimize(r.entry->cubin.data());
    }
  }
  auto pct = [](std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0
                     : v[std::min(v.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size())))];
  };
  state.counters["unsigned_p50_us"] = pct(times[0], 50);
  state.counters["unsigned_p99_us"] = pct(times[0], 99);
  state.counters["signed_p50_us"] = pct(times[1], 50);
  state.counters["signed_p99_us"] = pct(times[1], 99);
  state.counters["signed_over_unsigned"] = pct(times[1], 50) / pct(times[0], 50);
  fs::remove_all(dir);
}
BENCHMARK(BM_CacheHitRemote)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

/// What a launch pays past the in-process table for a 64 KiB entry, the way KernelCache runs it: a hit
/// in the local directory, against a miss there that the remote tier fills (fetch, verify, parse, then
/// the copy kept in the directory: temp file, fsync, rename), unsigned and signed. Alternated; the
/// counters are the medians, 99th percentiles and ratios.
void BM_CacheLaunchRemoteHit(benchmark::State& state) {
  vantage::test_support::RedisServer redis;
  if (!redis.available()) return state.SkipWithError(redis.problem().c_str());
  fs::path dir = scratch("launch");
  fs::create_directories(dir);
  cache::write_key_pair((dir / "bench").string());
  std::string why;
  auto secret = cache::read_secret_key((dir / "bench.key").string(), &why);
  cache::TrustList trust = cache::TrustList::from_files({(dir / "bench.pub").string()});
  auto cfg = cache::RemoteConfig::parse(redis.url("timeout_ms=1000"), &why);
  cache::RemoteTier plain(*cfg, {}, std::nullopt), signing(*cfg, trust, secret);
  cache::DiskStore store(dir / "cache", true);
  cache::Entry e;
  e.key = cache::make_key({"bench"});
  e.cubin.assign(64 * 1024 - 200, 'c');
  e.meta["entry"] = "vt_bench";
  const std::string name = std::string(32, 'a') + ".00000000";
  plain.save(name, e, nullptr);
  const cache::RemoteConfig signed_cfg = [&] {
    cache::RemoteConfig c = *cfg;
    c.prefix = "signed:";
    return c;
  }();
  cache::RemoteTier signed_tier(signed_cfg, trust, secret);
  signed_tier.save(name, e, nullptr);
  auto miss = [&]() -> cache::Entry { throw std::runtime_error("a miss"); };
  std::vector<double> times[3];
  for (auto _ : state) {
    for (int s = 0; s < 3; ++s) {
      if (s > 0) store.remove(name);
      const auto t = std::chrono::steady_clock::now();
      cache::RemoteTier& tier = s == 2 ? signed_tier : plain;
      auto r = cache::get_or_produce(
          store, name, e.key, [&] { return std::move(*cache::remote_get_or_produce(tier, name, e.key, miss).entry); },
          std::chrono::seconds(10), std::int64_t{1} << 40);
      times[s].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
      if (!r.entry) state.SkipWithError("no entry");
      benchmark::DoNotOptimize(r.entry->cubin.data());
    }
  }
  auto pct = [](std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0
                     : v[std::min(v.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size())))];
  };
  state.counters["disk_p50_us"] = pct(times[0], 50);
  state.counters["remote_p50_us"] = pct(times[1], 50);
  state.counters["remote_p99_us"] = pct(times[1], 99);
  state.counters["signed_p50_us"] = pct(times[2], 50);
  state.counters["signed_p99_us"] = pct(times[2], 99);
  state.counters["signed_over_unsigned"] = pct(times[2], 50) / pct(times[1], 50);
  fs::remove_all(dir);
}
BENCHMARK(BM_CacheLaunchRemoteHit)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

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
