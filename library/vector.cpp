// Vector types (include/vantage/vector.hpp): lanes of expressions, loads into and stores from
// thread-local arrays by copy loops that lowering makes single vector accesses where it proves them
// (docs/semantics.md, "Vector types"). Written with the public builder only.
#include "vantage/vector.hpp"

#include <algorithm>
#include <utility>

#include "library/common.h"

namespace vantage {

using Loc = std::source_location;

std::string VecType::name() const { return std::string(type_name(elem)) + "x" + std::to_string(lanes); }

Vec::Vec(std::vector<Expr> lanes, Loc loc) : lanes_(std::move(lanes)) {
  if (lanes_.empty()) {
    error_ = "a vector has at least one lane";
    error_loc_ = SourceLoc::from(loc);
  }
}

Vec Vec::splat(int lanes, const ExprArg& value, Loc loc) {
  if (lanes < 1) return invalid("a vector has at least one lane, not " + std::to_string(lanes), SourceLoc::from(loc));
  return Vec(std::vector<Expr>(static_cast<std::size_t>(lanes), value.expr), loc);
}

VecType Vec::type() const {
  return {lanes_.empty() || !lanes_[0].defined() ? ScalarType::F32 : lanes_[0].type(), lanes()};
}

Expr Vec::operator[](int k) const {
  // An out-of-range lane is an undefined expression, which the checker reports (V0706) where it is used.
  if (k < 0 || k >= lanes()) return Expr();
  return lanes_[static_cast<std::size_t>(k)];
}

Vec Vec::invalid(std::string message, SourceLoc loc) {
  Vec v;
  v.error_ = std::move(message);
  v.error_loc_ = loc;
  return v;
}

Vec Vec::with_source(View array) const {
  Vec v = *this;
  v.source_ = std::move(array);
  return v;
}

namespace {

/// Lane k of the operands, or the invalid vector that says why there is none.
Vec lanewise(const std::vector<const VecArg*>& vs, const char* what, const std::function<Expr(std::size_t)>& lane) {
  for (const VecArg* v : vs)
    if (!v->v.error().empty()) return v->v;
  const int n = vs[0]->v.lanes();
  for (const VecArg* v : vs)
    if (v->v.lanes() != n) {
      std::string shapes;
      for (const VecArg* w : vs) shapes += (shapes.empty() ? "" : ", ") + w->v.type().name();
      return Vec::invalid(std::string(what) + " of vectors of different lanes (" + shapes + ")", vs[0]->loc);
    }
  std::vector<Expr> out;
  for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) out.push_back(lane(k));
  return Vec(std::move(out));
}

ExprArg at(const VecArg& v, std::size_t k) { return ExprArg(v.v.lane_exprs()[k], v.loc); }

template <class F>
Vec both(const VecArg& a, const VecArg& b, const char* what, F f) {
  return lanewise({&a, &b}, what, [&](std::size_t k) { return f(at(a, k), at(b, k)); });
}
template <class F>
Vec left(const VecArg& a, const ExprArg& b, const char* what, F f) {
  return lanewise({&a}, what, [&](std::size_t k) { return f(at(a, k), b); });
}
template <class F>
Vec right(const ExprArg& a, const VecArg& b, const char* what, F f) {
  return lanewise({&b}, what, [&](std::size_t k) { return f(a, at(b, k)); });
}

}  // namespace

