// The interpreter's intrinsics: lane exchanges and votes, atomics, cp.async, ldmatrix and mma (the
// Hopper instructions: hopper.cpp). See machine.h.
#include "jit/interp/machine.h"
#include "jit/ir/print_format.h"
#include "support/strings.h"

namespace vantage::interp::detail {

namespace {
/// A print's line, written as the CPU backend's and the GPU's printf write it (jit/ir/print_format.h).
void print(const Intrinsic& n, const std::function<V(const ExprPtr&)>& eval) {
  std::string why;
  auto format = parse_print_format(n.text, &why);
  if (!format) throw InternalError("interp: a print whose format the checker did not accept: " + why);
  std::vector<PrintValue> values;
  for (const auto& a : n.args) {
    const V v = eval(a);
    values.push_back({a->type, v.i, v.f});
  }
  write_print_line(print_line(*format, values));
}
/// A false assertion, reported at once, as every check of the interpreter is.
void assertion(const Intrinsic& n, const V& holds, const std::string& kernel, std::int64_t block, std::int64_t thread) {
  if (n.args.empty() || holds.i != 0) return;
  throw ExecutionError(
      "assert",
      strings::failed_assertion("on the interpreter, kernel '" + kernel + "'", static_cast<std::uint64_t>(block),
                                static_cast<std::uint64_t>(thread), n.text, n.loc.known() ? n.loc.str() : ""),
      {n.loc});
}
}  // namespace

void Machine::runs_here(const Intrinsic& n) {
  if (!runs_on(n.op, kInterpreter))
    throw UnsupportedOnDevice(std::string(user_name(n.op)) + " cannot run on the interpreter", {n.loc});
}

void Machine::intrinsic_one(const Intrinsic& n, Thread& t) {
  runs_here(n);
  switch (n.op) {
    case IntrinsicOp::Atomic: {
      Ref r = names_.mem(t, n.mems[0].get(), n.loc);
      std::int64_t i = exact_index(n.args[0]->type, eval(n.args[0], t).i);
      const auto kind = atomic_kind(n.imms[0]);
      if (n.imms.size() < 2)  // a second immediate: its site, checked against a bound
        checks_.proven(t, r, i, kind != AtomicKind::Load, n.loc);
      V x = eval(n.args[1], t);
      const std::uint8_t how = atomic_scope(n.imms[0]) == AtomicScope::Block ? kBlockAtomic : kAtomic;
      ScalarType e = n.mems[0]->elem;
      if (kind == AtomicKind::Load) {  // one read, ordered as docs/semantics.md says (the interpreter is sequential)
        V v = read(t, r, i, n.loc, how);
        measure_.request(t, &n, 0, r, i, type_bytes(e), false, n.loc);
        if (!n.outputs.empty()) names_.var(t, n.outputs[0].get()) = v;
        return;
      }
      // A store, or an exchange whose old value nobody takes, only writes (the element may be
      // uninitialised).
      const bool writes_only = kind == AtomicKind::Store || (kind == AtomicKind::Exch && n.outputs.empty());
      V old = writes_only ? V{} : read(t, r, i, n.loc, how);
      const V nv = atomic_value(kind, e, old, x, kind == AtomicKind::Cas ? eval(n.args[2], t) : V{});
      write(t, r, i, nv, n.loc, how);
      measure_.request(t, &n, 0, r, i, type_bytes(e), true, n.loc);
      if (!n.outputs.empty()) names_.var(t, n.outputs[0].get()) = old;
      return;
    }
    case IntrinsicOp::CpAsync: {
      // The source is read now; the destination is written when this thread waits for the copy.
      Ref d = names_.mem(t, n.mems[0].get(), n.loc), s = names_.mem(t, n.mems[1].get(), n.loc);
      std::int64_t di = exact_index(n.args[0]->type, eval(n.args[0], t).i);
      std::int64_t si = exact_index(n.args[1]->type, eval(n.args[1], t).i);
      std::int64_t count = n.imms[0] / type_bytes(n.mems[0]->elem);
      // As on the GPU, a copy of more than one element needs both addresses aligned to its size.
      if (count > 1 && ((d.offset + di) % count != 0 || (s.offset + si) % count != 0))
        throw ExecutionError("memcheck",
                             checks_.describe(t) + " makes a misaligned " + std::to_string(n.imms[0]) +
                                 "-byte cp.async ('" + n.mems[1]->name + "'[" + std::to_string(si) + "] to '" +
                                 n.mems[0]->name + "'[" + std::to_string(di) + "]) at " + where(n.loc),
                             {n.loc});
      AsyncCopy c{d, di, {}, n.loc, -1};
      for (std::int64_t k = 0; k < count; ++k) c.values.push_back(read(t, s, si + k, n.loc));
      for (std::int64_t k = 0; k < count; ++k) {
        std::int64_t i = checks_.bounds(t, d, di + k, n.loc, "writes");
        checks_.in_flight(t, *d.region, i, n.loc);
      }
      t.async.push_back(std::move(c));
      measure_.request(t, &n, 0, s, si, static_cast<int>(n.imms[0]), false, n.loc);
      measure_.request(t, &n, 1, d, di, static_cast<int>(n.imms[0]), true, n.loc);
      return;
    }
    case IntrinsicOp::CpAsyncCommit:
      for (auto& c : t.async)
        if (c.group < 0) c.group = t.groups;
      ++t.groups;
      return;
    case IntrinsicOp::CpAsyncWait: {
      // cp.async.wait_group N: every committed group but the newest N is complete.
      std::int64_t keep = n.imms.empty() ? 0 : n.imms[0];
      complete_async(t, t.groups - keep);
      return;
    }
    case IntrinsicOp::FenceProxyAsync:
      return;  // one memory, one proxy
    // Its threads take turns of their own: of a sleep, only the duration's reads count.
    case IntrinsicOp::Nanosleep:
      if (!n.args.empty()) (void)eval(n.args[0], t);
      return;
    case IntrinsicOp::Print: return print(n, [&](const ExprPtr& a) { return eval(a, t); });
    case IntrinsicOp::Assert:
      return assertion(n, n.args.empty() ? V{} : eval(n.args[0], t), k_.kernel.name, checks_.block_of(t), t.tid);
    default:
      if (Hopper::runs(n.op)) return hopper(n, t);
      break;
  }
  throw UnsupportedOnDevice(std::string(user_name(n.op)) + " cannot run on the interpreter", {n.loc});
}

Ref peer(const std::vector<SharedArrays>& shared, const Checks& checks, std::int64_t block, const Thread& t,
         const Ref& ref, std::int64_t rank, const Intrinsic& n) {
  if (rank == t.rank) return ref;
  Region* there = shared[static_cast<std::size_t>(rank)].same_as(*ref.region);
  if (!there)
    throw ExecutionError("synccheck",
                         checks.describe(t) + " reaches shared '" + ref.region->name + "' of block " +
                             std::to_string(block + rank) + " by " + user_name(n.op) + " at " + where(n.loc) +
                             " before any thread of that block reached its allocation; a cluster_sync after the "
                             "blocks make (and initialise) what they share orders it",
                         {n.loc});
  return {there, ref.offset};
}

void in_cluster(const std::vector<SharedArrays>& shared, const Checks& checks, std::int64_t block, const Thread& t,
                const Intrinsic& n, std::vector<Ref>& mems, const std::vector<std::int64_t>& args,
                Hopper::Source& tma) {
  const auto C = static_cast<std::int64_t>(shared.size());
  // A TMA load writes its block; a multicast the same arrays of the blocks of the cluster it names.
  if (n.op == IntrinsicOp::TmaLoad2D) tma.blocks.push_back({t.rank, {mems[0], mems[1]}});
  if (n.op == IntrinsicOp::TmaLoadMulticast2D) {
    if (args[4] < 1 || args[4] >= (std::int64_t{1} << C))
      throw InternalError("interp: a multicast mask " + std::to_string(args[4]) + " past the cluster at " +
                          where(n.loc));
    for (std::int64_t r = 0; r < C; ++r)
      if ((args[4] >> r) & 1)
        tma.blocks.push_back(
            {r, {peer(shared, checks, block, t, mems[0], r, n), peer(shared, checks, block, t, mems[1], r, n)}});
  }
  if (n.op == IntrinsicOp::MbarrierArriveCluster) {
    if (args[1] < 0 || args[1] >= C)
      throw InternalError("interp: a block rank " + std::to_string(args[1]) + " past the cluster at " + where(n.loc));
    mems[0] = peer(shared, checks, block, t, mems[0], args[1], n);
  }
}

void Machine::hopper(const Intrinsic& n, Thread& t) {
  std::vector<Ref> mems;
  for (const auto& m : n.mems) mems.push_back(names_.mem(t, m.get(), n.loc));
  std::vector<std::int64_t> args;
  for (const auto& a : n.args) args.push_back(exact_index(a->type, eval(a, t).i));
  Hopper::Source tma;
  if (n.op == IntrinsicOp::TmaLoad2D || n.op == IntrinsicOp::TmaStore2D ||
      n.op == IntrinsicOp::TmaLoadMulticast2D) {  // the map of a pointer parameter
    const TensorMapNode& map = k_.kernel.tensor_maps.at(static_cast<std::size_t>(n.imms[0]));
    tma = {&map, names_.global(map.mem.get()), eval(map.rows, t).i, eval(map.cols, t).i, {}};
  }
  in_cluster(shared_, checks_, block_, t, n, mems, args, tma);
  hopper_.run(n, t, mems, args, tma);
}

void Machine::warp_op(const Intrinsic& n, const std::vector<Thread*>& ts) {
  runs_here(n);
  std::map<std::int64_t, std::vector<Thread*>> warps;
  for (auto* t : ts) warps[t->warp_key()].push_back(t);
  for (auto& [w, lanes] : warps) {
    const std::int64_t rank = lanes.front()->rank;
    std::int64_t first = lanes.front()->tid / 32 * 32, last = std::min(T_, first + 32);
    if (static_cast<std::int64_t>(lanes.size()) != last - first) {
      std::vector<bool> here(32, false);
      for (auto* t : lanes) here[static_cast<std::size_t>(t->tid - first)] = true;
      for (std::int64_t u = first; u < last; ++u)
        if (!here[static_cast<std::size_t>(u - first)])
          checks_.diverged(user_name(n.op), n.loc, threads_[static_cast<std::size_t>(rank * T_ + u)]);
    }
    std::sort(lanes.begin(), lanes.end(), [](Thread* a, Thread* b) { return a->tid < b->tid; });
    stats_.thread_statements += static_cast<std::int64_t>(lanes.size());
    if (n.op == IntrinsicOp::MmaSync) {
      mma(n, lanes);
      continue;
    }
    if (n.op == IntrinsicOp::Ldmatrix) {
      ldmatrix(n, lanes);
      continue;
    }
    std::vector<V> x, y;
    for (auto* t : lanes) x.push_back(eval(n.args[0], *t));
    if (n.args.size() > 1)
      for (auto* t : lanes) y.push_back(eval(n.args[1], *t));
    std::size_t size = lanes.size();
    std::uint32_t ballot = 0;
    for (std::size_t l = 0; l < size; ++l)
      if (x[l].i) ballot |= 1u << l;
    for (std::size_t l = 0; l < size; ++l) {
      V out;
      auto lane = [&](std::int64_t src) {
        return src >= 0 && src < static_cast<std::int64_t>(size) ? x[static_cast<std::size_t>(src)] : x[l];
      };
      auto li = static_cast<std::int64_t>(l);
      switch (n.op) {
        case IntrinsicOp::ShflXor: out = lane(li ^ (y[l].i & 31)); break;
        case IntrinsicOp::ShflDown: out = lane(li + y[l].i); break;
        case IntrinsicOp::ShflUp: out = lane(li - y[l].i); break;
        case IntrinsicOp::ShflIdx: out = lane(y[l].i & 31); break;
        case IntrinsicOp::VoteAll: out.i = ballot == (size == 32 ? 0xffffffffu : ((1u << size) - 1)); break;
        case IntrinsicOp::VoteAny: out.i = ballot != 0; break;
        case IntrinsicOp::Ballot: out.i = ballot; break;
        default: throw InternalError("interp: not a warp operation");
      }
      names_.var(*lanes[l], n.outputs[0].get()) = out;
    }
  }
}

void Machine::ldmatrix(const Intrinsic& n, const std::vector<Thread*>& lanes) {
  if (lanes.size() != 32) checks_.diverged("ldmatrix", n.loc, *lanes.front());
  const int count = static_cast<int>(n.imms[0]);
  const std::int64_t eb = type_bytes(n.mems[1]->elem);
  std::vector<std::array<unsigned char, 16>> rows(static_cast<std::size_t>(8 * count));
  for (int l = 0; l < 8 * count; ++l) {
    Thread& t = *lanes[static_cast<std::size_t>(l)];
    Ref src = names_.mem(t, n.mems[1].get(), n.loc);
    std::int64_t first = exact_index(n.args[0]->type, eval(n.args[0], t).i);
    if (((src.offset + first) * eb) % 16 != 0)
      throw ExecutionError("memcheck",
                           checks_.describe(t) + " gives ldmatrix a row address (" +
                               checks_.element(*src.region, src.offset + first) + ") that is not 16-byte aligned, at " +
                               where(n.loc),
                           {n.loc});
    for (std::int64_t k = 0; k < 16 / eb; ++k) read(t, src, first + k, n.loc);  // the checks
    std::memcpy(rows[static_cast<std::size_t>(l)].data(), src.region->data + (src.offset + first) * eb, 16);
  }
  for (int l = 0; l < 32; ++l) {
    Thread& t = *lanes[static_cast<std::size_t>(l)];
    Ref dst = names_.mem(t, n.mems[0].get(), n.loc);
    for (int m = 0; m < count; ++m) {
      std::uint32_t word;
      std::memcpy(&word, rows[static_cast<std::size_t>(8 * m + l / 4)].data() + 4 * (l % 4), 4);
      V v;
      v.i = word;
      write(t, dst, m, v, n.loc);
    }
  }
}

void Machine::mma(const Intrinsic& n, const std::vector<Thread*>& lanes) {
  if (lanes.size() != 32) checks_.diverged("mma_sync", n.loc, *lanes.front());
  auto shape = static_cast<MmaShape>(n.imms[0]);
  ir::mma_sync(
      shape,
      [&](int l, int operand, int i) {
        Thread& t = *lanes[static_cast<std::size_t>(l)];
        const V v = read(t, names_.mem(t, n.mems[static_cast<std::size_t>(operand)].get(), n.loc), i, n.loc);
        return shape == MmaShape::S8_M16N8K32 ? static_cast<double>(v.i) : v.f;
      },
      [&](int l, int i, double value) {
        Thread& t = *lanes[static_cast<std::size_t>(l)];
        V v;
        if (shape == MmaShape::S8_M16N8K32)
          v.i = wrap(ScalarType::I32, static_cast<__int128>(value));  // s32 sums wrap
        else
          v.f = value;
        write(t, names_.mem(t, n.mems[0].get(), n.loc), i, v, n.loc);
      });
}

}  // namespace vantage::interp::detail
