// Vantage CPU code generator: variables (scalars, recomputed, per-thread arrays) and expressions. See gen.h.
#include "jit/cpu/gen.h"

namespace vantage::cpu::detail {

auto Gen::define(const VarPtr& v, const ExprPtr& value) -> Storage& {
  Frame& f = *frame_;
  auto it = f.vars.find(v.get());
  if (it != f.vars.end()) return it->second;
  Storage s;
  auto leaf = f.leaf_of.find(v.get());
  bool varying = f.levels[v.get()] == Lvl::Varying;
  if (!varying || f.in_thread || (leaf != f.leaf_of.end() && leaf->second >= 0)) {
    s.kind = Storage::Scalar;
    s.ptr = entry_alloca(type(v->type), v->name);
  } else if (value && !f.reassigned.count(v.get()) && pure(value, f)) {
    s.kind = Storage::Remat;
    s.remat = value;
  } else {
    s.kind = Storage::Array;
    s.ptr = scratch(T_ * static_cast<std::int64_t>(8));
  }
  return f.vars.emplace(v.get(), s).first->second;
}

auto Gen::define_array(const VarPtr& v) -> Storage& {
  Frame& f = *frame_;
  auto it = f.vars.find(v.get());
  if (it != f.vars.end()) {
    if (it->second.kind != Storage::Array) throw InternalError("cpu: variable '" + v->name + "' changed storage");
    return it->second;
  }
  Storage s;
  s.kind = Storage::Array;
  s.ptr = scratch(T_ * static_cast<std::int64_t>(8));
  return f.vars.emplace(v.get(), s).first->second;
}

auto Gen::read_var(const VarNode* v, SourceLoc l) -> Value* {
  Frame& f = *frame_;
  auto it = f.vars.find(v);
  if (it == f.vars.end())
    throw InternalError("cpu: variable '" + v->name + "' used before it is defined at " + l.str());
  const Storage& s = it->second;
  switch (s.kind) {
    case Storage::Fixed: return s.value;
    case Storage::Scalar: return b_.CreateLoad(type(v->type), s.ptr, v->name);
    case Storage::Remat: return expr(s.remat);
    case Storage::Array:
      if (!tid_) throw InternalError("cpu: per-thread variable '" + v->name + "' read outside a thread loop");
      return b_.CreateLoad(type(v->type), b_.CreateInBoundsGEP(type(v->type), s.ptr, tid_));
  }
  return nullptr;
}

auto Gen::write_var(const VarPtr& v, Value* x, const ExprPtr& def) -> void {
  Storage& s = define(v, def);
  switch (s.kind) {
    case Storage::Scalar: b_.CreateStore(x, s.ptr); return;
    case Storage::Array:
      if (!tid_) throw InternalError("cpu: per-thread variable '" + v->name + "' written outside a thread loop");
      b_.CreateStore(x, b_.CreateInBoundsGEP(type(v->type), s.ptr, tid_));
      return;
    case Storage::Remat: return;  // recomputed where it is read
    case Storage::Fixed: throw InternalError("cpu: a parameter is assigned");
  }
}

auto Gen::expr(const ExprPtr& e) -> Value* {
  return dispatch(*e, Overloaded{
                          [&](const Literal& n) -> Value* {
                            if (n.type == ScalarType::Bool) return b_.getInt1(n.i != 0);
                            if (is_integral(n.type))
                              return llvm::ConstantInt::get(type(n.type), static_cast<std::uint64_t>(n.i));
                            if (n.type == ScalarType::F64) return llvm::ConstantFP::get(b_.getDoubleTy(), n.f);
                            double v = n.f;
                            if (half_type(n.type)) return round16(llvm::ConstantFP::get(b_.getFloatTy(), v), n.type);
                            return llvm::ConstantFP::get(b_.getFloatTy(), static_cast<float>(v));
                          },
                          [&](const VarRef& n) {
                            if (recompute_ && frame_->levels[n.var.get()] == Lvl::Varying)
                              if (const ExprPtr* d = definition(n.var.get())) return expr(*d);
                            return read_var(n.var.get(), n.loc);
                          },
                          [&](const Unary& n) { return unary(n); },
                          [&](const Binary& n) { return binary(n); },
                          [&](const Cast& n) { return cast(n.a->type, n.type, expr(n.a)); },
                          [&](const Select& n) {
                            Value* c = expr(n.c);
                            Value* a = expr(n.a);
                            Value* b = expr(n.b);
                            return b_.CreateSelect(c, a, b);
                          },
                          [&](const MathCall& n) { return math(n); },
                          [](const Id&) -> Value* { throw InternalError("cpu: an id() in lowered IR"); },
                          [&](const Builtin& n) { return builtin(n.which); },
                          [&](const Load& n) { return load(n); },
                      });
}

auto Gen::builtin(BuiltinKind which) -> Value* {
  Frame& f = *frame_;
  if (which == BuiltinKind::BlockInGrid) return f.bid;
  if (which == BuiltinKind::BlocksInGrid) return b_.CreateTrunc(blocks_, b_.getInt32Ty());
  if (!f.tid_array) {
    if (!tid_) throw InternalError("cpu: the thread's position read outside a thread loop");
    return tid_;
  }
  if (f.tid_level == Lvl::Uniform) return f.tid_array;  // a uniform position is held as its value
  return b_.CreateTrunc(b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), f.tid_array, tid_)),
                        b_.getInt32Ty());
}

