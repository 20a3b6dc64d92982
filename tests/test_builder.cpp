// Builder ergonomics a CUDA programmer reaches for (issue 11, item 0): atomics whose old value is not
// wanted, names for views that the diagnostics use, loop steps other than +1, break and continue. Each
// kernel here runs on the interpreter (and the CPU backend where the build has one) against a C++
// reference, and its CUDA compiles with NVRTC where the host has it.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/library.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

/// The devices every test here runs on: the interpreter in both thread orders, and the CPU backend.
std::vector<Device> devices() {
  InterpreterOptions reverse;
  reverse.order = ThreadOrder::Reverse;
  std::vector<Device> d = {Device::interpreter(), Device::interpreter(reverse)};
  if (Device::cpu_available()) d.push_back(Device::cpu(2));
  return d;
}

// ---------------------------------------------------------------- atomics without a result
/// A 16-bin histogram: each thread adds 1 to its value's bin and keeps no old value.
Kernel histogram() {
  KernelBuilder k("histogram");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto hist = k.param<GlobalPtr<int>>("hist", extent(16));
  k.block_threads(128);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.group(thread(1), [&](Scope& th) {
      th.if_(gid < n, [&](Scope& th) { th.atomic(AtomicOp::Add, hist, min(max(x[gid], 0), 15), 1); });
    });
  });
  return k.build();
}

TEST(Builder, AnAtomicWhoseOldValueIsNotWantedNeedsNoName) {
  Kernel k = histogram();
  std::string cuda = k.source(Spec{});
  EXPECT_NE(cuda.find("atomicAdd(&hist["), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("= atomicAdd("), std::string::npos) << "no variable for the old value:\n" << cuda;
  for (int n : {1, 300, 1000}) {
    std::vector<int> x(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = (i * 7 + 3) % 19 - 1;  // some outside [0, 16)
    std::vector<int> want(16, 0);
    for (int v : x) ++want[static_cast<std::size_t>(std::clamp(v, 0, 15))];
    for (const Device& d : devices()) {
      std::vector<int> hist(16, 0);
      k.launch(d, Grid{(n + 127) / 128, 128}, n, std::as_const(x), hist);
      d.synchronize();
      EXPECT_EQ(hist, want) << "n = " << n << " on " << d.name();
    }
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// ---------------------------------------------------------------- names for views
/// A write to a view inside the body of its own partition, where its name is hidden: the checker
/// reports it with the view's name.
void hidden_body(Scope& g, const View& y, bool name_it) {
  g.partition(
      y, block(1), [&](Expr i) { return g.id(block(1)) * 256 + i; },
      [&](Scope& g, View y_blk) {
        if (name_it) y_blk.named("y_blk");
        g.group(block(1), [&](Scope& b) {
          auto t = b.let("t", b.id(thread(1)));
          b.partition(
              y_blk, thread(1), [&](Expr i) { return t + i; },
              [&](Scope& b, View mine) {
                if (name_it) mine.named("mine");
                b.group(thread(1), [&](Scope&) { y_blk[t] = 1.0f; });  // through the hidden name
              });
        });
      });
}

TEST(Builder, DiagnosticsUseTheNamesGivenToViews) {
  for (bool name_it : {false, true}) {
    KernelBuilder k("names");
    auto y = k.param<GlobalPtr<float>>("y");
    k.block_threads(256);
    k.body([&](Scope& g) { hidden_body(g, y, name_it); });
    try {
      k.build();
      ADD_FAILURE() << "a view hidden by its partition must not be written";
    } catch (const CheckError& e) {
      std::string all = render_all(e.diagnostics());
      if (name_it) {
        EXPECT_NE(all.find("'y_blk'"), std::string::npos) << all;
        EXPECT_EQ(all.find("y_part"), std::string::npos) << "a derived name where the user gave one:\n" << all;
      } else {
        EXPECT_NE(all.find("'y_part'"), std::string::npos) << all;
      }
    }
  }
}

TEST(Builder, OnlyDerivedViewsTakeANameAndItMustBeAnIdentifier) {
  KernelBuilder k("bad_names");
  auto y = k.param<GlobalPtr<float>>("y");
  k.block_threads(32);
  int param_line = 0, ident_line = 0;
  k.body([&](Scope& g) {
    param_line = __LINE__ + 1;
    y.named("z");
    g.partition(
        y, thread(1), [&](Expr i) { return g.id(thread(1)) + i; },
        [&](Scope& g, View mine) {
          ident_line = __LINE__ + 1;
          mine.named("my view");
          g.group(thread(1), [&](Scope&) { mine[0] = 1.0f; });
        });
  });
  try {
    k.build();
    ADD_FAILURE() << "both names must be refused";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0914", param_line, "tests/test_builder.cpp")) << render_all(e.diagnostics());
    EXPECT_TRUE(testing::has_diag(e, "V0914", ident_line, "tests/test_builder.cpp")) << render_all(e.diagnostics());
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// ---------------------------------------------------------------- loop steps other than +1
/// A block's tree reduction with the stride halving each step (`s >>= 1`), and a doubling loop
/// (`s <<= 1`) that counts its own trips: the loops CUDA programmers write for reductions and scans.
Kernel halving_tree() {
  KernelBuilder k("halving_tree");
  auto x = k.param<GlobalPtr<const float>>("x");
  auto out = k.param<GlobalPtr<float>>("out");
  auto trips = k.param<GlobalPtr<int>>("trips");
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr blk, View out_b) {
      auto s = b.shared<float>("s", 256);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          s, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = x[blk * 256 + t]; }); });
      b.for_(
          "stride", 128, [](Expr st) { return st > 0; }, [](Expr st) { return st >> 1; },
          [&](Scope& b, Expr stride) {
            b.partition(
                s, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View mine) {
                  b.group(thread(1),
                          [&](Scope& th) { th.if_(t < stride, [&](Scope&) { mine[0] = mine[0] + mine[stride]; }); });
                });
          });
      lib::store_by_one(b, out_b, 0, s[0]);
    });
    // One thread counts the trips of a doubling loop: 1, 2, 4, ..., up to 1000 is 10 trips.
    g.claim(trips, thread(1), [&](Scope& g, View tr) {
      g.split(Level::Thread, {{1, [&](Scope& th) {
                                 auto n = th.let("n", 0);
                                 th.for_(
                                     "p", 1, [](Expr p) { return p < 1000; }, [](Expr p) { return p << 1; },
                                     [&](Scope& th, Expr) { th.assign(n, n + 1); });
                                 tr[0] = n;
                               }}});
    });
  });
  return k.build();
}

