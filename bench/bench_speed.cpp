// The GPU speed of Vantage's kernels beside their hand-written twins (bench/twins) and the copy
// bandwidth, in one run. Each benchmark is one row: `speed/<example>/<sizes>` times the example's
// kernel as a user launches it (Kernel launch: argument checks, the variant for the sizes' classes),
// its twin launched raw (cuLaunchKernel) on the same buffers and grid, and, for kernels bound by
// memory, a device-to-device copy of as many bytes as the kernel reads. Every launch is event-timed
// on the default stream after an L2 flush (a memset of twice the L2), the sides interleaved after
// warm-ups; the figures are medians of --reps launches (default 25). Before any timing the kernel's
// result is checked against a reference (sampled for the GEMMs) and equal, bit for bit, to its
// twin's: inputs are small integers (quarters in bf16), so every sum is exact in any order.
//
// Counters: vantage_ms (the median; the benchmark's time), vantage_min_ms, vantage_max_ms, twin_ms,
// speed_of_twin (twin_ms / vantage_ms: 1 is the twin's speed), TFLOPs or GBps, and for kernels bound
// by memory copy_ms and of_copy (the kernel's bandwidth over the copy's). cuBLAS and CUB are timed by
// their own programs in the same GPU check (scripts/gpu/cublas_gemm.py, bench/twins/cub_scan.cu);
// scripts/gpu/speed_table.py sets them all side by side.
//
// Without a GPU every row is skipped, saying why. Other modes, which need no GPU:
//   --prepare DIR   compile every row's twin into DIR (NAME.cubin) and every row's Vantage variant
//                   into the kernel cache (the GPU bundle carries both); exits 1 if one fails.
//   --small         run every row's kernel at a small size on a host device (the CPU backend, else the
//                   interpreter; the wgmma GEMMs on the interpreter) through the same setup and
//                   checks; exits 1 if one is wrong.
//   --twins DIR     where the GPU run finds the twins' cubins (else: NVRTC from the sources).
//   --reps N        timed launches per side (at least 5).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/driver.h"
#include "backend/gpu.h"
#include "bench_stats.hpp"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "kernels/workloads.hpp"
#include "twins/twins.hpp"
#include "vantage/vantage.hpp"

