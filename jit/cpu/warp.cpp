// Vantage CPU code generator: warp collectives: shuffles, votes, ballot, mma.sync and ldmatrix on a warp's lanes. See
// gen.h.
#include "jit/cpu/gen.h"

namespace vantage::cpu::detail {

auto Gen::warp(const Intrinsic& n, Value* mask) -> void {
  if (!runs_on(n.op, kCpu)) unsupported(user_name(n.op), n.loc);
  switch (n.op) {
    case IntrinsicOp::SyncThreads:
    case IntrinsicOp::SyncWarp:
    case IntrinsicOp::NamedBarrier: return;  // lowered to Barrier statements; nothing to do between loops
    case IntrinsicOp::MmaSync: mma(n, mask); return;
    case IntrinsicOp::Ldmatrix: ldmatrix(n, mask); return;
    case IntrinsicOp::ShflXor:
    case IntrinsicOp::ShflDown:
    case IntrinsicOp::ShflUp:
    case IntrinsicOp::ShflIdx:
    case IntrinsicOp::VoteAll:
    case IntrinsicOp::VoteAny:
    case IntrinsicOp::Ballot: lanes(n, mask); return;
    default: break;
  }
  // Not a collective: one per thread.
  threads(mask, [&] { thread_intrinsic(n); });
}

auto Gen::lanes(const Intrinsic& n, Value* mask) -> void {
  llvm::Type* xty = type(n.args[0]->type);
  Value* xs = nullptr;
  if (const auto* r = as<VarRef>(*n.args[0])) {
    auto it = frame_->vars.find(r->var.get());
    if (it != frame_->vars.end() && it->second.kind == Storage::Array) xs = it->second.ptr;
  }
  if (!xs) {
    xs = scratch(T_ * 8);
    threads(mask, [&] { b_.CreateStore(expr(n.args[0]), b_.CreateInBoundsGEP(xty, xs, tid_)); });
  }
  Value* y_same = nullptr;  // the lane operand, when it is the same for every thread
  Value* ys = nullptr;
  if (n.args.size() > 1) {
    if (level(n.args[1], *frame_) == Lvl::Uniform) {
      y_same = b_.CreateTrunc(i64(expr(n.args[1]), n.args[1]->type), b_.getInt32Ty());
    } else {
      ys = scratch(T_ * 4);
      threads(mask, [&] {
        b_.CreateStore(b_.CreateTrunc(i64(expr(n.args[1]), n.args[1]->type), b_.getInt32Ty()),
                       b_.CreateInBoundsGEP(b_.getInt32Ty(), ys, tid_));
      });
    }
  }
  Storage& out = define_array(n.outputs[0]);
  llvm::Type* oty = type(n.outputs[0]->type);
  bool vote = n.op == IntrinsicOp::VoteAll || n.op == IntrinsicOp::VoteAny || n.op == IntrinsicOp::Ballot;
  if (T_ % 32 == 0 && !xty->isIntegerTy(1) && !oty->isIntegerTy(1)) {
    each_warp([&](Value* w) { warp_lanes(n, mask, xs, y_same, ys, out.ptr, b_.CreateShl(w, 5)); }, "swarp");
    return;
  }
  each_warp(
      [&](Value* w) {
        Value* first = b_.CreateShl(w, 5);
        Value* size = lanes_in(w);
        // The warp's ballot of the operands (for votes and ballot).
        auto* bits = entry_alloca(b_.getInt32Ty(), "ballot");
        b_.CreateStore(b_.getInt32(0), bits);
        if (vote) {
          loop(
              b_.getInt32(0), size,
              [&](Value* l) {
                Value* x = b_.CreateLoad(xty, b_.CreateInBoundsGEP(xty, xs, b_.CreateOr(first, l)));
                Value* on = xty->isIntegerTy() ? b_.CreateICmpNE(x, llvm::ConstantInt::get(xty, 0))
                                               : b_.CreateFCmpUNE(x, llvm::ConstantFP::get(xty, 0.0));
                b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt32Ty(), bits),
                                           b_.CreateShl(b_.CreateZExt(on, b_.getInt32Ty()), l)),
                               bits);
              },
              "vlane");
        }
        loop(
            b_.getInt32(0), size,
            [&](Value* l) {
              Value* tid = b_.CreateOr(first, l);
              Value* saved = tid_;
              tid_ = tid;
              auto body = [&] {
                Value* r;
                if (vote) {
                  Value* bl = b_.CreateLoad(b_.getInt32Ty(), bits);
                  if (n.op == IntrinsicOp::Ballot) {
                    r = bl;
                  } else if (n.op == IntrinsicOp::VoteAny) {
                    r = b_.CreateICmpNE(bl, b_.getInt32(0));
                  } else {
                    Value* full = b_.CreateSelect(b_.CreateICmpEQ(size, b_.getInt32(32)), b_.getInt32(-1),
                                                  b_.CreateSub(b_.CreateShl(b_.getInt32(1), size), b_.getInt32(1)));
                    r = b_.CreateICmpEQ(bl, full);
                  }
                } else {
                  Value* y =
                      y_same ? y_same : b_.CreateLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(b_.getInt32Ty(), ys, tid));
                  Value* src;
                  switch (n.op) {
                    case IntrinsicOp::ShflXor: src = b_.CreateXor(l, b_.CreateAnd(y, b_.getInt32(31))); break;
                    case IntrinsicOp::ShflDown: src = b_.CreateAdd(l, y); break;
                    case IntrinsicOp::ShflUp: src = b_.CreateSub(l, y); break;
                    default: src = b_.CreateAnd(y, b_.getInt32(31)); break;
                  }
                  Value* inside = b_.CreateAnd(b_.CreateICmpSGE(src, b_.getInt32(0)), b_.CreateICmpSLT(src, size));
                  Value* from = b_.CreateAdd(first, b_.CreateSelect(inside, src, l));
                  r = b_.CreateLoad(xty, b_.CreateInBoundsGEP(xty, xs, from));
                }
                if (r->getType() != oty) r = b_.CreateZExt(r, oty);
                b_.CreateStore(r, b_.CreateInBoundsGEP(oty, out.ptr, tid));
              };
              if (mask)
                if_then(active(mask), body);
              else
                body();
              tid_ = saved;
            },
            "slane", true);
      },
      "swarp");
}

