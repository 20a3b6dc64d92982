// Kernels a user writes that the examples do not: a histogram in shared memory with atomics, a
// stencil whose block loads its halo, a row softmax with two block reductions, a block scan, a
// sparse matrix-vector product, a bitonic sort, a stream compaction with ballot and popc. Each runs
// on the interpreter under both thread orders, on the CPU backend, on a GPU where there is one (the
// GPU bundle's check), and (its generated CUDA, on host threads) as a GPU would run it, against a
// plain C++ reference; NVRTC compiles each. Inputs
// are small integers (as floats where the kernel takes floats), so that sums are exact; softmax's
// exponentials are compared to a relative 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "host_cuda.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using test_support::HostArg;
using test_support::HostLaunch;

std::vector<Device> devices() {
  InterpreterOptions reverse;
  reverse.order = ThreadOrder::Reverse;
  std::vector<Device> d{Device::interpreter(), Device::interpreter(reverse)};
  if (Device::cpu_available()) d.push_back(Device::cpu(2));
  if (Device::gpu_count() > 0) d.push_back(Device::gpu(0));  // the GPU bundle's check runs these
  return d;
}

/// The generated CUDA of `k` launched on host threads: its buffers after the launch, or a failure.
std::vector<std::vector<long long>> on_host(const Kernel& k, Spec spec, Grid g, std::vector<HostArg> args) {
  // The GPU bundle's check runs these tests on the GPU, on a machine whose host compiler may lack the
  // sanitizers' libraries: it turns this part off.
  if (const char* e = std::getenv("VANTAGE_HOST_CUDA"); e && std::string(e) == "off") return {};
  Specialized s = specialize_for(k, spec.with_fp_contract(false));
  if (std::getenv("VANTAGE_USER_VERBOSE")) std::printf("%s\n", s.source.c_str());
  if (!test_support::runs_on_host(s.source)) {
    ADD_FAILURE() << k.name() << ": generated CUDA does not run on host threads";
    return {};
  }
  HostLaunch l{s.source, s.entry, static_cast<int>(g.blocks), static_cast<int>(g.threads), std::move(args)};
  auto run = test_support::run_launches_on_host({l});
  EXPECT_TRUE(run.ok) << k.name() << ": " << run.problem;
  if (!run.ok || run.results.empty()) return {};
  EXPECT_FALSE(run.results[0].check_failed) << k.name() << ": an access was outside on host threads";
  return run.results[0].buffers;
}

std::vector<long long> words(const std::vector<int>& v) { return {v.begin(), v.end()}; }
std::vector<long long> words(const std::vector<float>& v) {
  std::vector<long long> out;
  for (float x : v) {
    std::int32_t bits;
    std::memcpy(&bits, &x, 4);
    out.push_back(bits);
  }
  return out;
}

int syncthreads(const std::string& source) { return test_support::count(source, "__syncthreads()"); }

void expect_compiles(const Kernel& k, const Spec& spec = Spec{}) {
  if (!nvrtc_available()) return;
  Compiled c = compile(k, spec);
  EXPECT_FALSE(c.cubin.empty()) << k.name();
}

// ---------------------------------------------------------------- histogram
/// 256 bins of `in[i] & 255`: each block counts its grid-stride share into shared bins with atomics,
/// then adds them to the global bins with atomics. The zeroing, the counting and the flush each need
/// the barrier before them; the user writes none.
Kernel histogram() {
  KernelBuilder k("histogram");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const int>>("in", extent(n));
  auto bins = k.param<GlobalPtr<int>>("bins", extent(256));
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    auto stride = g.let("stride", g.grid_blocks() * 256);
    g.group(block(1), [&](Scope& b) {
      View local = b.shared<int>("local", 256);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          local, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = 0; }); });
      b.group(thread(1), [&](Scope& th) {
        th.for_("i", blk * 256 + t, n, stride,
                [&](Scope& th, Expr i) { th.atomic(AtomicOp::Add, local, in[i] & 255, 1); });
      });
      b.group(thread(1), [&](Scope& th) { th.atomic(AtomicOp::Add, bins, t, local[t]); });
    });
  });
  return k.build();
}

