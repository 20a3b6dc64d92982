// Vantage CPU code generator: memory references and their checks, loads and stores, statements, loops, calls and
// the block, warp and thread contexts. See gen.h.
#include "jit/cpu/gen.h"

namespace vantage::cpu::detail {

auto Gen::load(const Load& n) -> Value* {
  const MemRef& r = memref(n.mem.get(), n.loc);
  const ExprPtr& index = n.indices[0];
  Value* raw = expr(index);
  Value* local = i64(raw, index->type);
  Value* narrow = index->type == ScalarType::I32 ? raw : nullptr;
  llvm::Type* et = memtype(r.elem);
  auto clamp = r.space == MemSpace::Local || !r.bound ? std::nullopt : clamp_of(index);
  Value* vu = clamp ? clamp_value(r, *clamp, index->type) : nullptr;
  auto read = [&]() -> Value* {
    return clamp ? clamped_load(r, *clamp, index->type, vu) : b_.CreateLoad(et, address(r, offset(r, local)));
  };
  if (!n.bound) return from_mem(read(), r.elem);
  Value* bound = expr(n.bound);
  auto* slot = entry_alloca(et, "checked_load");
  b_.CreateStore(llvm::Constant::getNullValue(et), slot);
  checked(
      local, bound, n.site, [&] { b_.CreateStore(read(), slot); }, narrow, lane_invariant(n.bound), index);
  return from_mem(b_.CreateLoad(et, slot), r.elem);
}

auto Gen::store(const Store& n) -> void {
  const MemRef& r = memref(n.mem.get(), n.loc);
  Value* raw = expr(n.indices[0]);
  Value* local = i64(raw, n.indices[0]->type);
  Value* v = to_mem(expr(n.value), r.elem);
  if (!n.bound) {
    b_.CreateStore(v, address(r, offset(r, local)));
    return;
  }
  checked(
      local, expr(n.bound), n.site, [&] { b_.CreateStore(v, address(r, offset(r, local))); },
      n.indices[0]->type == ScalarType::I32 ? raw : nullptr, lane_invariant(n.bound), n.indices[0]);
}

auto Gen::thread_stmt(const StmtPtr& s) -> void {
  if (!s) return;
  dispatch(*s, Overloaded{
                   [&](const Seq& n) {
                     for (const auto& c : n.stmts) thread_stmt(c);
                   },
                   [&](const Let& n) { write_var(n.var, expr(n.value), n.value); },
                   [&](const Assign& n) { write_var(n.var, expr(n.value), nullptr); },
                   [&](const Store& n) { store(n); },
                   [&](const If& n) {
                     Value* c = expr(n.cond);
                     auto* t = BasicBlock::Create(ctx_, "if.then", fn_);
                     auto* e = BasicBlock::Create(ctx_, "if.else", fn_);
                     auto* j = BasicBlock::Create(ctx_, "if.join", fn_);
                     b_.CreateCondBr(c, t, e);
                     b_.SetInsertPoint(t);
                     thread_stmt(n.then_body);
                     b_.CreateBr(j);
                     b_.SetInsertPoint(e);
                     thread_stmt(n.else_body);
                     b_.CreateBr(j);
                     b_.SetInsertPoint(j);
                   },
                   [&](const For& n) { for_loop(n, [&] { thread_stmt(n.body); }); },
                   [&](const While& n) {
                     auto* head = BasicBlock::Create(ctx_, "while.head", fn_);
                     auto* body = BasicBlock::Create(ctx_, "while.body", fn_);
                     auto* done = BasicBlock::Create(ctx_, "while.done", fn_);
                     b_.CreateBr(head);
                     b_.SetInsertPoint(head);
                     b_.CreateCondBr(expr(n.cond), body, done);
                     b_.SetInsertPoint(body);
                     jumps_.push_back({head, done});
                     thread_stmt(n.body);
                     jumps_.pop_back();
                     b_.CreateBr(head);
                     b_.SetInsertPoint(done);
                   },
                   [&](const Jump& n) {
                     // Thread(1) code only (V0212), so the loop is this thread's own: a plain branch.
                     if (jumps_.empty()) throw InternalError("cpu: a break or continue outside a loop");
                     b_.CreateBr(n.is_break ? jumps_.back().exit : jumps_.back().next);
                     b_.SetInsertPoint(BasicBlock::Create(ctx_, n.is_break ? "after.break" : "after.continue", fn_));
                   },
                   [&](const SharedAlloc& n) { shared_alloc(n); },
                   [&](const LocalAlloc& n) { local_alloc(n); },
                   [&](const Call& n) { call(n, true); },
                   [&](const Intrinsic& n) { thread_intrinsic(n); },
                   [&](const VectorCopy& n) { vector_copy(n); },
                   [&](const ir::Barrier&) { throw InternalError("cpu: a barrier inside a thread loop"); },
                   [&](const Unsafe& n) -> void { unsupported("an unsafe block's CUDA text", n.loc); },
                   [&](const Return& n) { ret(n); },
                   [&](const auto& n) -> void {
                     throw InternalError(std::string("cpu: ") + name_of(n.kind) + " in lowered IR");
                   },
               });
}

auto Gen::ret(const Return& n) -> void {
  Frame& f = *frame_;
  if (f.exit) {
    if (n.value) b_.CreateStore(expr(n.value), f.ret_slot);
    b_.CreateBr(f.exit);
  } else if (!f.parent && exited_ && lane_cont_) {
    b_.CreateStore(b_.getInt8(1), b_.CreateInBoundsGEP(b_.getInt8Ty(), exited_, tid_));
    b_.CreateBr(lane_cont_);
  } else {
    unsupported("a return here", n.loc);
  }
  b_.SetInsertPoint(BasicBlock::Create(ctx_, "after.return", fn_));
}

auto Gen::for_loop(const For& n, const std::function<void()>& body) -> void {
  Value* begin = expr(n.begin);
  Value* end = expr(n.end);
  Value* step = expr(n.step);
  ScalarType t = n.var->type;
  bool sgn = !unsigned_type(t);
  Storage& s = define(n.var, nullptr);
  auto set = [&](Value* v) {
    if (s.kind == Storage::Array)
      b_.CreateStore(v, b_.CreateInBoundsGEP(type(t), s.ptr, tid_));
    else
      b_.CreateStore(v, s.ptr);
  };
  auto get = [&]() -> Value* {
    if (s.kind == Storage::Array) return b_.CreateLoad(type(t), b_.CreateInBoundsGEP(type(t), s.ptr, tid_));
    return b_.CreateLoad(type(t), s.ptr);
  };
  set(begin);
  auto* head = BasicBlock::Create(ctx_, n.var->name + ".head", fn_);
  auto* in = BasicBlock::Create(ctx_, n.var->name + ".body", fn_);
  auto* latch = BasicBlock::Create(ctx_, n.var->name + ".next", fn_);
  auto* done = BasicBlock::Create(ctx_, n.var->name + ".done", fn_);
  auto* ty = type(t);
  auto zero = llvm::ConstantInt::get(ty, 0);
  auto k = const_int(n.step);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  Value* v = get();
  Value* going;
  bool up = k ? *k > 0 : false;
  if (k && *k > 0)
    going = sgn ? b_.CreateICmpSLT(v, end) : b_.CreateICmpULT(v, end);
  else if (k && *k < 0)
    going = sgn ? b_.CreateICmpSGT(v, end) : b_.CreateICmpUGT(v, end);
  else {
    Value* pos = sgn ? b_.CreateICmpSGT(step, zero) : b_.CreateICmpNE(step, zero);
    Value* neg = sgn ? b_.CreateICmpSLT(step, zero) : static_cast<Value*>(b_.getInt1(false));
    going = b_.CreateOr(b_.CreateAnd(pos, sgn ? b_.CreateICmpSLT(v, end) : b_.CreateICmpULT(v, end)),
                        b_.CreateAnd(neg, b_.CreateICmpSGT(v, end)));
  }
  b_.CreateCondBr(going, in, done);
  b_.SetInsertPoint(in);
  jumps_.push_back({latch, done});
  body();
  jumps_.pop_back();
  b_.CreateBr(latch);
  b_.SetInsertPoint(latch);
  // The next value, or the end when the distance left is at most the step (never wrapping).
  Value* cur = get();
  Value* next;
  if (k && *k == 1 && up) {
    next = b_.CreateAdd(cur, llvm::ConstantInt::get(ty, 1));  // cur < end: cannot wrap
  } else {
    Value* stepn = step;
    Value* down = sgn ? b_.CreateICmpSLT(stepn, zero) : static_cast<Value*>(b_.getInt1(false));
    Value* by = b_.CreateSelect(down, b_.CreateSub(zero, stepn), stepn);  // |step| (unsigned)
    Value* left = b_.CreateSelect(down, b_.CreateSub(cur, end), b_.CreateSub(end, cur));
    Value* last = b_.CreateICmpULE(left, by);
    next = b_.CreateSelect(last, end, b_.CreateAdd(cur, stepn));
    // At the end the loop stops: `going` is false when the counter equals end.
  }
  set(next);
  b_.CreateBr(head);
  b_.SetInsertPoint(done);
}

auto Gen::vector_copy(const VectorCopy& n) -> void {
  const MemRef& d = memref(n.dst.get(), n.loc);
  const MemRef& s = memref(n.src.get(), n.loc);
  Value* di = flat(d, expr(n.dst_index), n.dst_index->type);
  Value* si = flat(s, expr(n.src_index), n.src_index->type);
  llvm::Type* et = memtype(d.elem);
  for (std::int64_t k = 0; k < n.count; ++k) {
    Value* v = b_.CreateLoad(et, address(s, b_.CreateAdd(si, b_.getInt64(k))));
    b_.CreateStore(v, address(d, b_.CreateAdd(di, b_.getInt64(k))));
  }
}

auto Gen::shared_alloc(const SharedAlloc& n) -> void {
  Frame& f = *frame_;
  if (f.mems.count(n.mem.get())) return;
  MemRef r;
  r.space = MemSpace::Shared;
  r.elem = n.mem->elem;
  r.name = n.mem->name;
  r.base = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), f.smem,
                                         static_cast<std::uint64_t>(L_.shared_offsets.at(n.mem.get())));
  r.bound = b_.getInt64(const_int(n.count).value_or(0));
  f.mems[n.mem.get()] = r;
}

