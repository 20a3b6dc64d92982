// Hopper's asynchronous machinery on the interpreter: mbarrier phases and their parity waits, TMA
// loads into the 128-byte swizzle (zeros past the matrix), wgmma on those tiles, asynchronous until
// its wait, and a producer thread and consumer warpgroups waiting on each other. The interpreter is
// the reference the GPU's results are compared with; here it also finds what a faulty pipeline does
// on a GPU: a hang (every thread waiting) and a slot overwritten while it is still being read.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "hopper_kernels.hpp"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "kernels/stages.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using testing::Gemm;
using testing::gemm_inputs;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

Device interp(ThreadOrder o = ThreadOrder::Forward) { return Device::interpreter({o, 7, true}); }

/// What a pipeline may get wrong, for the interpreter to find.
struct Faults {
  int empty_count = 128;  ///< arrivals that free a slot: the consumer warpgroup makes 128
  bool early = false;     ///< free the slot before waiting for the wgmma that reads it
  int parity = 0;         ///< added to the parity the consumer waits for
};

/// A one-consumer version of the bf16 wgmma GEMM: C (64 x 64, f32) = A (64 x K) * Bt (64 x K)^T
/// through two slots. Warpgroup 0 consumes (one m64n64k16 wgmma per 16 of K); one thread of
/// warpgroup 1 loads both tiles of each 64-deep step by TMA.
Kernel pipe_gemm(const Faults& f = {}) {
  constexpr int BM = 64, BN = 64, BK = 64, kStages = 2;
  KernelBuilder k("pipe_gemm");
  auto K = k.param<int>("K", specialize);
  auto A = k.param<GlobalPtr<const bfloat16>>("A", extent(BM * K));
  auto Bt = k.param<GlobalPtr<const bfloat16>>("Bt", extent(BN * K));
  auto C = k.param<GlobalPtr<float>>("C", extent(BM * BN));
  k.require(K % BK == 0);
  k.block_threads(256);
  TensorMap a_map = k.tensor_map("A_map", A, BM, K, BM, BK);
  TensorMap b_map = k.tensor_map("Bt_map", Bt, BN, K, BN, BK);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, BM, BN, BM, BN, [&](Scope& b, const lib::MatrixTile& c) {
      View As = b.shared_aligned("As", ScalarType::BF16, kStages * BM * BK, 1024);
      View Bs = b.shared_aligned("Bs", ScalarType::BF16, kStages * BN * BK, 1024);
      View full = b.shared<std::uint64_t>("full", kStages);
      View empty = b.shared<std::uint64_t>("empty", kStages);
      auto k_tiles = b.let("k_tiles", K / BK);
      const Expr& t = c.thread;
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 th.for_("s", 0, kStages, [&](Scope& th, Expr s) {
                                   th.mbarrier_init(full, s, 1);
                                   th.mbarrier_init(empty, s, f.empty_count);
                                 });
                               }}});
      auto row_of = [&](const Expr& i) { return t % 128 / 32 * 16 + t % 32 / 4 + 8 * (i / 2 % 2); };
      auto col_of = [&](const Expr& i) { return 8 * (i / 4) + 2 * (t % 4) + i % 2; };
      b.partition(
          c.view, thread(1), [&](Expr i) { return row_of(i) * BN + col_of(i); },
          [&](Scope& b, View mine) {
            b.split(Level::Thread, {{128,
                                     [&](Scope& w) {
                                       View acc = w.local_array("acc", ScalarType::F32, BN / 2, at(thread(1)));
                                       for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
                                       w.for_("kt", 0, k_tiles, [&](Scope& w, Expr kt) {
                                         auto s = w.let("s", kt % kStages), round = w.let("round", kt / kStages);
                                         w.mbarrier_wait(full, s, (round + f.parity) % 2);
                                         w.wgmma_fence();
                                         for (int kk = 0; kk < BK / 16; ++kk)
                                           w.wgmma(BN, acc, As, s * (BM * BK) + kk * 16, Bs, s * (BN * BK) + kk * 16);
                                         w.wgmma_commit();
                                         if (f.early) w.mbarrier_arrive(empty, s);
                                         w.wgmma_wait(0);
                                         if (!f.early) w.mbarrier_arrive(empty, s);
                                       });
                                       w.group(thread(1), [&](Scope& th) {
                                         for (int i = 0; i < BN / 2; ++i)
                                           th.if_(row_of(i) < BM, [&](Scope&) { mine[i] = acc[i]; });
                                       });
                                     }},
                                    {128, [&](Scope& producer) {
                                       producer.split(Level::Thread,
                                                      {{1, [&](Scope& th) {
                                                          th.for_("kt", 0, k_tiles, [&](Scope& th, Expr kt) {
                                                            auto s = th.let("s", kt % kStages);
                                                            auto round = th.let("round", kt / kStages);
                                                            th.if_(kt >= kStages, [&](Scope& th) {
                                                              th.mbarrier_wait(empty, s, (round - 1) % 2);
                                                            });
                                                            th.mbarrier_arrive_expect_tx(
                                                                full, s, a_map.box_bytes() + b_map.box_bytes());
                                                            th.tma_load(As, s * (BM * BK), a_map, 0, kt * BK, full, s);
                                                            th.tma_load(Bs, s * (BN * BK), b_map, 0, kt * BK, full, s);
                                                          });
                                                        }}});
                                     }}});
          });
    });
  });
  return k.build();
}

