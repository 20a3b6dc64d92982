// The CPU backend (jit/cpu): every example gives the interpreter's result to the bit; integer and
// float operations compute what docs/semantics.md defines (jit/ir/eval, the interpreter); atomics
// are atomic across host threads; an access outside its buffer is skipped and reported at the
// user's line; what the CPU cannot run is refused at the user's line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

#include "jit/ir/eval.h"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

#define REQUIRE_CPU_BACKEND()                                                  \
  if (!Device::cpu_available()) {                                              \
    GTEST_SKIP() << "this build has no CPU backend (VANTAGE_CPU_BACKEND=OFF)"; \
  }                                                                            \
  static_assert(true)

TEST(Cpu, ABuildWithTheBackendHasIt) {
  EXPECT_EQ(Device::cpu_available(), VANTAGE_BUILT_WITH_CPU_BACKEND != 0)
      << "VANTAGE_CPU_BACKEND was " << (VANTAGE_BUILT_WITH_CPU_BACKEND ? "ON" : "OFF") << " but the library says "
      << (Device::cpu_available() ? "it has one" : "it has none");
}

TEST(Cpu, EveryExampleGivesTheInterpretersResultToTheBit) {
  REQUIRE_CPU_BACKEND();
  for (int threads : {1, 2})
    for (const auto& ex : examples::all())
      for (const auto& size : test_support::sweep_sizes(examples::default_sizes(ex.name))) {
        if (!ex.runs_on_cpu()) continue;  // test_hopper_run.cpp: it stops at its first Hopper instruction
        auto cpu = examples::run_example(ex.name, size, Device::cpu(threads));
        EXPECT_TRUE(cpu.ok) << cpu.summary;
        auto ref = examples::run_example(ex.name, size, Device::interpreter());
        ASSERT_EQ(cpu.output.size(), ref.output.size()) << ex.name;
        for (std::size_t i = 0; i < ref.output.size(); ++i) {
          std::uint64_t a, b;
          std::memcpy(&a, &cpu.output[i], 8);
          std::memcpy(&b, &ref.output[i], 8);
          ASSERT_EQ(a, b) << ex.name << " " << cpu.summary << ": element " << i << " is " << cpu.output[i]
                          << " on the CPU, " << ref.output[i] << " on the interpreter";
        }
      }
}

/// out[i * ops + k] = op_k(a[i], b[i]) for the integer operations of docs/semantics.md, at type T.
template <class T>
Kernel integer_ops(int* ops) {
  KernelBuilder k("int_ops");
  auto n = k.param<int>("n");
  auto a = k.param<GlobalPtr<const T>>("a", extent(n));
  auto b = k.param<GlobalPtr<const T>>("b", extent(n));
  auto out = k.param<GlobalPtr<T>>("out");
  k.block_threads(64);
  const std::vector<std::function<Expr(Expr, Expr)>> fs = {
      [](Expr x, Expr y) { return x + y; },          [](Expr x, Expr y) { return x - y; },
      [](Expr x, Expr y) { return x * y; },          [](Expr x, Expr y) { return x / y; },
      [](Expr x, Expr y) { return x % y; },          [](Expr x, Expr y) { return x << y; },
      [](Expr x, Expr y) { return x >> y; },         [](Expr x, Expr y) { return min(x, y); },
      [](Expr x, Expr y) { return max(x, y); },      [](Expr x, Expr y) { return x ^ y; },
      [](Expr x, Expr y) { return cast<T>(x < y); }, [](Expr x, Expr) { return -x; },
      [](Expr x, Expr) { return abs(x); },           [](Expr x, Expr) { return cast<T>(popc(x)); },
      [](Expr x, Expr) { return cast<T>(clz(x)); },  [](Expr x, Expr) { return cast<T>(ffs(x)); },
      [](Expr x, Expr) { return brev(x); },
  };
  *ops = static_cast<int>(fs.size());
  const int K = *ops;
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i * K + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(i < n, [&](Scope&) {
              for (int f = 0; f < K; ++f) o[f] = fs[static_cast<std::size_t>(f)](a[i], b[i]);
            });
          });
        });
  });
  return k.build();
}

