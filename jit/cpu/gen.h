// Vantage CPU backend's code generator: the classes that turn lowered IR into LLVM IR, one per
// concern, declared here: Gen (the entry point, LLVM types and helpers, thread and warp loops:
// codegen.cpp) drives the Planner (which values are the same for every thread, region planning:
// levels.cpp), Values (variables and expressions: expr.cpp), Memory (accesses and their checks:
// memory.cpp), Statements (statements, calls, control flow in each context: stmt.cpp) and Warps
// (warp collectives: warp.cpp).
//
// The body of a block is generated in one of three contexts. In the *block* context code runs once
// for the block. A sequence there is cut into groups: barriers, statements the same for every
// thread, control flow holding a block barrier (its bodies again in the block context), and *warp
// regions*: maximal runs of groups without a block barrier, each a loop over the block's warps (in a
// race-free kernel the threads of different warps do not meet between block barriers). In the
// *warp* context, inside a region, code runs once per warp: statements the same for every thread,
// uniform control flow (so a loop every thread runs sits around the lane loops it holds), branches
// taken per warp, warp collectives on the warp's 32 lanes, branches around collectives whose
// condition varies per thread (masks), and *leaves*: maximal runs of the rest, each a lane loop over
// the warp. In the *thread* context code runs for one thread `tid` = 32 warp + lane, inside a lane
// loop (or one loop over the block, for a region that is one leaf without warp arithmetic).
//
// Variables: a level analysis (per function instance, to a fixed point, with control dependence)
// says which are the same for every thread. Those are scalars. The others are scalars inside their
// thread loop when every use is in one leaf, are recomputed from their definition where it is a pure
// function of the thread's position and uniform values, and otherwise live in a per-thread array in
// the block's scratch memory. Device functions are inlined, each call a fresh instance.
#pragma once

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "jit/cpu/cpu.h"
#include "jit/cpu/module_impl.h"
#include "jit/ir/eval.h"
#include "jit/ir/holds.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/mutate.h"
#include "jit/ir/range.h"
#include "jit/ir/visit.h"
#include "support/log.h"

