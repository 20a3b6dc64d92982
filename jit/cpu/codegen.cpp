// Vantage CPU backend: lowered IR to LLVM IR (see cpu.h, gen.h and docs/cpu.md). This file: the entry
// point, LLVM types and helpers, thread and warp loops and the reports of their checks.
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>

#include "jit/cpu/gen.h"

namespace vantage::cpu {
namespace detail {

Gen::Gen(const lower::Lowered& l, const std::string& entry, Module::Impl& out)
    : L_(l),
      T_(l.options.threads),
      out_(out),
      ctx_(*out.ctx),
      b_(ctx_),
      entry_name_(entry),
      plan_(*this),
      val_(*this),
      mem_(*this),
      st_(*this),
      warps_(*this) {}

auto Gen::run() -> void {
  llvm::Module& m = *out_.mod;
  auto* ptr = llvm::PointerType::get(ctx_, 0);
  auto* i64 = b_.getInt64Ty();
  // The body: every pointer parameter, shared and scratch noalias (the launcher checks that no
  // writable buffer overlaps another), so LLVM may vectorize thread loops without runtime checks.
  std::vector<llvm::Type*> params;
  const auto& kp = L_.kernel.params;
  for (const auto& p : kp) params.push_back(p.mem ? static_cast<llvm::Type*>(ptr) : type(p.var->type));
  params.insert(params.end(), {i64, i64, ptr, ptr, ptr});  // block, blocks, shared, scratch, error
  auto* body_ty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(body_ty, llvm::Function::InternalLinkage, entry_name_ + ".body", m);
  for (std::size_t i = 0; i < kp.size(); ++i)
    if (kp[i].mem) fn_->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
  fn_->addParamAttr(static_cast<unsigned>(kp.size() + 2), llvm::Attribute::NoAlias);
  fn_->addParamAttr(static_cast<unsigned>(kp.size() + 3), llvm::Attribute::NoAlias);
  fn_->addFnAttr(llvm::Attribute::AlwaysInline);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  // Vector width. A kernel whose lanes exchange values works on whole warps (32 lanes: two 512-bit
  // registers), and LLVM's own choice for the host serves it best. Any other kernel's thread loops
  // are streams of loads, arithmetic and stores, which ran faster in 256-bit vectors on the 512-bit
  // host measured (docs/cpu.md: saxpy 4 to 7%, the shared-memory sgemm 3 to 7%, where the block
  // reduction's shuffles lost 20 to 30%). A host with vectors of 256 bits or fewer is unaffected.
  const bool whole_warps = collectives_.lane_exchange(L_.kernel.body);
  if (!whole_warps) fn_->addFnAttr("prefer-vector-width", "256");
  entry_bb_ = BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry_bb_);
  block_ = fn_->getArg(static_cast<unsigned>(kp.size()));
  blocks_ = fn_->getArg(static_cast<unsigned>(kp.size() + 1));
  shared_ = fn_->getArg(static_cast<unsigned>(kp.size() + 2));
  scratch_ = fn_->getArg(static_cast<unsigned>(kp.size() + 3));
  err_ = fn_->getArg(static_cast<unsigned>(kp.size() + 4));

  Frame top;
  top.bid = b_.CreateTrunc(block_, b_.getInt32Ty());
  top.smem = shared_;
  std::size_t pointer = 0;
  std::vector<std::pair<const MemNode*, std::size_t>> pointers;
  for (std::size_t i = 0; i < kp.size(); ++i) {
    llvm::Value* a = fn_->getArg(static_cast<unsigned>(i));
    if (kp[i].mem) {
      MemRef r;
      r.space = MemSpace::Global;
      r.elem = kp[i].mem->elem;
      r.base = a;
      r.name = kp[i].name;
      top.mems[kp[i].mem.get()] = r;
      pointers.emplace_back(kp[i].mem.get(), pointer++);
    } else {
      top.vars[kp[i].var.get()] = Storage{Storage::Fixed, nullptr, a, nullptr};
      top.levels[kp[i].var.get()] = Lvl::Uniform;
    }
  }
  // The hidden lengths follow the user's parameters, one per pointer, in order.
  for (const auto& [mem, j] : pointers) top.mems[mem].bound = fn_->getArg(static_cast<unsigned>(L_.user_params + j));
  frame_ = &top;
  if (plan_.returns(L_.kernel.body)) {
    exited_ = scratch(T_);
    IRBuilder<> e(entry_bb_);
    e.CreateMemSet(exited_, e.getInt8(0), static_cast<std::uint64_t>(T_), llvm::MaybeAlign(1));
  }
  plan_.prepare(top, L_.kernel.body);
  st_.uniform(L_.kernel.body, nullptr);
  b_.CreateRetVoid();

