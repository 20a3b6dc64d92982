// Pipelines of cp.async copies in several slots: the barriers Vantage places wait for the groups of
// copies a use needs and leave the newer ones in flight (jit/sync/copies.h), and sgemm rung 8 in 3
// and 4 slots is right on every device.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cache/cache.h"
#include "jit/interp/interp.h"
#include "jit/ir/mutate.h"
#include "jit/ir/visit.h"
#include "jit/pipeline/pipeline.h"
#include "kernels/paper_kernels.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

constexpr int kThreads = 64, kSlot = 4 * kThreads;

/// Each of 64 threads copies 4 floats of x into each of three shared slots, a group a slot
/// (`x[j * 256 + 4t ..]` into slot j), then, after `wait(keep)` where keep >= 0, reads its
/// neighbour's last element of slot `read`: out[t] = x[read * 256 + ((t + 1) % 64) * 4 + 3].
/// With `Branch`, the copies of slot 2 and their commit are made only where `flag` is not zero, so
/// that slot 1's group is the newest where flag is zero. With `LoopOfCommits`, slot 0 alone is
/// copied, then each thread commits `flag` empty groups in a loop. With `BarrierFirst`, each thread
/// stores its element of a shared `z` after the copies and reads its neighbour's before the slot:
/// a barrier before that read, which touches no slot.
enum class Shape { Plain, Branch, LoopOfCommits, BarrierFirst };
Kernel three_slots(int read, int keep, Shape shape = Shape::Plain) {
  KernelBuilder k("three_slots");
  auto flag = k.param<int>("flag");
  auto x = k.param<GlobalPtr<const float>>("x", extent(Expr(3 * kSlot)));
  auto out = k.param<GlobalPtr<float>>("out", extent(Expr(kThreads)));
  k.block_threads(kThreads);
  k.grid_blocks(1);
  k.body([&](Scope& g) {
    g.partition(
        out, block(1), [&](Expr i) { return i; },
        [&](Scope& g, View out) {
          g.group(block(1), [&](Scope& b) {
            std::vector<View> s;
            for (int j = 0; j < 3; ++j) s.push_back(b.shared<float>("s" + std::to_string(j), kSlot));
            auto t = b.let("t", b.id(thread(1)));
            auto copy = [&](Scope& b, int j) {
              b.async(s[j], [&](Scope& b, View s_async) {
                b.partition(
                    s_async, thread(1), [&](Expr i) { return t * 4 + i; },
                    [&](Scope& b, View s_t) {
                      b.group(thread(1), [&](Scope& th) {
                        th.cp_async(s_t, 0, x, t * 4 + j * kSlot, 16);
                        th.cp_async_commit();
                      });
                    });
              });
            };
            copy(b, 0);
            if (shape == Shape::LoopOfCommits) {
              b.group(thread(1),
                      [&](Scope& th) { th.for_("j", 0, flag, [&](Scope& th, Expr) { th.cp_async_commit(); }); });
            } else {
              copy(b, 1);
              if (shape == Shape::Branch) {
                b.if_(flag != 0, [&](Scope& b) { copy(b, 2); });
              } else {
                copy(b, 2);
              }
            }
            if (keep >= 0) b.group(thread(1), [&](Scope& th) { th.cp_async_wait(keep); });
            Expr before = 0.0f;
            if (shape == Shape::BarrierFirst) {
              auto z = b.shared<float>("z", kThreads);
              b.partition(
                  z, thread(1), [&](Expr i) { return t + i; },
                  [&](Scope& b, View z_t) { b.group(thread(1), [&](Scope&) { z_t[0] = 0.5f; }); });
              before = b.let("zz", z[(t + 1) % kThreads]);
            }
            b.partition(
                out, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o_t) {
                  b.group(thread(1), [&](Scope&) { o_t[0] = s[read][((t + 1) % kThreads) * 4 + 3] + before; });
                });
          });
        });
  });
  return k.build();
}

