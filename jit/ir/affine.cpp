// The affine form of integer expressions. See affine.h.
#include "jit/ir/affine.h"

#include <optional>

#include "jit/ir/eval.h"

namespace vantage::ir {

void Affine::add(const ExprPtr& atom, std::int64_t k) {
  for (auto& [a, c] : terms)
    if (equal(a, atom)) {
      c += k;
      return;
    }
  terms.emplace_back(atom, k);
}
void Affine::scale(std::int64_t k) {
  constant *= k;
  for (auto& t : terms) t.second *= k;
}
void Affine::merge(const Affine& o, std::int64_t sign) {
  constant += sign * o.constant;
  for (const auto& [a, c] : o.terms) add(a, sign * c);
}
std::int64_t Affine::coefficient(const ExprPtr& atom) const {
  for (const auto& [a, c] : terms)
    if (equal(a, atom)) return c;
  return 0;
}

Affine affine(const ExprPtr& e, bool exact) {
  auto constant = [exact](const ExprPtr& x) -> std::optional<std::int64_t> {
    if (exact && !as<Literal>(*x)) return std::nullopt;
    return const_int(x);
  };
  Affine r;
  if (auto c = constant(e)) {
    r.constant = *c;
    return r;
  }
  if (const auto* b = as<Binary>(*e)) {
    if (b->op == BinOp::Add || b->op == BinOp::Sub) {
      r = affine(b->a, exact);
      r.merge(affine(b->b, exact), b->op == BinOp::Add ? 1 : -1);
      return r;
    }
    if (b->op == BinOp::Mul)
      for (auto [k, x] : {std::pair{b->b, b->a}, std::pair{b->a, b->b}})
        if (auto c = constant(k)) {
          r = affine(x, exact);
          r.scale(*c);
          return r;
        }
  }
  r.add(e, 1);
  return r;
}

const Affine& AffineReader::operator()(const ExprPtr& e, int depth) {
  if (auto it = memo_.find(e.get()); it != memo_.end()) return it->second;
  Affine a = compute(e, depth);
  // Kept strictly under 2^62 in magnitude, so that adding two never leaves 64 bits.
  constexpr std::int64_t kBig = std::int64_t{1} << 62;
  bool big = a.constant >= kBig || a.constant <= -kBig;
  for (const auto& [t, c] : a.terms) big = big || c >= kBig || c <= -kBig;
  if (big) {
    a = Affine{};
    a.add(e, 1);
  }
  return memo_.emplace(e.get(), std::move(a)).first->second;
}

Affine AffineReader::compute(const ExprPtr& e, int depth) {
  Affine a;
  auto opaque = [&] {
    a = Affine{};
    a.add(e, 1);
    return a;
  };
  if (depth > 64 || !is_integer(e->type)) return opaque();
  if (const auto* l = as<Literal>(*e)) {
    a.constant = l->i;
    return a;
  }
  if (const auto* v = as<VarRef>(*e)) {
    if (auto it = lets_.find(v->var.get()); it != lets_.end()) return (*this)(it->second, depth + 1);
    a.add(e, 1);
    return a;
  }
  if (const auto* c = as<Cast>(*e)) return is_integer(c->a->type) ? (*this)(c->a, depth + 1) : opaque();
  const auto* b = as<Binary>(*e);
  if (!b) return opaque();
  // Both sides are under 2^62 in magnitude (operator() makes a larger one an atom), so that a sum,
  // a difference and a product with a constant of either fit in 128 bits, and are checked against
  // 64 before they are kept.
  const Affine x = (*this)(b->a, depth + 1);
  const Affine& y = (*this)(b->b, depth + 1);
  auto fits = [](__int128 v) { return v >= INT64_MIN && v <= INT64_MAX; };
  auto scaled = [&](const Affine& v, std::int64_t k) -> std::optional<Affine> {
    Affine r;
    const __int128 c = static_cast<__int128>(v.constant) * k;
    if (!fits(c)) return std::nullopt;
    r.constant = static_cast<std::int64_t>(c);
    for (const auto& [t, coef] : v.terms) {
      const __int128 p = static_cast<__int128>(coef) * k;
      if (!fits(p)) return std::nullopt;
      r.terms.emplace_back(t, static_cast<std::int64_t>(p));
    }
    return r;
  };
  switch (b->op) {
    case BinOp::Add:
    case BinOp::Sub: {
      // Each side under 2^62: the sum's constant and coefficients under 2^63.
      a = x;
      a.merge(y, b->op == BinOp::Add ? 1 : -1);
      return a;
    }
    case BinOp::Mul: {
      std::optional<Affine> r;
      if (y.terms.empty())
        r = scaled(x, y.constant);
      else if (x.terms.empty())
        r = scaled(y, x.constant);
      return r ? *r : opaque();
    }
    default: return opaque();
  }
}

bool same_terms(const Affine& a, const Affine& b) {
  auto covered = [](const Affine& p, const Affine& q) {
    for (const auto& [t, c] : p.terms)
      if (c != 0 && q.coefficient(t) != c) return false;
    return true;
  };
  return covered(a, b) && covered(b, a);
}

}  // namespace vantage::ir
