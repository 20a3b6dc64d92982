// The interpreter's value operations (jit/interp/values.cpp) on their own: the integer fast paths
// give what eval_binary, the definition, gives.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "jit/interp/machine.h"

namespace vantage::interp::detail {
namespace {

TEST(Values, IntegerFastPathsAgreeWithEvalBinary) {
  // Edge values of every integer type, held as the interpreter holds them, and some that are not
  // canonical for the narrower types (the fast paths must agree on those too).
  const std::vector<std::int64_t> edges = {0,
                                           1,
                                           -1,
                                           2,
                                           -2,
                                           127,
                                           -128,
                                           255,
                                           32767,
                                           -32768,
                                           65535,
                                           std::numeric_limits<std::int32_t>::max(),
                                           std::numeric_limits<std::int32_t>::min(),
                                           std::int64_t{std::numeric_limits<std::uint32_t>::max()},
                                           std::int64_t{1} << 32,
                                           std::numeric_limits<std::int64_t>::max(),
                                           std::numeric_limits<std::int64_t>::min(),
                                           46341,
                                           -46341,
                                           123456789};
  const ScalarType types[] = {ScalarType::Bool, ScalarType::I8,  ScalarType::U8,  ScalarType::I16, ScalarType::U16,
                              ScalarType::I32,  ScalarType::U32, ScalarType::I64, ScalarType::U64};
  int checked = 0;
  for (auto op = static_cast<int>(BinOp::Add); op < static_cast<int>(BinOp::Pow); ++op)
    for (ScalarType t : types)
      for (std::int64_t a : edges)
        for (std::int64_t b : edges) {
          const auto o = static_cast<BinOp>(op);
          ASSERT_EQ(int_binary(o, t, a, b), ir::eval_binary(o, t, a, b))
              << ir::name_of(o) << " of " << a << " and " << b << " as " << type_name(t);
          ++checked;
        }
  EXPECT_EQ(checked, 20 * 9 * 400);
}

}  // namespace
}  // namespace vantage::interp::detail