auto Gen::local_alloc(const LocalAlloc& n) -> void {
  Frame& f = *frame_;
  if (f.mems.count(n.mem.get())) return;
  MemRef r;
  r.space = MemSpace::Local;
  r.elem = n.mem->elem;
  r.name = n.mem->name;
  r.base = scratch(n.count * T_ * std::max<std::int64_t>(1, bytes(n.mem->elem)));
  r.bound = b_.getInt64(n.count);
  f.mems[n.mem.get()] = r;
}

auto Gen::thread_intrinsic(const Intrinsic& n) -> void {
  if (!runs_on(n.op, kCpu)) unsupported(user_name(n.op), n.loc);
  switch (n.op) {
    case IntrinsicOp::Atomic: atomic(n); return;
    case IntrinsicOp::CpAsync: {
      // A copy that completes at once: a race-free kernel reads its destination only after waiting.
      const MemRef& d = memref(n.mems[0].get(), n.loc);
      const MemRef& s = memref(n.mems[1].get(), n.loc);
      Value* di = flat(d, expr(n.args[0]), n.args[0]->type);
      Value* si = flat(s, expr(n.args[1]), n.args[1]->type);
      std::int64_t count = n.imms[0] / bytes(d.elem);
      std::int64_t sd = site(n.loc, d.name, true), ss = site(n.loc, s.name, false);
      llvm::Type* et = memtype(d.elem);
      for (std::int64_t k = 0; k < count; ++k) {
        Value* dk = b_.CreateAdd(di, b_.getInt64(k));
        Value* sk = b_.CreateAdd(si, b_.getInt64(k));
        checked(dk, d.bound, sd, [&] {
          checked(sk, s.bound, ss, [&] { b_.CreateStore(b_.CreateLoad(et, address(s, sk)), address(d, dk)); });
        });
      }
      return;
    }
    case IntrinsicOp::CpAsyncCommit:
    case IntrinsicOp::CpAsyncWait: return;
    default: break;
  }
  unsupported(user_name(n.op), n.loc);
}

