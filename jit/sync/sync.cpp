// Vantage automatic synchronization: see sync.h and docs/design.md section 4.
//
// Within one body the statements are walked in program order while a state records which memory
// roots (a pointer parameter or a shared array, whatever view names them) have been read or written
// since the last barrier. A statement that reads a pending write, or writes a pending read, gets one
// barrier before it, which clears everything pending: waits move down to the first use, and one
// barrier serves every conflict it separates. Bodies that run at the same perspective (if, loops,
// partition, claim, lower, async, destruct) share the state; loops iterate to a fixed point so the
// back edge is covered, and a wait for data from before a loop goes before the loop unless the
// loop's own barriers already serve it. A group or split at a narrower perspective counts, from
// outside, as one statement with all the accesses inside it, and is analysed again inside. A user's
// cluster_sync is a barrier. Copies by cp.async are followed by the thread's groups (copies.h): a
// barrier waits first for the groups the statement after it touches, and the others fly on. A
// `while` loop's condition is read again after every iteration: its reads are judged against what
// the body left pending, and a conflict there gets a barrier at the end of the body (Plan::at_end).
// Atomics of one kind that commutes with itself (add, min, max) never conflict with each other.
//
// Two refinements keep barriers to the hand-written minimum. Plain stores only go through memory
// narrowed to one thread, so two stores through one partition share never need a barrier between
// them (a partition whose shares meet where it is written is rejected: shares.cpp); stores through
// two different shares, or through a claim, do. And a thread that only reads what it will store itself,
// or reads back what it stored, needs no barrier between the two. That is decided by comparing root
// index expressions made of thread ids and variables that never change, and it holds only when every
// pending access of that memory and the new one use one and the same index expression: then the
// element a thread reads is the one its own partition share gave it, and no other thread's share.
// Two different expressions (two partitions that hand elements to different threads), a store made
// by a narrower set of threads (a split branch or a claim: the others read what one thread wrote),
// or an `id()` seen from outside the group that gives it its meaning, make the index incomparable.
//
// Loops iterate to a fixed point (the pending sets only grow and are finite); the state a loop body
// leaves and its barriers are memoised per input state: a nest of loops costs a polynomial in its depth.
#include "jit/sync/sync.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jit/ir/eval.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/mutate.h"
#include "jit/ir/range.h"
#include "jit/ir/shared_layout.h"
#include "jit/ir/views.h"
#include "jit/ir/visit.h"
#include "jit/sync/access.h"

namespace vantage::sync {
namespace {

using namespace ir;
using namespace pass;

/// Whether an expression contains an `id()`, whose value depends on the code perspective it is in.
bool has_id(const ExprPtr& e) {
  struct Scan : IRVisitor {
    bool found = false;
    void visit(const Id&) override { found = true; }
  } scan;
  scan.walk(e);
  return scan.found;
}

/// Rounds of a loop's fixed-point iteration before the pass gives up (each adds at least one root or
/// index to a finite set; real kernels need two or three).
constexpr int kMaxRounds = 10000;

class Planner {
 public:
  Planner(Plan& plan, std::int64_t threads) : plan_(plan), threads_(threads) {}

  void run(const StmtPtr& body, Perspective top) {
    views_.collect(body);
    collect_reuse(body);
    collect_stable(body, top);
    for (const auto* v : assigned_) stable_.erase(v);
    collect_spans();
    collect_async_roots(body);
    State st;
    walk(body, st, top, &plan_);
  }

 private:
  // ------------------------------------------------------------ shared memory reused
  /// A shared array lives until the end of the body that allocated it, and a call's callee gets the
  /// memory after the arrays live at the call; later arrays and calls reuse those bytes. Each call
  /// of a function with shared memory stands for that memory as one root of its own (its region),
  /// which the call writes. Two roots whose bytes overlap reuse each other: a thread may not store
  /// into the new one while another still reads or writes the old (a sibling scope's `s[t + 1]`).
  void collect_reuse(const StmtPtr& body) {
    SharedLayout layout = layout_shared(body);
    std::vector<std::pair<const MemNode*, SharedSlot>> slots(layout.arrays.begin(), layout.arrays.end());
    for (const auto& [call, slot] : layout.calls) {
      const auto& c = static_cast<const Call&>(*call);
      auto region =
          std::make_shared<MemNode>(-1, "the shared memory of a call of '" + c.fn->name + "'", ScalarType::U32,
                                    MemSpace::Shared, false, 1, MemNode::Origin::Shared, c.loc);
      regions_[call] = region.get();
      slots.emplace_back(region.get(), slot);
      region_nodes_.push_back(std::move(region));
    }
    for (std::size_t i = 0; i < slots.size(); ++i)
      for (std::size_t j = i + 1; j < slots.size(); ++j) {
        const SharedSlot &a = slots[i].second, &b = slots[j].second;
        // An array of unknown size is rejected by the checker; here it reuses whatever follows it.
        const std::int64_t a_end = a.size_known ? a.end : INT64_MAX, b_end = b.size_known ? b.end : INT64_MAX;
        if (a.offset < b_end && b.offset < a_end) {
          reused_[slots[i].first].insert(slots[j].first);
          reused_[slots[j].first].insert(slots[i].first);
        }
      }
  }
  /// The roots `a`'s accesses reuse the bytes of.
  void add_reuses(Access& a) const {
    if (reused_.empty()) return;
    auto add = [&](const MemNode* r) {
      if (auto it = reused_.find(r); it != reused_.end()) a.reuses.insert(it->second.begin(), it->second.end());
    };
    for (const Roots* rs : {&a.reads, &a.stores, &a.writes})
      for (const auto* r : *rs) add(r);
    for (const auto& [r, kinds] : a.atomics) add(r);
  }

