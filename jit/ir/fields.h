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
/// The field with its children mutated; sets `changed` when one of them differs.
template <class M>
ExprPtr mapped(const ExprPtr& e, M& m, bool& changed) {
  ExprPtr r = m.mutate(e);
  changed |= r != e;
  return r;
}
template <class M>
StmtPtr mapped(const StmtPtr& s, M& m, bool& changed) {
  StmtPtr r = m.mutate(s);
  changed |= r != s;
  return r;
}
template <class M>
std::vector<ExprPtr> mapped(const std::vector<ExprPtr>& v, M& m, bool& changed) {
  std::vector<ExprPtr> out;
  out.reserve(v.size());
  for (const auto& e : v) out.push_back(mapped(e, m, changed));
  return out;
}
template <class M>
std::vector<StmtPtr> mapped(const std::vector<StmtPtr>& v, M& m, bool& changed) {
  std::vector<StmtPtr> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(mapped(s, m, changed));
  return out;
}
template <class M>
std::vector<CallArgNode> mapped(const std::vector<CallArgNode>& v, M& m, bool& changed) {
  std::vector<CallArgNode> out;
  out.reserve(v.size());
  for (const auto& a : v) out.push_back({a.value ? mapped(a.value, m, changed) : nullptr, a.mem});
  return out;
}
template <class M>
std::vector<NamedExpr> mapped(const std::vector<NamedExpr>& v, M& m, bool& changed) {
  std::vector<NamedExpr> out;
  out.reserve(v.size());
  for (const auto& [name, e] : v) out.emplace_back(name, mapped(e, m, changed));
  return out;
}
template <class T, class M>
T mapped(const T& leaf, M&, bool&) {
  static_assert(is_leaf_field<T>, "classify this field type in jit/ir/fields.h: does it hold children?");
  return leaf;
}

/// `n` with every child mutated by `m`, or `self` when no child changed (unchanged subtrees stay
/// shared). Expression nodes keep their type.
template <class N, class Ptr, class M>
Ptr rebuild(const N& n, const Ptr& self, M& m) {
  bool changed = false;
  auto values = std::apply(
      [&](const auto&... f) { return std::tuple<std::decay_t<decltype(f)>...>{mapped(f, m, changed)...}; }, n.fields());
  if (!changed) return self;
  return std::apply(
      [&](auto&&... xs) -> Ptr {
        if constexpr (std::is_base_of_v<ExprNode, N>) {
          return make<N>(n.type, std::move(xs)..., n.loc);
        } else {
          return make<N>(std::move(xs)..., n.loc);
        }
      },
      std::move(values));
}

}  // namespace vantage::ir::fields
