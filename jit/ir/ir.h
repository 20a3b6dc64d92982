// Vantage kernel IR: immutable, reference-counted nodes with a structural hash computed at
// construction. One list of node kinds (below) generates the kind enums and the dispatch; each node
// lists its fields once, in `fields()`, and hashing, equality, the child walk of the visitor and the
// rebuild of the mutator (jit/ir/visit.h) are all derived from that list. A new node kind therefore
// needs exactly two things: its struct with `fields()`, and its name in the list. Source locations
// ride on every node but take no part in hashing or equality.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "jit/target/target.h"
#include "vantage/diagnostics.hpp"
#include "vantage/types.hpp"

namespace vantage::detail {
// What the builder's handles (Expr, Var, View) hold: opaque bases of the IR nodes, so that the
// public headers name no IR type (see frontend/handles.h).
struct ExprRep {};
struct VarRep {};
struct MemRep {};
}  // namespace vantage::detail

namespace vantage::ir {

// clang-format off
#define VANTAGE_IR_EXPRS(X) X(Literal) X(VarRef) X(Unary) X(Binary) X(Cast) X(Select) X(MathCall) X(Id) X(Load) X(Builtin)

#define VANTAGE_IR_STMTS(X)                                                                              \
  X(Seq) X(Let) X(Assign) X(Store) X(If) X(For) X(While) X(Group) X(Split) X(Destruct) X(Partition)     \
  X(Claim) X(Lower) X(Async) X(SharedAlloc) X(LocalAlloc) X(Call) X(Intrinsic) X(Unsafe) X(Return)  \
  X(Barrier) X(VectorCopy) X(Jump)
// clang-format on

enum class ExprKind : std::uint8_t {
#define VANTAGE_X(N) N,
  VANTAGE_IR_EXPRS(VANTAGE_X)
#undef VANTAGE_X
};
enum class StmtKind : std::uint8_t {
#define VANTAGE_X(N) N,
  VANTAGE_IR_STMTS(VANTAGE_X)
#undef VANTAGE_X
};

enum class UnOp : std::uint8_t { Neg, Not, BitNot };
enum class BinOp : std::uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  LAnd,
  LOr,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Min,
  Max,
  Pow
};
enum class MathFn : std::uint8_t {
  Sqrt,
  Rsqrt,
  Exp,
  Exp2,
  Log,
  Log2,
  Sin,
  Cos,
  Tanh,
  Abs,
  Floor,
  Ceil,
  Fma,
  // Added with the functions of CUDA's math library a workload needs beyond the first thirteen (GELU's
  // erf, softplus's log1p, a rotation's atan2, quantization's rint, the predicates of a NaN guard).
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Erf,
  Erfc,
  Expm1,
  Log1p,
  Log10,
  Cbrt,
  Trunc,
  Round,  ///< to the nearest, halves away from zero (C's round)
  Rint,   ///< to the nearest, halves to even (the rounding of a cast with `_rn`)
  Atan2,
  Fmod,
  Hypot,
  Copysign,
  IsNan,     ///< bool
  IsInf,     ///< bool
  IsFinite,  ///< bool
  // The bit functions (docs/semantics.md): an integer operand of 32 or 64 bits, read as its bits.
  Popc,  ///< set bits: i32
  Clz,   ///< leading zero bits, the width for 0: i32
  Ffs,   ///< 1 + the lowest set bit's position, 0 for 0: i32
  Brev,  ///< the bits in reverse order: the operand's type
  /// The operand's bits as the call's type, of the same size (32 or 64 bits; bit_cast).
  Bitcast,
};
/// Whether `fn` is a float predicate (a bool of a float operand).
constexpr bool is_float_predicate(MathFn fn) {
  return fn == MathFn::IsNan || fn == MathFn::IsInf || fn == MathFn::IsFinite;
}
/// Whether `fn` is one of the bit functions (integer operands; not a float math function).
constexpr bool is_bit_fn(MathFn fn) {
  return fn == MathFn::Popc || fn == MathFn::Clz || fn == MathFn::Ffs || fn == MathFn::Brev;
}