  /// The shared roots some TMA or wgmma accesses: a barrier after generic accesses of one of them
  /// fences the proxies too, in the threads that made those accesses.
  void collect_async_roots(const StmtPtr& body) {
    struct Scan : IRVisitor {
      Planner& p;
      explicit Scan(Planner& planner) : p(planner) {}
      void visit(const Intrinsic& n) override {
        const IntrinsicInfo& in = info(n.op);
        for (std::size_t i = 0; i < n.mems.size(); ++i)
          if (in.async(i))
            if (const auto* r = p.root(n.mems[i].get()); r && r->space == MemSpace::Shared) p.async_roots_.insert(r);
        IRVisitor::visit(n);
      }
    } scan(*this);
    scan.walk(body);
  }

  // ------------------------------------------------------------ element ranges
  /// Threads in a unit of `p` inside a launch of T threads per block (a grid: at most 2^31).
  std::int64_t units(Perspective p) const {
    constexpr std::int64_t kGrid = std::int64_t{1} << 31;
    if (p.level == Level::Grid || p.count.blocks) return kGrid;
    std::int64_t n = p.count.coeff * (p.count.threads ? threads_ : 1);
    return p.level == Level::Block ? std::min(kGrid, n * threads_) : n;
  }
  /// `id(q)` in code at perspective `code`: the index of q's unit inside code's, below |code| / |q|.
  Range id_range(Perspective q, Perspective code) const {
    return {0, std::max<std::int64_t>(units(code) / std::max<std::int64_t>(units(q), 1), 1) - 1};
  }
  /// The ranges element indices of shared memory are computed in: an `id()` in an access of shared
  /// memory is at a perspective inside a block (below T / |q|); a let stands for its value's range
  /// (its ids counted where it was made), a loop counter of constant bounds for those. Variables
  /// that are assigned keep their type's range.
  void collect_spans() {
    if (threads_ <= 0) return;
    for (const auto& [v, r] : loop_ranges_)
      if (!assigned_.count(v)) span_env_.vars[v] = Range{r.first, r.second};
    // Lets that read lets: a few rounds, each as narrow as the last or narrower.
    Perspective made = block(1);
    span_env_.id = [this, &made](Perspective q) { return id_range(q, made); };
    for (int round = 0; round < 6; ++round) {
      bool changed = false;
      for (const auto& [v, def] : defs_) {
        if (assigned_.count(v) || !is_integer(v->type)) continue;
        made = def.second;
        Range r = value_range(def.first, span_env_);
        auto [it, fresh] = span_env_.vars.emplace(v, r);
        if (!fresh && (it->second.lo != r.lo || it->second.hi != r.hi)) {
          it->second = r;
          changed = true;
        }
        changed = changed || fresh;
      }
      if (!changed) break;
    }
    const Perspective inside_block = block(1);
    span_env_.id = [this, inside_block](Perspective q) { return id_range(q, inside_block); };
  }
  /// Records which elements of root r an access at root index `i` (null: unknown) may touch. Only
  /// shared arrays keep ranges; nothing is recorded for the others, which then never count as apart.
  void span(Access& a, const MemNode* r, const ExprPtr& i) const {
    if (threads_ <= 0 || r->space != MemSpace::Shared) return;
    std::optional<Range> got;
    if (i && is_integer(i->type)) got = value_range(i, span_env_);
    a.add_span(r, got);
  }
  /// Whether every element `a` touches of r lies apart from every element `st` touched.
  static bool apart(const Access& a, const State& st, const MemNode* r) {
    auto x = a.span.find(r), y = st.span.find(r);
    if (x == a.span.end() || y == st.span.end()) return false;
    return x->second.hi < y->second.lo || y->second.hi < x->second.lo;
  }

  // ------------------------------------------------------------ comparable indices
  /// Variables whose value is the same wherever they are visible: declared outside every loop and
  /// never assigned. Index expressions made of them (and thread ids) compare across statements.
  void collect_stable(const StmtPtr& body, Perspective top) {
    struct Scan : IRVisitor {
      Planner& p;
      int loops = 0;
      std::vector<Perspective> code;
      Scan(Planner& planner, Perspective top) : p(planner), code{top} {}
      void visit(const Let& n) override {
        if (loops == 0) p.stable_.insert(n.var.get());
        p.defs_[n.var.get()] = {n.value, code.back()};
        IRVisitor::visit(n);
      }
      void visit(const Group& n) override {
        code.push_back(n.p);
        IRVisitor::visit(n);
        code.pop_back();
      }
      void visit(const Split& n) override {
        for (std::size_t i = 0; i < n.bodies.size(); ++i) {
          code.push_back({n.level, n.counts[i]});
          walk(n.bodies[i]);
          code.pop_back();
        }
      }
      void visit(const Assign& n) override {
        p.assigned_.insert(n.var.get());
        IRVisitor::visit(n);
      }
      void visit(const For& n) override {
        auto b = const_int(n.begin), e = const_int(n.end), st = const_int(n.step);
        if (b && e && st && *st > 0 && *e > *b) p.loop_ranges_[n.var.get()] = {*b, *e - 1};
        ++loops;
        IRVisitor::visit(n);
        --loops;
      }
      void visit(const While& n) override {
        ++loops;
        IRVisitor::visit(n);
        --loops;
      }
    } scan(*this, top);
    scan.walk(body);
  }

