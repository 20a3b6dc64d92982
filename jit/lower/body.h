// Lowering's body lowerer, shared by the files that define it: lower.cpp (positions, statements,
// calls, the kernel), access.cpp (views resolved to their roots, index widths, bounds proven or
// checked), intrinsics.cpp (each intrinsic's operands and checks). The proofs themselves are the
// Prover's (prove.h), which the lowerer keeps told of the facts in force. Private to jit/lower.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "jit/ir/eval.h"
#include "jit/ir/mutate.h"
#include "jit/ir/printer.h"
#include "jit/ir/range.h"
#include "jit/ir/shared_layout.h"
#include "jit/ir/views.h"
#include "jit/ir/visit.h"
#include "jit/lower/lower.h"
#include "jit/lower/prove.h"
#include "jit/sync/sync.h"
#include "jit/target/target.h"

namespace vantage::lower::detail {

using namespace ir;

ExprPtr lit(std::int64_t v, SourceLoc l);
ExprPtr bin(BinOp op, const ExprPtr& a, const ExprPtr& b, SourceLoc l);
bool is_zero(const ExprPtr& e);

/// Hardware ids of named barriers: the user's ids are reserved, id 0 is __syncthreads, and every
/// size of automatic barrier unit gets its own range `base + threadIdx.x / n`, so that no two units
/// of threads that can run at the same time ever share an id.
class BarrierIds {
 public:
  BarrierIds(std::int64_t threads, std::set<std::int64_t> reserved, int count)
      : threads_(threads), used_(std::move(reserved)), count_(count) {
    used_.insert(0);
  }
  std::optional<std::int64_t> base(std::int64_t unit) {
    if (auto it = bases_.find(unit); it != bases_.end()) return it->second;
    std::int64_t need = threads_ / unit;
    for (std::int64_t b = 1; b + need <= count_; ++b) {
      bool free = true;
      for (std::int64_t id = b; id < b + need; ++id) free = free && !used_.count(id);
      if (!free) continue;
      for (std::int64_t id = b; id < b + need; ++id) used_.insert(id);
      bases_[unit] = b;
      return b;
    }
    return std::nullopt;
  }