TEST(Builder, ALoopMayStepByAnyRule) {
  Kernel k = halving_tree();
  for (int blocks : {1, 3}) {
    std::vector<float> x(static_cast<std::size_t>(blocks) * 256);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13);
    for (const Device& d : devices()) {
      std::vector<float> out(static_cast<std::size_t>(blocks));
      std::vector<int> trips(1, -1);
      k.launch(d, Grid{blocks, 256}, std::as_const(x), out, trips);
      d.synchronize();
      for (int b = 0; b < blocks; ++b) {
        float want = 0;
        for (int i = 0; i < 256; ++i) want += x[static_cast<std::size_t>(b * 256 + i)];
        EXPECT_EQ(out[static_cast<std::size_t>(b)], want)
            << "block " << b << " on " << d.name();  // small integers: exact
      }
      EXPECT_EQ(trips[0], 10) << d.name();
    }
  }
  std::string cuda = k.source(Spec{});
  EXPECT_NE(cuda.find("(stride >> 1)"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("(p << 1)"), std::string::npos) << cuda;
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
TEST(Compile, TheBuilderTestKernelsCompileWithoutWarnings) {
  REQUIRE_NVRTC();
  for (const Kernel& k : {histogram(), halving_tree()}) {
    Compiled c = compile(k, Spec{});
    EXPECT_FALSE(c.cubin.empty()) << k.name();
    EXPECT_EQ(c.log, "") << k.name();
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// ---------------------------------------------------------------- atomics are checked as they run
/// A histogram whose bin comes straight from the data: an atomic lowering cannot prove in bounds.
Kernel unclamped_histogram(int* line) {
  KernelBuilder k("unclamped_histogram");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto hist = k.param<GlobalPtr<int>>("hist", extent(16));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.group(thread(1), [&](Scope& th) {
      th.if_(gid < n, [&](Scope& th) {
        *line = __LINE__ + 1;
        auto old = th.atomic("old", AtomicOp::Add, hist, x[gid], 1);
        (void)old;
      });
    });
  });
  return k.build();
}

// Before, the generated CUDA ran an atomic at any index: one outside its buffer wrote past it with
// nothing to tell (docs/semantics.md listed atomics among the operands not checked on the GPU). Now an
// atomic lowering cannot prove is guarded and reported like a checked store, on every backend.
TEST(Builder, AnAtomicOutsideItsBufferIsCaughtOnEveryBackend) {
  int line = 0;
  Kernel k = unclamped_histogram(&line);
  std::string cuda = k.source(Spec{});
  EXPECT_NE(cuda.find("? atomicAdd(&hist["), std::string::npos) << cuda;
  EXPECT_NE(cuda.find(": vt_fail_zero<int>(vt_err, "), std::string::npos) << cuda;
  EXPECT_EQ(histogram().source(Spec{}).find("vt_fail"), std::string::npos)
      << "a clamped bin is proven and needs no check";
  std::vector<int> x = {1, 2, 16, 3};  // 16 is past the 16 bins
  for (const Device& d : devices()) {
    std::vector<int> hist(16, 0);
    try {
      k.launch(d, Grid{1, 64}, 4, std::as_const(x), hist);
      d.synchronize();
      ADD_FAILURE() << "an atomic past its buffer ran on " << d.name();
    } catch (const ExecutionError& e) {
      EXPECT_NE(std::string(e.what()).find("test_builder.cpp:" + std::to_string(line)), std::string::npos)
          << d.name() << ": " << e.what();
    }
  }
}

TEST(Compile, ACheckedAtomicCompiles) {
  REQUIRE_NVRTC();
  int line = 0;
  Compiled c = compile(unclamped_histogram(&line), Spec{});
  EXPECT_FALSE(c.cubin.empty());
  EXPECT_EQ(c.log, "");
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// ---------------------------------------------------------------- 2-D and 3-D positions
/// C = A + B on an M x N matrix in 16 x 16 blocks, with CUDA's 2-D thread and block indices.
Kernel matrix_add_2d() {
  KernelBuilder k("matrix_add_2d");
  auto M = k.param<int>("M");
  auto N = k.param<int>("N");
  auto A = k.param<GlobalPtr<const float>>("A", extent(M * N));
  auto B = k.param<GlobalPtr<const float>>("B", extent(M * N));
  auto C = k.param<GlobalPtr<float>>("C", extent(M * N));
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto [bx, by, bz] = g.block_xyz((N + 15) / 16);
    auto [tx, ty, tz] = g.thread_xyz({16, 16});
    auto row = g.let("row", by * 16 + ty), col = g.let("col", bx * 16 + tx);
    (void)bz;
    (void)tz;
    g.partition(
        C, thread(1), [&](Expr i) { return row * N + col + i; },
        [&](Scope& g, View c) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(row < M && col < N, [&](Scope&) { c[0] = A[row * N + col] + B[row * N + col]; });
          });
        });
  });
  return k.build();
}

