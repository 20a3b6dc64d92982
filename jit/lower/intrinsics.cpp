// Lowering of intrinsics: each one's operands resolved through views, its accesses proven or checked,
// and the rules of its perspective and target applied. See body.h.
#include "jit/ir/affine.h"
#include "jit/lower/body.h"

namespace vantage::lower::detail {

Diagnostic unwaited_tma(const sync::UnwaitedTma& u) {
  Diagnostic d{"V1010",
               u.store ? "this statement writes '" + u.memory +
                             "' while a TMA store may still read it; its thread must wait for the store first "
                             "(tma_store_wait; a barrier does not wait for TMA)"
                       : "this statement uses '" + u.memory +
                             "' while a TMA load into it may still be in flight; wait on its mbarrier '" + u.mbarrier +
                             "' first (a barrier does not wait for TMA)",
               u.use->loc,
               {}};
  if (u.load.known()) d.notes.push_back({u.store ? "the TMA store is here" : "the TMA load is here", u.load});
  return d;
}

std::optional<ExprPtr> not_an_offset(const ExprPtr& index,
                                     const std::function<std::pair<MemPtr, ExprPtr>(const ExprPtr&)>& resolve,
                                     SourceLoc l) {
  // The view's element index + d at its root's element of `index` plus d, for a symbolic d: a
  // partition's `base + i`, not `i / w * ld`.
  auto d = std::make_shared<VarNode>(-1, "vt_d", ScalarType::I32, VarNode::Origin::Let, l);
  ExprPtr dref = make<VarRef>(ScalarType::I32, d, l);
  ExprPtr first = resolve(index).second, moved = resolve(bin(BinOp::Add, index, dref, l)).second;
  AffineReader::Lets none;
  AffineReader read(none);
  Affine at = read(first), there = read(moved);
  at.add(dref, 1);
  if (same_terms(at, there) && at.constant == there.constant) return std::nullopt;
  return moved;
}

namespace {
/// A wgmma tile's row of 128 bytes in elements of `e` (64 of 2 bytes, 128 of one), and the last K
/// offset in it (its four K steps are 32 bytes each).
std::pair<std::int64_t, std::int64_t> wgmma_row(ScalarType e) {
  const std::int64_t row = 128 / type_bytes(e);
  return {row, row - 32 / type_bytes(e)};
}
}  // namespace

void contiguous_tile(const Intrinsic& n, std::size_t mem, const ExprPtr& index, const std::string& what,
                     const std::function<std::pair<MemPtr, ExprPtr>(const ExprPtr&)>& resolve,
                     std::vector<Diagnostic>& problems) {
  auto moved = not_an_offset(index, resolve, n.loc);
  if (!moved) return;
  problems.push_back({"V1012",
                      what + " in '" + n.mems[mem]->name + "': the tile is whole rows of the array from element " +
                          ir::print(index) + ", so the view's element i + d must be the array's element after i's " +
                          "by d; '" + n.mems[mem]->name + "' places element " + ir::print(index) + " + d at " +
                          ir::print(*moved) + " (pass the array, or a partition `base + i` of it)",
                      n.loc,
                      {}});
}

BoxPlace box_place(const Intrinsic& n, const TensorMapNode& m, const ExprPtr& cols, const ExprPtr& dst_index,
                   const std::function<std::pair<MemPtr, ExprPtr>(const ExprPtr&)>& resolve,
                   const std::function<ExprPtr(const ExprPtr&)>& exact_width) {
  const SourceLoc l = n.loc;
  BoxPlace out;
  auto fail = [&](const std::string& why) {
    out.problem = Diagnostic{"V1012",
                             "tma_store into '" + n.mems[1]->name + "': " + why,
                             l,
                             {{"tensor map " + m.name + " is made here", m.loc}}};
    return out;
  };
  auto [root, first] = resolve(dst_index);
  if (root.get() != m.mem.get())
    return fail("it is a view of '" + root->name + "', and tensor map " + m.name + " is over '" + m.mem->name + "'");
  // Box element (r, c) lands at dst[i + r * cols + c]: the view must be an offset of the matrix.
  if (auto moved = not_an_offset(dst_index, resolve, l)) {
    const auto k = const_int(cols);
    return fail("its element i + d must be the matrix's element after that of i by d, so that box rows land " +
                (k ? std::to_string(*k) : ir::print(m.cols)) + " apart; '" + n.mems[1]->name + "' places element " +
                ir::print(dst_index) + " + d at " + ir::print(*moved));
  }
  // The matrix's row and column of the box's first element, as the instruction's 32-bit coordinates.
  ExprPtr flat = make<Cast>(ScalarType::I64, exact_width(first), l);
  ExprPtr c64 = cols->type == ScalarType::I64 ? cols : make<Cast>(ScalarType::I64, cols, l);
  out.row = fold(make<Cast>(ScalarType::I32, bin(BinOp::Div, flat, c64, l), l));
  out.col = fold(make<Cast>(ScalarType::I32, bin(BinOp::Mod, flat, c64, l), l));
  out.root = root;
  return out;
}

const TensorMapNode& map_of(const Intrinsic& n, const KernelNode& k) {
  if (n.imms.empty() || n.imms[0] < 0 || n.imms[0] >= static_cast<std::int64_t>(k.tensor_maps.size()))
    throw InternalError("lower: " + user_name(n.op) + " without a tensor map");
  return k.tensor_maps[static_cast<std::size_t>(n.imms[0])];
}

void cluster_operands(const Intrinsic& n, const std::vector<ExprPtr>& args, const ir::RangeEnv& env,
                      std::int64_t cluster, std::vector<Diagnostic>& problems) {
  const bool mask = n.op == IntrinsicOp::TmaLoadMulticast2D;
  if (!mask && n.op != IntrinsicOp::MbarrierArriveCluster) return;
  const ExprPtr& e = args[mask ? 4 : 1];
  const std::int64_t lo = mask ? 1 : 0, hi = mask ? (std::int64_t{1} << cluster) - 1 : cluster - 1;
  auto r = exact_value_range(e, env);
  if (r && r->lo >= lo && r->hi <= hi) return;
  problems.push_back({"V1009",
                      "cannot prove " + std::string(mask ? "the multicast mask " : "the block rank ") + ir::print(e) +
                          " within " + std::to_string(lo) + ".." + std::to_string(hi) +
                          " at this specialization (clusters of " + std::to_string(cluster) + " blocks); use " +
                          (mask ? "a mask of ranks below the cluster size, such as `(1 << n) - 1`"
                                : "cluster_rank() or a value % the cluster size"),
                      n.loc,
                      {}});
}

namespace {
/// A named barrier whose group runs `replicas` times at once: V1007.
Diagnostic shared_named_barrier(const Intrinsic& n, std::int64_t replicas) {
  return {"V1007",
          "named_barrier(" + std::to_string(n.imms[0]) + ", " + std::to_string(n.imms[1]) + ") runs in " +
              std::to_string(replicas) + " groups of " + std::to_string(n.imms[1]) +
              " threads at once, which would all share barrier " + std::to_string(n.imms[0]) +
              "; let Vantage place the barriers, or give each group its own split branch and id",
          n.loc,
          {}};
}
/// An assertion with its site, a site of its own, which its failure records as a failed access does.
StmtPtr assertion(const Intrinsic& n, std::vector<ExprPtr> args, std::vector<CheckSite>& checks) {
  checks.push_back({n.loc, n.text, false, true});
  return make<Intrinsic>(n.op, std::move(args), n.mems, n.outputs,
                         std::vector<std::int64_t>{static_cast<std::int64_t>(checks.size()) - 1}, n.text, n.loc);
}
}  // namespace

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
  // Memory operand `mem`'s view: an index of it to its root and the root's index.
  auto in = [&](std::size_t mem) { return [&, mem](const ExprPtr& i) { return resolve(n.mems[mem], {i}, l); }; };
  // Thread-local fragments: the root array, which must start at the view's first element.
  auto fragment = [&](std::size_t mem) {
    auto [root, flat] = resolve(n.mems[mem], {lit(0, l)}, l);
    if (!is_zero(flat))
      c_.out.problems.push_back(
          {"V1003", "the fragment '" + n.mems[mem]->name + "' must be a whole thread-local array", l, {}});
    mems[mem] = root;
  };
  cluster_operands(n, args, prover_.env(), c_.out.kernel.cluster, c_.out.problems);
  switch (n.op) {
    case IntrinsicOp::SyncThreads:
      out.push_back(make<ir::Barrier>(vantage::block(1), BarrierKind::Block, T(), 0, ir::kNoAsyncWait, l));
      return;
    case IntrinsicOp::SyncWarp:
      out.push_back(make<ir::Barrier>(warp(), BarrierKind::Warp, 32, 0, ir::kNoAsyncWait, l));
      return;
    case IntrinsicOp::ClusterSync:
      out.push_back(make<ir::Barrier>(vantage::block(1), BarrierKind::Cluster, T(), 0, ir::kNoAsyncWait, l));
      return;
    case IntrinsicOp::NamedBarrier: {
      const Pos& p = frames_.back();
      if (p.replicas > 1) c_.out.problems.push_back(shared_named_barrier(n, p.replicas));
      out.push_back(make<ir::Barrier>(p.code, BarrierKind::NamedFixed, n.imms[1], n.imms[0], ir::kNoAsyncWait, l));
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
    case IntrinsicOp::TmaLoad2D:
    case IntrinsicOp::TmaLoadMulticast2D: {
      // args: column, row, the barrier's slot, the destination's first element (both resolved); a
      // multicast's mask, its blocks those of the cluster. The box is whole rows from that element.
      contiguous_tile(n, 0, args[3], user_name(n.op) + "'s box", in(0), c_.out.problems);
      at(0, 3);
      at(1, 2);
      slot_in_bounds(mems[1], args[2], n.mems[1]->name, l);
      const TensorMapNode& m = map_of(n, c_.out.kernel);
      swizzled_tile(mems[0], args[3], m.box_rows * m.box_cols, 0, "TMA box of '" + m.name + "'", n.mems[0]->name, l);
      break;
    }
    case IntrinsicOp::TmaStore2D: {
      // args: the source's and the destination's indices; after: column, row, the source's first
      // element (resolved). The box's place is where the destination's index lands in the matrix.
      const TensorMapNode& m = map_of(n, c_.out.kernel);
      at(0, 0);
      swizzled_tile(mems[0], args[0], m.box_rows * m.box_cols, 0, "TMA box of '" + m.name + "'", n.mems[0]->name, l);
      BoxPlace p = box_place(
          n, m, lx(m.cols), args[1], [&](const ExprPtr& i) { return resolve(n.mems[1], {i}, l); },
          [&](const ExprPtr& e) { return exact_width(e); });
      if (p.problem) c_.out.problems.push_back(std::move(*p.problem));
      args = {p.col, p.row, args[0]};
      mems[1] = p.root ? p.root : mems[1];
      break;
    }
    case IntrinsicOp::MbarrierInit:
    case IntrinsicOp::MbarrierWait:
      at(0, 1);
      slot_in_bounds(mems[0], args[1], n.mems[0]->name, l);
      break;
    case IntrinsicOp::MbarrierArrive:
    case IntrinsicOp::MbarrierExpectTx:
    case IntrinsicOp::MbarrierArriveCluster:
      at(0, 0);
      slot_in_bounds(mems[0], args[0], n.mems[0]->name, l);
      break;
    case IntrinsicOp::Wgmma: {
      fragment(0);
      contiguous_tile(n, 1, args[0], "wgmma's A tile", in(1), c_.out.problems);
      contiguous_tile(n, 2, args[1], "wgmma's B tile", in(2), c_.out.problems);
      at(1, 0);
      at(2, 1);
      const auto [row, last] = wgmma_row(n.mems[1]->elem);
      swizzled_tile(mems[1], args[0], 64 * row, last, "wgmma's A tile (64 rows)", n.mems[1]->name, l);
      swizzled_tile(mems[2], args[1], n.imms[0] * row, last, "wgmma's B tile (" + std::to_string(n.imms[0]) + " rows)",
                    n.mems[2]->name, l);
      break;
    }
    case IntrinsicOp::Assert: out.push_back(assertion(n, std::move(args), c_.out.checks)); return;
    case IntrinsicOp::SetMaxNreg:
    case IntrinsicOp::FenceProxyAsync:
    case IntrinsicOp::Nanosleep:
    case IntrinsicOp::Print:
    case IntrinsicOp::TmaStoreWait: break;
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
  out.push_back(make<Intrinsic>(n.op, std::move(args), std::move(mems), n.outputs, n.imms, n.text, l));
}

}  // namespace vantage::lower::detail