template <class T>
void expect_integer_ops_as_defined(const std::vector<T>& edges) {
  int ops = 0;
  Kernel k = integer_ops<T>(&ops);
  std::vector<T> a, b;
  for (T x : edges)
    for (T y : edges) {
      a.push_back(x);
      b.push_back(y);
    }
  const int n = static_cast<int>(a.size());
  std::vector<T> cpu(static_cast<std::size_t>(n * ops)), ref(cpu.size());
  const auto& ca = a;
  const auto& cb = b;
  Grid g{(n + 63) / 64, 64};
  k.launch(Device::cpu(2), g, n, ca, cb, cpu);
  k.launch(Device::interpreter(), g, n, ca, cb, ref);
  for (int i = 0; i < n; ++i)
    for (int f = 0; f < ops; ++f) {
      std::size_t at = static_cast<std::size_t>(i * ops + f);
      ASSERT_EQ(cpu[at], ref[at]) << "operation " << f << " of " << +a[static_cast<std::size_t>(i)] << " and "
                                  << +b[static_cast<std::size_t>(i)];
    }
  // And what jit/ir/eval defines, for the division (the edge docs/semantics.md spells out).
  for (int i = 0; i < n; ++i) {
    std::int64_t want =
        ir::eval_binary(ir::BinOp::Div, scalar_of<T>, static_cast<std::int64_t>(a[static_cast<std::size_t>(i)]),
                        static_cast<std::int64_t>(b[static_cast<std::size_t>(i)]));
    ASSERT_EQ(static_cast<std::int64_t>(cpu[static_cast<std::size_t>(i * ops + 3)]),
              static_cast<std::int64_t>(static_cast<T>(want)));
  }
  // And the bit functions (the last four operations), each a count or T's bits reversed.
  const ir::MathFn bit_fns[] = {ir::MathFn::Popc, ir::MathFn::Clz, ir::MathFn::Ffs, ir::MathFn::Brev};
  for (int i = 0; i < n; ++i)
    for (int f = 0; f < 4; ++f) {
      std::int64_t x = static_cast<std::int64_t>(a[static_cast<std::size_t>(i)]);
      ASSERT_EQ(cpu[static_cast<std::size_t>(i * ops + ops - 4 + f)],
                static_cast<T>(ir::eval_bits(bit_fns[f], scalar_of<T>, x)))
          << ir::name_of(bit_fns[f]) << " of " << +a[static_cast<std::size_t>(i)];
    }
}

TEST(Cpu, IntegerOperationsComputeWhatTheSemanticsDefine) {
  REQUIRE_CPU_BACKEND();
  expect_integer_ops_as_defined<std::int32_t>({INT32_MIN, INT32_MIN + 1, -13, -1, 0, 1, 7, 31, 32, 33, INT32_MAX});
  expect_integer_ops_as_defined<std::uint32_t>({0, 1, 7, 31, 32, 33, 0x80000000u, UINT32_MAX});
  expect_integer_ops_as_defined<std::int64_t>({INT64_MIN, -13, -1, 0, 1, 63, 64, 65, std::int64_t{1} << 40, INT64_MAX});
  expect_integer_ops_as_defined<std::uint64_t>({0, 1, 0x0123456789abcdefULL, std::uint64_t{1} << 63, UINT64_MAX});
}

TEST(Cpu, FloatOperationsAndConversionsMatchTheInterpreterToTheBit) {
  REQUIRE_CPU_BACKEND();
  KernelBuilder k("float_ops");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(32);
  const int K = 12;
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i * K + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(i < n, [&](Scope&) {
              Expr v = x[i];
              o[0] = exp(v);
              o[1] = sin(v) + cos(v);
              o[2] = sqrt(abs(v)) / (v + 3.0f);
              o[3] = cast<float>(cast(ScalarType::F16, v) * cast(ScalarType::F16, v));
              o[4] = cast<float>(cast(ScalarType::BF16, v) + cast(ScalarType::BF16, 1.5f));
              o[5] = cast<float>(cast<int>(v * 1e9f));                 // saturating, NaN to 0
              o[6] = cast<float>(cast<std::int64_t>(v) * 16777217LL);  // one rounding to f32
              o[7] = fma(v, v, 1.0f);
              o[8] = min(v, 0.5f) + max(v, -0.5f);
              o[9] = tanh(v) + log2(abs(v) + 1.0f);
              o[10] = pow(abs(v), 0.75f);
              o[11] = floor(v) + ceil(v) + rsqrt(abs(v) + 1.0f);
            });
          });
        });
  });
  Kernel kernel = k.build();
  std::vector<float> xs = {0.0f,     -0.0f, 1.0f,          -2.5f,    3.14159f,  1e-30f,     -1e30f,     65504.0f,
                           70000.0f, 1e-8f, std::nanf(""), INFINITY, -INFINITY, 0.3333333f, 12345.678f, -7.25f};
  const int N = static_cast<int>(xs.size());
  std::vector<float> cpu(static_cast<std::size_t>(N * K)), ref(cpu.size());
  const auto& cx = xs;
  kernel.launch(Device::cpu(1), Grid{1, 32}, N, cx, cpu);
  kernel.launch(Device::interpreter(), Grid{1, 32}, N, cx, ref);
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    std::uint32_t a, b;
    std::memcpy(&a, &cpu[i], 4);
    std::memcpy(&b, &ref[i], 4);
    EXPECT_EQ(a, b) << "x = " << xs[i / K] << ", operation " << i % K << ": " << cpu[i] << " on the CPU, " << ref[i]
                    << " on the interpreter";
  }
}

