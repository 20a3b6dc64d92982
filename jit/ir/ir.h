// Vantage kernel IR: immutable, reference-counted nodes with a structural hash computed at
// construction. One list of node kinds (below) generates the kind enums and the visit dispatch.
// Source locations ride on every node but take no part in hashing or equality.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vantage/builder.hpp"
#include "vantage/diagnostics.hpp"
#include "vantage/types.hpp"

namespace vantage::ir {

// clang-format off
#define VANTAGE_IR_EXPRS(X) X(Literal) X(VarRef) X(Unary) X(Binary) X(Cast) X(Select) X(MathCall) X(Id) X(Load)

#define VANTAGE_IR_STMTS(X)                                                                              \
  X(Seq) X(Let) X(Assign) X(Store) X(If) X(For) X(While) X(Group) X(Split) X(Destruct) X(Partition)     \
  X(Claim) X(Lower) X(Async) X(SharedAlloc) X(LocalAlloc) X(Call) X(Intrinsic) X(Unsafe) X(Return)
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
enum class MathFn : std::uint8_t { Sqrt, Rsqrt, Exp, Exp2, Log, Log2, Sin, Cos, Tanh, Abs, Floor, Ceil, Fma };

// clang-format off
#define VANTAGE_IR_INTRINSICS(X)                                                                         \
  X(SyncThreads) X(SyncWarp) X(NamedBarrier) X(ShflXor) X(ShflDown) X(ShflUp) X(ShflIdx) X(VoteAll)     \
  X(VoteAny) X(Ballot) X(Atomic) X(MmaSync) X(Ldmatrix) X(Wgmma) X(WgmmaFence) X(WgmmaCommit)           \
  X(WgmmaWait) X(CpAsync) X(CpAsyncCommit) X(CpAsyncWait) X(TmaLoad2D) X(MbarrierInit)                   \
  X(MbarrierArrive) X(MbarrierWait)
// clang-format on

enum class IntrinsicOp : std::uint8_t {
#define VANTAGE_X(N) N,
  VANTAGE_IR_INTRINSICS(VANTAGE_X)
#undef VANTAGE_X
};

const char* name_of(ExprKind k);
const char* name_of(StmtKind k);
const char* name_of(UnOp op);
const char* name_of(BinOp op);
const char* name_of(MathFn fn);
const char* name_of(IntrinsicOp op);
bool is_comparison(BinOp op);

struct StmtNode;
struct FunctionNode;
using ExprPtr = std::shared_ptr<const ExprNode>;
using StmtPtr = std::shared_ptr<const StmtNode>;
using VarPtr = std::shared_ptr<const VarNode>;
using MemPtr = std::shared_ptr<const MemNode>;
using FunctionPtr = std::shared_ptr<const FunctionNode>;

/// A thread-local scalar: a let, a loop variable, a scalar parameter, an index-function argument or
/// an intrinsic's output. Identity is the node; `id` is its order of creation in its builder.
struct VarNode {
  enum class Origin : std::uint8_t { Let, Param, Loop, IndexArg, Output };
  int id;
  std::string name;
  ScalarType type;
  Origin origin;
  SourceLoc loc;
  std::uint64_t hash;
};

/// A name for memory. Views made by partition/claim/lower/async are new MemNodes.
struct MemNode {
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
};

struct ExprNode {
  ExprKind kind;
  ScalarType type;
  SourceLoc loc;
  std::uint64_t hash = 0;