TEST(UserKernels, AHistogramInSharedMemoryCountsEveryElement) {
  Kernel k = histogram();
  const int n = 5000;
  std::vector<int> in(n), want(256, 0);
  for (int i = 0; i < n; ++i) {
    in[static_cast<std::size_t>(i)] = (i * 37 + i / 7) % 1000;
    ++want[static_cast<std::size_t>(in[static_cast<std::size_t>(i)] & 255)];
  }
  for (const Device& d : devices()) {
    std::vector<int> bins(256, 0);
    test_support::launch_on(k, d, Grid{3, 256}, n, std::as_const(in), bins);
    EXPECT_EQ(bins, want) << d.name();
  }
  auto host = on_host(k, Spec{}, Grid{3, 256},
                      {HostArg::of("int", n), HostArg::of("int", in), HostArg::of("int", std::vector<int>(256, 0))});
  if (host.size() == 2) {
    EXPECT_EQ(host[1], words(want));
  }
  expect_compiles(k);
}

// ---------------------------------------------------------------- stencil with a halo
/// y[i] = x[i - 1] + x[i] + x[i + 1] (zero outside x): each block stages its 128 elements and the one
/// on each side in shared memory (thread 0 loads both halo elements, into s[left] and s[right]:
/// s[0] and s[129] for the stencil), then each thread adds three.
Kernel stencil_halo(int left = 0, int right = 129) {
  KernelBuilder k("stencil_halo");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(128);
  k.body([&](Scope& g) {
    lib::for_each_block(g, y, 128, [&](Scope& b, Expr blk, View y_b) {
      View s = b.shared<float>("s", 130);
      auto t = b.let("t", b.id(thread(1)));
      auto base = b.let("base", blk * 128);
      auto load = [&](Scope& th, ElemRef dst, Expr i) {
        th.if_(
            i >= 0 && i < n, [&](Scope&) { dst = x[i]; }, [&](Scope&) { dst = 0.0f; });
      };
      b.partition(
          s, thread(1), [&](Expr i) { return t + 1 + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope& th) { load(th, mine[0], base + t); }); });
      for (int side = 0; side < 2; ++side)
        b.claim(s, thread(1), [&](Scope& b, View one) {
          b.split(
              Level::Thread,
              {SplitBranch(1, [&](Scope& th) { load(th, one[side ? right : left], side ? base + 128 : base - 1); })});
        });
      b.partition(
          y_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1),
                    [&](Scope& th) { th.if_(base + t < n, [&](Scope&) { mine[0] = s[t] + s[t + 1] + s[t + 2]; }); });
          });
    });
  });
  return k.build();
}

