// Vantage launch internals: the per-kernel table of specializations, the checks computed from the
// kernel's signature, and `prepare`, the allocation-free part of a launch (lookup, guards, argument
// checks, packing) that the benchmark and the allocation test call without a driver.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jit/ir/ir.h"
#include "jit/lower/lower.h"
#include "jit/pipeline/handles.h"
#include "vantage/launch.hpp"

namespace vantage::runtime {

/// The most parameters a kernel launch takes (the packed arguments live on the stack).
inline constexpr std::size_t kMaxParams = 64;

/// An integer expression over the kernel's scalar parameters as a postfix program, evaluated with
/// the IR's integer semantics on a fixed stack (no allocation).
class ExtentProgram {
 public:
  /// False when `e` is not an integer expression of literals, parameters and operators.
  bool compile(const ir::ExprPtr& e, const std::vector<ir::ParamNode>& params);
  /// The value, or nullopt when it is negative or an operation wrapped.
  std::optional<std::int64_t> eval(std::span<const std::int64_t> scalars) const;
  /// The parameters it reads, in order, each once.
  std::vector<int> params() const;

 private:
  static constexpr std::size_t kMaxOps = 32;
  struct Op {
    enum Code : std::uint8_t { Const, Param, Unary, Binary, Cast } code;
    std::uint8_t op;
    ScalarType type;    ///< operand type (Binary), result type (others)
    ScalarType result;  ///< result type (Binary), source type (Cast)
    int param;
    std::int64_t value;
  };
  std::vector<Op> ops;
};

/// What the launcher checks about one parameter.
struct ParamCheck {
  std::string name;
  bool pointer = false;
  bool is_const = false;
  ScalarType type = ScalarType::I32;
  bool has_extent = false;
  ExtentProgram extent;
  std::string extent_text;
};

/// A condition every launch must meet (`KernelBuilder::require`).
struct RequirementCheck {
  ExtentProgram program;
  std::string text;
  SourceLoc loc;
  std::vector<int> params;  ///< the parameters it names, for the message
};

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
  // What a launch needs.
  std::int64_t block_threads = 0;
  std::vector<Guard> guards;
  std::vector<int> alignment;               ///< per parameter: bytes its vector accesses need (0: none)
  std::unique_ptr<lower::Lowered> lowered;  ///< the interpreter
  // The CPU backend: the loaded code (shared by identical kernels), its memory, its checked sites.
  std::shared_ptr<void> cpu_code;
  void* cpu_fn = nullptr;
  std::int64_t cpu_shared = 0, cpu_scratch = 0;
  std::vector<lower::CheckSite> sites;
  void* module = nullptr;    ///< GPUs: CUmodule, unloaded with the entry
  void* function = nullptr;  ///< CUfunction
  std::int64_t dynamic_shared = 0;
  int registers = 0;

  ~Entry();
};

/// A TMA tensor map the launch makes from a pointer argument (ir::TensorMapNode).
struct TensorMapCheck {
  std::string name;
  int param = 0;  ///< the pointer parameter it maps
  ExtentProgram rows, cols;
  std::string rows_text, cols_text;
  std::int64_t box_rows = 0, box_cols = 0;
  ScalarType elem = ScalarType::F32;
  SourceLoc loc;
};
inline constexpr std::size_t kMaxTensorMaps = 8;

/// A kernel's launch table (held by its KernelData).
struct Table : detail::KernelSlot {
  explicit Table(const Kernel& kernel);
  ~Table() override;

  std::string name;
  std::int64_t declared_threads = 0;
  std::vector<ParamCheck> params;
  std::vector<int> specialized;  ///< indices of the specialized scalar parameters
  /// Indices of the integer scalar parameters a launch's value puts in a size class (automatic
  /// specialization: Assumption::of), two bits each in Entry::classes: 0 none, 1 [0, 2^30], 2 that
  /// and a multiple of 16. At most 32.
  std::vector<int> classified;
  std::vector<RequirementCheck> requirements;
  std::vector<TensorMapCheck> maps;
  std::mutex mu;  ///< taken only to insert an entry
  std::atomic<Entry*> head{nullptr};
  std::atomic<std::int64_t> launches{0}, misses{0}, compiles{0}, failures{0}, compile_ns{0};
};

Table& table_of(const Kernel& kernel);

/// The packed arguments of one launch: the kernel's parameters, then one length per pointer
/// parameter, then the error record, then the TMA tensor maps (the entry point's ABI, see
/// jit/cuda/emit.h).
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