auto Gen::atomic(const Intrinsic& n) -> void {
  const MemRef& r = memref(n.mems[0].get(), n.loc);
  Value* i = flat(r, expr(n.args[0]), n.args[0]->type);
  Value* x = expr(n.args[1]);
  ScalarType e = r.elem;
  if (half_type(e) || e == ScalarType::Bool) unsupported("an atomic on " + std::string(type_name(e)), n.loc);
  auto kind = static_cast<AtomicKind>(n.imms[0]);
  llvm::AtomicRMWInst::BinOp op;
  bool fl = is_float(e);
  switch (kind) {
    case AtomicKind::Add: op = fl ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add; break;
    case AtomicKind::Min:
      op = fl ? llvm::AtomicRMWInst::FMin : unsigned_type(e) ? llvm::AtomicRMWInst::UMin : llvm::AtomicRMWInst::Min;
      break;
    case AtomicKind::Max:
      op = fl ? llvm::AtomicRMWInst::FMax : unsigned_type(e) ? llvm::AtomicRMWInst::UMax : llvm::AtomicRMWInst::Max;
      break;
    default: op = llvm::AtomicRMWInst::Xchg; break;
  }
  auto* slot = entry_alloca(type(e), "atomic_old");
  b_.CreateStore(llvm::Constant::getNullValue(type(e)), slot);
  checked(i, r.bound, site(n.loc, r.name, true), [&] {
    Value* old = b_.CreateAtomicRMW(op, address(r, i), x, llvm::MaybeAlign(bytes(e)), llvm::AtomicOrdering::Monotonic);
    b_.CreateStore(old, slot);
  });
  if (!n.outputs.empty()) write_var(n.outputs[0], b_.CreateLoad(type(e), slot), nullptr);
}

