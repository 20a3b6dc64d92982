// Vantage automatic synchronization: see sync.h and DESIGN.md section 4.
//
// Within one body the statements are walked in program order while a state records which memory
// roots (a pointer parameter or a shared array, whatever view names them) have been read or written
// since the last barrier. A statement that reads a pending write, or writes a pending read, gets one
// barrier before it, which clears everything pending: waits move down to the first use, and one
// barrier serves every conflict it separates. Bodies that run at the same perspective (if, loops,
// partition, claim, lower, async, destruct) share the state; loops iterate to a fixed point so the
// back edge is covered, and a wait for data from before a loop goes before the loop unless the
// loop's own barriers already serve it. A group or split at a narrower perspective counts, from
// outside, as one statement with all the accesses inside it, and is analysed again inside.
//
// Two refinements keep barriers to the hand-written minimum. Plain stores only go through memory
// narrowed to one thread, so two stores never need a barrier between them (overlapping shares are
// the race the user's index function chose). And a thread that only reads what it will store itself,
// or reads back what it stored, needs no barrier between the two; this is decided by comparing root
// index expressions made of thread ids and variables that never change.
#include "jit/sync/sync.h"

#include <algorithm>
#include <map>
#include <set>

#include "jit/ir/views.h"
#include "jit/ir/visit.h"

namespace vantage::sync {
namespace {

using namespace ir;

using Roots = std::set<const MemNode*>;
using Indices = std::map<const MemNode*, std::vector<ExprPtr>>;

void add_index(Indices& m, const MemNode* r, const ExprPtr& e) {
  auto& v = m[r];
  for (const auto& x : v)
    if (equal(x, e)) return;
  v.push_back(e);
}

/// Every index in `a` for root r also appears in `b`.
bool within(const Indices& a, const Indices& b, const MemNode* r) {
  auto ia = a.find(r), ib = b.find(r);
  if (ia == a.end()) return true;
  if (ib == b.end()) return false;
  for (const auto& e : ia->second) {
    bool found = false;
    for (const auto& w : ib->second) found = found || equal(e, w);
    if (!found) return false;
  }
  return true;
}

/// What statements touch: reads, plain `stores`, other `writes` (calls with mutable pointers,
/// atomics, async copies), and the comparable root indices of reads and stores; a root in `opaque`
/// was also accessed at an index that cannot be compared.
struct Access {
  Roots reads, stores, writes, async_writes, opaque;
  Indices read_at, store_at;
  void merge(const Access& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    stores.insert(o.stores.begin(), o.stores.end());
    writes.insert(o.writes.begin(), o.writes.end());
    async_writes.insert(o.async_writes.begin(), o.async_writes.end());
    opaque.insert(o.opaque.begin(), o.opaque.end());
    for (const auto& [r, es] : o.read_at)
      for (const auto& e : es) add_index(read_at, r, e);
    for (const auto& [r, es] : o.store_at)
      for (const auto& e : es) add_index(store_at, r, e);
  }
};

/// Accesses since the last barrier.
struct State : Access {
  bool operator==(const State& o) const {
    auto same = [](const Indices& a, const Indices& b) {
      if (a.size() != b.size()) return false;
      for (const auto& [r, es] : a) {
        auto it = b.find(r);
        if (it == b.end() || it->second.size() != es.size()) return false;
      }
      return true;
    };
    return reads == o.reads && stores == o.stores && writes == o.writes && async_writes == o.async_writes &&
           opaque == o.opaque && same(read_at, o.read_at) && same(store_at, o.store_at);
  }
  void clear() { *this = State(); }
};

bool intersects(const Roots& a, const Roots& b) {
  for (const auto* x : a)
    if (b.count(x)) return true;
  return false;
}

class Planner {
 public:
  explicit Planner(Plan& plan) : plan_(plan) {}

  void run(const StmtPtr& body, Perspective top) {
    views_.collect(body);
    collect_stable(body);
    for (const auto* v : assigned_) stable_.erase(v);
    State st;
    walk(body, st, top, &plan_);
  }