namespace vantage::cpu::detail {

using namespace ir;
using llvm::BasicBlock;
using llvm::IRBuilder;
using llvm::Value;

enum class Lvl : std::uint8_t { Uniform, Varying };
inline Lvl join(Lvl a, Lvl b) { return a == Lvl::Varying || b == Lvl::Varying ? Lvl::Varying : Lvl::Uniform; }

inline bool unsigned_type(ScalarType t) {
  return t == ScalarType::U8 || t == ScalarType::U16 || t == ScalarType::U32 || t == ScalarType::U64 ||
         t == ScalarType::Bool;
}
inline bool half_type(ScalarType t) { return is_16bit_float(t); }

[[noreturn]] inline void unsupported(const std::string& what, SourceLoc l) {
  throw UnsupportedOnDevice(what + " cannot run on the CPU backend", {l});
}

/// How a variable is held.
struct Storage {
  enum Kind : std::uint8_t { Scalar, Array, Remat, Fixed } kind = Scalar;
  llvm::Value* ptr = nullptr;    ///< Scalar: an alloca; Array: the per-thread array
  llvm::Value* value = nullptr;  ///< Fixed: the value (parameters)
  ExprPtr remat;                 ///< Remat: the definition
};

/// A bounds check made inside a thread loop and reported after it, so that the loop stays free of
/// calls (and vectorizable): the largest failing thread plus one (a max reduction), and per thread
/// the index and bound of its failing access (masked stores).
struct PendingCheck {
  llvm::Value* worst = nullptr;  ///< i32 slot: 0, or the last failing thread + 1
  llvm::Value* index = nullptr;  ///< per thread: its last failing index (i32 when narrow, else i64)
  llvm::Value* bound = nullptr;  ///< i64: one slot when the bound is the same for every lane, else per thread
  std::int64_t site = 0;
  bool narrow = false;
  bool bound_per_thread = false;
  /// When the index is a pure function of the thread's position and values that do not change,
  /// it is computed again for the failing thread after the loop instead of being kept per thread.
  ir::ExprPtr index_expr;
};

/// The lanes of each warp that a leaf's one `if (tid < k)` (<=, >, >=; k the same for the lanes
/// of a warp) takes: a range, so that its thread loop runs over just those. `if (c + tid < k)`
/// (c the same for the lanes, and c + tid proven not to wrap: saxpy's `blk * 256 + t < n`) is
/// `tid < k - c`. `if (tid % 32 < k)` (or `tid & 31`: the lane) is a range of the lanes of every warp.
struct LaneRange {
  ir::BinOp op;  ///< with the thread's position on the left
  ir::ExprPtr k;
  ir::ExprPtr offset;  ///< c, or null
  bool lane = false;   ///< the position is the lane in the warp (tid % 32), not tid
};

/// A memory root as the code reaches it.
struct MemRef {
  MemSpace space = MemSpace::Global;
  ScalarType elem = ScalarType::F32;
  llvm::Value* base = nullptr;   ///< element 0 (global, shared); the array (local: [element][thread])
  llvm::Value* bound = nullptr;  ///< the root's elements (i64, uniform): checks of atomics and copies, on flat indices
  std::string name;
  /// Flat offsets added through calls: uniform values, or per-thread arrays of i64.
  std::vector<std::pair<llvm::Value*, bool>> offsets;  ///< (value or array, is per-thread array)
};

struct Frame {
  Frame* parent = nullptr;
  bool in_thread = false;  ///< made inside a thread loop: every variable is a scalar there
  std::unordered_map<const VarNode*, Lvl> levels;
  std::unordered_map<const VarNode*, Storage> vars;
  std::unordered_map<const VarNode*, int> leaf_of;  ///< the one leaf a varying variable is used in, or -1
  std::unordered_set<const VarNode*> reassigned;
  std::unordered_map<const VarNode*, ExprPtr> defs;  ///< each variable's Let value
  std::unordered_map<const MemNode*, MemRef> mems;
  // The builtins of this instance: thread and block position (a value or a per-thread array).
  llvm::Value* tid_array = nullptr;  ///< null: the block's own thread index
  Lvl tid_level = Lvl::Varying;
  llvm::Value* bid = nullptr;
  llvm::Value* smem = nullptr;  ///< shared memory base of this instance
  const FunctionNode* fn = nullptr;
  // A device function inlined inside a thread loop: `return` stores its value and leaves.
  llvm::BasicBlock* exit = nullptr;
  llvm::Value* ret_slot = nullptr;
};

/// Where `continue` (next) and `break` (exit) go in the loops around the code being emitted.
struct JumpTargets {
  BasicBlock* next;
  BasicBlock* exit;
};
/// One group of a sequence in the uniform context.
struct SeqGroup {
  enum Kind : std::uint8_t { Leaf, Single } kind;
  std::vector<StmtPtr> stmts;
};

class Gen;
class Planner;
class Values;
class Memory;
class Statements;
class Warps;

/// Which code is the same for every thread, and how a block's statements are grouped: the level
/// analysis (per function instance, to a fixed point, with control dependence), the warp-uniform
/// conditions and lane ranges, and which variables live in one leaf. It emits nothing.
class Planner {
 public:
  explicit Planner(Gen& g);