 protected:
  ExprNode(ExprKind k, ScalarType t, SourceLoc l) : kind(k), type(t), loc(l) {}
};

struct Literal : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Literal;
  std::int64_t i = 0;  ///< integer and bool value (u64 as its bit pattern)
  double f = 0;        ///< float value
  Literal(ScalarType t, std::int64_t iv, double fv, SourceLoc l) : ExprNode(kKind, t, l), i(iv), f(fv) {}
};
struct VarRef : ExprNode {
  static constexpr ExprKind kKind = ExprKind::VarRef;
  VarPtr var;
  VarRef(VarPtr v, SourceLoc l) : ExprNode(kKind, v->type, l), var(std::move(v)) {}
};
struct Unary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnOp op;
  ExprPtr a;
  Unary(UnOp o, ExprPtr x, ScalarType t, SourceLoc l) : ExprNode(kKind, t, l), op(o), a(std::move(x)) {}
};
struct Binary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinOp op;
  ExprPtr a, b;
  Binary(BinOp o, ExprPtr x, ExprPtr y, ScalarType t, SourceLoc l)
      : ExprNode(kKind, t, l), op(o), a(std::move(x)), b(std::move(y)) {}
};
struct Cast : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  ExprPtr a;
  Cast(ExprPtr x, ScalarType to, SourceLoc l) : ExprNode(kKind, to, l), a(std::move(x)) {}
};
struct Select : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  ExprPtr c, a, b;
  Select(ExprPtr cc, ExprPtr x, ExprPtr y, SourceLoc l)
      : ExprNode(kKind, x->type, l), c(std::move(cc)), a(std::move(x)), b(std::move(y)) {}
};
struct MathCall : ExprNode {
  static constexpr ExprKind kKind = ExprKind::MathCall;
  MathFn fn;
  std::vector<ExprPtr> args;
  MathCall(MathFn f, std::vector<ExprPtr> xs, SourceLoc l)
      : ExprNode(kKind, xs.front()->type, l), fn(f), args(std::move(xs)) {}
};
/// `id(p)`: the index of unit p inside the code's perspective.
struct Id : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Id;
  Perspective p;
  Id(Perspective pp, SourceLoc l) : ExprNode(kKind, ScalarType::I32, l), p(pp) {}
};
struct Load : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  MemPtr mem;
  std::vector<ExprPtr> indices;
  Load(MemPtr m, std::vector<ExprPtr> idx, SourceLoc l)
      : ExprNode(kKind, m->elem, l), mem(std::move(m)), indices(std::move(idx)) {}
};

struct StmtNode {
  StmtKind kind;
  SourceLoc loc;
  std::uint64_t hash = 0;

 protected:
  StmtNode(StmtKind k, SourceLoc l) : kind(k), loc(l) {}
};

