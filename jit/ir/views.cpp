// Vantage view resolution: see views.h.
#include "jit/ir/views.h"

#include "jit/ir/eval.h"
#include "jit/ir/mutate.h"
#include "jit/ir/visit.h"

namespace vantage::ir {

namespace {
class Collector : public IRVisitor {
 public:
  explicit Collector(Views& v) : views_(v) {}

 protected:
  void visit(const Partition& n) override {
    views_.add(n);
    IRVisitor::visit(n);
  }
  void visit(const Claim& n) override {
    views_.add(n.dst.get(), n.src.get());
    IRVisitor::visit(n);
  }
  void visit(const Lower& n) override {
    views_.add(n.dst.get(), n.src.get());
    IRVisitor::visit(n);
  }
  void visit(const Async& n) override {
    views_.add(n.dst.get(), n.src.get());
    IRVisitor::visit(n);
  }

 private:
  Views& views_;
};
}  // namespace

void Views::collect(const StmtPtr& s) {
  Collector c(*this);
  c.walk(s);
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

ExprPtr Views::share(const MemNode* m) const {
  auto p = partitions_.find(m);
  if (p == partitions_.end()) return nullptr;
  if (auto it = shares_.find(m); it != shares_.end()) return it->second;
  std::vector<ExprPtr> idx;
  for (const auto& v : p->second->index_vars) idx.push_back(ref(v, p->second->loc));
  return shares_[m] = root_index(m, std::move(idx));
}

bool Views::unit_stride(const MemNode* m) const {
  while (true) {
    if (auto p = partitions_.find(m); p != partitions_.end()) {
      const Partition& part = *p->second;
      if (part.index_vars.size() != 1) return false;
      if (affine(part.index).coefficient(ref(part.index_vars[0], part.loc)) != 1) return false;
      m = part.src.get();
    } else if (auto q = parents_.find(m); q != parents_.end()) {
      m = q->second;
    } else {
      return true;
    }
  }
}

}  // namespace vantage::ir
