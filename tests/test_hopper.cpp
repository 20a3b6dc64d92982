// Hopper's asynchronous machinery: TMA loads through tensor maps the runtime makes, mbarriers indexed
// by pipeline slot, wgmma on tiles in the 128-byte swizzle layout, setmaxnreg, and the bf16 GEMM
// example that uses them all: they compile with NVRTC for sm_90a here, and each rule that keeps them
// safe has a program it refuses. The interpreter runs them (test_hopper_run.cpp); the CPU backend
// stops at the first one with UnsupportedOnDevice; the GPU check runs the GEMMs.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "hopper_kernels.hpp"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "kernels/stages.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

constexpr const char* kThisFile = "tests/test_hopper.cpp";

const examples::Example& gemm_example(const std::string& name = "gemm_wgmma_bf16") {
  for (const auto& ex : examples::all())
    if (ex.name == name) return ex;
  throw std::logic_error("no " + name + " example");
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Plain functions: a lambda written inside EXPECT_TRUE(...) would report the macro's line.
void expect_rejected(const std::string& code, const int& line, const std::function<void(KernelBuilder&)>& make) {
  EXPECT_TRUE(testing::rejects_kernel(code, line, make, kThisFile));
}
void expect_function_rejected(const std::string& code, const int& line,
                              const std::function<void(FunctionBuilder&)>& make) {
  EXPECT_TRUE(testing::rejects_function(code, line, make, kThisFile));
}

/// Where the target table is not sm_90a's (sm_80, sm_90), `k` is refused before NVRTC is asked,
/// naming the instruction (V1008).
void expect_only_on_sm90a(const Kernel& k, Spec spec) {
  for (Arch arch : {Arch::SM_80, Arch::SM_90}) {
    spec.arch = arch;
    try {
      compile(k, spec);
      ADD_FAILURE() << "compiled for " << arch_name(arch);
    } catch (const CheckError& e) {
      EXPECT_TRUE(e.has("V1008")) << render_all(e.diagnostics());
    }
  }
}
/// Nothing from NVRTC or ptxas (a warning when setmaxnreg cannot be honoured) but ptxas's report,
/// and no spill, of `c` compiled `with_ptxas_report`; and each of `ops` in its SASS (where cuobjdump
/// is at hand).
void expect_sass(const Compiled& c, const std::vector<std::string>& ops) {
  const examples::PtxasReport report = examples::ptxas_report(c.log);
  EXPECT_EQ(report.rest, "") << "NVRTC or ptxas said something";
  EXPECT_EQ(report.spills, 0) << "the accumulators spill";
  if (examples::find_cuobjdump().empty()) return;
  const std::string sass = examples::sass(c.cubin);
  for (const std::string& op : ops) EXPECT_TRUE(contains(sass, op)) << op << " is not in the SASS";
}

// The two examples, and rung 3: rung 2 as a persistent kernel with a wgmma group in flight.
// What the spill checks read: ptxas's report of the kernel's own function. The persistent GEMM in
// clusters spills nothing, though its error path's `vt_fail`, a function of its own, saves registers
// around its compare-and-swap (an STL in the SASS, which the checks looked for until the epilogue's
// simpler indices left registers free for the saves).
TEST(Hopper, TheSpillsAreTheKernelsOwnNotACallsSavedRegisters) {
  REQUIRE_NVRTC();
  // ptxas's report: the entry function's spills count, the callee's do not, a warning stays.
  const std::string log =
      "ptxas info    : Compiling entry function 'vt_k_1234abcd' for 'sm_90a'\n"
      "ptxas info    : Function properties for vt_k_1234abcd\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 0 barriers, 24 bytes cumulative stack size\n"
      "ptxas warning : Registers are spilled to local memory in function 'vt_k_1234abcd'\n"
      "ptxas info    : Function properties for _ZN4_INTERNAL_vt_k_cu_12vt_failEPyixx\n"
      "ptxas         .     0 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads\n";
  const examples::PtxasReport parsed = examples::ptxas_report(log + std::string(1, '\0'));
  EXPECT_EQ(parsed.spills, 12);
  EXPECT_EQ(parsed.registers, 168);
  EXPECT_EQ(parsed.rest, "ptxas warning : Registers are spilled to local memory in function 'vt_k_1234abcd'\n");
  const Spec spec = Spec{}.with_arch(Arch::SM_90a).with_size("M", 4096).with_size("N", 4096).with_size("K", 4096);
  const Compiled c =
      compile(examples::wgmma_gemm_persistent("persistent_cluster", 16, 1, 2), examples::with_ptxas_report(spec));
  const examples::PtxasReport report = examples::ptxas_report(c.log);
  EXPECT_EQ(report.spills, 0) << c.log;
  EXPECT_NE(c.log.find("vt_fail"), std::string::npos) << "the error path is a function of its own:\n" << c.log;
  EXPECT_THROW(examples::ptxas_report(""), std::runtime_error);
}

// A register limit of the compile's holds: ptxas ignores `--maxrregcount` for a kernel with launch
// bounds, which every kernel had, so sgemm_pipelined kept its 130 registers under a limit of 32. Now
// the kernel is printed with `__maxnreg__`, and spills to keep to it; with a count of blocks per
// multiprocessor as well, the smaller limit.
TEST(Hopper, ARegisterLimitOfTheCompileHolds) {
  REQUIRE_NVRTC();
  const examples::Example& ex = gemm_example("sgemm_pipelined");
  Spec spec = examples::with_ptxas_report(ex.spec());
  spec.compiler.max_registers = 32;
  const Compiled c = compile(ex.build(), spec);
  EXPECT_TRUE(contains(c.spec.source, "__maxnreg__(32)")) << c.spec.source.substr(0, 400);
  EXPECT_FALSE(contains(c.spec.source, "__launch_bounds__"));
  const examples::PtxasReport report = examples::ptxas_report(c.log);
  EXPECT_LE(report.registers, 32) << c.log;
  EXPECT_GT(report.spills, 0) << c.log;
  KernelBuilder k("two_a_multiprocessor");
  auto out = k.param<GlobalPtr<float>>("out", extent(512));
  k.block_threads(512).min_blocks_per_sm(2);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 512, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = 1.0f; }); });
    });
  });
  Spec both = Spec{}.with_arch(Arch::SM_90);
  both.compiler.max_registers = 255;
  EXPECT_TRUE(contains(compile(k.build(), both).spec.source, "__maxnreg__(64)")) << "65536 / (512 * 2)";
}

