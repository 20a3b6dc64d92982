// Programs the checker must reject: one or more per rule, each asserting the diagnostic code and the
// user's line. The paper's illegal figures (7, 9, 10, 11) come first.
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

// ------------------------------------------------------------------ the paper's figures
TEST(Reject, Fig7GroupCannotWidenFromThreadToBlock) {
  int bad = 0;
  expect_kernel_rejected("V0101", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(2), [&](Scope& t) {
        bad = __LINE__ + 1;
        t.group(block(1), [](Scope&) {});
      });
    });
  });
}

TEST(Reject, Fig7GroupBlock5InsideBlock6IsMisaligned) {
  int bad = 0;
  expect_kernel_rejected("V0102", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(6), [&](Scope& b6) {
        bad = __LINE__ + 1;
        b6.group(block(5), [](Scope&) {});
      });
    });
  });
}

TEST(Reject, Fig9SplitExceedsAvailableThreads) {
  int bad = 0;
  expect_kernel_rejected("V0103", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(4), [&](Scope& t4) {
        bad = __LINE__ + 1;
        t4.split(Level::Thread, {{4, [](Scope&) {}}, {1, [](Scope&) {}}});
      });
    });
  });
}

TEST(Reject, Fig10SplitBranchNotAligned) {
  int bad = 0;
  expect_kernel_rejected("V0104", bad, [&](KB& k) {
    k.block_threads(96);
    k.body([&](Scope& g) {
      g.group(thread(3), [&](Scope& t3) {
        t3.split(Level::Thread, {
                                    {2, [](Scope&) {}, (bad = __LINE__, std::source_location::current())},
                                    {1, [](Scope&) {}},
                                });
      });
    });
  });
}

TEST(Reject, Fig11BarrierUnderThreadVaryingFlag) {
  int bad = 0;
  expect_kernel_rejected("V0203", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      auto flag = g.let("flag", g.id(thread(1)) % 2 == 0, at(thread(1)));
      g.group(block(1), [&](Scope& b) {
        bad = __LINE__ + 1;
        b.if_(flag, [](Scope& b) { b.sync_threads(); });
      });
    });
  });
}

// ------------------------------------------------------------------ code perspectives
TEST(Reject, BlockBarrierUnderThreadVaryingBranch) {
  int bad = 0;
  expect_kernel_rejected("V0203", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto t = b.let("t", b.id(thread(1)));
        bad = __LINE__ + 1;
        b.if_(t < 64, [](Scope& b) { b.sync_threads(); });
      });
    });
  });
}

TEST(Reject, SplitOfAWiderLevel) {
  int bad = 0;
  expect_kernel_rejected("V0105", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(32), [&](Scope& w) {
        bad = __LINE__ + 1;
        w.split(Level::Block, {{1, [](Scope&) {}}});
      });
    });
  });
}

TEST(Reject, DestructNeedsOneBlockOrGrid) {
  int bad = 0;
  expect_kernel_rejected("V0106", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(warp(), [&](Scope& w) {
        bad = __LINE__ + 1;
        w.destruct([](Scope&) {});
      });
    });
  });
}

TEST(Reject, IdOfAWiderPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0107", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        bad = __LINE__ + 1;
        b.let("x", b.id(grid(1)));
      });
    });
  });
}

TEST(Reject, ZeroUnitPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0108", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      bad = __LINE__ + 1;
      g.group(thread(0), [](Scope&) {});
    });
  });
}

TEST(Reject, GroupNotDividingTheBlock) {
  int bad = 0;
  expect_kernel_rejected("V0102", bad, [&](KB& k) {
    k.block_threads(48);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        bad = __LINE__ + 1;
        b.group(warp(), [](Scope&) {});
      });
    });
  });
}

// ------------------------------------------------------------------ thread-local data
TEST(Reject, ThreadValueWrittenIntoBlockVariable) {
  int bad = 0;
  expect_kernel_rejected("V0201", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        bad = __LINE__ + 1;
        b.let("x", b.id(thread(1)), at(block(1)));
      });
    });
  });
}

