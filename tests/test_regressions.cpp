// Regression tests for the bugs issue 7 names: each failed before its fix. Grouped by the stage the
// bug lived in; the name says what a user would have seen.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "kernels/paper_kernels.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

constexpr const char* kThisFile = "tests/test_regressions.cpp";

/// A diagnostic with `code` at `line` of this file (read after `build` ran, so it can set it), or a
/// failure listing what was reported. Build lambdas are defined outside the EXPECT macros: code inside
/// a macro argument gets the macro's line from std::source_location.
::testing::AssertionResult rejected_at(const std::string& code, const int& line, const std::function<Kernel()>& build) {
  try {
    build();
  } catch (const CheckError& e) {
    return testing::has_diag(e, code, line, kThisFile);
  }
  return ::testing::AssertionFailure() << "accepted; expected " << code << " at line " << line;
}

using test_support::count;

// ------------------------------------------------------------------ code generation
TEST(Regression, DeviceFunctionReturningHalfCompiles) {
  REQUIRE_NVRTC();
  FunctionBuilder f("to_half");
  f.requires_perspective(thread(1));
  f.returns(ScalarType::F16);
  auto x = f.param<float>("x");
  f.body([&](Scope& s) { s.ret(cast(ScalarType::F16, x)); });
  DeviceFunction fn = f.build();
  KernelBuilder k("calls_to_half");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.group(thread(1), [&](Scope& th) { th.call(fn, {1.0f}); });  // the only f16 is the callee's return
  });
  Compiled c = compile(k.build(), Spec{});
  EXPECT_FALSE(c.cubin.empty());
}

// A split branch made in place by emplace_back took its default source location inside the
// standard library's <vector>; its diagnostics named a line in libstdc++. They name the split.
TEST(Regression, SplitBranchMadeByEmplaceBackIsReportedAtTheUsersLine) {
  int line = 0;
  auto build = [&] {
    KernelBuilder k("emplaced_branch");
    k.block_threads(64);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        std::vector<SplitBranch> branches;
        branches.emplace_back(0, [](Scope&) {});  // no threads: V0108
        line = __LINE__ + 1;
        b.split(Level::Thread, std::move(branches));
      });
    });
    return k.build();
  };
  EXPECT_TRUE(rejected_at("V0108", line, build));
}

TEST(Regression, SharedArrayWhoseByteCountOverflowsIsRejected) {
  int line = 0;
  auto build = [&] {
    KernelBuilder k("huge_shared");
    k.block_threads(32);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) { line = __LINE__, b.shared<float>("s", Expr(std::int64_t{1} << 62)); });
    });
    return k.build();
  };
  EXPECT_TRUE(rejected_at("V0402", line, build));
}

TEST(Regression, LiteralThatDoesNotFitItsTypeIsRejected) {
  int line = 0;
  auto build = [&] {
    KernelBuilder k("big_literal");
    auto n = k.param<int>("n");
    k.block_threads(32);
    k.body([&](Scope& g) { line = __LINE__, g.let("m", n + 5000000000LL); });
    return k.build();
  };
  EXPECT_TRUE(rejected_at("V0707", line, build));
}

// A C++ number next to a float expression takes its type only where its value is unchanged
// (docs/semantics.md): `y * 1e300` with an f32 y became infinity, and `y * 16777217` built as
// 16777216. Each is now V0707 at the user's line, saying what the value would become and what to write.
std::string literal_diagnostic(const std::function<Expr(Expr)>& with, ScalarType t, int& line) {
  KernelBuilder k("literal");
  auto y = k.param<GlobalPtr<float>>("y");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.group(thread(1), [&](Scope& th) {
      Expr v = t == ScalarType::F32 ? Expr(y[0]) : cast(t, Expr(y[0]));
      th.let("v", with(v));
    });
  });
  try {
    k.build();
  } catch (const CheckError& e) {
    for (const auto& d : e.diagnostics())
      if (d.code == "V0707") {
        line = d.loc.line;
        return d.message;
      }
    return "other: " + render_all(e.diagnostics(), false);
  }
  return "accepted";
}

