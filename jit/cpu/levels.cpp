// Vantage CPU code generator's Planner: which values are the same for every thread (levels), and the
// planning of warp regions and lane loops. See gen.h.
#include "jit/cpu/gen.h"

namespace vantage::cpu::detail {

Planner::Planner(Gen& g) : g_(g) {
  // The ranges of the positions a launch may have: threads below T, blocks below the most a
  // launch may have (specialization's residual guard, checked at every launch).
  const auto& o = g.L_.options;
  std::int64_t blocks = std::max<std::int64_t>(o.blocks ? *o.blocks : o.max_blocks, 1);
  launch_env_.thread_index = ir::Range{0, g.T_ - 1};
  launch_env_.block_index = ir::Range{0, blocks - 1};
  launch_env_.grid_blocks = ir::Range{1, blocks};
}

auto Planner::uses_warp_index(const std::vector<StmtPtr>& stmts) -> bool {
  struct Scan : IRVisitor {
    Planner& g;
    bool found = false;
    std::unordered_set<const VarNode*> seen;
    explicit Scan(Planner& gen) : g(gen) {}
    void visit(const Binary& n) override {
      if ((n.op == BinOp::Div || n.op == BinOp::Mod) && g.is_tid(n.a)) {
        auto c = const_int(n.b);
        if (c && *c >= 32) found = true;
      }
      IRVisitor::visit(n);
    }
    void visit(const VarRef& n) override {
      if (seen.insert(n.var.get()).second)
        if (const ExprPtr* d = g.definition(n.var.get())) walk(*d);
    }
  } scan(*this);
  for (const auto& s : stmts) scan.walk(s);
  return scan.found;
}

auto Planner::recomputable(const ExprPtr& e, int depth) -> bool {
  if (!e || depth > 16) return false;
  return dispatch(*e, Overloaded{
                          [](const Literal&) { return true; },
                          [&](const VarRef& n) {
                            const VarNode* v = n.var.get();
                            if (g_.frame_->reassigned.count(v)) return false;
                            auto it = g_.frame_->vars.find(v);
                            if (it != g_.frame_->vars.end() && it->second.kind == Storage::Fixed) return true;
                            if (g_.frame_->levels[v] == Lvl::Uniform) return it != g_.frame_->vars.end();
                            const ExprPtr* d = definition(v);
                            return d && recomputable(*d, depth + 1);
                          },
                          [&](const Unary& n) { return recomputable(n.a, depth + 1); },
                          [&](const Binary& n) { return recomputable(n.a, depth + 1) && recomputable(n.b, depth + 1); },
                          [&](const Cast& n) { return recomputable(n.a, depth + 1); },
                          [&](const Select& n) {
                            return recomputable(n.c, depth + 1) && recomputable(n.a, depth + 1) &&
                                   recomputable(n.b, depth + 1);
                          },
                          [](const MathCall&) { return false; },
                          [](const Id&) { return false; },
                          [](const Builtin&) { return true; },
                          [](const Load&) { return false; },
                      });
}

auto Planner::level(const ExprPtr& e, Frame& f) -> Lvl {
  if (!e) return Lvl::Uniform;
  return dispatch(
      *e, Overloaded{
              [](const Literal&) { return Lvl::Uniform; },
              [&](const VarRef& n) {
                auto it = f.levels.find(n.var.get());
                return it == f.levels.end() ? Lvl::Uniform : it->second;
              },
              [&](const Unary& n) { return level(n.a, f); },
              [&](const Binary& n) { return join(level(n.a, f), level(n.b, f)); },
              [&](const Cast& n) { return level(n.a, f); },
              [&](const Select& n) { return join(level(n.c, f), join(level(n.a, f), level(n.b, f))); },
              [&](const MathCall& n) {
                Lvl l = Lvl::Uniform;
                for (const auto& a : n.args) l = join(l, level(a, f));
                return l;
              },
              [](const Id&) -> Lvl { throw InternalError("cpu: an id() in lowered IR"); },
              [&](const Builtin& n) { return n.which == BuiltinKind::ThreadInBlock ? f.tid_level : Lvl::Uniform; },
              [&](const Load& n) {
                Lvl l = level(n.indices[0], f);
                if (n.mem->space == MemSpace::Local) return Lvl::Varying;
                if (auto it = f.mems.find(n.mem.get()); it != f.mems.end())
                  for (const auto& [v, arr] : it->second.offsets)
                    if (arr) l = Lvl::Varying;
                return l;
              },
          });
}

auto Planner::levels(Frame& f, const StmtPtr& body) -> void {
  bool changed = true;
  auto raise = [&](const VarPtr& v, Lvl l) {
    if (!v) return;
    auto& cur = f.levels[v.get()];
    if (l == Lvl::Varying && cur != Lvl::Varying) {
      cur = Lvl::Varying;
      changed = true;
    }
  };
  std::function<void(const StmtPtr&, Lvl)> walk = [&](const StmtPtr& s, Lvl cl) {
    if (!s) return;
    dispatch(*s, Overloaded{
                     [&](const Seq& n) {
                       for (const auto& c : n.stmts) walk(c, cl);
                     },
                     [&](const Let& n) { raise(n.var, join(cl, level(n.value, f))); },
                     [&](const Assign& n) { raise(n.var, join(cl, level(n.value, f))); },
                     [&](const If& n) {
                       Lvl c = join(cl, level(n.cond, f));
                       walk(n.then_body, c);
                       walk(n.else_body, c);
                     },
                     [&](const For& n) {
                       Lvl c = join(cl, join(level(n.begin, f), join(level(n.end, f), level(n.step, f))));
                       // A thread may leave it early: what it assigns differs by thread.
                       if (has_jump(n.body)) c = Lvl::Varying;
                       raise(n.var, c);
                       walk(n.body, c);
                     },
                     [&](const While& n) {
                       // Its condition may read what the body assigns: walked until nothing changes.
                       walk(n.body, has_jump(n.body) ? Lvl::Varying : join(cl, level(n.cond, f)));
                     },
                     [&](const Intrinsic& n) {
                       for (const auto& o : n.outputs) raise(o, Lvl::Varying);
                     },
                     [&](const Call& n) { raise(n.result, Lvl::Varying); },
                     [&](const Unsafe& n) {
                       for (const auto& [name, v] : n.outputs) raise(v, Lvl::Varying);
                     },
                     [](const auto&) {},
                 });
  };
  while (changed) {
    changed = false;
    walk(body, Lvl::Uniform);
  }
  struct Scan : IRVisitor {
    Frame& f;
    explicit Scan(Frame& fr) : f(fr) {}
    void visit(const Assign& n) override {
      f.reassigned.insert(n.var.get());
      IRVisitor::visit(n);
    }
    void visit(const Let& n) override {
      f.defs[n.var.get()] = n.value;
      IRVisitor::visit(n);
    }
  } scan(f);
  scan.walk(body);
}

auto Planner::uniform_stmt(const StmtPtr& s, Frame& f) -> bool {
  if (const auto* n = as<Let>(*s)) return f.levels[n->var.get()] == Lvl::Uniform;
  if (const auto* n = as<Assign>(*s)) return f.levels[n->var.get()] == Lvl::Uniform;
  return s->kind == StmtKind::SharedAlloc || s->kind == StmtKind::LocalAlloc;
}

auto Planner::uniform_control(const StmtPtr& s, Frame& f) -> bool {
  if (const auto* n = as<If>(*s)) return level(n->cond, f) == Lvl::Uniform;
  if (const auto* n = as<For>(*s)) return f.levels[n->var.get()] == Lvl::Uniform && !has_jump(n->body);
  if (const auto* n = as<While>(*s)) return level(n->cond, f) == Lvl::Uniform && !has_jump(n->body);
  return false;
}

auto Planner::has_jump(const StmtPtr& s) -> bool {
  struct Scan : IRVisitor {
    bool found = false;
    void visit(const Jump&) override { found = true; }
  } scan;
  scan.walk(s);
  return scan.found;
}

auto Planner::warp_uniform(const ExprPtr& c, int depth) -> bool {
  if (depth > 8) return false;
  if (lane_invariant(c)) return true;
  if (const auto* u = as<Unary>(*c)) return u->op == UnOp::Not && warp_uniform(u->a, depth + 1);
  const auto* b = as<Binary>(*c);
  if (!b) return false;
  if (b->op == BinOp::LAnd || b->op == BinOp::LOr)
    return warp_uniform(b->a, depth + 1) && warp_uniform(b->b, depth + 1);
  bool left = is_tid(b->a);
  if (!left && !is_tid(b->b)) return false;
  auto k = const_int(left ? b->b : b->a);
  if (!k) return false;
  // tid < k and tid >= k split at k; tid <= k and tid > k at k + 1 (as k on the left: mirrored).
  BinOp op = b->op;
  if (!left)
    op = op == BinOp::Lt   ? BinOp::Gt
         : op == BinOp::Gt ? BinOp::Lt
         : op == BinOp::Le ? BinOp::Ge
         : op == BinOp::Ge ? BinOp::Le
                           : op;
  switch (op) {
    case BinOp::Lt:
    case BinOp::Ge: return *k % 32 == 0;
    case BinOp::Le:
    case BinOp::Gt: return (*k + 1) % 32 == 0;
    default: return false;
  }
}

auto Planner::lane_range(const SeqGroup& g) -> std::optional<LaneRange> {
  if (g.stmts.size() != 1) return std::nullopt;
  const auto* n = as<If>(*g.stmts[0]);
  if (!n || (n->else_body && !(as<Seq>(*n->else_body) && as<Seq>(*n->else_body)->stmts.empty()))) return std::nullopt;
  const auto* b = as<Binary>(*n->cond);
  if (!b || b->a->type != ScalarType::I32) return std::nullopt;
  ExprPtr offset;
  bool lane = false;
  // The thread's position, or c + position with c the same for the lanes and the sum never
  // wrapping (then the condition is an interval of lanes, as for the position alone), or the
  // lane (tid % 32 or tid & 31: tid is 32 w + lane in a warp's loop).
  auto position = [&](const ExprPtr& e) {
    if (is_tid(e)) return true;
    if (const auto* m = as<Binary>(*e))
      if (is_tid(m->a) &&
          ((m->op == BinOp::Mod && const_int(m->b) == 32) || (m->op == BinOp::And && const_int(m->b) == 31))) {
        lane = true;
        return true;
      }
    const auto* add = as<Binary>(*e);
    if (!add || add->op != BinOp::Add) return false;
    for (auto [t, c] : {std::pair{add->a, add->b}, std::pair{add->b, add->a}})
      if (is_tid(t) && lane_invariant(c) && !wraps_with_position(c)) {
        offset = c;
        return true;
      }
    return false;
  };
  bool left = position(b->a);
  const ExprPtr& k = left ? b->b : b->a;
  if ((!left && !position(b->b)) || !lane_invariant(k)) return std::nullopt;
  BinOp op = b->op;
  if (!left)
    op = op == BinOp::Lt   ? BinOp::Gt
         : op == BinOp::Gt ? BinOp::Lt
         : op == BinOp::Le ? BinOp::Ge
         : op == BinOp::Ge ? BinOp::Le
                           : op;
  if (op != BinOp::Lt && op != BinOp::Le && op != BinOp::Gt && op != BinOp::Ge) return std::nullopt;
  return LaneRange{op, k, offset, lane};
}

auto Planner::flat_region(const std::vector<SeqGroup>& gs, std::size_t i, std::size_t j) -> bool {
  int ranges = 0;
  for (std::size_t k = i; k < j; ++k) {
    const SeqGroup& g = gs[k];
    if (g.kind != SeqGroup::Leaf) {
      if (j != i + 1 && as<Let>(*g.stmts[0])) continue;  // a uniform let: once for the block
      return false;
    }
    if (uses_warp_index(g.stmts)) return false;
    if (auto r = lane_range(g)) {
      if (r->lane || level(r->k, *g_.frame_) != Lvl::Uniform ||
          (r->offset && level(r->offset, *g_.frame_) != Lvl::Uniform))
        return false;  // a range of lanes is one per warp, not one for the block
      ++ranges;
    } else if (j != i + 1) {
      for (const auto& x : g.stmts)
        if (!as<Let>(*x)) return false;
    }
  }
  return ranges <= 1;
}

auto Planner::resolved(const ExprPtr& e) -> ExprPtr {
  class Defs : public ir::IRMutator {
   public:
    explicit Defs(Planner& g) : g_(g) {}
    using IRMutator::mutate;

   protected:
    ExprPtr visit(const VarRef& n, const ExprPtr& self) override {
      const ExprPtr* d = depth_ < 6 ? g_.definition(n.var.get()) : nullptr;
      if (!d) return self;
      ++depth_;
      ExprPtr r = mutate(*d);
      --depth_;
      return r;
    }

   private:
    Planner& g_;
    int depth_ = 0;
  } defs(*this);
  return defs.mutate(e);
}

auto Planner::never_wraps(const Binary& n) -> bool {
  if (n.op != BinOp::Add && n.op != BinOp::Sub && n.op != BinOp::Mul) return false;
  if (n.a->type != n.type || n.b->type != n.type) return false;
  ExprPtr e = resolved(make<Binary>(n.type, n.op, n.a, n.b, n.loc));  // held: `r` points into it
  const auto* r = as<Binary>(*e);
  return r && !ir::may_overflow(*r, launch_env_);
}

auto Planner::groups(const StmtPtr& s, Frame& f) -> std::vector<SeqGroup> {
  std::vector<StmtPtr> flat;
  std::function<void(const StmtPtr&)> flatten = [&](const StmtPtr& x) {
    if (!x) return;
    if (const auto* q = as<Seq>(*x)) {
      for (const auto& c : q->stmts) flatten(c);
      return;
    }
    flat.push_back(x);
  };
  flatten(s);
  std::vector<SeqGroup> out;
  for (const auto& x : flat) {
    bool single = g_.collectives_.of(x) || uniform_stmt(x, f) || uniform_control(x, f) || warp_control(x);
    // An `if` that a range of lanes takes is a leaf of its own (its loop runs over the range).
    bool alone = !single && lane_range(SeqGroup{SeqGroup::Leaf, {x}});
    if (single) {
      out.push_back({SeqGroup::Single, {x}});
    } else if (!alone && !out.empty() && out.back().kind == SeqGroup::Leaf && !lane_range(out.back())) {
      out.back().stmts.push_back(x);
    } else {
      out.push_back({SeqGroup::Leaf, {x}});
    }
  }
  return out;
}

auto Planner::plan(Frame& f, const StmtPtr& body) -> void {
  int next = 0;
  auto mark = [&](const VarNode* v, int leaf) {
    auto [it, fresh] = f.leaf_of.emplace(v, leaf);
    if (!fresh && it->second != leaf) it->second = -1;
  };
  auto mark_all = [&](const StmtPtr& s, int leaf) {
    struct Scan : IRVisitor {
      std::function<void(const VarNode*)> m;
      void visit(const VarRef& n) override { m(n.var.get()); }
      void visit(const Let& n) override {
        m(n.var.get());
        IRVisitor::visit(n);
      }
      void visit(const Assign& n) override {
        m(n.var.get());
        IRVisitor::visit(n);
      }
      void visit(const For& n) override {
        m(n.var.get());
        IRVisitor::visit(n);
      }
      void visit(const Intrinsic& n) override {
        for (const auto& o : n.outputs) m(o.get());
        IRVisitor::visit(n);
      }
      void visit(const Call& n) override {
        if (n.result) m(n.result.get());
        for (const auto& a : n.args)
          if (a.value) walk(a.value);
      }
    } scan;
    scan.m = [&](const VarNode* v) { mark(v, leaf); };
    scan.walk(s);
  };
  std::function<void(const StmtPtr&)> walk = [&](const StmtPtr& s) {
    for (const auto& g : groups(s, f)) {
      if (g.kind == SeqGroup::Leaf) {
        int id = next++;
        for (const auto& x : g.stmts) mark_all(x, id);
        continue;
      }
      const StmtPtr& x = g.stmts[0];
      dispatch(*x, Overloaded{
                       [&](const If& n) {
                         mark_expr(n.cond, mark);
                         walk(n.then_body);
                         walk(n.else_body);
                       },
                       [&](const For& n) {
                         mark(n.var.get(), -1);
                         mark_expr(n.begin, mark);
                         mark_expr(n.end, mark);
                         mark_expr(n.step, mark);
                         walk(n.body);
                       },
                       [&](const While& n) {
                         mark_expr(n.cond, mark);
                         walk(n.body);
                       },
                       [&](const Seq&) { walk(x); },
                       [&](const auto&) { mark_all(x, -1); },
                   });
    }
  };
  walk(body);
}

auto Planner::pure_value(const ExprPtr& e, Frame& f, int depth) -> bool {
  if (!e || depth > 8) return false;
  return dispatch(
      *e, Overloaded{
              [](const Literal&) { return true; },
              [&](const VarRef& n) {
                if (f.reassigned.count(n.var.get())) return false;
                auto it = f.vars.find(n.var.get());
                if (it == f.vars.end()) return false;
                // A per-thread scalar holds one thread's value only inside its own leaf.
                if (it->second.kind == Storage::Scalar) return f.levels[n.var.get()] == Lvl::Uniform;
                return it->second.kind != Storage::Array;
              },
              [&](const Unary& n) { return pure_value(n.a, f, depth + 1); },
              [&](const Binary& n) { return pure_value(n.a, f, depth + 1) && pure_value(n.b, f, depth + 1); },
              [&](const Cast& n) { return pure_value(n.a, f, depth + 1); },
              [&](const Select& n) {
                return pure_value(n.c, f, depth + 1) && pure_value(n.a, f, depth + 1) && pure_value(n.b, f, depth + 1);
              },
              [](const MathCall&) { return false; },
              [](const Id&) { return false; },
              [&](const Builtin&) { return true; },
              [](const Load&) { return false; },
          });
}

auto Planner::definition(const VarNode* v) -> const ExprPtr* {
  Frame& f = *g_.frame_;
  if (f.reassigned.count(v)) return nullptr;
  auto it = f.defs.find(v);
  return it == f.defs.end() ? nullptr : &it->second;
}

auto Planner::is_tid(const ExprPtr& e, int depth) -> bool {
  if (depth > 8) return false;
  if (const auto* b = as<Builtin>(*e)) return b->which == BuiltinKind::ThreadInBlock && !g_.frame_->tid_array;
  if (const auto* r = as<VarRef>(*e))
    if (const ExprPtr* d = definition(r->var.get())) return is_tid(*d, depth + 1);
  return false;
}

auto Planner::lane_invariant(const ExprPtr& e, int depth) -> bool {
  if (!e || depth > 12) return false;
  if (level(e, *g_.frame_) == Lvl::Uniform && !as<Load>(*e)) return true;
  return dispatch(*e, Overloaded{
                          [](const Literal&) { return true; },
                          [&](const VarRef& n) {
                            const ExprPtr* d = definition(n.var.get());
                            return d && lane_invariant(*d, depth + 1);
                          },
                          [&](const Unary& n) { return lane_invariant(n.a, depth + 1); },
                          [&](const Binary& n) {
                            if (n.op == BinOp::Div && is_tid(n.a)) {
                              auto c = const_int(n.b);
                              return c && *c > 0 && *c % 32 == 0;
                            }
                            return lane_invariant(n.a, depth + 1) && lane_invariant(n.b, depth + 1);
                          },
                          [&](const Cast& n) { return lane_invariant(n.a, depth + 1); },
                          [&](const Select& n) {
                            return lane_invariant(n.c, depth + 1) && lane_invariant(n.a, depth + 1) &&
                                   lane_invariant(n.b, depth + 1);
                          },
                          [&](const MathCall& n) {
                            for (const auto& a : n.args)
                              if (!lane_invariant(a, depth + 1)) return false;
                            return true;
                          },
                          [](const Id&) { return false; },
                          [&](const Builtin& n) { return n.which != BuiltinKind::ThreadInBlock; },
                          [](const Load&) { return false; },
                      });
}

auto Planner::returns(const StmtPtr& s) -> bool {
  if (!s) return false;
  if (s->kind == StmtKind::Return) return true;
  bool r = false;
  for_each_child_stmt(*s, [&](const StmtPtr& c) { r = r || returns(c); });
  return r;
}

auto Planner::in_region(const SeqGroup& g) -> bool {
  if (g.kind == SeqGroup::Leaf) return true;
  const StmtPtr& x = g.stmts[0];
  if (g_.collectives_.block_sync(x)) return false;
  switch (x->kind) {
    case StmtKind::SharedAlloc:
    case StmtKind::LocalAlloc:
    case StmtKind::Assign: return false;
    case StmtKind::Let: return true;
    default: return !assigns_outer_uniform(x);
  }
}

auto Planner::assigns_outer_uniform(const StmtPtr& s) -> bool {
  struct Scan : IRVisitor {
    Frame& f;
    std::unordered_set<const VarNode*> inside;
    bool found = false;
    explicit Scan(Frame& fr) : f(fr) {}
    void visit(const Let& n) override {
      inside.insert(n.var.get());
      IRVisitor::visit(n);
    }
    void visit(const For& n) override {
      inside.insert(n.var.get());
      IRVisitor::visit(n);
    }
    void visit(const Assign& n) override {
      if (!inside.count(n.var.get()) && f.levels[n.var.get()] == Lvl::Uniform) found = true;
      IRVisitor::visit(n);
    }
  } scan(*g_.frame_);
  scan.walk(s);
  return scan.found;
}

auto Planner::wraps_with_position(const ExprPtr& c) -> bool {
  return ir::value_range(resolved(c), launch_env_).hi > std::int64_t{INT32_MAX} - (g_.T_ - 1);
}

}  // namespace vantage::cpu::detail
