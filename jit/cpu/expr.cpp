// Vantage CPU code generator's Values: variables (scalars, recomputed, per-thread arrays) and
// expressions. See gen.h.
#include "jit/cpu/gen.h"

namespace vantage::cpu::detail {

Values::Values(Gen& g) : g_(g), plan_(g.plan_), mem_(g.mem_) {}

auto Values::define(const VarPtr& v, const ExprPtr& value) -> Storage& {
  Frame& f = *g_.frame_;
  auto it = f.vars.find(v.get());
  if (it != f.vars.end()) return it->second;
  Storage s;
  auto leaf = f.leaf_of.find(v.get());
  bool varying = f.levels[v.get()] == Lvl::Varying;
  if (!varying || f.in_thread || (leaf != f.leaf_of.end() && leaf->second >= 0)) {
    s.kind = Storage::Scalar;
    s.ptr = g_.entry_alloca(g_.type(v->type), v->name);
  } else if (value && !f.reassigned.count(v.get()) && plan_.pure_value(value, f)) {
    s.kind = Storage::Remat;
    s.remat = value;
  } else {
    s.kind = Storage::Array;
    s.ptr = g_.scratch(g_.T_ * static_cast<std::int64_t>(8));
  }
  return f.vars.emplace(v.get(), s).first->second;
}

auto Values::define_array(const VarPtr& v) -> Storage& {
  Frame& f = *g_.frame_;
  auto it = f.vars.find(v.get());
  if (it != f.vars.end()) {
    if (it->second.kind != Storage::Array) throw InternalError("cpu: variable '" + v->name + "' changed storage");
    return it->second;
  }
  Storage s;
  s.kind = Storage::Array;
  s.ptr = g_.scratch(g_.T_ * static_cast<std::int64_t>(8));
  return f.vars.emplace(v.get(), s).first->second;
}

auto Values::read_var(const VarNode* v, SourceLoc l) -> Value* {
  Frame& f = *g_.frame_;
  auto it = f.vars.find(v);
  if (it == f.vars.end())
    throw InternalError("cpu: variable '" + v->name + "' used before it is defined at " + l.str());
  const Storage& s = it->second;
  switch (s.kind) {
    case Storage::Fixed: return s.value;
    case Storage::Scalar: return g_.b_.CreateLoad(g_.type(v->type), s.ptr, v->name);
    case Storage::Remat: return expr(s.remat);
    case Storage::Array:
      if (!g_.tid_) throw InternalError("cpu: per-thread variable '" + v->name + "' read outside a thread loop");
      return g_.b_.CreateLoad(g_.type(v->type), g_.b_.CreateInBoundsGEP(g_.type(v->type), s.ptr, g_.tid_));
  }
  return nullptr;
}

auto Values::write_var(const VarPtr& v, Value* x, const ExprPtr& def) -> void {
  Storage& s = define(v, def);
  switch (s.kind) {
    case Storage::Scalar: g_.b_.CreateStore(x, s.ptr); return;
    case Storage::Array:
      if (!g_.tid_) throw InternalError("cpu: per-thread variable '" + v->name + "' written outside a thread loop");
      g_.b_.CreateStore(x, g_.b_.CreateInBoundsGEP(g_.type(v->type), s.ptr, g_.tid_));
      return;
    case Storage::Remat: return;  // recomputed where it is read
    case Storage::Fixed: throw InternalError("cpu: a parameter is assigned");
  }
}

auto Values::expr(const ExprPtr& e) -> Value* {
  return dispatch(*e, Overloaded{
                          [&](const Literal& n) -> Value* {
                            if (n.type == ScalarType::Bool) return g_.b_.getInt1(n.i != 0);
                            if (is_integral(n.type))
                              return llvm::ConstantInt::get(g_.type(n.type), static_cast<std::uint64_t>(n.i),
                                                            !unsigned_type(n.type));
                            if (n.type == ScalarType::F64) return llvm::ConstantFP::get(g_.b_.getDoubleTy(), n.f);
                            double v = n.f;
                            if (half_type(n.type))
                              return g_.round16(llvm::ConstantFP::get(g_.b_.getFloatTy(), v), n.type);
                            return llvm::ConstantFP::get(g_.b_.getFloatTy(), static_cast<float>(v));
                          },
                          [&](const VarRef& n) {
                            if (g_.recompute_ && g_.frame_->levels[n.var.get()] == Lvl::Varying)
                              if (const ExprPtr* d = plan_.definition(n.var.get())) return expr(*d);
                            return read_var(n.var.get(), n.loc);
                          },
                          [&](const Unary& n) { return unary(n); },
                          [&](const Binary& n) { return binary(n); },
                          [&](const Cast& n) { return cast(n.a->type, n.type, expr(n.a)); },
                          [&](const Select& n) {
                            Value* c = expr(n.c);
                            Value* a = expr(n.a);
                            Value* b = expr(n.b);
                            return g_.b_.CreateSelect(c, a, b);
                          },
                          [&](const MathCall& n) { return math(n); },
                          [](const Id&) -> Value* { throw InternalError("cpu: an id() in lowered IR"); },
                          [&](const Builtin& n) { return builtin(n.which); },
                          [&](const Load& n) { return mem_.load(n); },
                      });
}

auto Values::builtin(BuiltinKind which) -> Value* {
  Frame& f = *g_.frame_;
  if (which == BuiltinKind::BlockInGrid) return f.bid;
  if (which == BuiltinKind::BlocksInGrid) return g_.b_.CreateTrunc(g_.blocks_, g_.b_.getInt32Ty());
  if (!f.tid_array) {
    if (!g_.tid_) throw InternalError("cpu: the thread's position read outside a thread loop");
    return g_.tid_;
  }
  if (f.tid_level == Lvl::Uniform) return f.tid_array;  // a uniform position is held as its value
  return g_.b_.CreateTrunc(
      g_.b_.CreateLoad(g_.b_.getInt64Ty(), g_.b_.CreateInBoundsGEP(g_.b_.getInt64Ty(), f.tid_array, g_.tid_)),
      g_.b_.getInt32Ty());
}

auto Values::unary(const Unary& n) -> Value* {
  Value* a = expr(n.a);
  if (!is_integral(n.type)) {
    if (n.op == UnOp::Neg) return g_.round16(g_.b_.CreateFNeg(a), n.type);
    return a;
  }
  switch (n.op) {
    case UnOp::Neg: return g_.b_.CreateSub(llvm::ConstantInt::get(a->getType(), 0), a);
    case UnOp::Not: return g_.b_.CreateICmpEQ(a, llvm::ConstantInt::get(a->getType(), 0));
    case UnOp::BitNot: return g_.b_.CreateNot(a);
  }
  return a;
}

auto Values::position_arithmetic(const Binary& n) -> Value* {
  if (!g_.lane_ || (n.op != BinOp::Div && n.op != BinOp::Mod) || n.a->type != n.type ||
      (n.type != ScalarType::I32 && n.type != ScalarType::U32) || !plan_.is_tid(n.a))
    return nullptr;
  auto c = const_int(n.b);
  if (!c || *c <= 0 || (*c & (*c - 1)) != 0 || *c > (std::int64_t{1} << 30)) return nullptr;
  int k = 0;
  while ((std::int64_t{1} << k) < *c) ++k;
  Value* w = g_.lane_warp_;
  Value* l = g_.lane_;
  if (n.op == BinOp::Div)
    return k >= 5 ? g_.b_.CreateLShr(w, static_cast<std::uint64_t>(k - 5))
                  : g_.b_.CreateOr(g_.b_.CreateShl(w, static_cast<std::uint64_t>(5 - k), "", true, true),
                                   g_.b_.CreateLShr(l, static_cast<std::uint64_t>(k)));
  return k >= 5 ? g_.b_.CreateOr(
                      g_.b_.CreateShl(g_.b_.CreateAnd(w, g_.b_.getInt32(static_cast<std::int32_t>((*c >> 5) - 1))), 5,
                                      "", true, true),
                      l)
                : g_.b_.CreateAnd(l, g_.b_.getInt32(static_cast<std::int32_t>(*c - 1)));
}

auto Values::binary(const Binary& n) -> Value* {
  if (Value* p = position_arithmetic(n)) return p;
  Value* a = expr(n.a);
  Value* b = expr(n.b);
  ScalarType t = n.a->type;
  // An index composed from a view (t + i, with i an index the code wrote at another width) mixes
  // widths: the operands take the node's type, as its other operations do (shifts keep theirs).
  if (is_integral(t) && is_integral(n.b->type) && n.op != BinOp::Shl && n.op != BinOp::Shr &&
      a->getType() != b->getType()) {
    ScalarType want = is_comparison(n.op) ? n.a->type : n.type;
    llvm::Type* wt = g_.memtype(want);
    auto to = [&](Value* v, ScalarType from) {
      if (v->getType() == wt) return v;
      return unsigned_type(from) ? g_.b_.CreateZExtOrTrunc(v, wt) : g_.b_.CreateSExtOrTrunc(v, wt);
    };
    a = to(a, n.a->type);
    b = to(b, n.b->type);
    t = want;
  }
  if (is_integral(t)) {
    if (t == n.type && plan_.never_wraps(n)) {
      bool sgn = !unsigned_type(t);
      switch (n.op) {
        case BinOp::Add: return g_.b_.CreateAdd(a, b, "", !sgn, sgn);
        case BinOp::Sub: return g_.b_.CreateSub(a, b, "", !sgn, sgn);
        case BinOp::Mul: return g_.b_.CreateMul(a, b, "", !sgn, sgn);
        default: break;
      }
    }
    return int_binary(n.op, t, n.b->type, a, b);
  }
  auto* f = a->getType();
  Value* r = nullptr;
  switch (n.op) {
    case BinOp::Add: r = g_.b_.CreateFAdd(a, b); break;
    case BinOp::Sub: r = g_.b_.CreateFSub(a, b); break;
    case BinOp::Mul: r = g_.b_.CreateFMul(a, b); break;
    case BinOp::Div: r = g_.b_.CreateFDiv(a, b); break;
    case BinOp::Mod: r = g_.b_.CreateFRem(a, b); break;  // fmod: exact
    case BinOp::Min:
    case BinOp::Max: {
      bool dbl = f->isDoubleTy();
      const char* name = n.op == BinOp::Min ? (dbl ? "fmin" : "fminf") : (dbl ? "fmax" : "fmaxf");
      r = g_.b_.CreateCall(g_.pure(name, f, {f, f}), {a, b});
      break;
    }
    case BinOp::Pow: r = libm_double("pow", {a, b}, f); break;
    case BinOp::Eq: return g_.b_.CreateFCmpOEQ(a, b);
    case BinOp::Ne: return g_.b_.CreateFCmpUNE(a, b);
    case BinOp::Lt: return g_.b_.CreateFCmpOLT(a, b);
    case BinOp::Le: return g_.b_.CreateFCmpOLE(a, b);
    case BinOp::Gt: return g_.b_.CreateFCmpOGT(a, b);
    case BinOp::Ge: return g_.b_.CreateFCmpOGE(a, b);
    default: throw InternalError("cpu: an integer operation on floats");
  }
  return g_.round16(r, n.type);
}

auto Values::int_binary(BinOp op, ScalarType t, ScalarType bt, Value* a, Value* b) -> Value* {
  bool sgn = !unsigned_type(t);
  auto* ty = a->getType();
  auto zero = llvm::ConstantInt::get(ty, 0);
  switch (op) {
    case BinOp::Add: return g_.b_.CreateAdd(a, b);
    case BinOp::Sub: return g_.b_.CreateSub(a, b);
    case BinOp::Mul: return g_.b_.CreateMul(a, b);
    case BinOp::Div:
    case BinOp::Mod: {
      // x / 0 is all ones, x % 0 is x; MIN / -1 wraps to MIN and MIN % -1 is 0.
      bool div = op == BinOp::Div;
      Value* by_zero = g_.b_.CreateICmpEQ(b, zero);
      Value* safe = g_.b_.CreateSelect(by_zero, llvm::ConstantInt::get(ty, 1), b);
      Value* r;
      if (sgn) {
        Value* minus_one = g_.b_.CreateICmpEQ(safe, llvm::ConstantInt::getSigned(ty, -1));
        safe = g_.b_.CreateSelect(minus_one, llvm::ConstantInt::get(ty, 1), safe);
        r = div ? g_.b_.CreateSDiv(a, safe) : g_.b_.CreateSRem(a, safe);
        // By -1: the quotient is -a (wrapping), the remainder 0.
        r = g_.b_.CreateSelect(minus_one, div ? g_.b_.CreateSub(zero, a) : static_cast<Value*>(zero), r);
      } else {
        r = div ? g_.b_.CreateUDiv(a, safe) : g_.b_.CreateURem(a, safe);
      }
      return g_.b_.CreateSelect(by_zero, div ? llvm::ConstantInt::getSigned(ty, -1) : a, r);
    }
    case BinOp::And: return g_.b_.CreateAnd(a, b);
    case BinOp::Or: return g_.b_.CreateOr(a, b);
    case BinOp::Xor: return g_.b_.CreateXor(a, b);
    case BinOp::Shl:
    case BinOp::Shr: {
      // The amount is read as unsigned in its own type; the width or more gives 0 (or the sign).
      unsigned w = ty->getIntegerBitWidth();
      Value* amount = g_.i64(b, bt);
      Value* over = g_.b_.CreateICmpUGE(amount, g_.b_.getInt64(w));
      Value* sh = g_.b_.CreateTrunc(g_.b_.CreateSelect(over, g_.b_.getInt64(0), amount), ty);
      if (op == BinOp::Shl) return g_.b_.CreateSelect(over, zero, g_.b_.CreateShl(a, sh));
      if (!sgn) return g_.b_.CreateSelect(over, zero, g_.b_.CreateLShr(a, sh));
      return g_.b_.CreateSelect(over, g_.b_.CreateAShr(a, llvm::ConstantInt::get(ty, w - 1)), g_.b_.CreateAShr(a, sh));
    }
    case BinOp::LAnd: return g_.b_.CreateAnd(a, b);
    case BinOp::LOr: return g_.b_.CreateOr(a, b);
    case BinOp::Eq: return g_.b_.CreateICmpEQ(a, b);
    case BinOp::Ne: return g_.b_.CreateICmpNE(a, b);
    case BinOp::Lt: return sgn ? g_.b_.CreateICmpSLT(a, b) : g_.b_.CreateICmpULT(a, b);
    case BinOp::Le: return sgn ? g_.b_.CreateICmpSLE(a, b) : g_.b_.CreateICmpULE(a, b);
    case BinOp::Gt: return sgn ? g_.b_.CreateICmpSGT(a, b) : g_.b_.CreateICmpUGT(a, b);
    case BinOp::Ge: return sgn ? g_.b_.CreateICmpSGE(a, b) : g_.b_.CreateICmpUGE(a, b);
    case BinOp::Min: return g_.b_.CreateSelect(sgn ? g_.b_.CreateICmpSLT(a, b) : g_.b_.CreateICmpULT(a, b), a, b);
    case BinOp::Max: return g_.b_.CreateSelect(sgn ? g_.b_.CreateICmpSGT(a, b) : g_.b_.CreateICmpUGT(a, b), a, b);
    case BinOp::Pow: break;
  }
  throw InternalError("cpu: no integer operation " + std::string(name_of(op)));
}

auto Values::cast(ScalarType from, ScalarType to, Value* a) -> Value* {
  if (from == to) return a;
  // 8-bit floats (from and to other floats only: the checker): their value is held in f32, exact;
  // made by one rounding from the value (widened to f64, exactly).
  if (is_fp8(to)) return g_.from_mem(g_.to_mem(a, to), to);
  if (is_fp8(from)) return cast(ScalarType::F32, to, a);
  if (is_integral(from) && is_integral(to)) {
    if (to == ScalarType::Bool) return g_.b_.CreateICmpNE(a, llvm::ConstantInt::get(a->getType(), 0));
    if (from == ScalarType::Bool) return g_.b_.CreateZExt(a, g_.type(to));
    unsigned fw = a->getType()->getIntegerBitWidth(), tw = g_.type(to)->getIntegerBitWidth();
    if (fw == tw) return a;
    if (fw > tw) return g_.b_.CreateTrunc(a, g_.type(to));
    return unsigned_type(from) ? g_.b_.CreateZExt(a, g_.type(to)) : g_.b_.CreateSExt(a, g_.type(to));
  }
  if (from == ScalarType::F64 && half_type(to)) {  // one rounding (support/float16.h)
    auto fn = g_.pure("vt_cpu_f64_to_16", g_.b_.getInt16Ty(), {g_.b_.getDoubleTy(), g_.b_.getInt32Ty()});
    return g_.from_mem(g_.b_.CreateCall(fn, {a, g_.b_.getInt32(to == ScalarType::BF16)}), to);
  }
  if (is_float(from) && is_float(to)) {
    llvm::Type* ft = g_.type(to);
    if (a->getType() != ft) a = ft->isDoubleTy() ? g_.b_.CreateFPExt(a, ft) : g_.b_.CreateFPTrunc(a, ft);
    return g_.round16(a, to);
  }
  if (is_float(from)) {
    if (to == ScalarType::Bool) return g_.b_.CreateFCmpUNE(a, llvm::ConstantFP::get(a->getType(), 0.0));
    // Truncate toward zero, saturate, NaN to 0 (cvt.rzi).
    auto id = unsigned_type(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return g_.b_.CreateIntrinsic(id, {g_.type(to), a->getType()}, {a});
  }
  // Integer to float: one rounding (to a 16-bit float by the helper the interpreter uses too).
  if (half_type(to) && from != ScalarType::Bool) {
    auto fn =
        g_.pure("vt_cpu_int_to_16", g_.b_.getInt16Ty(), {g_.b_.getInt64Ty(), g_.b_.getInt32Ty(), g_.b_.getInt32Ty()});
    return g_.from_mem(g_.b_.CreateCall(fn, {g_.i64(a, from), g_.b_.getInt32(unsigned_type(from)),
                                             g_.b_.getInt32(to == ScalarType::BF16)}),
                       to);
  }
  if (from == ScalarType::Bool) a = g_.b_.CreateZExt(a, g_.b_.getInt32Ty());
  llvm::Type* ft = to == ScalarType::F64 ? g_.b_.getDoubleTy() : g_.b_.getFloatTy();
  Value* r = unsigned_type(from) ? g_.b_.CreateUIToFP(a, ft) : g_.b_.CreateSIToFP(a, ft);
  return g_.round16(r, to);
}

auto Values::libm_double(const char* name, std::vector<Value*> xs, llvm::Type* t) -> Value* {
  std::vector<llvm::Type*> ds(xs.size(), g_.b_.getDoubleTy());
  for (auto& x : xs)
    if (!x->getType()->isDoubleTy()) x = g_.b_.CreateFPExt(x, g_.b_.getDoubleTy());
  Value* r = g_.b_.CreateCall(g_.pure(name, g_.b_.getDoubleTy(), ds), xs);
  return t->isDoubleTy() ? r : g_.b_.CreateFPTrunc(r, t);
}

auto Values::math(const MathCall& n) -> Value* {
  std::vector<Value*> xs;
  for (const auto& a : n.args) xs.push_back(expr(a));
  ScalarType t = n.type;
  if (n.fn == MathFn::Bitcast) return g_.b_.CreateBitCast(xs[0], g_.type(t));  // i32 and u32 are one LLVM type
  if (is_bit_fn(n.fn)) {
    Value* x = xs[0];
    llvm::Type* xt = x->getType();
    Value* r = nullptr;
    switch (n.fn) {
      case MathFn::Popc: r = g_.b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, x); break;
      case MathFn::Clz:  // zero is not poison: ctlz(0) is the width
        r = g_.b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, x, g_.b_.getFalse());
        break;
      case MathFn::Ffs:
        r = g_.b_.CreateSelect(g_.b_.CreateICmpEQ(x, llvm::ConstantInt::get(xt, 0)), llvm::ConstantInt::get(xt, 0),
                               g_.b_.CreateAdd(g_.b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, x, g_.b_.getTrue()),
                                               llvm::ConstantInt::get(xt, 1)));
        break;
      default: return g_.b_.CreateUnaryIntrinsic(llvm::Intrinsic::bitreverse, x);
    }
    return g_.b_.CreateZExtOrTrunc(r, g_.b_.getInt32Ty());
  }
  if (is_float_predicate(n.fn)) {  // NaN is unordered: isfinite's `<` is false for it
    if (n.fn == MathFn::IsNan) return g_.b_.CreateFCmpUNO(xs[0], xs[0]);
    Value* a = g_.b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, xs[0]);
    Value* inf = llvm::ConstantFP::getInfinity(xs[0]->getType());
    return n.fn == MathFn::IsInf ? g_.b_.CreateFCmpOEQ(a, inf) : g_.b_.CreateFCmpOLT(a, inf);
  }
  if (is_integral(t)) {  // abs: wraps at MIN
    Value* neg = g_.b_.CreateSub(llvm::ConstantInt::get(xs[0]->getType(), 0), xs[0]);
    if (unsigned_type(t)) return xs[0];
    return g_.b_.CreateSelect(g_.b_.CreateICmpSLT(xs[0], llvm::ConstantInt::get(xs[0]->getType(), 0)), neg, xs[0]);
  }
  llvm::Type* ft = g_.type(t);
  Value* r = nullptr;
  switch (n.fn) {
    case MathFn::Sqrt: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {ft}, {xs[0]}); break;
    case MathFn::Rsqrt: {
      Value* d = xs[0]->getType()->isDoubleTy() ? xs[0] : g_.b_.CreateFPExt(xs[0], g_.b_.getDoubleTy());
      d = g_.b_.CreateFDiv(llvm::ConstantFP::get(g_.b_.getDoubleTy(), 1.0),
                           g_.b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {g_.b_.getDoubleTy()}, {d}));
      r = ft->isDoubleTy() ? d : g_.b_.CreateFPTrunc(d, ft);
      break;
    }
    case MathFn::Exp: r = libm_double("exp", xs, ft); break;
    case MathFn::Exp2: r = libm_double("exp2", xs, ft); break;
    case MathFn::Log: r = libm_double("log", xs, ft); break;
    case MathFn::Log2: r = libm_double("log2", xs, ft); break;
    case MathFn::Sin: r = libm_double("sin", xs, ft); break;
    case MathFn::Cos: r = libm_double("cos", xs, ft); break;
    case MathFn::Tanh: r = libm_double("tanh", xs, ft); break;
    case MathFn::Abs: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::fabs, {ft}, {xs[0]}); break;
    case MathFn::Floor: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::floor, {ft}, {xs[0]}); break;
    case MathFn::Ceil: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::ceil, {ft}, {xs[0]}); break;
    case MathFn::Fma: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::fma, {ft}, {xs[0], xs[1], xs[2]}); break;
    case MathFn::Tan: r = libm_double("tan", xs, ft); break;
    case MathFn::Asin: r = libm_double("asin", xs, ft); break;
    case MathFn::Acos: r = libm_double("acos", xs, ft); break;
    case MathFn::Atan: r = libm_double("atan", xs, ft); break;
    case MathFn::Sinh: r = libm_double("sinh", xs, ft); break;
    case MathFn::Cosh: r = libm_double("cosh", xs, ft); break;
    case MathFn::Erf: r = libm_double("erf", xs, ft); break;
    case MathFn::Erfc: r = libm_double("erfc", xs, ft); break;
    case MathFn::Expm1: r = libm_double("expm1", xs, ft); break;
    case MathFn::Log1p: r = libm_double("log1p", xs, ft); break;
    case MathFn::Log10: r = libm_double("log10", xs, ft); break;
    case MathFn::Cbrt: r = libm_double("cbrt", xs, ft); break;
    case MathFn::Atan2: r = libm_double("atan2", xs, ft); break;
    case MathFn::Fmod: r = libm_double("fmod", xs, ft); break;  // exact in double, so exact after
    case MathFn::Hypot: r = libm_double("hypot", xs, ft); break;
    case MathFn::Trunc: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::trunc, {ft}, {xs[0]}); break;
    case MathFn::Round: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::round, {ft}, {xs[0]}); break;
    case MathFn::Rint: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::rint, {ft}, {xs[0]}); break;
    case MathFn::Copysign: r = g_.b_.CreateIntrinsic(llvm::Intrinsic::copysign, {ft}, {xs[0], xs[1]}); break;
    case MathFn::IsNan:
    case MathFn::IsInf:
    case MathFn::IsFinite:
    case MathFn::Popc:
    case MathFn::Clz:
    case MathFn::Ffs:
    case MathFn::Brev:
    case MathFn::Bitcast: throw InternalError("cpu: a bit function of a float (the checker refuses it)");
  }
  return g_.round16(r, t);
}

}  // namespace vantage::cpu::detail