TEST(Regression, AFloatLiteralThatWouldChangeValueIsRejectedAtTheUsersLine) {
  struct Case {
    std::function<Expr(Expr)> with;
    ScalarType type;
    int line;
    std::string says;
  };
  std::vector<Case> cases;
  cases.push_back({[](Expr v) { return v * 1e300; }, ScalarType::F32, __LINE__,
                   "literal 1e+300 is not an f32 value (as one it would be inf): it is outside f32's range"});
  cases.push_back({[](Expr v) { return v * 16777217; }, ScalarType::F32, __LINE__,
                   "literal 16777217 is not an f32 value (as one it would be 16777216): write 16777216.0f if that "
                   "is meant"});
  cases.push_back({[](Expr v) { return v + 0.1; }, ScalarType::F32, __LINE__,
                   "literal 0.1 is not an f32 value (as one it would be 0.100000001): write 0.1f for the nearest "
                   "f32 value"});
  cases.push_back({[](Expr v) { return v * 1e-50; }, ScalarType::F32, __LINE__,
                   "(as one it would be 0): it is outside f32's range"});
  cases.push_back({[](Expr v) { return v * 70000; }, ScalarType::F16, __LINE__,
                   "literal 70000 is not an f16 value (as one it would be inf)"});
  cases.push_back({[](Expr v) { return v + 257; }, ScalarType::BF16, __LINE__,
                   "literal 257 is not a bf16 value (as one it would be 256): write bfloat16(256f) if that is meant"});
  for (const auto& c : cases) {
    int line = 0;
    const std::string said = literal_diagnostic(c.with, c.type, line);
    EXPECT_NE(said.find(c.says), std::string::npos) << said;
    EXPECT_EQ(line, c.line) << said;
  }
  // Values the type holds adapt as before.
  for (auto ok :
       std::vector<std::function<Expr(Expr)>>{[](Expr v) { return v * 0.5; }, [](Expr v) { return v + 2; },
                                              [](Expr v) { return v * 16777216; }, [](Expr v) { return v * 0.1f; }}) {
    int line = 0;
    EXPECT_EQ(literal_diagnostic(ok, ScalarType::F32, line), "accepted");
  }
  int line = 0;
  EXPECT_EQ(literal_diagnostic([](Expr v) { return v * 0.5; }, ScalarType::F16, line), "accepted");
}

TEST(Regression, NoFullUnrollOfALongConstantLoop) {
  KernelBuilder k("long_loop");
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            auto acc = th.let("acc", 0.0f);
            th.for_("i", 0, 8192, [&](Scope& th, Expr i) { th.assign(acc, acc * 0.5f + cast<float>(i)); });
            o[0] = acc;
          });
        });
  });
  std::string src = specialize_for(k.build(), Spec{}).source;
  EXPECT_EQ(count(src, "#pragma unroll\n"), 0) << src;
  EXPECT_EQ(count(src, "#pragma unroll 4\n"), 1) << "a bounded factor, so NVRTC does not unroll it fully itself";
}

// ------------------------------------------------------------------ builder
TEST(Regression, LetThroughOneKernelsScopeLandsInThatKernel) {
  KernelBuilder outer("outer");
  outer.block_threads(32);
  std::string inner_text;
  outer.body([&](Scope& go) {
    KernelBuilder inner("inner");
    inner.block_threads(32);
    inner.body([&](Scope& gi) {
      go.let("from_outer", 7);
      gi.let("from_inner", 8);
    });
    inner_text = inner.build().ir_text();
  });
  std::string outer_text = outer.build().ir_text();
  EXPECT_NE(outer_text.find("from_outer"), std::string::npos) << outer_text;
  EXPECT_EQ(inner_text.find("from_outer"), std::string::npos) << inner_text;
  EXPECT_NE(inner_text.find("from_inner"), std::string::npos) << inner_text;
}

TEST(Regression, ElementCopyIsReportedAtTheUsersLine) {
  int line = 0;
  auto build = [&] {
    KernelBuilder k("copy");
    auto in = k.param<GlobalPtr<const float>>("in");
    auto out = k.param<GlobalPtr<float>>("out");
    k.block_threads(32);
    k.body([&](Scope&) { line = __LINE__, out[0] = in[0]; });  // out was never narrowed
    return k.build();
  };
  EXPECT_TRUE(rejected_at("V0301", line, build));
  auto build_add = [&] {
    KernelBuilder k("accumulate");
    auto in = k.param<GlobalPtr<const float>>("in");
    auto out = k.param<GlobalPtr<float>>("out");
    k.block_threads(32);
    k.body([&](Scope&) { line = __LINE__, out[0] += in[0]; });
    return k.build();
  };
  EXPECT_TRUE(rejected_at("V0301", line, build_add));
}

/// The folders of the library itself: no diagnostic or `#line` may point into them.
bool in_library(const std::string& file) {
  static const std::string root = VANTAGE_SOURCE_DIR;
  for (const char* dir : {"/frontend/", "/jit/", "/cache/", "/support/", "/include/", "/runtime/"})
    if (file.rfind(root + dir, 0) == 0) return true;
  return false;
}

TEST(Regression, NoLineDirectiveOfAnExamplePointsIntoTheLibrary) {
  static const std::regex kLine(R"(#line \d+ \"([^\"]*)\")");
  for (const auto& ex : examples::all()) {
    std::string src = specialize_for(ex.build(), ex.spec()).source;
    int directives = 0;
    for (auto it = std::sregex_iterator(src.begin(), src.end(), kLine); it != std::sregex_iterator(); ++it) {
      ++directives;
      EXPECT_FALSE(in_library((*it)[1].str())) << ex.name << ": " << (*it)[0].str();
    }
    EXPECT_GT(directives, 0) << ex.name;
  }
}

