// DLPack (vantage/dlpack.hpp): tensors taken in as checked buffers and launched on, Vantage's buffers
// given out as tensors that own or view them; every mismatch refused naming the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/paper_kernels.hpp"
#include "vantage/dlpack.hpp"
#include "vantage/launch.hpp"

namespace vantage {
namespace {

/// A host tensor as another library would hand it over: its own shape and strides, a deleter that
/// counts.
struct HostTensor {
  std::vector<float> data;
  std::vector<std::int64_t> shape, strides;
  DLManagedTensor m{};
  int* deleted = nullptr;
  HostTensor(std::vector<float> values, std::vector<std::int64_t> dims, std::vector<std::int64_t> steps = {})
      : data(std::move(values)), shape(std::move(dims)), strides(std::move(steps)) {
    m.dl_tensor.data = data.data();
    m.dl_tensor.device = {kDLCPU, 0};
    m.dl_tensor.ndim = static_cast<int>(shape.size());
    m.dl_tensor.dtype = {kDLFloat, 32, 1};
    m.dl_tensor.shape = shape.data();
    m.dl_tensor.strides = strides.empty() ? nullptr : strides.data();
    m.dl_tensor.byte_offset = 0;
  }
};

std::vector<Device> host_devices() {
  std::vector<Device> out = {Device::interpreter()};
  if (Device::cpu_available()) out.push_back(Device::cpu());
  return out;
}

TEST(Dlpack, AHostTensorIsLaunchedOnAsACheckedBuffer) {
  for (const Device& d : host_devices()) {
    SCOPED_TRACE(d.name());
    std::vector<float> xs(300), ys(300);
    for (int i = 0; i < 300; ++i) {
      xs[static_cast<std::size_t>(i)] = static_cast<float>(i);
      ys[static_cast<std::size_t>(i)] = 1.0f;
    }
    HostTensor x(xs, {3, 100}), y(ys, {300});
    Buffer<const float> bx = from_dlpack<const float>(&x.m, d, "x");
    Buffer<float> by = from_dlpack<float>(&y.m, d, "y");
    EXPECT_EQ(bx.size(), 300) << "a 3 x 100 tensor is 300 elements";
    EXPECT_EQ(bx.address(), reinterpret_cast<std::uint64_t>(x.data.data()));
    examples::saxpy().launch(d, Grid{2, 256}, 300, 2.0f, bx, by);
    for (int i = 0; i < 300; ++i) ASSERT_EQ(y.data[static_cast<std::size_t>(i)], 2.0f * static_cast<float>(i) + 1.0f);
  }
}

TEST(Dlpack, ATensorOfAnotherTypeDeviceOrLayoutIsRefusedByName) {
  const Device d = Device::interpreter();
  auto refused = [&](DLManagedTensor* t, const std::vector<std::string>& words) {
    try {
      from_dlpack<float>(t, d, "weights");
      ADD_FAILURE() << "taken";
    } catch (const LaunchError& e) {
      EXPECT_EQ(e.param(), "weights");
      for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
  };
  HostTensor half_tensor({1, 2, 3, 4}, {4});
  half_tensor.m.dl_tensor.dtype = {kDLFloat, 16, 1};
  refused(&half_tensor.m, {"weights holds float16 elements, not the float32 the buffer is of"});
  HostTensor on_gpu({1, 2, 3, 4}, {4});
  on_gpu.m.dl_tensor.device = {kDLCUDA, 1};
  refused(&on_gpu.m, {"weights is on cuda:1, not on interpreter"});
  HostTensor transposed({1, 2, 3, 4, 5, 6}, {2, 3}, {1, 2});
  refused(&transposed.m,
          {"not contiguous in row-major order (shape [2, 3], strides [1, 2] in elements)", ".contiguous()"});
  HostTensor vectors({1, 2, 3, 4}, {2});
  vectors.m.dl_tensor.dtype = {kDLFloat, 32, 2};
  refused(&vectors.m, {"float32x2"});
  refused(nullptr, {"a null DLPack tensor"});
  // Compact strides, given explicitly, and a dimension of one with any stride: taken.
  HostTensor strided({1, 2, 3, 4, 5, 6}, {2, 1, 3}, {3, 99, 1});
  EXPECT_EQ(from_dlpack<float>(&strided.m, d, "weights").size(), 6);
  // The byte offset moves the start.
  HostTensor offset({1, 2, 3, 4}, {2});
  offset.m.dl_tensor.byte_offset = 8;
  EXPECT_EQ(from_dlpack<float>(&offset.m, d, "weights").address(), reinterpret_cast<std::uint64_t>(&offset.data[2]));
}

TEST(Dlpack, ABufferGivenOutOwnsOrViewsItsMemoryAndRoundTrips) {
  const Device d = Device::interpreter();
  auto buffer = d.alloc<float>(12);
  const std::uint64_t address = buffer.view().address();
  DLManagedTensor* t = to_dlpack(std::move(buffer), {3, 4});
  EXPECT_EQ(buffer.size(), 0) << "moved into the tensor";
  EXPECT_EQ(t->dl_tensor.ndim, 2);
  EXPECT_EQ(t->dl_tensor.shape[0], 3);
  EXPECT_EQ(t->dl_tensor.shape[1], 4);
  EXPECT_EQ(t->dl_tensor.strides, nullptr);
  EXPECT_EQ(t->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(t->dl_tensor.dtype.bits, 32);
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(reinterpret_cast<std::uint64_t>(t->dl_tensor.data), address);
  Buffer<float> back = from_dlpack<float>(t, d, "back");
  EXPECT_EQ(back.address(), address);
  EXPECT_EQ(back.size(), 12);
  t->deleter(t);  // frees the buffer (the sanitizer build would report a leak otherwise)

  auto kept = d.alloc<std::int32_t>(5);
  DLManagedTensor* view = to_dlpack(kept.view());
  EXPECT_EQ(view->dl_tensor.ndim, 1);
  EXPECT_EQ(view->dl_tensor.shape[0], 5);
  EXPECT_EQ(view->dl_tensor.dtype.code, kDLInt);
  view->deleter(view);
  EXPECT_EQ(kept.size(), 5) << "a view's deleter leaves the buffer alone";
  try {
    to_dlpack(kept.view(), {2, 2});
    ADD_FAILURE() << "a shape of 4 elements for 5";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("shape [2, 2] holds 4 elements, not the buffer's 5"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vantage