TEST(Hopper, TheWgmmaGemmsCompileForSm90aWithEveryHopperInstructionTheyName) {
  REQUIRE_NVRTC();
  struct Gemm {
    std::string name;
    std::function<Kernel()> build;
    int n;
  };
  const std::vector<Gemm> gemms = {
      {"gemm_wgmma_bf16", [] { return gemm_example("gemm_wgmma_bf16").build(); }, 128},
      {"gemm_wgmma_bf16_wide", [] { return gemm_example("gemm_wgmma_bf16_wide").build(); }, 256},
      {"persistent_w1", [] { return examples::wgmma_gemm_persistent("persistent_w1", 16, 1); }, 256}};
  for (const auto& [name, build, n] : gemms) {
    SCOPED_TRACE(name);
    const auto& ex = gemm_example(n == 128 ? "gemm_wgmma_bf16" : "gemm_wgmma_bf16_wide");  // sizes and target
    const std::string shape = "64x" + std::to_string(n) + "x16";
    Compiled c = compile(build(), examples::with_ptxas_report(ex.spec()));
    // Every access proven but rung 3's stores of C (128 a consumer thread), whose place in the
    // block's tiles (div and mod by the tiles in a row) is past what lowering proves.
    EXPECT_EQ(c.spec.checks.size(), name == "persistent_w1" ? 256u : 0u);
    ASSERT_FALSE(c.cubin.empty());
    const std::string& src = c.spec.source;
    EXPECT_TRUE(contains(src, "__launch_bounds__(384, 1)")) << "setmaxnreg needs the register count at entry";
    EXPECT_TRUE(contains(src, "const __grid_constant__ vt_tensor_map A_map"));
    EXPECT_TRUE(contains(src, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"));
    EXPECT_TRUE(contains(src, "mbarrier.arrive.expect_tx.shared::cta.b64"));
    EXPECT_TRUE(contains(src, "setmaxnreg.dec.sync.aligned.u32 40"));
    EXPECT_TRUE(contains(src, "setmaxnreg.inc.sync.aligned.u32 232"));
    EXPECT_TRUE(contains(src, "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32.bf16.bf16"));
    EXPECT_TRUE(contains(src, "% 1024u")) << "the shared base is aligned for the swizzled tiles";
    expect_sass(c, {"HGMMA." + shape + ".F32.BF16", "UTMALDG.2D", "USETMAXREG", "SYNCS"});
    expect_only_on_sm90a(build(), ex.spec());
  }
}

// The int8 GEMM: the integer wgmma (scale-d only), every access proven, no spill.
TEST(Hopper, TheInt8WgmmaGemmCompilesToIntegerWgmmaWithEveryAccessProven) {
  REQUIRE_NVRTC();
  const auto& ex = gemm_example("igemm_wgmma");
  Compiled c = compile(ex.build(), examples::with_ptxas_report(ex.spec()));
  EXPECT_EQ(c.spec.checks.size(), 0u);
  ASSERT_FALSE(c.cubin.empty());
  const std::string& src = c.spec.source;
  EXPECT_TRUE(contains(src, "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {%0,"));
  EXPECT_TRUE(contains(src, "}, %128, %129, 1; }")) << "the integer form takes scale-d alone";
  EXPECT_TRUE(contains(src, "\"+r\"(acc[0])"));
  expect_sass(c, {"IGMMA.64x256x32.S8.S8", "UTMALDG.2D", "USETMAXREG"});
  expect_only_on_sm90a(ex.build(), ex.spec());
}

// At K = 128 the int8 GEMM takes one K step, whose loop the compiler unrolls: it then sank the
// accumulators' zeroing past the wgmma fence, and ptxas injected a fence of its own before the
// first wgmma (an info line, C7519, in every compile's log). The accumulators are pinned before each
// fence and after each wait, so neither their writes nor their reads cross one.
TEST(Hopper, TheWgmmaAccumulatorsAreWrittenBeforeTheFenceAtEveryDepthOfK) {
  REQUIRE_NVRTC();
  const auto& ex = gemm_example("igemm_wgmma");
  for (std::int64_t k : {128, 256, 640}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    Spec spec = ex.spec();
    spec.sizes["M"] = 128;
    spec.sizes["N"] = 768;
    spec.sizes["K"] = k;
    Compiled c = compile(ex.build(), spec);
    EXPECT_EQ(c.log, "") << "ptxas said something (C7519: a fence it had to add)";
    const std::string& src = c.spec.source;
    const std::string pin = "asm volatile(\"\" : \"+r\"(acc[0]), \"+r\"(acc[1])";
    const std::size_t fence = src.find("wgmma.fence.sync.aligned"), wait = src.find("wgmma.wait_group.sync.aligned");
    ASSERT_NE(fence, std::string::npos);
    ASSERT_NE(wait, std::string::npos);
    EXPECT_LT(src.rfind(pin, fence), fence) << "no pin before the fence";
    EXPECT_NE(src.find(pin, wait), std::string::npos) << "no pin after the wait";
  }
}

// ---------------------------------------------------------------- a TMA load, used after its wait
/// One block of 32 threads: thread 0 loads an 8 x 32 f32 box by TMA into `tile`; everyone waits on
/// the mbarrier; each thread copies one element out. `wait` false leaves the wait out.
Kernel tma_copy(bool wait, int* use_line = nullptr, int* load_line = nullptr) {
  KernelBuilder kb("tma_copy");
  auto src = kb.param<GlobalPtr<const float>>("src", extent(8 * 32));
  auto out = kb.param<GlobalPtr<float>>("out", extent(32));
  kb.block_threads(32);
  TensorMap map = kb.tensor_map("src_map", src, 8, 32, 8, 32);
  kb.body([&](Scope& g) {
    lib::for_each_block(g, out, 32, [&](Scope& b, Expr, View out_b) {
      View tile = b.shared_aligned("tile", ScalarType::F32, 8 * 32, 1024);
      View bar = b.shared<std::uint64_t>("bar", 1);
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 th.mbarrier_init(bar, 0, 1);
                                 th.mbarrier_arrive_expect_tx(bar, 0, map.box_bytes());
                                 if (load_line) *load_line = __LINE__ + 1;
                                 th.tma_load(tile, 0, map, 0, 0, bar, 0);
                               }}});
      if (wait) b.mbarrier_wait(bar, 0, 0);
      auto t = b.let("t", b.id(thread(1)));
      if (use_line) *use_line = __LINE__ + 1;
      lib::block_store(b, out_b, 32, tile[t * 8]);
    });
  });
  return kb.build();
}

