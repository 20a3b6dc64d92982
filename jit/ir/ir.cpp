// Vantage kernel IR: names, structural hashing and equality (both derived from each node's
// `fields()`), and the small constructors.
#include "jit/ir/ir.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <unordered_set>

#include "jit/ir/visit.h"

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
  static const char* const kNames[] = {"sqrt",  "rsqrt", "exp",      "exp2", "log",   "log2",  "sin",   "cos",
                                       "tanh",  "abs",   "floor",    "ceil", "fma",   "tan",   "asin",  "acos",
                                       "atan",  "sinh",  "cosh",     "erf",  "erfc",  "expm1", "log1p", "log10",
                                       "cbrt",  "trunc", "round",    "rint", "atan2", "fmod",  "hypot", "copysign",
                                       "isnan", "isinf", "isfinite", "popc", "clz",   "ffs",   "brev",  "bit_cast"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(MathFn::Bitcast) + 1);
  return kNames[static_cast<int>(fn)];
}
bool is_comparison(BinOp op) {
  return op == BinOp::Eq || op == BinOp::Ne || op == BinOp::Lt || op == BinOp::Le || op == BinOp::Gt || op == BinOp::Ge;
}
bool defined_for(BinOp op, ScalarType a) {
  if (is_fp8(a)) return false;  // for storage: converted to a wider float first
  switch (op) {
    case BinOp::Add:
    case BinOp::Sub:
    case BinOp::Mul:
    case BinOp::Div:
    case BinOp::Min:
    case BinOp::Max:
    case BinOp::Lt:
    case BinOp::Le:
    case BinOp::Gt:
    case BinOp::Ge: return a != ScalarType::Bool;
    case BinOp::Mod: return is_integer(a) || a == ScalarType::F32 || a == ScalarType::F64;
    case BinOp::And:
    case BinOp::Or:
    case BinOp::Xor: return is_integer(a) || a == ScalarType::Bool;
    case BinOp::Shl:
    case BinOp::Shr: return is_integer(a);
    case BinOp::LAnd:
    case BinOp::LOr: return a == ScalarType::Bool;
    case BinOp::Eq:
    case BinOp::Ne: return true;
    case BinOp::Pow: return is_float(a);
  }
  return false;
}
bool operands_agree(BinOp op, ScalarType a, ScalarType b) {
  const bool shift = op == BinOp::Shl || op == BinOp::Shr;
  return a == b || (shift && is_integer(a) && is_integer(b));
}
bool defined_for(UnOp op, ScalarType a) {
  if (is_fp8(a)) return false;
  switch (op) {
    case UnOp::Neg: return a != ScalarType::Bool;
    case UnOp::Not: return a == ScalarType::Bool;
    case UnOp::BitNot: return is_integer(a);
  }
  return false;
}

namespace {

/// Order-dependent 64-bit combiner (splitmix64 finaliser over a running state), with one overload
/// per field type; source locations take no part.
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
  void field(std::int64_t v) { add(static_cast<std::uint64_t>(v)); }
  void field(bool v) { add(v ? 1 : 0); }
  void field(double f) {
    std::uint64_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    add(bits);
  }
  void field(const std::string& s) { add(XXH3_64bits(s.data(), s.size())); }
  template <class E>
  requires std::is_enum_v<E>
  void field(E e) { add(static_cast<std::uint64_t>(e)); }
  void field(Size s) { add(static_cast<std::uint64_t>(s.coeff) * 4 + (s.threads ? 1 : 0) + (s.blocks ? 2 : 0)); }
  void field(Perspective p) {
    field(p.level);
    field(p.count);
  }
  void field(const std::optional<Perspective>& p) {
    add(p.has_value());
    if (p) field(*p);
  }
  void field(const ExprPtr& e) { add(e ? e->hash : 0x51ULL); }
  void field(const StmtPtr& s) { add(s ? s->hash : 0x52ULL); }
  void field(const VarPtr& v) { add(v ? v->hash : 0x53ULL); }
  void field(const MemPtr& m) { add(m ? m->hash : 0x54ULL); }
  void field(const FunctionPtr& f) { add(f ? f->hash : 0x55ULL); }
  void field(const CallArgNode& a) {
    field(a.value);
    field(a.mem);
  }
  template <class A, class B>
  void field(const std::pair<A, B>& p) {
    field(p.first);
    field(p.second);
  }
  void field(const SourceLoc&) {}
  template <class T>
  void field(const std::vector<T>& xs) {
    add(xs.size());
    for (const auto& x : xs) field(x);
  }
  template <class N>
  void fields(const N& n) {
    std::apply([&](const auto&... f) { (field(f), ...); }, n.fields());
  }
};

std::uint64_t u(auto v) { return static_cast<std::uint64_t>(v); }

}  // namespace

