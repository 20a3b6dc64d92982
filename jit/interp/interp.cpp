// Vantage reference interpreter: see interp.h. The machine is declared in machine.h; this file runs
// its blocks, threads and statements.
#include "jit/interp/machine.h"

namespace vantage::interp {
namespace detail {

void meet(const ir::Barrier& b, const std::vector<Thread*>& ts, const std::vector<Thread>& threads, Checks& checks,
          std::int64_t T, std::int64_t block) {
  std::vector<bool> here(threads.size(), false);
  for (auto* t : ts) here[static_cast<std::size_t>(t->run)] = true;
  if (b.how == BarrierKind::Cluster) {  // every thread of every block running
    for (const Thread& other : threads)
      if (!here[static_cast<std::size_t>(other.run)] && !other.exited)
        checks.diverged("cluster_sync (over the " + std::to_string(threads.size() / static_cast<std::size_t>(T)) +
                            " blocks of the cluster)",
                        b.loc, other);
    checks.join(ts);
    return;
  }
  // The other barriers are each block's own (the threads of one block, or of each of a cluster's).
  const auto running = static_cast<std::int64_t>(threads.size()) / T;
  for (std::int64_t rank = 0; rank < running; ++rank) {
    std::vector<Thread*> mine;
    if (running > 1)
      for (auto* t : ts)
        if (t->rank == rank) mine.push_back(t);
    const std::vector<Thread*>& in = running > 1 ? mine : ts;
    if (in.empty()) continue;
    if (b.how == BarrierKind::NamedFixed) {
      if (static_cast<std::int64_t>(in.size()) != b.threads)
        throw ExecutionError("synccheck",
                             "named_barrier(" + std::to_string(b.id_base) + ", " + std::to_string(b.threads) + ") at " +
                                 where(b.loc) + " is reached by " + std::to_string(in.size()) + " threads of block " +
                                 std::to_string(block + rank),
                             {b.loc});
      checks.join(in);
      continue;
    }
    std::int64_t unit = b.how == BarrierKind::Block  ? T
                        : b.how == BarrierKind::Warp ? std::min<std::int64_t>(32, T)
                                                     : b.threads;
    std::map<std::int64_t, std::vector<Thread*>> groups;
    for (auto* t : in) groups[t->tid / unit].push_back(t);
    for (auto& [g, members] : groups) {
      for (std::int64_t u = g * unit; u < std::min(T, (g + 1) * unit); ++u) {
        const Thread& other = threads[static_cast<std::size_t>(rank * T + u)];
        if (!here[static_cast<std::size_t>(other.run)] && !other.exited)
          checks.diverged("a barrier over " + std::to_string(unit) + " threads", b.loc, other);
      }
      checks.join(members);
    }
  }
}

auto Machine::run() -> Stats {
  if (collectives_.waits(k_.kernel.body))
    fibers_ = std::make_unique<Fibers>(
        [this](const std::vector<Fibers::Wait>& waits) { return hang(block_, C_, T_, waits); });
  if (blocks_ % C_ != 0)
    throw InternalError("interp: " + std::to_string(blocks_) + " blocks in clusters of " + std::to_string(C_) +
                        " (the launch's guard refuses them)");
  for (std::int64_t b = 0; b < blocks_; b += C_) run_block(b);
  if (opt_.measure) *opt_.measure = measure_.report(k_.kernel.name, blocks_, T_);
  return stats_;
}

void Machine::run_block(std::int64_t b) {
  block_ = b;
  checks_.start_block(b);
  shared_.clear();
  shared_.resize(static_cast<std::size_t>(C_));
  hopper_.start_block(fibers_.get());
  threads_.clear();
  threads_.resize(static_cast<std::size_t>(T_ * C_));
  std::vector<Thread*> all;
  for (std::int64_t r = 0; r < T_ * C_; ++r) {
    Thread& th = threads_[static_cast<std::size_t>(r)];
    th.tid = static_cast<std::int32_t>(r % T_);
    th.rank = static_cast<std::int32_t>(r / T_);
    th.run = static_cast<std::int32_t>(r);
    th.frames.push_back(Frame{th.tid, b + th.rank, 0, false, nullptr, {}});
    all.push_back(&th);
  }
  exec_all(k_.kernel.body, all);
  for (const auto& t : threads_) hopper_.end_thread(t);
  if (C_ > 1 && opt_.checks) hopper_.end_blocks(threads_, T_);
  measure_.flush();
  for (const auto& arrays : shared_) arrays.each([&](const Region& r) { checks_.uninitialised(r); });
  for (auto& t : threads_)
    for (const auto& [m, r] : t.locals) checks_.uninitialised(*r);
}

auto Machine::ordered(std::vector<Thread*> ts) -> std::vector<Thread*> {
  if (opt_.order == Order::Reverse) std::reverse(ts.begin(), ts.end());
  if (opt_.order == Order::Random) std::shuffle(ts.begin(), ts.end(), rng_);
  return ts;
}

void Machine::exec_one(const StmtPtr& s, Thread& t) {
  if (!s || t.stopped()) return;
  if (++stats_.thread_statements > opt_.max_statements)
    throw ExecutionError("limit",
                         "the launch ran more than " + std::to_string(opt_.max_statements) + " thread-statements (" +
                             checks_.describe(t) + " is at " + where(s->loc) +
                             "); a loop that never ends? Raise the interpreter's max_statements for a longer run",
                         {s->loc});
  dispatch(*s, Overloaded{
                   [&](const Seq& n) {
                     for (const auto& c : n.stmts) {
                       if (t.stopped()) return;
                       exec_one(c, t);
                     }
                   },
                   [&](const Let& n) { names_.var(t, n.var.get()) = eval(n.value, t); },
                   [&](const Assign& n) { names_.var(t, n.var.get()) = eval(n.value, t); },
                   [&](const Store& n) {
                     V idx = eval(n.indices[0], t);
                     V v = eval(n.value, t);
                     std::int64_t i = exact_index(n.indices[0]->type, idx.i);
                     Ref r = names_.mem(t, n.mem.get(), n.loc);
                     check_index(t, r, i, n.bound, true, n.loc);
                     write(t, r, i, v, n.loc);
                     measure_.request(t, &n, 0, r, i, type_bytes(n.mem->elem), true, n.loc);
                   },
                   [&](const If& n) {
                     const bool c = eval(n.cond, t).i != 0;
                     measure_.decision(t, &n, "if", n.loc, c);
                     exec_one(c ? n.then_body : n.else_body, t);
                   },
                   [&](const For& n) {
                     Loop lp = start(n, t);
                     measure_.enter(t);
                     bool go = lp.going(names_.var(t, n.var.get()).i);
                     for (std::int64_t k = 0;; ++k) {
                       // Evaluation k of the condition; iteration k runs at the same place.
                       measure_.at(t, k);
                       measure_.decision(t, &n, "for", n.loc, go);
                       if (!go) break;
                       exec_one(n.body, t);
                       if (t.jump && t.take_jump()) break;
                       if (t.stopped()) break;
                       go = lp.advance(names_.var(t, n.var.get()).i);
                     }
                     measure_.leave(t);
                   },
                   [&](const While& n) {
                     measure_.enter(t);
                     for (std::int64_t k = 0; !t.stopped(); ++k) {
                       measure_.at(t, k);
                       const bool go = eval(n.cond, t).i != 0;
                       measure_.decision(t, &n, "while", n.loc, go);
                       if (!go) break;
                       exec_one(n.body, t);
                       if (t.jump && t.take_jump()) break;
                     }
                     measure_.leave(t);
                   },
                   [&](const Jump& n) { t.jump = n.is_break ? 1 : 2; },
                   [&](const SharedAlloc& n) {
                     names_.bind(t, n.mem.get(),
                                 {&shared_[static_cast<std::size_t>(t.rank)].get(n, t.frames.back().smem,
                                                                                 k_.shared_offsets, opt_.checks),
                                  0});
                   },
                   [&](const LocalAlloc& n) {
                     names_.bind(t, n.mem.get(), {&local_region(t, n, opt_.checks), 0});
                   },
                   [&](const Call& n) {
                     std::vector<Thread*> one{&t};
                     call(n, one);
                   },
                   [&](const Intrinsic& n) { intrinsic_one(n, t); },
                   [&](const Unsafe& n) -> void {
                     throw UnsupportedOnDevice("an unsafe block's CUDA text cannot run on the interpreter", {n.loc});
                   },
                   [&](const Return& n) {
                     Frame& f = t.frames.back();
                     if (n.value) f.value = eval(n.value, t);
                     f.returned = true;
                     if (t.frames.size() == 1) t.exited = true;
                   },
                   [&](const VectorCopy& n) {
                     Ref d = names_.mem(t, n.dst.get(), n.loc), s = names_.mem(t, n.src.get(), n.loc);
                     std::int64_t di = exact_index(n.dst_index->type, eval(n.dst_index, t).i);
                     std::int64_t si = exact_index(n.src_index->type, eval(n.src_index, t).i);
                     if ((d.offset + di) % n.count != 0 || (s.offset + si) % n.count != 0)
                       throw ExecutionError("memcheck",
                                            checks_.describe(t) + " makes a misaligned " + std::to_string(n.count) +
                                                "-element vector access at " + where(n.loc),
                                            {n.loc});
                     ++measure_.quiet;  // the loop it stands for is not what the GPU runs: the vector is
                     vector_copy_as_written(n, t, di, si);
                     --measure_.quiet;
                     const int bytes = static_cast<int>(n.count * type_bytes(n.src->elem));
                     measure_.request(t, &n, 0, s, si, bytes, false, n.loc);
                     measure_.request(t, &n, 1, d, di, bytes, true, n.loc);
                   },
                   [&](const ir::Barrier&) { throw InternalError("interp: a barrier outside lockstep"); },
                   [&](const auto& n) -> void {
                     throw InternalError(std::string("interp: ") + name_of(n.kind) + " in lowered IR");
                   },
               });
}

void Machine::vector_copy_as_written(const VectorCopy& n, Thread& t, std::int64_t di, std::int64_t si) {
  const auto* loop = n.written ? as<For>(*n.written) : nullptr;
  const auto* body = loop ? as<Seq>(*loop->body) : nullptr;
  const auto* st = body && body->stmts.size() == 1 ? as<Store>(*body->stmts[0]) : nullptr;
  const auto* ld = st && st->value ? as<Load>(*st->value) : nullptr;
  if (!ld || st->mem.get() != n.dst.get() || ld->mem.get() != n.src.get())
    throw InternalError("interp: the vector copy at " + where(n.loc) + " does not carry the loop it stands for");
  auto rounds = [&](const std::string& how_many) {
    return InternalError("lowering made a vector copy of " + std::to_string(n.count) + " elements at " + where(n.loc) +
                         " of a loop with " + how_many + " rounds");
  };
  Loop lp = start(*loop, t);
  for (std::int64_t k = 0; k < n.count; ++k) {
    V& counter = names_.var(t, loop->var.get());
    if (!lp.going(counter.i)) throw rounds(std::to_string(k));
    std::int64_t dk = exact_index(st->indices[0]->type, eval(st->indices[0], t).i);
    std::int64_t sk = exact_index(ld->indices[0]->type, eval(ld->indices[0], t).i);
    if (dk != di + k || sk != si + k)
      throw InternalError("lowering made a vector copy at " + where(n.loc) + " that is not its loop: round " +
                          std::to_string(k) + " copies '" + n.src->name + "'[" + std::to_string(sk) + "] to '" +
                          n.dst->name + "'[" + std::to_string(dk) + "], the vector '" + n.src->name + "'[" +
                          std::to_string(si + k) + "] to '" + n.dst->name + "'[" + std::to_string(di + k) + "]");
    exec_one(loop->body, t);
    if (!lp.advance(counter.i)) {
      if (k + 1 < n.count) throw rounds(std::to_string(k + 1));
      return;
    }
  }
  if (lp.going(names_.var(t, loop->var.get()).i)) throw rounds("more");
}

auto Machine::start(const For& n, Thread& t) -> Loop {
  Loop lp;
  lp.type = n.var->type;
  V b = eval(n.begin, t), e = eval(n.end, t), s = eval(n.step, t);
  lp.end = e.i;
  __int128 st = ir::exact(lp.type, s.i);
  // A u64 step past INT64_MAX takes the loop past any end in one step, as INT64_MAX does.
  lp.step = static_cast<std::int64_t>(st > INT64_MAX ? INT64_MAX : st);
  names_.var(t, n.var.get()).i = b.i;
  return lp;
}

void Machine::complete_async(Thread& t, std::int64_t group) {
  std::vector<AsyncCopy> left;
  for (auto& c : t.async) {
    bool done = group == INT64_MAX || (c.group >= 0 && c.group < group);
    if (!done) {
      left.push_back(std::move(c));
      continue;
    }
    for (std::size_t k = 0; k < c.values.size(); ++k) {
      std::int64_t i = c.dst.offset + c.index + static_cast<std::int64_t>(k);
      c.dst.region->inflight.erase(i);
      write(t, c.dst, c.index + static_cast<std::int64_t>(k), c.values[k], c.loc);
    }
  }
  t.async = std::move(left);
}

// A template, so that the plain path (every kernel that does not wait) makes no std::function.
template <class F>
void Machine::each_thread(const std::vector<Thread*>& ts, bool may_wait, F&& f) {
  std::vector<Thread*> order = ordered(ts);
  if (!may_wait || order.size() < 2) {
    for (auto* t : order) f(*t);
    return;
  }
  std::vector<std::function<void()>> bodies;
  bodies.reserve(order.size());
  for (Thread* t : order) bodies.push_back([&f, t] { f(*t); });
  fibers_->run_all(std::move(bodies));
}

void Machine::exec_all(const StmtPtr& s, const std::vector<Thread*>& in) {
  if (!s) return;
  std::vector<Thread*> ts;
  for (auto* t : in)
    if (!t->stopped()) ts.push_back(t);
  if (ts.empty()) return;
  if (!collectives_.of(s)) {
    each_thread(ts, fibers_ && collectives_.waits(s), [&](Thread& t) { exec_one(s, t); });
    return;
  }
  if (const auto* seq = as<Seq>(*s)) {
    std::size_t i = 0;
    while (i < seq->stmts.size()) {
      if (collectives_.of(seq->stmts[i])) {
        exec_all(seq->stmts[i++], ts);
        continue;
      }
      std::size_t j = i;
      bool waits = false;  // looked for only in a kernel that waits on mbarriers
      for (; j < seq->stmts.size() && !collectives_.of(seq->stmts[j]); ++j)
        waits = waits || (fibers_ && collectives_.waits(seq->stmts[j]));
      each_thread(ts, waits, [&](Thread& t) {
        for (std::size_t k = i; k < j && !t.stopped(); ++k) exec_one(seq->stmts[k], t);
      });
      i = j;
    }
    return;
  }
  if (const auto* n = as<If>(*s)) {
    std::vector<Thread*> a, b;
    for (auto* t : ts) {
      const bool c = eval(n->cond, *t).i != 0;
      measure_.decision(*t, n, "if", n->loc, c);
      (c ? a : b).push_back(t);
    }
    // In a kernel that waits on mbarriers the two sides run side by side: one may wait for the other.
    if (fibers_ && !a.empty() && !b.empty() && (collectives_.waits(n->then_body) || collectives_.waits(n->else_body))) {
      fibers_->run_all({[&] { exec_all(n->then_body, a); }, [&] { exec_all(n->else_body, b); }});
      return;
    }
    exec_all(n->then_body, a);
    exec_all(n->else_body, b);
    return;
  }
  if (const auto* n = as<For>(*s)) {
    std::vector<std::pair<Thread*, Loop>> loops;
    for (auto* t : ts) {
      loops.emplace_back(t, start(*n, *t));
      measure_.enter(*t);
    }
    std::vector<char> in(loops.size(), 1);  // still evaluating the condition
    for (std::int64_t k = 0;; ++k) {
      std::vector<Thread*> act;
      for (std::size_t i = 0; i < loops.size(); ++i) {
        auto& [t, lp] = loops[i];
        if (!in[i] || t->stopped()) continue;
        const bool go = lp.going(names_.var(*t, n->var.get()).i);
        measure_.at(*t, k);
        measure_.decision(*t, n, "for", n->loc, go);
        if (go)
          act.push_back(t);
        else
          in[i] = 0;
      }
      if (act.empty()) break;
      exec_all(n->body, act);
      no_jump(act, n->loc);
      for (auto& [t, lp] : loops)
        if (std::find(act.begin(), act.end(), t) != act.end() && !lp.advance(names_.var(*t, n->var.get()).i))
          lp.step = 0;  // this thread's loop is over: a zero step never goes on
    }
    for (auto* t : ts) measure_.leave(*t);
    return;
  }
  if (const auto* n = as<While>(*s)) {
    for (auto* t : ts) measure_.enter(*t);
    std::vector<Thread*> act = ts;
    for (std::int64_t k = 0;; ++k) {
      std::vector<Thread*> go;
      for (auto* t : act) {
        if (t->stopped()) continue;
        measure_.at(*t, k);
        const bool c = eval(n->cond, *t).i != 0;
        measure_.decision(*t, n, "while", n->loc, c);
        if (c) go.push_back(t);
      }
      if (go.empty()) break;
      exec_all(n->body, go);
      no_jump(go, n->loc);
      act = std::move(go);
    }
    for (auto* t : ts) measure_.leave(*t);
    return;
  }
  if (const auto* n = as<ir::Barrier>(*s)) return barrier(*n, ts);
  if (const auto* n = as<Call>(*s)) return call(*n, ts);
  if (const auto* n = as<Intrinsic>(*s)) return warp_op(*n, ts);
  throw InternalError(std::string("interp: a collective ") + name_of(s->kind));
}

void Machine::no_jump(const std::vector<Thread*>& ts, SourceLoc l) {
  for (const auto* t : ts)
    if (t->jump) throw InternalError("interp: a break or continue in a loop with collectives at " + l.str());
}

auto Machine::live() -> std::vector<Thread*> {
  std::vector<Thread*> r;
  for (auto& t : threads_)
    if (!t.exited) r.push_back(&t);
  return r;
}

void Machine::barrier(const ir::Barrier& b, const std::vector<Thread*>& ts) {
  ++stats_.thread_statements;
  // cp.async.wait_all or wait_group n first: every copy of every arriving thread is complete, or
  // every group but its newest n.
  if (b.async_wait != ir::kNoAsyncWait)
    for (auto* t : ts) complete_async(*t, b.async_wait == ir::kAsyncWaitAll ? INT64_MAX : t->groups - b.async_wait);
  meet(b, ts, threads_, checks_, T_, block_);
}

void Machine::call(const Call& n, const std::vector<Thread*>& ts) {
  const FunctionNode& f = *n.fn;
  std::size_t user = n.args.size() - lower::kAbiArgs;
  for (auto* t : ts) {
    Frame fr;
    fr.tid = eval(n.args[user].value, *t).i;
    fr.bid = eval(n.args[user + 1].value, *t).i;
    std::int64_t smem = eval(n.args[user + 2].value, *t).i;
    fr.smem = t->frames.back().smem + std::max<std::int64_t>(smem, 0);
    fr.result = n.result;
    for (std::size_t i = 0; i < user && i < f.params.size(); ++i) {
      const auto& a = n.args[i];
      const ParamNode& p = f.params[i];
      if (a.mem) {
        Ref r = names_.mem(*t, a.mem.get(), n.loc);
        r.offset += exact_index(a.value->type, eval(a.value, *t).i);
        names_.bind(*t, p.mem.get(), r);
      } else {
        names_.var(*t, p.var.get()) = eval(a.value, *t);
      }
    }
    t->frames.push_back(fr);
    measure_.enter(*t);
    measure_.at(*t, reinterpret_cast<std::intptr_t>(&n));  // a device function's accesses, per call
  }
  exec_all(f.body, ts);
  for (auto* t : ts) {
    measure_.leave(*t);
    Frame fr = t->frames.back();
    t->frames.pop_back();
    if (fr.result) names_.var(*t, fr.result.get()) = fr.value;
  }
}

}  // namespace detail

Stats run(const lower::Lowered& kernel, std::int64_t blocks, const std::vector<Arg>& args, const Options& options) {
  return detail::Machine(kernel, blocks, args, options).run();
}

}  // namespace vantage::interp
