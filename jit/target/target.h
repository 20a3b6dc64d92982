// Vantage targets: the one table of GPU architectures (names, numbers, limits, features) that the
// checker, specialization, the emitter, NVRTC options, the cache and the CLI all read. No other file
// may hold an architecture name, a shared-memory limit or a thread limit of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vantage/target.hpp"
#include "vantage/types.hpp"

namespace vantage::target {

/// Instructions that not every architecture has.
enum class Feature : std::uint8_t {
  MmaSync,      ///< mma.sync m16n8k8 tf32, m16n8k16 f16/bf16 (sm_80)
  Ldmatrix,     ///< ldmatrix (sm_75)
  CpAsync,      ///< cp.async (sm_80)
  Mbarrier,     ///< mbarrier.init / arrive (sm_80)
  MbarrierTry,  ///< mbarrier.try_wait (sm_90)
  Tma,          ///< cp.async.bulk.tensor (sm_90)
  Wgmma,        ///< wgmma.mma_async (sm_90a only)
  Cluster,      ///< thread-block clusters: barrier.cluster, multicast TMA, remote mbarrier arrivals (sm_90)
};
/// "wgmma", "TMA", ... for messages.
const char* feature_name(Feature f);

struct Info {
  Arch arch;
  const char* name;                    ///< "sm_90a"
  int number;                          ///< compute capability times ten
  bool arch_specific;                  ///< an `a` target: its code runs on that architecture only
  std::int64_t shared_static_bytes;    ///< static shared memory per block without opt-in
  std::int64_t shared_optin_bytes;     ///< shared memory per block with the opt-in attribute
  std::int64_t max_threads_per_block;  ///< threads per block
  int max_registers_per_thread;
  std::int64_t registers_per_block;
  int named_barriers;  ///< hardware barriers per block (id 0 is __syncthreads)
  std::uint32_t features;

  bool has(Feature f) const { return (features >> static_cast<int>(f)) & 1u; }
};

/// Atomic operations: the read-modify-writes, CUDA's wrapping increment and decrement (unsigned
/// 32-bit), and the atomic load and store.
enum class AtomicOp : std::uint8_t { Add, Min, Max, Exch, And, Or, Xor, Cas, Inc, Dec, Load, Store };
/// Which threads an atomic is indivisible for: the device's (the default, CUDA's plain atomics),
/// the block's only (`atomicAdd_block`), or the whole system's, host included (`atomicAdd_system`).
enum class AtomicScope : std::uint8_t { Device, Block, System };
const char* atomic_scope_name(AtomicScope s);
/// How an atomic orders the same thread's other accesses for the threads of its scope (PTX's .relaxed,
/// .acquire, .release, .acq_rel; C++'s memory_order of the same names).
enum class MemoryOrder : std::uint8_t { Relaxed, Acquire, Release, AcqRel };
const char* memory_order_name(MemoryOrder o);
/// Whether an operation takes an ordering: a load no release, a store no acquire.
bool order_fits(AtomicOp op, MemoryOrder o);
const char* atomic_name(AtomicOp op);
/// How every supported target performs an atomic on a type: natively, on the bits reinterpreted as
/// an unsigned 64-bit integer (two's complement add and exchange are the same operation), or not.
enum class AtomicSupport : std::uint8_t { None, Native, AsUnsigned64 };
AtomicSupport atomic_support(AtomicOp op, ScalarType type);
/// "i32, u32, i64, u64", the types `op` supports, for messages.
std::string atomic_types(AtomicOp op);

/// The row for one architecture.
const Info& info(Arch arch);
/// Every row, oldest first.
const std::vector<Info>& all();

/// Limits that hold for every supported architecture: what the checker uses before a target is
/// chosen (a kernel is checked once and specialized for many targets).
std::int64_t max_threads_per_block();  ///< the smallest per-architecture maximum
std::int64_t static_shared_bytes();    ///< shared memory any target gives without opt-in
std::int64_t max_shared_bytes();       ///< the largest opt-in shared memory of any target
int named_barriers();                  ///< barriers per block on every target

}  // namespace vantage::target
