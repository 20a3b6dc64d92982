// Vantage integer ranges: the interval every integer expression's value lies in, given the ranges of
// the variables and ids it reads. Two questions use it: whether an operation can overflow its type
// (if not, the CUDA printer emits the plain C++ operator, which is then defined), and whether the
// exact value of an index expression and all its intermediates fit 32 or 64 bits (docs/semantics.md,
// "Index expressions").
#pragma once

#include <functional>
#include <optional>
#include <unordered_map>

#include "jit/ir/ir.h"

namespace vantage::ir {

/// A closed interval of integers, held exactly.
struct Range {
  __int128 lo = 0, hi = 0;
  static Range of(ScalarType t);  ///< every value of `t`
  static Range point(__int128 v) { return {v, v}; }
  bool within(const Range& r) const { return lo >= r.lo && hi <= r.hi; }
  bool contains(__int128 v) const { return lo <= v && v <= hi; }
  Range join(const Range& r) const { return {lo < r.lo ? lo : r.lo, hi > r.hi ? hi : r.hi}; }
};

struct ExactMemo;

/// What the ranges of leaves come from.
struct RangeEnv {
  std::unordered_map<const VarNode*, Range> vars;  ///< variables of known range (others: their type's)
  std::function<Range(Perspective)> id;            ///< the range of `id(p)` where the expression is
  std::optional<Range> thread_index, block_index;  ///< lowered IR: the ranges of the Builtin positions
  std::optional<Range> grid_blocks;                ///< the launch's blocks (Builtin BlocksInGrid)
  /// Where exact_index_range and exact_value_range keep what they computed, if anywhere: whoever
  /// sets it clears it whenever a range above changes.
  ExactMemo* exact_memo = nullptr;
};

/// The exact ranges of expressions under one environment (RangeEnv::exact_memo). A bounds proof asks
/// for the ranges of one subexpression many times over, and the guards and indices of neighbouring
/// accesses are made of the same subexpressions: each is computed once, found again by its
/// structure (its hash, then ir::equal, with the very same variables: two variables may look
/// alike and have different ranges).
struct ExactMemo {
  struct Entry {
    bool ok = false;  ///< whether the exact value and its intermediates fit (else no ranges)
    Range value, all;
  };
  struct Hash {
    std::size_t operator()(const ExprPtr& e) const { return static_cast<std::size_t>(e->hash); }
  };
  struct Same {
    bool operator()(const ExprPtr& a, const ExprPtr& b) const;
  };
  std::unordered_map<ExprPtr, Entry, Hash, Same> seen;
  void clear() { seen.clear(); }
};

/// The range of `e`'s value under the IR's semantics (a result that may overflow wraps, so its range
/// is then its type's).
Range value_range(const ExprPtr& e, const RangeEnv& env);

/// Whether `b` (an Add, Sub or Mul on integers), `u` (a Neg) can leave its type's range.
bool may_overflow(const Binary& b, const RangeEnv& env);
bool may_overflow(const Unary& u, const RangeEnv& env);

/// Index expressions are computed exactly: +, -, *, negation, min, max, division and remainder by a
/// non-zero constant, and left shifts by a constant make up the exact part; everything else is a leaf
/// with its value range. Returns the smallest range covering the result and every intermediate, or
/// nullopt when some intermediate may not fit 127 bits. `each`, if given, receives that envelope for
/// every operation of the exact part (the printer decides per part how wide to compute it).
using ExactRanges = std::unordered_map<const ExprNode*, Range>;
std::optional<Range> exact_index_range(const ExprPtr& e, const RangeEnv& env, ExactRanges* each = nullptr);
/// The range of the exact value alone (not of its intermediates), or nullopt where
/// `exact_index_range` gives none: what a bounds proof asks of an index. `(t % 32) % 8` is in
/// [0, 8) even though its intermediate `t % 32` is not.
std::optional<Range> exact_value_range(const ExprPtr& e, const RangeEnv& env);
/// Whether `e` is an operation of the exact part of an index expression (see above).
bool is_exact_index_op(const ExprNode& e);

}  // namespace vantage::ir