  // The entry: unpacks `args` (pointers to each value, as cuLaunchKernel takes them), then runs
  // the blocks [first, last) one after the other (one call per chunk of blocks: the unpacking
  // and the call are not paid per block).
  auto* entry_ty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64, i64, ptr, ptr, ptr}, false);
  auto* entry = llvm::Function::Create(entry_ty, llvm::Function::ExternalLinkage, entry_name_, m);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  if (!whole_warps) entry->addFnAttr("prefer-vector-width", "256");
  b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", entry));
  std::vector<Value*> args;
  for (std::size_t i = 0; i < kp.size(); ++i) {
    Value* slot = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, entry->getArg(0), i));
    if (kp[i].mem)
      args.push_back(b_.CreateLoad(ptr, slot));
    else  // as the launcher packs it: bool a byte, 16-bit floats their bits
      args.push_back(from_mem(b_.CreateLoad(memtype(kp[i].var->type), slot), kp[i].var->type));
  }
  Value* first = entry->getArg(1);
  Value* last = entry->getArg(2);
  args.push_back(nullptr);  // the block, set in the loop
  for (unsigned i = 3; i < 7; ++i) args.push_back(entry->getArg(i));
  BasicBlock* pre = b_.GetInsertBlock();
  auto* head = BasicBlock::Create(ctx_, "blocks", entry);
  auto* body = BasicBlock::Create(ctx_, "block", entry);
  auto* done = BasicBlock::Create(ctx_, "blocks.done", entry);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  auto* blk = b_.CreatePHI(i64, 2, "blk");
  blk->addIncoming(first, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(blk, last), body, done);
  b_.SetInsertPoint(body);
  args[kp.size()] = blk;
  b_.CreateCall(fn_, args);
  blk->addIncoming(b_.CreateAdd(blk, b_.getInt64(1), "", true, true), body);
  auto* latch = b_.CreateBr(head);
  latch->setMetadata(llvm::LLVMContext::MD_loop, no_unroll_md());
  b_.SetInsertPoint(done);
  b_.CreateRetVoid();
  out_.scratch = scratch_bytes_;
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(m, &os)) throw InternalError("cpu: the generated LLVM IR does not verify:\n" + problems);
}

auto Gen::type(ScalarType t) -> llvm::Type* {
  switch (t) {
    case ScalarType::Bool: return b_.getInt1Ty();
    case ScalarType::I8:
    case ScalarType::U8: return b_.getInt8Ty();
    case ScalarType::I16:
    case ScalarType::U16: return b_.getInt16Ty();
    case ScalarType::I32:
    case ScalarType::U32: return b_.getInt32Ty();
    case ScalarType::I64:
    case ScalarType::U64: return b_.getInt64Ty();
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::F8E4M3:  // held as their value in f32 (exact), stored as a byte
    case ScalarType::F8E5M2:
    case ScalarType::F32: return b_.getFloatTy();  // 16-bit floats are computed in f32, rounded after each op
    case ScalarType::F64: return b_.getDoubleTy();
  }
  return b_.getInt32Ty();
}

auto Gen::memtype(ScalarType t) -> llvm::Type* {
  switch (t) {
    case ScalarType::Bool:
    case ScalarType::F8E4M3:
    case ScalarType::F8E5M2: return b_.getInt8Ty();
    case ScalarType::F16:
    case ScalarType::BF16: return b_.getInt16Ty();
    default: return type(t);
  }
}

auto Gen::helper(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args) -> llvm::FunctionCallee {
  auto c = out_.mod->getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(c.getCallee())) f->addFnAttr(llvm::Attribute::NoUnwind);
  return c;
}

auto Gen::pure(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args) -> llvm::FunctionCallee {
  auto c = helper(name, ret, args);
  if (auto* f = llvm::dyn_cast<llvm::Function>(c.getCallee())) {
    f->setDoesNotAccessMemory();
    f->addFnAttr(llvm::Attribute::WillReturn);
  }
  return c;
}

