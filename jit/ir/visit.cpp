// Vantage IR walks: see visit.h. The defaults are generated from the kind lists.
#include <vector>

#include "jit/ir/visit.h"

namespace vantage::ir {

void IRVisitor::walk(const ExprPtr& e) {
  if (e) dispatch(*e, [&](const auto& n) { visit(n); });
}
void IRVisitor::walk(const StmtPtr& s) {
  if (s) dispatch(*s, [&](const auto& n) { visit(n); });
}

#define VANTAGE_X(N) \
  void IRVisitor::visit(const N& n) { visit_children(n); }
VANTAGE_IR_EXPRS(VANTAGE_X)
VANTAGE_IR_STMTS(VANTAGE_X)
#undef VANTAGE_X

ExprPtr IRMutator::mutate(const ExprPtr& e) {
  if (!e) return e;
  return dispatch(*e, [&](const auto& n) { return visit(n, e); });
}
StmtPtr IRMutator::mutate(const StmtPtr& s) {
  if (!s) return s;
  return dispatch(*s, [&](const auto& n) { return visit(n, s); });
}

#define VANTAGE_X(N) \
  ExprPtr IRMutator::visit(const N& n, const ExprPtr& self) { return rebuild(n, self); }
VANTAGE_IR_EXPRS(VANTAGE_X)
#undef VANTAGE_X
#define VANTAGE_X(N) \
  StmtPtr IRMutator::visit(const N& n, const StmtPtr& self) { return rebuild(n, self); }
VANTAGE_IR_STMTS(VANTAGE_X)
#undef VANTAGE_X

std::unordered_set<const VarNode*> reassigned_vars(const StmtPtr& body) {
  struct Scan : IRVisitor {
    std::unordered_set<const VarNode*> vars;
    using IRVisitor::walk;
    void walk(const ExprPtr&) override {}  // assignments are statements
    void visit(const Assign& n) override {
      vars.insert(n.var.get());
      IRVisitor::visit(n);
    }
    void visit(const Unsafe& n) override {
      for (const auto& [name, v] : n.outputs) vars.insert(v.get());
      IRVisitor::visit(n);
    }
  } scan;
  scan.walk(body);
  return scan.vars;
}

}  // namespace vantage::ir