TEST(Hopper, ATmaLoadIsUsedOnlyAfterAWaitOnItsMbarrier) {
  int use = 0, load = 0;
  Kernel bad = tma_copy(false, &use, &load);
  try {
    specialize_for(bad, Spec{});
    ADD_FAILURE() << "a read of a TMA destination with no wait on its mbarrier was accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V1010", use, kThisFile));
    bool noted = false;
    for (const auto& d : e.diagnostics())
      for (const auto& n : d.notes) noted = noted || static_cast<int>(n.loc.line) == load;
    EXPECT_TRUE(noted) << "the diagnostic points at the TMA load too";
  }
  // With the wait it specializes, with one barrier: after the initialisation (the wait itself makes
  // the box visible to every thread that waited).
  Specialized ok = specialize_for(tma_copy(true), Spec{});
  EXPECT_EQ(ok.barriers, 1) << ok.source;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(tma_copy(true), Spec{}).log, "");
  }
}

// ---------------------------------------------------------------- rules
/// A kernel of one warpgroup with two 1024-aligned bf16 tiles of 64 x 64 (unless `aligned` is off)
/// and `body(w, a, b, acc)` at thread(128).
Kernel warpgroup_kernel(const std::function<void(Scope&, View, View, View)>& body, bool aligned = true,
                        ScalarType elem = ScalarType::BF16, ScalarType acc_type = ScalarType::F32) {
  KernelBuilder k("wg");
  auto out = k.param<GlobalPtr<float>>("out", extent(128));
  k.block_threads(128);
  const std::int64_t row = 128 / type_bytes(elem);  // elements of a 128-byte row
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View) {
      View a = aligned ? b.shared_aligned("a", elem, 64 * row, 1024) : b.shared<bfloat16>("a", 64 * 64);
      View bt = b.shared_aligned("bt", elem, 64 * row, 1024);
      b.group(warpgroup(), [&](Scope& w) {
        View acc = w.local_array("acc", acc_type, 32, at(thread(1)));
        body(w, a, bt, acc);
      });
    });
  });
  return k.build();
}