TEST(Builder, TwoDimensionalIdsSplitALinearLaunchAsCudaDoes) {
  Kernel k = matrix_add_2d();
  for (auto [M, N] : {std::pair{16, 16}, std::pair{37, 50}, std::pair{1, 3}}) {
    std::vector<float> a(static_cast<std::size_t>(M * N)), b(a.size()), want(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<float>(i % 17);
      b[i] = static_cast<float>(i % 5) * 2;
      want[i] = a[i] + b[i];
    }
    Grid grid = Grid::of({(N + 15) / 16, (M + 15) / 16}, {16, 16});
    for (const Device& d : devices()) {
      std::vector<float> c(a.size(), -1);
      k.launch(d, grid, M, N, std::as_const(a), std::as_const(b), c);
      d.synchronize();
      EXPECT_EQ(c, want) << M << " x " << N << " on " << d.name();
    }
  }
}

TEST(Builder, ThreeDimensionalThreadIdsAreXFastest) {
  KernelBuilder k("xyz");
  auto out = k.param<GlobalPtr<int>>("out", extent(32 * 3));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 96, [&](Scope& b, Expr, View o) {
      auto [x, y, z] = b.thread_xyz({4, 2, 4});
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          o, thread(1), [&](Expr i) { return t * 3 + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope&) {
              mine[0] = x;
              mine[1] = y;
              mine[2] = z;
            });
          });
    });
  });
  Kernel kernel = k.build();
  std::vector<int> got(96, -1), want(96);
  for (int t = 0; t < 32; ++t) {
    want[static_cast<std::size_t>(t * 3)] = t % 4;
    want[static_cast<std::size_t>(t * 3 + 1)] = t / 4 % 2;
    want[static_cast<std::size_t>(t * 3 + 2)] = t / 8;
  }
  kernel.launch(Device::interpreter(), Grid{1, 32}, got);
  EXPECT_EQ(got, want);
}