 private:
  // ------------------------------------------------------------ comparable indices
  /// Variables whose value is the same wherever they are visible: declared outside every loop and
  /// never assigned. Index expressions made of them (and thread ids) compare across statements.
  void collect_stable(const StmtPtr& body) {
    struct Scan : IRVisitor {
      Planner& p;
      int loops = 0;
      explicit Scan(Planner& planner) : p(planner) {}
      void visit(const Let& n) override {
        if (loops == 0) p.stable_.insert(n.var.get());
        IRVisitor::visit(n);
      }
      void visit(const Assign& n) override {
        p.assigned_.insert(n.var.get());
        IRVisitor::visit(n);
      }
      void visit(const For& n) override {
        ++loops;
        IRVisitor::visit(n);
        --loops;
      }
      void visit(const While& n) override {
        ++loops;
        IRVisitor::visit(n);
        --loops;
      }
    } scan(*this);
    scan.walk(body);
  }

  /// Whether an index expression has the same value wherever it is evaluated by one thread.
  bool stable(const ExprPtr& e) const {
    if (!e) return false;
    return dispatch(*e, Overloaded{
                            [](const Literal&) { return true; }, [](const Id&) { return true; },
                            [&](const VarRef& n) {
                              if (assigned_.count(n.var.get())) return false;
                              return n.var->origin == VarNode::Origin::Param || stable_.count(n.var.get()) > 0;
                            },
                            [&](const Unary& n) { return stable(n.a); }, [&](const Cast& n) { return stable(n.a); },
                            [&](const Binary& n) { return stable(n.a) && stable(n.b); },
                            [&](const Select& n) { return stable(n.c) && stable(n.a) && stable(n.b); },
                            [](const MathCall&) { return false; },
                            [](const Load&) { return false; },  // memory may change between two reads
                        });
  }

  // ------------------------------------------------------------ what a statement touches
  /// The memory a view names, or null for thread-local arrays (never shared between threads).
  const MemNode* root(const MemNode* m) const {
    const MemNode* r = views_.root(m);
    return r && r->space != MemSpace::Local ? r : nullptr;
  }

  void index(Access& a, Indices& at, const MemPtr& m, const std::vector<ExprPtr>& idx, const MemNode* r) const {
    ExprPtr i = idx.empty() ? nullptr : views_.root_index(m.get(), idx);
    if (i && stable(i))
      add_index(at, r, i);
    else
      a.opaque.insert(r);
  }
  void read(Access& a, const MemPtr& m, const std::vector<ExprPtr>* idx = nullptr) const {
    const auto* r = root(m.get());
    if (!r) return;
    a.reads.insert(r);
    if (idx)
      index(a, a.read_at, m, *idx, r);
    else
      a.opaque.insert(r);
  }
  void write(Access& a, const MemPtr& m) const {
    if (const auto* r = root(m.get())) {
      a.writes.insert(r);
      a.opaque.insert(r);
    }
  }
  void async_write(Access& a, const MemPtr& m) const {
    if (const auto* r = root(m.get())) {
      a.async_writes.insert(r);
      write(a, m);
    }
  }

  /// What a statement and everything inside it touches. Statements directly inside are summarised
  /// once each and merged, so a nest of constructs costs one pass.
  class AccessScan : public IRVisitor {
   public:
    AccessScan(Planner& p, const StmtNode* self) : p_(p), self_(self) {}
    Access access;

    void walk(const StmtPtr& s) override {
      if (!s) return;
      if (s.get() == self_) return IRVisitor::walk(s);
      access.merge(p_.summary(s));
    }
    using IRVisitor::walk;

   protected:
    void visit(const Load& n) override {
      p_.read(access, n.mem, &n.indices);
      IRVisitor::visit(n);
    }
    void visit(const Store& n) override {
      IRVisitor::visit(n);
      if (const auto* r = p_.root(n.mem.get())) {
        access.stores.insert(r);
        p_.index(access, access.store_at, n.mem, n.indices, r);
      }
    }
    void visit(const Call& n) override {
      IRVisitor::visit(n);
      for (std::size_t i = 0; i < n.args.size(); ++i) {
        if (!n.args[i].mem) continue;
        p_.read(access, n.args[i].mem);
        bool mutable_param = i < n.fn->params.size() && n.fn->params[i].mem && !n.fn->params[i].mem->is_const;
        if (mutable_param) p_.write(access, n.args[i].mem);
      }
    }
    void visit(const Intrinsic& n) override {
      IRVisitor::visit(n);
      switch (n.op) {
        case IntrinsicOp::Atomic:
          p_.read(access, n.mems[0]);
          p_.write(access, n.mems[0]);
          break;
        case IntrinsicOp::Ldmatrix: p_.read(access, n.mems[1]); break;
        case IntrinsicOp::CpAsync:
          p_.async_write(access, n.mems[0]);
          p_.read(access, n.mems[1]);
          break;
        case IntrinsicOp::TmaLoad2D: p_.async_write(access, n.mems[0]); break;
        // Thread-local fragments, barriers, shuffles and votes touch no shared or global memory;
        // mbarrier words are synchronised by their own protocol.
        case IntrinsicOp::SyncThreads:
        case IntrinsicOp::SyncWarp:
        case IntrinsicOp::NamedBarrier:
        case IntrinsicOp::ShflXor:
        case IntrinsicOp::ShflDown:
        case IntrinsicOp::ShflUp:
        case IntrinsicOp::ShflIdx:
        case IntrinsicOp::VoteAll:
        case IntrinsicOp::VoteAny:
        case IntrinsicOp::Ballot:
        case IntrinsicOp::MmaSync:
        case IntrinsicOp::Wgmma:
        case IntrinsicOp::WgmmaFence:
        case IntrinsicOp::WgmmaCommit:
        case IntrinsicOp::WgmmaWait:
        case IntrinsicOp::CpAsyncCommit:
        case IntrinsicOp::CpAsyncWait:
        case IntrinsicOp::MbarrierInit:
        case IntrinsicOp::MbarrierArrive:
        case IntrinsicOp::MbarrierWait: break;
      }
    }