std::vector<float> iota_x() {
  std::vector<float> x(3 * kSlot);
  for (int i = 0; i < 3 * kSlot; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return x;
}

/// What each barrier Vantage places waits for first, in order, read from the lowered IR.
std::vector<std::int64_t> barrier_waits(const Kernel& k) {
  struct Scan : ir::IRVisitor {
    std::vector<std::int64_t> waits;
    void visit(const ir::Barrier& b) override { waits.push_back(b.async_wait); }
  } scan;
  scan.walk(pipeline::lower_for(k, Spec{}).lowered.kernel.body);
  return scan.waits;
}
/// The wait of the one barrier Vantage places.
std::int64_t barrier_wait(const Kernel& k) {
  const std::vector<std::int64_t> waits = barrier_waits(k);
  EXPECT_EQ(waits.size(), 1u);
  return waits.empty() ? -100 : waits[0];
}

// The barrier before a read of slot j waits for every group up to slot j's and leaves the newer
// ones in flight; the interpreter (which completes a copy only at its thread's wait) gets every
// value in three thread orders.
TEST(Pipeline, ABarrierWaitsForTheGroupsItsUseNeedsAndNoMore) {
  const std::vector<float> x = iota_x();
  struct Case {
    int read, keep;
    std::int64_t wait;  // the barrier's
    const char* text;   // what the CUDA says before __syncthreads
  };
  for (const Case& c : {Case{0, -1, 2, "cp.async.wait_group 2;"}, Case{1, -1, 1, "cp.async.wait_group 1;"},
                        Case{2, -1, ir::kAsyncWaitAll, "cp.async.wait_all;"}, Case{0, 1, ir::kNoAsyncWait, nullptr},
                        Case{1, 1, ir::kNoAsyncWait, nullptr}, Case{2, 1, ir::kAsyncWaitAll, "cp.async.wait_all;"}}) {
    SCOPED_TRACE("read slot " + std::to_string(c.read) + ", wait(" + std::to_string(c.keep) + ") first");
    const Kernel k = three_slots(c.read, c.keep);
    EXPECT_EQ(barrier_wait(k), c.wait);
    const std::string src = specialize_for(k, Spec{}).source;
    if (c.text) {
      EXPECT_TRUE(contains(src, c.text)) << src;
    } else {
      EXPECT_FALSE(contains(src, "cp.async.wait_all")) << src;
    }
    for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
      std::vector<float> out(kThreads, -1.0f);
      k.launch(Device::interpreter({order, 7, true}), Grid{1, kThreads}, 1, x, out);
      for (int t = 0; t < kThreads; ++t)
        ASSERT_EQ(out[static_cast<std::size_t>(t)], static_cast<float>(c.read * kSlot + ((t + 1) % kThreads) * 4 + 3))
            << "thread " << t;
    }
  }
}

// Without the wait a barrier before a read of slot 0 needs, the interpreter finds the copy in
// flight: the wait is what makes the read right, not the thread order.
TEST(Pipeline, WithoutItsWaitTheBarrierLetsAThreadReadACopyInFlight) {
  const Kernel k = three_slots(0, -1);
  const lower::Lowered lowered = pipeline::lower_for(k, Spec{}).lowered;
  auto weaker = [&](std::int64_t wait) {
    struct Weaken : ir::IRMutator {
      std::int64_t wait = 0;
      using IRMutator::mutate;
      ir::StmtPtr mutate(const ir::StmtPtr& s) override {
        if (const auto* b = s ? ir::as<ir::Barrier>(*s) : nullptr)
          return ir::make<ir::Barrier>(b->over, b->how, b->threads, b->id_base, wait, b->proxy_fence, b->loc);
        return IRMutator::mutate(s);
      }
    } weaken;
    weaken.wait = wait;
    lower::Lowered l = lowered;
    l.kernel.body = weaken.mutate(l.kernel.body);
    return l;
  };
  for (std::int64_t wait : {std::int64_t{3}, ir::kNoAsyncWait}) {
    SCOPED_TRACE("wait " + std::to_string(wait));
    std::vector<float> x = iota_x(), out(kThreads, 0.0f);
    const lower::Lowered l = weaker(wait);
    try {
      interp::run(l, 1,
                  {interp::Arg::integer(1), interp::Arg::buffer(x.data(), static_cast<std::int64_t>(x.size())),
                   interp::Arg::buffer(out.data(), kThreads)},
                  {});
      FAIL() << "the read of a copy in flight went unnoticed";
    } catch (const ExecutionError& e) {
      EXPECT_TRUE(contains(e.what(), "which the cp.async issued by block 0 thread")) << e.what();
      EXPECT_TRUE(contains(e.what(), "has not written yet (that thread has not waited for it)")) << e.what();
    }
  }
}

