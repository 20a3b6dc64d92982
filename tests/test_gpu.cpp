// Tests that need a GPU (CTest label `gpu`): each skips, saying why, on a host without one, and runs
// in the GPU bundle's check (scripts/gpu/gpu-check) where one is lent.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/driver.h"
#include "backend/gpu.h"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "vantage/dlpack.hpp"
#include "vantage/graph.hpp"
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

// The application's own stream: its copies and Vantage's launch on it run in order, so the copy
// back sees the kernel's result without any other synchronization.
TEST(Gpu, ALaunchOnAnAdoptedStreamIsOrderedWithTheApplicationsWork) {
  REQUIRE_GPU();
  Device d = Device::gpu(0);
  const driver::Table& drv = driver::table();
  gpu::make_current(0);
  driver::CUstream app = nullptr;
  ASSERT_EQ(drv.stream_create(&app, 0), 0);
  const int n = 1 << 20;
  PinnedBuffer<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) {
    hx[i] = static_cast<float>(i % 50);
    hy[i] = 3.0f;
  }
  auto x = d.alloc<float>(n), y = d.alloc<float>(n);
  Stream s = Stream::adopt(d, app, "app stream");
  ASSERT_EQ(drv.memcpy_htod_async(x.view().address(), &hx[0], n * sizeof(float), app), 0);  // the app's work
  ASSERT_EQ(drv.memcpy_htod_async(y.view().address(), &hy[0], n * sizeof(float), app), 0);
  const auto& cx = x;
  examples::saxpy().launch(s, Grid{n / 256, 256}, n, 2.0f, cx, y);  // Vantage's, on the same stream
  ASSERT_EQ(drv.memcpy_dtoh_async(&hy[0], y.view().address(), n * sizeof(float), app), 0);
  ASSERT_EQ(drv.stream_synchronize(app), 0);
  for (int i = 0; i < n; i += 991) ASSERT_EQ(hy[i], 2.0f * static_cast<float>(i % 50) + 3.0f) << i;
  drv.stream_destroy(app);
}

// Memory the driver allocated for someone else: taken and launched on; too short, freed, host memory
// and another GPU's refused naming it.
TEST(Gpu, ExternalMemoryIsCheckedWithTheRealDriver) {
  REQUIRE_GPU();
  Device d = Device::gpu(0);
  const driver::Table& drv = driver::table();
  gpu::make_current(0);
  const int n = 4096;
  driver::CUdeviceptr px = 0, py = 0, freed = 0;
  ASSERT_EQ(drv.mem_alloc(&px, n * sizeof(float)), 0);
  ASSERT_EQ(drv.mem_alloc(&py, n * sizeof(float)), 0);
  ASSERT_EQ(drv.mem_alloc(&freed, 1024), 0);
  ASSERT_EQ(drv.mem_free(freed), 0);
  std::vector<float> ones(n, 1.0f);
  ASSERT_EQ(drv.memcpy_htod(px, ones.data(), n * sizeof(float)), 0);
  ASSERT_EQ(drv.memcpy_htod(py, ones.data(), n * sizeof(float)), 0);
  Buffer<const float> x = d.wrap<const float>(px, n, "x");
  Buffer<float> y = d.wrap<float>(py, n, "y");
  examples::saxpy().launch(d, Grid{n / 256, 256}, n, 4.0f, x, y);
  Stream::default_for(d).synchronize();
  std::vector<float> out(n);
  ASSERT_EQ(drv.memcpy_dtoh(out.data(), py, n * sizeof(float)), 0);
  EXPECT_EQ(out[0], 5.0f);
  EXPECT_EQ(out[n - 1], 5.0f);
  auto refused = [&](auto&& f, const std::string& name, const std::string& says) {
    try {
      f();
      ADD_FAILURE() << name << " was taken";
    } catch (const LaunchError& e) {
      EXPECT_EQ(e.param(), name);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused([&] { d.wrap<float>(py, n + 1, "long"); }, "long", "to the end of its allocation");
  refused([&] { d.wrap<float>(freed, 16, "freed"); }, "freed", "is not memory the driver knows");
  PinnedBuffer<float> pinned(16);
  refused([&] { d.wrap<float>(reinterpret_cast<std::uint64_t>(&pinned[0]), 16, "pinned"); }, "pinned",
          "page-locked host memory");
  refused([&] { d.wrap<float>(reinterpret_cast<std::uint64_t>(ones.data()), 16, "host"); }, "host",
          "is not memory the driver knows");
  if (Device::gpu_count() > 1) {
    gpu::make_current(1);
    driver::CUdeviceptr other = 0;
    ASSERT_EQ(drv.mem_alloc(&other, 1024), 0);
    refused([&] { d.wrap<float>(other, 16, "other"); }, "other", "is memory of GPU 1");
    drv.mem_free(other);
    gpu::make_current(0);
  }
  drv.mem_free(px);
  drv.mem_free(py);
}

// A captured graph replays its launches with right results, and again after an update.
TEST(Gpu, ACapturedGraphReplaysWithRightResults) {
  REQUIRE_GPU();
  Device d = Device::gpu(0);
  Stream s(d);
  const int n = 1 << 16;
  auto x = d.alloc<float>(n), y = d.alloc<float>(n);
  x.copy_from(std::vector<float>(n, 1.0f));
  y.copy_from(std::vector<float>(n, 0.0f));
  const auto& cx = x;
  Kernel k = examples::saxpy();
  k.launch(s, Grid{n / 256, 256}, n, 0.0f, cx, y);  // compiled and loaded outside the capture
  Graph g = Graph::capture(s, [&](const Stream& st) {
    k.launch(st, Grid{n / 256, 256}, n, 1.0f, cx, y);
    k.launch(st, Grid{n / 256, 256}, n, 2.0f, cx, y);
  });
  EXPECT_EQ(g.size(), 2u);
  s.synchronize();
  EXPECT_EQ(y.to_vector()[0], 0.0f) << "captured, not run";
  for (int i = 0; i < 3; ++i) g.launch(s);
  s.synchronize();
  EXPECT_EQ(y.to_vector()[n - 1], 9.0f);
  g.update(s, [&](const Stream& st) {
    k.launch(st, Grid{n / 256, 256}, n, 10.0f, cx, y);
    k.launch(st, Grid{n / 256, 256}, n, 20.0f, cx, y);
  });
  g.launch(s);
  s.synchronize();
  EXPECT_EQ(y.to_vector()[7], 39.0f);
}

// DLPack on a GPU: a buffer given out and taken back is the same memory, checked by the driver.
TEST(Gpu, DlpackTensorsRoundTripOnAGpu) {
  REQUIRE_GPU();
  Device d = Device::gpu(0);
  DLManagedTensor* t = to_dlpack(d.alloc<float>(1024), {32, 32});
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  Buffer<float> b = from_dlpack<float>(t, d, "t");
  EXPECT_EQ(b.size(), 1024);
  EXPECT_EQ(b.address(), reinterpret_cast<std::uint64_t>(t->dl_tensor.data));
  t->deleter(t);
}

}  // namespace
}  // namespace vantage
