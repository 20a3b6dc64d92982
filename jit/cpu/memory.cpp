// Vantage CPU code generator's Memory: memory references through calls, flat indices, checked and
// clamped loads, stores. See gen.h.
#include "jit/cpu/gen.h"

namespace vantage::cpu::detail {

Memory::Memory(Gen& g) : g_(g), plan_(g.plan_), val_(g.val_) {}

auto Memory::memref(const MemNode* m, SourceLoc l) -> MemRef& {
  for (Frame* f = g_.frame_; f; f = nullptr) {
    auto it = f->mems.find(m);
    if (it != f->mems.end()) return it->second;
  }
  throw InternalError("cpu: memory '" + m->name + "' used before it exists (" + l.str() + ")");
}

auto Memory::offset(const MemRef& r, Value* i) -> Value* {
  for (const auto& [v, arr] : r.offsets) {
    Value* o = arr ? static_cast<Value*>(
                         g_.b_.CreateLoad(g_.b_.getInt64Ty(), g_.b_.CreateInBoundsGEP(g_.b_.getInt64Ty(), v, g_.tid_)))
                   : v;
    i = g_.b_.CreateAdd(i, o);
  }
  return i;
}

auto Memory::address(const MemRef& r, Value* i) -> Value* {
  llvm::Type* et = g_.memtype(r.elem);
  if (r.space == MemSpace::Local) {
    // [element][thread]: the same element of neighbouring threads is contiguous.
    Value* at =
        g_.b_.CreateAdd(g_.b_.CreateMul(i, g_.b_.getInt64(g_.T_)), g_.b_.CreateSExt(g_.tid_, g_.b_.getInt64Ty()));
    return g_.b_.CreateGEP(et, r.base, at);
  }
  return g_.b_.CreateGEP(et, r.base, i);
}

auto Memory::fail(std::int64_t site, Value* index, Value* bound, Value* thread) -> void {
  auto fn = g_.helper("vt_cpu_fail", g_.b_.getVoidTy(),
                      {llvm::PointerType::get(g_.ctx_, 0), g_.b_.getInt64Ty(), g_.b_.getInt32Ty(), g_.b_.getInt64Ty(),
                       g_.b_.getInt32Ty(), g_.b_.getInt64Ty(), g_.b_.getInt64Ty()});
  if (!thread) thread = g_.tid_ ? g_.tid_ : g_.b_.getInt32(0);
  g_.b_.CreateCall(fn, {g_.err_, g_.b_.getInt64(lower::check_tag(g_.entry_name_)),
                        g_.b_.getInt32(static_cast<std::int32_t>(site)), g_.block_, thread, index, bound});
}

auto Memory::checked(Value* i, Value* bound, std::int64_t site_no, const std::function<void()>& body, Value* narrow,
                     bool bound_same, const ExprPtr& index_expr) -> void {
  Value* ok;
  if (narrow) {
    Value* b32 = g_.b_.CreateTrunc(g_.b_.CreateSelect(g_.b_.CreateICmpULT(bound, g_.b_.getInt64(std::int64_t{1} << 31)),
                                                      bound, g_.b_.getInt64(std::int64_t{1} << 31)),
                                   g_.b_.getInt32Ty());
    ok = g_.b_.CreateICmpULT(narrow, b32);  // a negative index is 2^31 or more as unsigned
  } else {
    ok = g_.b_.CreateAnd(g_.b_.CreateICmpSGE(i, g_.b_.getInt64(0)), g_.b_.CreateICmpSLT(i, bound));
  }
  auto* yes = BasicBlock::Create(g_.ctx_, "inside", g_.fn_);
  auto* no = BasicBlock::Create(g_.ctx_, "outside", g_.fn_);
  auto* join = BasicBlock::Create(g_.ctx_, "checked", g_.fn_);
  g_.b_.CreateCondBr(ok, yes, no, llvm::MDBuilder(g_.ctx_).createBranchWeights(1000, 1));
  g_.b_.SetInsertPoint(no);
  std::optional<PendingCheck> pending;
  if (g_.pending_ && g_.tid_) {
    PendingCheck c;
    c.worst = g_.zeroed_slot(g_.b_.getInt32Ty(), "worst");
    c.narrow = narrow != nullptr;
    if (index_expr && !g_.frame_->parent && plan_.recomputable(index_expr))
      c.index_expr = index_expr;  // (kernel frame only: its values outlive the loop)
    else
      c.index = g_.scratch(g_.T_ * 8);
    c.bound_per_thread = !bound_same;
    c.bound = bound_same ? static_cast<Value*>(g_.entry_alloca(g_.b_.getInt64Ty(), "bound")) : g_.scratch(g_.T_ * 8);
    c.site = site_no;
    g_.pending_->push_back(c);
    pending = c;
  } else {
    fail(site_no, i, bound);
  }
  g_.b_.CreateBr(join);
  g_.b_.SetInsertPoint(yes);
  body();
  g_.b_.CreateBr(join);
  g_.b_.SetInsertPoint(join);
  if (pending) {
    const PendingCheck& c = *pending;
    Value* mine = g_.b_.CreateSelect(ok, g_.b_.getInt32(0), g_.b_.CreateAdd(g_.tid_, g_.b_.getInt32(1)));
    Value* w = g_.b_.CreateLoad(g_.b_.getInt32Ty(), c.worst);
    g_.b_.CreateStore(g_.b_.CreateSelect(g_.b_.CreateICmpUGT(mine, w), mine, w), c.worst);
    auto keep = [&](llvm::Type* t, Value* arr, Value* v) {
      Value* at = g_.b_.CreateInBoundsGEP(t, arr, g_.tid_);
      g_.b_.CreateStore(g_.b_.CreateSelect(ok, g_.b_.CreateLoad(t, at), v), at);
    };
    if (c.index_expr)
      ;
    else if (narrow)
      keep(g_.b_.getInt32Ty(), c.index, narrow);
    else
      keep(g_.b_.getInt64Ty(), c.index, i);
    if (bound_same)
      g_.b_.CreateStore(bound, c.bound);
    else
      keep(g_.b_.getInt64Ty(), c.bound, bound);
  }
}

auto Memory::clamp_of(const ExprPtr& index) -> std::optional<Clamp> {
  if (!g_.lane_ || !is_integral(index->type)) return std::nullopt;
  Clamp c;
  std::vector<ExprPtr> terms;
  std::function<void(const ExprPtr&)> split = [&](const ExprPtr& e) {
    const auto* b = as<Binary>(*e);
    if (b && b->op == BinOp::Add && b->a->type == e->type && b->b->type == e->type) {
      split(b->a);
      split(b->b);
    } else {
      terms.push_back(e);
    }
  };
  split(index);
  for (const auto& t : terms) {
    if (plan_.lane_invariant(t)) {
      c.invariant.push_back(t);
      continue;
    }
    const auto* b = as<Binary>(*t);
    if (c.clamp || !b || (b->op != BinOp::Min && b->op != BinOp::Max)) return std::nullopt;
    if (plan_.lane_invariant(b->b))
      c.a_left = true;
    else if (plan_.lane_invariant(b->a))
      c.a_left = false;
    else
      return std::nullopt;
    c.clamp = b;
  }
  if (!c.clamp) return std::nullopt;
  return c;
}

auto Memory::clamp_value(const MemRef& r, const Clamp& c, ScalarType index_type) -> Value* {
  llvm::Type* et = g_.memtype(r.elem);
  Value* fu = clamp_flat(r, c, val_.expr(c.a_left ? c.clamp->b : c.clamp->a), index_type);
  Value* u_inside = g_.b_.CreateAnd(g_.b_.CreateICmpSGE(fu, g_.b_.getInt64(0)), g_.b_.CreateICmpSLT(fu, r.bound));
  return g_.b_.CreateLoad(et, g_.b_.CreateSelect(u_inside, g_.b_.CreateGEP(et, r.base, fu), g_.zero_of(et)));
}

auto Memory::clamped_load(const MemRef& r, const Clamp& c, ScalarType index_type, Value* vu) -> Value* {
  llvm::Type* et = g_.memtype(r.elem);
  Value* a = val_.expr(c.a_left ? c.clamp->a : c.clamp->b);
  Value* u = val_.expr(c.a_left ? c.clamp->b : c.clamp->a);
  bool sgn = !unsigned_type(index_type);
  Value* take_a = c.clamp->op == BinOp::Min ? (sgn ? g_.b_.CreateICmpSLE(a, u) : g_.b_.CreateICmpULE(a, u))
                                            : (sgn ? g_.b_.CreateICmpSGE(a, u) : g_.b_.CreateICmpUGE(a, u));
  Value* at_a = address(r, clamp_flat(r, c, a, index_type));
  BasicBlock* from = g_.b_.GetInsertBlock();
  auto* yes = BasicBlock::Create(g_.ctx_, "clamp.a", g_.fn_);
  auto* join = BasicBlock::Create(g_.ctx_, "clamp.join", g_.fn_);
  g_.b_.CreateCondBr(take_a, yes, join, llvm::MDBuilder(g_.ctx_).createBranchWeights(1000, 1));
  g_.b_.SetInsertPoint(yes);
  Value* va = g_.b_.CreateLoad(et, at_a);
  g_.b_.CreateBr(join);
  g_.b_.SetInsertPoint(join);
  auto* phi = g_.b_.CreatePHI(et, 2);
  phi->addIncoming(va, yes);
  phi->addIncoming(vu, from);
  return phi;
}

auto Memory::load(const Load& n) -> Value* {
  const MemRef& r = memref(n.mem.get(), n.loc);
  const ExprPtr& index = n.indices[0];
  Value* raw = val_.expr(index);
  Value* local = g_.i64(raw, index->type);
  Value* narrow = index->type == ScalarType::I32 ? raw : nullptr;
  llvm::Type* et = g_.memtype(r.elem);
  auto clamp = r.space == MemSpace::Local || !r.bound ? std::nullopt : clamp_of(index);
  Value* vu = clamp ? clamp_value(r, *clamp, index->type) : nullptr;
  auto read = [&]() -> Value* {
    return clamp ? clamped_load(r, *clamp, index->type, vu) : g_.b_.CreateLoad(et, address(r, offset(r, local)));
  };
  if (!n.bound) return g_.from_mem(read(), r.elem);
  Value* bound = val_.expr(n.bound);
  auto* slot = g_.entry_alloca(et, "checked_load");
  g_.b_.CreateStore(llvm::Constant::getNullValue(et), slot);
  checked(
      local, bound, n.site, [&] { g_.b_.CreateStore(read(), slot); }, narrow, plan_.lane_invariant(n.bound), index);
  return g_.from_mem(g_.b_.CreateLoad(et, slot), r.elem);
}

auto Memory::store(const Store& n) -> void {
  const MemRef& r = memref(n.mem.get(), n.loc);
  Value* raw = val_.expr(n.indices[0]);
  Value* local = g_.i64(raw, n.indices[0]->type);
  Value* v = g_.to_mem(val_.expr(n.value), r.elem);
  if (!n.bound) {
    g_.b_.CreateStore(v, address(r, offset(r, local)));
    return;
  }
  checked(
      local, val_.expr(n.bound), n.site, [&] { g_.b_.CreateStore(v, address(r, offset(r, local))); },
      n.indices[0]->type == ScalarType::I32 ? raw : nullptr, plan_.lane_invariant(n.bound), n.indices[0]);
}

auto Memory::flat(const MemRef& r, Value* index, ScalarType index_type) -> Value* {
  return offset(r, g_.i64(index, index_type));
}

auto Memory::site(SourceLoc l, const std::string& memory, bool write) -> std::int64_t {
  g_.out_.extra_sites.push_back({l, memory, write});
  return static_cast<std::int64_t>(g_.L_.checks.size() + g_.out_.extra_sites.size() - 1);
}

auto Memory::clamp_flat(const MemRef& r, const Clamp& c, Value* x, ScalarType index_type) -> Value* {
  for (const auto& t : c.invariant) x = g_.b_.CreateAdd(val_.expr(t), x);
  return offset(r, g_.i64(x, index_type));
}

}  // namespace vantage::cpu::detail
