// Concurrency: what the library promises when many threads use it at once. These tests also run
// under ThreadSanitizer (`scripts/test --tsan`), with the multi-process cache stress test.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "backend/cpu_pool.h"
#include "kernels/paper_kernels.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

namespace fs = std::filesystem;

/// A kernel of warps in blocks of `threads`, built by the calling thread's own builder.
Kernel warps(std::int64_t threads) {
  KernelBuilder k("warps");
  k.block_threads(threads);
  k.body([&](Scope& g) { g.group(block(1), [&](Scope& b) { b.group(warp(), [&](Scope& w) { w.sync_warp(); }); }); });
  return k.build();
}

TEST(Concurrency, KernelsCanBeBuiltFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  std::vector<std::uint64_t> hashes(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      Kernel k = warps(128);
      if (k.obligations().empty()) ++ok;
      hashes[static_cast<std::size_t>(i)] = k.structural_hash();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  for (auto h : hashes) EXPECT_EQ(h, hashes[0]) << "each builder sees only its own statements";
}

// The interpreter runs threads that wait on each other's mbarriers as fibers, contexts of their own
// on the launch's OS thread (TSan told of each switch): a producer thread loading 8 x 32 boxes by
// TMA into two slots and a warp of consumers that sum them and free the slots, for `steps` boxes.
// Each consumer sums 8 elements of each box; together they sum the whole matrix. Run by several
// threads at once, each launch with fibers of its own.
Kernel fiber_pipeline(int steps) {
  KernelBuilder k("fiber_pipeline");
  auto src = k.param<GlobalPtr<const float>>("src", extent(steps * 8 * 32));
  auto out = k.param<GlobalPtr<float>>("out", extent(32));
  k.block_threads(64);
  TensorMap map = k.tensor_map("src_map", src, steps * 8, 32, 8, 32);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 32, [&](Scope& b, Expr, View out_b) {
      View slots = b.shared_aligned("slots", ScalarType::F32, 2 * 8 * 32, 1024);
      View full = b.shared<std::uint64_t>("full", 2), empty = b.shared<std::uint64_t>("empty", 2);
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 th.for_("s", 0, 2, [&](Scope& th, Expr s) {
                                   th.mbarrier_init(full, s, 1);
                                   th.mbarrier_init(empty, s, 32);
                                 });
                               }}});
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.split(Level::Thread,
                    {{32,
                      [&](Scope& w) {
                        w.group(thread(1), [&](Scope& th) {
                          auto sum = th.let("sum", 0.0f);
                          th.for_("k", 0, steps, [&](Scope& th, Expr kt) {
                            auto s = th.let("s", kt % 2);
                            th.mbarrier_wait(full, s, kt / 2 % 2);
                            th.for_("e", 0, 8,
                                    [&](Scope& th, Expr e) { th.assign(sum, sum + slots[s * 256 + t * 8 + e]); });
                            th.mbarrier_arrive(empty, s);
                          });
                          mine[0] = sum;
                        });
                      }},
                     {32, [&](Scope& p) {
                        p.split(Level::Thread,
                                {{1, [&](Scope& th) {
                                    th.for_("k", 0, steps, [&](Scope& th, Expr kt) {
                                      auto s = th.let("s", kt % 2);
                                      th.if_(kt >= 2, [&](Scope& th) { th.mbarrier_wait(empty, s, (kt / 2 - 1) % 2); });
                                      th.mbarrier_arrive_expect_tx(full, s, map.box_bytes());
                                      th.tma_load(slots, s * 256, map, kt * 8, 0, full, s);
                                    });
                                  }}});
                      }}});
          });
    });
  });
  return k.build();
}