TEST(Reject, ThreadValueAssignedToBlockVariable) {
  int bad = 0;
  expect_kernel_rejected("V0201", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto sum = b.let("sum", 0);
        auto t = b.let("t", b.id(thread(1)));
        bad = __LINE__ + 1;
        b.assign(sum, t);
      });
    });
  });
}

TEST(Reject, BlockVariableAssignedFromThreadCode) {
  int bad = 0;
  expect_kernel_rejected("V0202", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto count = b.let("count", 0);
        b.group(thread(1), [&](Scope& th) {
          bad = __LINE__ + 1;
          th.assign(count, 1);
        });
      });
    });
  });
}

// V0201 and V0202 say which declaration fixes them, and that declaration is accepted.
TEST(Reject, WriteDownDiagnosticsNameTheDeclarationThatFixesThem) {
  auto message = [](bool fixed, bool from_thread_code) {
    KernelBuilder k("acc");
    auto x = k.param<GlobalPtr<const float>>("x", extent(128));
    k.block_threads(128);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto acc = fixed ? b.let("acc", 0.0f, at(thread(1))) : b.let("acc", 0.0f);
        if (from_thread_code) {
          b.group(thread(1), [&](Scope& th) { th.assign(acc, acc + x[th.id(thread(1))]); });
        } else {
          auto t = b.let("t", b.id(thread(1)));
          b.assign(acc, acc + x[t]);
        }
      });
    });
    try {
      k.build();
    } catch (const CheckError& e) {
      return testing::describe(e.diagnostics());
    }
    return std::string("accepted");
  };
  const std::string v0202 = message(false, true), v0201 = message(false, false);
  EXPECT_NE(v0202.find("V0202"), std::string::npos) << v0202;
  EXPECT_NE(v0202.find("declare it there or with at(thread(1)) (let('acc', value, at(thread(1))))"), std::string::npos)
      << v0202;
  EXPECT_NE(v0201.find("V0201"), std::string::npos) << v0201;
  EXPECT_NE(v0201.find("declare it with at(thread(1)) (let('acc', value, at(thread(1))))"), std::string::npos) << v0201;
  EXPECT_EQ(message(true, true), "accepted");
  EXPECT_EQ(message(true, false), "accepted");
}

TEST(Reject, LoopBoundVariesPerThreadAtBlockPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0204", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto t = b.let("t", b.id(thread(1)));
        bad = __LINE__ + 1;
        b.for_("i", 0, t, [](Scope& b, Expr) { b.sync_threads(); });
      });
    });
  });
}

TEST(Reject, WhileConditionVariesPerThread) {
  int bad = 0;
  expect_kernel_rejected("V0205", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto t = b.let("t", b.id(thread(1)));
        bad = __LINE__ + 1;
        b.while_(t > 3, [](Scope&) {});
      });
    });
  });
}

TEST(Reject, VariableAnnotatedWiderThanTheCode) {
  int bad = 0;
  expect_kernel_rejected("V0206", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        th.let("x", 1, at(block(1)));
      });
    });
  });
}

TEST(Reject, VariableUsedOutsideItsScope) {
  int bad = 0;
  expect_kernel_rejected("V0207", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      Var leaked;
      g.group(block(1), [&](Scope& b) { leaked = b.let("inner", 1); });
      bad = __LINE__ + 1;
      g.let("outer", leaked + 1);
    });
  });
}

TEST(Reject, LoopVariableCannotBeAssigned) {
  int bad = 0;
  expect_kernel_rejected("V0208", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.for_("i", 0, 4, [&](Scope& s, Expr i) {
        bad = __LINE__ + 1;
        s.assign(detail::BuilderAccess::var(ir::as<ir::VarRef>(*detail::BuilderAccess::node(i))->var, {}), 3);
      });
    });
  });
}

TEST(Reject, LoopStepOfZero) {
  int bad = 0;
  expect_kernel_rejected("V0209", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      bad = __LINE__ + 1;
      g.for_("i", 0, 8, 0, [](Scope&, Expr) {});
    });
  });
}

TEST(Reject, LocalArrayOfNoElements) {
  int bad = 0;
  expect_kernel_rejected("V0210", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        th.local_array("empty", ScalarType::F32, 0);
      });
    });
  });
}

