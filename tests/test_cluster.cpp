// Thread-block clusters (sm_90): cluster_sync, a TMA load multicast into every block of the cluster,
// and an arrival at another block's mbarrier. The checker refuses them outside a kernel of clusters,
// lowering proves the ranks and masks, the CUDA text names the instructions (and NVRTC compiles it),
// and the interpreter runs a cluster's blocks together: it finds a block that skips the barrier, a
// multicast or arrival before the other block made its barriers, a slot freed by one block alone,
// and a block that may end while another's arrival is on its way.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hopper_kernels.hpp"
#include "jit/interp/interp.h"
#include "jit/ir/visit.h"
#include "jit/pipeline/pipeline.h"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "kernels/stages.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using testing::Gemm;
using testing::gemm_inputs;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

Device interp(ThreadOrder o = ThreadOrder::Forward) { return Device::interpreter({o, 7, true}); }

/// What a cluster's pipeline may get wrong, for the interpreter to find.
struct Faults {
  bool start_sync = true;    ///< a cluster_sync after the barriers are made, before any multicast
  bool end_sync = true;      ///< a cluster_sync before the blocks end
  bool both_arrive = true;   ///< consumers free the slot in both blocks (not only their own)
  bool rank1_skips = false;  ///< the block of rank 1 skips the first cluster_sync
};

constexpr int kBM = 64, kBN = 64, kBK = 64, kStages = 2;

/// C (128 x 64, f32) = A (128 x K) * Bt (64 x K)^T by a cluster of two blocks, each a 64-row tile
/// of C. Both tiles need the same Bt tile at each K step: the producer of the block of rank r loads
/// its own A tile and rows 32 r.. of the Bt tile, multicast into both blocks, so that each block's
/// `full` barrier completes on its A box and both halves. A slot is loaded again in both blocks
/// only when the consumers of both have freed it: each consumer arrives at `empty` in both blocks.
Kernel cluster_gemm(const Faults& f = {}) {
  KernelBuilder k("cluster_gemm");
  auto K = k.param<int>("K", specialize);
  auto A = k.param<GlobalPtr<const bfloat16>>("A", extent(2 * kBM * K));
  auto Bt = k.param<GlobalPtr<const bfloat16>>("Bt", extent(kBN * K));
  auto C = k.param<GlobalPtr<float>>("C", extent(2 * kBM * kBN));
  k.require(K % kBK == 0);
  k.block_threads(256);
  k.cluster(2);
  TensorMap a_map = k.tensor_map("A_map", A, 2 * kBM, K, kBM, kBK);
  TensorMap b_map = k.tensor_map("Bt_map", Bt, kBN, K, kBN / 2, kBK);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, 2 * kBM, kBN, kBM, kBN, [&](Scope& b, const lib::MatrixTile& c) {
      View As = b.shared_aligned("As", ScalarType::BF16, kStages * kBM * kBK, 1024);
      View Bs = b.shared_aligned("Bs", ScalarType::BF16, kStages * kBN * kBK, 1024);
      View full = b.shared<std::uint64_t>("full", kStages);
      View empty = b.shared<std::uint64_t>("empty", kStages);
      auto k_tiles = b.let("k_tiles", K / kBK);
      auto rank = b.let("rank", b.cluster_rank());
      const Expr& t = c.thread;
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 th.for_("s", 0, kStages, [&](Scope& th, Expr s) {
                                   th.mbarrier_init(full, s, 1);
                                   th.mbarrier_init(empty, s, f.both_arrive ? 256 : 128);
                                 });
                               }}});
      if (f.rank1_skips)
        b.if_(rank == 0, [&](Scope& b) { b.cluster_sync(); });
      else if (f.start_sync)
        b.cluster_sync();
      auto row_of = [&](const Expr& i) { return t % 128 / 32 * 16 + t % 32 / 4 + 8 * (i / 2 % 2); };
      auto col_of = [&](const Expr& i) { return 8 * (i / 4) + 2 * (t % 4) + i % 2; };
      b.partition(
          c.view, thread(1), [&](Expr i) { return row_of(i) * kBN + col_of(i); },
          [&](Scope& b, View mine) {
            auto consume = [&](Scope& w) {
              View acc = w.local_array("acc", ScalarType::F32, kBN / 2, at(thread(1)));
              for (int i = 0; i < kBN / 2; ++i) acc[i] = 0.0f;
              w.for_("kt", 0, k_tiles, [&](Scope& w, Expr kt) {
                auto s = w.let("s", kt % kStages), round = w.let("round", kt / kStages);
                w.mbarrier_wait(full, s, round % 2);
                w.wgmma_fence();
                for (int kk = 0; kk < kBK / 16; ++kk)
                  w.wgmma(kBN, acc, As, s * (kBM * kBK) + kk * 16, Bs, s * (kBN * kBK) + kk * 16);
                w.wgmma_commit();
                w.wgmma_wait(0);
                if (f.both_arrive) {
                  w.mbarrier_arrive_cluster(empty, s, 0);
                  w.mbarrier_arrive_cluster(empty, s, 1);
                } else {
                  w.mbarrier_arrive(empty, s);
                }
              });
              w.group(thread(1), [&](Scope& th) {
                for (int i = 0; i < kBN / 2; ++i) th.if_(row_of(i) < kBM, [&](Scope&) { mine[i] = acc[i]; });
              });
            };
            auto produce = [&](Scope& th) {
              th.for_("kt", 0, k_tiles, [&](Scope& th, Expr kt) {
                auto s = th.let("s", kt % kStages), round = th.let("round", kt / kStages);
                th.if_(kt >= kStages, [&](Scope& th) { th.mbarrier_wait(empty, s, (round - 1) % 2); });
                th.mbarrier_arrive_expect_tx(full, s, a_map.box_bytes() + 2 * b_map.box_bytes());
                th.tma_load(As, s * (kBM * kBK), a_map, c.row0, kt * kBK, full, s);
                th.tma_load_multicast(Bs, s * (kBN * kBK) + rank * (kBN / 2 * kBK), b_map, rank * (kBN / 2), kt * kBK,
                                      full, s, 3);
              });
            };
            b.split(Level::Thread, {{128, consume}, {128, [&](Scope& p) { p.split(Level::Thread, {{1, produce}}); }}});
          });
      if (f.end_sync) b.cluster_sync();
    });
  });
  return k.build();
}

