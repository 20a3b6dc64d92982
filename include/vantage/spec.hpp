// Vantage public specialization vocabulary: what one compiled variant of a kernel is specialized on
// (Spec), the size rules the checker could not decide without the launch shape (Obligation), and
// what the launcher checks on every launch instead of recompiling (Guard, ParamInfo).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vantage/diagnostics.hpp"
#include "vantage/target.hpp"
#include "vantage/types.hpp"

namespace vantage {

/// What a variant may assume of an integer scalar parameter it is not specialized on: its value
/// lies in [min, max] and is a multiple of `multiple`. Lowering proves with these facts (a loop step
/// that cannot wrap, arithmetic that fits 32 bits, a read inside its buffer); the launcher checks
/// them as guards. `Assumption::of(v)` is the class the launcher puts a launch's value in when it
/// picks a variant by itself (automatic specialization, docs/runtime.md).
struct Assumption {
  std::int64_t min = 0;
  std::int64_t max = kMaxSize;
  std::int64_t multiple = 1;

  /// The largest value a size class holds: a size up to this has room to grow by a tile without
  /// leaving an i32.
  static constexpr std::int64_t kMaxSize = std::int64_t{1} << 30;
  /// [0, kMaxSize], a multiple of 16 where `value` is one; nothing for a value outside.
  static std::optional<Assumption> of(std::int64_t value);
  bool holds(std::int64_t value) const { return value >= min && value <= max && value % multiple == 0; }
  /// "0 <= n <= 1073741824 && n % 16 == 0".
  std::string str(const std::string& name) const;
  friend bool operator==(const Assumption&, const Assumption&) = default;
};

/// What one compiled variant is specialized on: the launch shape, the values of the size
/// parameters marked `specialize`, what it assumes of the others, the target and the compiler's
/// float contraction.
/// What NVRTC is told beyond Vantage's own options: every field is part of the cache key (with the
/// files under `include_paths`: their names, sizes and modification times).
struct CompilerOptions {
  /// --use_fast_math: approximate division, square root and transcendentals, denormals flushed to
  /// zero. Results then differ from the interpreter's and the CPU backend's (docs/semantics.md).
  bool fast_math = false;
  bool line_info = false;                      ///< --generate-line-info: source lines in the cubin, for profilers
  int max_registers = 0;                       ///< --maxrregcount=N, 1 to 255 (0: NVRTC's choice)
  std::vector<std::string> include_paths;      ///< --include-path for the headers `unsafe` blocks include
  std::map<std::string, std::string> defines;  ///< --define-macro=NAME=VALUE for `unsafe` blocks
  /// Other NVRTC options as NVRTC spells them ("--extra-device-vectorization"); one NVRTC does not
  /// know is refused by name when the kernel is compiled.
  std::vector<std::string> extra;
  friend bool operator==(const CompilerOptions&, const CompilerOptions&) = default;
};

struct Spec {
  std::int64_t threads = 0;                   ///< threads per block; 0 takes the kernel's declared count
  std::optional<std::int64_t> blocks;         ///< the grid, when a rule needs it; otherwise guarded at launch
  std::map<std::string, std::int64_t> sizes;  ///< specialized parameter values by name
  std::map<std::string, Assumption> assume;   ///< what the variant assumes of other integer parameters
  Arch arch = Arch::SM_90;
  /// Let NVRTC contract `a * b + c` into one fused multiply-add (its default, and CUDA's). Off, every
  /// float operation rounds on its own, as the interpreter computes it (docs/semantics.md).
  bool fp_contract = true;
  CompilerOptions compiler;

  Spec& with_threads(std::int64_t t) {
    threads = t;
    return *this;
  }
  Spec& with_blocks(std::int64_t b) {
    blocks = b;
    return *this;
  }
  Spec& with_size(const std::string& name, std::int64_t v) {
    sizes[name] = v;
    return *this;
  }
  Spec& with_assumption(const std::string& name, Assumption a) {
    assume[name] = a;
    return *this;
  }
  Spec& with_arch(Arch a) {
    arch = a;
    return *this;
  }
  Spec& with_fp_contract(bool on) {
    fp_contract = on;
    return *this;
  }
  Spec& with_compiler(CompilerOptions options) {
    compiler = std::move(options);
    return *this;
  }
};

/// A deferred size rule: true or false only once the launch shape (T, B) is known. Specialization
/// evaluates it; the launcher turns those it cannot fold into residual guards.
struct Obligation {
  enum class Kind : std::uint8_t { Divides, LessEqual, Equal };
  Kind kind;
  Size lhs;
  Size rhs;
  std::string code;         ///< the rule's diagnostic code
  std::string description;  ///< what the rule asks, in words
  SourceLoc loc;

  /// Whether it holds for T threads per block and B blocks.
  bool holds(std::int64_t t, std::int64_t b) const;
  /// "T % 32 == 0", "2 <= B".
  std::string str() const;
};

/// A cheap predicate on launch-time values, evaluated by the launcher on every launch instead of
/// recompiling: "blocks % 2 == 0", "n == 1024".
struct Guard {
  enum class Kind : std::uint8_t {
    BlocksDivisibleBy,  ///< grid blocks % value == 0
    BlocksAtLeast,      ///< grid blocks >= value
    BlocksEqual,        ///< grid blocks == value
    ParamEquals,        ///< scalar parameter `param` == value (specialized sizes)
    BlocksAtMost,       ///< grid blocks <= value (every thread index must fit an i32)
    ParamAtLeast,       ///< scalar parameter `param` >= value (an assumption)
    ParamAtMost,        ///< scalar parameter `param` <= value (an assumption)
    ParamMultipleOf,    ///< scalar parameter `param` % value == 0 (an assumption)
  };
  Kind kind;
  std::int64_t value = 0;
  int param = -1;    ///< parameter index for ParamEquals and the assumptions
  std::string text;  ///< human-readable predicate
  std::string rule;  ///< the checker rule it comes from, if any
  SourceLoc loc;

  /// `scalars[i]` is the value of parameter i when it is an integer scalar (others are ignored).
  bool accepts(std::int64_t blocks, std::span<const std::int64_t> scalars) const;
};

/// One parameter of the run-time signature the launcher checks arguments against.
struct ParamInfo {
  std::string name;
  bool is_pointer = false;
  ScalarType type = ScalarType::I32;  ///< scalar type, or element type of a pointer
  bool is_const = false;
  bool specialized = false;
  std::optional<std::int64_t> value;  ///< the specialized value
  std::string extent;                 ///< extent expression (IR text over parameter names), empty if none
  int alignment = 0;                  ///< bytes the base must be aligned to (vectorized accesses), 0 = element
};

}  // namespace vantage
