// Vantage CPU code generator's Warps: shuffles, votes, ballot, mma.sync and ldmatrix on a warp's
// lanes. See gen.h.
#include "jit/cpu/gen.h"

namespace vantage::cpu::detail {

Warps::Warps(Gen& g) : g_(g), plan_(g.plan_), val_(g.val_), mem_(g.mem_), st_(g.st_) {}

auto Warps::warp(const Intrinsic& n, Value* mask) -> void {
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
  g_.threads(mask, [&] { st_.thread_intrinsic(n); });
}

auto Warps::lanes(const Intrinsic& n, Value* mask) -> void {
  llvm::Type* xty = g_.type(n.args[0]->type);
  Value* xs = nullptr;
  if (const auto* r = as<VarRef>(*n.args[0])) {
    auto it = g_.frame_->vars.find(r->var.get());
    if (it != g_.frame_->vars.end() && it->second.kind == Storage::Array) xs = it->second.ptr;
  }
  if (!xs) {
    xs = g_.scratch(g_.T_ * 8);
    g_.threads(mask, [&] { g_.b_.CreateStore(val_.expr(n.args[0]), g_.b_.CreateInBoundsGEP(xty, xs, g_.tid_)); });
  }
  Value* y_same = nullptr;  // the lane operand, when it is the same for every thread
  Value* ys = nullptr;
  if (n.args.size() > 1) {
    if (plan_.level(n.args[1], *g_.frame_) == Lvl::Uniform) {
      y_same = g_.b_.CreateTrunc(g_.i64(val_.expr(n.args[1]), n.args[1]->type), g_.b_.getInt32Ty());
    } else {
      ys = g_.scratch(g_.T_ * 4);
      g_.threads(mask, [&] {
        g_.b_.CreateStore(g_.b_.CreateTrunc(g_.i64(val_.expr(n.args[1]), n.args[1]->type), g_.b_.getInt32Ty()),
                          g_.b_.CreateInBoundsGEP(g_.b_.getInt32Ty(), ys, g_.tid_));
      });
    }
  }
  Storage& out = val_.define_array(n.outputs[0]);
  llvm::Type* oty = g_.type(n.outputs[0]->type);
  bool vote = n.op == IntrinsicOp::VoteAll || n.op == IntrinsicOp::VoteAny || n.op == IntrinsicOp::Ballot;
  if (g_.T_ % 32 == 0 && !xty->isIntegerTy(1) && !oty->isIntegerTy(1)) {
    g_.each_warp([&](Value* w) { warp_lanes(n, mask, xs, y_same, ys, out.ptr, g_.b_.CreateShl(w, 5)); }, "swarp");
    return;
  }
  g_.each_warp(
      [&](Value* w) {
        Value* first = g_.b_.CreateShl(w, 5);
        Value* size = g_.lanes_in(w);
        // The warp's ballot of the operands (for votes and ballot).
        auto* bits = g_.entry_alloca(g_.b_.getInt32Ty(), "ballot");
        g_.b_.CreateStore(g_.b_.getInt32(0), bits);
        if (vote) {
          g_.loop(
              g_.b_.getInt32(0), size,
              [&](Value* l) {
                Value* x = g_.b_.CreateLoad(xty, g_.b_.CreateInBoundsGEP(xty, xs, g_.b_.CreateOr(first, l)));
                Value* on = xty->isIntegerTy() ? g_.b_.CreateICmpNE(x, llvm::ConstantInt::get(xty, 0))
                                               : g_.b_.CreateFCmpUNE(x, llvm::ConstantFP::get(xty, 0.0));
                g_.b_.CreateStore(g_.b_.CreateOr(g_.b_.CreateLoad(g_.b_.getInt32Ty(), bits),
                                                 g_.b_.CreateShl(g_.b_.CreateZExt(on, g_.b_.getInt32Ty()), l)),
                                  bits);
              },
              "vlane");
        }
        g_.loop(
            g_.b_.getInt32(0), size,
            [&](Value* l) {
              Value* tid = g_.b_.CreateOr(first, l);
              Value* saved = g_.tid_;
              g_.tid_ = tid;
              auto body = [&] {
                Value* r;
                if (vote) {
                  Value* bl = g_.b_.CreateLoad(g_.b_.getInt32Ty(), bits);
                  if (n.op == IntrinsicOp::Ballot) {
                    r = bl;
                  } else if (n.op == IntrinsicOp::VoteAny) {
                    r = g_.b_.CreateICmpNE(bl, g_.b_.getInt32(0));
                  } else {
                    Value* full = g_.b_.CreateSelect(
                        g_.b_.CreateICmpEQ(size, g_.b_.getInt32(32)), g_.b_.getInt32(-1),
                        g_.b_.CreateSub(g_.b_.CreateShl(g_.b_.getInt32(1), size), g_.b_.getInt32(1)));
                    r = g_.b_.CreateICmpEQ(bl, full);
                  }
                } else {
                  Value* y = y_same ? y_same
                                    : g_.b_.CreateLoad(g_.b_.getInt32Ty(),
                                                       g_.b_.CreateInBoundsGEP(g_.b_.getInt32Ty(), ys, tid));
                  Value* src;
                  switch (n.op) {
                    case IntrinsicOp::ShflXor: src = g_.b_.CreateXor(l, g_.b_.CreateAnd(y, g_.b_.getInt32(31))); break;
                    case IntrinsicOp::ShflDown: src = g_.b_.CreateAdd(l, y); break;
                    case IntrinsicOp::ShflUp: src = g_.b_.CreateSub(l, y); break;
                    default: src = g_.b_.CreateAnd(y, g_.b_.getInt32(31)); break;
                  }
                  Value* inside =
                      g_.b_.CreateAnd(g_.b_.CreateICmpSGE(src, g_.b_.getInt32(0)), g_.b_.CreateICmpSLT(src, size));
                  Value* from = g_.b_.CreateAdd(first, g_.b_.CreateSelect(inside, src, l));
                  r = g_.b_.CreateLoad(xty, g_.b_.CreateInBoundsGEP(xty, xs, from));
                }
                if (r->getType() != oty) r = g_.b_.CreateZExt(r, oty);
                g_.b_.CreateStore(r, g_.b_.CreateInBoundsGEP(oty, out.ptr, tid));
              };
              if (mask)
                g_.if_then(g_.active(mask), body);
              else
                body();
              g_.tid_ = saved;
            },
            "slane", true);
      },
      "swarp");
}

auto Warps::warp_lanes(const Intrinsic& n, Value* mask, Value* xs, Value* y_same, Value* ys, Value* outp, Value* first)
    -> void {
  llvm::Type* xty = g_.type(n.args[0]->type);
  llvm::Type* oty = g_.type(n.outputs[0]->type);
  auto* i32 = g_.b_.getInt32Ty();
  auto* xv_ty = llvm::FixedVectorType::get(xty, 32);
  auto align = [](llvm::Type* t) { return llvm::Align(std::max<unsigned>(1, t->getScalarSizeInBits() / 8)); };
  Value* xv = g_.b_.CreateAlignedLoad(xv_ty, g_.b_.CreateInBoundsGEP(xty, xs, first), align(xty));
  Value* r = nullptr;
  if (n.op == IntrinsicOp::VoteAll || n.op == IntrinsicOp::VoteAny || n.op == IntrinsicOp::Ballot) {
    Value* on = xty->isIntegerTy() ? g_.b_.CreateICmpNE(xv, llvm::Constant::getNullValue(xv_ty))
                                   : g_.b_.CreateFCmpUNE(xv, llvm::Constant::getNullValue(xv_ty));
    Value* bits = g_.b_.CreateBitCast(on, i32);
    Value* one = n.op == IntrinsicOp::Ballot    ? bits
                 : n.op == IntrinsicOp::VoteAny ? g_.b_.CreateICmpNE(bits, g_.b_.getInt32(0))
                                                : g_.b_.CreateICmpEQ(bits, g_.b_.getInt32(-1));
    if (one->getType() != oty) one = g_.b_.CreateZExt(one, oty);
    r = g_.b_.CreateVectorSplat(32, one);
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
      r = g_.b_.CreateShuffleVector(xv, pick);
    } else {
      auto* iv_ty = llvm::FixedVectorType::get(i32, 32);
      std::vector<llvm::Constant*> ls;
      for (int l = 0; l < 32; ++l) ls.push_back(g_.b_.getInt32(l));
      Value* lane = llvm::ConstantVector::get(ls);
      Value* y = y_same ? g_.b_.CreateVectorSplat(32, y_same)
                        : g_.b_.CreateAlignedLoad(iv_ty, g_.b_.CreateInBoundsGEP(i32, ys, first), llvm::Align(4));
      Value* src;
      switch (n.op) {
        case IntrinsicOp::ShflXor:
          src = g_.b_.CreateXor(lane, g_.b_.CreateAnd(y, g_.b_.CreateVectorSplat(32, g_.b_.getInt32(31))));
          break;
        case IntrinsicOp::ShflDown: src = g_.b_.CreateAdd(lane, y); break;
        case IntrinsicOp::ShflUp: src = g_.b_.CreateSub(lane, y); break;
        default: src = g_.b_.CreateAnd(y, g_.b_.CreateVectorSplat(32, g_.b_.getInt32(31))); break;
      }
      Value* inside = g_.b_.CreateAnd(g_.b_.CreateICmpSGE(src, llvm::Constant::getNullValue(iv_ty)),
                                      g_.b_.CreateICmpSLT(src, g_.b_.CreateVectorSplat(32, g_.b_.getInt32(32))));
      Value* from = g_.b_.CreateSelect(inside, src, lane);
      // The operands in a warp-sized slot of our own, gathered from there.
      auto* slot = g_.entry_alloca(llvm::ArrayType::get(xty, 32), "warp_x");
      g_.b_.CreateAlignedStore(xv, slot, align(xty));
      Value* ptrs = g_.b_.CreateInBoundsGEP(xty, slot, from);
      r = g_.b_.CreateMaskedGather(xv_ty, ptrs, align(xty));
    }
    if (xty != oty) r = g_.b_.CreateZExt(r, llvm::FixedVectorType::get(oty, 32));
  }
  Value* at = g_.b_.CreateInBoundsGEP(oty, outp, first);
  if (!mask) {
    g_.b_.CreateAlignedStore(r, at, align(oty));
    return;
  }
  auto* mv_ty = llvm::FixedVectorType::get(g_.b_.getInt8Ty(), 32);
  Value* on = g_.b_.CreateICmpNE(
      g_.b_.CreateAlignedLoad(mv_ty, g_.b_.CreateInBoundsGEP(g_.b_.getInt8Ty(), mask, first), llvm::Align(1)),
      llvm::Constant::getNullValue(mv_ty));
  g_.b_.CreateMaskedStore(r, at, align(oty), on);
}