namespace {

using namespace vantage;
using Size = std::map<std::string, std::int64_t>;
using examples::Workload;

struct Options {
  int reps = 25;
  std::string twins_dir;  ///< prepared cubins; empty: compile from VANTAGE_TWINS_DIR
  double budget_s = 0;    ///< rows start only within this many seconds of the program's start (0: all)
  bool no_twin = false;   ///< time no twin (a rerun of a row whose twin failed)
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
} options;

enum class Shape { Gemm, Wgmma, Copy, Transpose, Reduce, Scan, Rows };

/// One row: an example, or a variant of it (another shape of the same kernel, with the example's
/// workload and no twin), at one size.
struct Case {
  std::string example;
  Shape shape;
  Size size;
  std::string variant = {};  // empty: the example itself
  const std::string& name() const { return variant.empty() ? example : variant; }
  /// "sgemm_vec/4096" (M = N = K), "scan_lookback/n=2^28", "transpose/8192x8192", "softmax/8192x8192"
  /// (rows x cols).
  std::string label() const {
    auto pow2 = [](std::int64_t v) {
      int k = 0;
      while ((std::int64_t{1} << k) < v) ++k;
      return (std::int64_t{1} << k) == v && k > 12 ? "2^" + std::to_string(k) : std::to_string(v);
    };
    std::string s = name() + "/";
    if (size.count("K")) {
      const std::int64_t M = size.at("M"), N = size.at("N"), K = size.at("K");
      return s + std::to_string(M) + (M == N && N == K ? "" : "x" + std::to_string(N) + "x" + std::to_string(K));
    }
    if (size.count("M")) return s + std::to_string(size.at("M")) + "x" + std::to_string(size.at("N"));
    if (size.count("rows")) return s + std::to_string(size.at("rows")) + "x" + std::to_string(size.at("cols"));
    return s + "n=" + pow2(size.at("n"));
  }
  /// The twin's cubin file name.
  std::string file() const {
    std::string s = example;
    for (const auto& [k, v] : size) s += "_" + k + std::to_string(v);
    return s + ".cubin";
  }
};

Size square(std::int64_t n) { return {{"M", n}, {"N", n}, {"K", n}}; }

/// Other shapes of an example, timed beside it to choose its default: scan_tiled with more items a
/// thread or other block sizes, the wgmma GEMMs' tiles in groups of rows, sgemm_pipelined in the shape
/// the tuner picked on an H100 and in more slots.
struct Variant {
  std::string name, example;
  Shape shape;
  Size size;
  std::function<Kernel()> build;
  std::function<Grid(const Size&)> grid;
};
const std::vector<Variant>& variants() {
  static const std::vector<Variant> kAll = [] {
    std::vector<Variant> v;
    // 128 x 24 and 256 x 24: the shapes of CUB's own scan of 4-byte values on sm_90 (tuning_scan.cuh),
    // small blocks of many items, which CUB loads through shared memory (warp transposes); and, as
    // CUB's look-back does, a sleep of 650 ns before each poll of a window not yet published.
    for (auto [threads, items, backoff] : {std::tuple{256, 8, 0},
                                           {512, 8, 0},
                                           {768, 8, 0},
                                           {512, 12, 0},
                                           {1024, 12, 0},
                                           {128, 24, 0},
                                           {256, 24, 0},
                                           {128, 16, 0},
                                           {1024, 8, 650},
                                           {128, 24, 650}}) {
      const std::string name = "scan_tiled_t" + std::to_string(threads) + "_i" + std::to_string(items) +
                               (backoff > 0 ? "_sleep" + std::to_string(backoff) : "");
      v.push_back({name,
                   "scan_tiled",
                   Shape::Scan,
                   {{"n", std::int64_t{1} << 28}},
                   [=] { return examples::scan_tiled(threads, items, name, backoff); },
                   [=](const Size& s) {
                     const std::int64_t tile = std::int64_t{threads} * items;
                     return Grid{std::max<std::int64_t>(1, (s.at("n") + tile - 1) / tile), threads};
                   }});
    }
    // The library's scan with the same back-off (lib::DeviceTile::backoff_ns), beside device_scan.
    for (int k : {24, 28})
      v.push_back({"device_scan_sleep650",
                   "device_scan",
                   Shape::Scan,
                   {{"n", std::int64_t{1} << k}},
                   [] {
                     return examples::device_scan(lib::DeviceTile{8, 650}, "device_scan_sleep650");
                   },
                   [](const Size& s) {
                     return Grid{lib::device_blocks(s.at("n"), 1024, lib::DeviceTile{8, 650}), 1024};
                   }});
    // The one-sweep sort (a histogram launch, then one a pass) beside the three-kernel passes.
    for (int k : {24, 26, 28})
      v.push_back({"radix_sort_onesweep",
                   "radix_sort",
                   Shape::Scan,
                   {{"n", std::int64_t{1} << k}, {"shift", 24}},
                   [] { return examples::radix_onesweep_pass(); },
                   [](const Size& s) {
                     return Grid{lib::radix_blocks(s.at("n"), 256), 256};
                   }});
    for (auto [bn, group] : {std::pair{256, 1}, {256, 4}, {256, 8}, {256, 32}}) {
      const std::string name = "gemm_wgmma_bf16" + std::string(bn == 256 ? "_wide" : "") + "_g" + std::to_string(group);
      for (std::int64_t n : {4096, 8192})
        v.push_back({name, bn == 256 ? "gemm_wgmma_bf16_wide" : "gemm_wgmma_bf16", Shape::Wgmma, square(n),
                     [=] { return examples::wgmma_gemm(name, bn, group); },
                     [=](const Size& s) {
                       return Grid{s.at("M") / 128 * (s.at("N") / bn), 384};
                     }});
    }
    // Rung 2 with one step's wgmma group left running as the consumer goes on (wgmma_wait(1)).
    for (std::int64_t n : {4096, 8192})
      v.push_back({"gemm_wgmma_bf16_wide_w1", "gemm_wgmma_bf16_wide", Shape::Wgmma, square(n),
                   [] { return examples::wgmma_gemm("gemm_wgmma_bf16_wide_w1", 256, 16, 1); },
                   [](const Size& s) {
                     return Grid{s.at("M") / 128 * (s.at("N") / 256), 384};
                   }});
    // The int8 GEMM the same way.
    for (std::int64_t n : {4096, 8192})
      v.push_back({"igemm_wgmma_w1", "igemm_wgmma", Shape::Wgmma, square(n),
                   [] { return examples::igemm_wgmma("igemm_wgmma_w1", 1); },
                   [](const Size& s) {
                     return Grid{s.at("M") / 128 * (s.at("N") / 256), 384};
                   }});
    // Rung 2 storing C by TMA (64 x 32 chunks through two swizzled buffers a consumer warpgroup).
    for (int in_flight : {0, 1}) {
      const std::string name = "gemm_wgmma_bf16_wide_tma" + std::string(in_flight ? "_w1" : "");
      for (std::int64_t n : {4096, 8192})
        v.push_back({name, "gemm_wgmma_bf16_wide", Shape::Wgmma, square(n),
                     [=] { return examples::wgmma_gemm(name, 256, 16, in_flight, true); },
                     [](const Size& s) {
                       return Grid{s.at("M") / 128 * (s.at("N") / 256), 384};
                     }});
    }
    // Rung 2 in clusters of two blocks sharing each Bt tile by multicast.
    for (int in_flight : {0, 1}) {
      const std::string name = "gemm_wgmma_bf16_wide_cluster" + std::string(in_flight ? "_w1" : "");
      for (std::int64_t n : {4096, 8192})
        v.push_back({name, "gemm_wgmma_bf16_wide", Shape::Wgmma, square(n),
                     [=] { return examples::wgmma_gemm_cluster(name, 16, in_flight); },
                     [](const Size& s) {
                       return Grid{s.at("M") / 128 * (s.at("N") / 256), 384};
                     }});
    }
    // Rung 3: rung 2 as a persistent kernel, a block an SM (132 on an H100 or H200), alone or in
    // clusters of two blocks sharing each Bt tile (132 is even, as a grid of clusters of two must be).
    for (auto [in_flight, cluster] : {std::pair{0, 1}, {1, 1}, {0, 2}, {1, 2}}) {
      const std::string name = "gemm_wgmma_bf16_persistent" + std::string(cluster > 1 ? "_cluster" : "") +
                               std::string(in_flight ? "_w1" : "");
      for (std::int64_t n : {4096, 8192})
        v.push_back({name, "gemm_wgmma_bf16_wide", Shape::Wgmma, square(n),
                     [=] { return examples::wgmma_gemm_persistent(name, 16, in_flight, cluster); },
                     [](const Size& s) {
                       return Grid{std::min<std::int64_t>(132, s.at("M") / 128 * (s.at("N") / 256)), 384};
                     }});
    }
    // sgemm_pipelined in the tuner's shape; in 3 and 4 slots (2 and 3 tiles in flight); with two
    // blocks of 256 threads an SM (128 registers a thread, no spill) and three of 128 (168); and with
    // lanes of 16 rows (128 sums a thread, as cuBLAS's FFMA kernels: 238 to 255 registers, no spill).
    for (auto [bm, bn, bk, stages, per_sm, tm] : {std::tuple{64, 128, 16, 2, 0, 8},
                                                  {128, 128, 8, 3, 0, 8},
                                                  {128, 128, 8, 4, 0, 8},
                                                  {64, 128, 16, 3, 0, 8},
                                                  {64, 128, 16, 4, 0, 8},
                                                  {128, 128, 8, 2, 2, 8},
                                                  {64, 128, 16, 2, 3, 8},
                                                  {64, 128, 16, 3, 3, 8},
                                                  {128, 128, 8, 2, 0, 16},
                                                  {128, 128, 8, 3, 0, 16},
                                                  {128, 128, 16, 2, 0, 16},
                                                  {128, 256, 8, 2, 0, 16}}) {
      const std::string name = "sgemm_pipelined_" + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                               std::to_string(bk) + (stages > 2 ? "_s" + std::to_string(stages) : "") +
                               (per_sm > 0 ? "_b" + std::to_string(per_sm) : "") +
                               (tm != 8 ? "_t" + std::to_string(tm) : "");
      v.push_back({name, "sgemm_pipelined", Shape::Gemm, square(4096),
                   [=] {
                     examples::PipelinedShape sh{bm, bn, bk, stages, per_sm};
                     sh.tm = tm;
                     return examples::sgemm_pipelined(sh, name);
                   },
                   [=](const Size& s) {
                     const std::int64_t blocks = (s.at("M") + bm - 1) / bm * ((s.at("N") + bn - 1) / bn);
                     return Grid{std::max<std::int64_t>(1, blocks), std::int64_t{bm} / (4 * tm) * (bn / 64) * 32};
                   }});
    }
    return v;
  }();
  return kAll;
}
const Variant* variant_of(const std::string& name) {
  for (const auto& v : variants())
    if (v.name == name) return &v;
  return nullptr;
}

/// The rows at the sizes: GEMMs at 1024, 2048, 4096 (bf16: 4096, 8192); copies, transposes
/// and the stencil at 8192 x 8192 floats; the reduction at 2^26; the scans and the device-wide operations at 2^24 to
/// 2^28.
std::vector<Case> speed_cases() {
  std::vector<Case> c;
  for (const char* ex :
       {"sgemm_smem", "sgemm_reg1d", "sgemm_reg2d", "sgemm_vec", "sgemm_warptile", "sgemm_pipelined", "mma_tf32"})
    for (std::int64_t n : {1024, 2048, 4096}) c.push_back({ex, Shape::Gemm, square(n)});
  for (std::int64_t n : {1024, 2048, 4096}) c.push_back({"igemm_mma", Shape::Gemm, square(n)});  // against cuBLAS int8
  for (const char* ex : {"gemm_wgmma_bf16", "gemm_wgmma_bf16_wide", "igemm_wgmma"})  // igemm: against cuBLAS int8
    for (std::int64_t n : {4096, 8192}) c.push_back({ex, Shape::Wgmma, square(n)});
  c.push_back({"vec_copy", Shape::Copy, {{"n", std::int64_t{1} << 26}}});
  c.push_back({"saxpy_vec", Shape::Copy, {{"n", std::int64_t{1} << 26}}});  // f32x4 vectors
  for (const char* ex : {"transpose", "transpose_padded", "transpose_async", "stencil"})
    c.push_back({ex, Shape::Transpose, {{"M", 8192}, {"N", 8192}}});
  c.push_back({"block_reduce", Shape::Reduce, {{"n", std::int64_t{1} << 26}}});
  // The row softmax over 8192 rows of 8192: a row (32 KiB) read three times, the last two from L2.
  c.push_back({"softmax", Shape::Rows, {{"rows", 8192}, {"cols", 8192}}});
  for (const char* ex : {"scan_lookback", "scan_tiled", "device_scan"})
    for (int k : {24, 26, 28}) c.push_back({ex, Shape::Scan, {{"n", std::int64_t{1} << k}}});
  // The device library's device-wide operations, against CUB's (cub_scan times those too).
  for (const char* ex : {"device_sum", "compact", "byte_histogram"})
    for (int k : {24, 26, 28}) c.push_back({ex, Shape::Scan, {{"n", std::int64_t{1} << k}}});
  // The whole radix sort of (u32, u32) pairs, four passes of three kernels, against CUB's SortPairs.
  for (int k : {24, 26, 28}) c.push_back({"radix_sort", Shape::Scan, {{"n", std::int64_t{1} << k}, {"shift", 24}}});
  for (const auto& v : variants()) c.push_back({v.example, v.shape, v.size, v.name});
  return c;
}

/// The same rows at sizes a host device runs in seconds, some that the tiles do not divide.
std::vector<Case> small_cases() {
  std::vector<Case> c;
  for (const auto& r : speed_cases()) {
    Case s = r;
    switch (r.shape) {
      // One block of the wide tile (two of the narrow; a cluster's two), five K steps through the
      // four slots (of 64 bf16 or 128 i8).
      case Shape::Wgmma:
        s.size = {{"M", r.name().find("cluster") != std::string::npos ? 256 : 128},
                  {"N", 256},
                  {"K", r.example.rfind("igemm", 0) == 0 ? 640 : 320}};
        break;
      case Shape::Gemm: s.size = {{"M", 70}, {"N", 68}, {"K", 36}}; break;
      case Shape::Transpose: s.size = {{"M", 70}, {"N", 45}}; break;
      case Shape::Scan: s.size = {{"n", 5000}}; break;
      case Shape::Rows: s.size = {{"rows", 5}, {"cols", 1000}}; break;
      default: s.size = {{"n", 4099}}; break;
    }
    if (std::none_of(c.begin(), c.end(), [&](const Case& o) { return o.label() == s.label(); })) c.push_back(s);
  }
  return c;
}

const examples::Example& example_of(const std::string& name) {
  for (const auto& e : examples::all())
    if (e.name == name) return e;
  throw std::invalid_argument("no example '" + name + "'");
}

/// Each example (or variant) built once, so that its specializations share one table of loaded code.
const Kernel& kernel_of(const Case& c) {
  static std::map<std::string, Kernel> built;
  auto it = built.find(c.name());
  if (it == built.end()) {
    const Variant* v = variant_of(c.name());
    it = built.emplace(c.name(), v ? v->build() : example_of(c.example).build()).first;
  }
  return it->second;
}
Grid grid_of(const Case& c) {
  const Variant* v = variant_of(c.name());
  return v ? v->grid(c.size) : examples::default_grid(c.example, c.size);
}
/// The twin of a row: the example's, not a variant's.
const twins::Twin* twin_of(const Case& c) {
  return c.variant.empty() && !options.no_twin ? twins::find(c.example) : nullptr;
}

/// Small integers in [-5, 5] as T.
/// A variant with a workload of its own (radix_sort_onesweep) takes it; the others, their example's.
Workload workload(const Case& c, const Device& d) {
  return examples::make_workload(examples::has_workload(c.name()) ? c.name() : c.example, c.size, d);
}

/// The twin's cubin for a row: prepared (--twins DIR), else compiled from its source.
std::vector<char> twin_cubin(const Case& c, const twins::Twin& t) {
  if (!options.twins_dir.empty()) {
    std::ifstream in(options.twins_dir + "/" + c.file(), std::ios::binary);
    if (!in) throw std::runtime_error("no prepared twin " + options.twins_dir + "/" + c.file());
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  }
#ifdef VANTAGE_TWINS_DIR
  return twins::compile_twin(t, c.size, VANTAGE_TWINS_DIR);
#else
  throw std::runtime_error("no twin sources in this build; give --twins DIR");
#endif
}

/// A twin loaded on the GPU, launched raw with the row's arguments packed as CUDA lays them out.
class RawTwin {
 public:
  RawTwin(const std::vector<char>& cubin, const twins::Twin& twin, const std::vector<LaunchArg>& args, Grid grid)
      : grid_(grid), shared_(twin.dynamic_shared) {
    const driver::Table& drv = driver::table();
    const std::string& entry = twin.entry;
    gpu::make_current(0);
    driver::check(drv.module_load_data(&module_, cubin.data()), "cuModuleLoadData", entry);
    driver::check(drv.module_get_function(&function_, module_, entry.c_str()), "cuModuleGetFunction", entry);
    if (shared_ > 48 * 1024)
      driver::check(drv.func_set_attribute(function_, driver::kFuncMaxDynamicShared, static_cast<int>(shared_)),
                    "cuFuncSetAttribute", entry);
    slots_.resize(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
      const LaunchArg& a = args[i];
      auto& slot = slots_[i];
      if (a.is_buffer()) {
        const std::uint64_t p = a.address();
        std::memcpy(slot.data(), &p, 8);
      } else if (a.type() == ScalarType::F32) {
        const float f = static_cast<float>(a.float_value());
        std::memcpy(slot.data(), &f, 4);
      } else if (a.type() == ScalarType::I32) {
        const int v = static_cast<int>(a.int_value());
        std::memcpy(slot.data(), &v, 4);
      } else {
        throw std::invalid_argument("a twin argument of a type the speed bench does not pack");
      }
      pointers_.push_back(slot.data());
    }
    // Its tensor maps, after the arguments, as Vantage's launcher makes a TensorMap's.
    maps_.resize(twin.maps.size());
    for (std::size_t i = 0; i < twin.maps.size(); ++i) {
      const twins::TwinMap& m = twin.maps[i];
      if (!drv.tensor_map_encode_tiled) throw std::runtime_error(entry + ": this driver has no cuTensorMapEncodeTiled");
      const auto rows = static_cast<unsigned long long>(args.at(static_cast<std::size_t>(m.rows)).int_value());
      const auto cols = static_cast<unsigned long long>(args.at(static_cast<std::size_t>(m.cols)).int_value());
      const unsigned long long dims[2] = {cols, rows}, strides[1] = {cols * 2};
      const unsigned box[2] = {static_cast<unsigned>(m.box_cols), static_cast<unsigned>(m.box_rows)}, unit[2] = {1, 1};
      void* base = reinterpret_cast<void*>(args.at(static_cast<std::size_t>(m.buffer)).address());
      driver::check(drv.tensor_map_encode_tiled(maps_[i].bytes, driver::kTensorBfloat16, 2, base, dims, strides, box,
                                                unit, 0, driver::kSwizzle128B, driver::kL2Promotion256B, 0),
                    "cuTensorMapEncodeTiled", entry);
      pointers_.push_back(maps_[i].bytes);
    }
  }
  ~RawTwin() {
    if (module_) driver::table().module_unload(module_);
  }
  RawTwin(const RawTwin&) = delete;
  RawTwin& operator=(const RawTwin&) = delete;
  void launch() {
    driver::check(driver::table().launch_kernel(function_, static_cast<unsigned>(grid_.blocks), 1, 1,
                                                static_cast<unsigned>(grid_.threads), 1, 1,
                                                static_cast<unsigned>(shared_), nullptr, pointers_.data(), nullptr),
                  "cuLaunchKernel", "twin");
  }