// Where two paths meet, the groups line up from the newest, as wait_group counts: with slot 2's
// copies made only where flag is set, slot 1's group is the newest where it is not, so a wait(1)
// leaves it in flight there and the barrier before its read waits for every group. (Lined up from
// the oldest, slot 1's group would be complete after the wait, and the read of a copy in flight
// would go unnoticed until the interpreter ran with flag 0.)
TEST(Pipeline, PathsThatCommitDifferentlyAreJoinedFromTheNewestGroup) {
  const std::vector<float> x = iota_x();
  const Kernel k = three_slots(1, 1, Shape::Branch);
  EXPECT_EQ(barrier_wait(k), ir::kAsyncWaitAll);
  for (int flag : {0, 1})
    for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
      std::vector<float> out(kThreads, -1.0f);
      k.launch(Device::interpreter({order, 7, true}), Grid{1, kThreads}, flag, x, out);
      for (int t = 0; t < kThreads; ++t)
        ASSERT_EQ(out[static_cast<std::size_t>(t)], static_cast<float>(kSlot + ((t + 1) % kThreads) * 4 + 3))
            << "flag " << flag << ", thread " << t;
    }
}

// Copies a barrier leaves in flight stay writes of their memory: a barrier placed for another
// array (z) waits for no copy, and the read of slot 1 after it gets a barrier of its own that waits
// for its group and the older one (wait_group 1: slot 2's stays in flight). Forgotten at the first
// barrier, the copies would be read in flight.
TEST(Pipeline, CopiesABarrierLeavesInFlightAreWaitedForWhereTheyAreUsedLater) {
  const std::vector<float> x = iota_x();
  const Kernel k = three_slots(1, -1, Shape::BarrierFirst);
  EXPECT_EQ(barrier_waits(k), (std::vector<std::int64_t>{ir::kNoAsyncWait, 1}));
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
    std::vector<float> out(kThreads, -1.0f);
    k.launch(Device::interpreter({order, 7, true}), Grid{1, kThreads}, 1, x, out);
    for (int t = 0; t < kThreads; ++t)
      ASSERT_EQ(out[static_cast<std::size_t>(t)], static_cast<float>(kSlot + ((t + 1) % kThreads) * 4 + 3) + 0.5f)
          << "thread " << t;
  }
}

