// Specialization, synchronization, CUDA generation and NVRTC: what a user sees when a checked kernel
// becomes machine code. Tests that need NVRTC or cuobjdump say so and skip when the host lacks them;
// CI installs both.
#include <gtest/gtest.h>

#include <limits>
#include <regex>

#include "kernels/paper_kernels.hpp"
#include "kernels/stages.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using test_support::count;

int barriers_in(const std::string& source) {
  return count(source, "__syncthreads()") + count(source, "__syncwarp(") + count(source, "bar.sync");
}

TEST(Codegen, EveryExampleCompilesForSm80AndSm90WithoutWarnings) {
  REQUIRE_NVRTC();
  for (Arch arch : {Arch::SM_80, Arch::SM_90}) {
    for (const auto& ex : examples::all()) {
      if (ex.arch) {  // the wgmma GEMM: its own target only (Compile.TheWgmmaGemm... for the others)
        Compiled c = compile(ex.build(), ex.spec());
        EXPECT_FALSE(c.cubin.empty()) << ex.name;
        EXPECT_EQ(c.log, "") << ex.name << " " << arch_name(*ex.arch) << ": NVRTC warned";
        continue;
      }
      Compiled c = compile(ex.build(), ex.spec(Spec{}.with_arch(arch)));
      EXPECT_FALSE(c.cubin.empty()) << ex.name << " " << arch_name(arch);
      EXPECT_EQ(c.log, "") << ex.name << " " << arch_name(arch) << ": NVRTC warned";
      EXPECT_EQ(c.options[1], std::string("--gpu-architecture=") + arch_name(arch));
    }
  }
}

// What a careful CUDA programmer writes for each example, barrier by barrier.
TEST(Codegen, BarrierCountsMatchTheHandWrittenMinimum) {
  const std::map<std::string, int> kMinimum = {
      {"saxpy", 0},            // independent elements
      {"saxpy_vec", 0},        // the same, four a thread
      {"fp8_dequant", 0},      // the same
      {"gelu", 0},             // the same
      {"warp_mma", 0},         // each thread stores its own fragment
      {"mma_tf32_naive", 3},   // before overwriting tiles, before the mma, before the write-back
      {"block_load_copy", 1},  // between staging the tile and BlockLoad
      {"block_reduce", 1},     // between the warps publishing their sums and every warp reading them
      {"sgemm_naive", 0},
      {"sgemm_coalesced", 0},
      {"sgemm_smem", 2},   // per K step: before overwriting the tiles, before reading them
      {"sgemm_reg1d", 2},  // the same, with 8 rows of C per thread
      {"sgemm_reg2d", 2},
      {"sgemm_vec", 2},
      {"sgemm_warptile", 2},  // the same two per K step
      // One per K step: after each thread waited for its copies of the tile, before the multiply
      // (which also frees the other slot for the next tile's copies); the two slots' steps are
      // written once each, and one more before the loop waits for nothing the tiles need.
      {"sgemm_pipelined", 2},
      {"vec_copy", 0},
      {"mma_tf32", 2},       // per K step, as sgemm_smem
      {"igemm_mma", 2},      // the same: mma_tf32 on bytes
      {"scan_lookback", 2},  // after the warps' totals are published, after the first thread's look-back
      // The same two, and two warp barriers around the first warp's look-back: its lanes' reads of
      // other blocks' words after lane 0 published the block's own, and lane 0's last word after
      // them (the planner cannot tell the words apart; the twin has the same two).
      {"scan_tiled", 4},
      // scan_tiled's four (lib::device_inclusive_scan is that kernel), and one warp barrier after the
      // first lane counted the tile finished, before the first warp of the last tile zeroes the words.
      {"device_scan", 5},
      // The warps' sums of each tile, and the last tile's sums of the tiles' totals it waited for
      // (no look-back: the other tiles publish and end).
      {"device_sum", 2},
      // device_scan's five, and one before the threads read the tile's kept items staged in shared
      // memory to write them out coalesced.
      {"compact", 6},
      // After the warps' counts are zeroed, after the warps have counted their keys by digit (before
      // the counts become the warps' places), the scan of the digits' counts over the block (its
      // warps' totals), before the keys read their places in the tile sorted by digit, and before
      // the threads read that tile back (a thread's key beside its neighbour's in keys_out).
      {"radix_sort", 5},
      // After the bins in shared memory are zeroed, and after the block's counts, before each
      // thread adds its bins' counts to the global ones.
      {"byte_histogram", 2},
      {"transpose", 1},
      {"transpose_padded", 1},  // between writing the tile and reading its columns
      // As by hand: the tile's elements past the matrix are never read, so the copy writes no zeros
      // there (TileCopy::zeros off), and no plain store waits for the copies.
      {"transpose_async", 1},
      {"stencil", 1},  // between staging the tile and its halo and reading the neighbours
      {"softmax", 2},  // one per block reduction: the warps' maxima, then their sums
      // After one thread initialises the mbarriers; the pipeline itself runs on mbarriers.
      {"gemm_wgmma_bf16", 1},
      {"gemm_wgmma_bf16_wide", 1},
      {"igemm_wgmma", 1},  // the wide one on bytes
  };
  ASSERT_EQ(kMinimum.size(), examples::all().size()) << "every example needs its hand-written count";
  for (const auto& ex : examples::all()) {
    Specialized s = specialize_for(ex.build(), ex.spec());
    EXPECT_EQ(s.barriers, kMinimum.at(ex.name)) << ex.name << "\n" << s.source;
    EXPECT_EQ(barriers_in(s.source), kMinimum.at(ex.name)) << ex.name;
  }
}

TEST(Codegen, LaunchBoundsSharedMemoryAndEntryName) {
  Specialized s = specialize_for(examples::sgemm_smem(), Spec{});
  EXPECT_NE(s.source.find("__launch_bounds__(1024)"), std::string::npos);
  EXPECT_NE(s.source.find("__shared__ __align__(16) unsigned char vt_smem[8192];"), std::string::npos);
  EXPECT_EQ(s.static_shared_bytes, 8192);
  EXPECT_TRUE(std::regex_match(s.entry, std::regex("vt_sgemm_smem_[0-9a-f]{8}")));
  EXPECT_NE(s.source.find("extern \"C\" __global__"), std::string::npos);
  EXPECT_EQ(s.source.find("#include"), std::string::npos) << "no toolkit header for a float kernel";
}

