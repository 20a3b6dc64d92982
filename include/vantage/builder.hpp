// Vantage public builder: describe a kernel or device function from C++ and get a checked, immutable
// kernel back. Every call records the caller's source location so diagnostics point at user code.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "vantage/diagnostics.hpp"
#include "vantage/kernel.hpp"
#include "vantage/types.hpp"

namespace vantage {

namespace detail {
struct BuildCtx;
struct ExprRep;
struct VarRep;
struct MemRep;
struct BuilderAccess;
}  // namespace detail

class Expr;
class ElemRef;

/// An expression: a literal, a parameter or variable, arithmetic on them, a load. Immutable; cheap
/// to copy. Operators build new expressions; comparisons yield `bool` expressions.
class Expr {
 public:
  Expr() = default;
  Expr(bool v, std::source_location loc = std::source_location::current());           // NOLINT
  Expr(int v, std::source_location loc = std::source_location::current());            // NOLINT
  Expr(unsigned v, std::source_location loc = std::source_location::current());       // NOLINT
  Expr(long v, std::source_location loc = std::source_location::current());           // NOLINT
  Expr(long long v, std::source_location loc = std::source_location::current());      // NOLINT
  Expr(unsigned long v, std::source_location loc = std::source_location::current());  // NOLINT
  Expr(float v, std::source_location loc = std::source_location::current());          // NOLINT
  Expr(double v, std::source_location loc = std::source_location::current());         // NOLINT
  Expr(const ElemRef& ref);                                                           // NOLINT

  bool defined() const { return node_ != nullptr; }
  /// The element type (bool for comparisons).
  ScalarType type() const;

 private:
  friend struct detail::BuilderAccess;
  std::shared_ptr<const detail::ExprRep> node_;
};

/// An operand of a builder operator: an expression or a C++ number, with the caller's location.
/// C++ integer literals adapt to the other operand's type (`x * 2` keeps x's type).
struct ExprArg {
  Expr expr;
  SourceLoc loc;
  bool weak_literal = false;  ///< a C++ number whose type may adapt to the other operand

  ExprArg(const Expr& e, std::source_location l = std::source_location::current());     // NOLINT
  ExprArg(const ElemRef& r, std::source_location l = std::source_location::current());  // NOLINT
  ExprArg(bool v, std::source_location l = std::source_location::current());            // NOLINT
  ExprArg(int v, std::source_location l = std::source_location::current());             // NOLINT
  ExprArg(unsigned v, std::source_location l = std::source_location::current());        // NOLINT
  ExprArg(long v, std::source_location l = std::source_location::current());            // NOLINT
  ExprArg(long long v, std::source_location l = std::source_location::current());       // NOLINT
  ExprArg(unsigned long v, std::source_location l = std::source_location::current());   // NOLINT
  ExprArg(float v, std::source_location l = std::source_location::current());           // NOLINT
  ExprArg(double v, std::source_location l = std::source_location::current());          // NOLINT
  ExprArg(const Expr& e, SourceLoc l) : expr(e), loc(l) {}
};

Expr operator+(const ExprArg& a, const ExprArg& b);
Expr operator-(const ExprArg& a, const ExprArg& b);
Expr operator*(const ExprArg& a, const ExprArg& b);
Expr operator/(const ExprArg& a, const ExprArg& b);
Expr operator%(const ExprArg& a, const ExprArg& b);
Expr operator&(const ExprArg& a, const ExprArg& b);
Expr operator|(const ExprArg& a, const ExprArg& b);
Expr operator^(const ExprArg& a, const ExprArg& b);
Expr operator<<(const ExprArg& a, const ExprArg& b);
Expr operator>>(const ExprArg& a, const ExprArg& b);
Expr operator&&(const ExprArg& a, const ExprArg& b);
Expr operator||(const ExprArg& a, const ExprArg& b);
Expr operator==(const ExprArg& a, const ExprArg& b);
Expr operator!=(const ExprArg& a, const ExprArg& b);
Expr operator<(const ExprArg& a, const ExprArg& b);
Expr operator<=(const ExprArg& a, const ExprArg& b);
Expr operator>(const ExprArg& a, const ExprArg& b);
Expr operator>=(const ExprArg& a, const ExprArg& b);
Expr operator-(const ExprArg& a);
Expr operator!(const ExprArg& a);
Expr operator~(const ExprArg& a);

/// `c ? a : b` with both `a` and `b` evaluated (a load in either arm must be in bounds; use `if_` for
/// conditional evaluation). `&&` and `||` likewise evaluate both operands (docs/semantics.md).
Expr select(const ExprArg& c, const ExprArg& a, const ExprArg& b);
Expr min(const ExprArg& a, const ExprArg& b);
Expr max(const ExprArg& a, const ExprArg& b);
/// Explicit conversion; Vantage never converts between types implicitly.
Expr cast(ScalarType to, const ExprArg& e);
template <class T>
Expr cast(const ExprArg& e) {
  return cast(scalar_of<T>, e);
}
Expr sqrt(const ExprArg& e);
Expr rsqrt(const ExprArg& e);
Expr exp(const ExprArg& e);
Expr exp2(const ExprArg& e);
Expr log(const ExprArg& e);
Expr log2(const ExprArg& e);
Expr sin(const ExprArg& e);
Expr cos(const ExprArg& e);
Expr tanh(const ExprArg& e);
Expr abs(const ExprArg& e);
Expr floor(const ExprArg& e);
Expr ceil(const ExprArg& e);
Expr pow(const ExprArg& a, const ExprArg& b);
Expr fma(const ExprArg& a, const ExprArg& b, const ExprArg& c);
/// More of CUDA's math library, of a float (f16 and bf16 computed in f32, as above): the same
/// functions as C's, with CUDA's error bounds on a GPU (docs/semantics.md, "Math functions").
/// `round` takes halves away from zero, `rint` to even.
Expr tan(const ExprArg& e);
Expr asin(const ExprArg& e);
Expr acos(const ExprArg& e);
Expr atan(const ExprArg& e);
Expr sinh(const ExprArg& e);
Expr cosh(const ExprArg& e);
Expr erf(const ExprArg& e);
Expr erfc(const ExprArg& e);
Expr expm1(const ExprArg& e);
Expr log1p(const ExprArg& e);
Expr log10(const ExprArg& e);
Expr cbrt(const ExprArg& e);
Expr trunc(const ExprArg& e);
Expr round(const ExprArg& e);
Expr rint(const ExprArg& e);
/// Of two floats of one type (a literal takes the other's): atan2(y, x), C's fmod (the remainder
/// with the sign of `a`), hypot without overflow, and `a`'s magnitude with `b`'s sign.
Expr atan2(const ExprArg& y, const ExprArg& x);
Expr fmod(const ExprArg& a, const ExprArg& b);
Expr hypot(const ExprArg& a, const ExprArg& b);
Expr copysign(const ExprArg& a, const ExprArg& b);
/// Bools of a float: NaN, an infinity, neither.
Expr isnan(const ExprArg& e);
Expr isinf(const ExprArg& e);
Expr isfinite(const ExprArg& e);
/// Bit functions of an integer of 32 or 64 bits (any signedness), read as its bits, as CUDA's
/// `__popc`, `__clz`, `__ffs` and `__brev` (and their `ll` forms) compute them (docs/semantics.md):
/// `popc` counts the set bits, `clz` the zero bits above the highest set one (the width for 0),
/// `ffs` is 1 + the position of the lowest set bit (0 for 0); each is an `i32`. `brev` reverses the
/// bits and has the operand's type. With `ballot`, `popc(mask & ((1u << lane) - 1u))` is a lane's
/// place among the lanes whose predicate held.
Expr popc(const ExprArg& e);
Expr clz(const ExprArg& e);
Expr ffs(const ExprArg& e);
Expr brev(const ExprArg& e);
/// The bits of `e` as a value of type `to` of the same size, 32 or 64 bits (C++'s std::bit_cast,
/// CUDA's `__float_as_uint` and `__double_as_longlong`): `bit_cast<std::uint32_t>(x)` is an f32's
/// bits, `bit_cast<float>(w)` the f32 they make. Integers of one size and different signedness
/// reinterpret their two's complement bits.
Expr bit_cast(ScalarType to, const ExprArg& e);
template <class T>
Expr bit_cast(const ExprArg& e) {
  return bit_cast(scalar_of<T>, e);
}

/// A thread-local variable declared with `let`; reads like an expression, changes with `assign`.
class Var : public Expr {
 public:
  Var() = default;