 private:
  Grid grid_;
  driver::CUmodule module_ = nullptr;
  driver::CUfunction function_ = nullptr;
  std::vector<std::array<char, 8>> slots_;
  struct alignas(128) MapBytes {  // a CUtensorMap
    unsigned char bytes[128];
  };
  std::vector<MapBytes> maps_;
  std::int64_t shared_ = 0;
  std::vector<void*> pointers_;
};

/// One side of a row: a name and how to launch it once.
struct Side {
  std::string name;
  std::function<void()> launch;
  std::vector<double> ms;
};

void BM_Speed(benchmark::State& state, const Case& c) {
  // Past the budget a row is reported as not run, so that the run ends with every row accounted for
  // (and its JSON written) before a caller's timeout would kill it.
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - options.start).count();
  if (options.budget_s > 0 && elapsed > options.budget_s)
    return state.SkipWithError(
        ("not timed: the --budget of " + std::to_string(static_cast<int>(options.budget_s)) + " s was spent").c_str());
  if (Device::gpu_count() == 0) return state.SkipWithError(("no GPU: " + Device::gpu_problem()).c_str());
  const Device gpu = Device::gpu(0);
  const Kernel& kernel = kernel_of(c);
  const Grid grid = grid_of(c);
  Workload w = workload(c, gpu);
  const Stream stream = Stream::default_for(gpu);
  const driver::Table& drv = driver::table();

