// Programs the checker must reject, continued: calls, types, unsafe blocks and returns, kernel
// headers and builder misuse, and every error of one program in one pass. Each asserts the
// diagnostic code and the user's line.
#include <fstream>
#include <regex>
#include <sstream>

#include "frontend/handles.h"
#include "jit/ir/ir.h"
#include "reject_helpers.hpp"

namespace vantage {
namespace {

using Fn = FunctionBuilder;
using KB = KernelBuilder;

// ------------------------------------------------------------------ calls
DeviceFunction warp_fn() {
  FunctionBuilder f("warp_fn");
  f.requires_perspective(warp());
  auto out = f.param<GlobalPtr<float>>("out");
  auto scale = f.param<float>("scale", at(warp()));
  f.body([&](Scope& w) {
    auto lane = w.let("lane", w.id(thread(1)));
    w.partition(
        out, thread(1), [&](Expr i) { return lane + i; }, [&](Scope&, View o) { o[0] = scale; });
  });
  return f.build();
}

DeviceFunction reader_fn() {
  FunctionBuilder f("reader_fn");
  f.requires_perspective(thread(1));
  f.shared_budget(256);
  auto in = f.param<GlobalPtr<const float>>("in", at(block(1)));
  f.body([&](Scope& th) { th.let("v", in[0]); });
  return f.build();
}

TEST(Reject, CallWithTooNarrowAPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0601", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        th.call(warp_fn(), {y, 1.0f});
      });
    });
  });
}

TEST(Reject, CallWithWrongArgumentCount) {
  int bad = 0;
  expect_kernel_rejected("V0602", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const float>>("x");
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        th.call(reader_fn(), {x, 2});
      });
    });
  });
}

TEST(Reject, CallWithWrongArgumentType) {
  int bad = 0;
  expect_kernel_rejected("V0603", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        th.call(reader_fn(), {Expr(1.5f)});
      });
    });
  });
}

TEST(Reject, ScalarArgumentVariesFasterThanItsParameter) {
  int bad = 0;
  expect_kernel_rejected("V0604", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      g.partition(
          y, warp(), [&](Expr i) { return i; },
          [&](Scope& g, View y_w) {
            g.group(warp(), [&](Scope& w) {
              auto lane = w.let("lane", w.id(thread(1)));
              bad = __LINE__ + 1;
              w.call(warp_fn(), {y_w, cast<float>(lane)});
            });
          });
    });
  });
}

TEST(Reject, MutablePointerArgumentFromAWiderPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0605", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      g.group(warp(), [&](Scope& w) {
        bad = __LINE__ + 1;
        w.call(warp_fn(), {y, 1.0f});
      });
    });
  });
}

TEST(Reject, ConstPointerArgumentFromANarrowerPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0606", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const float>>("x");
    k.body([&](Scope& g) {
      auto t = g.let("t", g.id(thread(1)));
      g.partition(
          x, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& g, View x_t) {
            g.group(thread(1), [&](Scope& th) {
              bad = __LINE__ + 1;
              th.call(reader_fn(), {x_t});
            });
          });
    });
  });
}

TEST(Reject, CalleeSharedBudgetDoesNotFit) {
  int bad = 0;
  expect_kernel_rejected("V0607", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const float>>("x");
    k.shared_budget(512);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        b.shared<float>("s", 100);
        b.group(thread(1), [&](Scope& th) {
          bad = __LINE__ + 1;
          th.call(reader_fn(), {x});
        });
      });
    });
  });
}

TEST(Reject, ConstMemoryPassedAsMutable) {
  int bad = 0;
  expect_kernel_rejected("V0608", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const float>>("x");
    k.body([&](Scope& g) {
      g.partition(
          x, warp(), [&](Expr i) { return i; },
          [&](Scope& g, View x_w) {
            g.group(warp(), [&](Scope& w) {
              bad = __LINE__ + 1;
              w.call(warp_fn(), {x_w, 1.0f});
            });
          });
    });
  });
}

// ------------------------------------------------------------------ types
TEST(Reject, OperandsOfDifferentTypes) {
  int bad = 0;
  expect_kernel_rejected("V0701", bad, [&](KB& k) {
    auto n = k.param<int>("n");
    auto a = k.param<float>("a");
    k.body([&](Scope& g) {
      bad = __LINE__ + 1;
      g.let("x", n + a);
    });
  });
}

TEST(Reject, BitwiseOnFloat) {
  int bad = 0;
  expect_kernel_rejected("V0702", bad, [&](KB& k) {
    auto a = k.param<float>("a");
    k.body([&](Scope& g) {
      bad = __LINE__ + 1;
      g.let("x", a & a);
    });
  });
}