std::vector<float> run_cluster_gemm(const Kernel& k, int K, const Device& d) {
  Gemm g = gemm_inputs(K, 2 * kBM, kBN);
  std::vector<float> C(2 * kBM * kBN, -1.0f);
  k.launch(d, Grid{2, 256}, K, g.A, g.Bt, C);
  return C;
}

// Two blocks share each Bt tile by multicast and free each slot in both: bit-exact under every
// order of threads, with the slots used once and wrapped (K = 320: five steps through two slots).
TEST(Cluster, TwoBlocksShareEachTileByMulticastAndFreeItInBoth) {
  const Kernel k = cluster_gemm();
  for (int K : {64, 128, 320})
    for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
      SCOPED_TRACE("K=" + std::to_string(K));
      EXPECT_EQ(run_cluster_gemm(k, K, interp(order)), gemm_inputs(K, 2 * kBM, kBN).want);
    }
}

/// The finding of running `k` under each order: the first that reports one.
std::string finding(const Kernel& k, const std::string& check) {
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) try {
      run_cluster_gemm(k, 320, interp(order));
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), check) << e.what();
      return e.what();
    }
  return "";
}

// A slot freed by its own block's consumers alone is loaded again into the other block, whose
// consumers may still read it, or have not yet waited for the load before: the other block's
// multicast (its producer, thread 128) and their wgmma's read race.
TEST(Cluster, ASlotFreedByOneBlockAloneIsOverwrittenInTheOther) {
  const std::string found = finding(cluster_gemm({true, true, false, false}), "racecheck");
  EXPECT_TRUE(contains(found, "shared 'Bs'[")) << found;
  EXPECT_TRUE(contains(found, "thread 128 wrote at ") || contains(found, "thread 128 writes ")) << found;
  EXPECT_TRUE(contains(found, "with no barrier between them")) << found;
}