// A commit in a loop of a statement the pass summarises runs any number of times: the groups cannot
// be counted past it, so the barrier before slot 0's read waits for every copy. (Counted as one
// commit, slot 0's group would be complete after a wait(1), and with no commit at all, flag 0, it is
// the newest group and still in flight.)
TEST(Pipeline, ACommitInALoopEndsTheCountingAndTheBarrierWaitsForAll) {
  const std::vector<float> x = iota_x();
  const Kernel k = three_slots(0, 1, Shape::LoopOfCommits);
  EXPECT_EQ(barrier_wait(k), ir::kAsyncWaitAll);
  for (int flag : {0, 1, 3}) {
    std::vector<float> out(kThreads, -1.0f);
    k.launch(Device::interpreter({ThreadOrder::Reverse, 7, true}), Grid{1, kThreads}, flag, x, out);
    for (int t = 0; t < kThreads; ++t)
      ASSERT_EQ(out[static_cast<std::size_t>(t)], static_cast<float>(((t + 1) % kThreads) * 4 + 3))
          << "flag " << flag << ", thread " << t;
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {

/// C = alpha * A * B + beta * C in doubles (every value here is exact in floats).
std::vector<float> gemm_reference(int M, int N, int K, float alpha, float beta, const std::vector<float>& A,
                                  const std::vector<float>& B, std::vector<float> C) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += static_cast<double>(A[static_cast<std::size_t>(i * K + k)]) * B[static_cast<std::size_t>(k * N + j)];
      auto& c = C[static_cast<std::size_t>(i * N + j)];
      c = static_cast<float>(alpha * s + static_cast<double>(beta) * c);
    }
  return C;
}

// Rung 8 in 3 and 4 slots, in its default tile and the tuner's 64 x 128 x 16, at sizes no tile
// divides and with tile counts that are and are not multiples of the slots: bit-exact on the
// interpreter in two thread orders and on the CPU backend.
TEST(Pipeline, SgemmInThreeAndFourSlotsIsRightOnEveryDevice) {
  struct Size3 {
    int M, N, K;
  };
  for (int stages : {3, 4})
    for (auto [bm, bn, bk] : {std::tuple{128, 128, 8}, std::tuple{64, 128, 16}}) {
      const Kernel k = examples::sgemm_pipelined(examples::PipelinedShape{bm, bn, bk, stages});
      std::vector<Size3> sizes{{70, 65, 19}, {33, 70, 4 * bk}, {100, 70, 8 * bk + 3}};
      if (test_support::kSanitized) sizes.pop_back();  // the longest; the other two cover the tails
      for (Size3 s : sizes) {
        SCOPED_TRACE(std::to_string(stages) + " slots, " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                     std::to_string(bk) + " at " + std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                     std::to_string(s.K));
        std::vector<float> A(static_cast<std::size_t>(s.M * s.K)), B(static_cast<std::size_t>(s.K * s.N)),
            C0(static_cast<std::size_t>(s.M * s.N));
        for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(static_cast<int>(i * 7 % 11) - 5);
        for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(static_cast<int>(i * 5 % 13) - 6);
        for (std::size_t i = 0; i < C0.size(); ++i) C0[i] = static_cast<float>(static_cast<int>(i % 9) - 4);
        const std::vector<float> want = gemm_reference(s.M, s.N, s.K, 2.0f, 0.5f, A, B, C0);
        const Grid grid{((s.M + bm - 1) / bm) * ((s.N + bn - 1) / bn), bm / 32 * (bn / 64) * 32};
        for (const Device& d : test_support::every_device()) {
          std::vector<float> C = C0;
          const auto& cA = A;
          const auto& cB = B;
          test_support::launch_on(k, d, grid, s.M, s.N, s.K, 2.0f, 0.5f, cA, cB, C);
          for (std::size_t i = 0; i < C.size(); ++i) ASSERT_EQ(C[i], want[i]) << d.name() << ", element " << i;
        }
      }
    }
}

// Lanes of 16 rows (128 sums a thread, four warps of 64 x 64 in a 128 x 128 tile): bit-exact on the
// interpreter in two thread orders and on the CPU backend at sizes no tile divides, in 2 and 3
// slots, and in a 128 x 256 tile of eight warps; a lane of any other height, or a block tile the
// warps' 64 rows do not divide, is refused with the shape named.
TEST(Pipeline, SgemmInLanesOfSixteenRowsIsRightOnEveryDevice) {
  struct Case {
    examples::PipelinedShape shape;
    int M, N, K;
  };
  std::vector<Case> cases{{{128, 128, 8, 2, 0, 16}, 130, 70, 27},
                          {{128, 128, 8, 3, 0, 16}, 64, 129, 40},
                          {{128, 256, 16, 2, 0, 16}, 150, 260, 35}};
  if (test_support::kSanitized) cases.pop_back();  // the largest; the other two cover the tails
  for (const auto& [sh, M, N, K] : cases) {
    SCOPED_TRACE(std::to_string(sh.bm) + "x" + std::to_string(sh.bn) + "x" + std::to_string(sh.bk) + " in " +
                 std::to_string(sh.stages) + " slots at " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                 std::to_string(K));
    const Kernel k = examples::sgemm_pipelined(sh);
    std::vector<float> A(static_cast<std::size_t>(M * K)), B(static_cast<std::size_t>(K * N)),
        C0(static_cast<std::size_t>(M * N));
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(static_cast<int>(i * 7 % 11) - 5);
    for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(static_cast<int>(i * 5 % 13) - 6);
    for (std::size_t i = 0; i < C0.size(); ++i) C0[i] = static_cast<float>(static_cast<int>(i % 9) - 4);
    const std::vector<float> want = gemm_reference(M, N, K, 2.0f, 0.5f, A, B, C0);
    const Grid grid{((M + sh.bm - 1) / sh.bm) * ((N + sh.bn - 1) / sh.bn), sh.bm / 64 * (sh.bn / 64) * 32};
    for (const Device& d : test_support::every_device()) {
      std::vector<float> C = C0;
      const auto& cA = A;
      const auto& cB = B;
      test_support::launch_on(k, d, grid, M, N, K, 2.0f, 0.5f, cA, cB, C);
      for (std::size_t i = 0; i < C.size(); ++i) ASSERT_EQ(C[i], want[i]) << d.name() << ", element " << i;
    }
  }
  for (auto [bm, tm] : {std::pair{128, 12}, {96, 16}, {32, 16}}) {
    examples::PipelinedShape sh{bm, 128, 8};
    sh.tm = tm;
    try {
      (void)examples::sgemm_pipelined(sh);
      ADD_FAILURE() << bm << " rows in lanes of " << tm << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), std::to_string(tm) + " rows a lane; a lane has 8 or 16 rows")) << e.what();
    }
  }
}