 private:
  std::int64_t threads_;
  std::set<std::int64_t> used_;
  int count_;
  std::map<std::int64_t, std::int64_t> bases_;
};

/// The user's named-barrier ids in a body and the functions it calls.
std::set<std::int64_t> user_barrier_ids(const StmtPtr& body);

/// What the whole lowering shares: the options, the results, the barrier ids of the block and the
/// functions lowered so far.
struct Context {
  Options opt;
  Lowered& out;
  std::optional<BarrierIds> ids;
  std::unordered_map<const FunctionNode*, FunctionPtr> functions;
  std::unordered_map<const MemNode*, int> param_index;
  std::unordered_map<const MemNode*, ExprPtr> extents;  ///< kernel pointer parameters with an extent
  /// Every pointer parameter (kernel or function): the hidden i64 parameter holding its length.
  std::unordered_map<const MemNode*, VarPtr> lengths;
  int next_var = 1 << 30;  ///< ids of the hidden variables (after every id a builder gives)
};

/// Appends to `params` one hidden i64 length parameter per pointer parameter, recorded in `c`.
void add_lengths(Context& c, std::vector<ParamNode>& params, SourceLoc l);

struct Pos {
  ExprPtr block;   ///< block offset inside the unit (when the unit spans blocks)
  ExprPtr thread;  ///< thread offset inside the unit (inside the block when in_block)
  bool in_block = false;
  bool thread_below_t = true;  ///< `thread` < T (false in a split branch wider than a block)
  Perspective code;
  std::int64_t replicas = 1;  ///< units of `code` running this code at once in one block
};

struct ViewInfo {
  MemPtr src;
  bool partition = false;
  std::vector<VarPtr> vars;
  ExprPtr index;  ///< lowered where the partition is
};

/// A TMA store's place in its matrix: the root of its destination and the row and column of the
/// box's first element there, or the problem (V1012) where the destination is not an offset of the
/// tensor map's matrix (`resolve` maps a destination index to the root and its index there).
struct BoxPlace {
  MemPtr root;
  ExprPtr row, col;
  std::optional<Diagnostic> problem;
};
BoxPlace box_place(const Intrinsic& n, const TensorMapNode& m, const ExprPtr& cols, const ExprPtr& dst_index,
                   const std::function<std::pair<MemPtr, ExprPtr>(const ExprPtr&)>& resolve,
                   const std::function<ExprPtr(const ExprPtr&)>& exact_width);

/// The problem of a use of memory a TMA load may still write, or a write of memory a TMA store may
/// still read (V1010).
Diagnostic unwaited_tma(const sync::UnwaitedTma& u);
/// Where a view is not an offset of its root (its element index + d is not the root's element of
/// `index` plus d, for every d), the root's index of element index + d; nothing where it is.
std::optional<ExprPtr> not_an_offset(const ExprPtr& index,
                                     const std::function<std::pair<MemPtr, ExprPtr>(const ExprPtr&)>& resolve,
                                     SourceLoc l);
/// V1012 where n's memory operand `mem` (`what`: a TMA box, a wgmma tile, read or written as whole
/// rows from element `index`) is a view that is not an offset of its array.
void contiguous_tile(const Intrinsic& n, std::size_t mem, const ExprPtr& index, const std::string& what,
                     const std::function<std::pair<MemPtr, ExprPtr>(const ExprPtr&)>& resolve,
                     std::vector<Diagnostic>& problems);
/// The tensor map of TMA instruction n, one of k's.
const TensorMapNode& map_of(const Intrinsic& n, const KernelNode& k);
/// V1009 for a cluster instruction (`args`: n's, lowered) whose block rank is not proven below the
/// cluster size or whose multicast mask is not proven in 1..2^cluster - 1.
void cluster_operands(const Intrinsic& n, const std::vector<ExprPtr>& args, const ir::RangeEnv& env,
                      std::int64_t cluster, std::vector<Diagnostic>& problems);

class BodyLowerer {
 public:
  BodyLowerer(Context& c, const StmtPtr& body, Pos top, Perspective sync_top)
      : c_(c), prover_(launch_env(c.opt), c.param_index, reassigned_) {
    std::vector<const StmtNode*> conflicts;
    std::vector<sync::UnwaitedTma> unwaited;
    body_ = sync::insert(body, sync_top, &conflicts, &unwaited, c_.opt.threads);
    for (const auto& u : unwaited) c_.out.problems.push_back(unwaited_tma(u));
    for (const auto& o : sync::overlapping_shares(body, sync_top, c_.opt.threads, c_.opt.blocks)) {
      const auto& part = static_cast<const Partition&>(*o.partition);
      if (o.across_blocks && !c_.opt.blocks) {
        // Right for one block: the launcher refuses more.
        c_.out.guards.push_back({Guard::Kind::BlocksAtMost, 1, -1,
                                 "blocks <= 1, since every block's share of '" + o.memory + "' meets another's",
                                 "V1011", part.loc});
        continue;
      }
      auto local = [](const std::vector<std::int64_t>& at) {
        std::string t;
        for (std::size_t i = 0; i < at.size(); ++i) t += (i ? ", " : "") + std::to_string(at[i]);
        return t;
      };
      Diagnostic d{"V1011",
                   "partition of '" + o.memory + "' into " + part.p.str() + " gives element " +
                       std::to_string(o.element) + " to two units (" + std::to_string(o.units[0]) + " at [" +
                       local(o.locals[0]) + "], " + std::to_string(o.units[1]) + " at [" + local(o.locals[1]) +
                       "]), and its body writes there: the two would race. Give each unit elements of its own, "
                       "claim the memory for one thread, or write with atomic(AtomicOp::Exch, ...) where the last "
                       "writer should win",
                   part.loc,
                   {}};
      const SourceLoc &a = o.writes[0], &b = o.writes[1];
      if (a.line == b.line && a.column == b.column && a.file == b.file) {
        d.notes.push_back({"both write it here", a});
      } else {
        d.notes.push_back({"unit " + std::to_string(o.units[0]) + " writes it here", a});
        d.notes.push_back({"unit " + std::to_string(o.units[1]) + " writes it here", b});
      }
      c_.out.problems.push_back(std::move(d));
    }
    for (const auto* s : conflicts)
      c_.out.problems.push_back(
          {"V1001",
           "this statement touches memory that threads of other blocks wrote or read just before; a GPU cannot "
           "synchronize a whole grid inside a kernel (split the kernel, or narrow the memory to one block first)",
           s->loc,
           {}});
    layout_ = layout_shared(body_);
    reassigned_ = reassigned_vars(body_);
    frames_.push_back(std::move(top));
  }
  BodyLowerer(const BodyLowerer&) = delete;
  BodyLowerer& operator=(const BodyLowerer&) = delete;