// ------------------------------------------------------------------ memory
TEST(Reject, WriteToGlobalMemoryThatWasNotPartitioned) {
  int bad = 0;
  expect_kernel_rejected("V0301", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        y[th.id(thread(1))] = 1.0f;
      });
    });
  });
}

TEST(Reject, WriteToBlockPartitionWithoutNarrowingToThreads) {
  int bad = 0;
  expect_kernel_rejected("V0301", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      auto blk = g.let("blk", g.id(block(1)));
      g.partition(
          y, block(1), [&](Expr i) { return blk * 128 + i; },
          [&](Scope& g, View y_b) {
            g.group(block(1), [&](Scope&) {
              bad = __LINE__ + 1;
              y_b[0] = 2.0f;
            });
          });
    });
  });
}

TEST(Reject, OriginalNameUsedInsideItsPartition) {
  int bad = 0, partitioned = 0;
  KernelBuilder k("orig");
  k.block_threads(128);
  auto y = k.param<GlobalPtr<float>>("y");
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    partitioned = __LINE__ + 1;
    g.partition(
        y, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View y_t) {
          g.group(thread(1), [&](Scope&) {
            bad = __LINE__ + 1;
            y_t[0] = y[t + 1];
          });
        });
  });
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0302", bad, "tests/test_reject.cpp"));
    const Diagnostic* d = nullptr;
    for (const auto& x : e.diagnostics())
      if (x.code == "V0302") d = &x;
    ASSERT_NE(d, nullptr);
    ASSERT_EQ(d->notes.size(), 1u);
    EXPECT_EQ(static_cast<int>(d->notes[0].loc.line), partitioned) << "the note points at the partition";
  }
}

// A statement the user's C++ loop builds eight times, each breaking the same rule at the same line,
// is reported once; a second line breaking it is reported too.
TEST(Reject, AnErrorRepeatedByACxxLoopIsReportedOnce) {
  int looped = 0, other = 0;
  KernelBuilder k("repeats");
  k.block_threads(128);
  auto y = k.param<GlobalPtr<float>>("y");
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        y, thread(1), [&](Expr i) { return t * 8 + i; },
        [&](Scope& g, View y_t) {
          g.group(thread(1), [&](Scope&) {
            for (int i = 0; i < 8; ++i) {
              looped = __LINE__ + 1;
              y_t[i] = y[t + 1];
            }
            other = __LINE__ + 1;
            y_t[0] = y[t + 2];
          });
        });
  });
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    int at_loop = 0, at_other = 0;
    for (const auto& d : e.diagnostics()) {
      at_loop += d.code == "V0302" && static_cast<int>(d.loc.line) == looped;
      at_other += d.code == "V0302" && static_cast<int>(d.loc.line) == other;
    }
    EXPECT_EQ(at_loop, 1) << render_all(e.diagnostics());
    EXPECT_EQ(at_other, 1) << render_all(e.diagnostics());
    EXPECT_EQ(std::string(e.what()).rfind("2 error(s)", 0), 0u) << e.what();
  }
}

TEST(Reject, PartitionFromCodeAtAnotherPerspective) {
  int bad = 0;
  expect_kernel_rejected("V0303", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto t = b.let("t", b.id(thread(1)));
        bad = __LINE__ + 1;
        b.partition(
            y, thread(1), [&](Expr i) { return t + i; }, [](Scope&, View) {});
      });
    });
  });
}

TEST(Reject, PartitionIntoAWiderShare) {
  int bad = 0;
  expect_kernel_rejected("V0304", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      auto blk = g.let("blk", g.id(block(1)));
      g.partition(
          y, block(1), [&](Expr i) { return blk + i; },
          [&](Scope& g, View y_b) {
            g.group(block(1), [&](Scope& b) {
              bad = __LINE__ + 1;
              b.partition(
                  y_b, block(2), [&](Expr i) { return i; }, [](Scope&, View) {});
            });
          });
    });
  });
}

