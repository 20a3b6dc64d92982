// The interpreter's expressions: docs/semantics.md's arithmetic, conversions and math. See machine.h.
#include "jit/interp/machine.h"

namespace vantage::interp::detail {

auto Machine::eval(const ExprPtr& e, Thread& t) -> V {
  return dispatch(*e,
                  Overloaded{
                      [&](const Literal& n) {
                        V v;
                        if (is_float(n.type))
                          v.f = round_to(n.type, n.f);
                        else
                          v.i = n.i;
                        return v;
                      },
                      [&](const VarRef& n) { return names_.read_var(t, n.var.get()); },
                      [&](const Unary& n) {
                        V a = eval(n.a, t), v;
                        if (is_float(n.type))
                          v.f = n.op == UnOp::Neg ? -a.f : a.f;
                        else
                          v.i = eval_unary(n.op, n.type, a.i);
                        return v;
                      },
                      [&](const Binary& n) {
                        // Left operand first (a call's arguments have no order in C++), so that
                        // the access reported is the first the expression makes, on every build.
                        V a = eval(n.a, t), b = eval(n.b, t);
                        return binary_value(n, a, b);
                      },
                      [&](const Cast& n) { return cast_value(n.a->type, n.type, eval(n.a, t)); },
                      [&](const Select& n) {
                        V c = eval(n.c, t), a = eval(n.a, t), b = eval(n.b, t);
                        return c.i ? a : b;
                      },
                      [&](const MathCall& n) {
                        std::array<V, 3> xs;  // fma's three at most (the builder)
                        if (n.args.size() > xs.size())
                          throw InternalError("interp: a math call of " + std::to_string(n.args.size()) + " arguments");
                        for (std::size_t i = 0; i < n.args.size(); ++i) xs[i] = eval(n.args[i], t);
                        return math_value(n, xs.data());
                      },
                      [&](const Id&) -> V { throw InternalError("interp: an id() in lowered IR"); },
                      [&](const Builtin& n) {
                        V v;
                        v.i = n.which == BuiltinKind::ThreadInBlock ? t.frames.back().tid
                              : n.which == BuiltinKind::BlockInGrid ? t.frames.back().bid
                                                                    : blocks_;
                        return v;
                      },
                      [&](const Load& n) {
                        V idx = eval(n.indices[0], t);
                        std::int64_t i = exact_index(n.indices[0]->type, idx.i);
                        Ref r = names_.mem(t, n.mem.get(), n.loc);
                        check_index(t, r, i, n.bound, false, n.loc);
                        V v = read(t, r, i, n.loc);
                        measure_.request(t, &n, 0, r, i, type_bytes(n.mem->elem), false, n.loc);
                        return v;
                      },
                  });
}

}  // namespace vantage::interp::detail
