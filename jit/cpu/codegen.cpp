// Vantage CPU backend: lowered IR to LLVM IR (see cpu.h and docs/cpu.md).
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
#include "jit/ir/intrinsics.h"
#include "jit/ir/mutate.h"
#include "jit/ir/range.h"
#include "jit/ir/visit.h"
#include "support/log.h"

namespace vantage::cpu {
namespace {

using namespace ir;
using llvm::BasicBlock;
using llvm::IRBuilder;
using llvm::Value;

enum class Lvl : std::uint8_t { Uniform, Varying };
Lvl join(Lvl a, Lvl b) { return a == Lvl::Varying || b == Lvl::Varying ? Lvl::Varying : Lvl::Uniform; }

bool unsigned_type(ScalarType t) { return t == ScalarType::U32 || t == ScalarType::U64 || t == ScalarType::Bool; }
bool half_type(ScalarType t) { return is_16bit_float(t); }

[[noreturn]] void unsupported(const std::string& what, SourceLoc l) {
  throw UnsupportedOnDevice(what + " cannot run on the CPU backend", {l});
}

/// Whether a statement holds a barrier or a warp collective (which cut thread loops).
class Collectives {
 public:
  bool of(const StmtPtr& s) {
    return holds(s, memo_, [](const StmtNode& x) -> std::optional<bool> {
      if (x.kind == StmtKind::Barrier) return true;
      if (const auto* n = as<Intrinsic>(x)) return warp_op(n->op);
      return std::nullopt;
    });
  }
  /// Whether a statement holds a barrier over more than one warp (block, named).
  bool block_sync(const StmtPtr& s) {
    return holds(s, sync_memo_, [](const StmtNode& x) -> std::optional<bool> {
      if (const auto* b = as<ir::Barrier>(x)) return b->how != BarrierKind::Warp && b->how != BarrierKind::WarpPart;
      if (const auto* n = as<Intrinsic>(x)) return info(n->op).orders_memory && info(n->op).needs != Needs::Warp;
      return std::nullopt;
    });
  }
  /// Whether a statement exchanges values between the lanes of a warp (shuffles, votes, ballot,
  /// mma, ldmatrix): the operations that work on a warp's 32 lanes as a whole.
  bool lane_exchange(const StmtPtr& s) {
    return holds(s, exchange_memo_, [](const StmtNode& x) -> std::optional<bool> {
      if (const auto* n = as<Intrinsic>(x)) return exchanges_lanes(n->op);
      return std::nullopt;
    });
  }
  static bool exchanges_lanes(IntrinsicOp op) { return info(op).collective && !info(op).orders_memory; }
  /// An exchange between lanes, or a barrier: what the threads of a group reach together.
  static bool warp_op(IntrinsicOp op) { return info(op).collective; }

 private:
  /// Whether `s` holds a statement `leaf` says yes to (looking into called functions), memoized.
  template <class Leaf>
  bool holds(const StmtPtr& s, std::unordered_map<const StmtNode*, bool>& memo, const Leaf& leaf) {
    if (!s) return false;
    auto it = memo.find(s.get());
    if (it != memo.end()) return it->second;
    bool c = false;
    if (auto here = leaf(*s)) {
      c = *here;
    } else if (const auto* call = as<Call>(*s)) {
      c = holds(call->fn->body, memo, leaf);
    } else {
      for_each_child_stmt(*s, [&](const StmtPtr& child) { c = c || holds(child, memo, leaf); });
    }
    memo[s.get()] = c;
    return c;
  }
  std::unordered_map<const StmtNode*, bool> memo_, sync_memo_, exchange_memo_;
};

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

class Gen {
  ir::RangeEnv launch_env_;  ///< for the range proofs of never_wraps and lane ranges

 public:
  Gen(const lower::Lowered& l, const std::string& entry, Module::Impl& out)
      : L_(l), T_(l.options.threads), out_(out), ctx_(*out.ctx), b_(ctx_) {
    entry_name_ = entry;
    // The ranges of the positions a launch may have: threads below T, blocks below the most a
    // launch may have (specialization's residual guard, checked at every launch).
    std::int64_t blocks = std::max<std::int64_t>(l.options.blocks ? *l.options.blocks : l.options.max_blocks, 1);
    launch_env_.thread_index = ir::Range{0, T_ - 1};
    launch_env_.block_index = ir::Range{0, blocks - 1};
    launch_env_.grid_blocks = ir::Range{1, blocks};
  }

  void run() {
    llvm::Module& m = *out_.mod;
    auto* ptr = llvm::PointerType::get(ctx_, 0);
    auto* i64 = b_.getInt64Ty();
    // The body: every pointer parameter, shared and scratch noalias (the launcher checks that no
    // writable buffer overlaps another), so LLVM may vectorize thread loops without runtime checks.
    std::vector<llvm::Type*> params;
    const auto& kp = L_.kernel.params;
    for (const auto& p : kp) params.push_back(p.mem ? static_cast<llvm::Type*>(ptr) : type(p.var->type));
    params.insert(params.end(), {i64, i64, ptr, ptr, ptr});  // block, blocks, shared, scratch, error
    auto* body_ty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    fn_ = llvm::Function::Create(body_ty, llvm::Function::InternalLinkage, entry_name_ + ".body", m);
    for (std::size_t i = 0; i < kp.size(); ++i)
      if (kp[i].mem) fn_->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
    fn_->addParamAttr(static_cast<unsigned>(kp.size() + 2), llvm::Attribute::NoAlias);
    fn_->addParamAttr(static_cast<unsigned>(kp.size() + 3), llvm::Attribute::NoAlias);
    fn_->addFnAttr(llvm::Attribute::AlwaysInline);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    // Vector width. A kernel whose lanes exchange values works on whole warps (32 lanes: two 512-bit
    // registers), and LLVM's own choice for the host serves it best. Any other kernel's thread loops
    // are streams of loads, arithmetic and stores, which ran faster in 256-bit vectors on the 512-bit
    // host measured (docs/cpu.md: saxpy 4 to 7%, the shared-memory sgemm 3 to 7%, where the block
    // reduction's shuffles lost 20 to 30%). A host with vectors of 256 bits or fewer is unaffected.
    const bool whole_warps = collectives_.lane_exchange(L_.kernel.body);
    if (!whole_warps) fn_->addFnAttr("prefer-vector-width", "256");
    entry_bb_ = BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry_bb_);
    block_ = fn_->getArg(static_cast<unsigned>(kp.size()));
    blocks_ = fn_->getArg(static_cast<unsigned>(kp.size() + 1));
    shared_ = fn_->getArg(static_cast<unsigned>(kp.size() + 2));
    scratch_ = fn_->getArg(static_cast<unsigned>(kp.size() + 3));
    err_ = fn_->getArg(static_cast<unsigned>(kp.size() + 4));

    Frame top;
    top.bid = b_.CreateTrunc(block_, b_.getInt32Ty());
    top.smem = shared_;
    std::size_t pointer = 0;
    std::vector<std::pair<const MemNode*, std::size_t>> pointers;
    for (std::size_t i = 0; i < kp.size(); ++i) {
      llvm::Value* a = fn_->getArg(static_cast<unsigned>(i));
      if (kp[i].mem) {
        MemRef r;
        r.space = MemSpace::Global;
        r.elem = kp[i].mem->elem;
        r.base = a;
        r.name = kp[i].name;
        top.mems[kp[i].mem.get()] = r;
        pointers.emplace_back(kp[i].mem.get(), pointer++);
      } else {
        top.vars[kp[i].var.get()] = Storage{Storage::Fixed, nullptr, a, nullptr};
        top.levels[kp[i].var.get()] = Lvl::Uniform;
      }
    }
    // The hidden lengths follow the user's parameters, one per pointer, in order.
    for (const auto& [mem, j] : pointers) top.mems[mem].bound = fn_->getArg(static_cast<unsigned>(L_.user_params + j));
    frame_ = &top;
    if (returns(L_.kernel.body)) {
      exited_ = scratch(T_);
      IRBuilder<> e(entry_bb_);
      e.CreateMemSet(exited_, e.getInt8(0), static_cast<std::uint64_t>(T_), llvm::MaybeAlign(1));
    }
    prepare(top, L_.kernel.body);
    uniform(L_.kernel.body, nullptr);
    b_.CreateRetVoid();

