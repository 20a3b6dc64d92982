// How the CUDA C++ emitter prints intrinsics: shuffles and votes, atomics, cp.async, mma,
// ldmatrix, wgmma, mbarriers and TMA. See emitter.h.
#include "jit/cuda/emitter.h"
#include "jit/ir/print_format.h"

#include <functional>
#include <sstream>
#include <vector>

namespace vantage::cuda::detail {

namespace {
/// A TMA load's statement: the box at (`col`, `row`) of tensor map `map` into shared address `dst`,
/// completing on the mbarrier at `bar`; with a `mask`, into each block of the cluster it names.
std::string tma_load_asm(const std::string& dst, const std::string& map, const std::string& col, const std::string& row,
                         const std::string& bar, const std::string& mask) {
  return "asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" +
         std::string(mask.empty() ? "" : ".multicast::cluster") + " [%0], [%1, {%2, %3}], [%4]" +
         (mask.empty() ? "" : ", %5") + ";\" :: \"r\"(" + dst + "), \"l\"(reinterpret_cast<unsigned long long>(&" +
         map + ")), \"r\"(" + col + "), \"r\"(" + row + "), \"r\"(" + bar + ")" +
         (mask.empty() ? "" : ", \"h\"(static_cast<unsigned short>(" + mask + "))") + " : \"memory\");\n";
}
/// A wait until the phase of parity `parity` of the mbarrier at shared address `bar` has completed.
/// In a kernel of clusters other blocks' threads arrive (a release at the cluster's scope): the wait
/// acquires at that scope.
std::string wait_asm(const std::string& bar, const std::string& parity, bool cluster) {
  return "asm volatile(\"{ .reg .pred vt_p; vt_wait: mbarrier.try_wait.parity" +
         std::string(cluster ? ".acquire.cluster" : "") +
         ".shared::cta.b64 vt_p, [%0], %1; @!vt_p bra vt_wait; }\" :: \"r\"(" + bar + "), \"r\"(" + parity +
         ") : \"memory\");\n";
}

/// An arrival at the mbarrier at shared address `bar` of the block of rank `rank` in the cluster: its
/// address there (mapa), then a release at the cluster's scope.
std::string arrive_cluster_asm(const std::string& bar, const std::string& rank) {
  return "asm volatile(\"{ .reg .b32 vt_remote; mapa.shared::cluster.u32 vt_remote, %0, %1; "
         "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [vt_remote]; }\" :: \"r\"(" +
         bar + "), \"r\"(" + rank + ") : \"memory\");\n";
}
/// The wgmma descriptor of the tile at element `index` (of `bytes` each) of shared array `base`: the
/// array's descriptor plus the offset in 16-byte units (the start address field; a shared window is
/// under 2^18 bytes), loop-invariant where a descriptor of the element's address is remade each step.
std::string wgmma_desc(const std::string& base, const std::string& index, int bytes) {
  return "(vt_wgmma_desc(" + base + ") + static_cast<unsigned long long>((" + index + ") * " + std::to_string(bytes) +
         " >> 4))";
}

/// `wgmma.mma_async` of `n` (N its immediate, the tiles' element type its form) into accumulators
/// `acc`, A's and B's descriptors given.
std::string wgmma_asm(const Intrinsic& n, const std::string& acc, const std::string& a, const std::string& b) {
  const int width = static_cast<int>(n.imms[0]), regs = width / 2;
  // Bytes: K of 32, s32 accumulators, and no operand scales or transposes (the integer form); A's and
  // B's signs are their own.
  auto name = [](ScalarType e) {
    return e == ScalarType::BF16 ? "bf16" : e == ScalarType::F16 ? "f16" : e == ScalarType::U8 ? "u8" : "s8";
  };
  const ScalarType ta = n.mems[1]->elem;
  const bool integer = ta == ScalarType::I8 || ta == ScalarType::U8;
  std::ostringstream out;
  out << "asm volatile(\"{ wgmma.mma_async.sync.aligned.m64n" << width << (integer ? "k32.s32." : "k16.f32.")
      << name(ta) << "." << name(n.mems[2]->elem) << " {";
  for (int i = 0; i < regs; ++i) out << (i ? ", " : "") << "%" << i;
  out << "}, %" << regs << ", %" << regs + 1 << (integer ? ", 1; }\" : " : ", 1, 1, 1, 0, 0; }\" : ");
  for (int i = 0; i < regs; ++i) out << (i ? ", " : "") << (integer ? "\"+r\"(" : "\"+f\"(") << acc << "[" << i << "])";
  out << " : \"l\"(" << a << "), \"l\"(" << b << ") : \"memory\");\n";
  return out.str();
}
/// A false assertion is recorded as a failed access is, at its own site, with no index and a bound of
/// -1 (which no access has): the thread goes on, and the host reports it.
std::string assertion_check(const Intrinsic& n, const std::string& condition) {
  return "if (!(" + condition + ")) vt_fail(vt_err, " + std::to_string(n.imms.empty() ? 0 : n.imms[0]) + ", 0, -1);\n";
}

/// A print as a printf statement (jit/ir/print_format.h): the format's text with its % doubled and
/// each value's conversion, as a C string literal; each value widened as the host's line takes it.
std::string printf_call(const Intrinsic& n, const std::function<std::string(const ExprPtr&)>& expr) {
  std::string why;
  auto format = parse_print_format(n.text, &why);
  if (!format || format->specs.size() != n.args.size())
    throw InternalError("emit: a print whose format the checker did not accept: " + why);
  std::string f;
  auto text = [&](const std::string& t) {
    for (char c : t) f += c == '%' ? std::string("%%") : std::string(1, c);
  };
  text(format->text[0]);
  for (std::size_t i = 0; i < format->specs.size(); ++i) {
    f += printf_conversion(format->specs[i], n.args[i]->type);
    text(format->text[i + 1]);
  }
  f += '\n';
  std::string out = "printf(\"";
  for (unsigned char c : f) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '?') {
      out += "\\?";  // no trigraph
    } else if (c < 0x20 || c >= 0x7f) {
      out += {'\\', static_cast<char>('0' + (c >> 6)), static_cast<char>('0' + ((c >> 3) & 7)),
              static_cast<char>('0' + (c & 7))};
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "\"";
  for (std::size_t i = 0; i < n.args.size(); ++i) {
    const ExprPtr& a = n.args[i];
    const ScalarType t = a->type;
    auto cast = [&](ScalarType to, const ExprPtr& x) { return x->type == to ? x : make<Cast>(to, x, x->loc); };
    out += ", ";
    switch (print_as(format->specs[i], t)) {
      case PrintAs::Bool: out += "(" + expr(a) + ") ? \"true\" : \"false\""; break;
      case PrintAs::Double: out += expr(cast(ScalarType::F64, a)); break;
      case PrintAs::Signed: out += expr(cast(ScalarType::I64, a)); break;
      case PrintAs::Unsigned: {
        // The bits of its own width first: an i32's -1 is ffffffff.
        const ScalarType own = t == ScalarType::I8                             ? ScalarType::U8
                               : t == ScalarType::I16                          ? ScalarType::U16
                               : t == ScalarType::I32 || t == ScalarType::Bool ? ScalarType::U32
                                                                               : t;
        out += expr(cast(ScalarType::U64, cast(own, a)));
        break;
      }
    }
  }
  return out + ");\n";
}

/// Empty asm statements that read and write each register of the wgmma accumulators `arrays`
/// (named by `name`), 64 a statement: the compiler moves no write of one below a fence after them,
/// and no read of one above a wait before them (the wgmma's own asm names them, the fence's does not).
std::vector<std::string> accumulator_pins(const std::vector<const LocalAlloc*>& arrays,
                                          const std::function<std::string(const MemPtr&)>& name) {
  constexpr std::int64_t kPerAsm = 64;
  std::vector<std::string> lines;
  for (const LocalAlloc* a : arrays) {
    const std::string pin = a->mem->elem == ScalarType::F32 ? "\"+f\"(" : "\"+r\"(";
    for (std::int64_t first = 0; first < a->count; first += kPerAsm) {
      std::string line = "asm volatile(\"\" : ";
      for (std::int64_t i = first; i < std::min(a->count, first + kPerAsm); ++i)
        line += (i > first ? ", " : "") + pin + name(a->mem) + "[" + std::to_string(i) + "])";
      lines.push_back(line + ");\n");
    }
  }
  return lines;
}
}  // namespace

void Emitter::pin_accumulators() {
  for (const std::string& line : accumulator_pins(acc_in_scope_, [&](const MemPtr& m) { return v_.name(m); }))
    ind(), out_ << line;
}

void Emitter::emit(const Intrinsic& n, const StmtPtr&) {
  auto arg = [&](std::size_t i) { return x_.expr(n.args[i]); };
  auto out = [&](ScalarType t) {
    ind();
    out_ << v_.ctype(t) << " " << v_.name(n.outputs[0]) << " = ";
  };
  auto addr = [&](std::size_t mem, const ExprPtr& idx) { return "&" + x_.access(n.mems[mem], {idx}, n.loc); };
  if (!runs_on(n.op, kCuda))
    throw UnsupportedOnDevice(user_name(n.op) + " has no CUDA emission (the intrinsic table's row)", {n.loc});
  switch (n.op) {
    case IntrinsicOp::SyncThreads:
    case IntrinsicOp::SyncWarp:
    case IntrinsicOp::ClusterSync:
    case IntrinsicOp::NamedBarrier: throw InternalError("emit: a barrier intrinsic that was not lowered");
    case IntrinsicOp::ShflXor:
    case IntrinsicOp::ShflDown:
    case IntrinsicOp::ShflUp:
    case IntrinsicOp::ShflIdx: {
      static const char* const kFns[] = {"__shfl_xor_sync", "__shfl_down_sync", "__shfl_up_sync", "__shfl_sync"};
      int k = static_cast<int>(n.op) - static_cast<int>(IntrinsicOp::ShflXor);
      out(n.outputs[0]->type);
      out_ << kFns[k] << "(0xffffffffu, " << arg(0) << ", " << arg(1) << ");\n";
      break;
    }
    case IntrinsicOp::VoteAll:
      out(ScalarType::Bool);
      out_ << "__all_sync(0xffffffffu, " << arg(0) << ") != 0;\n";
      break;
    case IntrinsicOp::VoteAny:
      out(ScalarType::Bool);
      out_ << "__any_sync(0xffffffffu, " << arg(0) << ") != 0;\n";
      break;
    case IntrinsicOp::Ballot:
      out(ScalarType::U32);
      out_ << "__ballot_sync(0xffffffffu, " << arg(0) << ");\n";
      break;
    case IntrinsicOp::Atomic: atomic(n); break;
    case IntrinsicOp::MmaSync: mma(n); break;
    case IntrinsicOp::Ldmatrix: {
      int count = static_cast<int>(n.imms[0]);
      std::string d = v_.name(n.mems[0]);
      ind();
      out_ << "asm volatile(\"ldmatrix.sync.aligned.m8n8.x" << count << ".shared.b16 {";
      for (int i = 0; i < count; ++i) out_ << (i ? ", " : "") << "%" << i;
      out_ << "}, [%" << count << "];\" : ";
      for (int i = 0; i < count; ++i) out_ << (i ? ", " : "") << "\"=r\"(" << d << "[" << i << "])";
      out_ << " : \"r\"(static_cast<unsigned>(__cvta_generic_to_shared(" << addr(1, n.args[0]) << "))));\n";
      break;
    }
    case IntrinsicOp::Wgmma:
      v_.uses_wgmma = true;
      ind();
      out_ << wgmma_asm(n, v_.name(n.mems[0]),
                        wgmma_desc(v_.name(n.mems[1]), x_.index(n.args[0], n.loc), type_bytes(n.mems[1]->elem)),
                        wgmma_desc(v_.name(n.mems[2]), x_.index(n.args[1], n.loc), type_bytes(n.mems[2]->elem)));
      break;
    case IntrinsicOp::WgmmaFence:
      pin_accumulators();
      ind();
      out_ << "asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n";
      break;
    case IntrinsicOp::WgmmaCommit:
      ind();
      out_ << "asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n";
      break;
    case IntrinsicOp::WgmmaWait:
      ind();
      out_ << "asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(" << n.imms[0] << ") : \"memory\");\n";
      pin_accumulators();
      break;
    case IntrinsicOp::CpAsync: {
      // Checked where lowering could not prove a side inside its memory (imms 1 and 2: the sites,
      // args 2 and 3: the bounds): a copy that would leave it is reported and not made.
      std::string guard;
      if (n.imms.size() > 2) {
        v_.uses_checks = true;
        const std::int64_t count = n.imms[0] / type_bytes(n.mems[0]->elem);
        for (std::size_t side = 0; side < 2; ++side) {
          if (n.imms[1 + side] < 0) continue;
          const std::string i = x_.index(n.args[side], n.loc), bound = x_.expr(n.args[2 + side]);
          ind();
          out_ << guard << "if (!((" << i << ") >= 0 && (" << i << ") + " << count << " <= (" << bound
               << "))) vt_fail(vt_err, " << n.imms[1 + side] << ", " << i << ", " << bound << ");\n";
          guard = "else ";
        }
      }
      ind();
      out_ << guard << "asm volatile(\"cp.async." << (n.imms[0] == 16 ? "cg" : "ca") << ".shared.global [%0], [%1], "
           << n.imms[0] << ";\" :: \"r\"(static_cast<unsigned>(__cvta_generic_to_shared(" << addr(0, n.args[0])
           << "))), \"l\"(" << addr(1, n.args[1]) << ") : \"memory\");\n";
      break;
    }
    case IntrinsicOp::CpAsyncCommit:
      ind();
      out_ << "asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n";
      break;
    case IntrinsicOp::CpAsyncWait:
      ind();
      out_ << "asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(" << n.imms[0] << ") : \"memory\");\n";
      break;
    case IntrinsicOp::TmaLoad2D:
    case IntrinsicOp::TmaLoadMulticast2D: {
      // args: column, row, the mbarrier's slot (resolved), the destination's first element; a
      // multicast's mask of the cluster's blocks.
      const TensorMapNode& m = lowered_->kernel.tensor_maps.at(static_cast<std::size_t>(n.imms[0]));
      const bool multicast = n.op == IntrinsicOp::TmaLoadMulticast2D;
      ind();
      out_ << tma_load_asm(smem(n, 0, n.args[3]), v_.name(&m, m.name), arg(0), arg(1), smem(n, 1, n.args[2]),
                           multicast ? arg(4) : std::string());
      break;
    }
    case IntrinsicOp::MbarrierInit:
      // The fence makes the initialised barrier visible to TMA (the async proxy); in a kernel of
      // clusters, to the other blocks' arrivals and multicasts too (after a cluster_sync).
      ind();
      out_ << "asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\\tfence.proxy.async.shared::cta;"
           << (lowered_->kernel.cluster > 1 ? "\\n\\tfence.mbarrier_init.release.cluster;" : "") << "\" :: \"r\"("
           << smem(n, 0, n.args[1]) << "), \"r\"(" << arg(0) << ") : \"memory\");\n";
      break;
    case IntrinsicOp::MbarrierArriveCluster:
      ind();
      out_ << arrive_cluster_asm(smem(n, 0, n.args[0]), arg(1));
      break;
    case IntrinsicOp::MbarrierArrive:
      ind();
      out_ << "asm volatile(\"{ .reg .b64 vt_state; mbarrier.arrive.shared::cta.b64 vt_state, [%0]; }\" :: \"r\"("
           << smem(n, 0, n.args[0]) << ") : \"memory\");\n";
      break;
    case IntrinsicOp::MbarrierExpectTx:
      ind();
      out_ << "asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"("
           << smem(n, 0, n.args[0]) << "), \"r\"(" << n.imms[0] << ") : \"memory\");\n";
      break;
    case IntrinsicOp::MbarrierWait:
      ind();
      out_ << wait_asm(smem(n, 0, n.args[1]), arg(0), lowered_->kernel.cluster > 1);
      break;
    case IntrinsicOp::TmaStore2D: {
      // args: column, row, the source's first element (resolved). Each store its own bulk group.
      const TensorMapNode& m = lowered_->kernel.tensor_maps.at(static_cast<std::size_t>(n.imms[0]));
      ind();
      out_ << "asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\\n\\t"
              "cp.async.bulk.commit_group;\" :: \"l\"(reinterpret_cast<unsigned long long>(&"
           << v_.name(&m, m.name) << ")), \"r\"(" << arg(0) << "), \"r\"(" << arg(1) << "), \"r\"("
           << smem(n, 0, n.args[2]) << ") : \"memory\");\n";
      break;
    }
    case IntrinsicOp::Print:
      ind();
      out_ << printf_call(n, [&](const ExprPtr& e) { return x_.expr(e); });
      break;
    case IntrinsicOp::Assert:
      v_.uses_checks = true;
      ind();
      out_ << assertion_check(n, arg(0));
      break;
    case IntrinsicOp::Nanosleep:
      // A duration the checker could not see is clamped to what the hardware takes (PTX: 0 to 1 ms).
      ind();
      out_ << "__nanosleep(static_cast<unsigned>(min(max(" << arg(0) << ", 0), " << kMaxNanosleepNs << ")));\n";
      break;
    case IntrinsicOp::TmaStoreWait:
      ind();
      out_ << "asm volatile(\"cp.async.bulk.wait_group.read %0;\" :: \"n\"(" << n.imms[0] << ") : \"memory\");\n";
      break;
    case IntrinsicOp::FenceProxyAsync:
      ind();
      out_ << "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n";
      break;
    case IntrinsicOp::SetMaxNreg:
      v_.uses_setmaxnreg = true;
      ind();
      out_ << "asm volatile(\"setmaxnreg." << (n.imms[1] ? "inc" : "dec") << ".sync.aligned.u32 " << n.imms[0]
           << ";\");\n";
      break;
  }
}

auto Emitter::smem(const Intrinsic& n, std::size_t mem, const ExprPtr& index) -> std::string {
  return "static_cast<unsigned>(__cvta_generic_to_shared(" + address(n, mem, index) + "))";
}

auto Emitter::address(const Intrinsic& n, std::size_t mem, const ExprPtr& index) -> std::string {
  return "&" + x_.access(n.mems[mem], {index}, n.loc);
}

namespace {
// By AtomicKind: CUDA's function, the __nv_atomic_fetch builtin's operation, and the vt_atomic helper.
const char* const kFns[] = {"atomicAdd", "atomicMin", "atomicMax", "atomicExch", "atomicAnd",
                            "atomicOr",  "atomicXor", "atomicCAS", "atomicInc",  "atomicDec"};
const char* const kFetch[] = {"add", "min", "max", "", "and", "or", "xor"};
const char* const kHelpers[] = {"", "", "", "exchange", "", "", "", "cas", "inc", "dec", "load", "store"};
const char* const kOrders[] = {"__NV_ATOMIC_RELAXED", "__NV_ATOMIC_ACQUIRE", "__NV_ATOMIC_RELEASE",
                               "__NV_ATOMIC_ACQ_REL"};
const char* const kScopes[] = {"__NV_THREAD_SCOPE_DEVICE", "__NV_THREAD_SCOPE_BLOCK", "__NV_THREAD_SCOPE_SYSTEM"};
}  // namespace

void Emitter::atomic(const Intrinsic& n) {
  auto op = atomic_kind(n.imms[0]);
  const AtomicScope scope = atomic_scope(n.imms[0]);
  const MemoryOrder order = atomic_order(n.imms[0]);
  ScalarType t = n.mems[0]->elem;
  // An exchange whose old value is not taken only writes (docs/semantics.md): a relaxed or release one is
  // that atomic store, which a warp writes in coalesced requests, where atomicExch is an L2 atomic a lane.
  if (op == AtomicKind::Exch && n.outputs.empty() && (order == MemoryOrder::Relaxed || order == MemoryOrder::Release))
    op = AtomicKind::Store;
  // Relaxed read-modify-writes are CUDA's atomic functions and their scoped forms (atomicAdd_block,
  // atomicAdd_system); the 16-bit floats have none, and a block's atomic on them is the device's, which
  // is indivisible for the block too. Loads, stores and ordered atomics are the compiler's
  // __nv_atomic builtins, with the ordering and scope as their arguments (the vt_atomic helpers).
  const bool cuda_form = order == MemoryOrder::Relaxed && op != AtomicKind::Load && op != AtomicKind::Store;
  const std::string suffix = is_16bit_float(t)              ? ""
                             : scope == AtomicScope::Block  ? "_block"
                             : scope == AtomicScope::System ? "_system"
                                                            : "";
  const std::string how = std::string(kOrders[static_cast<int>(order)]) + ", " + kScopes[static_cast<int>(scope)];
  auto invoke = [&](const std::string& address, const std::string& compare, const std::string& value) {
    if (cuda_form)
      return std::string(kFns[static_cast<int>(op)]) + suffix + "(" + address + ", " +
             (compare.empty() ? "" : compare + ", ") + value + ")";
    v_.uses_atomic_helpers = true;
    const std::string helper = kHelpers[static_cast<int>(op)];
    if (!helper.empty())  // vt_atomic_load(p), vt_atomic_cas(p, c, v), the others (p, v)
      return "vt_atomic_" + helper + "<" + how + ">(" + address + (compare.empty() ? "" : ", " + compare) +
             (op == AtomicKind::Load ? "" : ", " + value) + ")";
    return std::string("__nv_atomic_fetch_") + kFetch[static_cast<int>(op)] + "(" + address + ", " + value + ", " +
           how + ")";
  };
  const std::string address = "&" + x_.access(n.mems[0], {n.args[0]}, n.loc), value = x_.expr(n.args[1]);
  // Compare and swap takes the compare value before the new one (its third argument here).
  const std::string compare = op == AtomicKind::Cas ? x_.expr(n.args[2]) : "";
  std::string call;
  switch (target::atomic_support(op, t)) {
    case target::AtomicSupport::Native: call = invoke(address, compare, value); break;
    case target::AtomicSupport::AsUnsigned64: {
      auto bits = [&](const std::string& v) {
        return t == ScalarType::F64 ? "static_cast<unsigned long long>(__double_as_longlong(" + v + "))"
                                    : "static_cast<unsigned long long>(" + v + ")";
      };
      const std::string inner = invoke("reinterpret_cast<unsigned long long*>(" + address + ")",
                                       compare.empty() ? "" : bits(compare), bits(value));
      call = t == ScalarType::F64 ? "__longlong_as_double(static_cast<long long>(" + inner + "))"
                                  : "static_cast<" + std::string(v_.ctype(t)) + ">(" + inner + ")";
      break;
    }
    case target::AtomicSupport::None: throw InternalError("emit: an atomic the checker should have rejected");
  }
  const bool checked = n.imms.size() > 1;  // lowering appended the bound and the site
  const bool result = !n.outputs.empty();
  if (!checked) {
    ind();
    if (result) out_ << v_.ctype(t) << " " << v_.name(n.outputs[0]) << " = ";
    out_ << call << ";\n";
    return;
  }
  v_.uses_checks = true;
  const std::string i = x_.index(n.args[0], n.loc), bound = x_.expr(n.args.back());
  const std::string inside = "(" + i + ") >= 0 && (" + i + ") < (" + bound + ")";
  const std::string fail = std::to_string(n.imms[1]) + ", " + i + ", " + bound;
  ind();
  if (result) {
    // One initialized variable, as the unchecked form has (NVRTC warns about one set in a branch and
    // never read).
    out_ << v_.ctype(t) << " " << v_.name(n.outputs[0]) << " = (" << inside << ") ? " << call << " : vt_fail_zero<"
         << v_.ctype(t) << ">(vt_err, " << fail << ");\n";
  } else {
    out_ << "if (" << inside << ") " << call << "; else vt_fail(vt_err, " << fail << ");\n";
  }
}

void Emitter::mma(const Intrinsic& n) {
  auto kind = static_cast<MmaShape>(n.imms[0]);
  std::string d = v_.name(n.mems[0]), a = v_.name(n.mems[1]), b = v_.name(n.mems[2]), c = v_.name(n.mems[3]);
  ind();
  if (kind == MmaShape::TF32_M16N8K8) {
    v_.uses_tf32 = true;
    out_ << "asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
            "{%8, %9}, {%10, %11, %12, %13};\" : \"=f\"("
         << d << "[0]), \"=f\"(" << d << "[1]), \"=f\"(" << d << "[2]), \"=f\"(" << d << "[3]) : ";
    for (int i = 0; i < 4; ++i) out_ << "\"r\"(vt_tf32(" << a << "[" << i << "])), ";
    for (int i = 0; i < 2; ++i) out_ << "\"r\"(vt_tf32(" << b << "[" << i << "])), ";
  } else if (kind == MmaShape::S8_M16N8K32) {  // four s8 a register, s32 sums (wrapping: no .satfinite)
    out_ << "asm volatile(\"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
            "{%8, %9}, {%10, %11, %12, %13};\" : \"=r\"("
         << d << "[0]), \"=r\"(" << d << "[1]), \"=r\"(" << d << "[2]), \"=r\"(" << d << "[3]) : ";
    for (int i = 0; i < 4; ++i) out_ << "\"r\"(*reinterpret_cast<const unsigned*>(&" << a << "[" << 4 * i << "])), ";
    for (int i = 0; i < 2; ++i) out_ << "\"r\"(*reinterpret_cast<const unsigned*>(&" << b << "[" << 4 * i << "])), ";
    for (int i = 0; i < 4; ++i) out_ << (i ? ", " : "") << "\"r\"(" << c << "[" << i << "])";
    out_ << ");\n";
    return;
  } else {
    const char* t = kind == MmaShape::F16_M16N8K16 ? "f16" : "bf16";
    out_ << "asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." << t << "." << t
         << ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\" : \"=f\"(" << d
         << "[0]), \"=f\"(" << d << "[1]), \"=f\"(" << d << "[2]), \"=f\"(" << d << "[3]) : ";
    for (int i = 0; i < 4; ++i) out_ << "\"r\"(*reinterpret_cast<const unsigned*>(&" << a << "[" << 2 * i << "])), ";
    for (int i = 0; i < 2; ++i) out_ << "\"r\"(*reinterpret_cast<const unsigned*>(&" << b << "[" << 2 * i << "])), ";
  }
  for (int i = 0; i < 4; ++i) out_ << (i ? ", " : "") << "\"f\"(" << c << "[" << i << "])";
  out_ << ");\n";
}

auto Emitter::vector_type(ScalarType t, std::int64_t count) -> std::string {
  bool fp = is_float(t);
  if (type_bytes(t) == 4) return std::string(fp ? "float" : "int") + std::to_string(count);
  if (type_bytes(t) == 8) return std::string(fp ? "double" : "longlong") + std::to_string(count);
  // Elements of 1 or 2 bytes move as words: 4, 8 or 16 bytes.
  const std::int64_t words = count * type_bytes(t) / 4;
  return words == 1 ? "unsigned" : "uint" + std::to_string(words);
}

}  // namespace vantage::cuda::detail