/// The intrinsics' identities. Everything about them (names, the threads they need, what they do to
/// memory, the feature a target needs, the backends that run them) is their row in the one table of
/// jit/ir/intrinsics.h, which has one row per enumerator, in this order.
enum class IntrinsicOp : std::uint8_t {
  SyncThreads,
  SyncWarp,
  NamedBarrier,
  ShflXor,
  ShflDown,
  ShflUp,
  ShflIdx,
  VoteAll,
  VoteAny,
  Ballot,
  Atomic,
  MmaSync,
  Ldmatrix,
  Wgmma,
  WgmmaFence,
  WgmmaCommit,
  WgmmaWait,
  CpAsync,
  CpAsyncCommit,
  CpAsyncWait,
  TmaLoad2D,
  MbarrierInit,
  MbarrierArrive,
  MbarrierExpectTx,
  MbarrierWait,
  SetMaxNreg,
  FenceProxyAsync,
  TmaStore2D,
  TmaStoreWait,
  ClusterSync,
  TmaLoadMulticast2D,
  MbarrierArriveCluster,
  Nanosleep,
  Print,
  Assert,
};
inline constexpr std::size_t kIntrinsics = static_cast<std::size_t>(IntrinsicOp::Assert) + 1;

/// Kinds of atomic operation, their scopes and orderings: an Atomic intrinsic's first imm is the kind
/// plus 16 times the scope plus 64 times the ordering (the device scope and relaxed ordering, both 0,
/// leave it the kind alone).
using AtomicKind = target::AtomicOp;
using AtomicScope = target::AtomicScope;
using MemoryOrder = target::MemoryOrder;
inline constexpr std::int64_t atomic_imm(AtomicKind k, AtomicScope s, MemoryOrder o = MemoryOrder::Relaxed) {
  return static_cast<std::int64_t>(k) + 16 * static_cast<std::int64_t>(s) + 64 * static_cast<std::int64_t>(o);
}
inline constexpr AtomicKind atomic_kind(std::int64_t imm) { return static_cast<AtomicKind>(imm % 16); }
inline constexpr AtomicScope atomic_scope(std::int64_t imm) { return static_cast<AtomicScope>(imm / 16 % 4); }
inline constexpr MemoryOrder atomic_order(std::int64_t imm) { return static_cast<MemoryOrder>(imm / 64); }
/// Tensor-core `mma.sync` shapes (the imm of an MmaSync intrinsic).
enum class MmaShape : std::uint8_t { TF32_M16N8K8, F16_M16N8K16, BF16_M16N8K16, S8_M16N8K32 };

const char* name_of(ExprKind k);
const char* name_of(StmtKind k);
const char* name_of(UnOp op);
const char* name_of(BinOp op);
const char* name_of(MathFn fn);
const char* name_of(IntrinsicOp op);
/// What users call an intrinsic: "sync_threads", "named_barrier", "cp_async".
const std::string& user_name(IntrinsicOp op);
bool is_comparison(BinOp op);
/// Whether an operator is defined on operands of this type (both operands of a binary operator have
/// it, a shift's amount any integer type): the typing rule the checker enforces (V0702) and that the
/// builder keeps to when it folds literals.
bool defined_for(BinOp op, ScalarType operand);
/// Whether a binary operator's operand types agree (V0701): the same type, or for a shift two integer
/// types.
bool operands_agree(BinOp op, ScalarType a, ScalarType b);
bool defined_for(UnOp op, ScalarType operand);

struct ExprNode;
struct StmtNode;
struct VarNode;
struct MemNode;
struct FunctionNode;
using ExprPtr = std::shared_ptr<const ExprNode>;
using StmtPtr = std::shared_ptr<const StmtNode>;
using VarPtr = std::shared_ptr<const VarNode>;
using MemPtr = std::shared_ptr<const MemNode>;
using FunctionPtr = std::shared_ptr<const FunctionNode>;

/// A thread-local scalar: a let, a loop variable, a scalar parameter, an index-function argument or
/// an intrinsic's output. Identity is the node; `id` is its order of creation in its builder.
struct VarNode : detail::VarRep {
  enum class Origin : std::uint8_t { Let, Param, Loop, IndexArg, Output };
  int id;
  std::string name;
  ScalarType type;
  Origin origin;
  SourceLoc loc;
  std::uint64_t hash;
  VarNode(int i, std::string n, ScalarType t, Origin o, SourceLoc l)
      : id(i), name(std::move(n)), type(t), origin(o), loc(l), hash(0) {}
};

