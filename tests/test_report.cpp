// The static cost report against costs computed by hand: coalescing in 32-byte sectors, shared-memory
// bank conflicts in wavefronts, divergent branches, and the report's own speed and honesty (an
// estimate is never called exact).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "report_oracle.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

const AccessCost& find(const CostReport& r, const std::string& memory, bool write, MemSpace space) {
  for (const auto& a : r.accesses)
    if (a.memory == memory && a.write == write && a.space == space) return a;
  throw std::logic_error("no " + std::string(write ? "store to " : "load of ") + memory + " in\n" + r.text());
}
const AccessCost& global_load(const CostReport& r, const std::string& m) { return find(r, m, false, MemSpace::Global); }
const AccessCost& global_store(const CostReport& r, const std::string& m) { return find(r, m, true, MemSpace::Global); }
const AccessCost& shared_load(const CostReport& r, const std::string& m) { return find(r, m, false, MemSpace::Shared); }
const AccessCost& shared_store(const CostReport& r, const std::string& m) { return find(r, m, true, MemSpace::Shared); }

// saxpy over 2^20 floats: every warp reads 32 consecutive floats of x and of y and writes y, 128
// bytes each, on 128-byte boundaries: 4 sectors per request, the ideal; 2^15 requests each.
TEST(Report, SaxpyIsFourSectorsPerRequestWithNothingToFix) {
  const std::int64_t n = 1 << 20;
  CostReport r = examples::saxpy().report(Spec{}, {{"n", n}}, n / 256);
  for (const AccessCost* a : {&global_load(r, "x"), &global_load(r, "y"), &global_store(r, "y")}) {
    EXPECT_EQ(a->requests, n / 32) << r.text();
    EXPECT_DOUBLE_EQ(a->sectors, 4.0) << r.text();
    EXPECT_DOUBLE_EQ(a->ideal_sectors, 4.0);
    EXPECT_DOUBLE_EQ(a->lanes, 32.0);
    EXPECT_TRUE(a->exact) << r.text();
    EXPECT_EQ(a->hint, "");
  }
  EXPECT_DOUBLE_EQ(r.global_bytes, 3.0 * n * 4);
  for (const auto& b : r.branches) EXPECT_EQ(b.divergent, 0) << r.text();
  EXPECT_TRUE(r.exact);
}

// n = 1000 in 4 blocks: the last warp holding elements (threads 992..1023 of the launch) has 8 lanes
// inside: its request touches one sector, and its bounds test splits it.
TEST(Report, APartialLastWarpCountsItsLanesAndItsSplit) {
  CostReport r = examples::saxpy().report(Spec{}, {{"n", 1000}}, 4);
  const AccessCost& x = global_load(r, "x");
  EXPECT_EQ(x.requests, 32);  // 31 whole warps and one of 8 lanes
  EXPECT_DOUBLE_EQ(x.sectors, (31 * 4 + 1) / 32.0);
  EXPECT_DOUBLE_EQ(x.ideal_sectors, x.sectors);
  EXPECT_DOUBLE_EQ(x.lanes, (31 * 32 + 8) / 32.0);
  std::int64_t split = 0;
  for (const auto& b : r.branches) split += b.divergent;
  EXPECT_EQ(split, 1) << r.text();
  EXPECT_TRUE(r.exact);
}

// One C element per thread, 256 x 256 x 256. In the naive kernel neighbouring threads take
// neighbouring rows: A's reads are 32 floats K apart (32 sectors), B's one float (a broadcast,
// 1 sector), C's stores N apart (32). The coalesced one swaps them: A broadcast, B and C 4.
TEST(Report, TheNaiveSgemmReadsAThirtyTwoSectorsPerRequestAndTheCoalescedFour) {
  const std::map<std::string, std::int64_t> size = {{"M", 256}, {"N", 256}, {"K", 256}};
  const std::int64_t blocks = 256 * 256 / 256;
  CostReport naive = examples::sgemm_naive().report(Spec{}, size, blocks);
  CostReport coalesced = examples::sgemm_coalesced().report(Spec{}, size, blocks);
  EXPECT_DOUBLE_EQ(global_load(naive, "A").sectors, 32.0) << naive.text();
  EXPECT_DOUBLE_EQ(global_load(naive, "A").ideal_sectors, 4.0);
  EXPECT_NE(global_load(naive, "A").hint.find("stride 256 elements: 32 sectors per request where 4 would do"),
            std::string::npos)
      << global_load(naive, "A").hint;
  EXPECT_DOUBLE_EQ(global_load(naive, "B").sectors, 1.0);
  EXPECT_DOUBLE_EQ(global_store(naive, "C").sectors, 32.0);
  EXPECT_DOUBLE_EQ(global_load(coalesced, "A").sectors, 1.0) << coalesced.text();
  EXPECT_DOUBLE_EQ(global_load(coalesced, "B").sectors, 4.0);
  EXPECT_DOUBLE_EQ(global_store(coalesced, "C").sectors, 4.0);
  EXPECT_EQ(global_load(coalesced, "B").hint, "");
  // K = 256 iterations per thread: 2^16 threads / 32 * 256 requests of A.
  EXPECT_EQ(global_load(naive, "A").requests, 65536 / 32 * 256);
  EXPECT_TRUE(naive.exact) << naive.text();
  EXPECT_TRUE(coalesced.exact) << coalesced.text();
  // Work: 2 flops per multiply-add, and alpha * acc + beta * c: 2 M N K + 3 M N.
  EXPECT_DOUBLE_EQ(naive.flops, 2.0 * 256 * 256 * 256 + 3.0 * 256 * 256);
}

// A 32 x 32 shared tile read down a column: the 32 lanes hit one bank 32 times (32 wavefronts); the
// padded 32 x 33 tile spreads them over the 32 banks (1). Both write the tile along rows (1).
TEST(Report, TheTransposeTileHasThirtyTwoWayConflictsAndThePaddedOneNone) {
  const std::map<std::string, std::int64_t> size = {{"M", 64}, {"N", 64}};
  CostReport plain = examples::transpose().report(Spec{}, size, 4);
  CostReport padded = examples::transpose_padded().report(Spec{}, size, 4);
  EXPECT_EQ(shared_load(plain, "tile").conflict_ways, 32) << plain.text();
  EXPECT_DOUBLE_EQ(shared_load(plain, "tile").wavefronts, 32.0);
  EXPECT_DOUBLE_EQ(shared_load(plain, "tile").ideal_wavefronts, 1.0);
  EXPECT_NE(shared_load(plain, "tile").hint.find("32-way bank conflict"), std::string::npos);
  EXPECT_NE(shared_load(plain, "tile").hint.find("pad the row to 33"), std::string::npos)
      << shared_load(plain, "tile").hint;
  EXPECT_DOUBLE_EQ(shared_store(plain, "tile").wavefronts, 1.0);
  EXPECT_EQ(shared_load(padded, "tile").conflict_ways, 1) << padded.text();
  EXPECT_DOUBLE_EQ(shared_load(padded, "tile").wavefronts, 1.0);
  EXPECT_EQ(shared_load(padded, "tile").hint, "");
  EXPECT_DOUBLE_EQ(shared_store(padded, "tile").wavefronts, 1.0);
  // The global sides are coalesced in both: rows of 32 floats.
  EXPECT_DOUBLE_EQ(global_load(plain, "in").sectors, 4.0);
  EXPECT_DOUBLE_EQ(global_store(padded, "out").sectors, 4.0);
  EXPECT_TRUE(plain.exact && padded.exact);
}

