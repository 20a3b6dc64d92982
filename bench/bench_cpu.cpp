// CPU backend benchmarks (issue 10). Three kernels, each three ways, in one run:
//  - BM_Cpu<Kernel>:   the example kernel (examples/kernels) launched on Device::cpu(1), and on
//                      Device::cpu(2) for the names that end in Threads2;
//  - BM_Plain<Kernel>: the same algorithm written as plain C++ in this file, compiled with -O3 for
//                      this host (bench/CMakeLists.txt); with Threads2, split between two
//                      std::threads (what two cores of this host give the plain code);
//  - BM_Pocl<Kernel>:  the same kernel written in OpenCL C, run by PoCL on one host thread
//                      (skipped, saying why, where there is no OpenCL platform).
// <Kernel> is Saxpy (n = 2^24, streaming from memory, and 2^20, in the last-level cache: the
// argument), BlockReduce (n = 2^24, 256 threads per block) or Sgemm512 (the
// shared-memory sgemm, 32x32 tiles, M = N = K = 512). Every variant's result is compared with the
// plain C++ one before timing (exactly where the arithmetic is the same); a wrong result fails the
// benchmark. Goals: BM_Cpu at most 1.5x BM_Plain (1.2x aimed at), no slower than BM_Pocl, and
// Threads2 at least 1.8x faster than one thread.
//
// Also:
//  - BM_Cpu<Kernel>Paired and BM_PlainSaxpyPaired: one thread and two timed back to back in each
//    iteration, with the median ratio as `speedup`, so that both see the same machine (this VM's
//    memory bandwidth moves with its neighbours' load). A cache-resident size pays for the pairing:
//    the two-thread run starts with the data in the other core's cache.
//  - BM_CpuVsPlainSaxpyPaired, BM_CpuVsPoclSaxpyPaired: the CPU backend on one thread and the plain
//    loop (PoCL) timed back to back the same way, with cpu_over_plain (cpu_over_pocl) the median ratio.
//  - BM_CpuCompileSgemm512: lowering to LLVM IR, the O3 pipeline and code generation through ORC,
//    then loading (goal: at most 100 ms).
//  - BM_CpuCacheHitSgemm512: what a second process does: a fresh cache on the same directory reads
//    the object file and ORC links it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#ifdef VANTAGE_BENCH_POCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif

#include "bench_stats.hpp"
#include "jit/cpu/cpu.h"
#include "jit/pipeline/pipeline.h"
#include "kernels/paper_kernels.hpp"
#include "vantage/vantage.hpp"

namespace {

using namespace vantage;

constexpr int kSaxpyN = 1 << 24;
constexpr int kReduceN = 1 << 24;
constexpr int kReduceThreads = 256;
constexpr int kGemm = 512;
constexpr int kTile = 32;

std::vector<float> inputs(std::size_t n, int seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + static_cast<std::size_t>(seed) * 13) % 11) - 5;
  return v;
}

/// The arrays the kernels read and write, the same memory for all three ways: the runtime's host
/// memory (2 MiB aligned, transparent huge pages), which PoCL uses in place (CL_MEM_USE_HOST_PTR).
using Array = PinnedBuffer<float>;
Array array(const std::vector<float>& v) {
  Array a(static_cast<std::int64_t>(v.size()));
  std::copy(v.begin(), v.end(), a.data());
  return a;
}

/// Fails the benchmark unless `got` equals `want` (within `tol`, relative).
bool agrees(benchmark::State& state, std::span<const float> got, const std::vector<float>& want, double tol) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(static_cast<double>(want[i]))))) {
      state.SkipWithError(("wrong result: element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                           ", expected " + std::to_string(want[i]))
                              .c_str());
      return false;
    }
  return true;
}

