// docs/semantics.md, tested: the integer semantics folding uses (jit/ir/eval), the ranges that decide
// where generated code needs a helper or 64-bit indices (jit/ir/range), and what the CUDA generator
// prints for each edge case, compiled by NVRTC.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "host_cuda.hpp"
#include "jit/ir/eval.h"
#include "jit/ir/range.h"
#include "jit/nvrtc/nvrtc.h"
#include "kernels/paper_kernels.hpp"
#include "reject_helpers.hpp"
#include "support/float16.h"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using ir::BinOp;
constexpr auto I32 = ScalarType::I32;
constexpr auto U32 = ScalarType::U32;
constexpr auto I64 = ScalarType::I64;
constexpr auto U64 = ScalarType::U64;

std::int64_t bin(BinOp op, ScalarType t, std::int64_t a, std::int64_t b, bool* over = nullptr) {
  return ir::eval_binary(op, t, a, b, over);
}

TEST(Semantics, SignedArithmeticWraps) {
  bool over = false;
  EXPECT_EQ(bin(BinOp::Add, I32, INT32_MAX, 1, &over), INT32_MIN);
  EXPECT_TRUE(over);
  EXPECT_EQ(bin(BinOp::Mul, I32, 65536, 65536), 0);
  EXPECT_EQ(bin(BinOp::Sub, I64, INT64_MIN, 1), INT64_MAX);
  EXPECT_EQ(ir::eval_unary(ir::UnOp::Neg, I32, INT32_MIN), INT32_MIN);
  over = false;
  EXPECT_EQ(bin(BinOp::Add, I32, 2, 3, &over), 5);
  EXPECT_FALSE(over) << "exact results are not flagged";
}

TEST(Semantics, UnsignedArithmeticWraps) {
  EXPECT_EQ(bin(BinOp::Sub, U32, 0, 1), 0xffffffffLL);
  EXPECT_EQ(static_cast<std::uint64_t>(bin(BinOp::Sub, U64, 0, 1)), UINT64_MAX);
  EXPECT_EQ(bin(BinOp::Mul, U32, 0x10000, 0x10000), 0);
  // The largest u64 product (2^128 - 2^65 + 1) is computed without overflow in the evaluator itself
  // (UBSan checks that in scripts/test --sanitize): it wraps to 1.
  bool over = false;
  EXPECT_EQ(bin(BinOp::Mul, U64, -1, -1, &over), 1);
  EXPECT_TRUE(over);
  over = false;
  EXPECT_EQ(bin(BinOp::Mul, U64, std::int64_t{1} << 32, std::int64_t{1} << 31, &over), std::int64_t{1} << 63);
  EXPECT_FALSE(over);
}

TEST(Semantics, DivisionByZeroAndMinByMinusOne) {
  EXPECT_EQ(bin(BinOp::Div, I32, 7, 0), -1);
  EXPECT_EQ(bin(BinOp::Div, I32, -7, 0), -1);
  EXPECT_EQ(bin(BinOp::Mod, I32, -7, 0), -7);
  EXPECT_EQ(bin(BinOp::Div, U32, 7, 0), 0xffffffffLL);
  EXPECT_EQ(static_cast<std::uint64_t>(bin(BinOp::Div, U64, 7, 0)), UINT64_MAX);
  EXPECT_EQ(bin(BinOp::Mod, U64, 7, 0), 7);
  EXPECT_EQ(bin(BinOp::Div, I32, INT32_MIN, -1), INT32_MIN);
  EXPECT_EQ(bin(BinOp::Mod, I32, INT32_MIN, -1), 0);
  EXPECT_EQ(bin(BinOp::Div, I64, INT64_MIN, -1), INT64_MIN);
  // Truncation toward zero, remainder with the dividend's sign.
  EXPECT_EQ(bin(BinOp::Div, I32, -7, 2), -3);
  EXPECT_EQ(bin(BinOp::Mod, I32, -7, 2), -1);
}

TEST(Semantics, ShiftAmountsClampAtTheWidth) {
  EXPECT_EQ(bin(BinOp::Shl, I32, 1, 31), INT32_MIN);
  EXPECT_EQ(bin(BinOp::Shl, I32, 1, 32), 0);
  EXPECT_EQ(bin(BinOp::Shl, I32, -1, 4), -16) << "negative values shift their bits";
  EXPECT_EQ(bin(BinOp::Shr, I32, -16, 2), -4) << "arithmetic on signed types";
  EXPECT_EQ(bin(BinOp::Shr, I32, -16, 40), -1);
  EXPECT_EQ(bin(BinOp::Shr, I32, 16, 40), 0);
  EXPECT_EQ(bin(BinOp::Shr, U32, 0xffffffffLL, 4), 0x0fffffffLL) << "logical on unsigned types";
  EXPECT_EQ(bin(BinOp::Shr, U32, 0xffffffffLL, 32), 0);
  EXPECT_EQ(bin(BinOp::Shl, I64, 1, 64), 0);
  EXPECT_EQ(bin(BinOp::Shl, I32, 1, -1), 0) << "a negative amount is a huge unsigned one";
}

TEST(Semantics, ConversionsKeepTheLowBits) {
  EXPECT_EQ(ir::eval_cast(I64, I32, 0x100000005LL), 5);
  EXPECT_EQ(ir::eval_cast(I32, U32, -1), 0xffffffffLL);
  EXPECT_EQ(ir::eval_cast(U32, I32, 0xffffffffLL), -1);
  EXPECT_EQ(ir::eval_cast(I32, ScalarType::Bool, -3), 1);
}

TEST(Semantics, BitFunctionsReadTheOperandsBitsAtItsWidth) {
  using ir::MathFn;
  auto bits = [](MathFn f, ScalarType t, std::int64_t v) { return ir::eval_bits(f, t, v); };
  EXPECT_EQ(bits(MathFn::Popc, U32, 0xf0), 4);
  EXPECT_EQ(bits(MathFn::Popc, I32, -1), 32) << "a negative i32 is 32 set bits, not 64";
  EXPECT_EQ(bits(MathFn::Popc, I64, -1), 64);
  EXPECT_EQ(bits(MathFn::Popc, U64, INT64_MIN), 1);
  EXPECT_EQ(bits(MathFn::Clz, U32, 0), 32);
  EXPECT_EQ(bits(MathFn::Clz, I64, 0), 64);
  EXPECT_EQ(bits(MathFn::Clz, U32, 1), 31);
  EXPECT_EQ(bits(MathFn::Clz, I32, -1), 0);
  EXPECT_EQ(bits(MathFn::Clz, U64, 1), 63);
  EXPECT_EQ(bits(MathFn::Ffs, I32, 0), 0);
  EXPECT_EQ(bits(MathFn::Ffs, U32, 8), 4);
  EXPECT_EQ(bits(MathFn::Ffs, I32, INT32_MIN), 32);
  EXPECT_EQ(bits(MathFn::Ffs, I64, INT64_MIN), 64);
  EXPECT_EQ(bits(MathFn::Brev, U32, 1), 0x80000000LL);
  EXPECT_EQ(bits(MathFn::Brev, I32, 1), INT32_MIN) << "an i32 keeps its type: the top bit is the sign";
  EXPECT_EQ(bits(MathFn::Brev, I32, 6), 0x60000000LL);
  EXPECT_EQ(bits(MathFn::Brev, U64, 1), INT64_MIN) << "2^63, held as u64 bits";
  EXPECT_EQ(bits(MathFn::Brev, I64, 0x0123456789abcdefLL), static_cast<std::int64_t>(0xf7b3d591e6a2c480ULL));
  // Folding uses the same definition, and the counts' range is [0, width].
  SourceLoc l{"t.cpp", 1, 1};
  auto popc = ir::make<ir::MathCall>(I32, MathFn::Popc, std::vector<ir::ExprPtr>{ir::int_literal(I64, -1, l)}, l);
  EXPECT_EQ(ir::const_int(popc), 64);
  auto clz = ir::make<ir::MathCall>(
      I32, MathFn::Clz, std::vector<ir::ExprPtr>{ir::ref(ir::make_var(1, "x", U64, ir::VarNode::Origin::Param, l), l)},
      l);
  EXPECT_EQ(ir::value_range(clz, ir::RangeEnv{}).lo, 0);
  EXPECT_EQ(ir::value_range(clz, ir::RangeEnv{}).hi, 64);
}

TEST(Semantics, LiteralsMustFitTheirType) {
  EXPECT_TRUE(ir::fits(I32, INT32_MIN));
  EXPECT_FALSE(ir::fits(I32, 5000000000LL));
  EXPECT_FALSE(ir::fits(U32, -1));
  EXPECT_TRUE(ir::fits(U64, -1)) << "u64 literals hold bit patterns";
}