// What the first H100 run showed (docs/gpu-validation.md): ptxas merges loads of adjacent shared
// elements into wider ones, so Nsight Compute counts fewer than the kernel as written has. Such loads
// are marked (their counts an upper bound on the GPU's), and no others; a cp.async copy's two sides
// are marked as such (ncu counts its shared side under no store).
TEST(Report, LoadsTheCompilerMayMergeAreMarkedAndNoOthers) {
  const CostReport smem = examples::sgemm_smem().report(Spec{}, {{"M", 64}, {"N", 64}, {"K", 64}}, 4);
  int as = 0, bs = 0;
  for (const AccessCost& a : smem.accesses) {
    EXPECT_FALSE(a.async_copy) << a.memory;
    if (a.space != MemSpace::Shared || a.write) {
      EXPECT_FALSE(a.compiler_may_merge) << a.memory << (a.write ? " store" : " load");
      continue;
    }
    // As[row][k] moves by one element a round of the unrolled k loop; Bs[k][col] by a row.
    if (a.memory == "As") {
      ++as;
      EXPECT_TRUE(a.compiler_may_merge) << smem.text();
      EXPECT_NE(a.hint.find("the compiler may merge them"), std::string::npos) << a.hint;
    } else {
      ++bs;
      EXPECT_FALSE(a.compiler_may_merge) << smem.text();
    }
  }
  EXPECT_EQ(as, 1);
  EXPECT_EQ(bs, 1);
  EXPECT_TRUE(smem.exact) << "the counts of the kernel as written stay exact";
  // Eight loads of consecutive elements, sum_warps[0] and then one a round.
  const CostReport reduce = examples::block_reduce().report(Spec{}, {{"n", 4096}}, 16);
  for (const AccessCost& a : reduce.accesses)
    EXPECT_EQ(a.compiler_may_merge, a.space == MemSpace::Shared && !a.write) << a.memory << " line " << a.loc.line;
  // A row and a column of a tile: nothing adjacent to merge.
  for (const CostReport& r : {examples::transpose().report(Spec{}, {{"M", 64}, {"N", 64}}, 4),
                              examples::transpose_padded().report(Spec{}, {{"M", 64}, {"N", 64}}, 4)})
    for (const AccessCost& a : r.accesses) EXPECT_FALSE(a.compiler_may_merge || a.async_copy) << a.memory;
  const CostReport async = examples::transpose_async().report(Spec{}, {{"M", 64}, {"N", 64}}, 4);
  int sides = 0;
  for (const AccessCost& a : async.accesses)
    if (a.async_copy) {
      ++sides;
      EXPECT_EQ(a.space == MemSpace::Shared, a.write) << "global in, shared out";
    }
  EXPECT_EQ(sides, 8) << async.text();  // a global and a shared side for each of a thread's 4 copies
  EXPECT_NE(async.json().find("\"async_copy\": true"), std::string::npos);
  EXPECT_NE(smem.json().find("\"compiler_may_merge\": true"), std::string::npos);
}

// The marks follow an index through its lets once each: a chain of 48 lets, each doubling the one
// before (x + x), was 2^48 walks before they were remembered.
TEST(Report, ALongChainOfLetsInAnIndexIsFollowedOnce) {
  KernelBuilder k("chain");
  auto out = k.param<GlobalPtr<float>>("out", extent(256));
  k.block_threads(256);
  k.body([&](Scope& g) {
    g.partition(
        out, block(1), [&](Expr i) { return i; },
        [&](Scope& g, View out_b) {
          g.group(block(1), [&](Scope& b) {
            auto t = b.let("t", b.id(thread(1)));
            View s = b.shared<float>("s", 256);
            b.partition(
                s, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = 1.0f; }); });
            b.partition(
                out_b, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o) {
                  b.group(thread(1), [&](Scope& th) {
                    Expr x = th.let("x0", t);
                    for (int i = 1; i <= 48; ++i) x = th.let("x" + std::to_string(i), x + x);
                    o[0] = s[x & 255] + s[(x + 1) & 255];
                  });
                });
          });
        });
  });
  const auto t0 = std::chrono::steady_clock::now();
  const CostReport r = k.build().report(Spec{}, {}, 1);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  int loads = 0;
  for (const AccessCost& a : r.accesses)
    if (a.space == MemSpace::Shared && !a.write) {
      ++loads;
      EXPECT_FALSE(a.compiler_may_merge) << "x & 255 and (x + 1) & 255 are not known to be adjacent";
    }
  EXPECT_EQ(loads, 2) << r.text();
}

// out[i] = in[i + 1]: each warp's 128 bytes straddle five sectors; the stores are aligned.
TEST(Report, AMisalignedWarpTouchesFiveSectors) {
  KernelBuilder k("shifted_copy");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const float>>("in", extent(n + 1));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) { lib::for_each(g, out, n, [&](Scope&, Expr i, ElemRef o) { o = in[i + 1]; }); });
  Kernel kernel = k.build();
  CostReport r = kernel.report(Spec{}, {{"n", 1 << 16}}, (1 << 16) / 256);
  EXPECT_DOUBLE_EQ(global_load(r, "in").sectors, 5.0) << r.text();
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {  // and it copies what it says
    std::vector<float> x(301), y(300, -1.0f);
    for (int i = 0; i < 301; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
    kernel.launch(Device::interpreter({order, 1, true}), Grid{2, 256}, 300, std::as_const(x), y);
    for (int i = 0; i < 300; ++i) ASSERT_EQ(y[static_cast<std::size_t>(i)], static_cast<float>(i + 1));
  }
  EXPECT_DOUBLE_EQ(global_load(r, "in").ideal_sectors, 4.0);
  EXPECT_NE(global_load(r, "in").hint.find("do not start on a 32-byte boundary"), std::string::npos);
  EXPECT_DOUBLE_EQ(global_store(r, "out").sectors, 4.0);
}

// ---------------------------------------------------------------- representatives
// The report follows the first, the middle and the last of many blocks, and the first, second and
// last iteration of a long loop, and counts the middle one for the rest. That is exact only where
// the others move as it does; these kernels' others do not (each was once called exact, and wrong). The interpreter
// measures every request of the launch.

/// One thread per element of `out` (n of them, T threads a block), each adding `rounds` reads that
/// `body(s, i, k, acc, x)` makes at iteration k; x has n + pad elements.
Kernel looped(const std::string& name, int T, int rounds, int pad,
              const std::function<void(Scope&, Expr, Expr, Var, View)>& body) {
  KernelBuilder k(name);
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n + pad));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(T);
  k.body([&](Scope& g) {
    lib::for_each(g, out, n, [&](Scope& s, Expr i, ElemRef o) {
      auto acc = s.let("acc", 0.0f);
      if (rounds > 0)
        s.for_("k", 0, rounds, [&](Scope& s, Expr kk) { body(s, i, kk, acc, x); });
      else
        body(s, i, Expr(0), acc, x);
      o = acc;
    });
  });
  return k.build();
}