   private:
    Planner& p_;
    const StmtNode* self_;
  };

  /// The reads of an expression.
  void loads(Access& a, const ExprPtr& e) {
    AccessScan scan(*this, nullptr);
    scan.walk(e);
    a.merge(scan.access);
  }

  /// Accesses of one statement and everything inside it.
  const Access& summary(const StmtPtr& s) {
    auto it = summaries_.find(s.get());
    if (it != summaries_.end()) return it->second;
    AccessScan scan(*this, s.get());
    scan.walk(s);
    return summaries_.emplace(s.get(), std::move(scan.access)).first->second;
  }

  // ------------------------------------------------------------ conflicts and barriers
  /// A thread that only reads what it stores itself (a_reads: false), or reads back what it stored
  /// (a_reads: true), needs no barrier between the two: if shares overlap, that is the race the
  /// user's index function chose.
  bool own(const Access& a, const State& st, const MemNode* r, bool a_reads) const {
    if (exempt_.count(r)) return true;
    if (a.opaque.count(r) || st.opaque.count(r)) return false;
    return a_reads ? within(a.read_at, st.store_at, r) : within(st.read_at, a.store_at, r);
  }

  bool conflicts(const Access& a, const State& st) const {
    for (const auto* r : a.reads)
      if (st.writes.count(r) || (st.stores.count(r) && !own(a, st, r, true))) return true;
    for (const auto* r : a.stores)
      if (st.writes.count(r) || (st.reads.count(r) && !own(a, st, r, false))) return true;
    return intersects(a.writes, st.reads) || intersects(a.writes, st.writes) || intersects(a.writes, st.stores);
  }

  /// Whether the code at `p` is one block or less, where barriers exist.
  static bool within_block(Perspective p) {
    if (p.level == Level::Thread) return true;
    return p.level == Level::Block && p.count == Size(1);
  }

  /// A barrier before `s`: everything pending is complete after it.
  void place(const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    if (rec) {
      if (within_block(code)) {
        rec->before[s.get()].push_back({code, !st.async_writes.empty()});
      } else {
        rec->grid_conflicts.push_back(s.get());
      }
    }
    st.clear();
  }

  /// Places a barrier before `s` if its accesses conflict with what is pending, then adds them.
  void step(const StmtPtr& s, const Access& a, State& st, Perspective code, Plan* rec) {
    if (conflicts(a, st)) place(s, st, code, rec);
    st.merge(a);
  }

  // ------------------------------------------------------------ the walk
  void walk(const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    if (!s) return;
    dispatch(*s, [&](const auto& n) { plan_stmt(n, s, st, code, rec); });
  }