auto Gen::unary(const Unary& n) -> Value* {
  Value* a = expr(n.a);
  if (!is_integral(n.type)) {
    if (n.op == UnOp::Neg) return round16(b_.CreateFNeg(a), n.type);
    return a;
  }
  switch (n.op) {
    case UnOp::Neg: return b_.CreateSub(llvm::ConstantInt::get(a->getType(), 0), a);
    case UnOp::Not: return b_.CreateICmpEQ(a, llvm::ConstantInt::get(a->getType(), 0));
    case UnOp::BitNot: return b_.CreateNot(a);
  }
  return a;
}

auto Gen::definition(const VarNode* v) -> const ExprPtr* {
  Frame& f = *frame_;
  if (f.reassigned.count(v)) return nullptr;
  auto it = f.defs.find(v);
  return it == f.defs.end() ? nullptr : &it->second;
}

auto Gen::is_tid(const ExprPtr& e, int depth) -> bool {
  if (depth > 8) return false;
  if (const auto* b = as<Builtin>(*e)) return b->which == BuiltinKind::ThreadInBlock && !frame_->tid_array;
  if (const auto* r = as<VarRef>(*e))
    if (const ExprPtr* d = definition(r->var.get())) return is_tid(*d, depth + 1);
  return false;
}

auto Gen::lane_invariant(const ExprPtr& e, int depth) -> bool {
  if (!e || depth > 12) return false;
  if (level(e, *frame_) == Lvl::Uniform && !as<Load>(*e)) return true;
  return dispatch(*e, Overloaded{
                          [](const Literal&) { return true; },
                          [&](const VarRef& n) {
                            const ExprPtr* d = definition(n.var.get());
                            return d && lane_invariant(*d, depth + 1);
                          },
                          [&](const Unary& n) { return lane_invariant(n.a, depth + 1); },
                          [&](const Binary& n) {
                            if (n.op == BinOp::Div && is_tid(n.a)) {
                              auto c = const_int(n.b);
                              return c && *c > 0 && *c % 32 == 0;
                            }
                            return lane_invariant(n.a, depth + 1) && lane_invariant(n.b, depth + 1);
                          },
                          [&](const Cast& n) { return lane_invariant(n.a, depth + 1); },
                          [&](const Select& n) {
                            return lane_invariant(n.c, depth + 1) && lane_invariant(n.a, depth + 1) &&
                                   lane_invariant(n.b, depth + 1);
                          },
                          [&](const MathCall& n) {
                            for (const auto& a : n.args)
                              if (!lane_invariant(a, depth + 1)) return false;
                            return true;
                          },
                          [](const Id&) { return false; },
                          [&](const Builtin& n) { return n.which != BuiltinKind::ThreadInBlock; },
                          [](const Load&) { return false; },
                      });
}