 private:
  friend struct detail::BuilderAccess;
  std::shared_ptr<const detail::VarRep> var_;
};

/// An index operand of `view[i]` that remembers the caller's line.
struct IndexArg {
  ExprArg index;
  IndexArg(const Expr& e, std::source_location l = std::source_location::current()) : index(e, l) {}     // NOLINT
  IndexArg(const ElemRef& r, std::source_location l = std::source_location::current()) : index(r, l) {}  // NOLINT
  IndexArg(int v, std::source_location l = std::source_location::current()) : index(v, l) {}             // NOLINT
  IndexArg(long v, std::source_location l = std::source_location::current()) : index(v, l) {}            // NOLINT
  IndexArg(long long v, std::source_location l = std::source_location::current()) : index(v, l) {}       // NOLINT
};

/// A name for memory: a pointer parameter, a shared or local array, or a narrowed view of one made by
/// partition, claim, lower or async. `v[i]` reads; `v[i] = e` writes (recorded in the current scope).
class View {
 public:
  View() = default;

  ElemRef operator[](const IndexArg& i) const;
  /// Multi-dimensional access for views made with a two- or three-argument index function.
  ElemRef operator()(const ExprArg& i, const ExprArg& j) const;
  ElemRef operator()(const ExprArg& i, const ExprArg& j, const ExprArg& k) const;

  bool defined() const { return mem_ != nullptr; }
  const std::string& name() const;
  ScalarType elem() const;
  /// Names the view: diagnostics and the IR use `name` instead of the derived one (`y_part_part`
  /// for a partition of a partition of `y`). For the views a partition, claim, lower or async hands
  /// its body: `[&](Scope& b, View y_t) { y_t.named("y_t"); ... }`. Every copy of the handle sees
  /// the new name. Returns the view.
  const View& named(std::string name, std::source_location loc = std::source_location::current()) const;

 private:
  friend struct detail::BuilderAccess;
  std::shared_ptr<const detail::MemRep> mem_;
  std::weak_ptr<detail::BuildCtx> ctx_;  ///< the builder whose body a store through this view goes to
};

/// One element of a view: converts to an expression (a load), assigning to it records a store in the
/// innermost body of the view's builder. The store is reported at the line of `view[i]`.
class ElemRef {
 public:
  ElemRef(View view, std::vector<Expr> indices, SourceLoc loc)
      : view_(std::move(view)), indices_(std::move(indices)), loc_(loc) {}
  ElemRef(const ElemRef&) = default;
  ElemRef& operator=(const ExprArg& value);
  ElemRef& operator=(const ElemRef& other);  // stores other's value; never rebinds
  ElemRef& operator+=(const ExprArg& value);
  Expr load() const;

