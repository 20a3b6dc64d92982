// Sizes, perspectives and obligations as users see them.
#include <gtest/gtest.h>

#include "vantage/vantage.hpp"

namespace vantage {
namespace {

TEST(Size, PrintsAndEvaluatesSymbols) {
  EXPECT_EQ(Size(32).str(), "32");
  EXPECT_EQ(Size::T().str(), "T");
  EXPECT_EQ(Size(2, true, true).str(), "2*B*T");
  EXPECT_EQ(Size(2, true, false).eval(128, std::nullopt), 256);
  EXPECT_EQ(Size(1, false, true).eval(128, std::nullopt), std::nullopt);
  EXPECT_EQ(Size(3, true, true).eval(4, 5), 60);
}

TEST(Perspective, NamesAndHelpers) {
  EXPECT_EQ(warp().str(), "thread(32)");
  EXPECT_EQ(warpgroup().str(), "thread(128)");
  EXPECT_EQ(grid().str(), "grid(1)");
  EXPECT_EQ(block(4).str(), "block(4)");
  EXPECT_EQ((Perspective{Level::Thread, Size::T()}).str(), "thread(T)");
}

TEST(Obligation, HoldsForConcreteShapes) {
  Obligation div{Obligation::Kind::Divides, 32, Size::T(), "V0102", "", {}};
  EXPECT_TRUE(div.holds(256, 1));
  EXPECT_FALSE(div.holds(48, 1));
  EXPECT_EQ(div.str(), "T % 32 == 0");
  Obligation le{Obligation::Kind::LessEqual, 3, Size::B(), "V0103", "", {}};
  EXPECT_TRUE(le.holds(1, 3));
  EXPECT_FALSE(le.holds(1, 2));
  Obligation eq{Obligation::Kind::Equal, 32, Size::T(), "V0501", "", {}};
  EXPECT_TRUE(eq.holds(32, 9));
  EXPECT_FALSE(eq.holds(64, 9));
}

TEST(ScalarType, NamesAndSizes) {
  EXPECT_STREQ(type_name(ScalarType::BF16), "bf16");
  EXPECT_EQ(type_bytes(ScalarType::F64), 8);
  EXPECT_EQ(type_bytes(ScalarType::F16), 2);
  EXPECT_TRUE(is_integer(ScalarType::U64));
  EXPECT_FALSE(is_integer(ScalarType::Bool));
  EXPECT_TRUE(is_float(ScalarType::BF16));
  EXPECT_EQ(scalar_of<float>, ScalarType::F32);
  EXPECT_EQ(scalar_of<std::uint32_t>, ScalarType::U32);
}

TEST(Diagnostic, RendersLikeACompiler) {
  Diagnostic d{"V0101", "group widens", {"k.cpp", 12, 5}, {{"perspective from here", {"k.cpp", 10, 3}}}};
  EXPECT_EQ(d.render(false), "k.cpp:12:5: error[V0101]: group widens\nk.cpp:10:3: note: perspective from here\n");
}

}  // namespace
}  // namespace vantage
