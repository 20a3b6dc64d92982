// The one affine form of integer expressions: `constant + sum(coefficient * atom)`, built by lowering's
// bounds prover (as written, normalized, with products multiplied out) and by the analyses that
// compare indices (AffineReader: through lets and casts).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jit/ir/ir.h"

namespace vantage::ir {

/// `constant + sum(coefficient * atom)` for an integer index, atoms compared structurally.
struct Affine {
  std::int64_t constant = 0;
  std::vector<std::pair<ExprPtr, std::int64_t>> terms;
  void add(const ExprPtr& atom, std::int64_t k);
  void scale(std::int64_t k);
  void merge(const Affine& o, std::int64_t sign);
  std::int64_t coefficient(const ExprPtr& atom) const;
};
/// Constants folded at their type (`8u - 58u` is 4294967246), or (`exact`) only literals count as
/// constants and + - * of them are exact (`8u - 58u` is -50, as in an index: docs/semantics.md).
Affine affine(const ExprPtr& e, bool exact = false);

/// Affine forms as an analysis that only compares indices reads them: + - * taken over the integers,
/// a variable that a let defines (and nothing assigns: the caller's `lets`) read as its value, an
/// integer cast looked through, a literal a constant, anything else an atom of its own. Memoized by
/// node, so that a let read twice, and chained, stays linear; a coefficient or constant of 2^62 or
/// more in magnitude makes the expression one atom, so that nothing overflows. (The cost report's shared
/// loads the compiler may merge: indices one element apart.)
class AffineReader {
 public:
  using Lets = std::unordered_map<const VarNode*, ExprPtr>;
  explicit AffineReader(const Lets& lets) : lets_(lets) {}
  const Affine& operator()(const ExprPtr& e, int depth = 0);

 private:
  Affine compute(const ExprPtr& e, int depth);
  const Lets& lets_;
  std::unordered_map<const ExprNode*, Affine> memo_;
};

/// Whether a and b have the same atoms with the same coefficients (zero ones left out): two indices
/// whose forms do differ by a constant.
bool same_terms(const Affine& a, const Affine& b);

}  // namespace vantage::ir
