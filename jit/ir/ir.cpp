// Vantage kernel IR: names, structural hashing and equality, constant folding, and the public type
// helpers (levels, sizes, perspectives, scalar types).
#include "jit/ir/ir.h"

#include <xxhash.h>

#include <cstring>
#include <numeric>
#include <unordered_set>

namespace vantage {

const char* level_name(Level level) {
  switch (level) {
    case Level::Thread: return "thread";
    case Level::Block: return "block";
    case Level::Grid: return "grid";
  }
  return "?";
}

std::optional<std::int64_t> Size::eval(std::optional<std::int64_t> t, std::optional<std::int64_t> b) const {
  std::int64_t v = coeff;
  if (threads) {
    if (!t) return std::nullopt;
    v *= *t;
  }
  if (blocks) {
    if (!b) return std::nullopt;
    v *= *b;
  }
  return v;
}

std::string Size::str() const {
  std::string s;
  if (coeff != 1 || is_static()) s = std::to_string(coeff);
  auto factor = [&](const char* f) {
    if (!s.empty()) s += "*";
    s += f;
  };
  if (blocks) factor("B");
  if (threads) factor("T");
  return s;
}

std::string Perspective::str() const { return std::string(level_name(level)) + "(" + count.str() + ")"; }

const char* type_name(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I32: return "i32";
    case ScalarType::U32: return "u32";
    case ScalarType::I64: return "i64";
    case ScalarType::U64: return "u64";
    case ScalarType::F16: return "f16";
    case ScalarType::BF16: return "bf16";
    case ScalarType::F32: return "f32";
    case ScalarType::F64: return "f64";
  }
  return "?";
}

int type_bytes(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return 1;
    case ScalarType::F16:
    case ScalarType::BF16: return 2;
    case ScalarType::I32:
    case ScalarType::U32:
    case ScalarType::F32: return 4;
    case ScalarType::I64:
    case ScalarType::U64:
    case ScalarType::F64: return 8;
  }
  return 0;
}

bool is_integer(ScalarType t) {
  return t == ScalarType::I32 || t == ScalarType::U32 || t == ScalarType::I64 || t == ScalarType::U64;
}
bool is_float(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 || t == ScalarType::F32 || t == ScalarType::F64;
}
bool is_signed(ScalarType t) { return t == ScalarType::I32 || t == ScalarType::I64 || is_float(t); }

const char* space_name(MemSpace space) {
  switch (space) {
    case MemSpace::Global: return "global";
    case MemSpace::Shared: return "shared";
    case MemSpace::Local: return "local";
  }
  return "?";
}

}  // namespace vantage