/// The report of `kernel` over `blocks` blocks of 32 threads (n = 32 * blocks), and the same launch
/// measured on the interpreter; the two agree wherever the report says it is exact.
std::pair<CostReport, CostReport> report_and_measure(const Kernel& kernel, int blocks, int pad) {
  const int n = 32 * blocks;
  CostReport predicted = kernel.report(Spec{}, {{"n", n}}, blocks);
  InterpreterOptions io;
  io.measure = true;
  std::vector<float> x(static_cast<std::size_t>(n + pad), 1.0f), out(static_cast<std::size_t>(n));
  LaunchReport run = kernel.launch(Device::interpreter(io), Grid{blocks, 32}, n, std::as_const(x), out);
  EXPECT_TRUE(run.measured);
  CostReport measured = run.measured ? *run.measured : CostReport{};
  EXPECT_EQ(test_support::report_mismatches(predicted, measured), "") << predicted.text() << measured.text();
  return {predicted, measured};
}

// x[i * w] with w = 1, then w = 2 (assigned between the two reads): the indices are alike, but the
// second is followed with the new w: 4 sectors, then 8 (the warp's 32 floats 8 bytes apart). The
// analysis keeps the lanes of operations it has computed (for an unrolled tile's repeated rows and
// columns); an assignment must forget them.
TEST(Report, AnIndexAlikeToOneBeforeAnAssignmentIsFollowedAnew) {
  const Kernel k = looped("alike_after_assign", 32, 0, 32, [](Scope& s, Expr i, Expr, Var acc, View x) {
    auto w = s.let("w", 1);
    s.assign(acc, acc + x[i * w]);
    s.assign(w, 2);
    s.assign(acc, acc + x[i * w]);
  });
  auto [predicted, measured] = report_and_measure(k, 1, 32);
  std::vector<double> sectors;
  for (const AccessCost& a : predicted.accesses)
    if (a.memory == "x") {
      EXPECT_TRUE(a.exact) << predicted.text();
      sectors.push_back(a.sectors);
    }
  EXPECT_EQ(sectors, (std::vector<double>{4.0, 8.0})) << predicted.text();
}

// x[k / 2 + i], k < 10: the warp's floats start 0, 0, 1, 1, 2, 2, 3, 3, 4, 4 elements from a sector
// boundary, 4 sectors at the first two and 5 at the rest: 4.8 a request. The second iteration (k / 2
// = 0) stood for all but the last, so the report said 4.1.
TEST(Report, ALoopIndexThatDoesNotMoveEachIterationIsAnEstimate) {
  const Kernel k = looped("loop_div", 32, 10, 8,
                          [](Scope& s, Expr i, Expr kk, Var acc, View x) { s.assign(acc, acc + x[kk / 2 + i]); });
  auto [predicted, measured] = report_and_measure(k, 1, 8);
  EXPECT_EQ(global_load(measured, "x").requests, 10);
  EXPECT_DOUBLE_EQ(global_load(measured, "x").sectors, 4.8);
  EXPECT_FALSE(global_load(predicted, "x").exact) << predicted.text();
  EXPECT_FALSE(predicted.exact);
}

// x[i + i32(u32(i - 16) % 3u)]: the first 16 lanes' i - 16 wraps to 2^32 - 16 + i as a u32, whose
// remainder by 3 is i % 3 (2^32 - 16 is a multiple of 3), the others' (i - 16) % 3. The warp reads
// elements 0 to 32: 5 sectors in one request, exact. Taking the cast to u32 to keep the negative
// values as they were (only widenings do) would follow the signed remainders, -1 at lane 0.
TEST(Report, ACastThatWrapsEachLaneIsFollowedAsItWraps) {
  const Kernel k = looped("cast_wraps", 32, 0, 2, [](Scope& s, Expr i, Expr, Var acc, View x) {
    s.assign(acc, acc + x[i + cast<int>(cast<unsigned>(i - 16) % 3u)]);
  });
  auto [predicted, measured] = report_and_measure(k, 1, 2);
  EXPECT_EQ(global_load(measured, "x").requests, 1);
  EXPECT_DOUBLE_EQ(global_load(measured, "x").sectors, 5.0);
  EXPECT_DOUBLE_EQ(global_load(predicted, "x").sectors, 5.0) << predicted.text();
  EXPECT_TRUE(global_load(predicted, "x").exact) << predicted.text();
}

// i * 2^30 wraps in i32: lanes with i % 4 of 2 or 3 hold a negative product and read one element
// further, so the warp reads elements 0 to 32, 5 sectors. The product followed in 64 bits is never
// negative: 4 sectors.
TEST(Report, AnI32ProductThatWrapsInEachLaneIsFollowedAsItWraps) {
  const Kernel k = looped("mul_wraps", 32, 0, 1, [](Scope& s, Expr i, Expr, Var acc, View x) {
    s.assign(acc, acc + x[i + select(i * 1073741824 < 0, 1, 0)]);
  });
  auto [predicted, measured] = report_and_measure(k, 1, 1);
  EXPECT_EQ(global_load(measured, "x").requests, 1);
  EXPECT_DOUBLE_EQ(global_load(measured, "x").sectors, 5.0);
  EXPECT_DOUBLE_EQ(global_load(predicted, "x").sectors, 5.0) << predicted.text();
  EXPECT_TRUE(global_load(predicted, "x").exact) << predicted.text();
}

// x[i + block % 2] over 20 blocks: even blocks' warps read 4 sectors, odd ones 5: 4.5. The middle
// block (10) is even, so the report said 4 for every block but the last.
TEST(Report, ABlockIndexThatDoesNotMoveEachBlockIsAnEstimate) {
  const Kernel k = looped("block_mod", 32, 0, 1,
                          [](Scope& s, Expr i, Expr, Var acc, View x) { s.assign(acc, acc + x[i + (i / 32) % 2]); });
  auto [predicted, measured] = report_and_measure(k, 20, 1);
  EXPECT_DOUBLE_EQ(global_load(measured, "x").sectors, 4.5);
  EXPECT_FALSE(global_load(predicted, "x").exact) << predicted.text();
}

// if (k % 2 == 0) x[k + i], k < 10: five requests (k = 0, 2, 4, 6, 8: 4, 5, 5, 5, 4 sectors). The
// second iteration took the else branch and stood for the eight middle ones: one request, said exact.
TEST(Report, ABranchOnTheLoopCounterMakesWhatItHoldsAnEstimate) {
  const Kernel k = looped("loop_branch", 32, 10, 16, [](Scope& s, Expr i, Expr kk, Var acc, View x) {
    s.if_(kk % 2 == 0, [&](Scope& s) { s.assign(acc, acc + x[kk + i]); });
  });
  auto [predicted, measured] = report_and_measure(k, 1, 16);
  EXPECT_EQ(global_load(measured, "x").requests, 5);
  EXPECT_DOUBLE_EQ(global_load(measured, "x").sectors, 23.0 / 5);
  EXPECT_FALSE(global_load(predicted, "x").exact) << predicted.text();
  for (const auto& b : predicted.branches)
    if (b.loc.line == global_load(predicted, "x").loc.line) {
      EXPECT_FALSE(b.exact) << "the branch on k";
    }
}

