// Vantage CPU code generator's Statements: statements, loops and calls in the block, warp and thread
// contexts. See gen.h.
#include "jit/cpu/gen.h"
#include "jit/ir/print_format.h"

namespace vantage::cpu::detail {

Statements::Statements(Gen& g) : g_(g), plan_(g.plan_), val_(g.val_), mem_(g.mem_), warps_(g.warps_) {}

void Statements::while_loop(const ExprPtr& cond, const std::string& name,
                            const std::function<void(BasicBlock* head, BasicBlock* done)>& body) {
  auto* head = BasicBlock::Create(g_.ctx_, name + ".head", g_.fn_);
  auto* block = BasicBlock::Create(g_.ctx_, name + ".body", g_.fn_);
  auto* done = BasicBlock::Create(g_.ctx_, name + ".done", g_.fn_);
  g_.b_.CreateBr(head);
  g_.b_.SetInsertPoint(head);
  g_.b_.CreateCondBr(val_.expr(cond), block, done);
  g_.b_.SetInsertPoint(block);
  body(head, done);
  g_.b_.CreateBr(head);
  g_.b_.SetInsertPoint(done);
}

auto Statements::thread_stmt(const StmtPtr& s) -> void {
  if (!s) return;
  dispatch(*s, Overloaded{
                   [&](const Seq& n) {
                     for (const auto& c : n.stmts) thread_stmt(c);
                   },
                   [&](const Let& n) { val_.write_var(n.var, val_.expr(n.value), n.value); },
                   [&](const Assign& n) { val_.write_var(n.var, val_.expr(n.value), nullptr); },
                   [&](const Store& n) { mem_.store(n); },
                   [&](const If& n) {
                     Value* c = val_.expr(n.cond);
                     auto* t = BasicBlock::Create(g_.ctx_, "if.then", g_.fn_);
                     auto* e = BasicBlock::Create(g_.ctx_, "if.else", g_.fn_);
                     auto* j = BasicBlock::Create(g_.ctx_, "if.join", g_.fn_);
                     g_.b_.CreateCondBr(c, t, e);
                     g_.b_.SetInsertPoint(t);
                     thread_stmt(n.then_body);
                     g_.b_.CreateBr(j);
                     g_.b_.SetInsertPoint(e);
                     thread_stmt(n.else_body);
                     g_.b_.CreateBr(j);
                     g_.b_.SetInsertPoint(j);
                   },
                   [&](const For& n) { for_loop(n, [&] { thread_stmt(n.body); }); },
                   [&](const While& n) {
                     while_loop(n.cond, "while", [&](BasicBlock* head, BasicBlock* done) {
                       g_.jumps_.push_back({head, done});
                       thread_stmt(n.body);
                       g_.jumps_.pop_back();
                     });
                   },
                   [&](const Jump& n) {
                     // Thread(1) code only (V0212), so the loop is this thread's own: a plain branch.
                     if (g_.jumps_.empty()) throw InternalError("cpu: a break or continue outside a loop");
                     g_.b_.CreateBr(n.is_break ? g_.jumps_.back().exit : g_.jumps_.back().next);
                     g_.b_.SetInsertPoint(
                         BasicBlock::Create(g_.ctx_, n.is_break ? "after.break" : "after.continue", g_.fn_));
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

auto Statements::ret(const Return& n) -> void {
  Frame& f = *g_.frame_;
  if (f.exit) {
    if (n.value) g_.b_.CreateStore(val_.expr(n.value), f.ret_slot);
    g_.b_.CreateBr(f.exit);
  } else if (!f.parent && g_.exited_ && g_.lane_cont_) {
    g_.b_.CreateStore(g_.b_.getInt8(1), g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), g_.exited_, g_.tid_));
    g_.b_.CreateBr(g_.lane_cont_);
  } else {
    unsupported("a return here", n.loc);
  }
  g_.b_.SetInsertPoint(BasicBlock::Create(g_.ctx_, "after.return", g_.fn_));
}

auto Statements::for_loop(const For& n, const std::function<void()>& body) -> void {
  Value* begin = val_.expr(n.begin);
  Value* end = val_.expr(n.end);
  Value* step = val_.expr(n.step);
  ScalarType t = n.var->type;
  bool sgn = !unsigned_type(t);
  Storage& s = val_.define(n.var, nullptr);
  auto set = [&](Value* v) {
    if (s.kind == Storage::Array)
      g_.b_.CreateStore(v, g_.b_.CreateInBoundsGEP(g_.type(t), s.ptr, g_.tid_));
    else
      g_.b_.CreateStore(v, s.ptr);
  };
  auto get = [&]() -> Value* {
    if (s.kind == Storage::Array)
      return g_.b_.CreateLoad(g_.type(t), g_.b_.CreateInBoundsGEP(g_.type(t), s.ptr, g_.tid_));
    return g_.b_.CreateLoad(g_.type(t), s.ptr);
  };
  set(begin);
  auto* head = BasicBlock::Create(g_.ctx_, n.var->name + ".head", g_.fn_);
  auto* in = BasicBlock::Create(g_.ctx_, n.var->name + ".body", g_.fn_);
  auto* latch = BasicBlock::Create(g_.ctx_, n.var->name + ".next", g_.fn_);
  auto* done = BasicBlock::Create(g_.ctx_, n.var->name + ".done", g_.fn_);
  auto* ty = g_.type(t);
  auto zero = llvm::ConstantInt::get(ty, 0);
  auto k = const_int(n.step);
  g_.b_.CreateBr(head);
  g_.b_.SetInsertPoint(head);
  Value* v = get();
  Value* going;
  bool up = k ? *k > 0 : false;
  if (k && *k > 0)
    going = sgn ? g_.b_.CreateICmpSLT(v, end) : g_.b_.CreateICmpULT(v, end);
  else if (k && *k < 0)
    going = sgn ? g_.b_.CreateICmpSGT(v, end) : g_.b_.CreateICmpUGT(v, end);
  else {
    Value* pos = sgn ? g_.b_.CreateICmpSGT(step, zero) : g_.b_.CreateICmpNE(step, zero);
    Value* neg = sgn ? g_.b_.CreateICmpSLT(step, zero) : static_cast<Value*>(g_.b_.getInt1(false));
    going = g_.b_.CreateOr(g_.b_.CreateAnd(pos, sgn ? g_.b_.CreateICmpSLT(v, end) : g_.b_.CreateICmpULT(v, end)),
                           g_.b_.CreateAnd(neg, g_.b_.CreateICmpSGT(v, end)));
  }
  g_.b_.CreateCondBr(going, in, done);
  g_.b_.SetInsertPoint(in);
  g_.jumps_.push_back({latch, done});
  body();
  g_.jumps_.pop_back();
  g_.b_.CreateBr(latch);
  g_.b_.SetInsertPoint(latch);
  // The next value, or the end when the distance left is at most the step (never wrapping).
  Value* cur = get();
  Value* next;
  if (k && *k == 1 && up) {
    next = g_.b_.CreateAdd(cur, llvm::ConstantInt::get(ty, 1));  // cur < end: cannot wrap
  } else {
    Value* stepn = step;
    Value* down = sgn ? g_.b_.CreateICmpSLT(stepn, zero) : static_cast<Value*>(g_.b_.getInt1(false));
    Value* by = g_.b_.CreateSelect(down, g_.b_.CreateSub(zero, stepn), stepn);  // |step| (unsigned)
    Value* left = g_.b_.CreateSelect(down, g_.b_.CreateSub(cur, end), g_.b_.CreateSub(end, cur));
    Value* last = g_.b_.CreateICmpULE(left, by);
    next = g_.b_.CreateSelect(last, end, g_.b_.CreateAdd(cur, stepn));
    // At the end the loop stops: `going` is false when the counter equals end.
  }
  set(next);
  g_.b_.CreateBr(head);
  g_.b_.SetInsertPoint(done);
}

auto Statements::vector_copy(const VectorCopy& n) -> void {
  const MemRef& d = mem_.memref(n.dst.get(), n.loc);
  const MemRef& s = mem_.memref(n.src.get(), n.loc);
  Value* di = mem_.flat(d, val_.expr(n.dst_index), n.dst_index->type);
  Value* si = mem_.flat(s, val_.expr(n.src_index), n.src_index->type);
  llvm::Type* et = g_.memtype(d.elem);
  for (std::int64_t k = 0; k < n.count; ++k) {
    Value* v = g_.b_.CreateLoad(et, mem_.address(s, g_.b_.CreateAdd(si, g_.b_.getInt64(k))));
    g_.b_.CreateStore(v, mem_.address(d, g_.b_.CreateAdd(di, g_.b_.getInt64(k))));
  }
}

auto Statements::shared_alloc(const SharedAlloc& n) -> void {
  Frame& f = *g_.frame_;
  if (f.mems.count(n.mem.get())) return;
  MemRef r;
  r.space = MemSpace::Shared;
  r.elem = n.mem->elem;
  r.name = n.mem->name;
  r.base = g_.b_.CreateConstInBoundsGEP1_64(g_.b_.getInt8Ty(), f.smem,
                                            static_cast<std::uint64_t>(g_.L_.shared_offsets.at(n.mem.get())));
  r.bound = g_.b_.getInt64(const_int(n.count).value_or(0));
  f.mems[n.mem.get()] = r;
}

auto Statements::local_alloc(const LocalAlloc& n) -> void {
  Frame& f = *g_.frame_;
  if (f.mems.count(n.mem.get())) return;
  MemRef r;
  r.space = MemSpace::Local;
  r.elem = n.mem->elem;
  r.name = n.mem->name;
  r.base = g_.scratch(n.count * g_.T_ * std::max<std::int64_t>(1, g_.bytes(n.mem->elem)));
  r.bound = g_.b_.getInt64(n.count);
  f.mems[n.mem.get()] = r;
}

auto Statements::thread_intrinsic(const Intrinsic& n) -> void {
  if (!runs_on(n.op, kCpu)) unsupported(user_name(n.op), n.loc);
  switch (n.op) {
    case IntrinsicOp::Atomic: atomic(n); return;
    case IntrinsicOp::CpAsync: {
      // A copy that completes at once: a race-free kernel reads its destination only after waiting.
      const MemRef& d = mem_.memref(n.mems[0].get(), n.loc);
      const MemRef& s = mem_.memref(n.mems[1].get(), n.loc);
      Value* di = mem_.flat(d, val_.expr(n.args[0]), n.args[0]->type);
      Value* si = mem_.flat(s, val_.expr(n.args[1]), n.args[1]->type);
      std::int64_t count = n.imms[0] / g_.bytes(d.elem);
      std::int64_t sd = mem_.site(n.loc, d.name, true), ss = mem_.site(n.loc, s.name, false);
      llvm::Type* et = g_.memtype(d.elem);
      for (std::int64_t k = 0; k < count; ++k) {
        Value* dk = g_.b_.CreateAdd(di, g_.b_.getInt64(k));
        Value* sk = g_.b_.CreateAdd(si, g_.b_.getInt64(k));
        mem_.checked(dk, d.bound, sd, [&] {
          mem_.checked(sk, s.bound, ss,
                       [&] { g_.b_.CreateStore(g_.b_.CreateLoad(et, mem_.address(s, sk)), mem_.address(d, dk)); });
        });
      }
      return;
    }
    case IntrinsicOp::CpAsyncCommit:
    case IntrinsicOp::CpAsyncWait:
    case IntrinsicOp::FenceProxyAsync:
      return;  // one memory, one proxy
    // A block's threads run in turns, none to wait for: of a sleep, only the duration's reads count.
    case IntrinsicOp::Nanosleep:
      if (!n.args.empty()) (void)val_.expr(n.args[0]);
      return;
    case IntrinsicOp::Print: print(n); return;
    case IntrinsicOp::Assert: {  // a failure at lowering's site, recorded as a failed access is
      auto* failed = BasicBlock::Create(g_.ctx_, "assert.failed", g_.fn_);
      auto* done = BasicBlock::Create(g_.ctx_, "assert.done", g_.fn_);
      g_.b_.CreateCondBr(val_.expr(n.args[0]), done, failed);
      g_.b_.SetInsertPoint(failed);
      mem_.fail(n.imms.empty() ? 0 : n.imms[0], g_.b_.getInt64(0), g_.b_.getInt64(-1));
      g_.b_.CreateBr(done);
      g_.b_.SetInsertPoint(done);
      return;
    }
    default: break;
  }
  unsupported(user_name(n.op), n.loc);
}

auto Statements::print(const Intrinsic& n) -> void {
  // The values as the host formats them (integers widened to 64 bits, floats to double) and their
  // types, in slots of the entry block, to the helper that writes the interpreter's line.
  auto& b = g_.b_;
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* f64 = b.getDoubleTy();
  const auto slots = static_cast<std::uint64_t>(ir::kMaxPrintValues);
  llvm::AllocaInst* types = g_.entry_alloca(llvm::ArrayType::get(b.getInt8Ty(), slots), "print_types");
  llvm::AllocaInst* ints = g_.entry_alloca(llvm::ArrayType::get(i64, slots), "print_ints");
  llvm::AllocaInst* floats = g_.entry_alloca(llvm::ArrayType::get(f64, slots), "print_floats");
  for (std::size_t k = 0; k < n.args.size() && k < slots; ++k) {
    const ScalarType t = n.args[k]->type;
    Value* v = val_.expr(n.args[k]);
    const auto at = static_cast<std::uint64_t>(k);
    b.CreateStore(b.getInt8(static_cast<std::uint8_t>(t)),
                  b.CreateConstInBoundsGEP2_64(types->getAllocatedType(), types, 0, at));
    const bool floating = is_float(t) || is_fp8(t);
    Value* as_int = floating
                        ? b.getInt64(0)
                        : val_.cast(t, is_signed(t) || t == ScalarType::Bool ? ScalarType::I64 : ScalarType::U64, v);
    Value* as_float = floating ? val_.cast(t, ScalarType::F64, v) : llvm::ConstantFP::get(f64, 0.0);
    b.CreateStore(as_int, b.CreateConstInBoundsGEP2_64(ints->getAllocatedType(), ints, 0, at));
    b.CreateStore(as_float, b.CreateConstInBoundsGEP2_64(floats->getAllocatedType(), floats, 0, at));
  }
  llvm::Type* ptr = b.getPtrTy();
  b.CreateCall(g_.helper("vt_cpu_print", b.getVoidTy(), {ptr, b.getInt32Ty(), ptr, ptr, ptr}),
               {b.CreateGlobalStringPtr(n.text, "print_format"), b.getInt32(static_cast<int>(n.args.size())), types,
                ints, floats});
}

auto Statements::atomic(const Intrinsic& n) -> void {
  const MemRef& r = mem_.memref(n.mems[0].get(), n.loc);
  Value* i = mem_.flat(r, val_.expr(n.args[0]), n.args[0]->type);
  Value* x = val_.expr(n.args[1]);
  ScalarType e = r.elem;
  if (half_type(e) || e == ScalarType::Bool) unsupported("an atomic on " + std::string(type_name(e)), n.loc);
  // The scope: every CPU thread of a launch is in one process, so each is the process's.
  auto kind = atomic_kind(n.imms[0]);
  static constexpr llvm::AtomicOrdering kOrders[] = {llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Acquire,
                                                     llvm::AtomicOrdering::Release,
                                                     llvm::AtomicOrdering::AcquireRelease};
  const llvm::AtomicOrdering order = kOrders[static_cast<int>(atomic_order(n.imms[0]))];
  // An exchange whose old value is not taken only writes: a relaxed or release one is that atomic
  // store (a plain mov on x86, where an xchg locks the bus), as the CUDA printer writes it.
  if (kind == AtomicKind::Exch && n.outputs.empty() &&
      (order == llvm::AtomicOrdering::Monotonic || order == llvm::AtomicOrdering::Release))
    kind = AtomicKind::Store;
  llvm::AtomicRMWInst::BinOp op = llvm::AtomicRMWInst::Xchg;  // Exch; Cas, Load and Store are below
  bool fl = is_float(e);
  switch (kind) {
    case AtomicKind::Add: op = fl ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add; break;
    case AtomicKind::Min:
      op = fl ? llvm::AtomicRMWInst::FMin : unsigned_type(e) ? llvm::AtomicRMWInst::UMin : llvm::AtomicRMWInst::Min;
      break;
    case AtomicKind::Max:
      op = fl ? llvm::AtomicRMWInst::FMax : unsigned_type(e) ? llvm::AtomicRMWInst::UMax : llvm::AtomicRMWInst::Max;
      break;
    case AtomicKind::And: op = llvm::AtomicRMWInst::And; break;
    case AtomicKind::Or: op = llvm::AtomicRMWInst::Or; break;
    case AtomicKind::Xor: op = llvm::AtomicRMWInst::Xor; break;
    case AtomicKind::Inc: op = llvm::AtomicRMWInst::UIncWrap; break;  // CUDA's atomicInc, the same wrap
    case AtomicKind::Dec: op = llvm::AtomicRMWInst::UDecWrap; break;
    case AtomicKind::Exch:
    case AtomicKind::Cas:
    case AtomicKind::Load:
    case AtomicKind::Store: break;
  }
  auto* slot = g_.entry_alloca(g_.type(e), "atomic_old");
  g_.b_.CreateStore(llvm::Constant::getNullValue(g_.type(e)), slot);
  const llvm::MaybeAlign align(g_.bytes(e));
  mem_.checked(i, r.bound, mem_.site(n.loc, r.name, kind != AtomicKind::Load), [&] {
    Value* address = mem_.address(r, i);
    Value* old = nullptr;
    if (kind == AtomicKind::Cas) {
      // A failed compare and swap only reads: its ordering may not release.
      const llvm::AtomicOrdering failure = order == llvm::AtomicOrdering::Release ? llvm::AtomicOrdering::Monotonic
                                           : order == llvm::AtomicOrdering::AcquireRelease
                                               ? llvm::AtomicOrdering::Acquire
                                               : order;
      old = g_.b_.CreateExtractValue(g_.b_.CreateAtomicCmpXchg(address, val_.expr(n.args[2]), x, align, order, failure),
                                     0);
    } else if (kind == AtomicKind::Load) {
      auto* load = g_.b_.CreateAlignedLoad(g_.type(e), address, align);
      load->setAtomic(order);
      old = load;
    } else if (kind == AtomicKind::Store) {
      g_.b_.CreateAlignedStore(x, address, align)->setAtomic(order);
      return;
    } else {
      old = g_.b_.CreateAtomicRMW(op, address, x, align, order);
    }
    g_.b_.CreateStore(old, slot);
  });
  if (!n.outputs.empty()) val_.write_var(n.outputs[0], g_.b_.CreateLoad(g_.type(e), slot), nullptr);
}

auto Statements::materialize(const ExprPtr& e, Value* mask, bool as_index) -> std::pair<Value*, bool> {
  if (plan_.level(e, *g_.frame_) == Lvl::Uniform) {
    Value* v = val_.expr(e);
    return {as_index ? g_.i64(v, e->type) : v, false};
  }
  Value* arr = g_.scratch(g_.T_ * 8);
  llvm::Type* t = as_index ? g_.b_.getInt64Ty() : g_.type(e->type);
  g_.threads(mask, [&] {
    Value* v = val_.expr(e);
    g_.b_.CreateStore(as_index ? g_.i64(v, e->type) : v, g_.b_.CreateInBoundsGEP(t, arr, g_.tid_));
  });
  return {arr, true};
}

auto Statements::call(const Call& n, bool in_thread, Value* mask) -> void {
  const FunctionNode& fnode = *n.fn;
  Frame& caller = *g_.frame_;
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
    f.tid_array = val_.expr(tid_arg);
    f.tid_level = Lvl::Uniform;  // one value in this thread
  } else {
    auto [v, arr] = materialize(tid_arg, mask, true);
    f.tid_array = arr ? v : g_.b_.CreateTrunc(v, g_.b_.getInt32Ty());
    f.tid_level = arr ? Lvl::Varying : Lvl::Uniform;
  }
  f.bid = val_.expr(n.args[user + 1].value);
  auto smem = const_int(n.args[user + 2].value);
  f.smem = smem && *smem >= 0
               ? g_.b_.CreateConstInBoundsGEP1_64(g_.b_.getInt8Ty(), caller.smem, static_cast<std::uint64_t>(*smem))
               : caller.smem;
  // Parameters: values (fixed, or per-thread arrays), pointers as the caller's memory plus offsets.
  for (std::size_t i = 0; i < user && i < fnode.params.size(); ++i) {
    const ParamNode& p = fnode.params[i];
    const CallArgNode& a = n.args[i];
    if (a.mem) {
      MemRef r = mem_.memref(a.mem.get(), n.loc);
      if (f.in_thread) {
        r.offsets.push_back({g_.i64(val_.expr(a.value), a.value->type), false});
      } else {
        auto [v, arr] = materialize(a.value, mask, true);
        r.offsets.push_back({v, arr});
      }
      r.name = p.name;
      f.mems[p.mem.get()] = r;
      continue;
    }
    Storage s;
    if (f.in_thread || plan_.level(a.value, caller) == Lvl::Uniform) {
      s.kind = Storage::Fixed;
      s.value = val_.expr(a.value);
      f.levels[p.var.get()] = f.in_thread ? Lvl::Uniform : Lvl::Uniform;
    } else {
      s.kind = Storage::Array;
      s.ptr = materialize(a.value, mask, false).first;
      f.levels[p.var.get()] = Lvl::Varying;
    }
    f.vars[p.var.get()] = s;
  }
  // A pointer parameter keeps its root's bound: the checks of atomics and copies are on flat indices.
  if (!f.in_thread && (n.result || plan_.returns(fnode.body)))
    unsupported("a return in a device function that holds a warp collective or barrier", n.loc);
  if (f.in_thread) {
    f.exit = BasicBlock::Create(g_.ctx_, fnode.name + ".exit", g_.fn_);
    if (fnode.returns) {
      f.ret_slot = g_.entry_alloca(g_.type(*fnode.returns), fnode.name + ".result");
      g_.b_.CreateStore(llvm::Constant::getNullValue(g_.type(*fnode.returns)), f.ret_slot);
    }
  }
  g_.frames_.push_back(std::move(callee));
  Frame* saved = g_.frame_;
  g_.frame_ = &f;
  plan_.prepare(f, fnode.body);
  if (f.in_thread) {
    thread_stmt(fnode.body);
    g_.b_.CreateBr(f.exit);
    g_.b_.SetInsertPoint(f.exit);
  } else {
    uniform(fnode.body, mask);
  }
  g_.frame_ = saved;
  if (n.result) val_.write_var(n.result, g_.b_.CreateLoad(g_.type(*fnode.returns), f.ret_slot), nullptr);
}

auto Statements::uniform(const StmtPtr& s, Value* mask) -> void {
  if (!s) return;
  auto gs = plan_.groups(s, *g_.frame_);
  auto emit = [&](const SeqGroup& g) {
    if (g.kind != SeqGroup::Leaf) {
      single(g.stmts[0], mask);
    } else if (auto r = plan_.lane_range(g)) {
      g_.threads(
          mask, [&] { thread_stmt(as<If>(*g.stmts[0])->then_body); }, &*r);
    } else {
      g_.threads(mask, [&] {
        for (const auto& x : g.stmts) thread_stmt(x);
      });
    }
  };
  if (g_.warp_) {
    for (const auto& g : gs) emit(g);
    return;
  }
  for (std::size_t i = 0; i < gs.size();) {
    if (!plan_.in_region(gs[i])) {
      emit(gs[i++]);
      continue;
    }
    std::size_t j = i;
    bool work = false;
    for (; j < gs.size() && plan_.in_region(gs[j]); ++j)
      work = work || gs[j].kind == SeqGroup::Leaf || gs[j].stmts[0]->kind != StmtKind::Let;
    if (!work) {
      for (; i < j; ++i) emit(gs[i]);
      continue;
    }
    // A region of leaves that never use their warp's index, with at most one a range of lanes
    // whose bounds are the same for the whole block (saxpy's `let t`, then `if (blk * 256 + t < n)`),
    // is one loop over the block's threads per leaf (longer vectors, one loop for LLVM instead of
    // one per warp).
    if (plan_.flat_region(gs, i, j)) {
      g_.flat_ = true;
      for (; i < j; ++i) emit(gs[i]);
      g_.flat_ = false;
      continue;
    }
    g_.loop(
        g_.b_.getInt32(0), g_.b_.getInt32(g_.warps()),
        [&](Value* w) {
          g_.warp_ = w;
          auto run = [&] {
            for (std::size_t k = i; k < j; ++k) emit(gs[k]);
          };
          if (mask)
            g_.if_then(g_.any_active(mask), run);
          else
            run();
          g_.warp_ = nullptr;
        },
        "region");
    i = j;
  }
}

auto Statements::single(const StmtPtr& s, Value* mask) -> void {
  Frame& f = *g_.frame_;
  dispatch(*s, Overloaded{
                   [&](const ir::Barrier& n) {  // the thread loops around it are the barrier
                     // A cluster's blocks wait for each other; the CPU backend runs each block alone.
                     if (n.how == BarrierKind::Cluster) unsupported("cluster_sync", n.loc);
                   },
                   [&](const Let& n) {
                     if (f.levels[n.var.get()] == Lvl::Uniform) {
                       val_.write_var(n.var, val_.expr(n.value), n.value);
                     } else {
                       g_.threads(mask, [&] { val_.write_var(n.var, val_.expr(n.value), n.value); });
                     }
                   },
                   [&](const Assign& n) {
                     if (f.levels[n.var.get()] == Lvl::Uniform)
                       val_.write_var(n.var, val_.expr(n.value), nullptr);
                     else
                       g_.threads(mask, [&] { val_.write_var(n.var, val_.expr(n.value), nullptr); });
                   },
                   [&](const SharedAlloc& n) { shared_alloc(n); },
                   [&](const LocalAlloc& n) { local_alloc(n); },
                   [&](const If& n) {
                     bool same = plan_.level(n.cond, f) == Lvl::Uniform;
                     if (same || (g_.warp_ && plan_.warp_uniform(n.cond))) {
                       Value* c = same ? val_.expr(n.cond) : g_.warp_condition(n.cond);
                       auto* t = BasicBlock::Create(g_.ctx_, "uif.then", g_.fn_);
                       auto* e = BasicBlock::Create(g_.ctx_, "uif.else", g_.fn_);
                       auto* j = BasicBlock::Create(g_.ctx_, "uif.join", g_.fn_);
                       g_.b_.CreateCondBr(c, t, e);
                       g_.b_.SetInsertPoint(t);
                       uniform(n.then_body, mask);
                       g_.b_.CreateBr(j);
                       g_.b_.SetInsertPoint(e);
                       uniform(n.else_body, mask);
                       g_.b_.CreateBr(j);
                       g_.b_.SetInsertPoint(j);
                       return;
                     }
                     // Per-thread condition around a collective: masks for each side.
                     Value* yes = g_.scratch(g_.T_);
                     Value* no = g_.scratch(g_.T_);
                     auto* any_yes = g_.entry_alloca(g_.b_.getInt8Ty(), "any_yes");
                     auto* any_no = g_.entry_alloca(g_.b_.getInt8Ty(), "any_no");
                     g_.b_.CreateStore(g_.b_.getInt8(0), any_yes);
                     g_.b_.CreateStore(g_.b_.getInt8(0), any_no);
                     g_.threads(nullptr, [&] {
                       Value* active =
                           mask ? g_.b_.CreateICmpNE(
                                      g_.b_.CreateLoad(g_.b_.getInt8Ty(),
                                                       g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), mask, g_.tid_)),
                                      g_.b_.getInt8(0))
                                : static_cast<Value*>(g_.b_.getInt1(true));
                       Value* c = g_.b_.getInt1(false);
                       auto* eval = BasicBlock::Create(g_.ctx_, "mask.eval", g_.fn_);
                       auto* set = BasicBlock::Create(g_.ctx_, "mask.set", g_.fn_);
                       BasicBlock* from = g_.b_.GetInsertBlock();
                       g_.b_.CreateCondBr(active, eval, set);
                       g_.b_.SetInsertPoint(eval);
                       Value* cv = val_.expr(n.cond);
                       BasicBlock* evaluated = g_.b_.GetInsertBlock();
                       g_.b_.CreateBr(set);
                       g_.b_.SetInsertPoint(set);
                       auto* phi = g_.b_.CreatePHI(g_.b_.getInt1Ty(), 2);
                       phi->addIncoming(c, from);
                       phi->addIncoming(cv, evaluated);
                       Value* y = g_.b_.CreateAnd(active, phi);
                       Value* z = g_.b_.CreateAnd(active, g_.b_.CreateNot(phi));
                       Value* y8 = g_.b_.CreateZExt(y, g_.b_.getInt8Ty());
                       Value* z8 = g_.b_.CreateZExt(z, g_.b_.getInt8Ty());
                       g_.b_.CreateStore(y8, g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), yes, g_.tid_));
                       g_.b_.CreateStore(z8, g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), no, g_.tid_));
                       g_.b_.CreateStore(g_.b_.CreateOr(g_.b_.CreateLoad(g_.b_.getInt8Ty(), any_yes), y8), any_yes);
                       g_.b_.CreateStore(g_.b_.CreateOr(g_.b_.CreateLoad(g_.b_.getInt8Ty(), any_no), z8), any_no);
                     });
                     // A side no thread takes is skipped (in a warp region: no thread of the warp).
                     g_.if_then(g_.b_.CreateICmpNE(g_.b_.CreateLoad(g_.b_.getInt8Ty(), any_yes), g_.b_.getInt8(0)),
                                [&] { uniform(n.then_body, yes); });
                     if (n.else_body)
                       g_.if_then(g_.b_.CreateICmpNE(g_.b_.CreateLoad(g_.b_.getInt8Ty(), any_no), g_.b_.getInt8(0)),
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
                     if (plan_.level(n.cond, f) == Lvl::Uniform) {
                       while_loop(n.cond, "uwhile", [&](BasicBlock*, BasicBlock*) { uniform(n.body, mask); });
                       return;
                     }
                     varying_loop(s, mask);
                   },
                   [&](const Call& n) {
                     if (g_.collectives_.of(n.fn->body))
                       call(n, false, mask);
                     else
                       g_.threads(mask, [&] { call(n, true); });
                   },
                   [&](const Intrinsic& n) { warps_.warp(n, mask); },
                   [&](const auto& n) -> void {
                     // Anything else that holds a collective is a sequence (flattened) or control
                     // flow (above); a plain statement runs in a thread loop.
                     if (g_.collectives_.of(s))
                       throw InternalError(std::string("cpu: a collective in ") + name_of(n.kind));
                     g_.threads(mask, [&] { thread_stmt(s); });
                   },
               });
}