TEST(Cpu, AtomicsAreAtomicAcrossHostThreads) {
  REQUIRE_CPU_BACKEND();
  KernelBuilder k("count");
  auto c = k.param<GlobalPtr<int>>("c", extent(Expr(2)));
  auto f = k.param<GlobalPtr<float>>("f", extent(Expr(1)));
  k.block_threads(128);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.group(thread(1), [&](Scope& th) {
      th.atomic("old", AtomicOp::Add, c, 0, 1);
      th.atomic("old2", AtomicOp::Max, c, 1, gid);
      th.atomic("old3", AtomicOp::Add, f, 0, 0.5f);
    });
  });
  Kernel kernel = k.build();
  std::vector<int> counts(2, 0);
  std::vector<float> fsum(1, 0.0f);
  kernel.launch(Device::cpu(2), Grid{512, 128}, counts, fsum);
  EXPECT_EQ(counts[0], 512 * 128);
  EXPECT_EQ(counts[1], 512 * 128 - 1);
  EXPECT_EQ(fsum[0], 0.5f * 512 * 128);  // halves sum exactly in f32 up to 2^24
}

TEST(Cpu, AnAccessOutsideItsBufferIsSkippedAndReportedAtItsLine) {
  REQUIRE_CPU_BACKEND();
  KernelBuilder k("oob");
  auto n = k.param<int>("n");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(32);
  int line = 0;
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i + j; },
        [&](Scope& g, View o) {
          line = __LINE__ + 1;
          g.group(thread(1), [&](Scope&) { o[n] = 1; });
        });
  });
  Kernel kernel = k.build();
  std::vector<int> got(64, 0);
  try {
    kernel.launch(Device::cpu(2), Grid{2, 32}, 40, got);  // thread 24 of block 0 writes out[64]
    FAIL() << "the access outside 'out' was not reported";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck");
    ASSERT_EQ(e.locs().size(), 1u) << e.what();
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line) << e.what();
    EXPECT_NE(std::string(e.what()).find("outside its 64 elements"), std::string::npos) << e.what();
  }
  for (int i = 0; i < 24; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i + 40)], 1) << "in-bounds stores still run";
}

/// Runs `kernel` on the interpreter and on the CPU (one host thread and two) with the same inputs;
/// the int outputs must be equal.
template <class... Args>
void expect_cpu_equals_interpreter(const Kernel& kernel, Grid grid, std::vector<int> out, const Args&... args) {
  std::vector<int> ref = out;
  kernel.launch(Device::interpreter(), grid, args..., ref);
  for (int threads : {1, 2}) {
    std::vector<int> got = out;
    kernel.launch(Device::cpu(threads), grid, args..., got);
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(got[i], ref[i]) << kernel.name() << " with " << grid.threads << " threads per block, " << threads
                                << " host thread(s): element " << i;
  }
}

/// A kernel body that gives each thread of each block `slots` ints of `out`: `body(b, blk, t, o)` in
/// the block's scope, with blk the block, t the thread's position in it and o its slots.
template <class Out, class Body>
void slots_per_thread(Scope& g, Out out, int threads, int slots, Body body) {
  auto blk = g.let("blk", g.id(block(1)));
  g.partition(
      out, block(1), [&](Expr i) { return blk * threads * slots + i; },
      [&](Scope& g, View out_b) {
        g.group(block(1), [&](Scope& b) {
          auto t = b.let("t", b.id(thread(1)));
          b.partition(
              out_b, thread(1), [&](Expr i) { return t * slots + i; }, [&](Scope& b, View o) { body(b, blk, t, o); });
        });
      });
}

/// Shuffles of every kind with lane operands that are constants, the same for every thread and
/// per thread; votes and ballot; float and int operands; whole warps and a last warp of 16 lanes.
Kernel warp_ops(int threads) {
  KernelBuilder k("warp_ops_" + std::to_string(threads));
  auto d = k.param<int>("d");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(threads);
  k.body([&](Scope& g) {
    slots_per_thread(g, out, threads, 9, [&](Scope& b, Expr blk, Expr, View o) {
      b.group(warp(), [&](Scope& w) {
        auto lane = w.let("lane", w.id(thread(1)));
        auto v = w.let("v", lane * 7 + blk * 3 - 20, at(thread(1)));
        auto f = w.let("f", cast<float>(v) * 0.5f, at(thread(1)));
        auto x1 = w.shfl_xor("x1", v, lane & 7);
        auto x2 = w.shfl_down("x2", v, d);
        auto x3 = w.shfl_up("x3", v, lane % 5);
        auto x4 = w.shfl_idx("x4", v, 31 - lane);
        auto x5 = w.ballot("x5", v % 3 == 0);
        auto x6 = w.vote_any("x6", v > 150);
        auto x7 = w.vote_all("x7", v >= -20);
        auto x8 = w.shfl_down("x8", f, 3);
        auto x9 = w.shfl_xor("x9", v, 16);
        w.group(thread(1), [&](Scope&) {
          o[0] = x1;
          o[1] = x2;
          o[2] = x3;
          o[3] = x4;
          o[4] = cast<int>(x5);
          o[5] = cast<int>(x6);
          o[6] = cast<int>(x7);
          o[7] = cast<int>(x8 * 4.0f);
          o[8] = x9;
        });
      });
    });
  });
  return k.build();
}