::testing::AssertionResult refused_at_specialization(const Kernel& k, const std::string& code, int line,
                                                     const std::string& words) {
  try {
    specialize_for(k, Spec{}.with_arch(Arch::SM_90a));
  } catch (const CheckError& e) {
    auto r = testing::has_diag(e, code, line, kThisFile);
    if (!r) return r;
    for (const auto& d : e.diagnostics())
      if (d.code == code && contains(d.message, words)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "no " << code << " saying '" << words << "':\n"
                                         << render_all(e.diagnostics());
  }
  return ::testing::AssertionFailure() << "specialized; expected " << code << " at line " << line;
}

TEST(Hopper, WgmmaTilesMustBeWholeSwizzledGroupsInsideTheirArrays) {
  int line = 0;
  // A K step of 8 elements is half a wgmma step: not 0, 16, 32 or 48.
  Kernel half_step = warpgroup_kernel([&](Scope& w, View a, View b, View acc) {
    line = __LINE__ + 1;
    w.wgmma(64, acc, a, 8, b, 0);
  });
  EXPECT_TRUE(refused_at_specialization(half_step, "V1009", line, "K step of 0, 16, 32 or 48"));
  // A tile that starts in the middle of an 8-row group.
  Kernel mid_group = warpgroup_kernel([&](Scope& w, View a, View b, View acc) {
    line = __LINE__ + 1;
    w.wgmma(64, acc, a, 0, b, 128);
  });
  EXPECT_TRUE(refused_at_specialization(mid_group, "V1009", line, "multiple of 1024 bytes"));
  // A B tile of 64 rows that starts 8 rows before the end of its 64-row array.
  Kernel past_end = warpgroup_kernel([&](Scope& w, View a, View b, View acc) {
    line = __LINE__ + 1;
    w.wgmma(64, acc, a, 0, b, 8 * 64 * 7);
  });
  EXPECT_TRUE(refused_at_specialization(past_end, "V1009", line, "inside the array"));
  // An array on a 16-byte boundary only: the swizzle pattern would not line up.
  Kernel unaligned = warpgroup_kernel(
      [&](Scope& w, View a, View b, View acc) {
        line = __LINE__ + 1;
        w.wgmma(64, acc, a, 0, b, 0);
      },
      false);
  EXPECT_TRUE(refused_at_specialization(unaligned, "V1009", line, "aligned to 1024 bytes"));
  // The same shape, right, specializes.
  Kernel right = warpgroup_kernel([&](Scope& w, View a, View b, View acc) {
    w.wgmma_fence();
    for (int kk = 0; kk < 4; ++kk) w.wgmma(64, acc, a, kk * 16, b, kk * 16);
    w.wgmma_commit();
    w.wgmma_wait(0);
  });
  EXPECT_NO_THROW(specialize_for(right, Spec{}.with_arch(Arch::SM_90a)));
}

// The integer form: i8 tiles of 128-element rows, K steps of 32, i32 accumulators.
TEST(Hopper, Int8WgmmaTakesI32AccumulatorsAndKStepsOf32Bytes) {
  int line = 0;
  // i8 tiles sum into i32 accumulators, not f32.
  expect_rejected("V0503", line, [&](KernelBuilder& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        View a = b.shared_aligned("a", ScalarType::I8, 64 * 128, 1024);
        b.group(warpgroup(), [&](Scope& w) {
          View acc = w.local_array("acc", ScalarType::F32, 32, at(thread(1)));
          line = __LINE__ + 1;
          w.wgmma(64, acc, a, 0, a, 0);
        });
      });
    });
  });
  // Half a K step of bytes (16 elements) is not one of the integer form's 32-byte steps.
  Kernel half_step = warpgroup_kernel(
      [&](Scope& w, View a, View b, View acc) {
        line = __LINE__ + 1;
        w.wgmma(64, acc, a, 16, b, 0);
      },
      true, ScalarType::I8, ScalarType::I32);
  EXPECT_TRUE(refused_at_specialization(half_step, "V1009", line, "K step of 0, 32, 64 or 96"));
  Kernel right = warpgroup_kernel(
      [&](Scope& w, View a, View b, View acc) {
        w.wgmma_fence();
        for (int kk = 0; kk < 4; ++kk) w.wgmma(64, acc, a, kk * 32, b, kk * 32);
        w.wgmma_commit();
        w.wgmma_wait(0);
      },
      true, ScalarType::I8, ScalarType::I32);
  EXPECT_NO_THROW(specialize_for(right, Spec{}.with_arch(Arch::SM_90a)));
}