  std::vector<Side> sides;
  if (w.run)
    sides.push_back({"vantage", [&] { w.run(stream); }, {}});
  else
    sides.push_back({"vantage", [&] { vantage::launch(kernel, stream, grid, w.args); }, {}});
  std::unique_ptr<RawTwin> twin;
  if (const twins::Twin* t = twin_of(c)) {
    twin = std::make_unique<RawTwin>(twin_cubin(c, *t), *t, w.args, grid);
    sides.push_back({"twin", [&] { twin->launch(); }, {}});
  }
  std::shared_ptr<DeviceBuffer<char>> copy_dst;
  if (w.copy_bytes > 0) {
    copy_dst = std::make_shared<DeviceBuffer<char>>(gpu.alloc<char>(w.copy_bytes));
    const std::uint64_t src = w.args[static_cast<std::size_t>(w.input)].address();
    sides.push_back({"copy",
                     [&, src] {
                       driver::check(
                           drv.memcpy_dtod(copy_dst->view().address(), src, static_cast<std::size_t>(w.copy_bytes)),
                           "cuMemcpyDtoD", "the copy baseline");
                     },
                     {}});
  }

  // Right first: the kernel against the reference, and its twin's output equal to it, bit for bit.
  auto run_once = [&](Side& s) {
    if (w.reset) w.reset();
    s.launch();
    gpu.synchronize();
  };
  run_once(sides[0]);
  if (std::string why = w.check(); !why.empty())
    return state.SkipWithError((c.label() + ": Vantage's result is wrong: " + why).c_str());
  if (twin) {
    const std::vector<char> mine = w.output();
    w.restore();
    run_once(sides[1]);
    if (w.output() != mine) {  // the twin is not the same kernel: it is left out, Vantage's row kept
      std::fprintf(stderr, "%s: the twin's result differs from Vantage's; timed without it\n", c.label().c_str());
      state.counters["twin_differs"] = 1;
      sides.erase(sides.begin() + 1);
      twin.reset();
    }
  }
  // The GEMMs are timed on random inputs, as the vendor baselines are, not on the check's small integers.
  if (w.randomize) w.randomize();