namespace vantage::ir {

const char* name_of(ExprKind k) {
  switch (k) {
#define VANTAGE_X(N) \
  case ExprKind::N: return #N;
    VANTAGE_IR_EXPRS(VANTAGE_X)
#undef VANTAGE_X
  }
  return "?";
}
const char* name_of(StmtKind k) {
  switch (k) {
#define VANTAGE_X(N) \
  case StmtKind::N: return #N;
    VANTAGE_IR_STMTS(VANTAGE_X)
#undef VANTAGE_X
  }
  return "?";
}
const char* name_of(IntrinsicOp op) {
  switch (op) {
#define VANTAGE_X(N) \
  case IntrinsicOp::N: return #N;
    VANTAGE_IR_INTRINSICS(VANTAGE_X)
#undef VANTAGE_X
  }
  return "?";
}
const char* name_of(UnOp op) {
  switch (op) {
    case UnOp::Neg: return "-";
    case UnOp::Not: return "!";
    case UnOp::BitNot: return "~";
  }
  return "?";
}
const char* name_of(BinOp op) {
  static const char* const kNames[] = {"+",  "-",  "*",  "/", "%",  "&", "|",  "^",   "<<",  ">>", "&&",
                                       "||", "==", "!=", "<", "<=", ">", ">=", "min", "max", "pow"};
  return kNames[static_cast<int>(op)];
}
const char* name_of(MathFn fn) {
  static const char* const kNames[] = {"sqrt", "rsqrt", "exp", "exp2",  "log",  "log2", "sin",
                                       "cos",  "tanh",  "abs", "floor", "ceil", "fma"};
  return kNames[static_cast<int>(fn)];
}
bool is_comparison(BinOp op) {
  return op == BinOp::Eq || op == BinOp::Ne || op == BinOp::Lt || op == BinOp::Le || op == BinOp::Gt || op == BinOp::Ge;
}

namespace {

/// Order-dependent 64-bit combiner (splitmix64 finaliser over a running state).
struct Hasher {
  std::uint64_t h = 0x6a09e667f3bcc908ULL;
  void add(std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
  }
  void add(const std::string& s) { add(XXH3_64bits(s.data(), s.size())); }
  void add(Perspective p) {
    add(static_cast<std::uint64_t>(p.level));
    add(size(p.count));
  }
  static std::uint64_t size(Size s) {
    return static_cast<std::uint64_t>(s.coeff) * 4 + (s.threads ? 1 : 0) + (s.blocks ? 2 : 0);
  }
  void add(const ExprPtr& e) { add(e ? e->hash : 0x51ULL); }
  void add(const StmtPtr& s) { add(s ? s->hash : 0x52ULL); }
  void add(const VarPtr& v) { add(v ? v->hash : 0x53ULL); }
  void add(const MemPtr& m) { add(m ? m->hash : 0x54ULL); }
  template <class T>
  void add_all(const std::vector<T>& xs) {
    add(static_cast<std::uint64_t>(xs.size()));
    for (const auto& x : xs) add(x);
  }
  void add_opt(const std::optional<Perspective>& p) {
    add(static_cast<std::uint64_t>(p.has_value()));
    if (p) add(*p);
  }
};

std::uint64_t u(auto v) { return static_cast<std::uint64_t>(v); }

}  // namespace

std::uint64_t hash_var(const VarNode& v) {
  Hasher h;
  h.add(0x7661ULL);
  h.add(u(v.id));
  h.add(v.name);
  h.add(u(v.type));
  h.add(u(v.origin));
  return h.h;
}

std::uint64_t hash_mem(const MemNode& m) {
  Hasher h;
  h.add(0x6d656dULL);
  h.add(u(m.id));
  h.add(m.name);
  h.add(u(m.elem));
  h.add(u(m.space));
  h.add(u(m.is_const));
  h.add(u(m.dims));
  h.add(u(m.origin));
  return h.h;
}

VarPtr make_var(int id, std::string name, ScalarType type, VarNode::Origin origin, SourceLoc loc) {
  auto v = std::make_shared<VarNode>(VarNode{id, std::move(name), type, origin, loc, 0});
  v->hash = hash_var(*v);
  return v;
}

MemPtr make_mem(int id, std::string name, ScalarType elem, MemSpace space, bool is_const, int dims,
                MemNode::Origin origin, SourceLoc loc) {
  auto m = std::make_shared<MemNode>(MemNode{id, std::move(name), elem, space, is_const, dims, origin, loc, 0});
  m->hash = hash_mem(*m);
  return m;
}

std::uint64_t hash_node(const ExprNode& e) {
  Hasher h;
  h.add(u(e.kind) + 0x100);
  h.add(u(e.type));
  visit(e, [&](const auto& n) {
    using N = std::decay_t<decltype(n)>;
    if constexpr (std::is_same_v<N, Literal>) {
      h.add(u(n.i));
      std::uint64_t bits;
      static_assert(sizeof(bits) == sizeof(n.f));
      std::memcpy(&bits, &n.f, sizeof(bits));
      h.add(bits);
    } else if constexpr (std::is_same_v<N, VarRef>) {
      h.add(n.var);
    } else if constexpr (std::is_same_v<N, Unary>) {
      h.add(u(n.op));
      h.add(n.a);
    } else if constexpr (std::is_same_v<N, Binary>) {
      h.add(u(n.op));
      h.add(n.a);
      h.add(n.b);
    } else if constexpr (std::is_same_v<N, Cast>) {
      h.add(n.a);
    } else if constexpr (std::is_same_v<N, Select>) {
      h.add(n.c);
      h.add(n.a);
      h.add(n.b);
    } else if constexpr (std::is_same_v<N, MathCall>) {
      h.add(u(n.fn));
      h.add_all(n.args);
    } else if constexpr (std::is_same_v<N, Id>) {
      h.add(n.p);
    } else if constexpr (std::is_same_v<N, Load>) {
      h.add(n.mem);
      h.add_all(n.indices);
    }
  });
  return h.h;
}

std::uint64_t hash_node(const StmtNode& s) {
  Hasher h;
  h.add(u(s.kind) + 0x200);
  visit(s, [&](const auto& n) {
    using N = std::decay_t<decltype(n)>;
    if constexpr (std::is_same_v<N, Seq>) {
      h.add_all(n.stmts);
    } else if constexpr (std::is_same_v<N, Let>) {
      h.add(n.var);
      h.add(n.value);
      h.add_opt(n.at);
    } else if constexpr (std::is_same_v<N, Assign>) {
      h.add(n.var);
      h.add(n.value);
    } else if constexpr (std::is_same_v<N, Store>) {
      h.add(n.mem);
      h.add_all(n.indices);
      h.add(n.value);
    } else if constexpr (std::is_same_v<N, If>) {
      h.add(n.cond);
      h.add(n.then_body);
      h.add(n.else_body);
    } else if constexpr (std::is_same_v<N, For>) {
      h.add(n.var);
      h.add(n.begin);
      h.add(n.end);
      h.add(n.step);
      h.add(n.body);
    } else if constexpr (std::is_same_v<N, While>) {
      h.add(n.cond);
      h.add(n.body);
    } else if constexpr (std::is_same_v<N, Group>) {
      h.add(n.p);
      h.add(n.body);
    } else if constexpr (std::is_same_v<N, Split>) {
      h.add(u(n.level));
      for (auto c : n.counts) h.add(u(c));
      h.add_all(n.bodies);
    } else if constexpr (std::is_same_v<N, Destruct>) {
      h.add(n.body);
    } else if constexpr (std::is_same_v<N, Partition>) {
      h.add(n.src);
      h.add(n.dst);
      h.add(n.p);
      h.add_all(n.index_vars);
      h.add(n.index);
      h.add(n.body);
    } else if constexpr (std::is_same_v<N, Claim>) {
      h.add(n.src);
      h.add(n.dst);
      h.add(n.p);
      h.add(n.body);
    } else if constexpr (std::is_same_v<N, Lower> || std::is_same_v<N, Async>) {
      h.add(n.src);
      h.add(n.dst);
      h.add(n.body);
    } else if constexpr (std::is_same_v<N, SharedAlloc>) {
      h.add(n.mem);
      h.add(n.count);
    } else if constexpr (std::is_same_v<N, LocalAlloc>) {
      h.add(n.mem);
      h.add(u(n.count));
      h.add_opt(n.at);
    } else if constexpr (std::is_same_v<N, Call>) {
      h.add(n.fn ? n.fn->hash : 0);
      for (const auto& a : n.args) {
        h.add(a.value);
        h.add(a.mem);
      }
      h.add(n.result);
    } else if constexpr (std::is_same_v<N, Intrinsic>) {
      h.add(u(n.op));
      h.add_all(n.args);
      h.add_all(n.mems);
      h.add_all(n.outputs);
      for (auto i : n.imms) h.add(u(i));
    } else if constexpr (std::is_same_v<N, Unsafe>) {
      h.add(n.needs);
      h.add(n.cuda);
      for (const auto& [name, e] : n.inputs) {
        h.add(name);
        h.add(e);
      }
      for (const auto& [name, v] : n.outputs) {
        h.add(name);
        h.add(v);
      }
    } else if constexpr (std::is_same_v<N, Return>) {
      h.add(n.value);
    }
  });
  return h.h;
}

namespace {
void hash_params(Hasher& h, const std::vector<ParamNode>& params) {
  h.add(u(params.size()));
  for (const auto& p : params) {
    h.add(p.name);
    h.add(p.var);
    h.add(p.mem);
    h.add(u(p.specialized));
    h.add(p.extent);
    h.add_opt(p.at);
  }
}
}  // namespace

std::uint64_t hash_function(const FunctionNode& f) {
  Hasher h;
  h.add(0x66756eULL);
  h.add(f.name);
  h.add(f.signature);
  h.add(u(f.shared_budget));
  h.add(u(f.returns ? static_cast<int>(*f.returns) + 1 : 0));
  hash_params(h, f.params);
  h.add(f.body);
  return h.h;
}

std::uint64_t hash_kernel(const KernelNode& k) {
  Hasher h;
  h.add(0x6b726eULL);
  h.add(k.name);
  hash_params(h, k.params);
  h.add(u(k.threads.value_or(-1)));
  h.add(u(k.grid_blocks.value_or(-1)));
  h.add(u(k.grid_multiple));
  h.add(u(k.shared_budget));
  h.add(k.body);
  return h.h;
}

namespace {

bool same_var(const VarPtr& a, const VarPtr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->hash == b->hash && a->id == b->id && a->name == b->name && a->type == b->type && a->origin == b->origin;
}
bool same_mem(const MemPtr& a, const MemPtr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->hash == b->hash && a->id == b->id && a->name == b->name && a->elem == b->elem && a->space == b->space &&
         a->is_const == b->is_const && a->dims == b->dims && a->origin == b->origin;
}
template <class T, class F>
bool all_equal(const std::vector<T>& a, const std::vector<T>& b, F eq) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!eq(a[i], b[i])) return false;
  return true;
}
bool eq_expr(const ExprPtr& a, const ExprPtr& b) { return equal(a, b); }
bool eq_stmt(const StmtPtr& a, const StmtPtr& b) { return equal(a, b); }