std::vector<float> run_pipe(const Kernel& k, int K, const Device& d) {
  Gemm g = gemm_inputs(K);
  std::vector<float> C(64 * 64, -1.0f);
  k.launch(d, Grid{1, 256}, K, g.A, g.Bt, C);
  return C;
}

// The pipeline runs to the bit under every order of threads, with the slots used once (K = 64, 128)
// and wrapped (K = 320: five steps through two slots).
TEST(HopperRun, AProducerAndAConsumerWarpgroupMeetThroughMbarriers) {
  Kernel k = pipe_gemm();
  for (int K : {64, 128, 320})
    for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
      SCOPED_TRACE("K=" + std::to_string(K));
      EXPECT_EQ(run_pipe(k, K, interp(order)), gemm_inputs(K).want);
    }
}

// A slot freed by one arrival too many is never freed: every thread ends up waiting, which hangs a
// GPU; the interpreter names the waits.
TEST(HopperRun, APipelineThatCanNeverGoOnIsReportedWithItsWaits) {
  Kernel k = pipe_gemm({129, false, 0});
  try {
    run_pipe(k, 320, interp());
    FAIL() << "a slot that needs 129 arrivals of 128 was freed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "synccheck") << e.what();
    EXPECT_TRUE(contains(e.what(), "cannot go on")) << e.what();
    // The consumers wait for a load the producer cannot make until the slot is freed.
    EXPECT_TRUE(contains(e.what(), "threads 0 to 127 wait at ")) << e.what();
    EXPECT_TRUE(contains(e.what(), "thread 128 waits at ")) << e.what();
    EXPECT_TRUE(contains(e.what(),
                         "on mbarrier shared 'empty'[0] for its phase of parity 0, which still waits for 1 "
                         "of 129 arrivals"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "test_hopper_run.cpp")) << "the wait's line: " << e.what();
  }
}

/// The finding of running `k` under each order: the first that reports one.
std::string finding(const Kernel& k, const std::string& check) {
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) try {
      run_pipe(k, 320, interp(order));
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), check) << e.what();
      return e.what();
    }
  return "";
}

// Freed by fewer arrivals than the warpgroup makes, a slot is loaded again while threads that have
// not arrived still read it; freed before the wgmma that reads it is waited for, the same. Waiting
// on the wrong parity reads a slot before its load. Each is a race a GPU's results would show.
TEST(HopperRun, ASlotReusedWhileItIsReadIsARace) {
  for (const Faults& f : {Faults{127, false, 0}, Faults{128, true, 0}, Faults{128, false, 1}}) {
    SCOPED_TRACE("empty count " + std::to_string(f.empty_count) + (f.early ? ", freed early" : "") +
                 (f.parity ? ", the other parity" : ""));
    // The producer's TMA load writes the slot a consumer's wgmma read, with nothing ordering them.
    const std::string found = finding(pipe_gemm(f), "racecheck");
    EXPECT_TRUE(contains(found, "block 0 thread 128 writes shared 'As'[0] at ")) << found;
    EXPECT_TRUE(contains(found, "which block 0 thread 0 read at ")) << found;
  }
}