 private:
  View view_;
  std::vector<Expr> indices_;
  SourceLoc loc_;
};

/// An explicit perspective annotation for `let`: `s.let("x", e, at(thread(1)))`.
struct At {
  Perspective p;
};
inline At at(Perspective p) { return {p}; }

/// Extent of a pointer parameter in elements, an expression over the kernel's integer parameters.
struct Extent {
  Expr n;
};
inline Extent extent(const Expr& n) { return {n}; }

/// Marks an integer kernel parameter as a size to specialize on (its value becomes a constant).
struct SpecializeTag {};
inline constexpr SpecializeTag specialize{};

/// Tensor-core `mma.sync` shapes and types.
enum class MmaKind : std::uint8_t {
  TF32_M16N8K8,   ///< A: f32[4], B: f32[2], C/D: f32[4]
  F16_M16N8K16,   ///< A: f16[8], B: f16[4], C/D: f32[4]
  BF16_M16N8K16,  ///< A: bf16[8], B: bf16[4], C/D: f32[4]
  S8_M16N8K32,    ///< A: i8[16], B: i8[8], C/D: i32[4] (exact, wrapping sums)
};

/// Kinds of atomic read-modify-write: `mem[i] = op(mem[i], value)`. And, Or and Xor take integers of
/// 32 and 64 bits (docs/semantics.md, "Atomics"). Cas is Scope::atomic_cas's (compare and swap). Inc
/// and Dec are CUDA's wrapping counters on u32 (`value` is the bound): Inc gives `old >= value ? 0 :
/// old + 1`, Dec `old == 0 || old > value ? value : old - 1`. Load and Store are Scope::atomic_load's
/// and Scope::atomic_store's.
enum class AtomicOp : std::uint8_t { Add, Min, Max, Exch, And, Or, Xor, Cas, Inc, Dec, Load, Store };
/// Which threads an atomic is indivisible for: every thread of the device (the default), only the
/// threads of the block (cheaper where only they share the element; two blocks' block-scope atomics
/// on one element race), or the whole system, the host and other devices included.
enum class AtomicScope : std::uint8_t { Device, Block, System };
/// How an atomic orders its thread's other accesses for the threads of its scope (C++'s
/// memory_order, PTX's .relaxed, .acquire, .release and .acq_rel): relaxed (the default) orders
/// nothing; a release makes every earlier access of its thread visible to whoever acquires the value
/// it wrote; an acquire makes what the releasing thread did before visible to every later access.
/// A load takes relaxed or acquire, a store relaxed or release (V0506).
enum class MemoryOrder : std::uint8_t { Relaxed, Acquire, Release, AcqRel };
/// An atomic's scope and ordering, from either or both: `AtomicScope::Block`, `MemoryOrder::Release`,
/// `{AtomicScope::Block, MemoryOrder::Acquire}`.
struct Atomicity {
  AtomicScope scope = AtomicScope::Device;
  MemoryOrder order = MemoryOrder::Relaxed;
  constexpr Atomicity() = default;
  constexpr Atomicity(AtomicScope s) : scope(s) {}  // NOLINT(google-explicit-constructor): as the enum
  constexpr Atomicity(MemoryOrder o) : order(o) {}  // NOLINT(google-explicit-constructor)
  constexpr Atomicity(AtomicScope s, MemoryOrder o) : scope(s), order(o) {}
};

class DeviceFunction;
class Scope;
struct Spec;

/// An argument of a device-function call: a value or memory.
using CallArg = std::variant<ExprArg, View>;

/// One branch of `split`: its unit count and body.
/// A TMA tensor map over a row-major matrix in a pointer parameter, made by the runtime at every GPU
/// launch from the buffer given (`KernelBuilder::tensor_map`). Boxes use the 128-byte swizzle, the
/// layout `wgmma` reads, so a box row is exactly 128 bytes. The hardware fills the part of a box
/// outside the matrix with zeros, and the launch refuses a buffer smaller than the matrix: a TMA load
/// never reads outside its buffer.
class TensorMap {
 public:
  TensorMap() = default;
  bool defined() const { return index_ >= 0; }
  const std::string& name() const { return name_; }
  ScalarType elem() const { return elem_; }
  std::int64_t box_rows() const { return box_rows_; }
  std::int64_t box_cols() const { return box_cols_; }
  /// Bytes one box moves: what an `mbarrier_arrive_expect_tx` for one load announces.
  std::int64_t box_bytes() const { return box_rows_ * box_cols_ * type_bytes(elem_); }

 private:
  friend struct detail::BuilderAccess;
  int index_ = -1;
  std::string name_;
  ScalarType elem_ = ScalarType::F32;
  std::int64_t box_rows_ = 0, box_cols_ = 0;
  std::weak_ptr<detail::BuildCtx> ctx_;
};

struct SplitBranch {
  std::int64_t count;
  std::function<void(Scope&)> body;
  SourceLoc loc;
  SplitBranch(std::int64_t n, std::function<void(Scope&)> f, std::source_location l = std::source_location::current())
      : count(n), body(std::move(f)), loc(SourceLoc::from(l)) {}
};

/// An input or output binding of an unsafe block: the name used in the CUDA text.
struct UnsafeIn {
  std::string name;
  ExprArg value;
};
struct UnsafeOut {
  std::string name;
  Var var;
};

/// Where statements go: the body of a kernel, function, or construct. Every method records one
/// statement at the end of this scope's body, which must be the innermost body being recorded by its
/// builder (using an outer scope inside a nested lambda, or a scope whose body has ended, is an error
/// at the caller's line).
class Scope {
 public:
  Scope(std::shared_ptr<detail::BuildCtx> ctx, std::uint64_t block) : ctx_(std::move(ctx)), block_(block) {}

  /// A variable; it lives at the narrower of the code's perspective and what the value varies with.
  Var let(std::string name, const ExprArg& value, std::source_location loc = std::source_location::current());
  /// A variable living at an explicit perspective (the code's perspective or narrower).
  Var let(std::string name, const ExprArg& value, At at, std::source_location loc = std::source_location::current());
  void assign(const Var& var, const ExprArg& value, std::source_location loc = std::source_location::current());

