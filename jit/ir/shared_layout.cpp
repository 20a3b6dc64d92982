// Vantage shared-memory layout: see shared_layout.h.
#include "jit/ir/shared_layout.h"

#include "jit/ir/eval.h"
#include "jit/ir/visit.h"

namespace vantage::ir {
namespace {

std::int64_t align_up(std::int64_t v) {
  auto r = checked_add(v, kSharedAlignment - 1);
  return r ? *r / kSharedAlignment * kSharedAlignment : INT64_MAX / kSharedAlignment * kSharedAlignment;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) { return checked_add(a, b).value_or(INT64_MAX); }

class Layouter : public IRVisitor {
 public:
  SharedLayout layout;

 protected:
  void visit(const Seq& n) override {
    std::int64_t saved = top_;
    IRVisitor::visit(n);
    top_ = saved;  // arrays live until the end of the body that allocated them
  }
  void visit(const SharedAlloc& n) override {
    SharedSlot slot;
    slot.offset = align_up(top_);
    auto bytes = shared_bytes(n);
    slot.size_known = bytes.has_value();
    slot.bytes = bytes.value_or(0);
    slot.end = saturating_add(slot.offset, slot.bytes);
    top_ = slot.end;
    layout.peak = std::max(layout.peak, top_);
    layout.arrays[n.mem.get()] = slot;
  }
  void visit(const Call& n) override {
    IRVisitor::visit(n);
    if (!n.fn || n.fn->shared_budget <= 0) return;
    SharedSlot slot;
    slot.offset = align_up(top_);
    slot.bytes = n.fn->shared_budget;
    slot.end = saturating_add(slot.offset, slot.bytes);
    slot.size_known = true;
    layout.peak = std::max(layout.peak, slot.end);
    layout.calls[&n] = slot;
  }

 private:
  std::int64_t top_ = 0;
};

}  // namespace

std::optional<std::int64_t> shared_bytes(const SharedAlloc& alloc) {
  auto f = eval_const(alloc.count);
  if (!f || !f->exact || f->value < 1 || !is_integer(alloc.count->type)) return std::nullopt;
  return checked_mul(f->value, type_bytes(alloc.mem->elem));
}

SharedLayout layout_shared(const StmtPtr& body) {
  Layouter l;
  l.walk(body);
  return std::move(l.layout);
}

}  // namespace vantage::ir