auto Gen::from_mem(Value* v, ScalarType t) -> Value* {
  if (t == ScalarType::Bool) return b_.CreateICmpNE(v, b_.getInt8(0));
  if (is_fp8(t))
    return b_.CreateCall(pure("vt_cpu_fp8_to_f32", b_.getFloatTy(), {b_.getInt8Ty(), b_.getInt32Ty()}),
                         {v, b_.getInt32(t == ScalarType::F8E5M2)});
  if (t == ScalarType::F16) return b_.CreateCall(pure("vt_cpu_f16_to_f32", b_.getFloatTy(), {b_.getInt16Ty()}), {v});
  if (t == ScalarType::BF16) return b_.CreateCall(pure("vt_cpu_bf16_to_f32", b_.getFloatTy(), {b_.getInt16Ty()}), {v});
  return v;
}

auto Gen::to_mem(Value* v, ScalarType t) -> Value* {
  if (t == ScalarType::Bool) return b_.CreateZExt(v, b_.getInt8Ty());
  if (is_fp8(t))
    return b_.CreateCall(
        pure("vt_cpu_f64_to_fp8", b_.getInt8Ty(), {b_.getDoubleTy(), b_.getInt32Ty()}),
        {v->getType()->isDoubleTy() ? v : b_.CreateFPExt(v, b_.getDoubleTy()), b_.getInt32(t == ScalarType::F8E5M2)});
  if (t == ScalarType::F16) return b_.CreateCall(pure("vt_cpu_f32_to_f16", b_.getInt16Ty(), {b_.getFloatTy()}), {v});
  if (t == ScalarType::BF16) return b_.CreateCall(pure("vt_cpu_f32_to_bf16", b_.getInt16Ty(), {b_.getFloatTy()}), {v});
  return v;
}

auto Gen::zero_of(llvm::Type* t) -> Value* {
  auto [it, fresh] = zeros_.emplace(t, nullptr);
  if (fresh) it->second = zeroed_slot(t, "zero");
  return it->second;
}

auto Gen::zeroed_slot(llvm::Type* t, const std::string& name) -> llvm::AllocaInst* {
  auto* a = entry_alloca(t, name);
  IRBuilder<> e(entry_bb_, std::next(a->getIterator()));
  e.CreateStore(llvm::Constant::getNullValue(t), a);
  return a;
}

auto Gen::scratch(std::int64_t n) -> Value* {
  std::int64_t at = scratch_bytes_;
  scratch_bytes_ += (n + 63) / 64 * 64;
  IRBuilder<> e(entry_bb_, entry_bb_->begin());
  return e.CreateConstInBoundsGEP1_64(e.getInt8Ty(), scratch_, static_cast<std::uint64_t>(at));
}

auto Gen::lane_loop_md() -> llvm::MDNode* {
  auto str = [&](const char* s) { return llvm::MDString::get(ctx_, s); };
  auto* unroll_full = llvm::MDNode::get(ctx_, {str("llvm.loop.unroll.full")});
  return loop_md({
      llvm::MDNode::get(
          ctx_, {str("llvm.loop.vectorize.enable"), llvm::ConstantAsMetadata::get(llvm::ConstantInt::getTrue(ctx_))}),
      llvm::MDNode::get(ctx_, {str("llvm.loop.unroll.disable")}),
      llvm::MDNode::get(ctx_, {str("llvm.loop.vectorize.followup_vectorized"), unroll_full}),
  });
}

auto Gen::loop_md(std::vector<llvm::Metadata*> properties) -> llvm::MDNode* {
  auto* temp = llvm::MDNode::getTemporary(ctx_, {}).release();
  properties.insert(properties.begin(), temp);
  auto* id = llvm::MDNode::getDistinct(ctx_, properties);
  id->replaceOperandWith(0, id);
  llvm::MDNode::deleteTemporary(temp);
  return id;
}