  /// Whether an expression is a pure function of the thread's position and values that do not
  /// change (so it may be recomputed wherever it is used).
  bool pure_value(const ExprPtr& e, Frame& f, int depth = 0);
  /// Whether statements use the index of their thread's warp (the thread's position divided by a
  /// multiple of 32, directly or through a variable), which a loop per warp keeps a scalar.
  bool uses_warp_index(const std::vector<StmtPtr>& stmts);
  /// Whether `e` can be computed again for any thread after its loop: made of constants, the
  /// thread's and block's positions, values the same for every thread that do not change, and
  /// per-thread variables assigned only where they are defined, from such values.
  bool recomputable(const ExprPtr& e, int depth = 0);
  /// The level of an expression in frame `f`.
  Lvl level(const ExprPtr& e, Frame& f);
  /// The levels of a frame's variables (a fixed point: assignments in loops, control dependence).
  void levels(Frame& f, const StmtPtr& body);
  /// Whether a statement is the same for every thread (emitted once in the uniform context).
  bool uniform_stmt(const StmtPtr& s, Frame& f);
  /// Control flow on values the same for every thread. A loop a thread may leave early (break or
  /// continue inside, in thread(1) code) is each thread's own, run inside the thread loop.
  bool uniform_control(const StmtPtr& s, Frame& f);
  static bool has_jump(const StmtPtr& s);
  /// An `if` whose condition is the same for the lanes of each warp (a split at warp boundaries):
  /// taken once per warp, around thread loops, rather than per thread.
  bool warp_control(const StmtPtr& s) {
    const auto* n = as<If>(*s);
    return n && warp_uniform(n->cond);
  }
  /// Whether a condition is the same for the 32 lanes of every warp: the same for each lane, or the
  /// thread's position compared with a multiple of 32 (and combinations of such).
  bool warp_uniform(const ExprPtr& c, int depth = 0);
  /// A leaf that is one `if (tid < k)` without else: its LaneRange.
  std::optional<LaneRange> lane_range(const SeqGroup& g);
  /// Whether the groups [i, j) of a region run as loops over the whole block (see `uniform`): one
  /// leaf with no range, or leaves and uniform lets of which one is a range with block-uniform
  /// bounds, the other leaves lets (a range's loop runs over fewer threads than the block).
  bool flat_region(const std::vector<SeqGroup>& gs, std::size_t i, std::size_t j);
  /// Whether c + tid may leave i32 for a thread of the block.
  bool wraps_with_position(const ExprPtr& c);
  /// `e` with the values of the lets it reads put in (a few levels deep), so that range analysis
  /// sees `blk * 256` as block_index * 256.
  ExprPtr resolved(const ExprPtr& e);
  /// Whether an integer +, - or * is proven never to leave its type (then LLVM is told so: nsw or
  /// nuw, which lets its scalar evolution see `blk * 256 + t` as affine in t).
  bool never_wraps(const Binary& n);
  /// Nested sequences flattened, then cut into groups (see the file's comment).
  std::vector<SeqGroup> groups(const StmtPtr& s, Frame& f);
  /// Which leaf each varying variable is used in (-1: more than one, or outside leaves).
  void plan(Frame& f, const StmtPtr& body);
  template <class M>
  void mark_expr(const ExprPtr& e, M& mark) {
    if (!e) return;
    struct Scan : IRVisitor {
      M& m;
      explicit Scan(M& mm) : m(mm) {}
      void visit(const VarRef& n) override { m(n.var.get(), -1); }
    } scan(mark);
    scan.walk(e);
  }
  void prepare(Frame& f, const StmtPtr& body) {
    levels(f, body);
    plan(f, body);
  }
  /// The value a variable always holds, when it is assigned only where it is defined.
  const ExprPtr* definition(const VarNode* v);
  /// Whether `e` is the thread's own position in the block (thread_index, or a copy of it).
  bool is_tid(const ExprPtr& e, int depth = 0);
  /// Whether `e` is the same for the 32 lanes of a warp in a thread loop: made of values the same
  /// for every thread and of the thread's position divided by a multiple of 32.
  bool lane_invariant(const ExprPtr& e, int depth = 0);
  /// Whether a statement holds a `return`.
  static bool returns(const StmtPtr& s);
  /// Whether a group may run in a warp region: no block barrier in it, and no assignment to a
  /// variable the same for every thread that lives outside it (each warp would make it again).
  bool in_region(const SeqGroup& g);
  bool assigns_outer_uniform(const StmtPtr& s);