auto Warps::fragment(const MemPtr& m, SourceLoc l) -> Value* {
  const MemRef& r = mem_.memref(m.get(), l);
  if (r.space != MemSpace::Local || !r.offsets.empty())
    throw InternalError("cpu: a fragment that is not a whole local array");
  return r.base;
}

auto Warps::mma(const Intrinsic& n, Value* mask) -> void {
  (void)mask;  // the checker guarantees all 32 lanes
  auto* ptr = llvm::PointerType::get(g_.ctx_, 0);
  auto fn =
      g_.helper("vt_cpu_mma", g_.b_.getVoidTy(),
                {g_.b_.getInt32Ty(), ptr, ptr, ptr, ptr, g_.b_.getInt32Ty(), g_.b_.getInt32Ty(), g_.b_.getInt32Ty()});
  Value* d = fragment(n.mems[0], n.loc);
  Value* a = fragment(n.mems[1], n.loc);
  Value* bb = fragment(n.mems[2], n.loc);
  Value* c = fragment(n.mems[3], n.loc);
  g_.each_warp(
      [&](Value* w) {
        g_.b_.CreateCall(fn, {g_.b_.getInt32(static_cast<std::int32_t>(n.imms[0])), d, a, bb, c,
                              g_.b_.getInt32(static_cast<std::int32_t>(g_.T_)), w,
                              g_.b_.getInt32(n.mems[1]->elem == ScalarType::F16    ? 1
                                             : n.mems[1]->elem == ScalarType::BF16 ? 2
                                             : n.mems[1]->elem == ScalarType::I8   ? 3
                                                                                   : 0)});
      },
      "mwarp");
}

