// Vantage vector types: 2 to 16 values of one scalar type held by one thread and moved between
// memory and registers as one access of 4, 8 or 16 bytes (CUDA's float4, int4, half2,
// __nv_bfloat162, char4, ...). Written with the public builder only: a vector load records a copy
// loop into a thread-local array, which lowering makes one vector access where it proves the vector
// inside its buffer and aligned (docs/semantics.md, "Vector types"); arithmetic is lane by lane on
// expressions. So every backend, the checker and the cost report see the accesses the user wrote.
#pragma once
#include <cstdint>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "vantage/builder.hpp"

namespace vantage {

/// A vector's element type and lanes: `lanes` (1, 2, 4, 8 or 16) elements of `elem` making at most
/// 16 bytes (V0708). One lane is a scalar (the tail of a vector loop).
struct VecType {
  ScalarType elem = ScalarType::F32;
  int lanes = 4;
  /// Bytes one vector moves.
  int bytes() const { return lanes * type_bytes(elem); }
  /// "f32x4", "f16x2", ...
  std::string name() const;
  friend bool operator==(const VecType&, const VecType&) = default;
};

// CUDA's names, as Vantage spells its types.
inline constexpr VecType f32x2{ScalarType::F32, 2}, f32x4{ScalarType::F32, 4};      ///< float2, float4
inline constexpr VecType i32x2{ScalarType::I32, 2}, i32x4{ScalarType::I32, 4};      ///< int2, int4
inline constexpr VecType u32x2{ScalarType::U32, 2}, u32x4{ScalarType::U32, 4};      ///< uint2, uint4
inline constexpr VecType f64x2{ScalarType::F64, 2}, i64x2{ScalarType::I64, 2};      ///< double2, longlong2
inline constexpr VecType f16x2{ScalarType::F16, 2}, f16x4{ScalarType::F16, 4};      ///< half2, 2 x half2
inline constexpr VecType f16x8{ScalarType::F16, 8};                                 ///< 4 x half2 (16 bytes)
inline constexpr VecType bf16x2{ScalarType::BF16, 2}, bf16x4{ScalarType::BF16, 4};  ///< __nv_bfloat162
inline constexpr VecType bf16x8{ScalarType::BF16, 8};
inline constexpr VecType i8x4{ScalarType::I8, 4}, u8x4{ScalarType::U8, 4};  ///< char4, uchar4
inline constexpr VecType i8x16{ScalarType::I8, 16}, u8x16{ScalarType::U8, 16};
inline constexpr VecType u16x4{ScalarType::U16, 4}, i16x4{ScalarType::I16, 4};  ///< ushort4, short4

/// A vector value: one expression per lane, all of one type. Immutable, like `Expr`; operators
/// work lane by lane and check each lane as the scalar operator does (at the caller's line). An
/// operation on vectors of different lanes makes an invalid vector, reported (V0708, at the
/// operation's line) where it is stored or given a name.
class Vec {
 public:
  Vec() = default;
  Vec(std::vector<Expr> lanes, std::source_location loc = std::source_location::current());
  /// `lanes` copies of `value`.
  static Vec splat(int lanes, const ExprArg& value, std::source_location loc = std::source_location::current());

  int lanes() const { return static_cast<int>(lanes_.size()); }
  /// The lanes' type (lane 0's), with the lane count.
  VecType type() const;
  /// Lane `k` (x, y, z, w are 0 to 3).
  Expr operator[](int k) const;
  Expr x() const { return (*this)[0]; }
  Expr y() const { return (*this)[1]; }
  Expr z() const { return (*this)[2]; }
  Expr w() const { return (*this)[3]; }
  const std::vector<Expr>& lane_exprs() const { return lanes_; }

  /// Empty when the vector is valid; else what went wrong and where.
  const std::string& error() const { return error_; }
  SourceLoc error_loc() const { return error_loc_; }
  static Vec invalid(std::string message, SourceLoc loc);

  /// The thread-local array whose lanes this vector reads in order (a vector load's result, not yet
  /// computed on): a store of it copies that array as it is.
  const View& source() const { return source_; }
  Vec with_source(View array) const;