TEST(Cpu, WarpOperationsMatchTheInterpreter) {
  REQUIRE_CPU_BACKEND();
  for (int threads : {32, 64, 96})
    for (int d : {0, 1, 5, 31, 40}) {
      Kernel k = warp_ops(threads);
      expect_cpu_equals_interpreter(k, Grid{3, threads},
                                    std::vector<int>(static_cast<std::size_t>(3 * threads * 9), -1), d);
    }
}

/// `if`s a range of each warp's lanes takes (the CPU loops over just that range), in every form,
/// and ones whole warps take, at split points inside and outside the block.
Kernel lane_ranges() {
  KernelBuilder k("lane_ranges");
  auto kk = k.param<int>("k");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(96);
  k.body([&](Scope& g) {
    slots_per_thread(g, out, 96, 7, [&](Scope& b, Expr blk, Expr t, View o) {
      b.group(thread(1), [&](Scope& th) {
        th.if_(t < kk, [&](Scope&) { o[0] = 1; });
        th.if_(t <= kk, [&](Scope&) { o[1] = 1; });
        th.if_(kk > t, [&](Scope&) { o[2] = 1; });
        th.if_(t >= kk, [&](Scope&) { o[3] = 1; });
        th.if_(t > kk, [&](Scope&) { o[4] = 1; });
        th.if_(t < 64, [&](Scope&) { o[5] = t; });
        th.if_(t > 31 && t < kk + blk, [&](Scope&) { o[6] = t * 2; });
      });
    });
  });
  return k.build();
}

TEST(Cpu, BranchesTakenByRangesOfLanesMatchTheInterpreter) {
  REQUIRE_CPU_BACKEND();
  Kernel k = lane_ranges();
  for (int kk : {-5, 0, 1, 31, 32, 33, 50, 64, 95, 96, 200}) {
    std::vector<int> out(2 * 96 * 7, 0);
    k.launch(Device::cpu(1), Grid{2, 96}, kk, out);
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 96; ++t) {
        const int* o = &out[static_cast<std::size_t>((b * 96 + t) * 7)];
        ASSERT_EQ(o[0], t < kk ? 1 : 0) << "k " << kk << " thread " << t;
        ASSERT_EQ(o[1], t <= kk ? 1 : 0) << "k " << kk << " thread " << t;
        ASSERT_EQ(o[2], kk > t ? 1 : 0) << "k " << kk << " thread " << t;
        ASSERT_EQ(o[3], t >= kk ? 1 : 0) << "k " << kk << " thread " << t;
        ASSERT_EQ(o[4], t > kk ? 1 : 0) << "k " << kk << " thread " << t;
        ASSERT_EQ(o[5], t < 64 ? t : 0) << "k " << kk << " thread " << t;
        ASSERT_EQ(o[6], t > 31 && t < kk + b ? t * 2 : 0) << "k " << kk << " thread " << t;
      }
    expect_cpu_equals_interpreter(k, Grid{2, 96}, std::vector<int>(2 * 96 * 7, 0), kk);
  }
}

/// `if`s on the thread's position against a constant, in every form, at constants on both sides of
/// the warp boundaries: the CPU backend takes those that split at a boundary once per warp (`t < 32`,
/// `t <= 31`, `t > 63`) and must not take the others so (`t <= 32`, `t > 0`).
constexpr int kSplitConstants[] = {0, 1, 15, 16, 31, 32, 33, 48, 63, 64, 95};
constexpr int kSplitForms = 8;
Kernel constant_splits() {
  KernelBuilder k("constant_splits");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(96);
  const int slots = kSplitForms * static_cast<int>(std::size(kSplitConstants));
  k.body([&](Scope& g) {
    slots_per_thread(g, out, 96, slots, [&](Scope& b, Expr, Expr t, View o) {
      b.group(thread(1), [&](Scope& th) {
        int slot = 0;
        for (int c : kSplitConstants) {
          const Expr conds[kSplitForms] = {t<c, t <= c, t> c, t >= c, c > t, c >= t, c < t, c <= t};
          for (const Expr& cond : conds) {
            const int at = slot++;
            th.if_(cond, [&](Scope&) { o[at] = at + 1; });
          }
        }
      });
    });
  });
  return k.build();
}

