// Vantage IR rewriting: see mutate.h.
#include "jit/ir/mutate.h"

#include "jit/ir/eval.h"
#include "jit/ir/visit.h"

namespace vantage::ir {
namespace {

bool is_int_lit(const ExprPtr& e, std::int64_t v) {
  const auto* l = e ? as<Literal>(*e) : nullptr;
  return l && is_integer(l->type) && l->i == v;
}

/// x+0, 0+x, x-0, x*1, 1*x, x/1 on integers: x.
ExprPtr fold_identity(const ExprPtr& e) {
  const auto* b = as<Binary>(*e);
  if (!b || !is_integer(b->type) || !b->a || !b->b || b->a->type != b->type || b->b->type != b->type) return e;
  switch (b->op) {
    case BinOp::Add:
      if (is_int_lit(b->b, 0)) return b->a;
      if (is_int_lit(b->a, 0)) return b->b;
      break;
    case BinOp::Sub:
      if (is_int_lit(b->b, 0)) return b->a;
      break;
    case BinOp::Mul:
      if (is_int_lit(b->b, 1)) return b->a;
      if (is_int_lit(b->a, 1)) return b->b;
      break;
    case BinOp::Div:
      if (is_int_lit(b->b, 1)) return b->a;
      break;
    default: break;
  }
  return e;
}

ExprPtr substituted(const ExprPtr& e, const VarMap& map);

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& m) : map_(m) {}
  using IRMutator::mutate;
  /// Expressions (a statement's too) through `substituted`, which comes back here for the kinds it
  /// does not take itself.
  ExprPtr mutate(const ExprPtr& e) override { return substituted(e, map_); }
  ExprPtr mutate_node(const ExprPtr& e) { return IRMutator::mutate(e); }

 protected:
  ExprPtr visit(const VarRef& n, const ExprPtr& self) override {
    auto it = map_.find(n.var.get());
    return it == map_.end() ? self : it->second;
  }
  ExprPtr visit(const Unary& n, const ExprPtr& self) override { return folded(n, self); }
  ExprPtr visit(const Binary& n, const ExprPtr& self) override { return folded(n, self); }
  ExprPtr visit(const Cast& n, const ExprPtr& self) override { return folded(n, self); }
  ExprPtr visit(const Select& n, const ExprPtr& self) override { return folded(n, self); }

 private:
  template <class N>
  ExprPtr folded(const N& n, const ExprPtr& self) {
    ExprPtr r = rebuild(n, self);
    return r == self ? self : fold(r);
  }
  const VarMap& map_;
};

}  // namespace

ExprPtr fold(const ExprPtr& e) {
  if (!e || !(is_integer(e->type) || e->type == ScalarType::Bool)) return e;
  if (as<Literal>(*e)) return e;
  // Operands are folded before the node (bottom up), so a foldable node has literal operands.
  bool literal_operands = true;
  for_each_child(
      *e, [&](const ExprPtr& c) { literal_operands = literal_operands && c && as<Literal>(*c); },
      [](const StmtPtr&) {});
  if (!literal_operands) return fold_identity(e);
  if (auto f = eval_const(e); f && f->exact)
    return make<Literal>(e->type, f->value, static_cast<double>(f->value), e->loc);
  return e;
}

namespace {
/// What Substituter computes, without a mutator's machinery on the kinds an index is made of (the
/// views of an unrolled tile substitute their element numbers into the same index dozens of times).
ExprPtr substituted(const ExprPtr& e, const VarMap& map) {
  if (!e) return e;
  switch (e->kind) {
    case ExprKind::Literal:
    case ExprKind::Builtin:
    case ExprKind::Id: return e;
    case ExprKind::VarRef: {
      auto it = map.find(static_cast<const VarRef&>(*e).var.get());
      return it == map.end() ? e : it->second;
    }
    case ExprKind::Unary: {
      const auto& n = static_cast<const Unary&>(*e);
      ExprPtr a = substituted(n.a, map);
      return a == n.a ? e : fold(make<Unary>(n.type, n.op, std::move(a), n.loc));
    }
    case ExprKind::Binary: {
      const auto& n = static_cast<const Binary&>(*e);
      ExprPtr a = substituted(n.a, map), b = substituted(n.b, map);
      return a == n.a && b == n.b ? e : fold(make<Binary>(n.type, n.op, std::move(a), std::move(b), n.loc));
    }
    case ExprKind::Cast: {
      const auto& n = static_cast<const Cast&>(*e);
      ExprPtr a = substituted(n.a, map);
      return a == n.a ? e : fold(make<Cast>(n.type, std::move(a), n.loc));
    }
    case ExprKind::Select: {
      const auto& n = static_cast<const Select&>(*e);
      ExprPtr c = substituted(n.c, map), a = substituted(n.a, map), b = substituted(n.b, map);
      return c == n.c && a == n.a && b == n.b
                 ? e
                 : fold(make<Select>(n.type, std::move(c), std::move(a), std::move(b), n.loc));
    }
    default: {
      Substituter s(map);
      return s.mutate_node(e);
    }
  }
}

}  // namespace

ExprPtr substitute(const ExprPtr& e, const VarMap& map) {
  if (map.empty()) return e;  // nothing to replace: the same tree
  return substituted(e, map);
}
StmtPtr substitute(const StmtPtr& s, const VarMap& map) {
  if (map.empty()) return s;
  Substituter sub(map);
  return sub.mutate(s);
}

}  // namespace vantage::ir