/// f64 and integers converted to f16 and bf16 with one rounding to nearest even, as the GPU's cvt.rn
/// does (docs/semantics.md). Rounding to f32 first (as the interpreter and
/// the CPU backend once did) turns a value just past a 16-bit tie into the tie, then rounds it to even:
/// the wrong way.
TEST(Semantics, ConversionsToSixteenBitFloatsRoundOnce) {
  KernelBuilder k("to16");
  auto n = k.param<int>("n");
  auto d = k.param<GlobalPtr<const double>>("d", extent(n));
  auto q = k.param<GlobalPtr<const std::int64_t>>("q", extent(n));
  auto u = k.param<GlobalPtr<const std::uint64_t>>("u", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n * 6));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i * 6 + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(i < n, [&](Scope&) {
              o[0] = cast<float>(cast(ScalarType::F16, d[i]));
              o[1] = cast<float>(cast(ScalarType::BF16, d[i]));
              o[2] = cast<float>(cast(ScalarType::BF16, q[i]));
              o[3] = cast<float>(cast(ScalarType::F16, q[i]));
              o[4] = cast<float>(cast(ScalarType::BF16, cast<int>(q[i])));
              o[5] = cast<float>(cast(ScalarType::BF16, u[i]));
            });
          });
        });
  });
  Kernel kernel = k.build();
  struct Case {
    int op;  // which of the six conversions above
    double d;
    std::int64_t q;
    std::uint64_t u;
    float want;
  };
  const double p = std::ldexp(1.0, -40);
  const Case cases[] = {
      {0, 1 + 0x1p-11 + p, 0, 0, 1 + 0x1p-10f},  // past the tie: up (f32 first made it the tie, then 1)
      {0, 1 + 0x1p-11, 0, 0, 1.0f},              // the tie itself: to even
      {0, 1 + 3 * 0x1p-11, 0, 0, 1 + 0x1p-9f},   // a tie whose even neighbour is above
      {0, -(1 + 0x1p-11 + p), 0, 0, -(1 + 0x1p-10f)},
      {0, 0x1p-25 + 0x1p-60, 0, 0, 0x1p-24f},  // past half the smallest subnormal
      {0, 65519.99, 0, 0, 65504.0f},
      {0, 65520.0, 0, 0, INFINITY},
      {1, 1 + 0x1p-8 + p, 0, 0, 1 + 0x1p-7f},
      {1, 1e300, 0, 0, INFINITY},
      {2, 0, (1LL << 25) + (1LL << 17) + 1, 0, 0x1p25f + 0x1p18f},
      {2, 0, (1LL << 25) + (1LL << 17), 0, 0x1p25f},
      {2, 0, (1LL << 60) + (1LL << 52) + 1, 0, 0x1p60f + 0x1p53f},
      {2, 0, INT64_MIN, 0, -0x1p63f},
      {3, 0, 70000, 0, INFINITY},
      {3, 0, -2049, 0, -2048.0f},  // f16 holds 11 bits: -2049 is a tie, to even
      {4, 0, (1LL << 25) + (1LL << 17) + 1, 0, 0x1p25f + 0x1p18f},
      {5, 0, 0, UINT64_MAX, 0x1p64f},
      {5, 0, 0, (1ULL << 63) + (1ULL << 55) + 1, 0x1p63f + 0x1p56f},
  };
  const int N = static_cast<int>(std::size(cases));
  std::vector<double> ds;
  std::vector<std::int64_t> qs;
  std::vector<std::uint64_t> us;
  for (const Case& c : cases) {
    ds.push_back(c.d);
    qs.push_back(c.q);
    us.push_back(c.u);
  }
  const std::vector<Device> devices = test_support::every_device();
  for (const Device& dev : devices) {
    std::vector<float> o(static_cast<std::size_t>(N * 6));
    test_support::launch_on(kernel, dev, Grid{1, 32}, N, std::as_const(ds), std::as_const(qs), std::as_const(us), o);
    for (int i = 0; i < N; ++i) {
      const Case& c = cases[i];
      EXPECT_EQ(o[static_cast<std::size_t>(i * 6 + c.op)], c.want)
          << dev.name() << ", case " << i << " (conversion " << c.op << " of " << c.d << ", " << c.q << ", " << c.u
          << ")";
    }
  }
  // The GPU converts with CUDA's intrinsics, each one rounding.
  std::string src = specialize_for(kernel, Spec{}).source;
  for (const char* f : {"__double2half(", "__double2bfloat16(", "__ll2bfloat16_rn(", "__ll2half_rn(",
                        "__int2bfloat16_rn(", "__ull2bfloat16_rn("})
    EXPECT_NE(src.find(f), std::string::npos) << f;
}

TEST(Semantics, FoldingNeverChangesAValue) {
  SourceLoc l{"t.cpp", 1, 1};
  auto big = ir::int_literal(I32, 100000, l);
  auto product = ir::make<ir::Binary>(I32, BinOp::Mul, big, big, l);
  auto f = ir::eval_const(product);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->value, static_cast<std::int32_t>(10000000000LL));
  EXPECT_FALSE(f->exact) << "the wrapped value is flagged, so sizes built from it are rejected";
}

// ------------------------------------------------------------------ ranges
TEST(Ranges, ArithmeticAndDivisionBounds) {
  ir::RangeEnv env;
  SourceLoc l{"t.cpp", 1, 1};
  auto t = ir::make_var(0, "t", I32, ir::VarNode::Origin::Let, l);
  auto n = ir::make_var(1, "n", I32, ir::VarNode::Origin::Param, l);
  env.vars[t.get()] = {0, 255};
  auto tt = ir::ref(t, l), nn = ir::ref(n, l);
  auto sum =
      ir::make<ir::Binary>(I32, BinOp::Add, ir::make<ir::Binary>(I32, BinOp::Mul, tt, ir::int_literal(I32, 4, l), l),
                           ir::int_literal(I32, 3, l), l);
  ir::Range r = ir::value_range(sum, env);
  EXPECT_EQ(static_cast<std::int64_t>(r.lo), 3);
  EXPECT_EQ(static_cast<std::int64_t>(r.hi), 1023);
  // Dividing by an unknown n: at most |t| in magnitude, or -1 (division by zero).
  ir::Range q = ir::value_range(ir::make<ir::Binary>(I32, BinOp::Div, tt, nn, l), env);
  EXPECT_EQ(static_cast<std::int64_t>(q.lo), -255);
  EXPECT_EQ(static_cast<std::int64_t>(q.hi), 255);
  // n * n may overflow; t * 4 + 3 may not.
  EXPECT_TRUE(ir::may_overflow(static_cast<const ir::Binary&>(*ir::make<ir::Binary>(I32, BinOp::Mul, nn, nn, l)), env));
  EXPECT_FALSE(ir::may_overflow(static_cast<const ir::Binary&>(*sum), env));
}

// A grid-stride loop's rounds, (tiles - b + G - 1) / G for block b of G: the dividend adds the
// divisor once, so the quotient is 1 + (tiles - 1 - b) / G, at most `tiles` however large the grid.
// Without it a persistent kernel's tile index j * G might reach 2^31 and every index built from it was
// computed in 64 bits and kept its divisions. Where the dividend subtracts the divisor, or may wrap,
// nothing more is known.
TEST(Ranges, AQuotientWhoseDividendAddsTheDivisorIsAtMostOneMoreThanTheRest) {
  ir::RangeEnv env;
  SourceLoc l{"t.cpp", 1, 1};
  auto b = ir::make_var(0, "b", I32, ir::VarNode::Origin::Let, l);
  auto g = ir::make_var(1, "g", I32, ir::VarNode::Origin::Let, l);
  env.vars[b.get()] = {0, 5592404};
  env.vars[g.get()] = {1, 5592405};
  auto bb = ir::ref(b, l), gg = ir::ref(g, l);
  auto i32 = [&](std::int64_t v) { return ir::int_literal(I32, v, l); };
  auto bin = [&](BinOp op, const ir::ExprPtr& x, const ir::ExprPtr& y) {
    return ir::make<ir::Binary>(I32, op, x, y, l);
  };
  auto rounds = bin(BinOp::Div, bin(BinOp::Sub, bin(BinOp::Add, bin(BinOp::Sub, i32(512), bb), gg), i32(1)), gg);
  ir::Range r = ir::value_range(rounds, env);
  EXPECT_EQ(static_cast<std::int64_t>(r.hi), 512);
  EXPECT_LE(static_cast<std::int64_t>(r.lo), 0);
  // A non-negative dividend: (512 + g - 1) / g is at most 512 too.
  ir::Range p = ir::value_range(bin(BinOp::Div, bin(BinOp::Add, i32(511), gg), gg), env);
  EXPECT_GE(static_cast<std::int64_t>(p.lo), 0);
  EXPECT_EQ(static_cast<std::int64_t>(p.hi), 512);
  // The divisor subtracted: nothing more than |dividend|.
  ir::Range m = ir::value_range(bin(BinOp::Div, bin(BinOp::Sub, i32(512), gg), gg), env);
  EXPECT_EQ(static_cast<std::int64_t>(m.hi), 5592405 - 512);  // |512 - 5592405|
  // A dividend that may wrap (g * g): its type's range.
  ir::Range w = ir::value_range(bin(BinOp::Div, bin(BinOp::Add, bin(BinOp::Mul, gg, gg), gg), gg), env);
  EXPECT_GT(static_cast<std::int64_t>(w.hi), 1000000);
}

