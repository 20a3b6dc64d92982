// Vantage shared-memory layout: see shared_layout.h.
#include "jit/ir/shared_layout.h"

#include "jit/ir/eval.h"
#include "jit/ir/visit.h"

namespace vantage::ir {
namespace {

std::int64_t align_up(std::int64_t v, std::int64_t a = kSharedAlignment) {
  auto r = checked_add(v, a - 1);
  return r ? *r / a * a : INT64_MAX / a * a;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) { return checked_add(a, b).value_or(INT64_MAX); }

/// Drives the builder over a body (statements only: allocations and calls are statements).
class Layouter : public IRVisitor {
 public:
  SharedLayoutBuilder builder;
  using IRVisitor::walk;
  void walk(const ExprPtr&) override {}

 protected:
  void visit(const Seq& n) override {
    builder.open();
    IRVisitor::visit(n);
    builder.close();
  }
  void visit(const SharedAlloc& n) override { builder.allocate(n); }
  void visit(const Call& n) override {
    if (n.fn && n.fn->shared_budget > 0) builder.call(n);
  }
};

}  // namespace

std::optional<std::int64_t> shared_bytes(const SharedAlloc& alloc) {
  auto f = eval_const(alloc.count);
  if (!f || !f->exact || f->value < 1 || !is_integer(alloc.count->type)) return std::nullopt;
  return checked_mul(f->value, type_bytes(alloc.mem->elem));
}

const SharedSlot& SharedLayoutBuilder::allocate(const SharedAlloc& n) {
  SharedSlot slot;
  const std::int64_t align = std::max(kSharedAlignment, n.align);
  slot.offset = align_up(top_, align);
  auto bytes = shared_bytes(n);
  slot.size_known = bytes.has_value();
  slot.bytes = bytes.value_or(0);
  slot.end = saturating_add(slot.offset, slot.bytes);
  top_ = slot.end;
  layout_.align = std::max(layout_.align, align);
  raw_peak_ = std::max(raw_peak_, top_);
  layout_.peak = saturating_add(raw_peak_, layout_.pad());
  return layout_.arrays[n.mem.get()] = slot;
}

const SharedSlot& SharedLayoutBuilder::call(const Call& n) {
  SharedSlot slot;
  slot.offset = align_up(top_);
  slot.bytes = n.fn ? n.fn->shared_budget : 0;
  slot.end = saturating_add(slot.offset, slot.bytes);
  slot.size_known = true;
  raw_peak_ = std::max(raw_peak_, slot.end);
  layout_.peak = saturating_add(raw_peak_, layout_.pad());
  return layout_.calls[&n] = slot;
}

SharedLayout layout_shared(const StmtPtr& body) {
  Layouter l;
  l.walk(body);
  return l.builder.take();
}

}  // namespace vantage::ir