  // The L2 flushed before each launch: a memset of twice its size, queued ahead of the start event.
  const std::int64_t flush_bytes = std::max<std::int64_t>(2 * gpu.properties().l2_bytes, std::int64_t{64} << 20);
  DeviceBuffer<char> flush = gpu.alloc<char>(flush_bytes);
  Event start(gpu), stop(gpu);
  auto timed = [&](Side& s) {
    if (w.reset) w.reset();
    driver::check(drv.memset_d8(flush.view().address(), 0, static_cast<std::size_t>(flush_bytes)), "cuMemsetD8",
                  "the L2 flush");
    start.record(stream);
    s.launch();
    stop.record(stream);
    stop.synchronize();
    return static_cast<double>(stop.elapsed_ms(start));
  };
  for (auto _ : state) {
    for (int r = 0; r < 3; ++r)
      for (auto& s : sides) timed(s);  // warm-ups
    for (int r = 0; r < options.reps; ++r)
      for (auto& s : sides) s.ms.push_back(timed(s));
    state.SetIterationTime(bench::median(sides[0].ms) * 1e-3);
  }
  const double vantage_ms = bench::median(sides[0].ms);
  state.counters["vantage_ms"] = vantage_ms;
  state.counters["vantage_min_ms"] = *std::min_element(sides[0].ms.begin(), sides[0].ms.end());
  state.counters["vantage_max_ms"] = *std::max_element(sides[0].ms.begin(), sides[0].ms.end());
  // Accesses still checked as the variant runs (0: every one proven at these sizes).
  state.counters["checks"] = static_cast<double>(
      specialize_for(kernel, twins::variant_spec(example_of(c.example), c.size, gpu.properties().arch)).checks.size());
  if (w.flops > 0) state.counters["TFLOPs"] = w.flops / (vantage_ms * 1e-3) * 1e-12;
  state.counters["GBps"] = w.bytes / (vantage_ms * 1e-3) * 1e-9;
  for (const auto& s : sides) {
    if (s.name == "twin") {
      state.counters["twin_ms"] = bench::median(s.ms);
      state.counters["speed_of_twin"] = bench::median(s.ms) / vantage_ms;
    } else if (s.name == "copy") {
      const double copy_ms = bench::median(s.ms);
      state.counters["copy_ms"] = copy_ms;
      state.counters["copy_GBps"] = 2.0 * static_cast<double>(w.copy_bytes) / (copy_ms * 1e-3) * 1e-9;
      state.counters["of_copy"] = (w.bytes / vantage_ms) / (2.0 * static_cast<double>(w.copy_bytes) / copy_ms);
    }
  }
  state.SetLabel(c.label());
}