 private:
  std::vector<Expr> lanes_;
  std::string error_;
  SourceLoc error_loc_;
  View source_;
};

/// An operand of a vector operator, with the caller's line.
struct VecArg {
  Vec v;
  SourceLoc loc;
  VecArg(const Vec& x, std::source_location l = std::source_location::current())  // NOLINT
      : v(x), loc(SourceLoc::from(l)) {}
};

// Lane by lane, with a vector or a scalar (to every lane) on either side: the arithmetic operators,
// and on integer lanes the remainder, bit operators and shifts.
#define VANTAGE_VEC_DECLARE(OP)                       \
  Vec operator OP(const VecArg& a, const VecArg& b);  \
  Vec operator OP(const VecArg& a, const ExprArg& b); \
  Vec operator OP(const ExprArg& a, const VecArg& b);
VANTAGE_VEC_DECLARE(+)
VANTAGE_VEC_DECLARE(-)
VANTAGE_VEC_DECLARE(*)
VANTAGE_VEC_DECLARE(/)
VANTAGE_VEC_DECLARE(%)
VANTAGE_VEC_DECLARE(&)
VANTAGE_VEC_DECLARE(|)
VANTAGE_VEC_DECLARE(^)
VANTAGE_VEC_DECLARE(<<)
VANTAGE_VEC_DECLARE(>>)
#undef VANTAGE_VEC_DECLARE
Vec operator-(const VecArg& a);
Vec min(const VecArg& a, const VecArg& b);
Vec max(const VecArg& a, const VecArg& b);
/// a * b + c lane by lane (CUDA's fmaf; for f16 and bf16 lanes, __hfma).
Vec fma(const VecArg& a, const VecArg& b, const VecArg& c);
/// Every lane converted (`cast(ScalarType::F32, h)` widens an f16x4 to an f32x4).
Vec cast(ScalarType to, const VecArg& v);
/// `f(lane)` for every lane; `zip(a, b, f)` is `f(a[k], b[k])`.
Vec map(const VecArg& v, const std::function<Expr(Expr)>& f);
Vec zip(const VecArg& a, const VecArg& b, const std::function<Expr(Expr, Expr)>& f);
/// The lanes added in order, ((v0 + v1) + v2) + ...; `dot(a, b)` is the sum of a * b.
Expr sum(const VecArg& v);
Expr dot(const VecArg& a, const VecArg& b);

/// Vector `index` of a view as vectors of `type`: elements [index * lanes, index * lanes + lanes),
/// as CUDA's `reinterpret_cast<const float4*>(x)[index]`. `element()` is its first element's index
/// in the view; `like(other)` is the same vector in another view (of its own element type and
/// the same lanes), as a vector loop reads its inputs where it writes its output.
class VecRef {
 public:
  VecRef() = default;
  VecRef(View view, VecType type, const ExprArg& index);
  /// The same, for a vector loop over a partition's share: `index` in `view`, `across` the vector's
  /// index in the loop's whole range (what `like` reads other buffers at).
  VecRef(View view, VecType type, const ExprArg& index, const ExprArg& across);
  const View& view() const { return view_; }
  VecType type() const { return type_; }
  const Expr& index() const { return index_; }
  Expr element() const;
  VecRef like(const View& other) const;

 private:
  View view_;
  VecType type_;
  Expr index_;
  Expr across_;  ///< the vector's index in the range the loop runs over (what `like` uses)
};

}  // namespace vantage

namespace vantage::lib {

/// At thread(1): loads the vector `ref` into a new thread-local array `name` (one vector access
/// where lowering proves it aligned and inside the view; element by element, each checked,
/// otherwise) and returns its lanes. The type's element must be the view's (V0708).
Vec load(Scope& th, std::string name, const VecRef& ref, std::source_location loc = std::source_location::current());
/// At thread(1): stores `value` (lanes of the view's type, as many as the reference's) to the
/// vector `ref`, as one access where lowering proves it; the view must be the thread's to write
/// (a partition's share), as for any store.
void store(Scope& th, const VecRef& ref, const Vec& value, std::source_location loc = std::source_location::current());
/// Names every lane: a variable `name_k` per lane (computed once, read as often as wanted).
Vec let(Scope& th, const std::string& name, const Vec& value,
        std::source_location loc = std::source_location::current());

/// A vector loop over `out`'s n elements: at grid(1), with the kernel's block size T declared, block
/// b owns elements [b * T * L, (b + 1) * T * L) of `out` (L: `type.lanes`), thread t of it the L from
/// b * T * L + t * L. A thread whose L elements are all below n runs `body(th, out_v)` once with
/// `out_v` its vector (type `type`); the thread holding the tail runs it once per element below n
/// with a vector of one lane. So the body must work for any lanes: lane-wise operators, `load` and
/// `store` of `out_v` and `out_v.like(x)`. Launch `blocks_for(n, T, Tile{L})` blocks.
void for_each_vector(Scope& grid, const View& out, const ExprArg& n, VecType type,
                     const std::function<void(Scope& th, const VecRef& out_v)>& body,
                     std::source_location loc = std::source_location::current());

}  // namespace vantage::lib