/// A name for memory. Views made by partition/claim/lower/async are new MemNodes.
struct MemNode : detail::MemRep {
  enum class Origin : std::uint8_t { Param, Shared, Local, Partition, Claim, Lower, Async };
  int id;
  std::string name;
  ScalarType elem;
  MemSpace space;
  bool is_const;
  int dims;  ///< number of indices an access takes
  Origin origin;
  SourceLoc loc;
  std::uint64_t hash;
  MemNode(int i, std::string n, ScalarType e, MemSpace s, bool c, int d, Origin o, SourceLoc l)
      : id(i), name(std::move(n)), elem(e), space(s), is_const(c), dims(d), origin(o), loc(l), hash(0) {}
};

struct ExprNode : detail::ExprRep {
  ExprKind kind;
  ScalarType type;
  SourceLoc loc;
  std::uint64_t hash = 0;

 protected:
  ExprNode(ExprKind k, ScalarType t, SourceLoc l) : kind(k), type(t), loc(l) {}
};

// Every expression node is built as `N(type, fields..., loc)` and lists its fields in `fields()`.

/// An integer (value in `i`; u64 as its bit pattern), bool (0/1) or float (`f`) constant.
struct Literal : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Literal;
  std::int64_t i = 0;
  double f = 0;
  Literal(ScalarType t, std::int64_t iv, double fv, SourceLoc l) : ExprNode(kKind, t, l), i(iv), f(fv) {}
  auto fields() const { return std::tie(i, f); }
};
struct VarRef : ExprNode {
  static constexpr ExprKind kKind = ExprKind::VarRef;
  VarPtr var;
  VarRef(ScalarType t, VarPtr v, SourceLoc l) : ExprNode(kKind, t, l), var(std::move(v)) {}
  auto fields() const { return std::tie(var); }
};
struct Unary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnOp op;
  ExprPtr a;
  Unary(ScalarType t, UnOp o, ExprPtr x, SourceLoc l) : ExprNode(kKind, t, l), op(o), a(std::move(x)) {}
  auto fields() const { return std::tie(op, a); }
};
struct Binary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinOp op;
  ExprPtr a, b;
  Binary(ScalarType t, BinOp o, ExprPtr x, ExprPtr y, SourceLoc l)
      : ExprNode(kKind, t, l), op(o), a(std::move(x)), b(std::move(y)) {}
  auto fields() const { return std::tie(op, a, b); }
};
struct Cast : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  ExprPtr a;
  Cast(ScalarType to, ExprPtr x, SourceLoc l) : ExprNode(kKind, to, l), a(std::move(x)) {}
  auto fields() const { return std::tie(a); }
};
/// `c ? a : b` with both arms evaluated (docs/semantics.md).
struct Select : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  ExprPtr c, a, b;
  Select(ScalarType t, ExprPtr cc, ExprPtr x, ExprPtr y, SourceLoc l)
      : ExprNode(kKind, t, l), c(std::move(cc)), a(std::move(x)), b(std::move(y)) {}
  auto fields() const { return std::tie(c, a, b); }
};
struct MathCall : ExprNode {
  static constexpr ExprKind kKind = ExprKind::MathCall;
  MathFn fn;
  std::vector<ExprPtr> args;
  MathCall(ScalarType t, MathFn f, std::vector<ExprPtr> xs, SourceLoc l)
      : ExprNode(kKind, t, l), fn(f), args(std::move(xs)) {}
  auto fields() const { return std::tie(fn, args); }
};
/// `id(p)`: the index of unit p inside the code's perspective.
struct Id : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Id;
  Perspective p;
  Id(ScalarType t, Perspective pp, SourceLoc l) : ExprNode(kKind, t, l), p(pp) {}
  auto fields() const { return std::tie(p); }
};
/// Lowered IR only: an access lowering could not prove inside its memory carries a `bound` (the
/// number of elements it must stay below: an extent, an array's count, or a buffer's length) and a
/// `site` (its index in Lowered::checks); it is checked as it runs. Null bound: proven, unchecked.
struct Load : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  MemPtr mem;
  std::vector<ExprPtr> indices;
  ExprPtr bound;
  std::int64_t site = -1;
  Load(ScalarType t, MemPtr m, std::vector<ExprPtr> idx, ExprPtr b, std::int64_t s, SourceLoc l)
      : ExprNode(kKind, t, l), mem(std::move(m)), indices(std::move(idx)), bound(std::move(b)), site(s) {}
  Load(ScalarType t, MemPtr m, std::vector<ExprPtr> idx, SourceLoc l)
      : Load(t, std::move(m), std::move(idx), nullptr, -1, l) {}
  auto fields() const { return std::tie(mem, indices, bound, site); }
};

