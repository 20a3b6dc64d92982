// Lowering, barrier placement and the reference interpreter:
//  - BM_SyncNestedLoops/D: the sync pass (jit/sync) on a block whose shared-memory exchange sits in
//    D nested loops (D = 1..7). Each level stores through a partition and reads a neighbour's element,
//    so every level needs its barriers and the loop fixed points nest. Goal: depth 7 under 10 ms,
//    and growth polynomial in D (the fixed point is memoised per input state).
//  - BM_LowerSgemm: specialization and lowering of the shared-memory sgemm, beside BM_FrontendSgemm
//    in bench_compile (which adds the checker and the CUDA printer).
//  - BM_SharesEveryExample: the search for written partitions whose shares meet (V1011) over every
//    example, beside BM_LowerEveryExample, the whole specialization and lowering it is part of.
//  - BM_InterpBlockReduce, BM_InterpSgemmSmem: the interpreter with every check on; the counter
//    `stmts/s` is thread-statements per second.
//  - BM_InterpWgmmaGemm: the bf16 wgmma GEMM launched on the interpreter (TMA loads, mbarriers, wgmma
//    emulated, every check on), as `vantage run` launches it.
#include <benchmark/benchmark.h>

#include "jit/interp/interp.h"
#include "jit/pipeline/handles.h"
#include "jit/pipeline/pipeline.h"
#include "jit/specialize/specialize.h"
#include "jit/sync/sync.h"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "kernels/workloads.hpp"

namespace {

using namespace vantage;

/// A block of 128 threads; D nested loops, each level writing its own partition of a shared array
/// (shifted by the loop level) and reading the element the next thread wrote.
Kernel nested_exchange(int depth) {
  KernelBuilder k("nested_exchange");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(128);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * 128 + i; },
        [&](Scope& g, View out_b) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<int>("s", 128);
            auto t = b.let("t", b.id(thread(1)));
            std::function<void(Scope&, int)> level = [&](Scope& b, int d) {
              b.for_("i" + std::to_string(d), 0, 3, [&](Scope& b, Expr i) {
                b.partition(
                    s, thread(1), [&](Expr x) { return (t + d) % 128 + x; },
                    [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = t + i; }); });
                if (d + 1 < depth) level(b, d + 1);
                b.partition(
                    out_b, thread(1), [&](Expr x) { return t + x; },
                    [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[(t + 1) % 128] + i; }); });
              });
            };
            level(b, 0);
          });
        });
  });
  return k.build();
}

void BM_SyncNestedLoops(benchmark::State& state) {
  Kernel k = nested_exchange(static_cast<int>(state.range(0)));
  auto s = specialization::run(detail::KernelAccess::ir(k), k.obligations(), Spec{});
  for (auto _ : state) {
    std::vector<const ir::StmtNode*> conflicts;
    ir::StmtPtr body = sync::insert(s.kernel->body, grid(1), &conflicts);
    benchmark::DoNotOptimize(body.get());
  }
  state.counters["barrier_sites"] = static_cast<double>(sync::plan(s.kernel->body, grid(1)).before.size());
}
BENCHMARK(BM_SyncNestedLoops)->DenseRange(1, 7)->Unit(benchmark::kMicrosecond);

void BM_LowerSgemm(benchmark::State& state) {
  Kernel k = examples::sgemm_smem();
  for (auto _ : state) {
    auto l = pipeline::lower_for(k, Spec{});
    benchmark::DoNotOptimize(l.lowered.kernel.body.get());
  }
}
BENCHMARK(BM_LowerSgemm)->Unit(benchmark::kMicrosecond);

/// Every example, specialized at its default Spec (threads from the kernel).
std::vector<std::pair<std::shared_ptr<const ir::KernelNode>, std::int64_t>> specialized_examples() {
  std::vector<std::pair<std::shared_ptr<const ir::KernelNode>, std::int64_t>> out;
  for (const auto& e : examples::all()) {
    Kernel k = e.build();
    auto s = specialization::run(detail::KernelAccess::ir(k), k.obligations(), e.spec());
    out.emplace_back(s.kernel, s.threads);
  }
  return out;
}

