// Cache benchmarks in one run: a hit in the in-process table (goal: at most 100 ns), a hit on disk
// (fresh read and verification of a 64 KiB entry; goal: at most 50 us), a hit in the remote tier (a
// real redis-server on loopback: fetch and verify a 64 KiB entry; goals: median at most 0.5 ms, 99th
// percentile at most 2 ms, a signed hit at most 1.2 times an unsigned one), and a miss that compiles.
// A signed hit is measured both ways the tier holds signed entries: pushed from a bundle (one signed
// manifest, verified once per process, then each entry checked by its BLAKE3 hash), and sealed one
// by one by the process that compiled it (a signature verified per entry).
#include <benchmark/benchmark.h>
#include <blake3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "cache/cache.h"
#include "cache/remote.h"
#include "cache/sign.h"
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

/// The content hash of a signed manifest's line over an entry of 64 KiB and of 64 KiB less 176 bytes
/// (where BLAKE3's incremental hasher is twice as slow as on 64 KiB): BLAKE3 (whole buffer, what
/// is signed now), SHA-256 and BLAKE2b (what older signatures used).
/// Kind 0 is the reference hasher's incremental update, which cache/blake3_whole.c replaces.
void BM_ManifestHash(benchmark::State& state) {
  const auto hash = static_cast<cache::ManifestHash>(state.range(0));
  const std::vector<char> bytes(static_cast<std::size_t>(state.range(1)), 'c');
  for (auto _ : state) {
    if (state.range(0) == 0) {
      cache::Digest d;
      blake3_hasher h;
      blake3_hasher_init(&h);
      blake3_hasher_update(&h, bytes.data(), bytes.size());
      blake3_hasher_finalize(&h, d.data(), d.size());
      benchmark::DoNotOptimize(d);
    } else {
      benchmark::DoNotOptimize(cache::content_hash(bytes.data(), bytes.size(), hash));
    }
  }
  const char* names[] = {"blake3 incremental", "blake2b", "sha256", "blake3 whole"};
  state.SetLabel(names[state.range(0)]);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(1));
}
BENCHMARK(BM_ManifestHash)->ArgsProduct({{3, 0, 2, 1}, {65536, 65360}})->Unit(benchmark::kMicrosecond);

/// What the remote benchmarks share: a real redis-server, a key pair and its trust list, a 64 KiB
/// entry stored unsigned (prefix "vantage:"), sealed with its own signature (prefix "signed:"), and
/// pushed in a signed bundle of 40 such entries (prefix "pushed:"), under the same name.
struct RemoteBench {
  vantage::test_support::RedisServer redis;
  fs::path dir;
  cache::Entry entry;
  const std::string name = std::string(32, 'a') + ".00000000";
  cache::RemoteConfig pushed_cfg;
  cache::TrustList trust;
  std::unique_ptr<cache::RemoteTier> plain, signing, pushed;

  explicit RemoteBench(const char* label) : dir(scratch(label)) {
    if (!redis.available()) return;
    fs::create_directories(dir);
    cache::write_key_pair((dir / "bench").string());
    std::string why;
    auto secret = cache::read_secret_key((dir / "bench.key").string(), &why);
    trust = cache::TrustList::from_files({(dir / "bench.pub").string()});
    cache::RemoteConfig cfg = *cache::RemoteConfig::parse(redis.url("timeout_ms=1000"), &why);
    plain = std::make_unique<cache::RemoteTier>(cfg, cache::TrustList{}, std::nullopt);
    cfg.prefix = "signed:";
    signing = std::make_unique<cache::RemoteTier>(cfg, trust, secret);
    pushed_cfg = cfg;
    pushed_cfg.prefix = "pushed:";
    pushed = std::make_unique<cache::RemoteTier>(pushed_cfg, trust, std::nullopt);
    entry.key = cache::make_key({"bench"});
    entry.cubin.assign(64 * 1024 - 200, 'c');
    entry.meta["entry"] = "vt_bench";
    plain->save(name, entry, nullptr);
    signing->save(name, entry, nullptr);
    std::map<std::string, std::vector<char>> bundle;
    for (int i = 0; i < 40; ++i) {
      cache::Entry other = entry;
      other.key = cache::make_key({"bench", std::to_string(i)});
      bundle[i == 0 ? name : std::string(32, 'b') + "." + std::to_string(10000000 + i)] =
          cache::serialize(i ? other : entry);
    }
    const std::string manifest = cache::manifest(bundle);
    if (!pushed->push(bundle, manifest, cache::sign_manifest(manifest, *secret), &why)) throw std::runtime_error(why);
  }
  ~RemoteBench() { fs::remove_all(dir); }
  /// The entry from `tier`, as KernelCache's remote path takes it.
  cache::Entry hit(cache::RemoteTier& tier) const {
    auto r = cache::remote_get_or_produce(tier, name, entry.key,
                                          []() -> cache::Entry { throw std::runtime_error("a miss"); });
    return std::move(*r.entry);
  }
};