auto Gen::position_arithmetic(const Binary& n) -> Value* {
  if (!lane_ || (n.op != BinOp::Div && n.op != BinOp::Mod) || n.a->type != n.type ||
      (n.type != ScalarType::I32 && n.type != ScalarType::U32) || !is_tid(n.a))
    return nullptr;
  auto c = const_int(n.b);
  if (!c || *c <= 0 || (*c & (*c - 1)) != 0 || *c > (std::int64_t{1} << 30)) return nullptr;
  int k = 0;
  while ((std::int64_t{1} << k) < *c) ++k;
  Value* w = lane_warp_;
  Value* l = lane_;
  if (n.op == BinOp::Div)
    return k >= 5 ? b_.CreateLShr(w, static_cast<std::uint64_t>(k - 5))
                  : b_.CreateOr(b_.CreateShl(w, static_cast<std::uint64_t>(5 - k), "", true, true),
                                b_.CreateLShr(l, static_cast<std::uint64_t>(k)));
  return k >= 5 ? b_.CreateOr(b_.CreateShl(b_.CreateAnd(w, b_.getInt32(static_cast<std::int32_t>((*c >> 5) - 1))), 5,
                                           "", true, true),
                              l)
                : b_.CreateAnd(l, b_.getInt32(static_cast<std::int32_t>(*c - 1)));
}

auto Gen::binary(const Binary& n) -> Value* {
  if (Value* p = position_arithmetic(n)) return p;
  Value* a = expr(n.a);
  Value* b = expr(n.b);
  ScalarType t = n.a->type;
  // An index composed from a view (t + i, with i an index the code wrote at another width) mixes
  // widths: the operands take the node's type, as its other operations do (shifts keep theirs).
  if (is_integral(t) && is_integral(n.b->type) && n.op != BinOp::Shl && n.op != BinOp::Shr &&
      a->getType() != b->getType()) {
    ScalarType want = is_comparison(n.op) ? n.a->type : n.type;
    llvm::Type* wt = memtype(want);
    auto to = [&](Value* v, ScalarType from) {
      if (v->getType() == wt) return v;
      return unsigned_type(from) ? b_.CreateZExtOrTrunc(v, wt) : b_.CreateSExtOrTrunc(v, wt);
    };
    a = to(a, n.a->type);
    b = to(b, n.b->type);
    t = want;
  }
  if (is_integral(t)) {
    if (t == n.type && never_wraps(n)) {
      bool sgn = !unsigned_type(t);
      switch (n.op) {
        case BinOp::Add: return b_.CreateAdd(a, b, "", !sgn, sgn);
        case BinOp::Sub: return b_.CreateSub(a, b, "", !sgn, sgn);
        case BinOp::Mul: return b_.CreateMul(a, b, "", !sgn, sgn);
        default: break;
      }
    }
    return int_binary(n.op, t, n.b->type, a, b);
  }
  auto* f = a->getType();
  Value* r = nullptr;
  switch (n.op) {
    case BinOp::Add: r = b_.CreateFAdd(a, b); break;
    case BinOp::Sub: r = b_.CreateFSub(a, b); break;
    case BinOp::Mul: r = b_.CreateFMul(a, b); break;
    case BinOp::Div: r = b_.CreateFDiv(a, b); break;
    case BinOp::Mod: r = b_.CreateFRem(a, b); break;  // fmod: exact
    case BinOp::Min:
    case BinOp::Max: {
      bool dbl = f->isDoubleTy();
      const char* name = n.op == BinOp::Min ? (dbl ? "fmin" : "fminf") : (dbl ? "fmax" : "fmaxf");
      r = b_.CreateCall(pure(name, f, {f, f}), {a, b});
      break;
    }
    case BinOp::Pow: r = libm_double("pow", {a, b}, f); break;
    case BinOp::Eq: return b_.CreateFCmpOEQ(a, b);
    case BinOp::Ne: return b_.CreateFCmpUNE(a, b);
    case BinOp::Lt: return b_.CreateFCmpOLT(a, b);
    case BinOp::Le: return b_.CreateFCmpOLE(a, b);
    case BinOp::Gt: return b_.CreateFCmpOGT(a, b);
    case BinOp::Ge: return b_.CreateFCmpOGE(a, b);
    default: throw InternalError("cpu: an integer operation on floats");
  }
  return round16(r, n.type);
}