TEST(Reject, IndexFunctionVariesFasterThanTheShare) {
  int bad = 0;
  expect_kernel_rejected("V0305", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      auto t = g.let("t", g.id(thread(1)));
      // The diagnostic points at the index expression; record its line where it is written.
      g.partition(
          y, block(1), [&](Expr i) { return (bad = __LINE__, t + i); }, [](Scope&, View) {});
    });
  });
}

TEST(Reject, ClaimedNameUsedOutsideASplitBranch) {
  int bad = 0;
  expect_kernel_rejected("V0306", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto s = b.shared<float>("s", 64);
        b.claim(s, warp(), [&](Scope& b, View s_w) {
          bad = __LINE__ + 1;
          b.let("v", s_w[0]);
        });
      });
    });
  });
}

TEST(Reject, ClaimedNameUsedInTwoSplitBranches) {
  int bad = 0;
  expect_kernel_rejected("V0307", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto s = b.shared<float>("s", 64);
        b.claim(s, warp(), [&](Scope& b, View s_w) {
          b.split(Level::Thread, {{32, [&](Scope& w) { w.let("a", s_w[0]); }}, {32, [&](Scope& w) {
                                                                                  bad = __LINE__ + 1;
                                                                                  w.let("b", s_w[1]);
                                                                                }}});
        });
      });
    });
  });
}

TEST(Reject, ClaimIsNotNarrower) {
  int bad = 0;
  expect_kernel_rejected("V0308", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto s = b.shared<float>("s", 64);
        bad = __LINE__ + 1;
        b.claim(s, block(2), [](Scope&, View) {});
      });
    });
  });
}

TEST(Reject, LowerNeedsBlockOrGridMemory) {
  int bad = 0;
  expect_kernel_rejected("V0309", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto s = b.shared<float>("s", 64);
        b.claim(s, warp(), [&](Scope& b, View s_w) {
          b.split(Level::Thread, {{32, [&](Scope& w) {
                                     bad = __LINE__ + 1;
                                     w.lower(s_w, [](Scope&, View) {});
                                   }}});
        });
      });
      (void)y;
    });
  });
}

TEST(Reject, WriteToConstMemory) {
  int bad = 0;
  expect_kernel_rejected("V0310", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const float>>("x");
    k.body([&](Scope& g) {
      auto t = g.let("t", g.id(thread(1)));
      g.partition(
          x, thread(1), [&](Expr i) { return t + i; },
          [&](Scope&, View x_t) {
            bad = __LINE__ + 1;
            x_t[0] = 1.0f;
          });
    });
  });
}

TEST(Reject, WrongNumberOfIndices) {
  int bad = 0;
  expect_kernel_rejected("V0311", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      auto t = g.let("t", g.id(thread(1)));
      g.partition(
          y, thread(1), [&](Expr r, Expr c) { return t * 2 + r + c; },
          [&](Scope&, View y_t) {
            bad = __LINE__ + 1;
            y_t[0] = 1.0f;
          });
    });
  });
}

TEST(Reject, SharedMemoryUsedFromGridCode) {
  int bad = 0;
  expect_function_rejected("V0312", bad, [&](Fn& f) {
    f.requires_perspective(grid(1));
    auto s = f.param<SharedPtr<const float>>("s");
    f.body([&](Scope& g) {
      bad = __LINE__ + 1;
      g.let("v", s[0]);
    });
  });
}

TEST(Reject, MemoryUsedOutsideItsScope) {
  int bad = 0;
  expect_kernel_rejected("V0313", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      auto t = g.let("t", g.id(thread(1)));
      View escaped;
      g.partition(
          y, thread(1), [&](Expr i) { return t + i; }, [&](Scope&, View y_t) { escaped = y_t; });
      bad = __LINE__ + 1;
      escaped[0] = 1.0f;
    });
  });
}

TEST(Reject, AsyncNameReadDirectly) {
  int bad = 0;
  expect_kernel_rejected("V0315", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto s = b.shared<float>("s", 128);
        b.async(s, [&](Scope& b, View s_async) {
          bad = __LINE__ + 1;
          b.let("v", s_async[0]);
        });
      });
    });
  });
}

