// Vantage view resolution: see views.h.
#include "jit/ir/views.h"

#include "jit/ir/mutate.h"

namespace vantage::ir {

void Views::collect(const StmtPtr& s) {
  if (!s) return;
  if (const auto* p = as<Partition>(*s)) add(*p);
  if (const auto* c = as<Claim>(*s)) add(c->dst.get(), c->src.get());
  if (const auto* l = as<Lower>(*s)) add(l->dst.get(), l->src.get());
  if (const auto* a = as<Async>(*s)) add(a->dst.get(), a->src.get());
  for_each_child(*s, [&](const StmtPtr& child) { collect(child); });
}

const MemNode* Views::root(const MemNode* m) const {
  while (m) {
    if (auto p = partitions_.find(m); p != partitions_.end()) {
      m = p->second->src.get();
    } else if (auto q = parents_.find(m); q != parents_.end()) {
      m = q->second;
    } else {
      break;
    }
  }
  return m;
}

ExprPtr Views::root_index(const MemNode* m, std::vector<ExprPtr> idx) const {
  while (true) {
    if (auto p = partitions_.find(m); p != partitions_.end()) {
      VarMap map;
      for (std::size_t i = 0; i < p->second->index_vars.size() && i < idx.size(); ++i)
        map[p->second->index_vars[i].get()] = idx[i];
      idx = {fold(substitute(p->second->index, map))};
      m = p->second->src.get();
    } else if (auto q = parents_.find(m); q != parents_.end()) {
      m = q->second;
    } else {
      return idx.empty() ? nullptr : fold(idx[0]);
    }
  }
}

bool Views::unit_stride(const MemNode* m) const {
  while (true) {
    if (auto p = partitions_.find(m); p != partitions_.end()) {
      const Partition& part = *p->second;
      if (part.index_vars.size() != 1) return false;
      if (affine(part.index).coefficient(make<VarRef>(part.index_vars[0], part.loc)) != 1) return false;
      m = part.src.get();
    } else if (auto q = parents_.find(m); q != parents_.end()) {
      m = q->second;
    } else {
      return true;
    }
  }
}

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

Affine affine(const ExprPtr& e) {
  Affine r;
  if (auto c = const_int(e)) {
    r.constant = *c;
    return r;
  }
  if (const auto* b = as<Binary>(*e)) {
    if (b->op == BinOp::Add || b->op == BinOp::Sub) {
      r = affine(b->a);
      r.merge(affine(b->b), b->op == BinOp::Add ? 1 : -1);
      return r;
    }
    if (b->op == BinOp::Mul) {
      if (auto k = const_int(b->b)) {
        r = affine(b->a);
        r.scale(*k);
        return r;
      }
      if (auto k = const_int(b->a)) {
        r = affine(b->b);
        r.scale(*k);
        return r;
      }
    }
  }
  r.add(e, 1);
  return r;
}

}  // namespace vantage::ir