auto Gen::int_binary(BinOp op, ScalarType t, ScalarType bt, Value* a, Value* b) -> Value* {
  bool sgn = !unsigned_type(t);
  auto* ty = a->getType();
  auto zero = llvm::ConstantInt::get(ty, 0);
  switch (op) {
    case BinOp::Add: return b_.CreateAdd(a, b);
    case BinOp::Sub: return b_.CreateSub(a, b);
    case BinOp::Mul: return b_.CreateMul(a, b);
    case BinOp::Div:
    case BinOp::Mod: {
      // x / 0 is all ones, x % 0 is x; MIN / -1 wraps to MIN and MIN % -1 is 0.
      bool div = op == BinOp::Div;
      Value* by_zero = b_.CreateICmpEQ(b, zero);
      Value* safe = b_.CreateSelect(by_zero, llvm::ConstantInt::get(ty, 1), b);
      Value* r;
      if (sgn) {
        Value* minus_one = b_.CreateICmpEQ(safe, llvm::ConstantInt::getSigned(ty, -1));
        safe = b_.CreateSelect(minus_one, llvm::ConstantInt::get(ty, 1), safe);
        r = div ? b_.CreateSDiv(a, safe) : b_.CreateSRem(a, safe);
        // By -1: the quotient is -a (wrapping), the remainder 0.
        r = b_.CreateSelect(minus_one, div ? b_.CreateSub(zero, a) : static_cast<Value*>(zero), r);
      } else {
        r = div ? b_.CreateUDiv(a, safe) : b_.CreateURem(a, safe);
      }
      return b_.CreateSelect(by_zero, div ? llvm::ConstantInt::getSigned(ty, -1) : a, r);
    }
    case BinOp::And: return b_.CreateAnd(a, b);
    case BinOp::Or: return b_.CreateOr(a, b);
    case BinOp::Xor: return b_.CreateXor(a, b);
    case BinOp::Shl:
    case BinOp::Shr: {
      // The amount is read as unsigned in its own type; the width or more gives 0 (or the sign).
      unsigned w = ty->getIntegerBitWidth();
      Value* amount = i64(b, bt);
      Value* over = b_.CreateICmpUGE(amount, b_.getInt64(w));
      Value* sh = b_.CreateTrunc(b_.CreateSelect(over, b_.getInt64(0), amount), ty);
      if (op == BinOp::Shl) return b_.CreateSelect(over, zero, b_.CreateShl(a, sh));
      if (!sgn) return b_.CreateSelect(over, zero, b_.CreateLShr(a, sh));
      return b_.CreateSelect(over, b_.CreateAShr(a, llvm::ConstantInt::get(ty, w - 1)), b_.CreateAShr(a, sh));
    }
    case BinOp::LAnd: return b_.CreateAnd(a, b);
    case BinOp::LOr: return b_.CreateOr(a, b);
    case BinOp::Eq: return b_.CreateICmpEQ(a, b);
    case BinOp::Ne: return b_.CreateICmpNE(a, b);
    case BinOp::Lt: return sgn ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case BinOp::Le: return sgn ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case BinOp::Gt: return sgn ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case BinOp::Ge: return sgn ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
    case BinOp::Min: return b_.CreateSelect(sgn ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b), a, b);
    case BinOp::Max: return b_.CreateSelect(sgn ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b), a, b);
    case BinOp::Pow: break;
  }
  throw InternalError("cpu: no integer operation " + std::string(name_of(op)));
}

