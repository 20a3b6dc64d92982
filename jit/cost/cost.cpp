// Vantage static cost analysis: see cost.h and docs/report.md.
#include "jit/cost/cost.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "jit/ir/eval.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/range.h"
#include "jit/ir/request_cost.h"
#include "jit/ir/visit.h"

namespace vantage::cost {
namespace {

using namespace ir;

constexpr int kLanes = 32;
using Mask = std::uint32_t;
constexpr Mask kAll = 0xffffffffu;
/// Representatives followed at once: the middle block and three loops inside it.
constexpr int kFrames = 4;

__int128 gcd128(__int128 a, __int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) a = std::exchange(b, a % b);
  return a;
}
/// How a value moves over the executions that the representatives being followed stand for
/// (docs/report.md, "Exact, and when it is an estimate"). A representative is one execution counted
/// for many: the middle block for every block but the first and last, a long loop's second
/// iteration for every one but the first and last. Each is a frame f whose executions lie d_f steps
/// from the one followed, d_f in [lo_f, hi_f]. A value is followed in the one; Still, it is the same
/// in the others; Moving, it is v + sum_f slope[f] * d_f + D in every lane, the slopes exact (no
/// wrap), and D (when `rigid`) the same in every lane, a multiple of `grain`, within [lo, hi] when
/// `bounded` (two values whose D has one `id` move by the same D); Erratic, anything.
struct Motion {
  enum Kind : std::uint8_t { Still, Moving, Erratic };
  Kind kind = Still;
  bool rigid = false, bounded = false;
  std::uint32_t id = 0;
  std::int64_t grain = 1, lo = 0, hi = 0;
  std::array<std::int64_t, kFrames> slope{};
};
Motion erratic() {
  Motion m;
  m.kind = Motion::Erratic;
  return m;
}

/// A value in each lane of a warp; `known` marks the lanes whose value the analysis knows (integers
/// and bools computed from the launch's numbers; never a loaded value); `mo` how the known lanes move.
struct Lanes {
  // Left uninitialised (this is the analysis' inner loop): a lane's value is read only where `known`
  // has its bit, and every write sets the bit.
  std::array<std::int64_t, kLanes> v;
  Mask known = 0;
  bool uniform = false;  ///< every lane holds v[0] (and every lane is known)
  Motion mo;
  Lanes() {}  // NOLINT: user-provided, so that Lanes{} does not zero v
  static Lanes all(std::int64_t x) {
    Lanes l;
    l.v.fill(x);
    l.known = kAll;
    l.uniform = true;
    return l;
  }
};

/// The signed operations an index is made of, as eval_binary defines them: calls `use(f)` with the
/// operation as `f(x, y, out)`, which sets `out` and returns true where eval_binary must decide
/// instead (an overflow, a divisor that is not positive). False when `op` is not one of them.
template <class Use>
inline bool with_signed_op(BinOp op, Use&& use) {
  using I = std::int64_t;
  switch (op) {
    case BinOp::Add: return use([](I x, I y, I& o) { return __builtin_add_overflow(x, y, &o); });
    case BinOp::Sub: return use([](I x, I y, I& o) { return __builtin_sub_overflow(x, y, &o); });
    case BinOp::Mul: return use([](I x, I y, I& o) { return __builtin_mul_overflow(x, y, &o); });
    case BinOp::Div: return use([](I x, I y, I& o) { return y <= 0 || ((o = x / y), false); });
    case BinOp::Mod: return use([](I x, I y, I& o) { return y <= 0 || ((o = x % y), false); });
    case BinOp::Lt: return use([](I x, I y, I& o) { return (o = x < y), false; });
    case BinOp::Le: return use([](I x, I y, I& o) { return (o = x <= y), false; });
    case BinOp::Gt: return use([](I x, I y, I& o) { return (o = x > y), false; });
    case BinOp::Ge: return use([](I x, I y, I& o) { return (o = x >= y), false; });
    case BinOp::Eq: return use([](I x, I y, I& o) { return (o = x == y), false; });
    case BinOp::Ne: return use([](I x, I y, I& o) { return (o = x != y), false; });
    case BinOp::Min: return use([](I x, I y, I& o) { return (o = x < y ? x : y), false; });
    case BinOp::Max: return use([](I x, I y, I& o) { return (o = x > y ? x : y), false; });
    default: return false;
  }
}

inline std::int64_t narrow_to(ScalarType t, std::int64_t x) {
  return t == ScalarType::I32 ? static_cast<std::int64_t>(static_cast<std::int32_t>(x)) : x;
}

/// An integer operation as eval_binary defines it, inline for the common signed cases (the analysis
/// spends most of its time here).
inline std::int64_t binary_op(BinOp op, ScalarType t, std::int64_t a, std::int64_t b) {
  if (t == ScalarType::I32 || t == ScalarType::I64) {
    std::int64_t r = 0;
    if (with_signed_op(op, [&](auto f) { return !f(a, b, r); })) return narrow_to(t, r);
  } else if (t == ScalarType::Bool) {
    if (op == BinOp::LAnd) return (a != 0) && (b != 0);
    if (op == BinOp::LOr) return (a != 0) || (b != 0);
  }
  return eval_binary(op, t, a, b);
}

/// binary_op in all 32 lanes in one loop, where all are known, for the signed operations; false when
/// the operation is another or a lane needs eval_binary (the caller then goes lane by lane). A
/// power-of-two divisor the same in every lane is a shift, rounded toward zero as / rounds.
inline bool lanewise(BinOp op, ScalarType t, const Lanes& a, const Lanes& b, Lanes& r) {
  using I = std::int64_t;
  if (t != ScalarType::I32 && t != ScalarType::I64) return false;
  const I d = b.v[0];
  if ((op == BinOp::Div || op == BinOp::Mod) && b.uniform && d > 0) {  // one divisor, positive
    const bool div = op == BinOp::Div;
    if (std::has_single_bit(static_cast<std::uint64_t>(d))) {
      const int k = std::countr_zero(static_cast<std::uint64_t>(d));
      // One loop for each operation: the test inside one loop cost 1% of the wgmma GEMM's report.
      if (div)
        for (int i = 0; i < kLanes; ++i) r.v[i] = (a.v[i] + ((a.v[i] >> 63) & (d - 1))) >> k;
      else
        for (int i = 0; i < kLanes; ++i) r.v[i] = a.v[i] - (((a.v[i] + ((a.v[i] >> 63) & (d - 1))) >> k) << k);
    } else {
      for (int i = 0; i < kLanes; ++i) r.v[i] = div ? a.v[i] / d : a.v[i] % d;
    }
    return true;  // no larger in size than the dividend: nothing to narrow
  }
  // +, - and * wrap (eval_binary): their result is the low bits of the same operation on the 64-bit
  // patterns, which unsigned arithmetic gives without an overflow check in each lane. An i32 then
  // keeps its low 32 bits.
  using U = std::uint64_t;
  auto wrapping = [&](auto f) {  // one loop for each type, as above (1% again)
    if (t == ScalarType::I32) {
      for (int i = 0; i < kLanes; ++i) {
        const U x = f(static_cast<U>(a.v[i]), static_cast<U>(b.v[i]));
        r.v[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(x));
      }
    } else {
      for (int i = 0; i < kLanes; ++i) r.v[i] = static_cast<I>(f(static_cast<U>(a.v[i]), static_cast<U>(b.v[i])));
    }
    return true;
  };
  switch (op) {
    case BinOp::Add: return wrapping([](U x, U y) { return x + y; });
    case BinOp::Sub: return wrapping([](U x, U y) { return x - y; });
    case BinOp::Mul: return wrapping([](U x, U y) { return x * y; });
    default: break;
  }
  return with_signed_op(op, [&](auto f) {
    bool fallback = false;
    for (int i = 0; i < kLanes; ++i) fallback |= f(a.v[i], b.v[i], r.v[i]);
    if (t == ScalarType::I32)
      for (auto& x : r.v) x = static_cast<std::int32_t>(x);
    return !fallback;
  });
}

template <class F>
void each(Mask m, F&& f) {
  while (m) {
    int i = std::countr_zero(m);
    f(i);
    m &= m - 1;
  }
}

/// An access as the report keys it: its node and part (a copy's source 0, destination 1).
struct AccessAt {
  const void* node;
  int part;
  SourceLoc loc;
  const MemNode* mem;
  bool write;
  int bytes;
};
/// What a statement holds, through the functions it calls: its accesses and branches, the variables
/// it writes, and whether it leaves its enclosing loop (a break or continue outside any loop of its
/// own) or its function (a return).
struct Contents {
  std::vector<AccessAt> accesses;
  std::vector<const StmtNode*> branches;
  std::vector<const VarNode*> written;
  bool jumps = false, returns = false;
};
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
        c.accesses.push_back({&n, 0, n.loc, n.mems[0].get(), true, type_bytes(n.mems[0]->elem)});
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

/// An integer index as sum(coef * term) + c: a term is a loop or other variable, or any expression
/// the form does not follow (by node). Lets whose variable is never assigned are followed through.
struct Affine {
  std::map<const void*, __int128> terms;
  __int128 c = 0;
};
using LetValues = std::unordered_map<const VarNode*, const ExprNode*>;
/// Each expression's form, computed once (a let used twice in the next, chained, stays linear).
/// Coefficients past 2^62 make the expression opaque, so that nothing overflows.
class AffineOf {
 public:
  explicit AffineOf(const LetValues& lets) : lets_(lets) {}
  const Affine& operator()(const ExprNode& e, int depth = 0) {
    if (auto it = memo_.find(&e); it != memo_.end()) return it->second;
    Affine a = compute(e, depth);
    constexpr __int128 kBig = __int128{1} << 62;
    bool big = a.c > kBig || a.c < -kBig;
    for (const auto& [t, c] : a.terms) big = big || c > kBig || c < -kBig;
    if (big) a = opaque(e);
    return memo_.emplace(&e, std::move(a)).first->second;
  }