struct Seq : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  std::vector<StmtPtr> stmts;
  Seq(std::vector<StmtPtr> s, SourceLoc l) : StmtNode(kKind, l), stmts(std::move(s)) {}
};
struct Let : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Let;
  VarPtr var;
  ExprPtr value;
  std::optional<Perspective> at;
  Let(VarPtr v, ExprPtr e, std::optional<Perspective> p, SourceLoc l)
      : StmtNode(kKind, l), var(std::move(v)), value(std::move(e)), at(p) {}
};
struct Assign : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Assign;
  VarPtr var;
  ExprPtr value;
  Assign(VarPtr v, ExprPtr e, SourceLoc l) : StmtNode(kKind, l), var(std::move(v)), value(std::move(e)) {}
};
struct Store : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  MemPtr mem;
  std::vector<ExprPtr> indices;
  ExprPtr value;
  Store(MemPtr m, std::vector<ExprPtr> idx, ExprPtr v, SourceLoc l)
      : StmtNode(kKind, l), mem(std::move(m)), indices(std::move(idx)), value(std::move(v)) {}
};
struct If : StmtNode {
  static constexpr StmtKind kKind = StmtKind::If;
  ExprPtr cond;
  StmtPtr then_body, else_body;  ///< else_body may be null
  If(ExprPtr c, StmtPtr t, StmtPtr e, SourceLoc l)
      : StmtNode(kKind, l), cond(std::move(c)), then_body(std::move(t)), else_body(std::move(e)) {}
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
};
struct While : StmtNode {
  static constexpr StmtKind kKind = StmtKind::While;
  ExprPtr cond;
  StmtPtr body;
  While(ExprPtr c, StmtPtr b, SourceLoc l) : StmtNode(kKind, l), cond(std::move(c)), body(std::move(b)) {}
};
struct Group : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Group;
  Perspective p;
  StmtPtr body;
  Group(Perspective pp, StmtPtr b, SourceLoc l) : StmtNode(kKind, l), p(pp), body(std::move(b)) {}
};
struct Split : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Split;
  Level level;
  std::vector<std::int64_t> counts;
  std::vector<StmtPtr> bodies;
  std::vector<SourceLoc> branch_locs;
  Split(Level lv, std::vector<std::int64_t> c, std::vector<StmtPtr> b, std::vector<SourceLoc> bl, SourceLoc l)
      : StmtNode(kKind, l), level(lv), counts(std::move(c)), bodies(std::move(b)), branch_locs(std::move(bl)) {}
};
struct Destruct : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Destruct;
  StmtPtr body;
  Destruct(StmtPtr b, SourceLoc l) : StmtNode(kKind, l), body(std::move(b)) {}
};
struct Partition : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Partition;
  MemPtr src, dst;
  Perspective p;
  std::vector<VarPtr> index_vars;
  ExprPtr index;
  StmtPtr body;
  Partition(MemPtr s, MemPtr d, Perspective pp, std::vector<VarPtr> iv, ExprPtr ix, StmtPtr b, SourceLoc l)
      : StmtNode(kKind, l),
        src(std::move(s)),
        dst(std::move(d)),
        p(pp),
        index_vars(std::move(iv)),
        index(std::move(ix)),
        body(std::move(b)) {}
};
struct Claim : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Claim;
  MemPtr src, dst;
  Perspective p;
  StmtPtr body;
  Claim(MemPtr s, MemPtr d, Perspective pp, StmtPtr b, SourceLoc l)
      : StmtNode(kKind, l), src(std::move(s)), dst(std::move(d)), p(pp), body(std::move(b)) {}
};
struct Lower : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Lower;
  MemPtr src, dst;
  StmtPtr body;
  Lower(MemPtr s, MemPtr d, StmtPtr b, SourceLoc l)
      : StmtNode(kKind, l), src(std::move(s)), dst(std::move(d)), body(std::move(b)) {}
};
struct Async : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Async;
  MemPtr src, dst;
  StmtPtr body;
  Async(MemPtr s, MemPtr d, StmtPtr b, SourceLoc l)
      : StmtNode(kKind, l), src(std::move(s)), dst(std::move(d)), body(std::move(b)) {}
};
struct SharedAlloc : StmtNode {
  static constexpr StmtKind kKind = StmtKind::SharedAlloc;
  MemPtr mem;
  ExprPtr count;
  SharedAlloc(MemPtr m, ExprPtr c, SourceLoc l) : StmtNode(kKind, l), mem(std::move(m)), count(std::move(c)) {}
};
struct LocalAlloc : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LocalAlloc;
  MemPtr mem;
  std::int64_t count;
  std::optional<Perspective> at;
  LocalAlloc(MemPtr m, std::int64_t c, std::optional<Perspective> p, SourceLoc l)
      : StmtNode(kKind, l), mem(std::move(m)), count(c), at(p) {}
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
};
struct Intrinsic : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Intrinsic;
  IntrinsicOp op;
  std::vector<ExprPtr> args;
  std::vector<MemPtr> mems;
  std::vector<VarPtr> outputs;
  std::vector<std::int64_t> imms;
  Intrinsic(IntrinsicOp o, std::vector<ExprPtr> a, std::vector<MemPtr> m, std::vector<VarPtr> out,
            std::vector<std::int64_t> im, SourceLoc l)
      : StmtNode(kKind, l),
        op(o),
        args(std::move(a)),
        mems(std::move(m)),
        outputs(std::move(out)),
        imms(std::move(im)) {}
};
struct Unsafe : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Unsafe;
  Perspective needs;
  std::string cuda;
  std::vector<std::pair<std::string, ExprPtr>> inputs;
  std::vector<std::pair<std::string, VarPtr>> outputs;
  Unsafe(Perspective p, std::string c, std::vector<std::pair<std::string, ExprPtr>> in,
         std::vector<std::pair<std::string, VarPtr>> out, SourceLoc l)
      : StmtNode(kKind, l), needs(p), cuda(std::move(c)), inputs(std::move(in)), outputs(std::move(out)) {}
};
struct Return : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Return;
  ExprPtr value;  ///< may be null
  Return(ExprPtr v, SourceLoc l) : StmtNode(kKind, l), value(std::move(v)) {}
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
  SourceLoc loc, signature_loc, budget_loc;
  std::uint64_t hash = 0;
};