TEST(Builder, ThreeDimensionalBlockIdsAreXFastest) {
  KernelBuilder k("block_xyz");
  auto out = k.param<GlobalPtr<int>>("out", extent(12 * 3));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto [x, y, z] = g.block_xyz(2, 3);
    lib::for_each_block(g, out, 3, [&](Scope& b, Expr, View o) {
      lib::store_by_one(b, o, 0, x);
      lib::store_by_one(b, o, 1, y);
      lib::store_by_one(b, o, 2, z);
    });
  });
  Kernel kernel = k.build();
  std::vector<int> got(36, -1), want(36);
  for (int b = 0; b < 12; ++b) {
    want[static_cast<std::size_t>(b * 3)] = b % 2;
    want[static_cast<std::size_t>(b * 3 + 1)] = b / 2 % 3;
    want[static_cast<std::size_t>(b * 3 + 2)] = b / 6;
  }
  for (const Device& d : devices()) {
    std::fill(got.begin(), got.end(), -1);
    kernel.launch(d, Grid::of({2, 3, 2}, {32}), got);
    d.synchronize();
    EXPECT_EQ(got, want) << d.name();
  }
}

TEST(Builder, AThreadShapeThatIsNotTheBlockSizeIsRefused) {
  KernelBuilder k("bad_shape");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(64);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    auto [x, y, z] = g.thread_xyz({16, 16});
    g.partition(
        out, thread(1), [&](Expr i) { return g.id(thread(1)) + i; },
        [&](Scope& g, View o) { g.group(thread(1), [&](Scope&) { o[0] = x + y + z; }); });
  });
  try {
    k.build();
    ADD_FAILURE() << "a 16 x 16 shape for 64 threads must be refused";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0915", line, "tests/test_builder.cpp")) << render_all(e.diagnostics());
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// ---------------------------------------------------------------- break and continue
/// Each of 64 threads searches its row of 50 for the first element equal to `key` (break), and sums
/// the row's even elements (continue past the odd ones), and the row's elements at 1, 2, 4, ... except
/// at 8 (continue in a loop with a step rule).
Kernel search_rows() {
  KernelBuilder k("search_rows");
  auto key = k.param<int>("key");
  auto x = k.param<GlobalPtr<const int>>("x", extent(64 * 50));
  auto out = k.param<GlobalPtr<int>>("out", extent(64 * 4));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t * 4 + i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            auto found = th.let("found", -1);
            th.for_("j", 0, 50, [&](Scope& th, Expr j) {
              th.if_(x[t * 50 + j] == key, [&](Scope& th) {
                th.assign(found, j);
                th.break_();
              });
            });
            auto even = th.let("even", 0);
            auto kept = th.let("kept", 0);  // the same for every thread but for the continue
            th.for_("j", 0, 50, [&](Scope& th, Expr j) {
              th.if_(x[t * 50 + j] % 2 != 0, [&](Scope& th) { th.continue_(); });
              th.assign(even, even + x[t * 50 + j]);
              th.assign(kept, kept + 1);
            });
            auto powers = th.let("powers", 0);
            th.for_(
                "p", 1, [](Expr p) { return p < 50; }, [](Expr p) { return p * 2; },
                [&](Scope& th, Expr p) {
                  th.if_(p == 8, [&](Scope& th) { th.continue_(); });
                  th.assign(powers, powers + x[t * 50 + p]);
                });
            o[0] = found;
            o[1] = even;
            o[2] = powers;
            o[3] = kept;
          });
        });
  });
  return k.build();
}