/// The hardware position of the running thread (lowered IR only), or the launch's grid size (also in
/// the builder's IR: `Scope::grid_blocks()`, the same value everywhere), an i32.
enum class BuiltinKind : std::uint8_t {
  ThreadInBlock,  ///< threadIdx.x (inside a device function: the caller's position for it)
  BlockInGrid,    ///< blockIdx.x (inside a device function: the caller's block position)
  BlocksInGrid,   ///< gridDim.x: the blocks of the launch
};
struct Builtin : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Builtin;
  BuiltinKind which;
  Builtin(ScalarType t, BuiltinKind w, SourceLoc l) : ExprNode(kKind, t, l), which(w) {}
  auto fields() const { return std::tie(which); }
};

struct StmtNode {
  StmtKind kind;
  SourceLoc loc;
  std::uint64_t hash = 0;

 protected:
  StmtNode(StmtKind k, SourceLoc l) : kind(k), loc(l) {}
};

// Every statement node is built as `N(fields..., loc)` and lists its fields in `fields()`.

struct Seq : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  std::vector<StmtPtr> stmts;
  Seq(std::vector<StmtPtr> s, SourceLoc l) : StmtNode(kKind, l), stmts(std::move(s)) {}
  auto fields() const { return std::tie(stmts); }
};
struct Let : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Let;
  VarPtr var;
  ExprPtr value;
  std::optional<Perspective> at;
  Let(VarPtr v, ExprPtr e, std::optional<Perspective> p, SourceLoc l)
      : StmtNode(kKind, l), var(std::move(v)), value(std::move(e)), at(p) {}
  auto fields() const { return std::tie(var, value, at); }
};
struct Assign : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Assign;
  VarPtr var;
  ExprPtr value;
  Assign(VarPtr v, ExprPtr e, SourceLoc l) : StmtNode(kKind, l), var(std::move(v)), value(std::move(e)) {}
  auto fields() const { return std::tie(var, value); }
};
/// `bound` and `site` as for Load (lowered IR only).
struct Store : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  MemPtr mem;
  std::vector<ExprPtr> indices;
  ExprPtr value;
  ExprPtr bound;
  std::int64_t site = -1;
  Store(MemPtr m, std::vector<ExprPtr> idx, ExprPtr v, ExprPtr b, std::int64_t s, SourceLoc l)
      : StmtNode(kKind, l),
        mem(std::move(m)),
        indices(std::move(idx)),
        value(std::move(v)),
        bound(std::move(b)),
        site(s) {}
  Store(MemPtr m, std::vector<ExprPtr> idx, ExprPtr v, SourceLoc l)
      : Store(std::move(m), std::move(idx), std::move(v), nullptr, -1, l) {}
  auto fields() const { return std::tie(mem, indices, value, bound, site); }
};
struct If : StmtNode {
  static constexpr StmtKind kKind = StmtKind::If;
  ExprPtr cond;
  StmtPtr then_body, else_body;  ///< else_body may be null
  If(ExprPtr c, StmtPtr t, StmtPtr e, SourceLoc l)
      : StmtNode(kKind, l), cond(std::move(c)), then_body(std::move(t)), else_body(std::move(e)) {}
  auto fields() const { return std::tie(cond, then_body, else_body); }
};
struct For : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  VarPtr var;
  ExprPtr begin, end, step;
  StmtPtr body;
  For(VarPtr v, ExprPtr b, ExprPtr e, ExprPtr s, StmtPtr bd, SourceLoc l)
      : StmtNode(kKind, l),
        var(std::move(v)),
        begin(std::move(b)),
        end(std::move(e)),
        step(std::move(s)),
        body(std::move(bd)) {}
  auto fields() const { return std::tie(var, begin, end, step, body); }
};
struct While : StmtNode {
  static constexpr StmtKind kKind = StmtKind::While;
  ExprPtr cond;
  StmtPtr body;
  While(ExprPtr c, StmtPtr b, SourceLoc l) : StmtNode(kKind, l), cond(std::move(c)), body(std::move(b)) {}
  auto fields() const { return std::tie(cond, body); }
};
struct Group : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Group;
  Perspective p;
  StmtPtr body;
  Group(Perspective pp, StmtPtr b, SourceLoc l) : StmtNode(kKind, l), p(pp), body(std::move(b)) {}
  auto fields() const { return std::tie(p, body); }
};
struct Split : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Split;
  Level level;
  std::vector<std::int64_t> counts;
  std::vector<StmtPtr> bodies;
  std::vector<SourceLoc> branch_locs;
  Split(Level lv, std::vector<std::int64_t> c, std::vector<StmtPtr> b, std::vector<SourceLoc> bl, SourceLoc l)
      : StmtNode(kKind, l), level(lv), counts(std::move(c)), bodies(std::move(b)), branch_locs(std::move(bl)) {}
  auto fields() const { return std::tie(level, counts, bodies, branch_locs); }
};
struct Destruct : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Destruct;
  StmtPtr body;
  Destruct(StmtPtr b, SourceLoc l) : StmtNode(kKind, l), body(std::move(b)) {}
  auto fields() const { return std::tie(body); }
};
struct Partition : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Partition;
  MemPtr src, dst;
  Perspective p;
  std::vector<VarPtr> index_vars;
  ExprPtr index;
  StmtPtr body;
  /// The helper that made it ("lib::for_each_row"; Scope::called_as), for diagnostics only, as Claim's.
  std::string via;
  Partition(MemPtr s, MemPtr d, Perspective pp, std::vector<VarPtr> iv, ExprPtr ix, StmtPtr b, SourceLoc l,
            std::string v = {})
      : StmtNode(kKind, l),
        src(std::move(s)),
        dst(std::move(d)),
        p(pp),
        index_vars(std::move(iv)),
        index(std::move(ix)),
        body(std::move(b)),
        via(std::move(v)) {}
  auto fields() const { return std::tie(src, dst, p, index_vars, index, body); }
};
struct Claim : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Claim;
  MemPtr src, dst;
  Perspective p;
  StmtPtr body;
  /// The helper that made it ("lib::store_by_one"; Scope::called_as), for diagnostics only: not a
  /// field (the node means the same whoever wrote it).
  std::string via;
  Claim(MemPtr s, MemPtr d, Perspective pp, StmtPtr b, SourceLoc l, std::string v = {})
      : StmtNode(kKind, l), src(std::move(s)), dst(std::move(d)), p(pp), body(std::move(b)), via(std::move(v)) {}
  auto fields() const { return std::tie(src, dst, p, body); }
};
struct Lower : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Lower;
  MemPtr src, dst;
  StmtPtr body;
  Lower(MemPtr s, MemPtr d, StmtPtr b, SourceLoc l)
      : StmtNode(kKind, l), src(std::move(s)), dst(std::move(d)), body(std::move(b)) {}
  auto fields() const { return std::tie(src, dst, body); }
};
struct Async : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Async;
  MemPtr src, dst;
  StmtPtr body;
  Async(MemPtr s, MemPtr d, StmtPtr b, SourceLoc l)
      : StmtNode(kKind, l), src(std::move(s)), dst(std::move(d)), body(std::move(b)) {}
  auto fields() const { return std::tie(src, dst, body); }
};
struct SharedAlloc : StmtNode {
  static constexpr StmtKind kKind = StmtKind::SharedAlloc;
  MemPtr mem;
  ExprPtr count;
  std::int64_t align;  ///< bytes its first element is aligned to: 16, or a larger power of two (TMA, wgmma)
  SharedAlloc(MemPtr m, ExprPtr c, std::int64_t a, SourceLoc l)
      : StmtNode(kKind, l), mem(std::move(m)), count(std::move(c)), align(a) {}
  SharedAlloc(MemPtr m, ExprPtr c, SourceLoc l) : SharedAlloc(std::move(m), std::move(c), 16, l) {}
  auto fields() const { return std::tie(mem, count, align); }
};
struct LocalAlloc : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LocalAlloc;
  MemPtr mem;
  std::int64_t count;
  std::optional<Perspective> at;
  LocalAlloc(MemPtr m, std::int64_t c, std::optional<Perspective> p, SourceLoc l)
      : StmtNode(kKind, l), mem(std::move(m)), count(c), at(p) {}
  auto fields() const { return std::tie(mem, count, at); }
};
/// One call argument: exactly one of value and mem is set.
struct CallArgNode {
  ExprPtr value;
  MemPtr mem;
};
struct Call : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Call;
  FunctionPtr fn;
  std::vector<CallArgNode> args;
  VarPtr result;  ///< may be null
  Call(FunctionPtr f, std::vector<CallArgNode> a, VarPtr r, SourceLoc l)
      : StmtNode(kKind, l), fn(std::move(f)), args(std::move(a)), result(std::move(r)) {}
  auto fields() const { return std::tie(fn, args, result); }
};
struct Intrinsic : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Intrinsic;
  IntrinsicOp op;
  std::vector<ExprPtr> args;
  std::vector<MemPtr> mems;
  std::vector<VarPtr> outputs;
  std::vector<std::int64_t> imms;
  std::string text;  ///< a print's format (jit/ir/print_format.h); empty for every other op
  Intrinsic(IntrinsicOp o, std::vector<ExprPtr> a, std::vector<MemPtr> m, std::vector<VarPtr> out,
            std::vector<std::int64_t> im, std::string t, SourceLoc l)
      : StmtNode(kKind, l),
        op(o),
        args(std::move(a)),
        mems(std::move(m)),
        outputs(std::move(out)),
        imms(std::move(im)),
        text(std::move(t)) {}
  Intrinsic(IntrinsicOp o, std::vector<ExprPtr> a, std::vector<MemPtr> m, std::vector<VarPtr> out,
            std::vector<std::int64_t> im, SourceLoc l)
      : Intrinsic(o, std::move(a), std::move(m), std::move(out), std::move(im), std::string(), l) {}
  auto fields() const { return std::tie(op, args, mems, outputs, imms, text); }
};
using NamedExpr = std::pair<std::string, ExprPtr>;
using NamedVar = std::pair<std::string, VarPtr>;
struct Unsafe : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Unsafe;
  Perspective needs;
  std::string cuda;
  std::vector<NamedExpr> inputs;
  std::vector<NamedVar> outputs;
  Unsafe(Perspective p, std::string c, std::vector<NamedExpr> in, std::vector<NamedVar> out, SourceLoc l)
      : StmtNode(kKind, l), needs(p), cuda(std::move(c)), inputs(std::move(in)), outputs(std::move(out)) {}
  auto fields() const { return std::tie(needs, cuda, inputs, outputs); }
};
struct Return : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Return;
  ExprPtr value;  ///< may be null
  Return(ExprPtr v, SourceLoc l) : StmtNode(kKind, l), value(std::move(v)) {}
  auto fields() const { return std::tie(value); }
};

