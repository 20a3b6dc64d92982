// Vantage perspective checker: the threads each intrinsic needs (its row of the intrinsic table) and its operands,
// unsafe blocks, returns. See checker.h.
#include "jit/check/checker.h"
#include "jit/ir/print_format.h"

namespace vantage::check::detail {

auto IntrinsicChecker::need_cluster(const std::string& what, SourceLoc loc) -> void {
  if (c_.know.cluster < 2)
    c_.error("V0917", loc, what + " needs a kernel of clusters: declare KernelBuilder::cluster(n), n from 2 to 8");
}

auto IntrinsicChecker::need_exact(Perspective p, const std::string& what, SourceLoc loc) -> void {
  Truth t = c_.same_persp(p, c_.code());
  if (t == Truth::No) {
    auto& d = c_.error("V0501", loc, what + " needs exactly " + p.str() + "; the code here is at " + c_.code().str());
    c_.note_code(d);
  } else {
    c_.rule(t, Obligation::Kind::Equal, c_.units(p), c_.units(c_.code()), "V0501", loc,
            [&] { return std::string(what + " needs the code at exactly " + p.str()); });
  }
}

auto IntrinsicChecker::fragment(const Intrinsic& n, std::size_t i, ScalarType t, std::int64_t count, const char* role)
    -> void {
  if (i >= n.mems.size() || !n.mems[i]) return operand_error(n, std::string("missing ") + role + " operand");
  const MemPtr& m = n.mems[i];
  checked(mems_checked_, i);
  MemInfo* info = c_.use_mem(m, n.loc);
  if (m->space != MemSpace::Local || m->elem != t || (info && info->local_count != count)) {
    operand_error(n, std::string(role) + " must be a thread-local " + type_name(t) + "[" + std::to_string(count) +
                         "] array; " + q(m->name) + " is " + space_name(m->space) + " " + type_name(m->elem) +
                         (info && info->local_count ? "[" + std::to_string(info->local_count) + "]" : ""));
    return;
  }
  if (info && !c_.one_thread(info->persp))
    operand_error(n, std::string(role) + " " + q(m->name) + " must live at thread(1), not " + info->persp.str());
}

auto IntrinsicChecker::operand_mem(const Intrinsic& n, std::size_t i, MemSpace space, std::optional<ScalarType> elem,
                                   const char* role) -> MemInfo* {
  if (i >= n.mems.size() || !n.mems[i]) {
    operand_error(n, std::string("missing ") + role + " operand");
    return nullptr;
  }
  const MemPtr& m = n.mems[i];
  checked(mems_checked_, i);
  MemInfo* info = c_.use_mem(m, n.loc);
  if (m->space != space || (elem && m->elem != *elem))
    operand_error(n, std::string(role) + " must be " + space_name(space) + " memory" +
                         (elem ? std::string(" of ") + type_name(*elem) : "") + "; " + q(m->name) + " is " +
                         space_name(m->space) + " " + type_name(m->elem));
  return info;
}

auto IntrinsicChecker::operand_value(const Intrinsic& n, std::size_t i, std::optional<ScalarType> t, const char* role)
    -> Perspective {
  if (i >= n.args.size()) {
    operand_error(n, std::string("missing ") + role);
    return kTop;
  }
  checked(args_checked_, i);
  Perspective v = x_.check_expr(n.args[i], n.loc);
  if (n.args[i] && t && n.args[i]->type != *t)
    operand_error(n, std::string(role) + " must be " + type_name(*t) + ", not " + type_name(n.args[i]->type));
  return v;
}

auto IntrinsicChecker::need_async(const Intrinsic& n, MemInfo* dst) -> void {
  if (c_.async_depth == 0) c_.error("V0502", n.loc, user_name(n.op) + " must be inside an async scope");
  if (dst && !dst->async)
    c_.error(
        "V0504", n.loc,
        user_name(n.op) + " writes " + q(dst->node->name) + ", which is not an async name (open it with async first)");
  if (dst && !c_.one_thread(dst->persp)) {
    auto& d = c_.error("V0301", n.loc,
                       user_name(n.op) + " writes " + q(dst->node->name) + ", which lives at " + dst->persp.str() +
                           "; narrow it to one thread first");
    c_.note(d, dst->narrowed_at, "its perspective comes from here");
  }
}

auto IntrinsicChecker::check(const Intrinsic& n) -> void {
  const std::string& op = user_name(n.op);
  auto imm = [&](std::size_t i) -> std::int64_t { return i < n.imms.size() ? n.imms[i] : 0; };
  auto output = [&](Perspective p) {
    for (const auto& o : n.outputs) c_.declare(o, p);
  };
  args_checked_.assign(n.args.size(), false);
  mems_checked_.assign(n.mems.size(), false);
  operand_failed_ = false;
  // The threads it must run with: its row of the intrinsic table (named_barrier's count is an
  // operand, checked with the others).
  switch (info(n.op).needs) {
    case Needs::Any:
    case Needs::Declared: break;
    case Needs::Thread: need_exact(thread(1), op, n.loc); break;
    case Needs::Warp: need_exact(warp(), op, n.loc); break;
    case Needs::Warpgroup: need_exact(warpgroup(), op, n.loc); break;
    case Needs::Block: need_exact(block(1), op, n.loc); break;
  }
  // Its operands and what it defines.
  switch (n.op) {
    case IntrinsicOp::SyncThreads:
    case IntrinsicOp::SyncWarp: break;
    case IntrinsicOp::NamedBarrier: {
      std::int64_t id = imm(0), threads = imm(1);
      int ids = target::named_barriers();
      if (id < 1 || id >= ids)
        operand_error(
            n, "barrier id must be 1.." + std::to_string(ids - 1) + " (0 is sync_threads'), not " + std::to_string(id));
      if (threads < 32 || threads % 32 != 0) {
        operand_error(n, "thread count must be a positive multiple of 32, not " + std::to_string(threads));
      } else {
        need_exact(thread(threads), op, n.loc);
      }
      break;
    }
    case IntrinsicOp::ShflXor:
    case IntrinsicOp::ShflDown:
    case IntrinsicOp::ShflUp:
    case IntrinsicOp::ShflIdx: {
      operand_value(n, 0, std::nullopt, "value");
      if (!n.args.empty() && n.args[0] && (n.args[0]->type == ScalarType::Bool || is_fp8(n.args[0]->type)))
        operand_error(n, std::string("cannot shuffle a ") + type_name(n.args[0]->type) + fp8_hint(n.args[0]->type));
      Perspective lane = operand_value(n, 1, std::nullopt, "lane operand");
      if (n.args.size() > 1 && n.args[1] && !is_index_integer(n.args[1]->type))
        operand_error(n, not_index_integer("lane operand", n.args[1]->type));
      // Every lane reading the same lane is a broadcast: the result is one value of the warp, so it
      // may bound a loop or guard a sync_warp there.
      bool broadcast = n.op == IntrinsicOp::ShflIdx && c_.narrower_eq(warp(), lane) == Truth::Yes;
      output(broadcast ? warp() : thread(1));
      break;
    }
    case IntrinsicOp::VoteAll:
    case IntrinsicOp::VoteAny:
    case IntrinsicOp::Ballot:
      operand_value(n, 0, ScalarType::Bool, "predicate");
      output(warp());
      break;
    case IntrinsicOp::Atomic: {
      MemInfo* info = nullptr;
      if (!n.mems.empty() && n.mems[0]) {
        checked(mems_checked_, 0);
        info = c_.use_mem(n.mems[0], n.loc);
        const MemNode& m = *n.mems[0];
        if (m.space == MemSpace::Local) operand_error(n, "atomics need global or shared memory");
        if (m.is_const)
          c_.error("V0310", n.loc,
                   atomic_kind(imm(0)) == AtomicKind::Load
                       ? "no atomic load of " + q(m.name) + " is needed: it is const, so nothing writes it (read it)"
                       : "cannot update " + q(m.name) + " atomically: it is const");
        if (info && info->async) c_.error("V0315", n.loc, "async memory " + q(m.name) + " cannot be used by atomics");
        operand_value(n, 0, std::nullopt, "index");
        if (!n.args.empty() && n.args[0] && !is_index_integer(n.args[0]->type))
          operand_error(n, not_index_integer("index", n.args[0]->type));
        operand_value(n, 1, m.elem, "value");
        auto op = atomic_kind(imm(0));
        if (op == AtomicKind::Cas) operand_value(n, 2, m.elem, "compare");
        const MemoryOrder order = atomic_order(imm(0));
        if (atomic_scope(imm(0)) == AtomicScope::System && is_16bit_float(m.elem))
          c_.error("V0505", n.loc,
                   std::string("a system-scope atomic is not supported on ") + type_name(m.elem) +
                       " by any target (CUDA has none: use the device scope, or f32)");
        if (order != MemoryOrder::Relaxed && is_16bit_float(m.elem))
          c_.error("V0505", n.loc,
                   std::string("an atomic with the ") + target::memory_order_name(order) +
                       " ordering is not supported on " + type_name(m.elem) +
                       " by any target (CUDA's are relaxed only: order it by an atomic of 32 bits, or use f32)");
        if (!target::order_fits(op, order))
          c_.error("V0506", n.loc,
                   std::string("an atomic ") + (op == AtomicKind::Load ? "load" : "store") + " cannot be " +
                       target::memory_order_name(order) +
                       " (a load is relaxed or acquire, a store relaxed or release)");
        if (op == AtomicKind::Store && !n.outputs.empty())
          operand_error(n, "an atomic store yields no value (Scope::atomic_store)");
        if (target::atomic_support(op, m.elem) == target::AtomicSupport::None)
          c_.error("V0505", n.loc,
                   std::string("atomic ") + target::atomic_name(op) + " is not supported on " + type_name(m.elem) +
                       " by any target (it is for " + target::atomic_types(op) + ")");
      } else {
        operand_error(n, "missing memory operand");
      }
      output(thread(1));
      break;
    }
    case IntrinsicOp::MmaSync: {
      auto kind = static_cast<MmaShape>(imm(0));
      ScalarType in = kind == MmaShape::TF32_M16N8K8   ? ScalarType::F32
                      : kind == MmaShape::F16_M16N8K16 ? ScalarType::F16
                      : kind == MmaShape::S8_M16N8K32  ? ScalarType::I8
                                                       : ScalarType::BF16;
      const ScalarType acc = kind == MmaShape::S8_M16N8K32 ? ScalarType::I32 : ScalarType::F32;
      std::int64_t a_n = kind == MmaShape::TF32_M16N8K8 ? 4 : kind == MmaShape::S8_M16N8K32 ? 16 : 8;
      std::int64_t b_n = kind == MmaShape::TF32_M16N8K8 ? 2 : kind == MmaShape::S8_M16N8K32 ? 8 : 4;
      fragment(n, 0, acc, 4, "d");
      fragment(n, 1, in, a_n, "a");
      fragment(n, 2, in, b_n, "b");
      fragment(n, 3, acc, 4, "c");
      break;
    }
    case IntrinsicOp::Ldmatrix: {
      std::int64_t count = imm(0);
      if (count != 1 && count != 2 && count != 4)
        operand_error(n, "count must be 1, 2 or 4, not " + std::to_string(count));
      else
        fragment(n, 0, ScalarType::U32, count, "destination");
      operand_mem(n, 1, MemSpace::Shared, std::nullopt, "source");
      operand_value(n, 0, std::nullopt, "index");
      break;
    }
    case IntrinsicOp::Wgmma: {
      std::int64_t width = imm(0);
      ScalarType ta = n.mems.size() > 1 && n.mems[1] ? n.mems[1]->elem : ScalarType::F16;
      ScalarType tb = n.mems.size() > 2 && n.mems[2] ? n.mems[2]->elem : ScalarType::F16;
      // 16-bit floats accumulate in f32, bytes in s32 (wrapping); A's and B's bytes may differ in sign.
      auto byte = [](ScalarType t) { return t == ScalarType::I8 || t == ScalarType::U8; };
      const bool integer = byte(ta);
      if (width < 8 || width > 256 || width % 8 != 0)
        operand_error(n, "N must be a multiple of 8 in 8..256, not " + std::to_string(width));
      else
        fragment(n, 0, integer ? ScalarType::I32 : ScalarType::F32, width / 2, "accumulator");
      MemInfo* a = operand_mem(n, 1, MemSpace::Shared, std::nullopt, "A tile");
      MemInfo* b = operand_mem(n, 2, MemSpace::Shared, std::nullopt, "B tile");
      if (a && ta != ScalarType::F16 && ta != ScalarType::BF16 && !integer)
        operand_error(n, "the A tile holds f16, bf16, i8 or u8, not " + std::string(type_name(ta)));
      else if (a && b && ta != tb && !(integer && byte(tb)))
        operand_error(n, "the A and B tiles hold one type (or bytes of either sign); A holds " +
                             std::string(type_name(ta)) + " and B " + type_name(tb));
      operand_value(n, 0, ScalarType::I32, "A offset");
      operand_value(n, 1, ScalarType::I32, "B offset");
      break;
    }
    case IntrinsicOp::WgmmaFence:
    case IntrinsicOp::WgmmaCommit:
    case IntrinsicOp::WgmmaWait: break;
    case IntrinsicOp::CpAsync: {
      std::int64_t bytes = imm(0);
      if (bytes != 4 && bytes != 8 && bytes != 16)
        operand_error(n, "a copy moves 4, 8 or 16 bytes, not " + std::to_string(bytes));
      MemInfo* dst = operand_mem(n, 0, MemSpace::Shared, std::nullopt, "destination");
      need_async(n, dst);
      MemInfo* src = operand_mem(n, 1, MemSpace::Global, std::nullopt, "source");
      if (src && src->async) c_.error("V0315", n.loc, "the source of cp_async cannot be an async name");
      operand_value(n, 0, std::nullopt, "destination index");
      operand_value(n, 1, std::nullopt, "source index");
      break;
    }
    case IntrinsicOp::CpAsyncWait:
      if (imm(0) < 0) operand_error(n, "the groups left in flight are 0 or more, not " + std::to_string(imm(0)));
      break;
    case IntrinsicOp::CpAsyncCommit:
    case IntrinsicOp::FenceProxyAsync: break;
    case IntrinsicOp::TmaLoad2D:
    case IntrinsicOp::TmaLoadMulticast2D: {
      // One thread writes the whole box, completing on an mbarrier: no async scope or narrowing
      // (jit/sync refuses a use before a wait on that mbarrier, V1010).
      MemInfo* dst = operand_mem(n, 0, MemSpace::Shared, std::nullopt, "destination");
      if (dst && dst->async) c_.error("V0315", n.loc, op + " writes shared memory by its own name, not an async name");
      if (n.op == IntrinsicOp::TmaLoadMulticast2D) {
        operand_value(n, 4, ScalarType::I32, "multicast mask");
        need_cluster(op, n.loc);
      }
      operand_mem(n, 1, MemSpace::Shared, ScalarType::U64, "mbarrier");
      operand_value(n, 3, ScalarType::I32, "destination index");
      operand_value(n, 0, ScalarType::I32, "column");
      operand_value(n, 1, ScalarType::I32, "row");
      operand_value(n, 2, ScalarType::I32, "mbarrier slot");
      std::int64_t index = imm(0);
      if (!c_.maps || index < 0 || index >= static_cast<std::int64_t>(c_.maps->size())) {
        operand_error(n, "the tensor map is not one of this kernel's");
      } else if (dst && n.mems[0] && (*c_.maps)[index].mem && n.mems[0]->elem != (*c_.maps)[index].mem->elem) {
        operand_error(n, "tensor map " + q((*c_.maps)[index].name) + " holds " +
                             type_name((*c_.maps)[index].mem->elem) + ", and the destination " +
                             type_name(n.mems[0]->elem));
      }
      break;
    }
    case IntrinsicOp::TmaStore2D: {
      // One thread writes the whole box into `dst`, which must be its own as for a store (V0301);
      // that the box lies where `dst` says is lowering's (V1012), the source's wait the user's.
      MemInfo* src = operand_mem(n, 0, MemSpace::Shared, std::nullopt, "source");
      if (src && src->async)
        c_.error("V0315", n.loc, "tma_store reads shared memory by its own name, not an async name");
      MemInfo* dst = operand_mem(n, 1, MemSpace::Global, std::nullopt, "destination");
      operand_value(n, 0, ScalarType::I32, "source index");
      operand_value(n, 1, ScalarType::I32, "destination index");
      if (dst && n.mems[1]->is_const) {
        auto& d = c_.error("V0310", n.loc, "tma_store cannot write to " + q(n.mems[1]->name) + ": it is const");
        c_.note(d, n.mems[1]->loc, "declared here");
      } else if (dst && !c_.one_thread(dst->persp)) {
        auto& d = c_.error("V0301", n.loc,
                           "tma_store writes " + q(n.mems[1]->name) + ", which lives at " + dst->persp.str() +
                               "; narrow it to the storing thread first (lib::by_one_thread)");
        c_.note(d, dst->narrowed_at, "its perspective " + dst->persp.str() + " comes from here");
      }
      std::int64_t index = imm(0);
      if (!c_.maps || index < 0 || index >= static_cast<std::int64_t>(c_.maps->size())) {
        operand_error(n, "the tensor map is not one of this kernel's");
      } else if (const auto& map = (*c_.maps)[index]; map.mem) {
        for (std::size_t i = 0; i < 2; ++i)
          if (n.mems.size() > i && n.mems[i] && n.mems[i]->elem != map.mem->elem)
            operand_error(n, "tensor map " + q(map.name) + " holds " + type_name(map.mem->elem) + ", and the " +
                                 (i == 0 ? "source " : "destination ") + type_name(n.mems[i]->elem));
      }
      break;
    }
    case IntrinsicOp::Nanosleep:
      operand_value(n, 0, ScalarType::I32, "duration");
      if (auto ns = n.args.empty() ? std::nullopt : const_int(n.args[0]); ns && (*ns < 0 || *ns > kMaxNanosleepNs))
        operand_error(n, "a thread sleeps 0 to " + std::to_string(kMaxNanosleepNs) + " ns, not " + std::to_string(*ns));
      break;
    case IntrinsicOp::Assert:
      operand_value(n, 0, ScalarType::Bool, "condition");
      if (n.args.size() != 1) operand_error(n, "takes one condition");
      break;
    case IntrinsicOp::Print: {
      for (std::size_t i = 0; i < n.args.size(); ++i) operand_value(n, i, std::nullopt, "value");  // as any expression
      std::string why;
      auto format = parse_print_format(n.text, &why);
      if (!format) {
        operand_error(n, "the format " + q(n.text) + " cannot be read: " + why);
        break;
      }
      if (format->specs.size() != n.args.size()) {
        operand_error(n, "the format " + q(n.text) + " has " + std::to_string(format->specs.size()) + " place" +
                             (format->specs.size() == 1 ? "" : "s") + " for values, and " +
                             std::to_string(n.args.size()) + (n.args.size() == 1 ? " value is" : " values are") +
                             " given");
        break;
      }
      for (std::size_t i = 0; i < n.args.size(); ++i)
        if (n.args[i])
          if (auto problem = print_spec_problem(format->specs[i], n.args[i]->type, i)) operand_error(n, *problem);
      break;
    }
    case IntrinsicOp::TmaStoreWait:
      if (imm(0) < 0 || imm(0) > 63) operand_error(n, "pending stores are 0..63, not " + std::to_string(imm(0)));
      break;
    case IntrinsicOp::MbarrierInit:
      operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
      operand_value(n, 0, ScalarType::I32, "count");
      operand_value(n, 1, ScalarType::I32, "mbarrier slot");
      break;
    case IntrinsicOp::MbarrierArrive:
      operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
      operand_value(n, 0, ScalarType::I32, "mbarrier slot");
      break;
    case IntrinsicOp::MbarrierArriveCluster:
      operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
      operand_value(n, 0, ScalarType::I32, "mbarrier slot");
      operand_value(n, 1, ScalarType::I32, "block rank");
      need_cluster(op, n.loc);
      break;
    case IntrinsicOp::ClusterSync:
      need_cluster(op, n.loc);
      if (!c_.block_divergence.empty()) {
        auto& d = c_.error("V0213", n.loc,
                           "cluster_sync under a branch or loop that may differ between the blocks of a cluster: "
                           "every block must reach it (declare what it depends on at grid(1), the same for all "
                           "blocks, or move the cluster_sync out)");
        c_.note(d, c_.block_divergence.back(), "the branch or loop that may differ between blocks");
      }
      break;
    case IntrinsicOp::MbarrierExpectTx: {
      operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
      operand_value(n, 0, ScalarType::I32, "mbarrier slot");
      std::int64_t bytes = imm(0);
      if (bytes < 1 || bytes >= (1 << 20))
        operand_error(n, "a phase expects 1 to 2^20 - 1 bytes, not " + std::to_string(bytes));
      break;
    }
    case IntrinsicOp::MbarrierWait:
      operand_mem(n, 0, MemSpace::Shared, ScalarType::U64, "mbarrier");
      operand_value(n, 0, ScalarType::I32, "phase");
      operand_value(n, 1, ScalarType::I32, "mbarrier slot");
      break;
    case IntrinsicOp::SetMaxNreg: {
      std::int64_t count = imm(0);
      if (count < 24 || count > 256 || count % 8 != 0)
        operand_error(n, "a register limit is a multiple of 8 in 24..256, not " + std::to_string(count));
      if (c_.know.min_blocks > 1)
        c_.error("V0918", n.loc,
                 "setmaxnreg needs one block on each multiprocessor (its launch bounds say so), and the kernel "
                 "asks for " +
                     std::to_string(c_.know.min_blocks) + " (min_blocks_per_sm)");
      break;
    }
  }
  refuse_unchecked(n);
}

auto IntrinsicChecker::refuse_unchecked(const Intrinsic& n) -> void {
  if (operand_failed_) return;  // a rule stopped at a wrong operand before reaching the others
  auto refuse = [&](const char* kind, std::size_t i) {
    operand_error(n, std::string("its ") + kind + " operand " + std::to_string(i) +
                         " is checked by no rule of the checker, so the kernel is refused (each intrinsic's rule "
                         "must check every operand it takes; a bug in Vantage if the builder made it)");
  };
  for (std::size_t i = 0; i < n.args.size(); ++i)
    if (n.args[i] && !args_checked_[i]) return refuse("value", i);
  for (std::size_t i = 0; i < n.mems.size(); ++i)
    if (n.mems[i] && !mems_checked_[i]) return refuse("memory", i);
}

}  // namespace vantage::check::detail
