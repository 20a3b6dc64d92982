// Tests that need a GPU (CTest label `gpu`): each skips, saying why, on a host without one, and runs
// in the GPU bundle's check (scripts/gpu/gpu-check) where one is lent.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

#define REQUIRE_GPU()                                                 \
  if (Device::gpu_count() == 0) {                                     \
    GTEST_SKIP() << "no GPU on this host: " << Device::gpu_problem(); \
  }                                                                   \
  static_assert(true)

TEST(Gpu, EveryExampleIsRightAndEqualsTheInterpreter) {
  REQUIRE_GPU();
  Device gpu = Device::gpu(0);
  for (const auto& ex : examples::all())
    for (const auto& size : examples::default_sizes(ex.name)) {
      auto on_gpu = examples::run_example(ex.name, size, gpu);
      EXPECT_TRUE(on_gpu.ok) << on_gpu.summary;
      if (!ex.runs_on_host()) continue;  // checked against its C++ reference only: no host device runs it
      auto ref = examples::run_example(ex.name, size, Device::interpreter());
      ASSERT_EQ(on_gpu.output.size(), ref.output.size()) << ex.name;
      for (std::size_t i = 0; i < ref.output.size(); ++i)
        ASSERT_NEAR(on_gpu.output[i], ref.output[i], 1e-5 * std::max(1.0, std::fabs(ref.output[i])))
            << ex.name << " element " << i;
    }
}

TEST(Gpu, BuffersStreamsAndEventsWork) {
  REQUIRE_GPU();
  Device d = Device::gpu(0);
  Kernel k = examples::saxpy();
  const int n = 1 << 20;
  PinnedBuffer<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = static_cast<float>(i % 100);
    hy[i] = 1.0f;
  }
  auto x = d.alloc<float>(n), y = d.alloc<float>(n);
  Stream s(d);
  Event start(d), stop(d);
  x.copy_from_async(hx, s);
  y.copy_from_async(hy, s);
  start.record(s);
  const auto& cx = x;
  k.launch(s, Grid{n / 256, 256}, n, 2.0f, cx, y);
  stop.record(s);
  y.copy_to_async(hy, s);
  s.synchronize();
  EXPECT_GT(stop.elapsed_ms(start), 0.0f);
  for (int i = 0; i < n; i += 997) ASSERT_EQ(hy[i], 2.0f * static_cast<float>(i % 100) + 1.0f) << i;
  std::vector<float> host(n);
  const auto& chost = host;
  try {
    k.launch(d, Grid{n / 256, 256}, n, 2.0f, chost, y);
    FAIL() << "host memory was accepted for a GPU launch";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.param(), "x");
  }
}

}  // namespace
}  // namespace vantage
