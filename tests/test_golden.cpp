// Golden tests: the printed IR (and lowered IR) of the examples is compared with committed files. Set
// VANTAGE_UPDATE_GOLDEN=1 to rewrite them after an intended change (then review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "kernels/paper_kernels.hpp"

namespace vantage {
namespace {

void expect_golden(const std::string& name, const std::string& text, const std::string& ext = ".ir") {
  std::string path = std::string(VANTAGE_GOLDEN_DIR) + "/" + name + ext;
  if (const char* update = std::getenv("VANTAGE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(path) << text;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing golden file " << path << " (run with VANTAGE_UPDATE_GOLDEN=1)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "printed IR of " << name << " differs from " << path;
}

TEST(Golden, WarpMmaFig2) { expect_golden("warp_mma", examples::warp_mma().ir_text()); }
TEST(Golden, SimpleMmaFig5) { expect_golden("simple_mma", examples::simple_mma().ir_text()); }
TEST(Golden, MmaTf32NaiveFig6) { expect_golden("mma_tf32_naive", examples::mma_tf32_naive().ir_text()); }
TEST(Golden, BlockLoadSection64) { expect_golden("block_load", examples::block_load().ir_text()); }
TEST(Golden, BlockLoadCopy) { expect_golden("block_load_copy", examples::block_load_copy().ir_text()); }
TEST(Golden, BlockReduce) { expect_golden("block_reduce", examples::block_reduce().ir_text()); }
TEST(Golden, Saxpy) { expect_golden("saxpy", examples::saxpy().ir_text()); }
TEST(Golden, SgemmNaive) { expect_golden("sgemm_naive", examples::sgemm_naive().ir_text()); }
TEST(Golden, SgemmCoalesced) { expect_golden("sgemm_coalesced", examples::sgemm_coalesced().ir_text()); }
TEST(Golden, SgemmSmem) { expect_golden("sgemm_smem", examples::sgemm_smem().ir_text()); }

// The lowered IR of every example at its declared launch shape: what every backend consumes.
TEST(Golden, LoweredIrOfEveryExample) {
  for (const auto& ex : examples::all()) expect_golden(ex.name, ex.build().lowered(ex.spec()), ".lowered");
}

TEST(Golden, EveryExampleChecksWithoutObligations) {
  for (const auto& ex : examples::all()) {
    Kernel k = ex.build();
    EXPECT_TRUE(k.obligations().empty()) << ex.name << " has a launch shape, so nothing should be deferred";
  }
}

}  // namespace
}  // namespace vantage
