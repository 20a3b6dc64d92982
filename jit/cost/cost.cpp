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
#include <set>
#include <unordered_map>

#include "jit/ir/eval.h"
#include "jit/ir/request_cost.h"

namespace vantage::cost {
namespace {

using namespace ir;

constexpr int kLanes = 32;
using Mask = std::uint32_t;
constexpr Mask kAll = 0xffffffffu;

bool integral(ScalarType t) { return is_integer(t) || t == ScalarType::Bool; }

/// A value in each lane of a warp; `known` marks the lanes whose value the analysis knows (integers
/// and bools computed from the launch's numbers; never a loaded value).
struct Lanes {
  // Left uninitialised (this is the analysis' inner loop): a lane's value is read only where `known`
  // has its bit, and every write sets the bit.
  std::array<std::int64_t, kLanes> v;
  Mask known = 0;
  bool uniform = false;  ///< every lane holds v[0] (and every lane is known)
  Lanes() {}             // NOLINT: user-provided, so that Lanes{} does not zero v
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
      for (int i = 0; i < kLanes; ++i) {
        const I q = (a.v[i] + ((a.v[i] >> 63) & (d - 1))) >> k;
        r.v[i] = div ? q : a.v[i] - q * d;
      }
    } else {
      for (int i = 0; i < kLanes; ++i) r.v[i] = div ? a.v[i] / d : a.v[i] % d;
    }
    return true;  // no larger in size than the dividend: nothing to narrow
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

/// Where a sampled execution stands: the reference (a loop's first iteration, the second block) or
/// a representative counted for many (a loop's second iteration, the middle block).
struct SampleFrame {
  int instance = 0;
  enum Role { Plain, Reference, Representative } role = Plain;
  // A representative: it is `distance` steps (iterations, blocks) from the reference, and stands for
  // the `count` executions `first`, `first + 1`, ... steps from it, each of weight `base`.
  std::int64_t distance = 1, first = 1, count = 1;
  double base = 1;
};

struct Site {
  AccessCost c;
  int order = 0;
  double weight = 0, lanes = 0, metric = 0, ideal = 0;
  int ways = 1;
  bool inexact = false;
  bool strided = false;  ///< the first request's lanes were evenly spaced, `stride` bytes apart
  std::int64_t stride = 0;
  struct Seen {
    std::array<std::int64_t, kLanes> addr{};
    Mask mask = 0;
  };
  std::map<int, std::vector<Seen>> refs;  ///< per sampling instance: the reference's executions in order
  std::map<int, std::size_t> reps;        ///< per sampling instance: the representative's executions so far
};

struct BranchSite {
  BranchCost c;
  int order = 0;
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

class Analyzer {
 public:
  Analyzer(const lower::Lowered& l, std::span<const std::int64_t> values, const Options& o)
      : l_(l), opt_(o), T_(l.options.threads) {
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
    // The blocks followed and how many each stands for: all of them when few, else the first two,
    // the middle one (for the rest) and the last two.
    std::vector<std::pair<std::int64_t, double>> blocks;
    int reference = -1, representative = -1;
    if (B <= opt_.max_blocks) {
      for (std::int64_t b = 0; b < B; ++b) blocks.push_back({b, 1.0});
    } else {
      blocks = {{0, 1.0}, {B / 2, static_cast<double>(B - 2)}, {B - 1, 1.0}};
      reference = 0;
      representative = 1;
    }
    const int block_instance = next_instance_++;
    CostReport r;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      SampleFrame f;
      f.instance = block_instance;
      f.role = static_cast<int>(i) == reference        ? SampleFrame::Reference
               : static_cast<int>(i) == representative ? SampleFrame::Representative
                                                       : SampleFrame::Plain;
      // The middle block stands for blocks 1 .. B - 2: 1 .. B - 2 steps from block 0.
      f.distance = B / 2;
      f.first = 1;
      f.count = B - 2;
      f.base = 1;
      samples_ = {f};
      double block_span = 0;
      std::vector<std::vector<double>> steps;  // per warp, per barrier interval
      for (std::int64_t w = 0; w * kLanes < T_; ++w) {
        interval_steps_.assign(1, 0.0);
        run_warp(blocks[i].first, w, blocks[i].second);
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
      r.span = std::max(r.span, block_span / blocks[i].second);
    }
    r.kernel = l_.kernel.name;
    r.blocks = B;
    r.threads_per_block = T_;
    r.sampled_blocks = static_cast<int>(blocks.size());
    r.exact = exact_;
    r.flops = flops_;
    r.work = work_;
    std::vector<Site*> sites;
    for (auto& [node, s] : sites_) sites.push_back(&s);
    std::sort(sites.begin(), sites.end(), [](const Site* a, const Site* b) { return a->order < b->order; });
    for (Site* s : sites) {
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
      c.exact = !s->inexact;
      r.exact = r.exact && c.exact;
      c.hint = hint(c, *s);
      r.accesses.push_back(std::move(c));
    }
    std::vector<BranchSite*> branches;
    for (auto& [node, b] : branches_) branches.push_back(&b);
    std::sort(branches.begin(), branches.end(),
              [](const BranchSite* a, const BranchSite* b) { return a->order < b->order; });
    for (BranchSite* b : branches) {
      BranchCost c = b->c;
      c.executions = std::llround(b->exec);
      c.divergent = std::llround(b->div);
      c.exact = !b->inexact;
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

 private:
  // ------------------------------------------------------------------ one warp
  void run_warp(std::int64_t block, std::int64_t warp, double weight) {
    vars_.clear();
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
    frames_.push_back(std::move(f));
    weight_ = weight;
    loops_.clear();
    exec(l_.kernel.body, m);
  }

  // ------------------------------------------------------------------ expressions
  // Each `ev` returns the value of its node in the lanes of `m`: a reference to a variable's (or a
  // frame's) lanes where it is one, so that nothing is copied, or else to `out`, which it fills.
  const Lanes& eval(const ExprPtr& e, Mask m, Lanes& out) {
    if (!e) return unknown(out);
    return dispatch(*e, [&](const auto& n) -> const Lanes& { return ev(n, m, out); });
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
    return out;
  }
  static const Lanes& all(Lanes& out, std::int64_t x) {
    out.v.fill(x);
    out.known = kAll;
    out.uniform = true;
    return out;
  }
  const Lanes& ev(const Literal& n, Mask, Lanes& out) { return integral(n.type) ? all(out, n.i) : unknown(out); }
  const Lanes& ev(const VarRef& n, Mask, Lanes& out) {
    auto it = vars_.find(n.var.get());
    return it != vars_.end() ? it->second : unknown(out);
  }
  const Lanes& ev(const Unary& n, Mask m, Lanes& out) {
    const Lanes& a = eval(n.a, m, out);
    if (!integral(n.type)) return unknown(out);
    if (a.uniform) return all(out, eval_unary(n.op, n.type, a.v[0]));
    const Mask known = m & a.known;  // `a` may be `out`: read before writing
    each(known, [&](int i) { out.v[i] = eval_unary(n.op, n.type, a.v[i]); });
    out.known = known;
    out.uniform = false;
    return out;
  }
  const Lanes& ev(const Binary& n, Mask m, Lanes& out) {
    Lanes ta, tb;
    const Lanes &a = eval(n.a, m, ta), &b = eval(n.b, m, tb);
    const ScalarType t = n.a->type;
    if (!integral(t)) {
      if (is_float(n.type) && (n.op == BinOp::Add || n.op == BinOp::Sub || n.op == BinOp::Mul || n.op == BinOp::Div))
        flops_ += std::popcount(m) * weight_;
      return unknown(out);
    }
    const bool shift = n.op == BinOp::Shl || n.op == BinOp::Shr;
    auto one = [&](std::int64_t x, std::int64_t y) {
      return binary_op(n.op, t, x, shift ? shift_amount(n.b->type, y) : y);
    };
    if (a.uniform && b.uniform) return all(out, one(a.v[0], b.v[0]));
    out.known = m & a.known & b.known;
    out.uniform = false;
    if (out.known == kAll && lanewise(n.op, t, a, b, out)) return out;
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
    return out;
  }
  const Lanes& ev(const Cast& n, Mask m, Lanes& out) {
    const Lanes& a = eval(n.a, m, out);
    if (!integral(n.type) || !integral(n.a->type)) return unknown(out);
    if (a.uniform) return all(out, eval_cast(n.a->type, n.type, a.v[0]));
    const Mask known = m & a.known;
    each(known, [&](int i) { out.v[i] = eval_cast(n.a->type, n.type, a.v[i]); });
    out.known = known;
    out.uniform = false;
    return out;
  }
  const Lanes& ev(const Select& n, Mask m, Lanes& out) {
    Lanes tc, ta, tb;
    const Lanes &c = eval(n.c, m, tc), &a = eval(n.a, m, ta), &b = eval(n.b, m, tb);
    out.known = 0;
    out.uniform = false;
    each(m & c.known, [&](int i) {
      const Lanes& pick = c.v[i] ? a : b;
      if ((pick.known >> i) & 1) {
        out.v[i] = pick.v[i];
        out.known |= Mask{1} << i;
      }
    });
    return out;
  }
  const Lanes& ev(const MathCall& n, Mask m, Lanes& out) {
    if (integral(n.type) && !n.args.empty()) {  // abs or a bit function
      const Lanes& x = eval(n.args[0], m, out);
      const Mask known = m & x.known;
      const ScalarType xt = n.args[0]->type;
      each(known, [&](int i) {
        out.v[i] = is_bit_fn(n.fn)                   ? eval_bits(n.fn, xt, x.v[i])
                   : is_signed(n.type) && x.v[i] < 0 ? eval_unary(UnOp::Neg, n.type, x.v[i])
                                                     : x.v[i];
      });
      out.known = known;
      out.uniform = false;
      return out;
    }
    for (const auto& a : n.args) eval(a, m, out);
    flops_ += std::popcount(m) * weight_ * (n.fn == MathFn::Fma ? 2 : 1);
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
    interval_steps_.back() += weight_;
  }
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
    Lanes& cur = vars_[v];
    if (m == kAll) {  // every lane replaced: known, unknown and uniform as in x
      cur = x;
      return;
    }
    each(m & x.known, [&](int i) { cur.v[i] = x.v[i]; });
    cur.known = (cur.known & ~m) | (x.known & m);
    cur.uniform = false;
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
  void st(const If& n, Mask m) {
    step();
    Lanes t;
    const Lanes& c = eval(n.cond, m, t);
    Mask unknown = m & ~c.known, yes = m & c.known, no = 0;
    each(yes, [&](int i) {
      if (!c.v[i]) no |= Mask{1} << i;
    });
    yes &= ~no;
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
  }
  struct LoopState {
    Mask off = 0;     ///< lanes that left the loop (break) or this iteration (continue)
    Mask broken = 0;  ///< lanes that left the loop
  };
  void st(const For& n, Mask m) {
    step();
    Lanes b = eval(n.begin, m), e = eval(n.end, m), s = eval(n.step, m);
    BranchSite& br = branch(&n, "for", n.loc);
    const ScalarType t = n.var->type;
    Mask known = m & b.known & e.known & s.known;
    if (known != m) {  // bounds from loaded data: one iteration, a guess
      br.inexact = true;
      exact_ = false;
      br.exec += weight_;
      Lanes v = b;
      v.known = m & b.known;
      v.uniform = false;
      set(n.var.get(), v, m);
      exec(n.body, m);
      return;
    }
    // Trip counts per lane.
    std::array<std::int64_t, kLanes> trips{};
    std::int64_t most = 0, least = INT64_MAX;
    each(m, [&](int i) {
      __int128 lo = ir::exact(t, b.v[i]), hi = ir::exact(t, e.v[i]), st = ir::exact(n.step->type, s.v[i]);
      __int128 c = 0;
      if (st > 0 && hi > lo) c = (hi - lo + st - 1) / st;
      if (st < 0 && hi < lo) c = (lo - hi + (-st) - 1) / (-st);
      trips[i] = c > INT32_MAX ? INT32_MAX : static_cast<std::int64_t>(c);
      most = std::max(most, trips[i]);
      least = std::min(least, trips[i]);
    });
    auto value_at = [&](std::int64_t k, Mask active) {
      Lanes v;
      each(active, [&](int i) {
        v.v[i] = wrap(t, ir::exact(t, b.v[i]) + static_cast<__int128>(k) * ir::exact(n.step->type, s.v[i]));
      });
      v.known = active;
      return v;
    };
    auto active_at = [&](std::int64_t k) {
      Mask a = 0;
      each(m, [&](int i) {
        if (trips[i] > k) a |= Mask{1} << i;
      });
      return a;
    };
    // The condition is evaluated once per iteration and once more to leave.
    br.exec += weight_ * static_cast<double>(most + 1);
    if (most != least) br.div += weight_ * static_cast<double>(most - least);
    loops_.push_back({});
    if (most <= opt_.max_iterations || most != least) {
      std::int64_t limit = std::min<std::int64_t>(most, 4 * opt_.max_iterations);
      for (std::int64_t k = 0; k < limit; ++k) {
        Mask a = active_at(k) & ~loops_.back().broken;
        if (!a) break;
        loops_.back().off = loops_.back().broken;
        set(n.var.get(), value_at(k, a), a);
        exec(n.body, a);
      }
      if (limit < most) {  // a divergent loop longer than that: the rest is not followed
        br.inexact = true;
        exact_ = false;
      }
    } else {
      // Uniform and long: the first iteration (the reference), the second standing for all but the
      // first and last (the representative), and the last.
      const int instance = next_instance_++;
      const double saved = weight_;
      const std::int64_t picks[3] = {0, 1, most - 1};
      const double weights[3] = {1.0, static_cast<double>(most - 2), 1.0};
      for (int p = 0; p < 3; ++p) {
        Mask a = m & ~loops_.back().broken;
        if (!a) break;
        loops_.back().off = loops_.back().broken;
        SampleFrame f;
        f.instance = instance;
        f.role = p == 0 ? SampleFrame::Reference : p == 1 ? SampleFrame::Representative : SampleFrame::Plain;
        f.distance = 1;
        f.first = 1;
        f.count = most - 2;
        f.base = saved;
        samples_.push_back(f);
        weight_ = saved * weights[p];
        set(n.var.get(), value_at(picks[p], a), a);
        exec(n.body, a);
        samples_.pop_back();
      }
      weight_ = saved;
      if (loops_.back().broken) {  // a break decided by data: which iteration it happens in is a guess
        br.inexact = true;
        exact_ = false;
      }
    }
    loops_.pop_back();
  }
  void st(const While& n, Mask m) {
    step();
    BranchSite& br = branch(&n, "while", n.loc);
    loops_.push_back({});
    Mask a = m;
    for (int k = 0; a; ++k) {
      if (k >= 4 * opt_.max_iterations) {
        br.inexact = true;
        exact_ = false;
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
        exact_ = false;
        if (k == 0) go |= a & ~c.known;
      }
      if (go && go != a) br.div += weight_;
      a = go & ~loops_.back().broken;
      if (!a) break;
      loops_.back().off = loops_.back().broken;
      exec(n.body, a);
    }
    loops_.pop_back();
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
    if (n.how == BarrierKind::Block) interval_steps_.push_back(0.0);
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
    std::vector<Lanes> args;
    for (const auto& a : n.args) args.push_back(eval(a, m));
    for (const auto& o : n.outputs) set(o.get(), shuffle(n, args, m), m);
    switch (n.op) {
      case IntrinsicOp::Atomic:
        access(&n, n.mems[0].get(), args[0], m, true, type_bytes(n.mems[0]->elem), n.loc);
        break;
      case IntrinsicOp::CpAsync: {
        const int bytes = static_cast<int>(n.imms[0]);
        access(&n, n.mems[1].get(), args[1], m, false, bytes, n.loc, 0);
        access(&n, n.mems[0].get(), args[0], m, true, bytes, n.loc, 1);
        break;
      }
      default: break;
    }
  }
  /// A shuffle's result where its operands are known integers; unknown otherwise.
  Lanes shuffle(const Intrinsic& n, const std::vector<Lanes>& a, Mask m) {
    Lanes r;
    if (a.size() < 2 || n.outputs.empty() || !integral(n.outputs[0]->type)) return r;
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
        fr.mems[p.mem.get()] = r;
      } else if (p.var) {
        binds.emplace_back(p.var.get(), eval(a.value, m));
      }
    }
    for (const auto& [v, x] : binds) set(v, x, m);
    std::vector<LoopState> saved_loops;
    std::swap(saved_loops, loops_);
    frames_.push_back(std::move(fr));
    exec(f.body, m);
    frames_.pop_back();
    std::swap(saved_loops, loops_);
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
  static Measure measure(const std::array<std::int64_t, kLanes>& addr, Mask known, int bytes, bool global) {
    return request_cost(addr, known, bytes, global);
  }

  void access(const void* node, const MemNode* mem, const Lanes& idx, Mask m, bool write, int bytes, SourceLoc loc,
              int part = 0) {
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
    if (!known) return;
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
    const Measure here = measure(addr, known, bytes, global);
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
    s.metric += weight_ * here.metric;
    s.ideal += weight_ * here.ideal;
    s.ways = std::max(s.ways, here.ways);
    // A representative stands for `count` executions whose addresses move from the reference's by
    // the same amount for every lane (an affine index): their cost repeats with a period of one
    // sector (128 bytes for the banks), so it is summed exactly over them. Any other movement makes
    // the site an estimate.
    const std::int64_t period = global ? 32 : 128;
    bool innermost = true;
    for (auto f = samples_.rbegin(); f != samples_.rend(); ++f) {
      if (f->role == SampleFrame::Plain) continue;
      if (f->role == SampleFrame::Reference) {
        s.refs[f->instance].push_back({addr, known});
      } else {
        const std::size_t k = s.reps[f->instance]++;
        const auto& refs = s.refs[f->instance];
        bool ok = k < refs.size() && refs[k].mask == known;
        std::int64_t d = 0;
        bool first = true;
        if (ok)
          each(known, [&](int i) {
            const std::int64_t di = addr[i] - refs[k].addr[i];
            if (first) d = di;
            first = false;
            ok = ok && di == d;
          });
        // (A step too large to multiply by the count safely is no affine walk through a buffer.)
        ok = ok && d % f->distance == 0 && std::llabs(d / f->distance) < (std::int64_t{1} << 30) &&
             f->count < (std::int64_t{1} << 30);
        if (ok) {
          const std::int64_t step = d / f->distance;
          const std::int64_t reps = period / std::gcd(((step % period) + period) % period, period);
          double sum_m = 0, sum_i = 0;
          for (std::int64_t r0 = 0; r0 < std::min<std::int64_t>(reps, f->count); ++r0) {
            const std::int64_t o = f->first + r0;
            // offsets o, o + reps, ... below first + count
            const std::int64_t times = (f->count - r0 + reps - 1) / reps;
            std::array<std::int64_t, kLanes> a = refs[k].addr;
            each(known, [&](int i) { a[i] += step * o; });
            Measure mm = measure(a, known, bytes, global);
            sum_m += static_cast<double>(times) * mm.metric;
            sum_i += static_cast<double>(times) * mm.ideal;
            s.ways = std::max(s.ways, mm.ways);
          }
          if (innermost) {
            s.metric += f->base * sum_m - weight_ * here.metric;
            s.ideal += f->base * sum_i - weight_ * here.ideal;
          } else if (std::fabs(sum_m - static_cast<double>(f->count) * here.metric) > 1e-6) {
            ok = false;  // an outer representative whose executions would cost differently
          }
        }
        if (!ok) {
          s.inexact = true;
          exact_ = false;
        }
      }
      innermost = false;
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
  std::vector<Frame> frames_;
  std::vector<LoopState> loops_;
  std::vector<SampleFrame> samples_;
  std::map<std::pair<const void*, int>, Site> sites_;
  std::map<const StmtNode*, BranchSite> branches_;
  std::vector<double> interval_steps_;
  double weight_ = 1, flops_ = 0, work_ = 0;
  int next_order_ = 0, next_instance_ = 0;
  bool exact_ = true;
};

}  // namespace

CostReport analyze(const lower::Lowered& lowered, std::span<const std::int64_t> values, const Options& options) {
  if (options.blocks < 1) throw InternalError("cost: a launch has at least one block");
  return Analyzer(lowered, values, options).run();
}

}  // namespace vantage::cost