  void plan_stmt(const Seq& n, const StmtPtr&, State& st, Perspective code, Plan* rec) {
    for (const auto& c : n.stmts) walk(c, st, code, rec);
  }
  void plan_stmt(const If& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    hoist(s, nullptr, st, code, rec);
    Access cond;
    loads(cond, n.cond);
    step(s, cond, st, code, rec);
    State other = st;
    walk(n.then_body, st, code, rec);
    walk(n.else_body, other, code, rec);
    st.merge(other);
  }
  void plan_stmt(const For& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    hoist(s, n.body, st, code, rec);
    Access head;
    loads(head, n.begin);
    loads(head, n.end);
    loads(head, n.step);
    step(s, head, st, code, rec);
    loop(n.body, st, code, rec);
  }
  void plan_stmt(const While& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    hoist(s, n.body, st, code, rec);
    Access head;
    loads(head, n.cond);
    step(s, head, st, code, rec);
    loop(n.body, st, code, rec);
  }
  /// The region as a whole may store exactly what its threads read before: judge those reads
  /// against all its stores, not one store at a time.
  void narrowing(const StmtPtr& s, const StmtPtr& body, State& st, Perspective code, Plan* rec) {
    const Access& all = summary(s);
    std::vector<const MemNode*> added;
    for (const auto* r : all.stores)
      if (st.reads.count(r) && !exempt_.count(r) && !all.opaque.count(r) && !st.opaque.count(r) &&
          within(st.read_at, all.store_at, r))
        added.push_back(r);
    exempt_.insert(added.begin(), added.end());
    walk(body, st, code, rec);
    for (const auto* r : added) exempt_.erase(r);
  }
  void plan_stmt(const Partition& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    narrowing(s, n.body, st, code, rec);
  }
  void plan_stmt(const Claim& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    narrowing(s, n.body, st, code, rec);
  }
  void plan_stmt(const Lower& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    narrowing(s, n.body, st, code, rec);
  }
  void plan_stmt(const Async& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    narrowing(s, n.body, st, code, rec);
  }
  void plan_stmt(const Destruct& n, const StmtPtr&, State& st, Perspective code, Plan* rec) {
    walk(n.body, st, code, rec);  // the same threads, seen one level down
  }
  void plan_stmt(const Group& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    step(s, summary(s), st, code, rec);
    if (rec) {
      State inner;
      walk(n.body, inner, n.p, rec);
    }
  }
  void plan_stmt(const Split& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    step(s, summary(s), st, code, rec);
    if (rec) {
      for (std::size_t i = 0; i < n.bodies.size(); ++i) {
        State inner;
        walk(n.bodies[i], inner, Perspective{n.level, n.counts[i]}, rec);
      }
    }
  }
  // Statements with no body: one step with everything they touch.
  template <class N>
  requires(std::is_same_v<N, Let> || std::is_same_v<N, Assign> || std::is_same_v<N, Store> ||
           std::is_same_v<N, SharedAlloc> || std::is_same_v<N, LocalAlloc> || std::is_same_v<N, Call> ||
           std::is_same_v<N, Intrinsic> || std::is_same_v<N, Unsafe> ||
           std::is_same_v<N, Return>) void plan_stmt(const N&, const StmtPtr& s, State& st, Perspective code,
                                                     Plan* rec) {
    step(s, summary(s), st, code, rec);
  }

  /// A wait for data from before a branch goes before it (one barrier, not one per branch). A wait
  /// for data from before a loop goes before the loop unless the loop's own barriers, the ones its
  /// back edge needs anyway, already sit where the wait would go.
  void hoist(const StmtPtr& s, const StmtPtr& loop_body, State& st, Perspective code, Plan* rec) {
    if (!conflicts(summary(s), st)) return;
    if (loop_body) {
      Plan with_incoming, on_its_own;
      State a = st, b;
      loop(loop_body, a, code, &with_incoming);
      loop(loop_body, b, code, &on_its_own);
      bool covered = true;
      for (const auto& [stmt, barriers] : with_incoming.before) covered = covered && on_its_own.before.count(stmt);
      if (covered) return;
    }
    place(s, st, code, rec);
  }

  /// A loop body runs again after itself: iterate the state at its head to a fixed point, then
  /// place barriers for that state. Zero iterations keep the state from before the loop.
  void loop(const StmtPtr& body, State& st, Perspective code, Plan* rec) {
    State before = st;
    State head = st;
    for (int i = 0; i < 8; ++i) {
      State out = head;
      walk(body, out, code, nullptr);
      State next = before;
      next.merge(out);
      if (next == head) break;
      head = next;
    }
    State out = head;
    walk(body, out, code, rec);
    st = before;
    st.merge(out);
  }

  Plan& plan_;
  Views views_;
  std::set<const VarNode*> stable_, assigned_;
  std::set<const MemNode*> exempt_;
  std::unordered_map<const StmtNode*, Access> summaries_;
};

}  // namespace

Plan plan(const ir::StmtPtr& body, Perspective top) {
  Plan p;
  Planner(p).run(body, top);
  return p;
}

}  // namespace vantage::sync