auto Gen::warp_lanes(const Intrinsic& n, Value* mask, Value* xs, Value* y_same, Value* ys, Value* outp, Value* first)
    -> void {
  llvm::Type* xty = type(n.args[0]->type);
  llvm::Type* oty = type(n.outputs[0]->type);
  auto* i32 = b_.getInt32Ty();
  auto* xv_ty = llvm::FixedVectorType::get(xty, 32);
  auto align = [](llvm::Type* t) { return llvm::Align(std::max<unsigned>(1, t->getScalarSizeInBits() / 8)); };
  Value* xv = b_.CreateAlignedLoad(xv_ty, b_.CreateInBoundsGEP(xty, xs, first), align(xty));
  Value* r = nullptr;
  if (n.op == IntrinsicOp::VoteAll || n.op == IntrinsicOp::VoteAny || n.op == IntrinsicOp::Ballot) {
    Value* on = xty->isIntegerTy() ? b_.CreateICmpNE(xv, llvm::Constant::getNullValue(xv_ty))
                                   : b_.CreateFCmpUNE(xv, llvm::Constant::getNullValue(xv_ty));
    Value* bits = b_.CreateBitCast(on, i32);
    Value* one = n.op == IntrinsicOp::Ballot    ? bits
                 : n.op == IntrinsicOp::VoteAny ? b_.CreateICmpNE(bits, b_.getInt32(0))
                                                : b_.CreateICmpEQ(bits, b_.getInt32(-1));
    if (one->getType() != oty) one = b_.CreateZExt(one, oty);
    r = b_.CreateVectorSplat(32, one);
  } else {
    auto source = [&](std::int64_t l, std::int64_t y) -> int {
      std::int64_t s = n.op == IntrinsicOp::ShflXor    ? (l ^ (y & 31))
                       : n.op == IntrinsicOp::ShflDown ? l + y
                       : n.op == IntrinsicOp::ShflUp   ? l - y
                                                       : (y & 31);
      return static_cast<int>(s >= 0 && s < 32 ? s : l);
    };
    auto* k = y_same ? llvm::dyn_cast<llvm::ConstantInt>(y_same) : nullptr;
    if (k) {
      std::vector<int> pick(32);
      for (int l = 0; l < 32; ++l) pick[static_cast<std::size_t>(l)] = source(l, k->getSExtValue());
      r = b_.CreateShuffleVector(xv, pick);
    } else {
      auto* iv_ty = llvm::FixedVectorType::get(i32, 32);
      std::vector<llvm::Constant*> ls;
      for (int l = 0; l < 32; ++l) ls.push_back(b_.getInt32(l));
      Value* lane = llvm::ConstantVector::get(ls);
      Value* y = y_same ? b_.CreateVectorSplat(32, y_same)
                        : b_.CreateAlignedLoad(iv_ty, b_.CreateInBoundsGEP(i32, ys, first), llvm::Align(4));
      Value* src;
      switch (n.op) {
        case IntrinsicOp::ShflXor:
          src = b_.CreateXor(lane, b_.CreateAnd(y, b_.CreateVectorSplat(32, b_.getInt32(31))));
          break;
        case IntrinsicOp::ShflDown: src = b_.CreateAdd(lane, y); break;
        case IntrinsicOp::ShflUp: src = b_.CreateSub(lane, y); break;
        default: src = b_.CreateAnd(y, b_.CreateVectorSplat(32, b_.getInt32(31))); break;
      }
      Value* inside = b_.CreateAnd(b_.CreateICmpSGE(src, llvm::Constant::getNullValue(iv_ty)),
                                   b_.CreateICmpSLT(src, b_.CreateVectorSplat(32, b_.getInt32(32))));
      Value* from = b_.CreateSelect(inside, src, lane);
      // The operands in a warp-sized slot of our own, gathered from there.
      auto* slot = entry_alloca(llvm::ArrayType::get(xty, 32), "warp_x");
      b_.CreateAlignedStore(xv, slot, align(xty));
      Value* ptrs = b_.CreateInBoundsGEP(xty, slot, from);
      r = b_.CreateMaskedGather(xv_ty, ptrs, align(xty));
    }
    if (xty != oty) r = b_.CreateZExt(r, llvm::FixedVectorType::get(oty, 32));
  }
  Value* at = b_.CreateInBoundsGEP(oty, outp, first);
  if (!mask) {
    b_.CreateAlignedStore(r, at, align(oty));
    return;
  }
  auto* mv_ty = llvm::FixedVectorType::get(b_.getInt8Ty(), 32);
  Value* on =
      b_.CreateICmpNE(b_.CreateAlignedLoad(mv_ty, b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, first), llvm::Align(1)),
                      llvm::Constant::getNullValue(mv_ty));
  b_.CreateMaskedStore(r, at, align(oty), on);
}

