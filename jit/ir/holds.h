// Memoized questions about what a statement holds (through the functions it calls), answered from
// the intrinsic table: the interpreter's and the CPU backend's one list of what cuts lockstep.
#pragma once

#include <optional>
#include <unordered_map>

#include "jit/ir/intrinsics.h"
#include "jit/ir/visit.h"

namespace vantage::ir {

/// What a statement holds, looking into the functions it calls, memoized per statement: a barrier or
/// a collective (which the interpreter runs in lockstep and the CPU backend cuts its thread loops
/// at), a barrier over more than one warp, an exchange between lanes.
class Collectives {
 public:
  /// A barrier, or an operation the threads of a group reach together (intrinsics.h: collective).
  bool of(const StmtPtr& s) {
    return holds(s, memo_, [](const StmtNode& x) -> std::optional<bool> {
      if (x.kind == StmtKind::Barrier) return true;
      if (const auto* n = as<Intrinsic>(x)) return warp_op(n->op);
      return std::nullopt;
    });
  }
  /// Whether a statement holds a barrier over more than one warp (block, named).
  bool block_sync(const StmtPtr& s) {
    return holds(s, sync_memo_, [](const StmtNode& x) -> std::optional<bool> {
      if (const auto* b = as<ir::Barrier>(x)) return b->how != BarrierKind::Warp && b->how != BarrierKind::WarpPart;
      if (const auto* n = as<Intrinsic>(x)) return info(n->op).orders_memory && info(n->op).needs != Needs::Warp;
      return std::nullopt;
    });
  }
  /// Whether a statement exchanges values between the lanes of a warp (shuffles, votes, ballot,
  /// mma, ldmatrix): the operations that work on a warp's 32 lanes as a whole.
  bool lane_exchange(const StmtPtr& s) {
    return holds(s, exchange_memo_, [](const StmtNode& x) -> std::optional<bool> {
      if (const auto* n = as<Intrinsic>(x)) return exchanges_lanes(n->op);
      return std::nullopt;
    });
  }
  /// Whether a statement waits on an mbarrier: where the interpreter runs threads as fibers.
  bool waits(const StmtPtr& s) {
    return holds(s, wait_memo_, [](const StmtNode& x) -> std::optional<bool> {
      if (const auto* n = as<Intrinsic>(x)) return info(n->op).mems[0] == Touch::Wait;
      return std::nullopt;
    });
  }
  static bool exchanges_lanes(IntrinsicOp op) { return info(op).collective && !info(op).orders_memory; }
  /// An exchange between lanes, or a barrier: what the threads of a group reach together.
  static bool warp_op(IntrinsicOp op) { return info(op).collective; }

 private:
  /// Whether `s` holds a statement `leaf` says yes to (looking into called functions), memoized.
  template <class Leaf>
  bool holds(const StmtPtr& s, std::unordered_map<const StmtNode*, bool>& memo, const Leaf& leaf) {
    if (!s) return false;
    auto it = memo.find(s.get());
    if (it != memo.end()) return it->second;
    bool c = false;
    if (auto here = leaf(*s)) {
      c = *here;
    } else if (const auto* call = as<Call>(*s)) {
      c = holds(call->fn->body, memo, leaf);
    } else {
      for_each_child_stmt(*s, [&](const StmtPtr& child) { c = c || holds(child, memo, leaf); });
    }
    memo[s.get()] = c;
    return c;
  }
  std::unordered_map<const StmtNode*, bool> memo_, sync_memo_, exchange_memo_, wait_memo_;
};

}  // namespace vantage::ir