 private:
  Gen& g_;
  ir::RangeEnv launch_env_;  ///< for the range proofs of never_wraps and lane ranges
};

/// Variables and expressions: where a variable is held (a scalar, a per-thread array, recomputed
/// from its definition), and each expression as LLVM computes it, with docs/semantics.md's integer
/// and float operations and the thread-position arithmetic LLVM cannot see on its own.
class Values {
 public:
  explicit Values(Gen& g);

  /// The storage of a variable, decided at its first definition.
  Storage& define(const VarPtr& v, const ExprPtr& value);
  /// A per-thread array for a variable that must have one (outputs of warp operations, loops on
  /// varying values around collectives).
  Storage& define_array(const VarPtr& v);
  Value* read_var(const VarNode* v, SourceLoc l);
  void write_var(const VarPtr& v, Value* x, const ExprPtr& def);
  Value* expr(const ExprPtr& e);
  Value* builtin(BuiltinKind which);
  Value* unary(const Unary& n);
  /// The thread's position divided by, or modulo, a power of two, from its warp and lane: what
  /// LLVM cannot see on its own, and what lets it keep `t / 32` a scalar in a lane loop.
  Value* position_arithmetic(const Binary& n);
  Value* binary(const Binary& n);
  /// docs/semantics.md's integer operations (jit/ir/eval), as LLVM computes them.
  Value* int_binary(BinOp op, ScalarType t, ScalarType bt, Value* a, Value* b);
  Value* cast(ScalarType from, ScalarType to, Value* a);
  /// A libm function computed in double and rounded to the operand's type, as the interpreter does.
  Value* libm_double(const char* name, std::vector<Value*> xs, llvm::Type* t);
  Value* math(const MathCall& n);

 private:
  Gen& g_;
  Planner& plan_;
  Memory& mem_;
};

/// Memory accesses and their checks: roots and views through calls, flat indices, checked and
/// clamped loads and stores, and the failures a thread loop reports after it (PendingCheck).
class Memory {
 public:
  explicit Memory(Gen& g);

  MemRef& memref(const MemNode* m, SourceLoc l);
  /// The flat element index (i64) of `r[index]`, offsets through calls included.
  Value* flat(const MemRef& r, Value* index, ScalarType index_type);
  /// An index into a view (a function's pointer parameter) as an index into its root.
  Value* offset(const MemRef& r, Value* i);
  /// The address of element `i` (flat) for the current thread.
  Value* address(const MemRef& r, Value* i);
  /// A failed check: recorded (the first one), the access skipped.
  void fail(std::int64_t site, Value* index, Value* bound, Value* thread = nullptr);
  /// A site of the CPU backend's own (atomics, copies lowering leaves unchecked).
  std::int64_t site(SourceLoc l, const std::string& memory, bool write);
  /// `body()` runs when 0 <= i < bound; otherwise the failure is recorded.
  /// In a thread loop the failure is kept for `threads` to report after the loop (PendingCheck):
  /// the failing index replaces the thread's slot through a select and a plain store, not a masked
  /// store (which costs a third of a memory-bound loop on this host).
  /// `narrow`: the same index as a signed 32-bit value, when it is one: checked in 32 bits (one
  /// unsigned compare with the bound clamped to 2^31), which keeps a lane loop's vectors 32-bit wide.
  /// `bound_same`: the bound is the same for the lanes of a warp.
  void checked(Value* i, Value* bound, std::int64_t site_no, const std::function<void()>& body, Value* narrow = nullptr,
               bool bound_same = true, const ExprPtr& index_expr = nullptr);
  /// A clamped read in a thread loop, base[L + min(a, u)] (or max) with L and u the same for the
  /// lanes of a warp: read as `a <= u ? base[L + a] : base[L + u]`, the same element, so that the
  /// lanes' reads of base[L + a] are one contiguous vector load rather than a gather.
  struct Clamp {
    std::vector<ExprPtr> invariant;  ///< the terms of L
    const Binary* clamp = nullptr;
    bool a_left = true;  ///< which operand of the min or max is a
  };
  std::optional<Clamp> clamp_of(const ExprPtr& index);
  /// base[L + u] of a clamped read, the same for every lane of a warp, read whether it is needed or
  /// not (from a zero of our own when it is outside the root), before any check: a load LLVM keeps
  /// a scalar, out of the lane loop. (Two loads on the two sides of a branch would be merged back
  /// into the gather.)
  Value* clamp_value(const MemRef& r, const Clamp& c, ScalarType index_type);
  /// The flat index of base[L + x], x computed.
  Value* clamp_flat(const MemRef& r, const Clamp& c, Value* x, ScalarType index_type);
  /// The element of `r` a clamped index names: base[L + a], or `vu` (clamp_value). Every part of the
  /// index is computed before the branch: an operand may hold a checked read of its own, whose
  /// blocks must not land between the branch and the join.
  Value* clamped_load(const MemRef& r, const Clamp& c, ScalarType index_type, Value* vu);
  // A bound is on the index the code wrote (into a function's pointer, the elements from it on).
  Value* load(const Load& n);
  void store(const Store& n);