  StmtPtr run() { return block(body_); }
  /// A condition every launch meets (a kernel's requirement): a fact for the bounds proofs.
  void assume(const ExprPtr& cond) { prover_.add_facts(cond); }
  std::int64_t peak() const { return layout_.peak; }
  std::int64_t shared_align() const { return layout_.align; }

 private:
  /// The ranges a launch gives the positions and the parameters.
  static RangeEnv launch_env(const Options& o) {
    RangeEnv env;
    env.thread_index = Range{0, o.threads - 1};
    env.block_index = Range{0, (o.blocks ? *o.blocks : o.max_blocks) - 1};
    env.grid_blocks = o.blocks ? Range::point(*o.blocks) : Range{1, o.max_blocks};
    for (const auto& [v, r] : o.param_ranges) env.vars[v] = Range{r.first, r.second};
    return env;
  }

  // ------------------------------------------------------------------ positions
  std::int64_t T() const { return c_.opt.threads; }
  std::int64_t units(Perspective p) const {
    std::int64_t n = p.count.coeff * (p.count.threads ? T() : 1);
    if (p.level == Level::Block) n *= T();
    return n;
  }
  ExprPtr linear(const Pos& p, SourceLoc l) const {
    if (p.in_block || is_zero(p.block)) return p.thread;
    return bin(BinOp::Add, bin(BinOp::Mul, p.block, lit(T(), l), l), p.thread, l);
  }
  ExprPtr id_of(Perspective q, SourceLoc l) const {
    const Pos& p = frames_.back();
    std::int64_t n = q.count.coeff;
    if (q.level == Level::Grid) return lit(0, l);
    if (q.level == Level::Block) {
      if (p.in_block) return lit(0, l);
      ExprPtr b = p.thread_below_t ? p.block : bin(BinOp::Div, linear(p, l), lit(T(), l), l);
      return n == 1 ? b : bin(BinOp::Div, b, lit(n, l), l);
    }
    ExprPtr pos = linear(p, l);
    return n == 1 ? pos : bin(BinOp::Div, pos, lit(n, l), l);
  }

  // ------------------------------------------------------------------ expressions and accesses
  class ExprLowerer : public IRMutator {
   public:
    explicit ExprLowerer(BodyLowerer& b) : b_(b) {}
    using IRMutator::mutate;

   protected:
    ExprPtr visit(const Id& n, const ExprPtr&) override { return b_.id_of(n.p, n.loc); }
    ExprPtr visit(const Load& n, const ExprPtr&) override {
      std::vector<ExprPtr> idx;
      for (const auto& i : n.indices) idx.push_back(mutate(i));
      auto [root, resolved] = b_.resolve(n.mem, std::move(idx), n.loc);
      ExprPtr flat = b_.exact_width(resolved);
      auto [bound, site] = b_.check(root, flat, false, n.loc);
      return make<Load>(n.type, root, std::vector<ExprPtr>{flat}, bound, site, n.loc);
    }
    ExprPtr visit(const Builtin& n, const ExprPtr& e) override {
      // The launch's grid, read as it runs; the block's index (cluster_rank), the hardware's.
      if (n.which == BuiltinKind::BlocksInGrid || n.which == BuiltinKind::BlockInGrid) return e;
      throw InternalError("lower: the input is already lowered");
    }

   private:
    BodyLowerer& b_;
  };

  ExprPtr lx(const ExprPtr& e);

  std::pair<MemPtr, ExprPtr> resolve(MemPtr m, std::vector<ExprPtr> idx, SourceLoc l) const;
  /// An index as every backend must compute it. Index arithmetic is exact (docs/semantics.md): where
  /// the value or an intermediate of its exact part may leave its type's range, that part is
  /// rebuilt in i64 (leaves converted), so that a backend computing in the IR's types computes the
  /// exact value. Otherwise a bound proven on the exact value (min(t + INT_MAX, 5) is 5) would let
  /// an access computed with wrapping (min(INT_MIN + ..., 5)) leave its buffer unchecked.
  ExprPtr exact_width(const ExprPtr& e) const;

  /// Whether `m[i]` is `root[base + i]`, so a pointer to m[0] can stand for m.
  bool unit_stride(const MemNode* m) const;

