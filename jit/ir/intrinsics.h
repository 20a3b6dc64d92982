// Vantage intrinsics: one table, one row per intrinsic, with everything a pass needs to know about
// it that is not how a backend spells it: the threads it must run with (the checker's perspective
// rule), whether the lanes of a warp exchange values through it, whether the threads of its group
// reach it together (the interpreter and the CPU backend run threads up to it), whether it orders
// memory between threads, what it does to each memory operand (the barrier placement's reads and
// writes), the target feature it needs, and which backends run it. The passes read the table; a new
// intrinsic is one row here plus each backend's emission (a backend without one refuses it by its
// user name).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "jit/ir/ir.h"
#include "jit/target/target.h"

namespace vantage::ir {

/// The threads an intrinsic must run with: exactly that set (the checker's V0201/V0202 rules).
enum class Needs : std::uint8_t {
  Any,        ///< no set: each thread on its own (an mbarrier arrival, a cp.async group)
  Thread,     ///< one thread
  Warp,       ///< one whole warp
  Warpgroup,  ///< four whole warps
  Block,      ///< the whole block
  Declared,   ///< the thread count its second immediate declares (named_barrier)
};

/// What an intrinsic does to one of its memory operands.
enum class Touch : std::uint8_t {
  None,        ///< a thread's own fragment, or no operand
  Read,        ///< reads it
  Write,       ///< writes it (tma_load: completing on the mbarrier operand)
  AsyncWrite,  ///< writes it later, when the thread waits (cp.async)
  Atomic,      ///< reads and writes it atomically: commutes with atomics of its kind
  Wait,        ///< waits on it (an mbarrier's phase)
};

/// The backends, as bits of IntrinsicInfo::backends.
enum Runs : std::uint8_t { kCuda = 1, kInterpreter = 2, kCpu = 4, kEveryBackend = 7 };

struct IntrinsicInfo {
  IntrinsicOp op;
  const char* name;  ///< "ShflXor": the IR's name
  const char* user;  ///< "shfl_xor": what users call it (the builder's method), in messages
  Needs needs = Needs::Any;
  bool exchanges_lanes = false;            ///< a shuffle, vote or ballot
  bool collective = false;                 ///< the threads of its group reach it together
  bool orders_memory = false;              ///< a barrier: orders its threads' memory accesses
  std::array<Touch, 3> mems{};             ///< per memory operand
  std::optional<target::Feature> feature;  ///< what a target must have to run it
  std::uint8_t backends = kEveryBackend;   ///< Runs bits
  /// The memory operands (a bit each) it accesses through the async proxy (a TMA box, wgmma's tiles),
  /// not the generic one of loads and stores: jit/sync fences the proxies between the two. (A TMA
  /// load's mbarrier is the async proxy's too, but mbarrier_init fences it where it is made.)
  std::uint8_t async_mems = 0;
  bool async(std::size_t mem) const { return (async_mems >> mem) & 1u; }
};

/// The row of `op`.
const IntrinsicInfo& info(IntrinsicOp op);
/// Every row, in IntrinsicOp order.
std::span<const IntrinsicInfo> intrinsic_table();
/// Whether `backend` (one Runs bit) runs `op`: its row says so, and it is one of IntrinsicOp's
/// enumerators (which every backend's emission switches over; a row a test adds runs nowhere).
inline bool runs_on(IntrinsicOp op, Runs backend) {
  return static_cast<std::size_t>(op) < kIntrinsics && (info(op).backends & backend) != 0;
}

namespace testing {
/// Adds a row for an intrinsic no backend knows (its `op` is ignored) and returns its op: a test
/// sees every pass handle it from its row or refuse it by name. Not thread-safe; tests only.
IntrinsicOp add_intrinsic(IntrinsicInfo row);
}  // namespace testing

}  // namespace vantage::ir
