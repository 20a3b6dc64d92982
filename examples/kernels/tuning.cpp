// The sgemm tuner (kernels/tuning.hpp).
#include "kernels/tuning.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>

namespace vantage::examples {

tune::Space sgemm_space() {
  tune::Space s;
  s.param("BM", {32, 64, 128}).param("BN", {32, 64, 128}).param("BK", {8, 16}).param("TM", {4, 8, 16});
  s.constraint([](const tune::Config& c) {
    std::int64_t bm = c.at("BM"), bn = c.at("BN"), bk = c.at("BK"), tm = c.at("TM");
    std::int64_t threads = bm * bn / tm;
    return bm % tm == 0 && threads >= 32 && threads <= 1024 && (bm * bk) % threads == 0 && (bk * bn) % threads == 0 &&
           (bm * bk + bk * bn) * 4 <= 48 * 1024;
  });
  return s;
}

tune::Candidate sgemm_candidate(const tune::Config& c, int M, int N) {
  Reg1dShape sh{static_cast<int>(c.at("BM")), static_cast<int>(c.at("BN")), static_cast<int>(c.at("BK")),
                static_cast<int>(c.at("TM"))};
  std::int64_t threads = std::int64_t{sh.bm} * sh.bn / sh.tm;
  std::int64_t blocks = ((M + sh.bm - 1) / sh.bm) * ((N + sh.bn - 1) / sh.bn);
  return {sgemm_reg1d(sh), Grid{std::max<std::int64_t>(blocks, 1), threads}, std::nullopt};
}

std::optional<Device> device_named(const std::string& name, std::string& error) {
  try {
    if (name == "interpreter") return Device::interpreter();
    if (name == "best") return Device::best();
    if (name == "cpu" || name.rfind("cpu:", 0) == 0)
      return Device::cpu(name == "cpu" ? 0 : std::atoi(name.c_str() + 4));
    if (name == "gpu" || name.rfind("gpu:", 0) == 0)
      return Device::gpu(name == "gpu" ? 0 : std::atoi(name.c_str() + 4));
    error = "the device is interpreter, cpu, cpu:THREADS, gpu, gpu:N or best, not '" + name + "'";
  } catch (const std::exception& e) {
    error = e.what();
  }
  return std::nullopt;
}

namespace {

const char* kUsage =
    "usage: %s [--size N] [--device DEVICE] [--budget SECONDS] [--compile-threads N]\n"
    "          [--csv FILE] [--svg FILE] [--results DIR] [--fresh] [--help]\n"
    "\n"
    "Tunes sgemm rung 4 (1-D register blocking: a BM x BN tile of C per block, K in steps of BK,\n"
    "TM rows per thread) for C = A B with M = N = K = N on one device. Every configuration is built,\n"
    "compiled on worker threads, checked against a reference and timed (median of 5, caches flushed);\n"
    "one that fails at any stage is reported and scored as infinitely slow. Results are stored per\n"
    "configuration, problem, device and toolchain, so a second run measures only what is new.\n"
    "\n"
    "  --size N             the matrices' size (default 1024 on a GPU, 256 on the CPU, 32 on the\n"
    "                       interpreter)\n"
    "  --device DEVICE      interpreter, cpu, cpu:THREADS, gpu, gpu:N or best (the default)\n"
    "  --budget SECONDS     stop measuring after this long and keep the best so far\n"
    "  --compile-threads N  workers compiling candidates (default: one per core, memory allowing)\n"
    "  --csv FILE           write every configuration's result as CSV\n"
    "  --svg FILE           write a heatmap of the time over BM and TM (best over BN and BK)\n"
    "  --results DIR        where results are stored (default: the kernel cache's directory/tune)\n"
    "  --fresh              neither read nor store results: measure everything\n";

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int tune_sgemm_main(const std::vector<std::string>& args, const std::string& program) {
  std::string device_name = "best", csv, svg;
  std::int64_t size = 0;
  tune::Options options;
  options.progress = &std::cerr;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* what) -> std::optional<std::string> {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "%s: %s needs %s\n", program.c_str(), a.c_str(), what);
        return std::nullopt;
      }
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf(kUsage, program.c_str());
      return 0;
    }
    std::optional<std::string> v;
    if (a == "--size") {
      if (!(v = value("a size"))) return 2;
      size = std::atoll(v->c_str());
      if (size < 1 || size > 16384) {
        std::fprintf(stderr, "%s: --size is 1..16384, not '%s'\n", program.c_str(), v->c_str());
        return 2;
      }
    } else if (a == "--device") {
      if (!(v = value("a device"))) return 2;
      device_name = *v;
    } else if (a == "--budget") {
      if (!(v = value("seconds"))) return 2;
      options.budget_s = std::atof(v->c_str());
    } else if (a == "--compile-threads") {
      if (!(v = value("a count"))) return 2;
      options.compile_threads = std::atoi(v->c_str());
    } else if (a == "--csv") {
      if (!(v = value("a file"))) return 2;
      csv = *v;
    } else if (a == "--svg") {
      if (!(v = value("a file"))) return 2;
      svg = *v;
    } else if (a == "--results") {
      if (!(v = value("a directory"))) return 2;
      options.directory = *v;
    } else if (a == "--fresh") {
      options.store = false;
    } else {
      std::fprintf(stderr, "%s: unexpected '%s' (see --help)\n", program.c_str(), a.c_str());
      return 2;
    }
  }
  std::string error;
  auto device = device_named(device_name, error);
  if (!device) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), error.c_str());
    return 2;
  }
  if (size == 0) size = device->is_gpu() ? 1024 : device->kind() == DeviceKind::Cpu ? 256 : 32;
  const int n = static_cast<int>(size);

  // A and B of small integers over 8: every product and sum of 4096 of them is exact in f32, so the
  // result is checked for equality with a reference computed in double.
  std::vector<float> hA(static_cast<std::size_t>(n) * n), hB(hA.size()), want(hA.size(), 0.0f);
  std::mt19937 rng(7);
  for (auto& x : hA) x = static_cast<float>(static_cast<int>(rng() % 9) - 4) / 8.0f;
  for (auto& x : hB) x = static_cast<float>(static_cast<int>(rng() % 9) - 4) / 8.0f;
  for (int i = 0; i < n; ++i)
    for (int p = 0; p < n; ++p) {
      double a = hA[static_cast<std::size_t>(i) * n + p];
      for (int j = 0; j < n; ++j)
        want[static_cast<std::size_t>(i) * n + j] += static_cast<float>(a * hB[static_cast<std::size_t>(p) * n + j]);
    }
  auto A = device->alloc<float>(hA.size()), B = device->alloc<float>(hB.size()), C = device->alloc<float>(hA.size());
  A.copy_from(hA);
  B.copy_from(hB);
  C.zero();  // beta is 0, but 0 * NaN is NaN: C starts as zeros
  const auto& cA = A;
  const auto& cB = B;

  tune::Problem problem;
  problem.key = "M=N=K=" + std::to_string(n) + " alpha=1 beta=0";
  problem.run = [&](const Kernel& k, const Device& d, Grid g) { k.launch(d, g, n, n, n, 1.0f, 0.0f, cA, cB, C); };
  problem.sizes = {{"M", n}, {"N", n}, {"K", n}};
  problem.check = [&](std::string& why) {
    std::vector<float> got = C.to_vector();
    for (std::size_t i = 0; i < got.size(); ++i)
      if (std::fabs(got[i] - want[i]) > 1e-3f * std::max(1.0f, std::fabs(want[i]))) {
        why = "C[" + std::to_string(i) + "] is " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
        return false;
      }
    return true;
  };

  tune::Space space = sgemm_space();
  std::printf("tune sgemm_reg1d: %zu configurations, M = N = K = %d, on %s\n", space.configs().size(), n,
              device->name().c_str());
  tune::Report r = tune::tune(
      "sgemm_reg1d", space, [&](const tune::Config& c) { return sgemm_candidate(c, n, n); }, problem, *device, options);
  std::fputs(r.table().c_str(), stdout);
  std::printf("%d measured now, %d from stored results (%s), %d failed; compiles on %d worker(s) took %.0f ms\n",
              r.measured, r.reused, r.store_path.empty() ? "not stored" : r.store_path.c_str(), r.failed,
              r.compile_threads, r.compile_wall_ms);
  if (!csv.empty() && !write_file(csv, r.csv()))
    std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), csv.c_str());
  if (!svg.empty() && !write_file(svg, r.svg_heatmap("BM", "TM")))
    std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), svg.c_str());
  const tune::Result* best = r.best();
  if (!best) {
    std::printf("no configuration was measured\n");
    return 1;
  }
  double gflops = 2.0 * n * n * static_cast<double>(n) / (best->ms * 1e6);
  std::printf("best: %s, %.4f ms, %.1f GFLOP/s\n", tune::to_string(best->config).c_str(), best->ms, gflops);
  return 0;
}

}  // namespace vantage::examples