TEST(UserKernels, AStencilThatLoadsItsHaloIsRightAtTheEdgesOfEveryBlock) {
  Kernel k = stencil_halo();
  // One barrier, before the sums, as by hand: the halo stores touch s[0] and s[129], apart from the
  // middle's s[1..128] and from each other (docs/sync.md, element ranges).
  EXPECT_EQ(syncthreads(k.source(Spec{})), 1) << k.source(Spec{});
  for (int n : {1, 127, 128, 129, 300}) {
    std::vector<float> x(static_cast<std::size_t>(n)), want(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>((i * 5) % 11 - 5);
    auto at = [&](int i) { return i >= 0 && i < n ? x[static_cast<std::size_t>(i)] : 0.0f; };
    for (int i = 0; i < n; ++i) want[static_cast<std::size_t>(i)] = at(i - 1) + at(i) + at(i + 1);
    const std::int64_t blocks = (n + 127) / 128;
    for (const Device& d : devices()) {
      std::vector<float> y(static_cast<std::size_t>(n), -99.0f);
      test_support::launch_on(k, d, Grid{blocks, 128}, n, std::as_const(x), y);
      EXPECT_EQ(y, want) << d.name() << ", n = " << n;
    }
    if (n == 300) {
      auto host = on_host(k, Spec{}, Grid{blocks, 128},
                          {HostArg::of("int", n), HostArg::of("float", x),
                           HostArg::of("float", std::vector<float>(static_cast<std::size_t>(n), -99.0f))});
      if (host.size() == 2) {
        EXPECT_EQ(host[1], words(want));
      }
    }
  }
  expect_compiles(k);
}

// A halo store at an edge of the middle (s[1], which thread 0 stored; s[128], thread 127's) meets
// the middle's stores and gets a barrier before it; one just outside (s[0], s[129]) does not.
TEST(UserKernels, AStoreBesideTheMiddleNeedsNoBarrierAndOneAtItsEdgeDoes) {
  EXPECT_EQ(syncthreads(stencil_halo(0, 129).source(Spec{})), 1);
  EXPECT_EQ(syncthreads(stencil_halo(1, 129).source(Spec{})), 2);
  EXPECT_EQ(syncthreads(stencil_halo(0, 128).source(Spec{})), 2);
  // s[0] then s[0] again by thread 0 of another split: the same element, a barrier between.
  EXPECT_EQ(syncthreads(stencil_halo(0, 0).source(Spec{})), 2);
  // (These read an element nothing wrote, so they do not run clean; the random programs with halos,
  // RandomPrograms.SharedMemoryReused*, run such steps in every order under racecheck.)
}

// ---------------------------------------------------------------- row softmax
/// y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r), one block of 128 threads per row:
/// each thread takes columns t, t + 128, ...; the row's maximum and sum are block reductions.
Kernel softmax() {
  KernelBuilder k("softmax");
  auto rows = k.param<int>("rows");
  auto cols = k.param<int>("cols");
  auto x = k.param<GlobalPtr<const float>>("x", extent(rows * cols));
  auto y = k.param<GlobalPtr<float>>("y", extent(rows * cols));
  k.block_threads(128);
  k.body([&](Scope& g) {
    auto row = g.let("row", g.id(block(1)));
    g.partition(
        y, block(1), [&](Expr i) { return row * cols + i; },
        [&](Scope& g, View y_row) {
          g.group(block(1), [&](Scope& b) {
            auto t = b.let("t", b.id(thread(1)));
            auto in_row = [&](Expr c) { return x[row * cols + c]; };
            auto m = b.let("m", -1e30f, at(thread(1)));
            lib::block_strided(b, 0, cols, [&](Scope& th, Expr c) { th.assign(m, max(m, in_row(c))); });
            auto row_max = lib::block_reduce(b, "row_max", m, lib::Op::Max);
            auto s = b.let("s", 0.0f, at(thread(1)));
            lib::block_strided(b, 0, cols, [&](Scope& th, Expr c) { th.assign(s, s + exp(in_row(c) - row_max)); });
            auto total = lib::block_reduce(b, "total", s, lib::Op::Sum);
            b.partition(
                y_row, thread(1), [&](Expr i) { return t + i * 128; },
                [&](Scope& b, View mine) {
                  b.group(thread(1), [&](Scope& th) {
                    th.for_("k", 0, (cols + 127) / 128, [&](Scope& th, Expr kk) {
                      th.if_(t + kk * 128 < cols,
                             [&](Scope&) { mine[kk] = exp(in_row(t + kk * 128) - row_max) / total; });
                    });
                  });
                });
          });
        });
  });
  return k.build();
}

TEST(UserKernels, ARowSoftmaxWithTwoBlockReductionsSumsToOne) {
  Kernel k = softmax();
  const int rows = 3;
  for (int cols : {1, 100, 300}) {
    std::vector<float> x(static_cast<std::size_t>(rows * cols)), want(x.size());
    for (int i = 0; i < rows * cols; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>((i * 13) % 17 - 8) / 4;
    for (int r = 0; r < rows; ++r) {
      float m = -1e30f;
      for (int c = 0; c < cols; ++c) m = std::max(m, x[static_cast<std::size_t>(r * cols + c)]);
      double sum = 0;
      for (int c = 0; c < cols; ++c)
        sum += std::exp(static_cast<double>(x[static_cast<std::size_t>(r * cols + c)] - m));
      for (int c = 0; c < cols; ++c)
        want[static_cast<std::size_t>(r * cols + c)] =
            static_cast<float>(std::exp(static_cast<double>(x[static_cast<std::size_t>(r * cols + c)] - m)) / sum);
    }
    for (const Device& d : devices()) {
      std::vector<float> y(x.size(), -1.0f);
      test_support::launch_on(k, d, Grid{rows, 128}, rows, cols, std::as_const(x), y);
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], want[i], 1e-5 * want[i] + 1e-7) << d.name() << ", cols = " << cols << ", element " << i;
    }
  }
  expect_compiles(k);
}