/// A memo of exact ranges (what the bounds proofs of one body share) finds an expression again by its
/// structure, and two variables may look alike (the same id and name, as a hand-built or transformed
/// IR can have) with different ranges: the memo must tell them apart, or a proof would take the
/// narrow range of one for the other.
TEST(Ranges, TheExactMemoTellsApartVariablesThatLookAlike) {
  SourceLoc l{"t.cpp", 1, 1};
  auto narrow = ir::make_var(7, "i", I32, ir::VarNode::Origin::Let, l);
  auto wide = ir::make_var(7, "i", I32, ir::VarNode::Origin::Let, l);
  ir::ExactMemo memo;
  ir::RangeEnv env;
  env.exact_memo = &memo;
  env.vars[narrow.get()] = {0, 9};
  env.vars[wide.get()] = {0, 999};
  auto plus_one = [&](const ir::VarPtr& v) {
    return ir::make<ir::Binary>(I32, BinOp::Add, ir::ref(v, l), ir::int_literal(I32, 1, l), l);
  };
  ASSERT_TRUE(ir::equal(plus_one(narrow), plus_one(wide))) << "the two look alike to ir::equal";
  auto a = ir::exact_value_range(plus_one(narrow), env);
  auto b = ir::exact_value_range(plus_one(wide), env);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(static_cast<std::int64_t>(a->hi), 10);
  EXPECT_EQ(static_cast<std::int64_t>(b->hi), 1000) << "the wide variable's range, not the memo's narrow one";
  // The same structure again is found in the memo, and gives the same answer as without it.
  auto again = ir::exact_value_range(plus_one(narrow), env);
  ASSERT_TRUE(again);
  EXPECT_EQ(static_cast<std::int64_t>(again->hi), 10);
  EXPECT_EQ(memo.seen.size(), 5u) << "i + 1 and i for each variable, and the literal 1 once";
}

// ------------------------------------------------------------------ generated code
/// One thread computes `fn(a, b)` of two parameters and stores it; the source and a compile.
struct Op {
  std::string source;
  Kernel kernel;
};
template <class T>
Op one_op(const std::function<Expr(Expr, Expr)>& fn) {
  KernelBuilder k("op");
  auto a = k.param<T>("a");
  auto b = k.param<T>("b");
  auto out = k.param<GlobalPtr<T>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.claim(out, thread(1), [&](Scope& g, View o) { g.split(Level::Thread, {{1, [&](Scope&) { o[0] = fn(a, b); }}}); });
  });
  Kernel kernel = k.build();
  return {specialize_for(kernel, Spec{}).source, kernel};
}

TEST(GeneratedCode, EveryIntegerEdgeCaseHasItsHelperAndCompiles) {
  REQUIRE_NVRTC();
  struct Case {
    const char* helper;
    Op op;
  };
  std::vector<Case> cases = {
      {"vt_add", one_op<int>([](Expr a, Expr b) { return a + b; })},
      {"vt_mul", one_op<std::int64_t>([](Expr a, Expr b) { return a * b; })},
      {"vt_neg", one_op<int>([](Expr a, Expr) { return -a; })},
      {"vt_div", one_op<int>([](Expr a, Expr b) { return a / b; })},
      {"vt_mod0", one_op<std::uint32_t>([](Expr a, Expr b) { return (a + 1u) % b; })},
      {"vt_div0", one_op<std::uint64_t>([](Expr a, Expr b) { return a / (b + 1u); })},
      {"vt_shl", one_op<int>([](Expr a, Expr b) { return a << b; })},
      {"vt_shr", one_op<std::int64_t>([](Expr a, Expr b) { return a >> b; })},
      {"vt_shr", one_op<std::uint32_t>([](Expr a, Expr b) { return a >> b; })},
      {"vt_abs", one_op<int>([](Expr a, Expr) { return abs(a); })},
  };
  for (const auto& c : cases) {
    EXPECT_NE(c.op.source.find(std::string(c.helper) + "("), std::string::npos) << c.helper << "\n" << c.op.source;
    Compiled compiled = compile(c.op.kernel, Spec{});
    EXPECT_FALSE(compiled.cubin.empty());
    EXPECT_EQ(compiled.log, "") << c.op.source;
  }
}

/// Whether generated source calls one of the semantic helpers.
bool calls_a_helper(const std::string& src) {
  static const std::regex kHelper(R"(\bvt_(add|sub|mul|neg|div|mod|div0|mod0|shl|shr|abs|select|and|or)\b)");
  return std::regex_search(src, kHelper);
}

TEST(GeneratedCode, PlainOperatorsWhereTheEdgeCannotHappen) {
  // Unsigned arithmetic wraps in C++ already; division by a non-zero constant, shifts by a constant
  // below the width, and sums the ranges bound need no helper.
  EXPECT_FALSE(calls_a_helper(one_op<std::uint32_t>([](Expr a, Expr b) { return a * b + a; }).source));
  EXPECT_FALSE(calls_a_helper(one_op<int>([](Expr a, Expr) { return a / 4 + a % 8; }).source));
  EXPECT_FALSE(calls_a_helper(one_op<int>([](Expr a, Expr) { return a << 3; }).source));
  EXPECT_TRUE(calls_a_helper(one_op<int>([](Expr a, Expr b) { return a << b; }).source)) << "the check can fail";
  std::string saxpy = specialize_for(examples::saxpy(), Spec{}).source;
  EXPECT_FALSE(calls_a_helper(saxpy)) << "ids bounded by the grid guard fit an int:\n" << saxpy;
  EXPECT_NE(saxpy.find("y[((blk * 256) + t)]"), std::string::npos) << saxpy;
}

TEST(GeneratedCode, MinimumLiteralsAndFloatToIntConversionsCompile) {
  REQUIRE_NVRTC();
  Op min_int = one_op<int>([](Expr a, Expr) { return a + INT32_MIN; });
  EXPECT_NE(min_int.source.find("(-2147483647 - 1)"), std::string::npos) << min_int.source;
  EXPECT_FALSE(compile(min_int.kernel, Spec{}).cubin.empty());
  Op to_int = one_op<float>([](Expr a, Expr b) { return cast<float>(cast<int>(a) + cast<int>(b)); });
  EXPECT_NE(to_int.source.find("__float2int_rz("), std::string::npos) << "saturating, NaN to 0";
  EXPECT_FALSE(compile(to_int.kernel, Spec{}).cubin.empty());
  Op halves = one_op<float>([](Expr a, Expr b) {
    return cast<float>(cast(ScalarType::F16, a) * cast(ScalarType::F16, b) + cast(ScalarType::F16, cast<int>(a))) +
           cast<float>(sqrt(cast(ScalarType::BF16, b)));
  });
  EXPECT_NE(halves.source.find("#include <cuda_fp16.h>"), std::string::npos);
  EXPECT_NE(halves.source.find("#include <cuda_bf16.h>"), std::string::npos);
  EXPECT_EQ(compile(halves.kernel, Spec{}).log, "") << halves.source;
}

TEST(GeneratedCode, SelectWithALoadEvaluatesBothArms) {
  KernelBuilder k("select_load");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        y, thread(1), [&](Expr j) { return i + j; },
        [&](Scope& g, View yi) {
          g.group(thread(1),
                  [&](Scope&) { yi[0] = select(i < n, x[min(i, n - 1)], 0.0f) + select(i < n, 1.0f, 2.0f); });
        });
  });
  std::string src = specialize_for(k.build(), Spec{}).source;
  // The load is checked as it runs: min(i, n - 1) is -1 when n is 0.
  EXPECT_NE(src.find("vt_select<float>((i < n), vt_ld(x, "), std::string::npos) << src;
  EXPECT_NE(src.find("((i < n) ? 1.0f : 2.0f)"), std::string::npos) << "no load, no call: " << src;
}

TEST(GeneratedCode, AnExtentBeyond2To31ElementsGets64BitIndices) {
  REQUIRE_NVRTC();
  // Each thread copies 4 of n = 3e9 elements: gid * 4 reaches 2^33.
  KernelBuilder k("big_copy");
  auto n = k.param<std::int64_t>("n", specialize);
  auto in = k.param<GlobalPtr<const float>>("in", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return gid * 4 + i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            th.for_("i", 0, 4, 1, [&](Scope& th, Expr i) {
              th.if_(cast<std::int64_t>(gid) * 4 + cast<std::int64_t>(i) < n, [&](Scope&) { o[i] = in[gid * 4 + i]; });
            });
          });
        });
  });
  Spec spec = Spec{}.with_size("n", 3000000000LL);
  std::string src = specialize_for(k.build(), spec).source;
  EXPECT_NE(src.find("out[((static_cast<long long>(gid) * 4LL) + static_cast<long long>(i))]"), std::string::npos)
      << src;
  EXPECT_NE(src.find("in[((static_cast<long long>(gid) * 4LL) + static_cast<long long>(i))]"), std::string::npos);
  EXPECT_FALSE(compile(k.build(), spec).cubin.empty());
}