/// The p-th percentile of `v` (nearest rank).
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0
                   : v[std::min(v.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size())))];
}

double micros_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

/// Remote hits of a 64 KiB entry, unsigned, pushed in a signed bundle and sealed with its own
/// signature (both verified under a trust list of their key), alternately, so that all see the same
/// moment of the host; the median and 99th percentile of each and their ratios are the counters.
/// Before the loop, the first hit of a new process (a new tier: connection, and for the pushed entry
/// its manifest fetched and verified) is timed 20 times each way.
void BM_CacheHitRemote(benchmark::State& state) {
  RemoteBench b("remote");
  if (!b.redis.available()) return state.SkipWithError(b.redis.problem().c_str());
  std::vector<double> first[2];
  for (int i = 0; i < 20; ++i)
    for (int s = 0; s < 2; ++s) {
      cache::RemoteConfig cfg = b.pushed_cfg;
      if (!s) cfg.prefix = "vantage:";
      cache::RemoteTier fresh(cfg, s ? b.trust : cache::TrustList{}, std::nullopt);
      const auto t = std::chrono::steady_clock::now();
      cache::Entry e = b.hit(fresh);
      first[s].push_back(micros_since(t));
      benchmark::DoNotOptimize(e.cubin.data());
    }
  std::vector<double> times[3];
  for (auto _ : state) {
    for (int s = 0; s < 3; ++s) {
      const auto t = std::chrono::steady_clock::now();
      cache::Entry e = b.hit(s == 0 ? *b.plain : s == 1 ? *b.pushed : *b.signing);
      times[s].push_back(micros_since(t));
      benchmark::DoNotOptimize(e.cubin.data());
    }
  }
  state.counters["unsigned_p50_us"] = percentile(times[0], 50);
  state.counters["unsigned_p99_us"] = percentile(times[0], 99);
  state.counters["pushed_p50_us"] = percentile(times[1], 50);
  state.counters["pushed_p99_us"] = percentile(times[1], 99);
  state.counters["pushed_over_unsigned"] = percentile(times[1], 50) / percentile(times[0], 50);
  state.counters["sealed_p50_us"] = percentile(times[2], 50);
  state.counters["sealed_p99_us"] = percentile(times[2], 99);
  state.counters["sealed_over_unsigned"] = percentile(times[2], 50) / percentile(times[0], 50);
  state.counters["first_unsigned_p50_us"] = percentile(first[0], 50);
  state.counters["first_pushed_p50_us"] = percentile(first[1], 50);
}
BENCHMARK(BM_CacheHitRemote)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

/// What a launch pays past the in-process table for a 64 KiB entry, the way KernelCache runs it: a hit
/// in the local directory, against a miss there that the remote tier fills (fetch, verify, parse, then
/// the copy kept in the directory: temp file, fsync, rename), unsigned, pushed in a signed bundle and
/// sealed with its own signature. Alternated; the counters are the medians, 99th percentiles and ratios.
void BM_CacheLaunchRemoteHit(benchmark::State& state) {
  RemoteBench b("launch");
  if (!b.redis.available()) return state.SkipWithError(b.redis.problem().c_str());
  cache::DiskStore store(b.dir / "cache", true);
  std::vector<double> times[4];
  // s = 0 is the directory's hit (filled once, from the unsigned tier).
  cache::RemoteTier* tiers[4] = {b.plain.get(), b.plain.get(), b.pushed.get(), b.signing.get()};
  for (auto _ : state) {
    for (int s = 0; s < 4; ++s) {
      if (s > 0) store.remove(b.name);
      const auto t = std::chrono::steady_clock::now();
      auto r = cache::get_or_produce(
          store, b.name, b.entry.key, [&] { return b.hit(*tiers[s]); }, std::chrono::seconds(10),
          std::int64_t{1} << 40);
      times[s].push_back(micros_since(t));
      benchmark::DoNotOptimize(r.entry->cubin.data());
    }
  }
  state.counters["disk_p50_us"] = percentile(times[0], 50);
  state.counters["remote_p50_us"] = percentile(times[1], 50);
  state.counters["remote_p99_us"] = percentile(times[1], 99);
  state.counters["pushed_p50_us"] = percentile(times[2], 50);
  state.counters["pushed_over_unsigned"] = percentile(times[2], 50) / percentile(times[1], 50);
  state.counters["sealed_p50_us"] = percentile(times[3], 50);
  state.counters["sealed_over_unsigned"] = percentile(times[3], 50) / percentile(times[1], 50);
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