// ------------------------------------------------------------------ target legality
TEST(Regression, AtomicMinOnFloatIsRejectedByTheChecker) {
  int line = 0;
  auto build = [&] {
    KernelBuilder k("atomic_min_f32");
    auto out = k.param<GlobalPtr<float>>("out");
    k.block_threads(32);
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) { line = __LINE__, th.atomic("old", AtomicOp::Min, out, 0, 1.0f); });
    });
    return k.build();
  };
  EXPECT_TRUE(rejected_at("V0505", line, build));
}

TEST(Regression, AtomicAddOnI64Compiles) {
  REQUIRE_NVRTC();
  KernelBuilder k("atomic_add_i64");
  auto out = k.param<GlobalPtr<std::int64_t>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.group(thread(1), [&](Scope& th) { th.atomic("old", AtomicOp::Add, out, 0, std::int64_t{1}); });
  });
  EXPECT_FALSE(compile(k.build(), Spec{}).cubin.empty());
}

TEST(Regression, UserNamedBarrierInReplicatedGroupsIsRejected) {
  int line = 0;
  Kernel k = [&] {
    KernelBuilder b("named_in_groups");
    b.block_threads(256);
    b.body([&](Scope& g) {
      g.group(block(1), [&](Scope& blk) {
        blk.group(thread(64), [&](Scope& u) { line = __LINE__, u.named_barrier(1, 64); });  // four groups, one id
      });
    });
    return b.build();
  }();
  try {
    specialize_for(k, Spec{});
    ADD_FAILURE() << "four concurrently running groups were given one barrier id";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V1007", line, kThisFile));
  }
}

/// Threads 0..63 use the user's barrier 3; the thread(64) groups of threads 128..255 (units 2 and 3
/// of the block) get automatic barriers, whose ids must avoid 3.
Kernel user_and_automatic_barriers() {
  KernelBuilder b("user_and_auto");
  b.block_threads(256);
  b.body([&](Scope& g) {
    g.group(block(1), [&](Scope& blk) {
      auto s = blk.shared<float>("s", 256);
      auto t = blk.let("t", blk.id(thread(1)));
      blk.partition(
          s, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& blk, View s_t) {
            blk.split(Level::Thread, {{64, [&](Scope& a) { a.named_barrier(3, 64); }},
                                      {64, [&](Scope&) {}},
                                      {128, [&](Scope& rest) {
                                         rest.group(thread(64), [&](Scope& u) {
                                           auto r = u.let("r", u.id(thread(1)));
                                           u.group(thread(1), [&](Scope&) { s_t[0] = cast<float>(r); });
                                           u.let("next", s_t[(r + 1) % 64 - r]);
                                         });
                                       }}});
          });
    });
  });
  return b.build();
}

TEST(Regression, AutomaticBarrierIdsAvoidTheUsersIds) {
  std::string src = specialize_for(user_and_automatic_barriers(), Spec{}).source;
  static const std::regex kAuto(R"(bar\.sync %0, %1;\" :: \"r\"\((\d+)u \+ threadIdx\.x / 64u\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(src, m, kAuto)) << src;
  int base = std::stoi(m[1].str());
  for (int unit = 0; unit < 4; ++unit) EXPECT_NE(base + unit, 3) << src;
  EXPECT_LE(base + 3, 15);
}

TEST(Regression, OverlappingViewsPassedToAFunctionAreRejected) {
  FunctionBuilder f("axpy_into");
  f.requires_perspective(thread(1));
  auto a = f.pointer_param("a", ScalarType::F32, MemSpace::Shared, true);
  auto c = f.pointer_param("c", ScalarType::F32, MemSpace::Shared, false);
  f.body([&](Scope& s) {
    s.partition(
        c, thread(1), [&](Expr i) { return i; }, [&](Scope&, View c1) { c1[0] = a[1]; });
  });
  DeviceFunction fn = f.build();
  int line = 0;
  auto build = [&] {
    KernelBuilder k("aliasing_call");
    k.block_threads(32);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto s = b.shared<float>("s", 64);
        b.claim(s, thread(1), [&](Scope& b, View mine) {
          b.split(Level::Thread, {{1, [&](Scope& one) { line = __LINE__, one.call(fn, {mine, mine}); }}});
        });
      });
    });
    return k.build();
  };
  EXPECT_TRUE(rejected_at("V0609", line, build));
}