TEST(Builder, BreakAndContinueLeaveAThreadsLoopAsInC) {
  Kernel k = search_rows();
  std::string cuda = k.source(Spec{});
  EXPECT_NE(cuda.find("break;"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("continue;"), std::string::npos) << cuda;
  std::vector<int> x(64 * 50);
  const int key = 7;
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<int>((i * 37 + 11) % 23);
    if (i / 50 % 3 == 0 && x[i] == key) x[i] = key + 1;  // every third row lacks the key
  }
  std::vector<int> want(64 * 4);
  for (int t = 0; t < 64; ++t) {
    int found = -1, even = 0, powers = 0, kept = 0;
    for (int j = 0; j < 50; ++j)
      if (x[static_cast<std::size_t>(t * 50 + j)] == key) {
        found = j;
        break;
      }
    for (int j = 0; j < 50; ++j) {
      int v = x[static_cast<std::size_t>(t * 50 + j)];
      if (v % 2 != 0) continue;
      even += v;
      ++kept;
    }
    for (int p = 1; p < 50; p *= 2) {
      if (p == 8) continue;
      powers += x[static_cast<std::size_t>(t * 50 + p)];
    }
    want[static_cast<std::size_t>(t * 4)] = found;
    want[static_cast<std::size_t>(t * 4 + 1)] = even;
    want[static_cast<std::size_t>(t * 4 + 2)] = powers;
    want[static_cast<std::size_t>(t * 4 + 3)] = kept;
  }
  int with_key = 0;
  for (int t = 0; t < 64; ++t) with_key += want[static_cast<std::size_t>(t * 4)] >= 0;
  ASSERT_GT(with_key, 0) << "the data must exercise the break";
  ASSERT_LT(with_key, 64) << "and the loop that runs to its end";
  for (const Device& d : devices()) {
    std::vector<int> got(64 * 4, -99);
    k.launch(d, Grid{1, 64}, key, std::as_const(x), got);
    d.synchronize();
    EXPECT_EQ(got, want) << d.name();
  }
}

TEST(Compile, BreakAndContinueCompile) {
  REQUIRE_NVRTC();
  Compiled c = compile(search_rows(), Spec{});
  EXPECT_FALSE(c.cubin.empty());
  EXPECT_EQ(c.log, "");
}

