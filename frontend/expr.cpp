// Vantage frontend: expressions, operators and views. Expressions are built eagerly into immutable
// IR; ill-typed ones are still built and reported by the checker, so every error surfaces at once.
#include <limits>

#include "frontend/build_ctx.h"
#include "vantage/builder.hpp"

namespace vantage {
namespace {

using ir::BinOp;
using ir::ExprPtr;

ExprPtr lit(ScalarType t, std::int64_t i, double f, SourceLoc loc) { return ir::make<ir::Literal>(t, i, f, loc); }

ExprPtr int_lit(ScalarType t, std::int64_t v, SourceLoc loc) { return lit(t, v, static_cast<double>(v), loc); }
ExprPtr float_lit(ScalarType t, double v, SourceLoc loc) { return lit(t, static_cast<std::int64_t>(0), v, loc); }

/// A weak literal takes the other operand's type where that loses nothing (int into any number,
/// float into any float).
ExprPtr adapt(const ExprArg& x, ScalarType to) {
  const auto* l = x.expr.node() ? ir::as<ir::Literal>(*x.expr.node()) : nullptr;
  if (!x.weak_literal || !l || l->type == to || to == ScalarType::Bool) return x.expr.node();
  if (is_integer(l->type)) {
    return is_float(to) ? float_lit(to, static_cast<double>(l->i), x.loc) : int_lit(to, l->i, x.loc);
  }
  if (is_float(l->type) && is_float(to)) return float_lit(to, l->f, x.loc);
  return x.expr.node();
}

/// Both operands, with weak literals adapted to the other side.
std::pair<ExprPtr, ExprPtr> unify(const ExprArg& a, const ExprArg& b) {
  if (a.weak_literal && !b.weak_literal && b.expr.defined()) return {adapt(a, b.expr.type()), b.expr.node()};
  if (b.weak_literal && !a.weak_literal && a.expr.defined()) return {a.expr.node(), adapt(b, a.expr.type())};
  return {a.expr.node(), b.expr.node()};
}

ScalarType type_or_i32(const ExprPtr& e) { return e ? e->type : ScalarType::I32; }

void undefined(SourceLoc loc) {
  if (auto* ctx = detail::active())
    ctx->error("V0706", loc, "an undefined Expr, Var or View was used (default-constructed handle)");
}

Expr binary(BinOp op, const ExprArg& a, const ExprArg& b) {
  auto [x, y] = unify(a, b);
  if (!x || !y) undefined(a.loc);
  bool to_bool = ir::is_comparison(op) || op == BinOp::LAnd || op == BinOp::LOr;
  ScalarType t = to_bool ? ScalarType::Bool : type_or_i32(x);
  return Expr(ir::make<ir::Binary>(op, x, y, t, a.loc));
}

Expr unary(ir::UnOp op, const ExprArg& a) {
  if (!a.expr.defined()) undefined(a.loc);
  ScalarType t = op == ir::UnOp::Not ? ScalarType::Bool : type_or_i32(a.expr.node());
  return Expr(ir::make<ir::Unary>(op, a.expr.node(), t, a.loc));
}

Expr math(ir::MathFn fn, std::vector<ExprPtr> args, SourceLoc loc) {
  for (auto& a : args) {
    if (!a) {
      undefined(loc);
      a = int_lit(ScalarType::I32, 0, loc);
    }
  }
  return Expr(ir::make<ir::MathCall>(fn, std::move(args), loc));
}

SourceLoc here(const std::source_location& l) { return SourceLoc::from(l); }

}  // namespace

Expr::Expr(bool v, std::source_location l) : node_(int_lit(ScalarType::Bool, v ? 1 : 0, here(l))) {}
Expr::Expr(int v, std::source_location l) : node_(int_lit(ScalarType::I32, v, here(l))) {}
Expr::Expr(unsigned v, std::source_location l) : node_(int_lit(ScalarType::U32, v, here(l))) {}
Expr::Expr(long v, std::source_location l) : node_(int_lit(ScalarType::I64, v, here(l))) {}
Expr::Expr(long long v, std::source_location l) : node_(int_lit(ScalarType::I64, v, here(l))) {}
Expr::Expr(unsigned long v, std::source_location l)
    : node_(int_lit(ScalarType::U64, static_cast<std::int64_t>(v), here(l))) {}
Expr::Expr(float v, std::source_location l) : node_(float_lit(ScalarType::F32, v, here(l))) {}
Expr::Expr(double v, std::source_location l) : node_(float_lit(ScalarType::F64, v, here(l))) {}
Expr::Expr(const ElemRef& ref) : Expr(ref.load()) {}

ScalarType Expr::type() const { return node_ ? node_->type : ScalarType::I32; }

ExprArg::ExprArg(const Expr& e, std::source_location l) : expr(e), loc(here(l)) {}
ExprArg::ExprArg(const ElemRef& r, std::source_location l) : expr(r.load()), loc(here(l)) {}
ExprArg::ExprArg(bool v, std::source_location l) : expr(v, l), loc(here(l)) {}
ExprArg::ExprArg(int v, std::source_location l) : expr(v, l), loc(here(l)), weak_literal(true) {}
ExprArg::ExprArg(unsigned v, std::source_location l) : expr(v, l), loc(here(l)), weak_literal(true) {}
ExprArg::ExprArg(long v, std::source_location l) : expr(v, l), loc(here(l)), weak_literal(true) {}
ExprArg::ExprArg(long long v, std::source_location l) : expr(v, l), loc(here(l)), weak_literal(true) {}
ExprArg::ExprArg(unsigned long v, std::source_location l) : expr(v, l), loc(here(l)), weak_literal(true) {}
ExprArg::ExprArg(float v, std::source_location l) : expr(v, l), loc(here(l)), weak_literal(true) {}
ExprArg::ExprArg(double v, std::source_location l) : expr(v, l), loc(here(l)), weak_literal(true) {}

Expr operator+(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Add, a, b); }
Expr operator-(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Sub, a, b); }
Expr operator*(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Mul, a, b); }
Expr operator/(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Div, a, b); }
Expr operator%(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Mod, a, b); }
Expr operator&(const ExprArg& a, const ExprArg& b) { return binary(BinOp::And, a, b); }
Expr operator|(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Or, a, b); }
Expr operator^(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Xor, a, b); }
Expr operator<<(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Shl, a, b); }
Expr operator>>(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Shr, a, b); }
Expr operator&&(const ExprArg& a, const ExprArg& b) { return binary(BinOp::LAnd, a, b); }
Expr operator||(const ExprArg& a, const ExprArg& b) { return binary(BinOp::LOr, a, b); }
Expr operator==(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Eq, a, b); }
Expr operator!=(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Ne, a, b); }
Expr operator<(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Lt, a, b); }
Expr operator<=(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Le, a, b); }
Expr operator>(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Gt, a, b); }
Expr operator>=(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Ge, a, b); }
Expr operator-(const ExprArg& a) { return unary(ir::UnOp::Neg, a); }
Expr operator!(const ExprArg& a) { return unary(ir::UnOp::Not, a); }
Expr operator~(const ExprArg& a) { return unary(ir::UnOp::BitNot, a); }