// off += k; x[off % 8 + i]: off is 0 1 3 6 10 15 21 28 36 45, so the warp starts 0 1 3 6 2 7 5 4 4 5
// elements in: 4 + 9 * 5 = 49 sectors. What the second iteration left in `off` was taken for the
// last one's.
TEST(Report, AValueCarriedAcrossIterationsIsAnEstimate) {
  const Kernel k = looped("loop_carried", 32, 0, 64, [](Scope& s, Expr i, Expr, Var acc, View x) {
    auto off = s.let("off", 0);
    s.for_("k", 0, 10, [&](Scope& s, Expr kk) {
      s.assign(off, off + kk);
      s.assign(acc, acc + x[off % 8 + i]);
    });
  });
  auto [predicted, measured] = report_and_measure(k, 1, 64);
  EXPECT_EQ(global_load(measured, "x").requests, 10);
  EXPECT_DOUBLE_EQ(global_load(measured, "x").sectors, 4.9);
  EXPECT_EQ(global_load(predicted, "x").requests, 10) << predicted.text();
  EXPECT_FALSE(global_load(predicted, "x").exact);
}

// if (k >= 3 && k < 5) x[k + i], k < 10: the iterations followed (0, 1 and 9) never take the branch,
// the ones the second stands for do (twice). The access is listed, uncounted, as an estimate.
TEST(Report, AnAccessNoFollowedExecutionReachesIsListedAsAnEstimate) {
  const Kernel k = looped("unreached", 32, 10, 16, [](Scope& s, Expr i, Expr kk, Var acc, View x) {
    s.if_(kk >= 3 && kk < 5, [&](Scope& s) { s.assign(acc, acc + x[kk + i]); });
  });
  auto [predicted, measured] = report_and_measure(k, 1, 16);
  EXPECT_EQ(global_load(measured, "x").requests, 2);
  EXPECT_EQ(global_load(predicted, "x").requests, 0) << predicted.text();
  EXPECT_FALSE(global_load(predicted, "x").exact);
  EXPECT_NE(predicted.text().find("~"), std::string::npos);
}

// if (b / 3 < b % 4) x[i] for block b of 20: taken by blocks 1, 2, 3 and 7, none of those followed
// (0, 10 and 19). Both sides move with the block, differently: the condition is an estimate, and so
// is the access under it.
TEST(Report, ABranchOnTwoValuesThatMoveDifferentlyIsAnEstimate) {
  const Kernel k = looped("two_moves", 32, 0, 0, [](Scope& s, Expr i, Expr, Var acc, View x) {
    auto b = s.let("b", i / 32);
    s.if_(b / 3 < b % 4, [&](Scope& s) { s.assign(acc, acc + x[i]); });
  });
  auto [predicted, measured] = report_and_measure(k, 20, 0);
  EXPECT_EQ(global_load(measured, "x").requests, 4);
  EXPECT_FALSE(global_load(predicted, "x").exact) << predicted.text();
  EXPECT_FALSE(predicted.exact);
}

// Where the others do move as the representative does, the report counts them exactly.
// x[3k + i], k < 10: the warp starts 12k bytes in, on a sector boundary at k = 0 and 8 only: 4.8.
TEST(Report, ALoopIndexMovingByAStepIsCountedExactly) {
  const Kernel k = looped("loop_step", 32, 10, 28,
                          [](Scope& s, Expr i, Expr kk, Var acc, View x) { s.assign(acc, acc + x[kk * 3 + i]); });
  auto [predicted, measured] = report_and_measure(k, 1, 28);
  EXPECT_TRUE(global_load(predicted, "x").exact) << predicted.text();
  EXPECT_DOUBLE_EQ(global_load(predicted, "x").sectors, 4.8);
  EXPECT_TRUE(predicted.exact);
}

// x[b * 33 + t] for block b of 20: its warp starts 4b bytes past a sector boundary (mod 32), on one
// for b = 0, 8 and 16: (3 * 4 + 17 * 5) / 20 = 4.85 sectors.
TEST(Report, ABlockIndexMovingByAStepIsCountedExactly) {
  const Kernel k = looped("block_step", 32, 0, 20, [](Scope& s, Expr i, Expr, Var acc, View x) {
    s.assign(acc, acc + x[(i / 32) * 33 + i % 32]);
  });
  auto [predicted, measured] = report_and_measure(k, 20, 20);
  EXPECT_TRUE(global_load(predicted, "x").exact) << predicted.text();
  EXPECT_DOUBLE_EQ(global_load(predicted, "x").sectors, 4.85);
}

// Tiles of a matrix by block row and column (b / 5, b % 5) move by whole rows and tile widths, not
// by one step per block; every tile is aligned, so each costs the same, and the report says so,
// from the middle block alone.
TEST(Report, TilesByBlockRowAndColumnAreCountedExactly) {
  const Kernel k = looped("tiles", 32, 0, 4096, [](Scope& s, Expr i, Expr, Var acc, View x) {
    auto b = s.let("b", i / 32);
    s.assign(acc, acc + x[(b / 5) * 1024 + (b % 5) * 32 + i % 32]);
  });
  auto [predicted, measured] = report_and_measure(k, 20, 4096);
  EXPECT_TRUE(global_load(predicted, "x").exact) << predicted.text();
  EXPECT_DOUBLE_EQ(global_load(predicted, "x").sectors, 4.0);
  EXPECT_EQ(predicted.sampled_blocks, 1);
}

// Past eight blocks the middle block is first followed for all of them. Where the first and last
// cost what it does (saxpy over whole blocks), that is the report; where the last block differs
// (n = 2600: its guard `i < n` holds for 40 of its 256 threads), the middle block's report would
// call the guard an estimate, so the first and last blocks are followed apart and everything is
// exact again.
TEST(Report, TheMiddleBlockStandsForAllWhenTheEdgesCostTheSame) {
  InterpreterOptions io;
  io.measure = true;
  io.checks = false;
  const Device interp = Device::interpreter(io);
  for (const std::int64_t n : {2816, 2600}) {
    const Kernel k = examples::saxpy();
    const CostReport r = k.report(Spec{}, {{"n", n}}, 11);
    EXPECT_TRUE(r.exact) << n << "\n" << r.text();
    EXPECT_EQ(r.sampled_blocks, n == 2816 ? 1 : 3) << n;
    const auto run = examples::run_example("saxpy", {{"n", n}}, interp);
    ASSERT_TRUE(run.ok && run.report.measured) << run.summary;
    EXPECT_EQ(test_support::report_mismatches(r, *run.report.measured), "") << n;
  }
}