  /// The kernel's declared threads per block (`KernelBuilder::block_threads`, called before `body`),
  /// a constant of every specialization; none in a device function, or when not declared.
  std::optional<std::int64_t> block_threads() const;
  /// Records a builder error (reported by `build()` with the checker's) at the caller's line: for
  /// helpers written over these primitives (the device library) whose preconditions fail.
  void diagnose(std::string code, std::string message, std::source_location loc = std::source_location::current());
  /// The same at a line a helper kept (the line of an operator whose result it records now).
  void diagnose(std::string code, std::string message, SourceLoc loc);
  /// Records `body` as the work of helper `name` ("lib::store_by_one"): the checker's diagnostics on
  /// the claims and partitions it makes name the helper, not a primitive its caller never wrote. A
  /// helper runs its caller's own code (a body it was given) under `called_as("", ...)`, so that what
  /// that code makes is the caller's.
  void called_as(const std::string& name, const std::function<void()>& body);

  /// The launch's blocks (`gridDim.x`, an i32 from 1), the same value everywhere: for grid-stride
  /// loops. With `block_threads()` it is the launch shape.
  Expr grid_blocks(std::source_location loc = std::source_location::current());

  /// CUDA's threadIdx.{x,y,z} for a block of `shape` (its count must be the kernel's block size,
  /// V0915): t % X, (t / X) % Y, t / (X * Y) of the thread's position t in its block. At grid(1) or
  /// block(1) (in a narrower group, `id()` is relative to it).
  struct Id3 {
    Expr x, y, z;
  };
  Id3 thread_xyz(Dim3 shape, std::source_location loc = std::source_location::current());
  /// CUDA's blockIdx.{x,y} for a 2-D grid `x_blocks` wide (a value of the grid, such as
  /// `(N + 15) / 16`; launch `Grid::of({x_blocks, rows}, ...)`): b % X, b / X, and z = 0. At grid(1).
  Id3 block_xyz(const ExprArg& x_blocks, std::source_location loc = std::source_location::current());
  /// The same for a 3-D grid `x_blocks` wide and `y_blocks` high: b % X, (b / X) % Y, b / (X * Y).
  Id3 block_xyz(const ExprArg& x_blocks, const ExprArg& y_blocks,
                std::source_location loc = std::source_location::current());

  /// The index of the narrower unit `p` inside the code's current perspective (relative, from 0).
  Expr id(Perspective p, std::source_location loc = std::source_location::current());

  /// A thread-local array, living at the code's perspective unless `at` says narrower.
  View local_array(std::string name, ScalarType elem, std::int64_t count, std::optional<At> at = std::nullopt,
                   std::source_location loc = std::source_location::current());
  template <class T>
  View local_array(std::string name, std::int64_t count, std::source_location loc = std::source_location::current()) {
    return local_array(std::move(name), scalar_of<T>, count, std::nullopt, loc);
  }
  /// A shared-memory array; only at `block(1)`, with a static size.
  View shared(std::string name, ScalarType elem, const ExprArg& count,
              std::source_location loc = std::source_location::current());
  template <class T>
  View shared(std::string name, const ExprArg& count, std::source_location loc = std::source_location::current()) {
    return shared(std::move(name), scalar_of<T>, count, loc);
  }
  /// The same, with its first element on an `align`-byte boundary (a power of two from 16 to 4096):
  /// TMA boxes and `wgmma` tiles with the 128-byte swizzle need 1024.
  View shared_aligned(std::string name, ScalarType elem, const ExprArg& count, std::int64_t align,
                      std::source_location loc = std::source_location::current());

  void if_(const ExprArg& cond, const std::function<void(Scope&)>& then_body,
           std::source_location loc = std::source_location::current());
  void if_(const ExprArg& cond, const std::function<void(Scope&)>& then_body,
           const std::function<void(Scope&)>& else_body, std::source_location loc = std::source_location::current());
  /// `for name in [begin, end) step 1`; constant bounds make an unrollable loop.
  void for_(std::string name, const ExprArg& begin, const ExprArg& end, const std::function<void(Scope&, Expr)>& body,
            std::source_location loc = std::source_location::current());
  /// A loop whose counter steps by any rule, as C's `for (name = begin; cond(name); name = next(name))`:
  /// `for_("s", 1, [&](Expr s) { return s < n; }, [](Expr s) { return s << 1; }, body)` runs
  /// s = 1, 2, 4, ... while s < n. Recorded as a variable, a `while_` on `cond`, and in its body the
  /// iteration's value, the step to the next, then `body`: so `continue_()` steps too, and `next` is
  /// evaluated before the body runs. The checker sees what it sees of those: a counter whose begin and
  /// rules are uniform across the scope is uniform, and may bound a loop with barriers.
  void for_(std::string name, const ExprArg& begin, const std::function<Expr(Expr)>& cond,
            const std::function<Expr(Expr)>& next, const std::function<void(Scope&, Expr)>& body,
            std::source_location loc = std::source_location::current());
  void for_(std::string name, const ExprArg& begin, const ExprArg& end, const ExprArg& step,
            const std::function<void(Scope&, Expr)>& body, std::source_location loc = std::source_location::current());
  /// Leaves the innermost loop (`break`), or goes on with its next iteration (`continue`; a counted
  /// `for_` steps its counter, a `for_` with a step rule has stepped it already). Only in thread(1)
  /// code, the loop's own (V0211, V0212): a thread's early exit can skip no barrier or collective.
  void break_(std::source_location loc = std::source_location::current());
  void continue_(std::source_location loc = std::source_location::current());
  void while_(const ExprArg& cond, const std::function<void(Scope&)>& body,
              std::source_location loc = std::source_location::current());

