// Vantage targets: see target.h. Figures from the CUDA programming guide's table of compute
// capabilities (shared memory per block with opt-in: 163 KiB on sm_80, 99 KiB on sm_86 and sm_89,
// 227 KiB on sm_90).
#include "jit/target/target.h"

#include <algorithm>
#include <string>

#include "vantage/device.hpp"

namespace vantage::target {
namespace {

constexpr std::uint32_t bit(Feature f) { return 1u << static_cast<int>(f); }
constexpr std::uint32_t kAmpere =
    bit(Feature::MmaSync) | bit(Feature::Ldmatrix) | bit(Feature::CpAsync) | bit(Feature::Mbarrier);
constexpr std::uint32_t kHopper = kAmpere | bit(Feature::MbarrierTry) | bit(Feature::Tma) | bit(Feature::Cluster);

// clang-format off
const std::vector<Info> kTable = {
  // arch         name      num  a      static  opt-in   threads regs  regs/block barriers features
  {Arch::SM_80,  "sm_80",  80, false, 49152, 166912, 1024,   255, 65536,     16,      kAmpere},
  {Arch::SM_86,  "sm_86",  86, false, 49152, 101376, 1024,   255, 65536,     16,      kAmpere},
  {Arch::SM_89,  "sm_89",  89, false, 49152, 101376, 1024,   255, 65536,     16,      kAmpere},
  {Arch::SM_90,  "sm_90",  90, false, 49152, 232448, 1024,   255, 65536,     16,      kHopper},
  {Arch::SM_90a, "sm_90a", 90, true,  49152, 232448, 1024,   255, 65536,     16,      kHopper | bit(Feature::Wgmma)},
};
// clang-format on

template <class F>
auto reduce(F&& field, bool smallest) {
  auto v = field(kTable.front());
  for (const auto& row : kTable) v = smallest ? std::min(v, field(row)) : std::max(v, field(row));
  return v;
}

}  // namespace

const char* feature_name(Feature f) {
  switch (f) {
    case Feature::MmaSync: return "mma.sync";
    case Feature::Ldmatrix: return "ldmatrix";
    case Feature::CpAsync: return "cp.async";
    case Feature::Mbarrier: return "mbarrier";
    case Feature::MbarrierTry: return "mbarrier.try_wait";
    case Feature::Tma: return "TMA (cp.async.bulk.tensor)";
    case Feature::Wgmma: return "wgmma";
    case Feature::Cluster: return "thread-block clusters";
  }
  return "?";
}

const char* atomic_name(AtomicOp op) {
  switch (op) {
    case AtomicOp::Add: return "Add";
    case AtomicOp::Min: return "Min";
    case AtomicOp::Max: return "Max";
    case AtomicOp::Exch: return "Exch";
    case AtomicOp::And: return "And";
    case AtomicOp::Or: return "Or";
    case AtomicOp::Xor: return "Xor";
    case AtomicOp::Cas: return "Cas";
    case AtomicOp::Inc: return "Inc";
    case AtomicOp::Dec: return "Dec";
    case AtomicOp::Load: return "Load";
    case AtomicOp::Store: return "Store";
  }
  return "?";
}

const char* memory_order_name(MemoryOrder o) {
  switch (o) {
    case MemoryOrder::Relaxed: return "relaxed";
    case MemoryOrder::Acquire: return "acquire";
    case MemoryOrder::Release: return "release";
    case MemoryOrder::AcqRel: return "acq_rel";
  }
  return "?";
}

bool order_fits(AtomicOp op, MemoryOrder o) {
  if (op == AtomicOp::Load) return o == MemoryOrder::Relaxed || o == MemoryOrder::Acquire;
  if (op == AtomicOp::Store) return o == MemoryOrder::Relaxed || o == MemoryOrder::Release;
  return true;
}

// Every supported target is sm_80 or newer, so one table serves them all: atomicAdd exists for int,
// unsigned, unsigned long long, float, double, __half and __nv_bfloat16; atomicMin and atomicMax for
// the four integer types; atomicExch for int, unsigned, unsigned long long and float; atomicAnd,
// atomicOr, atomicXor and atomicCAS for int, unsigned and unsigned long long; atomicInc and
// atomicDec for unsigned only. Atomic loads and stores (ld.relaxed, st.release and the rest) move
// any type of 32 or 64 bits.
AtomicSupport atomic_support(AtomicOp op, ScalarType t) {
  using S = ScalarType;
  if (is_narrow_integer(t) || is_fp8(t)) return AtomicSupport::None;  // none of 8 or 16 bits in CUDA
  switch (op) {
    case AtomicOp::Add:
      if (t == S::I64) return AtomicSupport::AsUnsigned64;
      if (t == S::Bool) return AtomicSupport::None;
      return AtomicSupport::Native;
    case AtomicOp::Min:
    case AtomicOp::Max: return is_integer(t) ? AtomicSupport::Native : AtomicSupport::None;
    case AtomicOp::Exch:
      if (t == S::I32 || t == S::U32 || t == S::U64 || t == S::F32) return AtomicSupport::Native;
      if (t == S::I64 || t == S::F64) return AtomicSupport::AsUnsigned64;
      return AtomicSupport::None;
    case AtomicOp::And:
    case AtomicOp::Or:
    case AtomicOp::Xor:  // atomicAnd, atomicOr, atomicXor: int, unsigned, unsigned long long
    case AtomicOp::Cas:  // atomicCAS: the same three
      if (t == S::I32 || t == S::U32 || t == S::U64) return AtomicSupport::Native;
      if (t == S::I64) return AtomicSupport::AsUnsigned64;
      return AtomicSupport::None;
    case AtomicOp::Inc:
    case AtomicOp::Dec: return t == S::U32 ? AtomicSupport::Native : AtomicSupport::None;
    case AtomicOp::Load:
    case AtomicOp::Store:
      return t == S::I32 || t == S::U32 || t == S::I64 || t == S::U64 || t == S::F32 || t == S::F64
                 ? AtomicSupport::Native
                 : AtomicSupport::None;
  }
  return AtomicSupport::None;
}

const char* atomic_scope_name(AtomicScope s) {
  switch (s) {
    case AtomicScope::Device: return "device";
    case AtomicScope::Block: return "block";
    case AtomicScope::System: return "system";
  }
  return "?";
}

std::string atomic_types(AtomicOp op) {
  std::string out;
  for (ScalarType t : {ScalarType::I32, ScalarType::U32, ScalarType::I64, ScalarType::U64, ScalarType::F16,
                       ScalarType::BF16, ScalarType::F32, ScalarType::F64})
    if (atomic_support(op, t) != AtomicSupport::None) out += (out.empty() ? "" : ", ") + std::string(type_name(t));
  return out;
}

const Info& info(Arch arch) {
  for (const auto& row : kTable)
    if (row.arch == arch) return row;
  return kTable.back();
}

const std::vector<Info>& all() { return kTable; }

std::int64_t max_threads_per_block() {
  return reduce([](const Info& i) { return i.max_threads_per_block; }, true);
}
std::int64_t static_shared_bytes() {
  return reduce([](const Info& i) { return i.shared_static_bytes; }, true);
}
std::int64_t max_shared_bytes() {
  return reduce([](const Info& i) { return i.shared_optin_bytes; }, false);
}
int named_barriers() {
  return reduce([](const Info& i) { return i.named_barriers; }, true);
}

}  // namespace vantage::target

namespace vantage {

const char* arch_name(Arch arch) { return target::info(arch).name; }
int arch_number(Arch arch) { return target::info(arch).number; }

std::optional<Arch> parse_arch(std::string_view name) {
  for (const auto& row : target::all())
    if (name == row.name) return row.arch;
  return std::nullopt;
}

const std::vector<Arch>& all_archs() {
  static const std::vector<Arch> archs = [] {
    std::vector<Arch> out;
    for (const auto& row : target::all()) out.push_back(row.arch);
    return out;
  }();
  return archs;
}

const char* arch_names() {
  static const std::string names = [] {
    std::string s;
    for (const auto& row : target::all()) s += (s.empty() ? "" : ", ") + std::string(row.name);
    return s;
  }();
  return names.c_str();
}

// ---------------------------------------------------------------- devices (vantage/device.hpp)
const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Interpreter: return "interpreter";
    case DeviceKind::Cpu: return "CPU";
    case DeviceKind::Gpu: return "GPU";
  }
  return "device";
}

double DeviceProperties::memory_bandwidth_gbs() const {
  // Double data rate: two transfers per clock over the bus.
  return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0) / 1e9;
}

}  // namespace vantage