// ------------------------------------------------------------------ shared memory
TEST(Regression, PaddingCountsAgainstTheSharedBudget) {
  int line = 0;
  auto build = [&] {
    KernelBuilder k("two_scalars");
    k.block_threads(32);
    k.shared_budget(8);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        b.shared<float>("a", 1);
        line = __LINE__, b.shared<float>("b", 1);  // 4 bytes after a 16-byte aligned start: 20 > 8
      });
    });
    return k.build();
  };
  EXPECT_TRUE(rejected_at("V0403", line, build));
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// The CPU backend made `add i32 %t, i64 0` (invalid LLVM IR, and a failed compile) for a view index
// of another width than its partition's index variable: t + i with i the i64 the code wrote
// (mine[Expr(0LL)]). Found by lib::stage_tile; the operands are now widened by their signedness.
// It runs on the interpreter in both thread orders as well, so a build without the CPU backend (the
// GPU bundle) still checks the kernel's meaning; a build with it must have it (Cpu.ABuildWithTheBackendHasIt).
TEST(Regression, AViewIndexOfAnotherWidthCompilesOnTheCpuBackend) {
  KernelBuilder k("mixed_width_index");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope&) { mine[Expr(static_cast<long long>(0))] = t * 3; });
          });
    });
  });
  Kernel kernel = k.build();
  std::vector<int> want(64);
  for (int i = 0; i < 64; ++i) want[static_cast<std::size_t>(i)] = i * 3;
  InterpreterOptions reverse;
  reverse.order = ThreadOrder::Reverse;
  std::vector<Device> devices = {Device::interpreter(), Device::interpreter(reverse)};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<int> got(64, -1);
    kernel.launch(d, Grid{1, 64}, got);
    EXPECT_EQ(got, want) << d.name();
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// x[min(i + INT_MAX, 5)] is x[5] (index arithmetic is exact), so lowering proves it in bounds and
// makes no check. The CPU backend computed it in i32: i + INT_MAX wrapped to a negative number for
// i >= 1, the min took it, and the unchecked load read far outside x (a segfault). Lowering now
// rebuilds in i64 the part of an index where a wrapped intermediate would reach a min, max,
// division or remainder.
TEST(Regression, AnIndexProvenOnItsExactValueIsComputedExactlyOnEveryBackend) {
  KernelBuilder k("exact_index");
  auto x = k.param<GlobalPtr<const int>>("x", extent(16));
  auto out = k.param<GlobalPtr<int>>("out", extent(32));
  k.block_threads(32);
  k.body(
      [&](Scope& g) { lib::for_each(g, out, 32, [&](Scope&, Expr i, ElemRef o) { o = x[min(i + 2147483647, 5)]; }); });
  Kernel kernel = k.build();
  std::string lowered = kernel.lowered(Spec{});
  EXPECT_EQ(lowered.find("if <"), std::string::npos) << "proven in bounds, so not checked:\n" << lowered;
  std::vector<int> xs(16);
  for (int i = 0; i < 16; ++i) xs[static_cast<std::size_t>(i)] = 100 + i;
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<int> o(32, -1);
    kernel.launch(d, Grid{1, 32}, std::as_const(xs), o);
    EXPECT_EQ(o, std::vector<int>(32, 105)) << d.name();
  }
  // The generated CUDA computes the sum in 64 bits too.
  EXPECT_NE(kernel.source(Spec{}).find("2147483647LL"), std::string::npos) << kernel.source(Spec{});
}

// Found by the random bounds programs (seed 20880 of a 3000-program sweep): a u32 index past 2^32,
// `x[j + 4294967295u]` with j a loaded value of 1 to 4, is 4294967296 to 4294967299, outside x.
// The interpreter and the CPU backend computed the sum at u32, wrapped to x[0..3], inside, and ran
// clean, while the generated CUDA computes it in 64 bits and reported it. Lowering now rebuilds a
// u32 index whose exact value may pass 2^32 in i64, so every backend reports it.
TEST(Regression, AnUnsignedIndexPast2To32IsOutsideOnEveryBackend) {
  KernelBuilder k("u32_past_wrap");
  auto x = k.param<GlobalPtr<const unsigned>>("x", extent(8));
  auto out = k.param<GlobalPtr<unsigned>>("out", extent(32));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each(g, out, 32, [&](Scope&, Expr i, ElemRef o) { o = x[x[i % 4] + Expr(4294967295u)]; });
  });
  Kernel kernel = k.build();
  std::vector<unsigned> xs{1, 2, 3, 4, 50, 60, 70, 80};
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<unsigned> o(32, 0);
    try {
      kernel.launch(d, Grid{1, 32}, std::as_const(xs), o);
      ADD_FAILURE() << d.name() << ": x[4294967296] was read as an element of x";
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), "memcheck") << d.name() << ": " << e.what();
    }
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// Found by the random programs (seed 7648 of test_random_run at 20000 runs): after the threads fill
// s[128], thread t reads s[(6t) & 127]. LLVM 19's loop vectorizer made the 16 reads of threads 16..31
// one wide load of s[96..191] with a stride of 6, as if 6t & 127 did not wrap inside the vector
// (llvm-project's interleaved-access analysis keeps a no-wrap assumption it never checks): threads
// 22..31 read past the end of s, the CPU backend's result differed from the interpreter's, and no
// check could see it (the index is proven in bounds). The value read picks the store's slot, as in
// the random program (with a plain store LLVM does not group the reads). The CPU backend now turns
// LLVM's interleaved access groups off: such reads are gathers, each lane its own index.
TEST(Regression, AStridedIndexThatWrapsInsideAVectorIsReadWhereItWraps) {
  KernelBuilder k("wrapping_stride");
  auto x = k.param<GlobalPtr<const int>>("x", extent(128));
  auto out = k.param<GlobalPtr<int>>("out", extent(256));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
      View s = b.shared<int>("s", 128);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          s, thread(1), [&](Expr i) { return t * 2 + i; },
          [&](Scope& b, View s_t) {
            b.group(thread(1), [&](Scope& th) { th.for_("i", 0, 2, [&](Scope&, Expr i) { s_t[i] = x[t * 2 + i]; }); });
          });
      b.partition(
          out_b, thread(1), [&](Expr i) { return t * 4 + i; },
          [&](Scope& b, View o_t) {
            b.group(thread(1), [&](Scope& th) {
              auto v = th.let("v", s[(t * 6) & 127]);
              o_t[v & 3] = v;
            });
          });
    });
  });
  Kernel kernel = k.build();
  std::vector<int> xs(128), want(256, -1);
  for (int i = 0; i < 128; ++i) xs[static_cast<std::size_t>(i)] = 1000 + i;
  for (int t = 0; t < 64; ++t) {
    const int v = 1000 + ((6 * t) & 127);
    want[static_cast<std::size_t>(t * 4 + (v & 3))] = v;
  }
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<int> o(256, -1);
    kernel.launch(d, Grid{1, 64}, std::as_const(xs), o);
    EXPECT_EQ(o, want) << d.name();
  }
}

