// IR: structural hashing and equality, and the stable printed form.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "jit/ir/affine.h"
#include "jit/ir/eval.h"
#include "jit/ir/ir.h"
#include "jit/ir/mutate.h"
#include "jit/ir/printer.h"
#include "jit/ir/visit.h"
#include "jit/pipeline/handles.h"
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

// The analyses' affine reader keeps every constant and coefficient strictly under 2^62, so that a
// sum of two never overflows (it kept 2^62 itself, and 2^62 + 2^62 wrapped to -2^63).
TEST(IrAffine, TheReaderTakesASumPast2To62AsOneAtom) {
  SourceLoc l{"a.cpp", 1, 1};
  const std::int64_t big = std::int64_t{1} << 62;
  auto sum = ir::make<ir::Binary>(ScalarType::I64, ir::BinOp::Add, ir::int_literal(ScalarType::I64, big, l),
                                  ir::int_literal(ScalarType::I64, big, l), l);
  ir::AffineReader::Lets lets;
  ir::AffineReader read(lets);
  const ir::Affine& a = read(sum);  // (under UBSan, the sum overflowed here before)
  ASSERT_EQ(a.terms.size(), 1u);
  EXPECT_EQ(a.constant, 0) << "no constant of 2^62 or more is kept";
  auto small = ir::make<ir::Binary>(ScalarType::I64, ir::BinOp::Add, ir::int_literal(ScalarType::I64, big - 1, l),
                                    ir::int_literal(ScalarType::I64, 1, l), l);
  EXPECT_TRUE(read(small).terms.size() == 1) << "big - 1 + 1 reaches 2^62 itself: an atom too";
  auto fits = ir::make<ir::Binary>(ScalarType::I64, ir::BinOp::Add, ir::int_literal(ScalarType::I64, big - 2, l),
                                   ir::int_literal(ScalarType::I64, 1, l), l);
  EXPECT_TRUE(read(fits).terms.empty());
  EXPECT_EQ(read(fits).constant, big - 1);
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

namespace vantage {
namespace {

using namespace ir;
const SourceLoc kAt{"test_ir.cpp", 1, 1};
ExprPtr mark(std::int64_t v) { return int_literal(ScalarType::I32, v, kAt); }

/// The integer literals a walk reaches.
std::set<std::int64_t> reached(const StmtPtr& s) {
  struct Marks : IRVisitor {
    std::set<std::int64_t> seen;
    void visit(const Literal& n) override { seen.insert(n.i); }
  } m;
  m.walk(s);
  return m.seen;
}

// Every child of every statement and expression kind is walked: the default recursion comes from each
// node's field list, so no pass can forget one (a return value, an else branch, an unsafe input).
TEST(IrWalk, TheDefaultRecursionReachesEveryChild) {
  auto v = make_var(0, "v", ScalarType::I32, VarNode::Origin::Let, kAt);
  auto m = make_mem(1, "m", ScalarType::I32, MemSpace::Shared, false, 1, MemNode::Origin::Shared, kAt);
  auto d = make_mem(2, "d", ScalarType::I32, MemSpace::Shared, false, 1, MemNode::Origin::Partition, kAt);
  auto e = [&](std::int64_t a, std::int64_t b) {  // a Binary over two marks, inside a Cast and a Select
    return make<Cast>(ScalarType::I32,
                      make<Select>(ScalarType::I32, make<Binary>(ScalarType::Bool, BinOp::Lt, mark(a), mark(b), kAt),
                                   make<Unary>(ScalarType::I32, UnOp::Neg, mark(a), kAt),
                                   make<Load>(ScalarType::I32, m, std::vector<ExprPtr>{mark(b)}, kAt), kAt),
                      kAt);
  };
  auto body = [&](std::int64_t a) { return make<Seq>(std::vector<StmtPtr>{make<Return>(mark(a), kAt)}, kAt); };
  auto f = std::make_shared<FunctionNode>();
  f->body = body(999);  // a callee's body is not a child of the call
  std::vector<StmtPtr> all = {
      make<Let>(v, e(1, 2), std::nullopt, kAt),
      make<Assign>(v, mark(3), kAt),
      make<Store>(m, std::vector<ExprPtr>{mark(4)}, mark(5), kAt),
      make<If>(mark(6), body(7), body(8), kAt),
      make<For>(v, mark(9), mark(10), mark(11), body(12), kAt),
      make<While>(mark(13), body(14), kAt),
      make<Group>(thread(1), body(15), kAt),
      make<Split>(Level::Thread, std::vector<std::int64_t>{1, 1}, std::vector<StmtPtr>{body(16), body(17)},
                  std::vector<SourceLoc>{kAt, kAt}, kAt),
      make<Destruct>(body(18), kAt),
      make<Partition>(m, d, thread(1), std::vector<VarPtr>{}, mark(19), body(20), kAt),
      make<Claim>(m, d, thread(1), body(21), kAt),
      make<Lower>(m, d, body(22), kAt),
      make<Async>(m, d, body(23), kAt),
      make<SharedAlloc>(m, mark(24), kAt),
      make<Call>(f, std::vector<CallArgNode>{{mark(25), nullptr}, {nullptr, m}}, nullptr, kAt),
      make<Intrinsic>(IntrinsicOp::ShflXor, std::vector<ExprPtr>{mark(26), mark(27)}, std::vector<MemPtr>{},
                      std::vector<VarPtr>{}, std::vector<std::int64_t>{}, kAt),
      make<Unsafe>(thread(1), "x", std::vector<NamedExpr>{{"a", mark(28)}}, std::vector<NamedVar>{}, kAt),
      make<Return>(
          make<MathCall>(ScalarType::F32, MathFn::Fma, std::vector<ExprPtr>{mark(29), mark(30), mark(31)}, kAt), kAt),
  };
  std::set<std::int64_t> seen = reached(make<Seq>(all, kAt));
  for (std::int64_t i = 1; i <= 31; ++i) EXPECT_TRUE(seen.count(i)) << "child " << i << " was not walked";
  EXPECT_FALSE(seen.count(999)) << "the callee's body is not a child";
  EXPECT_EQ(called_functions(make<Seq>(all, kAt)).size(), 1u) << "but called_functions finds it";
}

TEST(IrWalk, TheMutatorSharesWhatItDoesNotChange) {
  Kernel k = examples::sgemm_smem();
  const KernelNode& node = detail::KernelAccess::ir(k);
  // Substituting a variable the body does not use returns the very same tree.
  auto unused = make_var(12345, "unused", ScalarType::I32, VarNode::Origin::Let, kAt);
  EXPECT_EQ(substitute(node.body, VarMap{{unused.get(), mark(1)}}), node.body);
  // Substituting K rebuilds only the statements on a path to a use of K; the shared allocations stay.
  const VarNode* K = node.params[2].var.get();
  ASSERT_EQ(K->name, "K");
  StmtPtr out = substitute(node.body, VarMap{{K, mark(64)}});
  EXPECT_NE(out, node.body);
  EXPECT_FALSE(equal(out, node.body));
  KernelNode substituted = node;
  substituted.body = out;
  EXPECT_NE(ir::print(substituted).find("for kb in [0, 64) step 32"), std::string::npos);
  struct Allocs : IRVisitor {
    std::vector<const StmtNode*> found;
    void visit(const SharedAlloc& n) override { found.push_back(&n); }
  } before, after;
  before.walk(node.body);
  after.walk(out);
  ASSERT_EQ(before.found.size(), 2u);
  EXPECT_EQ(before.found, after.found) << "unchanged statements are shared, not copied";
}

TEST(IrEqual, NegativeZeroIsNotZero) {
  auto plus = make<Literal>(ScalarType::F32, std::int64_t{0}, 0.0, kAt);
  auto minus = make<Literal>(ScalarType::F32, std::int64_t{0}, -0.0, kAt);
  EXPECT_FALSE(equal(plus, minus));
  EXPECT_NE(plus->hash, minus->hash);
  auto nan1 = make<Literal>(ScalarType::F32, std::int64_t{0}, std::nan(""), kAt);
  auto nan2 = make<Literal>(ScalarType::F32, std::int64_t{0}, std::nan(""), kAt);
  EXPECT_TRUE(equal(nan1, nan2)) << "the same bits are the same constant";
}

}  // namespace
}  // namespace vantage