TEST(Codegen, LineDirectivesPointAtTheBuilder) {
  Specialized s = specialize_for(examples::saxpy(), Spec{});
  EXPECT_NE(s.source.find("#line "), std::string::npos);
  EXPECT_NE(s.source.find("paper_kernels.cpp\""), std::string::npos);
}

TEST(Codegen, VectorCopyRecordsTheAlignmentItNeeds) {
  Specialized s = specialize_for(examples::vec_copy(), Spec{});
  ASSERT_EQ(s.params.size(), 3u);
  EXPECT_EQ(s.params[1].name, "in");
  EXPECT_EQ(s.params[1].alignment, 16);
  EXPECT_EQ(s.params[2].alignment, 16);
  EXPECT_EQ(s.params[0].alignment, 0);
  EXPECT_EQ(s.params[1].extent, "n");
}

TEST(Codegen, MisalignedCopyStaysScalar) {
  KernelBuilder k("offset_copy");
  auto in = k.param<GlobalPtr<const float>>("in");
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return gid * 4 + i + 1; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) { th.for_("i", 0, 4, [&](Scope&, Expr i) { o[i] = in[gid * 4 + i]; }); });
        });
  });
  Specialized s = specialize_for(k.build(), Spec{});
  EXPECT_EQ(s.source.find("float4"), std::string::npos) << "out + 1 is not 16-byte aligned";
  EXPECT_NE(s.source.find("#pragma unroll"), std::string::npos);
}

// ------------------------------------------------------------------ synchronization primitives
/// Each unit's threads store their rank, then read the next rank's value: a dependency inside the
/// unit only, which the cheapest barrier over the unit must order.
Kernel neighbours(Perspective unit, int threads) {
  KernelBuilder k("neighbours");
  k.block_threads(threads);
  int n = static_cast<int>(unit.count.coeff);
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      auto s = b.shared<float>("s", threads);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          s, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View s_t) {
            b.group(unit, [&](Scope& u) {
              auto r = u.let("r", u.id(thread(1)));
              u.group(thread(1), [&](Scope&) { s_t[0] = cast<float>(r); });
              u.let("next", s_t[(r + 1) % n - r]);
            });
          });
    });
  });
  return k.build();
}

TEST(Sync, NeighbourInAWarpGetsSyncwarp) {
  std::string src = specialize_for(neighbours(warp(), 128), Spec{}).source;
  EXPECT_EQ(count(src, "__syncwarp();"), 1) << src;
  EXPECT_EQ(count(src, "__syncthreads"), 0);
}

TEST(Sync, WarpAlignedGroupGetsANamedBarrierPerGroup) {
  std::string src = specialize_for(neighbours(thread(64), 256), Spec{}).source;
  EXPECT_EQ(count(src, "bar.sync %0, %1;\" :: \"r\"(1u + threadIdx.x / 64u), \"n\"(64)"), 1) << src;
}

TEST(Sync, WholeBlockGetsSyncthreads) {
  std::string src = specialize_for(neighbours(thread(128), 128), Spec{}).source;
  EXPECT_EQ(count(src, "__syncthreads();"), 1) << src;
}

TEST(Sync, SubWarpGroupGetsAMaskedSyncwarp) {
  std::string src = specialize_for(neighbours(thread(8), 64), Spec{}).source;
  EXPECT_EQ(count(src, "__syncwarp(((1u << 8) - 1u) << (threadIdx.x & 31u & ~7u));"), 1) << src;
}

TEST(Sync, AsyncCopyIsWaitedForBeforeTheBarrier) {
  KernelBuilder k("cp");
  k.block_threads(128);
  auto x = k.param<GlobalPtr<const float>>("x");
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      auto s = b.shared<float>("s", 512);
      auto t = b.let("t", b.id(thread(1)));
      b.async(s, [&](Scope& b, View s_async) {
        b.partition(
            s_async, thread(1), [&](Expr i) { return t * 4 + i; },
            [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope& th) { th.cp_async(s_t, 0, x, t * 4, 16); }); });
      });
      b.let("first", s[(t + 4) % 512]);
    });
  });
  std::string src = specialize_for(k.build(), Spec{}).source;
  auto wait = src.find("cp.async.wait_all");
  auto bar = src.find("__syncthreads();");
  ASSERT_NE(wait, std::string::npos) << src;
  ASSERT_NE(bar, std::string::npos);
  EXPECT_LT(wait, bar);
  EXPECT_NE(src.find("cp.async.cg.shared.global [%0], [%1], 16;"), std::string::npos);
}

/// A one-block launch of `k` (`args`, then `out`: one T per thread) under each thread order on the
/// interpreter with every check on: its `out`, which must not differ between the orders.
template <class T, class... Args>
std::vector<T> run_each_order(const Kernel& k, int threads, const Args&... args) {
  std::vector<T> first;
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
    std::vector<T> out(static_cast<std::size_t>(threads), T{});
    k.launch(Device::interpreter({order, 1, true}), Grid{1, threads}, args..., out);
    if (first.empty())
      first = out;
    else
      EXPECT_EQ(out, first) << k.name() << ": the thread orders disagree";
  }
  return first;
}

// An atomic after plain stores to the same shared array: the stores must be complete first (thread
// 0's store of s[0] and the others' atomics on it are a race without a barrier).
TEST(Sync, AnAtomicAfterStoresToItsArrayWaitsForThem) {
  KernelBuilder k("store_then_atomic");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto s = b.shared<int>("s", 64);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          s, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = t; }); });
      b.group(thread(1), [&](Scope& th) { th.atomic(AtomicOp::Add, s, 0, 1); });
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = s[0] + s[t]; }); });
    });
  });
  Kernel kernel = k.build();
  std::vector<int> got = run_each_order<int>(kernel, 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[static_cast<std::size_t>(t)], 64 + (t == 0 ? 64 : t)) << t;
  EXPECT_EQ(count(specialize_for(kernel, Spec{}).source, "__syncthreads();"), 2);
}

