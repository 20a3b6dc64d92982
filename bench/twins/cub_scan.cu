// CUB's single-pass device scan (cub::DeviceScan::InclusiveSum over ints): the vendor baseline of
// Vantage's look-back scan; and the baselines of the device library's other device-wide examples:
// cub::DeviceReduce::Sum of the same ints (device_sum), cub::DeviceSelect::If of the floats above 0.5
// (compact), cub::DeviceHistogram::HistogramEven of bytes into 256 bins (byte_histogram),
// cub::DeviceRadixSort::SortPairs of u32 keys and values (radix_sort's workload). Each is
// checked, then timed as bench/bench_speed.cpp times it (the L2 flushed by a memset of
// twice its size before each launch, event timing, warm-ups, the median of the launches), with a
// device-to-device copy of the same bytes in the same run. Built with nvcc by scripts/gpu-bundle and
// carried in the GPU bundle (it needs only the driver: the CUDA runtime is linked statically).
//   cub_scan [--reps N] LOG2N...      one JSON object per line: n, the medians (scan, reduce, select,
//                                     histogram, radix, copy), GB/s
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

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

struct AboveHalf {
  __host__ __device__ bool operator()(float v) const { return v > 0.5f; }
};

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
          "usage: cub_scan [--reps N] LOG2N...\nTimes cub::DeviceScan::InclusiveSum of 2^LOG2N ints, "
          "cub::DeviceReduce::Sum of them, cub::DeviceSelect::If of as many floats (those above 0.5), "
          "cub::DeviceHistogram::HistogramEven of as many bytes (256 bins), cub::DeviceRadixSort::SortPairs of as "
          "many u32 pairs, and a copy of the ints (L2 flushed, medians of N launches, default 25), each checked "
          "first.");
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
    // The other baselines, each checked against the host's result.
    int* dsum = nullptr;
    CHECK(cudaMalloc(&dsum, sizeof(int)));
    size_t reduce_bytes = 0;
    CHECK(cub::DeviceReduce::Sum(nullptr, reduce_bytes, dx, dsum, static_cast<int>(n)));
    std::vector<float> f(static_cast<size_t>(n));
    std::vector<unsigned char> b(static_cast<size_t>(n));
    long long kept = 0;
    std::vector<unsigned> want_hist(256, 0);
    for (long long i = 0; i < n; ++i) {
      f[static_cast<size_t>(i)] = static_cast<float>((i * 7 + 6 * 13) % 11 - 5);  // the compact workload's
      kept += f[static_cast<size_t>(i)] > 0.5f;
      b[static_cast<size_t>(i)] = static_cast<unsigned char>((i * 7919 + i / 3) % 256);  // byte_histogram's
      ++want_hist[b[static_cast<size_t>(i)]];
    }
    float *df = nullptr, *dsel = nullptr;
    int* dkept = nullptr;
    unsigned char* db = nullptr;
    unsigned* dhist = nullptr;
    CHECK(cudaMalloc(&df, n * sizeof(float)));
    CHECK(cudaMalloc(&dsel, n * sizeof(float)));
    CHECK(cudaMalloc(&dkept, sizeof(int)));
    CHECK(cudaMalloc(&db, n));
    CHECK(cudaMalloc(&dhist, 256 * sizeof(unsigned)));
    CHECK(cudaMemcpy(df, f.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n, cudaMemcpyHostToDevice));
    size_t select_bytes = 0, hist_bytes = 0;
    CHECK(cub::DeviceSelect::If(nullptr, select_bytes, df, dsel, dkept, static_cast<int>(n), AboveHalf{}));
    CHECK(cub::DeviceHistogram::HistogramEven(nullptr, hist_bytes, db, dhist, 257, 0, 256, static_cast<int>(n)));
    void *rtemp = nullptr, *stemp = nullptr, *htemp = nullptr;
    CHECK(cudaMalloc(&rtemp, reduce_bytes));
    CHECK(cudaMalloc(&stemp, select_bytes));
    CHECK(cudaMalloc(&htemp, hist_bytes));
    auto reduce = [&] { CHECK(cub::DeviceReduce::Sum(rtemp, reduce_bytes, dx, dsum, static_cast<int>(n))); };
    auto select = [&] {
      CHECK(cub::DeviceSelect::If(stemp, select_bytes, df, dsel, dkept, static_cast<int>(n), AboveHalf{}));
    };
    auto histogram = [&] {
      CHECK(cub::DeviceHistogram::HistogramEven(htemp, hist_bytes, db, dhist, 257, 0, 256, static_cast<int>(n)));
    };
    reduce();
    select();
    histogram();
    CHECK(cudaDeviceSynchronize());
    int got_sum = 0, got_kept = 0;
    std::vector<unsigned> got_hist(256);
    CHECK(cudaMemcpy(&got_sum, dsum, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&got_kept, dkept, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(got_hist.data(), dhist, 256 * sizeof(unsigned), cudaMemcpyDeviceToHost));
    if (got_sum != static_cast<int>(sum) || got_kept != kept || got_hist != want_hist) {
      std::fprintf(stderr, "cub_scan: 2^%d: CUB's sum %d (want %d), kept %d (want %lld), or histogram differs\n", l,
                   got_sum, static_cast<int>(sum), got_kept, kept);
      return 1;
    }
    // The radix sort's pairs: radix_sort's workload (many equal keys, values their indices).
    std::vector<unsigned> rk(static_cast<size_t>(n)), rv(static_cast<size_t>(n));
    for (long long i = 0; i < n; ++i) {
      const unsigned h = static_cast<unsigned>(i) * 2654435761u;
      rk[static_cast<size_t>(i)] = i % 4 == 0 ? h : (h % 50) << 16;
      rv[static_cast<size_t>(i)] = static_cast<unsigned>(i);
    }
    unsigned *dk = nullptr, *dv = nullptr, *dk2 = nullptr, *dv2 = nullptr;
    for (unsigned** p : {&dk, &dv, &dk2, &dv2}) CHECK(cudaMalloc(p, n * sizeof(unsigned)));
    CHECK(cudaMemcpy(dk, rk.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dv, rv.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    size_t sort_bytes = 0;
    CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, dk, dk2, dv, dv2, static_cast<int>(n)));
    void* sorttemp = nullptr;
    CHECK(cudaMalloc(&sorttemp, sort_bytes));
    auto radix = [&] {
      CHECK(cub::DeviceRadixSort::SortPairs(sorttemp, sort_bytes, dk, dk2, dv, dv2, static_cast<int>(n)));
    };
    radix();
    CHECK(cudaDeviceSynchronize());
    {
      std::vector<unsigned> gk(static_cast<size_t>(n)), gv(static_cast<size_t>(n));
      CHECK(cudaMemcpy(gk.data(), dk2, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(gv.data(), dv2, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
      std::vector<bool> seen(static_cast<size_t>(n), false);
      for (long long i = 0; i < n; ++i) {
        const unsigned k = gk[static_cast<size_t>(i)], v = gv[static_cast<size_t>(i)];
        const bool bad = v >= n || seen[v] || rk[v] != k ||
                         (i > 0 && (k < gk[static_cast<size_t>(i - 1)] ||
                                    (k == gk[static_cast<size_t>(i - 1)] && v < gv[static_cast<size_t>(i - 1)])));
        if (bad) {
          std::fprintf(stderr, "cub_scan: 2^%d: CUB's sorted pair %lld is (%u, %u), out of order or not an input's\n",
                       l, i, k, v);
          return 1;
        }
        seen[v] = true;
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
      timed(reduce);
      timed(select);
      timed(histogram);
      timed(radix);
      timed(copy);
    }
    std::vector<double> scan_ms, reduce_ms, select_ms, histogram_ms, radix_ms, copy_ms;
    for (int r = 0; r < reps; ++r) {
      scan_ms.push_back(timed(scan));
      reduce_ms.push_back(timed(reduce));
      select_ms.push_back(timed(select));
      histogram_ms.push_back(timed(histogram));
      radix_ms.push_back(timed(radix));
      copy_ms.push_back(timed(copy));
    }
    const double s = median(scan_ms), c = median(copy_ms), bytes = 2.0 * static_cast<double>(n) * sizeof(int);
    std::printf(
        "{\"n\": %lld, \"log2n\": %d, \"reps\": %d, \"scan_ms\": %.5f, \"scan_min_ms\": %.5f, \"scan_max_ms\": %.5f, "
        "\"reduce_ms\": %.5f, \"select_ms\": %.5f, \"histogram_ms\": %.5f, \"radix_ms\": %.5f, "
        "\"copy_ms\": %.5f, \"scan_GBps\": %.1f, \"copy_GBps\": %.1f, \"of_copy\": %.4f}\n",
        n, l, reps, s, *std::min_element(scan_ms.begin(), scan_ms.end()),
        *std::max_element(scan_ms.begin(), scan_ms.end()), median(reduce_ms), median(select_ms), median(histogram_ms),
        median(radix_ms), c, bytes / (s * 1e-3) * 1e-9, bytes / (c * 1e-3) * 1e-9, c / s);
    std::fflush(stdout);
    for (void* p : {static_cast<void*>(dsum), static_cast<void*>(df), static_cast<void*>(dsel),
                    static_cast<void*>(dkept), static_cast<void*>(db), static_cast<void*>(dhist), rtemp, stemp, htemp,
                    static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(dk2), static_cast<void*>(dv2),
                    sorttemp})
      CHECK(cudaFree(p));
    CHECK(cudaFree(temp));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(dcopy));
  }
  return 0;
}
