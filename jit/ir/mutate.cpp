// Vantage IR rewriting: see mutate.h.
#include "jit/ir/mutate.h"

namespace vantage::ir {
namespace {

bool is_int_lit(const ExprPtr& e, std::int64_t v) {
  const auto* l = e ? as<Literal>(*e) : nullptr;
  return l && is_integer(l->type) && l->i == v;
}

/// Wraps a value to the width of an integer type, as the GPU computes it.
std::int64_t wrap(ScalarType t, std::int64_t v) {
  switch (t) {
    case ScalarType::I32: return static_cast<std::int32_t>(v);
    case ScalarType::U32: return static_cast<std::uint32_t>(v);
    default: return v;
  }
}

class Substituter {
 public:
  explicit Substituter(const VarMap& m) : map_(m) {}

  ExprPtr expr(const ExprPtr& e) {
    if (!e) return e;
    return visit(*e, [&](const auto& n) -> ExprPtr {
      using N = std::decay_t<decltype(n)>;
      if constexpr (std::is_same_v<N, VarRef>) {
        auto it = map_.find(n.var.get());
        return it == map_.end() ? e : it->second;
      } else if constexpr (std::is_same_v<N, Unary>) {
        auto a = expr(n.a);
        return a == n.a ? e : fold(make<Unary>(n.op, a, n.type, n.loc));
      } else if constexpr (std::is_same_v<N, Binary>) {
        auto a = expr(n.a), b = expr(n.b);
        return a == n.a && b == n.b ? e : fold(make<Binary>(n.op, a, b, n.type, n.loc));
      } else if constexpr (std::is_same_v<N, Cast>) {
        auto a = expr(n.a);
        return a == n.a ? e : fold(make<Cast>(a, n.type, n.loc));
      } else if constexpr (std::is_same_v<N, Select>) {
        auto c = expr(n.c), a = expr(n.a), b = expr(n.b);
        return c == n.c && a == n.a && b == n.b ? e : make<Select>(c, a, b, n.loc);
      } else if constexpr (std::is_same_v<N, MathCall>) {
        auto args = exprs(n.args);
        return args == n.args ? e : make<MathCall>(n.fn, std::move(args), n.loc);
      } else if constexpr (std::is_same_v<N, Load>) {
        auto idx = exprs(n.indices);
        return idx == n.indices ? e : make<Load>(n.mem, std::move(idx), n.loc);
      } else {
        return e;  // Literal, Id
      }
    });
  }

  std::vector<ExprPtr> exprs(const std::vector<ExprPtr>& xs) {
    std::vector<ExprPtr> out;
    out.reserve(xs.size());
    for (const auto& x : xs) out.push_back(expr(x));
    return out;
  }

