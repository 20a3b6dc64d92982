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

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& m) : map_(m) {}

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

ExprPtr substitute(const ExprPtr& e, const VarMap& map) {
  if (map.empty()) return e;  // nothing to replace: the same tree
  Substituter s(map);
  return s.mutate(e);
}
StmtPtr substitute(const StmtPtr& s, const VarMap& map) {
  if (map.empty()) return s;
  Substituter sub(map);
  return sub.mutate(s);
}

}  // namespace vantage::ir