auto Gen::cast(ScalarType from, ScalarType to, Value* a) -> Value* {
  if (from == to) return a;
  if (is_integral(from) && is_integral(to)) {
    if (to == ScalarType::Bool) return b_.CreateICmpNE(a, llvm::ConstantInt::get(a->getType(), 0));
    if (from == ScalarType::Bool) return b_.CreateZExt(a, type(to));
    unsigned fw = a->getType()->getIntegerBitWidth(), tw = type(to)->getIntegerBitWidth();
    if (fw == tw) return a;
    if (fw > tw) return b_.CreateTrunc(a, type(to));
    return unsigned_type(from) ? b_.CreateZExt(a, type(to)) : b_.CreateSExt(a, type(to));
  }
  if (from == ScalarType::F64 && half_type(to)) {  // one rounding (support/float16.h)
    auto fn = pure("vt_cpu_f64_to_16", b_.getInt16Ty(), {b_.getDoubleTy(), b_.getInt32Ty()});
    return from_mem(b_.CreateCall(fn, {a, b_.getInt32(to == ScalarType::BF16)}), to);
  }
  if (is_float(from) && is_float(to)) {
    llvm::Type* ft = type(to);
    if (a->getType() != ft) a = ft->isDoubleTy() ? b_.CreateFPExt(a, ft) : b_.CreateFPTrunc(a, ft);
    return round16(a, to);
  }
  if (is_float(from)) {
    if (to == ScalarType::Bool) return b_.CreateFCmpUNE(a, llvm::ConstantFP::get(a->getType(), 0.0));
    // Truncate toward zero, saturate, NaN to 0 (cvt.rzi).
    auto id = unsigned_type(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return b_.CreateIntrinsic(id, {type(to), a->getType()}, {a});
  }
  // Integer to float: one rounding (to a 16-bit float by the helper the interpreter uses too).
  if (half_type(to) && from != ScalarType::Bool) {
    auto fn = pure("vt_cpu_int_to_16", b_.getInt16Ty(), {b_.getInt64Ty(), b_.getInt32Ty(), b_.getInt32Ty()});
    return from_mem(
        b_.CreateCall(fn, {i64(a, from), b_.getInt32(unsigned_type(from)), b_.getInt32(to == ScalarType::BF16)}), to);
  }
  if (from == ScalarType::Bool) a = b_.CreateZExt(a, b_.getInt32Ty());
  llvm::Type* ft = to == ScalarType::F64 ? b_.getDoubleTy() : b_.getFloatTy();
  Value* r = unsigned_type(from) ? b_.CreateUIToFP(a, ft) : b_.CreateSIToFP(a, ft);
  return round16(r, to);
}

auto Gen::libm_double(const char* name, std::vector<Value*> xs, llvm::Type* t) -> Value* {
  std::vector<llvm::Type*> ds(xs.size(), b_.getDoubleTy());
  for (auto& x : xs)
    if (!x->getType()->isDoubleTy()) x = b_.CreateFPExt(x, b_.getDoubleTy());
  Value* r = b_.CreateCall(pure(name, b_.getDoubleTy(), ds), xs);
  return t->isDoubleTy() ? r : b_.CreateFPTrunc(r, t);
}

auto Gen::math(const MathCall& n) -> Value* {
  std::vector<Value*> xs;
  for (const auto& a : n.args) xs.push_back(expr(a));
  ScalarType t = n.type;
  if (is_bit_fn(n.fn)) {
    Value* x = xs[0];
    llvm::Type* xt = x->getType();
    Value* r = nullptr;
    switch (n.fn) {
      case MathFn::Popc: r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, x); break;
      case MathFn::Clz:  // zero is not poison: ctlz(0) is the width
        r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, x, b_.getFalse());
        break;
      case MathFn::Ffs:
        r = b_.CreateSelect(b_.CreateICmpEQ(x, llvm::ConstantInt::get(xt, 0)), llvm::ConstantInt::get(xt, 0),
                            b_.CreateAdd(b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, x, b_.getTrue()),
                                         llvm::ConstantInt::get(xt, 1)));
        break;
      default: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::bitreverse, x);
    }
    return b_.CreateZExtOrTrunc(r, b_.getInt32Ty());
  }
  if (is_integral(t)) {  // abs: wraps at MIN
    Value* neg = b_.CreateSub(llvm::ConstantInt::get(xs[0]->getType(), 0), xs[0]);
    if (unsigned_type(t)) return xs[0];
    return b_.CreateSelect(b_.CreateICmpSLT(xs[0], llvm::ConstantInt::get(xs[0]->getType(), 0)), neg, xs[0]);
  }
  llvm::Type* ft = type(t);
  Value* r = nullptr;
  switch (n.fn) {
    case MathFn::Sqrt: r = b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {ft}, {xs[0]}); break;
    case MathFn::Rsqrt: {
      Value* d = xs[0]->getType()->isDoubleTy() ? xs[0] : b_.CreateFPExt(xs[0], b_.getDoubleTy());
      d = b_.CreateFDiv(llvm::ConstantFP::get(b_.getDoubleTy(), 1.0),
                        b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {b_.getDoubleTy()}, {d}));
      r = ft->isDoubleTy() ? d : b_.CreateFPTrunc(d, ft);
      break;
    }
    case MathFn::Exp: r = libm_double("exp", xs, ft); break;
    case MathFn::Exp2: r = libm_double("exp2", xs, ft); break;
    case MathFn::Log: r = libm_double("log", xs, ft); break;
    case MathFn::Log2: r = libm_double("log2", xs, ft); break;
    case MathFn::Sin: r = libm_double("sin", xs, ft); break;
    case MathFn::Cos: r = libm_double("cos", xs, ft); break;
    case MathFn::Tanh: r = libm_double("tanh", xs, ft); break;
    case MathFn::Abs: r = b_.CreateIntrinsic(llvm::Intrinsic::fabs, {ft}, {xs[0]}); break;
    case MathFn::Floor: r = b_.CreateIntrinsic(llvm::Intrinsic::floor, {ft}, {xs[0]}); break;
    case MathFn::Ceil: r = b_.CreateIntrinsic(llvm::Intrinsic::ceil, {ft}, {xs[0]}); break;
    case MathFn::Fma: r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {ft}, {xs[0], xs[1], xs[2]}); break;
    case MathFn::Popc:
    case MathFn::Clz:
    case MathFn::Ffs:
    case MathFn::Brev: throw InternalError("cpu: a bit function of a float (the checker refuses it)");
  }
  return round16(r, t);
}