// ---------------------------------------------------------------- block scan
/// out[i] = in[b * 256] + ... + in[i] within each block of 256 (lib::block_inclusive_scan), and the
/// block's total in totals[b].
Kernel block_scan() {
  KernelBuilder k("block_scan");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const int>>("in", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(n));
  auto totals = k.param<GlobalPtr<int>>("totals");
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        totals, block(1), [&](Expr i) { return blk + i; },
        [&](Scope& g, View total_b) {
          lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
            auto t = b.let("t", b.id(thread(1)));
            auto i = b.let("i", blk * 256 + t);
            auto v = b.let("v", select(i < n, in[min(i, n - 1)], 0), at(thread(1)));
            Var total;
            auto sum = lib::block_inclusive_scan(b, "sum", v, lib::Op::Sum, &total);
            lib::block_store(b, out_b, n - blk * 256, sum);
            lib::store_by_one(b, total_b, 0, total);
          });
        });
  });
  return k.build();
}

TEST(UserKernels, ABlockScanGivesEachBlocksPrefixSumsAndTotal) {
  Kernel k = block_scan();
  const int n = 600, blocks = 3;
  std::vector<int> in(n), want(n), want_totals(blocks, 0);
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = (i * 7) % 13 - 6;
  for (int i = 0; i < n; ++i) {
    want[static_cast<std::size_t>(i)] =
        (i % 256 ? want[static_cast<std::size_t>(i - 1)] : 0) + in[static_cast<std::size_t>(i)];
    want_totals[static_cast<std::size_t>(i / 256)] += in[static_cast<std::size_t>(i)];
  }
  for (const Device& d : devices()) {
    std::vector<int> out(n, -1), totals(blocks, -1);
    test_support::launch_on(k, d, Grid{blocks, 256}, n, std::as_const(in), out, totals);
    EXPECT_EQ(out, want) << d.name();
    EXPECT_EQ(totals, want_totals) << d.name();
  }
  auto host = on_host(k, Spec{}, Grid{blocks, 256},
                      {HostArg::of("int", n), HostArg::of("int", in), HostArg::of("int", std::vector<int>(n, -1)),
                       HostArg::of("int", std::vector<int>(blocks, -1))});
  if (host.size() == 3) {
    EXPECT_EQ(host[1], words(want));
    EXPECT_EQ(host[2], words(want_totals));
  }
  expect_compiles(k);
}

// ---------------------------------------------------------------- matrix-vector, one warp a row
/// y = A x for a rows x cols A: warp w of block b takes row b * (T / 32) + w, its lanes columns l,
/// l + 32, ..., a warp reduction, and lane 0 stores the row's sum.
Kernel gemv() {
  KernelBuilder k("gemv");
  auto rows = k.param<int>("rows");
  auto cols = k.param<int>("cols");
  auto a = k.param<GlobalPtr<const int>>("a", extent(rows * cols));
  auto x = k.param<GlobalPtr<const int>>("x", extent(cols));
  auto y = k.param<GlobalPtr<int>>("y", extent(rows));
  k.block_threads(128);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        y, block(1), [&](Expr i) { return blk * 4 + i; },
        [&](Scope& g, View y_b) {
          g.group(block(1), [&](Scope& b) {
            auto w = b.let("w", b.id(warp()));
            b.partition(
                y_b, warp(), [&](Expr i) { return w + i; },
                [&](Scope& b, View y_w) {
                  b.group(warp(), [&](Scope& wp) {
                    auto row = wp.let("row", blk * 4 + w);
                    wp.if_(row < rows, [&](Scope& wp) {
                      auto lane = wp.let("lane", wp.id(thread(1)));
                      auto part = wp.let("part", 0, at(thread(1)));
                      wp.group(thread(1), [&](Scope& th) {
                        th.for_("c", lane, cols, 32,
                                [&](Scope& th, Expr c) { th.assign(part, part + a[row * cols + c] * x[c]); });
                      });
                      auto sum = lib::warp_reduce(wp, "sum", part, lib::Op::Sum);
                      lib::store_by_one(wp, y_w, 0, sum);
                    });
                  });
                });
          });
        });
  });
  return k.build();
}