  /// Replicates the body over the equal, aligned units `p` inside the current perspective.
  void group(Perspective p, const std::function<void(Scope&)>& body,
             std::source_location loc = std::source_location::current());
  /// Shards the current perspective unequally into branches of `level` units that run in parallel.
  void split(Level level, std::vector<SplitBranch> branches,
             std::source_location loc = std::source_location::current());
  /// Moves `block(1)` to `thread(T)` or `grid(1)` to `block(B)`.
  void destruct(const std::function<void(Scope&)>& body, std::source_location loc = std::source_location::current());

  /// Narrows memory to equal shares of perspective `p`; `index(i)` maps a share's index to the
  /// original's. The original name is unusable inside the body.
  void partition(const View& mem, Perspective p, const std::function<Expr(Expr)>& index,
                 const std::function<void(Scope&, View)>& body,
                 std::source_location loc = std::source_location::current());
  void partition(const View& mem, Perspective p, const std::function<Expr(Expr, Expr)>& index,
                 const std::function<void(Scope&, View)>& body,
                 std::source_location loc = std::source_location::current());
  /// Hands the whole region to one split branch of perspective `p`.
  void claim(const View& mem, Perspective p, const std::function<void(Scope&, View)>& body,
             std::source_location loc = std::source_location::current());
  /// Moves `block(1)` memory to `thread(T)` (or `grid(1)` to `block(B)`), as destruct does for code.
  void lower(const View& mem, const std::function<void(Scope&, View)>& body,
             std::source_location loc = std::source_location::current());
  /// Marks memory as the target of asynchronous copies for the body.
  void async(const View& mem, const std::function<void(Scope&, View)>& body,
             std::source_location loc = std::source_location::current());

  /// Calls a device function (its perspective signature must be satisfied here).
  void call(const DeviceFunction& fn, std::vector<CallArg> args,
            std::source_location loc = std::source_location::current());
  /// Calls a device function that returns a value.
  Var call(std::string result_name, const DeviceFunction& fn, std::vector<CallArg> args,
           std::source_location loc = std::source_location::current());

  void ret(std::source_location loc = std::source_location::current());
  void ret(const ExprArg& value, std::source_location loc = std::source_location::current());

  /// Raw CUDA the checker cannot see into, run at exactly perspective `needs`. Inputs and outputs
  /// are bound to names used in `cuda`.
  void unsafe(Perspective needs, std::string cuda, std::vector<UnsafeIn> inputs = {},
              std::vector<UnsafeOut> outputs = {}, std::source_location loc = std::source_location::current());