// ------------------------------------------------------------------ plain C++ (the same algorithms)
void plain_saxpy(int n, float a, const float* x, float* y) {
  for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

/// Per block of 256: the shared-memory tree down to 64 sums, then the first warp's shuffles.
void plain_block_reduce(int n, const float* x, float* out) {
  const int blocks = (n + kReduceThreads - 1) / kReduceThreads;
  for (int b = 0; b < blocks; ++b) {
    float p[kReduceThreads];
    for (int t = 0; t < kReduceThreads; ++t) {
      int i = b * kReduceThreads + t;
      p[t] = i < n ? x[i] : 0.0f;
    }
    for (int s = kReduceThreads / 2; s >= 64; s /= 2)
      for (int t = 0; t < s; ++t) p[t] = p[t] + p[t + s];
    float v[32];
    for (int l = 0; l < 32; ++l) v[l] = p[l] + p[l + 32];
    for (int off = 16; off >= 1; off /= 2)
      for (int l = 0; l + off < 32; ++l) v[l] = v[l] + v[l + off];
    out[b] = v[0];
  }
}

/// C = alpha A B + beta C in 32x32 tiles of C, A and B staged tile by tile (zeros past the edges).
void plain_sgemm(int M, int N, int K, float alpha, float beta, const float* A, const float* B, float* C) {
  for (int bi = 0; bi < M; bi += kTile)
    for (int bj = 0; bj < N; bj += kTile) {
      alignas(64) float acc[kTile][kTile] = {};
      alignas(64) float As[kTile][kTile];
      alignas(64) float Bs[kTile][kTile];
      for (int kb = 0; kb < K; kb += kTile) {
        for (int r = 0; r < kTile; ++r)
          for (int c = 0; c < kTile; ++c) {
            As[r][c] = bi + r < M && kb + c < K ? A[(bi + r) * K + kb + c] : 0.0f;
            Bs[r][c] = kb + r < K && bj + c < N ? B[(kb + r) * N + bj + c] : 0.0f;
          }
        for (int r = 0; r < kTile; ++r)
          for (int kk = 0; kk < kTile; ++kk)
            for (int c = 0; c < kTile; ++c) acc[r][c] += As[r][kk] * Bs[kk][c];
      }
      for (int r = 0; r < kTile && bi + r < M; ++r)
        for (int c = 0; c < kTile && bj + c < N; ++c) {
          float& out = C[(bi + r) * N + bj + c];
          out = alpha * acc[r][c] + beta * out;
        }
    }
}

// ------------------------------------------------------------------ the three kernels, three ways
struct SaxpyData {
  int n;
  std::vector<float> y0 = inputs(n, 2), want = y0;
  Array x = array(inputs(n, 1));
  explicit SaxpyData(int size) : n(size) { plain_saxpy(n, 3.0f, x.data(), want.data()); }
};
struct ReduceData {
  std::vector<float> want = std::vector<float>(kReduceN / kReduceThreads);
  Array x = array(inputs(kReduceN, 3));
  ReduceData() { plain_block_reduce(kReduceN, x.data(), want.data()); }
};
struct GemmData {
  std::vector<float> C0 = inputs(kGemm * kGemm, 6), want = C0;
  Array A = array(inputs(kGemm * kGemm, 4)), B = array(inputs(kGemm * kGemm, 5));
  GemmData() { plain_sgemm(kGemm, kGemm, kGemm, 1.5f, 0.5f, A.data(), B.data(), want.data()); }
};
/// Saxpy at the benchmark's size (its argument): 2^24 elements stream from memory, 2^20 (12 MB moved)
/// stay in this host's 32 MiB last-level cache, which shows how the work scales rather than the memory.
const SaxpyData& saxpy_data(const benchmark::State& state) {
  static std::map<int, std::unique_ptr<SaxpyData>> all;
  static std::mutex m;
  std::lock_guard lock(m);
  int n = static_cast<int>(state.range(0));
  auto& d = all[n];
  if (!d) d = std::make_unique<SaxpyData>(n);
  return *d;
}
const ReduceData& reduce_data() {
  static const ReduceData d;
  return d;
}
const GemmData& gemm_data() {
  static const GemmData d;
  return d;
}

void BM_PlainSaxpy(benchmark::State& state) {
  const auto& d = saxpy_data(state);
  Array y = array(d.y0);
  plain_saxpy(d.n, 3.0f, d.x.data(), y.data());
  if (!agrees(state, y, d.want, 0)) return;
  for (auto _ : state) {
    plain_saxpy(d.n, 3.0f, d.x.data(), y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * d.n * 12);
}
void BM_PlainBlockReduce(benchmark::State& state) {
  const auto& d = reduce_data();
  Array out(static_cast<std::int64_t>(d.want.size()));
  for (auto _ : state) {
    plain_block_reduce(kReduceN, d.x.data(), out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kReduceN * 4);
}
void BM_PlainSgemm512(benchmark::State& state) {
  const auto& d = gemm_data();
  Array C = array(d.C0);
  for (auto _ : state) {
    plain_sgemm(kGemm, kGemm, kGemm, 1.5f, 0.5f, d.A.data(), d.B.data(), C.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kGemm * kGemm * kGemm * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

/// `work(first, last)` over [0, n) split between this thread and one more (the same split of the
/// plain code as the CPU backend's two host threads: what two cores of this host can do).
template <class F>
void on_two_threads(int n, F work) {
  std::thread other([&] { work(0, n / 2); });
  work(n / 2, n);
  other.join();
}
void BM_PlainSaxpyThreads2(benchmark::State& state) {
  const auto& d = saxpy_data(state);
  Array y = array(d.y0);
  for (auto _ : state) {
    on_two_threads(d.n, [&](int a, int b) { plain_saxpy(b - a, 3.0f, d.x.data() + a, y.data() + a); });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * d.n * 12);
}
void BM_PlainBlockReduceThreads2(benchmark::State& state) {
  const auto& d = reduce_data();
  Array out(static_cast<std::int64_t>(d.want.size()));
  const int blocks = kReduceN / kReduceThreads;
  for (auto _ : state) {
    on_two_threads(blocks, [&](int a, int b) {
      plain_block_reduce((b - a) * kReduceThreads, d.x.data() + a * kReduceThreads, out.data() + a);
    });
    benchmark::ClobberMemory();
  }
  if (!agrees(state, out, d.want, 0)) return;
  state.SetBytesProcessed(state.iterations() * kReduceN * 4);
}
void BM_PlainSgemm512Threads2(benchmark::State& state) {
  const auto& d = gemm_data();
  Array C = array(d.C0);
  for (auto _ : state) {
    // Rows of tiles split between the threads.
    on_two_threads(kGemm, [&](int a, int b) {
      plain_sgemm(b - a, kGemm, kGemm, 1.5f, 0.5f, d.A.data() + a * kGemm, d.B.data(), C.data() + a * kGemm);
    });
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kGemm * kGemm * kGemm * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

/// The example kernel on Device::cpu(threads); the first launch (compile or cache) before timing.
void cpu_saxpy(benchmark::State& state, int threads) {
  const auto& d = saxpy_data(state);
  Kernel k = examples::saxpy();
  Device dev = Device::cpu(threads);
  Array y = array(d.y0);
  Grid grid{d.n / 256, 256};
  k.launch(dev, grid, d.n, 3.0f, std::as_const(d.x), y);
  dev.synchronize();
  if (!agrees(state, y, d.want, 0)) return;
  for (auto _ : state) {
    k.launch(dev, grid, d.n, 3.0f, std::as_const(d.x), y);
    dev.synchronize();
  }
  state.SetBytesProcessed(state.iterations() * d.n * 12);
}
/// The primitive form computes the tree the baselines compute, to the bit; the library form
/// (`lib::block_reduce`: shuffles, one barrier) adds in another order, so it is checked to 1e-5.
void cpu_block_reduce(benchmark::State& state, int threads, bool library = false) {
  const auto& d = reduce_data();
  Kernel k = library ? examples::block_reduce() : examples::block_reduce_primitive();
  Device dev = Device::cpu(threads);
  Array out(static_cast<std::int64_t>(d.want.size()));
  Grid grid{kReduceN / kReduceThreads, kReduceThreads};
  k.launch(dev, grid, kReduceN, std::as_const(d.x), out);
  dev.synchronize();
  if (!agrees(state, out, d.want, library ? 1e-5 : 0)) return;
  for (auto _ : state) {
    k.launch(dev, grid, kReduceN, std::as_const(d.x), out);
    dev.synchronize();
  }
  state.SetBytesProcessed(state.iterations() * kReduceN * 4);
}
/// An sgemm kernel at 512^3 on Device::cpu(threads) over `grid`, checked against the plain result
/// (exactly: small-integer inputs) before timing.
void cpu_sgemm_kernel(benchmark::State& state, int threads, const Kernel& k, Grid grid) {
  const auto& d = gemm_data();
  Device dev = Device::cpu(threads);
  Array C = array(d.C0);
  k.launch(dev, grid, kGemm, kGemm, kGemm, 1.5f, 0.5f, std::as_const(d.A), std::as_const(d.B), C);
  dev.synchronize();
  if (!agrees(state, C, d.want, 0)) return;
  for (auto _ : state) {
    k.launch(dev, grid, kGemm, kGemm, kGemm, 1.5f, 0.5f, std::as_const(d.A), std::as_const(d.B), C);
    dev.synchronize();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kGemm * kGemm * kGemm * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
void cpu_sgemm(benchmark::State& state, int threads) {
  cpu_sgemm_kernel(state, threads, examples::sgemm_smem(), Grid{(kGemm / kTile) * (kGemm / kTile), kTile * kTile});
}
bool has_cpu(benchmark::State& state) {
  if (Device::cpu_available()) return true;
  state.SkipWithError("this build has no CPU backend (VANTAGE_CPU_BACKEND=OFF)");
  return false;
}
void BM_CpuSaxpy(benchmark::State& s) { has_cpu(s) ? cpu_saxpy(s, 1) : void(); }
void BM_CpuSaxpyThreads2(benchmark::State& s) { has_cpu(s) ? cpu_saxpy(s, 2) : void(); }
void BM_CpuBlockReduce(benchmark::State& s) { has_cpu(s) ? cpu_block_reduce(s, 1) : void(); }
void BM_CpuBlockReduceThreads2(benchmark::State& s) { has_cpu(s) ? cpu_block_reduce(s, 2) : void(); }
void BM_CpuBlockReduceLibrary(benchmark::State& s) { has_cpu(s) ? cpu_block_reduce(s, 1, true) : void(); }
/// The sgemm ladder at 512^3 on one host thread, rung by rung (the argument picks the rung): what each
/// GPU technique costs or gains when the same kernel runs on the CPU backend. BM_PlainSgemm512 in the
/// same run is the baseline. Small-integer inputs make every rung's result exact, tf32 included.
struct Rung {
  const char* name;
  Kernel (*make)();
  std::int64_t bm, bn, threads;
};
const Rung kRungs[] = {
    {"sgemm_smem", [] { return examples::sgemm_smem(32); }, 32, 32, 1024},
    {"sgemm_reg1d", [] { return examples::sgemm_reg1d(); }, 64, 64, 512},
    {"sgemm_reg2d", [] { return examples::sgemm_reg2d(); }, 64, 64, 256},
    {"sgemm_vec", [] { return examples::sgemm_vec(); }, 64, 64, 256},
    {"sgemm_warptile", [] { return examples::sgemm_warptile(); }, 64, 64, 128},
    {"mma_tf32", [] { return examples::mma_tf32(); }, 32, 32, 128},
};
void BM_CpuSgemmLadder512(benchmark::State& state) {
  if (!has_cpu(state)) return;
  const Rung& r = kRungs[state.range(0)];
  state.SetLabel(r.name);
  cpu_sgemm_kernel(state, 1, r.make(), Grid{(kGemm / r.bm) * (kGemm / r.bn), r.threads});
}
void BM_CpuSgemm512(benchmark::State& s) { has_cpu(s) ? cpu_sgemm(s, 1) : void(); }
void BM_CpuSgemm512Threads2(benchmark::State& s) { has_cpu(s) ? cpu_sgemm(s, 2) : void(); }

// ------------------------------------------------------------------ one thread against two, in pairs
/// `one()` and `two()` timed back to back in every iteration, in alternating order, so that both see
/// the same machine. On this VM the memory bandwidth a thread gets moves by up to 2x within a minute
/// with the neighbours' load (git show dca9549:docs/performance.md), and a ratio of two benchmarks run apart moves
/// with it. Counters: one_ms and two_ms (medians) and speedup, the median of the iterations' ratios.
/// The counters' names: the first's time, the second's, and the ratio (first / second).
struct PairNames {
  const char* one = "one_ms";
  const char* two = "two_ms";
  const char* ratio = "speedup";
};
template <class One, class Two>
void paired(benchmark::State& state, One one, Two two, PairNames names = {}) {
  using clock = std::chrono::steady_clock;
  auto time = [](auto& f) {
    const auto start = clock::now();
    f();
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
  };
  std::vector<double> t1, t2, ratio;
  bool flip = false;
  for (auto _ : state) {
    double a = 0, b = 0;
    if (flip) {
      b = time(two);
      a = time(one);
    } else {
      a = time(one);
      b = time(two);
    }
    flip = !flip;
    t1.push_back(a);
    t2.push_back(b);
    ratio.push_back(a / b);
  }
  state.counters[names.one] = bench::median(t1);
  state.counters[names.two] = bench::median(t2);
  state.counters[names.ratio] = bench::median(ratio);
}

void BM_CpuSaxpyPaired(benchmark::State& state) {
  if (!has_cpu(state)) return;
  const auto& d = saxpy_data(state);
  Kernel k = examples::saxpy();
  Device one = Device::cpu(1), two = Device::cpu(2);
  Array y = array(d.y0);
  Grid grid{d.n / 256, 256};
  for (Device* dev : {&one, &two}) {
    std::copy(d.y0.begin(), d.y0.end(), y.data());
    k.launch(*dev, grid, d.n, 3.0f, std::as_const(d.x), y);
    dev->synchronize();
    if (!agrees(state, y, d.want, 0)) return;
  }
  auto on = [&](Device& dev) {
    return [&] {
      k.launch(dev, grid, d.n, 3.0f, std::as_const(d.x), y);
      dev.synchronize();
    };
  };
  paired(state, on(one), on(two));
}
/// Saxpy on one host thread, the CPU backend and the plain loop timed back to back in each iteration
/// (the order alternating): from memory their ratio moves less with the VM's bandwidth than two
/// benchmarks run apart. cpu_over_plain is the issue's single-thread ratio (goal: at most 1.5).
void BM_CpuVsPlainSaxpyPaired(benchmark::State& state) {
  if (!has_cpu(state)) return;
  const auto& d = saxpy_data(state);
  Kernel k = examples::saxpy();
  Device dev = Device::cpu(1);
  Array y = array(d.y0), py = array(d.y0);
  Grid grid{d.n / 256, 256};
  k.launch(dev, grid, d.n, 3.0f, std::as_const(d.x), y);
  dev.synchronize();
  if (!agrees(state, y, d.want, 0)) return;
  paired(
      state,
      [&] {
        k.launch(dev, grid, d.n, 3.0f, std::as_const(d.x), y);
        dev.synchronize();
      },
      [&] { plain_saxpy(d.n, 3.0f, d.x.data(), py.data()); }, {"cpu_ms", "plain_ms", "cpu_over_plain"});
}
void BM_PlainSaxpyPaired(benchmark::State& state) {
  const auto& d = saxpy_data(state);
  Array y = array(d.y0);
  paired(
      state, [&] { plain_saxpy(d.n, 3.0f, d.x.data(), y.data()); },
      [&] { on_two_threads(d.n, [&](int a, int b) { plain_saxpy(b - a, 3.0f, d.x.data() + a, y.data() + a); }); });
}
void BM_CpuBlockReducePaired(benchmark::State& state) {
  if (!has_cpu(state)) return;
  const auto& d = reduce_data();
  Kernel k = examples::block_reduce_primitive();
  Device one = Device::cpu(1), two = Device::cpu(2);
  Array out(static_cast<std::int64_t>(d.want.size()));
  Grid grid{kReduceN / kReduceThreads, kReduceThreads};
  auto on = [&](Device& dev) {
    return [&] {
      k.launch(dev, grid, kReduceN, std::as_const(d.x), out);
      dev.synchronize();
    };
  };
  paired(state, on(one), on(two));
  agrees(state, out, d.want, 0);
}
void BM_CpuSgemm512Paired(benchmark::State& state) {
  if (!has_cpu(state)) return;
  const auto& d = gemm_data();
  Kernel k = examples::sgemm_smem();
  Device one = Device::cpu(1), two = Device::cpu(2);
  Array C = array(d.C0);
  Grid grid{(kGemm / kTile) * (kGemm / kTile), kTile * kTile};
  for (Device* dev : {&one, &two}) {
    std::copy(d.C0.begin(), d.C0.end(), C.data());
    k.launch(*dev, grid, kGemm, kGemm, kGemm, 1.5f, 0.5f, std::as_const(d.A), std::as_const(d.B), C);
    dev->synchronize();
    if (!agrees(state, C, d.want, 0)) return;
  }
  auto on = [&](Device& dev) {
    return [&] {
      k.launch(dev, grid, kGemm, kGemm, kGemm, 1.5f, 0.5f, std::as_const(d.A), std::as_const(d.B), C);
      dev.synchronize();
    };
  };
  paired(state, on(one), on(two));
}

Spec sgemm_spec() {
  Spec spec;
  spec.threads = kTile * kTile;
  return spec;
}

void BM_CpuCompileSgemm512(benchmark::State& state) {
  if (!has_cpu(state)) return;
  Kernel k = examples::sgemm_smem();
  for (auto _ : state) {
    auto lowered = pipeline::lower_for(k, sgemm_spec());
    cpu::Module m = cpu::generate(lowered.lowered, "vt_bench_sgemm");
    auto object = cpu::compile(std::move(m), 3);
    cpu::Loaded code = cpu::load(object, "vt_bench_sgemm");
    benchmark::DoNotOptimize(code.fn());
  }
}

void BM_CpuCacheHitSgemm512(benchmark::State& state) {
  if (!has_cpu(state)) return;
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("vantage-bench-cpu-" + std::to_string(::getpid()));
  CacheConfig config;
  config.dir = dir.string();
  Kernel k = examples::sgemm_smem();
  auto lowered = pipeline::lower_for(k, sgemm_spec());
  std::string ir = cpu::generate(lowered.lowered, "vt_bench_sgemm_hit").ir();
  std::vector<std::string> key{ir, cpu::host_fingerprint(), "O3"};
  {
    KernelCache first(config);  // the first process: compiles and stores
    first.artifact("cpu-object", key,
                   [&] { return cpu::compile(cpu::generate(lowered.lowered, "vt_bench_sgemm_hit")); });
  }
  for (auto _ : state) {
    KernelCache cache(config);  // a second process: nothing in memory
    std::string origin;
    auto object = cache.artifact(
        "cpu-object", key, [] { return std::vector<char>{}; }, &origin);
    if (origin != "disk") {
      state.SkipWithError(("the object came from " + origin + ", not the disk").c_str());
      break;
    }
    cpu::Loaded code = cpu::load(*object, "vt_bench_sgemm_hit");
    benchmark::DoNotOptimize(code.fn());
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// ------------------------------------------------------------------ PoCL
#ifdef VANTAGE_BENCH_POCL
const char* kOpenClSource = R"CL(
__kernel void saxpy(int n, float a, __global const float* x, __global float* y) {
  int i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}

// The shared-memory tree down to 64 sums, then the last 64 in local memory (OpenCL 1.2 has no
// shuffles), in the order of the shuffles: v[l] += v[l + off] for off = 16 .. 1.
__kernel void block_reduce(int n, __global const float* x, __global float* out) {
  __local float p[256];
  __local float v[64];
  int t = get_local_id(0), idx = get_group_id(0) * 256 + t;
  p[t] = idx < n ? x[idx] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = 128; s >= 64; s /= 2) {
    if (t < s) p[t] = p[t] + p[t + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t < 32) v[t] = p[t] + p[t + 32];
  else if (t < 64) v[t] = 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = 16; off >= 1; off /= 2) {
    float o = t < 32 ? v[t + off] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < 32 && t + off < 32) v[t] = v[t] + o;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) out[get_group_id(0)] = v[0];
}

__kernel void sgemm_smem(int M, int N, int K, float alpha, float beta, __global const float* A,
                         __global const float* B, __global float* C) {
  __local float As[32 * 32];
  __local float Bs[32 * 32];
  int nbn = (N + 31) / 32, brow = get_group_id(0) / nbn, bcol = get_group_id(0) % nbn;
  int t = get_local_id(0), tr = t / 32, tc = t % 32;
  float acc = 0.0f;
  for (int kb = 0; kb < K; kb += 32) {
    int ar = brow * 32 + tr, ac = kb + tc, br = kb + tr, bc = bcol * 32 + tc;
    As[t] = ar < M && ac < K ? A[ar * K + ac] : 0.0f;
    Bs[t] = br < K && bc < N ? B[br * N + bc] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < 32; ++kk) acc = acc + As[tr * 32 + kk] * Bs[kk * 32 + tc];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  int r = brow * 32 + tr, c = bcol * 32 + tc;
  if (r < M && c < N) C[r * N + c] = alpha * acc + beta * C[r * N + c];
}
)CL";

/// One OpenCL context on PoCL's CPU device with the three kernels built (once per process).
class Pocl {
 public:
  static Pocl& get() {
    static Pocl p;
    return p;
  }
  const std::string& problem() const { return problem_; }
  cl_kernel kernel(const char* name) {
    cl_int err = 0;
    cl_kernel k = clCreateKernel(program_, name, &err);
    return err == CL_SUCCESS ? k : nullptr;
  }
  /// A buffer on the arrays' own memory (CL_MEM_USE_HOST_PTR), so that PoCL reads and writes the
  /// same pages the other two ways do.
  cl_mem buffer(Array& a) {
    cl_int err = 0;
    cl_mem m = clCreateBuffer(context_, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                              static_cast<std::size_t>(a.size()) * sizeof(float), a.data(), &err);
    return err == CL_SUCCESS ? m : nullptr;
  }
  void read(cl_mem m, std::size_t bytes, void* to) {
    clEnqueueReadBuffer(queue_, m, CL_TRUE, 0, bytes, to, 0, nullptr, nullptr);
  }
  bool run(cl_kernel k, std::size_t global, std::size_t local) {
    if (clEnqueueNDRangeKernel(queue_, k, 1, nullptr, &global, &local, 0, nullptr, nullptr) != CL_SUCCESS) return false;
    return clFinish(queue_) == CL_SUCCESS;
  }
  double build_ms() const { return build_ms_; }

 private:
  Pocl() {
    // One host thread, as BM_Cpu* without Threads2 (PoCL reads this before it starts its pool).
    ::setenv("POCL_MAX_PTHREAD_COUNT", "1", 1);
    cl_platform_id platform = nullptr;
    cl_uint platforms = 0;
    if (clGetPlatformIDs(1, &platform, &platforms) != CL_SUCCESS || platforms == 0) {
      problem_ = "no OpenCL platform (install pocl-opencl-icd)";
      return;
    }
    cl_device_id device = nullptr;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &device, nullptr) != CL_SUCCESS) {
      problem_ = "no OpenCL CPU device";
      return;
    }
    cl_int err = 0;
    context_ = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    queue_ = clCreateCommandQueue(context_, device, 0, &err);
    program_ = clCreateProgramWithSource(context_, 1, &kOpenClSource, nullptr, &err);
    auto t0 = std::chrono::steady_clock::now();
    if (clBuildProgram(program_, 1, &device, "-cl-std=CL1.2", nullptr, nullptr) != CL_SUCCESS) {
      char log[4096] = {};
      clGetProgramBuildInfo(program_, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, nullptr);
      problem_ = std::string("PoCL could not build the kernels: ") + log;
    }
    build_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_program program_ = nullptr;
  std::string problem_;
  double build_ms_ = 0;
};

template <class T>
void set(cl_kernel k, cl_uint i, const T& v) {
  clSetKernelArg(k, i, sizeof(T), &v);
}

bool pocl_ready(benchmark::State& state, cl_kernel& k, const char* name) {
  Pocl& p = Pocl::get();
  if (!p.problem().empty()) {
    state.SkipWithError(p.problem().c_str());
    return false;
  }
  k = p.kernel(name);
  if (!k) state.SkipWithError((std::string("PoCL has no kernel ") + name).c_str());
  return k != nullptr;
}

void BM_PoclSaxpy(benchmark::State& state) {
  cl_kernel k = nullptr;
  if (!pocl_ready(state, k, "saxpy")) return;
  Pocl& p = Pocl::get();
  const auto& d = saxpy_data(state);
  Array hx = array(inputs(d.n, 1)), hy = array(d.y0);
  cl_mem x = p.buffer(hx), y = p.buffer(hy);
  set(k, 0, d.n), set(k, 1, 3.0f), set(k, 2, x), set(k, 3, y);
  p.run(k, d.n, 256);
  std::vector<float> got(d.n);
  p.read(y, d.n * 4, got.data());
  if (agrees(state, got, d.want, 0))
    for (auto _ : state) p.run(k, d.n, 256);
  state.SetBytesProcessed(state.iterations() * d.n * 12);
  clReleaseMemObject(x), clReleaseMemObject(y), clReleaseKernel(k);
}
void BM_PoclBlockReduce(benchmark::State& state) {
  cl_kernel k = nullptr;
  if (!pocl_ready(state, k, "block_reduce")) return;
  Pocl& p = Pocl::get();
  const auto& d = reduce_data();
  std::vector<float> got(d.want.size());
  Array hx = array(inputs(kReduceN, 3)), hout(static_cast<std::int64_t>(got.size()));
  cl_mem x = p.buffer(hx), out = p.buffer(hout);
  set(k, 0, kReduceN), set(k, 1, x), set(k, 2, out);
  p.run(k, kReduceN, kReduceThreads);
  p.read(out, got.size() * 4, got.data());
  if (agrees(state, got, d.want, 0))
    for (auto _ : state) p.run(k, kReduceN, kReduceThreads);
  state.SetBytesProcessed(state.iterations() * kReduceN * 4);
  clReleaseMemObject(x), clReleaseMemObject(out), clReleaseKernel(k);
}
void BM_PoclSgemm512(benchmark::State& state) {
  cl_kernel k = nullptr;
  if (!pocl_ready(state, k, "sgemm_smem")) return;
  Pocl& p = Pocl::get();
  const auto& d = gemm_data();
  Array hA = array(inputs(kGemm * kGemm, 4)), hB = array(inputs(kGemm * kGemm, 5)), hC = array(d.C0);
  cl_mem A = p.buffer(hA), B = p.buffer(hB), C = p.buffer(hC);
  set(k, 0, kGemm), set(k, 1, kGemm), set(k, 2, kGemm), set(k, 3, 1.5f), set(k, 4, 0.5f);
  set(k, 5, A), set(k, 6, B), set(k, 7, C);
  const std::size_t global = (kGemm / kTile) * (kGemm / kTile) * kTile * kTile;
  p.run(k, global, kTile * kTile);
  std::vector<float> got(d.C0.size());
  p.read(C, got.size() * 4, got.data());
  if (agrees(state, got, d.want, 0))
    for (auto _ : state) p.run(k, global, kTile * kTile);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kGemm * kGemm * kGemm * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.counters["build_ms"] = p.build_ms();
  clReleaseMemObject(A), clReleaseMemObject(B), clReleaseMemObject(C), clReleaseKernel(k);
}
/// Saxpy on one host thread, the CPU backend and PoCL timed back to back in each iteration (the order
/// alternating), as BM_CpuVsPlainSaxpyPaired: cpu_over_pocl is the issue's "no slower than PoCL"
/// (goal: at most 1).
void BM_CpuVsPoclSaxpyPaired(benchmark::State& state) {
  if (!has_cpu(state)) return;
  cl_kernel pk = nullptr;
  if (!pocl_ready(state, pk, "saxpy")) return;
  Pocl& p = Pocl::get();
  const auto& d = saxpy_data(state);
  Kernel k = examples::saxpy();
  Device dev = Device::cpu(1);
  Array y = array(d.y0), hx = array(inputs(d.n, 1)), hy = array(d.y0);
  cl_mem x = p.buffer(hx), py = p.buffer(hy);
  set(pk, 0, d.n), set(pk, 1, 3.0f), set(pk, 2, x), set(pk, 3, py);
  Grid grid{d.n / 256, 256};
  k.launch(dev, grid, d.n, 3.0f, std::as_const(d.x), y);
  dev.synchronize();
  p.run(pk, d.n, 256);
  std::vector<float> got(d.n);
  p.read(py, d.n * 4, got.data());
  if (agrees(state, y, d.want, 0) && agrees(state, got, d.want, 0))
    paired(
        state,
        [&] {
          k.launch(dev, grid, d.n, 3.0f, std::as_const(d.x), y);
          dev.synchronize();
        },
        [&] { p.run(pk, d.n, 256); }, {"cpu_ms", "pocl_ms", "cpu_over_pocl"});
  clReleaseMemObject(x), clReleaseMemObject(py), clReleaseKernel(pk);
}
#else
void no_pocl(benchmark::State& state) { state.SkipWithError("built without OpenCL (install ocl-icd-opencl-dev)"); }
void BM_CpuVsPoclSaxpyPaired(benchmark::State& s) { no_pocl(s); }
void BM_PoclSaxpy(benchmark::State& s) { no_pocl(s); }
void BM_PoclBlockReduce(benchmark::State& s) { no_pocl(s); }
void BM_PoclSgemm512(benchmark::State& s) { no_pocl(s); }
#endif

}  // namespace

BENCHMARK(BM_PlainSaxpy)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainSaxpyThreads2)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuSaxpy)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuSaxpyThreads2)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PoclSaxpy)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuSaxpyPaired)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainSaxpyPaired)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuVsPlainSaxpyPaired)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuVsPoclSaxpyPaired)->Arg(kSaxpyN)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainBlockReduce)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainBlockReduceThreads2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuBlockReduce)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuBlockReduceThreads2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuBlockReduceLibrary)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PoclBlockReduce)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuBlockReducePaired)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainSgemm512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainSgemm512Threads2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuSgemm512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuSgemm512Threads2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PoclSgemm512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuSgemm512Paired)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuSgemmLadder512)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuCompileSgemm512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuCacheHitSgemm512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