TEST(Hopper, MbarrierSlotsAndTmaBoxesMustBeProvenInside) {
  int slot_line = 0, box_line = 0;
  KernelBuilder kb("slots");
  auto src = kb.param<GlobalPtr<const float>>("src", extent(64 * 32));
  auto which = kb.param<int>("which");
  auto out = kb.param<GlobalPtr<float>>("out", extent(32));
  kb.block_threads(32);
  TensorMap map = kb.tensor_map("src_map", src, 64, 32, 16, 32);
  kb.body([&](Scope& g) {
    lib::for_each_block(g, out, 32, [&](Scope& b, Expr, View) {
      View tile = b.shared_aligned("tile", ScalarType::F32, 8 * 32, 1024);  // half a box
      View bars = b.shared<std::uint64_t>("bars", 2);
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 slot_line = __LINE__ + 1;
                                 th.mbarrier_init(bars, which, 1);  // any int: not proven in [0, 2)
                                 th.mbarrier_init(bars, 1, 1);
                                 box_line = __LINE__ + 1;
                                 th.tma_load(tile, 0, map, 0, 0, bars, 1);
                               }}});
    });
  });
  Kernel k = kb.build();
  EXPECT_TRUE(refused_at_specialization(k, "V1009", slot_line, "mbarrier slot"));
  EXPECT_TRUE(refused_at_specialization(k, "V1009", box_line, "512 elements"));
}

// A TMA box and a wgmma tile are whole rows of their array from the element given: a view that
// spreads its elements out (thread t's share t, t + 2, t + 4, ...) would have the checker and the
// barrier placement see other elements than the instruction reaches. Such a view is refused (V1012,
// saying where it places the elements); before, it was taken as contiguous from its first element.
TEST(Hopper, TmaBoxesAndWgmmaTilesAreOffsetsOfTheirArrays) {
  int line = 0;
  KernelBuilder kb("strided_box");
  auto src = kb.param<GlobalPtr<const float>>("src", extent(8 * 32));
  auto out = kb.param<GlobalPtr<float>>("out", extent(64));
  kb.block_threads(64);
  TensorMap map = kb.tensor_map("src_map", src, 8, 32, 8, 32);
  kb.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View) {
      View tile = b.shared_aligned("tile", ScalarType::F32, 2 * 8 * 32, 1024);
      View bar = b.shared<std::uint64_t>("bar", 1);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          tile, thread(1), [&](Expr i) { return t % 2 + i * 2; },
          [&](Scope& b, View mine) {
            b.split(Level::Thread, {{1, [&](Scope& th) {
                                       th.mbarrier_init(bar, 0, 1);
                                       line = __LINE__ + 1;
                                       th.tma_load(mine, 0, map, 0, 0, bar, 0);
                                     }}});
          });
    });
  });
  EXPECT_TRUE(refused_at_specialization(kb.build(), "V1012", line, "tma_load's box in 'tile_part'"));
  Kernel spread = warpgroup_kernel([&](Scope& w, View a, View b, View acc) {
    w.partition(
        a, thread(128), [&](Expr i) { return i * 2; },
        [&](Scope& w, View every_other) {
          w.wgmma_fence();
          line = __LINE__ + 1;
          w.wgmma(64, acc, every_other, 0, b, 0);
          w.wgmma_commit();
          w.wgmma_wait(0);
        });
  });
  EXPECT_TRUE(refused_at_specialization(spread, "V1012", line, "wgmma's A tile in 'a_part'"));
}

TEST(Hopper, OperandsAndPerspectivesOfTheHopperInstructions) {
  int line = 0;
  // setmaxnreg is a warpgroup's.
  expect_rejected("V0501", line, [&](KernelBuilder& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        b.group(warp(), [&](Scope& w) {
          line = __LINE__ + 1;
          w.setmaxnreg(40, false);
        });
      });
    });
  });
  // A register count it cannot take.
  expect_rejected("V0503", line, [&](KernelBuilder& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        b.group(warpgroup(), [&](Scope& w) {
          line = __LINE__ + 1;
          w.setmaxnreg(20, false);
        });
      });
    });
  });
  // wgmma multiplies f16 or bf16 tiles.
  expect_rejected("V0503", line, [&](KernelBuilder& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        View a = b.shared_aligned("a", ScalarType::F32, 64 * 64, 1024);
        b.group(warpgroup(), [&](Scope& w) {
          View acc = w.local_array("acc", ScalarType::F32, 32, at(thread(1)));
          line = __LINE__ + 1;
          w.wgmma(64, acc, a, 0, a, 0);
        });
      });
    });
  });
  // A TMA box goes to an array of its own element type, and one phase expects 1 to 2^20 - 1 bytes.
  for (int which = 0; which < 2; ++which)
    expect_rejected("V0503", line, [&](KernelBuilder& k) {
      auto src = k.param<GlobalPtr<const float>>("src", extent(1024));
      TensorMap map = k.tensor_map("m", src, 32, 32, 8, 32);
      k.body([&](Scope& g) {
        g.group(block(1), [&](Scope& b) {
          View tile = b.shared_aligned("tile", ScalarType::I32, 256, 1024);
          View bar = b.shared<std::uint64_t>("bar", 1);
          b.split(Level::Thread, {{1, [&](Scope& th) {
                                     if (which == 0) {
                                       line = __LINE__ + 1;
                                       th.tma_load(tile, 0, map, 0, 0, bar, 0);
                                     } else {
                                       line = __LINE__ + 1;
                                       th.mbarrier_arrive_expect_tx(bar, 0, 0);
                                     }
                                   }}});
        });
      });
    });
  // TMA is one thread's instruction.
  expect_rejected("V0501", line, [&](KernelBuilder& k) {
    auto src = k.param<GlobalPtr<const float>>("src", extent(1024));
    TensorMap map = k.tensor_map("m", src, 32, 32, 8, 32);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        View tile = b.shared_aligned("tile", ScalarType::F32, 256, 1024);
        View bar = b.shared<std::uint64_t>("bar", 1);
        b.group(warp(), [&](Scope& w) {
          line = __LINE__ + 1;
          w.tma_load(tile, 0, map, 0, 0, bar, 0);
        });
      });
    });
  });
}