// Without the first cluster_sync a block may multicast into (or arrive at) the other block's
// barrier before that block made it; without the last one, a block may end while the other's
// arrival at its barrier is on its way. Both are found on the interpreter, at the line.
TEST(Cluster, TheBlocksMeetBeforeTheyReachEachOtherAndBeforeTheyEnd) {
  {
    const std::string found = finding(cluster_gemm({false, true, true, false}), "racecheck");
    EXPECT_TRUE(contains(found, "shared 'full'[0]") || contains(found, "shared 'empty'[")) << found;
  }
  {
    std::string found;
    try {
      run_cluster_gemm(cluster_gemm({true, false, true, false}), 128, interp());
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), "synccheck") << e.what();
      found = e.what();
    }
    EXPECT_TRUE(contains(found, "may end while the arrival at an mbarrier into its shared memory by block ")) << found;
    EXPECT_TRUE(contains(found, "end the blocks of a cluster with a cluster_sync")) << found;
    EXPECT_TRUE(contains(found, "test_cluster.cpp")) << found;
  }
}

// A multicast that reaches the other block before any of its threads got to the arrays (no
// cluster_sync between) is reported, naming the array, the block and the line: on a GPU its
// barrier would not be initialised yet.
TEST(Cluster, AMulticastBeforeTheOtherBlockIsThereIsReported) {
  int line = 0;
  KernelBuilder kb("early_multicast");
  auto src = kb.param<GlobalPtr<const float>>("src", extent(8 * 32));
  auto out = kb.param<GlobalPtr<float>>("out");
  kb.block_threads(32);
  kb.cluster(2);
  TensorMap map = kb.tensor_map("src_map", src, 8, 32, 8, 32);
  kb.body([&](Scope& g) {
    lib::for_each_block(g, out, 32, [&](Scope& b, Expr, View o) {
      View tile = b.shared_aligned("tile", ScalarType::F32, 8 * 32, 1024);
      View bar = b.shared<std::uint64_t>("bar", 1);
      auto rank = b.let("rank", b.cluster_rank());
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 th.mbarrier_init(bar, 0, 1);
                                 th.if_(rank == 0, [&](Scope& th) {
                                   line = __LINE__ + 1;
                                   th.tma_load_multicast(tile, 0, map, 0, 0, bar, 0, 3);
                                 });
                               }}});
      lib::block_store(b, o, 32, 1.0f);
    });
  });
  const Kernel k = kb.build();
  std::vector<float> in(8 * 32, 1.0f), got(2 * 32);
  try {
    k.launch(interp(), Grid{2, 32}, in, got);
    ADD_FAILURE() << "a multicast into a block none of whose threads had started";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "synccheck") << e.what();
    EXPECT_TRUE(contains(e.what(), "block 0 thread 0 reaches shared 'tile' of block 1 by tma_load_multicast at "))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "before any thread of that block reached its allocation")) << e.what();
    ASSERT_FALSE(e.locs().empty());
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line);
  }
}

// A block that skips the cluster's barrier would leave the other waiting there for ever on a GPU:
// a cluster_sync under a branch on the block's rank is refused, naming the branch.
TEST(Cluster, ABarrierSomeBlocksOfTheClusterMaySkipIsRefused) {
  try {
    cluster_gemm({true, true, true, true});
    ADD_FAILURE() << "a cluster_sync only the block of rank 0 reaches";
  } catch (const CheckError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    const Diagnostic& d = e.diagnostics()[0];
    EXPECT_EQ(d.code, "V0213") << d.message;
    EXPECT_TRUE(contains(d.message, "every block must reach it")) << d.message;
    ASSERT_FALSE(d.notes.empty());
    EXPECT_EQ(d.notes[0].message, "the branch or loop that may differ between blocks");
    EXPECT_TRUE(contains(d.notes[0].loc.file, "test_cluster.cpp"));
  }
}