TEST(GeneratedCode, AnIndexInsideAnIndexKeepsTheOuterIndexNarrow) {
  // The load y[t] is printed inside x's index before the part (t % 1024 + 1) that fits an int: the
  // inner index must not take the outer one's ranges with it.
  KernelBuilder k("nested_index");
  auto K = k.param<int>("K");
  auto x = k.param<GlobalPtr<const float>>("x");
  auto y = k.param<GlobalPtr<const int>>("y");
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View o) { g.group(thread(1), [&](Scope&) { o[0] = x[y[t] + (t % 1024 + 1) * K]; }); });
  });
  Kernel kernel = k.build();
  std::string src = specialize_for(kernel, Spec{}).source;
  EXPECT_NE(src.find("static_cast<long long>((t % 1024) + 1) * static_cast<long long>(K)"), std::string::npos) << src;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(kernel, Spec{}).log, "") << src;
  }
}

TEST(GeneratedCode, AnIndexThatMayNotFit64BitsIsRejected) {
  KernelBuilder k("huge_index");
  auto a = k.param<std::int64_t>("a");
  auto b = k.param<std::int64_t>("b");
  auto x = k.param<GlobalPtr<const float>>("x");
  auto y = k.param<GlobalPtr<float>>("y");
  k.block_threads(32);
  int line = 0;
  k.body([&](Scope& g) {
    g.claim(y, thread(1), [&](Scope& g, View one) {
      g.split(Level::Thread, {{1, [&](Scope&) {
                                 line = __LINE__ + 1;
                                 one[0] = x[a * b];  // i64 * i64: up to 2^126
                               }}});
    });
  });
  try {
    specialize_for(k.build(), Spec{});
    ADD_FAILURE() << "an index of unbounded size was printed";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V1006", line, "tests/test_semantics.cpp"));
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {

// Target legality: the checker accepts a shuffle of every type but bool; each of them compiles.
TEST(GeneratedCode, ShufflesOfEveryAcceptedTypeCompile) {
  REQUIRE_NVRTC();
  for (ScalarType t :
       {ScalarType::I8, ScalarType::U8, ScalarType::I16, ScalarType::U16, ScalarType::I32, ScalarType::U32,
        ScalarType::I64, ScalarType::U64, ScalarType::F16, ScalarType::BF16, ScalarType::F32, ScalarType::F64}) {
    KernelBuilder k("shuffle");
    auto out = k.pointer_param("out", t, MemSpace::Global, false);
    k.block_threads(32);
    k.body([&](Scope& g) {
      auto lane = g.let("lane", g.id(thread(1)));
      g.partition(
          out, thread(1), [&](Expr i) { return lane + i; },
          [&](Scope& g, View o) {
            g.group(warp(), [&](Scope& w) {
              auto v = w.let("v", cast(t, lane), at(thread(1)));
              auto a = w.shfl_xor("a", v, 1);
              auto b = w.shfl_down("b", a, 2);
              auto c = w.shfl_up("c", b, 4);
              auto d = w.shfl_idx("d", c, 0);
              w.group(thread(1), [&](Scope&) { o[0] = d; });
            });
          });
    });
    Compiled c = compile(k.build(), Spec{});
    EXPECT_FALSE(c.cubin.empty()) << type_name(t);
    EXPECT_EQ(c.log, "") << type_name(t);
  }
}

// ------------------------------------------------------------------ generated code, run on the host
// The generated code of one-thread integer kernels, built by the host compiler with UBSan and run
// (tests/host_cuda.hpp): what the helpers and loops compute must be what jit/ir/eval says, with no
// undefined behaviour on the way.

using ir::Range;

const char* ctype_of(ScalarType t) {
  switch (t) {
    case ScalarType::I8: return "signed char";
    case ScalarType::U8: return "unsigned char";
    case ScalarType::I16: return "short";
    case ScalarType::U16: return "unsigned short";
    case ScalarType::I32: return "int";
    case ScalarType::U32: return "unsigned";
    case ScalarType::I64: return "long long";
    case ScalarType::U64: return "unsigned long long";
    default: return "?";
  }
}

std::string decimal(__int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 m = neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string d;
  for (; m; m /= 10) d.insert(d.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
  return neg ? "-" + d : d;
}
/// C++ text of the value `v` (held as jit/ir/eval holds it) of type `t`.
std::string literal(ScalarType t, std::int64_t v) {
  v = ir::wrap(t, v);
  return "static_cast<" + std::string(ctype_of(t)) + ">(" + std::to_string(static_cast<std::uint64_t>(v)) + "ull)";
}
/// What the host program prints for the value `v` of type `t`.
std::string printed(ScalarType t, std::int64_t v) { return decimal(ir::exact(t, ir::wrap(t, v))); }

std::vector<std::int64_t> edge_values(ScalarType t) {
  switch (t) {
    case ScalarType::I8: return {INT8_MIN, INT8_MIN + 1, -13, -1, 0, 1, 7, 8, 9, 31, 32, 33, INT8_MAX};
    case ScalarType::U8: return {0, 1, 7, 8, 9, 15, 16, 17, 32, 33, INT8_MAX, 128, UINT8_MAX};
    case ScalarType::I16: return {INT16_MIN, INT16_MIN + 1, -13, -1, 0, 1, 7, 15, 16, 17, 32, 33, 255, INT16_MAX};
    case ScalarType::U16: return {0, 1, 7, 15, 16, 17, 32, 33, 255, 256, INT16_MAX, 32768, UINT16_MAX};
    case ScalarType::I32: return {INT32_MIN, INT32_MIN + 1, -13, -1, 0, 1, 7, 31, 32, 33, 40, INT32_MAX};
    case ScalarType::U32: return {0, 1, 7, 31, 32, 33, 64, INT32_MAX, std::int64_t{1} << 31, UINT32_MAX};
    case ScalarType::I64: return {INT64_MIN, -13, -1, 0, 1, 7, 63, 64, 65, std::int64_t{1} << 32, INT64_MAX};
    default: return {0, 1, 7, 63, 64, 65, std::int64_t{1} << 32, INT64_MIN, -1};  // u64: 2^63, 2^64 - 1
  }
}

/// A one-thread kernel of two parameters `a`, `b` of type `t` storing `fn(a, b)` to `out` of type
/// `out_type`.
test_support::HostKernel host_op(ScalarType t, ScalarType out_type, const std::function<Expr(Expr, Expr)>& fn) {
  KernelBuilder k("op");
  auto a = k.scalar_param("a", t);
  auto b = k.scalar_param("b", t);
  auto out = k.pointer_param("out", out_type, MemSpace::Global, false);
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.claim(out, thread(1), [&](Scope& g, View o) { g.split(Level::Thread, {{1, [&](Scope&) { o[0] = fn(a, b); }}}); });
  });
  Specialized s = specialize_for(k.build(), Spec{});
  return {s.source, s.entry, ctype_of(out_type), {}};
}

/// Runs `kernels` on the host and compares what each call stored with `expected` (described by `what`,
/// computed by `reference`).
void expect_host_values(const std::vector<test_support::HostKernel>& kernels, const std::vector<std::string>& expected,
                        const std::vector<std::string>& what, const char* reference) {
  auto run = test_support::run_on_host(kernels);
  ASSERT_TRUE(run.ok) << run.problem;
  ASSERT_EQ(run.values.size(), expected.size());
  int wrong = 0;
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (run.values[i] != expected[i] && ++wrong <= 20)
      ADD_FAILURE() << what[i] << ": generated code gives " << run.values[i] << ", " << reference << " " << expected[i];
  EXPECT_EQ(wrong, 0) << "of " << expected.size() << " results";
}

constexpr ScalarType kIntegers[] = {ScalarType::I8,  ScalarType::U8,  ScalarType::I16, ScalarType::U16,
                                    ScalarType::I32, ScalarType::U32, ScalarType::I64, ScalarType::U64};

/// The binary operations whose integer edge cases docs/semantics.md defines, as the builder writes them.
struct IntOp {
  BinOp op;
  Expr (*fn)(Expr, Expr);
};
const IntOp kIntOps[] = {
    {BinOp::Add, [](Expr a, Expr b) { return a + b; }},     {BinOp::Sub, [](Expr a, Expr b) { return a - b; }},
    {BinOp::Mul, [](Expr a, Expr b) { return a * b; }},     {BinOp::Div, [](Expr a, Expr b) { return a / b; }},
    {BinOp::Mod, [](Expr a, Expr b) { return a % b; }},     {BinOp::Shl, [](Expr a, Expr b) { return a << b; }},
    {BinOp::Shr, [](Expr a, Expr b) { return a >> b; }},    {BinOp::Min, [](Expr a, Expr b) { return min(a, b); }},
    {BinOp::Max, [](Expr a, Expr b) { return max(a, b); }}, {BinOp::Xor, [](Expr a, Expr b) { return a ^ b; }},
};

TEST(GeneratedCodeRuns, IntegerOperationsComputeWhatEvalDefines) {
  std::vector<test_support::HostKernel> kernels;
  std::vector<std::string> expected, what;
  for (ScalarType t : kIntegers) {
    auto values = edge_values(t);
    auto add = [&](test_support::HostKernel k, const std::string& name, auto&& reference) {
      for (std::int64_t a : values)
        for (std::int64_t b : values) {
          k.calls.push_back(literal(t, a) + ", " + literal(t, b));
          expected.push_back(printed(t, reference(a, b)));
          what.push_back(std::string(type_name(t)) + " " + name + " of " + printed(t, a) + ", " + printed(t, b));
        }
      kernels.push_back(std::move(k));
    };
    for (const auto& c : kIntOps)
      add(host_op(t, t, c.fn), ir::name_of(c.op), [&](std::int64_t a, std::int64_t b) { return bin(c.op, t, a, b); });
    add(host_op(t, t, [](Expr a, Expr) { return -a; }), "negation",
        [&](std::int64_t a, std::int64_t) { return ir::eval_unary(ir::UnOp::Neg, t, a); });
    if (is_signed(t)) {
      add(host_op(t, t, [](Expr a, Expr) { return abs(a); }), "abs",
          [&](std::int64_t a, std::int64_t) { return a < 0 ? ir::eval_unary(ir::UnOp::Neg, t, a) : a; });
      // A dividend that cannot be MIN: only the zero divisor needs defining, written out where the
      // operands are names (x / b) and through vt_div0 / vt_mod0 otherwise.
      const std::int64_t max = ir::wrap(t, Range::of(t).hi);
      for (BinOp op : {BinOp::Div, BinOp::Mod})
        for (bool leaf_divisor : {true, false}) {
          auto k = host_op(t, t, [&](Expr a, Expr b) {
            Expr x = a & max, y = leaf_divisor ? b : b - 1;
            return op == BinOp::Div ? x / y : x % y;
          });
          bool inline_test = op == BinOp::Div && leaf_divisor;
          EXPECT_NE(k.source.find(inline_test        ? " == 0 ? "
                                  : op == BinOp::Div ? "vt_div0("
                                                     : "vt_mod0("),
                    std::string::npos)
              << k.source;
          add(std::move(k), std::string(ir::name_of(op)) + " of a non-negative dividend",
              [&](std::int64_t a, std::int64_t b) {
                return bin(op, t, bin(BinOp::And, t, a, max), leaf_divisor ? b : bin(BinOp::Sub, t, b, 1));
              });
        }
    }
    // The bit functions through CUDA's intrinsics (__popc, __clzll, ...), as the host shim defines
    // them from the compiler's builtins, against jit/ir/eval's definition.
    const std::pair<ir::MathFn, Expr (*)(const ExprArg&)> bit_fns[] = {
        {ir::MathFn::Popc, popc}, {ir::MathFn::Clz, clz}, {ir::MathFn::Ffs, ffs}, {ir::MathFn::Brev, brev}};
    for (auto [fn, call] : bit_fns) {
      if (is_narrow_integer(t)) break;  // they take 32 or 64 bits (V0702: Semantics.NarrowIntegers...)
      ScalarType out = fn == ir::MathFn::Brev ? t : I32;
      auto k = host_op(t, out, [call](Expr a, Expr) { return call(a); });
      auto patterns = values;
      for (std::int64_t v : {0x00f00000LL, 0x12345678LL, 0x0123456789abcdefLL})
        if (ir::fits(t, v)) patterns.push_back(v);
      for (std::int64_t a : patterns) {
        k.calls.push_back(literal(t, a) + ", " + literal(t, 0));
        expected.push_back(printed(out, ir::eval_bits(fn, t, a)));
        what.push_back(std::string(type_name(t)) + " " + ir::name_of(fn) + " of " + printed(t, a));
      }
      kernels.push_back(std::move(k));
    }
    for (ScalarType to : kIntegers)
      if (to != t) {
        auto k = host_op(t, to, [to](Expr a, Expr) { return cast(to, a); });
        for (std::int64_t a : values) {
          k.calls.push_back(literal(t, a) + ", " + literal(t, 0));
          expected.push_back(printed(to, ir::eval_cast(t, to, a)));
          what.push_back(std::string(type_name(t)) + " " + printed(t, a) + " to " + type_name(to));
        }
        kernels.push_back(std::move(k));
      }
  }
  expect_host_values(kernels, expected, what, "eval");
}

/// Every operation of kIntOps, and negation, on every pair of `T`'s edge values, computed by a kernel
/// on each device present (the interpreter, the CPU backend, a GPU), against jit/ir/eval. On a GPU this
/// is what confirms the helpers against what PTX leaves unspecified (a zero divisor, MIN / -1, shifts
/// past the width): the operands are the kernel's arguments, so nothing is folded at compile time.
template <class T>
void integer_operations_on_every_device() {
  constexpr ScalarType t = scalar_of<T>;
  constexpr int kOps = static_cast<int>(std::size(kIntOps)) + 1;
  KernelBuilder k("int_ops");
  auto n = k.param<int>("n");
  auto a = k.param<GlobalPtr<const T>>("a", extent(n));
  auto b = k.param<GlobalPtr<const T>>("b", extent(n));
  auto out = k.param<GlobalPtr<T>>("out", extent(n * kOps));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i * kOps + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(i < n, [&](Scope&) {
              for (int c = 0; c < kOps - 1; ++c) o[c] = kIntOps[c].fn(a[i], b[i]);
              o[kOps - 1] = -a[i];
            });
          });
        });
  });
  Kernel kernel = k.build();
  std::vector<T> as, bs;
  for (std::int64_t x : edge_values(t))
    for (std::int64_t y : edge_values(t)) {
      as.push_back(static_cast<T>(x));
      bs.push_back(static_cast<T>(y));
    }
  const int N = static_cast<int>(as.size());
  const std::vector<Device> devices = test_support::every_device();
  for (const Device& dev : devices) {
    std::vector<T> o(static_cast<std::size_t>(N * kOps), T{42});
    test_support::launch_on(kernel, dev, Grid{(N + 31) / 32, 32}, N, std::as_const(as), std::as_const(bs), o);
    int wrong = 0;
    for (int i = 0; i < N && wrong < 10; ++i)
      for (int c = 0; c < kOps; ++c) {
        std::int64_t x = static_cast<std::int64_t>(as[i]), y = static_cast<std::int64_t>(bs[i]);
        T want = static_cast<T>(c < kOps - 1 ? bin(kIntOps[c].op, t, x, y) : ir::eval_unary(ir::UnOp::Neg, t, x));
        T got = o[static_cast<std::size_t>(i * kOps + c)];
        if (got != want && ++wrong <= 10)
          ADD_FAILURE() << dev.name() << ": " << type_name(t) << " "
                        << (c < kOps - 1 ? ir::name_of(kIntOps[c].op) : "negation") << " of " << +as[i] << ", "
                        << +bs[i] << " gave " << +got << ", not " << +want;
      }
  }
}