TEST(Hopper, TensorMapsAreOverParametersWith128ByteBoxRows) {
  int line = 0;
  // Over a shared array, not a parameter.
  expect_rejected("V0916", line, [&](KernelBuilder& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        View s = b.shared<float>("s", 256);
        line = __LINE__ + 1;
        (void)k.tensor_map("m", s, 8, 32, 8, 32);
      });
    });
  });
  // A box row of 16 floats is 64 bytes, not the swizzle's 128.
  expect_rejected("V0916", line, [&](KernelBuilder& k) {
    auto src = k.param<GlobalPtr<const float>>("src");
    line = __LINE__ + 1;
    (void)k.tensor_map("m", src, 8, 32, 8, 16);
    k.body([](Scope&) {});
  });
  // Its shape is over the scalar parameters: a float one is not a size.
  expect_rejected("V0916", line, [&](KernelBuilder& k) {
    auto src = k.param<GlobalPtr<const float>>("src");
    auto x = k.param<float>("x");
    line = __LINE__ + 1;
    (void)k.tensor_map("m", src, x, 32, 8, 32);
    k.body([](Scope&) {});
  });
}

TEST(Hopper, AlignedSharedArrays) {
  int line = 0;
  // A power of two from 16 to 4096.
  expect_rejected("V0402", line, [&](KernelBuilder& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        line = __LINE__ + 1;
        b.shared_aligned("s", ScalarType::F32, 64, 100);
      });
    });
  });
  // The bytes kept to align the base count against the budget: 1008 of them, plus 16 for the first
  // array and 4096 for the second, is over 5000.
  expect_rejected("V0403", line, [&](KernelBuilder& k) {
    k.shared_budget(5000);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        b.shared<float>("small", 4);
        line = __LINE__ + 1;
        b.shared_aligned("big", ScalarType::F32, 1024, 1024);
      });
    });
  });
  // In a kernel they run everywhere: the second array lands on a 1024-byte offset, and the CUDA
  // aligns the base at run time.
  KernelBuilder kb("aligned_copy");
  auto in = kb.param<GlobalPtr<const float>>("in", extent(256));
  auto out = kb.param<GlobalPtr<float>>("out", extent(256));
  kb.block_threads(256);
  kb.body([&](Scope& g) {
    lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
      View small = b.shared<float>("small", 4);
      View big = b.shared_aligned("big", ScalarType::F32, 256, 1024);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          big, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = in[t] * 2.0f; }); });
      lib::store_by_one(b, small, 0, 1.0f);
      lib::block_store(b, out_b, 256, big[255 - t] + small[0]);
    });
  });
  Kernel k = kb.build();
  std::string cuda = specialize_for(k, Spec{}).source;
  EXPECT_TRUE(contains(cuda, "vt_smem_raw")) << cuda;
  EXPECT_TRUE(contains(cuda, "big = reinterpret_cast<float*>(vt_smem + 1024)")) << cuda;
  std::vector<Device> devices = {Device::interpreter({ThreadOrder::Forward, 1, true}),
                                 Device::interpreter({ThreadOrder::Reverse, 1, true})};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (const Device& d : devices) {
    std::vector<float> x(256), y(256, -1.0f);
    for (int i = 0; i < 256; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
    k.launch(d, Grid{1, 256}, std::as_const(x), y);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(y[static_cast<std::size_t>(i)], 2.0f * static_cast<float>(255 - i) + 1.0f) << d.name() << " " << i;
  }
  // Not in a device function, whose shared memory starts wherever its caller's region does.
  expect_function_rejected("V0402", line, [&](FunctionBuilder& f) {
    f.requires_perspective(block(1));
    f.shared_budget(4096);
    f.body([&](Scope& b) {
      line = __LINE__ + 1;
      b.shared_aligned("s", ScalarType::F32, 256, 1024);
    });
  });
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// wgmma reads its tiles from shared memory through descriptors. Before, the sync pass did not count
// those reads, so a tile written by plain stores was handed to wgmma with no barrier in between.
TEST(Hopper, AWgmmaTileWrittenByTheThreadsGetsABarrierFirst) {
  const Kernel k = testing::fill_then_wgmma();
  Specialized s = specialize_for(k, Spec{}.with_arch(Arch::SM_90a));
  EXPECT_EQ(s.barriers, 1) << s.source;
  // The barrier sits between the stores and the wgmma.
  const auto barrier = s.source.find("__syncthreads()"), mma = s.source.find("wgmma.mma_async");
  ASSERT_NE(barrier, std::string::npos);
  EXPECT_LT(barrier, mma);
  // And the interpreter, which runs the wgmma, finds the tiles written before it reads them.
  std::vector<float> got(128, -1.0f);
  k.launch(Device::interpreter(), Grid{1, 128}, got);
  for (float v : got) EXPECT_EQ(v, 40.0f);
}

// wgmma reads its tiles through the async proxy, and plain stores write them through the generic
// one: a barrier between them orders the threads but not the proxies. Before, the tiles went to
// wgmma without fence.proxy.async, which PTX requires there (the GPU may read stale tile bytes).
TEST(Hopper, TilesStoredByTheThreadsAreFencedFromTheAsyncProxyBeforeTheBarrier) {
  const std::string fence = "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");";
  Specialized s = specialize_for(testing::fill_then_wgmma(), Spec{}.with_arch(Arch::SM_90a));
  const auto at = s.source.find(fence), barrier = s.source.find("__syncthreads()");
  ASSERT_NE(at, std::string::npos) << s.source;
  // Every storing thread fences, then arrives: the fence is the statement just before the barrier.
  EXPECT_LT(at, barrier);
  EXPECT_EQ(s.source.find(";", at + fence.size()), barrier + std::string("__syncthreads()").size());
  EXPECT_EQ(s.source.find(fence, at + 1), std::string::npos) << "one fence";
  EXPECT_TRUE(contains(testing::fill_then_wgmma().lowered(Spec{}.with_arch(Arch::SM_90a)), "after proxy fence"));
  if (nvrtc_available()) {  // and ptxas takes it
    Compiled c = compile(testing::fill_then_wgmma(), Spec{}.with_arch(Arch::SM_90a));
    EXPECT_FALSE(c.cubin.empty());
    EXPECT_EQ(c.log, "");
  }
  // The GEMMs' tiles are only ever written by TMA and read by wgmma, both async: no fence, and the
  // TMA box read back with plain loads after its mbarrier wait needs none either (the wait orders it).
  for (const char* name : {"gemm_wgmma_bf16", "gemm_wgmma_bf16_wide"}) {
    const auto& ex = gemm_example(name);
    EXPECT_FALSE(contains(specialize_for(ex.build(), ex.spec()).source, fence)) << name;
  }
  EXPECT_FALSE(contains(specialize_for(testing::tma_box_copy(32), Spec{}.with_arch(Arch::SM_90a)).source, fence));
}