// The CUDA text declares the cluster and names each instruction; NVRTC compiles it for sm_90a.
TEST(Cluster, TheCudaTextDeclaresTheClusterAndCompiles) {
  const Kernel k = cluster_gemm();
  const Spec spec = Spec{}.with_arch(Arch::SM_90a).with_size("K", 128);
  Specialized s = specialize_for(k, spec);
  const std::string& src = s.source;
  EXPECT_TRUE(contains(src, "__cluster_dims__(2, 1, 1)")) << src;
  EXPECT_TRUE(contains(src, "barrier.cluster.arrive.release.aligned;")) << src;
  EXPECT_TRUE(contains(src, "barrier.cluster.wait.acquire.aligned;")) << src;
  EXPECT_TRUE(contains(src, ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;")) << src;
  EXPECT_TRUE(contains(src, "mapa.shared::cluster.u32 vt_remote, %0, %1;")) << src;
  EXPECT_TRUE(contains(src, "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [vt_remote];")) << src;
  EXPECT_TRUE(contains(src, "fence.mbarrier_init.release.cluster;")) << src;
  EXPECT_TRUE(contains(src, "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64")) << src;
  REQUIRE_NVRTC();
  Compiled c = compile(k, spec);
  EXPECT_FALSE(c.cubin.empty());
  EXPECT_EQ(c.log, "");
}

// The bf16 GEMM's rung 2 in clusters of two blocks, one tile above the other, each loading half of
// the Bt tile they share into both: bit-exact where the pairs are in one group of rows and in
// several, with the slots wrapped, and with a wgmma group in flight. Lane 0 of each consumer warp
// frees a slot in both blocks once its lanes' wgmma have read it (sync_warp): under every order the
// interpreter finds no read of a slot reloaded before it.
TEST(Cluster, TheWgmmaGemmsBlockPairsShareEachBtTile) {
  struct Run {
    int M, N, K, in_flight;
    ThreadOrder order;
  };
  // Under a sanitizer the one with a group in flight (the interpreter's memory is what it checks).
  const std::vector<Run> runs = test_support::sweep_sizes(std::vector<Run>{{256, 256, 320, 1, ThreadOrder::Forward},
                                                                           {256, 512, 256, 0, ThreadOrder::Reverse},
                                                                           {512, 256, 320, 0, ThreadOrder::Random}});
  for (const Run& r : runs) {
    SCOPED_TRACE(std::to_string(r.M) + " x " + std::to_string(r.N) + " x " + std::to_string(r.K) + ", in flight " +
                 std::to_string(r.in_flight));
    const Kernel k = examples::wgmma_gemm_cluster("gemm_cluster", 16, r.in_flight);
    Gemm g = gemm_inputs(r.K, r.M, r.N);
    std::vector<float> C(static_cast<std::size_t>(r.M * r.N), -1.0f);
    k.launch(interp(r.order), Grid{r.M / 128 * (r.N / 256), 384}, r.M, r.N, r.K, g.A, g.Bt, C);
    EXPECT_EQ(C, g.want);
  }
  // Tile rows that do not pair up are refused at launch (its requirement), and so is an odd group.
  const Kernel k = examples::wgmma_gemm_cluster("gemm_cluster", 16);
  Gemm g = gemm_inputs(64, 128, 256);
  std::vector<float> C(128 * 256);
  EXPECT_THROW(k.launch(interp(), Grid{2, 384}, 128, 256, 64, g.A, g.Bt, C), LaunchError);
  EXPECT_THROW(examples::wgmma_gemm_cluster("odd", 3), std::invalid_argument);
}

// Rung 3 in clusters: a persistent kernel whose blocks 2c and 2c + 1 take tiles b, b + G, ... (G
// even), one above the other each time, with one pipeline running on across them in both blocks.
// Bit-exact where each block takes two tiles, with and without a wgmma group in flight.
TEST(Cluster, APersistentGemmInClustersRunsItsPipelinesOnAcrossPairsOfTiles) {
  struct Run {
    int M, N, K, blocks, in_flight;
  };
  const std::vector<Run> runs =
      test_support::sweep_sizes(std::vector<Run>{{512, 512, 128, 4, 1}, {256, 512, 192, 2, 0}});
  for (const Run& r : runs) {
    SCOPED_TRACE(std::to_string(r.M) + " x " + std::to_string(r.N) + " x " + std::to_string(r.K) + " on " +
                 std::to_string(r.blocks) + " blocks, in flight " + std::to_string(r.in_flight));
    const Kernel k = examples::wgmma_gemm_persistent("persistent_cluster", 16, r.in_flight, 2);
    Gemm g = gemm_inputs(r.K, r.M, r.N);
    std::vector<float> C(static_cast<std::size_t>(r.M * r.N), -1.0f);
    k.launch(interp(ThreadOrder::Random), Grid{r.blocks, 384}, r.M, r.N, r.K, g.A, g.Bt, C);
    EXPECT_EQ(C, g.want);
  }
  EXPECT_THROW(examples::wgmma_gemm_persistent("three", 16, 0, 3), std::invalid_argument);
}

// For sm_90a: no spill, no barrier of Vantage's (rung 2's one, after the barriers are made, is the
// cluster_sync there), every access proven but the persistent rung's stores of C (as without
// clusters), and in the SASS the multicast loads, the cluster's barrier and the remote arrivals.
TEST(Cluster, TheWgmmaGemmsInClustersCompileWithTheirMulticastLoads) {
  REQUIRE_NVRTC();
  const Spec spec = Spec{}.with_arch(Arch::SM_90a).with_size("M", 4096).with_size("N", 4096).with_size("K", 4096);
  for (bool persistent : {false, true}) {
    SCOPED_TRACE(persistent ? "persistent" : "rung 2");
    Compiled c = compile(persistent ? examples::wgmma_gemm_persistent("persistent_cluster", 16, 1, 2)
                                    : examples::wgmma_gemm_cluster("gemm_cluster", 16),
                         examples::with_ptxas_report(spec));
    EXPECT_EQ(c.spec.checks.size(), persistent ? 256u : 0u);
    EXPECT_EQ(c.spec.barriers, 0);
    const examples::PtxasReport report = examples::ptxas_report(c.log);
    EXPECT_EQ(report.rest, "");
    // The kernel's own spills: the error path's `vt_fail` saves registers in a function of its own.
    EXPECT_EQ(report.spills, 0) << "the accumulators spill";
    ASSERT_FALSE(c.cubin.empty());
    if (examples::find_cuobjdump().empty()) continue;
    const std::string sass = examples::sass(c.cubin);
    for (const char* op : {"UTMALDG.2D.MULTICAST", "UCGABAR_ARV", "UCGABAR_WAIT", "SYNCS.ARRIVE.TRANS64.RED",
                           "HGMMA.64x256x16.F32.BF16"})
      EXPECT_TRUE(contains(sass, op)) << op << " is not in the SASS";
  }
}

constexpr const char* kThisFile = "tests/test_cluster.cpp";

/// A kernel of `cluster` blocks per cluster (1: none) over `out` whose block code is `body`.
Kernel cluster_kernel(int cluster, const std::function<void(Scope&, View, View)>& body) {
  KernelBuilder k("cluster_kernel");
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(128);
  if (cluster) k.cluster(cluster);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View out_b) {
      View bars = b.shared<std::uint64_t>("bars", 2);
      body(b, bars, out_b);
      lib::block_store(b, out_b, 128, 1.0f);
    });
  });
  return k.build();
}

