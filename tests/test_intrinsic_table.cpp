// The intrinsic table (jit/ir/intrinsics.h) is the only list of intrinsics the passes read: one row
// per intrinsic, and a row a test adds is handled from its row (the checker's perspective rule, the
// feature a target needs, the barrier placement's memory effects, the cost report's lane exchanges)
// or refused by its user name by each backend that has no emission for it.
#include <gtest/gtest.h>

#include "jit/check/check.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/visit.h"
#include "jit/pipeline/handles.h"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

TEST(IntrinsicTable, HasOneRowPerIntrinsicInOrderWithTheBuildersNames) {
  auto table = ir::intrinsic_table();
  ASSERT_GE(table.size(), ir::kIntrinsics);
  for (std::size_t i = 0; i < ir::kIntrinsics; ++i) {
    EXPECT_EQ(static_cast<std::size_t>(table[i].op), i) << table[i].name;
    EXPECT_EQ(ir::user_name(table[i].op), table[i].user);
  }
  EXPECT_EQ(ir::user_name(ir::IntrinsicOp::TmaLoad2D), "tma_load");
  EXPECT_EQ(ir::user_name(ir::IntrinsicOp::MbarrierExpectTx), "mbarrier_arrive_expect_tx");
  EXPECT_TRUE(ir::info(ir::IntrinsicOp::ShflIdx).exchanges_lanes);
  EXPECT_TRUE(ir::info(ir::IntrinsicOp::SyncThreads).orders_memory);
  EXPECT_EQ(ir::info(ir::IntrinsicOp::Wgmma).feature, target::Feature::Wgmma);
  EXPECT_TRUE(ir::runs_on(ir::IntrinsicOp::Wgmma, ir::kInterpreter));
  EXPECT_FALSE(ir::runs_on(ir::IntrinsicOp::Wgmma, ir::kCpu));
  EXPECT_FALSE(ir::runs_on(ir::IntrinsicOp::MbarrierWait, ir::kCpu));
  EXPECT_TRUE(ir::runs_on(ir::IntrinsicOp::CpAsync, ir::kCpu));
}

/// A warp-wide exchange no backend can emit.
ir::IntrinsicOp fake_op() {
  static const ir::IntrinsicOp op = [] {
    ir::IntrinsicInfo row{};
    row.name = "FakeExchange";
    row.user = "fake_exchange";
    row.needs = ir::Needs::Warp;
    row.exchanges_lanes = true;
    row.collective = true;
    row.backends = ir::kEveryBackend;  // a row a test adds runs nowhere all the same
    return ir::testing::add_intrinsic(row);
  }();
  return op;
}

/// `kernel` with every `from` intrinsic made the fake one (its operands kept).
Kernel with_fake(const Kernel& kernel, ir::IntrinsicOp from) {
  struct Swap : ir::IRMutator {
    ir::IntrinsicOp from;
    using IRMutator::visit;
    ir::StmtPtr visit(const ir::Intrinsic& n, const ir::StmtPtr& self) override {
      if (n.op != from) return self;
      return ir::make<ir::Intrinsic>(fake_op(), n.args, n.mems, n.outputs, n.imms, n.loc);
    }
  } swap;
  swap.from = from;
  auto node = std::make_shared<ir::KernelNode>(detail::KernelAccess::ir(kernel));
  node->body = swap.mutate(node->body);
  return detail::KernelAccess::make(node, kernel.obligations(), kernel.shared_bytes());
}

Kernel warp_kernel() {
  KernelBuilder k("fake_in_warps");
  k.block_threads(64);
  k.body([&](Scope& g) { g.group(block(1), [&](Scope& b) { b.group(warp(), [&](Scope& w) { w.sync_warp(); }); }); });
  return with_fake(k.build(), ir::IntrinsicOp::SyncWarp);
}

TEST(IntrinsicTable, AFakeRowIsHandledOrRefusedByNameByEveryPass) {
  Kernel k = warp_kernel();
  // The checker: at a warp it needs a warp (its row), and accepts; at the block it names it.
  EXPECT_TRUE(check::check(detail::KernelAccess::ir(k)).ok());
  KernelBuilder wide("fake_at_block");
  wide.block_threads(64);
  wide.body([&](Scope& g) { g.group(block(1), [&](Scope& b) { b.sync_threads(); }); });
  auto found = check::check(detail::KernelAccess::ir(with_fake(wide.build(), ir::IntrinsicOp::SyncThreads)));
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.errors[0].code, "V0501");
  EXPECT_NE(found.errors[0].message.find("fake_exchange needs exactly"), std::string::npos) << found.errors[0].message;

  // The cost report: counted as a lane exchange, from its row.
  CostReport r = k.report(Spec{}.with_threads(64), {}, 1);
  EXPECT_GT(r.exchanges, 0) << "a lane exchange, by its row";

  // The backends: none has its emission, and each says which intrinsic it stopped at.
  auto refused = [&](const std::function<void()>& f, const char* where) {
    try {
      f();
      ADD_FAILURE() << where << " ran an intrinsic it has no emission for";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("fake_exchange"), std::string::npos) << where << ": " << e.what();
    }
  };
  refused([&] { specialize_for(k, Spec{}.with_threads(64)); }, "the CUDA emitter");
  refused([&] { k.launch(Device::interpreter(), Grid{1, 64}); }, "the interpreter");
  if (Device::cpu_available()) refused([&] { k.launch(Device::cpu(1), Grid{1, 64}); }, "the CPU backend");
}

TEST(IntrinsicTable, AnOperandNoRuleChecksIsRefusedNotTakenUnchecked) {
  // A shuffle's operands under the fake row, which no case of the checker knows: before, the
  // checker accepted them unchecked (as it had print's values); now it refuses the first by its place.
  KernelBuilder k("fake_with_operands");
  k.block_threads(64);
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      b.group(warp(), [&](Scope& w) {
        auto lane = w.let("lane", w.id(thread(1)));
        w.shfl_xor("x", lane, 1);
      });
    });
  });
  auto found = check::check(detail::KernelAccess::ir(with_fake(k.build(), ir::IntrinsicOp::ShflXor)));
  ASSERT_FALSE(found.ok());
  bool named = false;
  for (const auto& e : found.errors)
    named |= e.code == "V0503" &&
             e.message.find("fake_exchange: its value operand 0 is checked by no rule") != std::string::npos;
  EXPECT_TRUE(named) << found.errors[0].code << " " << found.errors[0].message;

  // An mma's fragments (memory operands only) under the fake row: the first is refused by its place.
  KernelBuilder m("fake_with_memories");
  m.block_threads(32);
  m.body([&](Scope& g) {
    g.group(warp(), [&](Scope& w) {
      auto a = w.local_array("a", ScalarType::F16, 8, at(thread(1)));
      auto b = w.local_array("b", ScalarType::F16, 4, at(thread(1)));
      auto c = w.local_array("c", ScalarType::F32, 4, at(thread(1)));
      w.mma_sync(MmaKind::F16_M16N8K16, c, a, b, c);
    });
  });
  found = check::check(detail::KernelAccess::ir(with_fake(m.build(), ir::IntrinsicOp::MmaSync)));
  ASSERT_FALSE(found.ok());
  named = false;
  for (const auto& e : found.errors)
    named |= e.code == "V0503" &&
             e.message.find("fake_exchange: its memory operand 0 is checked by no rule") != std::string::npos;
  EXPECT_TRUE(named) << found.errors[0].code << " " << found.errors[0].message;
  // (Every intrinsic the builder makes has each operand checked by its rule: every example and
  // test kernel passes the checker with this in place.)
}

}  // namespace
}  // namespace vantage