TEST(Reject, LocalArrayCannotBePartitioned) {
  int bad = 0;
  expect_kernel_rejected("V0316", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        auto a = th.local_array("a", ScalarType::F32, 4);
        bad = __LINE__ + 1;
        th.partition(
            a, thread(1), [](Expr i) { return i; }, [](Scope&, View) {});
      });
    });
  });
}

TEST(Reject, AsyncTargetMustBeShared) {
  int bad = 0;
  expect_kernel_rejected("V0317", bad, [&](KB& k) {
    auto y = k.param<GlobalPtr<float>>("y");
    k.body([&](Scope& g) {
      bad = __LINE__ + 1;
      g.async(y, [](Scope&, View) {});
    });
  });
}

// ------------------------------------------------------------------ shared memory
TEST(Reject, SharedAllocationInThreadScope) {
  int bad = 0;
  expect_kernel_rejected("V0401", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        b.group(thread(1), [&](Scope& th) {
          bad = __LINE__ + 1;
          th.shared<float>("s", 32);
        });
      });
    });
  });
}

TEST(Reject, SharedAllocationNeedsStaticSize) {
  int bad = 0;
  expect_kernel_rejected("V0402", bad, [&](KB& k) {
    auto n = k.param<int>("n");
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        bad = __LINE__ + 1;
        b.shared<float>("s", n);
      });
    });
  });
}

TEST(Reject, SharedBudgetExceeded) {
  int bad = 0;
  expect_kernel_rejected("V0403", bad, [&](KB& k) {
    k.shared_budget(1024);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        b.shared<float>("a", 128);
        bad = __LINE__ + 1;
        b.shared<float>("b", 129);
      });
    });
  });
}

TEST(Reject, SharedBudgetOverDeviceLimit) {
  int bad = 0;
  expect_kernel_rejected("V0404", bad, [&](KB& k) {
    bad = __LINE__ + 1;
    k.shared_budget(512 * 1024);
    k.body([](Scope&) {});
  });
}

// ------------------------------------------------------------------ intrinsics
TEST(Reject, ShuffleOutsideAWarp) {
  int bad = 0;
  expect_kernel_rejected("V0501", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto t = b.let("t", b.id(thread(1)));
        bad = __LINE__ + 1;
        b.shfl_xor("u", t, 1);
      });
    });
  });
}

TEST(Reject, WgmmaAtThread64) {
  int bad = 0;
  expect_kernel_rejected("V0501", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        View a_s = b.shared_aligned("a_s", ScalarType::BF16, 4096, 1024);
        View b_s = b.shared_aligned("b_s", ScalarType::BF16, 4096, 1024);
        b.group(thread(64), [&](Scope& t64) {
          auto acc = t64.local_array("acc", ScalarType::F32, 32, at(thread(1)));
          bad = __LINE__ + 1;
          t64.wgmma(64, acc, a_s, 0, b_s, 0);
        });
      });
    });
  });
}

TEST(Reject, MmaSyncByOneThread) {
  int bad = 0;
  expect_kernel_rejected("V0501", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        auto a = th.local_array("a", ScalarType::F32, 4);
        auto b = th.local_array("b", ScalarType::F32, 2);
        auto c = th.local_array("c", ScalarType::F32, 4);
        bad = __LINE__ + 1;
        th.mma_sync(MmaKind::TF32_M16N8K8, c, a, b, c);
      });
    });
  });
}

TEST(Reject, WarpBarrierInBlockCode) {
  int bad = 0;
  expect_kernel_rejected("V0501", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        bad = __LINE__ + 1;
        b.sync_warp();
      });
    });
  });
}

TEST(Reject, BlockBarrierInAWarp) {
  int bad = 0;
  expect_kernel_rejected("V0501", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(warp(), [&](Scope& w) {
        bad = __LINE__ + 1;
        w.sync_threads();
      });
    });
  });
}

TEST(Reject, CpAsyncOutsideAnAsyncScope) {
  int bad = 0;
  expect_kernel_rejected("V0502", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const float>>("x");
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto s = b.shared<float>("s", 128);
        auto t = b.let("t", b.id(thread(1)));
        b.partition(
            s, thread(1), [&](Expr i) { return t + i; },
            [&](Scope& b, View s_t) {
              b.group(thread(1), [&](Scope& th) {
                bad = __LINE__ + 1;
                th.cp_async(s_t, 0, x, t, 4);
              });
            });
      });
    });
  });
}