TEST(UserKernels, AMatrixVectorProductWithAWarpPerRowIsExact) {
  Kernel k = gemv();
  for (auto [rows, cols] : {std::pair{5, 1}, std::pair{9, 33}, std::pair{17, 100}}) {
    std::vector<int> a(static_cast<std::size_t>(rows * cols)), x(static_cast<std::size_t>(cols)), want(rows, 0);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int>(i * 7 % 19) - 9;
    for (int c = 0; c < cols; ++c) x[static_cast<std::size_t>(c)] = c % 5 - 2;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        want[static_cast<std::size_t>(r)] += a[static_cast<std::size_t>(r * cols + c)] * x[static_cast<std::size_t>(c)];
    const std::int64_t blocks = (rows + 3) / 4;
    for (const Device& d : devices()) {
      std::vector<int> y(static_cast<std::size_t>(rows), -1);
      test_support::launch_on(k, d, Grid{blocks, 128}, rows, cols, std::as_const(a), std::as_const(x), y);
      EXPECT_EQ(y, want) << d.name() << ", " << rows << " x " << cols;
    }
  }
  expect_compiles(k);
}

// ---------------------------------------------------------------- a sum over the whole grid
/// total += the sum of in: each block reduces its 256 elements, and its thread 0 adds the block's
/// sum to the one total with an atomic.
Kernel grid_sum() {
  KernelBuilder k("grid_sum");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const int>>("in", extent(n));
  auto total = k.param<GlobalPtr<int>>("total", extent(1));
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.group(block(1), [&](Scope& b) {
      auto i = b.let("i", blk * 256 + b.id(thread(1)));
      auto v = b.let("v", select(i < n, in[min(i, n - 1)], 0), at(thread(1)));
      auto sum = lib::block_reduce(b, "sum", v, lib::Op::Sum);
      b.split(Level::Thread, {SplitBranch(1, [&](Scope& th) { th.atomic(AtomicOp::Add, total, 0, sum); })});
    });
  });
  return k.build();
}

TEST(UserKernels, AGridSumOfBlockReductionsAndOneAtomicPerBlockIsExact) {
  Kernel k = grid_sum();
  for (int n : {1, 255, 256, 1000}) {
    std::vector<int> in(static_cast<std::size_t>(n));
    int want = 0;
    for (int i = 0; i < n; ++i) want += in[static_cast<std::size_t>(i)] = (i * 11) % 23 - 11;
    for (const Device& d : devices()) {
      std::vector<int> total{0};
      test_support::launch_on(k, d, Grid{(n + 255) / 256, 256}, n, std::as_const(in), total);
      EXPECT_EQ(total[0], want) << d.name() << ", n = " << n;
    }
    if (n == 1000) {
      auto host = on_host(k, Spec{}, Grid{4, 256},
                          {HostArg::of("int", n), HostArg::of("int", in), HostArg::of("int", std::vector<int>{0})});
      if (host.size() == 2) {
        EXPECT_EQ(host[1], std::vector<long long>{want});
      }
    }
  }
  expect_compiles(k);
}

// ---------------------------------------------------------------- a 3 x 3 box filter on a 2-D tile
/// out[r][c] = the sum of in over the 3 x 3 window at (r, c) (zero outside): each block of 256
/// threads stages a 16 x 16 tile and its one-element border, 18 x 18 elements, two per thread at
/// most (t and t + 256), then each thread sums its window from shared memory.
Kernel box3() {
  KernelBuilder k("box3");
  auto h = k.param<int>("h");
  auto w = k.param<int>("w");
  auto in = k.param<GlobalPtr<const int>>("in", extent(h * w));
  auto out = k.param<GlobalPtr<int>>("out", extent(h * w));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, out, h, w, 16, 16, [&](Scope& b, const lib::MatrixTile& tile) {
      View s = b.shared<int>("s", 18 * 18);
      auto t = b.let("t", tile.thread);
      b.partition(
          s, thread(1), [&](Expr i) { return t + i * 256; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) {
              th.for_("k", 0, 2, [&](Scope& th, Expr kk) {
                auto e = th.let("e", t + kk * 256);
                th.if_(e < 18 * 18, [&](Scope& th) {
                  auto r = th.let("r", tile.row0 + e / 18 - 1), c = th.let("c", tile.col0 + e % 18 - 1);
                  th.if_(
                      r >= 0 && r < h && c >= 0 && c < w, [&](Scope&) { mine[kk] = in[r * w + c]; },
                      [&](Scope&) { mine[kk] = 0; });
                });
              });
            });
          });
      lib::update_own(b, tile, [&](Scope&, ElemRef e) {
        Expr sum = 0;
        for (int dr = 0; dr < 3; ++dr)
          for (int dc = 0; dc < 3; ++dc) sum = sum + s[(tile.row + dr) * 18 + tile.col + dc];
        e = sum;
      });
    });
  });
  return k.build();
}