TEST(Reject, BitFunctionsOfAFloatOrABool) {
  for (auto fn : {popc, clz, ffs, brev}) {
    int bad = 0;
    expect_kernel_rejected("V0702", bad, [&](KB& k) {
      auto a = k.param<float>("a");
      k.body([&](Scope& g) {
        bad = __LINE__ + 1;
        g.let("x", fn(a));
      });
    });
    expect_kernel_rejected("V0702", bad, [&](KB& k) {
      auto n = k.param<int>("n");
      k.body([&](Scope& g) {
        bad = __LINE__ + 1;
        g.let("x", fn(n < 3));
      });
    });
  }
}

TEST(Reject, IfOnAnInteger) {
  int bad = 0;
  expect_kernel_rejected("V0703", bad, [&](KB& k) {
    auto n = k.param<int>("n");
    k.body([&](Scope& g) {
      bad = __LINE__ + 1;
      g.if_(n, [](Scope&) {});
    });
  });
}

TEST(Reject, FloatIndex) {
  int bad = 0;
  expect_kernel_rejected("V0704", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const float>>("x");
    auto a = k.param<float>("a");
    k.body([&](Scope& g) {
      bad = __LINE__ + 1;
      g.let("v", x[a]);
    });
  });
}

TEST(Reject, StoreOfTheWrongType) {
  int bad = 0;
  expect_kernel_rejected("V0705", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      auto t = g.let("t", g.id(thread(1)));
      g.partition(
          y, thread(1), [&](Expr i) { return t + i; },
          [&](Scope&, View y_t) {
            bad = __LINE__ + 1;
            y_t[0] = t;
          });
    });
  });
}

TEST(Reject, UndefinedExpression) {
  int bad = 0;
  expect_kernel_rejected("V0706", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      Expr nothing;
      bad = __LINE__ + 1;
      g.let("x", nothing + 1);
    });
  });
}

// ------------------------------------------------------------------ unsafe and return
TEST(Reject, UnsafeBlockAtTheWrongPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0801", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        th.unsafe(warp(), "asm volatile(\"bar.warp.sync -1;\");");
      });
    });
  });
}

TEST(Reject, ReturnFromANarrowerPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0802", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        th.ret();
      });
    });
  });
}

TEST(Reject, ReturnOfTheWrongType) {
  int bad = 0;
  expect_function_rejected("V0803", bad, [&](Fn& f) {
    f.returns(ScalarType::F32);
    f.body([&](Scope& th) {
      bad = __LINE__ + 1;
      th.ret(Expr(1));
    });
  });
}

TEST(Reject, FunctionWithoutAFinalReturn) {
  int bad = __LINE__ + 1;
  FunctionBuilder f("no_return");
  f.returns(ScalarType::I32);
  f.body([](Scope& th) { th.let("x", 1); });
  try {
    f.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0804", bad, "tests/test_reject_calls.cpp"));
  }
}

// ------------------------------------------------------------------ kernel headers and builder use
TEST(Reject, TooManyThreadsPerBlock) {
  int bad = 0;
  expect_kernel_rejected("V0901", bad, [&](KB& k) {
    bad = __LINE__ + 1;
    k.block_threads(2048);
    k.body([](Scope&) {});
  });
}

TEST(Reject, DuplicateParameterName) {
  int bad = 0;
  expect_kernel_rejected("V0902", bad, [&](KB& k) {
    k.param<int>("n");
    bad = __LINE__ + 1;
    k.param<int>("n");
    k.body([](Scope&) {});
  });
}

TEST(Reject, SpecializedFloatParameter) {
  int bad = 0;
  expect_kernel_rejected("V0903", bad, [&](KB& k) {
    bad = __LINE__ + 1;
    k.param<float>("alpha", specialize);
    k.body([](Scope&) {});
  });
}

TEST(Reject, ExtentThatIsNotAnInteger) {
  int bad = 0;
  expect_kernel_rejected("V0904", bad, [&](KB& k) {
    auto a = k.param<float>("a");
    bad = __LINE__ + 1;
    k.param<GlobalPtr<float>>("y", extent(a));
    k.body([](Scope&) {});
  });
}

TEST(Reject, KernelWithoutABody) {
  KernelBuilder k("empty");
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(e.has("V0905"));
  }
}

