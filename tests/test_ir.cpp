// IR: structural hashing and equality, and the stable printed form.
#include <gtest/gtest.h>

#include "jit/ir/eval.h"
#include "jit/ir/ir.h"
#include "jit/ir/printer.h"
#include "kernels/paper_kernels.hpp"

namespace vantage {
namespace {

Kernel tiny(float scale, int threads) {
  KernelBuilder k("tiny");
  auto y = k.param<GlobalPtr<float>>("y");
  k.block_threads(threads);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        y, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View y_t) { g.group(thread(1), [&](Scope&) { y_t[0] = y_t[0] * scale; }); });
  });
  return k.build();
}

TEST(IrHash, SameProgramSameHash) {
  Kernel a = tiny(2.0f, 128), b = tiny(2.0f, 128);
  EXPECT_EQ(a.structural_hash(), b.structural_hash());
  EXPECT_TRUE(a.structurally_equal(b));
}

TEST(IrHash, ConstantsAndLaunchShapeChangeTheHash) {
  Kernel a = tiny(2.0f, 128);
  EXPECT_NE(a.structural_hash(), tiny(3.0f, 128).structural_hash());
  EXPECT_FALSE(a.structurally_equal(tiny(3.0f, 128)));
  EXPECT_NE(a.structural_hash(), tiny(2.0f, 256).structural_hash());
}

TEST(IrHash, ExamplesAreDistinctAndRepeatable) {
  std::set<std::uint64_t> hashes;
  for (const auto& ex : examples::all()) {
    Kernel first = ex.build();
    EXPECT_EQ(first.structural_hash(), ex.build().structural_hash()) << ex.name;
    hashes.insert(first.structural_hash());
  }
  EXPECT_EQ(hashes.size(), examples::all().size());
}

TEST(IrEqual, ExpressionsCompareStructurally) {
  SourceLoc l1{"a.cpp", 1, 1}, l2{"b.cpp", 9, 9};
  auto x = ir::int_literal(ScalarType::I32, 4, l1);
  auto y = ir::int_literal(ScalarType::I32, 4, l2);
  auto z = ir::int_literal(ScalarType::I32, 5, l1);
  auto sum1 = ir::make<ir::Binary>(ScalarType::I32, ir::BinOp::Add, x, z, l1);
  auto sum2 = ir::make<ir::Binary>(ScalarType::I32, ir::BinOp::Add, y, z, l2);
  auto diff = ir::make<ir::Binary>(ScalarType::I32, ir::BinOp::Sub, y, z, l2);
  EXPECT_TRUE(ir::equal(sum1, sum2)) << "locations do not count";
  EXPECT_EQ(sum1->hash, sum2->hash);
  EXPECT_FALSE(ir::equal(sum1, diff));
  EXPECT_EQ(ir::const_int(sum1), 9);
}

TEST(IrPrinter, NamesAreMadeUnique) {
  KernelBuilder k("names");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.let("x", 1);
    g.group(thread(1), [&](Scope& th) { th.let("x", 2); });
  });
  std::string text = k.build().ir_text();
  EXPECT_NE(text.find("let x: i32 = 1;"), std::string::npos) << text;
  EXPECT_NE(text.find("let x_1: i32 = 2;"), std::string::npos) << text;
}

TEST(IrPrinter, PrintsCalledFunctionsFirst) {
  std::string text = examples::mma_tf32_naive().ir_text();
  auto fn = text.find("function simple_mma_smem");
  auto kernel = text.find("kernel mma_tf32_naive");
  ASSERT_NE(fn, std::string::npos);
  ASSERT_NE(kernel, std::string::npos);
  EXPECT_LT(fn, kernel);
  EXPECT_NE(text.find("call simple_mma_smem(A_smem, B_smem, C_smem_claim, 8, 8);"), std::string::npos) << text;
}

}  // namespace
}  // namespace vantage