/// Whether building (and, with `arch`, specializing for it) is refused with `code` at `line`, saying
/// `words`.
::testing::AssertionResult refused(const std::function<Kernel()>& make, const std::string& code, const int& line,
                                   const std::string& words, std::optional<Arch> arch = Arch::SM_90a) {
  try {
    Kernel k = make();
    if (arch) specialize_for(k, Spec{}.with_arch(*arch).with_blocks(4));
  } catch (const CheckError& e) {
    auto r = testing::has_diag(e, code, line, kThisFile);
    if (!r) return r;
    for (const auto& d : e.diagnostics())
      if (d.code == code && contains(d.message, words)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "no " << code << " saying '" << words << "'";
  }
  return ::testing::AssertionFailure() << "accepted; expected " << code << " at line " << line;
}

// Each rule of the cluster instructions has a program it refuses, at the line that breaks it.
TEST(Cluster, EachRuleRefusesAProgramAtItsLine) {
  int line = 0;
  // The cluster instructions need a kernel of clusters.
  auto make1 = [&] {
    return cluster_kernel(0, [&](Scope& b, View, View) {
      line = __LINE__ + 1;
      b.cluster_sync();
    });
  };
  EXPECT_TRUE(refused(make1, "V0917", line, "cluster_sync needs a kernel of clusters"));
  auto make2 = [&] {
    return cluster_kernel(0, [&](Scope& b, View bars, View) {
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 line = __LINE__ + 1;
                                 th.mbarrier_arrive_cluster(bars, 0, 1);
                               }}});
    });
  };
  EXPECT_TRUE(refused(make2, "V0917", line, "mbarrier_arrive_cluster needs a kernel of clusters"));
  auto make3 = [&] {
    return cluster_kernel(0, [&](Scope& b, View, View) {
      line = __LINE__ + 1;
      b.let("rank", b.cluster_rank());
    });
  };
  EXPECT_TRUE(refused(make3, "V0917", line, "cluster_rank needs a kernel of clusters"));
  // cluster_sync where some blocks of a cluster may not be: a loop whose bound varies by block, a
  // branch of a split of blocks. A loop of the same bound everywhere is the same for all blocks.
  auto diverging_loop = [&] {
    return cluster_kernel(2, [&](Scope& b, View, View) {
      auto n = b.let("n", b.cluster_rank() + 1);
      b.for_("i", 0, n, [&](Scope& b, Expr) {
        line = __LINE__ + 1;
        b.cluster_sync();
      });
    });
  };
  EXPECT_TRUE(refused(diverging_loop, "V0213", line, "may differ between the blocks of a cluster"));
  auto block_split = [&] {
    KernelBuilder k("block_split");
    auto out = k.param<GlobalPtr<float>>("out");
    k.block_threads(128);
    k.cluster(2);
    k.body([&](Scope& g) {
      g.split(Level::Block, {{1,
                              [&](Scope& b) {
                                line = __LINE__ + 1;
                                b.cluster_sync();
                              }},
                             {1, [&](Scope&) {}}});
      lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View o) { lib::block_store(b, o, 128, 1.0f); });
    });
    return k.build();
  };
  EXPECT_TRUE(refused(block_split, "V0213", line, "may differ between the blocks of a cluster"));
  EXPECT_NO_THROW(
      cluster_kernel(2, [](Scope& b, View, View) { b.for_("i", 0, 2, [&](Scope& b, Expr) { b.cluster_sync(); }); }));
  // A cluster has 1 to 8 blocks.
  auto make4 = [&] {
    KernelBuilder k("too_big");
    auto out = k.param<GlobalPtr<float>>("out", extent(128));
    k.block_threads(128);
    line = __LINE__ + 1;
    k.cluster(16);
    k.body([&](Scope& g) {
      lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View o) { lib::block_store(b, o, 128, 1.0f); });
    });
    return k.build();
  };
  EXPECT_TRUE(refused(make4, "V0917", line, "a cluster has 1 to 8 blocks"));
  // cluster_sync is every thread of the block's: not a warp's.
  auto make5 = [&] {
    return cluster_kernel(2, [&](Scope& b, View, View) {
      b.group(warp(), [&](Scope& w) {
        line = __LINE__ + 1;
        w.cluster_sync();
      });
    });
  };
  EXPECT_TRUE(refused(make5, "V0501", line, "cluster_sync needs exactly block(1)"));
  // A rank the prover cannot bound below the cluster size, and a multicast mask past the cluster.
  auto make6 = [&] {
    return cluster_kernel(2, [&](Scope& b, View bars, View) {
      auto r = b.let("r", b.cluster_rank() + 1);
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 th.mbarrier_init(bars, 0, 1);
                                 line = __LINE__ + 1;
                                 th.mbarrier_arrive_cluster(bars, 0, r);
                               }}});
    });
  };
  EXPECT_TRUE(refused(make6, "V1009", line, "cannot prove the block rank"));
  auto make7 = [&] {
    KernelBuilder k("mask");
    auto src = k.param<GlobalPtr<const float>>("src", extent(8 * 32));
    auto out = k.param<GlobalPtr<float>>("out", extent(128));
    k.block_threads(128);
    k.cluster(2);
    TensorMap map = k.tensor_map("src_map", src, 8, 32, 8, 32);
    k.body([&](Scope& g) {
      lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View o) {
        View tile = b.shared_aligned("tile", ScalarType::F32, 8 * 32, 1024);
        View bar = b.shared<std::uint64_t>("bar", 1);
        b.split(Level::Thread, {{1, [&](Scope& th) {
                                   th.mbarrier_init(bar, 0, 1);
                                   line = __LINE__ + 1;
                                   th.tma_load_multicast(tile, 0, map, 0, 0, bar, 0, 7);
                                 }}});
        lib::block_store(b, o, 128, 1.0f);
      });
    });
    return k.build();
  };
  EXPECT_TRUE(refused(make7, "V1009", line, "cannot prove the multicast mask 7 within 1..3"));
  // Clusters are sm_90's.
  auto make8 = [&] {
    KernelBuilder k("old_gpu");
    auto out = k.param<GlobalPtr<float>>("out", extent(128));
    k.block_threads(128);
    line = __LINE__ + 1;
    k.cluster(2);
    k.body([&](Scope& g) {
      lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View o) { lib::block_store(b, o, 128, 1.0f); });
    });
    return k.build();
  };
  EXPECT_TRUE(refused(make8, "V1008", line,
                      "clusters of 2 blocks need thread-block clusters, which sm_80 does not have", Arch::SM_80));
}