auto Gen::materialize(const ExprPtr& e, Value* mask, bool as_index) -> std::pair<Value*, bool> {
  if (level(e, *frame_) == Lvl::Uniform) {
    Value* v = expr(e);
    return {as_index ? i64(v, e->type) : v, false};
  }
  Value* arr = scratch(T_ * 8);
  llvm::Type* t = as_index ? b_.getInt64Ty() : type(e->type);
  threads(mask, [&] {
    Value* v = expr(e);
    b_.CreateStore(as_index ? i64(v, e->type) : v, b_.CreateInBoundsGEP(t, arr, tid_));
  });
  return {arr, true};
}

auto Gen::call(const Call& n, bool in_thread, Value* mask) -> void {
  const FunctionNode& fnode = *n.fn;
  Frame& caller = *frame_;
  auto callee = std::make_unique<Frame>();
  Frame& f = *callee;
  f.parent = &caller;
  f.in_thread = in_thread || caller.in_thread;
  f.fn = &fnode;
  std::size_t user = n.args.size() - lower::kAbiArgs;
  // The position of the callee's threads, its block, its shared memory.
  const ExprPtr& tid_arg = n.args[user].value;
  if (const auto* bi = as<Builtin>(*tid_arg); bi && bi->which == BuiltinKind::ThreadInBlock && !caller.tid_array) {
    f.tid_array = nullptr;  // the caller's own position
  } else if (f.in_thread) {
    f.tid_array = expr(tid_arg);
    f.tid_level = Lvl::Uniform;  // one value in this thread
  } else {
    auto [v, arr] = materialize(tid_arg, mask, true);
    f.tid_array = arr ? v : b_.CreateTrunc(v, b_.getInt32Ty());
    f.tid_level = arr ? Lvl::Varying : Lvl::Uniform;
  }
  f.bid = expr(n.args[user + 1].value);
  auto smem = const_int(n.args[user + 2].value);
  f.smem = smem && *smem >= 0
               ? b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), caller.smem, static_cast<std::uint64_t>(*smem))
               : caller.smem;
  // Parameters: values (fixed, or per-thread arrays), pointers as the caller's memory plus offsets.
  for (std::size_t i = 0; i < user && i < fnode.params.size(); ++i) {
    const ParamNode& p = fnode.params[i];
    const CallArgNode& a = n.args[i];
    if (a.mem) {
      MemRef r = memref(a.mem.get(), n.loc);
      if (f.in_thread) {
        r.offsets.push_back({i64(expr(a.value), a.value->type), false});
      } else {
        auto [v, arr] = materialize(a.value, mask, true);
        r.offsets.push_back({v, arr});
      }
      r.name = p.name;
      f.mems[p.mem.get()] = r;
      continue;
    }
    Storage s;
    if (f.in_thread || level(a.value, caller) == Lvl::Uniform) {
      s.kind = Storage::Fixed;
      s.value = expr(a.value);
      f.levels[p.var.get()] = f.in_thread ? Lvl::Uniform : Lvl::Uniform;
    } else {
      s.kind = Storage::Array;
      s.ptr = materialize(a.value, mask, false).first;
      f.levels[p.var.get()] = Lvl::Varying;
    }
    f.vars[p.var.get()] = s;
  }
  // A pointer parameter keeps its root's bound: the checks of atomics and copies are on flat indices.
  if (!f.in_thread && (n.result || returns(fnode.body)))
    unsupported("a return in a device function that holds a warp collective or barrier", n.loc);
  if (f.in_thread) {
    f.exit = BasicBlock::Create(ctx_, fnode.name + ".exit", fn_);
    if (fnode.returns) {
      f.ret_slot = entry_alloca(type(*fnode.returns), fnode.name + ".result");
      b_.CreateStore(llvm::Constant::getNullValue(type(*fnode.returns)), f.ret_slot);
    }
  }
  frames_.push_back(std::move(callee));
  Frame* saved = frame_;
  frame_ = &f;
  prepare(f, fnode.body);
  if (f.in_thread) {
    thread_stmt(fnode.body);
    b_.CreateBr(f.exit);
    b_.SetInsertPoint(f.exit);
  } else {
    uniform(fnode.body, mask);
  }
  frame_ = saved;
  if (n.result) write_var(n.result, b_.CreateLoad(type(*fnode.returns), f.ret_slot), nullptr);
}