auto Gen::loop(Value* from, Value* to, const std::function<void(Value*)>& body, const char* name, bool lanes) -> void {
  llvm::Type* t = from->getType();
  auto* counter = entry_alloca(t, name);
  b_.CreateStore(from, counter);
  auto* head = BasicBlock::Create(ctx_, std::string(name) + ".head", fn_);
  auto* in = BasicBlock::Create(ctx_, std::string(name) + ".body", fn_);
  auto* done = BasicBlock::Create(ctx_, std::string(name) + ".done", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  Value* i = b_.CreateLoad(t, counter);
  b_.CreateCondBr(b_.CreateICmpSLT(i, to), in, done);
  b_.SetInsertPoint(in);
  body(i);
  Value* next = b_.CreateAdd(b_.CreateLoad(t, counter), llvm::ConstantInt::get(t, 1), "", true, true);
  b_.CreateStore(next, counter);
  auto* latch = b_.CreateBr(head);
  if (lanes) latch->setMetadata(llvm::LLVMContext::MD_loop, lane_loop_md());
  b_.SetInsertPoint(done);
}

auto Gen::if_then(Value* cond, const std::function<void()>& then) -> void {
  auto* t = BasicBlock::Create(ctx_, "then", fn_);
  auto* j = BasicBlock::Create(ctx_, "join", fn_);
  b_.CreateCondBr(cond, t, j);
  b_.SetInsertPoint(t);
  then();
  b_.CreateBr(j);
  b_.SetInsertPoint(j);
}

auto Gen::lanes_in(Value* w) -> Value* {
  if (T_ % 32 == 0) return b_.getInt32(32);
  Value* left = b_.CreateSub(b_.getInt32(static_cast<std::int32_t>(T_)), b_.CreateShl(w, 5));
  return b_.CreateSelect(b_.CreateICmpSLT(left, b_.getInt32(32)), left, b_.getInt32(32));
}

auto Gen::each_warp(const std::function<void(Value*)>& body, const char* name) -> void {
  if (warp_) {
    body(warp_);
    return;
  }
  loop(b_.getInt32(0), b_.getInt32(warps()), body, name);
}

auto Gen::threads(Value* mask, const std::function<void()>& body, const LaneRange* range) -> void {
  // A range of at most 4 lanes (`lane < 1`: the first thread of each warp) stays a scalar loop:
  // vectorized by 16, its one iteration became a masked gather and scatter per access.
  bool few = false;
  if (range && (range->op == BinOp::Lt || range->op == BinOp::Le))
    if (auto k = const_int(range->k)) few = *k + (range->op == BinOp::Le ? 1 : 0) <= 4;
  std::vector<PendingCheck> checks;
  auto* saved_pending = pending_;
  pending_ = &checks;
  auto lanes = [&](Value* w) {
    Value* lo = b_.getInt32(0);
    Value* hi = lanes_in(w);
    if (range) restrict_lanes(*range, w, lo, hi);
    loop(
        lo, hi,
        [&](Value* l) {
          Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
          // 32 w + l as an add, not an or: LLVM's scalar evolution then sees an affine position.
          tid_ = b_.CreateAdd(b_.CreateShl(w, 5, "", true, true), l, "tid", true, true);
          lane_ = l;
          lane_warp_ = w;
          one_thread(mask, body);
          tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
        },
        "lane", !few);
  };
  if (flat_ && !warp_) {
    // One loop over the block (tid = 32 w + l still holds for the position arithmetic), over the
    // range's threads where it has one (its bounds are the same for the whole block).
    Value* lo = b_.getInt32(0);
    Value* hi = b_.getInt32(static_cast<std::int32_t>(T_));
    if (range) restrict_lanes(*range, b_.getInt32(0), lo, hi);
    loop(
        lo, hi,
        [&](Value* t) {
          Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
          tid_ = t;
          lane_ = b_.CreateAnd(t, b_.getInt32(31));
          lane_warp_ = b_.CreateLShr(t, 5);
          one_thread(mask, body);
          tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
        },
        "thread", true);
  } else {
    each_warp(lanes, "warp");
  }
  pending_ = saved_pending;
  for (const auto& c : checks) report(c);
}

auto Gen::restrict_lanes(const LaneRange& r, Value* w, Value*& lo, Value*& hi) -> void {
  Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
  lane_warp_ = w;
  lane_ = b_.getInt32(0);
  tid_ = b_.CreateShl(w, 5, "", true, true);
  Value* k = b_.CreateSExt(val_.expr(r.k), b_.getInt64Ty());
  if (r.offset) k = b_.CreateSub(k, b_.CreateSExt(val_.expr(r.offset), b_.getInt64Ty()));
  tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
  // The first lane past the split: k - 32 w (k + 1 - 32 w for <= and >; k or k + 1 for a range
  // of lanes), clamped to [0, hi].
  if (r.op == BinOp::Le || r.op == BinOp::Gt) k = b_.CreateAdd(k, b_.getInt64(1));
  Value* at = r.lane ? k : b_.CreateSub(k, b_.CreateShl(b_.CreateZExt(w, b_.getInt64Ty()), 5));
  Value* n = b_.CreateZExt(hi, b_.getInt64Ty());
  at = b_.CreateSelect(b_.CreateICmpSLT(at, b_.getInt64(0)), b_.getInt64(0), at);
  at = b_.CreateTrunc(b_.CreateSelect(b_.CreateICmpSGT(at, n), n, at), b_.getInt32Ty());
  if (r.op == BinOp::Lt || r.op == BinOp::Le)
    hi = at;
  else
    lo = at;
}

auto Gen::one_thread(Value* mask, const std::function<void()>& body) -> void {
  auto* cont = BasicBlock::Create(ctx_, "thread.next", fn_);
  BasicBlock* saved = lane_cont_;
  lane_cont_ = cont;
  Value* go = mask ? active(mask) : nullptr;
  if (exited_) {
    Value* live = b_.CreateICmpEQ(b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), exited_, tid_)),
                                  b_.getInt8(0));
    go = go ? b_.CreateAnd(go, live) : live;
  }
  if (go)
    if_then(go, body);
  else
    body();
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
  lane_cont_ = saved;
}