// An async copy into elements other threads just stored plainly: the stores must be complete before
// the copy lands (a write after a write, where the copy reads nothing of the array).
TEST(Sync, AnAsyncCopyOverPlainStoresWaitsForThem) {
  KernelBuilder k("store_then_copy");
  auto x = k.param<GlobalPtr<const float>>("x", extent(256));
  auto out = k.param<GlobalPtr<float>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto s = b.shared<float>("s", 256);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          s, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = -1.0f; }); });
      b.async(s, [&](Scope& b, View s_async) {
        b.partition(
            s_async, thread(1), [&](Expr i) { return t * 4 + i; },
            [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope& th) { th.cp_async(s_t, 0, x, t * 4, 16); }); });
      });
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = s[t]; }); });
    });
  });
  Kernel kernel = k.build();
  std::vector<float> xs(256);
  for (int i = 0; i < 256; ++i) xs[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f;
  std::vector<float> got = run_each_order<float>(kernel, 64, xs);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[static_cast<std::size_t>(t)], static_cast<float>(t) * 0.5f) << t;
}

TEST(Sync, GridWideDependencyIsRejected) {
  KernelBuilder k("grid_dep");
  k.block_threads(64);
  auto y = k.param<GlobalPtr<float>>("y");
  int line = 0;
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        y, thread(1), [&](Expr i) { return gid + i; },
        [&](Scope& g, View y_t) { g.group(thread(1), [&](Scope&) { y_t[0] = 1.0f; }); });
    line = __LINE__ + 1;
    g.let("other", y[gid + 64]);  // another block's element: no barrier can order that
  });
  Kernel kernel = k.build();
  try {
    specialize_for(kernel, Spec{});
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u) << render_all(e.diagnostics());
    EXPECT_EQ(e.diagnostics()[0].code, "V1001");
    EXPECT_EQ(static_cast<int>(e.diagnostics()[0].loc.line), line);
  }
}

// ---------------------------------------------------------------- shares that meet (V1011)
/// One block of 64 threads with a shared `s` of 64 ints: every thread stores its own element, then
/// `writes` stores through a partition whose index function is `share` (of the thread, the local
/// index and the kernel's parameter `n`), then every thread waits at a barrier s[0] times and
/// stores s[t] to `out`. `line` receives the partition's line.
Kernel shares_then_loop(const std::function<Expr(Expr t, Expr i, Expr n)>& share,
                        const std::function<void(Scope&, View mine, Expr t)>& writes, int* line) {
  KernelBuilder k("shares_then_loop");
  auto n = k.param<int>("n");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto s = b.shared<int>("s", 64);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          s, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = t % 3; }); });
      *line = __LINE__ + 1;
      b.partition(
          s, thread(1), [&](Expr i) { return share(t, i, n); },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope& th) { writes(th, mine, t); }); });
      b.for_("r", 0, s[0] + 1, [&](Scope& b, Expr) { b.sync_threads(); });
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = s[t]; }); });
    });
  });
  return k.build();
}

/// The diagnostics of specializing `k`, or none.
std::vector<Diagnostic> specialization_errors(const Kernel& k, const Spec& spec = Spec{}) {
  try {
    specialize_for(k, spec);
  } catch (const CheckError& e) {
    return e.diagnostics();
  }
  return {};
}

// Issue 33: every thread's share is element 0 (the index function forgets the thread), the threads
// all store there, and the loop around a barrier is bounded by what they stored. On a GPU the
// threads can read different values and wait at barriers the others never reach. A partition is
// only a partition if its shares are apart where it is written: V1011 at the partition's line,
// naming the element and the two threads, with the write.
TEST(Sync, APartitionThatHandsOneElementToEveryThreadIsRejected) {
  int line = 0;
  const int write_line = __LINE__ + 1;
  auto writes = [](Scope&, View mine, Expr t) { mine[0] = t + 1; };
  Kernel k = shares_then_loop([](Expr, Expr i, Expr) { return i; }, writes, &line);
  auto errors = specialization_errors(k);
  ASSERT_EQ(errors.size(), 1u) << render_all(errors);
  EXPECT_EQ(errors[0].code, "V1011");
  EXPECT_EQ(static_cast<int>(errors[0].loc.line), line);
  EXPECT_NE(errors[0].message.find("gives element 0 to two units (0 at [0], 1 at [0])"), std::string::npos)
      << errors[0].message;
  ASSERT_EQ(errors[0].notes.size(), 1u);
  EXPECT_EQ(errors[0].notes[0].message, "both write it here");
  EXPECT_EQ(static_cast<int>(errors[0].notes[0].loc.line), write_line);
}

// Shares that meet only in some elements are found too, with the two threads named: pairs of threads
// (t / 2), a stride shorter than what each thread writes (t * 2 with four elements each, in a loop:
// thread 31 wraps onto element 0), the lanes of two warps (t % 32), and a share moved by a kernel
// parameter, which moves every share alike and is left out of the comparison.
TEST(Sync, SharesThatMeetInSomeElementsAreRejected) {
  int line = 0;
  struct Case {
    std::function<Expr(Expr, Expr, Expr)> share;
    std::function<void(Scope&, View, Expr)> writes;
    const char* says;
  };
  std::vector<Case> cases{
      {[](Expr t, Expr i, Expr) { return t / 2 + i; }, [](Scope&, View m, Expr t) { m[0] = t; },
       "gives element 0 to two units (0 at [0], 1 at [0])"},
      {[](Expr t, Expr i, Expr) { return (t * 2 + i) % 64; },
       [](Scope& th, View m, Expr t) { th.for_("j", 0, 4, [&](Scope&, Expr j) { m[j] = t + j; }); },
       "gives element 0 to two units (0 at [0], 31 at [2])"},
      {[](Expr t, Expr i, Expr) { return (t % 32) + i; }, [](Scope&, View m, Expr t) { m[0] = t; },
       "gives element 0 to two units (0 at [0], 32 at [0])"},
      // A parameter moves every share alike: it is left out, and the element is 0 + 0 (n's part out).
      {[](Expr t, Expr i, Expr n) { return (n & 7) + t / 4 + i; }, [](Scope&, View m, Expr t) { m[0] = t; },
       "gives element 0 to two units (0 at [0], 1 at [0])"},
  };
  for (const auto& c : cases) {
    auto errors = specialization_errors(shares_then_loop(c.share, c.writes, &line));
    ASSERT_EQ(errors.size(), 1u) << render_all(errors);
    EXPECT_EQ(errors[0].code, "V1011");
    EXPECT_EQ(static_cast<int>(errors[0].loc.line), line);
    EXPECT_NE(errors[0].message.find(c.says), std::string::npos) << errors[0].message;
  }
}