// ------------------------------------------------------------------ bounds proofs
// Lowering proved an access in bounds from a condition or a let that no longer held where the
// access ran, and left it unchecked: the GPU and the CPU backend then wrote outside the buffer's
// extent without a word (the interpreter, which checks every access, found it). Each kernel below
// stores through `o`, a claim of `x` (extent n = 32, in a buffer of 64 elements), at an index past
// the extent. Lowering must check the store: the interpreter and the CPU backend stop with memcheck
// at the store's line, and no element past the extent changes.
void expect_checked_store(const std::string& what, const int& line,
                          const std::function<void(Scope&, View, Expr)>& store) {
  SCOPED_TRACE(what);
  KernelBuilder k("stale_fact");
  auto n = k.param<unsigned>("n");
  auto x = k.param<GlobalPtr<int>>("x", extent(n));
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.claim(x, thread(1), [&](Scope& g, View o) {
      g.split(Level::Thread, {{1, [&](Scope& th) { store(th, o, n); }}});
    });
  });
  Kernel kernel = k.build();
  // Not launched when proven: the CPU backend would then store far outside the buffer.
  ASSERT_EQ(specialize_for(kernel, Spec{}).checks.size(), 1u) << kernel.lowered(Spec{});
  std::vector<Device> devices{Device::interpreter({ThreadOrder::Forward, 1, true}),
                              Device::interpreter({ThreadOrder::Reverse, 1, true})};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<int> buf(64, 0);
    try {
      kernel.launch(d, Grid{1, 32}, 32u, buf);
      ADD_FAILURE() << d.name() << ": the store past the extent went unreported";
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), "memcheck") << d.name() << ": " << e.what();
      ASSERT_FALSE(e.locs().empty()) << e.what();
      EXPECT_EQ(e.locs()[0].line, static_cast<std::uint32_t>(line)) << d.name() << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << d.name() << ": " << e.what();
    }
    for (std::size_t i = 32; i < buf.size(); ++i) EXPECT_EQ(buf[i], 0) << d.name() << " wrote x[" << i << "]";
  }
}

TEST(Regression, AConditionOnAVariableAssignedAfterItProvesNothing) {
  int line = 0;
  expect_checked_store("assigned inside the branch", line, [&](Scope& th, View o, Expr n) {
    auto i = th.let("i", n - 1u);
    th.if_(i < n, [&](Scope& th) {
      th.assign(i, i + 1u);
      line = __LINE__, o[i] = 7;
    });
  });
  expect_checked_store("assigned later in a loop inside the branch", line, [&](Scope& th, View o, Expr n) {
    auto i = th.let("i", n - 2u);
    th.if_(i < n, [&](Scope& th) {
      th.for_("r", 0, 3, [&](Scope& th, Expr) {
        line = __LINE__, o[i] = 7;  // the second round's i is n
        th.assign(i, i + 1u);
      });
    });
  });
  expect_checked_store("assigned in a while loop inside the branch", line, [&](Scope& th, View o, Expr n) {
    auto i = th.let("i", n - 2u);
    auto c = th.let("c", 0);
    th.if_(i < n, [&](Scope& th) {
      th.while_(c < 3, [&](Scope& th) {
        line = __LINE__, o[i] = 7;
        th.assign(i, i + 1u);
        th.assign(c, c + 1);
      });
    });
  });
}