TEST(UserKernels, ABoxFilterOverATileWithItsBorderIsExactAtEveryEdge) {
  Kernel k = box3();
  // One barrier, between the staging and the sums.
  EXPECT_EQ(syncthreads(k.source(Spec{})), 1) << k.source(Spec{});
  for (auto [h, w] : {std::pair{1, 1}, std::pair{16, 16}, std::pair{17, 40}, std::pair{33, 5}}) {
    std::vector<int> in(static_cast<std::size_t>(h * w)), want(in.size(), 0);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 13 % 7) - 3;
    for (int r = 0; r < h; ++r)
      for (int c = 0; c < w; ++c)
        for (int dr = -1; dr <= 1; ++dr)
          for (int dc = -1; dc <= 1; ++dc)
            if (r + dr >= 0 && r + dr < h && c + dc >= 0 && c + dc < w)
              want[static_cast<std::size_t>(r * w + c)] += in[static_cast<std::size_t>((r + dr) * w + c + dc)];
    const std::int64_t blocks = ((h + 15) / 16) * ((w + 15) / 16);
    for (const Device& d : devices()) {
      std::vector<int> out(in.size(), -99);
      test_support::launch_on(k, d, Grid{blocks, 256}, h, w, std::as_const(in), out);
      EXPECT_EQ(out, want) << d.name() << ", " << h << " x " << w;
    }
    if (h == 17) {
      auto host = on_host(k, Spec{}, Grid{blocks, 256},
                          {HostArg::of("int", h), HostArg::of("int", w), HostArg::of("int", in),
                           HostArg::of("int", std::vector<int>(in.size(), -99))});
      if (host.size() == 2) {
        EXPECT_EQ(host[1], words(want));
      }
    }
  }
  expect_compiles(k);
}

// ---------------------------------------------------------------- sparse matrix-vector, CSR
/// y = A x for A in compressed sparse rows: thread r walks row r from row_ptr[r] to row_ptr[r + 1].
/// The loop's bounds and the column indices come from memory, so nothing proves val[j], col[j] or
/// x[col[j]] inside: each is checked, and a malformed matrix is reported, never read past.
Kernel spmv_csr() {
  KernelBuilder k("spmv_csr");
  auto rows = k.param<int>("rows");
  auto nnz = k.param<int>("nnz");
  auto row_ptr = k.param<GlobalPtr<const int>>("row_ptr", extent(rows + 1));
  auto col = k.param<GlobalPtr<const int>>("col", extent(nnz));
  auto val = k.param<GlobalPtr<const float>>("val", extent(nnz));
  auto x = k.param<GlobalPtr<const float>>("x");
  auto y = k.param<GlobalPtr<float>>("y", extent(rows));
  k.block_threads(128);
  k.body([&](Scope& g) {
    lib::for_each(g, y, rows, [&](Scope& th, Expr r, ElemRef yr) {
      auto sum = th.let("sum", 0.0f);
      th.for_("j", row_ptr[r], row_ptr[r + 1], [&](Scope& th, Expr j) { th.assign(sum, sum + val[j] * x[col[j]]); });
      yr = sum;
    });
  });
  return k.build();
}

