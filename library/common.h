// What the device library's files share: the checks of a helper's preconditions, diagnosed at the
// caller's line.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <utility>

#include "vantage/builder.hpp"

namespace vantage::lib::detail {

/// The block size a block-level helper needs: declared, a multiple of 32, at most 1024. Diagnoses
/// (V0913, naming `lib::helper`, at the caller's line) and returns nothing otherwise.
std::optional<std::int64_t> warps_block(Scope& s, const char* helper, const std::source_location& loc);

/// The block size a grid-level helper needs, or a V0913 (naming `lib::helper`) at the caller's line.
std::optional<std::int64_t> declared_threads(Scope& grid, const char* helper, std::source_location loc);
/// Whether each count a helper numbers its elements by (`{"n", &n}`) is an i32, as the elements' i32
/// indices are; otherwise a V0913 naming `lib::helper`, the argument and its type at the caller's
/// line (not a mismatch of types inside the helper).
bool i32_counts(Scope& s, const char* helper, std::initializer_list<std::pair<const char*, const ExprArg*>> counts,
                std::source_location loc);
/// A scan's identity as a value of the scanned type `t`: itself where it has that type, a C++ number
/// converted (an integer to any number type, a floating-point one to a float type: `0` for floats);
/// otherwise a V0913 naming `lib::helper` and both types at the caller's line, and nothing.
std::optional<Expr> identity_as(Scope& s, const char* helper, const ExprArg& identity, ScalarType t,
                                std::source_location loc);
/// At grid(1): block blk owns out[blk * per_block ..), and thread t of it the elements `share(t, i)`
/// of that block share; `body(b, blk, t, out_t)` runs at block(1) with out_t the thread's share.
void thread_shares(Scope& grid, const View& out, std::int64_t per_block, const std::function<Expr(Expr, Expr)>& share,
                   const std::function<void(Scope&, const Var&, const Var&, View)>& body, std::source_location loc);
/// A thread's run of `for_each_vector` and `copy`: its block and position, its share of `out`
/// (elements 0 .. run), and the index in `out` of the share's first element.
struct Run {
  Var blk, t;
  View out;
  Expr first;
};
/// At grid(1), with the block size T declared: block b owns elements [b T run, (b + 1) T run) of
/// `out`, thread t the `run` from b T run + t run. A thread whose run is below n runs `whole`; the
/// thread holding the tail runs `one(th, r, e)` for each of its elements e below n.
void runs_of(Scope& grid, const View& out, const ExprArg& n, int run,
             const std::function<void(Scope&, const Run&)>& whole,
             const std::function<void(Scope&, const Run&, const Expr&)>& one, const std::source_location& loc);
/// The tiles of n elements as a device-wide kernel counts them: ceil(n / per_tile), at least one (so
/// that n = 0 still has a tile, to write a reduction's identity), in 64 bits.
Expr tiles_of(const Expr& n, std::int64_t per_tile);

/// At block(1): the launch's G blocks each take the tiles blk, blk + G, ... of `tiles`, running
/// `body(th, tile)` at thread(1) for each of block blk's in turn (variables `name`_blocks, _rounds,
/// _round, _tile). A loop of unit step over the block's rounds (a run-time step makes the loop's own
/// test guard its overflow); the tile clamped to [0, tiles], as the loop keeps it, so that the index
/// arithmetic is bounded (lowering has no bound for a product of two run-time values).
void for_each_share(Scope& b, const std::string& name, const Expr& blk, const Expr& tiles,
                    const std::function<void(Scope&, const Expr&)>& body, const std::source_location& loc);

/// At block(1): thread t (of `threads`) owns elements t, t + threads, ... below `count` of the shared
/// array `shared` (a thread partition) and runs `body(th, k, index, mine)` at thread(1) for each, where
/// `mine[k]` is `shared[index]`.
void for_own(Scope& b, const View& shared, const Expr& t, std::int64_t threads, std::int64_t count,
             const std::function<void(Scope&, int, const Expr&, const View&)>& body, const std::source_location& loc);

/// At thread(1), after the tile's last read of the words that the last tile to finish will zero: adds
/// one to `count[index]` and returns whether this tile brought it to `tiles` (an expression of
/// `count`'s type, 1 or 0). The add releases (this tile's reads come before it); only the last tile
/// acquires, by an atomic load of the count, so that every tile's reads come before its zeroing. (An
/// add that acquires too makes every tile invalidate its L1, `CCTL.IVALL` on sm_90.)
Expr count_finished(Scope& th, const std::string& name, const View& count, const ExprArg& index, const Expr& tiles,
                    const std::source_location& loc);

/// At block(1), after the tile's last read of `words` and its outputs: the first warp's lane 0 counts
/// the tile finished (count_finished, `words[index]`) and, in the last tile to finish, the first warp
/// zeroes `words[word_at(i)]` for i in [0, count). The rest of the block waits for neither: a tile's
/// count is off the path from its look-back to its stores, and no barrier hands the result on.
void count_and_zero(Scope& b, const std::string& name, const View& words, const ExprArg& index, const Expr& tiles,
                    const Expr& count, const std::function<Expr(const Expr&)>& word_at,
                    const std::source_location& loc);

}  // namespace vantage::lib::detail