  // Collective and special intrinsics; each carries the perspective it needs.
  void sync_threads(std::source_location loc = std::source_location::current());  ///< block(1)
  void sync_warp(std::source_location loc = std::source_location::current());     ///< thread(32)
  /// The barrier of every thread of every block of the cluster (`barrier.cluster.arrive` and `wait`,
  /// release and acquire), at block(1) in a kernel of clusters (KernelBuilder::cluster). Every block
  /// of the cluster must reach it (one that does not hangs a GPU): not under a branch or loop whose
  /// condition may differ between blocks, nor in a split of blocks (V0213). It also orders the
  /// block's own threads, as sync_threads does.
  void cluster_sync(std::source_location loc = std::source_location::current());
  /// This block's rank in its cluster, 0 to cluster - 1: `blockIdx.x % cluster`, the launch's block
  /// (a tile loop's block may take several tiles), a value of block(1). Declare the cluster first.
  Expr cluster_rank(std::source_location loc = std::source_location::current());
  /// `bar.sync id, threads` at thread(threads); threads a multiple of 32.
  void named_barrier(int id, int threads, std::source_location loc = std::source_location::current());
  Var shfl_xor(std::string name, const ExprArg& value, const ExprArg& lane_mask,
               std::source_location loc = std::source_location::current());
  Var shfl_down(std::string name, const ExprArg& value, const ExprArg& delta,
                std::source_location loc = std::source_location::current());
  Var shfl_up(std::string name, const ExprArg& value, const ExprArg& delta,
              std::source_location loc = std::source_location::current());
  /// `value` of lane `lane`. With a lane the same for the whole warp (a constant, or a value living at
  /// thread(32) or wider) it is a broadcast, and the result lives at thread(32): one value of the warp,
  /// which may bound a loop or guard a `sync_warp`. Otherwise it lives at thread(1).
  Var shfl_idx(std::string name, const ExprArg& value, const ExprArg& lane,
               std::source_location loc = std::source_location::current());
  /// Warp votes; the result is uniform across the warp.
  Var vote_all(std::string name, const ExprArg& pred, std::source_location loc = std::source_location::current());
  Var vote_any(std::string name, const ExprArg& pred, std::source_location loc = std::source_location::current());
  Var ballot(std::string name, const ExprArg& pred, std::source_location loc = std::source_location::current());
  /// Atomic read-modify-write of `mem[index]`; returns the old value. `how`: the scope and ordering
  /// (the device's, relaxed).
  Var atomic(std::string name, AtomicOp op, const View& mem, const ExprArg& index, const ExprArg& value,
             Atomicity how = {}, std::source_location loc = std::source_location::current());
  /// Compare and swap: `mem[index] = mem[index] == compare ? value : mem[index]` as one step; returns
  /// the old value (the swap happened where it equals `compare`). Integers of 32 and 64 bits.
  Var atomic_cas(std::string name, const View& mem, const ExprArg& index, const ExprArg& compare, const ExprArg& value,
                 Atomicity how = {}, std::source_location loc = std::source_location::current());
  /// The same where the old value is not wanted: `atomic(AtomicOp::Add, hist, bin, 1)`.
  void atomic(AtomicOp op, const View& mem, const ExprArg& index, const ExprArg& value, Atomicity how = {},
              std::source_location loc = std::source_location::current());
  /// An atomic load of `mem[index]` (relaxed or acquire): one indivisible read, which never races
  /// with other atomics of the element. Types of 32 and 64 bits.
  Var atomic_load(std::string name, const View& mem, const ExprArg& index, Atomicity how = {},
                  std::source_location loc = std::source_location::current());
  /// An atomic store of `value` to `mem[index]` (relaxed or release).
  void atomic_store(const View& mem, const ExprArg& index, const ExprArg& value, Atomicity how = {},
                    std::source_location loc = std::source_location::current());
  /// `mma.sync` at thread(32) on fragments held in thread-local arrays: d = a * b + c.
  void mma_sync(MmaKind kind, const View& d, const View& a, const View& b, const View& c,
                std::source_location loc = std::source_location::current());
  /// `ldmatrix.x{count}` at thread(32) from shared memory into a u32 local array.
  void ldmatrix(int count, const View& dst, const View& src, const ExprArg& index,
                std::source_location loc = std::source_location::current());
  /// Hopper `wgmma.mma_async` m64nNk16 at thread(128): acc (f32[n/2] per thread) += A * B, with A
  /// a 64x16 and B an Nx16 tile (both K-major, f16 or bf16) read from shared memory where a TMA box
  /// with the 128-byte swizzle put them: rows of 64 elements (128 bytes), the tile starting
  /// `a_offset` / `b_offset` elements into the view (a whole row of 8-row groups plus 0, 16, 32 or
  /// 48 for the K step). Both tiles must be proven inside their arrays at specialization (V1009).
  /// With tiles of bytes (i8 or u8, A's and B's signs each their own) it is the integer form,
  /// m64nNk32 into i32 accumulators (wrapping): rows of 128 elements, K steps of 0, 32, 64 or 96.
  void wgmma(int n, const View& acc, const View& a, const ExprArg& a_offset, const View& b, const ExprArg& b_offset,
             std::source_location loc = std::source_location::current());
  void wgmma_fence(std::source_location loc = std::source_location::current());
  void wgmma_commit(std::source_location loc = std::source_location::current());
  void wgmma_wait(int pending, std::source_location loc = std::source_location::current());
  /// `cp.async` of `bytes` (4, 8, 16) at thread(1), inside an async scope of `dst`.
  void cp_async(const View& dst, const ExprArg& dst_index, const View& src, const ExprArg& src_index, int bytes,
                std::source_location loc = std::source_location::current());
  void cp_async_commit(std::source_location loc = std::source_location::current());
  void cp_async_wait(int pending, std::source_location loc = std::source_location::current());
  /// Suspends the thread for about `ns` nanoseconds (an i32, 0 to 1,000,000; a constant outside is
  /// V0503, a value outside at run time is clamped): the back-off of a loop that polls memory another
  /// block writes, so that the polls leave the memory system to the writers. From any perspective;
  /// only a GPU sleeps (CUDA's `__nanosleep`), the interpreter and the CPU backend evaluate `ns` (its
  /// reads checked as everywhere) and go on at once.
  void nanosleep(const ExprArg& ns, std::source_location loc = std::source_location::current());
  /// Each thread that runs it checks `condition` (a bool): where it is false the launch fails with
  /// ExecutionError (check() "assert") naming `what`, the user's line, the block and the thread,
  /// as a failed access is reported: at once on the interpreter, on the CPU backend and a GPU at the
  /// launch's end or the next synchronize (the first thread's; the others go on, and no GPU context
  /// is lost, as it would be to CUDA's assert). From any perspective (docs/semantics.md, "Assertions").
  void assert_that(const ExprArg& condition, const std::string& what,
                   std::source_location l = std::source_location::current());
  /// Writes one line from each thread that runs it, from any perspective: `format` with each `{}`
  /// replaced by the next of `values`, or each `{:SPEC}` by it in a printf conversion (`{:08x}`,
  /// `{:.3f}`; `{{` and `}}` are braces); at most 16 values. On a GPU it is CUDA's `printf` (lines
  /// appear when the launch is synchronised, in no set order); the interpreter and the CPU backend
  /// write the same text to standard output as the threads run. A format that cannot be read, or
  /// whose places do not match the values, is V0503 (docs/semantics.md, "Printing").
  void print(const std::string& format, std::initializer_list<ExprArg> values = {},
             std::source_location loc = std::source_location::current());
  /// TMA 2-D load at thread(1): the box of `map` whose first element is at (`row`, `col`) of the
  /// matrix goes to `dst[dst_index...]` in shared memory (an array aligned to 1024 bytes, the box
  /// proven inside it, V1009) and completes on mbarrier `bars[slot]`. Its data may be used only after
  /// a wait on that mbarrier (V1010): no barrier waits for TMA. One thread writes the whole box, so
  /// `dst` needs no narrowing; ordering it against other threads is the mbarrier protocol's job.
  void tma_load(const View& dst, const ExprArg& dst_index, const TensorMap& map, const ExprArg& row, const ExprArg& col,
                const View& bars, const ExprArg& slot, std::source_location loc = std::source_location::current());
  /// TMA 2-D store at thread(1): the box of `map` laid out in `src[src_index...]` (shared, aligned to
  /// 1024 bytes, in the 128-byte swizzle a TMA load leaves; proven inside, V1009) goes to global
  /// memory, box element (r, c) to `dst[dst_index + r * cols + c]` (`cols`: the map's), where `dst`
  /// is a view of the map's matrix that this thread may write (narrowed to it: V0301) and places a
  /// box row `cols` apart (an offset of the matrix, as lib::for_each_tile's tiles are: V1012). Elements
  /// past the matrix are not written. Each store is a bulk group of its own; the hardware reads `src`
  /// after the instruction, until `tma_store_wait` lets the thread go on: writing `src` before is a
  /// race (the interpreter's racecheck), and so is leaving a store unwaited at the end of the thread.
  /// Vantage fences the threads' stores into `src` from the TMA unit before the barrier it places.
  void tma_store(const TensorMap& map, const View& src, const ExprArg& src_index, const View& dst,
                 const ExprArg& dst_index, std::source_location loc = std::source_location::current());
  /// TMA 2-D load at thread(1) of a kernel of clusters (KernelBuilder::cluster): as `tma_load`, but
  /// the box goes to `dst[dst_index...]` of every block of the cluster whose rank is a bit of `mask`
  /// (`cp.async.bulk.tensor...multicast::cluster`), each completing on its own `bars[slot]`. Each of
  /// those blocks' barriers must expect the box's bytes; `mask` must be proven below 2^cluster (V1009).
  /// The blocks' shared memory and mbarriers must exist when it runs: a `cluster_sync` after their
  /// initialisation orders that.
  void tma_load_multicast(const View& dst, const ExprArg& dst_index, const TensorMap& map, const ExprArg& row,
                          const ExprArg& col, const View& bars, const ExprArg& slot, const ExprArg& mask,
                          std::source_location loc = std::source_location::current());
  /// Waits until all but the newest `pending` of this thread's TMA stores have read their source
  /// (`cp.async.bulk.wait_group.read`): their shared memory may be written again.
  void tma_store_wait(int pending = 0, std::source_location loc = std::source_location::current());
  /// mbarriers: `bars` is a shared u64 array with one barrier per slot (a pipeline's stages are a
  /// loop over slots). `init` at thread(1) sets how many arrivals complete a phase.
  void mbarrier_init(const View& bars, const ExprArg& slot, const ExprArg& count,
                     std::source_location loc = std::source_location::current());
  void mbarrier_arrive(const View& bars, const ExprArg& slot,
                       std::source_location loc = std::source_location::current());
  /// An arrival at `bars[slot]` of the block of rank `rank` in this block's cluster (`mapa` and
  /// `mbarrier.arrive.release.cluster`): a consumer frees a slot that another block's producer fills.
  /// `rank` must be proven below the cluster size (V1009).
  void mbarrier_arrive_cluster(const View& bars, const ExprArg& slot, const ExprArg& rank,
                               std::source_location loc = std::source_location::current());
  /// An arrival that also announces `bytes` that TMA loads will complete on the barrier's phase.
  void mbarrier_arrive_expect_tx(const View& bars, const ExprArg& slot, std::int64_t bytes,
                                 std::source_location loc = std::source_location::current());
  /// Waits until phase `phase` (its parity) of `bars[slot]` has completed.
  void mbarrier_wait(const View& bars, const ExprArg& slot, const ExprArg& phase,
                     std::source_location loc = std::source_location::current());
  /// `setmaxnreg` at thread(128) (sm_90a): a warpgroup raises (`increase`) or lowers its per-thread
  /// register limit to `count` (24..256, a multiple of 8), as producer and consumer warpgroups do.
  void setmaxnreg(int count, bool increase, std::source_location loc = std::source_location::current());