TEST(Concurrency, InterpretersRunFibersOfThreadsThatWaitOnEachOther) {
  constexpr int kSteps = 7;
  const Kernel k = fiber_pipeline(kSteps);
  std::vector<float> src(kSteps * 8 * 32);
  double want = 0;
  for (std::size_t i = 0; i < src.size(); ++i) want += src[i] = static_cast<float>(i % 13);
  std::vector<std::thread> threads;
  std::vector<double> totals(4, -1);
  for (std::size_t i = 0; i < totals.size(); ++i)
    threads.emplace_back([&, i] {
      std::vector<float> out(32, -1.0f);
      k.launch(Device::interpreter({ThreadOrder::Random, i + 1, true}), Grid{1, 64}, src, out);
      totals[i] = 0;
      for (float v : out) totals[i] += v;
    });
  for (auto& t : threads) t.join();
  for (double total : totals) EXPECT_EQ(total, want);
}

TEST(Concurrency, ManyJobsOnAThreadPoolFailIndependently) {
  REQUIRE_NVRTC();
  KernelBuilder bad("bad");
  bad.block_threads(32);
  bad.body([](Scope& g) { g.group(thread(1), [](Scope& th) { th.unsafe(thread(1), "nope nope;"); }); });
  std::vector<CompileJob> jobs = {{examples::saxpy(), Spec{}},
                                  {bad.build(), Spec{}},
                                  {examples::block_reduce(), Spec{}.with_arch(Arch::SM_80)},
                                  {examples::saxpy(), Spec{}.with_threads(64)}};
  auto results = compile_many(jobs, 2);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].compiled.has_value()) << results[0].error;
  EXPECT_FALSE(results[1].compiled.has_value());
  EXPECT_NE(results[1].error.find("NVRTC could not compile"), std::string::npos) << results[1].error;
  EXPECT_TRUE(results[2].compiled.has_value()) << results[2].error;
  EXPECT_FALSE(results[3].compiled.has_value()) << "saxpy declares 256 threads";
  EXPECT_NE(results[3].error.find("declares 256 threads"), std::string::npos) << results[3].error;
}

/// A private cache directory for one test.
/// Each test gets its own cache directory.
struct TempDir : test_support::TempDir {
  TempDir() : test_support::TempDir("vantage_concurrency") {}
};

TEST(Concurrency, OneCacheServesManyThreads) {
  REQUIRE_NVRTC();
  TempDir dir;
  CacheConfig c;
  c.dir = dir.path.string();
  KernelCache cache(c);
  std::vector<Kernel> kernels;
  std::map<std::string, Spec> specs;  // each example's default sizes
  for (const auto& ex : examples::all()) {
    kernels.push_back(ex.build());
    specs[ex.name] = ex.spec();
  }
  constexpr int kThreads = 4;
  std::vector<std::map<std::string, std::shared_ptr<const CachedKernel>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      // Each thread walks the kernels from a different start, twice: misses race each other, then
      // every lookup is a memory hit.
      for (int round = 0; round < 2; ++round)
        for (std::size_t i = 0; i < kernels.size(); ++i) {
          const Kernel& k = kernels[(i + static_cast<std::size_t>(t) * 2) % kernels.size()];
          got[static_cast<std::size_t>(t)][k.name()] = cache.get(k, specs.at(k.name()));
        }
    });
  for (auto& th : threads) th.join();
  for (const auto& k : kernels) {
    auto first = got[0].at(k.name());
    ASSERT_TRUE(first);
    for (int t = 1; t < kThreads; ++t) {
      const auto& mine = got[static_cast<std::size_t>(t)].at(k.name());
      EXPECT_EQ(mine->cubin, first->cubin) << k.name();
      EXPECT_EQ(mine->key, first->key) << k.name();
    }
    const Spec& spec = specs.at(k.name());
    EXPECT_EQ(cache.get(k, spec).get(), cache.get(k, spec).get()) << "one entry per key in the end";
  }
  CacheStats s = cache.stats();
  EXPECT_GE(s.compiles, static_cast<std::int64_t>(kernels.size()));
  EXPECT_EQ(s.compiles + s.disk_hits + s.memory_hits,
            static_cast<std::int64_t>(kThreads * 2 * kernels.size() + 2 * kernels.size()));
  std::vector<fs::path> locks;
  for (const auto& e : fs::directory_iterator(dir.path / "locks")) locks.push_back(e.path());
  EXPECT_TRUE(locks.empty()) << "no lock file outlives the compiles";
}

