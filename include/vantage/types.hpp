// Vantage public vocabulary: hierarchy levels, perspectives, sizes that may depend on the launch
// shape, scalar types and memory spaces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vantage {

/// A level of the GPU compute hierarchy, ordered thread < block < grid.
enum class Level : std::uint8_t { Thread = 0, Block = 1, Grid = 2 };

/// Name of a level as written in diagnostics and printed IR ("thread", "block", "grid").
const char* level_name(Level level);

/// A count that may depend on the launch shape: `coeff * T^threads * B^blocks`, where T is the number
/// of threads per block and B the number of blocks in the grid. Most counts are plain numbers; the
/// symbolic forms appear after `destruct` and in rules whose truth depends on the launch shape.
struct Size {
  std::int64_t coeff = 1;
  bool threads = false;  ///< multiplied by T, threads per block
  bool blocks = false;   ///< multiplied by B, blocks per grid

  constexpr Size() = default;
  constexpr Size(std::int64_t c) : coeff(c) {}  // NOLINT: a plain number is a Size
  constexpr Size(std::int64_t c, bool t, bool b) : coeff(c), threads(t), blocks(b) {}

  /// T, the threads per block of the launch.
  static constexpr Size T() { return {1, true, false}; }
  /// B, the blocks per grid of the launch.
  static constexpr Size B() { return {1, false, true}; }

  constexpr bool is_static() const { return !threads && !blocks; }
  /// The value for a concrete launch shape; nullopt when a symbol it needs is not given.
  std::optional<std::int64_t> eval(std::optional<std::int64_t> t, std::optional<std::int64_t> b) const;
  /// "32", "T", "2*T", "B*T".
  std::string str() const;

  friend constexpr bool operator==(const Size&, const Size&) = default;
};

/// A perspective: a level with a number of units at that level (`thread(32)` is a warp). A perspective
/// of n units is aligned to n.
struct Perspective {
  Level level = Level::Grid;
  Size count = 1;

  /// "grid(1)", "thread(32)", "thread(T)".
  std::string str() const;
  friend constexpr bool operator==(const Perspective&, const Perspective&) = default;
};

/// `grid(n)`: n grids (only `grid(1)` is meaningful; a kernel starts there).
constexpr Perspective grid(std::int64_t n = 1) { return {Level::Grid, n}; }
/// `block(n)`: n consecutive blocks aligned to n.
constexpr Perspective block(std::int64_t n = 1) { return {Level::Block, n}; }
/// `thread(n)`: n consecutive threads aligned to n.
constexpr Perspective thread(std::int64_t n = 1) { return {Level::Thread, n}; }
/// A warp: `thread(32)`.
constexpr Perspective warp() { return thread(32); }
/// A Hopper warpgroup: `thread(128)`.
constexpr Perspective warpgroup() { return thread(128); }

/// Scalar element types of kernel values and memory. (The 8- and 16-bit integers and the 8-bit floats
/// come last so that the numbers of the others, which cache keys and stored IR hold, stay what they
/// were.)
enum class ScalarType : std::uint8_t {
  Bool,
  I32,
  U32,
  I64,
  U64,
  F16,
  BF16,
  F32,
  F64,
  I8,
  U8,
  I16,
  U16,
  F8E4M3,
  F8E5M2
};

/// "bool", "i32", ..., "f64".
const char* type_name(ScalarType type);
/// Size in bytes of one element (bool counts as 1).
int type_bytes(ScalarType type);
/// i8, u8, i16, u16: integers narrower than 32 bits (computed as docs/semantics.md says, each result
/// wrapped to its width)
constexpr bool is_narrow_integer(ScalarType t) {
  return t == ScalarType::I8 || t == ScalarType::U8 || t == ScalarType::I16 || t == ScalarType::U16;
}
/// i8, u8, i16, u16, i32, u32, i64, u64
constexpr bool is_integer(ScalarType t) {
  return t == ScalarType::I32 || t == ScalarType::U32 || t == ScalarType::I64 || t == ScalarType::U64 ||
         is_narrow_integer(t);
}
/// The integers and bool: what integer arithmetic and comparisons take.
constexpr bool is_integral(ScalarType t) { return is_integer(t) || t == ScalarType::Bool; }
/// f16, bf16, f32, f64
constexpr bool is_float(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 || t == ScalarType::F32 || t == ScalarType::F64;
}
/// f16, bf16
constexpr bool is_16bit_float(ScalarType t) { return t == ScalarType::F16 || t == ScalarType::BF16; }
/// f8e4m3, f8e5m2: 8-bit floats, for storage: a kernel converts them to and from f32 (or another
/// float type) and computes there (docs/semantics.md). Not `is_float`: no arithmetic takes them.
constexpr bool is_fp8(ScalarType t) { return t == ScalarType::F8E4M3 || t == ScalarType::F8E5M2; }
/// signed integers and floats
constexpr bool is_signed(ScalarType t) {
  return t == ScalarType::I8 || t == ScalarType::I16 || t == ScalarType::I32 || t == ScalarType::I64 || is_float(t);
}