TEST(Regression, ALetOfAVariableAssignedLaterDoesNotStandForIt) {
  int line = 0;
  expect_checked_store("a let of i, then i moves", line, [&](Scope& th, View o, Expr n) {
    auto i = th.let("i", n + 2u);
    auto a = th.let("a", i);  // a keeps n + 2
    th.assign(i, i - 5u);
    th.if_(i < n, [&](Scope&) { line = __LINE__, o[a] = 7; });
  });
}

TEST(Regression, AConditionOnMemoryProvesNothingAfterAStoreToIt) {
  int line = 0;
  expect_checked_store("a thread-local element", line, [&](Scope& th, View o, Expr n) {
    auto l = th.local_array("l", ScalarType::U32, 1);
    l[0] = n - 1u;
    th.if_(l[0] < n, [&](Scope&) {
      l[0] = n + 3u;
      line = __LINE__, o[l[0]] = 7;
    });
  });
  expect_checked_store("a let of an element that is then stored to", line, [&](Scope& th, View o, Expr n) {
    auto l = th.local_array("l", ScalarType::U32, 1);
    l[0] = n + 3u;
    auto a = th.let("a", l[0]);
    l[0] = n - 1u;
    th.if_(l[0] < n, [&](Scope&) { line = __LINE__, o[a] = 7; });
  });
}

// The upper-bound proof compares the index and the conditions as sums: it put in the values of
// lets and looked through widening casts, as if the arithmetic under them were exact. Where that
// arithmetic wraps at its own type it is not: `let w = u - 5u` is 4294967291 for u = 0, not -5, so
// `if (u < n) o[w]` was proven inside (n - w = n - u + 5 >= 6), and the store went to x[4294967291]
// unchecked. The same through `i64(u - 5u)`. A let's value stands for it, and a cast is seen
// through, only where the arithmetic under it cannot wrap (found reading the proof).
TEST(Regression, ALetOrCastOverArithmeticThatWrapsIsNotTakenAsItsExactValue) {
  int line = 0;
  expect_checked_store("a let of a u32 difference", line, [&](Scope& th, View o, Expr n) {
    auto u = th.let("u", n / 64u);  // 0
    auto w = th.let("w", u - 5u);
    th.if_(u < n, [&](Scope&) { line = __LINE__, o[w] = 7; });
  });
  expect_checked_store("a u32 difference widened", line, [&](Scope& th, View o, Expr n) {
    auto u = th.let("u", n / 64u);
    th.if_(u < n, [&](Scope&) { line = __LINE__, o[cast(ScalarType::I64, u - 5u)] = 7; });
  });
}

// The same in the proof for rows of a variable length (products multiplied out): `i64(r * m + (c -
// 1u))` under `r < n && c < m` was taken as r * m + c - 1, below n * m; for r = c = 0 the u32
// arithmetic gives 4294967295.
TEST(Regression, ARowIndexWidenedFromArithmeticThatWrapsIsChecked) {
  int line = 0;
  KernelBuilder k("wrapped_row");
  auto n = k.param<unsigned>("n");
  auto m = k.param<unsigned>("m");
  auto a = k.param<GlobalPtr<const unsigned>>("a", extent(n * m));
  auto out = k.param<GlobalPtr<unsigned>>("out", extent(32));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each(g, out, 32, [&](Scope& s, Expr i, ElemRef o) {
      auto r = s.let("r", cast(ScalarType::U32, i) / 64u), c = s.let("c", cast(ScalarType::U32, i) / 32u);  // 0
      s.if_(r < n && c < m, [&](Scope&) { line = __LINE__, o = a[cast(ScalarType::I64, r * m + (c - 1u))]; });
    });
  });
  Kernel kernel = k.build();
  ASSERT_EQ(specialize_for(kernel, Spec{}).checks.size(), 1u) << kernel.lowered(Spec{});
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<unsigned> as(12, 1), o(32, 0);
    try {
      kernel.launch(d, Grid{1, 32}, 3u, 4u, std::as_const(as), o);
      ADD_FAILURE() << d.name() << ": a[4294967295] was read as an element of a";
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), "memcheck") << d.name() << ": " << e.what();
      ASSERT_FALSE(e.locs().empty()) << e.what();
      EXPECT_EQ(e.locs()[0].line, static_cast<std::uint32_t>(line)) << d.name() << ": " << e.what();
    }
  }
}

// lib::copy guarded each thread's run with `i64(blk * 1024 + t * 4) + 4 <= n`: the product was an
// i32 and wrapped from block 2^21 on (a grid of 2^31 threads is allowed), so that block's threads
// took the guard as true, and the proof above, taking the cast as exact, left their reads of
// in[2^31 + ...] unchecked. The guard is now computed in 64 bits (`i64(blk) * 1024 + ...`); the
// blocks past n copy nothing. Only the CPU backend runs 2^21 blocks in a test's time.
/// The devices that run a grid of 2^21 blocks in a test's time: the CPU backend and a GPU (in the GPU
/// bundle's check, which is built without the CPU backend).
std::vector<Device> large_grid_devices() {
  std::vector<Device> d;
  if (Device::cpu_available()) d.push_back(Device::cpu(2));
  if (Device::gpu_count() > 0) d.push_back(Device::gpu(0));
  return d;
}
/// `host` in a new buffer of `d`.
template <class T>
DeviceBuffer<T> on(const Device& d, const std::vector<T>& host) {
  DeviceBuffer<T> b = d.alloc<T>(static_cast<std::int64_t>(host.size()));
  b.copy_from(host);
  return b;
}