// Signed division and remainder round toward zero (docs/semantics.md), and the report follows that:
// for lanes t = 0..31, (t - 16) % 4 takes the 7 values -3..3 (floor rounding would give 4),
// (t - 14) / 4 the 8 values -3..4 (floor: 9), (t - 16) % 3 the 5 values -2..2 (floor: 3) and
// (t - 14) / 3 the 10 values -4..5. Each value picks an element 8 floats from the next: one sector
// each. The whole-warp path computes a power-of-two divisor by shifts; the rest divide.
TEST(Report, SignedDivisionAndRemainderRoundTowardZero) {
  KernelBuilder k("signed_division");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const float>>("in", extent(n * 32));
  auto o4 = k.param<GlobalPtr<float>>("o4", extent(n));
  auto q4 = k.param<GlobalPtr<float>>("q4", extent(n));
  auto o3 = k.param<GlobalPtr<float>>("o3", extent(n));
  auto q3 = k.param<GlobalPtr<float>>("q3", extent(n));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each(g, o4, n, [&](Scope&, Expr i, ElemRef o) { o = in[((i - 16) % 4 + 8) * 8]; });
    lib::for_each(g, q4, n, [&](Scope&, Expr i, ElemRef o) { o = in[((i - 14) / 4 + 8) * 8]; });
    lib::for_each(g, o3, n, [&](Scope&, Expr i, ElemRef o) { o = in[((i - 16) % 3 + 8) * 8]; });
    lib::for_each(g, q3, n, [&](Scope&, Expr i, ElemRef o) { o = in[((i - 14) / 3 + 8) * 8]; });
  });
  Kernel kernel = k.build();
  CostReport r = kernel.report(Spec{}, {{"n", 32}}, 1);
  std::vector<double> sectors;
  for (const auto& a : r.accesses)
    if (a.memory == "in") sectors.push_back(a.sectors);
  EXPECT_EQ(sectors, (std::vector<double>{7, 8, 5, 10})) << r.text();
  EXPECT_TRUE(r.exact);
  // The interpreter gives them the same meaning as C++'s / and %.
  std::vector<float> x(1024), a(32), b(32), c(32), d(32);
  for (int j = 0; j < 1024; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j);
  kernel.launch(Device::interpreter(), Grid{1, 32}, 32, std::as_const(x), a, b, c, d);
  for (int t = 0; t < 32; ++t) {
    const auto u = static_cast<std::size_t>(t);
    EXPECT_EQ(a[u], static_cast<float>(((t - 16) % 4 + 8) * 8));
    EXPECT_EQ(b[u], static_cast<float>(((t - 14) / 4 + 8) * 8));
    EXPECT_EQ(c[u], static_cast<float>(((t - 16) % 3 + 8) * 8));
    EXPECT_EQ(d[u], static_cast<float>(((t - 14) / 3 + 8) * 8));
  }
}

// ---------------------------------------------------------------- the RaCUDA benchmark kernels
// vectorAdd, matMul and reduce0..reduce3 (paper 004, after the CUDA samples and Harris's reduction
// talk), written in Vantage, each at two sizes with its costs worked out by hand.

Kernel vector_add() {
  KernelBuilder k("vectorAdd");
  auto n = k.param<int>("n");
  auto A = k.param<GlobalPtr<const float>>("A", extent(n));
  auto B = k.param<GlobalPtr<const float>>("B", extent(n));
  auto C = k.param<GlobalPtr<float>>("C", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) { lib::for_each(g, C, n, [&](Scope&, Expr i, ElemRef c) { c = A[i] + B[i]; }); });
  return k.build();
}

// One element of C = A * B (N x N) per thread, threads along rows of C.
Kernel mat_mul() {
  KernelBuilder k("matMul");
  auto N = k.param<int>("N");
  auto A = k.param<GlobalPtr<const float>>("A", extent(N * N));
  auto B = k.param<GlobalPtr<const float>>("B", extent(N * N));
  auto C = k.param<GlobalPtr<float>>("C", extent(N * N));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each(g, C, N * N, [&](Scope& s, Expr i, ElemRef c) {
      auto row = s.let("row", i / N), col = s.let("col", i % N);
      auto acc = s.let("acc", 0.0f);
      s.for_("k", 0, N, [&](Scope& s, Expr kk) { s.assign(acc, acc + A[row * N + kk] * B[kk * N + col]); });
      c = acc;
    });
  });
  return k.build();
}

// reduce0: interleaved addressing, `t % 2s == 0` (divergent); reduce1: interleaved with a strided
// index (bank conflicts); reduce2: sequential addressing; reduce3: reduce2 with the first add done
// while loading (half the blocks). 256 threads; block b sums its elements into out[b].
Kernel reduction(int variant) {
  constexpr int T = 256;
  KernelBuilder k("reduce" + std::to_string(variant));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(T);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr blk, View out_b) {
      View sdata = b.shared<float>("sdata", T);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          sdata, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) {
              if (variant < 3) {
                auto i = th.let("i", blk * T + t);
                mine[0] = select(i < n, x[min(i, n - 1)], 0.0f);
              } else {
                auto i = th.let("i", blk * (2 * T) + t);
                mine[0] = select(i < n, x[min(i, n - 1)], 0.0f) + select(i + T < n, x[min(i + T, n - 1)], 0.0f);
              }
            });
          });
      if (variant <= 1) {
        for (int s = 1; s < T; s *= 2) {
          auto at = [&](Expr i) { return variant == 0 ? t + i : 2 * s * t + i; };
          b.partition(sdata, thread(1), at, [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) {
              Expr active = variant == 0 ? t % (2 * s) == 0 : 2 * s * t < T;
              th.if_(active, [&](Scope&) { mine[0] = mine[0] + mine[s]; });
            });
          });
        }
      } else {
        for (int s = T / 2; s > 0; s /= 2)
          b.partition(
              sdata, thread(1), [&](Expr i) { return t + i; },
              [&](Scope& b, View mine) {
                b.group(thread(1), [&](Scope& th) { th.if_(t < s, [&](Scope&) { mine[0] = mine[0] + mine[s]; }); });
              });
      }
      lib::store_by_one(b, out_b, 0, sdata[0]);
    });
  });
  return k.build();
}