  // ------------------------------------------------------------------ facts and bounds
  /// The number of elements of root memory, when the IR says.
  ExprPtr extent_of(const MemPtr& root, SourceLoc l) const;
  /// What an access to root memory must stay below: the declared extent or the array's count, else
  /// the pointer's length (a hidden parameter), as an i64.
  ExprPtr bound_of(const MemPtr& root, SourceLoc l) const;
  /// The bound an access at `index` needs checked as it runs, and its site; {null, -1} if proven.
  std::pair<ExprPtr, std::int64_t> check(const MemPtr& root, const ExprPtr& index, bool write, SourceLoc l) const;
  /// An mbarrier slot: proven inside its array, or the kernel is refused (V1009). A barrier operation
  /// has no value to skip to, so it is never checked as it runs.
  void slot_in_bounds(const MemPtr& root, const ExprPtr& index, const std::string& view, SourceLoc l);
  /// A tile in the 128-byte swizzle layout (rows of 128 bytes in groups of 8, each group on a 1024-byte
  /// boundary) read or written through an address, not an index: `elems` elements from `first`,
  /// less a column offset of at most `max_col` elements (wgmma's K step) inside the first row. The
  /// array must be aligned to 1024 bytes, the group start a multiple of 1024 bytes, and the whole
  /// tile proven inside the array (V1009).
  void swizzled_tile(const MemPtr& root, const ExprPtr& first, std::int64_t elems, std::int64_t max_col,
                     const std::string& what, const std::string& view, SourceLoc l);

  bool proven_in_bounds(const MemPtr& root, const ExprPtr& first, std::int64_t count, SourceLoc l) const;
  // ------------------------------------------------------------------ statements
  StmtPtr block(const StmtPtr& s);
  StmtPtr scoped(Pos next, const StmtPtr& body);
  void stmt(const StmtPtr& s, std::vector<StmtPtr>& out);

  void lower_stmt(const Seq& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Let& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Assign& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Store& n, std::vector<StmtPtr>& out);
  void lower_stmt(const If& n, std::vector<StmtPtr>& out);
  void lower_stmt(const For& n, std::vector<StmtPtr>& out);
  void lower_stmt(const While& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Group& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Split& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Destruct& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Partition& n, std::vector<StmtPtr>& out);
  void view(const MemPtr& dst, const MemPtr& src, const StmtPtr& body, std::vector<StmtPtr>& out);
  void lower_stmt(const Claim& n, std::vector<StmtPtr>& out) { view(n.dst, n.src, n.body, out); }
  void lower_stmt(const Lower& n, std::vector<StmtPtr>& out) { view(n.dst, n.src, n.body, out); }
  void lower_stmt(const Async& n, std::vector<StmtPtr>& out) { view(n.dst, n.src, n.body, out); }
  void lower_stmt(const SharedAlloc& n, std::vector<StmtPtr>& out);
  void lower_stmt(const LocalAlloc& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Call& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Intrinsic& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Unsafe& n, std::vector<StmtPtr>& out);
  void lower_stmt(const Jump& n, std::vector<StmtPtr>& out) { out.push_back(make<Jump>(n.is_break, n.loc)); }
  void lower_stmt(const Return& n, std::vector<StmtPtr>& out) { out.push_back(make<Return>(lx(n.value), n.loc)); }
  void lower_stmt(const ir::Barrier& n, std::vector<StmtPtr>& out);
  void lower_stmt(const VectorCopy&, std::vector<StmtPtr>&);

  /// `for i in [0, N): dst[a + i] = src[b + i]` (lowered) with N elements of 8 or 16 bytes in total,
  /// a and b provably multiples of N and both ranges proven in bounds, becomes one vector copy. The
  /// pointer parameters involved then need that alignment, which the signature records.
  StmtPtr vector_copy(const For& n, const ExprPtr& b, const ExprPtr& e, const ExprPtr& st, const StmtPtr& body);

  Context& c_;
  StmtPtr body_;
  SharedLayout layout_;
  std::unordered_set<const VarNode*> reassigned_;
  std::vector<Pos> frames_;
  std::unordered_map<const MemNode*, ViewInfo> views_;
  std::unordered_map<const MemNode*, std::int64_t> counts_;  ///< shared and local arrays: elements
  std::unordered_map<const MemNode*, std::int64_t> aligns_;  ///< shared arrays: bytes their start is aligned to
  Prover prover_;
};

FunctionPtr lower_function(Context& c, const FunctionNode& f);

}  // namespace vantage::lower::detail
