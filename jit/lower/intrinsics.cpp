// Lowering of intrinsics: each one's operands resolved through views, its accesses proven or checked,
// and the rules of its perspective and target applied. See body.h.
#include "jit/lower/body.h"

namespace vantage::lower::detail {

void BodyLowerer::lower_stmt(const Intrinsic& n, std::vector<StmtPtr>& out) {
  SourceLoc l = n.loc;
  std::vector<ExprPtr> args;
  for (const auto& a : n.args) args.push_back(lx(a));
  std::vector<MemPtr> mems = n.mems;
  // A memory operand accessed at an index argument: the root, and the flat index in its place.
  auto at = [&](std::size_t mem, std::size_t arg) {
    auto [root, flat] = resolve(n.mems[mem], {args[arg]}, l);
    mems[mem] = root;
    args[arg] = exact_width(flat);
  };
  // Thread-local fragments: the root array, which must start at the view's first element.
  auto fragment = [&](std::size_t mem) {
    auto [root, flat] = resolve(n.mems[mem], {lit(0, l)}, l);
    if (!is_zero(flat))
      c_.out.problems.push_back(
          {"V1003", "the fragment '" + n.mems[mem]->name + "' must be a whole thread-local array", l, {}});
    mems[mem] = root;
  };
  switch (n.op) {
    case IntrinsicOp::SyncThreads:
      out.push_back(make<ir::Barrier>(vantage::block(1), BarrierKind::Block, T(), 0, false, l));
      return;
    case IntrinsicOp::SyncWarp: out.push_back(make<ir::Barrier>(warp(), BarrierKind::Warp, 32, 0, false, l)); return;
    case IntrinsicOp::NamedBarrier: {
      const Pos& p = frames_.back();
      if (p.replicas > 1)
        c_.out.problems.push_back(
            {"V1007",
             "named_barrier(" + std::to_string(n.imms[0]) + ", " + std::to_string(n.imms[1]) + ") runs in " +
                 std::to_string(p.replicas) + " groups of " + std::to_string(n.imms[1]) +
                 " threads at once, which would all share barrier " + std::to_string(n.imms[0]) +
                 "; let Vantage place the barriers, or give each group its own split branch and id",
             l,
             {}});
      out.push_back(make<ir::Barrier>(p.code, BarrierKind::NamedFixed, n.imms[1], n.imms[0], false, l));
      return;
    }
    case IntrinsicOp::Atomic: {
      // Checked as it runs where not proven, as a store is: the bound becomes a third argument and
      // the site a second immediate (the CPU backend and the interpreter check atomics themselves).
      at(0, 0);
      auto [bound, site] = check(mems[0], args[0], true, l);
      if (bound) {
        args.push_back(bound);
        std::vector<std::int64_t> imms = n.imms;
        imms.push_back(site);
        out.push_back(make<Intrinsic>(n.op, std::move(args), std::move(mems), n.outputs, std::move(imms), l));
        return;
      }
      break;
    }
    case IntrinsicOp::Ldmatrix:
      fragment(0);
      at(1, 0);
      break;
    case IntrinsicOp::CpAsync: {
      at(0, 0);
      at(1, 1);
      // A copy of 8 or 16 bytes needs its source aligned to that: the launch checks the buffer's
      // address, as for a vector copy (shared arrays start at multiples of 16 bytes).
      const int bytes = n.imms.empty() ? 0 : static_cast<int>(n.imms[0]);
      if (auto p = c_.param_index.find(mems[1].get()); bytes > 4 && p != c_.param_index.end())
        c_.out.param_alignment[p->second] = std::max(c_.out.param_alignment[p->second], bytes);
      // Each side's elements proven inside its memory, or checked as the copy runs: then the bounds
      // follow the indices (args 2 and 3) and the sites the size (imms 1 and 2; -1 where proven).
      const std::int64_t count = std::max<std::int64_t>(1, bytes / type_bytes(mems[0]->elem));
      std::array<std::int64_t, 2> sites{-1, -1};
      std::array<ExprPtr, 2> bounds;
      for (std::size_t side = 0; side < 2; ++side) {
        if (proven_in_bounds(mems[side], args[side], count, l)) continue;
        bounds[side] = bound_of(mems[side], l);
        if (!bounds[side]) throw InternalError("lower: no bound for memory '" + mems[side]->name + "'");
        c_.out.checks.push_back({l, mems[side]->name, side == 0});
        sites[side] = static_cast<std::int64_t>(c_.out.checks.size()) - 1;
      }
      if (sites[0] >= 0 || sites[1] >= 0) {
        std::vector<std::int64_t> imms = n.imms;
        for (std::size_t side = 0; side < 2; ++side) {
          args.push_back(bounds[side] ? bounds[side] : int_literal(ScalarType::I64, 0, l));
          imms.push_back(sites[side]);
        }
        out.push_back(make<Intrinsic>(n.op, std::move(args), std::move(mems), n.outputs, std::move(imms), l));
        return;
      }
      break;
    }
    case IntrinsicOp::TmaLoad2D: {
      // args: column, row, the barrier's slot, the destination's first element (both resolved).
      at(0, 3);
      at(1, 2);
      slot_in_bounds(mems[1], args[2], n.mems[1]->name, l);
      const auto& maps = c_.out.kernel.tensor_maps;
      if (n.imms.empty() || n.imms[0] < 0 || n.imms[0] >= static_cast<std::int64_t>(maps.size()))
        throw InternalError("lower: a TMA load without a tensor map");
      const TensorMapNode& m = maps[static_cast<std::size_t>(n.imms[0])];
      swizzled_tile(mems[0], args[3], m.box_rows * m.box_cols, 0, "TMA box of '" + m.name + "'", n.mems[0]->name, l);
      break;
    }
    case IntrinsicOp::MbarrierInit:
    case IntrinsicOp::MbarrierWait:
      at(0, 1);
      slot_in_bounds(mems[0], args[1], n.mems[0]->name, l);
      break;
    case IntrinsicOp::MbarrierArrive:
    case IntrinsicOp::MbarrierExpectTx:
      at(0, 0);
      slot_in_bounds(mems[0], args[0], n.mems[0]->name, l);
      break;
    case IntrinsicOp::Wgmma: {
      fragment(0);
      at(1, 0);
      at(2, 1);
      swizzled_tile(mems[1], args[0], 64 * 64, 48, "wgmma's A tile (64 rows)", n.mems[1]->name, l);
      swizzled_tile(mems[2], args[1], n.imms[0] * 64, 48, "wgmma's B tile (" + std::to_string(n.imms[0]) + " rows)",
                    n.mems[2]->name, l);
      break;
    }
    case IntrinsicOp::SetMaxNreg: break;
    case IntrinsicOp::MmaSync:
      for (std::size_t i = 0; i < mems.size(); ++i) fragment(i);
      break;
    case IntrinsicOp::ShflXor:
    case IntrinsicOp::ShflDown:
    case IntrinsicOp::ShflUp:
    case IntrinsicOp::ShflIdx:
    case IntrinsicOp::VoteAll:
    case IntrinsicOp::VoteAny:
    case IntrinsicOp::Ballot:
    case IntrinsicOp::WgmmaFence:
    case IntrinsicOp::WgmmaCommit:
    case IntrinsicOp::WgmmaWait:
    case IntrinsicOp::CpAsyncCommit:
    case IntrinsicOp::CpAsyncWait: break;
  }
  out.push_back(make<Intrinsic>(n.op, std::move(args), std::move(mems), n.outputs, n.imms, l));
}

}  // namespace vantage::lower::detail