/// `break` (leave the innermost loop) or `continue` (go on with its next iteration), in thread(1)
/// code only: no barrier or collective can be skipped by it (docs/semantics.md).
struct Jump : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Jump;
  bool is_break;
  Jump(bool b, SourceLoc l) : StmtNode(kKind, l), is_break(b) {}
  auto fields() const { return std::tie(is_break); }
};

/// How a barrier synchronizes its threads. `Planned` is what jit/sync inserts (the threads of the
/// code perspective `over`); jit/lower resolves it to a hardware primitive.
enum class BarrierKind : std::uint8_t {
  Planned,     ///< not yet lowered: every thread of one unit of `over`
  Block,       ///< __syncthreads: the whole block
  Warp,        ///< __syncwarp: the 32 lanes of the warp
  WarpPart,    ///< __syncwarp(mask): the aligned `threads` lanes (a power of two below 32) of the lane
  Named,       ///< bar.sync (id_base + threadIdx.x / threads), threads: each aligned unit of `threads`
  NamedFixed,  ///< the user's named_barrier: bar.sync id_base, threads (the code's one unit)
  Cluster,     ///< the user's cluster_sync: every thread of every block of the cluster
};
/// What a barrier first waits for of its threads' cp.async copies: nothing, every copy
/// (cp.async.wait_all), or, n > 0, every committed group but the newest n (cp.async.wait_group n).
constexpr std::int64_t kNoAsyncWait = -1;
constexpr std::int64_t kAsyncWaitAll = 0;
/// A barrier over every thread of one unit; `async_wait` first waits for the thread's outstanding
/// cp.async copies (above), `proxy_fence` first orders the thread's shared memory accesses before the
/// async proxy's after the barrier (fence.proxy.async: a TMA or wgmma reading what threads stored).
/// Inserted by jit/sync, resolved by jit/lower.
struct Barrier : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Barrier;
  Perspective over;
  BarrierKind how;
  std::int64_t threads;  ///< threads in one unit (lowered)
  std::int64_t id_base;  ///< Named: the first hardware barrier id of this unit size
  std::int64_t async_wait;
  bool proxy_fence;
  Barrier(Perspective o, BarrierKind h, std::int64_t t, std::int64_t id, std::int64_t aw, bool pf, SourceLoc l)
      : StmtNode(kKind, l), over(o), how(h), threads(t), id_base(id), async_wait(aw), proxy_fence(pf) {}
  Barrier(Perspective o, BarrierKind h, std::int64_t t, std::int64_t id, std::int64_t aw, SourceLoc l)
      : Barrier(o, h, t, id, aw, false, l) {}
  // The wait is a count, not a flag: a bool would silently mean "all" or "but the newest one".
  Barrier(Perspective, BarrierKind, std::int64_t, std::int64_t, bool, bool, SourceLoc) = delete;
  Barrier(Perspective, BarrierKind, std::int64_t, std::int64_t, bool, SourceLoc) = delete;
  auto fields() const { return std::tie(over, how, threads, id_base, async_wait, proxy_fence); }
};
/// Lowered IR only: `count` consecutive elements copied as one vector access, dst[di .. di+count) =
/// src[si .. si+count), on root memory; both indices are proven multiples of `count`.
struct VectorCopy : StmtNode {
  static constexpr StmtKind kKind = StmtKind::VectorCopy;
  MemPtr dst;
  ExprPtr dst_index;
  MemPtr src;
  ExprPtr src_index;
  std::int64_t count;
  /// The copy loop this stands for, as lowering had it (a For of one Store of a Load). Not a field:
  /// no pass walks or rewrites it. The interpreter runs it, the program as written, and checks that
  /// each of its rounds copies the element this vector does (docs/semantics.md).
  StmtPtr written;
  VectorCopy(MemPtr d, ExprPtr di, MemPtr s, ExprPtr si, std::int64_t c, SourceLoc l, StmtPtr loop = nullptr)
      : StmtNode(kKind, l),
        dst(std::move(d)),
        dst_index(std::move(di)),
        src(std::move(s)),
        src_index(std::move(si)),
        count(c),
        written(std::move(loop)) {}
  auto fields() const { return std::tie(dst, dst_index, src, src_index, count); }
};