TEST(Cpu, BranchesOnConstantSplitsMatchTheInterpreter) {
  REQUIRE_CPU_BACKEND();
  Kernel k = constant_splits();
  const int slots = kSplitForms * static_cast<int>(std::size(kSplitConstants));
  const auto n = static_cast<std::size_t>(2 * 96 * slots);
  std::vector<int> out(n, 0);
  k.launch(Device::cpu(1), Grid{2, 96}, out);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 96; ++t) {
      int slot = 0;
      for (int c : kSplitConstants) {
        const bool want[kSplitForms] = {t<c, t <= c, t> c, t >= c, c > t, c >= t, c < t, c <= t};
        for (bool w : want) {
          ASSERT_EQ(out[static_cast<std::size_t>((b * 96 + t) * slots + slot)], w ? slot + 1 : 0)
              << "thread " << t << ", constant " << c << ", form " << slot % kSplitForms;
          ++slot;
        }
      }
    }
  expect_cpu_equals_interpreter(k, Grid{2, 96}, std::vector<int>(n, 0));
}

/// Conditions on the lane (`t % 32`, `t & 31` against k, as `lib::block_reduce`'s `lane < 1`): the
/// CPU backend runs each warp's loop over just the lanes in range. `threads` 80 leaves the last warp
/// 16 lanes.
Kernel lane_of_warp_ranges(int threads) {
  KernelBuilder k("lane_of_warp_ranges");
  auto kk = k.param<int>("k");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(threads);
  k.body([&](Scope& g) {
    slots_per_thread(g, out, threads, 10, [&](Scope& b, Expr, Expr t, View o) {
      b.group(thread(1), [&](Scope& th) {
        // Not the lane: a remainder of 64 or 16 (a range of the thread, not of every warp's lanes).
        th.if_(t % 64 < kk, [&](Scope&) { o[6] = 1; });
        th.if_((t & 63) >= kk, [&](Scope&) { o[7] = 1; });
        th.if_(t % 16 < kk, [&](Scope&) { o[8] = 1; });
        th.if_(kk <= (t & 15), [&](Scope&) { o[9] = 1; });
        th.if_(t % 32 < kk, [&](Scope&) { o[0] = 1; });
        th.if_(t % 32 <= kk, [&](Scope&) { o[1] = 1; });
        th.if_(kk > (t & 31), [&](Scope&) { o[2] = 1; });
        th.if_(t % 32 >= kk, [&](Scope&) { o[3] = 1; });
        th.if_((t & 31) > kk, [&](Scope&) { o[4] = 1; });
        th.if_(t % 32 < 1, [&](Scope&) { o[5] = t + 1; });
      });
    });
  });
  return k.build();
}