  /// Whether an index expression has the same value wherever it is evaluated by one thread. A share
  /// (`share_vars`) may also hold the partition's own index variables, which stand for every element.
  bool stable(const ExprPtr& e, bool share_vars = false) const {
    if (!e) return false;
    auto rec = [&](const ExprPtr& x) { return stable(x, share_vars); };
    return dispatch(
        *e,
        Overloaded{
            [](const Literal&) { return true; }, [](const Id&) { return true; }, [](const Builtin&) { return true; },
            [&](const VarRef& n) {
              if (assigned_.count(n.var.get())) return false;
              if (share_vars && n.var->origin == VarNode::Origin::IndexArg) return true;
              return n.var->origin == VarNode::Origin::Param || stable_.count(n.var.get()) > 0;
            },
            [&](const Unary& n) { return rec(n.a); }, [&](const Cast& n) { return rec(n.a); },
            [&](const Binary& n) { return rec(n.a) && rec(n.b); },
            [&](const Select& n) { return rec(n.c) && rec(n.a) && rec(n.b); }, [](const MathCall&) { return false; },
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
    span(a, r, i);
    if (i && stable(i))
      add_index(at, r, i);
    else
      a.opaque.insert(r);
  }
  /// Records the proxy an access of shared root r goes through.
  static void proxy(Access& a, const MemNode* r, bool async) {
    if (r->space == MemSpace::Shared) (async ? a.async_proxy : a.generic).insert(r);
  }
  void read(Access& a, const MemPtr& m, const std::vector<ExprPtr>* idx = nullptr, bool async = false) const {
    const auto* r = root(m.get());
    if (!r) return;
    a.reads.insert(r);
    proxy(a, r, async);
    if (idx) {
      index(a, a.read_at, m, *idx, r);
    } else {
      a.opaque.insert(r);
      span(a, r, nullptr);
    }
  }
  /// A TMA store's read of its source box: the box's elements (imms[1] of them, in the swizzle's
  /// whole 1024-byte groups) from its first, so that stores into the other half of a double buffer
  /// are apart from it.
  void box_read(Access& a, const Intrinsic& n) const {
    const auto* r = root(n.mems[0].get());
    if (!r) return;
    a.reads.insert(r);
    a.opaque.insert(r);
    proxy(a, r, true);
    ExprPtr first = n.args.empty() ? nullptr : views_.root_index(n.mems[0].get(), {n.args[0]});
    std::optional<Range> got;
    if (threads_ > 0 && first && is_integer(first->type) && n.imms.size() > 1 && n.imms[1] > 0) {
      Range at = value_range(first, span_env_);
      got = Range{at.lo, at.hi + n.imms[1] - 1};
    }
    a.bulk.push_back({false, 0, r, got, n.loc});
    if (threads_ > 0 && r->space == MemSpace::Shared) a.add_span(r, got);
  }
  void write(Access& a, const MemPtr& m, bool async = false) const {
    if (const auto* r = root(m.get())) {
      a.writes.insert(r);
      proxy(a, r, async);
      a.opaque.insert(r);
      span(a, r, nullptr);
    }
  }
  void async_write(Access& a, const MemPtr& m) const {
    if (const auto* r = root(m.get())) {
      a.cp.push_back({CopyEvent::Kind::Copy, r, 0});
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
        proxy(access, r, false);
        p_.index(access, access.store_at, n.mem, n.indices, r);
        // Which elements the storing thread owns: only a store through a partition says.
        ExprPtr share = p_.views_.share(n.mem.get());
        // An unstable share (one made of loop-local values) still names the same partition
        // statement when it compares equal; the index, not stable then, keeps reads conservative.
        if (share) {
          add_index(access.share_at, r, share);
          if (!p_.stable(share, true))
            if (ExprPtr at = p_.views_.root_index(n.mem.get(), n.indices)) add_index(access.moving_at, r, at);
        } else {
          access.opaque.insert(r);
          access.unshared.insert(r);
        }
      }
    }
    void visit(const VectorCopy& n) override {
      IRVisitor::visit(n);
      p_.read(access, n.src);
      p_.write(access, n.dst);
    }
    void visit(const Call& n) override {
      IRVisitor::visit(n);
      if (auto it = p_.regions_.find(&n); it != p_.regions_.end()) {
        access.writes.insert(it->second);
        access.opaque.insert(it->second);
      }
      for (std::size_t i = 0; i < n.args.size(); ++i) {
        if (!n.args[i].mem) continue;
        p_.read(access, n.args[i].mem);
        bool mutable_param = i < n.fn->params.size() && n.fn->params[i].mem && !n.fn->params[i].mem->is_const;
        if (mutable_param) p_.write(access, n.args[i].mem);
      }
    }
    void visit(const Intrinsic& n) override {
      IRVisitor::visit(n);
      // What it does to each memory operand: the intrinsic table's row.
      const IntrinsicInfo& in = info(n.op);
      for (std::size_t i = 0; i < n.mems.size() && i < in.mems.size(); ++i) {
        const MemPtr& m = n.mems[i];
        if (n.op == IntrinsicOp::TmaStore2D && i == 0) {
          p_.box_read(access, n);
          continue;
        }
        switch (in.mems[i]) {
          case Touch::None: break;
          case Touch::Read: p_.read(access, m, nullptr, in.async(i)); break;
          case Touch::Write: p_.write(access, m, in.async(i)); break;
          case Touch::AsyncWrite: p_.async_write(access, m); break;
          case Touch::Atomic:
            if (const auto* r = p_.root(m.get())) {
              proxy(access, r, false);
              access.atomics[r] |= 1u << static_cast<unsigned>(atomic_kind(n.imms[0]));
              access.opaque.insert(r);
              p_.span(access, r, nullptr);
            }
            break;
          case Touch::Wait:
            p_.read(access, m);
            if (const auto* bar = p_.root(m.get())) access.waits.insert(bar);
            break;
        }
      }
      if (n.op == IntrinsicOp::TmaStoreWait)
        access.bulk.push_back({true, n.imms.empty() ? 0 : n.imms[0], nullptr, {}, n.loc});
      if (n.op == IntrinsicOp::CpAsyncCommit) access.cp.push_back({CopyEvent::Kind::Commit, nullptr, 0});
      if (n.op == IntrinsicOp::CpAsyncWait)
        access.cp.push_back({CopyEvent::Kind::Wait, nullptr, n.imms.empty() ? 0 : n.imms[0]});
      // A TMA load's box completes on its mbarrier operand (V1010 refuses a use before the wait).
      if (n.op == IntrinsicOp::TmaLoad2D || n.op == IntrinsicOp::TmaLoadMulticast2D) {
        const auto* dst = p_.root(n.mems[0].get());
        const auto* bar = p_.root(n.mems[1].get());
        if (dst && bar) {
          access.tma.insert({dst, bar});
          p_.tma_loads_.emplace(std::make_pair(dst, bar), n.loc);
        }
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
    add_reuses(scan.access);
    a.merge(scan.access);
  }

  /// Accesses of one statement and everything inside it.
  const Access& summary(const StmtPtr& s) {
    auto it = summaries_.find(s.get());
    if (it != summaries_.end()) return it->second;
    AccessScan scan(*this, s.get());
    scan.walk(s);
    Access& a = scan.access;
    add_reuses(a);
    // Seen from outside, a group's ids mean something else, and a split branch or a claim stores
    // with fewer threads than the code around it: those indices compare with nothing out here.
    bool narrower_stores = s->kind == StmtKind::Split || s->kind == StmtKind::Claim;
    bool inner_ids = s->kind == StmtKind::Group || s->kind == StmtKind::Split;
    auto demote = [&](Indices& at, bool all) {
      for (auto it = at.begin(); it != at.end();) {
        bool bad = all;
        for (const auto& e : it->second) bad = bad || (inner_ids && has_id(e));
        if (bad) {
          a.opaque.insert(it->first);
          it = at.erase(it);
        } else {
          ++it;
        }
      }
    };
    if ((s->kind == StmtKind::For || s->kind == StmtKind::While) && !a.bulk.empty()) a.looped = true;
    // A commit or wait that may run any number of times, or in some threads only (a split's
    // branch), cannot be counted from outside.
    if (s->kind == StmtKind::For || s->kind == StmtKind::While || s->kind == StmtKind::If || s->kind == StmtKind::Split)
      for (const auto& e : a.cp) a.cp_ordered = a.cp_ordered && e.kind == CopyEvent::Kind::Copy;
    if (narrower_stores) a.unshared.insert(a.stores.begin(), a.stores.end());
    demote(a.store_at, narrower_stores);
    demote(a.share_at, narrower_stores);
    demote(a.moving_at, narrower_stores);
    demote(a.read_at, false);
    return summaries_.emplace(s.get(), std::move(a)).first->second;
  }

  // ------------------------------------------------------------ conflicts and barriers
  /// A thread that only reads what it stores itself (a_reads: false), or reads back what it stored
  /// (a_reads: true), needs no barrier between the two: if shares overlap, that is the race the
  /// user's index function chose.
  bool own(const Access& a, const State& st, const MemNode* r, bool a_reads) const {
    if (exempt_.count(r)) return true;
    if (a.opaque.count(r) || st.opaque.count(r)) return false;
    if (!one_share(a, st, r)) return false;
    return a_reads ? within(a.read_at, st.store_at, r) : within(st.read_at, a.store_at, r);
  }

  bool conflicts(const Access& a, const State& st) const {
    for (const auto* r : a.reuses)
      if (st.reads.count(r) || st.stores.count(r) || st.writes.count(r) || st.atomics.count(r)) return true;
    // An atomic and a plain access of one root, two atomics of different kinds, or an exchange.
    for (const auto& [r, kinds] : a.atomics) {
      auto other = st.atomics.find(r);
      bool plain = st.reads.count(r) || st.stores.count(r) || st.writes.count(r);
      bool mixed = other != st.atomics.end() && (other->second != kinds || !commutes(kinds));
      if ((plain || mixed) && !apart(a, st, r)) return true;
    }
    for (const auto& [r, kinds] : st.atomics)
      if ((a.reads.count(r) || a.stores.count(r) || a.writes.count(r)) && !apart(a, st, r)) return true;
    for (const auto* r : a.reads)
      if ((st.writes.count(r) || (st.stores.count(r) && !own(a, st, r, true))) && !apart(a, st, r)) return true;
    for (const auto* r : a.stores) {
      if ((st.writes.count(r) || (st.reads.count(r) && !own(a, st, r, false))) && !apart(a, st, r)) return true;
      // Two stores by different threads to one element: only stores through one partition share
      // hand each element to one thread.
      if (st.stores.count(r) && (a.unshared.count(r) || st.unshared.count(r) || !one_share(a, st, r)) &&
          !apart(a, st, r))
        return true;
    }
    for (const auto* r : a.writes)
      if ((st.reads.count(r) || st.writes.count(r) || st.stores.count(r)) && !apart(a, st, r)) return true;
    return false;
  }

  /// Whether atomics of the kinds in `kinds` (one bit each) give the same memory in any order: one
  /// kind, and not an exchange, a store, a compare and swap or a wrapping counter (loads only read).
  static bool commutes(unsigned kinds) {
    for (AtomicKind k : {AtomicKind::Add, AtomicKind::Min, AtomicKind::Max, AtomicKind::And, AtomicKind::Or,
                         AtomicKind::Xor, AtomicKind::Load})
      if (kinds == 1u << static_cast<unsigned>(k)) return true;
    return false;
  }

  /// Whether the code at `p` is one block or less, where barriers exist.
  static bool within_block(Perspective p) {
    if (p.level == Level::Thread) return true;
    return p.level == Level::Block && p.count == Size(1);
  }

  /// Whether a barrier after `st` fences the proxies: its threads accessed generically shared memory
  /// that a TMA or wgmma accesses somewhere.
  bool fences_proxies(const State& st) const {
    for (const auto* r : st.generic)
      if (async_roots_.count(r)) return true;
    return false;
  }

  /// What a barrier before accesses `a` waits for first of the cp.async copies in flight: the
  /// groups up to the newest one with a copy into memory `a` touches; the newer ones fly on.
  static std::int64_t copy_wait(const Access& a, const State& st) {
    return st.copies.wait_for([&](const MemNode* r) {
      return a.reads.count(r) || a.stores.count(r) || a.writes.count(r) || a.atomics.count(r) || a.reuses.count(r);
    });
  }

  /// A barrier before `s`, whose accesses are `a`: everything pending is complete after it but the
  /// copies it leaves in flight. Where the threads accessed shared memory that a TMA or wgmma
  /// accesses too, each fences the proxies before it arrives.
  void place(const StmtPtr& s, const Access& a, State& st, Perspective code, Plan* rec) {
    const bool fence = fences_proxies(st);
    const std::int64_t wait = copy_wait(a, st);
    if (rec) {
      if (within_block(code)) {
        rec->before[s.get()].push_back({code, wait, fence});
      } else {
        rec->grid_conflicts.push_back(s.get());
      }
    }
    st.clear(wait);
    if (fence) st.generic.clear();
  }

  /// Places a barrier before `s` if its accesses conflict with what is pending, then adds them.
  void step(const StmtPtr& s, const Access& a, State& st, Perspective code, Plan* rec) {
    if (rec) unwaited_tma(s, a, st, rec);
    if (rec) unwaited_store(s, a, st, rec);
    if (conflicts(a, st)) place(s, a, st, code, rec);
    // An async access of what these threads accessed generically since the last fence, with no
    // barrier between (the threads' own accesses): the threads fence the proxies first.
    bool fence = false;
    for (const auto* r : a.async_proxy) fence = fence || st.generic.count(r);
    if (fence) {
      if (rec) rec->fences.insert(s.get());
      st.generic.clear();
    }
    st.merge(a);
    st.bulk.clear();
    st.looped = false;
    st.cp.clear();
    st.cp_ordered = true;
    bulk(a, st);
    st.copies.apply(a.cp, a.cp_ordered);
    // A wait on an mbarrier completes the TMA loads that complete on it: for every thread of the
    // code when the wait is the statement itself, else for the threads that waited, so that the
    // others still need a barrier (the data then counts as an ordinary write).
    if (a.waits.empty()) return;
    const auto* in = s->kind == StmtKind::Intrinsic ? static_cast<const Intrinsic*>(s.get()) : nullptr;
    const bool everyone = in && in->op == IntrinsicOp::MbarrierWait;
    for (auto it = st.tma.begin(); it != st.tma.end();) {
      if (!a.waits.count(it->second)) {
        ++it;
        continue;
      }
      if (!everyone) {
        st.writes.insert(it->first);
        st.opaque.insert(it->first);
      }
      it = st.tma.erase(it);
    }
  }
  /// A write of a TMA store's source the store may still read (no wait of its thread covers it):
  /// refused, since no barrier waits for the TMA unit.
  void unwaited_store(const StmtPtr& s, const Access& a, const State& st, Plan* rec) const {
    for (const auto& p : st.reading) {
      const bool writes = a.stores.count(p.root) || a.writes.count(p.root) || a.atomics.count(p.root);
      auto got = a.span.find(p.root);
      const bool apart = p.span && got != a.span.end() && !a.unspanned.count(p.root) &&
                         (got->second.hi < p.span->lo || p.span->hi < got->second.lo);
      if (writes && !apart) {
        rec->tma_unwaited.push_back({s.get(), p.loc, p.root->name, "", true});
        return;
      }
    }
  }
  /// After `a`: its stores read on; its waits make the stores they cover ordinary reads of their
  /// thread, which the other threads' writes wait for at a barrier. Where they repeat in a loop of
  /// `a`, only a last wait(0) counts.
  void bulk(const Access& a, State& st) {
    auto complete = [&](std::size_t keep) {
      while (st.reading.size() > keep) {
        const BulkEvent p = st.reading.front();
        st.reading.erase(st.reading.begin());
        st.reads.insert(p.root);
        st.opaque.insert(p.root);
        if (p.root->space == MemSpace::Shared) st.add_span(p.root, p.span);
      }
    };
    for (std::size_t i = 0; i < a.bulk.size(); ++i) {
      const BulkEvent& e = a.bulk[i];
      if (!e.wait) {
        if (std::find(st.reading.begin(), st.reading.end(), e) == st.reading.end()) st.reading.push_back(e);
      } else if (!a.looped || (e.pending == 0 && i + 1 == a.bulk.size())) {
        complete(static_cast<std::size_t>(e.pending));
      }
    }
  }

  /// An access to memory a TMA load may still be writing (no wait on its mbarrier since): refused,
  /// since no barrier Vantage could place waits for it. Further TMA loads into the same memory are
  /// the pipeline's own business (its slots), not a use.
  void unwaited_tma(const StmtPtr& s, const Access& a, const State& st, Plan* rec) {
    for (const auto& pending : st.tma) {
      const MemNode* dst = pending.first;
      bool own_load = false;
      for (const auto& t : a.tma) own_load = own_load || t.first == dst;
      bool used =
          a.reads.count(dst) || a.stores.count(dst) || a.atomics.count(dst) || (a.writes.count(dst) && !own_load);
      if (!used) continue;
      auto at = tma_loads_.find(pending);
      rec->tma_unwaited.push_back(
          {s.get(), at != tma_loads_.end() ? at->second : SourceLoc{}, dst->name, pending.second->name});
      return;
    }
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
    st.join(other);
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
  /// The condition is evaluated before the first iteration and again after every one: the second
  /// evaluation reads what the body left pending, so the loop iterates `body; cond` (`again`).
  void plan_stmt(const While& n, const StmtPtr& s, State& st, Perspective code, Plan* rec) {
    Access head;
    loads(head, n.cond);
    hoist(s, n.body, st, code, rec, &head);
    step(s, head, st, code, rec);
    loop(n.body, st, code, rec, &head, s.get());
  }
  /// The region as a whole may store exactly what its threads read before: judge those reads
  /// against all its stores, not one store at a time.
  void narrowing(const StmtPtr& s, const StmtPtr& body, State& st, Perspective code, Plan* rec) {
    const Access& all = summary(s);
    std::vector<const MemNode*> added;
    for (const auto* r : all.stores)
      if (st.reads.count(r) && !exempt_.count(r) && !all.opaque.count(r) && !st.opaque.count(r) &&
          one_share(all, st, r) && within(st.read_at, all.store_at, r))
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
           std::is_same_v<N, Intrinsic> || std::is_same_v<N, Unsafe> || std::is_same_v<N, VectorCopy> ||
           std::is_same_v<N, Return> || std::is_same_v<N, Jump>) void plan_stmt(const N& n, const StmtPtr& s, State& st,
                                                                                Perspective code, Plan* rec) {
    if constexpr (std::is_same_v<N, Intrinsic>)                 // a cluster_sync (block(1)) is the block's barrier too
      if (n.op == IntrinsicOp::ClusterSync) return st.clear();  // (it waits for no cp.async)
    step(s, summary(s), st, code, rec);
  }

  /// A barrier already in the body (lowered IR): everything before it is complete.
  void plan_stmt(const ir::Barrier& n, const StmtPtr&, State& st, Perspective, Plan*) { st.clear(n.async_wait); }

  /// A wait for data from before a branch goes before it (one barrier, not one per branch). A wait
  /// for data from before a loop goes before the loop unless the loop's own barriers, the ones its
  /// back edge needs anyway, already sit where the wait would go.
  void hoist(const StmtPtr& s, const StmtPtr& loop_body, State& st, Perspective code, Plan* rec,
             const Access* again = nullptr) {
    if (!conflicts(summary(s), st)) return;
    if (loop_body) {
      const LoopResult& with_incoming = loop_result(loop_body, st, code, again, s.get());
      const LoopResult& on_its_own = loop_result(loop_body, State(), code, again, s.get());
      bool covered = true;
      for (const auto* stmt : with_incoming.barriers) covered = covered && on_its_own.barriers.count(stmt);
      for (const auto* stmt : with_incoming.ends) covered = covered && on_its_own.ends.count(stmt);
      if (covered) return;
    }
    place(s, summary(s), st, code, rec);
  }

  /// What a whole loop does to a state: the state after it, the statements it puts barriers before
  /// and the loops it puts one at the end of (every nested level included).
  struct LoopResult {
    State in, out;
    std::set<const StmtNode*> barriers, ends;
  };
  const LoopResult& loop_result(const StmtPtr& body, const State& in, Perspective code, const Access* again,
                                const StmtNode* self) {
    auto& seen = loops_[{body.get(), code.str()}];
    for (const auto& r : seen)
      if (r->in == in) return *r;
    auto r = std::make_unique<LoopResult>();
    r->in = in;
    Plan scratch;
    State st = in;
    loop(body, st, code, &scratch, again, self);
    r->out = std::move(st);
    for (const auto& [stmt, b] : scratch.before) r->barriers.insert(stmt);
    for (const auto& [stmt, b] : scratch.at_end) r->ends.insert(stmt);
    seen.push_back(std::move(r));
    return *seen.back();
  }

  /// A loop body runs again after itself: iterate the state at its head to a fixed point, then place
  /// barriers for that state. Zero iterations keep the state from before the loop. The head's state
  /// is joined with what each iteration leaves (merge, as at the end of an if), so it only grows, over
  /// finitely many roots and indices, and the iteration ends. (Replacing it instead could cycle: an
  /// iteration's back edge turns shares into unshared stores, which changes what the next one
  /// leaves; a random program's two nested loops never reached a fixed point and hung the compile.)
  ///
  /// A `while` loop's condition (`again`) is evaluated after every iteration too, before the next
  /// one or the exit: it reads what the body left pending, so a conflict there gets a barrier at the
  /// end of the body (`Plan::at_end`, keyed by the loop `self`), the last place before that read.
  /// Without it, a thread could evaluate the condition before another thread's store in the body
  /// that the condition reads, and the threads could disagree on leaving the loop.
  void loop(const StmtPtr& body, State& st, Perspective code, Plan* rec, const Access* again = nullptr,
            const StmtNode* self = nullptr) {
    State before = st;
    State head = st;
    for (int round = 0;; ++round) {
      if (round == kMaxRounds) throw InternalError("sync: a loop's state reached no fixed point");
      State out = back_edge(after(body, head, code), code);
      if (again) evaluate_again(*again, out, code, nullptr, self);
      State next = head;
      next.join(out);
      if (next == head) break;
      head = std::move(next);
    }
    State out = head;
    if (rec)
      walk(body, out, code, rec);
    else
      out = after(body, head, code);
    if (again) {
      State next = back_edge(out, code);
      evaluate_again(*again, next, code, rec, self);
      out = std::move(next);
    }
    st = before;
    st.join(out);
  }
  /// The condition's evaluation after an iteration that left `st`: a barrier at the end of the body
  /// where it reads what is pending, then its reads.
  void evaluate_again(const Access& cond, State& st, Perspective code, Plan* rec, const StmtNode* self) {
    if (conflicts(cond, st)) {
      const bool fence = fences_proxies(st);
      const std::int64_t wait = copy_wait(cond, st);
      if (rec) {
        if (within_block(code))
          rec->at_end[self].push_back({code, wait, fence});
        else
          rec->grid_conflicts.push_back(self);
      }
      st.clear(wait);
      if (fence) st.generic.clear();
    }
    st.merge(cond);
  }

  /// What one iteration leaves for the next: a partition share made of values that change between
  /// iterations (a loop counter, a let inside the loop) names other elements next time, so its stores
  /// compare with no share there (the next iteration's stores through it need a barrier: the element
  /// may now be another thread's), unless every such store provably stays inside its own thread's
  /// elements across all iterations (`thread_disjoint`).
  State back_edge(State out, Perspective code) const {
    for (auto it = out.share_at.begin(); it != out.share_at.end();) {
      bool moves = false;
      for (const auto& e : it->second) moves = moves || !stable(e, true);
      auto m = out.moving_at.find(it->first);
      if (moves && !(m != out.moving_at.end() && thread_disjoint(m->second, code))) {
        out.unshared.insert(it->first);
        out.opaque.insert(it->first);
        out.moving_at.erase(it->first);
        it = out.share_at.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

  /// `e` with the values of lets put in (those never assigned), except lets of an id, which stay as
  /// atoms that name the perspective they were made at; depth-limited.
  ExprPtr expand(const ExprPtr& e, int depth = 0) const {
    class Expand : public IRMutator {
     public:
      Expand(const Planner& p, int d) : p_(p), d_(d) {}
      using IRMutator::mutate;

     protected:
      ExprPtr visit(const VarRef& n, const ExprPtr& self) override {
        auto it = p_.defs_.find(n.var.get());
        if (it == p_.defs_.end() || p_.assigned_.count(n.var.get()) || d_ >= 6 || as<Id>(*it->second.first))
          return self;
        return p_.expand(it->second.first, d_ + 1);
      }

     private:
      const Planner& p_;
      int d_;
    } x(*this, depth);
    return x.mutate(e);
  }

  /// Whether stores at the root indices `at`, made by the threads of `code` over every iteration of
  /// the loops they are in, touch elements of one thread only: each index is `c * t + rest` with `t`
  /// the thread's own id in `code` (a let of id(thread(1)) made there), one `c` for all, and `rest`
  /// (constants and counters of loops with constant bounds) spanning fewer than |c| elements.
  bool thread_disjoint(const IndexList& at, Perspective code) const {
    const VarNode* tid = nullptr;
    std::int64_t coeff = 0, lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& e : at) {
      Affine a = affine(expand(e));
      std::int64_t elo = a.constant, ehi = a.constant;
      bool found = false;
      for (const auto& [atom, k] : a.terms) {
        if (k == 0) continue;
        const auto* v = as<VarRef>(*atom);
        if (!v) return false;
        auto d = defs_.find(v->var.get());
        const Id* id = d != defs_.end() ? as<Id>(*d->second.first) : nullptr;
        if (id && id->p == vantage::thread(1) && d->second.second == code && !assigned_.count(v->var.get())) {
          if ((tid && tid != v->var.get()) || (coeff && coeff != k) || found) return false;
          tid = v->var.get();
          coeff = k;
          found = true;
          continue;
        }
        auto r = loop_ranges_.find(v->var.get());
        if (r == loop_ranges_.end() || assigned_.count(v->var.get())) return false;
        auto [rlo, rhi] = r->second;
        elo += std::min(k * rlo, k * rhi);
        ehi += std::max(k * rlo, k * rhi);
      }
      if (!found) return false;
      lo = std::min(lo, elo);
      hi = std::max(hi, ehi);
    }
    return tid && hi - lo < (coeff < 0 ? -coeff : coeff);
  }

  /// The state after one pass of a loop body from `in`, memoised.
  State after(const StmtPtr& body, const State& in, Perspective code) {
    auto& seen = bodies_[{body.get(), code.str()}];
    for (const auto& [i, o] : seen)
      if (i == in) return o;
    State out = in;
    walk(body, out, code, nullptr);
    seen.emplace_back(in, out);
    return out;
  }

  Plan& plan_;
  std::int64_t threads_ = 0;  ///< T, or 0 when not known (no element ranges then)
  RangeEnv span_env_;
  Views views_;
  std::set<const VarNode*> stable_, assigned_;
  /// Every let's value and the code perspective it was made at.
  std::unordered_map<const VarNode*, std::pair<ExprPtr, Perspective>> defs_;
  /// Counters of loops with constant bounds: their first and last values.
  std::unordered_map<const VarNode*, std::pair<std::int64_t, std::int64_t>> loop_ranges_;
  Roots exempt_;
  Roots async_roots_;                                            ///< shared roots some TMA or wgmma accesses
  std::unordered_map<const MemNode*, Roots> reused_;             ///< roots over the same shared bytes
  std::unordered_map<const StmtNode*, const MemNode*> regions_;  ///< the shared region of each call
  std::vector<std::shared_ptr<const MemNode>> region_nodes_;     ///< (owned here)
  std::unordered_map<const StmtNode*, Access> summaries_;
  std::map<std::pair<const MemNode*, const MemNode*>, SourceLoc> tma_loads_;  ///< where each TMA load is
  std::map<std::pair<const StmtNode*, std::string>, std::vector<std::unique_ptr<LoopResult>>> loops_;
  std::map<std::pair<const StmtNode*, std::string>, std::vector<std::pair<State, State>>> bodies_;
};

}  // namespace

Plan plan(const ir::StmtPtr& body, Perspective top, std::int64_t threads) {
  Plan p;
  Planner(p, threads).run(body, top);
  return p;
}

ir::StmtPtr insert(const ir::StmtPtr& body, Perspective top, std::vector<const ir::StmtNode*>* grid_conflicts,
                   std::vector<UnwaitedTma>* tma_unwaited, std::int64_t threads) {
  Plan p = plan(body, top, threads);
  if (grid_conflicts) *grid_conflicts = p.grid_conflicts;
  if (tma_unwaited) *tma_unwaited = p.tma_unwaited;
  class Inserter : public IRMutator {
   public:
    explicit Inserter(const Plan& plan) : plan_(plan) {}
    using IRMutator::mutate;
    StmtPtr mutate(const StmtPtr& s) override {
      StmtPtr out = IRMutator::mutate(s);
      if (auto end = s ? plan_.at_end.find(s.get()) : plan_.at_end.end(); end != plan_.at_end.end()) {
        const auto& w = static_cast<const While&>(*out);
        std::vector<StmtPtr> body{w.body};
        for (const auto& b : end->second)
          body.push_back(make<ir::Barrier>(b.over, BarrierKind::Planned, 0, 0, b.async_wait, b.proxy_fence, s->loc));
        out = make<While>(w.cond, make<Seq>(std::move(body), w.body->loc), w.loc);
      }
      auto it = s ? plan_.before.find(s.get()) : plan_.before.end();
      const bool fence = s && plan_.fences.count(s.get());
      if (it == plan_.before.end() && !fence) return out;
      std::vector<StmtPtr> seq;
      if (it != plan_.before.end())
        for (const auto& b : it->second)
          seq.push_back(make<ir::Barrier>(b.over, BarrierKind::Planned, 0, 0, b.async_wait, b.proxy_fence, s->loc));
      if (fence)
        seq.push_back(make<Intrinsic>(IntrinsicOp::FenceProxyAsync, std::vector<ExprPtr>{}, std::vector<MemPtr>{},
                                      std::vector<VarPtr>{}, std::vector<std::int64_t>{}, s->loc));
      seq.push_back(out);
      return make<Seq>(std::move(seq), s->loc);
    }

   private:
    const Plan& plan_;
  } inserter(p);
  return inserter.mutate(body);
}

}  // namespace vantage::sync
