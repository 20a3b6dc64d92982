// Vantage view resolution: every name made by partition, claim, lower or async refers to a root
// (a pointer parameter, shared or local array); an access through a view is an access to the root
// at the index the partition index functions give. Shared by the sync pass and the emitter.
#pragma once

#include <unordered_map>
#include <vector>

#include "jit/ir/affine.h"
#include "jit/ir/ir.h"

namespace vantage::ir {

class Views {
 public:
  /// Records every narrowing construct in `body` (and below).
  void collect(const StmtPtr& body);
  void add(const Partition& p) {
    partitions_[p.dst.get()] = &p;
    shares_.clear();
  }
  void add(const MemNode* dst, const MemNode* src) {
    parents_[dst] = src;
    shares_.clear();
  }

  /// The memory a view names.
  const MemNode* root(const MemNode* m) const;
  /// The index into the root of `m[idx...]`, folded; null for a root accessed without indices.
  ExprPtr root_index(const MemNode* m, std::vector<ExprPtr> idx) const;
  /// For a view made by a partition: the root index of its element (i, j, ...), with the
  /// partition's own index variables left free, i.e. which elements of the root each unit owns.
  /// Null for any other memory.
  ExprPtr share(const MemNode* m) const;
  /// Whether `m[i]` is `root[base + i]` (unit stride), so a pointer to m[0] can stand for m.
  bool unit_stride(const MemNode* m) const;

 private:
  std::unordered_map<const MemNode*, const Partition*> partitions_;
  std::unordered_map<const MemNode*, const MemNode*> parents_;
  /// share() of each view asked for (every store through a view asks, the same each time).
  mutable std::unordered_map<const MemNode*, ExprPtr> shares_;
};

}  // namespace vantage::ir