 private:
  Gen& g_;
  Planner& plan_;
  Values& val_;
};

/// Statements in the two contexts: in a thread loop (one thread `tid`), and in the uniform context
/// (once for the block or per warp: warp regions, single statements, loops around collectives),
/// device functions inlined at each call.
class Statements {
 public:
  explicit Statements(Gen& g);

  void thread_stmt(const StmtPtr& s);
  /// `return`: from an inlined device function, its value stored and a jump to its end; from the
  /// kernel, the thread marked as exited (every later thread loop skips it) and a jump to the next
  /// thread of its loop. The code after it in the same block is unreachable.
  void ret(const Return& n);
  /// `while (cond) body`, its blocks named `name`.head, .body and .done; `body(head, done)` emits
  /// the body (head and done: where `continue` and `break` go).
  void while_loop(const ExprPtr& cond, const std::string& name,
                  const std::function<void(BasicBlock* head, BasicBlock* done)>& body);
  /// docs/semantics.md's loops: bounds and step evaluated once, the counter never wrapping, no
  /// iteration with a zero step.
  void for_loop(const For& n, const std::function<void()>& body);
  void vector_copy(const VectorCopy& n);
  void shared_alloc(const SharedAlloc& n);
  void local_alloc(const LocalAlloc& n);
  void thread_intrinsic(const Intrinsic& n);
  void atomic(const Intrinsic& n);
  /// A print: its values and the format's text to vt_cpu_print (jit/ir/print_format.h).
  void print(const Intrinsic& n);
  /// A value every thread of the mask computes in the uniform context: uniform, held as is; else a
  /// per-thread array of its type (`as_index`: of i64) filled by a thread loop.
  std::pair<Value*, bool> materialize(const ExprPtr& e, Value* mask, bool as_index);
  void call(const Call& n, bool in_thread, Value* mask = nullptr);
  /// A sequence in the uniform context. In the block context, each maximal run of groups that
  /// holds no block barrier becomes a *warp region*: a loop over the warps that runs the run for
  /// one warp at a time (threads of different warps do not meet between block barriers in a
  /// race-free kernel), so that uniform loops run inside the warp loop around 32-lane loops, warp
  /// collectives work on the warp at hand, and a warp none of whose threads is active is skipped.
  void uniform(const StmtPtr& s, Value* mask);
  void single(const StmtPtr& s, Value* mask);
  /// A loop whose condition varies per thread around a collective: each thread keeps its own
  /// counter; the body runs, in the uniform context, for the threads still going, until none is.
  void varying_loop(const StmtPtr& s, Value* mask);

 private:
  Gen& g_;
  Planner& plan_;
  Values& val_;
  Memory& mem_;
  Warps& warps_;
};

/// Warp collectives on a warp's 32 lanes: shuffles, votes and ballot as vector operations, and the
/// mma and ldmatrix helpers on thread-local fragments.
class Warps {
 public:
  explicit Warps(Gen& g);