auto Gen::returns(const StmtPtr& s) -> bool {
  if (!s) return false;
  if (s->kind == StmtKind::Return) return true;
  bool r = false;
  for_each_child_stmt(*s, [&](const StmtPtr& c) { r = r || returns(c); });
  return r;
}

auto Gen::uniform(const StmtPtr& s, Value* mask) -> void {
  if (!s) return;
  auto gs = groups(s, *frame_);
  auto emit = [&](const Group& g) {
    if (g.kind != Group::Leaf) {
      single(g.stmts[0], mask);
    } else if (auto r = lane_range(g)) {
      threads(
          mask, [&] { thread_stmt(as<If>(*g.stmts[0])->then_body); }, &*r);
    } else {
      threads(mask, [&] {
        for (const auto& x : g.stmts) thread_stmt(x);
      });
    }
  };
  if (warp_) {
    for (const auto& g : gs) emit(g);
    return;
  }
  for (std::size_t i = 0; i < gs.size();) {
    if (!in_region(gs[i])) {
      emit(gs[i++]);
      continue;
    }
    std::size_t j = i;
    bool work = false;
    for (; j < gs.size() && in_region(gs[j]); ++j)
      work = work || gs[j].kind == Group::Leaf || gs[j].stmts[0]->kind != StmtKind::Let;
    if (!work) {
      for (; i < j; ++i) emit(gs[i]);
      continue;
    }
    // A region of leaves that never use their warp's index, with at most one a range of lanes
    // whose bounds are the same for the whole block (saxpy's `let t`, then `if (blk * 256 + t < n)`),
    // is one loop over the block's threads per leaf (longer vectors, one loop for LLVM instead of
    // one per warp).
    if (flat_region(gs, i, j)) {
      flat_ = true;
      for (; i < j; ++i) emit(gs[i]);
      flat_ = false;
      continue;
    }
    loop(
        b_.getInt32(0), b_.getInt32(warps()),
        [&](Value* w) {
          warp_ = w;
          auto run = [&] {
            for (std::size_t k = i; k < j; ++k) emit(gs[k]);
          };
          if (mask)
            if_then(any_active(mask), run);
          else
            run();
          warp_ = nullptr;
        },
        "region");
    i = j;
  }
}

