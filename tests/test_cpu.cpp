// The CPU backend (jit/cpu): every example gives the interpreter's result to the bit; integer and
// float operations compute what docs/semantics.md defines (jit/ir/eval, the interpreter); atomics
// are atomic across host threads; an access outside its buffer is skipped and reported at the
// user's line; what the CPU cannot run is refused at the user's line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "jit/ir/eval.h"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
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
      for (const auto& size : examples::default_sizes(ex.name)) {
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
      [](Expr x, Expr) { return abs(x); },
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
}

TEST(Cpu, IntegerOperationsComputeWhatTheSemanticsDefine) {
  REQUIRE_CPU_BACKEND();
  expect_integer_ops_as_defined<std::int32_t>({INT32_MIN, INT32_MIN + 1, -13, -1, 0, 1, 7, 31, 32, 33, INT32_MAX});
  expect_integer_ops_as_defined<std::uint32_t>({0, 1, 7, 31, 32, 33, 0x80000000u, UINT32_MAX});
  expect_integer_ops_as_defined<std::int64_t>({INT64_MIN, -13, -1, 0, 1, 63, 64, 65, std::int64_t{1} << 40, INT64_MAX});
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

}  // namespace
}  // namespace vantage