// A box past the matrix's last row reads zeros there, as TMA fills it; the box lands in the
// 128-byte swizzle: 16-byte chunk j of row r at chunk j ^ (r % 8). A map larger than its buffer is
// refused, naming it (on a GPU the launch refuses it).
TEST(HopperRun, ATmaBoxIsSwizzledAndZeroPastTheMatrix) {
  const Kernel k = testing::tma_box_copy(256);
  std::vector<float> src(5 * 32), out(8 * 32, -1.0f);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i + 1);
  k.launch(interp(), Grid{1, 256}, 5, src, out);
  for (int p = 0; p < 8 * 32; ++p) {
    const int row = p / 32, chunk = p % 32 / 4, logical = row * 32 + (chunk ^ (row % 8)) * 4 + p % 4;
    const float want = logical / 32 < 5 ? static_cast<float>(logical + 1) : 0.0f;
    EXPECT_EQ(out[static_cast<std::size_t>(p)], want) << "element " << p << " of the box";
  }
  try {
    k.launch(interp(), Grid{1, 256}, 6, src, out);
    FAIL() << "a tensor map of 6 x 32 over 160 elements";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck") << e.what();
    EXPECT_TRUE(contains(e.what(), "tensor map src_map covers 6 x 32 elements of 'src', which has 160")) << e.what();
  }
}

// An arrival at an mbarrier nothing initialised, and one past its phase's count (the phase still
// waits for its load's bytes), are reported at the arrival's line.
TEST(HopperRun, ArrivalsAtAnUninitialisedBarrierOrPastTheCountAreReported) {
  for (bool init : {false, true}) {
    KernelBuilder kb("arrivals");
    auto out = kb.param<GlobalPtr<float>>("out", extent(32));
    kb.block_threads(32);
    int line = 0;
    kb.body([&](Scope& g) {
      lib::for_each_block(g, out, 32, [&](Scope& b, Expr, View out_b) {
        View bar = b.shared<std::uint64_t>("bar", 1);
        b.split(Level::Thread, {{1, [&](Scope& th) {
                                   if (init) th.mbarrier_init(bar, 0, 1);
                                   th.mbarrier_arrive_expect_tx(bar, 0, 128);
                                   line = __LINE__ + 1;
                                   th.mbarrier_arrive(bar, 0);
                                 }}});
        lib::block_store(b, out_b, 32, 1.0f);
      });
    });
    std::vector<float> got(32);
    try {
      kb.build().launch(interp(), Grid{1, 32}, got);
      ADD_FAILURE() << "ran";
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), init ? "synccheck" : "initcheck") << e.what();
      EXPECT_TRUE(
          contains(e.what(), init ? "more arrivals than its count" : "before any thread of the block initialised"))
          << e.what();
      ASSERT_FALSE(e.locs().empty());
      EXPECT_EQ(static_cast<int>(e.locs()[0].line), init ? line : line - 2) << e.what();
    }
  }
}

// A wgmma's accumulators are its own until the thread waits for it: reading one before is a race.
TEST(HopperRun, AccumulatorsReadBeforeTheirWgmmaIsWaitedForAreARace) {
  std::vector<float> got(128, -1.0f);
  testing::fill_then_wgmma(true).launch(interp(), Grid{1, 128}, got);
  for (float v : got) EXPECT_EQ(v, 40.0f);
  try {
    testing::fill_then_wgmma(false).launch(interp(), Grid{1, 128}, got);
    FAIL() << "the accumulators were read with the wgmma in flight";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "racecheck") << e.what();
    EXPECT_TRUE(contains(e.what(), "which the wgmma issued by block 0 thread")) << e.what();
  }
}

// The bf16 GEMM examples run on the interpreter at each of their sizes and are bit-exact; the CPU
// backend, whose threads run in loops cut at barriers and cannot wait for one another's arrivals,
// stops at the first Hopper instruction and says so.
TEST(HopperRun, TheWgmmaGemmExamplesRunOnTheInterpreterAndStopOnTheCpu) {
  for (const char* name : {"gemm_wgmma_bf16", "gemm_wgmma_bf16_wide"}) {
    for (const auto& size : test_support::sweep_sizes(examples::default_sizes(name))) {
      auto r = examples::run_example(name, size, interp(ThreadOrder::Reverse));
      EXPECT_TRUE(r.ok) << r.summary;
    }
    if (!Device::cpu_available()) continue;
    try {
      examples::run_example(name, examples::default_sizes(name).front(), Device::cpu(1));
      ADD_FAILURE() << name << " ran on the CPU backend";
    } catch (const UnsupportedOnDevice& e) {
      EXPECT_TRUE(contains(e.what(), "mbarrier_init")) << e.what();
      ASSERT_FALSE(e.locs().empty());
      EXPECT_TRUE(contains(e.locs()[0].file, "wgmma_kernels.cpp")) << e.what();
    }
  }
}