bool same_function(const FunctionPtr& a, const FunctionPtr& b) {
  if (a == b) return true;
  if (!a || !b || a->hash != b->hash) return false;
  return a->name == b->name && a->signature == b->signature && a->shared_budget == b->shared_budget &&
         a->returns == b->returns && equal(a->body, b->body);
}

}  // namespace

bool equal(const ExprPtr& a, const ExprPtr& b) {
  if (a == b) return true;
  if (!a || !b || a->hash != b->hash || a->kind != b->kind || a->type != b->type) return false;
  return visit(*a, [&](const auto& x) -> bool {
    using N = std::decay_t<decltype(x)>;
    const auto& y = static_cast<const N&>(*b);
    if constexpr (std::is_same_v<N, Literal>) {
      return x.i == y.i && (x.f == y.f || (x.f != x.f && y.f != y.f));
    } else if constexpr (std::is_same_v<N, VarRef>) {
      return same_var(x.var, y.var);
    } else if constexpr (std::is_same_v<N, Unary>) {
      return x.op == y.op && equal(x.a, y.a);
    } else if constexpr (std::is_same_v<N, Binary>) {
      return x.op == y.op && equal(x.a, y.a) && equal(x.b, y.b);
    } else if constexpr (std::is_same_v<N, Cast>) {
      return equal(x.a, y.a);
    } else if constexpr (std::is_same_v<N, Select>) {
      return equal(x.c, y.c) && equal(x.a, y.a) && equal(x.b, y.b);
    } else if constexpr (std::is_same_v<N, MathCall>) {
      return x.fn == y.fn && all_equal(x.args, y.args, eq_expr);
    } else if constexpr (std::is_same_v<N, Id>) {
      return x.p == y.p;
    } else {
      return same_mem(x.mem, y.mem) && all_equal(x.indices, y.indices, eq_expr);
    }
  });
}