struct KernelNode {
  std::string name;
  std::vector<ParamNode> params;
  std::optional<std::int64_t> threads;
  std::optional<std::int64_t> grid_blocks;
  std::int64_t grid_multiple = 1;
  std::int64_t shared_budget = 0;
  bool budget_declared = false;
  StmtPtr body;
  SourceLoc loc, threads_loc, budget_loc, body_loc;
  std::uint64_t hash = 0;
};

/// Builds a node and computes its structural hash.
template <class T, class... Args>
std::shared_ptr<const T> make(Args&&... args);

std::uint64_t hash_node(const ExprNode& e);
std::uint64_t hash_node(const StmtNode& s);
std::uint64_t hash_var(const VarNode& v);
std::uint64_t hash_mem(const MemNode& m);
std::uint64_t hash_function(const FunctionNode& f);
std::uint64_t hash_kernel(const KernelNode& k);

template <class T, class... Args>
std::shared_ptr<const T> make(Args&&... args) {
  auto node = std::make_shared<T>(std::forward<Args>(args)...);
  node->hash = hash_node(*node);
  return node;
}

VarPtr make_var(int id, std::string name, ScalarType type, VarNode::Origin origin, SourceLoc loc);
MemPtr make_mem(int id, std::string name, ScalarType elem, MemSpace space, bool is_const, int dims,
                MemNode::Origin origin, SourceLoc loc);

/// Structural equality (ignores source locations); pointer-equal and hash-unequal shortcuts.
bool equal(const ExprPtr& a, const ExprPtr& b);
bool equal(const StmtPtr& a, const StmtPtr& b);
bool equal(const KernelNode& a, const KernelNode& b);

/// Downcast by kind; null when the kind differs.
template <class T>
const T* as(const ExprNode& e) {
  return e.kind == T::kKind ? static_cast<const T*>(&e) : nullptr;
}
template <class T>
const T* as(const StmtNode& s) {
  return s.kind == T::kKind ? static_cast<const T*>(&s) : nullptr;
}

/// Calls `v(const Node&)` with the concrete node type.
template <class V>
decltype(auto) visit(const ExprNode& e, V&& v) {
  switch (e.kind) {
#define VANTAGE_X(N) \
  case ExprKind::N: return v(static_cast<const N&>(e));
    VANTAGE_IR_EXPRS(VANTAGE_X)
#undef VANTAGE_X
  }
  throw InternalError("visit: corrupt expression kind");
}
template <class V>
decltype(auto) visit(const StmtNode& s, V&& v) {
  switch (s.kind) {
#define VANTAGE_X(N) \
  case StmtKind::N: return v(static_cast<const N&>(s));
    VANTAGE_IR_STMTS(VANTAGE_X)
#undef VANTAGE_X
  }
  throw InternalError("visit: corrupt statement kind");
}

/// Calls `f(child)` for every statement directly inside `s`: the bodies of constructs, both
/// branches of an if, every split branch, the statements of a sequence (not a callee's body).
template <class F>
void for_each_child(const StmtNode& s, F&& f) {
  visit(s, [&](const auto& n) {
    using N = std::decay_t<decltype(n)>;
    if constexpr (std::is_same_v<N, Seq>) {
      for (const auto& c : n.stmts) f(c);
    } else if constexpr (std::is_same_v<N, If>) {
      if (n.then_body) f(n.then_body);
      if (n.else_body) f(n.else_body);
    } else if constexpr (std::is_same_v<N, Split>) {
      for (const auto& b : n.bodies) f(b);
    } else if constexpr (requires { n.body; }) {
      if (n.body) f(n.body);
    }
  });
}

/// Every device function `body` calls, transitively, callees before their callers, each once.
std::vector<const FunctionNode*> called_functions(const StmtPtr& body);

/// Folds an integer expression made only of literals; nullopt otherwise.
std::optional<std::int64_t> const_int(const ExprPtr& e);

}  // namespace vantage::ir