TEST(Semantics, IntegerOperationsComputeWhatEvalDefinesOnEveryDevice) {
  integer_operations_on_every_device<std::int8_t>();
  integer_operations_on_every_device<std::uint8_t>();
  integer_operations_on_every_device<std::int16_t>();
  integer_operations_on_every_device<std::uint16_t>();
  integer_operations_on_every_device<std::int32_t>();
  integer_operations_on_every_device<std::uint32_t>();
  integer_operations_on_every_device<std::int64_t>();
  integer_operations_on_every_device<std::uint64_t>();
}

/// The iterations docs/semantics.md ("Loops") defines: begin, begin + step, ... while before `end`
/// (exactly, no wrapping), none for a step of 0; folded into h = h * 31 + i, wrapping in `t`, or
/// nullopt beyond `cap` iterations.
std::optional<std::int64_t> loop_hash(ScalarType t, std::int64_t begin, std::int64_t end, std::int64_t step,
                                      int cap = 1000) {
  __int128 v = ir::exact(t, ir::wrap(t, begin)), e = ir::exact(t, ir::wrap(t, end)),
           st = ir::exact(t, ir::wrap(t, step));
  std::int64_t h = 0;
  for (int n = 0; st > 0 ? v < e : st < 0 && v > e; v += st) {
    if (++n > cap) return std::nullopt;
    h = bin(BinOp::Add, t, bin(BinOp::Mul, t, h, 31), ir::wrap(t, v));
  }
  return h;
}