auto Statements::varying_loop(const StmtPtr& s, Value* mask) -> void {
  const auto* f = as<For>(*s);
  const auto* w = as<While>(*s);
  Value* going = g_.scratch(g_.T_);
  Value* live = g_.scratch(g_.T_);  // threads whose loop has not ended (For: past its last value)
  Value* endv = nullptr;
  Value* stepv = nullptr;
  Storage* var = nullptr;
  if (f) {
    var = &val_.define_array(f->var);
    endv = g_.scratch(g_.T_ * 8);
    stepv = g_.scratch(g_.T_ * 8);
    llvm::Type* ty = g_.type(f->var->type);
    g_.threads(mask, [&] {
      g_.b_.CreateStore(val_.expr(f->begin), g_.b_.CreateInBoundsGEP(ty, var->ptr, g_.tid_));
      g_.b_.CreateStore(val_.expr(f->end), g_.b_.CreateInBoundsGEP(ty, endv, g_.tid_));
      g_.b_.CreateStore(val_.expr(f->step), g_.b_.CreateInBoundsGEP(ty, stepv, g_.tid_));
    });
  }
  g_.threads(nullptr, [&] {
    Value* active = mask
                        ? g_.b_.CreateLoad(g_.b_.getInt8Ty(), g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), mask, g_.tid_))
                        : static_cast<Value*>(g_.b_.getInt8(1));
    g_.b_.CreateStore(active, g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), live, g_.tid_));
  });
  auto* head = BasicBlock::Create(g_.ctx_, "vloop.head", g_.fn_);
  auto* body = BasicBlock::Create(g_.ctx_, "vloop.body", g_.fn_);
  auto* done = BasicBlock::Create(g_.ctx_, "vloop.done", g_.fn_);
  auto* any = g_.entry_alloca(g_.b_.getInt1Ty(), "any");
  g_.b_.CreateBr(head);
  g_.b_.SetInsertPoint(head);
  g_.b_.CreateStore(g_.b_.getInt1(false), any);
  g_.threads(nullptr, [&] {
    Value* l = g_.b_.CreateICmpNE(
        g_.b_.CreateLoad(g_.b_.getInt8Ty(), g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), live, g_.tid_)),
        g_.b_.getInt8(0));
    auto* eval = BasicBlock::Create(g_.ctx_, "vloop.eval", g_.fn_);
    auto* set = BasicBlock::Create(g_.ctx_, "vloop.set", g_.fn_);
    BasicBlock* from = g_.b_.GetInsertBlock();
    g_.b_.CreateCondBr(l, eval, set);
    g_.b_.SetInsertPoint(eval);
    Value* g;
    if (f) {
      ScalarType t = f->var->type;
      bool sgn = !unsigned_type(t);
      Value* v = g_.b_.CreateLoad(g_.type(t), g_.b_.CreateInBoundsGEP(g_.type(t), var->ptr, g_.tid_));
      Value* e = g_.b_.CreateLoad(g_.type(t), g_.b_.CreateInBoundsGEP(g_.type(t), endv, g_.tid_));
      Value* st = g_.b_.CreateLoad(g_.type(t), g_.b_.CreateInBoundsGEP(g_.type(t), stepv, g_.tid_));
      auto zero = llvm::ConstantInt::get(g_.type(t), 0);
      Value* pos = sgn ? g_.b_.CreateICmpSGT(st, zero) : g_.b_.CreateICmpNE(st, zero);
      Value* neg = sgn ? g_.b_.CreateICmpSLT(st, zero) : static_cast<Value*>(g_.b_.getInt1(false));
      g = g_.b_.CreateOr(g_.b_.CreateAnd(pos, sgn ? g_.b_.CreateICmpSLT(v, e) : g_.b_.CreateICmpULT(v, e)),
                         g_.b_.CreateAnd(neg, g_.b_.CreateICmpSGT(v, e)));
    } else {
      g = val_.expr(w->cond);
    }
    BasicBlock* evaluated = g_.b_.GetInsertBlock();
    g_.b_.CreateBr(set);
    g_.b_.SetInsertPoint(set);
    auto* phi = g_.b_.CreatePHI(g_.b_.getInt1Ty(), 2);
    phi->addIncoming(g_.b_.getInt1(false), from);
    phi->addIncoming(g, evaluated);
    g_.b_.CreateStore(g_.b_.CreateZExt(phi, g_.b_.getInt8Ty()),
                      g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), going, g_.tid_));
    g_.b_.CreateStore(g_.b_.CreateOr(g_.b_.CreateLoad(g_.b_.getInt1Ty(), any), phi), any);
  });
  g_.b_.CreateCondBr(g_.b_.CreateLoad(g_.b_.getInt1Ty(), any), body, done);
  g_.b_.SetInsertPoint(body);
  uniform(f ? f->body : w->body, going);
  if (f) {
    // Each going thread steps its counter (never past its end: then its loop is over).
    g_.threads(going, [&] {
      ScalarType t = f->var->type;
      bool sgn = !unsigned_type(t);
      auto* ty = g_.type(t);
      auto zero = llvm::ConstantInt::get(ty, 0);
      Value* at = g_.b_.CreateInBoundsGEP(ty, var->ptr, g_.tid_);
      Value* cur = g_.b_.CreateLoad(ty, at);
      Value* e = g_.b_.CreateLoad(ty, g_.b_.CreateInBoundsGEP(ty, endv, g_.tid_));
      Value* st = g_.b_.CreateLoad(ty, g_.b_.CreateInBoundsGEP(ty, stepv, g_.tid_));
      Value* down = sgn ? g_.b_.CreateICmpSLT(st, zero) : static_cast<Value*>(g_.b_.getInt1(false));
      Value* by = g_.b_.CreateSelect(down, g_.b_.CreateSub(zero, st), st);
      Value* left = g_.b_.CreateSelect(down, g_.b_.CreateSub(cur, e), g_.b_.CreateSub(e, cur));
      Value* last = g_.b_.CreateICmpULE(left, by);
      g_.b_.CreateStore(g_.b_.CreateSelect(last, e, g_.b_.CreateAdd(cur, st)), at);
      // Past its last value the loop is over for this thread, whatever the counter says.
      Value* l = g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), live, g_.tid_);
      g_.b_.CreateStore(g_.b_.CreateSelect(last, g_.b_.getInt8(0), g_.b_.CreateLoad(g_.b_.getInt8Ty(), l)), l);
    });
  }
  g_.b_.CreateBr(head);
  g_.b_.SetInsertPoint(done);
}

}  // namespace vantage::cpu::detail