TEST(Cpu, BranchesTakenByRangesOfTheLaneMatchTheInterpreter) {
  REQUIRE_CPU_BACKEND();
  for (int threads : {96, 80}) {
    Kernel k = lane_of_warp_ranges(threads);
    for (int kk : {-5, 0, 1, 2, 15, 16, 17, 31, 32, 33, 100}) {
      const auto n = static_cast<std::size_t>(2 * threads * 10);
      std::vector<int> out(n, 0);
      k.launch(Device::cpu(1), Grid{2, threads}, kk, out);
      for (int b = 0; b < 2; ++b)
        for (int t = 0; t < threads; ++t) {
          const int* o = &out[static_cast<std::size_t>((b * threads + t) * 10)];
          const int l = t % 32;
          ASSERT_EQ(o[0], l < kk ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[1], l <= kk ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[2], kk > l ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[3], l >= kk ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[4], l > kk ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[5], l < 1 ? t + 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[6], t % 64 < kk ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[7], (t & 63) >= kk ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[8], t % 16 < kk ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
          ASSERT_EQ(o[9], kk <= (t & 15) ? 1 : 0) << threads << " threads, k " << kk << " thread " << t;
        }
      expect_cpu_equals_interpreter(k, Grid{2, threads}, std::vector<int>(n, 0), kk);
    }
  }
}

/// Conditions on the thread's place in the grid, `blk * 96 + t` against k (saxpy's `i < n`): the
/// CPU backend runs just the lanes in range where the sum cannot wrap, and keeps the mask where it
/// can (`off + t`, off a parameter that may be near INT_MAX).
Kernel offset_lane_ranges() {
  KernelBuilder k("offset_lane_ranges");
  auto kk = k.param<int>("k");
  auto off = k.param<int>("off");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(96);
  k.body([&](Scope& g) {
    slots_per_thread(g, out, 96, 6, [&](Scope& b, Expr blk, Expr t, View o) {
      b.group(thread(1), [&](Scope& th) {
        th.if_(blk * 96 + t < kk, [&](Scope&) { o[0] = 1; });
        th.if_(t + blk * 96 <= kk, [&](Scope&) { o[1] = 1; });
        th.if_(kk > blk * 96 + t, [&](Scope&) { o[2] = 1; });
        th.if_(blk * 96 + t >= kk, [&](Scope&) { o[3] = 1; });
        th.if_(blk * 96 + t > kk, [&](Scope&) { o[4] = 1; });
        th.if_(off + t < kk, [&](Scope&) { o[5] = 1; });
      });
    });
  });
  return k.build();
}

TEST(Cpu, BranchesOnThePlaceInTheGridMatchTheInterpreter) {
  REQUIRE_CPU_BACKEND();
  Kernel k = offset_lane_ranges();
  const int big = std::numeric_limits<int>::max() - 40;
  for (int kk : {-5, 0, 1, 31, 32, 33, 95, 96, 97, 130, 191, 192, 500})
    for (int off : {0, 7, big}) {
      std::vector<int> out(2 * 96 * 6, 0);
      k.launch(Device::cpu(1), Grid{2, 96}, kk, off, out);
      for (int b = 0; b < 2; ++b)
        for (int t = 0; t < 96; ++t) {
          const int* o = &out[static_cast<std::size_t>((b * 96 + t) * 6)];
          const int i = b * 96 + t;
          const int wrapped = static_cast<int>(static_cast<unsigned>(off) + static_cast<unsigned>(t));
          ASSERT_EQ(o[0], i < kk ? 1 : 0) << "k " << kk << " thread " << i;
          ASSERT_EQ(o[1], i <= kk ? 1 : 0) << "k " << kk << " thread " << i;
          ASSERT_EQ(o[2], kk > i ? 1 : 0) << "k " << kk << " thread " << i;
          ASSERT_EQ(o[3], i >= kk ? 1 : 0) << "k " << kk << " thread " << i;
          ASSERT_EQ(o[4], i > kk ? 1 : 0) << "k " << kk << " thread " << i;
          ASSERT_EQ(o[5], wrapped < kk ? 1 : 0) << "k " << kk << " off " << off << " thread " << i;
        }
      expect_cpu_equals_interpreter(k, Grid{2, 96}, std::vector<int>(2 * 96 * 6, 0), kk, off);
    }
}

/// Values that look the same for a warp's lanes and are not (`t / 16`, `t / 48`: a division by a
/// number that is not a multiple of 32) as the bound of a range, its offset, and the part of a
/// clamped read's index the lanes would share; beside `t / 64`, which is the same for them. The CPU
/// backend must keep each lane's own value where the lanes differ.
Kernel nearly_warp_invariant(int threads) {
  KernelBuilder k("nearly_warp_invariant_" + std::to_string(threads));
  auto kk = k.param<int>("k");
  auto u = k.param<int>("u");
  auto x = k.param<GlobalPtr<const int>>("x", extent(Expr(64)));
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(threads);
  k.body([&](Scope& g) {
    slots_per_thread(g, out, threads, 6, [&](Scope& b, Expr, Expr t, View o) {
      b.group(thread(1), [&](Scope& th) {
        th.if_(t % 32 < (t / 16) * 5 + kk, [&](Scope&) { o[0] = 1; });
        th.if_(t < (t / 16) * 20 + kk, [&](Scope&) { o[1] = 1; });
        th.if_(t + (t / 16) * 3 < kk, [&](Scope&) { o[2] = 1; });
        th.if_(t % 32 < (t / 48) * 9 + kk, [&](Scope&) { o[3] = 1; });
        o[4] = x[(t / 16) * 8 + min(t % 16, u)];
        o[5] = x[(t / 64) * 8 + min(t % 8, u)];
      });
    });
  });
  return k.build();
}

TEST(Cpu, ValuesThatDifferWithinAWarpAreKeptPerLane) {
  REQUIRE_CPU_BACKEND();
  std::vector<int> x(64);
  for (int i = 0; i < 64; ++i) x[static_cast<std::size_t>(i)] = i * 3 + 1;
  for (int threads : {96, 80}) {
    Kernel k = nearly_warp_invariant(threads);
    const auto n = static_cast<std::size_t>(2 * threads * 6);
    for (int kk : {-7, 0, 3, 16, 40})
      for (int u : {0, 5, 8}) {
        std::vector<int> out(n, 0);
        k.launch(Device::cpu(1), Grid{2, threads}, kk, u, x, out);
        for (int b = 0; b < 2; ++b)
          for (int t = 0; t < threads; ++t) {
            const int* o = &out[static_cast<std::size_t>((b * threads + t) * 6)];
            const auto at = [&](int i) { return x[static_cast<std::size_t>(i)]; };
            const std::string where = std::to_string(threads) + " threads, k " + std::to_string(kk) + ", u " +
                                      std::to_string(u) + ", thread " + std::to_string(t);
            ASSERT_EQ(o[0], t % 32 < (t / 16) * 5 + kk ? 1 : 0) << where;
            ASSERT_EQ(o[1], t < (t / 16) * 20 + kk ? 1 : 0) << where;
            ASSERT_EQ(o[2], t + (t / 16) * 3 < kk ? 1 : 0) << where;
            ASSERT_EQ(o[3], t % 32 < (t / 48) * 9 + kk ? 1 : 0) << where;
            ASSERT_EQ(o[4], at((t / 16) * 8 + std::min(t % 16, u))) << where;
            ASSERT_EQ(o[5], at((t / 64) * 8 + std::min(t % 8, u))) << where;
          }
        expect_cpu_equals_interpreter(k, Grid{2, threads}, std::vector<int>(n, 0), kk, u, x);
      }
  }
}

/// Reads clamped to the edges of their buffer (x[min(i + s, n - 1)], x[max(i - s, 0)], a clamp
/// after a part the same for a warp's lanes): read the same elements as the interpreter.
TEST(Cpu, ClampedReadsMatchTheInterpreter) {
  REQUIRE_CPU_BACKEND();
  KernelBuilder k("clamped");
  auto n = k.param<int>("n");
  auto s = k.param<int>("s");
  auto m = k.param<int>("m");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i * 3 + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(n > 0, [&](Scope&) {
              o[0] = x[min(i + s, n - 1)];
              o[1] = x[max(min(i, n - 1) - s, 0)];
              o[2] = x[(i / 32) * 5 + min(i % 32, m)];
            });
          });
        });
  });
  Kernel kernel = k.build();
  // (The third read reaches element 5 * 5 + 31 at most: inside x for these n.)
  for (int nn : {70, 200})
    for (int ss : {0, 3, 40})
      for (int mm : {0, 7, 31}) {
        std::vector<int> hx(static_cast<std::size_t>(nn));
        for (int i = 0; i < nn; ++i) hx[static_cast<std::size_t>(i)] = i * 11 - 3;
        expect_cpu_equals_interpreter(kernel, Grid{3, 64}, std::vector<int>(3 * 64 * 3, 0), nn, ss, mm,
                                      std::as_const(hx));
      }
}