 private:
  static Affine opaque(const ExprNode& e) {
    Affine a;
    a.terms[&e] = 1;
    return a;
  }
  Affine compute(const ExprNode& e, int depth) {
    if (depth > 64 || !is_integer(e.type)) return opaque(e);
    Affine a;
    if (const auto* l = as<Literal>(e)) {
      a.c = l->i;
      return a;
    }
    if (const auto* v = as<VarRef>(e)) {
      auto it = lets_.find(v->var.get());
      if (it != lets_.end()) return (*this)(*it->second, depth + 1);
      a.terms[v->var.get()] = 1;
      return a;
    }
    if (const auto* c = as<Cast>(e)) return is_integer(c->a->type) ? (*this)(*c->a, depth + 1) : opaque(e);
    const auto* b = as<Binary>(e);
    if (!b) return opaque(e);
    Affine x = (*this)(*b->a, depth + 1);
    const Affine& y = (*this)(*b->b, depth + 1);
    auto scaled = [](Affine v, __int128 k) {
      for (auto& [t, c] : v.terms) c *= k;
      v.c *= k;
      return v;
    };
    switch (b->op) {
      case BinOp::Add:
      case BinOp::Sub: {
        const __int128 sign = b->op == BinOp::Add ? 1 : -1;
        for (const auto& [t, c] : y.terms) x.terms[t] += sign * c;
        x.c += sign * y.c;
        return x;
      }
      case BinOp::Mul:  // both sides under 2^62 in magnitude, so the product fits
        if (y.terms.empty()) return scaled(std::move(x), y.c);
        if (x.terms.empty()) return scaled(y, x.c);
        return opaque(e);
      default: return opaque(e);
    }
  }
  const LetValues& lets_;
  std::unordered_map<const ExprNode*, Affine> memo_;
};
/// The index's terms that are not zero: two indices with equal ones differ by a constant.
std::map<const void*, __int128> variable_part(const Affine& a) {
  std::map<const void*, __int128> m;
  for (const auto& [t, c] : a.terms)
    if (c != 0) m[t] = c;
  return m;
}

/// The shared-memory loads the CUDA compiler may merge with a neighbour's into one wider load, as
/// ptxas does for adjacent elements at an alignment it can prove (the first H100 run,
/// docs/gpu-validation.md): two loads of one shared array in one statement list (or one beside a
/// loop's first or last iteration) whose indices differ by one element, and a load in a loop whose
/// index moves by one element an iteration (the loop unrolled). A GPU counts fewer requests and
/// wavefronts for them than the kernel as written has: the report's figures for them are upper
/// bounds on what Nsight Compute counts (AccessCost::compiler_may_merge).
std::unordered_set<const void*> mergeable_loads(const KernelNode& k) {
  LetValues lets;
  std::unordered_set<const VarNode*> assigned;
  std::vector<const StmtNode*> bodies{k.body.get()};
  {
    struct Defs : IRVisitor {
      LetValues* lets;
      std::unordered_set<const VarNode*>* assigned;
      std::vector<const StmtNode*>* bodies;
      std::unordered_set<const FunctionNode*> seen;
      using IRVisitor::visit;
      using IRVisitor::walk;
      void walk(const ExprPtr&) override {}  // lets, assignments and calls are statements
      void visit(const Let& n) override {
        (*lets)[n.var.get()] = n.value.get();
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
  AffineOf affine(lets);
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
  // A load's index with `loop`'s variable at `value`.
  auto at_iteration = [](Affine a, const For& loop, std::int64_t value) {
    auto it = a.terms.find(loop.var.get());
    if (it != a.terms.end()) {
      a.c += it->second * value;
      a.terms.erase(it);
    }
    return a;
  };
  for (const StmtNode* body : bodies) {
    // Loads in loops whose index moves by one element an iteration.
    Collect all;
    all.walk(StmtPtr(std::shared_ptr<const StmtNode>(), body));
    for (const auto& [load, loops] : all.loads) {
      const Affine a = affine(*load->indices[0]);
      for (const For* f : loops) {
        auto it = a.terms.find(f->var.get());
        const auto step = literal(f->step);
        if (it != a.terms.end() && step && (it->second * *step == 1 || it->second * *step == -1)) out.insert(load);
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
            const Affine a = affine(*load->indices[0]);
            if (b) here.push_back({load, at_iteration(a, *f, *b)});
            if (b && e && step == 1 && *e > *b) here.push_back({load, at_iteration(a, *f, *e - 1)});
          }
          continue;
        }
        if (as<Seq>(*st)) continue;  // a list of its own
        Collect direct;
        direct.nested = false;
        direct.walk(st);
        for (const auto& [load, loops] : direct.loads) here.push_back({load, affine(*load->indices[0])});
      }
      // Grouped by array and the index's variable part; then neighbours are constants one apart.
      std::map<std::pair<const MemNode*, std::map<const void*, __int128>>, std::map<__int128, std::vector<const Load*>>>
          groups;
      for (const Shared& x : here) groups[{x.load->mem.get(), variable_part(x.at)}][x.at.c].push_back(x.load);
      for (const auto& [key, by_offset] : groups)
        for (const auto& [c, loads] : by_offset) {
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

/// The accesses and branches whose cost may differ between blocks: an index or condition computed
/// from the block index, through variables, loop bounds and calls, or under a condition that is
/// (control dependence); everything inside a called function, and everything at all when a jump
/// or return sits under such a condition. An over-approximation: it only decides whether a report
/// that followed one block for all of them may be kept (Analyzer::block_sensitive).
struct BlockDependence {
  std::unordered_set<const void*> nodes;
  bool everything = false;
};
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

/// When an access or branch was first reached (a count): the report lists them in that order, and
/// after them, in the order of the estimates they are under, the ones no execution followed reached.
using Order = std::uint64_t;
constexpr Order kUnreached = Order{1} << 63;  ///< after every reached one (unreached() adds its count)

struct Site {
  AccessCost c;
  Order order = 0;
  double weight = 0, lanes = 0, metric = 0, ideal = 0;
  int ways = 1;
  bool inexact = false;
  bool strided = false;  ///< the first request's lanes were evenly spaced, `stride` bytes apart
  std::int64_t stride = 0;
};

struct BranchSite {
  BranchCost c;
  Order order = 0;
  double exec = 0, div = 0;
  bool inexact = false;
};

struct MemRef {
  const MemNode* root = nullptr;
  Lanes offset = Lanes::all(0);
};

struct Frame {
  Lanes tid, bid;
  std::int64_t smem = 0;
  Mask returned = 0;
  std::unordered_map<const MemNode*, MemRef> mems;
};

/// A representative being followed: the executions it stands for lie d steps from it, d in [lo, hi].
struct Rep {
  std::int64_t lo = 0, hi = 0;
};

class Analyzer {
 public:
  /// `whole`: past opt_.max_blocks, the middle block stands for every block (else for all but the
  /// first and last, which are followed apart).
  Analyzer(const lower::Lowered& l, std::span<const std::int64_t> values, const Options& o, bool whole = false)
      : l_(l), opt_(o), T_(l.options.threads), whole_(whole), mergeable_(mergeable_loads(l.kernel)) {
    const KernelNode& k = l.kernel;
    std::vector<std::int64_t> lengths;
    for (std::size_t i = 0; i < k.params.size(); ++i) {
      const ParamNode& p = k.params[i];
      std::int64_t v = 0;
      if (i < l.user_params) {
        if (i >= values.size()) throw InternalError("cost: a value for every parameter");
        v = values[i];
        lengths_.push_back(v);
        if (p.mem) lengths.push_back(v);
      } else {
        std::size_t h = i - l.user_params;  // the hidden lengths, one per pointer in order
        v = h < lengths.size() ? lengths[h] : INT64_MAX / 4;
      }
      if (p.var) params_[p.var.get()] = v;
    }
  }

  CostReport run() {
    auto start = std::chrono::steady_clock::now();
    const std::int64_t B = opt_.blocks;
    // The blocks followed and how many each stands for: all of them when few, else the middle one
    // for every block (`whole_`), or the first, the middle one (a representative of every block but
    // the first and last) and the last.
    struct Followed {
      std::int64_t block;
      double weight;
      bool representative;
    };
    std::vector<Followed> blocks;
    if (B <= opt_.max_blocks) {
      for (std::int64_t b = 0; b < B; ++b) blocks.push_back({b, 1.0, false});
    } else if (whole_) {
      blocks = {{B / 2, static_cast<double>(B), true}};
    } else {
      blocks = {{0, 1.0, false}, {B / 2, static_cast<double>(B - 2), true}, {B - 1, 1.0, false}};
    }
    CostReport r;
    for (const Followed& f : blocks) {
      reps_.clear();
      if (f.representative)
        reps_.push_back(whole_ ? Rep{-f.block, B - 1 - f.block} : Rep{1 - f.block, B - 2 - f.block});
      double block_span = 0;
      std::vector<std::vector<double>> steps;  // per warp, per barrier interval
      for (std::int64_t w = 0; w * kLanes < T_; ++w) {
        interval_steps_.assign(1, 0.0);
        run_warp(f.block, w, f.weight);
        steps.push_back(interval_steps_);
      }
      std::size_t intervals = 0;
      for (const auto& s : steps) intervals = std::max(intervals, s.size());
      for (std::size_t iv = 0; iv < intervals; ++iv) {
        double worst = 0;
        for (const auto& s : steps)
          if (iv < s.size()) worst = std::max(worst, s[iv]);
        block_span += worst;
      }
      r.span = std::max(r.span, block_span / f.weight);
    }
    reps_.clear();
    unreached();
    r.kernel = l_.kernel.name;
    r.blocks = B;
    r.threads_per_block = T_;
    r.sampled_blocks = static_cast<int>(blocks.size());
    r.exact = exact_;
    r.flops = flops_;
    r.work = work_;
    r.looped = looped_;
    r.exchanges = exchanges_;
    r.barriers = barriers_;
    std::vector<std::pair<const void*, Site*>> sites;
    for (auto& [key, s] : sites_) sites.emplace_back(key.first, &s);
    std::sort(sites.begin(), sites.end(),
              [](const auto& a, const auto& b) { return a.second->order < b.second->order; });
    for (auto [node, s] : sites) {
      AccessCost c = s->c;
      c.requests = std::llround(s->weight);
      c.lanes = s->weight > 0 ? s->lanes / s->weight : 0;
      if (c.space == MemSpace::Global) {
        c.sectors = s->weight > 0 ? s->metric / s->weight : 0;
        c.ideal_sectors = s->weight > 0 ? s->ideal / s->weight : 0;
        r.global_bytes += s->metric * 32.0;
      } else {
        c.wavefronts = s->weight > 0 ? s->metric / s->weight : 0;
        c.ideal_wavefronts = s->weight > 0 ? s->ideal / s->weight : 0;
        c.conflict_ways = s->ways;
      }
      c.exact = !s->inexact && !tainted_.count(node);
      r.exact = r.exact && c.exact;
      c.compiler_may_merge = !c.write && mergeable_.count(node) > 0;
      c.async_copy = async_.count(node) > 0;
      c.hint = hint(c, *s);
      if (c.compiler_may_merge)
        c.hint += std::string(c.hint.empty() ? "" : "; ") +
                  "next to another load of an adjacent element: the compiler may merge them (a GPU counts fewer)";
      r.accesses.push_back(std::move(c));
    }
    std::vector<std::pair<const StmtNode*, BranchSite*>> branches;
    for (auto& [node, b] : branches_) branches.emplace_back(node, &b);
    std::sort(branches.begin(), branches.end(),
              [](const auto& a, const auto& b) { return a.second->order < b.second->order; });
    for (auto [node, b] : branches) {
      BranchCost c = b->c;
      c.executions = std::llround(b->exec);
      c.divergent = std::llround(b->div);
      c.exact = !b->inexact && !tainted_.count(node);
      r.exact = r.exact && c.exact;
      r.branches.push_back(std::move(c));
    }
    const KernelNode& k = l_.kernel;
    for (std::size_t i = 0; i < l_.user_params && i < k.params.size(); ++i) {
      const ParamNode& p = k.params[i];
      if (!p.mem || p.mem->space != MemSpace::Global) continue;
      BufferUse b;
      b.name = p.name;
      b.bytes = static_cast<double>(lengths_[i]) * type_bytes(p.mem->elem);
      for (const auto& a : r.accesses)
        if (a.memory == p.name && a.space == MemSpace::Global) (a.write ? b.written : b.read) = true;
      r.buffers.push_back(std::move(b));
    }
    r.analysis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

  /// Whether an estimate of this report may be one because the middle block stood for the first
  /// and last too: an inexact access or branch whose cost may differ between blocks.
  bool block_sensitive() const {
    const BlockDependence dep = block_dependence(l_.kernel);
    if (dep.everything) return true;
    for (const auto& [key, site] : sites_)
      if ((site.inexact || tainted_.count(key.first)) && dep.nodes.count(key.first)) return true;
    for (const auto& [node, b] : branches_)
      if ((b.inexact || tainted_.count(node)) && dep.nodes.count(node)) return true;
    return false;
  }

 private:
  /// The accesses and branches of estimates that no execution followed reached: others may, so the
  /// report lists them, with no count, as estimates.
  void unreached() {
    std::vector<std::pair<Order, const StmtNode*>> tainted;
    for (const auto& [node, order] : tainted_stmts_) tainted.emplace_back(order, node);
    std::sort(tainted.begin(), tainted.end());
    Order next = kUnreached;
    for (const auto& [order, node] : tainted) {
      const Contents* c = &contents(*node);
      for (const AccessAt& a : c->accesses) {
        if (a.mem->space == MemSpace::Local) continue;
        auto [it, fresh] = sites_.try_emplace(std::make_pair(a.node, a.part));
        if (!fresh) continue;
        Site& s = it->second;
        s.order = next++;
        s.c.loc = a.loc;
        s.c.memory = a.mem->name;
        s.c.space = a.mem->space;
        s.c.write = a.write;
        s.c.bytes = a.bytes;  // (an estimate: its node is tainted)
      }
      for (const StmtNode* b : c->branches)
        if (!branches_.count(b)) {
          BranchSite& site = branch(b,
                                    b->kind == StmtKind::If    ? "if"
                                    : b->kind == StmtKind::For ? "for"
                                                               : "while",
                                    b->loc);
          site.order = next++;
        }
    }
  }

  // ------------------------------------------------------------------ one warp
  void run_warp(std::int64_t block, std::int64_t warp, double weight) {
    vars_.clear();
    forget_seen();
    for (const auto& [v, x] : params_) vars_[v] = Lanes::all(x);
    frames_.clear();
    Frame f;
    Mask m = 0;
    for (int i = 0; i < kLanes; ++i) {
      std::int64_t t = warp * kLanes + i;
      f.tid.v[static_cast<std::size_t>(i)] = t;
      if (t < T_) m |= Mask{1} << i;
    }
    f.tid.known = kAll;
    f.bid = Lanes::all(block);
    if (!reps_.empty()) {  // the middle block: the block index moves by one per block
      f.bid.mo.kind = Motion::Moving;
      f.bid.mo.slope[0] = 1;
    }
    frames_.push_back(std::move(f));
    weight_ = weight;
    loops_.clear();
    loop_stmts_.clear();
    bodies_.assign(1, l_.kernel.body.get());
    exec(l_.kernel.body, m);
  }

  // ------------------------------------------------------------------ motion
  // How a result moves, from how its operands move (see Motion). Every rule is exact or gives up
  // to a weaker kind; a result computed only from values the same in every lane moves the same in
  // every lane whatever the operation (`loose`).
  struct Span {
    __int128 lo = 0, hi = 0;
    bool bounded = true;
  };
  Span span(const Motion& m) const {
    Span s;
    if (m.kind == Motion::Erratic) s.bounded = false;
    if (m.kind != Motion::Moving) return s;
    for (std::size_t f = 0; f < reps_.size(); ++f) {
      const __int128 a = static_cast<__int128>(m.slope[f]) * reps_[f].lo,
                     b = static_cast<__int128>(m.slope[f]) * reps_[f].hi;
      s.lo += std::min(a, b);
      s.hi += std::max(a, b);
    }
    if (m.rigid) {
      s.bounded = m.bounded;
      s.lo += m.lo;
      s.hi += m.hi;
    }
    return s;
  }
  /// Every move of `m` is a multiple of p (Still: it never moves).
  static bool moves_by(const Motion& m, std::int64_t p) {
    if (m.kind != Motion::Moving) return m.kind == Motion::Still && p > 0;
    for (const auto x : m.slope)
      if (x % p) return false;
    return !m.rigid || m.grain % p == 0;
  }
  static std::int64_t grain(const Motion& m) {
    std::int64_t g = m.rigid ? m.grain : 0;
    for (const auto x : m.slope) g = std::gcd(g, x < 0 ? -x : x);
    return g ? g : 1;
  }
  /// Still where nothing moves.
  static Motion settle(Motion m) {
    if (m.kind != Motion::Moving || m.rigid) return m;
    for (const auto x : m.slope)
      if (x) return m;
    return Motion{};
  }
  /// A moving part the same in every lane: D of grain g within s, a fresh id.
  Motion rigid(std::int64_t g, Span s, Motion m = {}) {
    m.kind = Motion::Moving;
    m.rigid = true;
    m.id = ++next_id_;
    m.grain = g > 0 ? g : 1;
    m.bounded = s.bounded && s.lo >= INT64_MIN && s.hi <= INT64_MAX;
    m.lo = m.bounded ? static_cast<std::int64_t>(s.lo) : 0;
    m.hi = m.bounded ? static_cast<std::int64_t>(s.hi) : 0;
    return m;
  }
  /// A motion every lane shares, nothing more known of it.
  Motion loose() { return rigid(1, Span{0, 0, false}); }
  static bool same(const Motion& a, const Motion& b) {
    if (a.kind != b.kind) return false;
    if (a.kind != Motion::Moving) return a.kind == Motion::Still;
    return a.slope == b.slope && a.rigid == b.rigid && (!a.rigid || a.id == b.id);
  }
  /// a + sign * b, for motions of values whose sum is taken exactly.
  Motion sum(const Motion& a, const Motion& b, int sign) {
    if (a.kind == Motion::Erratic || b.kind == Motion::Erratic) return erratic();
    if (b.kind == Motion::Still) return a;
    if (a.kind == Motion::Still && sign > 0) return b;
    Motion m;
    m.kind = Motion::Moving;
    for (std::size_t f = 0; f < kFrames; ++f)
      if (__builtin_mul_overflow(b.slope[f], sign, &m.slope[f]) ||
          __builtin_add_overflow(a.slope[f], m.slope[f], &m.slope[f]))
        return erratic();
    if (a.rigid && b.rigid) {
      if (!(sign < 0 && a.id == b.id)) {  // the same D taken from itself leaves none
        const Span sa{a.lo, a.hi, a.bounded}, sb{b.lo, b.hi, b.bounded};
        m = rigid(std::gcd(a.grain, b.grain),
                  Span{sign > 0 ? sa.lo + sb.lo : sa.lo - sb.hi, sign > 0 ? sa.hi + sb.hi : sa.hi - sb.lo,
                       sa.bounded && sb.bounded},
                  m);
      }
    } else if (a.rigid) {
      m.rigid = true, m.bounded = a.bounded, m.id = a.id, m.grain = a.grain, m.lo = a.lo, m.hi = a.hi;
    } else if (b.rigid) {
      if (sign > 0)
        m.rigid = true, m.bounded = b.bounded, m.id = b.id, m.grain = b.grain, m.lo = b.lo, m.hi = b.hi;
      else
        m = rigid(b.grain, Span{-static_cast<__int128>(b.hi), -static_cast<__int128>(b.lo), b.bounded}, m);
    }
    return settle(m);
  }
  /// c * a.
  Motion scale(const Motion& a, std::int64_t c) {
    if (a.kind == Motion::Still || c == 0) return Motion{};
    if (c == 1 || a.kind == Motion::Erratic) return a;
    Motion m = a;
    for (auto& x : m.slope)
      if (__builtin_mul_overflow(x, c, &x)) return erratic();
    if (!a.rigid) return m;
    std::int64_t g = 0;
    if (__builtin_mul_overflow(a.grain, c < 0 ? -c : c, &g)) g = 1;
    const __int128 x = static_cast<__int128>(a.lo) * c, y = static_cast<__int128>(a.hi) * c;
    return rigid(g, Span{std::min(x, y), std::max(x, y), a.bounded}, m);
  }
  /// Whether every known lane of `x` holds one value in every execution: the same value now, moving
  /// the same in every lane.
  static bool uniform_always(const Lanes& x, Mask known) {
    if (x.mo.kind == Motion::Erratic) return false;
    if (x.uniform) return true;
    known &= x.known;
    if (!known) return true;
    const std::int64_t v = x.v[static_cast<std::size_t>(std::countr_zero(known))];
    bool same = true;
    each(known, [&](int i) { same = same && x.v[i] == v; });
    return same;
  }
  /// The one value of `x`'s known lanes in `known`, if they hold one and it does not move.
  static std::optional<std::int64_t> constant(const Lanes& x, Mask known) {
    if (x.mo.kind != Motion::Still || !(known & x.known)) return std::nullopt;
    if (!uniform_always(x, known)) return std::nullopt;
    return x.v[static_cast<std::size_t>(std::countr_zero(known & x.known))];
  }
  /// Whether every known lane of `r` (a value of type t) stays within t when moved by `m`.
  bool stays_in(ScalarType t, const Lanes& r, Mask known, const Motion& m) const {
    if (m.kind == Motion::Still) return true;
    const Span s = span(m);
    if (!s.bounded || !known) return s.bounded;
    const auto [lo, hi] = extremes(t, r, known);
    return lo + s.lo >= Range::of(t).lo && hi + s.hi <= Range::of(t).hi;
  }
  /// The smallest and largest exact value of `x`'s lanes in `known` (not empty), of type t.
  static std::pair<__int128, __int128> extremes(ScalarType t, const Lanes& x, Mask known) {
    if (t == ScalarType::U64) {
      __int128 lo = ir::exact(t, x.v[static_cast<std::size_t>(std::countr_zero(known))]), hi = lo;
      each(known, [&](int i) {
        const __int128 v = ir::exact(t, x.v[i]);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      });
      return {lo, hi};
    }
    // Every other type is held as its exact value (u32 zero-extended).
    std::int64_t lo = x.v[static_cast<std::size_t>(std::countr_zero(known))], hi = lo;
    if (known == kAll) {
      for (const auto v : x.v) lo = std::min(lo, v), hi = std::max(hi, v);
    } else {
      each(known, [&](int i) { lo = std::min(lo, x.v[i]), hi = std::max(hi, x.v[i]); });
    }
    return {lo, hi};
  }
  /// Whether every known lane of x (of type t), moved by m, keeps one sign (0 counting as either).
  bool one_sign(ScalarType t, const Lanes& x, Mask known, const Motion& m) const {
    const Span s = span(m);
    if (!s.bounded) return false;
    bool ok = true;
    each(known, [&](int i) {
      const __int128 v = ir::exact(t, x.v[i]);
      ok = ok && (v + s.lo >= 0 || v + s.hi <= 0);
    });
    return ok;
  }
  /// x / c (`quotient`) or x % c, c > 0, rounded down (`floor`: >> and a low mask) or toward zero (/
  /// and %), where x (a, of type t) moves. Exact in two cases: every move is a multiple of c (the
  /// quotient moves by D / c, the remainder stays); or the lanes lie in one block of g = gcd(c, the
  /// moves' grain) values, which they then never leave, so that the quotient is one value in every
  /// lane (moving as a monotone function of the lowest lane) and the remainder moves the same in
  /// every lane (a thread's row and column from its position, when no warp straddles a row).
  Motion divided(const Lanes& a, ScalarType t, Mask known, __int128 c, bool quotient, bool floor) {
    const Motion& m = a.mo;
    if (m.kind == Motion::Erratic || !(known & a.known)) return erratic();
    known &= a.known;
    const Span s = span(m);
    __int128 xm = 0, xM = 0;
    bool first = true;
    each(known, [&](int i) {
      const __int128 x = ir::exact(t, a.v[i]);
      xm = first ? x : std::min(xm, x);
      xM = first ? x : std::max(xM, x);
      first = false;
    });
    if (moves_by(m, static_cast<std::int64_t>(c)) && (floor || one_sign(t, a, known, m))) {
      if (!quotient) return Motion{};
      Motion r = m;
      for (auto& x : r.slope) x = static_cast<std::int64_t>(x / c);
      if (!m.rigid) return r;
      return rigid(static_cast<std::int64_t>(m.grain / c), Span{m.lo / c, m.hi / c, m.bounded}, r);
    }
    // Rounding toward zero is rounding down for values that never go below 0.
    if (!floor && !(s.bounded && xm + s.lo >= 0)) return uniform_always(a, known) ? loose() : erratic();
    auto fdiv = [](__int128 x, __int128 d) { return x >= 0 ? x / d : -((-x + d - 1) / d); };
    auto fmod = [&](__int128 x, __int128 d) { return x - fdiv(x, d) * d; };
    const __int128 g = gcd128(grain(m), c);
    if (fdiv(xm, g) != fdiv(xM, g)) return erratic();
    if (!s.bounded) return loose();
    const __int128 q = fdiv(xm, c), qlo = fdiv(xm + s.lo, c), qhi = fdiv(xm + s.hi, c);
    if (quotient) return rigid(1, Span{qlo - q, qhi - q, true});
    if (qlo == qhi) return m;  // one quotient throughout: the remainder moves with x
    return rigid(static_cast<std::int64_t>(g),
                 Span{fmod(xm, g) - fmod(xm, c), c - g + fmod(xm, g) - fmod(xm, c), true});
  }
  /// The motion of `r`, the result of integer operation `op` on `a` and `b` (operand type t), where
  /// one of them moves.
  Motion binary_motion(BinOp op, ScalarType t, ScalarType bt, const Lanes& a, const Lanes& b, const Lanes& r) {
    // Operands the same in every lane (r is then too) are checked in one lane.
    const Mask known = r.uniform ? Mask{1} : r.known;
    if (!known) return Motion{};
    auto fallback = [&] { return uniform_always(a, known) && uniform_always(b, known) ? loose() : erratic(); };
    // The result equals the exact operation in every lane (nothing wrapped here), and stays in t.
    auto exact_here = [&](auto&& f) {
      bool ok = true;
      if (t == ScalarType::I32 || t == ScalarType::U32) {  // exact in 64 bits
        each(known, [&](int i) { ok = ok && f(a.v[i], b.v[i]) == r.v[i]; });
        return ok;
      }
      each(known, [&](int i) { ok = ok && f(ir::exact(t, a.v[i]), ir::exact(t, b.v[i])) == ir::exact(t, r.v[i]); });
      return ok;
    };
    auto held = [&](const Motion& m, auto&& f) {
      return m.kind != Motion::Erratic && exact_here(f) && stays_in(t, r, known, m) ? m : fallback();
    };
    const auto ca = constant(a, known), cb = constant(b, known);
    switch (op) {
      case BinOp::Add: return held(sum(a.mo, b.mo, 1), [](__int128 x, __int128 y) { return x + y; });
      case BinOp::Sub: return held(sum(a.mo, b.mo, -1), [](__int128 x, __int128 y) { return x - y; });
      case BinOp::Mul:
        if (cb && ir::exact(t, *cb) <= INT64_MAX)
          return held(scale(a.mo, static_cast<std::int64_t>(ir::exact(t, *cb))),
                      [](__int128 x, __int128 y) { return x * y; });
        if (ca && ir::exact(t, *ca) <= INT64_MAX)
          return held(scale(b.mo, static_cast<std::int64_t>(ir::exact(t, *ca))),
                      [](__int128 x, __int128 y) { return x * y; });
        return fallback();
      case BinOp::Shl: {
        const std::int64_t s = cb ? shift_amount(bt, *cb) : -1;
        if (s < 0 || s >= 62) return fallback();
        return held(scale(a.mo, std::int64_t{1} << s),
                    [s](__int128 x, __int128) { return x * (static_cast<__int128>(1) << s); });
      }
      case BinOp::Div:
      case BinOp::Mod: {
        const __int128 c = cb ? ir::exact(t, *cb) : 0;
        if (c <= 0 || c > INT64_MAX) return fallback();
        return divided(a, t, known, c, op == BinOp::Div, false);
      }
      case BinOp::Shr: {
        const std::int64_t s = cb ? shift_amount(bt, *cb) : -1;
        if (s < 0 || s >= 62) return fallback();
        return divided(a, t, known, static_cast<__int128>(1) << s, true, true);
      }
      case BinOp::And: {  // the low bits below a mask stay when the moves are multiples above it
        const auto mask = cb ? cb : ca;
        const Lanes& other = cb ? a : b;
        if (!mask || *mask < 0 || *mask >= (std::int64_t{1} << 60)) return fallback();
        const auto above = static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(*mask) + 1));
        if (moves_by(other.mo, above)) return Motion{};
        if (above == *mask + 1) return divided(other, t, known, above, false, true);  // x & (2^k - 1): x mod 2^k
        return fallback();
      }
      case BinOp::Lt:
      case BinOp::Le:
      case BinOp::Gt:
      case BinOp::Ge:
      case BinOp::Eq:
      case BinOp::Ne:
      case BinOp::Min:
      case BinOp::Max: {
        // Decided in every lane over every execution when a - b keeps its side of 0 (or stays 0).
        const Motion d = sum(a.mo, b.mo, -1);
        const Span s = span(d);
        Mask a_side = 0;  // Min/Max: the lanes that take a
        bool decided = s.bounded;
        if (decided)
          each(known, [&](int i) {
            const __int128 x = ir::exact(t, a.v[i]) - ir::exact(t, b.v[i]), lo = x + s.lo, hi = x + s.hi;
            const bool lt = (hi < 0), ge = (lo >= 0), le = (hi <= 0), gt = (lo > 0), eq = (lo == 0 && hi == 0);
            switch (op) {
              case BinOp::Lt:
              case BinOp::Ge: decided = decided && (lt || ge); break;
              case BinOp::Le:
              case BinOp::Gt: decided = decided && (le || gt); break;
              case BinOp::Eq:
              case BinOp::Ne: decided = decided && (eq || lt || gt); break;
              case BinOp::Min:
                decided = decided && (le || ge);
                if (le) a_side |= Mask{1} << i;
                break;
              default:
                decided = decided && (le || ge);
                if (ge) a_side |= Mask{1} << i;
                break;
            }
          });
        if (op != BinOp::Min && op != BinOp::Max) return decided ? Motion{} : fallback();
        if (decided) {
          if (a_side == known) return a.mo;
          if (!a_side) return b.mo;
          if (same(a.mo, b.mo)) return a.mo;
        }
        if (!uniform_always(a, known) || !uniform_always(b, known)) return erratic();
        const Span sa = span(a.mo), sb = span(b.mo);
        if (!sa.bounded || !sb.bounded) return loose();
        const std::size_t i = static_cast<std::size_t>(std::countr_zero(known));
        const __int128 va = ir::exact(t, a.v[i]), vb = ir::exact(t, b.v[i]), vr = ir::exact(t, r.v[i]);
        auto pick = [&](__int128 x, __int128 y) { return op == BinOp::Min ? std::min(x, y) : std::max(x, y); };
        return rigid(1, Span{pick(va + sa.lo, vb + sb.lo) - vr, pick(va + sa.hi, vb + sb.hi) - vr, true});
      }
      case BinOp::LAnd:
      case BinOp::LOr: {
        const std::int64_t decides = op == BinOp::LAnd ? 0 : 1;
        for (const Lanes* x : {&a, &b}) {
          if (x->mo.kind != Motion::Still) continue;
          bool all = (known & ~x->known) == 0;
          each(known & x->known, [&](int i) { all = all && (x->v[i] != 0) == (decides != 0); });
          if (all) return Motion{};
        }
        return fallback();
      }
      default: return fallback();
    }
  }
  Motion cast_motion(ScalarType from, ScalarType to, const Lanes& a, const Lanes& r) {
    if (to == ScalarType::Bool) {  // x != 0
      const Span s = span(a.mo);
      bool decided = s.bounded;
      each(r.known, [&](int i) {
        const __int128 x = ir::exact(from, a.v[i]);
        decided = decided && (x + s.hi < 0 || x + s.lo > 0 || (x == 0 && s.lo == 0 && s.hi == 0));
      });
      return decided ? Motion{} : uniform_always(a, r.known) ? loose() : erratic();
    }
    // The exact value kept (a widening, or a narrowing of values that fit) keeps the motion.
    bool kept = stays_in(to, r, r.known, a.mo);
    each(r.known, [&](int i) { kept = kept && ir::exact(from, a.v[i]) == ir::exact(to, r.v[i]); });
    return kept ? a.mo : uniform_always(a, r.known) ? loose() : erratic();
  }
  /// Per lane, a's motion where `pick_a` has the lane and b's elsewhere.
  Motion chosen(const Lanes& a, const Lanes& b, Mask pick_a, Mask known) {
    if ((pick_a & known) == known) return a.mo;
    if (!(pick_a & known)) return b.mo;
    return same(a.mo, b.mo) ? a.mo : erratic();
  }

  // ------------------------------------------------------------------ expressions
  // Each `ev` returns the value of its node in the lanes of `m`: a reference to a variable's (or a
  // frame's) lanes where it is one, so that nothing is copied, or else to `out`, which it fills.
  const Lanes& eval(const ExprPtr& e, Mask m, Lanes& out) {
    if (!e) return unknown(out);
    if (!memoized(*e)) return dispatch(*e, [&](const auto& n) -> const Lanes& { return ev(n, m, out); });
    // The same operation on the same values again (an unrolled tile's guards and indices repeat
    // their row and column): found by its structure, the lanes are as computed before.
    std::size_t at = seen_slot(*e, m);
    if (seen_slots_[at].gen == seen_gen_) return out = seen_lanes_[seen_slots_[at].lanes];
    const std::uint64_t effects = effects_;
    const Lanes& r = dispatch(*e, [&](const auto& n) -> const Lanes& { return ev(n, m, out); });
    if (effects_ == effects && seen_lanes_.size() < kSeenSlots / 2) {
      at = seen_slot(*e, m);  // (the evaluation may have filled the slot found before)
      seen_slots_[at] = {e.get(), m, seen_gen_, static_cast<std::uint32_t>(seen_lanes_.size())};
      seen_lanes_.push_back(r);
    }
    return r;
  }
  /// The slot of (e, m) in `seen_slots_`: the one holding it, or the empty one where it would go.
  std::size_t seen_slot(const ExprNode& e, Mask m) const {
    std::size_t at = static_cast<std::size_t>(e.hash * 31 + m) & (kSeenSlots - 1);
    for (;; at = (at + 1) & (kSeenSlots - 1)) {
      const SeenSlot& s = seen_slots_[at];
      if (s.gen != seen_gen_ || (s.m == m && same_expression(*s.e, e))) return at;
    }
  }
  void forget_seen() {
    if (seen_lanes_.empty()) return;
    seen_lanes_.clear();
    if (++seen_gen_ == 0) {  // (after 2^32 forgettings: every slot's generation is stale again)
      for (auto& s : seen_slots_) s.gen = 0;
      seen_gen_ = 1;
    }
  }
  /// An integer operation, whose lanes `seen_` may keep.
  static bool memoized(const ExprNode& e) {
    switch (e.kind) {
      case ExprKind::Unary:
      case ExprKind::Binary:
      case ExprKind::Cast:
      case ExprKind::Select: return is_integral(e.type);
      default: return false;
    }
  }
  Lanes eval(const ExprPtr& e, Mask m) {
    Lanes out;
    const Lanes& r = eval(e, m, out);
    if (&r != &out) out = r;
    return out;
  }
  static const Lanes& unknown(Lanes& out) {
    out.known = 0;
    out.uniform = false;
    out.mo = Motion{};
    return out;
  }
  static const Lanes& all(Lanes& out, std::int64_t x, const Motion& mo = Motion{}) {
    out.v.fill(x);
    out.known = kAll;
    out.uniform = true;
    out.mo = mo;
    return out;
  }
  const Lanes& ev(const Literal& n, Mask, Lanes& out) { return is_integral(n.type) ? all(out, n.i) : unknown(out); }
  const Lanes& ev(const VarRef& n, Mask, Lanes& out) {
    auto it = vars_.find(n.var.get());
    return it != vars_.end() ? it->second : unknown(out);
  }
  const Lanes& ev(const Unary& n, Mask m, Lanes& out) {
    const Lanes& a = eval(n.a, m, out);
    if (!is_integral(n.type)) return unknown(out);
    // `a` may be `out`: its motion and values are read before they are written.
    Motion mo;
    if (a.mo.kind != Motion::Still) {
      if (n.op == UnOp::BitNot) {
        mo = scale(a.mo, -1);  // ~x is -x - 1 exactly, and never leaves the type
      } else if (n.op == UnOp::Neg) {
        mo = scale(a.mo, -1);
        bool ok = mo.kind != Motion::Erratic;
        each(m & a.known, [&](int i) { ok = ok && -ir::exact(n.type, a.v[i]) >= Range::of(n.type).lo; });
        Lanes r;
        r.known = m & a.known;
        each(r.known, [&](int i) { r.v[i] = eval_unary(n.op, n.type, a.v[i]); });
        if (!ok || !stays_in(n.type, r, r.known, mo)) mo = uniform_always(a, m) ? loose() : erratic();
      } else {
        mo = uniform_always(a, m) ? loose() : erratic();
      }
    }
    if (a.uniform) return all(out, eval_unary(n.op, n.type, a.v[0]), mo);
    const Mask known = m & a.known;
    each(known, [&](int i) { out.v[i] = eval_unary(n.op, n.type, a.v[i]); });
    out.known = known;
    out.uniform = false;
    out.mo = mo;
    return out;
  }
  const Lanes& ev(const Binary& n, Mask m, Lanes& out) {
    Lanes ta, tb;
    const Lanes &a = eval(n.a, m, ta), &b = eval(n.b, m, tb);
    const ScalarType t = n.a->type;
    if (!is_integral(t)) {
      if (is_float(n.type) && (n.op == BinOp::Add || n.op == BinOp::Sub || n.op == BinOp::Mul || n.op == BinOp::Div)) {
        flops_ += std::popcount(m) * weight_;
        ++effects_;
      }
      return unknown(out);
    }
    const bool shift = n.op == BinOp::Shl || n.op == BinOp::Shr;
    auto one = [&](std::int64_t x, std::int64_t y) {
      return binary_op(n.op, t, x, shift ? shift_amount(n.b->type, y) : y);
    };
    const bool still = a.mo.kind == Motion::Still && b.mo.kind == Motion::Still;
    if (a.uniform && b.uniform) {
      all(out, one(a.v[0], b.v[0]));
      if (!still) out.mo = binary_motion(n.op, t, n.b->type, a, b, out);
      return out;
    }
    out.known = m & a.known & b.known;
    out.uniform = false;
    if (!(out.known == kAll && lanewise(n.op, t, a, b, out))) {
      each(out.known, [&](int i) { out.v[i] = one(a.v[i], b.v[i]); });
      // A known false (or true) decides && (||) whatever the other side is.
      if (n.op == BinOp::LAnd || n.op == BinOp::LOr) {
        const std::int64_t decides = n.op == BinOp::LAnd ? 0 : 1;
        each(m & ~out.known, [&](int i) {
          if (((a.known >> i) & 1 && a.v[i] == decides) || ((b.known >> i) & 1 && b.v[i] == decides)) {
            out.v[i] = decides;
            out.known |= Mask{1} << i;
          }
        });
      }
    }
    out.mo = still ? Motion{} : binary_motion(n.op, t, n.b->type, a, b, out);
    return out;
  }
  /// A cast that leaves every value of `from` as it is held (eval_cast is the identity on it): a
  /// widening, or bool to an integer; not from u64, which is held as its bits.
  static bool keeps_values(ScalarType from, ScalarType to) {
    return from != ScalarType::U64 && to != ScalarType::Bool && Range::of(from).within(Range::of(to));
  }
  const Lanes& ev(const Cast& n, Mask m, Lanes& out) {
    const Lanes& a = eval(n.a, m, out);
    if (!is_integral(n.type) || !is_integral(n.a->type)) return unknown(out);
    if (a.mo.kind == Motion::Still) {  // `a` may be `out`: each lane is read before it is written
      if (a.uniform) return all(out, eval_cast(n.a->type, n.type, a.v[0]));
      const Mask known = m & a.known;
      if (keeps_values(n.a->type, n.type)) {
        if (&a != &out) out.v = a.v;
      } else {
        each(known, [&](int i) { out.v[i] = eval_cast(n.a->type, n.type, a.v[i]); });
      }
      out.known = known;
      out.uniform = false;
      out.mo = Motion{};
      return out;
    }
    Lanes r;
    r.known = a.uniform ? kAll : m & a.known;
    each(r.known, [&](int i) { r.v[i] = eval_cast(n.a->type, n.type, a.v[i]); });
    r.mo = cast_motion(n.a->type, n.type, a, r);
    r.uniform = a.uniform;
    out = r;  // `a` may be `out`: read above
    return out;
  }
  const Lanes& ev(const Select& n, Mask m, Lanes& out) {
    Lanes tc, ta, tb;
    const Lanes &c = eval(n.c, m, tc), &a = eval(n.a, m, ta), &b = eval(n.b, m, tb);
    out.known = 0;
    out.uniform = false;
    Mask pick_a = 0;
    each(m & c.known, [&](int i) {
      const Lanes& pick = c.v[i] ? a : b;
      if (c.v[i]) pick_a |= Mask{1} << i;
      if ((pick.known >> i) & 1) {
        out.v[i] = pick.v[i];
        out.known |= Mask{1} << i;
      }
    });
    if (c.mo.kind == Motion::Still)
      out.mo = chosen(a, b, pick_a, out.known);
    else
      out.mo = uniform_always(c, m) && uniform_always(a, m) && uniform_always(b, m) ? loose() : erratic();
    return out;
  }
  const Lanes& ev(const MathCall& n, Mask m, Lanes& out) {
    if (is_integral(n.type) && !n.args.empty()) {  // abs or a bit function
      const Lanes& x = eval(n.args[0], m, out);
      const Mask known = m & x.known;
      const ScalarType xt = n.args[0]->type;
      Motion mo;
      if (x.mo.kind != Motion::Still) {
        // abs of values that keep one sign is the value or its negation; anything else gives up.
        const bool keeps = !is_bit_fn(n.fn) && one_sign(xt, x, known, x.mo);
        bool negative = false;
        each(known, [&](int i) { negative = negative || ir::exact(xt, x.v[i]) < 0; });
        mo = keeps && (!negative || is_signed(xt)) ? (negative ? scale(x.mo, -1) : x.mo)
             : uniform_always(x, m)                ? loose()
                                                   : erratic();
      }
      each(known, [&](int i) {
        out.v[i] = is_bit_fn(n.fn)                   ? eval_bits(n.fn, xt, x.v[i])
                   : is_signed(n.type) && x.v[i] < 0 ? eval_unary(UnOp::Neg, n.type, x.v[i])
                                                     : x.v[i];
      });
      out.known = known;
      out.uniform = false;
      out.mo = mo;
      if (mo.kind != Motion::Still && mo.kind != Motion::Erratic && !stays_in(n.type, out, known, mo))
        out.mo = uniform_always(x, m) ? loose() : erratic();  // abs(MIN) wraps
      return out;
    }
    for (const auto& a : n.args) eval(a, m, out);
    flops_ += std::popcount(m) * weight_ * (n.fn == MathFn::Fma ? 2 : 1);
    ++effects_;
    return unknown(out);
  }
  const Lanes& ev(const Id&, Mask, Lanes&) { throw InternalError("cost: an id() in lowered IR"); }
  const Lanes& ev(const Builtin& n, Mask, Lanes& out) {
    switch (n.which) {
      case BuiltinKind::ThreadInBlock: return frames_.back().tid;
      case BuiltinKind::BlockInGrid: return frames_.back().bid;
      case BuiltinKind::BlocksInGrid: return all(out, opt_.blocks);
    }
    return unknown(out);
  }
  const Lanes& ev(const Load& n, Mask m, Lanes& out) {
    Lanes ti;
    const Lanes& idx = eval(n.indices[0], m, ti);
    if (n.bound) eval(n.bound, m, out);
    access(&n, n.mem.get(), idx, m, false, type_bytes(n.mem->elem), n.loc);
    return unknown(out);
  }

  // ------------------------------------------------------------------ statements
  void step() {
    work_ += weight_;
    if (looping_) looped_ += weight_;
    interval_steps_.back() += weight_;
  }
  /// Inside a loop's body while it lives (its steps are counted as looped).
  struct InLoop {
    explicit InLoop(int& depth) : depth_(depth) { ++depth_; }
    ~InLoop() { --depth_; }
    InLoop(const InLoop&) = delete;
    InLoop& operator=(const InLoop&) = delete;
    int& depth_;
  };
  void exec(const StmtPtr& s, Mask m) {
    if (!s || !(m &= ~frames_.back().returned)) return;
    if (!loops_.empty()) m &= ~loops_.back().off;
    if (!m) return;
    dispatch(*s, [&](const auto& n) { st(n, m); });
  }
  void st(const Seq& n, Mask m) {
    for (const auto& c : n.stmts) exec(c, m);
  }
  void set(const VarNode* v, const Lanes& x, Mask m) {
    forget_seen();  // (x is never one of its lanes: eval copies them out)
    Lanes& cur = vars_[v];
    if (m == kAll) {  // every lane replaced: known, unknown, uniform and moving as in x
      cur = x;
      return;
    }
    // Lanes outside m keep their values, and their motion must be x's for the two to be one.
    const bool others = (cur.known & ~m) != 0;
    each(m & x.known, [&](int i) { cur.v[i] = x.v[i]; });
    cur.known = (cur.known & ~m) | (x.known & m);
    cur.uniform = false;
    if (!others)
      cur.mo = x.mo;
    else if (x.known & m && !same(cur.mo, x.mo))
      cur.mo = erratic();
  }
  void st(const Let& n, Mask m) {
    step();
    Lanes t;
    set(n.var.get(), eval(n.value, m, t), m);
  }
  void st(const Assign& n, Mask m) {
    step();
    Lanes t;
    set(n.var.get(), eval(n.value, m, t), m);
  }
  void st(const Store& n, Mask m) {
    step();
    Lanes ti, t;
    const Lanes& idx = eval(n.indices[0], m, ti);
    eval(n.value, m, t);
    if (n.bound) eval(n.bound, m, t);
    access(&n, n.mem.get(), idx, m, true, type_bytes(n.mem->elem), n.loc);
  }
  BranchSite& branch(const StmtNode* node, const char* what, SourceLoc loc) {
    auto [it, fresh] = branches_.try_emplace(node);
    if (fresh) {
      it->second.order = next_order_++;
      it->second.c.loc = loc;
      it->second.c.what = what;
    }
    return it->second;
  }
  /// A decision `s` makes (its condition, or a loop's trip count) may differ between the executions
  /// being counted from this one (`guessed`: the lanes where it was guessed from loaded data, and
  /// followed both ways). Everything `s` holds is then an estimate, and what it writes moves
  /// erratically (is unknown in the guessed lanes). A break, continue or return inside changes what
  /// runs after `s` too: the loop, function or kernel around it becomes an estimate as well.
  void unsettled(const StmtNode& s, Mask guessed) {
    exact_ = false;
    const Contents& c = contents(s);
    taint(s, guessed);
    if (c.jumps && !loop_stmts_.empty()) taint(*loop_stmts_.back(), guessed);
    if (c.returns || (c.jumps && loop_stmts_.empty())) taint(*bodies_.back(), guessed);
  }
  void taint(const StmtNode& s, Mask guessed) {
    const Contents& c = contents(s);
    if (tainted_stmts_.try_emplace(&s, next_order_++).second) {
      for (const AccessAt& a : c.accesses) tainted_.insert(a.node);
      tainted_.insert(c.branches.begin(), c.branches.end());
    }
    forget_seen();
    for (const VarNode* v : c.written) {
      auto it = vars_.find(v);
      if (it == vars_.end()) continue;
      it->second.mo = erratic();
      it->second.known &= ~guessed;
      if (guessed) it->second.uniform = false;
    }
  }
  const Contents& contents(const StmtNode& s) {
    auto it = contents_.find(&s);
    if (it == contents_.end()) it = contents_.emplace(&s, contents_of(s)).first;
    return it->second;
  }
  /// Whether the executions being counted from this one all take the same decision.
  static bool settled(const Lanes& cond) { return cond.mo.kind == Motion::Still; }

  void st(const If& n, Mask m) {
    step();
    Lanes t;
    const Lanes& c = eval(n.cond, m, t);
    Mask unknown = m & ~c.known, yes = m & c.known, no = 0;
    each(yes, [&](int i) {
      if (!c.v[i]) no |= Mask{1} << i;
    });
    yes &= ~no;
    const bool variant = !reps_.empty() && !settled(c);
    BranchSite& b = branch(&n, "if", n.loc);
    b.exec += weight_;
    if (unknown) {
      // A condition on loaded data: both sides are followed for those lanes, and the split is a guess.
      b.inexact = true;
      exact_ = false;
      yes |= unknown;
      no |= unknown;
    }
    if (yes && no) b.div += weight_;
    if (yes) exec(n.then_body, yes);
    if (no && n.else_body) exec(n.else_body, no);
    if (unknown || variant) unsettled(n, unknown);
  }
  struct LoopState {
    Mask off = 0;     ///< lanes that left the loop (break) or this iteration (continue)
    Mask broken = 0;  ///< lanes that left the loop
  };
  /// Iterations from `x` = end - begin with step `s` (exact values).
  static __int128 trips_of(__int128 x, __int128 s) {
    if (s > 0 && x > 0) return (x + s - 1) / s;
    if (s < 0 && x < 0) return (-x + (-s) - 1) / (-s);
    return 0;
  }
  /// Whether every execution being counted from this one runs the loop the same number of times.
  bool trips_settled(const For& n, const Lanes& b, const Lanes& e, const Lanes& s, Mask m) {
    if (s.mo.kind != Motion::Still) return false;
    const Motion d = sum(e.mo, b.mo, -1);
    if (d.kind == Motion::Still) return true;
    const Span sp = span(d);
    if (!sp.bounded) return false;
    bool ok = true;
    const ScalarType t = n.var->type;
    each(m, [&](int i) {
      const __int128 x = ir::exact(t, e.v[i]) - ir::exact(t, b.v[i]), st = ir::exact(n.step->type, s.v[i]);
      ok = ok && trips_of(x + sp.lo, st) == trips_of(x + sp.hi, st);
    });
    return ok;
  }
  void st(const For& n, Mask m) {
    step();
    Lanes b = eval(n.begin, m), e = eval(n.end, m), s = eval(n.step, m);
    BranchSite& br = branch(&n, "for", n.loc);
    const ScalarType t = n.var->type;
    const Mask known = m & b.known & e.known & s.known;
    const InLoop in_loop(looping_);
    loop_stmts_.push_back(&n);
    loops_.push_back({});
    if (known != m) {  // bounds from loaded data: one iteration, a guess
      br.inexact = true;
      br.exec += weight_;
      Lanes v = b;
      v.known = m & b.known;
      v.uniform = false;
      set(n.var.get(), v, m);
      exec(n.body, m);
      loops_.pop_back();
      loop_stmts_.pop_back();
      unsettled(n, m);
      return;
    }
    const bool variant = !reps_.empty() && !trips_settled(n, b, e, s, m);
    // Trip counts per lane.
    std::array<std::int64_t, kLanes> trips{};
    std::int64_t most = 0, least = INT64_MAX;
    each(m, [&](int i) {
      const __int128 c = trips_of(ir::exact(t, e.v[i]) - ir::exact(t, b.v[i]), ir::exact(n.step->type, s.v[i]));
      trips[i] = c > INT32_MAX ? INT32_MAX : static_cast<std::int64_t>(c);
      most = std::max(most, trips[i]);
      least = std::min(least, trips[i]);
    });
    // The counter moves as the begin does (the step is settled, or nothing is).
    const Motion counter = s.mo.kind == Motion::Still ? b.mo : erratic();
    auto value_at = [&](std::int64_t k, Mask active, const Motion& mo) {
      Lanes v;
      each(active, [&](int i) {
        v.v[i] = wrap(t, ir::exact(t, b.v[i]) + static_cast<__int128>(k) * ir::exact(n.step->type, s.v[i]));
      });
      v.known = active;
      v.mo = mo;
      return v;
    };
    auto active_at = [&](std::int64_t k) {
      Mask a = 0;
      each(m, [&](int i) {
        if (trips[i] > k) a |= Mask{1} << i;
      });
      return a;
    };
    if (most <= opt_.max_iterations || most != least) {
      // Followed iteration by iteration: evaluation k of the condition is made by the lanes still in
      // the loop, and splits the warp when some go on and some leave.
      const std::int64_t limit = 4 * opt_.max_iterations;
      for (std::int64_t k = 0;; ++k) {
        const Mask in = active_at(k - 1) & ~loops_.back().broken & ~frames_.back().returned;
        if (!in) break;
        const Mask go = in & active_at(k);
        br.exec += weight_;
        if (go && go != in) br.div += weight_;
        if (!go) break;
        if (k == limit) {  // a divergent loop longer than that: the rest is not followed
          br.inexact = true;
          unsettled(n, 0);
          forget(contents(n));
          break;
        }
        loops_.back().off = loops_.back().broken;
        set(n.var.get(), value_at(k, go, counter), go);
        exec(n.body, go);
      }
    } else {
      // Uniform and long: the first iteration, the second standing for all but the first and last
      // (a representative: the counter moves by the step from it), and the last. What the body
      // writes is not followed across the skipped iterations: it is unknown in the last.
      const double saved = weight_;
      br.exec += saved * static_cast<double>(most + 1);
      std::optional<std::int64_t> st;
      if (s.uniform || uniform_always(s, m)) st = s.v[static_cast<std::size_t>(std::countr_zero(m))];
      for (int p = 0; p < 3; ++p) {
        const Mask a = m & ~loops_.back().broken & ~frames_.back().returned;
        if (a != m) break;  // lanes left it early: which iteration the others stand for is a guess
        loops_.back().off = loops_.back().broken;
        if (p == 1) {
          weight_ = saved * static_cast<double>(most - 2);
          Motion mo = counter;
          const bool tracked = reps_.size() < kFrames && st && counter.kind != Motion::Erratic;
          if (tracked) {
            reps_.push_back({0, most - 3});
            mo = sum(counter, frame_slope(reps_.size() - 1, ir::exact(n.step->type, *st)), 1);
          }
          set(n.var.get(), value_at(1, a, mo), a);
          exec(n.body, a);
          if (tracked) reps_.pop_back();
          if (!tracked) unsettled(*n.body, 0);  // nothing says how the iterations it stands for move
          forget(contents(*n.body));
          weight_ = saved;
        } else {
          set(n.var.get(), value_at(p == 0 ? 0 : most - 1, a, counter), a);
          exec(n.body, a);
        }
      }
      if (m & (loops_.back().broken | frames_.back().returned)) {  // left by a break or a return
        br.inexact = true;
        unsettled(n, 0);
        forget(contents(n));
      }
    }
    loops_.pop_back();
    loop_stmts_.pop_back();
    if (variant) unsettled(n, 0);
  }
  /// The motion of a loop's counter in frame f alone: `step` per iteration.
  Motion frame_slope(std::size_t f, __int128 step) {
    if (step > INT64_MAX || step < INT64_MIN) return erratic();
    Motion m;
    m.kind = Motion::Moving;
    m.slope[f] = static_cast<std::int64_t>(step);
    return settle(m);
  }
  /// What a representative iteration wrote is not what the iterations after it see: unknown.
  void forget(const Contents& c) {
    forget_seen();
    for (const VarNode* v : c.written) {
      auto it = vars_.find(v);
      if (it == vars_.end()) continue;
      it->second.known = 0;
      it->second.uniform = false;
      it->second.mo = Motion{};
    }
  }
  void st(const While& n, Mask m) {
    step();
    BranchSite& br = branch(&n, "while", n.loc);
    const InLoop in_loop(looping_);
    loop_stmts_.push_back(&n);
    loops_.push_back({});
    Mask a = m, guessed = 0;
    bool variant = false;
    for (int k = 0; a; ++k) {
      if (k >= 4 * opt_.max_iterations) {  // the rest is not followed
        br.inexact = true;
        unsettled(n, 0);
        forget(contents(n));
        break;
      }
      Lanes t;
      const Lanes& c = eval(n.cond, a, t);
      br.exec += weight_;
      Mask go = 0;
      each(a & c.known, [&](int i) {
        if (c.v[i]) go |= Mask{1} << i;
      });
      if (a & ~c.known) {  // a condition on loaded data: one more round for those lanes, then out
        br.inexact = true;
        guessed |= a & ~c.known;
        if (k == 0) go |= a & ~c.known;
      } else if (!reps_.empty() && !settled(c)) {
        variant = true;
      }
      if (go && go != a) br.div += weight_;
      a = go & ~loops_.back().broken;
      if (!a) break;
      loops_.back().off = loops_.back().broken;
      exec(n.body, a);
      a &= ~frames_.back().returned;
    }
    loops_.pop_back();
    loop_stmts_.pop_back();
    if (guessed || variant) unsettled(n, guessed);
  }
  void st(const Jump& n, Mask m) {
    step();
    if (loops_.empty()) return;
    loops_.back().off |= m;
    if (n.is_break) loops_.back().broken |= m;
  }
  void st(const Return& n, Mask m) {
    step();
    Lanes t;
    if (n.value) eval(n.value, m, t);
    frames_.back().returned |= m;
  }
  void st(const ir::Barrier& n, Mask) {
    step();
    if (n.how != BarrierKind::Block) return;
    barriers_ += weight_;
    interval_steps_.push_back(0.0);
  }
  void st(const VectorCopy& n, Mask m) {
    step();
    Lanes si = eval(n.src_index, m), di = eval(n.dst_index, m);
    const int bytes = static_cast<int>(n.count * type_bytes(n.src->elem));
    access(&n, n.src.get(), si, m, false, bytes, n.loc, 0);
    access(&n, n.dst.get(), di, m, true, bytes, n.loc, 1);
  }
  void st(const Intrinsic& n, Mask m) {
    step();
    if (info(n.op).exchanges_lanes) exchanges_ += weight_;
    std::vector<Lanes> args;
    for (const auto& a : n.args) args.push_back(eval(a, m));
    for (const auto& o : n.outputs) set(o.get(), shuffle(n, args, m), m);
    switch (n.op) {
      case IntrinsicOp::Atomic:
        access(&n, n.mems[0].get(), args[0], m, true, type_bytes(n.mems[0]->elem), n.loc);
        break;
      case IntrinsicOp::CpAsync: {
        const int bytes = static_cast<int>(n.imms[0]);
        async_.insert(&n);
        access(&n, n.mems[1].get(), args[1], m, false, bytes, n.loc, 0);
        access(&n, n.mems[0].get(), args[0], m, true, bytes, n.loc, 1);
        break;
      }
      default: break;
    }
  }
  /// A shuffle's result where its operands are known integers; unknown otherwise. Lanes that read
  /// other lanes' values move as those do when every lane moves the same and the lanes read stay.
  Lanes shuffle(const Intrinsic& n, const std::vector<Lanes>& a, Mask m) {
    Lanes r;
    if (a.size() < 2 || n.outputs.empty() || !is_integral(n.outputs[0]->type)) return r;
    each(m & a[1].known, [&](int i) {
      std::int64_t src = -1, d = a[1].v[i];
      switch (n.op) {
        case IntrinsicOp::ShflXor: src = i ^ (d & 31); break;
        case IntrinsicOp::ShflDown: src = d >= 0 && d < kLanes && i + d < kLanes ? i + d : i; break;
        case IntrinsicOp::ShflUp: src = d >= 0 && d < kLanes && i - d >= 0 ? i - d : i; break;
        case IntrinsicOp::ShflIdx: src = d & 31; break;
        default: return;
      }
      if ((a[0].known >> src) & 1) {
        r.v[i] = a[0].v[static_cast<std::size_t>(src)];
        r.known |= Mask{1} << i;
      }
    });
    if (a[0].mo.kind == Motion::Still && a[1].mo.kind == Motion::Still) return r;
    r.mo = a[1].mo.kind == Motion::Still && a[0].mo.kind != Motion::Erratic ? a[0].mo
           : uniform_always(a[0], m)                                        ? a[0].mo
                                                                            : erratic();
    return r;
  }
  void st(const Call& n, Mask m) {
    step();
    const FunctionNode& f = *n.fn;
    const std::size_t user = n.args.size() - lower::kAbiArgs;
    Frame fr;
    fr.tid = eval(n.args[user].value, m);
    fr.bid = eval(n.args[user + 1].value, m);
    Lanes smem = eval(n.args[user + 2].value, m);
    std::int64_t off = (smem.known & m) ? smem.v[static_cast<std::size_t>(std::countr_zero(m & smem.known))] : -1;
    fr.smem = off >= 0 ? frames_.back().smem + off : frames_.back().smem;
    // Where its shared memory starts is followed as one number: one that moves makes it an estimate.
    if (smem.mo.kind != Motion::Still || !uniform_always(smem, m)) unsettled(n, 0);
    std::vector<std::pair<const VarNode*, Lanes>> binds;
    for (std::size_t i = 0; i < user && i < f.params.size(); ++i) {
      const auto& a = n.args[i];
      const ParamNode& p = f.params[i];
      if (a.mem) {
        MemRef r = resolve(a.mem.get());
        Lanes o = eval(a.value, m);
        r.offset.known &= o.known & m;
        each(r.offset.known, [&](int k) { r.offset.v[k] += o.v[k]; });
        r.offset.uniform = r.offset.uniform && o.uniform;
        r.offset.mo = sum(r.offset.mo, o.mo, 1);
        fr.mems[p.mem.get()] = r;
      } else if (p.var) {
        binds.emplace_back(p.var.get(), eval(a.value, m));
      }
    }
    for (const auto& [v, x] : binds) set(v, x, m);
    std::vector<LoopState> saved_loops;
    std::vector<const StmtNode*> saved_loop_stmts;
    std::swap(saved_loops, loops_);
    std::swap(saved_loop_stmts, loop_stmts_);
    forget_seen();  // another thread and block index, another frame
    frames_.push_back(std::move(fr));
    bodies_.push_back(f.body.get());
    exec(f.body, m);
    bodies_.pop_back();
    frames_.pop_back();
    forget_seen();
    std::swap(saved_loops, loops_);
    std::swap(saved_loop_stmts, loop_stmts_);
    if (n.result) set(n.result.get(), Lanes{}, m);
  }
  template <class N>
  void st(const N&, Mask) {
    step();  // allocations, unsafe blocks; the rest does not reach lowered IR
  }

  // ------------------------------------------------------------------ accesses
  MemRef resolve(const MemNode* m) const {
    const auto& mems = frames_.back().mems;
    auto it = mems.find(m);
    if (it != mems.end()) return it->second;
    return MemRef{m, Lanes::all(0)};
  }

  using Measure = RequestCost;

  void access(const void* node, const MemNode* mem, const Lanes& idx, Mask m, bool write, int bytes, SourceLoc loc,
              int part = 0) {
    ++effects_;
    MemRef r = resolve(mem);
    const MemNode* root = r.root;
    if (root->space == MemSpace::Local || !m) return;
    auto [it, fresh] = sites_.try_emplace(std::make_pair(node, part));
    Site& s = it->second;
    if (fresh) {
      s.order = next_order_++;
      s.c.loc = loc;
      s.c.memory = root->name;
      s.c.space = root->space;
      s.c.write = write;
      s.c.bytes = bytes;
    }
    const Mask known = m & idx.known & r.offset.known;
    if (known != m) {  // an index from loaded data: the lanes that have one are measured, a guess
      s.inexact = true;
      exact_ = false;
    }
    if (!known) {  // the request is made; what it costs, a guess: its bytes, contiguous
      s.weight += weight_;
      s.lanes += weight_ * std::popcount(m);
      const double guess =
          root->space == MemSpace::Global ? std::ceil(std::popcount(m) * bytes / 32.0) : std::max(1, bytes / 4);
      s.metric += weight_ * guess;
      s.ideal += weight_ * guess;
      return;
    }
    const bool global = root->space == MemSpace::Global;
    const std::int64_t eb = type_bytes(root->elem);
    std::array<std::int64_t, kLanes> addr{};
    std::int64_t base = 0;
    if (!global) {
      auto off = l_.shared_offsets.find(root);
      base = frames_.back().smem + (off != l_.shared_offsets.end() ? off->second : 0);
    }
    // In 128 bits, then held to +-2^60: an index far outside any buffer still has a definite address.
    each(known, [&](int i) {
      const __int128 a = base + (static_cast<__int128>(idx.v[i]) + r.offset.v[i]) * eb;
      const __int128 lim = static_cast<__int128>(1) << 60;
      addr[i] = static_cast<std::int64_t>(a > lim ? lim : a < -lim ? -lim : a);
    });
    const Measure here = request_cost(addr, known, bytes, global);
    if (s.weight == 0 && std::popcount(known) > 1) {
      const int i0 = std::countr_zero(known), i1 = std::countr_zero(known & (known - 1));
      const std::int64_t d = (addr[i1] - addr[i0]) / (i1 - i0);
      bool even = (addr[i1] - addr[i0]) % (i1 - i0) == 0;
      each(known, [&](int i) { even = even && addr[i] - addr[i0] == d * (i - i0); });
      s.strided = even;
      s.stride = d;
    }
    s.weight += weight_;
    s.lanes += weight_ * std::popcount(known);
    s.ways = std::max(s.ways, here.ways);
    // This request stands for every execution of the representatives being followed, whose
    // addresses are this one's moved by the same D in every lane (or the cost is a guess). A cost
    // repeats when D moves by its period (a sector, a bank's word), so it is counted by D's residue:
    // the slopes' residues are counted exactly over the frames' steps; a rigid part (a multiple of
    // its grain, nothing more known) is exact only where every residue it may add costs the same.
    const std::int64_t period = ir::period(global);
    const Motion mo = scale(sum(idx.mo, r.offset.mo, 1), eb);
    if (reps_.empty() || moves_by(mo, period)) {
      s.metric += weight_ * here.metric;
      s.ideal += weight_ * here.ideal;
      return;
    }
    if (mo.kind != Motion::Moving) {
      s.metric += weight_ * here.metric;
      s.ideal += weight_ * here.ideal;
      s.inexact = true;
      exact_ = false;
      return;
    }
    std::array<double, 32> dist{};  // executions by the residue of their slopes' move
    dist[0] = 1;
    for (std::size_t f = 0; f < reps_.size(); ++f) {
      const std::int64_t count = reps_[f].hi - reps_[f].lo + 1;
      const std::int64_t step = ((mo.slope[f] % period) + period) % period;
      std::array<double, 32> next{};
      if (step == 0) {
        for (std::int64_t q = 0; q < period; ++q) next[q] = dist[q] * static_cast<double>(count);
      } else {
        std::array<double, 32> h{};  // this frame's moves by residue: P consecutive steps cover them
        for (std::int64_t j = 0; j < std::min<std::int64_t>(count, period); ++j) {
          const std::int64_t d = reps_[f].lo + j;
          const std::int64_t q = ((step * (((d % period) + period) % period)) % period);
          h[static_cast<std::size_t>(q)] += static_cast<double>((count - 1 - j) / period + 1);
        }
        for (std::int64_t x = 0; x < period; ++x)
          if (dist[x] != 0)
            for (std::int64_t y = 0; y < period; ++y) next[(x + y) % period] += dist[x] * h[y];
      }
      dist = next;
    }
    const std::int64_t rigid_step = mo.rigid ? std::gcd(mo.grain, period) : period;
    auto moved_cost = [&](std::int64_t q) {
      std::array<std::int64_t, kLanes> moved = addr;
      each(known, [&](int i) { moved[i] += q; });
      return request_cost(moved, known, bytes, global);
    };
    for (std::int64_t q = 0; q < period; ++q) {
      if (dist[q] == 0) continue;
      const Measure c = q == 0 ? here : moved_cost(q);
      for (std::int64_t k = rigid_step; k < period; k += rigid_step)
        if (moved_cost((q + k) % period).metric != c.metric) {
          s.inexact = true;
          exact_ = false;
        }
      s.metric += dist[q] * c.metric;
      s.ideal += dist[q] * c.ideal;
      s.ways = std::max(s.ways, c.ways);
    }
  }

  std::string hint(const AccessCost& c, const Site& s) const {
    auto num = [](double x) {
      char b[32];
      std::snprintf(b, sizeof b, "%.3g", x);
      return std::string(b);
    };
    const std::int64_t eb = std::max(1, c.bytes);
    if (c.space == MemSpace::Global) {
      if (c.sectors <= c.ideal_sectors + 1e-9) return "";
      const std::string cost = num(c.sectors) + " sectors per request where " + num(c.ideal_sectors) + " would do";
      if (s.strided && s.stride == eb)
        return cost +
               ": the warp's elements are contiguous but do not start on a 32-byte boundary (align the first element, "
               "or the rows, to 8 floats)";
      if (s.strided && std::llabs(s.stride) > eb)
        return "stride " + std::to_string(s.stride / eb) + " elements: " + cost +
               "; make consecutive threads touch consecutive elements (transpose through shared memory)";
      return cost +
             ": the lanes' addresses are scattered or cross rows; make consecutive threads touch consecutive elements";
    }
    if (c.conflict_ways <= 1 || c.wavefronts <= c.ideal_wavefronts + 1e-9) return "";
    const std::string cost = std::to_string(c.conflict_ways) + "-way bank conflict (" + num(c.wavefronts) +
                             " wavefronts per request where " + num(c.ideal_wavefronts) + " would do)";
    if (s.strided && s.stride % 4 == 0) {
      const std::int64_t words = std::llabs(s.stride) / 4;
      if (words % 32 == 0)
        return cost + ": lanes " + std::to_string(words) + " words apart hit one bank; pad the row to " +
               std::to_string(words + 1);
      return cost + ": lanes " + std::to_string(words) +
             " words apart share banks; give consecutive lanes consecutive words (sequential addressing)";
    }
    return cost + ": spread the lanes' words over the 32 banks (pad rows by one element)";
  }

  const lower::Lowered& l_;
  Options opt_;
  std::int64_t T_;
  std::unordered_map<const VarNode*, std::int64_t> params_;
  std::vector<std::int64_t> lengths_;  ///< per user parameter: its value (a pointer's length)
  std::unordered_map<const VarNode*, Lanes> vars_;
  /// Lanes of integer operations computed since the variables and the frame last changed, by their
  /// structure (ir::same_expression) and mask; none of those whose evaluation counted anything
  /// (`effects_`). An open-addressed table whose slots hold the generation they were filled in:
  /// forgetting them all is a new generation, and their lanes are in `seen_lanes_` (at most half
  /// as many as slots).
  struct SeenSlot {
    const ExprNode* e = nullptr;
    Mask m = 0;
    std::uint32_t gen = 0, lanes = 0;
  };
  static constexpr std::size_t kSeenSlots = 4096;  // a power of two
  std::vector<SeenSlot> seen_slots_ = std::vector<SeenSlot>(kSeenSlots);
  std::vector<Lanes> seen_lanes_;
  std::uint32_t seen_gen_ = 1;
  std::uint64_t effects_ = 0;  ///< accesses and flops counted so far
  std::vector<Frame> frames_;
  std::vector<LoopState> loops_;
  std::vector<const StmtNode*> loop_stmts_;  ///< the loops around the statement followed, innermost last
  std::vector<const StmtNode*> bodies_;      ///< the kernel's body and the functions called, innermost last
  const bool whole_;                         ///< past max_blocks, the middle block stands for every block
  std::vector<Rep> reps_;                    ///< the representatives being followed (frame f is reps_[f])
  std::map<std::pair<const void*, int>, Site> sites_;
  std::map<const StmtNode*, BranchSite> branches_;
  std::unordered_map<const StmtNode*, Contents> contents_;
  std::unordered_set<const void*> tainted_;                   ///< accesses and branches whose numbers are estimates
  std::unordered_set<const void*> mergeable_;                 ///< shared loads the compiler may merge (mergeable_loads)
  std::unordered_set<const void*> async_;                     ///< cp.async copies
  std::unordered_map<const StmtNode*, Order> tainted_stmts_;  ///< tainted statements, first when
  std::vector<double> interval_steps_;
  double weight_ = 1, flops_ = 0, work_ = 0, looped_ = 0, exchanges_ = 0, barriers_ = 0;
  int looping_ = 0;  ///< loops around the statement followed (through calls too)
  Order next_order_ = 0;
  std::uint32_t next_id_ = 0;
  bool exact_ = true;
};

}  // namespace

CostReport analyze(const lower::Lowered& lowered, std::span<const std::int64_t> values, const Options& options) {
  if (options.blocks < 1) throw InternalError("cost: a launch has at least one block");
  // Past max_blocks, the middle block is first followed for every block: where the first and last
  // block cost what it does, that is the whole report, in a third of the time. Where it is not all
  // exact and an estimate may come of the edge blocks, they are followed apart instead. Either way
  // every number called exact is (the representative's moves are checked over the blocks it stands
  // for).
  if (options.blocks > options.max_blocks) {
    Analyzer whole(lowered, values, options, true);
    CostReport r = whole.run();
    if (r.exact || !whole.block_sensitive()) return r;
  }
  return Analyzer(lowered, values, options).run();
}

}  // namespace vantage::cost