 private:
  friend struct detail::BuilderAccess;
  std::shared_ptr<detail::BuildCtx> ctx_;
  std::uint64_t block_;  ///< the body this scope records into
};

namespace detail {
template <class T>
struct ParamKind {
  static constexpr bool is_pointer = false;
  static constexpr ScalarType elem = scalar_of<T>;
  static constexpr bool is_const = false;
  static constexpr MemSpace space = MemSpace::Global;
};
template <class T>
struct ParamKind<GlobalPtr<T>> {
  static constexpr bool is_pointer = true;
  static constexpr ScalarType elem = scalar_of<std::remove_const_t<T>>;
  static constexpr bool is_const = std::is_const_v<T>;
  static constexpr MemSpace space = MemSpace::Global;
};
template <class T>
struct ParamKind<SharedPtr<T>> : ParamKind<GlobalPtr<T>> {
  static constexpr MemSpace space = MemSpace::Shared;
};
template <class T>
struct ParamKind<LocalPtr<T>> : ParamKind<GlobalPtr<T>> {
  static constexpr MemSpace space = MemSpace::Local;
};
}  // namespace detail

/// Builds a kernel: parameters, launch shape, shared-memory budget, body; `build()` checks it.
class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name, std::source_location loc = std::source_location::current());
  ~KernelBuilder();
  KernelBuilder(const KernelBuilder&) = delete;
  KernelBuilder& operator=(const KernelBuilder&) = delete;

  /// A scalar parameter (lives at grid(1)).
  Expr scalar_param(std::string name, ScalarType type, bool specialized = false,
                    std::source_location loc = std::source_location::current());
  /// A pointer parameter (lives at grid(1)) with an optional extent in elements.
  View pointer_param(std::string name, ScalarType elem, MemSpace space, bool is_const,
                     std::optional<Extent> extent = std::nullopt,
                     std::source_location loc = std::source_location::current());

  /// `param<int>("n")`, `param<int>("n", specialize)`.
  template <class T>
  requires(!detail::ParamKind<T>::is_pointer) Expr
      param(std::string name, std::source_location loc = std::source_location::current()) {
    return scalar_param(std::move(name), scalar_of<T>, false, loc);
  }
  template <class T>
  requires(!detail::ParamKind<T>::is_pointer) Expr
      param(std::string name, SpecializeTag, std::source_location loc = std::source_location::current()) {
    return scalar_param(std::move(name), scalar_of<T>, true, loc);
  }
  /// `param<GlobalPtr<const float>>("x", extent(n))`.
  template <class T>
  requires(detail::ParamKind<T>::is_pointer) View param(std::string name, std::optional<Extent> ext = std::nullopt,
                                                        std::source_location loc = std::source_location::current()) {
    using K = detail::ParamKind<T>;
    return pointer_param(std::move(name), K::elem, K::space, K::is_const, std::move(ext), loc);
  }

  /// Threads per block. Left unset, it is bound at specialization and size rules become obligations.
  KernelBuilder& block_threads(std::int64_t threads, std::source_location loc = std::source_location::current());
  /// Fixes the number of blocks (rarely needed; most kernels leave the grid to the launch).
  KernelBuilder& grid_blocks(std::int64_t blocks, std::source_location loc = std::source_location::current());
  /// Promises that the launch grid is a multiple of `m` blocks (a residual guard at launch).
  KernelBuilder& grid_multiple_of(std::int64_t m, std::source_location loc = std::source_location::current());
  /// Thread-block clusters of `blocks` consecutive blocks (2 to 8; sm_90): the blocks of a cluster run
  /// at the same time and may synchronize (`Scope::cluster_sync`), multicast TMA loads to each other's
  /// shared memory and arrive on each other's mbarriers. The grid must be a multiple of `blocks` (a
  /// guard at launch, V0901). Block b's rank in its cluster is `b % blocks` (`Scope::cluster_rank`).
  /// The CPU backend runs each block alone and refuses `cluster_sync`; the interpreter runs a
  /// cluster's blocks together.
  KernelBuilder& cluster(std::int64_t blocks, std::source_location loc = std::source_location::current());
  /// At least `blocks` blocks of this kernel on each multiprocessor at once (1 to 32): the GPU
  /// compiler keeps each thread's registers to what that many blocks of block_threads() leave
  /// (`__launch_bounds__(threads, blocks)`: two blocks of 256 threads, 128 registers), spilling to
  /// local memory if it must (`vantage compile` prints the registers; the twin table the spills). A
  /// hint to the GPU compiler only: no backend computes anything differently. A kernel that calls
  /// `setmaxnreg` holds one block an SM and cannot ask for more. Both are V0918.
  KernelBuilder& min_blocks_per_sm(std::int64_t blocks, std::source_location loc = std::source_location::current());
  /// A condition every launch must meet, on the kernel's integer scalar parameters: `require(n % 4
  /// == 0)`, `require(M % 16 == 0 && N % 8 == 0)`. The launcher evaluates it and refuses a launch
  /// that breaks it (LaunchError, naming the condition and this line); a specialization that breaks
  /// it is an error (V0912). Kernels whose tiling assumes divisibility say so here.
  KernelBuilder& require(const ExprArg& cond, std::source_location loc = std::source_location::current());
  /// A TMA tensor map over `matrix` (a pointer parameter), a row-major `rows` x `cols` matrix
  /// (integer expressions over the scalar parameters), read in `box_rows` x `box_cols` boxes; a box row
  /// is exactly 128 bytes (64 f16 or bf16). The runtime makes it at each GPU launch (V0916).
  TensorMap tensor_map(std::string name, const View& matrix, const ExprArg& rows, const ExprArg& cols,
                       std::int64_t box_rows, std::int64_t box_cols,
                       std::source_location loc = std::source_location::current());
  /// Static shared-memory budget in bytes (default 48 KiB; at most the device limit).
  KernelBuilder& shared_budget(std::int64_t bytes, std::source_location loc = std::source_location::current());
  /// The body, written from the `grid(1)` perspective.
  KernelBuilder& body(const std::function<void(Scope&)>& fn,
                      std::source_location loc = std::source_location::current());

  /// Checks the kernel; throws CheckError with every diagnostic when it does not check.
  Kernel build();

 private:
  std::shared_ptr<detail::BuildCtx> ctx_;
};