/// h = h * 31 + i over `for_(i, begin, end, step)`; the arguments not given are parameters.
test_support::HostKernel host_loop(ScalarType t, std::optional<std::int64_t> begin, std::optional<std::int64_t> end,
                                   std::optional<std::int64_t> step) {
  KernelBuilder k("loop");
  auto value = [&](const char* name, std::optional<std::int64_t> v) {
    return v ? cast(t, static_cast<std::int64_t>(*v)) : k.scalar_param(name, t);
  };
  Expr b = value("b", begin), e = value("e", end), st = value("st", step);
  auto out = k.pointer_param("out", t, MemSpace::Global, false);
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.claim(out, thread(1), [&](Scope& g, View o) {
      g.split(Level::Thread, {{1, [&](Scope& s) {
                                 auto h = s.let("h", cast(t, 0));
                                 s.for_("i", b, e, st, [&](Scope& s, Expr i) { s.assign(h, h * 31 + i); });
                                 o[0] = h;
                               }}});
    });
  });
  Specialized s = specialize_for(k.build(), Spec{});
  return {s.source, s.entry, ctype_of(t), {}};
}

TEST(GeneratedCodeRuns, LoopCountersNeverWrap) {
  std::vector<test_support::HostKernel> kernels;
  std::vector<std::string> expected, what;
  for (ScalarType t : kIntegers) {
    if (is_narrow_integer(t)) continue;  // loop bounds take 32 or 64 bits (V0704)
    const std::int64_t lo = ir::wrap(t, Range::of(t).lo), hi = ir::wrap(t, Range::of(t).hi);
    const std::vector<std::pair<std::int64_t, std::int64_t>> bounds = {
        {0, 10},      {10, 0},      {5, 5},       {hi - 7, hi}, {hi - 1, hi},
        {hi, hi - 9}, {lo, lo + 7}, {lo + 7, lo}, {0, hi},      {hi, 0}};
    const std::vector<std::int64_t> steps = {1, 2, 3, -1, -2, -3, 0, hi, lo, hi - 3};
    // Bounds and step parameters: nothing is known; constant steps: only the direction.
    auto with_params = host_loop(t, std::nullopt, std::nullopt, std::nullopt);
    for (auto [b, e] : bounds)
      for (std::int64_t st : steps)
        if (auto h = loop_hash(t, b, e, st)) {
          with_params.calls.push_back(literal(t, b) + ", " + literal(t, e) + ", " + literal(t, st));
          expected.push_back(printed(t, *h));
          what.push_back(std::string(type_name(t)) + " loop from " + printed(t, b) + " to " + printed(t, e) + " step " +
                         printed(t, st));
        }
    kernels.push_back(std::move(with_params));
    for (std::int64_t st : {std::int64_t{3}, std::int64_t{-2}}) {
      if (st < 0 && !is_signed(t)) continue;
      auto k = host_loop(t, std::nullopt, std::nullopt, st);
      for (auto [b, e] : bounds)
        if (auto h = loop_hash(t, b, e, st)) {
          k.calls.push_back(literal(t, b) + ", " + literal(t, e));
          expected.push_back(printed(t, *h));
          what.push_back(std::string(type_name(t)) + " loop from " + printed(t, b) + " to " + printed(t, e) + " step " +
                         std::to_string(st));
        }
      kernels.push_back(std::move(k));
    }
    // Constant bounds at the top of the type: the range analysis knows where the counter goes.
    auto top = host_loop(t, hi - 5, hi, 2);
    top.calls.push_back("");
    expected.push_back(printed(t, *loop_hash(t, hi - 5, hi, 2)));
    what.push_back(std::string(type_name(t)) + " constant loop to the maximum");
    kernels.push_back(std::move(top));
  }
  if (nvrtc_available()) {
    for (const auto& k : kernels) {  // NVRTC accepts what the host compiler ran
      EXPECT_EQ(nvrtc::compile(k.source, k.entry + ".cu", nvrtc::canonical_options(Arch::SM_90, Output::Ptx)).log, "")
          << k.source;
    }
  }
  expect_host_values(kernels, expected, what, "the definition");
}

TEST(GeneratedCodeRuns, LoopBoundsAreEvaluatedOnce) {
  // `n` grows in the body: the loop still runs the 3 iterations its bound had on entry.
  KernelBuilder k("bound_once");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.claim(out, thread(1), [&](Scope& g, View o) {
      g.split(Level::Thread, {{1, [&](Scope& s) {
                                 auto n = s.let("n", 3);
                                 auto trips = s.let("trips", 0);
                                 s.for_("i", 0, n, [&](Scope& s, Expr) {
                                   s.assign(n, n + 1);
                                   s.assign(trips, trips + 1);
                                 });
                                 o[0] = trips * 100 + n;
                               }}});
    });
  });
  Kernel kernel = k.build();
  Specialized s = specialize_for(kernel, Spec{});
  EXPECT_NE(s.source.find("const int i_end = n;"), std::string::npos) << s.source;
  auto run = test_support::run_on_host({{s.source, s.entry, "int", {""}}});
  ASSERT_TRUE(run.ok) << run.problem << "\n" << s.source;
  EXPECT_EQ(run.values, std::vector<std::string>{"306"}) << s.source;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(kernel, Spec{}).log, "") << s.source;
  }
}

TEST(GeneratedCodeRuns, AnAccessOutsideItsBufferIsSkippedNotMade) {
  // out holds one element (the host run passes its length, 1); the store goes to out[n]. For n
  // other than 0 the generated check skips it: no undefined behaviour under UBSan and ASan-like
  // bounds, out[0] keeps its 0 (on a GPU the error record names this line; tests/test_gpu_mock.cpp).
  KernelBuilder k("oob_store");
  auto n = k.param<int>("n");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.claim(out, thread(1), [&](Scope& g, View o) { g.split(Level::Thread, {{1, [&](Scope&) { o[n] = 9; }}}); });
  });
  Specialized s = specialize_for(k.build(), Spec{});
  EXPECT_NE(s.source.find("vt_st(out, "), std::string::npos) << s.source;
  ASSERT_EQ(s.checks.size(), 1u);
  EXPECT_TRUE(s.checks[0].write);
  EXPECT_EQ(s.checks[0].memory, "out");
  auto run = test_support::run_on_host({{s.source, s.entry, "int", {"0", "1", "-1", "2147483647"}}});
  ASSERT_TRUE(run.ok) << run.problem << "\n" << s.source;
  EXPECT_EQ(run.values, (std::vector<std::string>{"9", "0", "0", "0"})) << s.source;
}

// ------------------------------------------------------------------ 8- and 16-bit integers
// i8, u8, i16 and u16 wrap at their width like the wider integers (the operations above run on them
// at their edges, in generated code and on every device); these are what is theirs alone.
TEST(Semantics, NarrowIntegersWrapAtTheirWidthAndKeepTheWiderTypesEdgeCases) {
  constexpr auto I8 = ScalarType::I8, U8 = ScalarType::U8, I16 = ScalarType::I16, U16 = ScalarType::U16;
  EXPECT_EQ(bin(BinOp::Add, I8, 127, 1), -128);
  EXPECT_EQ(bin(BinOp::Add, U8, 200, 100), 44);
  EXPECT_EQ(bin(BinOp::Mul, U16, 65535, 65535), 1);  // in C++ a promoted int product would overflow
  EXPECT_EQ(bin(BinOp::Div, I8, -128, -1), -128);
  EXPECT_EQ(bin(BinOp::Mod, I16, INT16_MIN, -1), 0);
  EXPECT_EQ(bin(BinOp::Div, U8, 7, 0), 255);
  EXPECT_EQ(bin(BinOp::Div, I16, 7, 0), -1);
  EXPECT_EQ(bin(BinOp::Shl, I8, 1, 7), -128);
  EXPECT_EQ(bin(BinOp::Shl, U8, 1, 8), 0);
  EXPECT_EQ(bin(BinOp::Shr, I8, -128, 8), -1);
  EXPECT_EQ(bin(BinOp::Shr, U16, 65535, 16), 0);
  EXPECT_EQ(ir::eval_unary(ir::UnOp::Neg, I8, -128), -128);
  EXPECT_EQ(ir::eval_unary(ir::UnOp::BitNot, U8, 0), 255);
  EXPECT_EQ(ir::eval_cast(I32, I8, 200), -56);
  EXPECT_EQ(ir::eval_cast(I8, U16, -1), 65535);
  EXPECT_EQ(ir::eval_cast(U8, I32, 255), 255);
  EXPECT_TRUE(ir::fits(U8, 255));
  EXPECT_FALSE(ir::fits(U8, 256));
  EXPECT_FALSE(ir::fits(I16, 32768));
  EXPECT_EQ(type_bytes(I8), 1);
  EXPECT_EQ(type_bytes(U16), 2);
  EXPECT_STREQ(type_name(U16), "u16");
  EXPECT_EQ(scalar_of<std::int8_t>, I8);
  EXPECT_EQ(scalar_of<std::uint16_t>, U16);
}