// What is not found: shares that are apart (a rotation, a reflection, a stride as long as what each
// thread writes, elements T apart), and writes that may not happen or whose element is not known
// before the kernel runs (under a branch, at a loaded index). Those build; a race through the last
// two is the interpreter's racecheck's to report, and the sync pass keeps the barriers it needs.
TEST(Sync, SharesThatAreApartOrNotCertainBuild) {
  int line = 0;
  struct Case {
    std::function<Expr(Expr, Expr, Expr)> share;
    std::function<void(Scope&, View, Expr)> writes;
  };
  std::vector<Case> cases{
      {[](Expr t, Expr i, Expr) { return (t + 5) % 64 + i; }, [](Scope&, View m, Expr t) { m[0] = t; }},
      {[](Expr t, Expr i, Expr) { return 63 - t + i; }, [](Scope&, View m, Expr t) { m[0] = t; }},
      {[](Expr t, Expr i, Expr) { return (t ^ 3) + i; }, [](Scope&, View m, Expr t) { m[0] = t; }},
      {[](Expr t, Expr i, Expr n) { return (t + (n & 63)) % 64 + i; }, [](Scope&, View m, Expr t) { m[0] = t; }},
      {[](Expr t, Expr i, Expr) { return (t / 2) + i; },
       [](Scope& th, View m, Expr t) { th.if_(t % 2 == 0, [&](Scope&) { m[0] = t; }); }},
  };
  for (const auto& c : cases) {
    Kernel k = shares_then_loop(c.share, c.writes, &line);
    auto errors = specialization_errors(k);
    EXPECT_TRUE(errors.empty()) << render_all(errors);
    std::vector<int> got = run_each_order<int>(k, 64, 5);
    EXPECT_EQ(got.size(), 64u);
  }
}

// A grid's partition whose blocks' shares meet is right for one block only: the kernel builds with
// a guard that refuses a launch of more, and a Spec of two blocks is rejected.
TEST(Sync, AGridPartitionWhoseBlocksSharesMeetIsGuardedToOneBlock) {
  KernelBuilder k("one_share_per_grid");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  const int line = __LINE__ + 2;
  k.body([&](Scope& g) {
    g.partition(
        out, block(1), [&](Expr i) { return i; },
        [&](Scope& g, View ob) {
          g.group(block(1), [&](Scope& b) {
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                ob, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = t * 2; }); });
          });
        });
  });
  Kernel kernel = k.build();
  Specialized s = specialize_for(kernel, Spec{});
  bool guarded = false;
  for (const auto& g : s.guards)
    if (g.kind == Guard::Kind::BlocksAtMost && g.value == 1) {
      guarded = true;
      EXPECT_EQ(g.rule, "V1011");
      EXPECT_EQ(static_cast<int>(g.loc.line), line);
      EXPECT_NE(g.text.find("share of 'out'"), std::string::npos) << g.text;
    }
  EXPECT_TRUE(guarded);
  std::vector<int> out1(64, -1);
  kernel.launch(Device::interpreter(), Grid{1, 64}, out1);
  EXPECT_EQ(out1[5], 10);
  try {
    kernel.launch(Device::interpreter(), Grid{2, 64}, out1);
    FAIL() << "two blocks would both write out[0..63]";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("blocks <= 1"), std::string::npos) << e.what();
  }
  auto errors = specialization_errors(kernel, Spec{}.with_blocks(2));
  ASSERT_EQ(errors.size(), 1u) << render_all(errors);
  EXPECT_EQ(errors[0].code, "V1011");
  EXPECT_EQ(static_cast<int>(errors[0].loc.line), line);
}

// The way to "last writer wins", which V1011 names: an atomic exchange, which builds, and whose read
// gets its barrier (an exchange orders nothing by itself).
TEST(Sync, LastWriterWinsIsAnAtomicExchangeAndItsReadWaits) {
  KernelBuilder k("last_writer_wins");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto s = b.shared<int>("s", 1);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          s, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) { th.if_(t == 0, [&](Scope&) { mine[0] = 0; }); });
          });
      b.group(thread(1), [&](Scope& th) { th.atomic(AtomicOp::Exch, s, 0, t % 2 + 1); });
      b.for_("r", 0, s[0], [&](Scope& b, Expr) { b.sync_threads(); });
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = s[0] * 0 + 7; }); });
    });
  });
  Kernel kernel = k.build();
  std::string src = specialize_for(kernel, Spec{}).source;
  auto exch = src.find("vt_atomic_store<__NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE>(&s[0]"),
       loop = src.find("for (");
  auto bar = src.find("__syncthreads();", exch);
  ASSERT_NE(exch, std::string::npos) << src;
  EXPECT_LT(bar, loop) << src;
  std::vector<int> got = run_each_order<int>(kernel, 64);
  for (int v : got) EXPECT_EQ(v, 7);
}

// Atomics of one kind commute: a shared histogram's loop of adds needs no barrier between its
// iterations, only one before it (after the zeroing) and one after it (before the reads). Issue
// 33 found one in every iteration. An add after a max, or an exchange after an exchange, is
// ordered: those do not commute.
Kernel shared_histogram(AtomicOp second) {
  KernelBuilder k("shared_histogram");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto bins = b.shared<int>("bins", 16);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          bins, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) { th.if_(t < 16, [&](Scope&) { mine[0] = 0; }); });
          });
      b.for_("r", 0, 4, [&](Scope& b, Expr r) {
        b.group(thread(1), [&](Scope& th) {
          auto i = th.let("i", r * 64 + t);
          th.if_(i < n, [&](Scope& th) { th.atomic(AtomicOp::Add, bins, min(max(x[i], 0), 15), 1); });
        });
      });
      // Every thread of a bin gives the same value: the result does not depend on their order.
      if (second != AtomicOp::Add) b.group(thread(1), [&](Scope& th) { th.atomic(second, bins, t % 16, t % 16 % 5); });
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = bins[t % 16]; }); });
    });
  });
  return k.build();
}