/// A checked read inside a vectorized lane loop that fails for some threads: reported at its line,
/// naming a thread that failed and its index; the other threads' reads still happen.
TEST(Cpu, ACheckThatFailsInsideAVectorLoopNamesAFailingThread) {
  REQUIRE_CPU_BACKEND();
  KernelBuilder k("shifted");
  auto n = k.param<int>("n");
  auto s = k.param<int>("s");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(n));
  k.block_threads(64);
  int line = 0;
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(i < n, [&](Scope&) {
              line = __LINE__ + 1;
              o[0] = x[i + s];
            });
          });
        });
  });
  Kernel kernel = k.build();
  const int nn = 128, shift = 100;  // threads 28 .. 127 read past the end
  std::vector<int> hx(nn);
  for (int i = 0; i < nn; ++i) hx[static_cast<std::size_t>(i)] = i;
  std::vector<int> got(nn, -1);
  try {
    kernel.launch(Device::cpu(1), Grid{2, 64}, nn, shift, std::as_const(hx), got);
    FAIL() << "the read past the end of 'x' was not reported";
  } catch (const ExecutionError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.check(), "memcheck");
    ASSERT_EQ(e.locs().size(), 1u) << what;
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line) << what;
    // "block B thread T reads 'x'[I]": I = 64 B + T + 100, and T must be a failing thread.
    auto number_after = [&](const std::string& word) {
      auto at = what.find(word);
      return at == std::string::npos ? -1 : std::stoi(what.substr(at + word.size()));
    };
    int b = number_after("block "), t = number_after(" thread "), i = number_after("'x'[");
    EXPECT_EQ(i, 64 * b + t + shift) << what;
    EXPECT_GE(64 * b + t + shift, nn) << what;
  }
  for (int i = 0; i < nn - shift; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], i + shift);
}

/// `return`: a device function's value (with an early return under a per-thread branch), and a
/// kernel that returns under a condition on its parameters before storing anything.
TEST(Cpu, ReturnsMatchTheInterpreter) {
  REQUIRE_CPU_BACKEND();
  FunctionBuilder f("clamp_or_square");
  f.requires_perspective(thread(1));
  f.returns(ScalarType::I32);
  auto x = f.param<int>("x");
  f.body([&](Scope& s) {
    s.if_(x > 10, [&](Scope& s) { s.ret(Expr(10)); });
    s.ret(x * x);
  });
  DeviceFunction fn = f.build();
  KernelBuilder k("returns");
  auto stop = k.param<int>("stop");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(64);
  k.body([&](Scope& g) {
    g.if_(stop != 0, [&](Scope& g) { g.ret(); });
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            auto r = th.call("r", fn, {i % 16 - 3});
            o[0] = r + 1;
          });
        });
  });
  Kernel kernel = k.build();
  for (int stop : {0, 1}) {
    expect_cpu_equals_interpreter(kernel, Grid{2, 64}, std::vector<int>(128, -7), stop);
    std::vector<int> out(128, -7);
    kernel.launch(Device::cpu(1), Grid{2, 64}, stop, out);
    for (int i = 0; i < 128; ++i) {
      int x = i % 16 - 3;
      EXPECT_EQ(out[static_cast<std::size_t>(i)], stop ? -7 : (x > 10 ? 10 : x * x) + 1) << "thread " << i;
    }
  }
}