TEST(UserKernels, ASparseMatrixVectorProductIsExactAndAMalformedMatrixIsReported) {
  Kernel k = spmv_csr();
  const int rows = 300, cols = 77;
  std::vector<int> row_ptr{0}, col;
  std::vector<float> val, x(cols), want(rows, 0.0f);
  for (int c = 0; c < cols; ++c) x[static_cast<std::size_t>(c)] = static_cast<float>(c % 7 - 3);
  for (int r = 0; r < rows; ++r) {
    for (int e = 0; e < (r * 13) % 9; ++e) {
      int c = (r * 31 + e * 17) % cols;
      col.push_back(c);
      val.push_back(static_cast<float>((r + e) % 5 - 2));
      want[static_cast<std::size_t>(r)] += val.back() * x[static_cast<std::size_t>(c)];
    }
    row_ptr.push_back(static_cast<int>(col.size()));
  }
  const int nnz = static_cast<int>(col.size());
  const Grid grid{(rows + 127) / 128, 128};
  // The last row ends past the arrays; one column is past x.
  std::vector<int> bad_rows = row_ptr, bad_cols = col;
  bad_rows[rows] = nnz + 3;
  bad_cols[5] = cols;
  for (const Device& d : devices()) {
    std::vector<float> y(rows, -1.0f);
    test_support::launch_on(k, d, grid, rows, nnz, std::as_const(row_ptr), std::as_const(col), std::as_const(val),
                            std::as_const(x), y);
    EXPECT_EQ(y, want) << d.name();
    for (bool rows_bad : {true, false}) {
      try {
        test_support::launch_on(k, d, grid, rows, nnz, std::as_const(rows_bad ? bad_rows : row_ptr),
                                std::as_const(rows_bad ? col : bad_cols), std::as_const(val), std::as_const(x), y);
        ADD_FAILURE() << d.name() << ": a malformed matrix was read without a report";
      } catch (const ExecutionError& e) {
        EXPECT_EQ(e.check(), "memcheck") << e.what();
        // The interpreter evaluates an expression's operands left to right, so the access it names
        // is the first the row makes past the arrays: val[j], before col[j] (until the eleventh
        // session it named whichever operand the host compiler evaluated first).
        std::string what = e.what();
        if (d.kind() == DeviceKind::Interpreter) {
          EXPECT_NE(what.find(rows_bad ? "'val'[1200]" : "'x'[77]"), std::string::npos) << what;
        }
      }
    }
  }
  auto host = on_host(
      k, Spec{}, grid,
      {HostArg::of("int", rows), HostArg::of("int", nnz), HostArg::of("int", row_ptr), HostArg::of("int", col),
       HostArg::of("float", val), HostArg::of("float", x), HostArg::of("float", std::vector<float>(rows, -1.0f))});
  if (host.size() == 7) {
    EXPECT_EQ(host[6], words(want));
  }
  expect_compiles(k);
}

// ---------------------------------------------------------------- bitonic sort in shared memory
/// Sorts each block's 512 elements: 256 threads, each the compare-exchange of one pair per step,
/// the pair (lo, lo + j) with lo = (t / j) * 2j + t % j. The steps are loops whose counters double
/// and halve (`for_` with a step rule); the pairs move with j, so each step needs the barrier before
/// it, which the user does not write.
Kernel bitonic512() {
  KernelBuilder k("bitonic512");
  auto in = k.param<GlobalPtr<const int>>("in");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * 512 + i; },
        [&](Scope& g, View out_b) {
          g.group(block(1), [&](Scope& b) {
            auto t = b.let("t", b.id(thread(1)));
            View s = b.shared<int>("s", 512);
            b.partition(
                s, thread(1), [&](Expr i) { return t * 2 + i; },
                [&](Scope& b, View mine) {
                  b.group(thread(1), [&](Scope&) {
                    mine[0] = in[blk * 512 + t * 2];
                    mine[1] = in[blk * 512 + t * 2 + 1];
                  });
                });
            b.for_(
                "k", 2, [](Expr kk) { return kk <= 512; }, [](Expr kk) { return kk << 1; },
                [&](Scope& b, Expr kk) {
                  b.for_(
                      "j", kk / 2, [](Expr j) { return j > 0; }, [](Expr j) { return j >> 1; },
                      [&](Scope& b, Expr j) {
                        Expr lo = (t / j) * (j * 2) + t % j;
                        b.partition(
                            s, thread(1), [&](Expr i) { return lo + i * j; },
                            [&](Scope& b, View pair) {
                              b.group(thread(1), [&](Scope& th) {
                                auto x = th.let("x", pair[0]), y = th.let("y", pair[1]);
                                th.if_((x > y) == ((lo & kk) == 0), [&](Scope&) {
                                  pair[0] = y;
                                  pair[1] = x;
                                });
                              });
                            });
                      });
                });
            b.partition(
                out_b, thread(1), [&](Expr i) { return t * 2 + i; },
                [&](Scope& b, View o) {
                  b.group(thread(1), [&](Scope&) {
                    o[0] = s[t * 2];
                    o[1] = s[t * 2 + 1];
                  });
                });
          });
        });
  });
  return k.build();
}