// The CPU device's pool: every block of a launch runs exactly once, with buffers of the size asked
// for, whatever the number of threads against the number of blocks, and from many launching threads
// at once (the pool is one per process).
TEST(Concurrency, ThePoolRunsEveryBlockOnceForAnyNumberOfThreads) {
  auto launch = [](std::int64_t blocks, int threads) {
    std::vector<std::atomic<int>> ran(static_cast<std::size_t>(blocks));
    std::atomic<int> bad{0};
    cpu_pool::run(blocks, threads, 100, 40, [&](std::int64_t first, std::int64_t last, void* shared, void* scratch) {
      if (first < 0 || last > blocks || first >= last) ++bad;
      if (!shared || !scratch || reinterpret_cast<std::uintptr_t>(shared) % 64 != 0 ||
          reinterpret_cast<std::uintptr_t>(scratch) % 64 != 0)
        ++bad;
      for (std::int64_t b = first; b < last; ++b) {
        std::memset(shared, static_cast<int>(b), 100);  // each thread's own: no other thread touches it
        std::memset(scratch, static_cast<int>(b), 40);
        ran[static_cast<std::size_t>(b)].fetch_add(1);
      }
    });
    int wrong = 0;
    for (auto& r : ran) wrong += r.load() != 1;
    return std::pair{bad.load(), wrong};
  };
  std::vector<std::thread> launchers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t)
    launchers.emplace_back([&, t] {
      for (std::int64_t blocks : {1, 2, 3, 7, 31, 100, 1000, 4097})
        for (int threads : {1, 2, 3, 4, 8}) {
          auto [bad, wrong] = launch(blocks + t, threads);
          if (bad || wrong) {
            ++failures;
            ADD_FAILURE() << blocks + t << " blocks on " << threads << " threads: " << bad << " bad chunks, " << wrong
                          << " blocks not run exactly once";
          }
        }
    });
  for (auto& l : launchers) l.join();
  EXPECT_EQ(failures.load(), 0);
}

// A thread that is held up does not hold up its share: the others take what is left of it. Here
// the helper's first chunk waits until the launch's last block (in the helper's own share) has run,
// which only happens if the calling thread takes it; without that it gives up after 10 s and fails.
TEST(Concurrency, AHeldUpThreadsShareIsTakenByTheOthers) {
  const std::int64_t blocks = 64;
  for (int round = 0; round < 5; ++round) {
    std::vector<std::atomic<int>> ran(blocks);
    std::atomic<bool> last_ran{false}, timed_out{false}, waited{false};
    const auto caller = std::this_thread::get_id();
    cpu_pool::run(blocks, 2, 0, 0, [&](std::int64_t first, std::int64_t last, void*, void*) {
      if (std::this_thread::get_id() != caller && last != blocks && !waited.exchange(true)) {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!last_ran.load()) {
          if (std::chrono::steady_clock::now() > until) {
            timed_out = true;
            break;
          }
          std::this_thread::yield();
        }
      }
      for (std::int64_t b = first; b < last; ++b) ran[static_cast<std::size_t>(b)].fetch_add(1);
      if (last == blocks) last_ran = true;
    });
    ASSERT_FALSE(timed_out.load()) << "the calling thread did not take the held-up helper's blocks";
    for (std::int64_t b = 0; b < blocks; ++b) EXPECT_EQ(ran[static_cast<std::size_t>(b)].load(), 1) << "block " << b;
  }
}

}  // namespace
}  // namespace vantage
