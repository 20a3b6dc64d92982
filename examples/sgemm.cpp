// Example: an sgemm end to end, as scripts/demo runs it. Builds and checks the kernel, specializes it
// for the launch (sync placed, CUDA C++ emitted), compiles the CUDA with NVRTC into the kernel cache,
// runs it on the best device of this host (a GPU if there is one, else the CPU backend, else the
// interpreter), checks C = alpha A B + beta C against a reference in double, and prints a report:
// the time of each stage, where each compiled artifact came from (a cache hit or a compile), and
// GFLOP/s. A second run in a new process shows the cache hits. The kernel: on a GPU, the tuner's
// best shape of sgemm rung 8 for this size (tuned once, the results stored for the next run); on a
// host device, rung 3 (shared-memory tiles of 32 x 32).
//
//   example_sgemm [--size N] [--device DEVICE] [--runs R] [--kernel auto|smem|tuned]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/paper_kernels.hpp"
#include "kernels/tuning.hpp"

namespace {

using namespace vantage;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

/// What the cache did between two snapshots, in words.
std::string cache_delta(const CacheStats& a, const CacheStats& b) {
  std::string s;
  auto add = [&](std::int64_t n, const char* what) {
    if (n > 0) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  auto hits = [](std::int64_t k) { return k == 1 ? "hit" : "hits"; };
  add(b.memory_hits - a.memory_hits, (std::string(hits(b.memory_hits - a.memory_hits)) + " in memory").c_str());
  add(b.disk_hits - a.disk_hits, (std::string(hits(b.disk_hits - a.disk_hits)) + " on disk").c_str());
  add(b.layer_hits - a.layer_hits, (std::string(hits(b.layer_hits - a.layer_hits)) + " in a read-only layer").c_str());
  add(b.compiles - a.compiles,
      b.compiles - a.compiles == 1 ? "miss (compiled and stored)" : "misses (compiled and stored)");
  return s.empty() ? "no cache traffic" : s;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: example_sgemm [--size N] [--device DEVICE] [--runs R] [--kernel auto|smem|tuned]\n"
               "  --size N        M = N = K (default 512)\n"
               "  --device DEVICE best (default), gpu, cpu, cpu:THREADS or interpreter\n"
               "  --runs R        timed launches after the first (default 10; 1 on the interpreter)\n"
               "  --kernel K      smem: rung 3 (32 x 32 shared-memory tiles); tuned: the best shape of rung 8\n"
               "                  (cp.async pipelined, 8 or 16 x 8 per thread) the tuner finds for this size\n"
               "                  and device, its results stored for the next run; auto (default): tuned on a\n"
               "                  GPU, smem on a host device\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 512, runs = -1;
  std::string device_name = "best", which = "auto";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--help" || a == "-h") return usage("The shared-memory sgemm, built, compiled, cached, run and checked.");
    const char* v = value();
    if (!v) return usage(("missing value after " + a).c_str());
    if (a == "--size") {
      n = std::atoi(v);
      if (n <= 0 || n > 8192) return usage("--size must be between 1 and 8192");
    } else if (a == "--device") {
      device_name = v;
    } else if (a == "--kernel") {
      which = v;
      if (which != "auto" && which != "smem" && which != "tuned") return usage("--kernel is auto, smem or tuned");
    } else if (a == "--runs") {
      runs = std::atoi(v);
      if (runs < 1) return usage("--runs must be at least 1");
    } else {
      return usage(("unknown option " + a).c_str());
    }
  }
  try {
    KernelCache& cache = KernelCache::global();
    CacheStats s0 = cache.stats();

    Device dev = device_name == "best"          ? Device::best()
                 : device_name == "gpu"         ? Device::gpu(0)
                 : device_name == "interpreter" ? Device::interpreter()
                 : device_name.rfind("cpu", 0) == 0
                     ? Device::cpu(device_name.size() > 4 ? std::atoi(device_name.c_str() + 4) : 0)
                     : throw LaunchError("--device", "unknown device '" + device_name + "'");
    if (runs < 0) runs = dev.kind() == DeviceKind::Interpreter ? 1 : 10;
    if (which == "auto") which = dev.is_gpu() ? "tuned" : "smem";

    // 0. With --kernel tuned: the tuner picks rung 8's tile shape for this size on this device (every
    //    shape built, compiled, checked and timed the first time; the stored results after that).
    std::string chosen = "shared-memory tiles of 32x32: rung 3", tuned_how;
    Grid grid{static_cast<std::int64_t>((n + 31) / 32) * ((n + 31) / 32), 32 * 32};
    std::optional<tune::Candidate> pick;
    if (which == "tuned") {
      const std::map<std::string, std::int64_t> size{{"M", n}, {"N", n}, {"K", n}};
      auto t0 = Clock::now();
      // The interpreter's time is the same work every launch and says nothing of a GPU's: one timed
      // launch a shape there, after the checked one.
      tune::Options opts;
      if (dev.kind() == DeviceKind::Interpreter) opts.warmup = 0, opts.repetitions = 1;
      tune::Report r = examples::tune_example("sgemm_pipelined", size, dev, opts);
      const tune::Result* best = r.best();
      if (!best) throw std::runtime_error("the tuner measured no shape of sgemm_pipelined");
      for (const auto& e : examples::all())
        if (e.name == "sgemm_pipelined") pick = e.candidate(best->config, size);
      grid = pick->grid;
      chosen = "sgemm rung 8, cp.async pipelined, " + tune::to_string(best->config);
      char how[256];
      std::snprintf(how, sizeof how,
                    "the fastest of %zu shapes of rung 8 on this device at this size (%d measured now, %d from "
                    "stored results, %d failed), in %.0f ms",
                    r.results.size(), r.measured, r.reused, r.failed, ms_since(t0));
      tuned_how = how;
    }

    // 1. Build and check (the perspective checker runs in build()).
    auto t = Clock::now();
    Kernel kernel = pick ? pick->kernel : examples::sgemm_smem();
    double build_ms = ms_since(t);

    // 2. Specialize for the launch: sync placed, CUDA C++ emitted, the rules re-checked with numbers.
    Spec spec;
    spec.threads = grid.threads;
    spec.arch = dev.is_gpu() ? dev.properties().arch : Arch::SM_90;
    t = Clock::now();
    Specialized sp = specialize_for(kernel, spec);
    double specialize_ms = ms_since(t);

    // 3. The CUDA through NVRTC into the kernel cache (a hit when an earlier process compiled it).
    double nvrtc_ms = 0;
    std::string nvrtc_what = "NVRTC not available on this host: no cubin";
    CacheStats s1 = cache.stats();
    if (nvrtc_available()) {
      t = Clock::now();
      auto c = cache.get(kernel, spec);
      nvrtc_ms = ms_since(t);
      nvrtc_what = std::to_string(c->cubin.size()) + "-byte cubin for " + arch_name(c->spec.arch) + ", " +
                   std::to_string(c->registers) + " registers, from " + c->origin;
    }
    CacheStats s2 = cache.stats();

    // 4. Inputs, and the reference in double.
    const std::size_t nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    std::vector<float> A(nn), B(nn), C0(nn);
    for (std::size_t i = 0; i < nn; ++i) {
      A[i] = static_cast<float>(static_cast<int>((i * 7) % 13) - 6) / 4.0f;
      B[i] = static_cast<float>(static_cast<int>((i * 5) % 11) - 5) / 4.0f;
      C0[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    }
    const float alpha = 1.5f, beta = 0.5f;
    t = Clock::now();
    std::vector<double> want(nn);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int k = 0; k < n; ++k)
          acc += static_cast<double>(A[static_cast<std::size_t>(i) * n + k]) * B[static_cast<std::size_t>(k) * n + j];
        want[static_cast<std::size_t>(i) * n + j] = alpha * acc + beta * C0[static_cast<std::size_t>(i) * n + j];
      }
    double reference_ms = ms_since(t);

    // 5. Run: the first launch makes the specialization for the device (a cubin loaded, or the CPU
    //    backend's object code compiled through LLVM or read from the cache), then timed launches.
    auto a = dev.alloc<float>(static_cast<std::int64_t>(nn)), b = dev.alloc<float>(static_cast<std::int64_t>(nn)),
         c = dev.alloc<float>(static_cast<std::int64_t>(nn));
    a.copy_from(A);
    b.copy_from(B);
    c.copy_from(C0);
    const auto& ca = a;
    const auto& cb = b;
    CacheStats s3 = cache.stats();
    t = Clock::now();
    kernel.launch(dev, grid, n, n, n, alpha, beta, ca, cb, c);
    dev.synchronize();
    double first_ms = ms_since(t);
    CacheStats s4 = cache.stats();
    std::vector<float> got = c.to_vector();
    // Each launch updates C; check the first result, then time the launches on a fresh copy.
    double worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < nn; ++i) {
      double err = std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i]));
      if (!(err <= worst)) worst = err, worst_at = i;
    }
    const double tolerance = 1e-5;
    std::vector<double> times;
    for (int r = 0; r < runs; ++r) {
      t = Clock::now();
      kernel.launch(dev, grid, n, n, n, alpha, beta, ca, cb, c);
      dev.synchronize();
      times.push_back(ms_since(t));
    }
    std::sort(times.begin(), times.end());
    double median_ms = times[times.size() / 2];
    double gflops = 2.0 * n * n * static_cast<double>(n) / (median_ms * 1e6);

    std::printf("sgemm %dx%dx%d (%s) on %s\n", n, n, n, chosen.c_str(), dev.name().c_str());
    if (!dev.is_gpu()) std::printf("  (no GPU: %s)\n", Device::gpu_problem().c_str());
    if (!tuned_how.empty()) std::printf("  chosen by the tuner: %s\n", tuned_how.c_str());
    if (pick)
      std::printf("  build + check                 perspectives checked as the tuner built each shape\n");
    else
      std::printf("  build + check      %8.2f ms  perspectives checked\n", build_ms);
    std::printf("  specialize         %8.2f ms  %d barriers placed, %zu bytes of CUDA C++, %zu launch guard%s\n",
                specialize_ms, sp.barriers, sp.source.size(), sp.guards.size(), sp.guards.size() == 1 ? "" : "s");
    std::printf("  CUDA -> cubin      %8.2f ms  %s; cache: %s\n", nvrtc_ms, nvrtc_what.c_str(),
                cache_delta(s1, s2).c_str());
    std::printf("  first launch       %8.2f ms  made for %s; cache: %s\n", first_ms, dev.name().c_str(),
                cache_delta(s3, s4).c_str());
    std::printf("  reference (double) %8.2f ms\n", reference_ms);
    std::printf("  result             %s (largest relative error %.2g at element %zu, tolerance %.0e)\n",
                worst <= tolerance ? "right" : "WRONG", worst, worst_at, tolerance);
    std::printf("  %d timed launches: median %.3f ms, %.2f GFLOP/s\n", runs, median_ms, gflops);
    std::printf("  kernel cache %s: %s in all\n",
                cache.directory().empty() ? "(memory only)" : cache.directory().c_str(),
                cache_delta(s0, cache.stats()).c_str());
    return worst <= tolerance ? 0 : 1;
  } catch (const CheckError& e) {
    std::fprintf(stderr, "%s", render_all(e.diagnostics()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_sgemm: %s\n", e.what());
  }
  return 1;
}