TEST(Reject, CpAsyncWaitForANegativeCountOfGroups) {
  KB k("negative_wait");
  int bad = 0;
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      b.group(thread(1), [&](Scope& th) {
        bad = __LINE__ + 1;
        th.cp_async_wait(-1);
      });
    });
  });
  EXPECT_TRUE(::vantage::testing::rejected_saying(k, "V0503", bad, __FILE__,
                                                  "cp_async_wait: the groups left in flight are 0 or more, not -1"));
}

TEST(Reject, MmaFragmentOfWrongSize) {
  int bad = 0;
  expect_kernel_rejected("V0503", bad, [&](KB& k) {
    k.body([&](Scope& g) {
      g.group(warp(), [&](Scope& w) {
        auto a = w.local_array("a", ScalarType::F32, 4, at(thread(1)));
        auto b = w.local_array("b", ScalarType::F32, 3, at(thread(1)));
        auto c = w.local_array("c", ScalarType::F32, 4, at(thread(1)));
        bad = __LINE__ + 1;
        w.mma_sync(MmaKind::TF32_M16N8K8, c, a, b, c);
      });
    });
  });
}

TEST(Reject, CpAsyncIntoANameThatIsNotAsync) {
  int bad = 0;
  expect_kernel_rejected("V0504", bad, [&](KB& k) {
    auto x = k.param<GlobalPtr<const float>>("x");
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        auto s = b.shared<float>("s", 128);
        auto other = b.shared<float>("other", 128);
        auto t = b.let("t", b.id(thread(1)));
        b.async(other, [&](Scope& b, View) {
          b.partition(
              s, thread(1), [&](Expr i) { return t + i; },
              [&](Scope& b, View s_t) {
                b.group(thread(1), [&](Scope& th) {
                  bad = __LINE__ + 1;
                  th.cp_async(s_t, 0, x, t, 4);
                });
              });
        });
      });
    });
  });
}

// ------------------------------------------------------------------ coverage of the rule list
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Reject, EveryDocumentedRuleHasARejectedProgram) {
  std::string doc = slurp(VANTAGE_SOURCE_DIR "/docs/diagnostics.md");
  std::string tests =
      slurp(VANTAGE_SOURCE_DIR "/tests/test_reject.cpp") + slurp(VANTAGE_SOURCE_DIR "/tests/test_reject_calls.cpp") +
      slurp(VANTAGE_SOURCE_DIR "/tests/test_codegen.cpp") + slurp(VANTAGE_SOURCE_DIR "/tests/test_proofs.cpp") +
      slurp(VANTAGE_SOURCE_DIR "/tests/test_regressions.cpp") + slurp(VANTAGE_SOURCE_DIR "/tests/test_semantics.cpp") +
      slurp(VANTAGE_SOURCE_DIR "/tests/test_library.cpp") + slurp(VANTAGE_SOURCE_DIR "/tests/test_builder.cpp") +
      slurp(VANTAGE_SOURCE_DIR "/tests/test_hopper.cpp") + slurp(VANTAGE_SOURCE_DIR "/tests/test_atomics.cpp") +
      slurp(VANTAGE_SOURCE_DIR "/tests/test_vector.cpp") + slurp(VANTAGE_SOURCE_DIR "/tests/test_cluster.cpp") +
      slurp(VANTAGE_SOURCE_DIR "/tests/test_pipeline.cpp");
  ASSERT_FALSE(doc.empty());
  std::regex code_re("\\| (V[0-9]{4}) \\|");
  int codes = 0;
  for (std::sregex_iterator it(doc.begin(), doc.end(), code_re), end; it != end; ++it) {
    ++codes;
    std::string code = (*it)[1];
    EXPECT_NE(tests.find("\"" + code + "\""), std::string::npos) << code << " has no rejected program";
  }
  EXPECT_GE(codes, 60) << "docs/diagnostics.md lists the rules in a table, one row per code";
}

}  // namespace
}  // namespace vantage
