// Vantage frontend handles: the library's access to what Expr, Var, View and Scope hold. The
// public header declares them opaque (detail::ExprRep and friends are bases of the IR nodes).
#pragma once

#include <memory>

#include "frontend/build_ctx.h"
#include "jit/ir/ir.h"
#include "vantage/builder.hpp"

namespace vantage::detail {

struct BuilderAccess;
/// Where a builder call is, from its caller's source_location.
inline SourceLoc here(const std::source_location& l) { return SourceLoc::from(l); }

struct BuilderAccess {
  static ir::ExprPtr node(const Expr& e) { return std::static_pointer_cast<const ir::ExprNode>(e.node_); }
  /// The node without taking a reference (for reading a field: no reference-count traffic).
  static const ir::ExprNode* raw(const Expr& e) { return static_cast<const ir::ExprNode*>(e.node_.get()); }
  static const ir::MemNode* raw(const View& v) { return static_cast<const ir::MemNode*>(v.mem_.get()); }
  static Expr expr(ir::ExprPtr n) {
    Expr e;
    e.node_ = std::move(n);
    return e;
  }
  static ir::VarPtr var(const Var& v) { return std::static_pointer_cast<const ir::VarNode>(v.var_); }
  /// A handle for a variable; reading it is a reference at `loc`.
  static Var var(ir::VarPtr v, SourceLoc loc) {
    Var out;
    out.node_ = ir::ref(v, loc);
    out.var_ = std::move(v);
    return out;
  }
  static ir::MemPtr mem(const View& v) { return std::static_pointer_cast<const ir::MemNode>(v.mem_); }
  static View view(ir::MemPtr m, const std::shared_ptr<BuildCtx>& ctx) {
    View out;
    out.mem_ = std::move(m);
    out.ctx_ = ctx;
    return out;
  }
  static std::shared_ptr<BuildCtx> ctx(const View& v) { return v.ctx_.lock(); }
  static const std::shared_ptr<BuildCtx>& ctx(const Scope& s) { return s.ctx_; }
  static std::uint64_t block(const Scope& s) { return s.block_; }
  static TensorMap tensor_map(int index, const ir::TensorMapNode& n, const std::shared_ptr<BuildCtx>& ctx) {
    TensorMap out;
    out.index_ = index;
    out.name_ = n.name;
    out.elem_ = n.mem ? n.mem->elem : ScalarType::F32;
    out.box_rows_ = n.box_rows;
    out.box_cols_ = n.box_cols;
    out.ctx_ = ctx;
    return out;
  }
  static int index(const TensorMap& m) { return m.index_; }
  static std::shared_ptr<BuildCtx> ctx(const TensorMap& m) { return m.ctx_.lock(); }
};

/// The IR node an expression handle holds.
inline ir::ExprPtr node(const Expr& e) { return BuilderAccess::node(e); }
/// A weak literal (a C++ number written next to an expression) in the type `to`, where that keeps its
/// value; anything else unchanged (frontend/expr.cpp says how; the checker rejects what does not fit).
ir::ExprPtr adapt(const ExprArg& x, ScalarType to);

}  // namespace vantage::detail