bool equal(const StmtPtr& a, const StmtPtr& b) {
  if (a == b) return true;
  if (!a || !b || a->hash != b->hash || a->kind != b->kind) return false;
  return visit(*a, [&](const auto& x) -> bool {
    using N = std::decay_t<decltype(x)>;
    const auto& y = static_cast<const N&>(*b);
    if constexpr (std::is_same_v<N, Seq>) {
      return all_equal(x.stmts, y.stmts, eq_stmt);
    } else if constexpr (std::is_same_v<N, Let>) {
      return same_var(x.var, y.var) && equal(x.value, y.value) && x.at == y.at;
    } else if constexpr (std::is_same_v<N, Assign>) {
      return same_var(x.var, y.var) && equal(x.value, y.value);
    } else if constexpr (std::is_same_v<N, Store>) {
      return same_mem(x.mem, y.mem) && all_equal(x.indices, y.indices, eq_expr) && equal(x.value, y.value);
    } else if constexpr (std::is_same_v<N, If>) {
      return equal(x.cond, y.cond) && equal(x.then_body, y.then_body) && equal(x.else_body, y.else_body);
    } else if constexpr (std::is_same_v<N, For>) {
      return same_var(x.var, y.var) && equal(x.begin, y.begin) && equal(x.end, y.end) && equal(x.step, y.step) &&
             equal(x.body, y.body);
    } else if constexpr (std::is_same_v<N, While>) {
      return equal(x.cond, y.cond) && equal(x.body, y.body);
    } else if constexpr (std::is_same_v<N, Group>) {
      return x.p == y.p && equal(x.body, y.body);
    } else if constexpr (std::is_same_v<N, Split>) {
      return x.level == y.level && x.counts == y.counts && all_equal(x.bodies, y.bodies, eq_stmt);
    } else if constexpr (std::is_same_v<N, Destruct>) {
      return equal(x.body, y.body);
    } else if constexpr (std::is_same_v<N, Partition>) {
      return same_mem(x.src, y.src) && same_mem(x.dst, y.dst) && x.p == y.p &&
             all_equal(x.index_vars, y.index_vars, same_var) && equal(x.index, y.index) && equal(x.body, y.body);
    } else if constexpr (std::is_same_v<N, Claim>) {
      return same_mem(x.src, y.src) && same_mem(x.dst, y.dst) && x.p == y.p && equal(x.body, y.body);
    } else if constexpr (std::is_same_v<N, Lower> || std::is_same_v<N, Async>) {
      return same_mem(x.src, y.src) && same_mem(x.dst, y.dst) && equal(x.body, y.body);
    } else if constexpr (std::is_same_v<N, SharedAlloc>) {
      return same_mem(x.mem, y.mem) && equal(x.count, y.count);
    } else if constexpr (std::is_same_v<N, LocalAlloc>) {
      return same_mem(x.mem, y.mem) && x.count == y.count && x.at == y.at;
    } else if constexpr (std::is_same_v<N, Call>) {
      return same_function(x.fn, y.fn) && same_var(x.result, y.result) &&
             all_equal(x.args, y.args, [](const CallArgNode& p, const CallArgNode& q) {
               return equal(p.value, q.value) && same_mem(p.mem, q.mem);
             });
    } else if constexpr (std::is_same_v<N, Intrinsic>) {
      return x.op == y.op && x.imms == y.imms && all_equal(x.args, y.args, eq_expr) &&
             all_equal(x.mems, y.mems, same_mem) && all_equal(x.outputs, y.outputs, same_var);
    } else if constexpr (std::is_same_v<N, Unsafe>) {
      return x.needs == y.needs && x.cuda == y.cuda &&
             all_equal(x.inputs, y.inputs,
                       [](const auto& p, const auto& q) { return p.first == q.first && equal(p.second, q.second); }) &&
             all_equal(x.outputs, y.outputs,
                       [](const auto& p, const auto& q) { return p.first == q.first && same_var(p.second, q.second); });
    } else {
      return equal(x.value, y.value);
    }
  });
}