// A grid that is not a multiple of the cluster is refused at specialization, and at launch where
// the grid is known only then, naming the cluster.
TEST(Cluster, TheGridIsAMultipleOfTheCluster) {
  const Kernel k = cluster_kernel(2, [](Scope& b, View, View) { b.cluster_sync(); });
  try {
    specialize_for(k, Spec{}.with_arch(Arch::SM_90a).with_blocks(3));
    ADD_FAILURE() << "3 blocks in clusters of 2";
  } catch (const CheckError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    EXPECT_EQ(e.diagnostics()[0].code, "V0901");
    EXPECT_TRUE(contains(e.diagnostics()[0].message, "not a multiple of 2 (clusters of 2 blocks)"))
        << e.diagnostics()[0].message;
  }
  std::vector<float> out(3 * 128);
  EXPECT_THROW(k.launch(interp(), Grid{3, 128}, out), LaunchError);
  std::vector<float> even(4 * 128, 0.0f);
  k.launch(interp(), Grid{4, 128}, even);
  for (float v : even) EXPECT_EQ(v, 1.0f);
}

// A cluster_sync is a barrier of the block's threads too: threads that store a shared array and read
// each other's elements after one need no barrier of Vantage's between (one before this change),
// and the interpreter finds no race there.
/// Threads store a shared array, meet at a cluster_sync, and read each other's elements.
Kernel exchange_kernel() {
  KernelBuilder kb("exchange");
  auto out = kb.param<GlobalPtr<float>>("out");
  kb.block_threads(128);
  kb.cluster(2);
  kb.body([&](Scope& g) {
    lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View out_b) {
      View s = b.shared<float>("s", 128);
      auto t = b.let("t", b.id(thread(1)));
      lib::block_store(b, s, 128, cast<float>(t));
      b.cluster_sync();
      lib::block_store(b, out_b, 128, s[127 - t]);
    });
  });
  return kb.build();
}

