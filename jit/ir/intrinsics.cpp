// Vantage intrinsics: the table (see intrinsics.h).
#include "jit/ir/intrinsics.h"

#include <deque>
#include <vector>

namespace vantage::ir {
namespace {

using F = target::Feature;
constexpr Touch R = Touch::Read, W = Touch::Write, N = Touch::None;
// The interpreter and the CPU backend run cp.async as a copy that completes at once. The Hopper rows
// (wgmma, TMA, mbarriers) run on the GPU and the interpreter; the CPU backend, whose threads run in
// loops cut at barriers, cannot let a thread wait for another's mbarrier arrival, and stops at them.
constexpr std::uint8_t kAll = kEveryBackend, kHopper = kCuda | kInterpreter;

// clang-format off
constexpr IntrinsicInfo kTable[] = {
  // op                             name              user                         needs             lanes  coll.  orders memory operands           feature          backends
  {IntrinsicOp::SyncThreads,      "SyncThreads",      "sync_threads",              Needs::Block,     false, true,  true,  {},                         std::nullopt,    kAll},
  {IntrinsicOp::SyncWarp,         "SyncWarp",         "sync_warp",                 Needs::Warp,      false, true,  true,  {},                         std::nullopt,    kAll},
  {IntrinsicOp::NamedBarrier,     "NamedBarrier",     "named_barrier",             Needs::Declared,  false, true,  true,  {},                         std::nullopt,    kAll},
  {IntrinsicOp::ShflXor,          "ShflXor",          "shfl_xor",                  Needs::Warp,      true,  true,  false, {},                         std::nullopt,    kAll},
  {IntrinsicOp::ShflDown,         "ShflDown",         "shfl_down",                 Needs::Warp,      true,  true,  false, {},                         std::nullopt,    kAll},
  {IntrinsicOp::ShflUp,           "ShflUp",           "shfl_up",                   Needs::Warp,      true,  true,  false, {},                         std::nullopt,    kAll},
  {IntrinsicOp::ShflIdx,          "ShflIdx",          "shfl_idx",                  Needs::Warp,      true,  true,  false, {},                         std::nullopt,    kAll},
  {IntrinsicOp::VoteAll,          "VoteAll",          "vote_all",                  Needs::Warp,      true,  true,  false, {},                         std::nullopt,    kAll},
  {IntrinsicOp::VoteAny,          "VoteAny",          "vote_any",                  Needs::Warp,      true,  true,  false, {},                         std::nullopt,    kAll},
  {IntrinsicOp::Ballot,           "Ballot",           "ballot",                    Needs::Warp,      true,  true,  false, {},                         std::nullopt,    kAll},
  {IntrinsicOp::Atomic,           "Atomic",           "atomic",                    Needs::Any,       false, false, false, {Touch::Atomic, N, N},      std::nullopt,    kAll},
  {IntrinsicOp::MmaSync,          "MmaSync",          "mma_sync",                  Needs::Warp,      false, true,  false, {},                         F::MmaSync,      kAll},
  {IntrinsicOp::Ldmatrix,         "Ldmatrix",         "ldmatrix",                  Needs::Warp,      false, true,  false, {N, R, N},                  F::Ldmatrix,     kAll},
  {IntrinsicOp::Wgmma,            "Wgmma",            "wgmma",                     Needs::Warpgroup, false, false, false, {N, R, R},                  F::Wgmma,        kHopper, 0b110},
  {IntrinsicOp::WgmmaFence,       "WgmmaFence",       "wgmma_fence",               Needs::Warpgroup, false, false, false, {},                         F::Wgmma,        kHopper},
  {IntrinsicOp::WgmmaCommit,      "WgmmaCommit",      "wgmma_commit",              Needs::Warpgroup, false, false, false, {},                         F::Wgmma,        kHopper},
  {IntrinsicOp::WgmmaWait,        "WgmmaWait",        "wgmma_wait",                Needs::Warpgroup, false, false, false, {},                         F::Wgmma,        kHopper},
  {IntrinsicOp::CpAsync,          "CpAsync",          "cp_async",                  Needs::Thread,    false, false, false, {Touch::AsyncWrite, R, N},  F::CpAsync,      kAll}       ,
  {IntrinsicOp::CpAsyncCommit,    "CpAsyncCommit",    "cp_async_commit",           Needs::Any,       false, false, false, {},                         F::CpAsync,      kAll}       ,
  {IntrinsicOp::CpAsyncWait,      "CpAsyncWait",      "cp_async_wait",             Needs::Any,       false, false, false, {},                         F::CpAsync,      kAll}       ,
  {IntrinsicOp::TmaLoad2D,        "TmaLoad2D",        "tma_load",                  Needs::Thread,    false, false, false, {W, R, N},                  F::Tma,          kHopper, 0b001},
  {IntrinsicOp::MbarrierInit,     "MbarrierInit",     "mbarrier_init",             Needs::Thread,    false, false, false, {W, N, N},                  F::Mbarrier,     kHopper},
  {IntrinsicOp::MbarrierArrive,   "MbarrierArrive",   "mbarrier_arrive",           Needs::Any,       false, false, false, {R, N, N},                  F::Mbarrier,     kHopper},
  {IntrinsicOp::MbarrierExpectTx, "MbarrierExpectTx", "mbarrier_arrive_expect_tx", Needs::Any,       false, false, false, {R, N, N},                  F::Tma,          kHopper},
  {IntrinsicOp::MbarrierWait,     "MbarrierWait",     "mbarrier_wait",             Needs::Any,       false, false, false, {Touch::Wait, N, N},        F::MbarrierTry,  kHopper},
  {IntrinsicOp::SetMaxNreg,       "SetMaxNreg",       "set_max_nreg",              Needs::Warpgroup, false, false, false, {},                         F::Wgmma,        kHopper},
  // Inserted by jit/sync only (fence.proxy.async.shared::cta); elsewhere than a GPU, one memory.
  {IntrinsicOp::FenceProxyAsync,  "FenceProxyAsync",  "fence_proxy_async",         Needs::Any,       false, false, false, {},                         F::Tma,          kAll},
  {IntrinsicOp::TmaStore2D,       "TmaStore2D",       "tma_store",                 Needs::Thread,    false, false, false, {R, W, N},                  F::Tma,          kHopper, 0b01},
  {IntrinsicOp::TmaStoreWait,     "TmaStoreWait",     "tma_store_wait",            Needs::Any,       false, false, false, {},                         F::Tma,          kHopper},
  // A cluster's blocks: its barrier, a TMA load into several blocks' shared memory, an arrival at
  // another block's mbarrier (the CPU backend runs blocks alone and refuses them).
  {IntrinsicOp::ClusterSync,      "ClusterSync",      "cluster_sync",              Needs::Block,     false, true,  true,  {},                         F::Cluster,      kHopper},
  {IntrinsicOp::TmaLoadMulticast2D, "TmaLoadMulticast2D", "tma_load_multicast",    Needs::Thread,    false, false, false, {W, R, N},                  F::Cluster,      kHopper, 0b001},
  {IntrinsicOp::MbarrierArriveCluster, "MbarrierArriveCluster", "mbarrier_arrive_cluster", Needs::Any, false, false, false, {R, N, N},             F::Cluster,      kHopper},
  // A hint that suspends the thread for about that many nanoseconds (a spin loop's back-off); the
  // interpreter and the CPU backend, whose threads take turns of their own, go on at once.
  {IntrinsicOp::Nanosleep,        "Nanosleep",        "nanosleep",                 Needs::Any,       false, false, false, {},                         std::nullopt,    kAll},
  // A line of text with values in it (its format in the node's text), from each thread that runs it:
  // printf on a GPU, the same line written by the interpreter and the CPU backend.
  {IntrinsicOp::Print,            "Print",            "print",                     Needs::Any,       false, false, false, {},                         std::nullopt,    kAll},
  {IntrinsicOp::Assert,           "Assert",           "assert_that",               Needs::Any,       false, false, false, {},                         std::nullopt,    kAll},
};
// clang-format on

constexpr bool in_order() {
  for (std::size_t i = 0; i < std::size(kTable); ++i)
    if (static_cast<std::size_t>(kTable[i].op) != i) return false;
  return std::size(kTable) == kIntrinsics;
}
static_assert(in_order(), "the intrinsic table has one row per IntrinsicOp, in its order");

/// The table and the rows tests add.
struct Rows {
  std::vector<IntrinsicInfo> rows{std::begin(kTable), std::end(kTable)};
  std::deque<std::string> users{};  // user_name's strings, stable
  Rows() {
    for (const auto& r : rows) users.emplace_back(r.user);
  }
};
Rows& rows() {
  static Rows r;
  return r;
}

}  // namespace

const IntrinsicInfo& info(IntrinsicOp op) {
  const auto& r = rows().rows;
  const auto i = static_cast<std::size_t>(op);
  if (i >= r.size()) throw InternalError("intrinsic #" + std::to_string(i) + " has no row in the intrinsic table");
  return r[i];
}

std::span<const IntrinsicInfo> intrinsic_table() { return rows().rows; }

const char* name_of(IntrinsicOp op) { return info(op).name; }
const std::string& user_name(IntrinsicOp op) {
  info(op);  // the range check
  return rows().users[static_cast<std::size_t>(op)];
}

namespace testing {
IntrinsicOp add_intrinsic(IntrinsicInfo row) {
  Rows& r = rows();
  row.op = static_cast<IntrinsicOp>(r.rows.size());
  r.rows.push_back(row);
  r.users.emplace_back(row.user);
  return row.op;
}
}  // namespace testing

}  // namespace vantage::ir