auto Gen::memref(const MemNode* m, SourceLoc l) -> MemRef& {
  for (Frame* f = frame_; f; f = nullptr) {
    auto it = f->mems.find(m);
    if (it != f->mems.end()) return it->second;
  }
  throw InternalError("cpu: memory '" + m->name + "' used before it exists (" + l.str() + ")");
}

auto Gen::offset(const MemRef& r, Value* i) -> Value* {
  for (const auto& [v, arr] : r.offsets) {
    Value* o =
        arr ? static_cast<Value*>(b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), v, tid_))) : v;
    i = b_.CreateAdd(i, o);
  }
  return i;
}

auto Gen::address(const MemRef& r, Value* i) -> Value* {
  llvm::Type* et = memtype(r.elem);
  if (r.space == MemSpace::Local) {
    // [element][thread]: the same element of neighbouring threads is contiguous.
    Value* at = b_.CreateAdd(b_.CreateMul(i, b_.getInt64(T_)), b_.CreateSExt(tid_, b_.getInt64Ty()));
    return b_.CreateGEP(et, r.base, at);
  }
  return b_.CreateGEP(et, r.base, i);
}

auto Gen::fail(std::int64_t site, Value* index, Value* bound, Value* thread) -> void {
  auto fn = helper("vt_cpu_fail", b_.getVoidTy(),
                   {llvm::PointerType::get(ctx_, 0), b_.getInt64Ty(), b_.getInt32Ty(), b_.getInt64Ty(), b_.getInt32Ty(),
                    b_.getInt64Ty(), b_.getInt64Ty()});
  if (!thread) thread = tid_ ? tid_ : b_.getInt32(0);
  b_.CreateCall(fn, {err_, b_.getInt64(lower::check_tag(entry_name_)), b_.getInt32(static_cast<std::int32_t>(site)),
                     block_, thread, index, bound});
}