/// A parameter of a kernel or device function: a scalar (var) or a pointer (mem).
struct ParamNode {
  std::string name;
  VarPtr var;
  MemPtr mem;
  bool specialized = false;
  ExprPtr extent;                 ///< pointers only; may be null
  std::optional<Perspective> at;  ///< device functions: where the parameter lives
  SourceLoc loc;
};

struct FunctionNode {
  std::string name;
  Perspective signature = thread(1);
  std::int64_t shared_budget = 0;
  std::optional<ScalarType> returns;
  std::vector<ParamNode> params;
  StmtPtr body;
  SourceLoc loc, signature_loc, budget_loc, returns_loc;
  std::uint64_t hash = 0;
};

/// A condition on the kernel's scalar parameters that every launch must meet (`require`): the
/// launcher evaluates it, and lowering may rely on it.
struct Requirement {
  ExprPtr cond;
  SourceLoc loc;
};

/// A TMA tensor map the runtime makes at launch over a row-major matrix in a pointer parameter:
/// `rows` x `cols` elements (expressions over the scalar parameters), read in boxes of `box_rows` x
/// `box_cols` with the 128-byte swizzle (so a box row is exactly 128 bytes). The kernel receives it
/// as a `__grid_constant__` parameter after the error record.
struct TensorMapNode {
  std::string name;
  MemPtr mem;  ///< the pointer parameter
  ExprPtr rows, cols;
  std::int64_t box_rows = 0, box_cols = 0;
  SourceLoc loc;
};

