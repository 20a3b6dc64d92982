// Vantage IR fields: what each type of node field means to the generic machinery. Every node lists
// its fields in `fields()`; hashing, equality, the child walk and the rebuild in the mutator go
// through these overloads. A field of a type not classified here fails to compile (is_leaf_field),
// so no pass can silently skip the children of a new field.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jit/ir/ir.h"

namespace vantage::ir::fields {

/// Field types that hold no child expression or statement.
template <class T>
inline constexpr bool is_leaf_field =
    std::is_enum_v<T> || std::is_arithmetic_v<T> || std::is_same_v<T, std::string> || std::is_same_v<T, Perspective> ||
    std::is_same_v<T, std::optional<Perspective>> || std::is_same_v<T, VarPtr> || std::is_same_v<T, MemPtr> ||
    std::is_same_v<T, FunctionPtr> || std::is_same_v<T, std::vector<std::int64_t>> ||
    std::is_same_v<T, std::vector<VarPtr>> || std::is_same_v<T, std::vector<MemPtr>> ||
    std::is_same_v<T, std::vector<SourceLoc>> || std::is_same_v<T, std::vector<NamedVar>>;

// ---------------------------------------------------------------- the child walk
template <class OE, class OS>
void children(const ExprPtr& e, OE& oe, OS&) {
  oe(e);
}
template <class OE, class OS>
void children(const StmtPtr& s, OE&, OS& os) {
  os(s);
}
template <class OE, class OS>
void children(const std::vector<ExprPtr>& v, OE& oe, OS&) {
  for (const auto& e : v) oe(e);
}
template <class OE, class OS>
void children(const std::vector<StmtPtr>& v, OE&, OS& os) {
  for (const auto& s : v) os(s);
}
template <class OE, class OS>
void children(const std::vector<CallArgNode>& v, OE& oe, OS&) {
  for (const auto& a : v)
    if (a.value) oe(a.value);
}
template <class OE, class OS>
void children(const std::vector<NamedExpr>& v, OE& oe, OS&) {
  for (const auto& [name, e] : v) oe(e);
}
template <class T, class OE, class OS>
void children(const T&, OE&, OS&) {
  static_assert(is_leaf_field<T>, "classify this field type in jit/ir/fields.h: does it hold children?");
}

/// Calls `oe(child)` for every expression and `os(child)` for every statement directly inside `n`,
/// in field order (children may be null: an absent else branch, an undefined handle).
template <class N, class OE, class OS>
void for_each_child_of(const N& n, OE&& oe, OS&& os) {
  std::apply([&](const auto&... f) { (children(f, oe, os), ...); }, n.fields());
}

// ---------------------------------------------------------------- the rebuild of a mutator
/// Mutated children waiting to be put into a rebuilt node: a mutator's scratch stacks, used in LIFO
/// order by nested rebuilds, so that a node whose children did not change costs no allocation.
struct Pending {
  std::vector<ExprPtr> exprs;
  std::vector<StmtPtr> stmts;
};

/// A field of the rebuilt node: children come from the pending stacks, in field order.
struct Taker {
  Pending& p;
  std::size_t e, s;
  ExprPtr take(const ExprPtr&) { return std::move(p.exprs[e++]); }
  StmtPtr take(const StmtPtr&) { return std::move(p.stmts[s++]); }
  std::vector<ExprPtr> take(const std::vector<ExprPtr>& v) {
    std::vector<ExprPtr> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(std::move(p.exprs[e++]));
    return out;
  }
  std::vector<StmtPtr> take(const std::vector<StmtPtr>& v) {
    std::vector<StmtPtr> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(std::move(p.stmts[s++]));
    return out;
  }
  std::vector<CallArgNode> take(const std::vector<CallArgNode>& v) {
    std::vector<CallArgNode> out;
    out.reserve(v.size());
    for (const auto& a : v) out.push_back({a.value ? std::move(p.exprs[e++]) : nullptr, a.mem});
    return out;
  }
  std::vector<NamedExpr> take(const std::vector<NamedExpr>& v) {
    std::vector<NamedExpr> out;
    out.reserve(v.size());
    for (const auto& [name, x] : v) out.emplace_back(name, std::move(p.exprs[e++]));
    return out;
  }
  template <class T>
  T take(const T& leaf) {
    static_assert(is_leaf_field<T>, "classify this field type in jit/ir/fields.h: does it hold children?");
    return leaf;
  }
};

/// `n` with every child mutated by `m`, or `self` when no child changed (unchanged subtrees stay
/// shared and nothing is copied). Expression nodes keep their type.
template <class N, class Ptr, class M>
Ptr rebuild(const N& n, const Ptr& self, M& m, Pending& pending) {
  const std::size_t e0 = pending.exprs.size(), s0 = pending.stmts.size();
  bool changed = false;
  for_each_child_of(
      n,
      [&](const ExprPtr& c) {
        ExprPtr r = m.mutate(c);
        changed |= r != c;
        pending.exprs.push_back(std::move(r));
      },
      [&](const StmtPtr& c) {
        StmtPtr r = m.mutate(c);
        changed |= r != c;
        pending.stmts.push_back(std::move(r));
      });
  if (!changed) {
    pending.exprs.resize(e0);
    pending.stmts.resize(s0);
    return self;
  }
  Taker t{pending, e0, s0};
  Ptr out = std::apply(
      [&](const auto&... f) -> Ptr {
        auto values = std::tuple<std::decay_t<decltype(f)>...>{t.take(f)...};
        return std::apply(
            [&](auto&&... xs) -> Ptr {
              if constexpr (std::is_base_of_v<ExprNode, N>) {
                return make<N>(n.type, std::move(xs)..., n.loc);
              } else {
                return make<N>(std::move(xs)..., n.loc);
              }
            },
            std::move(values));
      },
      n.fields());
  pending.exprs.resize(e0);
  pending.stmts.resize(s0);
  return out;
}

}  // namespace vantage::ir::fields