// A TMA store: the threads' stores into the source, the fence and the barrier Vantage places, then
// one thread's bulk store and its wait; NVRTC and ptxas take it.
TEST(Hopper, ATmaStoreIsOneThreadsBulkStoreAfterAFencedBarrier) {
  const Kernel k = testing::tma_store_tiles();
  Specialized s = specialize_for(k, Spec{}.with_arch(Arch::SM_90a));
  const std::string& src = s.source;
  const auto fence = src.find("fence.proxy.async.shared::cta"), barrier = src.find("__syncthreads()"),
             store = src.find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"),
             wait = src.find("cp.async.bulk.wait_group.read %0;\" :: \"n\"(0)");
  ASSERT_NE(store, std::string::npos) << src;
  EXPECT_TRUE(contains(src, "cp.async.bulk.commit_group;"));
  EXPECT_TRUE(fence < barrier && barrier < store && store < wait && wait != std::string::npos) << src;
  EXPECT_EQ(s.barriers, 1);
  // Writing the source again before the wait: no barrier can order that, so it is refused.
  try {
    specialize_for(testing::tma_store_tiles(testing::StoreEnd::Rewrite), Spec{}.with_arch(Arch::SM_90a));
    ADD_FAILURE() << "the source written while the store may read it";
  } catch (const CheckError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    const Diagnostic& d = e.diagnostics()[0];
    EXPECT_EQ(d.code, "V1010") << d.message;
    EXPECT_TRUE(contains(d.message, "writes 'stage' while a TMA store may still read it")) << d.message;
    EXPECT_TRUE(contains(d.loc.file, "hopper_kernels.hpp"));
    ASSERT_FALSE(d.notes.empty());
    EXPECT_EQ(d.notes[0].message, "the TMA store is here");
  }
  if (nvrtc_available()) {
    Compiled c = compile(k, Spec{}.with_arch(Arch::SM_90a));
    EXPECT_FALSE(c.cubin.empty());
    EXPECT_EQ(c.log, "");
  }
}

