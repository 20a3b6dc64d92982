// Vantage frontend: expressions, operators and views. Expressions are built eagerly into immutable
// IR; ill-typed ones (and ones with undefined operands) are still built and reported by the checker
// at the user's line, so every error surfaces at once.
#include <algorithm>
#include <cctype>
#include <limits>

#include "frontend/build_ctx.h"
#include "frontend/handles.h"
#include "jit/ir/eval.h"
#include "jit/ir/mutate.h"
#include "vantage/builder.hpp"

namespace vantage {
namespace {

using detail::BuilderAccess;
using ir::BinOp;
using ir::ExprPtr;

ExprPtr int_lit(ScalarType t, std::int64_t v, SourceLoc loc) { return ir::int_literal(t, v, loc); }
ExprPtr float_lit(ScalarType t, double v, SourceLoc loc) { return ir::make<ir::Literal>(t, std::int64_t{0}, v, loc); }

using detail::node;

}  // namespace

/// A weak literal (a C++ number) takes the other operand's type where its value is unchanged by it:
/// an integer into any integer type (one that does not hold it keeps its value, so that the checker
/// reports it: V0707), an integer or float into any float type (with its exact value, which the
/// checker compares with what the type holds: V0707 again). An integer past 2^53 has no exact
/// double: it stays an integer (V0701 then names the two types).
ExprPtr detail::adapt(const ExprArg& x, ScalarType to) {
  const ir::ExprNode* raw = BuilderAccess::raw(x.expr);
  const auto* l = raw ? ir::as<ir::Literal>(*raw) : nullptr;
  if (!x.weak_literal || !l || l->type == to || to == ScalarType::Bool) return node(x.expr);
  ExprPtr n = node(x.expr);
  if (is_integer(l->type)) {
    const __int128 v = ir::exact(l->type, l->i);
    if (is_float(to)) {
      const double d = static_cast<double>(v);
      return static_cast<__int128>(d) == v ? float_lit(to, d, x.loc) : n;
    }
    // u64 holds bit patterns: a negative value, or one above i64's range in i64, has no literal.
    if (to == ScalarType::U64 && v < 0) return n;
    if (to == ScalarType::I64 && v > INT64_MAX) return n;
    return int_lit(to, static_cast<std::int64_t>(v), x.loc);
  }
  if (is_float(l->type) && is_float(to)) return float_lit(to, l->f, x.loc);
  return n;
}

namespace {

using detail::adapt;

/// Both operands, with weak literals adapted to the other side.
std::pair<ExprPtr, ExprPtr> unify(const ExprArg& a, const ExprArg& b) {
  if (a.weak_literal && !b.weak_literal && b.expr.defined()) return {adapt(a, b.expr.type()), node(b.expr)};
  if (b.weak_literal && !a.weak_literal && a.expr.defined()) return {node(a.expr), adapt(b, a.expr.type())};
  return {node(a.expr), node(b.expr)};
}

/// An operation on integer or bool literals of its own type, folded as the kernel would compute it,
/// and x + 0, x - 0, x * 1 and x / 1 on integers made x (`8 * (52 / 2 % 2)` written with C++ loop counters
/// is 0): the IR, the generated code and every analysis of it are the smaller. What the checker
/// must see is left alone: an operator on operands of mixed types or of a type it is not defined
/// for (V0701, V0702), and anything ir::fold cannot fold exactly (overflow, division by zero, a
/// shift too far).
ExprPtr folded(const ExprPtr& e) {
  bool typed = false;
  if (const auto* b = ir::as<ir::Binary>(*e)) {
    typed = b->a && b->b && ir::operands_agree(b->op, b->a->type, b->b->type) && ir::defined_for(b->op, b->a->type);
  } else if (const auto* u = ir::as<ir::Unary>(*e)) {
    typed = u->a && ir::defined_for(u->op, u->a->type);
  }
  return typed ? ir::fold(e) : e;
}

ScalarType type_or_i32(const ExprPtr& e) { return e ? e->type : ScalarType::I32; }

Expr binary(BinOp op, const ExprArg& a, const ExprArg& b) {
  auto [x, y] = unify(a, b);
  bool to_bool = ir::is_comparison(op) || op == BinOp::LAnd || op == BinOp::LOr;
  ScalarType t = to_bool ? ScalarType::Bool : type_or_i32(x);
  return BuilderAccess::expr(folded(ir::make<ir::Binary>(t, op, x, y, a.loc)));
}

Expr unary(ir::UnOp op, const ExprArg& a) {
  ExprPtr x = node(a.expr);
  ScalarType t = op == ir::UnOp::Not ? ScalarType::Bool : type_or_i32(x);
  return BuilderAccess::expr(folded(ir::make<ir::Unary>(t, op, x, a.loc)));
}

Expr math(ir::MathFn fn, std::vector<ExprPtr> args, SourceLoc loc) {
  ScalarType t = args.front() ? args.front()->type : ScalarType::F32;
  if (ir::is_bit_fn(fn) && fn != ir::MathFn::Brev) t = ScalarType::I32;  // a count
  if (ir::is_float_predicate(fn)) t = ScalarType::Bool;
  return BuilderAccess::expr(ir::make<ir::MathCall>(t, fn, std::move(args), loc));
}
/// A math function of two operands of one type (a literal takes the other's).
Expr math2(ir::MathFn fn, const ExprArg& a, const ExprArg& b) {
  auto [p, q] = unify(a, b);
  return math(fn, {p, q}, a.loc);
}

using detail::here;

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

ScalarType Expr::type() const { return node_ ? BuilderAccess::raw(*this)->type : ScalarType::I32; }

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
  return BuilderAccess::expr(ir::make<ir::Select>(type_or_i32(x), node(c.expr), x, y, c.loc));
}
Expr min(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Min, a, b); }
Expr max(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Max, a, b); }
Expr pow(const ExprArg& a, const ExprArg& b) { return binary(BinOp::Pow, a, b); }
Expr cast(ScalarType to, const ExprArg& e) { return BuilderAccess::expr(ir::make<ir::Cast>(to, node(e.expr), e.loc)); }
Expr sqrt(const ExprArg& e) { return math(ir::MathFn::Sqrt, {node(e.expr)}, e.loc); }
Expr rsqrt(const ExprArg& e) { return math(ir::MathFn::Rsqrt, {node(e.expr)}, e.loc); }
Expr exp(const ExprArg& e) { return math(ir::MathFn::Exp, {node(e.expr)}, e.loc); }
Expr exp2(const ExprArg& e) { return math(ir::MathFn::Exp2, {node(e.expr)}, e.loc); }
Expr log(const ExprArg& e) { return math(ir::MathFn::Log, {node(e.expr)}, e.loc); }
Expr log2(const ExprArg& e) { return math(ir::MathFn::Log2, {node(e.expr)}, e.loc); }
Expr sin(const ExprArg& e) { return math(ir::MathFn::Sin, {node(e.expr)}, e.loc); }
Expr cos(const ExprArg& e) { return math(ir::MathFn::Cos, {node(e.expr)}, e.loc); }
Expr tanh(const ExprArg& e) { return math(ir::MathFn::Tanh, {node(e.expr)}, e.loc); }
Expr abs(const ExprArg& e) { return math(ir::MathFn::Abs, {node(e.expr)}, e.loc); }
Expr floor(const ExprArg& e) { return math(ir::MathFn::Floor, {node(e.expr)}, e.loc); }
Expr ceil(const ExprArg& e) { return math(ir::MathFn::Ceil, {node(e.expr)}, e.loc); }
Expr tan(const ExprArg& e) { return math(ir::MathFn::Tan, {node(e.expr)}, e.loc); }
Expr asin(const ExprArg& e) { return math(ir::MathFn::Asin, {node(e.expr)}, e.loc); }
Expr acos(const ExprArg& e) { return math(ir::MathFn::Acos, {node(e.expr)}, e.loc); }
Expr atan(const ExprArg& e) { return math(ir::MathFn::Atan, {node(e.expr)}, e.loc); }
Expr sinh(const ExprArg& e) { return math(ir::MathFn::Sinh, {node(e.expr)}, e.loc); }
Expr cosh(const ExprArg& e) { return math(ir::MathFn::Cosh, {node(e.expr)}, e.loc); }
Expr erf(const ExprArg& e) { return math(ir::MathFn::Erf, {node(e.expr)}, e.loc); }
Expr erfc(const ExprArg& e) { return math(ir::MathFn::Erfc, {node(e.expr)}, e.loc); }
Expr expm1(const ExprArg& e) { return math(ir::MathFn::Expm1, {node(e.expr)}, e.loc); }
Expr log1p(const ExprArg& e) { return math(ir::MathFn::Log1p, {node(e.expr)}, e.loc); }
Expr log10(const ExprArg& e) { return math(ir::MathFn::Log10, {node(e.expr)}, e.loc); }
Expr cbrt(const ExprArg& e) { return math(ir::MathFn::Cbrt, {node(e.expr)}, e.loc); }
Expr trunc(const ExprArg& e) { return math(ir::MathFn::Trunc, {node(e.expr)}, e.loc); }
Expr round(const ExprArg& e) { return math(ir::MathFn::Round, {node(e.expr)}, e.loc); }
Expr rint(const ExprArg& e) { return math(ir::MathFn::Rint, {node(e.expr)}, e.loc); }
Expr isnan(const ExprArg& e) { return math(ir::MathFn::IsNan, {node(e.expr)}, e.loc); }
Expr isinf(const ExprArg& e) { return math(ir::MathFn::IsInf, {node(e.expr)}, e.loc); }
Expr isfinite(const ExprArg& e) { return math(ir::MathFn::IsFinite, {node(e.expr)}, e.loc); }
Expr atan2(const ExprArg& y, const ExprArg& x) { return math2(ir::MathFn::Atan2, y, x); }
Expr fmod(const ExprArg& a, const ExprArg& b) { return math2(ir::MathFn::Fmod, a, b); }
Expr hypot(const ExprArg& a, const ExprArg& b) { return math2(ir::MathFn::Hypot, a, b); }
Expr copysign(const ExprArg& a, const ExprArg& b) { return math2(ir::MathFn::Copysign, a, b); }
Expr popc(const ExprArg& e) { return math(ir::MathFn::Popc, {node(e.expr)}, e.loc); }
Expr clz(const ExprArg& e) { return math(ir::MathFn::Clz, {node(e.expr)}, e.loc); }
Expr ffs(const ExprArg& e) { return math(ir::MathFn::Ffs, {node(e.expr)}, e.loc); }
Expr brev(const ExprArg& e) { return math(ir::MathFn::Brev, {node(e.expr)}, e.loc); }
Expr bit_cast(ScalarType to, const ExprArg& e) {
  return BuilderAccess::expr(
      ir::make<ir::MathCall>(to, ir::MathFn::Bitcast, std::vector<ExprPtr>{node(e.expr)}, e.loc));
}
Expr fma(const ExprArg& a, const ExprArg& b, const ExprArg& c) {
  ScalarType t = a.expr.defined() ? a.expr.type() : ScalarType::F32;
  return math(ir::MathFn::Fma, {adapt(a, t), adapt(b, t), adapt(c, t)}, a.loc);
}

