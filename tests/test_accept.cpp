// Programs the checker must accept, and what it defers to specialization when the launch shape is
// not known yet.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "vantage/vantage.hpp"

namespace vantage {
namespace {

Kernel warps_in_block(std::optional<std::int64_t> threads) {
  KernelBuilder k("warps");
  if (threads) k.block_threads(*threads);
  k.body([&](Scope& g) { g.group(block(1), [&](Scope& b) { b.group(warp(), [&](Scope& w) { w.sync_warp(); }); }); });
  return k.build();
}

TEST(Accept, SizeRuleDeferredWhenThreadsUnknown) {
  Kernel k = warps_in_block(std::nullopt);
  ASSERT_EQ(k.obligations().size(), 1u);
  const Obligation& o = k.obligations()[0];
  EXPECT_EQ(o.code, "V0102");
  EXPECT_EQ(o.str(), "T % 32 == 0");
  EXPECT_TRUE(o.holds(256, 10));
  EXPECT_FALSE(o.holds(48, 10));
}

TEST(Accept, SizeRuleDecidedWhenThreadsKnown) {
  EXPECT_TRUE(warps_in_block(256).obligations().empty());
  EXPECT_THROW(warps_in_block(48), CheckError);
}

TEST(Accept, GridConstraintDischargesBlockGroups) {
  auto build = [](bool promise) {
    KernelBuilder k("pairs");
    k.block_threads(64);
    if (promise) k.grid_multiple_of(4);
    k.body([](Scope& g) { g.group(block(2), [](Scope& b2) { b2.group(block(1), [](Scope&) {}); }); });
    return k.build();
  };
  Kernel loose = build(false);
  ASSERT_EQ(loose.obligations().size(), 1u);
  EXPECT_EQ(loose.obligations()[0].str(), "64*B % 128 == 0");
  EXPECT_TRUE(loose.obligations()[0].holds(64, 6));
  EXPECT_FALSE(loose.obligations()[0].holds(64, 5));
  EXPECT_TRUE(build(true).obligations().empty());
}

TEST(Accept, SplitFitDeferredOverTheGrid) {
  KernelBuilder k("producer_consumer");
  k.block_threads(128);
  k.body([](Scope& g) { g.split(Level::Block, {{1, [](Scope&) {}}, {1, [](Scope&) {}}}); });
  Kernel kernel = k.build();
  ASSERT_EQ(kernel.obligations().size(), 1u);
  EXPECT_EQ(kernel.obligations()[0].str(), "2 <= B");
}

TEST(Accept, WarpSpecializedSplitOfABlock) {
  KernelBuilder k("ws");
  k.block_threads(256);
  k.body([](Scope& g) {
    g.group(block(1), [](Scope& b) {
      b.split(Level::Thread, {{128, [](Scope& wg) { wg.wgmma_fence(); }},
                              {32, [](Scope& w) { w.sync_warp(); }},
                              {32, [](Scope& w) { w.sync_warp(); }}});
    });
  });
  EXPECT_TRUE(k.build().obligations().empty());
}

TEST(Accept, DestructThenSplitThreads) {
  KernelBuilder k("destructed");
  k.block_threads(64);
  k.body([](Scope& g) {
    g.group(block(1), [](Scope& b) {
      b.destruct([](Scope& t) { t.split(Level::Thread, {{32, [](Scope& w) { w.sync_warp(); }}}); });
    });
  });
  EXPECT_NO_THROW(k.build());
}

TEST(Accept, VoteResultIsUniformAcrossTheWarp) {
  KernelBuilder k("vote");
  k.block_threads(32);
  k.body([](Scope& g) {
    g.group(warp(), [](Scope& w) {
      auto lane = w.let("lane", w.id(thread(1)));
      auto all_low = w.vote_all("all_low", lane < 16);
      w.if_(all_low, [](Scope& w) { w.sync_warp(); });  // uniform: allowed
    });
  });
  EXPECT_NO_THROW(k.build());
}

TEST(Accept, ReadUpWriteDownOnThreadLocals) {
  KernelBuilder k("locals");
  k.block_threads(128);
  k.body([](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.group(block(1), [&](Scope& b) {
      auto base = b.let("base", blk * 128);               // block(1) value in block code
      auto mine = b.let("mine", base + b.id(thread(1)));  // inferred thread(1)
      auto acc = b.local_array("acc", ScalarType::I32, 2, at(thread(1)));
      acc[0] = mine;                                        // write down
      b.if_(base > 0, [](Scope& b) { b.sync_threads(); });  // read up: uniform in the block
      b.group(thread(1), [&](Scope& th) { th.if_(mine > 3, [&](Scope&) { acc[1] = base; }); });
    });
  });
  EXPECT_NO_THROW(k.build());
}

TEST(Accept, SharedPeakTakesTheLargerBranch) {
  KernelBuilder k("branches");
  k.block_threads(32);
  auto n = k.param<int>("n");
  k.shared_budget(4096);
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      b.shared<float>("keep", 256);  // 1 KiB for the whole block
      b.if_(
          n > 4, [](Scope& b) { b.shared<float>("big", 512); }, [](Scope& b) { b.shared<float>("small", 16); });
    });
  });
  EXPECT_EQ(k.build().shared_bytes(), 1024 + 2048);
}

TEST(Accept, ImplicitGroupWhenCallingANarrowerFunction) {
  FunctionBuilder f("per_thread");
  auto v = f.param<int>("v", at(block(1)));
  f.body([&](Scope& th) { th.let("w", v * 2); });
  DeviceFunction fn = f.build();
  KernelBuilder k("caller");
  k.block_threads(64);
  auto n = k.param<int>("n");
  k.body([&](Scope& g) { g.group(block(1), [&](Scope& b) { b.call(fn, {n}); }); });
  EXPECT_NO_THROW(k.build());
}

TEST(Accept, AsyncCopyIntoAPartitionedAsyncName) {
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
            [&](Scope& b, View s_t) {
              b.group(thread(1), [&](Scope& th) {
                th.cp_async(s_t, 0, x, t * 4, 16);
                th.cp_async_commit();
                th.cp_async_wait(0);
              });
            });
      });
    });
  });
  EXPECT_NO_THROW(k.build());
}

}  // namespace
}  // namespace vantage
