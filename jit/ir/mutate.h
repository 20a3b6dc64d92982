// Vantage IR rewriting: substitute variables by expressions and fold constants. Returns the same
// node when nothing below it changed, so unchanged subtrees stay shared.
#pragma once

#include <unordered_map>

#include "jit/ir/ir.h"

namespace vantage::ir {

using VarMap = std::unordered_map<const VarNode*, ExprPtr>;

/// Replaces references to the mapped variables and folds what becomes constant.
ExprPtr substitute(const ExprPtr& e, const VarMap& map);
StmtPtr substitute(const StmtPtr& s, const VarMap& map);

/// Folds an integer or bool node whose operands are constants (with the semantics of eval.h) and the
/// identities x+0, x-0, x*1, x/1 on integers. Only `e` itself is folded, not its operands.
ExprPtr fold(const ExprPtr& e);

}  // namespace vantage::ir