/// Builds a device function with a perspective signature: `requires_perspective(thread(32))`.
class FunctionBuilder {
 public:
  explicit FunctionBuilder(std::string name, std::source_location loc = std::source_location::current());
  ~FunctionBuilder();
  FunctionBuilder(const FunctionBuilder&) = delete;
  FunctionBuilder& operator=(const FunctionBuilder&) = delete;

  /// The perspective the function needs its caller to provide (its body starts there).
  FunctionBuilder& requires_perspective(Perspective p, std::source_location loc = std::source_location::current());
  /// Bytes of shared memory the function may allocate.
  FunctionBuilder& shared_budget(std::int64_t bytes, std::source_location loc = std::source_location::current());
  /// Declares a return type; `ret(value)` must then return a value of that type.
  FunctionBuilder& returns(ScalarType type, std::source_location loc = std::source_location::current());

  /// A by-value parameter living at `at` (default: the signature's perspective).
  Expr scalar_param(std::string name, ScalarType type, std::optional<At> at = std::nullopt,
                    std::source_location loc = std::source_location::current());
  View pointer_param(std::string name, ScalarType elem, MemSpace space, bool is_const,
                     std::optional<At> at = std::nullopt, std::source_location loc = std::source_location::current());
  template <class T>
  requires(!detail::ParamKind<T>::is_pointer) Expr param(std::string name, std::optional<At> at = std::nullopt,
                                                         std::source_location loc = std::source_location::current()) {
    return scalar_param(std::move(name), scalar_of<T>, at, loc);
  }
  template <class T>
  requires(detail::ParamKind<T>::is_pointer) View param(std::string name, std::optional<At> at = std::nullopt,
                                                        std::source_location loc = std::source_location::current()) {
    using K = detail::ParamKind<T>;
    return pointer_param(std::move(name), K::elem, K::space, K::is_const, at, loc);
  }

  FunctionBuilder& body(const std::function<void(Scope&)>& fn,
                        std::source_location loc = std::source_location::current());
  /// Checks the function; throws CheckError with every diagnostic when it does not check.
  DeviceFunction build();

 private:
  std::shared_ptr<detail::BuildCtx> ctx_;
};

}  // namespace vantage