// ------------------------------------------------------------------------------------------- views

ElemRef View::operator[](const IndexArg& i) const {
  return ElemRef(*this, {BuilderAccess::expr(adapt(i.index, ScalarType::I32))}, i.index.loc);
}
ElemRef View::operator()(const ExprArg& i, const ExprArg& j) const {
  return ElemRef(
      *this, {BuilderAccess::expr(adapt(i, ScalarType::I32)), BuilderAccess::expr(adapt(j, ScalarType::I32))}, i.loc);
}
ElemRef View::operator()(const ExprArg& i, const ExprArg& j, const ExprArg& k) const {
  return ElemRef(*this,
                 {BuilderAccess::expr(adapt(i, ScalarType::I32)), BuilderAccess::expr(adapt(j, ScalarType::I32)),
                  BuilderAccess::expr(adapt(k, ScalarType::I32))},
                 i.loc);
}

const std::string& View::name() const {
  static const std::string kUndefined = "<undefined>";
  return mem_ ? BuilderAccess::raw(*this)->name : kUndefined;
}
const View& View::named(std::string name, std::source_location l) const {
  if (!mem_) return *this;
  auto ctx = BuilderAccess::ctx(*this);
  const ir::MemNode* m = BuilderAccess::raw(*this);
  using Origin = ir::MemNode::Origin;
  bool derived = m->origin == Origin::Partition || m->origin == Origin::Claim || m->origin == Origin::Lower ||
                 m->origin == Origin::Async;
  bool ident = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
               std::all_of(name.begin(), name.end(),
                           [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!derived || !ident) {
    if (ctx)
      ctx->error("V0914", here(l),
                 !derived ? "'" + m->name + "' keeps the name it was declared with; named() names the views a " +
                                "partition, claim, lower or async makes"
                          : "a view's name must be a C identifier, not '" + name + "'");
    return *this;
  }
  // The node is the builder's own (made non-const by make_mem); nothing has read its name for
  // checking yet: diagnostics and code are made at build().
  auto* mine = const_cast<ir::MemNode*>(m);
  mine->name = std::move(name);
  mine->hash = ir::hash_mem(*mine);
  return *this;
}
ScalarType View::elem() const { return mem_ ? BuilderAccess::raw(*this)->elem : ScalarType::I32; }

namespace {
std::vector<ExprPtr> nodes(const std::vector<Expr>& xs) {
  std::vector<ExprPtr> out;
  out.reserve(xs.size());
  for (const auto& x : xs) out.push_back(node(x));
  return out;
}

[[noreturn]] void undefined_view(SourceLoc loc) {
  throw CheckError({{"V0706", "an undefined View was used (a default-constructed handle)", loc, {}}});
}
}  // namespace

Expr ElemRef::load() const {
  // An undefined view has no memory to read: the load has no node, which the checker reports at the
  // statement that uses it (V0706).
  if (!view_.defined()) return Expr();
  return BuilderAccess::expr(ir::make<ir::Load>(view_.elem(), BuilderAccess::mem(view_), nodes(indices_), loc_));
}

ElemRef& ElemRef::operator=(const ExprArg& value) {
  if (!view_.defined()) undefined_view(loc_);
  auto ctx = BuilderAccess::ctx(view_);
  if (!ctx)
    throw CheckError({{"V0906", "a store through '" + view_.name() + "', whose builder no longer exists", loc_, {}}});
  ExprPtr v = adapt(value, view_.elem());
  ctx->record_innermost(ir::make<ir::Store>(BuilderAccess::mem(view_), nodes(indices_), v, loc_), loc_);
  return *this;
}

ElemRef& ElemRef::operator=(const ElemRef& other) {
  if (this == &other) return *this;
  return *this = ExprArg(other.load(), loc_);
}

ElemRef& ElemRef::operator+=(const ExprArg& value) {
  auto [x, y] = unify(ExprArg(load(), loc_), value);
  return *this = ExprArg(BuilderAccess::expr(ir::make<ir::Binary>(type_or_i32(x), BinOp::Add, x, y, loc_)), loc_);
}

}  // namespace vantage