Expr select(const ExprArg& c, const ExprArg& a, const ExprArg& b) {
  auto [x, y] = unify(a, b);
  ExprPtr cond = c.expr.node();
  if (!cond || !x || !y) {
    undefined(c.loc);
    if (!cond) cond = int_lit(ScalarType::Bool, 0, c.loc);
    if (!x) x = int_lit(ScalarType::I32, 0, c.loc);
    if (!y) y = int_lit(x->type, 0, c.loc);
  }
  return Expr(ir::make<ir::Select>(cond, x, y, c.loc));
}
Expr min(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Min, a, b); }
Expr max(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Max, a, b); }
Expr pow(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Pow, a, b); }
Expr cast(ScalarType to, const ExprArg& e) {
  if (!e.expr.defined()) undefined(e.loc);
  return Expr(ir::make<ir::Cast>(e.expr.node(), to, e.loc));
}
Expr sqrt(const ExprArg& e) { return math(ir::MathFn::Sqrt, {e.expr.node()}, e.loc); }
Expr rsqrt(const ExprArg& e) { return math(ir::MathFn::Rsqrt, {e.expr.node()}, e.loc); }
Expr exp(const ExprArg& e) { return math(ir::MathFn::Exp, {e.expr.node()}, e.loc); }
Expr exp2(const ExprArg& e) { return math(ir::MathFn::Exp2, {e.expr.node()}, e.loc); }
Expr log(const ExprArg& e) { return math(ir::MathFn::Log, {e.expr.node()}, e.loc); }
Expr log2(const ExprArg& e) { return math(ir::MathFn::Log2, {e.expr.node()}, e.loc); }
Expr sin(const ExprArg& e) { return math(ir::MathFn::Sin, {e.expr.node()}, e.loc); }
Expr cos(const ExprArg& e) { return math(ir::MathFn::Cos, {e.expr.node()}, e.loc); }
Expr tanh(const ExprArg& e) { return math(ir::MathFn::Tanh, {e.expr.node()}, e.loc); }
Expr abs(const ExprArg& e) { return math(ir::MathFn::Abs, {e.expr.node()}, e.loc); }
Expr floor(const ExprArg& e) { return math(ir::MathFn::Floor, {e.expr.node()}, e.loc); }
Expr ceil(const ExprArg& e) { return math(ir::MathFn::Ceil, {e.expr.node()}, e.loc); }
Expr fma(const ExprArg& a, const ExprArg& b, const ExprArg& c) {
  ScalarType t = a.expr.defined() ? a.expr.type() : ScalarType::F32;
  ExprArg first(a);
  return math(ir::MathFn::Fma, {adapt(first, t), adapt(b, t), adapt(c, t)}, a.loc);
}