/// Memory spaces of pointers and arrays.
/// A 1-, 2- or 3-D extent, as CUDA's dim3: x varies fastest. Vantage's launches are linear (B blocks
/// of T threads); a Dim3 names the shape a kernel splits them into (`Grid::of`, `Scope::thread_xyz`,
/// `Scope::block_xyz`).
struct Dim3 {
  std::int64_t x = 1, y = 1, z = 1;
  std::int64_t count() const { return x * y * z; }
};

enum class MemSpace : std::uint8_t { Global, Shared, Local };
const char* space_name(MemSpace space);

/// 16-bit float element tag for builder templates (storage only; arithmetic happens in the kernel).
struct half {
  std::uint16_t bits;
};
/// bfloat16 element tag for builder templates.
struct bfloat16 {
  std::uint16_t bits;
};
/// 8-bit float element tags (OCP e4m3 and e5m2) for builder templates, by their bits.
struct fp8_e4m3 {
  std::uint8_t bits;
};
struct fp8_e5m2 {
  std::uint8_t bits;
};
/// The value of an 8-bit float, and a value rounded to one as a kernel's cast does (to nearest even,
/// held at the largest finite value; docs/semantics.md): for the host side of fp8 buffers.
double value_of(fp8_e4m3 v);
double value_of(fp8_e5m2 v);
fp8_e4m3 to_fp8_e4m3(double x);
fp8_e5m2 to_fp8_e5m2(double x);

namespace detail {
template <class T>
struct ScalarOf;
template <>
struct ScalarOf<bool> {
  static constexpr ScalarType value = ScalarType::Bool;
};
template <>
struct ScalarOf<std::int8_t> {
  static constexpr ScalarType value = ScalarType::I8;
};
template <>
struct ScalarOf<std::uint8_t> {
  static constexpr ScalarType value = ScalarType::U8;
};
template <>
struct ScalarOf<std::int16_t> {
  static constexpr ScalarType value = ScalarType::I16;
};
template <>
struct ScalarOf<std::uint16_t> {
  static constexpr ScalarType value = ScalarType::U16;
};
template <>
struct ScalarOf<std::int32_t> {
  static constexpr ScalarType value = ScalarType::I32;
};
template <>
struct ScalarOf<std::uint32_t> {
  static constexpr ScalarType value = ScalarType::U32;
};
template <>
struct ScalarOf<std::int64_t> {
  static constexpr ScalarType value = ScalarType::I64;
};
template <>
struct ScalarOf<std::uint64_t> {
  static constexpr ScalarType value = ScalarType::U64;
};
template <>
struct ScalarOf<half> {
  static constexpr ScalarType value = ScalarType::F16;
};
template <>
struct ScalarOf<bfloat16> {
  static constexpr ScalarType value = ScalarType::BF16;
};
template <>
struct ScalarOf<fp8_e4m3> {
  static constexpr ScalarType value = ScalarType::F8E4M3;
};
template <>
struct ScalarOf<fp8_e5m2> {
  static constexpr ScalarType value = ScalarType::F8E5M2;
};
template <>
struct ScalarOf<float> {
  static constexpr ScalarType value = ScalarType::F32;
};
template <>
struct ScalarOf<double> {
  static constexpr ScalarType value = ScalarType::F64;
};
}  // namespace detail

/// The ScalarType of a C++ element type (`scalar_of<float>` is F32).
template <class T>
inline constexpr ScalarType scalar_of = detail::ScalarOf<T>::value;

/// Parameter type tags: `GlobalPtr<const float>` is a read-only pointer to global memory.
template <class T>
struct GlobalPtr {};
template <class T>
struct SharedPtr {};
template <class T>
struct LocalPtr {};

/// The longest Scope::nanosleep, in nanoseconds (PTX `nanosleep`: 0 to 1 ms); lib::DeviceTile's
/// back-off is bounded by it too.
inline constexpr std::int64_t kMaxNanosleepNs = 1000000;

}  // namespace vantage
