// Launch-path benchmarks:
//  - BM_LaunchPrepare: what Vantage adds before the driver call (lookup in the kernel's table,
//    requirements, guards, the argument checks, packing) for a 6-argument kernel that was launched
//    before; no driver call. Goal: at most 150 ns, and no allocation (tests/test_gpu_mock.cpp counts).
//  - BM_LaunchOverhead / BM_RawCuLaunchKernel (GPU only; skipped, with the reason, without one): the
//    same kernel launched through `Kernel::launch` and through a bare `cuLaunchKernel` of the same
//    function with arguments packed beforehand, in the same run, 256 launches per synchronize.
//    Goal: at most 0.3 us more per launch (0.1 us aimed at).
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "backend/driver.h"
#include "backend/gpu.h"
#include "runtime/launch_internal.h"
#include "vantage/vantage.hpp"

namespace {

using namespace vantage;

/// z = a * x + b * y over n elements: 6 arguments (3 scalars, 3 buffers).
Kernel axpby() {
  KernelBuilder k("axpby");
  auto n = k.param<int>("n");
  auto a = k.param<float>("a");
  auto b = k.param<float>("b");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<const float>>("y", extent(n));
  auto z = k.param<GlobalPtr<float>>("z", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        z, thread(1), [&](Expr i) { return gid + i; },
        [&](Scope& g, View z_t) {
          g.group(thread(1), [&](Scope& th) { th.if_(gid < n, [&](Scope&) { z_t[0] = a * x[gid] + b * y[gid]; }); });
        });
  });
  return k.build();
}

void BM_LaunchPrepare(benchmark::State& state) {
  Kernel k = axpby();
  Device d = Device::interpreter();
  const int n = 1 << 16;
  auto x = d.alloc<float>(n), y = d.alloc<float>(n), z = d.alloc<float>(n);
  const auto& cx = x;
  const auto& cy = y;
  const std::array<LaunchArg, 6> args{LaunchArg(n),  LaunchArg(2.0f), LaunchArg(3.0f),
                                      LaunchArg(cx), LaunchArg(cy),   LaunchArg(z)};
  runtime::Prepared p;
  runtime::prepare(k, d, Grid{n / 256, 256}, args, p);  // made once, here
  for (auto _ : state) {
    const runtime::Entry& e = runtime::prepare(k, d, Grid{n / 256, 256}, args, p);
    benchmark::DoNotOptimize(&e);
    benchmark::DoNotOptimize(p.slots.data());
  }
}
BENCHMARK(BM_LaunchPrepare);

constexpr int kBatch = 256;

void BM_LaunchOverhead(benchmark::State& state) {
  if (Device::gpu_count() == 0) return state.SkipWithError(("no GPU: " + Device::gpu_problem()).c_str());
  Kernel k = axpby();
  Device d = Device::gpu(0);
  const int n = 256;
  auto x = d.alloc<float>(n), y = d.alloc<float>(n), z = d.alloc<float>(n);
  const auto& cx = x;
  const auto& cy = y;
  Stream s(d);
  k.launch(s, Grid{1, 256}, n, 2.0f, 3.0f, cx, cy, z);
  s.synchronize();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) k.launch(s, Grid{1, 256}, n, 2.0f, 3.0f, cx, cy, z);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_LaunchOverhead)->UseRealTime();

void BM_RawCuLaunchKernel(benchmark::State& state) {
  if (Device::gpu_count() == 0) return state.SkipWithError(("no GPU: " + Device::gpu_problem()).c_str());
  Kernel k = axpby();
  Device d = Device::gpu(0);
  const int n = 256;
  auto x = d.alloc<float>(n), y = d.alloc<float>(n), z = d.alloc<float>(n);
  const auto& cx = x;
  const auto& cy = y;
  Stream s(d);
  const std::array<LaunchArg, 6> args{LaunchArg(n),  LaunchArg(2.0f), LaunchArg(3.0f),
                                      LaunchArg(cx), LaunchArg(cy),   LaunchArg(z)};
  runtime::Prepared p;
  const runtime::Entry& e = runtime::prepare(k, d, Grid{1, 256}, args, p);  // the same function, packed once
  const driver::Table& drv = driver::table();
  auto fn = static_cast<driver::CUfunction>(e.exec->function);
  auto stream = static_cast<driver::CUstream>(s.native());
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) drv.launch_kernel(fn, 1, 1, 1, 256, 1, 1, 0, stream, p.pointers.data(), nullptr);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_RawCuLaunchKernel)->UseRealTime();

}  // namespace

/// `--dump DIR` writes the axpby kernel's cubin (sm_90), entry name and CUDA source to DIR, for the
/// GPU bundle's peer comparison (CuPy, cuda.core and Numba-CUDA launch the same kernel), then exits.
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--dump") {
    Compiled c = compile(axpby(), Spec{}.with_arch(Arch::SM_90));
    std::string dir = argv[2];
    std::ofstream(dir + "/axpby.cubin", std::ios::binary)
        .write(c.cubin.data(), static_cast<std::streamsize>(c.cubin.size()));
    std::ofstream(dir + "/axpby.entry") << c.spec.entry << "\n";
    std::ofstream(dir + "/axpby.cu") << c.spec.source;
    std::printf("wrote %s/axpby.{cubin,entry,cu} (entry %s)\n", dir.c_str(), c.spec.entry.c_str());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