TEST(Sync, AtomicsOfOneKindNeedNoBarrierBetweenThem) {
  Kernel k = shared_histogram(AtomicOp::Add);
  std::string src = specialize_for(k, Spec{}).source;
  EXPECT_EQ(count(src, "__syncthreads();"), 2) << src;
  // Neither inside the loop (where one serves the wait before it too, but runs every iteration).
  auto loop = src.find("for ("), adds = src.find("atomicAdd(&bins[");
  ASSERT_NE(adds, std::string::npos) << src;
  EXPECT_EQ(src.substr(loop, adds - loop).find("__syncthreads"), std::string::npos) << src;
  const int n = 200;
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = (i * 7 + 3) % 19 - 1;
  std::vector<int> bins(16, 0);
  for (int v : x) ++bins[static_cast<std::size_t>(std::clamp(v, 0, 15))];
  std::vector<int> got = run_each_order<int>(k, 64, n, x);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[static_cast<std::size_t>(t)], bins[static_cast<std::size_t>(t % 16)]);
  // A max or an exchange after the adds waits for them.
  for (AtomicOp op : {AtomicOp::Max, AtomicOp::Exch}) {
    Kernel other = shared_histogram(op);
    EXPECT_EQ(count(specialize_for(other, Spec{}).source, "__syncthreads();"), 3)
        << specialize_for(other, Spec{}).source;
    run_each_order<int>(other, 64, n, x);  // racecheck would throw
  }
}

TEST(Sync, GroupThatNoBarrierCanCoverIsRejected) {
  try {
    specialize_for(neighbours(thread(48), 96), Spec{});
    FAIL() << "48 threads are not warp-aligned";
  } catch (const CheckError& e) {
    EXPECT_TRUE(e.has("V1002")) << render_all(e.diagnostics());
  }
  try {
    specialize_for(neighbours(thread(64), 1024), Spec{});
    FAIL() << "16 groups of 64 need 16 named barriers; the hardware has 15 besides __syncthreads";
  } catch (const CheckError& e) {
    EXPECT_TRUE(e.has("V1002")) << render_all(e.diagnostics());
  }
}

TEST(Codegen, StridedViewCannotBePassedAsAPointer) {
  FunctionBuilder f("touch");
  auto p = f.param<GlobalPtr<float>>("p", at(thread(1)));
  f.body([&](Scope&) { p[0] = 1.0f; });
  DeviceFunction touch = f.build();
  KernelBuilder k("strided_arg");
  k.block_threads(64);
  auto y = k.param<GlobalPtr<float>>("y");
  int line = 0;
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        y, thread(1), [&](Expr i) { return t + i * 64; },
        [&](Scope& g, View y_t) {
          g.group(thread(1), [&](Scope& th) {
            line = __LINE__ + 1;
            th.call(touch, {y_t});
          });
        });
  });
  Kernel kernel = k.build();
  try {
    specialize_for(kernel, Spec{});
    FAIL() << "a strided view passed as a plain pointer would be miscompiled";
  } catch (const CheckError& e) {
    ASSERT_TRUE(e.has("V1003")) << render_all(e.diagnostics());
    EXPECT_EQ(static_cast<int>(e.diagnostics()[0].loc.line), line);
  }
}

// ------------------------------------------------------------------ specialization
/// Leaves threads per block open and specializes on n.
Kernel open_shape() {
  KernelBuilder k("open_shape");
  auto n = k.param<int>("n", specialize);
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        y, thread(1), [&](Expr i) { return gid + i; },
        [&](Scope& g, View y_t) {
          g.group(block(1), [&](Scope& b) {
            b.group(warp(), [&](Scope& w) {
              auto lane = w.let("lane", w.id(thread(1)));
              w.shfl_xor("sum", lane, 1);
            });
            b.group(thread(1), [&](Scope& th) { th.if_(gid < n, [&](Scope&) { y_t[0] = 1.0f; }); });
          });
        });
  });
  return k.build();
}

TEST(Specialize, TwoLaunchShapesGiveTwoSources) {
  Kernel k = open_shape();
  Specialized a = specialize_for(k, Spec{}.with_threads(128).with_size("n", 1000));
  Specialized b = specialize_for(k, Spec{}.with_threads(256).with_size("n", 1000));
  EXPECT_NE(a.source, b.source);
  EXPECT_NE(a.entry, b.entry);
  EXPECT_NE(a.source.find("__launch_bounds__(128)"), std::string::npos);
  EXPECT_NE(b.source.find("__launch_bounds__(256)"), std::string::npos);
  EXPECT_EQ(a.source, specialize_for(k, Spec{}.with_threads(128).with_size("n", 1000)).source) << "deterministic";
}

TEST(Specialize, SpecializedSizeBecomesAConstantAndAGuard) {
  Specialized s = specialize_for(open_shape(), Spec{}.with_threads(128).with_size("n", 1000));
  EXPECT_NE(s.source.find("(gid < 1000)"), std::string::npos) << s.source;
  ASSERT_EQ(s.guards.size(), 2u);
  const Guard& n = s.guards[0].kind == Guard::Kind::ParamEquals ? s.guards[0] : s.guards[1];
  const Guard& grid = s.guards[0].kind == Guard::Kind::ParamEquals ? s.guards[1] : s.guards[0];
  EXPECT_EQ(n.kind, Guard::Kind::ParamEquals);
  EXPECT_EQ(n.text, "n == 1000");
  EXPECT_TRUE(n.accepts(10, std::vector<std::int64_t>{1000, 0}));
  EXPECT_FALSE(n.accepts(10, std::vector<std::int64_t>{999, 0}));
  EXPECT_EQ(s.params[0].value, 1000);
  // Thread ids are i32: at most 2^31 threads per launch.
  EXPECT_EQ(grid.kind, Guard::Kind::BlocksAtMost);
  EXPECT_EQ(grid.text, "blocks <= 16777216");
  EXPECT_TRUE(grid.accepts(16777216, {}));
  EXPECT_FALSE(grid.accepts(16777217, {}));
}

TEST(Specialize, SizeViolationIsReportedWithTheNumbers) {
  try {
    specialize_for(open_shape(), Spec{}.with_threads(48).with_size("n", 10));
    FAIL() << "48 threads cannot form warps";
  } catch (const CheckError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u) << render_all(e.diagnostics());
    const Diagnostic& d = e.diagnostics()[0];
    EXPECT_EQ(d.code, "V0102");
    EXPECT_NE(d.message.find("T % 32 == 0 fails with T = 48"), std::string::npos) << d.message;
    EXPECT_NE(std::string(d.loc.file).find("test_codegen.cpp"), std::string::npos);
  }
}