auto Gen::checked(Value* i, Value* bound, std::int64_t site_no, const std::function<void()>& body, Value* narrow,
                  bool bound_same, const ExprPtr& index_expr) -> void {
  Value* ok;
  if (narrow) {
    Value* b32 = b_.CreateTrunc(b_.CreateSelect(b_.CreateICmpULT(bound, b_.getInt64(std::int64_t{1} << 31)), bound,
                                                b_.getInt64(std::int64_t{1} << 31)),
                                b_.getInt32Ty());
    ok = b_.CreateICmpULT(narrow, b32);  // a negative index is 2^31 or more as unsigned
  } else {
    ok = b_.CreateAnd(b_.CreateICmpSGE(i, b_.getInt64(0)), b_.CreateICmpSLT(i, bound));
  }
  auto* yes = BasicBlock::Create(ctx_, "inside", fn_);
  auto* no = BasicBlock::Create(ctx_, "outside", fn_);
  auto* join = BasicBlock::Create(ctx_, "checked", fn_);
  b_.CreateCondBr(ok, yes, no, llvm::MDBuilder(ctx_).createBranchWeights(1000, 1));
  b_.SetInsertPoint(no);
  std::optional<PendingCheck> pending;
  if (pending_ && tid_) {
    PendingCheck c;
    c.worst = zeroed_slot(b_.getInt32Ty(), "worst");
    c.narrow = narrow != nullptr;
    if (index_expr && !frame_->parent && recomputable(index_expr))
      c.index_expr = index_expr;  // (kernel frame only: its values outlive the loop)
    else
      c.index = scratch(T_ * 8);
    c.bound_per_thread = !bound_same;
    c.bound = bound_same ? static_cast<Value*>(entry_alloca(b_.getInt64Ty(), "bound")) : scratch(T_ * 8);
    c.site = site_no;
    pending_->push_back(c);
    pending = c;
  } else {
    fail(site_no, i, bound);
  }
  b_.CreateBr(join);
  b_.SetInsertPoint(yes);
  body();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  if (pending) {
    const PendingCheck& c = *pending;
    Value* mine = b_.CreateSelect(ok, b_.getInt32(0), b_.CreateAdd(tid_, b_.getInt32(1)));
    Value* w = b_.CreateLoad(b_.getInt32Ty(), c.worst);
    b_.CreateStore(b_.CreateSelect(b_.CreateICmpUGT(mine, w), mine, w), c.worst);
    auto keep = [&](llvm::Type* t, Value* arr, Value* v) {
      Value* at = b_.CreateInBoundsGEP(t, arr, tid_);
      b_.CreateStore(b_.CreateSelect(ok, b_.CreateLoad(t, at), v), at);
    };
    if (c.index_expr)
      ;
    else if (narrow)
      keep(b_.getInt32Ty(), c.index, narrow);
    else
      keep(b_.getInt64Ty(), c.index, i);
    if (bound_same)
      b_.CreateStore(bound, c.bound);
    else
      keep(b_.getInt64Ty(), c.bound, bound);
  }
}

auto Gen::clamp_of(const ExprPtr& index) -> std::optional<Clamp> {
  if (!lane_ || !is_integral(index->type)) return std::nullopt;
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
    if (lane_invariant(t)) {
      c.invariant.push_back(t);
      continue;
    }
    const auto* b = as<Binary>(*t);
    if (c.clamp || !b || (b->op != BinOp::Min && b->op != BinOp::Max)) return std::nullopt;
    if (lane_invariant(b->b))
      c.a_left = true;
    else if (lane_invariant(b->a))
      c.a_left = false;
    else
      return std::nullopt;
    c.clamp = b;
  }
  if (!c.clamp) return std::nullopt;
  return c;
}

auto Gen::clamp_value(const MemRef& r, const Clamp& c, ScalarType index_type) -> Value* {
  llvm::Type* et = memtype(r.elem);
  Value* fu = clamp_flat(r, c, expr(c.a_left ? c.clamp->b : c.clamp->a), index_type);
  Value* u_inside = b_.CreateAnd(b_.CreateICmpSGE(fu, b_.getInt64(0)), b_.CreateICmpSLT(fu, r.bound));
  return b_.CreateLoad(et, b_.CreateSelect(u_inside, b_.CreateGEP(et, r.base, fu), zero_of(et)));
}

auto Gen::clamped_load(const MemRef& r, const Clamp& c, ScalarType index_type, Value* vu) -> Value* {
  llvm::Type* et = memtype(r.elem);
  Value* a = expr(c.a_left ? c.clamp->a : c.clamp->b);
  Value* u = expr(c.a_left ? c.clamp->b : c.clamp->a);
  bool sgn = !unsigned_type(index_type);
  Value* take_a = c.clamp->op == BinOp::Min ? (sgn ? b_.CreateICmpSLE(a, u) : b_.CreateICmpULE(a, u))
                                            : (sgn ? b_.CreateICmpSGE(a, u) : b_.CreateICmpUGE(a, u));
  Value* at_a = address(r, clamp_flat(r, c, a, index_type));
  BasicBlock* from = b_.GetInsertBlock();
  auto* yes = BasicBlock::Create(ctx_, "clamp.a", fn_);
  auto* join = BasicBlock::Create(ctx_, "clamp.join", fn_);
  b_.CreateCondBr(take_a, yes, join, llvm::MDBuilder(ctx_).createBranchWeights(1000, 1));
  b_.SetInsertPoint(yes);
  Value* va = b_.CreateLoad(et, at_a);
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  auto* phi = b_.CreatePHI(et, 2);
  phi->addIncoming(va, yes);
  phi->addIncoming(vu, from);
  return phi;
}

}  // namespace vantage::cpu::detail