auto Warps::ldmatrix(const Intrinsic& n, Value* mask) -> void {
  auto* ptr = llvm::PointerType::get(g_.ctx_, 0);
  const MemRef& src = mem_.memref(n.mems[1].get(), n.loc);
  Value* dst = fragment(n.mems[0], n.loc);
  // Each lane's row address (an element index of the source), then the helper per warp.
  Value* rows = g_.scratch(g_.T_ * 8);
  g_.threads(mask, [&] {
    g_.b_.CreateStore(mem_.flat(src, val_.expr(n.args[0]), n.args[0]->type),
                      g_.b_.CreateInBoundsGEP(g_.b_.getInt64Ty(), rows, g_.tid_));
  });
  auto fn = g_.helper("vt_cpu_ldmatrix", g_.b_.getVoidTy(),
                      {g_.b_.getInt32Ty(), ptr, ptr, ptr, g_.b_.getInt32Ty(), g_.b_.getInt32Ty(), g_.b_.getInt64Ty(),
                       g_.b_.getInt64Ty(), ptr, g_.b_.getInt64Ty(), g_.b_.getInt64Ty(), g_.b_.getInt32Ty()});
  std::int64_t s = mem_.site(n.loc, src.name, false);
  g_.each_warp(
      [&](Value* w) {
        g_.b_.CreateCall(fn, {g_.b_.getInt32(static_cast<std::int32_t>(n.imms[0])), dst, src.base, rows,
                              g_.b_.getInt32(static_cast<std::int32_t>(g_.T_)), w, g_.b_.getInt64(g_.bytes(src.elem)),
                              src.bound, g_.err_, g_.b_.getInt64(lower::check_tag(g_.entry_name_)), g_.block_,
                              g_.b_.getInt32(static_cast<std::int32_t>(s))});
      },
      "lwarp");
}

}  // namespace vantage::cpu::detail