/// A float truncated toward zero and held at the range of `t`, NaN 0 (docs/semantics.md).
std::int64_t saturated(double x, ScalarType t) {
  if (std::isnan(x)) return 0;
  const ir::Range r = ir::Range::of(t);
  const double v = std::trunc(x);
  return v <= static_cast<double>(r.lo)   ? static_cast<std::int64_t>(r.lo)
         : v >= static_cast<double>(r.hi) ? static_cast<std::int64_t>(r.hi)
                                          : static_cast<std::int64_t>(v);
}

/// A kernel storing `fn(x[i])` to `out[i]`, an array of `T`, for each i < n.
template <class T>
Kernel from_floats(const std::function<Expr(Scope&, Expr)>& fn) {
  KernelBuilder k("from_floats");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto out = k.param<GlobalPtr<T>>("out", extent(n));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) { th.if_(i < n, [&](Scope& th) { o[0] = fn(th, x[i]); }); });
        });
  });
  return k.build();
}

/// `fn(x[i])` for each of `xs` on `dev`.
template <class T>
std::vector<T> run_from_floats(const Kernel& k, const Device& dev, const std::vector<float>& xs) {
  std::vector<T> out(xs.size(), T{});
  test_support::launch_on(k, dev, Grid{1, 32}, static_cast<int>(xs.size()), xs, out);
  return out;
}

/// Floats to each narrow type (saturating, NaN to 0) and back to f32 (exact), and i16 to f16 (one
/// rounding), on every device present, against the definitions.
TEST(Semantics, NarrowIntegersConvertFromFloatsSaturatingAndBackExactlyOnEveryDevice) {
  const Kernel to_i8 = from_floats<std::int8_t>([](Scope&, Expr v) { return cast<std::int8_t>(v); });
  const Kernel to_u8 = from_floats<std::uint8_t>([](Scope&, Expr v) { return cast<std::uint8_t>(v); });
  const Kernel to_i16 = from_floats<std::int16_t>([](Scope&, Expr v) { return cast<std::int16_t>(v); });
  const Kernel to_u16 = from_floats<std::uint16_t>([](Scope&, Expr v) { return cast<std::uint16_t>(v); });
  const Kernel back = from_floats<float>([](Scope& th, Expr v) {
    auto a = th.let("a", cast<std::int8_t>(v));
    auto b = th.let("b", cast<std::uint8_t>(v));
    return cast<float>(a) + cast<float>(b) * 1000.0f;  // exact: |a| < 2^7, b < 2^8
  });
  const Kernel halves = from_floats<half>([](Scope& th, Expr v) {
    auto c = th.let("c", cast<std::int16_t>(v));
    return cast(ScalarType::F16, c + c);  // i16 wraps, then one rounding
  });
  const std::string src = specialize_for(to_i8, Spec{}).source;
  EXPECT_NE(src.find("max((-128), min(127, __float2int_rz("), std::string::npos) << src;
  if (nvrtc_available()) {
    for (const Kernel* k : {&to_i8, &to_u8, &to_i16, &to_u16, &back, &halves})
      EXPECT_EQ(compile(*k, Spec{}).log, "") << specialize_for(*k, Spec{}).source;
  }
  const std::vector<float> xs = {std::nanf(""), -1e10f, -40000.5f, -32768.9f, -129.5f, -128.9f, -127.2f,
                                 -0.5f,         0.0f,   0.7f,      127.9f,    128.0f,  200.3f,  255.9f,
                                 256.0f,        3.0e4f, 32767.9f,  65535.5f,  70000.f, 1e10f};
  const std::vector<Device> devices = test_support::every_device();
  for (const Device& dev : devices) {
    const auto a = run_from_floats<std::int8_t>(to_i8, dev, xs);
    const auto b = run_from_floats<std::uint8_t>(to_u8, dev, xs);
    const auto c = run_from_floats<std::int16_t>(to_i16, dev, xs);
    const auto d = run_from_floats<std::uint16_t>(to_u16, dev, xs);
    const auto f = run_from_floats<float>(back, dev, xs);
    const auto h = run_from_floats<half>(halves, dev, xs);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      SCOPED_TRACE(dev.name() + " of " + std::to_string(xs[i]));
      EXPECT_EQ(a[i], saturated(xs[i], ScalarType::I8));
      EXPECT_EQ(b[i], saturated(xs[i], ScalarType::U8));
      EXPECT_EQ(c[i], saturated(xs[i], ScalarType::I16));
      EXPECT_EQ(d[i], saturated(xs[i], ScalarType::U16));
      EXPECT_EQ(f[i], static_cast<float>(a[i]) + static_cast<float>(b[i]) * 1000.0f);
      const std::int64_t twice = ir::wrap(ScalarType::I16, 2 * static_cast<std::int64_t>(c[i]));
      EXPECT_EQ(h[i].bits, float16::int_to_16bit(twice, false, false));
    }
  }
}

// A scalar parameter of each narrow type, passed by a launch as its C++ type and packed at its width.
TEST(Semantics, NarrowScalarParametersArePassedAtTheirWidthOnEveryDevice) {
  KernelBuilder k("narrow_params");
  auto a = k.param<std::int8_t>("a");
  auto b = k.param<std::uint8_t>("b");
  auto c = k.param<std::int16_t>("c");
  auto d = k.param<std::uint16_t>("d");
  auto out = k.param<GlobalPtr<std::int64_t>>("out", extent(32 * 4));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i * 4 + j; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope&) {
            o[0] = cast<std::int64_t>(a + cast<std::int8_t>(i));  // wraps at 8 bits
            o[1] = cast<std::int64_t>(b * cast<std::uint8_t>(i));
            o[2] = cast<std::int64_t>(c - cast<std::int16_t>(i));
            o[3] = cast<std::int64_t>(d + cast<std::uint16_t>(i));
          });
        });
  });
  const Kernel kernel = k.build();
  const std::vector<Device> devices = test_support::every_device();
  for (const Device& dev : devices) {
    std::vector<std::int64_t> o(32 * 4, 42);
    test_support::launch_on(kernel, dev, Grid{1, 32}, std::int8_t{120}, std::uint8_t{200}, std::int16_t{-32760},
                            std::uint16_t{65530}, o);
    for (int i = 0; i < 32; ++i) {
      SCOPED_TRACE(dev.name() + ", thread " + std::to_string(i));
      EXPECT_EQ(o[i * 4 + 0], static_cast<std::int8_t>(120 + i));
      EXPECT_EQ(o[i * 4 + 1], static_cast<std::uint8_t>(200 * i));
      EXPECT_EQ(o[i * 4 + 2], static_cast<std::int16_t>(-32760 - i));
      EXPECT_EQ(o[i * 4 + 3], static_cast<std::uint16_t>(65530 + i));
    }
  }
}

// ------------------------------------------------------------------ atomics: and, or, xor
/// 64 threads update three u32 words and one i64 atomically: or sets bit t % 32 of w[0], and clears
/// bit t % 31 of w[1], xor flips w[2] by t * 0x9E3779B9 and wide[0] by t << 40 (an i64: through
/// unsigned long long on a GPU). Each kind alone commutes, so the words are the same in any order.
Kernel bitwise_atomics() {
  KernelBuilder k("bitwise_atomics");
  auto w = k.param<GlobalPtr<std::uint32_t>>("w", extent(3));
  auto wide = k.param<GlobalPtr<std::int64_t>>("wide", extent(1));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto t = g.let("t", cast<std::uint32_t>(g.id(thread(1))));  // the thread's place in the grid
    g.group(thread(1), [&](Scope& th) {
      th.atomic(AtomicOp::Or, w, 0, Expr(1u) << (t % 32u));
      th.atomic(AtomicOp::And, w, 1, ~(Expr(1u) << (t % 31u)));
      th.atomic(AtomicOp::Xor, w, 2, t * 0x9E3779B9u);
      th.atomic(AtomicOp::Xor, wide, 0, cast<std::int64_t>(t) << 40);
    });
  });
  return k.build();
}

TEST(Semantics, AtomicAndOrXorGiveTheSameWordsOnEveryDevice) {
  const Kernel kernel = bitwise_atomics();
  std::uint32_t want_xor = 0x12345678u;
  std::int64_t want_wide = -7;
  for (std::uint32_t t = 0; t < 64; ++t) {
    want_xor ^= t * 0x9E3779B9u;
    want_wide ^= static_cast<std::int64_t>(t) << 40;
  }
  const std::vector<Device> devices = test_support::every_device();
  for (const Device& dev : devices) {
    std::vector<std::uint32_t> w = {0u, 0xffffffffu, 0x12345678u};
    std::vector<std::int64_t> wide = {-7};
    test_support::launch_on(kernel, dev, Grid{1, 64}, w, wide);
    EXPECT_EQ(w[0], 0xffffffffu) << dev.name();
    EXPECT_EQ(w[1], 0x80000000u) << dev.name();
    EXPECT_EQ(w[2], want_xor) << dev.name();
    EXPECT_EQ(wide[0], want_wide) << dev.name();
  }
  const std::string src = specialize_for(kernel, Spec{}).source;
  for (const char* fn : {"atomicOr(", "atomicAnd(", "atomicXor(", "atomicXor(reinterpret_cast<unsigned long long*>("})
    EXPECT_NE(src.find(fn), std::string::npos) << fn << " in\n" << src;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(kernel, Spec{}).log, "");
  }
}