// Rung 2 with a TMA-store epilogue: each consumer warpgroup's thread 0 waits until the store two
// chunks back has read its buffer (wait_group.read 1), and the warpgroup's barrier after that wait
// keeps the other threads from writing the buffer before it. Before, the pass took the barrier before
// the store as the end of its read and placed none there (a race on the GPU, the interpreter's
// racecheck in CI). 1 + 2 x (8 + 6) barriers: fenced ones before the 8 stores, one after each of
// the 6 waits. Every access proven (the swizzle's xor bounded); NVRTC and ptxas take it.
TEST(Hopper, ATmaStoreEpilogueWaitsBeforeABufferIsWrittenAgain) {
  const auto& ex = gemm_example("gemm_wgmma_bf16_wide");
  Specialized s = specialize_for(examples::wgmma_gemm("tma_epilogue", 256, 16, 0, true), ex.spec());
  const std::string& src = s.source;
  EXPECT_EQ(s.barriers, 29);
  EXPECT_EQ(s.checks.size(), 0u);
  int waits = 0;
  for (auto at = src.find("wait_group.read %0;\" :: \"n\"(1)"); at != std::string::npos;
       at = src.find("wait_group.read %0;\" :: \"n\"(1)", at + 1), ++waits) {
    const auto barrier = src.find("bar.sync", at), store = src.find("Cs[", at);
    ASSERT_NE(store, std::string::npos);
    EXPECT_LT(barrier, store) << "no barrier between a wait and the buffer's next stores";
  }
  EXPECT_EQ(waits, 12);
  if (nvrtc_available()) {
    Compiled bin = compile(examples::wgmma_gemm("tma_epilogue", 256, 16, 0, true), ex.spec());
    EXPECT_FALSE(bin.cubin.empty());
    EXPECT_EQ(bin.log, "");
  }
}

// What a TMA store may write: a view of its map's matrix that the storing thread owns (V0301, V0310),
// an offset of the matrix so that box rows land `cols` apart (V1012), of the map's element type, by
// one thread (V0501).
TEST(Hopper, ATmaStoreWritesOnlyItsOwnOffsetOfItsMapsMatrix) {
  int line = 0;
  // `how`: 0 into the tile the block owns, 1 into a const matrix, 2 by a warp, 3 from an i32 array.
  auto kernel = [&](int how) {
    return [&, how](KernelBuilder& k) {
      auto out = k.param<GlobalPtr<float>>("out", extent(16 * 64));
      auto in = k.param<GlobalPtr<const float>>("in", extent(16 * 64));
      TensorMap map = how == 1 ? k.tensor_map("m", in, 16, 64, 8, 32) : k.tensor_map("m", out, 16, 64, 8, 32);
      k.block_threads(128);
      k.body([&](Scope& g) {
        lib::for_each_tile(g, how == 1 ? in : out, 16, 64, 8, 32, [&](Scope& b, const lib::MatrixTile& tile) {
          View stage = b.shared_aligned("stage", how == 3 ? ScalarType::I32 : ScalarType::F32, 256, 1024);
          if (how == 0) {
            b.split(Level::Thread, {{1, [&](Scope& one) {
                                       line = __LINE__ + 1;
                                       one.tma_store(map, stage, 0, tile.view, 0);
                                     }}});
          } else if (how == 2) {
            b.claim(tile.view, warp(), [&](Scope& b, View mine) {
              b.split(Level::Thread, {{32, [&](Scope& w) {
                                         line = __LINE__ + 1;
                                         w.tma_store(map, stage, 0, mine, 0);
                                       }}});
            });
          } else {
            lib::by_one_thread(b, tile.view, [&](Scope& one, View mine) {
              line = __LINE__ + 1;
              one.tma_store(map, stage, 0, mine, 0);
            });
          }
        });
      });
    };
  };
  expect_rejected("V0301", line, kernel(0));
  expect_rejected("V0310", line, kernel(1));
  expect_rejected("V0501", line, kernel(2));
  expect_rejected("V0503", line, kernel(3));
  // At specialization: a view of another matrix than the map's, and one whose rows are not the
  // matrix's (element i + d is not i's plus d).
  for (int which = 0; which < 2; ++which) {
    KernelBuilder kb("stores");
    auto out = kb.param<GlobalPtr<float>>("out", extent(16 * 64));
    auto other = kb.param<GlobalPtr<float>>("other", extent(16 * 64));
    kb.block_threads(128);
    TensorMap map = kb.tensor_map("m", which == 0 ? other : out, 16, 64, 8, 32);
    kb.body([&](Scope& g) {
      lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
        View stage = b.shared_aligned("stage", ScalarType::F32, 256, 1024);
        // One block-wide share whose rows are 32 apart (i / 32 * 64 + i % 32 would be the matrix's).
        b.partition(
            out_b, block(1), [&](Expr i) { return which == 0 ? i : i / 32 * 32 + i % 32; },
            [&](Scope& b, View rows) {
              lib::by_one_thread(b, rows, [&](Scope& one, View mine) {
                line = __LINE__ + 1;
                one.tma_store(map, stage, 0, mine, 0);
                one.tma_store_wait(0);
              });
            });
      });
    });
    const Kernel k = kb.build();
    EXPECT_TRUE(refused_at_specialization(
        k, "V1012", line,
        which == 0 ? "is a view of 'out', and tensor map m is over 'other'" : "box rows land 64 apart"));
  }
}
}  // namespace
}  // namespace vantage