TEST(Regression, LibCopyOnAGridPast2To31ElementsCopiesItsElementsAndNothingElse) {
  if (large_grid_devices().empty()) GTEST_SKIP() << "no CPU backend in this build and no GPU";
  KernelBuilder k("copy_huge_grid");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const float>>("in", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) { lib::copy(g, out, in, n); });
  Kernel kernel = k.build();
  EXPECT_EQ(specialize_for(kernel, Spec{}).checks.size(), 0u) << kernel.lowered(Spec{});
  std::vector<float> a(4099);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f;
  for (const Device& d : large_grid_devices()) {
    std::vector<float> b(4100, -1.0f);
    const auto in = on(d, a);
    auto out = on(d, b);
    kernel.launch(d, Grid{(1 << 21) + 1, 256}, 4099, in, out);
    out.copy_to(b);
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(b[i], a[i]) << d.name() << ", out[" << i << "]";
    EXPECT_EQ(b[4099], -1.0f) << d.name();
  }
}

// lib::for_each with 4 items per thread tested `blk * 1024 + t + k * 256 < n` in i32: from block
// 2^21 on it wraps below 0 (and from 2^22 back under n, where those threads ran the body at the
// elements of block 0), so threads far past n ran the body. With several items the test is made in
// 64 bits.
TEST(Regression, LibForEachOfSeveralItemsOnAGridPast2To31ElementsRunsEachElementOnce) {
  if (large_grid_devices().empty()) GTEST_SKIP() << "no CPU backend in this build and no GPU";
  KernelBuilder k("for_each_huge_grid");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  auto runs = k.param<GlobalPtr<int>>("runs", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each(
        g, y, n,
        [&](Scope& th, Expr i, ElemRef o) {
          o = x[i] * 3;
          th.atomic(AtomicOp::Add, runs, i, 1);
        },
        lib::Tile{4});
  });
  Kernel kernel = k.build();
  std::vector<int> xs(1000);
  for (int i = 0; i < 1000; ++i) xs[static_cast<std::size_t>(i)] = i - 300;
  for (const Device& d : large_grid_devices()) {
    std::vector<int> ys(1000, 0), rs(1000, 0);
    const auto x = on(d, xs);
    auto y = on(d, ys), runs = on(d, rs);
    kernel.launch(d, Grid{(1 << 21) + 1, 256}, 1000, x, y, runs);
    y.copy_to(ys);
    runs.copy_to(rs);
    for (std::size_t i = 0; i < 1000; ++i) {
      ASSERT_EQ(ys[i], xs[i] * 3) << d.name() << ", y[" << i << "]";
      ASSERT_EQ(rs[i], 1) << d.name() << ", element " << i << " ran " << rs[i] << " times";
    }
  }
}

// ------------------------------------------------------------------ CPU backend
// A clamped read (`w[min(a, 47)]`, checked) whose `a` holds a checked read of its own: the CPU
// backend computed `a` a second time inside the branch it makes for the clamp, the inner check's
// blocks landed between the branch and its join, and LLVM refused the module ("PHI node entries do
// not match predecessors"). Found by tests/test_random_bounds.cpp (seed 80).
TEST(Regression, AClampedReadWhoseIndexHoldsACheckedReadCompilesOnTheCpu) {
  KernelBuilder k("clamp_of_a_read");
  auto w = k.param<GlobalPtr<const int>>("w");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View o) { g.group(thread(1), [&](Scope&) { o[0] = w[min(w[t], 47)]; }); });
  });
  Kernel kernel = k.build();
  std::vector<int> ws(48), want(32);
  for (int i = 0; i < 48; ++i) ws[static_cast<std::size_t>(i)] = (i * 29 + 5) % 61;
  for (int i = 0; i < 32; ++i)
    want[static_cast<std::size_t>(i)] = ws[static_cast<std::size_t>(std::min(ws[static_cast<std::size_t>(i)], 47))];
  std::vector<Device> devices{Device::interpreter({ThreadOrder::Forward, 1, true}),
                              Device::interpreter({ThreadOrder::Reverse, 1, true})};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));  // the backend the bug was in
  for (const Device& d : devices) {
    std::vector<int> got(32, -1);
    kernel.launch(d, Grid{1, 32}, std::as_const(ws), got);
    EXPECT_EQ(got, want) << d.name();
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
/// Thread t's loop `for e in [0, 4): out[t * 4 + e] = in[index(t, e)]`, with `out` and `in` extents
/// that prove the vector inside, run on the interpreter and the CPU backend against `want(t, e)`.
void expect_copy_loop(const std::string& name, const std::function<Expr(Expr t, Expr e, View mine)>& index,
                      const std::function<int(int t, int e, const std::vector<int>& in)>& want) {
  KernelBuilder k(name);
  auto in = k.param<GlobalPtr<const int>>("in", extent(256));
  auto out = k.param<GlobalPtr<int>>("out", extent(128));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t * 4 + i; },
        [&](Scope& g, View mine) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(t < 32,
                   [&](Scope& th) { th.for_("e", 0, 4, [&](Scope&, Expr e) { mine[e] = in[index(t, e, mine)]; }); });
          });
        });
  });
  Kernel kernel = k.build();
  std::vector<int> xs(256);
  for (int i = 0; i < 256; ++i) xs[static_cast<std::size_t>(i)] = 1001 + i;
  std::vector<int> expect(128);
  for (int t = 0; t < 32; ++t)
    for (int e = 0; e < 4; ++e) expect[static_cast<std::size_t>(t * 4 + e)] = want(t, e, xs);
  EXPECT_EQ(kernel.source(Spec{}).find("int4"), std::string::npos) << name << ": made one vector copy";
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<int> o(128, 0);
    kernel.launch(d, Grid{1, 32}, std::as_const(xs), o);
    EXPECT_EQ(o, expect) << name << " on " << d.name();
  }
}

