// Vantage device library: the loops, reductions and stores that common kernels are made of, written
// only with the public builder primitives (so the checker checks every use, and the barriers are the
// sync pass's). Each helper names the perspective its scope must have; the diagnostics of a misuse
// point at the caller's line, because every helper forwards its caller's source location to the
// primitives it records. docs/library.md describes each one and the primitive form it stands for.
#pragma once
#include <cstdint>
#include <functional>
#include <source_location>
#include <string>

#include "vantage/builder.hpp"

namespace vantage::lib {

/// How a thread's several elements are laid out in its block's tile.
enum class Layout : std::uint8_t {
  Striped,  ///< element k of thread t is t + k * T: consecutive threads touch consecutive elements
  Blocked,  ///< element k of thread t is t * items + k: each thread's elements are contiguous
};

/// `for_each`'s shape: each thread handles `items` elements of its block's tile of T * items.
struct Tile {
  int items = 1;
  Layout layout = Layout::Striped;
};

/// The blocks a 1-D launch needs so that `for_each` with `threads` per block and `tile` covers n
/// elements: ceil(n / (threads * items)), and at least one.
std::int64_t blocks_for(std::int64_t n, std::int64_t threads, Tile tile = {});

/// One thread per element (or `tile.items` per thread): at grid(1), with the kernel's block size T
/// declared, block b owns elements [b * T * items, (b + 1) * T * items) of `out`, and each thread runs
/// `body(th, i, out_i)` at thread(1) for each of its elements `i < n`, where `out_i` is `out[i]`, the
/// thread's own to read and write. Launch it over `blocks_for(n, T, tile)` blocks (more blocks run no
/// element; fewer leave elements untouched, so a launch guard is the caller's choice). The primitive
/// form: a block partition of `out`, a group over blocks, a thread partition, a group over threads and
/// an `if_(i < n)`.
void for_each(Scope& grid, const View& out, const ExprArg& n,
              const std::function<void(Scope& th, Expr i, ElemRef out_i)>& body, Tile tile = {},
              std::source_location loc = std::source_location::current());

/// At grid(1): out[i] = in[i] for every i < n, in 16-byte vectors. Each thread copies v = 16 / (element
/// bytes) consecutive elements (4 floats, 2 doubles, 8 halves, 16 bytes), block b the T * v from
/// b * T * v. A thread whose v elements are all below n copies them as one vector load and store
/// (lowering proves the vector inside both buffers and its offset a multiple of v; the launcher
/// checks that both buffers are 16-byte aligned); the thread that holds the tail copies it element
/// by element. Launch `blocks_for(n, T, Tile{v})` blocks.
void copy(Scope& grid, const View& out, const View& in, const ExprArg& n,
          std::source_location loc = std::source_location::current());

/// A grid-stride loop: at grid(1), thread g of the launch (of B blocks of T threads, B read as the
/// kernel runs, `Scope::grid_blocks()`) runs `body(th, i, out_i)` at thread(1) for i = g, g + B*T,
/// g + 2*B*T, ... while i < n, with `out_i` its own `out[i]`. Any number of blocks covers all n
/// elements (a fixed grid the size of the device, say). The primitive form: a partition of `out`
/// straight to thread(1) with index g + k*B*T, a group over threads, a loop over k.
void grid_stride(Scope& grid, const View& out, const ExprArg& n,
                 const std::function<void(Scope& th, Expr i, ElemRef out_i)>& body,
                 std::source_location loc = std::source_location::current());

/// A block-strided loop at block(1): thread t of the block runs `body(th, i)` at thread(1) for
/// i = begin + t, begin + t + T, ... while i < end. Nothing is written for the caller; use it to read
/// (into a variable living at thread(1)) or to write memory the caller partitioned. `i` has begin's type
/// (a 64-bit range takes the thread's position in 64 bits).
void block_strided(Scope& block, const ExprArg& begin, const ExprArg& end,
                   const std::function<void(Scope& th, Expr i)>& body,
                   std::source_location loc = std::source_location::current());

/// Rows of a run-time length, one a block: at grid(1), block b takes row b of the row-major `out`
/// (rows x cols, `cols` known only at run time) when b < rows and runs `body(b, row, out_row)` at
/// block(1), where row is b and `out_row[c]` is `out[row * cols + c]`, the block's to write (hand it to
/// the threads with `block_for_each`). Blocks past the last row do nothing. Launch `rows` blocks.
void for_each_row(Scope& grid, const View& out, const ExprArg& rows, const ExprArg& cols,
                  const std::function<void(Scope& block, Expr row, View out_row)>& body,
                  std::source_location loc = std::source_location::current());

/// At block(1): thread t of the block's T runs `body(th, i, out_i)` at thread(1) for i = t, t + T,
/// t + 2T, ... while i < n, where `out_i` is its own `out[i]` (`out` the block's: its row of
/// `for_each_row`, or its share of `for_each_block`). The block-level `for_each` for a length known
/// only at run time.
void block_for_each(Scope& block, const View& out, const ExprArg& n,
                    const std::function<void(Scope& th, Expr i, ElemRef out_i)>& body,
                    std::source_location loc = std::source_location::current());

/// A block's tile of a row-major matrix, as `for_each_tile` hands it to the block.
struct MatrixTile {
  Expr row0, col0;  ///< the tile's first row and column in the matrix (values of the block)
  Expr row, col;    ///< the thread's own element of the tile: t / tile_cols, t % tile_cols
  View view;        ///< the block's share: view[r * ld + c] is m[(row0 + r) * ld + col0 + c]
  Expr rows, cols;  ///< the matrix's extent (cols is its leading dimension)
  int tile_rows = 0, tile_cols = 0;
  Expr thread;  ///< the thread's position in the block (row * tile_cols + col)
};

/// At grid(1): a rows x cols row-major matrix `m` in tiles of tile_rows x tile_cols, one per block
/// (block b: tile row b / ceil(cols / tile_cols), tile column b % that), each run as
/// `body(b, tile)` at block(1). Launch ceil(rows / tile_rows) * ceil(cols / tile_cols) blocks; the
/// thread's own element (`tile.row`, `tile.col`) assumes tile_rows * tile_cols threads.
void for_each_tile(Scope& grid, const View& m, const ExprArg& rows, const ExprArg& cols, int tile_rows, int tile_cols,
                   const std::function<void(Scope& block, const MatrixTile& tile)>& body,
                   std::source_location loc = std::source_location::current());

/// The same, with the blocks taken through the tiles in groups of `group_rows` tile rows: block b is
/// in group g = b / (group_rows * tiles per row), whose tiles it walks down each column of the
/// group's rows before the next column, so that the blocks running at one time share rows of A and
/// columns of B in L2 (a GEMM's tile order). group_rows = 1 is the row-major order above.
void for_each_tile_grouped(Scope& grid, const View& m, const ExprArg& rows, const ExprArg& cols, int tile_rows,
                           int tile_cols, int group_rows,
                           const std::function<void(Scope& block, const MatrixTile& tile)>& body,
                           std::source_location loc = std::source_location::current());

/// At block(1): the thread's own element of the tile, `body(th, e)` at thread(1) with e the element,
/// when it is inside the matrix (edge tiles are partial).
void update_own(Scope& block, const MatrixTile& tile, const std::function<void(Scope& th, ElemRef e)>& body,
                std::source_location loc = std::source_location::current());

/// At block(1): each thread's tm x tn elements of the tile, `body(th, i, j, e)` at thread(1) for each
/// i < tm, j < tn inside the matrix, with e the element at tile row `row + row_step * i` and tile
/// column `col + col_step * j` (row and col: the thread's own first element, values of the block that
/// vary by thread). Steps of 1 give each thread a contiguous sub-tile (2-D register blocking); larger
/// steps interleave the threads (a warp's lanes spread over its warp tile). The positions must give
/// distinct threads distinct elements, which the race check verifies when the kernel runs.
void update_sub_tile(Scope& block, const MatrixTile& tile, const ExprArg& row, const ExprArg& col, int tm, int tn,
                     int row_step, int col_step, const std::function<void(Scope& th, int i, int j, ElemRef e)>& body,
                     std::source_location loc = std::source_location::current());

/// The shape of a thread's elements for `update_sub_tile`: tm x tn of them, element (i, j) at tile row
/// `row + row_step * i` and column `col + col_step * (j % col_group) + group_step * (j / col_group)`
/// (col_group 0: tn, one group). Groups let a lane hold two runs of 4 columns 32 apart, so that a
/// quarter warp's 16-byte shared reads of a row meet no bank twice (the sgemm ladder's rung 8).
struct SubTile {
  int tm = 1, tn = 1;
  int row_step = 1, col_step = 1;
  int col_group = 0, group_step = 0;
};
void update_sub_tile(Scope& block, const MatrixTile& tile, const ExprArg& row, const ExprArg& col, const SubTile& shape,
                     const std::function<void(Scope& th, int i, int j, ElemRef e)>& body,
                     std::source_location loc = std::source_location::current());

/// At block(1): copies the tile_rows x tile_cols tile at (row0, col0) of the row-major matrix `src`
/// (src_rows x src_cols) into shared `dst` (row-major, tile_rows x tile_cols), zeros past the
/// matrix's edges (above and left of it too: row0 and col0 may be negative, as for a stencil's halo),
/// striped over the block's threads (consecutive threads, consecutive columns).
/// The reads are clamped into the matrix, so they stay inside it whatever the sizes.
/// With `like` (a tile of the same shape, one element per thread), each thread copies the element at
/// its own (like.row, like.col): no position arithmetic of its own, and per-warp rows the CPU
/// backend keeps scalar.
void stage_tile(Scope& block, const View& dst, const View& src, const ExprArg& src_rows, const ExprArg& src_cols,
                const ExprArg& row0, const ExprArg& col0, int tile_rows, int tile_cols,
                const MatrixTile* like = nullptr, std::source_location loc = std::source_location::current());

/// How `copy_tile` copies: rows of the shared tile `tile_cols + pad` elements apart (a pad of 1 keeps
/// a column of 32 floats in 32 banks), and by `cp.async` (each thread's copies are waited for by
/// that thread before the barrier ahead of the first read by another) or by plain loads and stores.
/// `zeros`: the tile's elements past the matrix's edges are zeros; off, they are left as they were
/// (for a kernel that never reads them: with cp.async, no plain stores then need a barrier before
/// the copies).
struct TileCopy {
  int pad = 0;
  bool async = false;
  bool zeros = true;
};

/// `stage_tile` with padding and asynchronous copies: dst (tile_rows x (tile_cols + pad) elements)
/// receives the tile at (row0, col0) of the row-major src (src_rows x src_cols), element (r, c) at
/// dst[r * (tile_cols + pad) + c], zeros past the matrix's edges (unless `how.zeros` is off),
/// striped over the block's threads. At block(1). An element is read only inside the matrix (and
/// lowering proves the read inside `src` from that condition); the padding elements are not
/// written.
void copy_tile(Scope& block, const View& dst, const View& src, const ExprArg& src_rows, const ExprArg& src_cols,
               const ExprArg& row0, const ExprArg& col0, int tile_rows, int tile_cols, TileCopy how = {},
               std::source_location loc = std::source_location::current());

/// Which tile of which row-major matrix `copy_tile` copies, every part by name so that none can be
/// swapped for another: `{.src = in, .rows = M, .cols = N, .row0 = r, .col0 = c, .tile_rows = 32,
/// .tile_cols = 32}`. The sizes and the corner have no defaults (leaving one out does not compile);
/// a tile of no rows or columns is V0913.
struct TileOf {
  View src;
  ExprArg rows, cols;  ///< the matrix's size
  ExprArg row0, col0;  ///< the tile's first element in it
  int tile_rows = 0, tile_cols = 0;
};
/// `copy_tile` of `from` into `dst`: `lib::copy_tile(b, tile, {.src = in, ...}, {.pad = 1, .async = true})`.
void copy_tile(Scope& block, const View& dst, const TileOf& from, TileCopy how = {},
               std::source_location loc = std::source_location::current());

/// At block(1): starts copying the tile_rows x tile_cols tile at (row0, col0) of the row-major `src`
/// (src_rows x src_cols, elements of 4 bytes) into shared `dst` (row-major, tile_rows x tile_cols) by
/// `cp.async`, 16 bytes at a time, and does not wait: committing the copies and waiting for them are
/// the caller's, so that a pipeline works on one tile while the next one arrives (the sgemm ladder's
/// rung 8). Thread t copies the tile's vectors of 4 elements t, t + T, ... (tile_cols a multiple of
/// 4). A vector wholly inside the matrix, at a column that is a multiple of 4 of a matrix whose rows
/// are a multiple of 4 elements long, is one 16-byte copy (`src` must then be 16-byte aligned, which the launch
/// checks); otherwise each element inside is copied alone and each outside is zero (plain stores, made before the
/// copies by the same thread). An element is read only inside the matrix.
void start_tile_copy(Scope& block, const View& dst, const View& src, const ExprArg& src_rows, const ExprArg& src_cols,
                     const ExprArg& row0, const ExprArg& col0, int tile_rows, int tile_cols,
                     std::source_location loc = std::source_location::current());

/// The associative operations the reductions and scans know.
enum class Op : std::uint8_t { Sum, Min, Max };
/// Any associative operator, as the user writes it: `[](Expr a, Expr b) { return a * b; }`, or
/// `lib::combiner(Op::Max)`. The reductions and scans below apply it in a fixed order (the same on
/// every backend) and never assume it commutes: a scan's result at t is op(...op(op(v_0, v_1), v_2)
/// ..., v_t) up to the grouping. Its operands and result have the value's type.
using Combine = std::function<Expr(const Expr&, const Expr&)>;
/// The operator of `op` as a Combine.
Combine combiner(Op op);

/// `value` combined over the 32 lanes of each warp, by a butterfly of shuffles (five `shfl_xor`), so
/// that every lane holds the warp's result. At thread(32) (a warp's code). Integer sums wrap; float
/// sums are computed in the butterfly's order (a fixed order, the same on every backend).
Var warp_reduce(Scope& warp, std::string name, const ExprArg& value, Op op,
                std::source_location loc = std::source_location::current());
Var warp_reduce(Scope& warp, std::string name, const ExprArg& value, const Combine& op,
                std::source_location loc = std::source_location::current());

/// Inclusive scan over the lanes of each warp (`shfl_up`, five steps): lane l holds op(v_0 .. v_l).
/// At thread(32).
Var warp_inclusive_scan(Scope& warp, std::string name, const ExprArg& value, Op op,
                        std::source_location loc = std::source_location::current());
Var warp_inclusive_scan(Scope& warp, std::string name, const ExprArg& value, const Combine& op,
                        std::source_location loc = std::source_location::current());
/// Exclusive scan over the lanes of each warp: lane l holds op(v_0 .. v_(l-1)), lane 0 `identity`
/// (the operator's identity: 0 for a sum, the type's largest value for a minimum). At thread(32).
Var warp_exclusive_scan(Scope& warp, std::string name, const ExprArg& value, const Combine& op, const ExprArg& identity,
                        std::source_location loc = std::source_location::current());
Var warp_exclusive_scan(Scope& warp, std::string name, const ExprArg& value, Op op, const ExprArg& identity,
                        std::source_location loc = std::source_location::current());

/// Each thread's `src[index]` where `index < count`, `otherwise` elsewhere, as a variable of the
/// thread (at thread(1)), at block(1) or any code: the element is read only below `count` (a branch,
/// where a select would read it anyway), so lowering proves the read inside `src` (of at least
/// `count` elements) and no check runs, as in CUDA's `i < n ? x[i] : 0`. `index` is the thread's,
/// as it reads where this is called (an id() in it keeps that meaning).
Var read_below(Scope& scope, std::string name, const View& src, const ExprArg& index, const ExprArg& count,
               const ExprArg& otherwise, std::source_location loc = std::source_location::current());

/// `value` (one per thread) combined over the whole block, as one value of the block (a variable
/// living at block(1), so it may bound a loop or guard a barrier): each warp reduces with shuffles,
/// lane 0 of each writes its warp's result into shared memory (T / 32 elements, allocated here), and
/// after the barrier the sync pass places, the block reads the partials in warp order. At block(1);
/// the block size must be a multiple of 32, at most 1024.
Var block_reduce(Scope& block, std::string name, const ExprArg& value, Op op,
                 std::source_location loc = std::source_location::current());
Var block_reduce(Scope& block, std::string name, const ExprArg& value, const Combine& op,
                 std::source_location loc = std::source_location::current());

/// Inclusive scan over the threads of the block in thread order: thread t holds op(v_0 .. v_t). With
/// `total`, that variable is set to the block's whole result, a value of the block (living at
/// block(1), read from the warps' totals in shared memory). Warp scans, a shared array of the warps'
/// totals, and a scan of those by every warp. At block(1); T a multiple of 32, at most 1024.
Var block_inclusive_scan(Scope& block, std::string name, const ExprArg& value, Op op, Var* total = nullptr,
                         std::source_location loc = std::source_location::current());
Var block_inclusive_scan(Scope& block, std::string name, const ExprArg& value, const Combine& op, Var* total = nullptr,
                         std::source_location loc = std::source_location::current());
/// Exclusive scan over the threads of the block: thread t holds op(v_0 .. v_(t-1)), thread 0
/// `identity`; `total` as for the inclusive scan (the whole block's result). The same warp scans and
/// shared totals as the inclusive scan, and one more shuffle. At block(1); T a multiple of 32.
Var block_exclusive_scan(Scope& block, std::string name, const ExprArg& value, const Combine& op,
                         const ExprArg& identity, Var* total = nullptr,
                         std::source_location loc = std::source_location::current());
Var block_exclusive_scan(Scope& block, std::string name, const ExprArg& value, Op op, const ExprArg& identity,
                         Var* total = nullptr, std::source_location loc = std::source_location::current());

/// How a block's T x K items lie over its threads, K a thread: blocked, thread t holds items t K ..
/// t K + K - 1 (what a thread scans or sorts in registers); striped, thread t holds items t, t + T,
/// ..., t + (K - 1) T (what a coalesced load or store reads).
enum class Arrangement : std::uint8_t { Blocked, Striped };
/// Rearranges the block's items, `count` a thread in `items` (a thread-local array living at
/// thread(1)), from `from` to the other arrangement, through a shared array of T x count elements
/// (allocated here, named `name`) and the one barrier the sync pass places. At block(1).
void block_exchange(Scope& block, std::string name, const View& items, int count, Arrangement from,
                    std::source_location loc = std::source_location::current());
/// The same within each warp, by shuffles and no memory (CUB's WarpExchange): at thread(32), each
/// lane's `count` items (1 to 32, a thread-local array) from `from` to the other arrangement, blocked
/// (lane l holds the warp's items l x count .. l x count + count - 1) or striped (lane l holds l,
/// l + 32, ...). count x count shuffles, each lane keeping the one meant for it.
void warp_exchange(Scope& warp, std::string name, const View& items, int count, Arrangement from,
                   std::source_location loc = std::source_location::current());

/// The block's keys sorted: thread t's result is the t-th smallest of the keys the threads give (one
/// u32 each), by their low `bits` bits, stably (equal keys keep their threads' order). An LSD radix
/// sort of one bit a pass: each pass splits the keys by the bit with an exclusive scan
/// (block_exclusive_scan) and moves each to its place in a shared array (T elements, reused by every
/// pass; the moves are atomic exchanges, each to its own element). At block(1); T whole warps.
Var block_radix_sort(Scope& block, std::string name, const ExprArg& key, int bits = 32,
                     std::source_location loc = std::source_location::current());

/// Device-wide operations, CUB's `DeviceScan`, `DeviceReduce`, `DeviceSelect` and
/// `DeviceHistogram` as one kernel each: the helper is the kernel's whole body, at grid(1). Each block
/// takes one tile of T x `items` elements (thread t the `items` consecutive ones from t x items, read in
/// 16-byte vectors where all are inside); the tiles are chained by a single-pass decoupled look-back:
/// a tile publishes its own total at once, then the total of everything up to its end as soon as it
/// knows it, in one u64 word of `temp` per tile (a value of 64 bits in a word of its own, under a
/// status stored with a release and loaded with an acquire), and a tile's first warp reads the words
/// before its own, 32 at a time, until one is complete. Launch `device_blocks(n, T, tile)` blocks of T threads.
struct DeviceTile {
  int items = 8;       ///< elements a thread: a multiple of 4 from 4 to 32
  int backoff_ns = 0;  ///< the look-back's sleep before each poll of a window not yet published (0 to 1 ms;
                       ///< Scope::nanosleep, as CUB's look-back sleeps); 0: it polls at once
};
/// The blocks a device-wide operation of `n` elements is launched with: one a tile, at least one.
std::int64_t device_blocks(std::int64_t n, std::int64_t threads, DeviceTile tile = {});
/// The blocks `device_reduce` is best launched with: a block a tile up to about 2^20 threads, no more
/// (each block then takes several tiles). Any number from 1 to `device_blocks` gives the same result
/// (for float sums, up to where the threads' partial sums meet).
std::int64_t reduce_blocks(std::int64_t n, std::int64_t threads, DeviceTile tile = {});
/// The u64 words of its temporary storage, for combining values of type `values`: one a tile and a
/// count of the tiles finished, and for values of 64 bits two more a tile (the tiles' own totals and
/// inclusive values, in words of their own). Zero them once, when the storage is allocated: the tile
/// that finishes last zeroes the tiles' words and the count again, so every launch leaves them as it
/// found them and the next launch may use them as they are.
std::int64_t device_temp_words(std::int64_t n, std::int64_t threads, DeviceTile tile = {},
                               ScalarType values = ScalarType::I32);
/// The same as an expression of the kernel's parameters (computed in 64 bits), for the temporary
/// buffer's extent: `k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, T)))`.
Expr device_temp_extent(const ExprArg& n, std::int64_t threads, DeviceTile tile = {},
                        ScalarType values = ScalarType::I32);

/// The look-back itself, for a single-pass algorithm of your own (CUB's TilePrefixCallbackOp): at
/// block(1), the block's tile `tile` (a value of the block) publishes `total` (a value of the block,
/// i32, u32 or f32) in temp[tile] at once, its first warp combines the earlier tiles' words, 32 at a time,
/// until one holds the whole prefix before it, and it publishes its own inclusive value. Returns
/// op(total of tile 0, ..., total of tile - 1), the identity for tile 0, as a value of the block.
/// `temp` (u64 words, one a tile) must be zero at launch, and is not zeroed again; a tile's block
/// waits for every earlier tile's, so tiles follow the blocks' order (as blocks are dispatched on a
/// GPU and run on the interpreter and the CPU backend).
Var tile_prefix(Scope& block, std::string name, const View& temp, const ExprArg& tile, const ExprArg& total, Op op,
                std::source_location loc = std::source_location::current());
Var tile_prefix(Scope& block, std::string name, const View& temp, const ExprArg& tile, const ExprArg& total,
                const Combine& op, const ExprArg& identity, std::source_location loc = std::source_location::current());

/// At grid(1): out[i] = op(in[0], ..., in[i]) for every i < n (`in` and `out` of one type of 32 or
/// 64 bits: i32, u32, f32, i64, u64, f64; integer sums wrap, float sums round as the
/// tiles' values meet, which depends on when each tile finds its predecessors' words: exact sums of
/// floats come out the same on every device), in the order of the elements whatever the operator: the
/// tiles' results are combined earlier on the left. A Combine needs its identity (the value it
/// leaves unchanged: what the elements past n count as); an Op knows its own.
void device_inclusive_scan(Scope& grid, const View& out, const View& in, const ExprArg& n, Op op, const View& temp,
                           DeviceTile tile = {}, std::source_location loc = std::source_location::current());
void device_inclusive_scan(Scope& grid, const View& out, const View& in, const ExprArg& n, const Combine& op,
                           const ExprArg& identity, const View& temp, DeviceTile tile = {},
                           std::source_location loc = std::source_location::current());
/// At grid(1): out[0] = the identity, out[i] = op(in[0], ..., in[i - 1]) for 0 < i < n.
void device_exclusive_scan(Scope& grid, const View& out, const View& in, const ExprArg& n, Op op, const View& temp,
                           DeviceTile tile = {}, std::source_location loc = std::source_location::current());
void device_exclusive_scan(Scope& grid, const View& out, const View& in, const ExprArg& n, const Combine& op,
                           const ExprArg& identity, const View& temp, DeviceTile tile = {},
                           std::source_location loc = std::source_location::current());
/// At grid(1): out[0] = op(in[0], ..., in[n - 1]) (the identity when n is 0), combined in the
/// elements' order, on a launch of any number G of blocks: each takes ceil(tiles / G) consecutive tiles
/// (CUB's even share) and publishes their combination in its word of `temp`, waiting for no other
/// block; the last block with tiles waits for the others' words, combines them in order and writes
/// out[0] (one atomic exchange). With an Op (which commutes) each thread first combines its items of
/// all its block's tiles; with a Combine each tile is combined over the block and the tiles' values
/// in order. Launch `reduce_blocks(n, T, tile)` blocks: a few tiles a block, where `device_blocks`
/// (a block a tile) pays a block's start, barriers and word for every tile.
void device_reduce(Scope& grid, const View& out, const View& in, const ExprArg& n, Op op, const View& temp,
                   DeviceTile tile = {}, std::source_location loc = std::source_location::current());
void device_reduce(Scope& grid, const View& out, const View& in, const ExprArg& n, const Combine& op,
                   const ExprArg& identity, const View& temp, DeviceTile tile = {},
                   std::source_location loc = std::source_location::current());
/// Whether an element is selected: a bool of the element's value.
using Predicate = std::function<Expr(const Expr&)>;
/// At grid(1), a stream compaction: the elements of in[0 .. n) for which `keep` holds, in their
/// order, to out[0 ..), and their number to count[0] (an i32). Each selected element is written by
/// an atomic exchange to its place (the scan of the kept elements before it), so `out` and `in` hold
/// an element type atomics exchange (i32, u32, i64, u64, f32); out needs room for n.
void device_select(Scope& grid, const View& out, const View& count, const View& in, const ExprArg& n,
                   const Predicate& keep, const View& temp, DeviceTile tile = {},
                   std::source_location loc = std::source_location::current());
/// Which bin an element counts in: an integer of the element's value (outside [0, bins), none).
using Binning = std::function<Expr(const Expr&)>;
/// At grid(1): adds to bins[b] (u32 or i32) the number of elements of in[0 .. n) that `bin_of`
/// puts in bin b, for b < `bins` (a constant: each block counts its tile in shared memory with
/// atomics of the block's scope, then adds its non-zero counts to `out` with atomics of the
/// device's). The tiles are T x items elements, striped (coalesced); no temporary storage. Launch
/// up to `device_blocks(n, T, tile)` blocks: with fewer, block b counts the tiles b, b + G, ... (G
/// the blocks) and adds its counts once, so a few blocks an SM add far fewer device atomics.
void device_histogram(Scope& grid, const View& out, const View& in, const ExprArg& n, int bins, const Binning& bin_of,
                      DeviceTile tile = {}, std::source_location loc = std::source_location::current());

/// A device-wide radix sort's pass, in three kernels: `radix_count` counts each tile's keys by digit
/// into a table (digit-major: entry d * tiles + tile), `device_exclusive_scan` of that table gives
/// every (digit, tile) the place of its first key, and `radix_scatter` moves each key (and its value)
/// there, stably. A sort of u32 keys by `bits`-bit digits runs ceil(32 / bits) passes, shift 0,
/// bits, 2 bits, ..., from one buffer to another and back.
struct RadixTile {
  int items = 16;  ///< keys a thread
  int bits = 8;    ///< bits a digit: 1 to 8 (the block needs at least 2^bits threads)
};
/// The tiles of a radix pass: one a block, T x items keys each, at least one.
std::int64_t radix_blocks(std::int64_t n, std::int64_t threads, RadixTile tile = {});
/// The entries of its table of counts, 2^bits a tile (the count and scan kernels' extent).
std::int64_t radix_table_size(std::int64_t n, std::int64_t threads, RadixTile tile = {});
/// The same as an expression of the kernel's parameters.
Expr radix_table_extent(const ExprArg& n, std::int64_t threads, RadixTile tile = {});
/// At grid(1): table[d * tiles + b] = the number of keys of tile b (keys[b * T * items ..]) whose
/// digit `(key >> shift) & (2^bits - 1)` is d. Keys u32; the table i32 (written whole: no zeroing).
void radix_count(Scope& grid, const View& table, const View& keys, const ExprArg& n, const ExprArg& shift,
                 RadixTile tile = {}, std::source_location loc = std::source_location::current());
/// At grid(1): each key of keys_in goes to keys_out[offsets[d * tiles + b] + its rank among tile
/// b's keys of digit d], and its value (if given) to the same place of vals_out, so that the keys
/// are ordered by digit, stably. `offsets` is the exclusive scan of radix_count's table.
void radix_scatter(Scope& grid, const View& keys_out, const View& keys_in, const ExprArg& n, const View& offsets,
                   const ExprArg& shift, RadixTile tile = {},
                   std::source_location loc = std::source_location::current());
void radix_scatter(Scope& grid, const View& keys_out, const View& vals_out, const View& keys_in, const View& vals_in,
                   const ExprArg& n, const View& offsets, const ExprArg& shift, RadixTile tile = {},
                   std::source_location loc = std::source_location::current());

/// The one-sweep radix sort (CUB's default, after Adinets and Merrill): one `radix_histogram` launch
/// counts every pass's digits of all keys into `hist`, then one `radix_onesweep` launch a pass (shift
/// 0, bits, 2 bits, ...) moves each key to its place. A pass's tile learns where its keys of digit d go
/// from the pass's counts (scanned in the block) and a look-back over the tiles before it, a digit a
/// thread, through `lookback` (u32 words: a status and a 30-bit count, so fewer than 2^30 keys), in
/// two regions that alternate between passes, each pass zeroing the other's words of its tile. Digits
/// of 1, 2, 4 or 8 bits (an even number of passes). `hist` (i32, radix_hist_size: the counts and a
/// count of each pass's finished tiles) and `lookback` (u32, radix_lookback_words) are zeroed once,
/// when allocated: the pass's last tile zeroes its counts again, and each pass zeroes the words of
/// the other region, so a whole sort leaves the first region zero and the second, which its last
/// pass used, to the next sort's first pass. Run every pass of a sort, in order.
std::int64_t radix_hist_size(RadixTile tile = {});
/// (std::invalid_argument for 2^30 keys or more: the look-back's counts have 30 bits.)
std::int64_t radix_lookback_words(std::int64_t n, std::int64_t threads, RadixTile tile = {});
Expr radix_lookback_extent(const ExprArg& n, std::int64_t threads, RadixTile tile = {});
/// At grid(1): hist[p * 2^bits + d] += the keys whose digit of pass p is d, for every pass p. Block b
/// counts the tiles b, b + G, ... (G the launch's blocks) in shared memory and adds its counts once:
/// launch radix_histogram_blocks(n, T, tile) blocks (any number from 1 to radix_blocks counts the
/// same), where a block a tile made every tile add all its 2^bits x passes counts to `hist`.
std::int64_t radix_histogram_blocks(std::int64_t n, std::int64_t threads, RadixTile tile = {});
void radix_histogram(Scope& grid, const View& hist, const View& keys, const ExprArg& n, RadixTile tile = {},
                     std::source_location loc = std::source_location::current());
/// At grid(1): the pass of digit `(key >> shift) & (2^bits - 1)`: keys_in (and vals_in) to their
/// places in keys_out (vals_out), stably. Launch radix_blocks(n, T, tile) blocks.
void radix_onesweep(Scope& grid, const View& keys_out, const View& keys_in, const ExprArg& n, const View& hist,
                    const View& lookback, const ExprArg& shift, RadixTile tile = {},
                    std::source_location loc = std::source_location::current());
void radix_onesweep(Scope& grid, const View& keys_out, const View& vals_out, const View& keys_in, const View& vals_in,
                    const ExprArg& n, const View& hist, const View& lookback, const ExprArg& shift, RadixTile tile = {},
                    std::source_location loc = std::source_location::current());

/// Fragments of `mma_sync`, as PTX lays them out over the lanes of a warp (g = lane / 4, t = lane %
/// 4), chosen by the fragment's element type: f32 for tf32 m16n8k8, f16 or bf16 for m16n8k16, i8 for
/// s8 m16n8k32. At
/// thread(32); `src` is read, never written, so it may be shared memory the whole block reads, and
/// the fragments are thread-local arrays.
/// A, tf32: the 16 x 8 tile at (row0, col0) of the row-major `src` with rows `ld` apart, into 4
/// floats: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4). A, 16-bit: the 16 x 16 tile into 8
/// elements: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1), then the same 8 columns on. A, s8:
/// the 16 x 32 tile into 16 bytes: (g, 4t .. 4t + 3), (g + 8, 4t .. 4t + 3), then the same 16 columns on.
void mma_load_a(Scope& warp, const View& frag, const View& src, const ExprArg& ld, const ExprArg& row0,
                const ExprArg& col0, std::source_location loc = std::source_location::current());
/// B, tf32: the 8 x 8 tile (k x n) at (row0, col0), into 2 floats: (t, g), (t + 4, g). B, 16-bit:
/// the 16 x 8 tile into 4 elements: (2t, g), (2t + 1, g), (2t + 8, g), (2t + 9, g). B, s8: the 32 x 8
/// tile into 8 bytes: (4t .. 4t + 3, g), (4t + 16 .. 4t + 19, g).
void mma_load_b(Scope& warp, const View& frag, const View& src, const ExprArg& ld, const ExprArg& row0,
                const ExprArg& col0, std::source_location loc = std::source_location::current());
/// The accumulator's place: element e (0..3) of a lane's C or D fragment of a 16 x 8 tile is at
/// tile row `mma_c_row(lane, e)`, column `mma_c_col(lane, e)`: (g, 2t), (g, 2t + 1), (g + 8, 2t),
/// (g + 8, 2t + 1).
Expr mma_c_row(const ExprArg& lane, int e);
Expr mma_c_col(const ExprArg& lane, int e);
/// What an accumulator's element becomes in C: `value(acc, old)` of the fragment's element and C's
/// element there (read only if used), e.g. `alpha * acc + beta * old`, or `acc`.
using MmaOutput = std::function<Expr(const Expr& acc, const ElemRef& old)>;
/// The warps' accumulators written to the block's tile of C, at block(1): each lane's `acc[j]` (a C or
/// D fragment: 4 elements) is the 16 x 8 tile at tile row `warp_row`, column `warp_col + 8 j` (values
/// of the thread: its warp's place in the tile), element e at mma_c_row / mma_c_col, stored as
/// `value` where it is inside the matrix. The store the mma examples share.
void mma_store_c(Scope& block, const MatrixTile& c, const std::vector<View>& acc, const ExprArg& warp_row,
                 const ExprArg& warp_col, const MmaOutput& value,
                 std::source_location loc = std::source_location::current());

/// `dst[index] = value` by one thread (thread 0) of the scope's perspective: a claim of `dst` at
/// thread(1) and a one-thread split branch. At block(1) or thread(32): the usual "the block's first
/// thread writes the block's result".
void store_by_one(Scope& scope, const View& dst, const ExprArg& index, const ExprArg& value,
                  std::source_location loc = std::source_location::current());
/// `body` run by one thread (thread 0) of the scope's perspective, as CUDA's `if (threadIdx.x == 0)`:
/// a one-thread split branch. Perspective: scope at any level, `one` at thread(1).
void by_one_thread(Scope& scope, const std::function<void(Scope& one)>& body,
                   std::source_location loc = std::source_location::current());
/// The same with `dst` (memory living at the scope's perspective) handed whole to that thread:
/// `body(one, mine)` may write any element of `mine`, which is `dst`.
void by_one_thread(Scope& scope, const View& dst, const std::function<void(Scope& one, View mine)>& body,
                   std::source_location loc = std::source_location::current());

/// At grid(1): block b gets `out[b * per_block .. (b + 1) * per_block)` to write (a block partition
/// of `out`) and runs `body(b, blk, out_b)` at block(1), where blk is the block's index and
/// `out_b[j]` is `out[blk * per_block + j]`. The shape of a kernel that writes one result, or one
/// tile, per block.
void for_each_block(Scope& grid, const View& out, std::int64_t per_block,
                    const std::function<void(Scope& block, Expr blk, View out_b)>& body,
                    std::source_location loc = std::source_location::current());
/// One element per block: `for_each_block(grid, out, 1, body)`.
void for_each_block(Scope& grid, const View& out, const std::function<void(Scope& block, Expr blk, View out_b)>& body,
                    std::source_location loc = std::source_location::current());

/// At block(1): thread t stores `value` (its own, living at thread(1)) into `dst[t]` when t < valid:
/// a direct block store of one item per thread into the block's share (`for_each_block`'s out_b).
void block_store(Scope& block, const View& dst, const ExprArg& valid, const ExprArg& value,
                 std::source_location loc = std::source_location::current());

}  // namespace vantage::lib
