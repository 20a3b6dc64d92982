// Vantage static cost analysis: see cost.h, analyzer.h and docs/report.md. This file: the launch,
// the warps followed, and how values move over the executions they stand for.
#include "jit/cost/analyzer.h"

namespace vantage::cost {
namespace detail {

auto Analyzer::run() -> CostReport {
  auto start = std::chrono::steady_clock::now();
  const std::int64_t B = opt_.blocks;
  // The blocks followed and how many each stands for: all of them when few, else the middle one
  // for every block (`whole_`), or the first, the middle one (a representative of every block but
  // the first and last) and the last.
  struct Followed {
    std::int64_t block;
    double weight;
    bool representative;
  };
  std::vector<Followed> blocks;
  if (B <= opt_.max_blocks) {
    for (std::int64_t b = 0; b < B; ++b) blocks.push_back({b, 1.0, false});
  } else if (whole_) {
    blocks = {{B / 2, static_cast<double>(B), true}};
  } else {
    blocks = {{0, 1.0, false}, {B / 2, static_cast<double>(B - 2), true}, {B - 1, 1.0, false}};
  }
  CostReport r;
  for (const Followed& f : blocks) {
    mo_.reps.clear();
    if (f.representative)
      mo_.reps.push_back(whole_ ? Rep{-f.block, B - 1 - f.block} : Rep{1 - f.block, B - 2 - f.block});
    double block_span = 0;
    std::vector<std::vector<double>> steps;  // per warp, per barrier interval
    for (std::int64_t w = 0; w * kLanes < T_; ++w) {
      interval_steps_.assign(1, 0.0);
      run_warp(f.block, w, f.weight);
      steps.push_back(interval_steps_);
    }
    std::size_t intervals = 0;
    for (const auto& s : steps) intervals = std::max(intervals, s.size());
    for (std::size_t iv = 0; iv < intervals; ++iv) {
      double worst = 0;
      for (const auto& s : steps)
        if (iv < s.size()) worst = std::max(worst, s[iv]);
      block_span += worst;
    }
    r.span = std::max(r.span, block_span / f.weight);
  }
  mo_.reps.clear();
  tally_.unreached();
  r.kernel = l_.kernel.name;
  r.blocks = B;
  r.threads_per_block = T_;
  r.sampled_blocks = static_cast<int>(blocks.size());
  r.exact = tally_.exact();
  r.flops = flops_;
  r.work = work_;
  r.looped = looped_;
  r.exchanges = exchanges_;
  r.barriers = barriers_;
  tally_.fill(r);
  const KernelNode& k = l_.kernel;
  for (std::size_t i = 0; i < l_.user_params && i < k.params.size(); ++i) {
    const ParamNode& p = k.params[i];
    if (!p.mem || p.mem->space != MemSpace::Global) continue;
    BufferUse b;
    b.name = p.name;
    b.bytes = static_cast<double>(lengths_[i]) * type_bytes(p.mem->elem);
    for (const auto& a : r.accesses)
      if (a.memory == p.name && a.space == MemSpace::Global) (a.write ? b.written : b.read) = true;
    r.buffers.push_back(std::move(b));
  }
  r.analysis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

auto Analyzer::run_warp(std::int64_t block, std::int64_t warp, double weight) -> void {
  vars_.clear();
  seen_.forget();
  for (const auto& [v, x] : params_) vars_[v] = Lanes::all(x);
  frames_.clear();
  Frame f;
  Mask m = 0;
  for (int i = 0; i < kLanes; ++i) {
    std::int64_t t = warp * kLanes + i;
    f.tid.v[static_cast<std::size_t>(i)] = t;
    if (t < T_) m |= Mask{1} << i;
  }
  f.tid.known = kAll;
  f.bid = Lanes::all(block);
  if (!mo_.reps.empty()) {  // the middle block: the block index moves by one per block
    f.bid.mo.kind = Motion::Moving;
    f.bid.mo.slope[0] = 1;
  }
  frames_.push_back(std::move(f));
  weight_ = weight;
  loops_.clear();
  loop_stmts_.clear();
  bodies_.assign(1, l_.kernel.body.get());
  exec(l_.kernel.body, m);
}

}  // namespace detail

using detail::Analyzer;

CostReport analyze(const lower::Lowered& lowered, std::span<const std::int64_t> values, const Options& options) {
  if (options.blocks < 1) throw InternalError("cost: a launch has at least one block");
  // Past max_blocks, the middle block is first followed for every block: where the first and last
  // block cost what it does, that is the whole report, in a third of the time. Where it is not all
  // exact and an estimate may come of the edge blocks, they are followed apart instead. Either way
  // every number called exact is (the representative's moves are checked over the blocks it stands
  // for).
  if (options.blocks > options.max_blocks) {
    Analyzer whole(lowered, values, options, true);
    CostReport r = whole.run();
    if (r.exact || !whole.block_sensitive()) return r;
  }
  return Analyzer(lowered, values, options).run();
}

}  // namespace vantage::cost