TEST(Builder, BreakAndContinueAreRefusedWhereTheyCouldSkipABarrier) {
  int outside = 0, block_level = 0, out_of_group = 0;
  KernelBuilder k("bad_jumps");
  auto y = k.param<GlobalPtr<int>>("y", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      outside = __LINE__ + 1;
      b.break_();  // no loop around it
      b.for_("i", 0, 4, [&](Scope& b, Expr i) {
        block_level = __LINE__ + 1;
        b.if_(i == 2, [&](Scope& b) { b.break_(); });  // the whole block's loop: a barrier may follow
        b.group(thread(1), [&](Scope& th) {
          out_of_group = __LINE__ + 1;
          th.continue_();  // thread(1) code, but the loop is the block's
        });
      });
    });
    g.partition(
        y, thread(1), [&](Expr i) { return g.id(thread(1)) + i; },
        [&](Scope& g, View o) { g.group(thread(1), [&](Scope&) { o[0] = 1; }); });
  });
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    std::string all = render_all(e.diagnostics());
    EXPECT_TRUE(testing::has_diag(e, "V0211", outside, "tests/test_builder.cpp")) << all;
    EXPECT_TRUE(testing::has_diag(e, "V0212", block_level, "tests/test_builder.cpp")) << all;
    EXPECT_TRUE(testing::has_diag(e, "V0212", out_of_group, "tests/test_builder.cpp")) << all;
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
/// A thread(1) device function that scans with a while_ and leaves it with break_, called by every
/// thread: the jump stays inside the function's own loop on every backend.
TEST(Builder, ABreakInADeviceFunctionsLoopStaysInsideIt) {
  FunctionBuilder f("first_at_least");
  f.requires_perspective(thread(1));
  auto p = f.pointer_param("p", ScalarType::I32, MemSpace::Global, true);
  auto n = f.param<int>("n");
  auto key = f.param<int>("key");
  f.returns(ScalarType::I32);
  f.body([&](Scope& s) {
    auto i = s.let("i", 0);
    auto at = s.let("at", n);
    s.while_(i < n, [&](Scope& s) {
      s.if_(p[i] >= key, [&](Scope& s) {
        s.assign(at, i);
        s.break_();
      });
      s.assign(i, i + 1);
    });
    s.ret(at);
  });
  DeviceFunction fn = f.build();
  KernelBuilder k("first_at_least_each");
  auto x = k.param<GlobalPtr<const int>>("x", extent(40));
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            auto r = th.call("r", fn, {x, 40, t});  // the first element of x at least t
            o[0] = r;
          });
        });
  });
  Kernel kernel = k.build();
  std::vector<int> xs(40), want(64);
  for (int i = 0; i < 40; ++i) xs[static_cast<std::size_t>(i)] = i * 3 / 2;  // 0 1 3 4 6 7 ...
  for (int t = 0; t < 64; ++t) {
    int at = 40;
    for (int i = 0; i < 40; ++i)
      if (xs[static_cast<std::size_t>(i)] >= t) {
        at = i;
        break;
      }
    want[static_cast<std::size_t>(t)] = at;
  }
  for (const Device& d : devices()) {
    std::vector<int> got(64, -1);
    kernel.launch(d, Grid{1, 64}, std::as_const(xs), got);
    d.synchronize();
    EXPECT_EQ(got, want) << d.name();
  }
  if (nvrtc_available()) {
    Compiled c = compile(kernel, Spec{});
    EXPECT_EQ(c.log, "");
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// ---------------------------------------------------------------- literal arithmetic
/// Loop counters of the host program become literals in the kernel: `8 * (i / 2 % 2)` for i = 6 is
/// the literal 8, and `(x * 1 - 0) / 1 + 0` is x. The builder folds them as the kernel would compute them.
TEST(Builder, LiteralArithmeticIsFoldedAsTheKernelWouldComputeIt) {
  KernelBuilder b("folded");
  auto n = b.param<int>("n");
  auto x = b.param<GlobalPtr<const int>>("x", extent(n));
  auto out = b.param<GlobalPtr<int>>("out", extent(n));
  b.block_threads(64);
  b.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return gid + i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(gid < n, [&](Scope&) {
              o[0] = (x[gid] * 1 - 0) / 1 + Expr(8) * ((Expr(6) / 2) % 2) + (Expr(77) - 77) + (Expr(1) << 4) + -Expr(3);
            });
          });
        });
  });
  Kernel k = b.build();
  std::string ir = k.ir_text();
  EXPECT_NE(ir.find("((x[gid] + 8) + 16) + -3"), std::string::npos) << ir;
  for (const char* gone : {"77", " * 1", " / 1", " - 0", "(6 / 2)", " + 0"})
    EXPECT_EQ(ir.find(gone), std::string::npos) << gone << "\n" << ir;
  const int size = 150;
  std::vector<int> xs(size);
  for (int i = 0; i < size; ++i) xs[static_cast<std::size_t>(i)] = i * 3 - 7;
  for (const Device& d : devices()) {
    std::vector<int> got(size, 0);
    k.launch(d, Grid{(size + 63) / 64, 64}, size, std::as_const(xs), got);
    d.synchronize();
    for (int i = 0; i < size; ++i)
      ASSERT_EQ(got[static_cast<std::size_t>(i)], xs[static_cast<std::size_t>(i)] + 21) << i << " on " << d.name();
  }
}

/// Folding never hides an ill-typed operator: literals of mixed types, or of a type the operator is
/// not defined for, reach the checker as written; an overflow is not folded into a wrapped literal.
TEST(Builder, LiteralsTheCheckerMustSeeAreNotFolded) {
  // Outside a macro's argument, so that std::source_location gives the lines written here.
  int line = 0;
  auto rejects = [&](const std::string& code, const std::function<void(Scope&)>& body) {
    return testing::rejects_kernel(
        code, line, [&](KernelBuilder& k) { k.body(body); }, "tests/test_builder.cpp");
  };
  auto bool_sum = rejects("V0702", [&](Scope& g) { line = __LINE__, g.let("m", Expr(true) + Expr(true)); });
  EXPECT_TRUE(bool_sum);
  auto int_and = rejects("V0702", [&](Scope& g) { line = __LINE__, g.let("m", Expr(1) && Expr(2)); });
  EXPECT_TRUE(int_and);
  auto bool_neg = rejects("V0702", [&](Scope& g) { line = __LINE__, g.let("m", -Expr(true)); });
  EXPECT_TRUE(bool_neg);
  auto mixed = rejects("V0701", [&](Scope& g) { line = __LINE__, g.let("m", Expr(1) + Expr(2LL)); });
  EXPECT_TRUE(mixed);
  KernelBuilder b("overflow");
  b.block_threads(32);
  b.body([&](Scope& g) { g.let("m", Expr(2147483647) + Expr(1)); });
  std::string ir = b.build().ir_text();
  EXPECT_NE(ir.find("(2147483647 + 1)"), std::string::npos) << ir;
}

}  // namespace
}  // namespace vantage