  void warp(const Intrinsic& n, Value* mask);
  /// Shuffles, votes and ballot: each warp's lanes at once (the interpreter's semantics: a source
  /// lane outside the warp gives the lane its own value). The operand is read from its variable's
  /// per-thread array when it has one; a lane operand the same for every thread stays a scalar; the
  /// lanes of a shuffle are one loop that LLVM vectorizes.
  void lanes(const Intrinsic& n, Value* mask);
  /// A shuffle, vote or ballot over one full warp as vector operations on its 32 lanes: the
  /// operands of lanes [first, first + 32) loaded as one vector, permuted (a constant shuffle when
  /// the lane operand is a constant), the results stored under the mask.
  void warp_lanes(const Intrinsic& n, Value* mask, Value* xs, Value* y_same, Value* ys, Value* outp, Value* first);
  /// The base of a thread-local fragment array and its element size, for the mma and ldmatrix
  /// helpers (layout [element][thread]).
  Value* fragment(const MemPtr& m, SourceLoc l);
  void mma(const Intrinsic& n, Value* mask);
  void ldmatrix(const Intrinsic& n, Value* mask);

 private:
  Gen& g_;
  Planner& plan_;
  Values& val_;
  Memory& mem_;
  Statements& st_;
};

/// The code generator: the LLVM side every part shares (types, helpers, loops over threads and
/// warps, the block's scratch and the current frame), and the entry point that drives the parts.
class Gen {
 public:
  Gen(const lower::Lowered& l, const std::string& entry, Module::Impl& out);
  Gen(const Gen&) = delete;  // the parts refer to it
  Gen& operator=(const Gen&) = delete;

  void run();

 private:
  friend class Planner;
  friend class Values;
  friend class Memory;
  friend class Statements;
  friend class Warps;

  llvm::Type* type(ScalarType t);
  /// How a value of type t is held in memory.
  llvm::Type* memtype(ScalarType t);
  std::int64_t bytes(ScalarType t) { return type_bytes(t); }
  llvm::FunctionCallee helper(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args);
  /// A pure math function (libm or a Vantage helper): no memory, so loops stay vectorizable.
  llvm::FunctionCallee pure(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args);
  /// A value of `memtype` as loaded, to its computing type.
  Value* from_mem(Value* v, ScalarType t);
  Value* to_mem(Value* v, ScalarType t);
  /// A 16-bit float's value rounded to its type (kept in f32 between operations).
  Value* round16(Value* v, ScalarType t) { return half_type(t) ? from_mem(to_mem(v, t), t) : v; }
  Value* i64(Value* v, ScalarType t) {
    if (v->getType() == b_.getInt64Ty()) return v;
    return unsigned_type(t) ? b_.CreateZExt(v, b_.getInt64Ty()) : b_.CreateSExt(v, b_.getInt64Ty());
  }
  llvm::AllocaInst* entry_alloca(llvm::Type* t, const std::string& name) {
    IRBuilder<> e(entry_bb_, entry_bb_->begin());
    return e.CreateAlloca(t, nullptr, name);
  }
  /// A slot holding zero of type `t` (never written after).
  Value* zero_of(llvm::Type* t);
  /// An entry-block slot set to zero once, at the start of the block.
  llvm::AllocaInst* zeroed_slot(llvm::Type* t, const std::string& name);
  /// `bytes` of the block's scratch memory, 64-byte aligned.
  Value* scratch(std::int64_t n);
  /// Loop metadata of a lane loop: vectorize it, and do not unroll it before (a 32-lane loop would
  /// otherwise be unrolled into scalars first); unroll the vector loop fully after, so that values
  /// a uniform loop around it keeps per lane stay in vector registers.
  llvm::MDNode* lane_loop_md();
  /// The entry's loop over a chunk of blocks is not unrolled (a copy of the whole block per trip).
  llvm::MDNode* no_unroll_md() {
    return loop_md({llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")})});
  }
  /// A loop's own id (a distinct node naming itself first) carrying `properties`.
  llvm::MDNode* loop_md(std::vector<llvm::Metadata*> properties);
  /// `for (i = from; i < to; ++i) body(i)` with i of type `t`; `lanes`: a lane loop (above).
  void loop(Value* from, Value* to, const std::function<void(Value*)>& body, const char* name = "i",
            bool lanes = false);
  void if_then(Value* cond, const std::function<void()>& then);
  /// The lanes of warp `w` (32, or fewer in the last warp of a block that is not a multiple of 32).
  Value* lanes_in(Value* w);
  std::int32_t warps() const { return static_cast<std::int32_t>((T_ + 31) / 32); }
  /// `body(w)` for the current warp in a warp region, for every warp of the block otherwise.
  void each_warp(const std::function<void(Value*)>& body, const char* name);
  Value* active(Value* mask) {
    return b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, tid_)),
                           b_.getInt8(0));
  }
  /// A thread loop over the threads `mask` (a per-thread i8 array; null: all) of the current warp
  /// in a warp region, of the block otherwise: `body()` with tid_ the thread. A loop over 32 lanes
  /// (in a loop over warps), which LLVM vectorizes; the checks made in it are reported after it.
  void threads(Value* mask, const std::function<void()>& body, const LaneRange* range = nullptr);
  /// [lo, hi) narrowed to the lanes of warp `w` that satisfy the range's condition.
  void restrict_lanes(const LaneRange& r, Value* w, Value*& lo, Value*& hi);
  /// The body of a thread loop for thread tid_: skipped when the thread is not in `mask` or has
  /// returned; a `return` in it jumps to its end.
  void one_thread(Value* mask, const std::function<void()>& body);
  /// A pending check's failure, if its loop had one, recorded (then the slot is cleared for the
  /// loop's next run).
  void report(const PendingCheck& c);
  /// A recomputable index expression's value for thread `t` of the kernel's own frame.
  Value* index_of(const ExprPtr& e, Value* t);
  /// Whether any thread of `mask` (of the current warp, or the block) is active.
  Value* any_active(Value* mask);
  /// A warp-uniform condition's value for the warp at hand (computed as its first lane sees it).
  Value* warp_condition(const ExprPtr& c);

