// CUB's single-pass device scan (cub::DeviceScan::InclusiveSum over ints): the vendor baseline of
// Vantage's look-back scan, timed as bench/bench_speed.cpp times it (the L2 flushed by a memset of
// twice its size before each launch, event timing, warm-ups, the median of the launches), with a
// device-to-device copy of the same bytes in the same run. Built with nvcc by scripts/gpu-bundle and
// carried in the GPU bundle (it needs only the driver: the CUDA runtime is linked statically).
//   cub_scan [--reps N] LOG2N...      one JSON object per line: n, scan and copy medians, GB/s
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "cub_scan: %s: %s (line %d)\n", #call, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  int reps = 25;
  std::vector<int> logs;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(5, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::puts(
          "usage: cub_scan [--reps N] LOG2N...\nTimes cub::DeviceScan::InclusiveSum of 2^LOG2N ints and a copy of "
          "as many bytes (L2 flushed, medians of N launches, default 25).");
      return 0;
    } else {
      const int l = std::atoi(argv[i]);
      if (l < 1 || l > 30) {
        std::fprintf(stderr, "cub_scan: a size is a power of two from 2^1 to 2^30, not '%s'\n", argv[i]);
        return 2;
      }
      logs.push_back(l);
    }
  }
  if (logs.empty()) logs = {24, 26, 28};
  int device = 0, l2 = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const size_t flush_bytes = std::max<size_t>(2 * static_cast<size_t>(l2), size_t{64} << 20);
  void* flush = nullptr;
  CHECK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int l : logs) {
    const long long n = 1ll << l;
    std::vector<int> x(static_cast<size_t>(n));
    for (long long i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<int>((i * 7919) % 201) - 100;
    int *dx = nullptr, *dy = nullptr, *dcopy = nullptr;
    CHECK(cudaMalloc(&dx, n * sizeof(int)));
    CHECK(cudaMalloc(&dy, n * sizeof(int)));
    CHECK(cudaMalloc(&dcopy, n * sizeof(int)));
    CHECK(cudaMemcpy(dx, x.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    size_t temp_bytes = 0;
    CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, dx, dy, static_cast<int>(n)));
    void* temp = nullptr;
    CHECK(cudaMalloc(&temp, temp_bytes));
    auto scan = [&] { CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, dx, dy, static_cast<int>(n))); };
    auto copy = [&] { CHECK(cudaMemcpyAsync(dcopy, dx, n * sizeof(int), cudaMemcpyDeviceToDevice)); };
    // Right first (wrapping sums, as Vantage's scan computes them).
    scan();
    CHECK(cudaDeviceSynchronize());
    std::vector<int> y(static_cast<size_t>(n));
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(int), cudaMemcpyDeviceToHost));
    unsigned sum = 0;
    for (long long i = 0; i < n; ++i) {
      sum += static_cast<unsigned>(x[static_cast<size_t>(i)]);
      if (y[static_cast<size_t>(i)] != static_cast<int>(sum)) {
        std::fprintf(stderr, "cub_scan: 2^%d: y[%lld] = %d, want %d\n", l, i, y[static_cast<size_t>(i)],
                     static_cast<int>(sum));
        return 1;
      }
    }
    auto timed = [&](auto&& launch) {
      CHECK(cudaMemsetAsync(flush, 0, flush_bytes));
      CHECK(cudaEventRecord(start));
      launch();
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      return static_cast<double>(ms);
    };
    for (int r = 0; r < 3; ++r) {
      timed(scan);
      timed(copy);
    }
    std::vector<double> scan_ms, copy_ms;
    for (int r = 0; r < reps; ++r) {
      scan_ms.push_back(timed(scan));
      copy_ms.push_back(timed(copy));
    }
    const double s = median(scan_ms), c = median(copy_ms), bytes = 2.0 * static_cast<double>(n) * sizeof(int);
    std::printf(
        "{\"n\": %lld, \"log2n\": %d, \"reps\": %d, \"scan_ms\": %.5f, \"scan_min_ms\": %.5f, \"scan_max_ms\": %.5f, "
        "\"copy_ms\": %.5f, \"scan_GBps\": %.1f, \"copy_GBps\": %.1f, \"of_copy\": %.4f}\n",
        n, l, reps, s, *std::min_element(scan_ms.begin(), scan_ms.end()),
        *std::max_element(scan_ms.begin(), scan_ms.end()), c, bytes / (s * 1e-3) * 1e-9, bytes / (c * 1e-3) * 1e-9,
        c / s);
    std::fflush(stdout);
    CHECK(cudaFree(temp));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(dcopy));
  }
  return 0;
}