auto Gen::in_region(const Group& g) -> bool {
  if (g.kind == Group::Leaf) return true;
  const StmtPtr& x = g.stmts[0];
  if (collectives_.block_sync(x)) return false;
  switch (x->kind) {
    case StmtKind::SharedAlloc:
    case StmtKind::LocalAlloc:
    case StmtKind::Assign: return false;
    case StmtKind::Let: return true;
    default: return !assigns_outer_uniform(x);
  }
}

auto Gen::assigns_outer_uniform(const StmtPtr& s) -> bool {
  struct Scan : IRVisitor {
    Frame& f;
    std::unordered_set<const VarNode*> inside;
    bool found = false;
    explicit Scan(Frame& fr) : f(fr) {}
    void visit(const Let& n) override {
      inside.insert(n.var.get());
      IRVisitor::visit(n);
    }
    void visit(const For& n) override {
      inside.insert(n.var.get());
      IRVisitor::visit(n);
    }
    void visit(const Assign& n) override {
      if (!inside.count(n.var.get()) && f.levels[n.var.get()] == Lvl::Uniform) found = true;
      IRVisitor::visit(n);
    }
  } scan(*frame_);
  scan.walk(s);
  return scan.found;
}

auto Gen::single(const StmtPtr& s, Value* mask) -> void {
  Frame& f = *frame_;
  dispatch(*s, Overloaded{
                   [&](const ir::Barrier&) {},  // the thread loops around it are the barrier
                   [&](const Let& n) {
                     if (f.levels[n.var.get()] == Lvl::Uniform) {
                       write_var(n.var, expr(n.value), n.value);
                     } else {
                       threads(mask, [&] { write_var(n.var, expr(n.value), n.value); });
                     }
                   },
                   [&](const Assign& n) {
                     if (f.levels[n.var.get()] == Lvl::Uniform)
                       write_var(n.var, expr(n.value), nullptr);
                     else
                       threads(mask, [&] { write_var(n.var, expr(n.value), nullptr); });
                   },
                   [&](const SharedAlloc& n) { shared_alloc(n); },
                   [&](const LocalAlloc& n) { local_alloc(n); },
                   [&](const If& n) {
                     bool same = level(n.cond, f) == Lvl::Uniform;
                     if (same || (warp_ && warp_uniform(n.cond))) {
                       Value* c = same ? expr(n.cond) : warp_condition(n.cond);
                       auto* t = BasicBlock::Create(ctx_, "uif.then", fn_);
                       auto* e = BasicBlock::Create(ctx_, "uif.else", fn_);
                       auto* j = BasicBlock::Create(ctx_, "uif.join", fn_);
                       b_.CreateCondBr(c, t, e);
                       b_.SetInsertPoint(t);
                       uniform(n.then_body, mask);
                       b_.CreateBr(j);
                       b_.SetInsertPoint(e);
                       uniform(n.else_body, mask);
                       b_.CreateBr(j);
                       b_.SetInsertPoint(j);
                       return;
                     }
                     // Per-thread condition around a collective: masks for each side.
                     Value* yes = scratch(T_);
                     Value* no = scratch(T_);
                     auto* any_yes = entry_alloca(b_.getInt8Ty(), "any_yes");
                     auto* any_no = entry_alloca(b_.getInt8Ty(), "any_no");
                     b_.CreateStore(b_.getInt8(0), any_yes);
                     b_.CreateStore(b_.getInt8(0), any_no);
                     threads(nullptr, [&] {
                       Value* active =
                           mask ? b_.CreateICmpNE(
                                      b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, tid_)),
                                      b_.getInt8(0))
                                : static_cast<Value*>(b_.getInt1(true));
                       Value* c = b_.getInt1(false);
                       auto* eval = BasicBlock::Create(ctx_, "mask.eval", fn_);
                       auto* set = BasicBlock::Create(ctx_, "mask.set", fn_);
                       BasicBlock* from = b_.GetInsertBlock();
                       b_.CreateCondBr(active, eval, set);
                       b_.SetInsertPoint(eval);
                       Value* cv = expr(n.cond);
                       BasicBlock* evaluated = b_.GetInsertBlock();
                       b_.CreateBr(set);
                       b_.SetInsertPoint(set);
                       auto* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
                       phi->addIncoming(c, from);
                       phi->addIncoming(cv, evaluated);
                       Value* y = b_.CreateAnd(active, phi);
                       Value* z = b_.CreateAnd(active, b_.CreateNot(phi));
                       Value* y8 = b_.CreateZExt(y, b_.getInt8Ty());
                       Value* z8 = b_.CreateZExt(z, b_.getInt8Ty());
                       b_.CreateStore(y8, b_.CreateInBoundsGEP(b_.getInt8Ty(), yes, tid_));
                       b_.CreateStore(z8, b_.CreateInBoundsGEP(b_.getInt8Ty(), no, tid_));
                       b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt8Ty(), any_yes), y8), any_yes);
                       b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt8Ty(), any_no), z8), any_no);
                     });
                     // A side no thread takes is skipped (in a warp region: no thread of the warp).
                     if_then(b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), any_yes), b_.getInt8(0)),
                             [&] { uniform(n.then_body, yes); });
                     if (n.else_body)
                       if_then(b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), any_no), b_.getInt8(0)),
                               [&] { uniform(n.else_body, no); });
                   },
                   [&](const For& n) {
                     if (f.levels[n.var.get()] == Lvl::Uniform) {
                       for_loop(n, [&] { uniform(n.body, mask); });
                       return;
                     }
                     varying_loop(s, mask);
                   },
                   [&](const While& n) {
                     if (level(n.cond, f) == Lvl::Uniform) {
                       auto* head = BasicBlock::Create(ctx_, "uwhile.head", fn_);
                       auto* body = BasicBlock::Create(ctx_, "uwhile.body", fn_);
                       auto* done = BasicBlock::Create(ctx_, "uwhile.done", fn_);
                       b_.CreateBr(head);
                       b_.SetInsertPoint(head);
                       b_.CreateCondBr(expr(n.cond), body, done);
                       b_.SetInsertPoint(body);
                       uniform(n.body, mask);
                       b_.CreateBr(head);
                       b_.SetInsertPoint(done);
                       return;
                     }
                     varying_loop(s, mask);
                   },
                   [&](const Call& n) {
                     if (collectives_.of(n.fn->body))
                       call(n, false, mask);
                     else
                       threads(mask, [&] { call(n, true); });
                   },
                   [&](const Intrinsic& n) { warp(n, mask); },
                   [&](const auto& n) -> void {
                     // Anything else that holds a collective is a sequence (flattened) or control
                     // flow (above); a plain statement runs in a thread loop.
                     if (collectives_.of(s))
                       throw InternalError(std::string("cpu: a collective in ") + name_of(n.kind));
                     threads(mask, [&] { thread_stmt(s); });
                   },
               });
}