    // The entry: unpacks `args` (pointers to each value, as cuLaunchKernel takes them), then runs
    // the blocks [first, last) one after the other (one call per chunk of blocks: the unpacking
    // and the call are not paid per block).
    auto* entry_ty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64, i64, ptr, ptr, ptr}, false);
    auto* entry = llvm::Function::Create(entry_ty, llvm::Function::ExternalLinkage, entry_name_, m);
    entry->addFnAttr(llvm::Attribute::NoUnwind);
    if (!whole_warps) entry->addFnAttr("prefer-vector-width", "256");
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", entry));
    std::vector<Value*> args;
    for (std::size_t i = 0; i < kp.size(); ++i) {
      Value* slot = b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, entry->getArg(0), i));
      if (kp[i].mem)
        args.push_back(b_.CreateLoad(ptr, slot));
      else  // as the launcher packs it: bool a byte, 16-bit floats their bits
        args.push_back(from_mem(b_.CreateLoad(memtype(kp[i].var->type), slot), kp[i].var->type));
    }
    Value* first = entry->getArg(1);
    Value* last = entry->getArg(2);
    args.push_back(nullptr);  // the block, set in the loop
    for (unsigned i = 3; i < 7; ++i) args.push_back(entry->getArg(i));
    BasicBlock* pre = b_.GetInsertBlock();
    auto* head = BasicBlock::Create(ctx_, "blocks", entry);
    auto* body = BasicBlock::Create(ctx_, "block", entry);
    auto* done = BasicBlock::Create(ctx_, "blocks.done", entry);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    auto* blk = b_.CreatePHI(i64, 2, "blk");
    blk->addIncoming(first, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(blk, last), body, done);
    b_.SetInsertPoint(body);
    args[kp.size()] = blk;
    b_.CreateCall(fn_, args);
    blk->addIncoming(b_.CreateAdd(blk, b_.getInt64(1), "", true, true), body);
    auto* latch = b_.CreateBr(head);
    latch->setMetadata(llvm::LLVMContext::MD_loop, no_unroll_md());
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
    out_.scratch = scratch_bytes_;
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(m, &os)) throw InternalError("cpu: the generated LLVM IR does not verify:\n" + problems);
  }

 private:
  // ================================================================= types and small helpers
  llvm::Type* type(ScalarType t) {
    switch (t) {
      case ScalarType::Bool: return b_.getInt1Ty();
      case ScalarType::I32:
      case ScalarType::U32: return b_.getInt32Ty();
      case ScalarType::I64:
      case ScalarType::U64: return b_.getInt64Ty();
      case ScalarType::F16:
      case ScalarType::BF16:
      case ScalarType::F32: return b_.getFloatTy();  // 16-bit floats are computed in f32, rounded after each op
      case ScalarType::F64: return b_.getDoubleTy();
    }
    return b_.getInt32Ty();
  }
  /// How a value of type t is held in memory.
  llvm::Type* memtype(ScalarType t) {
    switch (t) {
      case ScalarType::Bool: return b_.getInt8Ty();
      case ScalarType::F16:
      case ScalarType::BF16: return b_.getInt16Ty();
      default: return type(t);
    }
  }
  std::int64_t bytes(ScalarType t) { return type_bytes(t); }

  llvm::FunctionCallee helper(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args) {
    auto c = out_.mod->getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(c.getCallee())) f->addFnAttr(llvm::Attribute::NoUnwind);
    return c;
  }
  /// A pure math function (libm or a Vantage helper): no memory, so loops stay vectorizable.
  llvm::FunctionCallee pure(const char* name, llvm::Type* ret, std::vector<llvm::Type*> args) {
    auto c = helper(name, ret, args);
    if (auto* f = llvm::dyn_cast<llvm::Function>(c.getCallee())) {
      f->setDoesNotAccessMemory();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
    return c;
  }

  /// A value of `memtype` as loaded, to its computing type.
  Value* from_mem(Value* v, ScalarType t) {
    if (t == ScalarType::Bool) return b_.CreateICmpNE(v, b_.getInt8(0));
    if (t == ScalarType::F16) return b_.CreateCall(pure("vt_cpu_f16_to_f32", b_.getFloatTy(), {b_.getInt16Ty()}), {v});
    if (t == ScalarType::BF16)
      return b_.CreateCall(pure("vt_cpu_bf16_to_f32", b_.getFloatTy(), {b_.getInt16Ty()}), {v});
    return v;
  }
  Value* to_mem(Value* v, ScalarType t) {
    if (t == ScalarType::Bool) return b_.CreateZExt(v, b_.getInt8Ty());
    if (t == ScalarType::F16) return b_.CreateCall(pure("vt_cpu_f32_to_f16", b_.getInt16Ty(), {b_.getFloatTy()}), {v});
    if (t == ScalarType::BF16)
      return b_.CreateCall(pure("vt_cpu_f32_to_bf16", b_.getInt16Ty(), {b_.getFloatTy()}), {v});
    return v;
  }
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
  Value* zero_of(llvm::Type* t) {
    auto [it, fresh] = zeros_.emplace(t, nullptr);
    if (fresh) it->second = zeroed_slot(t, "zero");
    return it->second;
  }
  /// An entry-block slot set to zero once, at the start of the block.
  llvm::AllocaInst* zeroed_slot(llvm::Type* t, const std::string& name) {
    auto* a = entry_alloca(t, name);
    IRBuilder<> e(entry_bb_, std::next(a->getIterator()));
    e.CreateStore(llvm::Constant::getNullValue(t), a);
    return a;
  }
  /// `bytes` of the block's scratch memory, 64-byte aligned.
  Value* scratch(std::int64_t n) {
    std::int64_t at = scratch_bytes_;
    scratch_bytes_ += (n + 63) / 64 * 64;
    IRBuilder<> e(entry_bb_, entry_bb_->begin());
    return e.CreateConstInBoundsGEP1_64(e.getInt8Ty(), scratch_, static_cast<std::uint64_t>(at));
  }

  /// Loop metadata of a lane loop: vectorize it, and do not unroll it before (a 32-lane loop would
  /// otherwise be unrolled into scalars first); unroll the vector loop fully after, so that values
  /// a uniform loop around it keeps per lane stay in vector registers.
  bool recompute_ = false;           ///< per-thread variables are computed from their definitions (index_of)
  Value* exited_ = nullptr;          ///< per thread, 1 once it returned (kernels with a `return`)
  BasicBlock* lane_cont_ = nullptr;  ///< the end of the current thread's iteration of its loop
  /// Where `continue` (next) and `break` (exit) go in the loops around the code being emitted.
  struct JumpTargets {
    BasicBlock* next;
    BasicBlock* exit;
  };
  std::vector<JumpTargets> jumps_;
  bool flat_ = false;  ///< the thread loop being made runs over the whole block (no warp loop)

  /// Whether statements use the index of their thread's warp (the thread's position divided by a
  /// multiple of 32, directly or through a variable), which a loop per warp keeps a scalar.
  bool uses_warp_index(const std::vector<StmtPtr>& stmts) {
    struct Scan : IRVisitor {
      Gen& g;
      bool found = false;
      std::unordered_set<const VarNode*> seen;
      explicit Scan(Gen& gen) : g(gen) {}
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

  llvm::MDNode* lane_loop_md() {
    auto str = [&](const char* s) { return llvm::MDString::get(ctx_, s); };
    auto* unroll_full = llvm::MDNode::get(ctx_, {str("llvm.loop.unroll.full")});
    return loop_md({
        llvm::MDNode::get(
            ctx_, {str("llvm.loop.vectorize.enable"), llvm::ConstantAsMetadata::get(llvm::ConstantInt::getTrue(ctx_))}),
        llvm::MDNode::get(ctx_, {str("llvm.loop.unroll.disable")}),
        llvm::MDNode::get(ctx_, {str("llvm.loop.vectorize.followup_vectorized"), unroll_full}),
    });
  }
  /// The entry's loop over a chunk of blocks is not unrolled (a copy of the whole block per trip).
  llvm::MDNode* no_unroll_md() {
    return loop_md({llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")})});
  }
  /// A loop's own id (a distinct node naming itself first) carrying `properties`.
  llvm::MDNode* loop_md(std::vector<llvm::Metadata*> properties) {
    auto* temp = llvm::MDNode::getTemporary(ctx_, {}).release();
    properties.insert(properties.begin(), temp);
    auto* id = llvm::MDNode::getDistinct(ctx_, properties);
    id->replaceOperandWith(0, id);
    llvm::MDNode::deleteTemporary(temp);
    return id;
  }

  /// `for (i = from; i < to; ++i) body(i)` with i of type `t`; `lanes`: a lane loop (above).
  void loop(Value* from, Value* to, const std::function<void(Value*)>& body, const char* name = "i",
            bool lanes = false) {
    llvm::Type* t = from->getType();
    auto* counter = entry_alloca(t, name);
    b_.CreateStore(from, counter);
    auto* head = BasicBlock::Create(ctx_, std::string(name) + ".head", fn_);
    auto* in = BasicBlock::Create(ctx_, std::string(name) + ".body", fn_);
    auto* done = BasicBlock::Create(ctx_, std::string(name) + ".done", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    Value* i = b_.CreateLoad(t, counter);
    b_.CreateCondBr(b_.CreateICmpSLT(i, to), in, done);
    b_.SetInsertPoint(in);
    body(i);
    Value* next = b_.CreateAdd(b_.CreateLoad(t, counter), llvm::ConstantInt::get(t, 1), "", true, true);
    b_.CreateStore(next, counter);
    auto* latch = b_.CreateBr(head);
    if (lanes) latch->setMetadata(llvm::LLVMContext::MD_loop, lane_loop_md());
    b_.SetInsertPoint(done);
  }
  void if_then(Value* cond, const std::function<void()>& then) {
    auto* t = BasicBlock::Create(ctx_, "then", fn_);
    auto* j = BasicBlock::Create(ctx_, "join", fn_);
    b_.CreateCondBr(cond, t, j);
    b_.SetInsertPoint(t);
    then();
    b_.CreateBr(j);
    b_.SetInsertPoint(j);
  }

  /// The lanes of warp `w` (32, or fewer in the last warp of a block that is not a multiple of 32).
  Value* lanes_in(Value* w) {
    if (T_ % 32 == 0) return b_.getInt32(32);
    Value* left = b_.CreateSub(b_.getInt32(static_cast<std::int32_t>(T_)), b_.CreateShl(w, 5));
    return b_.CreateSelect(b_.CreateICmpSLT(left, b_.getInt32(32)), left, b_.getInt32(32));
  }
  std::int32_t warps() const { return static_cast<std::int32_t>((T_ + 31) / 32); }
  /// `body(w)` for the current warp in a warp region, for every warp of the block otherwise.
  void each_warp(const std::function<void(Value*)>& body, const char* name) {
    if (warp_) {
      body(warp_);
      return;
    }
    loop(b_.getInt32(0), b_.getInt32(warps()), body, name);
  }
  Value* active(Value* mask) {
    return b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, tid_)),
                           b_.getInt8(0));
  }

  /// A thread loop over the threads `mask` (a per-thread i8 array; null: all) of the current warp
  /// in a warp region, of the block otherwise: `body()` with tid_ the thread. A loop over 32 lanes
  /// (in a loop over warps), which LLVM vectorizes; the checks made in it are reported after it.
  void threads(Value* mask, const std::function<void()>& body, const LaneRange* range = nullptr) {
    // A range of at most 4 lanes (`lane < 1`: the first thread of each warp) stays a scalar loop:
    // vectorized by 16, its one iteration became a masked gather and scatter per access.
    bool few = false;
    if (range && (range->op == BinOp::Lt || range->op == BinOp::Le))
      if (auto k = const_int(range->k)) few = *k + (range->op == BinOp::Le ? 1 : 0) <= 4;
    std::vector<PendingCheck> checks;
    auto* saved_pending = pending_;
    pending_ = &checks;
    auto lanes = [&](Value* w) {
      Value* lo = b_.getInt32(0);
      Value* hi = lanes_in(w);
      if (range) restrict_lanes(*range, w, lo, hi);
      loop(
          lo, hi,
          [&](Value* l) {
            Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
            // 32 w + l as an add, not an or: LLVM's scalar evolution then sees an affine position.
            tid_ = b_.CreateAdd(b_.CreateShl(w, 5, "", true, true), l, "tid", true, true);
            lane_ = l;
            lane_warp_ = w;
            one_thread(mask, body);
            tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
          },
          "lane", !few);
    };
    if (flat_ && !warp_) {
      // One loop over the block (tid = 32 w + l still holds for the position arithmetic), over the
      // range's threads where it has one (its bounds are the same for the whole block).
      Value* lo = b_.getInt32(0);
      Value* hi = b_.getInt32(static_cast<std::int32_t>(T_));
      if (range) restrict_lanes(*range, b_.getInt32(0), lo, hi);
      loop(
          lo, hi,
          [&](Value* t) {
            Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
            tid_ = t;
            lane_ = b_.CreateAnd(t, b_.getInt32(31));
            lane_warp_ = b_.CreateLShr(t, 5);
            one_thread(mask, body);
            tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
          },
          "thread", true);
    } else {
      each_warp(lanes, "warp");
    }
    pending_ = saved_pending;
    for (const auto& c : checks) report(c);
  }
  /// [lo, hi) narrowed to the lanes of warp `w` that satisfy the range's condition.
  void restrict_lanes(const LaneRange& r, Value* w, Value*& lo, Value*& hi) {
    Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
    lane_warp_ = w;
    lane_ = b_.getInt32(0);
    tid_ = b_.CreateShl(w, 5, "", true, true);
    Value* k = b_.CreateSExt(expr(r.k), b_.getInt64Ty());
    if (r.offset) k = b_.CreateSub(k, b_.CreateSExt(expr(r.offset), b_.getInt64Ty()));
    tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
    // The first lane past the split: k - 32 w (k + 1 - 32 w for <= and >; k or k + 1 for a range
    // of lanes), clamped to [0, hi].
    if (r.op == BinOp::Le || r.op == BinOp::Gt) k = b_.CreateAdd(k, b_.getInt64(1));
    Value* at = r.lane ? k : b_.CreateSub(k, b_.CreateShl(b_.CreateZExt(w, b_.getInt64Ty()), 5));
    Value* n = b_.CreateZExt(hi, b_.getInt64Ty());
    at = b_.CreateSelect(b_.CreateICmpSLT(at, b_.getInt64(0)), b_.getInt64(0), at);
    at = b_.CreateTrunc(b_.CreateSelect(b_.CreateICmpSGT(at, n), n, at), b_.getInt32Ty());
    if (r.op == BinOp::Lt || r.op == BinOp::Le)
      hi = at;
    else
      lo = at;
  }

  /// The body of a thread loop for thread tid_: skipped when the thread is not in `mask` or has
  /// returned; a `return` in it jumps to its end.
  void one_thread(Value* mask, const std::function<void()>& body) {
    auto* cont = BasicBlock::Create(ctx_, "thread.next", fn_);
    BasicBlock* saved = lane_cont_;
    lane_cont_ = cont;
    Value* go = mask ? active(mask) : nullptr;
    if (exited_) {
      Value* live = b_.CreateICmpEQ(b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), exited_, tid_)),
                                    b_.getInt8(0));
      go = go ? b_.CreateAnd(go, live) : live;
    }
    if (go)
      if_then(go, body);
    else
      body();
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
    lane_cont_ = saved;
  }

  /// A pending check's failure, if its loop had one, recorded (then the slot is cleared for the
  /// loop's next run).
  void report(const PendingCheck& c) {
    Value* worst = b_.CreateLoad(b_.getInt32Ty(), c.worst);
    if_then(b_.CreateICmpNE(worst, b_.getInt32(0)), [&] {
      Value* t = b_.CreateSub(worst, b_.getInt32(1));
      Value* i = c.index_expr ? index_of(c.index_expr, t)
                 : c.narrow
                     ? b_.CreateSExt(b_.CreateLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(b_.getInt32Ty(), c.index, t)),
                                     b_.getInt64Ty())
                     : b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), c.index, t));
      Value* n = c.bound_per_thread ? b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), c.bound, t))
                                    : b_.CreateLoad(b_.getInt64Ty(), c.bound);
      fail(c.site, i, n, t);
      b_.CreateStore(b_.getInt32(0), c.worst);
    });
  }
  /// Whether `e` can be computed again for any thread after its loop: made of constants, the
  /// thread's and block's positions, values the same for every thread that do not change, and
  /// per-thread variables assigned only where they are defined, from such values.
  bool recomputable(const ExprPtr& e, int depth = 0) {
    if (!e || depth > 16) return false;
    return dispatch(
        *e, Overloaded{
                [](const Literal&) { return true; },
                [&](const VarRef& n) {
                  const VarNode* v = n.var.get();
                  if (frame_->reassigned.count(v)) return false;
                  auto it = frame_->vars.find(v);
                  if (it != frame_->vars.end() && it->second.kind == Storage::Fixed) return true;
                  if (frame_->levels[v] == Lvl::Uniform) return it != frame_->vars.end();
                  const ExprPtr* d = definition(v);
                  return d && recomputable(*d, depth + 1);
                },
                [&](const Unary& n) { return recomputable(n.a, depth + 1); },
                [&](const Binary& n) { return recomputable(n.a, depth + 1) && recomputable(n.b, depth + 1); },
                [&](const Cast& n) { return recomputable(n.a, depth + 1); },
                [&](const Select& n) {
                  return recomputable(n.c, depth + 1) && recomputable(n.a, depth + 1) && recomputable(n.b, depth + 1);
                },
                [](const MathCall&) { return false; },
                [](const Id&) { return false; },
                [](const Builtin&) { return true; },
                [](const Load&) { return false; },
            });
  }
  /// A recomputable index expression's value for thread `t` of the kernel's own frame.
  Value* index_of(const ExprPtr& e, Value* t) {
    Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
    tid_ = t;
    lane_ = b_.CreateAnd(t, b_.getInt32(31));
    lane_warp_ = b_.CreateLShr(t, 5);
    bool saved = recompute_;
    recompute_ = true;
    Value* v = i64(expr(e), e->type);
    recompute_ = saved;
    tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
    return v;
  }
  /// Whether any thread of `mask` (of the current warp, or the block) is active.
  Value* any_active(Value* mask) {
    auto* any = entry_alloca(b_.getInt8Ty(), "any_active");
    b_.CreateStore(b_.getInt8(0), any);
    threads(nullptr, [&] {
      Value* m = b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, tid_));
      b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt8Ty(), any), m), any);
    });
    return b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), any), b_.getInt8(0));
  }

  // ================================================================= levels and plans
  /// The level of an expression in frame `f`.
  Lvl level(const ExprPtr& e, Frame& f) {
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

  /// The levels of a frame's variables (a fixed point: assignments in loops, control dependence).
  void levels(Frame& f, const StmtPtr& body) {
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

  /// Whether a statement is the same for every thread (emitted once in the uniform context).
  bool uniform_stmt(const StmtPtr& s, Frame& f) {
    if (const auto* n = as<Let>(*s)) return f.levels[n->var.get()] == Lvl::Uniform;
    if (const auto* n = as<Assign>(*s)) return f.levels[n->var.get()] == Lvl::Uniform;
    return s->kind == StmtKind::SharedAlloc || s->kind == StmtKind::LocalAlloc;
  }
  /// Control flow on values the same for every thread. A loop a thread may leave early (break or
  /// continue inside, in thread(1) code) is each thread's own, run inside the thread loop.
  bool uniform_control(const StmtPtr& s, Frame& f) {
    if (const auto* n = as<If>(*s)) return level(n->cond, f) == Lvl::Uniform;
    if (const auto* n = as<For>(*s)) return f.levels[n->var.get()] == Lvl::Uniform && !has_jump(n->body);
    if (const auto* n = as<While>(*s)) return level(n->cond, f) == Lvl::Uniform && !has_jump(n->body);
    return false;
  }
  static bool has_jump(const StmtPtr& s) {
    struct Scan : IRVisitor {
      bool found = false;
      void visit(const Jump&) override { found = true; }
    } scan;
    scan.walk(s);
    return scan.found;
  }

  /// An `if` whose condition is the same for the lanes of each warp (a split at warp boundaries):
  /// taken once per warp, around thread loops, rather than per thread.
  bool warp_control(const StmtPtr& s) {
    const auto* n = as<If>(*s);
    return n && warp_uniform(n->cond);
  }
  /// Whether a condition is the same for the 32 lanes of every warp: the same for each lane, or the
  /// thread's position compared with a multiple of 32 (and combinations of such).
  bool warp_uniform(const ExprPtr& c, int depth = 0) {
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
  /// A warp-uniform condition's value for the warp at hand (computed as its first lane sees it).
  Value* warp_condition(const ExprPtr& c) {
    Value *saved_tid = tid_, *saved_lane = lane_, *saved_warp = lane_warp_;
    lane_warp_ = warp_;
    lane_ = b_.getInt32(0);
    tid_ = b_.CreateShl(warp_, 5, "", true, true);
    Value* v = expr(c);
    tid_ = saved_tid, lane_ = saved_lane, lane_warp_ = saved_warp;
    return v;
  }

  /// One group of a sequence in the uniform context.
  struct Group {
    enum Kind : std::uint8_t { Leaf, Single } kind;
    std::vector<StmtPtr> stmts;
  };
  /// A leaf that is one `if (tid < k)` without else: its LaneRange.
  std::optional<LaneRange> lane_range(const Group& g) {
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
  /// Whether the groups [i, j) of a region run as loops over the whole block (see `uniform`): one
  /// leaf with no range, or leaves and uniform lets of which one is a range with block-uniform
  /// bounds, the other leaves lets (a range's loop runs over fewer threads than the block).
  bool flat_region(const std::vector<Group>& gs, std::size_t i, std::size_t j) {
    int ranges = 0;
    for (std::size_t k = i; k < j; ++k) {
      const Group& g = gs[k];
      if (g.kind != Group::Leaf) {
        if (j != i + 1 && as<Let>(*g.stmts[0])) continue;  // a uniform let: once for the block
        return false;
      }
      if (uses_warp_index(g.stmts)) return false;
      if (auto r = lane_range(g)) {
        if (r->lane || level(r->k, *frame_) != Lvl::Uniform || (r->offset && level(r->offset, *frame_) != Lvl::Uniform))
          return false;  // a range of lanes is one per warp, not one for the block
        ++ranges;
      } else if (j != i + 1) {
        for (const auto& x : g.stmts)
          if (!as<Let>(*x)) return false;
      }
    }
    return ranges <= 1;
  }
  /// Whether c + tid may leave i32 for a thread of the block.
  bool wraps_with_position(const ExprPtr& c) {
    return ir::value_range(resolved(c), launch_env_).hi > std::int64_t{INT32_MAX} - (T_ - 1);
  }
  /// `e` with the values of the lets it reads put in (a few levels deep), so that range analysis
  /// sees `blk * 256` as block_index * 256.
  ExprPtr resolved(const ExprPtr& e) {
    class Defs : public ir::IRMutator {
     public:
      explicit Defs(Gen& g) : g_(g) {}
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
      Gen& g_;
      int depth_ = 0;
    } defs(*this);
    return defs.mutate(e);
  }
  /// Whether an integer +, - or * is proven never to leave its type (then LLVM is told so: nsw or
  /// nuw, which lets its scalar evolution see `blk * 256 + t` as affine in t).
  bool never_wraps(const Binary& n) {
    if (n.op != BinOp::Add && n.op != BinOp::Sub && n.op != BinOp::Mul) return false;
    if (n.a->type != n.type || n.b->type != n.type) return false;
    ExprPtr e = resolved(make<Binary>(n.type, n.op, n.a, n.b, n.loc));  // held: `r` points into it
    const auto* r = as<Binary>(*e);
    return r && !ir::may_overflow(*r, launch_env_);
  }

  /// Nested sequences flattened, then cut into groups (see the file's comment).
  std::vector<Group> groups(const StmtPtr& s, Frame& f) {
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
    std::vector<Group> out;
    for (const auto& x : flat) {
      bool single = collectives_.of(x) || uniform_stmt(x, f) || uniform_control(x, f) || warp_control(x);
      // An `if` that a range of lanes takes is a leaf of its own (its loop runs over the range).
      bool alone = !single && lane_range(Group{Group::Leaf, {x}});
      if (single) {
        out.push_back({Group::Single, {x}});
      } else if (!alone && !out.empty() && out.back().kind == Group::Leaf && !lane_range(out.back())) {
        out.back().stmts.push_back(x);
      } else {
        out.push_back({Group::Leaf, {x}});
      }
    }
    return out;
  }

  /// Which leaf each varying variable is used in (-1: more than one, or outside leaves).
  void plan(Frame& f, const StmtPtr& body) {
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
        if (g.kind == Group::Leaf) {
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

  /// Whether an expression is a pure function of the thread's position and values that do not
  /// change (so it may be recomputed wherever it is used).
  bool pure(const ExprPtr& e, Frame& f, int depth = 0) {
    if (!e || depth > 8) return false;
    return dispatch(*e, Overloaded{
                            [](const Literal&) { return true; },
                            [&](const VarRef& n) {
                              if (f.reassigned.count(n.var.get())) return false;
                              auto it = f.vars.find(n.var.get());
                              if (it == f.vars.end()) return false;
                              // A per-thread scalar holds one thread's value only inside its own leaf.
                              if (it->second.kind == Storage::Scalar) return f.levels[n.var.get()] == Lvl::Uniform;
                              return it->second.kind != Storage::Array;
                            },
                            [&](const Unary& n) { return pure(n.a, f, depth + 1); },
                            [&](const Binary& n) { return pure(n.a, f, depth + 1) && pure(n.b, f, depth + 1); },
                            [&](const Cast& n) { return pure(n.a, f, depth + 1); },
                            [&](const Select& n) {
                              return pure(n.c, f, depth + 1) && pure(n.a, f, depth + 1) && pure(n.b, f, depth + 1);
                            },
                            [](const MathCall&) { return false; },
                            [](const Id&) { return false; },
                            [&](const Builtin&) { return true; },
                            [](const Load&) { return false; },
                        });
  }

  /// The storage of a variable, decided at its first definition.
  Storage& define(const VarPtr& v, const ExprPtr& value) {
    Frame& f = *frame_;
    auto it = f.vars.find(v.get());
    if (it != f.vars.end()) return it->second;
    Storage s;
    auto leaf = f.leaf_of.find(v.get());
    bool varying = f.levels[v.get()] == Lvl::Varying;
    if (!varying || f.in_thread || (leaf != f.leaf_of.end() && leaf->second >= 0)) {
      s.kind = Storage::Scalar;
      s.ptr = entry_alloca(type(v->type), v->name);
    } else if (value && !f.reassigned.count(v.get()) && pure(value, f)) {
      s.kind = Storage::Remat;
      s.remat = value;
    } else {
      s.kind = Storage::Array;
      s.ptr = scratch(T_ * static_cast<std::int64_t>(8));
    }
    return f.vars.emplace(v.get(), s).first->second;
  }
  /// A per-thread array for a variable that must have one (outputs of warp operations, loops on
  /// varying values around collectives).
  Storage& define_array(const VarPtr& v) {
    Frame& f = *frame_;
    auto it = f.vars.find(v.get());
    if (it != f.vars.end()) {
      if (it->second.kind != Storage::Array) throw InternalError("cpu: variable '" + v->name + "' changed storage");
      return it->second;
    }
    Storage s;
    s.kind = Storage::Array;
    s.ptr = scratch(T_ * static_cast<std::int64_t>(8));
    return f.vars.emplace(v.get(), s).first->second;
  }

  Value* read_var(const VarNode* v, SourceLoc l) {
    Frame& f = *frame_;
    auto it = f.vars.find(v);
    if (it == f.vars.end())
      throw InternalError("cpu: variable '" + v->name + "' used before it is defined at " + l.str());
    const Storage& s = it->second;
    switch (s.kind) {
      case Storage::Fixed: return s.value;
      case Storage::Scalar: return b_.CreateLoad(type(v->type), s.ptr, v->name);
      case Storage::Remat: return expr(s.remat);
      case Storage::Array:
        if (!tid_) throw InternalError("cpu: per-thread variable '" + v->name + "' read outside a thread loop");
        return b_.CreateLoad(type(v->type), b_.CreateInBoundsGEP(type(v->type), s.ptr, tid_));
    }
    return nullptr;
  }
  void write_var(const VarPtr& v, Value* x, const ExprPtr& def) {
    Storage& s = define(v, def);
    switch (s.kind) {
      case Storage::Scalar: b_.CreateStore(x, s.ptr); return;
      case Storage::Array:
        if (!tid_) throw InternalError("cpu: per-thread variable '" + v->name + "' written outside a thread loop");
        b_.CreateStore(x, b_.CreateInBoundsGEP(type(v->type), s.ptr, tid_));
        return;
      case Storage::Remat: return;  // recomputed where it is read
      case Storage::Fixed: throw InternalError("cpu: a parameter is assigned");
    }
  }

  // ================================================================= expressions
  Value* expr(const ExprPtr& e) {
    return dispatch(*e, Overloaded{
                            [&](const Literal& n) -> Value* {
                              if (n.type == ScalarType::Bool) return b_.getInt1(n.i != 0);
                              if (is_integral(n.type))
                                return llvm::ConstantInt::get(type(n.type), static_cast<std::uint64_t>(n.i));
                              if (n.type == ScalarType::F64) return llvm::ConstantFP::get(b_.getDoubleTy(), n.f);
                              double v = n.f;
                              if (half_type(n.type)) return round16(llvm::ConstantFP::get(b_.getFloatTy(), v), n.type);
                              return llvm::ConstantFP::get(b_.getFloatTy(), static_cast<float>(v));
                            },
                            [&](const VarRef& n) {
                              if (recompute_ && frame_->levels[n.var.get()] == Lvl::Varying)
                                if (const ExprPtr* d = definition(n.var.get())) return expr(*d);
                              return read_var(n.var.get(), n.loc);
                            },
                            [&](const Unary& n) { return unary(n); },
                            [&](const Binary& n) { return binary(n); },
                            [&](const Cast& n) { return cast(n.a->type, n.type, expr(n.a)); },
                            [&](const Select& n) {
                              Value* c = expr(n.c);
                              Value* a = expr(n.a);
                              Value* b = expr(n.b);
                              return b_.CreateSelect(c, a, b);
                            },
                            [&](const MathCall& n) { return math(n); },
                            [](const Id&) -> Value* { throw InternalError("cpu: an id() in lowered IR"); },
                            [&](const Builtin& n) { return builtin(n.which); },
                            [&](const Load& n) { return load(n); },
                        });
  }

  Value* builtin(BuiltinKind which) {
    Frame& f = *frame_;
    if (which == BuiltinKind::BlockInGrid) return f.bid;
    if (which == BuiltinKind::BlocksInGrid) return b_.CreateTrunc(blocks_, b_.getInt32Ty());
    if (!f.tid_array) {
      if (!tid_) throw InternalError("cpu: the thread's position read outside a thread loop");
      return tid_;
    }
    if (f.tid_level == Lvl::Uniform) return f.tid_array;  // a uniform position is held as its value
    return b_.CreateTrunc(b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), f.tid_array, tid_)),
                          b_.getInt32Ty());
  }

  Value* unary(const Unary& n) {
    Value* a = expr(n.a);
    if (!is_integral(n.type)) {
      if (n.op == UnOp::Neg) return round16(b_.CreateFNeg(a), n.type);
      return a;
    }
    switch (n.op) {
      case UnOp::Neg: return b_.CreateSub(llvm::ConstantInt::get(a->getType(), 0), a);
      case UnOp::Not: return b_.CreateICmpEQ(a, llvm::ConstantInt::get(a->getType(), 0));
      case UnOp::BitNot: return b_.CreateNot(a);
    }
    return a;
  }

  /// The value a variable always holds, when it is assigned only where it is defined.
  const ExprPtr* definition(const VarNode* v) {
    Frame& f = *frame_;
    if (f.reassigned.count(v)) return nullptr;
    auto it = f.defs.find(v);
    return it == f.defs.end() ? nullptr : &it->second;
  }
  /// Whether `e` is the thread's own position in the block (thread_index, or a copy of it).
  bool is_tid(const ExprPtr& e, int depth = 0) {
    if (depth > 8) return false;
    if (const auto* b = as<Builtin>(*e)) return b->which == BuiltinKind::ThreadInBlock && !frame_->tid_array;
    if (const auto* r = as<VarRef>(*e))
      if (const ExprPtr* d = definition(r->var.get())) return is_tid(*d, depth + 1);
    return false;
  }
  /// Whether `e` is the same for the 32 lanes of a warp in a thread loop: made of values the same
  /// for every thread and of the thread's position divided by a multiple of 32.
  bool lane_invariant(const ExprPtr& e, int depth = 0) {
    if (!e || depth > 12) return false;
    if (level(e, *frame_) == Lvl::Uniform && !as<Load>(*e)) return true;
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
  /// The thread's position divided by, or modulo, a power of two, from its warp and lane: what
  /// LLVM cannot see on its own, and what lets it keep `t / 32` a scalar in a lane loop.
  Value* position_arithmetic(const Binary& n) {
    if (!lane_ || (n.op != BinOp::Div && n.op != BinOp::Mod) || n.a->type != n.type ||
        (n.type != ScalarType::I32 && n.type != ScalarType::U32) || !is_tid(n.a))
      return nullptr;
    auto c = const_int(n.b);
    if (!c || *c <= 0 || (*c & (*c - 1)) != 0 || *c > (std::int64_t{1} << 30)) return nullptr;
    int k = 0;
    while ((std::int64_t{1} << k) < *c) ++k;
    Value* w = lane_warp_;
    Value* l = lane_;
    if (n.op == BinOp::Div)
      return k >= 5 ? b_.CreateLShr(w, static_cast<std::uint64_t>(k - 5))
                    : b_.CreateOr(b_.CreateShl(w, static_cast<std::uint64_t>(5 - k), "", true, true),
                                  b_.CreateLShr(l, static_cast<std::uint64_t>(k)));
    return k >= 5 ? b_.CreateOr(b_.CreateShl(b_.CreateAnd(w, b_.getInt32(static_cast<std::int32_t>((*c >> 5) - 1))), 5,
                                             "", true, true),
                                l)
                  : b_.CreateAnd(l, b_.getInt32(static_cast<std::int32_t>(*c - 1)));
  }

  Value* binary(const Binary& n) {
    if (Value* p = position_arithmetic(n)) return p;
    Value* a = expr(n.a);
    Value* b = expr(n.b);
    ScalarType t = n.a->type;
    // An index composed from a view (t + i, with i an index the code wrote at another width) mixes
    // widths: the operands take the node's type, as its other operations do (shifts keep theirs).
    if (is_integral(t) && is_integral(n.b->type) && n.op != BinOp::Shl && n.op != BinOp::Shr &&
        a->getType() != b->getType()) {
      ScalarType want = is_comparison(n.op) ? n.a->type : n.type;
      llvm::Type* wt = memtype(want);
      auto to = [&](Value* v, ScalarType from) {
        if (v->getType() == wt) return v;
        return unsigned_type(from) ? b_.CreateZExtOrTrunc(v, wt) : b_.CreateSExtOrTrunc(v, wt);
      };
      a = to(a, n.a->type);
      b = to(b, n.b->type);
      t = want;
    }
    if (is_integral(t)) {
      if (t == n.type && never_wraps(n)) {
        bool sgn = !unsigned_type(t);
        switch (n.op) {
          case BinOp::Add: return b_.CreateAdd(a, b, "", !sgn, sgn);
          case BinOp::Sub: return b_.CreateSub(a, b, "", !sgn, sgn);
          case BinOp::Mul: return b_.CreateMul(a, b, "", !sgn, sgn);
          default: break;
        }
      }
      return int_binary(n.op, t, n.b->type, a, b);
    }
    auto* f = a->getType();
    Value* r = nullptr;
    switch (n.op) {
      case BinOp::Add: r = b_.CreateFAdd(a, b); break;
      case BinOp::Sub: r = b_.CreateFSub(a, b); break;
      case BinOp::Mul: r = b_.CreateFMul(a, b); break;
      case BinOp::Div: r = b_.CreateFDiv(a, b); break;
      case BinOp::Mod: r = b_.CreateFRem(a, b); break;  // fmod: exact
      case BinOp::Min:
      case BinOp::Max: {
        bool dbl = f->isDoubleTy();
        const char* name = n.op == BinOp::Min ? (dbl ? "fmin" : "fminf") : (dbl ? "fmax" : "fmaxf");
        r = b_.CreateCall(pure(name, f, {f, f}), {a, b});
        break;
      }
      case BinOp::Pow: r = libm_double("pow", {a, b}, f); break;
      case BinOp::Eq: return b_.CreateFCmpOEQ(a, b);
      case BinOp::Ne: return b_.CreateFCmpUNE(a, b);
      case BinOp::Lt: return b_.CreateFCmpOLT(a, b);
      case BinOp::Le: return b_.CreateFCmpOLE(a, b);
      case BinOp::Gt: return b_.CreateFCmpOGT(a, b);
      case BinOp::Ge: return b_.CreateFCmpOGE(a, b);
      default: throw InternalError("cpu: an integer operation on floats");
    }
    return round16(r, n.type);
  }

  /// docs/semantics.md's integer operations (jit/ir/eval), as LLVM computes them.
  Value* int_binary(BinOp op, ScalarType t, ScalarType bt, Value* a, Value* b) {
    bool sgn = !unsigned_type(t);
    auto* ty = a->getType();
    auto zero = llvm::ConstantInt::get(ty, 0);
    switch (op) {
      case BinOp::Add: return b_.CreateAdd(a, b);
      case BinOp::Sub: return b_.CreateSub(a, b);
      case BinOp::Mul: return b_.CreateMul(a, b);
      case BinOp::Div:
      case BinOp::Mod: {
        // x / 0 is all ones, x % 0 is x; MIN / -1 wraps to MIN and MIN % -1 is 0.
        bool div = op == BinOp::Div;
        Value* by_zero = b_.CreateICmpEQ(b, zero);
        Value* safe = b_.CreateSelect(by_zero, llvm::ConstantInt::get(ty, 1), b);
        Value* r;
        if (sgn) {
          Value* minus_one = b_.CreateICmpEQ(safe, llvm::ConstantInt::getSigned(ty, -1));
          safe = b_.CreateSelect(minus_one, llvm::ConstantInt::get(ty, 1), safe);
          r = div ? b_.CreateSDiv(a, safe) : b_.CreateSRem(a, safe);
          // By -1: the quotient is -a (wrapping), the remainder 0.
          r = b_.CreateSelect(minus_one, div ? b_.CreateSub(zero, a) : static_cast<Value*>(zero), r);
        } else {
          r = div ? b_.CreateUDiv(a, safe) : b_.CreateURem(a, safe);
        }
        return b_.CreateSelect(by_zero, div ? llvm::ConstantInt::getSigned(ty, -1) : a, r);
      }
      case BinOp::And: return b_.CreateAnd(a, b);
      case BinOp::Or: return b_.CreateOr(a, b);
      case BinOp::Xor: return b_.CreateXor(a, b);
      case BinOp::Shl:
      case BinOp::Shr: {
        // The amount is read as unsigned in its own type; the width or more gives 0 (or the sign).
        unsigned w = ty->getIntegerBitWidth();
        Value* amount = i64(b, bt);
        Value* over = b_.CreateICmpUGE(amount, b_.getInt64(w));
        Value* sh = b_.CreateTrunc(b_.CreateSelect(over, b_.getInt64(0), amount), ty);
        if (op == BinOp::Shl) return b_.CreateSelect(over, zero, b_.CreateShl(a, sh));
        if (!sgn) return b_.CreateSelect(over, zero, b_.CreateLShr(a, sh));
        return b_.CreateSelect(over, b_.CreateAShr(a, llvm::ConstantInt::get(ty, w - 1)), b_.CreateAShr(a, sh));
      }
      case BinOp::LAnd: return b_.CreateAnd(a, b);
      case BinOp::LOr: return b_.CreateOr(a, b);
      case BinOp::Eq: return b_.CreateICmpEQ(a, b);
      case BinOp::Ne: return b_.CreateICmpNE(a, b);
      case BinOp::Lt: return sgn ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
      case BinOp::Le: return sgn ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
      case BinOp::Gt: return sgn ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
      case BinOp::Ge: return sgn ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
      case BinOp::Min: return b_.CreateSelect(sgn ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b), a, b);
      case BinOp::Max: return b_.CreateSelect(sgn ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b), a, b);
      case BinOp::Pow: break;
    }
    throw InternalError("cpu: no integer operation " + std::string(name_of(op)));
  }

  Value* cast(ScalarType from, ScalarType to, Value* a) {
    if (from == to) return a;
    if (is_integral(from) && is_integral(to)) {
      if (to == ScalarType::Bool) return b_.CreateICmpNE(a, llvm::ConstantInt::get(a->getType(), 0));
      if (from == ScalarType::Bool) return b_.CreateZExt(a, type(to));
      unsigned fw = a->getType()->getIntegerBitWidth(), tw = type(to)->getIntegerBitWidth();
      if (fw == tw) return a;
      if (fw > tw) return b_.CreateTrunc(a, type(to));
      return unsigned_type(from) ? b_.CreateZExt(a, type(to)) : b_.CreateSExt(a, type(to));
    }
    if (from == ScalarType::F64 && half_type(to)) {  // one rounding (support/float16.h)
      auto fn = pure("vt_cpu_f64_to_16", b_.getInt16Ty(), {b_.getDoubleTy(), b_.getInt32Ty()});
      return from_mem(b_.CreateCall(fn, {a, b_.getInt32(to == ScalarType::BF16)}), to);
    }
    if (is_float(from) && is_float(to)) {
      llvm::Type* ft = type(to);
      if (a->getType() != ft) a = ft->isDoubleTy() ? b_.CreateFPExt(a, ft) : b_.CreateFPTrunc(a, ft);
      return round16(a, to);
    }
    if (is_float(from)) {
      if (to == ScalarType::Bool) return b_.CreateFCmpUNE(a, llvm::ConstantFP::get(a->getType(), 0.0));
      // Truncate toward zero, saturate, NaN to 0 (cvt.rzi).
      auto id = unsigned_type(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
      return b_.CreateIntrinsic(id, {type(to), a->getType()}, {a});
    }
    // Integer to float: one rounding (to a 16-bit float by the helper the interpreter uses too).
    if (half_type(to) && from != ScalarType::Bool) {
      auto fn = pure("vt_cpu_int_to_16", b_.getInt16Ty(), {b_.getInt64Ty(), b_.getInt32Ty(), b_.getInt32Ty()});
      return from_mem(
          b_.CreateCall(fn, {i64(a, from), b_.getInt32(unsigned_type(from)), b_.getInt32(to == ScalarType::BF16)}), to);
    }
    if (from == ScalarType::Bool) a = b_.CreateZExt(a, b_.getInt32Ty());
    llvm::Type* ft = to == ScalarType::F64 ? b_.getDoubleTy() : b_.getFloatTy();
    Value* r = unsigned_type(from) ? b_.CreateUIToFP(a, ft) : b_.CreateSIToFP(a, ft);
    return round16(r, to);
  }

  /// A libm function computed in double and rounded to the operand's type, as the interpreter does.
  Value* libm_double(const char* name, std::vector<Value*> xs, llvm::Type* t) {
    std::vector<llvm::Type*> ds(xs.size(), b_.getDoubleTy());
    for (auto& x : xs)
      if (!x->getType()->isDoubleTy()) x = b_.CreateFPExt(x, b_.getDoubleTy());
    Value* r = b_.CreateCall(pure(name, b_.getDoubleTy(), ds), xs);
    return t->isDoubleTy() ? r : b_.CreateFPTrunc(r, t);
  }

  Value* math(const MathCall& n) {
    std::vector<Value*> xs;
    for (const auto& a : n.args) xs.push_back(expr(a));
    ScalarType t = n.type;
    if (is_bit_fn(n.fn)) {
      Value* x = xs[0];
      llvm::Type* xt = x->getType();
      Value* r = nullptr;
      switch (n.fn) {
        case MathFn::Popc: r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, x); break;
        case MathFn::Clz:  // zero is not poison: ctlz(0) is the width
          r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, x, b_.getFalse());
          break;
        case MathFn::Ffs:
          r = b_.CreateSelect(b_.CreateICmpEQ(x, llvm::ConstantInt::get(xt, 0)), llvm::ConstantInt::get(xt, 0),
                              b_.CreateAdd(b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, x, b_.getTrue()),
                                           llvm::ConstantInt::get(xt, 1)));
          break;
        default: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::bitreverse, x);
      }
      return b_.CreateZExtOrTrunc(r, b_.getInt32Ty());
    }
    if (is_integral(t)) {  // abs: wraps at MIN
      Value* neg = b_.CreateSub(llvm::ConstantInt::get(xs[0]->getType(), 0), xs[0]);
      if (unsigned_type(t)) return xs[0];
      return b_.CreateSelect(b_.CreateICmpSLT(xs[0], llvm::ConstantInt::get(xs[0]->getType(), 0)), neg, xs[0]);
    }
    llvm::Type* ft = type(t);
    Value* r = nullptr;
    switch (n.fn) {
      case MathFn::Sqrt: r = b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {ft}, {xs[0]}); break;
      case MathFn::Rsqrt: {
        Value* d = xs[0]->getType()->isDoubleTy() ? xs[0] : b_.CreateFPExt(xs[0], b_.getDoubleTy());
        d = b_.CreateFDiv(llvm::ConstantFP::get(b_.getDoubleTy(), 1.0),
                          b_.CreateIntrinsic(llvm::Intrinsic::sqrt, {b_.getDoubleTy()}, {d}));
        r = ft->isDoubleTy() ? d : b_.CreateFPTrunc(d, ft);
        break;
      }
      case MathFn::Exp: r = libm_double("exp", xs, ft); break;
      case MathFn::Exp2: r = libm_double("exp2", xs, ft); break;
      case MathFn::Log: r = libm_double("log", xs, ft); break;
      case MathFn::Log2: r = libm_double("log2", xs, ft); break;
      case MathFn::Sin: r = libm_double("sin", xs, ft); break;
      case MathFn::Cos: r = libm_double("cos", xs, ft); break;
      case MathFn::Tanh: r = libm_double("tanh", xs, ft); break;
      case MathFn::Abs: r = b_.CreateIntrinsic(llvm::Intrinsic::fabs, {ft}, {xs[0]}); break;
      case MathFn::Floor: r = b_.CreateIntrinsic(llvm::Intrinsic::floor, {ft}, {xs[0]}); break;
      case MathFn::Ceil: r = b_.CreateIntrinsic(llvm::Intrinsic::ceil, {ft}, {xs[0]}); break;
      case MathFn::Fma: r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {ft}, {xs[0], xs[1], xs[2]}); break;
      case MathFn::Popc:
      case MathFn::Clz:
      case MathFn::Ffs:
      case MathFn::Brev: throw InternalError("cpu: a bit function of a float (the checker refuses it)");
    }
    return round16(r, t);
  }

  // ================================================================= memory
  MemRef& memref(const MemNode* m, SourceLoc l) {
    for (Frame* f = frame_; f; f = nullptr) {
      auto it = f->mems.find(m);
      if (it != f->mems.end()) return it->second;
    }
    throw InternalError("cpu: memory '" + m->name + "' used before it exists (" + l.str() + ")");
  }
  /// The flat element index (i64) of `r[index]`, offsets through calls included.
  Value* flat(const MemRef& r, Value* index, ScalarType index_type) { return offset(r, i64(index, index_type)); }
  /// An index into a view (a function's pointer parameter) as an index into its root.
  Value* offset(const MemRef& r, Value* i) {
    for (const auto& [v, arr] : r.offsets) {
      Value* o =
          arr ? static_cast<Value*>(b_.CreateLoad(b_.getInt64Ty(), b_.CreateInBoundsGEP(b_.getInt64Ty(), v, tid_))) : v;
      i = b_.CreateAdd(i, o);
    }
    return i;
  }
  /// The address of element `i` (flat) for the current thread.
  Value* address(const MemRef& r, Value* i) {
    llvm::Type* et = memtype(r.elem);
    if (r.space == MemSpace::Local) {
      // [element][thread]: the same element of neighbouring threads is contiguous.
      Value* at = b_.CreateAdd(b_.CreateMul(i, b_.getInt64(T_)), b_.CreateSExt(tid_, b_.getInt64Ty()));
      return b_.CreateGEP(et, r.base, at);
    }
    return b_.CreateGEP(et, r.base, i);
  }

  /// A failed check: recorded (the first one), the access skipped.
  void fail(std::int64_t site, Value* index, Value* bound, Value* thread = nullptr) {
    auto fn = helper("vt_cpu_fail", b_.getVoidTy(),
                     {llvm::PointerType::get(ctx_, 0), b_.getInt64Ty(), b_.getInt32Ty(), b_.getInt64Ty(),
                      b_.getInt32Ty(), b_.getInt64Ty(), b_.getInt64Ty()});
    if (!thread) thread = tid_ ? tid_ : b_.getInt32(0);
    b_.CreateCall(fn, {err_, b_.getInt64(lower::check_tag(entry_name_)), b_.getInt32(static_cast<std::int32_t>(site)),
                       block_, thread, index, bound});
  }
  /// A site of the CPU backend's own (atomics, copies lowering leaves unchecked).
  std::int64_t site(SourceLoc l, const std::string& memory, bool write) {
    out_.extra_sites.push_back({l, memory, write});
    return static_cast<std::int64_t>(L_.checks.size() + out_.extra_sites.size() - 1);
  }
  /// `body()` runs when 0 <= i < bound; otherwise the failure is recorded.
  /// In a thread loop the failure is kept for `threads` to report after the loop (PendingCheck):
  /// the failing index replaces the thread's slot through a select and a plain store, not a masked
  /// store (which costs a third of a memory-bound loop on this host).
  /// `narrow`: the same index as a signed 32-bit value, when it is one: checked in 32 bits (one
  /// unsigned compare with the bound clamped to 2^31), which keeps a lane loop's vectors 32-bit wide.
  /// `bound_same`: the bound is the same for the lanes of a warp.
  void checked(Value* i, Value* bound, std::int64_t site_no, const std::function<void()>& body, Value* narrow = nullptr,
               bool bound_same = true, const ExprPtr& index_expr = nullptr) {
    Value* ok;
    if (narrow) {
      Value* b32 = b_.CreateTrunc(b_.CreateSelect(b_.CreateICmpULT(bound, b_.getInt64(std::int64_t{1} << 31)), bound,
                                                  b_.getInt64(std::int64_t{1} << 31)),
                                  b_.getInt32Ty());
      ok = b_.CreateICmpULT(narrow, b32);  // a negative index is 2^31 or more as unsigned
    } else {
      ok = b_.CreateAnd(b_.CreateICmpSGE(i, b_.getInt64(0)), b_.CreateICmpSLT(i, bound));
    }
    auto* yes = BasicBlock::Create(ctx_, "inside", fn_);
    auto* no = BasicBlock::Create(ctx_, "outside", fn_);
    auto* join = BasicBlock::Create(ctx_, "checked", fn_);
    b_.CreateCondBr(ok, yes, no, llvm::MDBuilder(ctx_).createBranchWeights(1000, 1));
    b_.SetInsertPoint(no);
    std::optional<PendingCheck> pending;
    if (pending_ && tid_) {
      PendingCheck c;
      c.worst = zeroed_slot(b_.getInt32Ty(), "worst");
      c.narrow = narrow != nullptr;
      if (index_expr && !frame_->parent && recomputable(index_expr))
        c.index_expr = index_expr;  // (kernel frame only: its values outlive the loop)
      else
        c.index = scratch(T_ * 8);
      c.bound_per_thread = !bound_same;
      c.bound = bound_same ? static_cast<Value*>(entry_alloca(b_.getInt64Ty(), "bound")) : scratch(T_ * 8);
      c.site = site_no;
      pending_->push_back(c);
      pending = c;
    } else {
      fail(site_no, i, bound);
    }
    b_.CreateBr(join);
    b_.SetInsertPoint(yes);
    body();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    if (pending) {
      const PendingCheck& c = *pending;
      Value* mine = b_.CreateSelect(ok, b_.getInt32(0), b_.CreateAdd(tid_, b_.getInt32(1)));
      Value* w = b_.CreateLoad(b_.getInt32Ty(), c.worst);
      b_.CreateStore(b_.CreateSelect(b_.CreateICmpUGT(mine, w), mine, w), c.worst);
      auto keep = [&](llvm::Type* t, Value* arr, Value* v) {
        Value* at = b_.CreateInBoundsGEP(t, arr, tid_);
        b_.CreateStore(b_.CreateSelect(ok, b_.CreateLoad(t, at), v), at);
      };
      if (c.index_expr)
        ;
      else if (narrow)
        keep(b_.getInt32Ty(), c.index, narrow);
      else
        keep(b_.getInt64Ty(), c.index, i);
      if (bound_same)
        b_.CreateStore(bound, c.bound);
      else
        keep(b_.getInt64Ty(), c.bound, bound);
    }
  }

  /// A clamped read in a thread loop, base[L + min(a, u)] (or max) with L and u the same for the
  /// lanes of a warp: read as `a <= u ? base[L + a] : base[L + u]`, the same element, so that the
  /// lanes' reads of base[L + a] are one contiguous vector load rather than a gather.
  struct Clamp {
    std::vector<ExprPtr> invariant;  ///< the terms of L
    const Binary* clamp = nullptr;
    bool a_left = true;  ///< which operand of the min or max is a
  };
  std::optional<Clamp> clamp_of(const ExprPtr& index) {
    if (!lane_ || !is_integral(index->type)) return std::nullopt;
    Clamp c;
    std::vector<ExprPtr> terms;
    std::function<void(const ExprPtr&)> split = [&](const ExprPtr& e) {
      const auto* b = as<Binary>(*e);
      if (b && b->op == BinOp::Add && b->a->type == e->type && b->b->type == e->type) {
        split(b->a);
        split(b->b);
      } else {
        terms.push_back(e);
      }
    };
    split(index);
    for (const auto& t : terms) {
      if (lane_invariant(t)) {
        c.invariant.push_back(t);
        continue;
      }
      const auto* b = as<Binary>(*t);
      if (c.clamp || !b || (b->op != BinOp::Min && b->op != BinOp::Max)) return std::nullopt;
      if (lane_invariant(b->b))
        c.a_left = true;
      else if (lane_invariant(b->a))
        c.a_left = false;
      else
        return std::nullopt;
      c.clamp = b;
    }
    if (!c.clamp) return std::nullopt;
    return c;
  }
  /// base[L + u] of a clamped read, the same for every lane of a warp, read whether it is needed or
  /// not (from a zero of our own when it is outside the root), before any check: a load LLVM keeps
  /// a scalar, out of the lane loop. (Two loads on the two sides of a branch would be merged back
  /// into the gather.)
  Value* clamp_value(const MemRef& r, const Clamp& c, ScalarType index_type) {
    llvm::Type* et = memtype(r.elem);
    Value* fu = clamp_flat(r, c, expr(c.a_left ? c.clamp->b : c.clamp->a), index_type);
    Value* u_inside = b_.CreateAnd(b_.CreateICmpSGE(fu, b_.getInt64(0)), b_.CreateICmpSLT(fu, r.bound));
    return b_.CreateLoad(et, b_.CreateSelect(u_inside, b_.CreateGEP(et, r.base, fu), zero_of(et)));
  }
  /// The flat index of base[L + x], x computed.
  Value* clamp_flat(const MemRef& r, const Clamp& c, Value* x, ScalarType index_type) {
    for (const auto& t : c.invariant) x = b_.CreateAdd(expr(t), x);
    return offset(r, i64(x, index_type));
  }
  /// The element of `r` a clamped index names: base[L + a], or `vu` (clamp_value). Every part of the
  /// index is computed before the branch: an operand may hold a checked read of its own, whose
  /// blocks must not land between the branch and the join.
  Value* clamped_load(const MemRef& r, const Clamp& c, ScalarType index_type, Value* vu) {
    llvm::Type* et = memtype(r.elem);
    Value* a = expr(c.a_left ? c.clamp->a : c.clamp->b);
    Value* u = expr(c.a_left ? c.clamp->b : c.clamp->a);
    bool sgn = !unsigned_type(index_type);
    Value* take_a = c.clamp->op == BinOp::Min ? (sgn ? b_.CreateICmpSLE(a, u) : b_.CreateICmpULE(a, u))
                                              : (sgn ? b_.CreateICmpSGE(a, u) : b_.CreateICmpUGE(a, u));
    Value* at_a = address(r, clamp_flat(r, c, a, index_type));
    BasicBlock* from = b_.GetInsertBlock();
    auto* yes = BasicBlock::Create(ctx_, "clamp.a", fn_);
    auto* join = BasicBlock::Create(ctx_, "clamp.join", fn_);
    b_.CreateCondBr(take_a, yes, join, llvm::MDBuilder(ctx_).createBranchWeights(1000, 1));
    b_.SetInsertPoint(yes);
    Value* va = b_.CreateLoad(et, at_a);
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    auto* phi = b_.CreatePHI(et, 2);
    phi->addIncoming(va, yes);
    phi->addIncoming(vu, from);
    return phi;
  }

  // A bound is on the index the code wrote (into a function's pointer, the elements from it on).
  Value* load(const Load& n) {
    const MemRef& r = memref(n.mem.get(), n.loc);
    const ExprPtr& index = n.indices[0];
    Value* raw = expr(index);
    Value* local = i64(raw, index->type);
    Value* narrow = index->type == ScalarType::I32 ? raw : nullptr;
    llvm::Type* et = memtype(r.elem);
    auto clamp = r.space == MemSpace::Local || !r.bound ? std::nullopt : clamp_of(index);
    Value* vu = clamp ? clamp_value(r, *clamp, index->type) : nullptr;
    auto read = [&]() -> Value* {
      return clamp ? clamped_load(r, *clamp, index->type, vu) : b_.CreateLoad(et, address(r, offset(r, local)));
    };
    if (!n.bound) return from_mem(read(), r.elem);
    Value* bound = expr(n.bound);
    auto* slot = entry_alloca(et, "checked_load");
    b_.CreateStore(llvm::Constant::getNullValue(et), slot);
    checked(
        local, bound, n.site, [&] { b_.CreateStore(read(), slot); }, narrow, lane_invariant(n.bound), index);
    return from_mem(b_.CreateLoad(et, slot), r.elem);
  }
  void store(const Store& n) {
    const MemRef& r = memref(n.mem.get(), n.loc);
    Value* raw = expr(n.indices[0]);
    Value* local = i64(raw, n.indices[0]->type);
    Value* v = to_mem(expr(n.value), r.elem);
    if (!n.bound) {
      b_.CreateStore(v, address(r, offset(r, local)));
      return;
    }
    checked(
        local, expr(n.bound), n.site, [&] { b_.CreateStore(v, address(r, offset(r, local))); },
        n.indices[0]->type == ScalarType::I32 ? raw : nullptr, lane_invariant(n.bound), n.indices[0]);
  }

  // ================================================================= statements, thread context
  void thread_stmt(const StmtPtr& s) {
    if (!s) return;
    dispatch(*s, Overloaded{
                     [&](const Seq& n) {
                       for (const auto& c : n.stmts) thread_stmt(c);
                     },
                     [&](const Let& n) { write_var(n.var, expr(n.value), n.value); },
                     [&](const Assign& n) { write_var(n.var, expr(n.value), nullptr); },
                     [&](const Store& n) { store(n); },
                     [&](const If& n) {
                       Value* c = expr(n.cond);
                       auto* t = BasicBlock::Create(ctx_, "if.then", fn_);
                       auto* e = BasicBlock::Create(ctx_, "if.else", fn_);
                       auto* j = BasicBlock::Create(ctx_, "if.join", fn_);
                       b_.CreateCondBr(c, t, e);
                       b_.SetInsertPoint(t);
                       thread_stmt(n.then_body);
                       b_.CreateBr(j);
                       b_.SetInsertPoint(e);
                       thread_stmt(n.else_body);
                       b_.CreateBr(j);
                       b_.SetInsertPoint(j);
                     },
                     [&](const For& n) { for_loop(n, [&] { thread_stmt(n.body); }); },
                     [&](const While& n) {
                       auto* head = BasicBlock::Create(ctx_, "while.head", fn_);
                       auto* body = BasicBlock::Create(ctx_, "while.body", fn_);
                       auto* done = BasicBlock::Create(ctx_, "while.done", fn_);
                       b_.CreateBr(head);
                       b_.SetInsertPoint(head);
                       b_.CreateCondBr(expr(n.cond), body, done);
                       b_.SetInsertPoint(body);
                       jumps_.push_back({head, done});
                       thread_stmt(n.body);
                       jumps_.pop_back();
                       b_.CreateBr(head);
                       b_.SetInsertPoint(done);
                     },
                     [&](const Jump& n) {
                       // Thread(1) code only (V0212), so the loop is this thread's own: a plain branch.
                       if (jumps_.empty()) throw InternalError("cpu: a break or continue outside a loop");
                       b_.CreateBr(n.is_break ? jumps_.back().exit : jumps_.back().next);
                       b_.SetInsertPoint(BasicBlock::Create(ctx_, n.is_break ? "after.break" : "after.continue", fn_));
                     },
                     [&](const SharedAlloc& n) { shared_alloc(n); },
                     [&](const LocalAlloc& n) { local_alloc(n); },
                     [&](const Call& n) { call(n, true); },
                     [&](const Intrinsic& n) { thread_intrinsic(n); },
                     [&](const VectorCopy& n) { vector_copy(n); },
                     [&](const ir::Barrier&) { throw InternalError("cpu: a barrier inside a thread loop"); },
                     [&](const Unsafe& n) -> void { unsupported("an unsafe block's CUDA text", n.loc); },
                     [&](const Return& n) { ret(n); },
                     [&](const auto& n) -> void {
                       throw InternalError(std::string("cpu: ") + name_of(n.kind) + " in lowered IR");
                     },
                 });
  }

  /// `return`: from an inlined device function, its value stored and a jump to its end; from the
  /// kernel, the thread marked as exited (every later thread loop skips it) and a jump to the next
  /// thread of its loop. The code after it in the same block is unreachable.
  void ret(const Return& n) {
    Frame& f = *frame_;
    if (f.exit) {
      if (n.value) b_.CreateStore(expr(n.value), f.ret_slot);
      b_.CreateBr(f.exit);
    } else if (!f.parent && exited_ && lane_cont_) {
      b_.CreateStore(b_.getInt8(1), b_.CreateInBoundsGEP(b_.getInt8Ty(), exited_, tid_));
      b_.CreateBr(lane_cont_);
    } else {
      unsupported("a return here", n.loc);
    }
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "after.return", fn_));
  }

  /// docs/semantics.md's loops: bounds and step evaluated once, the counter never wrapping, no
  /// iteration with a zero step.
  void for_loop(const For& n, const std::function<void()>& body) {
    Value* begin = expr(n.begin);
    Value* end = expr(n.end);
    Value* step = expr(n.step);
    ScalarType t = n.var->type;
    bool sgn = !unsigned_type(t);
    Storage& s = define(n.var, nullptr);
    auto set = [&](Value* v) {
      if (s.kind == Storage::Array)
        b_.CreateStore(v, b_.CreateInBoundsGEP(type(t), s.ptr, tid_));
      else
        b_.CreateStore(v, s.ptr);
    };
    auto get = [&]() -> Value* {
      if (s.kind == Storage::Array) return b_.CreateLoad(type(t), b_.CreateInBoundsGEP(type(t), s.ptr, tid_));
      return b_.CreateLoad(type(t), s.ptr);
    };
    set(begin);
    auto* head = BasicBlock::Create(ctx_, n.var->name + ".head", fn_);
    auto* in = BasicBlock::Create(ctx_, n.var->name + ".body", fn_);
    auto* latch = BasicBlock::Create(ctx_, n.var->name + ".next", fn_);
    auto* done = BasicBlock::Create(ctx_, n.var->name + ".done", fn_);
    auto* ty = type(t);
    auto zero = llvm::ConstantInt::get(ty, 0);
    auto k = const_int(n.step);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    Value* v = get();
    Value* going;
    bool up = k ? *k > 0 : false;
    if (k && *k > 0)
      going = sgn ? b_.CreateICmpSLT(v, end) : b_.CreateICmpULT(v, end);
    else if (k && *k < 0)
      going = sgn ? b_.CreateICmpSGT(v, end) : b_.CreateICmpUGT(v, end);
    else {
      Value* pos = sgn ? b_.CreateICmpSGT(step, zero) : b_.CreateICmpNE(step, zero);
      Value* neg = sgn ? b_.CreateICmpSLT(step, zero) : static_cast<Value*>(b_.getInt1(false));
      going = b_.CreateOr(b_.CreateAnd(pos, sgn ? b_.CreateICmpSLT(v, end) : b_.CreateICmpULT(v, end)),
                          b_.CreateAnd(neg, b_.CreateICmpSGT(v, end)));
    }
    b_.CreateCondBr(going, in, done);
    b_.SetInsertPoint(in);
    jumps_.push_back({latch, done});
    body();
    jumps_.pop_back();
    b_.CreateBr(latch);
    b_.SetInsertPoint(latch);
    // The next value, or the end when the distance left is at most the step (never wrapping).
    Value* cur = get();
    Value* next;
    if (k && *k == 1 && up) {
      next = b_.CreateAdd(cur, llvm::ConstantInt::get(ty, 1));  // cur < end: cannot wrap
    } else {
      Value* stepn = step;
      Value* down = sgn ? b_.CreateICmpSLT(stepn, zero) : static_cast<Value*>(b_.getInt1(false));
      Value* by = b_.CreateSelect(down, b_.CreateSub(zero, stepn), stepn);  // |step| (unsigned)
      Value* left = b_.CreateSelect(down, b_.CreateSub(cur, end), b_.CreateSub(end, cur));
      Value* last = b_.CreateICmpULE(left, by);
      next = b_.CreateSelect(last, end, b_.CreateAdd(cur, stepn));
      // At the end the loop stops: `going` is false when the counter equals end.
    }
    set(next);
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  }

  void vector_copy(const VectorCopy& n) {
    const MemRef& d = memref(n.dst.get(), n.loc);
    const MemRef& s = memref(n.src.get(), n.loc);
    Value* di = flat(d, expr(n.dst_index), n.dst_index->type);
    Value* si = flat(s, expr(n.src_index), n.src_index->type);
    llvm::Type* et = memtype(d.elem);
    for (std::int64_t k = 0; k < n.count; ++k) {
      Value* v = b_.CreateLoad(et, address(s, b_.CreateAdd(si, b_.getInt64(k))));
      b_.CreateStore(v, address(d, b_.CreateAdd(di, b_.getInt64(k))));
    }
  }

  void shared_alloc(const SharedAlloc& n) {
    Frame& f = *frame_;
    if (f.mems.count(n.mem.get())) return;
    MemRef r;
    r.space = MemSpace::Shared;
    r.elem = n.mem->elem;
    r.name = n.mem->name;
    r.base = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), f.smem,
                                           static_cast<std::uint64_t>(L_.shared_offsets.at(n.mem.get())));
    r.bound = b_.getInt64(const_int(n.count).value_or(0));
    f.mems[n.mem.get()] = r;
  }
  void local_alloc(const LocalAlloc& n) {
    Frame& f = *frame_;
    if (f.mems.count(n.mem.get())) return;
    MemRef r;
    r.space = MemSpace::Local;
    r.elem = n.mem->elem;
    r.name = n.mem->name;
    r.base = scratch(n.count * T_ * std::max<std::int64_t>(1, bytes(n.mem->elem)));
    r.bound = b_.getInt64(n.count);
    f.mems[n.mem.get()] = r;
  }

  void thread_intrinsic(const Intrinsic& n) {
    if (!runs_on(n.op, kCpu)) unsupported(user_name(n.op), n.loc);
    switch (n.op) {
      case IntrinsicOp::Atomic: atomic(n); return;
      case IntrinsicOp::CpAsync: {
        // A copy that completes at once: a race-free kernel reads its destination only after waiting.
        const MemRef& d = memref(n.mems[0].get(), n.loc);
        const MemRef& s = memref(n.mems[1].get(), n.loc);
        Value* di = flat(d, expr(n.args[0]), n.args[0]->type);
        Value* si = flat(s, expr(n.args[1]), n.args[1]->type);
        std::int64_t count = n.imms[0] / bytes(d.elem);
        std::int64_t sd = site(n.loc, d.name, true), ss = site(n.loc, s.name, false);
        llvm::Type* et = memtype(d.elem);
        for (std::int64_t k = 0; k < count; ++k) {
          Value* dk = b_.CreateAdd(di, b_.getInt64(k));
          Value* sk = b_.CreateAdd(si, b_.getInt64(k));
          checked(dk, d.bound, sd, [&] {
            checked(sk, s.bound, ss, [&] { b_.CreateStore(b_.CreateLoad(et, address(s, sk)), address(d, dk)); });
          });
        }
        return;
      }
      case IntrinsicOp::CpAsyncCommit:
      case IntrinsicOp::CpAsyncWait: return;
      default: break;
    }
    unsupported(user_name(n.op), n.loc);
  }

  void atomic(const Intrinsic& n) {
    const MemRef& r = memref(n.mems[0].get(), n.loc);
    Value* i = flat(r, expr(n.args[0]), n.args[0]->type);
    Value* x = expr(n.args[1]);
    ScalarType e = r.elem;
    if (half_type(e) || e == ScalarType::Bool) unsupported("an atomic on " + std::string(type_name(e)), n.loc);
    auto kind = static_cast<AtomicKind>(n.imms[0]);
    llvm::AtomicRMWInst::BinOp op;
    bool fl = is_float(e);
    switch (kind) {
      case AtomicKind::Add: op = fl ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add; break;
      case AtomicKind::Min:
        op = fl ? llvm::AtomicRMWInst::FMin : unsigned_type(e) ? llvm::AtomicRMWInst::UMin : llvm::AtomicRMWInst::Min;
        break;
      case AtomicKind::Max:
        op = fl ? llvm::AtomicRMWInst::FMax : unsigned_type(e) ? llvm::AtomicRMWInst::UMax : llvm::AtomicRMWInst::Max;
        break;
      default: op = llvm::AtomicRMWInst::Xchg; break;
    }
    auto* slot = entry_alloca(type(e), "atomic_old");
    b_.CreateStore(llvm::Constant::getNullValue(type(e)), slot);
    checked(i, r.bound, site(n.loc, r.name, true), [&] {
      Value* old =
          b_.CreateAtomicRMW(op, address(r, i), x, llvm::MaybeAlign(bytes(e)), llvm::AtomicOrdering::Monotonic);
      b_.CreateStore(old, slot);
    });
    if (!n.outputs.empty()) write_var(n.outputs[0], b_.CreateLoad(type(e), slot), nullptr);
  }

  // ================================================================= calls (inlined)
  /// A value every thread of the mask computes in the uniform context: uniform, held as is; else a
  /// per-thread array of its type (`as_index`: of i64) filled by a thread loop.
  std::pair<Value*, bool> materialize(const ExprPtr& e, Value* mask, bool as_index) {
    if (level(e, *frame_) == Lvl::Uniform) {
      Value* v = expr(e);
      return {as_index ? i64(v, e->type) : v, false};
    }
    Value* arr = scratch(T_ * 8);
    llvm::Type* t = as_index ? b_.getInt64Ty() : type(e->type);
    threads(mask, [&] {
      Value* v = expr(e);
      b_.CreateStore(as_index ? i64(v, e->type) : v, b_.CreateInBoundsGEP(t, arr, tid_));
    });
    return {arr, true};
  }

  void call(const Call& n, bool in_thread, Value* mask = nullptr) {
    const FunctionNode& fnode = *n.fn;
    Frame& caller = *frame_;
    auto callee = std::make_unique<Frame>();
    Frame& f = *callee;
    f.parent = &caller;
    f.in_thread = in_thread || caller.in_thread;
    f.fn = &fnode;
    std::size_t user = n.args.size() - lower::kAbiArgs;
    // The position of the callee's threads, its block, its shared memory.
    const ExprPtr& tid_arg = n.args[user].value;
    if (const auto* bi = as<Builtin>(*tid_arg); bi && bi->which == BuiltinKind::ThreadInBlock && !caller.tid_array) {
      f.tid_array = nullptr;  // the caller's own position
    } else if (f.in_thread) {
      f.tid_array = expr(tid_arg);
      f.tid_level = Lvl::Uniform;  // one value in this thread
    } else {
      auto [v, arr] = materialize(tid_arg, mask, true);
      f.tid_array = arr ? v : b_.CreateTrunc(v, b_.getInt32Ty());
      f.tid_level = arr ? Lvl::Varying : Lvl::Uniform;
    }
    f.bid = expr(n.args[user + 1].value);
    auto smem = const_int(n.args[user + 2].value);
    f.smem = smem && *smem >= 0
                 ? b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), caller.smem, static_cast<std::uint64_t>(*smem))
                 : caller.smem;
    // Parameters: values (fixed, or per-thread arrays), pointers as the caller's memory plus offsets.
    for (std::size_t i = 0; i < user && i < fnode.params.size(); ++i) {
      const ParamNode& p = fnode.params[i];
      const CallArgNode& a = n.args[i];
      if (a.mem) {
        MemRef r = memref(a.mem.get(), n.loc);
        if (f.in_thread) {
          r.offsets.push_back({i64(expr(a.value), a.value->type), false});
        } else {
          auto [v, arr] = materialize(a.value, mask, true);
          r.offsets.push_back({v, arr});
        }
        r.name = p.name;
        f.mems[p.mem.get()] = r;
        continue;
      }
      Storage s;
      if (f.in_thread || level(a.value, caller) == Lvl::Uniform) {
        s.kind = Storage::Fixed;
        s.value = expr(a.value);
        f.levels[p.var.get()] = f.in_thread ? Lvl::Uniform : Lvl::Uniform;
      } else {
        s.kind = Storage::Array;
        s.ptr = materialize(a.value, mask, false).first;
        f.levels[p.var.get()] = Lvl::Varying;
      }
      f.vars[p.var.get()] = s;
    }
    // A pointer parameter keeps its root's bound: the checks of atomics and copies are on flat indices.
    if (!f.in_thread && (n.result || returns(fnode.body)))
      unsupported("a return in a device function that holds a warp collective or barrier", n.loc);
    if (f.in_thread) {
      f.exit = BasicBlock::Create(ctx_, fnode.name + ".exit", fn_);
      if (fnode.returns) {
        f.ret_slot = entry_alloca(type(*fnode.returns), fnode.name + ".result");
        b_.CreateStore(llvm::Constant::getNullValue(type(*fnode.returns)), f.ret_slot);
      }
    }
    frames_.push_back(std::move(callee));
    Frame* saved = frame_;
    frame_ = &f;
    prepare(f, fnode.body);
    if (f.in_thread) {
      thread_stmt(fnode.body);
      b_.CreateBr(f.exit);
      b_.SetInsertPoint(f.exit);
    } else {
      uniform(fnode.body, mask);
    }
    frame_ = saved;
    if (n.result) write_var(n.result, b_.CreateLoad(type(*fnode.returns), f.ret_slot), nullptr);
  }
  /// Whether a statement holds a `return`.
  static bool returns(const StmtPtr& s) {
    if (!s) return false;
    if (s->kind == StmtKind::Return) return true;
    bool r = false;
    for_each_child_stmt(*s, [&](const StmtPtr& c) { r = r || returns(c); });
    return r;
  }

  // ================================================================= uniform context
  /// A sequence in the uniform context. In the block context, each maximal run of groups that
  /// holds no block barrier becomes a *warp region*: a loop over the warps that runs the run for
  /// one warp at a time (threads of different warps do not meet between block barriers in a
  /// race-free kernel), so that uniform loops run inside the warp loop around 32-lane loops, warp
  /// collectives work on the warp at hand, and a warp none of whose threads is active is skipped.
  void uniform(const StmtPtr& s, Value* mask) {
    if (!s) return;
    auto gs = groups(s, *frame_);
    auto emit = [&](const Group& g) {
      if (g.kind != Group::Leaf) {
        single(g.stmts[0], mask);
      } else if (auto r = lane_range(g)) {
        threads(
            mask, [&] { thread_stmt(as<If>(*g.stmts[0])->then_body); }, &*r);
      } else {
        threads(mask, [&] {
          for (const auto& x : g.stmts) thread_stmt(x);
        });
      }
    };
    if (warp_) {
      for (const auto& g : gs) emit(g);
      return;
    }
    for (std::size_t i = 0; i < gs.size();) {
      if (!in_region(gs[i])) {
        emit(gs[i++]);
        continue;
      }
      std::size_t j = i;
      bool work = false;
      for (; j < gs.size() && in_region(gs[j]); ++j)
        work = work || gs[j].kind == Group::Leaf || gs[j].stmts[0]->kind != StmtKind::Let;
      if (!work) {
        for (; i < j; ++i) emit(gs[i]);
        continue;
      }
      // A region of leaves that never use their warp's index, with at most one a range of lanes
      // whose bounds are the same for the whole block (saxpy's `let t`, then `if (blk * 256 + t < n)`),
      // is one loop over the block's threads per leaf (longer vectors, one loop for LLVM instead of
      // one per warp).
      if (flat_region(gs, i, j)) {
        flat_ = true;
        for (; i < j; ++i) emit(gs[i]);
        flat_ = false;
        continue;
      }
      loop(
          b_.getInt32(0), b_.getInt32(warps()),
          [&](Value* w) {
            warp_ = w;
            auto run = [&] {
              for (std::size_t k = i; k < j; ++k) emit(gs[k]);
            };
            if (mask)
              if_then(any_active(mask), run);
            else
              run();
            warp_ = nullptr;
          },
          "region");
      i = j;
    }
  }
  /// Whether a group may run in a warp region: no block barrier in it, and no assignment to a
  /// variable the same for every thread that lives outside it (each warp would make it again).
  bool in_region(const Group& g) {
    if (g.kind == Group::Leaf) return true;
    const StmtPtr& x = g.stmts[0];
    if (collectives_.block_sync(x)) return false;
    switch (x->kind) {
      case StmtKind::SharedAlloc:
      case StmtKind::LocalAlloc:
      case StmtKind::Assign: return false;
      case StmtKind::Let: return true;
      default: return !assigns_outer_uniform(x);
    }
  }
  bool assigns_outer_uniform(const StmtPtr& s) {
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
    } scan(*frame_);
    scan.walk(s);
    return scan.found;
  }

  void single(const StmtPtr& s, Value* mask) {
    Frame& f = *frame_;
    dispatch(*s, Overloaded{
                     [&](const ir::Barrier&) {},  // the thread loops around it are the barrier
                     [&](const Let& n) {
                       if (f.levels[n.var.get()] == Lvl::Uniform) {
                         write_var(n.var, expr(n.value), n.value);
                       } else {
                         threads(mask, [&] { write_var(n.var, expr(n.value), n.value); });
                       }
                     },
                     [&](const Assign& n) {
                       if (f.levels[n.var.get()] == Lvl::Uniform)
                         write_var(n.var, expr(n.value), nullptr);
                       else
                         threads(mask, [&] { write_var(n.var, expr(n.value), nullptr); });
                     },
                     [&](const SharedAlloc& n) { shared_alloc(n); },
                     [&](const LocalAlloc& n) { local_alloc(n); },
                     [&](const If& n) {
                       bool same = level(n.cond, f) == Lvl::Uniform;
                       if (same || (warp_ && warp_uniform(n.cond))) {
                         Value* c = same ? expr(n.cond) : warp_condition(n.cond);
                         auto* t = BasicBlock::Create(ctx_, "uif.then", fn_);
                         auto* e = BasicBlock::Create(ctx_, "uif.else", fn_);
                         auto* j = BasicBlock::Create(ctx_, "uif.join", fn_);
                         b_.CreateCondBr(c, t, e);
                         b_.SetInsertPoint(t);
                         uniform(n.then_body, mask);
                         b_.CreateBr(j);
                         b_.SetInsertPoint(e);
                         uniform(n.else_body, mask);
                         b_.CreateBr(j);
                         b_.SetInsertPoint(j);
                         return;
                       }
                       // Per-thread condition around a collective: masks for each side.
                       Value* yes = scratch(T_);
                       Value* no = scratch(T_);
                       auto* any_yes = entry_alloca(b_.getInt8Ty(), "any_yes");
                       auto* any_no = entry_alloca(b_.getInt8Ty(), "any_no");
                       b_.CreateStore(b_.getInt8(0), any_yes);
                       b_.CreateStore(b_.getInt8(0), any_no);
                       threads(nullptr, [&] {
                         Value* active =
                             mask ? b_.CreateICmpNE(
                                        b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, tid_)),
                                        b_.getInt8(0))
                                  : static_cast<Value*>(b_.getInt1(true));
                         Value* c = b_.getInt1(false);
                         auto* eval = BasicBlock::Create(ctx_, "mask.eval", fn_);
                         auto* set = BasicBlock::Create(ctx_, "mask.set", fn_);
                         BasicBlock* from = b_.GetInsertBlock();
                         b_.CreateCondBr(active, eval, set);
                         b_.SetInsertPoint(eval);
                         Value* cv = expr(n.cond);
                         BasicBlock* evaluated = b_.GetInsertBlock();
                         b_.CreateBr(set);
                         b_.SetInsertPoint(set);
                         auto* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
                         phi->addIncoming(c, from);
                         phi->addIncoming(cv, evaluated);
                         Value* y = b_.CreateAnd(active, phi);
                         Value* z = b_.CreateAnd(active, b_.CreateNot(phi));
                         Value* y8 = b_.CreateZExt(y, b_.getInt8Ty());
                         Value* z8 = b_.CreateZExt(z, b_.getInt8Ty());
                         b_.CreateStore(y8, b_.CreateInBoundsGEP(b_.getInt8Ty(), yes, tid_));
                         b_.CreateStore(z8, b_.CreateInBoundsGEP(b_.getInt8Ty(), no, tid_));
                         b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt8Ty(), any_yes), y8), any_yes);
                         b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt8Ty(), any_no), z8), any_no);
                       });
                       // A side no thread takes is skipped (in a warp region: no thread of the warp).
                       if_then(b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), any_yes), b_.getInt8(0)),
                               [&] { uniform(n.then_body, yes); });
                       if (n.else_body)
                         if_then(b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), any_no), b_.getInt8(0)),
                                 [&] { uniform(n.else_body, no); });
                     },
                     [&](const For& n) {
                       if (f.levels[n.var.get()] == Lvl::Uniform) {
                         for_loop(n, [&] { uniform(n.body, mask); });
                         return;
                       }
                       varying_loop(s, mask);
                     },
                     [&](const While& n) {
                       if (level(n.cond, f) == Lvl::Uniform) {
                         auto* head = BasicBlock::Create(ctx_, "uwhile.head", fn_);
                         auto* body = BasicBlock::Create(ctx_, "uwhile.body", fn_);
                         auto* done = BasicBlock::Create(ctx_, "uwhile.done", fn_);
                         b_.CreateBr(head);
                         b_.SetInsertPoint(head);
                         b_.CreateCondBr(expr(n.cond), body, done);
                         b_.SetInsertPoint(body);
                         uniform(n.body, mask);
                         b_.CreateBr(head);
                         b_.SetInsertPoint(done);
                         return;
                       }
                       varying_loop(s, mask);
                     },
                     [&](const Call& n) {
                       if (collectives_.of(n.fn->body))
                         call(n, false, mask);
                       else
                         threads(mask, [&] { call(n, true); });
                     },
                     [&](const Intrinsic& n) { warp(n, mask); },
                     [&](const auto& n) -> void {
                       // Anything else that holds a collective is a sequence (flattened) or control
                       // flow (above); a plain statement runs in a thread loop.
                       if (collectives_.of(s))
                         throw InternalError(std::string("cpu: a collective in ") + name_of(n.kind));
                       threads(mask, [&] { thread_stmt(s); });
                     },
                 });
  }

  /// A loop whose condition varies per thread around a collective: each thread keeps its own
  /// counter; the body runs, in the uniform context, for the threads still going, until none is.
  void varying_loop(const StmtPtr& s, Value* mask) {
    const auto* f = as<For>(*s);
    const auto* w = as<While>(*s);
    Value* going = scratch(T_);
    Value* live = scratch(T_);  // threads whose loop has not ended (For: past its last value)
    Value* endv = nullptr;
    Value* stepv = nullptr;
    Storage* var = nullptr;
    if (f) {
      var = &define_array(f->var);
      endv = scratch(T_ * 8);
      stepv = scratch(T_ * 8);
      llvm::Type* ty = type(f->var->type);
      threads(mask, [&] {
        b_.CreateStore(expr(f->begin), b_.CreateInBoundsGEP(ty, var->ptr, tid_));
        b_.CreateStore(expr(f->end), b_.CreateInBoundsGEP(ty, endv, tid_));
        b_.CreateStore(expr(f->step), b_.CreateInBoundsGEP(ty, stepv, tid_));
      });
    }
    threads(nullptr, [&] {
      Value* active = mask ? b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, tid_))
                           : static_cast<Value*>(b_.getInt8(1));
      b_.CreateStore(active, b_.CreateInBoundsGEP(b_.getInt8Ty(), live, tid_));
    });
    auto* head = BasicBlock::Create(ctx_, "vloop.head", fn_);
    auto* body = BasicBlock::Create(ctx_, "vloop.body", fn_);
    auto* done = BasicBlock::Create(ctx_, "vloop.done", fn_);
    auto* any = entry_alloca(b_.getInt1Ty(), "any");
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    b_.CreateStore(b_.getInt1(false), any);
    threads(nullptr, [&] {
      Value* l = b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), b_.CreateInBoundsGEP(b_.getInt8Ty(), live, tid_)),
                                 b_.getInt8(0));
      auto* eval = BasicBlock::Create(ctx_, "vloop.eval", fn_);
      auto* set = BasicBlock::Create(ctx_, "vloop.set", fn_);
      BasicBlock* from = b_.GetInsertBlock();
      b_.CreateCondBr(l, eval, set);
      b_.SetInsertPoint(eval);
      Value* g;
      if (f) {
        ScalarType t = f->var->type;
        bool sgn = !unsigned_type(t);
        Value* v = b_.CreateLoad(type(t), b_.CreateInBoundsGEP(type(t), var->ptr, tid_));
        Value* e = b_.CreateLoad(type(t), b_.CreateInBoundsGEP(type(t), endv, tid_));
        Value* st = b_.CreateLoad(type(t), b_.CreateInBoundsGEP(type(t), stepv, tid_));
        auto zero = llvm::ConstantInt::get(type(t), 0);
        Value* pos = sgn ? b_.CreateICmpSGT(st, zero) : b_.CreateICmpNE(st, zero);
        Value* neg = sgn ? b_.CreateICmpSLT(st, zero) : static_cast<Value*>(b_.getInt1(false));
        g = b_.CreateOr(b_.CreateAnd(pos, sgn ? b_.CreateICmpSLT(v, e) : b_.CreateICmpULT(v, e)),
                        b_.CreateAnd(neg, b_.CreateICmpSGT(v, e)));
      } else {
        g = expr(w->cond);
      }
      BasicBlock* evaluated = b_.GetInsertBlock();
      b_.CreateBr(set);
      b_.SetInsertPoint(set);
      auto* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
      phi->addIncoming(b_.getInt1(false), from);
      phi->addIncoming(g, evaluated);
      b_.CreateStore(b_.CreateZExt(phi, b_.getInt8Ty()), b_.CreateInBoundsGEP(b_.getInt8Ty(), going, tid_));
      b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), any), phi), any);
    });
    b_.CreateCondBr(b_.CreateLoad(b_.getInt1Ty(), any), body, done);
    b_.SetInsertPoint(body);
    uniform(f ? f->body : w->body, going);
    if (f) {
      // Each going thread steps its counter (never past its end: then its loop is over).
      threads(going, [&] {
        ScalarType t = f->var->type;
        bool sgn = !unsigned_type(t);
        auto* ty = type(t);
        auto zero = llvm::ConstantInt::get(ty, 0);
        Value* at = b_.CreateInBoundsGEP(ty, var->ptr, tid_);
        Value* cur = b_.CreateLoad(ty, at);
        Value* e = b_.CreateLoad(ty, b_.CreateInBoundsGEP(ty, endv, tid_));
        Value* st = b_.CreateLoad(ty, b_.CreateInBoundsGEP(ty, stepv, tid_));
        Value* down = sgn ? b_.CreateICmpSLT(st, zero) : static_cast<Value*>(b_.getInt1(false));
        Value* by = b_.CreateSelect(down, b_.CreateSub(zero, st), st);
        Value* left = b_.CreateSelect(down, b_.CreateSub(cur, e), b_.CreateSub(e, cur));
        Value* last = b_.CreateICmpULE(left, by);
        b_.CreateStore(b_.CreateSelect(last, e, b_.CreateAdd(cur, st)), at);
        // Past its last value the loop is over for this thread, whatever the counter says.
        Value* l = b_.CreateInBoundsGEP(b_.getInt8Ty(), live, tid_);
        b_.CreateStore(b_.CreateSelect(last, b_.getInt8(0), b_.CreateLoad(b_.getInt8Ty(), l)), l);
      });
    }
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  }

  // ================================================================= warp collectives
  void warp(const Intrinsic& n, Value* mask) {
    if (!runs_on(n.op, kCpu)) unsupported(user_name(n.op), n.loc);
    switch (n.op) {
      case IntrinsicOp::SyncThreads:
      case IntrinsicOp::SyncWarp:
      case IntrinsicOp::NamedBarrier: return;  // lowered to Barrier statements; nothing to do between loops
      case IntrinsicOp::MmaSync: mma(n, mask); return;
      case IntrinsicOp::Ldmatrix: ldmatrix(n, mask); return;
      case IntrinsicOp::ShflXor:
      case IntrinsicOp::ShflDown:
      case IntrinsicOp::ShflUp:
      case IntrinsicOp::ShflIdx:
      case IntrinsicOp::VoteAll:
      case IntrinsicOp::VoteAny:
      case IntrinsicOp::Ballot: lanes(n, mask); return;
      default: break;
    }
    // Not a collective: one per thread.
    threads(mask, [&] { thread_intrinsic(n); });
  }

  /// Shuffles, votes and ballot: each warp's lanes at once (the interpreter's semantics: a source
  /// lane outside the warp gives the lane its own value). The operand is read from its variable's
  /// per-thread array when it has one; a lane operand the same for every thread stays a scalar; the
  /// lanes of a shuffle are one loop that LLVM vectorizes.
  void lanes(const Intrinsic& n, Value* mask) {
    llvm::Type* xty = type(n.args[0]->type);
    Value* xs = nullptr;
    if (const auto* r = as<VarRef>(*n.args[0])) {
      auto it = frame_->vars.find(r->var.get());
      if (it != frame_->vars.end() && it->second.kind == Storage::Array) xs = it->second.ptr;
    }
    if (!xs) {
      xs = scratch(T_ * 8);
      threads(mask, [&] { b_.CreateStore(expr(n.args[0]), b_.CreateInBoundsGEP(xty, xs, tid_)); });
    }
    Value* y_same = nullptr;  // the lane operand, when it is the same for every thread
    Value* ys = nullptr;
    if (n.args.size() > 1) {
      if (level(n.args[1], *frame_) == Lvl::Uniform) {
        y_same = b_.CreateTrunc(i64(expr(n.args[1]), n.args[1]->type), b_.getInt32Ty());
      } else {
        ys = scratch(T_ * 4);
        threads(mask, [&] {
          b_.CreateStore(b_.CreateTrunc(i64(expr(n.args[1]), n.args[1]->type), b_.getInt32Ty()),
                         b_.CreateInBoundsGEP(b_.getInt32Ty(), ys, tid_));
        });
      }
    }
    Storage& out = define_array(n.outputs[0]);
    llvm::Type* oty = type(n.outputs[0]->type);
    bool vote = n.op == IntrinsicOp::VoteAll || n.op == IntrinsicOp::VoteAny || n.op == IntrinsicOp::Ballot;
    if (T_ % 32 == 0 && !xty->isIntegerTy(1) && !oty->isIntegerTy(1)) {
      each_warp([&](Value* w) { warp_lanes(n, mask, xs, y_same, ys, out.ptr, b_.CreateShl(w, 5)); }, "swarp");
      return;
    }
    each_warp(
        [&](Value* w) {
          Value* first = b_.CreateShl(w, 5);
          Value* size = lanes_in(w);
          // The warp's ballot of the operands (for votes and ballot).
          auto* bits = entry_alloca(b_.getInt32Ty(), "ballot");
          b_.CreateStore(b_.getInt32(0), bits);
          if (vote) {
            loop(
                b_.getInt32(0), size,
                [&](Value* l) {
                  Value* x = b_.CreateLoad(xty, b_.CreateInBoundsGEP(xty, xs, b_.CreateOr(first, l)));
                  Value* on = xty->isIntegerTy() ? b_.CreateICmpNE(x, llvm::ConstantInt::get(xty, 0))
                                                 : b_.CreateFCmpUNE(x, llvm::ConstantFP::get(xty, 0.0));
                  b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt32Ty(), bits),
                                             b_.CreateShl(b_.CreateZExt(on, b_.getInt32Ty()), l)),
                                 bits);
                },
                "vlane");
          }
          loop(
              b_.getInt32(0), size,
              [&](Value* l) {
                Value* tid = b_.CreateOr(first, l);
                Value* saved = tid_;
                tid_ = tid;
                auto body = [&] {
                  Value* r;
                  if (vote) {
                    Value* bl = b_.CreateLoad(b_.getInt32Ty(), bits);
                    if (n.op == IntrinsicOp::Ballot) {
                      r = bl;
                    } else if (n.op == IntrinsicOp::VoteAny) {
                      r = b_.CreateICmpNE(bl, b_.getInt32(0));
                    } else {
                      Value* full = b_.CreateSelect(b_.CreateICmpEQ(size, b_.getInt32(32)), b_.getInt32(-1),
                                                    b_.CreateSub(b_.CreateShl(b_.getInt32(1), size), b_.getInt32(1)));
                      r = b_.CreateICmpEQ(bl, full);
                    }
                  } else {
                    Value* y = y_same ? y_same
                                      : b_.CreateLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(b_.getInt32Ty(), ys, tid));
                    Value* src;
                    switch (n.op) {
                      case IntrinsicOp::ShflXor: src = b_.CreateXor(l, b_.CreateAnd(y, b_.getInt32(31))); break;
                      case IntrinsicOp::ShflDown: src = b_.CreateAdd(l, y); break;
                      case IntrinsicOp::ShflUp: src = b_.CreateSub(l, y); break;
                      default: src = b_.CreateAnd(y, b_.getInt32(31)); break;
                    }
                    Value* inside = b_.CreateAnd(b_.CreateICmpSGE(src, b_.getInt32(0)), b_.CreateICmpSLT(src, size));
                    Value* from = b_.CreateAdd(first, b_.CreateSelect(inside, src, l));
                    r = b_.CreateLoad(xty, b_.CreateInBoundsGEP(xty, xs, from));
                  }
                  if (r->getType() != oty) r = b_.CreateZExt(r, oty);
                  b_.CreateStore(r, b_.CreateInBoundsGEP(oty, out.ptr, tid));
                };
                if (mask)
                  if_then(active(mask), body);
                else
                  body();
                tid_ = saved;
              },
              "slane", true);
        },
        "swarp");
  }

  /// A shuffle, vote or ballot over one full warp as vector operations on its 32 lanes: the
  /// operands of lanes [first, first + 32) loaded as one vector, permuted (a constant shuffle when
  /// the lane operand is a constant), the results stored under the mask.
  void warp_lanes(const Intrinsic& n, Value* mask, Value* xs, Value* y_same, Value* ys, Value* outp, Value* first) {
    llvm::Type* xty = type(n.args[0]->type);
    llvm::Type* oty = type(n.outputs[0]->type);
    auto* i32 = b_.getInt32Ty();
    auto* xv_ty = llvm::FixedVectorType::get(xty, 32);
    auto align = [](llvm::Type* t) { return llvm::Align(std::max<unsigned>(1, t->getScalarSizeInBits() / 8)); };
    Value* xv = b_.CreateAlignedLoad(xv_ty, b_.CreateInBoundsGEP(xty, xs, first), align(xty));
    Value* r = nullptr;
    if (n.op == IntrinsicOp::VoteAll || n.op == IntrinsicOp::VoteAny || n.op == IntrinsicOp::Ballot) {
      Value* on = xty->isIntegerTy() ? b_.CreateICmpNE(xv, llvm::Constant::getNullValue(xv_ty))
                                     : b_.CreateFCmpUNE(xv, llvm::Constant::getNullValue(xv_ty));
      Value* bits = b_.CreateBitCast(on, i32);
      Value* one = n.op == IntrinsicOp::Ballot    ? bits
                   : n.op == IntrinsicOp::VoteAny ? b_.CreateICmpNE(bits, b_.getInt32(0))
                                                  : b_.CreateICmpEQ(bits, b_.getInt32(-1));
      if (one->getType() != oty) one = b_.CreateZExt(one, oty);
      r = b_.CreateVectorSplat(32, one);
    } else {
      auto source = [&](std::int64_t l, std::int64_t y) -> int {
        std::int64_t s = n.op == IntrinsicOp::ShflXor    ? (l ^ (y & 31))
                         : n.op == IntrinsicOp::ShflDown ? l + y
                         : n.op == IntrinsicOp::ShflUp   ? l - y
                                                         : (y & 31);
        return static_cast<int>(s >= 0 && s < 32 ? s : l);
      };
      auto* k = y_same ? llvm::dyn_cast<llvm::ConstantInt>(y_same) : nullptr;
      if (k) {
        std::vector<int> pick(32);
        for (int l = 0; l < 32; ++l) pick[static_cast<std::size_t>(l)] = source(l, k->getSExtValue());
        r = b_.CreateShuffleVector(xv, pick);
      } else {
        auto* iv_ty = llvm::FixedVectorType::get(i32, 32);
        std::vector<llvm::Constant*> ls;
        for (int l = 0; l < 32; ++l) ls.push_back(b_.getInt32(l));
        Value* lane = llvm::ConstantVector::get(ls);
        Value* y = y_same ? b_.CreateVectorSplat(32, y_same)
                          : b_.CreateAlignedLoad(iv_ty, b_.CreateInBoundsGEP(i32, ys, first), llvm::Align(4));
        Value* src;
        switch (n.op) {
          case IntrinsicOp::ShflXor:
            src = b_.CreateXor(lane, b_.CreateAnd(y, b_.CreateVectorSplat(32, b_.getInt32(31))));
            break;
          case IntrinsicOp::ShflDown: src = b_.CreateAdd(lane, y); break;
          case IntrinsicOp::ShflUp: src = b_.CreateSub(lane, y); break;
          default: src = b_.CreateAnd(y, b_.CreateVectorSplat(32, b_.getInt32(31))); break;
        }
        Value* inside = b_.CreateAnd(b_.CreateICmpSGE(src, llvm::Constant::getNullValue(iv_ty)),
                                     b_.CreateICmpSLT(src, b_.CreateVectorSplat(32, b_.getInt32(32))));
        Value* from = b_.CreateSelect(inside, src, lane);
        // The operands in a warp-sized slot of our own, gathered from there.
        auto* slot = entry_alloca(llvm::ArrayType::get(xty, 32), "warp_x");
        b_.CreateAlignedStore(xv, slot, align(xty));
        Value* ptrs = b_.CreateInBoundsGEP(xty, slot, from);
        r = b_.CreateMaskedGather(xv_ty, ptrs, align(xty));
      }
      if (xty != oty) r = b_.CreateZExt(r, llvm::FixedVectorType::get(oty, 32));
    }
    Value* at = b_.CreateInBoundsGEP(oty, outp, first);
    if (!mask) {
      b_.CreateAlignedStore(r, at, align(oty));
      return;
    }
    auto* mv_ty = llvm::FixedVectorType::get(b_.getInt8Ty(), 32);
    Value* on =
        b_.CreateICmpNE(b_.CreateAlignedLoad(mv_ty, b_.CreateInBoundsGEP(b_.getInt8Ty(), mask, first), llvm::Align(1)),
                        llvm::Constant::getNullValue(mv_ty));
    b_.CreateMaskedStore(r, at, align(oty), on);
  }

  /// The base of a thread-local fragment array and its element size, for the mma and ldmatrix
  /// helpers (layout [element][thread]).
  Value* fragment(const MemPtr& m, SourceLoc l) {
    const MemRef& r = memref(m.get(), l);
    if (r.space != MemSpace::Local || !r.offsets.empty())
      throw InternalError("cpu: a fragment that is not a whole local array");
    return r.base;
  }
  void mma(const Intrinsic& n, Value* mask) {
    (void)mask;  // the checker guarantees all 32 lanes
    auto* ptr = llvm::PointerType::get(ctx_, 0);
    auto fn = helper("vt_cpu_mma", b_.getVoidTy(),
                     {b_.getInt32Ty(), ptr, ptr, ptr, ptr, b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty()});
    Value* d = fragment(n.mems[0], n.loc);
    Value* a = fragment(n.mems[1], n.loc);
    Value* bb = fragment(n.mems[2], n.loc);
    Value* c = fragment(n.mems[3], n.loc);
    each_warp(
        [&](Value* w) {
          b_.CreateCall(fn, {b_.getInt32(static_cast<std::int32_t>(n.imms[0])), d, a, bb, c,
                             b_.getInt32(static_cast<std::int32_t>(T_)), w,
                             b_.getInt32(n.mems[1]->elem == ScalarType::F16    ? 1
                                         : n.mems[1]->elem == ScalarType::BF16 ? 2
                                                                               : 0)});
        },
        "mwarp");
  }
  void ldmatrix(const Intrinsic& n, Value* mask) {
    auto* ptr = llvm::PointerType::get(ctx_, 0);
    const MemRef& src = memref(n.mems[1].get(), n.loc);
    Value* dst = fragment(n.mems[0], n.loc);
    // Each lane's row address (an element index of the source), then the helper per warp.
    Value* rows = scratch(T_ * 8);
    threads(mask, [&] {
      b_.CreateStore(flat(src, expr(n.args[0]), n.args[0]->type), b_.CreateInBoundsGEP(b_.getInt64Ty(), rows, tid_));
    });
    auto fn = helper("vt_cpu_ldmatrix", b_.getVoidTy(),
                     {b_.getInt32Ty(), ptr, ptr, ptr, b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt64Ty(),
                      b_.getInt64Ty(), ptr, b_.getInt64Ty(), b_.getInt64Ty(), b_.getInt32Ty()});
    std::int64_t s = site(n.loc, src.name, false);
    each_warp(
        [&](Value* w) {
          b_.CreateCall(
              fn, {b_.getInt32(static_cast<std::int32_t>(n.imms[0])), dst, src.base, rows,
                   b_.getInt32(static_cast<std::int32_t>(T_)), w, b_.getInt64(bytes(src.elem)), src.bound, err_,
                   b_.getInt64(lower::check_tag(entry_name_)), block_, b_.getInt32(static_cast<std::int32_t>(s))});
        },
        "lwarp");
  }

  const lower::Lowered& L_;
  std::int64_t T_;
  Module::Impl& out_;
  llvm::LLVMContext& ctx_;
  IRBuilder<> b_;
  std::string entry_name_;
  llvm::Function* fn_ = nullptr;
  BasicBlock* entry_bb_ = nullptr;
  Value *block_ = nullptr, *blocks_ = nullptr, *shared_ = nullptr, *scratch_ = nullptr, *err_ = nullptr;
  Value* tid_ = nullptr;  ///< the current thread, inside a thread loop
  // Inside a thread loop: tid_ = 32 * lane_warp_ + lane_, 0 <= lane_ < 32 (what the thread-position
  // arithmetic below folds).
  Value* lane_ = nullptr;
  Value* lane_warp_ = nullptr;
  Value* warp_ = nullptr;                         ///< the warp of a warp region (null: the block context)
  std::vector<PendingCheck>* pending_ = nullptr;  ///< the checks of the thread loop being made
  std::map<llvm::Type*, Value*> zeros_;
  Frame* frame_ = nullptr;
  std::vector<std::unique_ptr<Frame>> frames_;
  std::int64_t scratch_bytes_ = 0;
  Collectives collectives_;
};

}  // namespace

Module generate(const lower::Lowered& lowered, const std::string& entry) {
  auto impl = std::make_unique<Module::Impl>();
  impl->ctx = std::make_unique<llvm::LLVMContext>();
  // LLVM's remarks and warnings (a lane loop it could not vectorize) go to the debug log, not to
  // the user's stderr (and never end the process, as LLVM's own handler does on an error).
  impl->ctx->setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* info, void*) {
        std::string text;
        llvm::raw_string_ostream os(text);
        llvm::DiagnosticPrinterRawOStream printer(os);
        info->print(printer);
        if (info->getSeverity() == llvm::DS_Error)
          logging::get().warn("cpu: LLVM: {}", text);
        else
          logging::get().debug("cpu: LLVM: {}", text);
      },
      nullptr);
  impl->mod = std::make_unique<llvm::Module>(entry, *impl->ctx);
  impl->entry = entry;
  Gen(lowered, entry, *impl).run();
  return Module(std::move(impl));
}

}  // namespace vantage::cpu