// Compare and swap: on its own element each thread swaps where the compare holds (even elements)
// and not where it does not; on one shared flag exactly one of 64 threads sees the old 0 and wins,
// whatever the order (an i64 flag: through unsigned long long on a GPU).
TEST(Semantics, AtomicCompareAndSwapSwapsWhereTheCompareHoldsAndOneThreadWinsAFlag) {
  KernelBuilder k("cas");
  auto own = k.param<GlobalPtr<int>>("own", extent(64));
  auto flag = k.param<GlobalPtr<std::int64_t>>("flag", extent(1));
  auto won = k.param<GlobalPtr<int>>("won", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        won, thread(1), [&](Expr j) { return t + j; },
        [&](Scope& g, View mine) {
          g.group(thread(1), [&](Scope& th) {
            th.atomic_cas("before", own, t, t, t * 10);
            Var old = th.atomic_cas("old", flag, 0, std::int64_t{0}, cast<std::int64_t>(t) + 1);
            mine[0] = select(old == std::int64_t{0}, 1, 0);
          });
        });
  });
  const Kernel kernel = k.build();
  const std::vector<Device> devices = test_support::every_device();
  for (const Device& dev : devices) {
    std::vector<int> own_v(64), won_v(64, -1);
    for (int i = 0; i < 64; ++i) own_v[static_cast<std::size_t>(i)] = i % 2 == 0 ? i : -1;
    std::vector<std::int64_t> flag_v = {0};
    test_support::launch_on(kernel, dev, Grid{1, 64}, own_v, flag_v, won_v);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(own_v[static_cast<std::size_t>(i)], i % 2 == 0 ? i * 10 : -1) << dev.name();
    int winners = 0, winner = -1;
    for (int i = 0; i < 64; ++i)
      if (won_v[static_cast<std::size_t>(i)] == 1) ++winners, winner = i;
    EXPECT_EQ(winners, 1) << dev.name();
    EXPECT_EQ(flag_v[0], winner + 1) << dev.name() << ": the winner's value stays";
  }
  const std::string src = specialize_for(kernel, Spec{}).source;
  EXPECT_NE(src.find("atomicCAS(reinterpret_cast<unsigned long long*>("), std::string::npos) << src;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(kernel, Spec{}).log, "");
  }
}

// Scopes: a histogram in shared memory with the block's atomics (CUDA's atomicAdd_block), summed into
// global memory with the device's, right on every device; the system's compile to atomicAdd_system.
// Two blocks' block-scope atomics on one global element race, and the interpreter says so; the
// same with the device's scope does not.
Kernel scoped_histogram(AtomicScope across) {
  KernelBuilder k("scoped_histogram");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const int>>("in", extent(n));
  auto bins = k.param<GlobalPtr<int>>("bins", extent(8));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.group(block(1), [&](Scope& b) {
      View local = b.shared<int>("local", 64);  // 8 bins used; one element a thread to zero
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          local, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = 0; }); });
      b.group(thread(1), [&](Scope& th) {
        th.if_(blk * 64 + t < n,
               [&](Scope& th) { th.atomic(AtomicOp::Add, local, in[blk * 64 + t] & 7, 1, AtomicScope::Block); });
      });
      b.group(thread(1), [&](Scope& th) {
        th.if_(t < 8, [&](Scope& th) { th.atomic(AtomicOp::Add, bins, t, local[t], across); });
      });
    });
  });
  return k.build();
}

TEST(Semantics, AtomicScopesCompileToCudasScopedFormsAndTheBlocksScopeIsTheBlocksOnly) {
  const int n = 1000;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = (i * 13 + 5) % 23;
  std::vector<int> want(8, 0);
  for (int v : in) ++want[static_cast<std::size_t>(v & 7)];
  const Kernel device_sum = scoped_histogram(AtomicScope::Device), system_sum = scoped_histogram(AtomicScope::System);
  const std::vector<Device> devices = test_support::every_device();
  for (const Device& dev : devices)
    for (const Kernel* k : {&device_sum, &system_sum}) {
      std::vector<int> bins(8, 0);
      test_support::launch_on(*k, dev, Grid{(n + 63) / 64, 64}, n, in, bins);
      EXPECT_EQ(bins, want) << dev.name();
    }
  const std::string src = specialize_for(system_sum, Spec{}).source;
  EXPECT_NE(src.find("atomicAdd_block(&local["), std::string::npos) << src;
  EXPECT_NE(src.find("atomicAdd_system(&bins["), std::string::npos) << src;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(system_sum, Spec{}).log, "");
  }
  // Block-scope atomics from every block on the global bins: a race across blocks.
  const Kernel racy = scoped_histogram(AtomicScope::Block);
  std::vector<int> bins(8, 0);
  try {
    test_support::launch_on(racy, Device::interpreter(), Grid{(n + 63) / 64, 64}, n, in, bins);
    ADD_FAILURE() << "two blocks' block-scope atomics on one element went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "racecheck") << e.what();
  }
}

TEST(Semantics, ASystemScopeAtomicOnSixteenBitFloatsIsRefused) {
  int line = 0;
  KernelBuilder k("system_half");
  auto out = k.param<GlobalPtr<half>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.group(thread(1), [&](Scope& th) {
      line = __LINE__, th.atomic(AtomicOp::Add, out, 0, cast(ScalarType::F16, Expr(1.0f)), AtomicScope::System);
    });
  });
  auto refused = testing::rejected_saying(k, "V0505", line, "tests/test_semantics.cpp", "a system-scope atomic");
  EXPECT_TRUE(refused);
}

TEST(Semantics, AtomicAndOrXorAndCompareAndSwapTakeIntegersOf32Or64BitsOnly) {
  for (bool cas : {false, true}) {
    int line = 0;
    KernelBuilder k("bits_of_f32");
    auto out = k.param<GlobalPtr<float>>("out");
    k.block_threads(32);
    k.body([&](Scope& g) {
      g.group(thread(1), [&](Scope& th) {
        if (cas)
          line = __LINE__, th.atomic_cas("old", out, 0, 0.0f, 1.0f);
        else
          line = __LINE__, th.atomic(AtomicOp::Xor, out, 0, 1.0f);
      });
    });
    auto refused =
        testing::rejected_saying(k, "V0505", line, "tests/test_semantics.cpp", "it is for i32, u32, i64, u64");
    EXPECT_TRUE(refused) << (cas ? "compare and swap" : "xor");
  }
}

// What indices, loop bounds, lanes and bit functions take is 32 or 64 bits; an atomic has no 8- or
// 16-bit form. Each is refused at the user's line, saying to cast.
TEST(Semantics, NarrowIntegersAreRefusedWhereOnly32Or64BitsAreTakenWithTheCastToWrite) {
  int line = 0;
  auto rejects = [&](const std::string& code, const std::string& says,
                     const std::function<void(Scope&, const View&)>& body) -> ::testing::AssertionResult {
    KernelBuilder k("narrow");
    auto small = k.param<GlobalPtr<std::uint8_t>>("small");
    k.block_threads(32);
    k.body([&](Scope& g) { body(g, small); });
    return testing::rejected_saying(k, code, line, "tests/test_semantics.cpp", says);
  };
  auto refused1 = rejects("V0704", "cast the u8 to i32 first: cast<i32>(x)", [&](Scope& g, const View& small) {
    g.claim(small, thread(1), [&](Scope& g, View v) {
      g.split(Level::Thread, {{1, [&](Scope&) { line = __LINE__, v[cast<std::uint8_t>(Expr(3))] = 1; }}});
    });
  });
  EXPECT_TRUE(refused1);
  auto refused2 = rejects("V0704", "cast the i16 to i32 first", [&](Scope& g, const View&) {
    g.group(thread(1), [&](Scope& th) {
      auto acc = th.let("acc", 0);
      line = __LINE__, th.for_("j", cast<std::int16_t>(Expr(0)), cast<std::int16_t>(Expr(4)),
                               cast<std::int16_t>(Expr(1)), [&](Scope& th, Expr) { th.assign(acc, acc + 1); });
    });
  });
  EXPECT_TRUE(refused2);
  auto refused3 = rejects("V0702", "it takes an integer of 32 or 64 bits", [&](Scope& g, const View&) {
    g.group(thread(1), [&](Scope& th) { line = __LINE__, th.let("p", popc(cast<std::uint8_t>(th.id(thread(1))))); });
  });
  EXPECT_TRUE(refused3);
  auto refused4 = rejects("V0505", "not supported on u8", [&](Scope& g, const View& small) {
    g.group(thread(1),
            [&](Scope& th) { line = __LINE__, th.atomic(AtomicOp::Add, small, 0, cast<std::uint8_t>(Expr(1))); });
  });
  EXPECT_TRUE(refused4);
}

}  // namespace
}  // namespace vantage