// The RaCUDA kernels compute what they claim, on the interpreter in both thread orders (with every
// check on) and on the CPU backend: their costs above are of correct kernels.
TEST(Report, TheRaCudaKernelsComputeWhatTheyClaim) {
  std::vector<Device> devices = {Device::interpreter({ThreadOrder::Forward, 3, true}),
                                 Device::interpreter({ThreadOrder::Reverse, 3, true})};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (const Device& d : devices) {
    const int n = 1000;
    std::vector<float> a(n), b(n), c(n, -1.0f);
    for (int i = 0; i < n; ++i)
      a[static_cast<std::size_t>(i)] = static_cast<float>(i), b[static_cast<std::size_t>(i)] = 2.0f;
    vector_add().launch(d, Grid{4, 256}, n, std::as_const(a), std::as_const(b), c);
    for (int i = 0; i < n; ++i) ASSERT_EQ(c[static_cast<std::size_t>(i)], static_cast<float>(i) + 2.0f) << d.name();
    const int N = 32;
    std::vector<float> A(N * N), B(N * N), C(N * N, -1.0f);
    for (int i = 0; i < N * N; ++i)
      A[static_cast<std::size_t>(i)] = static_cast<float>(i % 7),
      B[static_cast<std::size_t>(i)] = static_cast<float>(i % 5);
    mat_mul().launch(d, Grid{N * N / 256, 256}, N, std::as_const(A), std::as_const(B), C);
    for (int r = 0; r < N; ++r)
      for (int col = 0; col < N; ++col) {
        float want = 0;
        for (int k = 0; k < N; ++k)
          want += A[static_cast<std::size_t>(r * N + k)] * B[static_cast<std::size_t>(k * N + col)];
        ASSERT_EQ(C[static_cast<std::size_t>(r * N + col)], want) << d.name() << " " << r << " " << col;
      }
    for (int variant = 0; variant < 4; ++variant) {
      const int blocks = 3, m = 256 * blocks * (variant == 3 ? 2 : 1) - 5;  // a ragged tail
      std::vector<float> x(static_cast<std::size_t>(m)), out(blocks, -1.0f);
      for (int i = 0; i < m; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i % 3);
      reduction(variant).launch(d, Grid{blocks, 256}, m, std::as_const(x), out);
      const int per = variant == 3 ? 512 : 256;
      for (int blk = 0; blk < blocks; ++blk) {
        float want = 0;
        for (int i = blk * per; i < std::min(m, (blk + 1) * per); ++i) want += x[static_cast<std::size_t>(i)];
        ASSERT_EQ(out[static_cast<std::size_t>(blk)], want) << d.name() << " reduce" << variant << " block " << blk;
      }
    }
  }
}

std::int64_t divergent_ifs(const CostReport& r) {
  std::int64_t split = 0;
  for (const auto& b : r.branches)
    if (b.what == "if") split += b.divergent;
  return split;
}
std::vector<int> shared_ways(const CostReport& r, bool write) {
  std::vector<int> ways;
  for (const auto& a : r.accesses)
    if (a.space == MemSpace::Shared && a.write == write) ways.push_back(a.conflict_ways);
  return ways;
}

TEST(Report, RaCudaVectorAdd) {
  CostReport big = vector_add().report(Spec{}, {{"n", 1 << 16}}, 256);
  for (const char* m : {"A", "B"}) EXPECT_DOUBLE_EQ(global_load(big, m).sectors, 4.0) << big.text();
  EXPECT_DOUBLE_EQ(global_store(big, "C").sectors, 4.0);
  EXPECT_EQ(global_store(big, "C").requests, (1 << 16) / 32);
  EXPECT_EQ(divergent_ifs(big), 0);
  CostReport ragged = vector_add().report(Spec{}, {{"n", 1000}}, 4);
  EXPECT_DOUBLE_EQ(global_load(ragged, "A").sectors, (31 * 4 + 1) / 32.0) << ragged.text();
  EXPECT_EQ(divergent_ifs(ragged), 1);
  EXPECT_TRUE(big.exact && ragged.exact);
}

TEST(Report, RaCudaMatMul) {
  for (std::int64_t N : {64, 128}) {
    CostReport r = mat_mul().report(Spec{}, {{"N", N}}, N * N / 256);
    // A warp is 32 elements of one row of C: A[row][k] is one address for all of them, B[k][col..]
    // 128 contiguous bytes, and so is the store.
    EXPECT_DOUBLE_EQ(global_load(r, "A").sectors, 1.0) << r.text();
    EXPECT_DOUBLE_EQ(global_load(r, "B").sectors, 4.0);
    EXPECT_DOUBLE_EQ(global_store(r, "C").sectors, 4.0);
    EXPECT_EQ(global_load(r, "B").requests, N * N / 32 * N);
    EXPECT_DOUBLE_EQ(r.flops, 2.0 * N * N * N);
    EXPECT_EQ(divergent_ifs(r), 0);
    EXPECT_TRUE(r.exact) << r.text();
  }
}

TEST(Report, RaCudaReduce0DivergesAtEveryStep) {
  for (std::int64_t blocks : {8, 64}) {
    CostReport r = reduction(0).report(Spec{}, {{"n", 256 * blocks}}, blocks);
    // Per block: s = 1..16 split all 8 warps (40), s = 32 four, s = 64 two, s = 128 one; and the
    // final store by thread 0 one more.
    EXPECT_EQ(divergent_ifs(r), 48 * blocks) << r.text();
    for (int w : shared_ways(r, false)) EXPECT_EQ(w, 1) << r.text();
    EXPECT_TRUE(r.exact);
  }
}

TEST(Report, RaCudaReduce1HasBankConflictsInstead) {
  for (std::int64_t blocks : {8, 64}) {
    CostReport r = reduction(1).report(Spec{}, {{"n", 256 * blocks}}, blocks);
    // Thread t works on word 2 s t: stride 2s words, among t < 128 / s. Ways per step s = 1 .. 128:
    // 2, 4, 8 (one warp), then 16 lanes on banks 0 and 16 (8), 8 lanes on bank 0 (8), 4, 2, 1.
    std::vector<int> stores = shared_ways(r, true);
    ASSERT_EQ(stores.size(), 9u) << r.text();  // the first store, then one per step
    EXPECT_EQ(std::vector<int>(stores.begin() + 1, stores.end()), (std::vector<int>{2, 4, 8, 8, 8, 4, 2, 1}));
    // The tree splits a warp only once fewer than 32 threads work: s = 8 .. 128, and the final store.
    EXPECT_EQ(divergent_ifs(r), 6 * blocks);
    EXPECT_TRUE(r.exact);
  }
}

TEST(Report, RaCudaReduce2And3SplitOnlyInTheLastSteps) {
  for (int variant : {2, 3})
    for (std::int64_t blocks : {8, 64}) {
      const std::int64_t n = 256 * blocks * (variant == 3 ? 2 : 1);
      CostReport r = reduction(variant).report(Spec{}, {{"n", n}}, blocks);
      // s = 128, 64, 32 keep whole warps; s = 16, 8, 4, 2, 1 split warp 0; and the final store.
      EXPECT_EQ(divergent_ifs(r), 6 * blocks) << r.text();
      for (int w : shared_ways(r, false)) EXPECT_EQ(w, 1);
      EXPECT_DOUBLE_EQ(global_load(r, "x").sectors, 4.0);
      EXPECT_EQ(global_load(r, "x").requests, blocks * 8) << "per load of x";
      EXPECT_TRUE(r.exact);
    }
}

