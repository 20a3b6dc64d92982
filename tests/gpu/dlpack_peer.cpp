// A C interface to Vantage's DLPack exchange and stream adoption, loaded by
// scripts/gpu/dlpack_peers.py (ctypes) on the GPU machine, where PyTorch and CuPy hand it their
// tensors and streams: the round trip issue 37 asks for, with real producers and consumers. Each
// function returns 0, or 1 with Vantage's error message in `err` (a refusal is an answer the script
// checks, not a crash). Built as a shared library beside the GPU tests and carried in the bundle.
#include <dlpack/dlpack.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "kernels/paper_kernels.hpp"
#include "vantage/dlpack.hpp"
#include "vantage/vantage.hpp"

namespace {

using vantage::Buffer;
using vantage::Device;

int fail(const std::exception& e, char* err, int errlen) {
  if (err && errlen > 0) std::snprintf(err, static_cast<std::size_t>(errlen), "%s", e.what());
  return 1;
}

vantage::Grid grid_for(std::int64_t n) { return vantage::Grid{static_cast<int>((n + 255) / 256), 256}; }

}  // namespace

extern "C" {

/// y = a * x + y on GPU 0, in the producer's memory, on `stream` (the producer's CUstream, adopted;
/// null: Vantage's own stream, waited for). With a stream, nothing is waited for: the launch is
/// ordered with the producer's own work on it.
int vantage_peer_saxpy(const DLManagedTensor* x, const DLManagedTensor* y, float a, void* stream, char* err,
                       int errlen) {
  try {
    Device gpu = Device::gpu(0);
    Buffer<const float> bx = vantage::from_dlpack<const float>(x, gpu, "x");
    Buffer<float> by = vantage::from_dlpack<float>(y, gpu, "y");
    const auto n = static_cast<int>(by.size());
    if (bx.size() != by.size()) throw vantage::LaunchError("x", "x and y differ in length");
    vantage::Kernel k = vantage::examples::saxpy();
    if (stream) {
      vantage::Stream s = vantage::Stream::adopt(gpu, stream, "stream");
      k.launch(s, grid_for(n), n, a, bx, by);
    } else {
      vantage::Stream s(gpu);
      k.launch(s, grid_for(n), n, a, bx, by);
      s.synchronize();
    }
    return 0;
  } catch (const std::exception& e) {
    return fail(e, err, errlen);
  }
}

/// A new tensor that Vantage allocates and gives away: a * x, shaped as x (its deleter frees it).
DLManagedTensor* vantage_peer_scaled(const DLManagedTensor* x, float a, char* err, int errlen) {
  try {
    Device gpu = Device::gpu(0);
    Buffer<const float> bx = vantage::from_dlpack<const float>(x, gpu, "x");
    const auto n = static_cast<int>(bx.size());
    auto out = gpu.alloc<float>(n);
    out.copy_from(std::vector<float>(static_cast<std::size_t>(n), 0.0f));
    vantage::Stream s(gpu);
    vantage::examples::saxpy().launch(s, grid_for(n), n, a, bx, out.view());
    s.synchronize();
    std::vector<std::int64_t> shape(x->dl_tensor.shape, x->dl_tensor.shape + x->dl_tensor.ndim);
    return vantage::to_dlpack(std::move(out), shape);
  } catch (const std::exception& e) {
    fail(e, err, errlen);
    return nullptr;
  }
}

}  // extern "C"
