// Vantage cost analysis: statements, branches, loops, calls and intrinsics, followed over a warp. See analyzer.h.
#include "jit/cost/analyzer.h"

namespace vantage::cost::detail {

auto Analyzer::step() -> void {
  work_ += weight_;
  if (looping_) looped_ += weight_;
  interval_steps_.back() += weight_;
}

auto Analyzer::exec(const StmtPtr& s, Mask m) -> void {
  if (!s || !(m &= ~frames_.back().returned)) return;
  if (!loops_.empty()) m &= ~loops_.back().off;
  if (!m) return;
  dispatch(*s, [&](const auto& n) { st(n, m); });
}

auto Analyzer::set(const VarNode* v, const Lanes& x, Mask m) -> void {
  seen_.forget();  // (x is never one of its lanes: eval copies them out)
  Lanes& cur = vars_[v];
  if (m == kAll) {  // every lane replaced: known, unknown, uniform and moving as in x
    cur = x;
    return;
  }
  // Lanes outside m keep their values, and their motion must be x's for the two to be one.
  const bool others = (cur.known & ~m) != 0;
  each(m & x.known, [&](int i) { cur.v[i] = x.v[i]; });
  cur.known = (cur.known & ~m) | (x.known & m);
  cur.uniform = false;
  if (!others)
    cur.mo = x.mo;
  else if (x.known & m && !mo_.same(cur.mo, x.mo))
    cur.mo = erratic();
}

auto Analyzer::st(const Let& n, Mask m) -> void {
  step();
  Lanes t;
  set(n.var.get(), eval(n.value, m, t), m);
}

auto Analyzer::st(const Assign& n, Mask m) -> void {
  step();
  Lanes t;
  set(n.var.get(), eval(n.value, m, t), m);
}

auto Analyzer::st(const Store& n, Mask m) -> void {
  step();
  Lanes ti, t;
  const Lanes& idx = eval(n.indices[0], m, ti);
  eval(n.value, m, t);
  if (n.bound) eval(n.bound, m, t);
  access(&n, n.mem.get(), idx, m, true, type_bytes(n.mem->elem), n.loc);
}

auto Analyzer::unsettled(const StmtNode& s, Mask guessed) -> void {
  tally_.inexact();
  const Contents& c = tally_.contents(s);
  taint(s, guessed);
  if (c.jumps && !loop_stmts_.empty()) taint(*loop_stmts_.back(), guessed);
  if (c.returns || (c.jumps && loop_stmts_.empty())) taint(*bodies_.back(), guessed);
}

auto Analyzer::taint(const StmtNode& s, Mask guessed) -> void {
  const Contents& c = tally_.contents(s);
  tally_.taint(s);
  seen_.forget();
  for (const VarNode* v : c.written) {
    auto it = vars_.find(v);
    if (it == vars_.end()) continue;
    it->second.mo = erratic();
    it->second.known &= ~guessed;
    if (guessed) it->second.uniform = false;
  }
}

auto Analyzer::st(const If& n, Mask m) -> void {
  step();
  Lanes t;
  const Lanes& c = eval(n.cond, m, t);
  Mask unknown = m & ~c.known, yes = m & c.known, no = 0;
  each(yes, [&](int i) {
    if (!c.v[i]) no |= Mask{1} << i;
  });
  yes &= ~no;
  const bool variant = !mo_.reps.empty() && !settled(c);
  BranchSite& b = tally_.branch(&n, "if", n.loc);
  b.exec += weight_;
  if (unknown) {
    // A condition on loaded data: both sides are followed for those lanes, and the split is a guess.
    b.inexact = true;
    tally_.inexact();
    yes |= unknown;
    no |= unknown;
  }
  if (yes && no) b.div += weight_;
  if (yes) exec(n.then_body, yes);
  if (no && n.else_body) exec(n.else_body, no);
  if (unknown || variant) unsettled(n, unknown);
}

auto trips_of(__int128 x, __int128 s) -> __int128 {
  if (s > 0 && x > 0) return (x + s - 1) / s;
  if (s < 0 && x < 0) return (-x + (-s) - 1) / (-s);
  return 0;
}

auto Analyzer::trips_settled(const For& n, const Lanes& b, const Lanes& e, const Lanes& s, Mask m) -> bool {
  if (s.mo.kind != Motion::Still) return false;
  const Motion d = mo_.sum(e.mo, b.mo, -1);
  if (d.kind == Motion::Still) return true;
  const Motions::Span sp = mo_.span(d);
  if (!sp.bounded) return false;
  bool ok = true;
  const ScalarType t = n.var->type;
  each(m, [&](int i) {
    const __int128 x = ir::exact(t, e.v[i]) - ir::exact(t, b.v[i]), st = ir::exact(n.step->type, s.v[i]);
    ok = ok && trips_of(x + sp.lo, st) == trips_of(x + sp.hi, st);
  });
  return ok;
}

auto Analyzer::st(const For& n, Mask m) -> void {
  step();
  Lanes b = eval(n.begin, m), e = eval(n.end, m), s = eval(n.step, m);
  BranchSite& br = tally_.branch(&n, "for", n.loc);
  const ScalarType t = n.var->type;
  const Mask known = m & b.known & e.known & s.known;
  const InLoop in_loop(looping_);
  loop_stmts_.push_back(&n);
  loops_.push_back({});
  if (known != m) {  // bounds from loaded data: one iteration, a guess
    br.inexact = true;
    br.exec += weight_;
    Lanes v = b;
    v.known = m & b.known;
    v.uniform = false;
    set(n.var.get(), v, m);
    exec(n.body, m);
    loops_.pop_back();
    loop_stmts_.pop_back();
    unsettled(n, m);
    return;
  }
  const bool variant = !mo_.reps.empty() && !trips_settled(n, b, e, s, m);
  // Trip counts per lane.
  std::array<std::int64_t, kLanes> trips{};
  std::int64_t most = 0, least = INT64_MAX;
  each(m, [&](int i) {
    const __int128 c = trips_of(ir::exact(t, e.v[i]) - ir::exact(t, b.v[i]), ir::exact(n.step->type, s.v[i]));
    trips[i] = c > INT32_MAX ? INT32_MAX : static_cast<std::int64_t>(c);
    most = std::max(most, trips[i]);
    least = std::min(least, trips[i]);
  });
  // The counter moves as the begin does (the step is settled, or nothing is).
  const Motion counter = s.mo.kind == Motion::Still ? b.mo : erratic();
  auto value_at = [&](std::int64_t k, Mask active, const Motion& mo) {
    Lanes v;
    each(active, [&](int i) {
      v.v[i] = wrap(t, ir::exact(t, b.v[i]) + static_cast<__int128>(k) * ir::exact(n.step->type, s.v[i]));
    });
    v.known = active;
    v.mo = mo;
    return v;
  };
  auto active_at = [&](std::int64_t k) {
    Mask a = 0;
    each(m, [&](int i) {
      if (trips[i] > k) a |= Mask{1} << i;
    });
    return a;
  };
  if (most <= opt_.max_iterations || most != least) {
    // Followed iteration by iteration: evaluation k of the condition is made by the lanes still in
    // the loop, and splits the warp when some go on and some leave.
    const std::int64_t limit = 4 * opt_.max_iterations;
    for (std::int64_t k = 0;; ++k) {
      const Mask in = active_at(k - 1) & ~loops_.back().broken & ~frames_.back().returned;
      if (!in) break;
      const Mask go = in & active_at(k);
      br.exec += weight_;
      if (go && go != in) br.div += weight_;
      if (!go) break;
      if (k == limit) {  // a divergent loop longer than that: the rest is not followed
        br.inexact = true;
        unsettled(n, 0);
        forget(tally_.contents(n));
        break;
      }
      loops_.back().off = loops_.back().broken;
      set(n.var.get(), value_at(k, go, counter), go);
      exec(n.body, go);
    }
  } else {
    // Uniform and long: the first iteration, the second standing for all but the first and last
    // (a representative: the counter moves by the step from it), and the last. What the body
    // writes is not followed across the skipped iterations: it is unknown in the last.
    const double saved = weight_;
    br.exec += saved * static_cast<double>(most + 1);
    std::optional<std::int64_t> st;
    if (s.uniform || Motions::uniform_always(s, m)) st = s.v[static_cast<std::size_t>(std::countr_zero(m))];
    for (int p = 0; p < 3; ++p) {
      const Mask a = m & ~loops_.back().broken & ~frames_.back().returned;
      if (a != m) break;  // lanes left it early: which iteration the others stand for is a guess
      loops_.back().off = loops_.back().broken;
      if (p == 1) {
        weight_ = saved * static_cast<double>(most - 2);
        Motion mo = counter;
        const bool tracked = mo_.reps.size() < kFrames && st && counter.kind != Motion::Erratic;
        if (tracked) {
          mo_.reps.push_back({0, most - 3});
          mo = mo_.sum(counter, mo_.frame_slope(mo_.reps.size() - 1, ir::exact(n.step->type, *st)), 1);
        }
        set(n.var.get(), value_at(1, a, mo), a);
        exec(n.body, a);
        if (tracked) mo_.reps.pop_back();
        if (!tracked) unsettled(*n.body, 0);  // nothing says how the iterations it stands for move
        forget(tally_.contents(*n.body));
        weight_ = saved;
      } else {
        set(n.var.get(), value_at(p == 0 ? 0 : most - 1, a, counter), a);
        exec(n.body, a);
      }
    }
    if (m & (loops_.back().broken | frames_.back().returned)) {  // left by a break or a return
      br.inexact = true;
      unsettled(n, 0);
      forget(tally_.contents(n));
    }
  }
  loops_.pop_back();
  loop_stmts_.pop_back();
  if (variant) unsettled(n, 0);
}

auto Analyzer::forget(const Contents& c) -> void {
  seen_.forget();
  for (const VarNode* v : c.written) {
    auto it = vars_.find(v);
    if (it == vars_.end()) continue;
    it->second.known = 0;
    it->second.uniform = false;
    it->second.mo = Motion{};
  }
}

auto Analyzer::st(const While& n, Mask m) -> void {
  step();
  BranchSite& br = tally_.branch(&n, "while", n.loc);
  const InLoop in_loop(looping_);
  loop_stmts_.push_back(&n);
  loops_.push_back({});
  Mask a = m, guessed = 0;
  bool variant = false;
  for (int k = 0; a; ++k) {
    if (k >= 4 * opt_.max_iterations) {  // the rest is not followed
      br.inexact = true;
      unsettled(n, 0);
      forget(tally_.contents(n));
      break;
    }
    Lanes t;
    const Lanes& c = eval(n.cond, a, t);
    br.exec += weight_;
    Mask go = 0;
    each(a & c.known, [&](int i) {
      if (c.v[i]) go |= Mask{1} << i;
    });
    if (a & ~c.known) {  // a condition on loaded data: one more round for those lanes, then out
      br.inexact = true;
      guessed |= a & ~c.known;
      if (k == 0) go |= a & ~c.known;
    } else if (!mo_.reps.empty() && !settled(c)) {
      variant = true;
    }
    if (go && go != a) br.div += weight_;
    a = go & ~loops_.back().broken;
    if (!a) break;
    loops_.back().off = loops_.back().broken;
    exec(n.body, a);
    a &= ~frames_.back().returned;
  }
  loops_.pop_back();
  loop_stmts_.pop_back();
  if (guessed || variant) unsettled(n, guessed);
}

auto Analyzer::st(const Jump& n, Mask m) -> void {
  step();
  if (loops_.empty()) return;
  loops_.back().off |= m;
  if (n.is_break) loops_.back().broken |= m;
}

auto Analyzer::st(const Return& n, Mask m) -> void {
  step();
  Lanes t;
  if (n.value) eval(n.value, m, t);
  frames_.back().returned |= m;
}

auto Analyzer::st(const ir::Barrier& n, Mask) -> void {
  step();
  if (n.how != BarrierKind::Block && n.how != BarrierKind::Cluster) return;
  barriers_ += weight_;
  interval_steps_.push_back(0.0);
}

auto Analyzer::st(const VectorCopy& n, Mask m) -> void {
  step();
  Lanes si = eval(n.src_index, m), di = eval(n.dst_index, m);
  const int bytes = static_cast<int>(n.count * type_bytes(n.src->elem));
  access(&n, n.src.get(), si, m, false, bytes, n.loc, 0);
  access(&n, n.dst.get(), di, m, true, bytes, n.loc, 1);
}

auto Analyzer::st(const Intrinsic& n, Mask m) -> void {
  step();
  if (info(n.op).exchanges_lanes) exchanges_ += weight_;
  std::vector<Lanes> args;
  for (const auto& a : n.args) args.push_back(eval(a, m));
  for (const auto& o : n.outputs) set(o.get(), shuffled(n, args, m), m);
  switch (n.op) {
    case IntrinsicOp::Atomic:  // every atomic but a load writes
      access(&n, n.mems[0].get(), args[0], m, atomic_kind(n.imms[0]) != AtomicKind::Load, type_bytes(n.mems[0]->elem),
             n.loc);
      break;
    case IntrinsicOp::CpAsync: {
      const int bytes = static_cast<int>(n.imms[0]);
      tally_.async_copy(&n);
      access(&n, n.mems[1].get(), args[1], m, false, bytes, n.loc, 0);
      access(&n, n.mems[0].get(), args[0], m, true, bytes, n.loc, 1);
      break;
    }
    default: break;
  }
}

auto shuffled(const Intrinsic& n, const std::vector<Lanes>& a, Mask m) -> Lanes {
  Lanes r;
  if (a.size() < 2 || n.outputs.empty() || !is_integral(n.outputs[0]->type)) return r;
  each(m & a[1].known, [&](int i) {
    std::int64_t src = -1, d = a[1].v[i];
    switch (n.op) {
      case IntrinsicOp::ShflXor: src = i ^ (d & 31); break;
      case IntrinsicOp::ShflDown: src = d >= 0 && d < kLanes && i + d < kLanes ? i + d : i; break;
      case IntrinsicOp::ShflUp: src = d >= 0 && d < kLanes && i - d >= 0 ? i - d : i; break;
      case IntrinsicOp::ShflIdx: src = d & 31; break;
      default: return;
    }
    if ((a[0].known >> src) & 1) {
      r.v[i] = a[0].v[static_cast<std::size_t>(src)];
      r.known |= Mask{1} << i;
    }
  });
  if (a[0].mo.kind == Motion::Still && a[1].mo.kind == Motion::Still) return r;
  r.mo = a[1].mo.kind == Motion::Still && a[0].mo.kind != Motion::Erratic ? a[0].mo
         : Motions::uniform_always(a[0], m)                               ? a[0].mo
                                                                          : erratic();
  return r;
}

auto Analyzer::st(const Call& n, Mask m) -> void {
  step();
  const FunctionNode& f = *n.fn;
  const std::size_t user = n.args.size() - lower::kAbiArgs;
  Frame fr;
  fr.tid = eval(n.args[user].value, m);
  fr.bid = eval(n.args[user + 1].value, m);
  Lanes smem = eval(n.args[user + 2].value, m);
  std::int64_t off = (smem.known & m) ? smem.v[static_cast<std::size_t>(std::countr_zero(m & smem.known))] : -1;
  fr.smem = off >= 0 ? frames_.back().smem + off : frames_.back().smem;
  // Where its shared memory starts is followed as one number: one that moves makes it an estimate.
  if (smem.mo.kind != Motion::Still || !Motions::uniform_always(smem, m)) unsettled(n, 0);
  std::vector<std::pair<const VarNode*, Lanes>> binds;
  for (std::size_t i = 0; i < user && i < f.params.size(); ++i) {
    const auto& a = n.args[i];
    const ParamNode& p = f.params[i];
    if (a.mem) {
      MemRef r = resolve(a.mem.get());
      Lanes o = eval(a.value, m);
      r.offset.known &= o.known & m;
      each(r.offset.known, [&](int k) { r.offset.v[k] += o.v[k]; });
      r.offset.uniform = r.offset.uniform && o.uniform;
      r.offset.mo = mo_.sum(r.offset.mo, o.mo, 1);
      fr.mems[p.mem.get()] = r;
    } else if (p.var) {
      binds.emplace_back(p.var.get(), eval(a.value, m));
    }
  }
  for (const auto& [v, x] : binds) set(v, x, m);
  std::vector<LoopState> saved_loops;
  std::vector<const StmtNode*> saved_loop_stmts;
  std::swap(saved_loops, loops_);
  std::swap(saved_loop_stmts, loop_stmts_);
  seen_.forget();  // another thread and block index, another frame
  frames_.push_back(std::move(fr));
  bodies_.push_back(f.body.get());
  exec(f.body, m);
  bodies_.pop_back();
  frames_.pop_back();
  seen_.forget();
  std::swap(saved_loops, loops_);
  std::swap(saved_loop_stmts, loop_stmts_);
  if (n.result) set(n.result.get(), Lanes{}, m);
}

}  // namespace vantage::cost::detail
