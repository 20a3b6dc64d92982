// Vantage kernel signatures: what a launch checks about a kernel, computed from its IR once and
// held as plain values (no IR type), so that the runtime checks and packs arguments without reading
// the IR. Extents and requirements become small postfix programs over the parameters' values,
// evaluated with the IR's integer semantics on a fixed stack: the launch path allocates nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vantage/diagnostics.hpp"
#include "vantage/kernel.hpp"
#include "vantage/types.hpp"

namespace vantage {
namespace pipeline {

/// An integer expression over the kernel's scalar parameters as a postfix program.
class ExtentProgram {
 public:
  /// The value, or nullopt when it is negative or an operation wrapped.
  std::optional<std::int64_t> eval(std::span<const std::int64_t> scalars) const;
  /// The parameters it reads, in order, each once.
  std::vector<int> params() const;

 private:
  friend struct ExtentCompiler;  // signature.cpp: made from the IR only there
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

/// A TMA tensor map the launch makes from a pointer argument.
struct TensorMapCheck {
  std::string name;
  int param = 0;  ///< the pointer parameter it maps
  ExtentProgram rows, cols;
  std::string rows_text, cols_text;
  std::int64_t box_rows = 0, box_cols = 0;
  ScalarType elem = ScalarType::F32;
  SourceLoc loc;
};

/// Everything a launch checks about a kernel.
struct Signature {
  std::string name;
  std::int64_t declared_threads = 0;
  std::vector<ParamCheck> params;
  std::vector<int> specialized;  ///< indices of the specialized scalar parameters
  /// Indices of the integer scalar parameters (of 32 or 64 bits) a launch's value puts in a size
  /// class (automatic specialization: Assumption::of). At most 32.
  std::vector<int> classified;
  std::vector<RequirementCheck> requirements;
  std::vector<TensorMapCheck> maps;
};

/// The signature of a built kernel; throws InternalError where an extent, requirement or tensor
/// map's shape is not an integer expression over the parameters (the checker refuses those first).
Signature signature_of(const Kernel& kernel);

}  // namespace pipeline

namespace detail {

/// What a later stage keeps per kernel, made on first use: the runtime's table of loaded
/// specializations. The pipeline only owns it (the runtime derives from this).
struct KernelSlot {
  virtual ~KernelSlot() = default;
};

/// The kernel's slot, made by `make` on the first call (once, however many threads ask).
KernelSlot& kernel_slot(const Kernel& kernel, std::unique_ptr<KernelSlot> (*make)(const Kernel&));

}  // namespace detail
}  // namespace vantage