// Lanes of 16 rows fit their 128 sums in registers: no spill through NVRTC at 4096, and every
// shared read of the inner product a 16-byte one (6 a step of k: 4 of A's rows, 2 of B's columns).
TEST(Pipeline, LanesOfSixteenRowsSpillNothingAndReadSharedMemoryInVectors) {
  const std::map<std::string, std::int64_t> at4096{{"M", 4096}, {"N", 4096}, {"K", 4096}};
  examples::PipelinedShape sh{128, 128, 8};
  sh.tm = 16;
  const Kernel k = examples::sgemm_pipelined(sh);
  const Compiled c = compile(k, launch_spec(k, Spec{}, at4096));
  int registers = -1;
  std::int64_t frame = -1;
  cache::cubin_resources(c.cubin, &registers, &frame);
  EXPECT_TRUE(contains(c.spec.source, "__launch_bounds__(128) ")) << c.spec.source.substr(0, 400);
  EXPECT_GT(registers, 128);
  EXPECT_LE(registers, 255);
  EXPECT_EQ(frame, 0) << "a spill";
  const std::string ptx = k.ptx(launch_spec(k, Spec{}, at4096));
  // A loop trip multiplies two tiles (one a slot) of 2 x 4 steps of k: each 4 of them read 16 rows
  // of A 4 steps at a time and 4 x 2 vectors of B.
  EXPECT_EQ(test_support::count(ptx, "ld.shared.v4.f32"), 2 * 2 * (16 + 4 * 2)) << ptx;
  EXPECT_EQ(test_support::count(ptx, "ld.shared.f32"), 0) << ptx;
}

// In 3 slots each step waits for all but its newest group and its one barrier waits for no copy:
// the copies of the next tile fly on across it. Three barriers a round of three steps, as by hand.
TEST(Pipeline, SgemmInThreeSlotsKeepsATileInFlightAcrossItsBarriers) {
  const Kernel k = examples::sgemm_pipelined(examples::PipelinedShape{128, 128, 8, 3});
  const std::string src = specialize_for(k, Spec{}).source;
  EXPECT_FALSE(contains(src, "cp.async.wait_all")) << src;
  EXPECT_EQ(test_support::count(src, "cp.async.wait_group %0;\" :: \"n\"(1)"), 3) << src;
  EXPECT_EQ(test_support::count(src, "__syncthreads();"), 3) << src;
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {

// min_blocks_per_sm asks the GPU compiler for registers that let that many blocks share an SM:
// rung 8 in two blocks of 256 threads takes 128 registers a thread and spills nothing, where alone
// it takes more. (The cubin's own register count and frame size, read from its .nv.info.)
TEST(Pipeline, TwoBlocksAnSmKeepRung8To128RegistersWithoutSpilling) {
  const std::map<std::string, std::int64_t> at4096{{"M", 4096}, {"N", 4096}, {"K", 4096}};
  auto resources = [&](int per_sm) {
    const Kernel k = examples::sgemm_pipelined(examples::PipelinedShape{128, 128, 8, 2, per_sm});
    const Compiled c = compile(k, launch_spec(k, Spec{}, at4096));
    int registers = -1;
    std::int64_t frame = -1;
    cache::cubin_resources(c.cubin, &registers, &frame);
    return std::tuple{registers, frame, c.spec.source};
  };
  auto [alone, alone_frame, alone_src] = resources(0);
  auto [two, two_frame, two_src] = resources(2);
  EXPECT_TRUE(contains(alone_src, "__launch_bounds__(256) ")) << alone_src.substr(0, 400);
  EXPECT_TRUE(contains(two_src, "__launch_bounds__(256, 2) ")) << two_src.substr(0, 400);
  EXPECT_GT(alone, 128);
  EXPECT_LE(two, 128);
  EXPECT_GT(two, 0);
  EXPECT_EQ(two_frame, 0) << "a spill";
  EXPECT_EQ(alone_frame, 0);
}

// A count no multiprocessor holds, and a kernel that moves registers between its warpgroups
// (setmaxnreg, which needs the block alone on its SM) asking for two blocks: V0918 at the line.
TEST(Pipeline, MinBlocksPerSmIsOneToThirtyTwoAndNotBesideSetmaxnreg) {
  for (std::int64_t n : {0, -1, 33}) {
    KernelBuilder k("bad_min_blocks");
    k.block_threads(128);
    const int line = __LINE__ + 1;
    k.min_blocks_per_sm(n);
    k.body([&](Scope&) {});
    EXPECT_TRUE(::vantage::testing::rejected_saying(
        k, "V0918", line, __FILE__, "min_blocks_per_sm asks for 1 to 32 blocks, not " + std::to_string(n)));
  }
  KernelBuilder k("setmaxnreg_and_two_blocks");
  k.block_threads(256);
  k.min_blocks_per_sm(2);
  int line = 0;
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      b.group(warpgroup(), [&](Scope& w) {
        line = __LINE__ + 1;
        w.setmaxnreg(40, false);
      });
    });
  });
  EXPECT_TRUE(::vantage::testing::rejected_saying(k, "V0918", line, __FILE__,
                                                  "setmaxnreg needs one block on each multiprocessor"));
}

}  // namespace
}  // namespace vantage