// The search for partitions whose shares meet (jit/sync/shares.cpp, V1011) over every example,
// beside BM_LowerEveryExample, the whole lowering it is part of.
void BM_SharesEveryExample(benchmark::State& state) {
  auto kernels = specialized_examples();
  std::size_t found = 0;
  for (auto _ : state)
    for (const auto& [k, threads] : kernels) found += sync::overlapping_shares(k->body, grid(1), threads).size();
  state.counters["examples"] = static_cast<double>(kernels.size());
  state.counters["found"] = static_cast<double>(found);
}
BENCHMARK(BM_SharesEveryExample)->Unit(benchmark::kMillisecond);

void BM_LowerEveryExample(benchmark::State& state) {
  std::vector<std::pair<Kernel, Spec>> kernels;
  for (const auto& e : examples::all()) kernels.emplace_back(e.build(), e.spec());
  for (auto _ : state)
    for (const auto& [k, spec] : kernels) benchmark::DoNotOptimize(pipeline::lower_for(k, spec).lowered.barriers);
  state.counters["examples"] = static_cast<double>(kernels.size());
}
BENCHMARK(BM_LowerEveryExample)->Unit(benchmark::kMillisecond);

using interp::Arg;

void run_interp(benchmark::State& state, const lower::Lowered& l, std::int64_t blocks,
                const std::vector<interp::Arg>& args) {
  std::int64_t stmts = 0;
  for (auto _ : state) stmts += interp::run(l, blocks, args, {}).thread_statements;
  state.counters["stmts/s"] = benchmark::Counter(static_cast<double>(stmts), benchmark::Counter::kIsRate);
}

void BM_InterpBlockReduce(benchmark::State& state) {
  auto l = pipeline::lower_for(examples::block_reduce(), Spec{}).lowered;
  std::vector<float> x(1024, 1.0f), out(4, 0.0f);
  run_interp(state, l, 4, {Arg::integer(1024), Arg::buffer(x.data(), 1024), Arg::buffer(out.data(), 4)});
}
BENCHMARK(BM_InterpBlockReduce)->Unit(benchmark::kMillisecond);

void BM_InterpSgemmSmem(benchmark::State& state) {
  auto l = pipeline::lower_for(examples::sgemm_smem(), Spec{}).lowered;
  const int n = 64;
  std::vector<float> A(n * n, 1.0f), B(n * n, 0.5f), C(n * n, 0.0f);
  run_interp(state, l, 4,
             {Arg::integer(n), Arg::integer(n), Arg::integer(n), Arg::real(1.0), Arg::real(0.0),
              Arg::buffer(A.data(), n * n), Arg::buffer(B.data(), n * n), Arg::buffer(C.data(), n * n)});
}
BENCHMARK(BM_InterpSgemmSmem)->Unit(benchmark::kMillisecond);

void BM_InterpWgmmaGemm(benchmark::State& state) {
  const std::map<std::string, std::int64_t> size{{"M", 128}, {"N", 256}, {"K", 128}};
  const Device d = Device::interpreter();
  const Kernel k = examples::gemm_wgmma_bf16();
  auto w = examples::make_workload("gemm_wgmma_bf16", size, d);
  const Grid grid = examples::default_grid("gemm_wgmma_bf16", size);
  vantage::launch(k, d, grid, w.args);  // specialized, checked and lowered once, before the loop
  for (auto _ : state) {
    if (w.reset) w.reset();
    vantage::launch(k, d, grid, w.args);
  }
  if (auto wrong = w.check(); !wrong.empty()) state.SkipWithError(wrong.c_str());
}
BENCHMARK(BM_InterpWgmmaGemm)->Unit(benchmark::kMillisecond)->UseRealTime();  // the launch runs on the stream's thread

}  // namespace

BENCHMARK_MAIN();
