// What the cost analysis knows of a kernel before it follows it: what a statement writes, the
// shared loads a compiler may merge, which values depend on the block. See analyzer.h.
#include "jit/cost/analyzer.h"

namespace vantage::cost::detail {

Contents contents_of(const StmtNode& s) {
  struct Scan : IRVisitor {
    Contents c;
    int loops = 0, calls = 0;
    std::unordered_set<const FunctionNode*> seen;
    using IRVisitor::visit;
    void visit(const Load& n) override {
      c.accesses.push_back({&n, 0, n.loc, n.mem.get(), false, type_bytes(n.mem->elem)});
      IRVisitor::visit(n);
    }
    void visit(const Store& n) override {
      c.accesses.push_back({&n, 0, n.loc, n.mem.get(), true, type_bytes(n.mem->elem)});
      IRVisitor::visit(n);
    }
    void visit(const VectorCopy& n) override {
      const int bytes = static_cast<int>(n.count * type_bytes(n.src->elem));
      c.accesses.push_back({&n, 0, n.loc, n.src.get(), false, bytes});
      c.accesses.push_back({&n, 1, n.loc, n.dst.get(), true, bytes});
      IRVisitor::visit(n);
    }
    void visit(const Intrinsic& n) override {
      if (n.op == IntrinsicOp::Atomic)
        c.accesses.push_back(
            {&n, 0, n.loc, n.mems[0].get(), atomic_kind(n.imms[0]) != AtomicKind::Load, type_bytes(n.mems[0]->elem)});
      if (n.op == IntrinsicOp::CpAsync) {
        c.accesses.push_back({&n, 0, n.loc, n.mems[1].get(), false, static_cast<int>(n.imms[0])});
        c.accesses.push_back({&n, 1, n.loc, n.mems[0].get(), true, static_cast<int>(n.imms[0])});
      }
      for (const auto& o : n.outputs) c.written.push_back(o.get());
      IRVisitor::visit(n);
    }
    void visit(const If& n) override {
      c.branches.push_back(&n);
      IRVisitor::visit(n);
    }
    void visit(const For& n) override {
      c.branches.push_back(&n);
      c.written.push_back(n.var.get());
      ++loops;
      IRVisitor::visit(n);
      --loops;
    }
    void visit(const While& n) override {
      c.branches.push_back(&n);
      ++loops;
      IRVisitor::visit(n);
      --loops;
    }
    void visit(const Let& n) override {
      c.written.push_back(n.var.get());
      IRVisitor::visit(n);
    }
    void visit(const Assign& n) override {
      c.written.push_back(n.var.get());
      IRVisitor::visit(n);
    }
    void visit(const Jump& n) override {
      if (!loops && !calls) c.jumps = true;
      IRVisitor::visit(n);
    }
    void visit(const Return& n) override {
      if (!calls) c.returns = true;
      IRVisitor::visit(n);
    }
    void visit(const Call& n) override {
      if (n.result) c.written.push_back(n.result.get());
      for (const auto& p : n.fn->params)
        if (p.var) c.written.push_back(p.var.get());
      IRVisitor::visit(n);
      if (seen.insert(n.fn.get()).second) {
        const int saved = loops;
        loops = 0;
        ++calls;
        walk(n.fn->body);
        --calls;
        loops = saved;
      }
    }
    void run(const StmtNode& s) {
      dispatch(s, [&](const auto& n) { visit(n); });
    }
  } scan;
  scan.run(s);
  return std::move(scan.c);
}

std::unordered_set<const void*> mergeable_loads(const KernelNode& k) {
  AffineReader::Lets lets;
  std::unordered_set<const VarNode*> assigned;
  std::vector<const StmtNode*> bodies{k.body.get()};
  {
    struct Defs : IRVisitor {
      AffineReader::Lets* lets;
      std::unordered_set<const VarNode*>* assigned;
      std::vector<const StmtNode*>* bodies;
      std::unordered_set<const FunctionNode*> seen;
      using IRVisitor::visit;
      using IRVisitor::walk;
      void walk(const ExprPtr&) override {}  // lets, assignments and calls are statements
      void visit(const Let& n) override {
        (*lets)[n.var.get()] = n.value;
        IRVisitor::visit(n);
      }
      void visit(const Assign& n) override {
        assigned->insert(n.var.get());
        IRVisitor::visit(n);
      }
      void visit(const Call& n) override {
        IRVisitor::visit(n);
        if (seen.insert(n.fn.get()).second) {
          bodies->push_back(n.fn->body.get());
          walk(n.fn->body);
        }
      }
    } defs;
    defs.lets = &lets;
    defs.assigned = &assigned;
    defs.bodies = &bodies;
    defs.walk(k.body);
  }
  for (const VarNode* v : assigned) lets.erase(v);
  AffineReader affine(lets);
  std::unordered_set<const void*> out;
  struct Shared {
    const Load* load;
    Affine at;
  };
  // The shared loads under `s` (not inside a called function), with the loops they sit in.
  struct Collect : IRVisitor {
    std::vector<std::pair<const Load*, std::vector<const For*>>> loads;
    std::vector<const For*> loops;
    bool nested = true;  ///< into loops and branches too
    using IRVisitor::visit;
    void visit(const Load& n) override {
      if (n.mem->space == MemSpace::Shared && n.indices.size() == 1) loads.push_back({&n, loops});
      IRVisitor::visit(n);
    }
    void visit(const For& n) override {
      if (!nested) return;
      loops.push_back(&n);
      IRVisitor::visit(n);
      loops.pop_back();
    }
    void visit(const While& n) override {
      if (nested) IRVisitor::visit(n);
    }
    void visit(const If& n) override {
      if (nested) IRVisitor::visit(n);
    }
  };
  auto literal = [](const ExprPtr& e) -> std::optional<std::int64_t> {
    if (const auto* l = e ? as<Literal>(*e) : nullptr) return l->i;
    return std::nullopt;
  };
  // A load's index with `loop`'s variable at `value` (its coefficient and the value under 2^62).
  auto at_iteration = [](Affine a, const For& loop, std::int64_t value) {
    const ExprPtr v = ref(loop.var, loop.loc);
    const std::int64_t k = a.coefficient(v);
    const __int128 moved = static_cast<__int128>(a.constant) + static_cast<__int128>(k) * value;
    if (k == 0 || moved < INT64_MIN || moved > INT64_MAX) return a;
    a.add(v, -k);
    a.constant = static_cast<std::int64_t>(moved);
    return a;
  };
  for (const StmtNode* body : bodies) {
    // Loads in loops whose index moves by one element an iteration.
    Collect all;
    all.walk(StmtPtr(std::shared_ptr<const StmtNode>(), body));
    for (const auto& [load, loops] : all.loads) {
      const Affine& a = affine(load->indices[0]);
      for (const For* f : loops) {
        const std::int64_t k = a.coefficient(ref(f->var, f->loc));
        const auto step = literal(f->step);
        if ((k == 1 || k == -1) && step && (*step == 1 || *step == -1)) out.insert(load);
      }
    }
    if (all.loads.empty()) continue;  // no shared load: no neighbours either
    // Neighbours in one statement list: its own loads, and those of the loops in it at their first
    // and last iterations.
    struct Lists : IRVisitor {
      std::vector<const Seq*> seqs;
      using IRVisitor::visit;
      void visit(const Seq& n) override {
        seqs.push_back(&n);
        IRVisitor::visit(n);
      }
    } lists;
    lists.walk(StmtPtr(std::shared_ptr<const StmtNode>(), body));
    for (const Seq* seq : lists.seqs) {
      std::vector<Shared> here;
      for (const StmtPtr& st : seq->stmts) {
        if (!st) continue;
        if (const auto* f = as<For>(*st)) {
          Collect in;
          in.walk(f->body);
          const auto b = literal(f->begin), e = literal(f->end), step = literal(f->step);
          for (const auto& [load, loops] : in.loads) {
            if (!loops.empty()) continue;  // in a loop inside this one
            const Affine a = affine(load->indices[0]);
            if (b) here.push_back({load, at_iteration(a, *f, *b)});
            if (b && e && step == 1 && *e > *b) here.push_back({load, at_iteration(a, *f, *e - 1)});
          }
          continue;
        }
        if (as<Seq>(*st)) continue;  // a list of its own
        Collect direct;
        direct.nested = false;
        direct.walk(st);
        for (const auto& [load, loops] : direct.loads) here.push_back({load, affine(load->indices[0])});
      }
      // Grouped by array and the index's variable part; then neighbours are constants one apart.
      struct Neighbours {
        const MemNode* mem;
        const Affine* form;
        std::map<std::int64_t, std::vector<const Load*>> by_offset;
      };
      std::vector<Neighbours> groups;
      for (const Shared& x : here) {
        auto g = std::find_if(groups.begin(), groups.end(), [&](const Neighbours& n) {
          return n.mem == x.load->mem.get() && same_terms(*n.form, x.at);
        });
        if (g == groups.end()) g = groups.insert(groups.end(), {x.load->mem.get(), &x.at, {}});
        g->by_offset[x.at.constant].push_back(x.load);
      }
      for (const auto& [mem, form, by_offset] : groups)
        for (const auto& [c, loads] : by_offset) {
          if (c == INT64_MAX) continue;
          auto next = by_offset.find(c + 1);
          if (next == by_offset.end()) continue;
          for (const Load* u : loads)
            for (const Load* v : next->second)
              if (u != v) out.insert({u, v});
        }
    }
  }
  return out;
}

BlockDependence block_dependence(const KernelNode& k) {
  struct Scan : IRVisitor {
    BlockDependence out;
    std::unordered_set<const VarNode*> vars;
    int control = 0, calls = 0;
    bool changed = false;
    bool depends(const ExprPtr& e) const {
      if (!e) return false;
      if (const auto* b = as<Builtin>(*e)) return b->which == BuiltinKind::BlockInGrid;
      if (const auto* v = as<VarRef>(*e)) return vars.count(v->var.get()) > 0;
      bool d = false;
      for_each_child(
          *e, [&](const ExprPtr& c) { d = d || depends(c); }, [](const StmtPtr&) {});
      return d;
    }
    bool any(const std::vector<ExprPtr>& es) const {
      return std::any_of(es.begin(), es.end(), [&](const ExprPtr& e) { return depends(e); });
    }
    void define(const VarPtr& v, bool d) {
      if (v && (d || control || calls) && vars.insert(v.get()).second) changed = true;
    }
    void mark(const void* node, bool d) {
      if (d || calls) out.nodes.insert(node);
    }
    using IRVisitor::visit;
    void visit(const Load& n) override {
      mark(&n, any(n.indices));
      IRVisitor::visit(n);
    }
    void visit(const Store& n) override {
      mark(&n, any(n.indices));
      IRVisitor::visit(n);
    }
    void visit(const VectorCopy& n) override {
      mark(&n, true);  // its indices are in its own fields; counted as varying
      IRVisitor::visit(n);
    }
    void visit(const Intrinsic& n) override {
      const bool d = any(n.args);
      mark(&n, d);
      IRVisitor::visit(n);
      for (const auto& o : n.outputs) define(o, d);
    }
    void visit(const Let& n) override {
      IRVisitor::visit(n);
      define(n.var, depends(n.value));
    }
    void visit(const Assign& n) override {
      IRVisitor::visit(n);
      define(n.var, depends(n.value));
    }
    void under(bool d, const StmtPtr& body) {
      control += d;
      walk(body);
      control -= d;
    }
    void visit(const If& n) override {
      const bool d = depends(n.cond);
      mark(&n, d);
      walk(n.cond);
      under(d, n.then_body);
      under(d, n.else_body);
    }
    void visit(const For& n) override {
      const bool d = depends(n.begin) || depends(n.end) || depends(n.step);
      mark(&n, d);
      define(n.var, d);
      walk(n.begin), walk(n.end), walk(n.step);
      under(d, n.body);
    }
    void visit(const While& n) override {
      const bool d = depends(n.cond);
      mark(&n, d);
      walk(n.cond);
      under(d, n.body);
    }
    void visit(const Jump& n) override {
      if (control) out.everything = true;
      IRVisitor::visit(n);
    }
    void visit(const Return& n) override {
      if (control) out.everything = true;
      IRVisitor::visit(n);
    }
    void visit(const Call& n) override {
      IRVisitor::visit(n);
      define(n.result, true);
      ++calls;
      for (const auto& p : n.fn->params) define(p.var, true);
      walk(n.fn->body);
      --calls;
    }
  } scan;
  do {
    scan.changed = false;
    scan.walk(k.body);
  } while (scan.changed);
  return std::move(scan.out);
}

}  // namespace vantage::cost::detail