auto Gen::fragment(const MemPtr& m, SourceLoc l) -> Value* {
  const MemRef& r = memref(m.get(), l);
  if (r.space != MemSpace::Local || !r.offsets.empty())
    throw InternalError("cpu: a fragment that is not a whole local array");
  return r.base;
}

auto Gen::mma(const Intrinsic& n, Value* mask) -> void {
  (void)mask;  // the checker guarantees all 32 lanes
  auto* ptr = llvm::PointerType::get(ctx_, 0);
  auto fn = helper("vt_cpu_mma", b_.getVoidTy(),
                   {b_.getInt32Ty(), ptr, ptr, ptr, ptr, b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty()});
  Value* d = fragment(n.mems[0], n.loc);
  Value* a = fragment(n.mems[1], n.loc);
  Value* bb = fragment(n.mems[2], n.loc);
  Value* c = fragment(n.mems[3], n.loc);
  each_warp(
      [&](Value* w) {
        b_.CreateCall(fn, {b_.getInt32(static_cast<std::int32_t>(n.imms[0])), d, a, bb, c,
                           b_.getInt32(static_cast<std::int32_t>(T_)), w,
                           b_.getInt32(n.mems[1]->elem == ScalarType::F16    ? 1
                                       : n.mems[1]->elem == ScalarType::BF16 ? 2
                                                                             : 0)});
      },
      "mwarp");
}

auto Gen::ldmatrix(const Intrinsic& n, Value* mask) -> void {
  auto* ptr = llvm::PointerType::get(ctx_, 0);
  const MemRef& src = memref(n.mems[1].get(), n.loc);
  Value* dst = fragment(n.mems[0], n.loc);
  // Each lane's row address (an element index of the source), then the helper per warp.
  Value* rows = scratch(T_ * 8);
  threads(mask, [&] {
    b_.CreateStore(flat(src, expr(n.args[0]), n.args[0]->type), b_.CreateInBoundsGEP(b_.getInt64Ty(), rows, tid_));
  });
  auto fn = helper("vt_cpu_ldmatrix", b_.getVoidTy(),
                   {b_.getInt32Ty(), ptr, ptr, ptr, b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt64Ty(), b_.getInt64Ty(),
                    ptr, b_.getInt64Ty(), b_.getInt64Ty(), b_.getInt32Ty()});
  std::int64_t s = site(n.loc, src.name, false);
  each_warp(
      [&](Value* w) {
        b_.CreateCall(fn,
                      {b_.getInt32(static_cast<std::int32_t>(n.imms[0])), dst, src.base, rows,
                       b_.getInt32(static_cast<std::int32_t>(T_)), w, b_.getInt64(bytes(src.elem)), src.bound, err_,
                       b_.getInt64(lower::check_tag(entry_name_)), block_, b_.getInt32(static_cast<std::int32_t>(s))});
      },
      "lwarp");
}

}  // namespace vantage::cpu::detail