// Rung 2 with one step's wgmma group left running (wgmma_wait(1), the slot before freed): bit-exact
// at the example's sizes, one of which wraps the four slots twice (bench.speed_small runs it too).
TEST(HopperRun, AConsumerThatLeavesOneGroupRunningFreesTheSlotBefore) {
  const Kernel k = examples::wgmma_gemm("gemm_wgmma_bf16_wide_w1", 256, 16, 1);
  for (const auto& size : test_support::sweep_sizes(examples::default_sizes("gemm_wgmma_bf16_wide"))) {
    auto r = examples::run_kernel("gemm_wgmma_bf16_wide", k, size, interp(ThreadOrder::Reverse));
    EXPECT_TRUE(r.ok) << r.summary;
  }
  EXPECT_THROW(examples::wgmma_gemm("w2", 256, 16, 2), std::invalid_argument);
}

// Rung 3, persistent: fewer blocks than tiles, each block's pipeline running on from one of its tiles
// to the next (the producer loading the next tile's steps while the consumers store C), with one
// wgmma group left running or none. Bit-exact where a block takes two tiles, where the blocks and
// the tiles come out even, and where one block takes the one tile through five steps.
TEST(HopperRun, APersistentGemmRunsItsPipelineOnAcrossItsTiles) {
  struct Run {
    int M, N, K, blocks, in_flight;
  };
  // Under a sanitizer the first alone (test_support::sweep_sizes); the runs in turn in the reverse
  // and the random order.
  int run = 0;
  for (const Run& r : test_support::sweep_sizes(std::vector<Run>{
           {256, 512, 192, 3, 1}, {256, 512, 192, 3, 0}, {384, 256, 128, 3, 0}, {128, 256, 320, 1, 0}})) {
    const ThreadOrder order = run++ % 2 == 0 ? ThreadOrder::Reverse : ThreadOrder::Random;
    SCOPED_TRACE(std::to_string(r.M) + " x " + std::to_string(r.N) + " x " + std::to_string(r.K) + " on " +
                 std::to_string(r.blocks) + " blocks, in flight " + std::to_string(r.in_flight));
    const Kernel k = examples::wgmma_gemm_persistent("gemm_persistent", 16, r.in_flight);
    Gemm g = gemm_inputs(r.K, r.M, r.N);
    std::vector<float> C(static_cast<std::size_t>(r.M * r.N), -1.0f);
    k.launch(interp(order), Grid{r.blocks, 384}, r.M, r.N, r.K, g.A, g.Bt, C);
    EXPECT_EQ(C, g.want);
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// A TMA store writes its box from the swizzled source to the matrix and nothing past it: tiles of
// 8 x 32 over 20 x 70 leave parts of boxes outside, which must not reach the next row (or past the
// buffer); over 16 x 64 every box is whole. Under every thread order, and the CPU refuses it by name.
TEST(HopperRun, ATmaStoreWritesItsBoxAndNothingPastTheMatrix) {
  for (auto [rows, cols] : {std::pair{20, 70}, std::pair{16, 64}, std::pair{8, 32}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    const std::int64_t blocks = (rows + 7) / 8 * ((cols + 31) / 32);
    for (ThreadOrder o : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
      std::vector<float> out(static_cast<std::size_t>(rows * cols), -1.0f);
      testing::tma_store_tiles().launch(interp(o), Grid{blocks, 128}, rows, cols, out);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
          ASSERT_EQ(out[static_cast<std::size_t>(r * cols + c)], static_cast<float>(r * 1000 + c)) << r << ", " << c;
    }
  }
  if (Device::cpu_available()) {
    std::vector<float> out(16 * 64);
    try {
      testing::tma_store_tiles().launch(Device::cpu(1), Grid{4, 128}, 16, 64, out);
      FAIL() << "the CPU backend ran a TMA store";
    } catch (const UnsupportedOnDevice& e) {
      EXPECT_TRUE(contains(e.what(), "tma_store")) << e.what();
    }
  }
}

// The hardware reads a TMA store's source after the instruction, until its thread waits: writing the
// source before (a barrier between orders the threads, not the TMA unit; here the wait is another
// thread's, which the barrier placement cannot tell apart) is a race, and a thread that ends without
// waiting leaves the store reading shared memory that ends with the block.
TEST(HopperRun, ATmaStoreSourceIsItsUntilTheWait) {
  std::vector<float> out(16 * 64);
  try {
    testing::tma_store_tiles(testing::StoreEnd::OtherThreadWaits).launch(interp(), Grid{4, 128}, 16, 64, out);
    FAIL() << "the source was written again while the store may read it";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "racecheck") << e.what();
    EXPECT_TRUE(contains(e.what(), "writes shared 'stage'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "which the TMA store issued by block 0 thread 0 at")) << e.what();
    EXPECT_TRUE(contains(e.what(), "may still be reading")) << e.what();
  }
  try {
    testing::tma_store_tiles(testing::StoreEnd::NoWait).launch(interp(), Grid{4, 128}, 16, 64, out);
    FAIL() << "a store never waited for";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "synccheck") << e.what();
    EXPECT_TRUE(contains(e.what(), "ends with the TMA store at")) << e.what();
    EXPECT_TRUE(contains(e.what(), "tma_store_wait(0)")) << e.what();
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// Rung 2 with a TMA-store epilogue: each consumer warpgroup stores its 64 x 256 of C by TMA in eight
// 64 x 32 chunks through two buffers (a chunk's buffer reused once the store two back has read it),
// with its wgmma groups waited at once or one left running. Bit-exact at the example's sizes, in
// reverse thread order and a seeded random one (forward: bench.speed_small).
TEST(HopperRun, AGemmStoresItsTilesByTmaThroughTwoBuffers) {
  for (int in_flight : {0, 1}) {
    const Kernel k = examples::wgmma_gemm("gemm_wgmma_bf16_wide_tma", 256, 16, in_flight, true);
    const ThreadOrder order = in_flight ? ThreadOrder::Random : ThreadOrder::Reverse;
    for (const auto& size : test_support::sweep_sizes(examples::default_sizes("gemm_wgmma_bf16_wide"))) {
      auto r = examples::run_kernel("gemm_wgmma_bf16_wide", k, size, interp(order));
      EXPECT_TRUE(r.ok) << r.summary;
    }
  }
  EXPECT_THROW(examples::wgmma_gemm("narrow", 128, 1, 0, true), std::invalid_argument);
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {

// The int8 GEMM with u8 activations and i8 weights (`.s32.u8.s8`): every byte value of each sign,
// bit-exact in i32 on the interpreter at one K step and at five (the slots wrapped), in two thread
// orders; NVRTC makes IGMMA.64x256x32.U8.S8 of it.
TEST(HopperRun, TheInt8GemmTakesUnsignedActivationsAndSignedWeights) {
  const Kernel k = examples::igemm_wgmma("igemm_wgmma_u8s8", 0, true);
  for (auto [M, N, K] : {std::tuple{128, 256, 128}, std::tuple{256, 256, 640}}) {
    std::vector<std::uint8_t> A(static_cast<std::size_t>(M * K));
    std::vector<std::int8_t> Bt(static_cast<std::size_t>(N * K));
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<std::uint8_t>((i * 37 + i / 7) % 256);
    for (std::size_t i = 0; i < Bt.size(); ++i)
      Bt[i] = static_cast<std::int8_t>(static_cast<int>((i * 101 + 5) % 256) - 128);
    std::vector<int> want(static_cast<std::size_t>(M * N));
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        std::int64_t acc = 0;
        for (int p = 0; p < K; ++p)
          acc += std::int64_t{A[static_cast<std::size_t>(r * K + p)]} * Bt[static_cast<std::size_t>(c * K + p)];
        want[static_cast<std::size_t>(r * N + c)] = static_cast<int>(acc);
      }
    for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
      std::vector<int> C(want.size(), -1);
      const auto& cA = A;
      const auto& cB = Bt;
      k.launch(interp(order), Grid{(M / 128) * (N / 256), 384}, M, N, K, cA, cB, C);
      ASSERT_EQ(C, want) << M << "x" << N << "x" << K;
    }
  }
  const std::string src =
      specialize_for(k, Spec{}.with_arch(Arch::SM_90a).with_size("M", 256).with_size("N", 256).with_size("K", 640))
          .source;
  EXPECT_NE(src.find("wgmma.mma_async.sync.aligned.m64n256k32.s32.u8.s8"), std::string::npos);
  if (!examples::find_cuobjdump().empty()) {
    const Compiled c =
        compile(k, Spec{}.with_arch(Arch::SM_90a).with_size("M", 256).with_size("N", 256).with_size("K", 640));
    EXPECT_NE(examples::sass(c.cubin).find("IGMMA.64x256x32.U8.S8"), std::string::npos);
  }
}

}  // namespace
}  // namespace vantage