/// The most blocks a multiprocessor holds at once (sm_80 to sm_90): KernelBuilder::min_blocks_per_sm.
constexpr std::int64_t kMaxBlocksPerSm = 32;

struct KernelNode {
  std::string name;
  std::vector<ParamNode> params;
  std::optional<std::int64_t> threads;
  std::optional<std::int64_t> grid_blocks;
  std::int64_t grid_multiple = 1;
  std::int64_t cluster = 1;     ///< blocks per thread-block cluster (consecutive blocks; 1: no cluster)
  std::int64_t min_blocks = 0;  ///< blocks each multiprocessor holds at once (launch bounds; 0: not asked)
  std::int64_t shared_budget = 0;
  bool budget_declared = false;
  StmtPtr body;
  SourceLoc loc, threads_loc, grid_loc, budget_loc, body_loc, cluster_loc, min_blocks_loc;
  std::uint64_t hash = 0;
  std::vector<Requirement> requirements;   ///< conditions every launch must meet
  std::vector<TensorMapNode> tensor_maps;  ///< TMA tensor maps the runtime makes at launch
};

std::uint64_t hash_node(const ExprNode& e);
std::uint64_t hash_node(const StmtNode& s);
std::uint64_t hash_var(const VarNode& v);
std::uint64_t hash_mem(const MemNode& m);
std::uint64_t hash_function(const FunctionNode& f);
std::uint64_t hash_kernel(const KernelNode& k);