/// --prepare DIR: every row's twin compiled into DIR, every row's Vantage variant into the kernel cache.
int prepare(const std::string& dir) {
  std::filesystem::create_directories(dir);
  int failed = 0;
  for (const auto& c : speed_cases()) {
    try {
      const examples::Example& ex = example_of(c.example);
      auto entry = KernelCache::global().get(kernel_of(c), twins::variant_spec(ex, c.size));
      std::printf("%-28s vantage %7zu B (%s)", c.label().c_str(), entry->cubin.size(), entry->origin.c_str());
      if (const twins::Twin* t = twin_of(c)) {
        const auto cubin = twins::compile_twin(*t, c.size, VANTAGE_TWINS_DIR, ex.arch.value_or(Arch::SM_90));
        std::ofstream(dir + "/" + c.file(), std::ios::binary)
            .write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
        std::printf("  twin %7zu B", cubin.size());
      }
      std::printf("\n");
    } catch (const std::exception& e) {
      std::printf("%-28s FAILED: %s\n", c.label().c_str(), e.what());
      failed = 1;
    }
  }
  return failed;
}

/// --small: every row's kernel at a small size on a host device, through the same setup and checks.
int small() {
  const Device host = Device::cpu_available() ? Device::cpu() : Device::interpreter();
  const Device interpreter = Device::interpreter();
  int failed = 0;
  for (const auto& c : small_cases()) {
    // The CPU backend runs no Hopper instruction: the wgmma GEMMs run on the interpreter.
    const Device& d = c.shape == Shape::Wgmma ? interpreter : host;
    std::string why;
    try {
      Workload w = workload(c, d);
      auto launch = [&] {
        if (w.reset) w.reset();
        if (w.run) {
          w.run(Stream::default_for(d));
          d.synchronize();
        } else {
          vantage::launch(kernel_of(c), d, grid_of(c), w.args);
        }
      };
      launch();
      why = w.check();
      // The GPU's path: the output kept, put back (restore), and written again (there by the twin;
      // softmax had no restore, and its row stopped the GPU run of 2026-11-30 at a bad_function_call).
      if (why.empty()) {
        if (!w.output || !w.restore) throw std::logic_error("the workload has no output or no restore");
        const std::vector<char> first = w.output();
        w.restore();
        if (w.output() == first) throw std::logic_error("restore left the output as the launch wrote it");
        launch();
        if (w.output() != first) why = "a second launch after restore wrote other bytes";
        // The timed launches' random inputs (the GEMMs): they run too, the result unchecked.
        if (why.empty() && w.randomize) {
          w.randomize();
          launch();
          d.synchronize();
        }
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    std::printf("%-28s on %s: %s\n", c.label().c_str(), d.name().c_str(), why.empty() ? "right" : why.c_str());
    failed |= !why.empty();
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest{argv[0]};
  std::string prepare_dir;
  bool run_small = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      const std::string f = flag;
      if (a == f && i + 1 < argc) return std::string(argv[++i]);
      if (a.rfind(f + "=", 0) == 0) return a.substr(f.size() + 1);
      return std::nullopt;
    };
    if (auto v = value("--prepare")) {
      prepare_dir = *v;
    } else if (auto t = value("--twins")) {
      options.twins_dir = *t;
    } else if (auto r = value("--reps")) {
      options.reps = std::max(5, std::atoi(r->c_str()));
    } else if (auto b = value("--budget")) {
      char* end = nullptr;
      options.budget_s = std::strtod(b->c_str(), &end);
      if (b->empty() || *end != '\0' || !(options.budget_s > 0)) {
        std::fprintf(stderr, "vantage_bench_speed: --budget wants a number of seconds above 0, not '%s'\n", b->c_str());
        return 2;
      }
    } else if (a == "--small") {
      run_small = true;
    } else if (a == "--no-twin") {
      options.no_twin = true;
    } else if (a == "--help" || a == "-h") {
      std::puts(
          "usage: vantage_bench_speed [--twins DIR | --no-twin] [--reps N] [--budget SECONDS] [benchmark options]\n"
          "       vantage_bench_speed --prepare DIR | --small\n"
          "Times each example on the GPU beside its hand-written twin and the copy bandwidth (event timing,\n"
          "L2 flushed, medians of N launches, default 25), after checking both results. --prepare compiles\n"
          "the twins into DIR and the examples' variants into the kernel cache (no GPU needed); --small runs\n"
          "every row at a small size on a host device through the same checks. --budget: rows that would\n"
          "start after SECONDS are reported as not timed (the JSON is still written). --no-twin: time no\n"
          "twin (a rerun of a row whose twin failed). Rows:\n"
          "--benchmark_list_tests; a part of them: --benchmark_filter=REGEX.");
      return 0;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (!prepare_dir.empty()) return prepare(prepare_dir);
  if (run_small) return small();
  int n = static_cast<int>(rest.size());
  for (const auto& c : speed_cases())
    benchmark::RegisterBenchmark(("speed/" + c.label()).c_str(), [c](benchmark::State& s) { BM_Speed(s, c); })
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