TEST(Cluster, AClusterSyncIsTheBlocksBarrierToo) {
  const Kernel k = exchange_kernel();
  EXPECT_EQ(specialize_for(k, Spec{}.with_arch(Arch::SM_90a)).barriers, 0);
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
    std::vector<float> got(2 * 128, -1.0f);
    k.launch(interp(order), Grid{2, 128}, got);
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<float>(127 - i % 128)) << i;
  }
}

// V0213 keeps a kernel the checker accepts from skipping a cluster_sync in some blocks; the
// interpreter checks it again as it runs. Lowered IR whose cluster_sync only even blocks reach (no
// builder program can say that) stops with synccheck, naming a thread of the block that skipped it.
TEST(Cluster, TheInterpreterFindsAClusterSyncOneBlockSkips) {
  lower::Lowered l = pipeline::lower_for(exchange_kernel(), Spec{}.with_arch(Arch::SM_90a)).lowered;
  struct OnlyEvenBlocks : ir::IRMutator {
    int wrapped = 0;
    using IRMutator::mutate;
    ir::StmtPtr mutate(const ir::StmtPtr& s) override {
      using namespace ir;
      const auto* b = s && s->kind == StmtKind::Barrier ? static_cast<const ir::Barrier*>(s.get()) : nullptr;
      if (!b || b->how != BarrierKind::Cluster) return IRMutator::mutate(s);
      ++wrapped;
      auto bid = make<Builtin>(ScalarType::I32, BuiltinKind::BlockInGrid, s->loc);
      auto even =
          make<Binary>(ScalarType::Bool, BinOp::Eq,
                       make<Binary>(ScalarType::I32, BinOp::Mod, bid, int_literal(ScalarType::I32, 2, s->loc), s->loc),
                       int_literal(ScalarType::I32, 0, s->loc), s->loc);
      return make<If>(even, s, nullptr, s->loc);
    }
  } only_even;
  l.kernel.body = only_even.mutate(l.kernel.body);
  ASSERT_EQ(only_even.wrapped, 1);
  std::vector<float> out(2 * 128, -1.0f);
  try {
    interp::run(l, 2, {interp::Arg::buffer(out.data(), 2 * 128)}, {});
    ADD_FAILURE() << "a cluster_sync block 1 skips";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "synccheck") << e.what();
    EXPECT_TRUE(contains(e.what(), "cluster_sync (over the 2 blocks of the cluster) at ")) << e.what();
    EXPECT_TRUE(contains(e.what(), "is reached by some of the threads it covers but not by block 1 thread 0"))
        << e.what();
  }
}

// The CPU backend runs each block alone: it refuses cluster_sync by name, at its line.
TEST(Cluster, TheCpuBackendRefusesTheClustersBarrier) {
  if (!Device::cpu_available()) GTEST_SKIP() << "no CPU backend";
  int line = 0;
  const Kernel k = cluster_kernel(2, [&](Scope& b, View, View) {
    line = __LINE__ + 1;
    b.cluster_sync();
  });
  std::vector<float> out(2 * 128);
  try {
    k.launch(Device::cpu(1), Grid{2, 128}, out);
    ADD_FAILURE() << "cluster_sync ran on the CPU backend";
  } catch (const UnsupportedOnDevice& e) {
    EXPECT_TRUE(contains(e.what(), "cluster_sync cannot run on the CPU backend")) << e.what();
    ASSERT_FALSE(e.locs().empty());
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line);
  }
}

}  // namespace
}  // namespace vantage