TEST(Specialize, MissingAndUnknownSizesAreErrors) {
  try {
    specialize_for(open_shape(), Spec{}.with_threads(64).with_size("m", 3));
    FAIL();
  } catch (const CheckError& e) {
    EXPECT_TRUE(e.has("V1005")) << render_all(e.diagnostics());
    EXPECT_EQ(e.diagnostics().size(), 2u) << "unknown 'm' and missing 'n'";
  }
  try {
    specialize_for(examples::saxpy(), Spec{}.with_threads(128));
    FAIL() << "saxpy declares 256 threads";
  } catch (const CheckError& e) {
    EXPECT_TRUE(e.has("V1004")) << render_all(e.diagnostics());
  }
}

TEST(Specialize, GridRuleBecomesAGuard) {
  KernelBuilder k("pairs");
  k.block_threads(64);
  k.body([](Scope& g) { g.split(Level::Block, {{2, [](Scope&) {}}, {1, [](Scope&) {}}}); });
  Kernel kernel = k.build();
  Specialized s = specialize_for(kernel, Spec{});
  ASSERT_EQ(s.guards.size(), 3u);
  for (const Guard& g : s.guards) {
    if (g.kind == Guard::Kind::BlocksAtMost) {
      EXPECT_EQ(g.text, "blocks <= 33554432");  // 2^31 threads of 64
    } else if (g.kind == Guard::Kind::BlocksAtLeast) {
      EXPECT_EQ(g.text, "blocks >= 3");
      EXPECT_TRUE(g.accepts(3, {}));
      EXPECT_FALSE(g.accepts(2, {}));
    } else {
      EXPECT_EQ(g.kind, Guard::Kind::BlocksDivisibleBy) << g.text;
      EXPECT_EQ(g.text, "blocks % 2 == 0");  // the branch of 2 blocks must be aligned
      EXPECT_TRUE(g.accepts(4, {}));
      EXPECT_FALSE(g.accepts(5, {}));
    }
  }
  EXPECT_THROW(specialize_for(kernel, Spec{}.with_blocks(2)), CheckError) << "3 blocks do not fit in 2";
}

// ---------------------------------------------------------------- assumptions (automatic specialization)
// What a variant may assume of an unspecialized size (Spec::assume, the size class a launch's value
// is in: Assumption::of) becomes guards and facts. With K in [0, 2^30], rung 3's K loop steps by
// a plain `kb += 32` (it cannot pass INT_MAX) and the tile's column is computed in 32 bits; without
// it, the counter steps only while more than 32 remain, and the column is a 64-bit value.
TEST(Specialize, AnAssumptionOfASizeBecomesGuardsAndTheRangesLoweringProvesWith) {
  Kernel k = examples::sgemm_smem();
  Specialized general = specialize_for(k, Spec{});
  EXPECT_NE(
      general.source.find("kb = static_cast<unsigned>(K) - static_cast<unsigned>(kb) > static_cast<unsigned>(32)"),
      std::string::npos)
      << general.source;
  EXPECT_NE(general.source.find("long long As_col"), std::string::npos) << general.source;
  ASSERT_TRUE(Assumption::of(4096));
  EXPECT_EQ(Assumption::of(4096)->multiple, 16);
  EXPECT_EQ(Assumption::of(4100)->multiple, 1);
  EXPECT_FALSE(Assumption::of(-1));
  EXPECT_FALSE(Assumption::of((std::int64_t{1} << 30) + 1));
  Specialized assumed = specialize_for(k, Spec{}.with_assumption("K", *Assumption::of(4096)));
  EXPECT_NE(assumed.source.find("kb += 32"), std::string::npos) << assumed.source;
  EXPECT_NE(assumed.source.find("int As_col = kb + tc;"), std::string::npos) << assumed.source;
  // And NVCC is told (its own divisions and loops then need no corrections for a negative).
  EXPECT_NE(assumed.source.find("__builtin_assume(K >= 0 && K <= 1073741824);"), std::string::npos) << assumed.source;
  EXPECT_NE(assumed.source.find("__builtin_assume(K % 16 == 0);"), std::string::npos) << assumed.source;
  EXPECT_EQ(general.source.find("__builtin_assume"), std::string::npos) << general.source;
  EXPECT_NE(assumed.entry, general.entry);
  int found = 0;
  for (const Guard& g : assumed.guards) {
    if (g.param != 2) continue;  // K
    ++found;
    std::vector<std::int64_t> at{0, 0, 4096, 0, 0, 0, 0, 0};
    EXPECT_TRUE(g.accepts(1, at)) << g.text;
    if (g.kind == Guard::Kind::ParamAtLeast) {
      EXPECT_FALSE(g.accepts(1, std::vector<std::int64_t>{0, 0, -16}));
    }
    if (g.kind == Guard::Kind::ParamAtMost) {
      EXPECT_FALSE(g.accepts(1, std::vector<std::int64_t>{0, 0, (std::int64_t{1} << 30) + 1}));
    }
    if (g.kind == Guard::Kind::ParamMultipleOf) {
      EXPECT_EQ(g.text, "K % 16 == 0");
      EXPECT_FALSE(g.accepts(1, std::vector<std::int64_t>{0, 0, 4100}));
    }
  }
  EXPECT_EQ(found, 3) << "K >= 0, K <= 2^30, K % 16 == 0";
}

TEST(Specialize, AnAssumptionOfWhatIsNotAnUnspecializedSizeIsRejected) {
  for (const char* name : {"A", "nothing", "alpha"}) {
    try {
      specialize_for(examples::sgemm_smem(), Spec{}.with_assumption(name, Assumption{}));
      FAIL() << name;
    } catch (const CheckError& e) {
      ASSERT_EQ(e.diagnostics().size(), 1u) << render_all(e.diagnostics());
      EXPECT_EQ(e.diagnostics()[0].code, "V1005");
      EXPECT_NE(e.diagnostics()[0].message.find("is not an unspecialized integer parameter"), std::string::npos)
          << e.diagnostics()[0].message;
    }
  }
  try {
    Spec sized;
    for (const auto& e : examples::all())
      if (e.name == "sgemm_vec") sized = e.spec();
    specialize_for(examples::sgemm_vec(), sized.with_assumption("N", Assumption{}));
    FAIL() << "N is specialized";
  } catch (const CheckError& e) {
    EXPECT_TRUE(e.has("V1005")) << render_all(e.diagnostics());
  }
  try {
    specialize_for(examples::sgemm_smem(), Spec{}.with_assumption("K", Assumption{5, 2, 1}));
    FAIL() << "an empty range";
  } catch (const CheckError& e) {
    EXPECT_TRUE(e.has("V1005")) << render_all(e.diagnostics());
  }
}