bool equal(const KernelNode& a, const KernelNode& b) {
  if (&a == &b) return true;
  if (a.hash != b.hash || a.name != b.name || a.threads != b.threads || a.grid_blocks != b.grid_blocks ||
      a.grid_multiple != b.grid_multiple || a.shared_budget != b.shared_budget || a.params.size() != b.params.size())
    return false;
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    const auto& p = a.params[i];
    const auto& q = b.params[i];
    if (p.name != q.name || !same_var(p.var, q.var) || !same_mem(p.mem, q.mem) || p.specialized != q.specialized ||
        !equal(p.extent, q.extent))
      return false;
  }
  return equal(a.body, b.body);
}

namespace {
void collect_calls(const StmtPtr& s, std::unordered_set<const FunctionNode*>& seen,
                   std::vector<const FunctionNode*>& order) {
  if (!s) return;
  if (const auto* c = as<Call>(*s)) {
    if (c->fn && seen.insert(c->fn.get()).second) {
      collect_calls(c->fn->body, seen, order);
      order.push_back(c->fn.get());
    }
    return;
  }
  for_each_child(*s, [&](const StmtPtr& child) { collect_calls(child, seen, order); });
}
}  // namespace

std::vector<const FunctionNode*> called_functions(const StmtPtr& body) {
  std::unordered_set<const FunctionNode*> seen;
  std::vector<const FunctionNode*> order;
  collect_calls(body, seen, order);
  return order;
}

std::optional<std::int64_t> const_int(const ExprPtr& e) {
  if (!e) return std::nullopt;
  if (const auto* lit = as<Literal>(*e)) {
    if (is_integer(lit->type)) return lit->i;
    return std::nullopt;
  }
  if (const auto* bin = as<Binary>(*e)) {
    if (!is_integer(bin->type)) return std::nullopt;
    auto a = const_int(bin->a);
    auto b = const_int(bin->b);
    if (!a || !b) return std::nullopt;
    switch (bin->op) {
      case BinOp::Add: return *a + *b;
      case BinOp::Sub: return *a - *b;
      case BinOp::Mul: return *a * *b;
      case BinOp::Div: return *b == 0 ? std::nullopt : std::optional<std::int64_t>(*a / *b);
      case BinOp::Mod: return *b == 0 ? std::nullopt : std::optional<std::int64_t>(*a % *b);
      case BinOp::Min: return std::min(*a, *b);
      case BinOp::Max: return std::max(*a, *b);
      case BinOp::Shl: return (*b < 0 || *b > 62) ? std::nullopt : std::optional<std::int64_t>(*a << *b);
      default: return std::nullopt;
    }
  }
  if (const auto* c = as<Cast>(*e)) {
    if (is_integer(c->type)) return const_int(c->a);
  }
  return std::nullopt;
}

}  // namespace vantage::ir
