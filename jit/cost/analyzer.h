// Vantage static cost analysis, declared: the values it follows over a warp's lanes (Lanes, Motion),
// what it knows of a kernel before it runs it (facts.cpp), and the Analyzer, defined by concern:
// cost.cpp (the launch, the warps followed, how values move), lanes.cpp (expressions over a warp's
// lanes), statements.cpp (statements, branches, loops, calls), access.cpp (memory requests and
// their costs). See cost.h and docs/report.md.
#pragma once

#include "jit/cost/cost.h"
#include "jit/ir/affine.h"

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

namespace vantage::cost::detail {

using namespace ir;

constexpr int kLanes = 32;
using Mask = std::uint32_t;
constexpr Mask kAll = 0xffffffffu;
/// Representatives followed at once: the middle block and three loops inside it.
constexpr int kFrames = 4;

inline __int128 gcd128(__int128 a, __int128 b) {
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
inline Motion erratic() {
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
Contents contents_of(const StmtNode& s);

/// The shared-memory loads the CUDA compiler may merge with a neighbour's into one wider load, as
/// ptxas does for adjacent elements at an alignment it can prove (the first H100 run,
/// docs/gpu-validation.md): two loads of one shared array in one statement list (or one beside a
/// loop's first or last iteration) whose indices differ by one element, and a load in a loop whose
/// index moves by one element an iteration (the loop unrolled). A GPU counts fewer requests and
/// wavefronts for them than the kernel as written has: the report's figures for them are upper
/// bounds on what Nsight Compute counts (AccessCost::compiler_may_merge).
std::unordered_set<const void*> mergeable_loads(const KernelNode& k);

/// The accesses and branches whose cost may differ between blocks: an index or condition computed
/// from the block index, through variables, loop bounds and calls, or under a condition that is
/// (control dependence); everything inside a called function, and everything at all when a jump
/// or return sits under such a condition. An over-approximation: it only decides whether a report
/// that followed one block for all of them may be kept (Analyzer::block_sensitive).
struct BlockDependence {
  std::unordered_set<const void*> nodes;
  bool everything = false;
};
BlockDependence block_dependence(const KernelNode& k);

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

/// How a result moves between the executions being counted, from how its operands move (see
/// Motion). Every rule is exact or gives up to a weaker kind; a result computed only from values the
/// same in every lane moves the same in every lane whatever the operation (`loose`). It keeps the
/// representatives being followed: a motion's slope in frame f is per step of reps[f].
class Motions {
 public:
  struct Span {
    __int128 lo = 0, hi = 0;
    bool bounded = true;
  };
  Span span(const Motion& m) const;
  /// Every move of `m` is a multiple of p (Still: it never moves).
  static bool moves_by(const Motion& m, std::int64_t p);
  static std::int64_t grain(const Motion& m);
  /// Still where nothing moves.
  static Motion settle(Motion m);
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
  static bool same(const Motion& a, const Motion& b);
  /// a + sign * b, for motions of values whose sum is taken exactly.
  Motion sum(const Motion& a, const Motion& b, int sign);
  /// c * a.
  Motion scale(const Motion& a, std::int64_t c);
  /// Whether every known lane of `x` holds one value in every execution: the same value now, moving
  /// the same in every lane.
  static bool uniform_always(const Lanes& x, Mask known);
  /// The one value of `x`'s known lanes in `known`, if they hold one and it does not move.
  static std::optional<std::int64_t> constant(const Lanes& x, Mask known);
  /// Whether every known lane of `r` (a value of type t) stays within t when moved by `m`.
  bool stays_in(ScalarType t, const Lanes& r, Mask known, const Motion& m) const;
  /// The smallest and largest exact value of `x`'s lanes in `known` (not empty), of type t.
  static std::pair<__int128, __int128> extremes(ScalarType t, const Lanes& x, Mask known);
  /// Whether every known lane of x (of type t), moved by m, keeps one sign (0 counting as either).
  bool one_sign(ScalarType t, const Lanes& x, Mask known, const Motion& m) const;
  /// x / c (`quotient`) or x % c, c > 0, rounded down (`floor`: >> and a low mask) or toward zero (/
  /// and %), where x (a, of type t) moves. Exact in two cases: every move is a multiple of c (the
  /// quotient moves by D / c, the remainder stays); or the lanes lie in one block of g = gcd(c, the
  /// moves' grain) values, which they then never leave, so that the quotient is one value in every
  /// lane (moving as a monotone function of the lowest lane) and the remainder moves the same in
  /// every lane (a thread's row and column from its position, when no warp straddles a row).
  Motion divided(const Lanes& a, ScalarType t, Mask known, __int128 c, bool quotient, bool floor);
  /// The motion of `r`, the result of integer operation `op` on `a` and `b` (operand type t), where
  /// one of them moves.
  Motion binary_motion(BinOp op, ScalarType t, ScalarType bt, const Lanes& a, const Lanes& b, const Lanes& r);
  Motion cast_motion(ScalarType from, ScalarType to, const Lanes& a, const Lanes& r);
  /// Per lane, a's motion where `pick_a` has the lane and b's elsewhere.
  Motion chosen(const Lanes& a, const Lanes& b, Mask pick_a, Mask known);

  /// The motion of a loop's counter in frame f alone: `step` per iteration.
  Motion frame_slope(std::size_t f, __int128 step);

  std::vector<Rep> reps;  ///< the representatives being followed (frame f is reps[f])

 private:
  std::uint32_t next_id_ = 0;
};

// ------------------------------------------------------------------ lanes and loops
/// `out` as nothing known.
const Lanes& unknown(Lanes& out);
/// `out` as x in every lane, moving by `mo`.
inline const Lanes& all(Lanes& out, std::int64_t x, const Motion& mo = Motion{}) {
  out.v.fill(x);
  out.known = kAll;
  out.uniform = true;
  out.mo = mo;
  return out;
}
/// A cast that leaves every value of `from` as it is held (eval_cast is the identity on it): a
/// widening, or bool to an integer; not from u64, which is held as its bits.
inline bool keeps_values(ScalarType from, ScalarType to) {
  return from != ScalarType::U64 && to != ScalarType::Bool && Range::of(from).within(Range::of(to));
}
/// Whether the executions being counted from this one all take the same decision.
inline bool settled(const Lanes& cond) { return cond.mo.kind == Motion::Still; }
/// A shuffle's result where its operands are known integers; unknown otherwise. Lanes that read
/// other lanes' values move as those do when every lane moves the same and the lanes read stay.
Lanes shuffled(const Intrinsic& n, const std::vector<Lanes>& a, Mask m);
/// Iterations from `x` = end - begin with step `s` (exact values).
__int128 trips_of(__int128 x, __int128 s);
/// Inside a loop's body while it lives (its steps are counted as looped).
struct InLoop {
  explicit InLoop(int& depth) : depth_(depth) { ++depth_; }
  ~InLoop() { --depth_; }
  InLoop(const InLoop&) = delete;
  InLoop& operator=(const InLoop&) = delete;
  int& depth_;
};
struct LoopState {
  Mask off = 0;     ///< lanes that left the loop (break) or this iteration (continue)
  Mask broken = 0;  ///< lanes that left the loop
};

/// Lanes of integer operations computed since the values they read last changed, found by their
/// structure (ir::same_expression) and mask. An open-addressed table whose slots hold the
/// generation they were filled in: forgetting them all is a new generation, and their lanes are in
/// `lanes_` (at most half as many as slots).
class SeenLanes {
 public:
  /// An integer operation, whose lanes may be kept.
  static bool memoized(const ExprNode& e) {
    switch (e.kind) {
      case ExprKind::Unary:
      case ExprKind::Binary:
      case ExprKind::Cast:
      case ExprKind::Select: return is_integral(e.type);
      default: return false;
    }
  }
  /// The lanes of (e, m) kept since the last forget(), or null.
  const Lanes* find(const ExprNode& e, Mask m) const;
  void keep(const ExprNode& e, Mask m, const Lanes& r);
  void forget();

 private:
  /// The slot of (e, m): the one holding it, or the empty one where it would go.
  std::size_t slot(const ExprNode& e, Mask m) const;
  struct Slot {
    const ExprNode* e = nullptr;
    Mask m = 0;
    std::uint32_t gen = 0, lanes = 0;
  };
  static constexpr std::size_t kSlots = 4096;  // a power of two
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  std::vector<Lanes> lanes_;
  std::uint32_t gen_ = 1;
};

/// What the analysis counts: each access's requests over the executions its representatives stand
/// for, each branch's decisions, which numbers are estimates (tainted, or measured from a guess), and
/// the order the report lists them in.
class Tally {
 public:
  Tally(std::unordered_set<const void*> mergeable, const std::unordered_map<const void*, std::string>& scalar_copies)
      : mergeable_(std::move(mergeable)), scalar_copies_(scalar_copies) {}

  /// The site of access `node` (its `part`), made the first time it is reached.
  Site& site(const void* node, int part, SourceLoc loc, const MemNode& root, bool write, int bytes);
  /// A request of the lanes `known` at `addr`, standing for every execution of the representatives
  /// `mos` follows, whose addresses are these moved by `mo` (the same in every lane, or the cost is a
  /// guess). A cost repeats when the move is a multiple of its period (a sector, a bank's word), so
  /// it is counted by the move's residue: the slopes' residues exactly over the frames' steps; a
  /// rigid part (a multiple of its grain, nothing more known) exactly only where every residue it
  /// may add costs the same.
  void count(Site& s, const std::array<std::int64_t, kLanes>& addr, Mask known, int bytes, bool global,
             const Motion& mo, const Motions& mos, double weight);
  BranchSite& branch(const StmtNode* node, const char* what, SourceLoc loc);
  /// What a statement holds (contents_of), memoized.
  const Contents& contents(const StmtNode& s);
  /// Every access and branch `s` holds is an estimate.
  void taint(const StmtNode& s);
  /// The report's numbers are estimates (`s`'s too).
  void inexact() { exact_ = false; }
  void inexact(Site& s) {
    s.inexact = true;
    exact_ = false;
  }
  void async_copy(const void* node) { async_.insert(node); }
  bool exact() const { return exact_; }

  /// The accesses and branches of estimates that no execution followed reached: others may, so the
  /// report lists them, with no count, as estimates.
  void unreached();
  /// Whether an estimate of this report may be one because the middle block stood for the first
  /// and last too: an inexact access or branch whose cost may differ between blocks.
  bool block_sensitive(const KernelNode& k) const;
  /// The report's accesses and branches, in the order they were first reached.
  void fill(CostReport& r) const;

 private:
  static std::string hint(const AccessCost& c, const Site& s);

  std::map<std::pair<const void*, int>, Site> sites_;
  std::map<const StmtNode*, BranchSite> branches_;
  std::unordered_map<const StmtNode*, Contents> contents_;
  std::unordered_set<const void*> tainted_;    ///< accesses and branches whose numbers are estimates
  std::unordered_set<const void*> mergeable_;  ///< shared loads the compiler may merge (mergeable_loads)
  std::unordered_set<const void*> async_;      ///< cp.async copies
  const std::unordered_map<const void*, std::string>& scalar_copies_;  ///< lowering's (Lowered::scalar_copies)
  std::unordered_map<const StmtNode*, Order> tainted_stmts_;           ///< tainted statements, first when
  Order next_order_ = 0;
  bool exact_ = true;
};

class Analyzer {
 public:
  /// `whole`: past opt_.max_blocks, the middle block stands for every block (else for all but the
  /// first and last, which are followed apart).
  Analyzer(const lower::Lowered& l, std::span<const std::int64_t> values, const Options& o, bool whole = false)
      : l_(l), opt_(o), T_(l.options.threads), whole_(whole), tally_(mergeable_loads(l.kernel), l.scalar_copies) {
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

  CostReport run();

  /// Whether an estimate of this report may be one because the middle block stood for the first
  /// and last too: an inexact access or branch whose cost may differ between blocks.
  bool block_sensitive() const { return tally_.block_sensitive(l_.kernel); }

 private:
  // ------------------------------------------------------------------ one warp
  void run_warp(std::int64_t block, std::int64_t warp, double weight);

  // ------------------------------------------------------------------ expressions
  // Each `ev` returns the value of its node in the lanes of `m`: a reference to a variable's (or a
  // frame's) lanes where it is one, so that nothing is copied, or else to `out`, which it fills.
  const Lanes& eval(const ExprPtr& e, Mask m, Lanes& out);
  Lanes eval(const ExprPtr& e, Mask m);
  const Lanes& ev(const Literal& n, Mask, Lanes& out) { return is_integral(n.type) ? all(out, n.i) : unknown(out); }
  const Lanes& ev(const VarRef& n, Mask, Lanes& out) {
    auto it = vars_.find(n.var.get());
    return it != vars_.end() ? it->second : unknown(out);
  }
  const Lanes& ev(const Unary& n, Mask m, Lanes& out);
  const Lanes& ev(const Binary& n, Mask m, Lanes& out);
  const Lanes& ev(const Cast& n, Mask m, Lanes& out);
  const Lanes& ev(const Select& n, Mask m, Lanes& out);
  const Lanes& ev(const MathCall& n, Mask m, Lanes& out);
  const Lanes& ev(const Id&, Mask, Lanes&) { throw InternalError("cost: an id() in lowered IR"); }
  const Lanes& ev(const Builtin& n, Mask, Lanes& out);
  const Lanes& ev(const Load& n, Mask m, Lanes& out);

  // ------------------------------------------------------------------ statements
  void step();
  void exec(const StmtPtr& s, Mask m);
  void st(const Seq& n, Mask m) {
    for (const auto& c : n.stmts) exec(c, m);
  }
  void set(const VarNode* v, const Lanes& x, Mask m);
  void st(const Let& n, Mask m);
  void st(const Assign& n, Mask m);
  void st(const Store& n, Mask m);
  /// A decision `s` makes (its condition, or a loop's trip count) may differ between the executions
  /// being counted from this one (`guessed`: the lanes where it was guessed from loaded data, and
  /// followed both ways). Everything `s` holds is then an estimate, and what it writes moves
  /// erratically (is unknown in the guessed lanes). A break, continue or return inside changes what
  /// runs after `s` too: the loop, function or kernel around it becomes an estimate as well.
  void unsettled(const StmtNode& s, Mask guessed);
  void taint(const StmtNode& s, Mask guessed);

  void st(const If& n, Mask m);
  /// Whether every execution being counted from this one runs the loop the same number of times.
  bool trips_settled(const For& n, const Lanes& b, const Lanes& e, const Lanes& s, Mask m);
  void st(const For& n, Mask m);
  /// What a representative iteration wrote is not what the iterations after it see: unknown.
  void forget(const Contents& c);
  void st(const While& n, Mask m);
  void st(const Jump& n, Mask m);
  void st(const Return& n, Mask m);
  void st(const ir::Barrier& n, Mask);
  void st(const VectorCopy& n, Mask m);
  void st(const Intrinsic& n, Mask m);
  void st(const Call& n, Mask m);
  template <class N>
  void st(const N&, Mask) {
    step();  // allocations, unsafe blocks; the rest does not reach lowered IR
  }

  // ------------------------------------------------------------------ accesses
  MemRef resolve(const MemNode* m) const;

  void access(const void* node, const MemNode* mem, const Lanes& idx, Mask m, bool write, int bytes, SourceLoc loc,
              int part = 0);

  const lower::Lowered& l_;
  Options opt_;
  std::int64_t T_;
  std::unordered_map<const VarNode*, std::int64_t> params_;
  std::vector<std::int64_t> lengths_;  ///< per user parameter: its value (a pointer's length)
  std::unordered_map<const VarNode*, Lanes> vars_;
  /// Lanes of integer operations computed since the variables and the frame last changed, none of
  /// those whose evaluation counted anything (`effects_`).
  SeenLanes seen_;
  std::uint64_t effects_ = 0;  ///< accesses and flops counted so far
  std::vector<Frame> frames_;
  std::vector<LoopState> loops_;
  std::vector<const StmtNode*> loop_stmts_;  ///< the loops around the statement followed, innermost last
  std::vector<const StmtNode*> bodies_;      ///< the kernel's body and the functions called, innermost last
  const bool whole_;                         ///< past max_blocks, the middle block stands for every block
  Tally tally_;                              ///< what is counted
  Motions mo_;                               ///< how values move between the executions being counted
  std::vector<double> interval_steps_;
  double weight_ = 1, flops_ = 0, work_ = 0, looped_ = 0, exchanges_ = 0, barriers_ = 0;
  int looping_ = 0;  ///< loops around the statement followed (through calls too)
};

}  // namespace vantage::cost::detail