auto Gen::report(const PendingCheck& c) -> void {
  Value* worst = b_.CreateLoad(b_.getInt32Ty(), c.worst);
  if_then(b_.CreateICmpNE(worst, b_.getInt32(0)), [&] {
    Value* t = b_.CreateSub(worst, b_.getInt32(1));
    Value* i = c.index_expr ? index_of(c.index_expr, t)
               : c.narrow
                   ? b_.CreateSExt(b_.CreateLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(b_.getInt32Ty(), c.index, t)),
                                   b_.getInt64Ty())
                   : b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), c.index, t));
    Value* n = c.bound_per_thread ? b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), c.bound, t))
                                  : b_.CreateLoad(b_.getInt64Ty(), c.bound);
    mem_.fail(c.site, i, n, t);
    b_.CreateStore(b_.getInt32(0), c.worst);
  });
}

auto Gen::index_of(const ExprPtr& e, Value* t) -> Value* {
  Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
  tid_ = t;
  lane_ = b_.CreateAnd(t, b_.getInt32(31));
  lane_warp_ = b_.CreateLShr(t, 5);
  bool saved = recompute_;
  recompute_ = true;
  Value* v = i64(val_.expr(e), e->type);
  recompute_ = saved;
  tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
  return v;
}

auto Gen::any_active(Value* mask) -> Value* {
  auto* any = entry_alloca(b_.getInt8Ty(), "any_active");
  b_.CreateStore(b_.getInt8(0), any);
  threads(nullptr, [&] {
    Value* m = b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, tid_));
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt8Ty(), any), m), any);
  });
  return b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), any), b_.getInt8(0));
}

auto Gen::warp_condition(const ExprPtr& c) -> Value* {
  Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
  lane_warp_ = warp_;
  lane_ = b_.getInt32(0);
  tid_ = b_.CreateShl(warp_, 5, "", true, true);
  Value* v = val_.expr(c);
  tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
  return v;
}

}  // namespace detail

using detail::Gen;

Module generate(const lower::Lowered& lowered, const std::string& entry) {
  auto impl = std::make_unique<Module::Impl>();
  impl->ctx = std::make_unique<llvm::LLVMContext>();
  // LLVM's remarks and warnings (a lane loop it could not vectorize) go to the debug log, not to
  // the user's stderr (and never end the process, as LLVM's own handler does on an error).
  impl->ctx->setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* info, void*) {
        std::string text;
        llvm::raw_string_ostream os(text);
        llvm::DiagnosticPrinterRawOStream printer(os);
        info->print(printer);
        if (info->getSeverity() == llvm::DS_Error)
          logging::get().warn("cpu: LLVM: {}", text);
        else
          logging::get().debug("cpu: LLVM: {}", text);
      },
      nullptr);
  impl->mod = std::make_unique<llvm::Module>(entry, *impl->ctx);
  impl->entry = entry;
  Gen(lowered, entry, *impl).run();
  return Module(std::move(impl));
}

}  // namespace vantage::cpu
