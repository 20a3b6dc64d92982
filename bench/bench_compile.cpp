// Compile-path benchmarks, each beside its baseline in the same run:
//  - BM_FrontendSgemm (build, check, specialize, sync, emit) against BM_NvrtcSgemm (NVRTC alone on
//    the same source): the frontend should cost at most 1% of NVRTC.
//  - BM_CompileSaxpy (everything, cold: nothing is cached) against BM_NvrtcSaxpy (NVRTC alone on the
//    same source): within 5%.
//  - BM_ParallelCompile16 (16 configurations on 2 threads) against BM_SequentialCompile16.
//  - BM_NvrtcLongLoop (a constant loop of 64, 1024, 8192 trips of strided loads, NVRTC on the
//    generated source) beside BM_NvrtcSgemm: the unroll policy keeps NVRTC's time flat in the trip
//    count. BM_NvrtcLongLoopFullyUnrolled is the 1024-trip source with the full `#pragma unroll` the
//    old policy put on every constant loop, BM_NvrtcConstantLoopNoPragma an 8192-trip loop NVRTC can
//    evaluate away, left to NVRTC's own heuristics (BM_NvrtcConstantLoop: with the policy's factor):
//    what the policy saves, measured in the same run.
#include <benchmark/benchmark.h>

#include "jit/nvrtc/nvrtc.h"
#include "kernels/paper_kernels.hpp"

namespace {

using namespace vantage;

void BM_FrontendSgemm(benchmark::State& state) {
  for (auto _ : state) {
    Specialized s = specialize_for(examples::sgemm_smem(), Spec{});
    benchmark::DoNotOptimize(s.source.data());
  }
}
BENCHMARK(BM_FrontendSgemm)->Unit(benchmark::kMicrosecond);

void nvrtc_alone(benchmark::State& state, const Kernel& k) {
  if (!nvrtc_available()) return state.SkipWithError("NVRTC not available");
  Specialized s = specialize_for(k, Spec{});
  for (auto _ : state) {
    auto r = nvrtc::compile(s.source, s.entry + ".cu", nvrtc::canonical_options(Arch::SM_90, Output::Cubin));
    benchmark::DoNotOptimize(r.cubin.data());
  }
}
void BM_NvrtcSgemm(benchmark::State& state) { nvrtc_alone(state, examples::sgemm_smem()); }
BENCHMARK(BM_NvrtcSgemm)->Unit(benchmark::kMillisecond);

/// Each thread sums `trips` strided loads (a constant loop), or, `foldable`, a loop of arithmetic on
/// constants alone that the compiler can evaluate away.
Kernel long_loop(int trips, bool foldable) {
  KernelBuilder k(foldable ? "constant_loop" : "long_loop");
  auto x = k.param<GlobalPtr<const float>>("x");
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            auto acc = th.let("acc", 0.0f);
            th.for_("i", 0, trips, [&](Scope& th, Expr i) {
              if (foldable)
                th.assign(acc, acc * 0.5f + cast<float>(i));
              else
                th.assign(acc, acc + x[i * 33 + t] * 0.5f);
            });
            o[0] = acc;
          });
        });
  });
  return k.build();
}

void nvrtc_source(benchmark::State& state, const std::string& source, const std::string& name) {
  if (!nvrtc_available()) return state.SkipWithError("NVRTC not available");
  auto options = nvrtc::canonical_options(Arch::SM_90, Output::Cubin);
  for (auto _ : state) {
    auto r = nvrtc::compile(source, name + ".cu", options);
    benchmark::DoNotOptimize(r.cubin.data());
  }
}

void BM_NvrtcLongLoop(benchmark::State& state) {
  Specialized s = specialize_for(long_loop(static_cast<int>(state.range(0)), false), Spec{});
  nvrtc_source(state, s.source, s.entry);
}
BENCHMARK(BM_NvrtcLongLoop)->Arg(64)->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond);

void BM_NvrtcConstantLoop(benchmark::State& state) {
  Specialized s = specialize_for(long_loop(static_cast<int>(state.range(0)), true), Spec{});
  nvrtc_source(state, s.source, s.entry);
}
BENCHMARK(BM_NvrtcConstantLoop)->Arg(8192)->Unit(benchmark::kMillisecond);

/// The generated source with the policy's `#pragma unroll 4` replaced by `pragma` (the old policy's
/// full unroll, or nothing: NVRTC's own heuristics); "" when the pragma is not there.
std::string with_pragma(std::string source, const std::string& pragma) {
  const std::string policy = "#pragma unroll 4\n";
  auto at = source.find(policy);
  if (at == std::string::npos) return "";
  return source.replace(at, policy.size(), pragma);
}

/// NVRTC on the generated loop with the policy's pragma replaced by `pragma`.
void nvrtc_with_pragma(benchmark::State& state, bool foldable, const char* pragma) {
  Specialized s = specialize_for(long_loop(static_cast<int>(state.range(0)), foldable), Spec{});
  std::string source = with_pragma(s.source, pragma);
  if (source.empty()) return state.SkipWithError("the policy's pragma is not in the source");
  nvrtc_source(state, source, s.entry);
}
void BM_NvrtcLongLoopFullyUnrolled(benchmark::State& state) { nvrtc_with_pragma(state, false, "#pragma unroll\n"); }
BENCHMARK(BM_NvrtcLongLoopFullyUnrolled)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_NvrtcConstantLoopNoPragma(benchmark::State& state) { nvrtc_with_pragma(state, true, ""); }
BENCHMARK(BM_NvrtcConstantLoopNoPragma)->Arg(8192)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_CompileSaxpy(benchmark::State& state) {
  if (!nvrtc_available()) return state.SkipWithError("NVRTC not available");
  for (auto _ : state) {
    Compiled c = compile(examples::saxpy(), Spec{});
    benchmark::DoNotOptimize(c.cubin.data());
  }
}
BENCHMARK(BM_CompileSaxpy)->Unit(benchmark::kMillisecond);

void BM_NvrtcSaxpy(benchmark::State& state) { nvrtc_alone(state, examples::saxpy()); }
BENCHMARK(BM_NvrtcSaxpy)->Unit(benchmark::kMillisecond);

/// 16 configurations an autotuner would sweep: the shared-memory sgemm at tiles 4, 8, 16, 32
/// (16 to 1024 threads), each for sm_80, sm_86, sm_89 and sm_90.
std::vector<CompileJob> sixteen() {
  std::vector<CompileJob> jobs;
  for (int tile : {4, 8, 16, 32})
    for (Arch arch : {Arch::SM_80, Arch::SM_86, Arch::SM_89, Arch::SM_90})
      jobs.push_back({examples::sgemm_smem(tile), Spec{}.with_arch(arch)});
  return jobs;
}

void compile16(benchmark::State& state, int threads) {
  if (!nvrtc_available()) return state.SkipWithError("NVRTC not available");
  auto jobs = sixteen();
  for (auto _ : state) {
    auto results = compile_many(jobs, threads);
    for (const auto& r : results)
      if (!r.compiled) state.SkipWithError(r.error.c_str());
    benchmark::DoNotOptimize(results.data());
  }
}
void BM_SequentialCompile16(benchmark::State& state) { compile16(state, 1); }
void BM_ParallelCompile16(benchmark::State& state) { compile16(state, 2); }
BENCHMARK(BM_SequentialCompile16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ParallelCompile16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