  const lower::Lowered& L_;
  std::int64_t T_;
  Module::Impl& out_;
  llvm::LLVMContext& ctx_;
  IRBuilder<> b_;
  std::string entry_name_;
  llvm::Function* fn_ = nullptr;
  BasicBlock* entry_bb_ = nullptr;
  Value *block_ = nullptr, *blocks_ = nullptr, *shared_ = nullptr, *scratch_ = nullptr, *err_ = nullptr;
  Value* tid_ = nullptr;             ///< the current thread, inside a thread loop
  Value* warp_ = nullptr;            ///< the warp of a warp region (null: the block context)
  bool recompute_ = false;           ///< per-thread variables are computed from their definitions (index_of)
  Value* exited_ = nullptr;          ///< per thread, 1 once it returned (kernels with a `return`)
  bool flat_ = false;                ///< the thread loop being made runs over the whole block (no warp loop)
  BasicBlock* lane_cont_ = nullptr;  ///< the end of the current thread's iteration of its loop
  std::vector<JumpTargets> jumps_;   ///< the loops around the code being emitted, innermost last
  // Inside a thread loop: tid_ = 32 * lane_warp_ + lane_, 0 <= lane_ < 32 (what the thread-position
  // arithmetic below folds).
  Value* lane_ = nullptr;
  Value* lane_warp_ = nullptr;
  std::vector<PendingCheck>* pending_ = nullptr;  ///< the checks of the thread loop being made
  std::map<llvm::Type*, Value*> zeros_;
  Frame* frame_ = nullptr;
  std::vector<std::unique_ptr<Frame>> frames_;
  std::int64_t scratch_bytes_ = 0;
  Collectives collectives_;
  Planner plan_;
  Values val_;
  Memory mem_;
  Statements st_;
  Warps warps_;
};

}  // namespace vantage::cpu::detail