TEST(UserKernels, ABitonicSortInSharedMemorySortsEachBlock) {
  Kernel k = bitonic512();
  const int blocks = 3, n = blocks * 512;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = (i * 7919 + 13) % 1000 - 500;
  std::vector<int> want = in;
  for (int b = 0; b < blocks; ++b) std::sort(want.begin() + b * 512, want.begin() + (b + 1) * 512);
  for (const Device& d : devices()) {
    std::vector<int> out(n, 0);
    test_support::launch_on(k, d, Grid{blocks, 256}, std::as_const(in), out);
    EXPECT_EQ(out, want) << d.name();
  }
  Specialized s = specialize_for(k, Spec{});
  EXPECT_EQ(syncthreads(s.source), 2) << "one barrier before each step and one before the write-back";
  auto host = on_host(k, Spec{}, Grid{blocks, 256}, {HostArg::of("int", in), HostArg::of("int", std::vector<int>(n))});
  if (host.size() == 2) {
    EXPECT_EQ(host[1], words(want));
  }
  expect_compiles(k);
}

// ---------------------------------------------------------------- stream compaction with ballot
/// Each warp keeps its elements that are not multiples of 3, packed in order at the front of its
/// 32 outputs, and stores how many it kept: a lane's place is the number of kept lanes below it,
/// popc(ballot & ((1 << lane) - 1)).
Kernel warp_compact() {
  KernelBuilder k("warp_compact");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const int>>("in", extent(n));
  auto out = k.param<GlobalPtr<int>>("out");
  auto counts = k.param<GlobalPtr<int>>("counts");
  k.block_threads(128);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * 128 + i; },
        [&](Scope& g, View out_b) {
          g.partition(
              counts, block(1), [&](Expr i) { return blk * 4 + i; },
              [&](Scope& g, View counts_b) {
                g.group(block(1), [&](Scope& b) {
                  auto w = b.let("w", b.id(warp()));
                  b.partition(
                      out_b, warp(), [&](Expr i) { return w * 32 + i; },
                      [&](Scope& b, View out_w) {
                        b.partition(
                            counts_b, warp(), [&](Expr i) { return w + i; },
                            [&](Scope& b, View count_w) {
                              b.group(warp(), [&](Scope& wp) {
                                auto lane = wp.let("lane", wp.id(thread(1)));
                                auto i = wp.let("i", blk * 128 + w * 32 + lane);
                                auto v = wp.let("v", select(i < n, in[min(i, n - 1)], 0), at(thread(1)));
                                auto keep = wp.let("keep", i < n && v % 3 != 0, at(thread(1)));
                                auto mask = wp.ballot("mask", keep);
                                auto below = (1u << cast<unsigned>(lane)) - 1u;
                                auto slot = wp.let("slot", popc(mask & below), at(thread(1)));
                                wp.partition(
                                    out_w, thread(1), [&](Expr j) { return slot + j; },
                                    [&](Scope& wp, View mine) {
                                      wp.group(thread(1),
                                               [&](Scope& th) { th.if_(keep, [&](Scope&) { mine[0] = v; }); });
                                    });
                                lib::store_by_one(wp, count_w, 0, popc(mask));
                              });
                            });
                      });
                });
              });
        });
  });
  return k.build();
}

TEST(UserKernels, AStreamCompactionWithBallotAndPopcKeepsEachWarpsElementsInOrder) {
  Kernel k = warp_compact();
  const int n = 300, blocks = 3;
  std::vector<int> in(n), want(blocks * 128, -1), want_counts(blocks * 4, 0);
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = (i * 7 + 1) % 11;
  for (int w = 0; w < blocks * 4; ++w)
    for (int l = 0; l < 32; ++l) {
      int i = w * 32 + l;
      if (i < n && in[static_cast<std::size_t>(i)] % 3 != 0)
        want[static_cast<std::size_t>(w * 32 + want_counts[static_cast<std::size_t>(w)]++)] =
            in[static_cast<std::size_t>(i)];
    }
  for (const Device& d : devices()) {
    std::vector<int> out(blocks * 128, -1), counts(blocks * 4, -1);
    test_support::launch_on(k, d, Grid{blocks, 128}, n, std::as_const(in), out, counts);
    EXPECT_EQ(out, want) << d.name();
    EXPECT_EQ(counts, want_counts) << d.name();
  }
  auto host =
      on_host(k, Spec{}, Grid{blocks, 128},
              {HostArg::of("int", n), HostArg::of("int", in), HostArg::of("int", std::vector<int>(blocks * 128, -1)),
               HostArg::of("int", std::vector<int>(blocks * 4, -1))});
  if (host.size() == 4) {
    EXPECT_EQ(host[2], words(want));
    EXPECT_EQ(host[3], words(want_counts));
  }
  expect_compiles(k);
}

}  // namespace
}  // namespace vantage