/// Builds a node and computes its structural hash.
template <class T, class... Args>
std::shared_ptr<const T> make(Args&&... args) {
  auto node = std::make_shared<T>(std::forward<Args>(args)...);
  node->hash = hash_node(*node);
  return node;
}

VarPtr make_var(int id, std::string name, ScalarType type, VarNode::Origin origin, SourceLoc loc);
MemPtr make_mem(int id, std::string name, ScalarType elem, MemSpace space, bool is_const, int dims,
                MemNode::Origin origin, SourceLoc loc);
/// A reference to a variable, typed as the variable.
ExprPtr ref(const VarPtr& v, SourceLoc loc);
/// An integer literal of type `t` (the value must fit `t`; see ir::fits).
ExprPtr int_literal(ScalarType t, std::int64_t v, SourceLoc loc);

/// Structural equality (ignores source locations); pointer-equal and hash-unequal shortcuts.
bool equal(const ExprPtr& a, const ExprPtr& b);
bool equal(const StmtPtr& a, const StmtPtr& b);
bool equal(const KernelNode& a, const KernelNode& b);
bool equal(const FunctionNode& a, const FunctionNode& b);

/// Downcast by kind; null when the kind differs.
template <class T>
const T* as(const ExprNode& e) {
  return e.kind == T::kKind ? static_cast<const T*>(&e) : nullptr;
}
template <class T>
const T* as(const StmtNode& s) {
  return s.kind == T::kKind ? static_cast<const T*>(&s) : nullptr;
}

/// Calls `f(const Node&)` with the concrete node type. A pass that must decide what every kind means
/// passes an overload set with no catch-all, so that a new kind fails to compile there.
template <class F>
decltype(auto) dispatch(const ExprNode& e, F&& f) {
  switch (e.kind) {
#define VANTAGE_X(N) \
  case ExprKind::N: return f(static_cast<const N&>(e));
    VANTAGE_IR_EXPRS(VANTAGE_X)
#undef VANTAGE_X
  }
  throw InternalError("dispatch: corrupt expression kind");
}
template <class F>
decltype(auto) dispatch(const StmtNode& s, F&& f) {
  switch (s.kind) {
#define VANTAGE_X(N) \
  case StmtKind::N: return f(static_cast<const N&>(s));
    VANTAGE_IR_STMTS(VANTAGE_X)
#undef VANTAGE_X
  }
  throw InternalError("dispatch: corrupt statement kind");
}

/// An overload set from lambdas, for `dispatch`.
template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

/// Every device function `body` calls, transitively, callees before their callers, each once.
std::vector<const FunctionNode*> called_functions(const StmtPtr& body);

}  // namespace vantage::ir