std::uint64_t hash_var(const VarNode& v) {
  Hasher h;
  h.add(0x7661ULL);
  h.add(u(v.id));
  h.field(v.name);
  h.field(v.type);
  h.field(v.origin);
  return h.h;
}

std::uint64_t hash_mem(const MemNode& m) {
  Hasher h;
  h.add(0x6d656dULL);
  h.add(u(m.id));
  h.field(m.name);
  h.field(m.elem);
  h.field(m.space);
  h.add(u(m.is_const));
  h.add(u(m.dims));
  h.field(m.origin);
  return h.h;
}

VarPtr make_var(int id, std::string name, ScalarType type, VarNode::Origin origin, SourceLoc loc) {
  auto v = std::make_shared<VarNode>(id, std::move(name), type, origin, loc);
  v->hash = hash_var(*v);
  return v;
}

MemPtr make_mem(int id, std::string name, ScalarType elem, MemSpace space, bool is_const, int dims,
                MemNode::Origin origin, SourceLoc loc) {
  auto m = std::make_shared<MemNode>(id, std::move(name), elem, space, is_const, dims, origin, loc);
  m->hash = hash_mem(*m);
  return m;
}

ExprPtr ref(const VarPtr& v, SourceLoc loc) { return make<VarRef>(v->type, v, loc); }

ExprPtr int_literal(ScalarType t, std::int64_t v, SourceLoc loc) {
  return make<Literal>(t, v, static_cast<double>(v), loc);
}

std::uint64_t hash_node(const ExprNode& e) {
  Hasher h;
  h.add(u(e.kind) + 0x100);
  h.field(e.type);
  dispatch(e, [&](const auto& n) { h.fields(n); });
  return h.h;
}

std::uint64_t hash_node(const StmtNode& s) {
  Hasher h;
  h.add(u(s.kind) + 0x200);
  dispatch(s, [&](const auto& n) { h.fields(n); });
  return h.h;
}

namespace {
void hash_params(Hasher& h, const std::vector<ParamNode>& params) {
  h.add(u(params.size()));
  for (const auto& p : params) {
    h.field(p.name);
    h.field(p.var);
    h.field(p.mem);
    h.add(u(p.specialized));
    h.field(p.extent);
    h.field(p.at);
  }
}
}  // namespace

std::uint64_t hash_function(const FunctionNode& f) {
  Hasher h;
  h.add(0x66756eULL);
  h.field(f.name);
  h.field(f.signature);
  h.field(f.shared_budget);
  h.add(u(f.returns ? static_cast<int>(*f.returns) + 1 : 0));
  hash_params(h, f.params);
  h.field(f.body);
  return h.h;
}

std::uint64_t hash_kernel(const KernelNode& k) {
  Hasher h;
  h.add(0x6b726eULL);
  h.field(k.name);
  hash_params(h, k.params);
  h.add(u(k.threads.value_or(-1)));
  h.add(u(k.grid_blocks.value_or(-1)));
  h.field(k.grid_multiple);
  h.field(k.cluster);
  h.field(k.min_blocks);
  h.field(k.shared_budget);
  for (const auto& r : k.requirements) h.field(r.cond);
  for (const auto& m : k.tensor_maps) {
    h.field(m.name);
    h.field(m.mem);
    h.field(m.rows);
    h.field(m.cols);
    h.field(m.box_rows);
    h.field(m.box_cols);
  }
  h.field(k.body);
  return h.h;
}