TEST(Reject, StatementOutsideAnyBody) {
  KernelBuilder k("outside");
  auto y = k.param<GlobalPtr<float>>("y");
  int bad = __LINE__ + 2;
  try {
    y[0] = 1.0f;
    FAIL() << "a store outside a body was accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0906", bad, "tests/test_reject_calls.cpp"));
  }
}

TEST(Reject, OuterScopeUsedInsideANestedBody) {
  int bad = 0;
  expect_kernel_rejected("V0911", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope&) {
        bad = __LINE__ + 1;
        g.let("lost", 1);  // g's body is not the innermost one being recorded here
      });
    });
  });
}

TEST(Reject, ScopeKeptBeyondItsBody) {
  KernelBuilder k("kept");
  k.block_threads(32);
  std::optional<Scope> kept;
  k.body([&](Scope& g) { kept.emplace(g); });
  int bad = __LINE__ + 2;
  try {
    kept->let("late", 1);
    FAIL() << "a statement after the body was recorded was accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0906", bad, "tests/test_reject_calls.cpp"));
  }
}

TEST(Reject, BodySetTwice) {
  int bad = 0;
  expect_kernel_rejected("V0908", bad, [&](KB& k) {
    k.body([](Scope&) {});
    bad = __LINE__ + 1;
    k.body([](Scope&) {});
  });
}

TEST(Reject, KernelPointerToSharedMemory) {
  int bad = 0;
  expect_kernel_rejected("V0910", bad, [&](KB& k) {
    bad = __LINE__ + 1;
    k.param<SharedPtr<float>>("s");
    k.body([](Scope&) {});
  });
}

TEST(Reject, RequirementOnAFloatParameter) {
  int bad = 0;
  expect_kernel_rejected("V0912", bad, [&](KB& k) {
    auto a = k.param<float>("a");
    bad = __LINE__ + 1;
    k.require(a > 0.5f);
    k.body([](Scope&) {});
  });
}

TEST(Reject, RequirementThatIsNotACondition) {
  int bad = 0;
  expect_kernel_rejected("V0912", bad, [&](KB& k) {
    auto n = k.param<int>("n");
    bad = __LINE__ + 1;
    k.require(n % 4);
    k.body([](Scope&) {});
  });
}

TEST(Reject, RequirementThatReadsMemory) {
  int bad = 0;
  expect_kernel_rejected("V0912", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const int>>("x");
    bad = __LINE__ + 1;
    k.require(x[0] > 0);
    k.body([](Scope&) {});
  });
}

TEST(Reject, SpecializationThatBreaksARequirement) {
  KernelBuilder k("needs_multiple");
  auto n = k.param<int>("n", specialize);
  int line = __LINE__ + 1;
  k.require(n % 4 == 0);
  k.block_threads(32);
  k.body([](Scope&) {});
  Kernel kernel = k.build();
  EXPECT_NO_THROW(specialize_for(kernel, Spec{}.with_size("n", 8)));
  try {
    specialize_for(kernel, Spec{}.with_size("n", 6));
    FAIL() << "n = 6 breaks n % 4 == 0";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0912", line, "tests/test_reject_calls.cpp")) << e.what();
  }
}

// ------------------------------------------------------------------ every error in one pass
TEST(Reject, ReportsEveryErrorAtOnce) {
  KernelBuilder k("many");
  k.block_threads(128);
  auto y = k.param<GlobalPtr<float>>("y");
  int l1 = 0, l2 = 0, l3 = 0, l4 = 0;
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      auto t = b.let("t", b.id(thread(1)));
      l1 = __LINE__ + 1;
      b.if_(t == 0, [](Scope& b) { b.sync_threads(); });
      l2 = __LINE__ + 1;
      b.shfl_down("d", t, 1);
      l3 = __LINE__ + 1;
      y[t] = 0.0f;
      l4 = __LINE__ + 1;
      b.let("bad_type", t + 1.5f);
    });
  });
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_EQ(e.diagnostics().size(), 4u) << testing::describe(e.diagnostics());
    EXPECT_TRUE(testing::has_diag(e, "V0203", l1, "tests/test_reject_calls.cpp"));
    EXPECT_TRUE(testing::has_diag(e, "V0501", l2, "tests/test_reject_calls.cpp"));
    EXPECT_TRUE(testing::has_diag(e, "V0301", l3, "tests/test_reject_calls.cpp"));
    EXPECT_TRUE(testing::has_diag(e, "V0701", l4, "tests/test_reject_calls.cpp"));
    std::string text = e.what();
    EXPECT_NE(text.find("4 error(s)"), std::string::npos);
  }
}

}  // namespace
}  // namespace vantage
