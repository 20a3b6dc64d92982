// Vantage kernel signatures: see signature.h.
#include "jit/pipeline/signature.h"

#include <algorithm>

#include "jit/ir/eval.h"
#include "jit/ir/printer.h"
#include "jit/pipeline/handles.h"

namespace vantage {
namespace pipeline {

/// Compiles IR expressions into ExtentPrograms (the only place that reads the IR for them).
struct ExtentCompiler {
  using Op = ExtentProgram::Op;
  const std::vector<ir::ParamNode>& params;

  /// False when `e` is not an integer expression of literals, parameters and operators.
  bool compile(const ir::ExprPtr& e, ExtentProgram& out) const {
    return e && add(e, out.ops) && out.ops.size() <= ExtentProgram::kMaxOps;
  }

 private:
  bool add(const ir::ExprPtr& e, std::vector<Op>& ops) const {
    using namespace ir;
    return dispatch(*e, Overloaded{
                            [&](const Literal& n) {
                              if (!is_integral(n.type)) return false;
                              ops.push_back({Op::Const, {}, n.type, n.type, -1, n.i});
                              return true;
                            },
                            [&](const VarRef& n) {
                              for (std::size_t i = 0; i < params.size(); ++i)
                                if (params[i].var.get() == n.var.get() && is_integer(n.type)) {
                                  ops.push_back({Op::Param, {}, n.type, n.type, static_cast<int>(i), 0});
                                  return true;
                                }
                              return false;
                            },
                            [&](const Unary& n) {
                              if (!add(n.a, ops)) return false;
                              ops.push_back({Op::Unary, static_cast<std::uint8_t>(n.op), n.type, n.type, -1, 0});
                              return true;
                            },
                            [&](const Binary& n) {
                              if (!is_integral(n.type) || !is_integral(n.a->type) || !add(n.a, ops) || !add(n.b, ops))
                                return false;
                              ops.push_back({Op::Binary, static_cast<std::uint8_t>(n.op), n.a->type, n.type, -1, 0});
                              return true;
                            },
                            [&](const Cast& n) {
                              if (!is_integral(n.type) || !is_integral(n.a->type) || !add(n.a, ops)) return false;
                              ops.push_back({Op::Cast, {}, n.type, n.a->type, -1, 0});
                              return true;
                            },
                            [](const auto&) { return false; },
                        });
  }
};

std::vector<int> ExtentProgram::params() const {
  std::vector<int> out;
  for (const Op& op : ops)
    if (op.code == Op::Param && std::find(out.begin(), out.end(), op.param) == out.end()) out.push_back(op.param);
  return out;
}

std::optional<std::int64_t> ExtentProgram::eval(std::span<const std::int64_t> scalars) const {
  if (ops.size() == 1 && ops[0].code == Op::Param) {  // the common extent: one parameter
    __int128 v = ir::exact(ops[0].type, scalars[static_cast<std::size_t>(ops[0].param)]);
    if (v < 0 || v > INT64_MAX) return std::nullopt;
    return static_cast<std::int64_t>(v);
  }
  std::int64_t stack[kMaxOps];
  ScalarType types[kMaxOps];
  int top = 0;
  bool wrapped = false;
  for (const Op& op : ops) {
    switch (op.code) {
      case Op::Const:
        types[top] = op.type;
        stack[top++] = op.value;
        break;
      case Op::Param:
        types[top] = op.type;
        stack[top++] = scalars[static_cast<std::size_t>(op.param)];
        break;
      case Op::Unary:
        stack[top - 1] = ir::eval_unary(static_cast<ir::UnOp>(op.op), op.type, stack[top - 1], &wrapped);
        break;
      case Op::Binary: {
        std::int64_t b = stack[--top];
        stack[top - 1] = ir::eval_binary(static_cast<ir::BinOp>(op.op), op.type, stack[top - 1], b, &wrapped);
        types[top - 1] = op.result;
        break;
      }
      case Op::Cast:
        stack[top - 1] = ir::eval_cast(op.result, op.type, stack[top - 1], &wrapped);
        types[top - 1] = op.type;
        break;
    }
  }
  if (wrapped || top != 1) return std::nullopt;
  __int128 v = ir::exact(types[0], stack[0]);
  if (v < 0 || v > INT64_MAX) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

Signature signature_of(const Kernel& kernel) {
  const ir::KernelNode& k = detail::KernelAccess::ir(kernel);
  const ExtentCompiler programs{k.params};
  Signature s;
  s.name = k.name;
  s.declared_threads = k.threads.value_or(0);
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    const ir::ParamNode& p = k.params[i];
    ParamCheck c;
    c.name = p.name;
    c.pointer = p.mem != nullptr;
    c.type = p.var ? p.var->type : p.mem->elem;
    c.is_const = p.mem && p.mem->is_const;
    if (p.extent) {
      c.extent_text = ir::print(p.extent);
      c.has_extent = programs.compile(p.extent, c.extent);
      if (!c.has_extent)
        throw InternalError("launch: the extent of '" + p.name + "' (" + c.extent_text +
                            ") is not an integer expression over the kernel's parameters");
    }
    if (p.specialized && p.var) s.specialized.push_back(static_cast<int>(i));
    // Sizes: integers of 32 or 64 bits (a class's range, [0, 2^30], does not fit 8 or 16 bits).
    if (!p.specialized && p.var && is_integer(p.var->type) && !is_narrow_integer(p.var->type) &&
        s.classified.size() < 32)
      s.classified.push_back(static_cast<int>(i));
    s.params.push_back(std::move(c));
  }
  for (const auto& r : k.requirements) {
    RequirementCheck c;
    c.text = ir::print(r.cond);
    c.loc = r.loc;
    if (!programs.compile(r.cond, c.program))
      throw InternalError("launch: the requirement " + c.text + " is not an integer condition on the parameters");
    c.params = c.program.params();
    s.requirements.push_back(std::move(c));
  }
  for (const auto& m : k.tensor_maps) {
    TensorMapCheck c;
    c.name = m.name;
    for (std::size_t i = 0; i < k.params.size(); ++i)
      if (k.params[i].mem == m.mem) c.param = static_cast<int>(i);
    c.rows_text = ir::print(m.rows);
    c.cols_text = ir::print(m.cols);
    if (!programs.compile(m.rows, c.rows) || !programs.compile(m.cols, c.cols))
      throw InternalError("launch: the shape of tensor map '" + m.name + "' is not an integer expression");
    c.box_rows = m.box_rows;
    c.box_cols = m.box_cols;
    c.elem = m.mem->elem;
    c.loc = m.loc;
    s.maps.push_back(std::move(c));
  }
  return s;
}

}  // namespace pipeline
}  // namespace vantage