  StmtPtr stmt(const StmtPtr& s) {
    if (!s) return s;
    return visit(*s, [&](const auto& n) -> StmtPtr {
      using N = std::decay_t<decltype(n)>;
      if constexpr (std::is_same_v<N, Seq>) {
        std::vector<StmtPtr> out;
        bool changed = false;
        for (const auto& c : n.stmts) {
          out.push_back(stmt(c));
          changed |= out.back() != c;
        }
        return changed ? make<Seq>(std::move(out), n.loc) : s;
      } else if constexpr (std::is_same_v<N, Let>) {
        auto v = expr(n.value);
        return v == n.value ? s : make<Let>(n.var, v, n.at, n.loc);
      } else if constexpr (std::is_same_v<N, Assign>) {
        auto v = expr(n.value);
        return v == n.value ? s : make<Assign>(n.var, v, n.loc);
      } else if constexpr (std::is_same_v<N, Store>) {
        auto idx = exprs(n.indices);
        auto v = expr(n.value);
        return idx == n.indices && v == n.value ? s : make<Store>(n.mem, std::move(idx), v, n.loc);
      } else if constexpr (std::is_same_v<N, If>) {
        auto c = expr(n.cond);
        auto t = stmt(n.then_body), f = stmt(n.else_body);
        return c == n.cond && t == n.then_body && f == n.else_body ? s : make<If>(c, t, f, n.loc);
      } else if constexpr (std::is_same_v<N, For>) {
        auto b = expr(n.begin), e = expr(n.end), st = expr(n.step);
        auto body = stmt(n.body);
        return b == n.begin && e == n.end && st == n.step && body == n.body ? s
                                                                            : make<For>(n.var, b, e, st, body, n.loc);
      } else if constexpr (std::is_same_v<N, While>) {
        auto c = expr(n.cond);
        auto b = stmt(n.body);
        return c == n.cond && b == n.body ? s : make<While>(c, b, n.loc);
      } else if constexpr (std::is_same_v<N, Group>) {
        auto b = stmt(n.body);
        return b == n.body ? s : make<Group>(n.p, b, n.loc);
      } else if constexpr (std::is_same_v<N, Split>) {
        std::vector<StmtPtr> bodies;
        bool changed = false;
        for (const auto& b : n.bodies) {
          bodies.push_back(stmt(b));
          changed |= bodies.back() != b;
        }
        return changed ? make<Split>(n.level, n.counts, std::move(bodies), n.branch_locs, n.loc) : s;
      } else if constexpr (std::is_same_v<N, Destruct>) {
        auto b = stmt(n.body);
        return b == n.body ? s : make<Destruct>(b, n.loc);
      } else if constexpr (std::is_same_v<N, Partition>) {
        auto ix = expr(n.index);
        auto b = stmt(n.body);
        return ix == n.index && b == n.body ? s : make<Partition>(n.src, n.dst, n.p, n.index_vars, ix, b, n.loc);
      } else if constexpr (std::is_same_v<N, Claim>) {
        auto b = stmt(n.body);
        return b == n.body ? s : make<Claim>(n.src, n.dst, n.p, b, n.loc);
      } else if constexpr (std::is_same_v<N, Lower>) {
        auto b = stmt(n.body);
        return b == n.body ? s : make<Lower>(n.src, n.dst, b, n.loc);
      } else if constexpr (std::is_same_v<N, Async>) {
        auto b = stmt(n.body);
        return b == n.body ? s : make<Async>(n.src, n.dst, b, n.loc);
      } else if constexpr (std::is_same_v<N, SharedAlloc>) {
        auto c = expr(n.count);
        return c == n.count ? s : make<SharedAlloc>(n.mem, c, n.loc);
      } else if constexpr (std::is_same_v<N, Call>) {
        std::vector<CallArgNode> args;
        bool changed = false;
        for (const auto& a : n.args) {
          args.push_back({expr(a.value), a.mem});
          changed |= args.back().value != a.value;
        }
        return changed ? make<Call>(n.fn, std::move(args), n.result, n.loc) : s;
      } else if constexpr (std::is_same_v<N, Intrinsic>) {
        auto args = exprs(n.args);
        return args == n.args ? s : make<Intrinsic>(n.op, std::move(args), n.mems, n.outputs, n.imms, n.loc);
      } else if constexpr (std::is_same_v<N, Unsafe>) {
        std::vector<std::pair<std::string, ExprPtr>> ins;
        bool changed = false;
        for (const auto& [name, e] : n.inputs) {
          ins.emplace_back(name, expr(e));
          changed |= ins.back().second != e;
        }
        return changed ? make<Unsafe>(n.needs, n.cuda, std::move(ins), n.outputs, n.loc) : s;
      } else if constexpr (std::is_same_v<N, Return>) {
        auto v = expr(n.value);
        return v == n.value ? s : make<Return>(v, n.loc);
      } else {
        return s;  // LocalAlloc
      }
    });
  }

 private:
  const VarMap& map_;
};

}  // namespace

ExprPtr fold(const ExprPtr& e) {
  if (!e) return e;
  const auto* b = as<Binary>(*e);
  if (b && is_integer(b->type) && b->a && b->b && b->a->type == b->type && b->b->type == b->type) {
    auto x = const_int(b->a), y = const_int(b->b);
    if (x && y) {
      if (auto v = const_int(e)) return make<Literal>(b->type, wrap(b->type, *v), static_cast<double>(*v), b->loc);
    }
    switch (b->op) {
      case BinOp::Add:
        if (is_int_lit(b->b, 0)) return b->a;
        if (is_int_lit(b->a, 0)) return b->b;
        break;
      case BinOp::Sub:
        if (is_int_lit(b->b, 0)) return b->a;
        break;
      case BinOp::Mul:
        if (is_int_lit(b->b, 1)) return b->a;
        if (is_int_lit(b->a, 1)) return b->b;
        if (is_int_lit(b->a, 0) || is_int_lit(b->b, 0)) return make<Literal>(b->type, 0, 0.0, b->loc);
        break;
      case BinOp::Div:
        if (is_int_lit(b->b, 1)) return b->a;
        break;
      default: break;
    }
  }
  return e;
}

ExprPtr substitute(const ExprPtr& e, const VarMap& map) { return Substituter(map).expr(e); }
StmtPtr substitute(const StmtPtr& s, const VarMap& map) { return Substituter(map).stmt(s); }

}  // namespace vantage::ir