// `out[t * 4 + e] = in[(e / 2) * 4 + e + t * 4]` for e in [0, 4) has aligned ends and e once with
// step 1, so lowering made it one 16-byte copy of in[t * 4 .. t * 4 + 4) on every backend, the
// interpreter included: round 2 reads in[t * 4 + 6], not in[t * 4 + 2]. A term other than the
// counter must now be the same in every round (it may not read the counter, or memory that may
// change), and the interpreter runs every vector copy as its loop and checks that each round copies
// the vector's element, so a lowering that gets this wrong fails as a Vantage bug.
TEST(Regression, ACopyLoopWhoseOtherTermsReadTheCounterIsNotOneVector) {
  expect_copy_loop(
      "counter_in_a_term", [](Expr t, Expr e, View) { return (e / 2) * 4 + e + t * 4; },
      [](int t, int e, const std::vector<int>& in) { return in[static_cast<std::size_t>((e / 2) * 4 + e + t * 4)]; });
}

// The same with a term that loads the element round 0 stores: `out[t*4 + e] = in[(out[t*4] & 3)
// * 4 + e + 8]` reads out[t*4] again in each round, after round 0 changed it.
TEST(Regression, ACopyLoopWhoseOtherTermsReadWhatItStoresIsNotOneVector) {
  expect_copy_loop(
      "stored_in_a_term", [](Expr, Expr e, View mine) { return (mine[0] & 3) * 4 + e + 8; },
      [](int, int e, const std::vector<int>& in) {
        // Round 0 reads out[t*4] == 0, so in[8] (1009); later rounds read in[8]'s low bits (1).
        int first = in[8];
        return e == 0 ? first : in[static_cast<std::size_t>((first & 3) * 4 + e + 8)];
      });
}

// semantics.md's known gap, closed: an i32 index whose exact value passes 2^32, `x[j * 2^30]` with j
// a loaded 4, is 4294967296, outside x. The interpreter and the CPU backend computed it at i32,
// wrapped to x[0], inside, and ran clean (the generated CUDA computes it in 64 bits and reports it).
// Lowering now rebuilds in i64 any index whose exact value may leave its type, signed or not, in
// either direction (`x[j * -2^30]` is -4294967296).
TEST(Regression, ASignedIndexPast2To32IsOutsideOnEveryBackend) {
  for (long long scale : {1073741824LL, -1073741824LL}) {
    KernelBuilder k("i32_past_wrap");
    auto x = k.param<GlobalPtr<const int>>("x", extent(8));
    auto out = k.param<GlobalPtr<int>>("out", extent(32));
    k.block_threads(32);
    k.body([&](Scope& g) {
      lib::for_each(g, out, 32, [&](Scope&, Expr i, ElemRef o) { o = x[x[i % 2] * Expr(static_cast<int>(scale))]; });
    });
    Kernel kernel = k.build();
    std::vector<int> xs{4, 4, 3, 4, 50, 60, 70, 80};
    std::vector<Device> devices{Device::interpreter()};
    if (Device::cpu_available()) devices.push_back(Device::cpu(1));
    for (const Device& d : devices) {
      std::vector<int> o(32, 0);
      try {
        kernel.launch(d, Grid{1, 32}, std::as_const(xs), o);
        ADD_FAILURE() << d.name() << ": x[" << 4 * scale << "] was read as an element of x";
      } catch (const ExecutionError& e) {
        EXPECT_EQ(e.check(), "memcheck") << d.name() << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(std::to_string(4 * scale)), std::string::npos) << e.what();
      }
    }
  }
}
}  // namespace
}  // namespace vantage