/// A Hopper warpgroup MMA: the CPU backend refuses it at the user's line; the interpreter runs it, and
/// finds that nothing wrote the tiles it reads.
TEST(Cpu, WgmmaIsRefusedAtTheUsersLineAndRunsOnTheInterpreter) {
  REQUIRE_CPU_BACKEND();
  KernelBuilder k("wgmma_on_cpu");
  int line = 0;
  k.block_threads(128);
  auto out = k.param<GlobalPtr<float>>("out", extent(128 * 32));
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128 * 32, [&](Scope& b, Expr, View out_b) {
      View a_s = b.shared_aligned("a_s", ScalarType::BF16, 64 * 64, 1024);
      View b_s = b.shared_aligned("b_s", ScalarType::BF16, 64 * 64, 1024);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t * 32 + i; },
          [&](Scope& g, View o) {
            g.group(warpgroup(), [&](Scope& wg) {
              auto acc = wg.local_array("acc", ScalarType::F32, 32, at(thread(1)));
              wg.for_("i", 0, 32, [&](Scope&, Expr i) { acc[i] = 0.0f; });
              line = __LINE__ + 1;  // the first thing the CPU cannot run
              wg.wgmma_fence();
              wg.wgmma(64, acc, a_s, 0, b_s, 0);
              wg.wgmma_commit();
              wg.wgmma_wait(0);
              wg.for_("i", 0, 32, [&](Scope&, Expr i) { o[i] = acc[i]; });
            });
          });
    });
  });
  Kernel kernel = k.build();
  std::vector<float> got(128 * 32);
  try {
    kernel.launch(Device::cpu(1), Grid{1, 128}, got);
    ADD_FAILURE() << "wgmma ran on the CPU";
  } catch (const UnsupportedOnDevice& e) {
    ASSERT_FALSE(e.locs().empty()) << e.what();
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line) << e.what();
  }
  try {
    kernel.launch(Device::interpreter(), Grid{1, 128}, got);
    ADD_FAILURE() << "the wgmma read tiles nothing wrote, unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "initcheck") << e.what();
    EXPECT_NE(std::string(e.what()).find("reads shared 'a_s'["), std::string::npos) << e.what();
    ASSERT_FALSE(e.locs().empty()) << e.what();
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line + 1) << "the wgmma's line: " << e.what();
  }
}

TEST(Cpu, WhatTheCpuCannotRunIsRefusedAtTheUsersLine) {
  REQUIRE_CPU_BACKEND();
  KernelBuilder k("unsafe_on_cpu");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(32);
  int line = 0;
  k.body([&](Scope& g) {
    g.group(thread(1), [&](Scope& th) {
      line = __LINE__ + 1;
      th.unsafe(thread(1), "asm volatile(\"trap;\");");
    });
  });
  Kernel kernel = k.build();
  std::vector<int> got(32);
  try {
    kernel.launch(Device::cpu(1), Grid{1, 32}, got);
    FAIL() << "unsafe CUDA text ran on the CPU";
  } catch (const UnsupportedOnDevice& e) {
    ASSERT_FALSE(e.locs().empty());
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line) << e.what();
  }
}

// A kernel held in a static that was made before the CPU backend started (a program's table of
// kernels, say) is destroyed at exit after the backend: unloading its code must not wait on the
// backend's lock then. It hung the process before the backend's JIT lived to the end of it. The test
// runs in a fresh process (the threadsafe death-test style re-runs only this test), so that nothing
// started the backend first, with an alarm that ends a hang.
[[noreturn]] void hold_a_kernel_until_exit() {
  ::alarm(20);
  static const Kernel held = examples::saxpy();
  std::vector<float> x(300, 1.0f), y(300, 2.0f);
  held.launch(Device::cpu(1), Grid{2, 256}, 300, 3.0f, std::as_const(x), y);
  std::exit(y[299] == 5.0f ? 0 : 3);
}

TEST(Cpu, AKernelHeldUntilTheProcessExitsLetsItExit) {
  REQUIRE_CPU_BACKEND();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(hold_a_kernel_until_exit(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace vantage