#define VANTAGE_VEC_OPERATOR(OP)                                                                \
  Vec operator OP(const VecArg& a, const VecArg& b) {                                           \
    return both(a, b, "'" #OP "'", [](const ExprArg& x, const ExprArg& y) { return x OP y; });  \
  }                                                                                             \
  Vec operator OP(const VecArg& a, const ExprArg& b) {                                          \
    return left(a, b, "'" #OP "'", [](const ExprArg& x, const ExprArg& y) { return x OP y; });  \
  }                                                                                             \
  Vec operator OP(const ExprArg& a, const VecArg& b) {                                          \
    return right(a, b, "'" #OP "'", [](const ExprArg& x, const ExprArg& y) { return x OP y; }); \
  }
VANTAGE_VEC_OPERATOR(+)
VANTAGE_VEC_OPERATOR(-)
VANTAGE_VEC_OPERATOR(*)
VANTAGE_VEC_OPERATOR(/)
VANTAGE_VEC_OPERATOR(%)
VANTAGE_VEC_OPERATOR(&)
VANTAGE_VEC_OPERATOR(|)
VANTAGE_VEC_OPERATOR(^)
VANTAGE_VEC_OPERATOR(<<)
VANTAGE_VEC_OPERATOR(>>)
#undef VANTAGE_VEC_OPERATOR

Vec operator-(const VecArg& a) {
  return lanewise({&a}, "'-'", [&](std::size_t k) { return -at(a, k); });
}
Vec min(const VecArg& a, const VecArg& b) {
  return both(a, b, "min", [](const ExprArg& x, const ExprArg& y) { return min(x, y); });
}
Vec max(const VecArg& a, const VecArg& b) {
  return both(a, b, "max", [](const ExprArg& x, const ExprArg& y) { return max(x, y); });
}
Vec fma(const VecArg& a, const VecArg& b, const VecArg& c) {
  return lanewise({&a, &b, &c}, "fma", [&](std::size_t k) { return fma(at(a, k), at(b, k), at(c, k)); });
}
Vec cast(ScalarType to, const VecArg& v) {
  return lanewise({&v}, "cast", [&](std::size_t k) { return cast(to, at(v, k)); });
}
Vec map(const VecArg& v, const std::function<Expr(Expr)>& f) {
  return lanewise({&v}, "map", [&](std::size_t k) { return f(v.v.lane_exprs()[k]); });
}
Vec zip(const VecArg& a, const VecArg& b, const std::function<Expr(Expr, Expr)>& f) {
  return lanewise({&a, &b}, "zip", [&](std::size_t k) { return f(a.v.lane_exprs()[k], b.v.lane_exprs()[k]); });
}
Expr sum(const VecArg& v) {
  // An invalid vector has no lanes: its sum is undefined, which the checker reports where it is used.
  if (!v.v.error().empty()) return Expr();
  Expr total = v.v.lane_exprs()[0];
  for (std::size_t k = 1; k < v.v.lane_exprs().size(); ++k) total = ExprArg(total, v.loc) + at(v, k);
  return total;
}
Expr dot(const VecArg& a, const VecArg& b) {
  VecArg products(both(a, b, "dot", [](const ExprArg& x, const ExprArg& y) { return x * y; }));
  products.loc = a.loc;
  return sum(products);
}

VecRef::VecRef(View view, VecType type, const ExprArg& index)
    : view_(std::move(view)), type_(type), index_(index.expr), across_(index.expr) {}
VecRef::VecRef(View view, VecType type, const ExprArg& index, const ExprArg& across)
    : view_(std::move(view)), type_(type), index_(index.expr), across_(across.expr) {}

Expr VecRef::element() const { return type_.lanes == 1 ? index_ : index_ * type_.lanes; }

VecRef VecRef::like(const View& other) const {
  return VecRef(other, VecType{other.defined() ? other.elem() : type_.elem, type_.lanes}, across_, across_);
}

}  // namespace vantage

namespace vantage::lib {

namespace {

/// The reason `type` is no vector of `view` (V0708), or empty.
std::string refused(const VecType& type, const View& view, const char* what) {
  const bool lanes_ok = type.lanes == 1 || type.lanes == 2 || type.lanes == 4 || type.lanes == 8 || type.lanes == 16;
  if (!lanes_ok || type.elem == ScalarType::Bool || type.bytes() > 16)
    return std::string("lib::") + what + ": a vector is 1, 2, 4, 8 or 16 lanes of a number type making at most 16 " +
           "bytes, not " + type.name() + " (" + std::to_string(type.bytes()) + " bytes)";
  if (view.defined() && view.elem() != type.elem)
    return std::string("lib::") + what + ": a " + type.name() + " vector of '" + view.name() + "', a view of " +
           type_name(view.elem()) + " (the vector's element type is the view's)";
  return "";
}

/// Diagnoses an invalid vector at the line of the operation that made it; true when valid.
bool valid(Scope& th, const Vec& v) {
  if (v.error().empty()) return true;
  th.diagnose("V0708", v.error(), v.error_loc());
  return false;
}

}  // namespace

Vec load(Scope& th, std::string name, const VecRef& ref, Loc loc) {
  const VecType t = ref.type();
  if (std::string why = refused(t, ref.view(), "load"); !why.empty()) {
    th.diagnose("V0708", why, loc);
    // Zeros of the view's type in place of its lanes: the build fails at this line, and what the
    // caller goes on to do with them reports nothing more.
    const ScalarType e = ref.view().defined() ? ref.view().elem() : t.elem;
    return Vec::splat(std::max(t.lanes, 1), cast(e, Expr(0, loc)), loc);
  }
  View a = th.local_array(std::move(name), t.elem, t.lanes, std::nullopt, loc);
  const View& v = ref.view();
  const Expr first = ref.element();
  if (t.lanes == 1)
    a[IndexArg(0, loc)] = v[IndexArg(first, loc)];
  else
    th.for_(
        a.name() + "_e", 0, t.lanes, [&](Scope&, Expr e) { a[IndexArg(e, loc)] = v[IndexArg(first + e, loc)]; }, loc);
  std::vector<Expr> lanes;
  for (int k = 0; k < t.lanes; ++k) lanes.push_back(a[IndexArg(k, loc)]);
  return Vec(std::move(lanes), loc).with_source(a);
}

void store(Scope& th, const VecRef& ref, const Vec& value, Loc loc) {
  if (!valid(th, value)) return;
  const VecType t = ref.type();
  if (std::string why = refused(t, ref.view(), "store"); !why.empty()) {
    th.diagnose("V0708", why, loc);
    return;
  }
  if (value.lanes() != t.lanes) {
    th.diagnose("V0708",
                "lib::store: a vector of " + std::to_string(value.lanes()) + " lanes stored to a " + t.name() +
                    " vector of '" + ref.view().name() + "'",
                loc);
    return;
  }
  // The lanes go through a thread-local array (registers once compiled) unless they are one already,
  // so that the copy to memory is a loop lowering can make one vector store.
  const View& v = ref.view();
  const Expr first = ref.element();
  if (t.lanes == 1) {
    v[IndexArg(first, loc)] = ExprArg(value[0], SourceLoc::from(loc));
    return;
  }
  View src = value.source();
  if (!src.defined()) {
    src = th.local_array("stored", t.elem, t.lanes, std::nullopt, loc);
    for (int k = 0; k < t.lanes; ++k) src[IndexArg(k, loc)] = ExprArg(value[k], SourceLoc::from(loc));
  }
  th.for_(
      src.name() + "_e", 0, t.lanes, [&](Scope&, Expr e) { v[IndexArg(first + e, loc)] = src[IndexArg(e, loc)]; }, loc);
}

Vec let(Scope& th, const std::string& name, const Vec& value, Loc loc) {
  if (!valid(th, value)) return value;
  std::vector<Expr> lanes;
  for (int k = 0; k < value.lanes(); ++k)
    lanes.push_back(th.let(name + "_" + std::to_string(k), ExprArg(value[k], SourceLoc::from(loc)), loc));
  return Vec(std::move(lanes), loc);
}

void for_each_vector(Scope& grid, const View& out, const ExprArg& n, VecType type,
                     const std::function<void(Scope& th, const VecRef& out_v)>& body, Loc loc) {
  if (!detail::declared_threads(grid, "for_each_vector", loc)) return;
  if (std::string why = refused(type, out, "for_each_vector"); !why.empty()) {
    grid.diagnose("V0708", why, loc);
    return;
  }
  const int L = type.lanes;
  const std::int64_t T = *grid.block_threads();
  detail::runs_of(
      grid, out, n, L, [&](Scope& th, const detail::Run& r) { body(th, VecRef(r.out, type, 0, r.blk * T + r.t)); },
      [&](Scope& th, const detail::Run& r, const Expr& e) {
        body(th, VecRef(r.out, VecType{type.elem, 1}, e, r.first + e));
      },
      loc);
}

}  // namespace vantage::lib