// 64-bit values that are 32-bit values widened, and fit an int, are computed in int: a let held in an
// int and widened where read, a comparison of two such in 32 bits, and products that share a factor
// as one widening multiply (`(brow * 32 + t / 32) * M`, the partitions of a block and a thread composed).
// A division whose operands cannot be negative is unsigned (no sign corrections).
TEST(Codegen, SixtyFourBitArithmeticOfThirtyTwoBitValuesIsDoneInThirtyTwoBits) {
  std::string src = specialize_for(examples::transpose(), Spec{}).source;
  EXPECT_NE(src.find("int tiles_per_row = max("), std::string::npos) << src;
  EXPECT_NE(
      src.find("int brow = static_cast<int>(static_cast<unsigned>(vt_bid) / static_cast<unsigned>(tiles_per_row));"),
      std::string::npos)
      << src;
  EXPECT_NE(src.find("out[(static_cast<long long>((brow * 32) + (t / 32)) * static_cast<long long>(M) + "
                     "static_cast<long long>((bcol * 32) + (t % 32)))]"),
            std::string::npos)
      << src;
  // A dividend that may be negative keeps the signed division.
  KernelBuilder k("signed_division");
  auto n = k.param<int>("n");
  auto out = k.param<GlobalPtr<int>>("out", extent(32));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 32, [&](Scope& b, Expr, View o) {
      auto t = b.let("t", b.id(thread(1)));
      auto d = b.let("d", max(n, 1));
      b.partition(
          o, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope&) {
              mine[0] = (t - 16) / d + t / d + select(t % 8 < 2, 100, 0) + select((t - 16) % 8 < -3, 1000, 0);
            });
          });
    });
  });
  Kernel kernel = k.build();
  std::string s2 = specialize_for(kernel, Spec{}).source;
  EXPECT_NE(s2.find("((t - 16) / d)"), std::string::npos) << s2;
  EXPECT_NE(s2.find("static_cast<int>(static_cast<unsigned>(t) / static_cast<unsigned>(d))"), std::string::npos) << s2;
  // In a comparison, a non-negative value modulo a power of two is a mask; a value that may be
  // negative keeps its remainder (-13 % 8 is -5, -13 & 7 is 3).
  EXPECT_NE(s2.find("((t & 7) < 2)"), std::string::npos) << s2;
  EXPECT_NE(s2.find("(((t - 16) % 8) < (-3))"), std::string::npos) << s2;
  for (int nv : {1, 3, 7}) {
    std::vector<int> got(32);
    kernel.launch(Device::interpreter(), Grid{1, 32}, nv, got);
    for (int t = 0; t < 32; ++t)
      EXPECT_EQ(got[static_cast<std::size_t>(t)],
                (t - 16) / nv + t / nv + (t % 8 < 2 ? 100 : 0) + ((t - 16) % 8 < -3 ? 1000 : 0))
          << t;
  }
}

TEST(Specialize, SharedMemoryLimitDependsOnTheArchitecture) {
  KernelBuilder k("big_smem");
  k.block_threads(128);
  k.shared_budget(150 * 1024);
  k.body([](Scope& g) {
    g.group(block(1), [](Scope& b) {
      auto s = b.shared<float>("s", 150 * 256);
      b.let("x", s[3]);
    });
  });
  Kernel kernel = k.build();
  Specialized hopper = specialize_for(kernel, Spec{}.with_arch(Arch::SM_90));
  EXPECT_EQ(hopper.dynamic_shared_bytes, 150 * 1024) << "above 48 KiB shared memory is dynamic";
  EXPECT_NE(hopper.source.find("extern __shared__ __align__(16) unsigned char vt_smem[];"), std::string::npos);
  try {
    specialize_for(kernel, Spec{}.with_arch(Arch::SM_86));
    FAIL() << "sm_86 has 99 KiB";
  } catch (const CheckError& e) {
    ASSERT_TRUE(e.has("V0404"));
    EXPECT_NE(e.diagnostics()[0].message.find("sm_86 allows 101376"), std::string::npos);
  }
}

// ------------------------------------------------------------------ NVRTC
/// A kernel of one unsafe block holding `code`; `line` is set to the builder line of the block.
Kernel unsafe_kernel(const char* name, const char* code, int& line) {
  KernelBuilder k(name);
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.group(thread(1), [&](Scope& th) {
      line = __LINE__ + 1;
      th.unsafe(thread(1), code);
    });
  });
  return k.build();
}

TEST(Compile, UnsafeBlockWithInvalidCudaFailsAtTheBuilderLine) {
  REQUIRE_NVRTC();
  int line = 0;
  Kernel kernel = unsafe_kernel("broken_unsafe", "this_is_not_cuda(;", line);
  try {
    compile(kernel, Spec{});
    FAIL() << "NVRTC accepted invalid CUDA";
  } catch (const CompileError& e) {
    ASSERT_FALSE(e.diagnostics().empty()) << e.log();
    const Diagnostic& d = e.diagnostics()[0];
    EXPECT_EQ(d.code, "V1101");
    EXPECT_EQ(static_cast<int>(d.loc.line), line) << e.log();
    EXPECT_NE(std::string(d.loc.file).find("test_codegen.cpp"), std::string::npos);
    EXPECT_NE(e.log().find("error"), std::string::npos);
    EXPECT_NE(e.source().find("this_is_not_cuda(;"), std::string::npos);
    EXPECT_EQ(e.options()[0], "--std=c++20");
  }
}

// NVRTC's warnings come back beside its errors as V1102 at the user's line (a constant truncated in
// the unsafe block, then the error that makes the compile fail).
TEST(Compile, NvrtcWarningsAreDiagnosticsAtTheUsersLine) {
  REQUIRE_NVRTC();
  int line = 0;
  Kernel kernel = unsafe_kernel("warned_unsafe", "unsigned char truncated = 1000; this_is_not_cuda();", line);
  try {
    compile(kernel, Spec{});
    FAIL() << "NVRTC accepted invalid CUDA";
  } catch (const CompileError& e) {
    bool warned = false, failed = false;
    for (const Diagnostic& d : e.diagnostics()) {
      EXPECT_EQ(static_cast<int>(d.loc.line), line) << d.code << ": " << d.message;
      warned = warned || (d.code == "V1102" && d.message.find("truncation") != std::string::npos);
      failed = failed || d.code == "V1101";
    }
    EXPECT_TRUE(warned) << e.log();
    EXPECT_TRUE(failed) << e.log();
  }
}