// A loaded value deciding a branch or an index makes an estimate, and the report says so.
TEST(Report, AnIndexFromLoadedDataIsAnEstimate) {
  KernelBuilder k("gather");
  auto n = k.param<int>("n");
  auto idx = k.param<GlobalPtr<const int>>("idx", extent(n));
  auto in = k.param<GlobalPtr<const float>>("in", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(128);
  k.body([&](Scope& g) {
    lib::for_each(g, out, n, [&](Scope& s, Expr i, ElemRef o) {
      auto j = s.let("j", idx[i]);
      s.if_(j >= 0 && j < n, [&](Scope&) { o = in[j]; });
    });
  });
  Kernel kernel = k.build();
  CostReport r = kernel.report(Spec{}, {{"n", 4096}}, 32);
  EXPECT_FALSE(r.exact);
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {  // and it gathers what it says
    std::vector<int> idx(200);
    std::vector<float> in(200), out(200, -1.0f);
    for (int i = 0; i < 200; ++i)
      idx[static_cast<std::size_t>(i)] = (i * 7) % 250 - 25, in[static_cast<std::size_t>(i)] = float(i);
    kernel.launch(Device::interpreter({order, 1, true}), Grid{2, 128}, 200, std::as_const(idx), std::as_const(in), out);
    for (int i = 0; i < 200; ++i) {
      const int j = idx[static_cast<std::size_t>(i)];
      ASSERT_EQ(out[static_cast<std::size_t>(i)], j >= 0 && j < 200 ? float(j) : -1.0f) << i;
    }
  }
  EXPECT_FALSE(global_load(r, "in").exact) << r.text();
  EXPECT_TRUE(global_load(r, "idx").exact);
  EXPECT_NE(r.text().find("~"), std::string::npos);
}

// Placement (paper 003): a small saxpy is not worth the copies to a GPU; a 512^3 sgemm is, by far.
// The model's figures are its defaults; the buffers' sizes come from the lengths given.
TEST(Report, PlacementCountsTheCopiesAndTheWork) {
  CostReport small = examples::saxpy().report(Spec{}, {{"n", 4096}}, 16);
  ASSERT_EQ(small.buffers.size(), 2u);
  EXPECT_EQ(small.buffers[0].name, "x");
  EXPECT_DOUBLE_EQ(small.buffers[0].bytes, 4096.0 * 4);
  EXPECT_TRUE(small.buffers[0].read && !small.buffers[0].written);
  EXPECT_TRUE(small.buffers[1].read && small.buffers[1].written);
  PlacementModel m;
  Placement p = small.placement(m);
  // x and y in, y out: three copies of 16 KiB.
  EXPECT_NEAR(p.transfer_ms, (3 * 16384.0 / m.pcie_bytes_per_s) * 1e3 + 3 * m.transfer_us * 1e-3, 1e-9);
  EXPECT_FALSE(p.gpu_faster) << p.text();
  const std::map<std::string, std::int64_t> size = {{"M", 512}, {"N", 512}, {"K", 512}};
  CostReport big = examples::sgemm_smem().report(Spec{}, size, 16 * 16);
  Placement q = big.placement(m);
  EXPECT_TRUE(q.gpu_faster) << q.text();
  EXPECT_GT(q.cpu_ms, 10 * q.gpu_ms);
  // Two CPU threads halve the CPU side's per-thread work.
  PlacementModel two = m;
  two.cpu_threads = 2;
  EXPECT_NEAR(big.placement(two).cpu_ms - two.cpu_launch_us * 1e-3, (q.cpu_ms - m.cpu_launch_us * 1e-3) / 2, 1e-9);
  std::string svg = big.roofline_svg(m);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("roofline of H200: sgemm_smem"), std::string::npos);
  EXPECT_NE(svg.find("<circle"), std::string::npos) << "the kernel's point";
  EXPECT_NE(small.roofline_svg(m).find("<circle"), std::string::npos);
}

// Every example has a report at these sizes (how long it takes is bench_report's business).
// A GPU's own figures in place of the data sheet's: an H100 SXM as its driver reports it (132
// multiprocessors at 1980 MHz, HBM3 at 2619 MHz on a 5120-bit bus) is 3.35 TB/s, 66.9 TFLOP/s of
// FP32 (128 lanes, an FMA two) and 2.61e11 warp steps a second. A host device's properties keep
// the H200 of the data sheet.
TEST(Report, PlacementModelTakesTheGpusOwnFigures) {
  DeviceProperties h100;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.compute_major = 9;
  h100.multiprocessors = 132;
  h100.max_threads_per_multiprocessor = 2048;
  h100.clock_khz = 1980000;
  h100.memory_clock_khz = 2619000;
  h100.memory_bus_bits = 5120;
  PlacementModel m = placement_model(h100, 16);
  EXPECT_EQ(m.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m.cpu_threads, 16);
  EXPECT_NEAR(m.gpu_bytes_per_s, 3.352e12, 1e9);
  EXPECT_NEAR(m.gpu_flops, 132 * 128 * 2 * 1.98e9, 1e6);
  EXPECT_NEAR(m.gpu_steps_per_s, 132 * 1.98e9, 1e3);
  EXPECT_NEAR(m.gpu_step_s, 4 / 1.98e9, 1e-15);
  EXPECT_EQ(m.gpu_sms, 132);
  DeviceProperties a100 = h100;  // sm_80: 64 FP32 lanes per multiprocessor
  a100.compute_major = 8;
  a100.compute_minor = 0;
  EXPECT_NEAR(placement_model(a100).gpu_flops, 132 * 64 * 2 * 1.98e9, 1e6);
  PlacementModel host = placement_model(Device::cpu_available() ? Device::cpu(1).properties() : DeviceProperties{});
  EXPECT_EQ(host.gpu, "H200");
  EXPECT_DOUBLE_EQ(host.gpu_bytes_per_s, PlacementModel{}.gpu_bytes_per_s);
  EXPECT_EQ(host.cpu_threads, 1);
  // The slower memory moves a memory-bound launch's GPU time by the ratio of the bandwidths.
  CostReport r = examples::saxpy().report(Spec{}, {{"n", 1 << 24}}, (1 << 24) / 256);
  const Placement on_h200 = r.placement(PlacementModel{}), on_h100 = r.placement(m);
  EXPECT_NEAR((on_h100.gpu_kernel_ms - m.gpu_launch_us * 1e-3) / (on_h200.gpu_kernel_ms - m.gpu_launch_us * 1e-3),
              4.8e12 / 3.352e12, 1e-3);
}

// The block reduction of 1024 floats, 4 blocks of 8 warps: each warp's butterfly is five shuffles
// (160 lane exchanges), each warp arrives at the block's one barrier (32), and each warp reads the
// seven other partials in a loop of one statement (224 steps in loops).
TEST(Report, CountsLaneExchangesBarriersAndStepsInLoops) {
  const CostReport r = examples::block_reduce().report(Spec{}, {{"n", 1024}}, 4);
  EXPECT_DOUBLE_EQ(r.exchanges, 160) << r.json();
  EXPECT_DOUBLE_EQ(r.barriers, 32);
  EXPECT_DOUBLE_EQ(r.looped, 224);
  EXPECT_TRUE(r.exact);
  // And the model charges them: an exchange's cost beyond a step's shows in the CPU side.
  PlacementModel m;
  const double base = r.placement(m).cpu_ms;
  m.cpu_ns_per_exchange = 10;
  EXPECT_NEAR(r.placement(m).cpu_ms - base, 160 * 10 * 1e-6, 1e-12);
}

