// Compiled (never linked) by CTest: with MISMATCH=0 it must compile; with MISMATCH=1, where a double
// is passed for a float parameter of a TypedKernel, the C++ compiler must refuse it with
// TypedKernel's message. Both runs together show that the refusal is the signature check.
#include <vantage/vantage.hpp>

void launch(const vantage::Kernel& k, const vantage::Device& d, vantage::DeviceBuffer<float>& x,
            vantage::DeviceBuffer<float>& y) {
  vantage::TypedKernel<void(int, float, vantage::Buffer<const float>, vantage::Buffer<float>)> typed(k);
#if MISMATCH
  typed.launch(d, vantage::Grid{1, 256}, 10, 2.0, x, y);  // 2.0 is a double
#else
  typed.launch(d, vantage::Grid{1, 256}, 10, 2.0f, x, y);
#endif
}
