// Vantage IR walks, in the manner of Halide's IRVisitor and IRMutator: one virtual hook per node
// kind, generated from the kind lists in ir.h, whose default visits every child (the child list comes
// from each node's `fields()`, see fields.h). A pass overrides the kinds it cares about and leaves the
// recursion to the base, so a new node kind is walked correctly without touching the pass. A pass
// that must decide what every kind means uses `ir::dispatch` with an overload set instead.
#pragma once

#include <unordered_set>

#include "jit/ir/fields.h"
#include "jit/ir/ir.h"

namespace vantage::ir {

/// Calls `oe(e)` / `os(s)` for every child of a node whatever its kind (the callee's body of a call
/// is not a child).
template <class OE, class OS>
void for_each_child(const ExprNode& e, OE&& oe, OS&& os) {
  dispatch(e, [&](const auto& n) { fields::for_each_child_of(n, oe, os); });
}
template <class OE, class OS>
void for_each_child(const StmtNode& s, OE&& oe, OS&& os) {
  dispatch(s, [&](const auto& n) { fields::for_each_child_of(n, oe, os); });
}
/// The statements directly inside `s`.
template <class OS>
void for_each_child_stmt(const StmtNode& s, OS&& os) {
  for_each_child(
      s, [](const ExprPtr&) {}, os);
}

/// Read-only walk. `walk` accepts null children (an absent else branch).
class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void walk(const ExprPtr& e);
  virtual void walk(const StmtPtr& s);

 protected:
#define VANTAGE_X(N) virtual void visit(const N& n);
  VANTAGE_IR_EXPRS(VANTAGE_X)
  VANTAGE_IR_STMTS(VANTAGE_X)
#undef VANTAGE_X
  /// The default recursion of any node: walk every child in field order.
  template <class N>
  void visit_children(const N& n) {
    fields::for_each_child_of(
        n, [&](const ExprPtr& e) { walk(e); }, [&](const StmtPtr& s) { walk(s); });
  }
};

/// Rewriting walk. `mutate` returns the same node when nothing below it changed.
class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual ExprPtr mutate(const ExprPtr& e);
  virtual StmtPtr mutate(const StmtPtr& s);

 protected:
#define VANTAGE_X(N) virtual ExprPtr visit(const N& n, const ExprPtr& self);
  VANTAGE_IR_EXPRS(VANTAGE_X)
#undef VANTAGE_X
#define VANTAGE_X(N) virtual StmtPtr visit(const N& n, const StmtPtr& self);
  VANTAGE_IR_STMTS(VANTAGE_X)
#undef VANTAGE_X
  /// The default of any node: mutate every child; `self` when none changed.
  template <class N, class Ptr>
  Ptr rebuild(const N& n, const Ptr& self) {
    return fields::rebuild(n, self, *this, pending_);
  }

 private:
  fields::Pending pending_;
};

/// Variables written after their declaration (by an assignment or an unsafe block's output): their
/// value is not the one their let gave them, so ranges and definitions of lets do not hold for them.
std::unordered_set<const VarNode*> reassigned_vars(const StmtPtr& body);

/// Whether `a` and `b` are equal (ir::equal) and read the very same variables, so that they have one
/// value wherever the variables have theirs: ir::equal compares variables by what they look like,
/// and two that look alike may hold different values. What memos keyed by an expression compare.
bool same_expression(const ExprPtr& a, const ExprPtr& b);
bool same_expression(const ExprNode& a, const ExprNode& b);

}  // namespace vantage::ir
