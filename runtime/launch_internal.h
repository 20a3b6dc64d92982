// Vantage launch internals: the per-kernel table of specializations, the checks computed from the
// kernel's signature, and `prepare`, the allocation-free part of a launch (lookup, guards, argument
// checks, packing) that the benchmark and the allocation test call without a driver.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "jit/pipeline/signature.h"
#include "vantage/launch.hpp"

namespace vantage::runtime {

/// The most parameters a kernel launch takes (the packed arguments live on the stack).
inline constexpr std::size_t kMaxParams = 64;

using pipeline::ExtentProgram;
using pipeline::ParamCheck;
using pipeline::RequirementCheck;
using pipeline::TensorMapCheck;

/// One specialization of a kernel on one device: made once, then read without locks.
struct Entry {
  enum State : int { kMaking = 0, kReady = 1, kFailed = 2 };
  Entry* next = nullptr;
  // The key.
  DeviceKind kind = DeviceKind::Interpreter;
  int ordinal = 0;
  std::int64_t threads = 0;
  std::vector<std::int64_t> values;  ///< the specialized parameters' values, in parameter order
  std::uint64_t classes = 0;         ///< the size classes of the classified parameters (Table::classified)
  // The outcome.
  std::atomic<int> state{kMaking};
  std::promise<void> promise;
  std::shared_future<void> done;
  std::exception_ptr error;
  // What a launch needs: the backend's executable (guards, block size, alignment, how to run).
  std::unique_ptr<backend::Executable> exec;
};

/// The most TMA tensor maps a launch makes.
inline constexpr std::size_t kMaxTensorMaps = 8;

/// A kernel's launch table (held in the kernel's slot): its signature, and the specializations
/// made so far.
struct Table : detail::KernelSlot, pipeline::Signature {
  explicit Table(const Kernel& kernel);
  ~Table() override;

  std::mutex mu;  ///< taken only to insert an entry
  std::atomic<Entry*> head{nullptr};
  std::atomic<std::int64_t> launches{0}, misses{0}, compiles{0}, failures{0}, compile_ns{0};
};

Table& table_of(const Kernel& kernel);

/// Whether entry `e` is the one for this device, threads per block, specialized values and classes.
inline bool same_key(const Entry& e, const Device& device, std::int64_t threads, const Table& t,
                     std::span<const std::int64_t> values, std::uint64_t classes) {
  if (e.kind != device.kind() || e.ordinal != device.ordinal() || e.threads != threads || e.classes != classes)
    return false;
  for (std::size_t k = 0; k < t.specialized.size(); ++k)
    if (e.values[k] != values[k]) return false;
  return true;
}

/// The entry for this key, if the table has one: a walk of the list, no lock (the launch's hit).
inline Entry* find(Table& t, const Device& device, std::int64_t threads, std::span<const std::int64_t> values,
                   std::uint64_t classes) {
  for (Entry* e = t.head.load(std::memory_order_acquire); e; e = e->next)
    if (same_key(*e, device, threads, t, values, classes)) return e;
  return nullptr;
}

/// The size class of a value (Table::classified): 0 none, 1 [0, 2^30], 2 that and a multiple of 16.
inline std::uint64_t class_of(std::int64_t value) {
  auto a = Assumption::of(value);
  return !a ? 0 : a->multiple == 16 ? 2 : 1;
}
/// The assumption of a class.
Assumption assumption_of(std::uint64_t code);
/// The entry for this key, and whether this call created it (then the caller must fill it).
std::pair<Entry*, bool> claim(Table& t, const Device& device, std::int64_t threads,
                              std::span<const std::int64_t> values, std::uint64_t classes);
/// Makes a claimed entry and publishes the outcome to everyone waiting for it.
void fill(Entry& e, const Kernel& kernel, const Device& device, Table& t);
/// The entry for this key, made by this thread or another; rethrows the error of a failed one.
Entry& entry_for(Table& t, const Kernel& kernel, const Device& device, std::int64_t threads,
                 std::span<const std::int64_t> values, std::uint64_t classes);
/// Runs `task` on the library's background workers.
void post(std::function<void()> task);

/// The packed arguments of one launch: the kernel's parameters, then one length per pointer
/// parameter, then the error record, then the TMA tensor maps (the entry point's ABI, which every
/// backend takes).
struct Prepared {
  static constexpr std::size_t kSlots = 2 * kMaxParams + 1;
  /// A CUtensorMap's bytes (cuda.h aligns it to 128).
  struct alignas(128) MapBytes {
    std::uint64_t opaque[16];
  };
  std::array<std::int64_t, kMaxParams> scalars;
  std::array<std::int64_t, kMaxParams> extents;  ///< elements each pointer may touch (-1: its length)
  std::array<std::uint64_t, kSlots> slots;
  std::array<MapBytes, kMaxTensorMaps> maps;                ///< the tensor maps, after the error record
  std::array<void*, kSlots + kMaxTensorMaps + 1> pointers;  ///< null after the last
  std::size_t count = 0;                                    ///< slots in use
  std::int64_t blocks = 0;
};

/// Everything a launch does before the driver call: the entry (made on a miss), the guards, the
/// argument and shape checks, the packing. Throws LaunchError; allocates nothing on a hit.
const Entry& prepare(const Kernel& kernel, const Device& device, Grid grid, std::span<const LaunchArg> args,
                     Prepared& out);

}  // namespace vantage::runtime