// The CPU side's bytes: a CPU reads a cache line before it writes into it, so a copy into a buffer
// the launch never reads (vec_copy's out) moves its bytes twice, in and out, where an update in place
// (saxpy's y, read and written) moves the bytes the GPU would. 1 MiB each way: 32768 requests of 4
// sectors (a float4 a lane).
TEST(Report, TheCpuSideCountsTheReadBeforeAWriteToAFreshBuffer) {
  const std::int64_t n = 1 << 18;
  const CostReport copy = examples::vec_copy().report(Spec{}, {{"n", n}}, n / 4 / 256);
  ASSERT_TRUE(copy.exact) << copy.text();
  EXPECT_DOUBLE_EQ(copy.global_bytes, 2.0 * n * 4) << copy.json();
  EXPECT_DOUBLE_EQ(copy.cpu_bytes(), 3.0 * n * 4);
  const CostReport update = examples::saxpy().report(Spec{}, {{"n", n}}, n / 256);
  EXPECT_DOUBLE_EQ(update.global_bytes, 3.0 * n * 4) << update.json();
  EXPECT_DOUBLE_EQ(update.cpu_bytes(), update.global_bytes);
  // The advice charges the CPU side for those bytes, and the GPU side for the sectors it moves.
  PlacementModel m;
  m.cpu_launch_us = m.cpu_ns_per_step = 0;
  m.cpu_ns_per_byte_cached = 1;
  EXPECT_NEAR(copy.placement(m).cpu_ms, 3.0 * n * 4 * 1e-6, 1e-9);
  EXPECT_NEAR(update.placement(m).cpu_ms, 3.0 * n * 4 * 1e-6, 1e-9);
}

// The CPU side measured on this host (tune::measured_placement_model): every figure is a time, the
// same on a second call (measured once per process), and the advice says where they come from.
TEST(Report, PlacementModelMeasuresTheCpuBackendOnThisHost) {
  if (!Device::cpu_available()) GTEST_SKIP() << "no CPU backend in this build: nothing to measure";
  const PlacementModel m = tune::measured_placement_model();
  EXPECT_EQ(m.cpu_figures, "measured");
  for (double x : {m.cpu_launch_us, m.cpu_ns_per_step, m.cpu_ns_per_byte_cached, m.cpu_ns_per_byte}) {
    EXPECT_TRUE(std::isfinite(x)) << x;
    EXPECT_GT(x, 0);
  }
  for (double x : {m.cpu_ns_per_loop_step, m.cpu_ns_per_exchange, m.cpu_ns_per_barrier}) {
    EXPECT_TRUE(std::isfinite(x)) << x;
    EXPECT_GE(x, 0);
  }
  EXPECT_GE(m.cpu_ns_per_byte, m.cpu_ns_per_byte_cached);
  EXPECT_LT(m.cpu_launch_us, 1e4);
  const PlacementModel again = tune::measured_placement_model();
  EXPECT_EQ(again.cpu_ns_per_step, m.cpu_ns_per_step);
  const CostReport r = examples::saxpy().report(Spec{}, {{"n", 1 << 20}}, 4096);
  EXPECT_NE(r.placement(m).text().find("measured on this host"), std::string::npos);
  EXPECT_EQ(r.placement(PlacementModel{}).text().find("measured"), std::string::npos);
}

TEST(Report, EveryExampleHasAReport) {
  static const std::regex kIntParam(R"(param (\w+): (i32|i64|u32|u64)\b)");
  for (const auto& ex : examples::all()) {
    Kernel kernel = ex.build();
    Spec spec = ex.spec();
    std::map<std::string, std::int64_t> values;
    const std::string all = kernel.ir_text(), head = all.substr(all.find("kernel ")),
                      ir = head.substr(0, head.find("\n{"));  // the kernel's own parameters
    for (auto it = std::sregex_iterator(ir.begin(), ir.end(), kIntParam); it != std::sregex_iterator(); ++it)
      if (!spec.sizes.count((*it)[1].str())) values[(*it)[1].str()] = 256;
    CostReport r = kernel.report(spec, values, 16);
    EXPECT_FALSE(r.accesses.empty()) << ex.name;
    EXPECT_EQ(r.blocks, 16) << ex.name;
    // An access that runs costs at least a sector or a wavefront (one under a branch no thread of
    // this launch takes, as sgemm_vec's element-by-element edge path at these sizes, makes no request).
    for (const auto& a : r.accesses) {
      if (a.requests > 0) {
        EXPECT_GE(a.sectors + a.wavefronts, 1.0) << ex.name << " " << a.memory;
      }
    }
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {

// Sizes of more than eight blocks, where the report counts the middle blocks from one.
const std::map<std::string, std::map<std::string, std::int64_t>> kManyBlocks = {
    {"saxpy", {{"n", 2600}}},
    {"vec_copy", {{"n", 10300}}},
    {"block_load_copy", {{"n", 5000}}},
    {"block_reduce", {{"n", 2600}}},
    {"mma_tf32_naive", {{"M", 48}, {"N", 32}, {"K", 16}}},
    {"sgemm_naive", {{"M", 70}, {"N", 45}, {"K", 19}}},
    {"sgemm_coalesced", {{"M", 70}, {"N", 45}, {"K", 19}}},
    {"sgemm_smem", {{"M", 100}, {"N", 70}, {"K", 40}}},
    {"sgemm_reg1d", {{"M", 200}, {"N", 150}, {"K", 19}}},
    {"sgemm_reg2d", {{"M", 200}, {"N", 150}, {"K", 19}}},
    {"sgemm_vec", {{"M", 200}, {"N", 152}, {"K", 20}}},
    {"sgemm_warptile", {{"M", 200}, {"N", 150}, {"K", 19}}},
    {"sgemm_pipelined", {{"M", 400}, {"N", 300}, {"K", 12}}},
    {"mma_tf32", {{"M", 100}, {"N", 70}, {"K", 19}}},
    {"transpose", {{"M", 100}, {"N", 70}}},
    {"transpose_padded", {{"M", 100}, {"N", 70}}},
    {"transpose_async", {{"M", 100}, {"N", 70}}},
};

// Every example that runs on the host, at each of its default sizes and one of more than eight
// blocks: what the report calls exact is what the interpreter measures as the launch runs, request
// by request.
TEST(Report, EveryExampleAgreesWithItsMeasuredRun) {
  InterpreterOptions io;
  io.measure = true;
  io.checks = false;
  const Device interp = Device::interpreter(io);
  for (const auto& ex : examples::all()) {
    auto sizes = test_support::sweep_sizes(examples::default_sizes(ex.name));
#ifndef VANTAGE_TEST_SANITIZED  // and the size of many blocks in the plain pass only
    if (kManyBlocks.count(ex.name)) {
      sizes.push_back(kManyBlocks.at(ex.name));
      EXPECT_GT(examples::default_blocks(ex.name, sizes.back()), 8) << ex.name;
    }
#endif
    for (const auto& size : sizes) {
      Spec full = ex.spec();
      for (const auto& [k, v] : size) full.sizes.erase(k);
      const CostReport predicted = ex.build().report(full, size, examples::default_blocks(ex.name, size));
      const auto run = examples::run_example(ex.name, size, interp);
      ASSERT_TRUE(run.ok) << ex.name << ": " << run.summary;
      ASSERT_TRUE(run.report.measured) << ex.name;
      const std::string diff = test_support::report_mismatches(predicted, *run.report.measured);
      EXPECT_EQ(diff, "") << ex.name << " " << run.summary << "\n"
                          << predicted.text() << "measured:\n"
                          << run.report.measured->text();
    }
  }
}

}  // namespace
}  // namespace vantage