TEST(Compile, PtxTargetsTheArchitecture) {
  REQUIRE_NVRTC();
  std::string ptx = examples::saxpy().ptx(Spec{}.with_arch(Arch::SM_80));
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos);
  EXPECT_NE(ptx.find(".entry vt_saxpy_"), std::string::npos);
}

TEST(Compile, FingerprintNamesTheCompiler) {
  REQUIRE_NVRTC();
  std::string fp = compiler_fingerprint();
  EXPECT_TRUE(std::regex_search(fp, std::regex("^nvrtc [0-9]+\\.[0-9]+ build [0-9a-f]{16}$"))) << fp;
  EXPECT_EQ(fp, compiler_fingerprint());
}

// ------------------------------------------------------------------ SASS (cuobjdump)
std::string sass_of(const Kernel& k, Arch arch = Arch::SM_90) {
  return examples::sass(k.cubin(Spec{}.with_arch(arch)));
}

#define REQUIRE_SASS()                                                 \
  REQUIRE_NVRTC();                                                     \
  if (examples::find_cuobjdump().empty()) {                            \
    GTEST_SKIP() << "cuobjdump not found (scripts/setup installs it)"; \
  }                                                                    \
  static_assert(true)

TEST(Sass, MmaExampleUsesTensorCores) {
  REQUIRE_SASS();
  EXPECT_NE(sass_of(examples::warp_mma()).find("HMMA"), std::string::npos);
  EXPECT_NE(sass_of(examples::mma_tf32_naive(), Arch::SM_80).find("HMMA"), std::string::npos);
}

TEST(Sass, VectorCopyUses128BitLoadsAndStores) {
  REQUIRE_SASS();
  std::string s = sass_of(examples::vec_copy());
  EXPECT_NE(s.find("LDG.E.128"), std::string::npos) << s;
  EXPECT_NE(s.find("STG.E.128"), std::string::npos);
}

TEST(Sass, SaxpyHasNoBarrier) {
  REQUIRE_SASS();
  std::string s = sass_of(examples::saxpy());
  ASSERT_NE(s.find("FFMA"), std::string::npos) << "the disassembly has the arithmetic";
  EXPECT_EQ(s.find("BAR"), std::string::npos) << s;
}

TEST(Sass, SharedMemoryGemmHasItsTwoBarriers) {
  REQUIRE_SASS();
  std::string s = sass_of(examples::sgemm_smem());
  EXPECT_EQ(count(s, "BAR.SYNC"), 2) << s;
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {

TEST(Compile, HalfPrecisionMmaUsesTheToolkitHeaderAndTensorCores) {
  REQUIRE_NVRTC();
  KernelBuilder k("mma_f16");
  k.block_threads(32);
  auto out = k.param<GlobalPtr<float>>("out");
  k.body([&](Scope& g) {
    auto lane = g.let("lane", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return lane * 4 + i; },
        [&](Scope& g, View o) {
          g.group(warp(), [&](Scope& w) {
            auto a = w.local_array("a", ScalarType::F16, 8, at(thread(1)));
            auto b = w.local_array("b", ScalarType::F16, 4, at(thread(1)));
            auto c = w.local_array("c", ScalarType::F32, 4, at(thread(1)));
            auto d = w.local_array("d", ScalarType::F32, 4, at(thread(1)));
            w.for_("i", 0, 8, [&](Scope&, Expr i) { a[i] = cast(ScalarType::F16, cast<float>(lane + i)); });
            w.for_("i", 0, 4, [&](Scope&, Expr i) {
              b[i] = cast(ScalarType::F16, 1.0f);
              c[i] = 0.0f;
            });
            w.mma_sync(MmaKind::F16_M16N8K16, d, a, b, c);
            w.for_("i", 0, 4, [&](Scope&, Expr i) { o[i] = d[i]; });
          });
        });
  });
  Kernel kernel = k.build();
  Compiled c = compile(kernel, Spec{}.with_arch(Arch::SM_80));
  EXPECT_NE(c.spec.source.find("#include <cuda_fp16.h>"), std::string::npos);
  EXPECT_EQ(c.log, "");
  if (!examples::find_cuobjdump().empty()) {
    EXPECT_NE(examples::sass(c.cubin).find("HMMA.16816.F32"), std::string::npos);
  }
}

TEST(Compile, WgmmaNeedsSm90aAndCompilesThere) {
  REQUIRE_NVRTC();
  KernelBuilder k("wgmma_tile");
  int wgmma_line = 0;
  k.block_threads(128);
  auto out = k.param<GlobalPtr<float>>("out", extent(128 * 32));
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128 * 32, [&](Scope& b, Expr, View out_b) {
      View a_s = b.shared_aligned("a_s", ScalarType::F16, 64 * 64, 1024);
      View b_s = b.shared_aligned("b_s", ScalarType::F16, 64 * 64, 1024);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t * 32 + i; },
          [&](Scope& g, View o) {
            g.group(warpgroup(), [&](Scope& wg) {
              auto acc = wg.local_array("acc", ScalarType::F32, 32, at(thread(1)));
              wg.for_("i", 0, 32, [&](Scope&, Expr i) { acc[i] = 0.0f; });
              wg.wgmma_fence();
              wgmma_line = __LINE__ + 1;
              wg.wgmma(64, acc, a_s, 16, b_s, 16);
              wg.wgmma_commit();
              wg.wgmma_wait(0);
              wg.for_("i", 0, 32, [&](Scope&, Expr i) { o[i] = acc[i]; });
            });
          });
    });
  });
  Kernel kernel = k.build();
  Compiled c = compile(kernel, Spec{}.with_arch(Arch::SM_90a));
  EXPECT_FALSE(c.cubin.empty());
  EXPECT_NE(c.spec.source.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"), std::string::npos);
  if (!examples::find_cuobjdump().empty()) {
    EXPECT_NE(examples::sass(c.cubin).find("HGMMA"), std::string::npos);
  }
  // On sm_90 the target table says no, at the user's line, before NVRTC is asked.
  try {
    compile(kernel, Spec{}.with_arch(Arch::SM_90));
    ADD_FAILURE() << "wgmma exists only on sm_90a";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V1008", wgmma_line, "tests/test_codegen.cpp"));
    EXPECT_NE(e.diagnostics()[0].message.find("sm_90a"), std::string::npos);
  }
}

}  // namespace
}  // namespace vantage