// ------------------------------------------------------------------------------------------- views

ElemRef View::operator[](const IndexArg& i) const {
  return ElemRef(*this, {adapt(i.index, ScalarType::I32) ? Expr(adapt(i.index, ScalarType::I32)) : i.index.expr},
                 i.index.loc);
}
ElemRef View::operator()(const ExprArg& i, const ExprArg& j) const {
  return ElemRef(*this, {Expr(adapt(i, ScalarType::I32)), Expr(adapt(j, ScalarType::I32))}, i.loc);
}
ElemRef View::operator()(const ExprArg& i, const ExprArg& j, const ExprArg& k) const {
  return ElemRef(*this,
                 {Expr(adapt(i, ScalarType::I32)), Expr(adapt(j, ScalarType::I32)), Expr(adapt(k, ScalarType::I32))},
                 i.loc);
}

const std::string& View::name() const {
  static const std::string kUndefined = "<undefined>";
  return mem_ ? mem_->name : kUndefined;
}
ScalarType View::elem() const { return mem_ ? mem_->elem : ScalarType::I32; }

namespace {
std::vector<ExprPtr> nodes(const std::vector<Expr>& xs) {
  std::vector<ExprPtr> out;
  out.reserve(xs.size());
  for (const auto& x : xs) out.push_back(x.node());
  return out;
}
}  // namespace

Expr ElemRef::load() const {
  if (!view_.defined()) {
    undefined(loc_);
    return Expr(int_lit(ScalarType::I32, 0, loc_));
  }
  return Expr(ir::make<ir::Load>(view_.mem(), nodes(indices_), loc_));
}

ElemRef& ElemRef::operator=(const ExprArg& value) {
  if (!view_.defined() || !value.expr.defined()) {
    if (detail::active() == nullptr) detail::append(nullptr, value.loc);  // throws V0906
    undefined(value.loc);
    return *this;
  }
  ExprPtr v = adapt(value, view_.elem());
  detail::append(ir::make<ir::Store>(view_.mem(), nodes(indices_), v, value.loc), value.loc);
  return *this;
}

ElemRef& ElemRef::operator=(const ElemRef& other) {
  if (this == &other) return *this;
  return *this = ExprArg(other.load(), std::source_location::current());
}

ElemRef& ElemRef::operator+=(const ExprArg& value) {
  auto [x, y] = unify(ExprArg(load(), std::source_location::current()), value);
  if (!x || !y) {
    undefined(value.loc);
    return *this;
  }
  return *this =
             ExprArg(Expr(ir::make<ir::Binary>(BinOp::Add, x, y, x->type, value.loc)), std::source_location::current());
}

}  // namespace vantage
