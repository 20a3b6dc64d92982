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

}  // namespace
}  // namespace vantage