auto Gen::varying_loop(const StmtPtr& s, Value* mask) -> void {
  const auto* f = as<For>(*s);
  const auto* w = as<While>(*s);
  Value* going = scratch(T_);
  Value* live = scratch(T_);  // threads whose loop has not ended (For: past its last value)
  Value* endv = nullptr;
  Value* stepv = nullptr;
  Storage* var = nullptr;
  if (f) {
    var = &define_array(f->var);
    endv = scratch(T_ * 8);
    stepv = scratch(T_ * 8);
    llvm::Type* ty = type(f->var->type);
    threads(mask, [&] {
      b_.CreateStore(expr(f->begin), b_.CreateInBoundsGEP(ty, var->ptr, tid_));
      b_.CreateStore(expr(f->end), b_.CreateInBoundsGEP(ty, endv, tid_));
      b_.CreateStore(expr(f->step), b_.CreateInBoundsGEP(ty, stepv, tid_));
    });
  }
  threads(nullptr, [&] {
    Value* active = mask ? b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, tid_))
                         : static_cast<Value*>(b_.getInt8(1));
    b_.CreateStore(active, b_.CreateInBoundsGEP(b_.getInt8Ty(), live, tid_));
  });
  auto* head = BasicBlock::Create(ctx_, "vloop.head", fn_);
  auto* body = BasicBlock::Create(ctx_, "vloop.body", fn_);
  auto* done = BasicBlock::Create(ctx_, "vloop.done", fn_);
  auto* any = entry_alloca(b_.getInt1Ty(), "any");
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  b_.CreateStore(b_.getInt1(false), any);
  threads(nullptr, [&] {
    Value* l =
        b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), live, tid_)), b_.getInt8(0));
    auto* eval = BasicBlock::Create(ctx_, "vloop.eval", fn_);
    auto* set = BasicBlock::Create(ctx_, "vloop.set", fn_);
    BasicBlock* from = b_.GetInsertBlock();
    b_.CreateCondBr(l, eval, set);
    b_.SetInsertPoint(eval);
    Value* g;
    if (f) {
      ScalarType t = f->var->type;
      bool sgn = !unsigned_type(t);
      Value* v = b_.CreateLoad(type(t), b_.CreateInBoundsGEP(type(t), var->ptr, tid_));
      Value* e = b_.CreateLoad(type(t), b_.CreateInBoundsGEP(type(t), endv, tid_));
      Value* st = b_.CreateLoad(type(t), b_.CreateInBoundsGEP(type(t), stepv, tid_));
      auto zero = llvm::ConstantInt::get(type(t), 0);
      Value* pos = sgn ? b_.CreateICmpSGT(st, zero) : b_.CreateICmpNE(st, zero);
      Value* neg = sgn ? b_.CreateICmpSLT(st, zero) : static_cast<Value*>(b_.getInt1(false));
      g = b_.CreateOr(b_.CreateAnd(pos, sgn ? b_.CreateICmpSLT(v, e) : b_.CreateICmpULT(v, e)),
                      b_.CreateAnd(neg, b_.CreateICmpSGT(v, e)));
    } else {
      g = expr(w->cond);
    }
    BasicBlock* evaluated = b_.GetInsertBlock();
    b_.CreateBr(set);
    b_.SetInsertPoint(set);
    auto* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
    phi->addIncoming(b_.getInt1(false), from);
    phi->addIncoming(g, evaluated);
    b_.CreateStore(b_.CreateZExt(phi, b_.getInt8Ty()), b_.CreateInBoundsGEP(b_.getInt8Ty(), going, tid_));
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), any), phi), any);
  });
  b_.CreateCondBr(b_.CreateLoad(b_.getInt1Ty(), any), body, done);
  b_.SetInsertPoint(body);
  uniform(f ? f->body : w->body, going);
  if (f) {
    // Each going thread steps its counter (never past its end: then its loop is over).
    threads(going, [&] {
      ScalarType t = f->var->type;
      bool sgn = !unsigned_type(t);
      auto* ty = type(t);
      auto zero = llvm::ConstantInt::get(ty, 0);
      Value* at = b_.CreateInBoundsGEP(ty, var->ptr, tid_);
      Value* cur = b_.CreateLoad(ty, at);
      Value* e = b_.CreateLoad(ty, b_.CreateInBoundsGEP(ty, endv, tid_));
      Value* st = b_.CreateLoad(ty, b_.CreateInBoundsGEP(ty, stepv, tid_));
      Value* down = sgn ? b_.CreateICmpSLT(st, zero) : static_cast<Value*>(b_.getInt1(false));
      Value* by = b_.CreateSelect(down, b_.CreateSub(zero, st), st);
      Value* left = b_.CreateSelect(down, b_.CreateSub(cur, e), b_.CreateSub(e, cur));
      Value* last = b_.CreateICmpULE(left, by);
      b_.CreateStore(b_.CreateSelect(last, e, b_.CreateAdd(cur, st)), at);
      // Past its last value the loop is over for this thread, whatever the counter says.
      Value* l = b_.CreateInBoundsGEP(b_.getInt8Ty(), live, tid_);
      b_.CreateStore(b_.CreateSelect(last, b_.getInt8(0), b_.CreateLoad(b_.getInt8Ty(), l)), l);
    });
  }
  b_.CreateBr(head);
  b_.SetInsertPoint(done);
}

}  // namespace vantage::cpu::detail