namespace {

/// Field-by-field equality, one overload per field type (locations always compare equal). With
/// `Identity`, a variable equals only itself (same_expression), not one that looks alike.
template <bool Identity>
struct Eq {
  bool operator()(std::int64_t a, std::int64_t b) const { return a == b; }
  bool operator()(double a, double b) const { return std::memcmp(&a, &b, sizeof a) == 0; }  // -0.0 != 0.0
  bool operator()(const std::string& a, const std::string& b) const { return a == b; }
  template <class E>
  requires std::is_enum_v<E>
  bool operator()(E a, E b) const { return a == b; }
  bool operator()(Perspective a, Perspective b) const { return a == b; }
  bool operator()(bool a, bool b) const { return a == b; }
  bool operator()(const std::optional<Perspective>& a, const std::optional<Perspective>& b) const { return a == b; }
  bool operator()(const ExprPtr& a, const ExprPtr& b) const {
    if constexpr (Identity) {
      return same_expression(a, b);
    } else {
      return equal(a, b);
    }
  }
  bool operator()(const StmtPtr& a, const StmtPtr& b) const { return equal(a, b); }
  bool operator()(const VarPtr& a, const VarPtr& b) const {
    if (a == b) return true;
    if (Identity || !a || !b) return false;
    return a->hash == b->hash && a->id == b->id && a->name == b->name && a->type == b->type && a->origin == b->origin;
  }
  bool operator()(const MemPtr& a, const MemPtr& b) const {
    if (a == b) return true;
    if (!a || !b) return false;
    return a->hash == b->hash && a->id == b->id && a->name == b->name && a->elem == b->elem && a->space == b->space &&
           a->is_const == b->is_const && a->dims == b->dims && a->origin == b->origin;
  }
  bool operator()(const FunctionPtr& a, const FunctionPtr& b) const {
    if (a == b) return true;
    if (!a || !b) return false;
    return equal(*a, *b);
  }
  bool operator()(const CallArgNode& a, const CallArgNode& b) const {
    return (*this)(a.value, b.value) && (*this)(a.mem, b.mem);
  }
  template <class A, class B>
  bool operator()(const std::pair<A, B>& a, const std::pair<A, B>& b) const {
    return (*this)(a.first, b.first) && (*this)(a.second, b.second);
  }
  bool operator()(const SourceLoc&, const SourceLoc&) const { return true; }
  template <class T>
  bool operator()(const std::vector<T>& a, const std::vector<T>& b) const {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!(*this)(a[i], b[i])) return false;
    return true;
  }
  template <class N>
  bool fields(const N& x, const N& y) const {
    auto fx = x.fields();
    auto fy = y.fields();
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return ((*this)(std::get<I>(fx), std::get<I>(fy)) && ...);
    }
    (std::make_index_sequence<std::tuple_size_v<decltype(fx)>>{});
  }
  bool params(const std::vector<ParamNode>& a, const std::vector<ParamNode>& b) const {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto& p = a[i];
      const auto& q = b[i];
      if (p.name != q.name || !(*this)(p.var, q.var) || !(*this)(p.mem, q.mem) || p.specialized != q.specialized ||
          !equal(p.extent, q.extent) || p.at != q.at)
        return false;
    }
    return true;
  }
};

}  // namespace

bool equal(const ExprPtr& a, const ExprPtr& b) {
  if (a == b) return true;
  if (!a || !b || a->hash != b->hash || a->kind != b->kind || a->type != b->type) return false;
  return dispatch(*a, [&](const auto& x) -> bool { return Eq<false>{}.fields(x, static_cast<decltype(x)>(*b)); });
}

bool same_expression(const ExprNode& a, const ExprNode& b) {
  if (&a == &b) return true;
  if (a.hash != b.hash || a.kind != b.kind || a.type != b.type) return false;
  return dispatch(a, [&](const auto& x) -> bool { return Eq<true>{}.fields(x, static_cast<decltype(x)>(b)); });
}

bool same_expression(const ExprPtr& a, const ExprPtr& b) {
  if (a == b) return true;
  return a && b && same_expression(*a, *b);
}

bool equal(const StmtPtr& a, const StmtPtr& b) {
  if (a == b) return true;
  if (!a || !b || a->hash != b->hash || a->kind != b->kind) return false;
  return dispatch(*a, [&](const auto& x) -> bool { return Eq<false>{}.fields(x, static_cast<decltype(x)>(*b)); });
}

bool equal(const FunctionNode& a, const FunctionNode& b) {
  if (&a == &b) return true;
  return a.hash == b.hash && a.name == b.name && a.signature == b.signature && a.shared_budget == b.shared_budget &&
         a.returns == b.returns && Eq<false>{}.params(a.params, b.params) && equal(a.body, b.body);
}

bool equal(const KernelNode& a, const KernelNode& b) {
  if (&a == &b) return true;
  return a.hash == b.hash && a.name == b.name && a.threads == b.threads && a.grid_blocks == b.grid_blocks &&
         a.grid_multiple == b.grid_multiple && a.cluster == b.cluster && a.min_blocks == b.min_blocks &&
         a.shared_budget == b.shared_budget && Eq<false>{}.params(a.params, b.params) &&
         a.requirements.size() == b.requirements.size() &&
         std::equal(a.requirements.begin(), a.requirements.end(), b.requirements.begin(),
                    [](const Requirement& x, const Requirement& y) { return equal(x.cond, y.cond); }) &&
         equal(a.body, b.body);
}

namespace {
/// Callees in post order: a function's own callees come before it.
class CallCollector : public IRVisitor {
 public:
  std::unordered_set<const FunctionNode*> seen;
  std::vector<const FunctionNode*> order;

 protected:
  void visit(const Call& n) override {
    IRVisitor::visit(n);
    if (n.fn && seen.insert(n.fn.get()).second) {
      walk(n.fn->body);
      order.push_back(n.fn.get());
    }
  }
};
}  // namespace

std::vector<const FunctionNode*> called_functions(const StmtPtr& body) {
  CallCollector c;
  c.walk(body);
  return std::move(c.order);
}

}  // namespace vantage::ir
