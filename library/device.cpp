// The device library's device-wide operations (include/vantage/library.hpp, docs/library.md): each
// is a kernel's whole body at grid(1), written only with the public builder over the block-level
// helpers of library.cpp, so that the checker, the sync pass and lowering treat it as user code.
#include <limits>
#include <optional>
#include <string>

#include "library/common.h"
#include "vantage/library.hpp"

namespace vantage::lib {

namespace detail {

Expr tiles_of(const Expr& n, std::int64_t per_tile) {
  return max((cast<std::int64_t>(n) + (per_tile - 1)) / per_tile, cast<std::int64_t>(1));
}

Expr count_finished(Scope& th, const std::string& name, const View& count, const ExprArg& index, const Expr& tiles,
                    const std::source_location& loc) {
  const ScalarType type = count.elem();
  Var old = th.atomic(name, AtomicOp::Add, count, index, cast(type, 1), MemoryOrder::Release, loc);
  Var last = th.let(name + "_last", select(old == cast(type, tiles - 1), 1, 0), loc);
  th.if_(
      last != 0, [&](Scope& th) { th.atomic_load(name + "_seen", count, index, MemoryOrder::Acquire, loc); }, loc);
  return last;
}

void count_and_zero(Scope& b, const std::string& name, const View& words, const ExprArg& index, const Expr& tiles,
                    const Expr& count, const std::function<Expr(const Expr&)>& word_at,
                    const std::source_location& loc) {
  b.split(Level::Thread,
          {{32,
            [&](Scope& w) {
              Var lane = w.let(name + "_lane", w.id(thread(1), loc), loc);
              Var last = w.let(name + "_last_tile", 0, at(thread(1)), loc);
              w.group(
                  thread(1),
                  [&](Scope& th) {
                    th.if_(
                        lane == 0,
                        [&](Scope& th) {
                          th.assign(last, cast<int>(count_finished(th, name, words, index, tiles, loc)), loc);
                        },
                        loc);
                  },
                  loc);
              Var seen = w.shfl_idx(name + "_last_lane0", last, 0, loc);
              w.if_(
                  seen != 0,
                  [&](Scope& w) {
                    w.group(
                        thread(1),
                        [&](Scope& th) {
                          th.for_(
                              name + "_z", cast<std::int64_t>(lane), count, Expr(32LL, loc),
                              [&](Scope& th, Expr i) {
                                th.atomic_store(words, word_at(i), cast(words.elem(), 0), {}, loc);
                              },
                              loc);
                        },
                        loc);
                  },
                  loc);
            },
            loc}},
          loc);
}

void for_each_share(Scope& b, const std::string& name, const Expr& blk, const Expr& tiles,
                    const std::function<void(Scope&, const Expr&)>& body, const std::source_location& loc) {
  Var blocks = b.let(name + "_blocks", cast<std::int64_t>(b.grid_blocks(loc)), loc);
  Var rounds = b.let(name + "_rounds", (tiles - cast<std::int64_t>(blk) + blocks - 1) / blocks, loc);
  b.group(
      thread(1),
      [&](Scope& th) {
        th.for_(
            name + "_round", Expr(0LL, loc), rounds,
            [&](Scope& th, Expr round) {
              Var tile = th.let(name + "_tile",
                                max(min(cast<std::int64_t>(blk) + round * blocks, tiles), cast<std::int64_t>(0)), loc);
              body(th, tile);
            },
            loc);
      },
      loc);
}

void for_own(Scope& b, const View& shared, const Expr& t, std::int64_t threads, std::int64_t count,
             const std::function<void(Scope&, int, const Expr&, const View&)>& body, const std::source_location& loc) {
  const int per_thread = static_cast<int>((count + threads - 1) / threads);
  b.partition(
      shared, thread(1), [&](Expr k) { return t + k * threads; },
      [&](Scope& b, View mine) {
        b.group(
            thread(1),
            [&](Scope& th) {
              for (int k = 0; k < per_thread; ++k)
                th.if_(
                    t + k * threads < count, [&](Scope& th) { body(th, k, t + k * threads, mine); }, loc);
            },
            loc);
      },
      loc);
}

}  // namespace detail

namespace {

using Loc = std::source_location;

// A tile's word in the temporary storage: its status in bits 62..63. A value of 32 bits lies below
// it, so that one 64-bit atomic store publishes both and a reader never sees a status without its
// value (relaxed atomics suffice). A value of 64 bits has a word of its own, one array for the
// tiles' aggregates and one for their inclusive values after the count: it is stored first, the
// status after it with a release, and a reader that acquires the status then loads the value of
// the array the status names (each written once a launch, so no later value can be seen there).
constexpr int kAggregate = 1;  // the tile's own total
constexpr int kInclusive = 2;  // the total of every element up to the tile's last

bool packed(ScalarType t) { return type_bytes(t) == 4; }
/// A value's bits as the low bits of a word.
Expr bits_of(const Expr& v, ScalarType t) {
  return packed(t) ? cast<std::uint64_t>(bit_cast<std::uint32_t>(v)) : bit_cast<std::uint64_t>(v);
}
/// The value whose bits are the low bits of `d`.
Expr value_of(const Expr& d, ScalarType t) {
  return packed(t) ? bit_cast(t, cast<std::uint32_t>(d & 0xffffffffu)) : bit_cast(t, d);
}
Expr word(int status, const Expr& value, ScalarType t) {
  return (cast<std::uint64_t>(status) << 62) | (packed(t) ? bits_of(value, t) : cast<std::uint64_t>(0));
}
/// Where a 64-bit value of a tile with `status` lies: past the statuses and the count.
Expr value_slot(const Expr& status_is_inclusive, const Expr& tile, const Expr& tiles) {
  return select(status_is_inclusive, 2 * tiles + 1, tiles + 1) + cast<std::int64_t>(tile);
}

std::int64_t tile_elems(std::int64_t threads, DeviceTile tile) { return threads * tile.items; }

using detail::tiles_of;

/// An Op's identity in `t`: 0 for a sum, the type's largest value for a minimum (+inf for a float),
/// its smallest for a maximum (-inf).
Expr identity_of(Op op, ScalarType t) {
  using S = ScalarType;
  auto extreme = [&](bool largest) -> Expr {
    switch (t) {
      case S::U32: return largest ? Expr(0xffffffffu) : Expr(0u);
      case S::I64:
        return largest ? Expr(std::numeric_limits<long long>::max()) : Expr(std::numeric_limits<long long>::min());
      case S::U64: return Expr(largest ? ~0ul : 0ul);
      case S::F32:
        return Expr(largest ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
      case S::F64:
        return Expr(largest ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
      default: return largest ? Expr(std::numeric_limits<int>::max()) : Expr(std::numeric_limits<int>::min());
    }
  };
  switch (op) {
    case Op::Min: return extreme(true);
    case Op::Max: return extreme(false);
    case Op::Sum: break;
  }
  return t == S::I32 ? Expr(0) : t == S::U32 ? Expr(0u) : cast(t, 0);
}

/// What a look-back operation is asked to do.
struct Job {
  const char* helper;
  View in;
  Expr n;
  Combine op;
  std::optional<Op> known;  // the Op the Combine is (it commutes), if any
  Expr identity;
  View temp;
  DeviceTile tile;
  ScalarType type;  // the scanned values' type
  /// The value element e scans as, from the element and whether it is inside; none: the element
  /// itself, the identity past n.
  Predicate keep;
};

/// The types a look-back publishes: values of 32 or 64 bits (bit_cast into its words).
bool combinable(ScalarType t) {
  using S = ScalarType;
  return t == S::I32 || t == S::U32 || t == S::F32 || t == S::I64 || t == S::U64 || t == S::F64;
}

/// Whether the job's shapes are ones the look-back handles; diagnoses at the caller's line if not.
std::optional<std::int64_t> valid(Scope& grid, const Job& j, const Loc& loc) {
  auto threads = detail::warps_block(grid, j.helper, loc);
  if (!threads) return std::nullopt;
  const int items = j.tile.items;
  if (items < 4 || items > 32 || items % 4 != 0) {
    grid.diagnose("V0913",
                  std::string("lib::") + j.helper + " takes a multiple of 4 from 4 to 32 items a thread, not " +
                      std::to_string(items),
                  loc);
    return std::nullopt;
  }
  if (j.tile.backoff_ns < 0 || j.tile.backoff_ns > kMaxNanosleepNs) {
    grid.diagnose("V0913",
                  std::string("lib::") + j.helper + "'s look-back sleeps 0 to " + std::to_string(kMaxNanosleepNs) +
                      " ns before a poll, not " + std::to_string(j.tile.backoff_ns),
                  loc);
    return std::nullopt;
  }
  if (!combinable(j.type)) {
    grid.diagnose("V0913",
                  std::string("lib::") + j.helper +
                      " combines values of 32 or 64 bits (i32, u32, f32, i64, u64, f64), not " + type_name(j.type),
                  loc);
    return std::nullopt;
  }
  if (j.temp.elem() != ScalarType::U64) {
    grid.diagnose("V0913",
                  std::string("lib::") + j.helper +
                      "'s temporary storage is u64 words (device_temp_extent of them), not " + type_name(j.temp.elem()),
                  loc);
    return std::nullopt;
  }
  return threads;
}

/// What a tile's code has when its prefix is known: the thread's items (as loaded, and as the values
/// it scans, and their inclusive scan in the thread), the thread's exclusive prefix including the
/// tiles before (`prefix`), and the index of its first item.
struct TileState {
  View raw, vals, incl;
  Var first, prefix;
  Var before_tile, before_thread, total;  // the tiles' before it; the tile's threads' before this; the tile's
};

/// Loads the thread's `items` elements from `first`: one vector loop per 4 where all are inside
/// (lowering makes it a 16-byte load), element by element at the tail, `fill` past n.
void load_items(Scope& b, const View& dst, const View& src, const Expr& first, const Expr& n64, int items,
                const Expr& fill, const Loc& loc) {
  b.group(
      thread(1),
      [&](Scope& th) {
        th.if_(
            first + items <= n64,
            [&](Scope& th) {
              for (int h = 0; h < items; h += 4)
                th.for_(
                    "v", 0, 4,
                    [&](Scope&, Expr v) {
                      dst[IndexArg(h + v, loc)] = src[IndexArg(first + h + cast<std::int64_t>(v), loc)];
                    },
                    loc);
            },
            [&](Scope& th) {
              for (int e = 0; e < items; ++e)
                th.if_(
                    first + e < n64, [&](Scope&) { dst[IndexArg(e, loc)] = src[IndexArg(first + e, loc)]; },
                    [&](Scope&) { dst[IndexArg(e, loc)] = fill; }, loc);
            },
            loc);
      },
      loc);
}

/// What the tile's publishing thread does when it knows its inclusive value: (th, blk, tiles, value).
using AtEnd = std::function<void(Scope&, const Expr&, const Expr&, const Expr&)>;

/// The look-back: at block(1), the tile `blk` of `tiles` publishes `total` and learns `before`, the
/// values of every tile before it combined (the identity for the first). The first warp does it; the
/// one thread that publishes the inclusive word also runs `at_end` and counts the
/// tile finished (with `tiles`; without, every block is a tile and none is counted). Returns the shared
/// array whose element 0 then holds `before` and element 1 whether this tile finished last (then its
/// block zeroes the storage).
View look_back(Scope& b, const Job& j, const std::string& name, const Expr& blk, const std::optional<Expr>& tiles,
               const Expr& total, const AtEnd& at_end, const Loc& loc) {
  // Without a count of the tiles, every block is a tile (the caller's tile_prefix).
  auto is_tile = [&](const Expr& c) { return tiles ? c && cast<std::int64_t>(blk) < *tiles : c; };
  const bool wide = !packed(j.type);  // a value of 64 bits: in a word of its own (callers pass `tiles`)
  const MemoryOrder reading = wide ? MemoryOrder::Acquire : MemoryOrder::Relaxed;
  auto publish_word = [&](Scope& th, int status, const Expr& value) {
    if (wide) {
      th.atomic_store(j.temp, value_slot(Expr(status == kInclusive, loc), blk, *tiles), bits_of(value, j.type), {},
                      loc);
      th.atomic_store(j.temp, blk, word(status, value, j.type), MemoryOrder::Release, loc);
    } else {
      th.atomic_store(j.temp, blk, word(status, value, j.type), {}, loc);
    }
  };
  View shared = b.shared(name + "_prefix", j.type, 1, loc);  // before
  b.claim(
      shared, warp(),
      [&](Scope& b, View pw) {
        b.split(
            Level::Thread,
            {{32,
              [&](Scope& w) {
                Var lane = w.let(name + "_lane", w.id(thread(1), loc), loc);
                Var before = w.let(name + "_before", j.identity, loc);
                w.if_(
                    is_tile(blk > 0),
                    [&](Scope& w) {
                      w.claim(
                          pw, thread(1),
                          [&](Scope& w, View) {
                            w.split(Level::Thread, {{1, [&](Scope& th) { publish_word(th, kAggregate, total); }, loc}},
                                    loc);
                          },
                          loc);
                      // Each lane reads one earlier tile's word (blk - 1 - lane, then 32 further
                      // back); lanes past tile 0 count as an inclusive identity.
                      Var base = w.let(name + "_base", blk - 1, loc);
                      Var looking = w.let(name + "_looking", true, loc);
                      w.while_(
                          looking,
                          [&](Scope& w) {
                            Var at = w.let(name + "_j", base - lane, loc);
                            Expr at_j = min(max(at, 0), blk);
                            Var d = w.atomic_load(name + "_d", j.temp, at_j, reading, loc);
                            Var status = w.let(name + "_status", select(at >= 0, cast<int>(d >> 62), kInclusive), loc);
                            // Until every word of the window is published.
                            Var waiting =
                                w.let(name + "_waiting", w.ballot(name + "_unpublished", status == 0, loc), loc);
                            w.while_(
                                waiting != 0u,
                                [&](Scope& w) {
                                  if (j.tile.backoff_ns > 0) w.nanosleep(j.tile.backoff_ns, loc);
                                  Var again = w.atomic_load(name + "_again", j.temp, at_j, reading, loc);
                                  w.assign(d, again, loc);
                                  w.assign(status, select(at >= 0, cast<int>(again >> 62), kInclusive), loc);
                                  w.assign(waiting, w.ballot(name + "_unpublished_yet", status == 0, loc), loc);
                                },
                                loc);
                            // The window: the words up to the nearest inclusive one, or all 32,
                            // combined in the tiles' order (the highest lane is the earliest tile).
                            Var done = w.ballot(name + "_done", status == kInclusive, loc);
                            Var last = w.let(name + "_last", select(done != 0u, ffs(done) - 1, 31), loc);
                            Expr bits =
                                wide ? Expr(w.atomic_load(name + "_v", j.temp,
                                                          value_slot(status == kInclusive, at_j, *tiles), {}, loc))
                                     : Expr(d);
                            Expr mine = select(lane <= last && at >= 0, value_of(bits, j.type), j.identity);
                            Var window = j.known ? warp_reduce(w, name + "_window", mine, *j.known, loc)
                                                 : warp_reduce(
                                                       w, name + "_window", mine,
                                                       [&](const Expr& x, const Expr& y) { return j.op(y, x); }, loc);
                            Var sum = w.shfl_idx(name + "_sum", window, 0, loc);
                            w.assign(before, j.op(sum, before), loc);
                            w.if_(
                                done != 0u, [&](Scope& w) { w.assign(looking, false, loc); },
                                [&](Scope& w) { w.assign(base, base - 32, loc); }, loc);
                          },
                          loc);
                    },
                    loc);
                w.claim(
                    pw, thread(1),
                    [&](Scope& w, View one) {
                      w.split(Level::Thread,
                              {{1,
                                [&](Scope& th) {
                                  auto publish = [&](Scope& th) {
                                    Var inclusive = th.let(name + "_inclusive", j.op(before, total), loc);
                                    publish_word(th, kInclusive, inclusive);
                                    if (tiles) at_end(th, blk, *tiles, inclusive);
                                  };
                                  if (tiles)
                                    th.if_(cast<std::int64_t>(blk) < *tiles, publish, loc);
                                  else
                                    publish(th);
                                  one[IndexArg(0, loc)] = before;
                                },
                                loc}},
                              loc);
                    },
                    loc);
              },
              loc}},
            loc);
      },
      loc);
  return shared;
}

/// The shape every look-back operation shares: at grid(1), block blk loads its tile, scans each
/// thread's values in registers and the threads' totals over the block, learns the tiles before by
/// the look-back, runs `finish(b, blk, state)` (its outputs; with none, the threads' prefixes are not
/// computed, only the tile's total), and, if it finished last, zeroes the temporary storage. `out` (if any) is
/// partitioned into the blocks' tiles for `finish`.
void run_tiles(Scope& grid, const Job& j, const View* out, const AtEnd& at_end,
               const std::function<void(Scope&, const Expr&, const TileState&, const View*)>& finish, const Loc& loc) {
  auto threads = valid(grid, j, loc);
  if (!threads) return;
  const int items = j.tile.items;
  const std::int64_t per_tile = tile_elems(*threads, j.tile);
  const std::string name = "dev";
  auto per_block = [&](Scope& b, const Expr& blk, const View* out_b) {
    Var t = b.let(name + "_t", b.id(thread(1), loc), loc);
    const Expr n64 = cast<std::int64_t>(j.n);
    Var first = b.let(name + "_first", cast<std::int64_t>(blk) * per_tile + cast<std::int64_t>(t * items), loc);
    View raw = b.local_array(name + "_raw", j.in.elem(), items, at(thread(1)), loc);
    load_items(b, raw, j.in, first, n64, items, j.keep ? cast(j.in.elem(), 0) : j.identity, loc);
    View vals = raw;
    if (j.keep) {  // the values scanned are the selections: 1 where kept and inside
      vals = b.local_array(name + "_keep", j.type, items, at(thread(1)), loc);
      for (int e = 0; e < items; ++e)
        vals[IndexArg(e, loc)] = select(first + e < n64 && j.keep(raw[IndexArg(e, loc)]), 1, 0);
    }
    View incl = b.local_array(name + "_incl", j.type, items, at(thread(1)), loc);
    incl[IndexArg(0, loc)] = vals[IndexArg(0, loc)];
    for (int e = 1; e < items; ++e) incl[IndexArg(e, loc)] = j.op(incl[IndexArg(e - 1, loc)], vals[IndexArg(e, loc)]);
    Var mine = b.let(name + "_mine", incl[IndexArg(items - 1, loc)], at(thread(1)), loc);
    Var total, thread_before;
    if (finish && j.known == Op::Sum)  // a sum's exclusive prefix is its inclusive one less the thread's own
      thread_before =
          b.let(name + "_before", block_inclusive_scan(b, name + "_scan", mine, Op::Sum, &total, loc) - mine, loc);
    else if (finish)  // the threads' own prefixes are wanted
      thread_before = j.known ? block_exclusive_scan(b, name + "_scan", mine, *j.known, j.identity, &total, loc)
                              : block_exclusive_scan(b, name + "_scan", mine, j.op, j.identity, &total, loc);
    else  // only the tile's total
      total = j.known ? block_reduce(b, name + "_total", mine, *j.known, loc)
                      : block_reduce(b, name + "_total", mine, j.op, loc);
    const Expr tiles = tiles_of(j.n, per_tile);
    View shared = look_back(b, j, name + "_lb", blk, tiles, total, at_end, loc);
    if (finish) {
      Var before_tile = b.let(name + "_before_tile", shared[IndexArg(0, loc)], loc);
      Var prefix = b.let(name + "_prefix", j.op(before_tile, thread_before), at(thread(1)), loc);
      finish(b, blk, TileState{raw, vals, incl, first, prefix, before_tile, thread_before, total}, out_b);
    }
    // After the tile's outputs, off the look-back's path: the tile counts itself finished, and in
    // the last tile to finish the first warp zeroes the words and the count for the next launch.
    b.if_(
        cast<std::int64_t>(blk) < tiles,
        [&](Scope& b) {
          detail::count_and_zero(
              b, name + "_count", j.temp, tiles, cast<std::uint64_t>(tiles), tiles + 1, [](const Expr& i) { return i; },
              loc);
        },
        loc);
  };
  if (out) {
    for_each_block(
        grid, *out, per_tile, [&](Scope& b, Expr blk, View out_b) { per_block(b, blk, &out_b); }, loc);
    return;
  }
  Var blk = grid.let("blk", grid.id(block(1), loc), loc);
  grid.group(
      block(1), [&](Scope& b) { per_block(b, blk, nullptr); }, loc);
}

/// A device-wide reduction without a look-back: every tile but the last publishes its total (one
/// atomic store of its word; a 64-bit value in its own word first, its status after with a release)
/// and is done, waiting for no other tile. The last tile (the last block, dispatched after every other)
/// waits for each word, thread t combining the tiles [t c, t c + c) in order (c = tiles / T, rounded
/// up), the block combining the threads' values in the threads' order, writes the result to out[0]
/// and zeroes the words for the next launch (it alone reads them).
void reduce_tiles(Scope& grid, const Job& j, const View& out, const Loc& loc) {
  auto threads = valid(grid, j, loc);
  if (!threads) return;
  const int items = j.tile.items;
  const std::int64_t T = *threads, per_tile = tile_elems(T, j.tile);
  const bool wide = !packed(j.type);
  const MemoryOrder reading = wide ? MemoryOrder::Acquire : MemoryOrder::Relaxed;
  auto combine = [&](Scope& b, const std::string& name, const Expr& v) {
    return j.known ? block_reduce(b, name, v, *j.known, loc) : block_reduce(b, name, v, j.op, loc);
  };
  Var blk = grid.let("blk", grid.id(block(1), loc), loc);
  grid.group(
      block(1),
      [&](Scope& b) {
        const Expr tiles = tiles_of(j.n, per_tile), n64 = cast<std::int64_t>(j.n);
        // An even share: the launch's G blocks take ceil(tiles / G) consecutive tiles each (one each
        // when launched with a block a tile); `active` of them have any, and each such block
        // publishes one word, the combination of its tiles, in their order.
        Var blocks = b.let("dev_blocks", cast<std::int64_t>(b.grid_blocks(loc)), loc);
        Var share = b.let("dev_share", (tiles + blocks - 1) / blocks, loc);
        Var active = b.let("dev_active", min((tiles + share - 1) / share, tiles), loc);  // min: for the bounds
        Var begin = b.let("dev_begin", cast<std::int64_t>(blk) * share, loc);
        Var end = b.let("dev_end", min(begin + share, tiles), loc);
        Var t = b.let("dev_t", b.id(thread(1), loc), loc);
        View raw = b.local_array("dev_raw", j.in.elem(), items, at(thread(1)), loc);
        auto load_tile = [&](Scope& b, const Expr& k) {
          // From 0 to the tiles, as the loop keeps it, so that the index's arithmetic is bounded
          // (lowering has no bound for a product of two run-time values, as blk * share).
          Var at_tile = b.let("dev_tile", max(min(k, tiles - 1), cast<std::int64_t>(0)), loc);
          Var first = b.let("dev_first", at_tile * per_tile + cast<std::int64_t>(t * items), loc);
          load_items(b, raw, j.in, first, n64, items, j.identity, loc);
          Expr mine = raw[IndexArg(0, loc)];
          for (int e = 1; e < items; ++e) mine = j.op(mine, raw[IndexArg(e, loc)]);
          return mine;
        };
        Var total = b.let("dev_total", j.identity, loc);
        if (j.known) {
          // A known Op commutes: each thread combines its items of all the block's tiles, the block
          // its threads' once (a sum of floats rounds as the threads' partial sums meet).
          Var mine = b.let("dev_mine", j.identity, at(thread(1)), loc);
          b.for_(
              "dev_k", begin, end, [&](Scope& b, Expr k) { b.assign(mine, j.op(mine, load_tile(b, k)), loc); }, loc);
          b.assign(total, combine(b, "dev_tiles", mine), loc);
        } else {
          // Any other operator: each tile combined over the block, the tiles' totals in order.
          b.for_(
              "dev_k", begin, end,
              [&](Scope& b, Expr k) { b.assign(total, j.op(total, combine(b, "dev_tile", load_tile(b, k))), loc); },
              loc);
        }
        // The last active block: waits for every other block's word and combines them all in order.
        auto last_tile = [&](Scope& b) {
          Var per = b.let("dev_per", (active + (T - 1)) / T, loc);
          Var acc = b.let("dev_acc", j.identity, at(thread(1)), loc);
          b.group(
              thread(1),
              [&](Scope& th) {
                th.for_(
                    "k", Expr(0LL, loc), per,
                    [&](Scope& th, Expr k) {
                      Var i = th.let("dev_i", cast<std::int64_t>(t) * per + k, loc);
                      // The last block's own total is its own; the others' are waited for.
                      th.if_(
                          i < active - 1,
                          [&](Scope& th) {
                            Var d = th.atomic_load("dev_d", j.temp, i, reading, loc);
                            th.while_(
                                cast<int>(d >> 62) == 0,
                                [&](Scope& th) {
                                  if (j.tile.backoff_ns > 0) th.nanosleep(j.tile.backoff_ns, loc);
                                  th.assign(d, th.atomic_load("dev_again", j.temp, i, reading, loc), loc);
                                },
                                loc);
                            const Expr v =
                                wide ? bit_cast(j.type, th.atomic_load("dev_v", j.temp,
                                                                       value_slot(Expr(false, loc), i, tiles), {}, loc))
                                     : value_of(d, j.type);
                            th.assign(acc, j.op(acc, v), loc);
                          },
                          [&](Scope& th) {
                            th.if_(
                                i == active - 1, [&](Scope& th) { th.assign(acc, j.op(acc, total), loc); }, loc);
                          },
                          loc);
                    },
                    loc);
              },
              loc);
          Var all = combine(b, "dev_all", acc);
          by_one_thread(
              b, [&](Scope& th) { th.atomic(AtomicOp::Exch, out, 0, cast(out.elem(), all), AtomicScope::Device, loc); },
              loc);
          // Every word was read above (the block's combine waited for every thread): zero them (up
          // to the tiles' count, which bounds the indices where `active` does not).
          block_strided(
              b, Expr(0LL, loc), tiles + 1,
              [&](Scope& th, Expr i) { th.atomic_store(j.temp, i, cast<std::uint64_t>(0), {}, loc); }, loc);
        };
        b.if_(
            cast<std::int64_t>(blk) < active - 1 && cast<std::int64_t>(blk) < tiles - 1,  // the second for the bounds
            [&](Scope& b) {
              by_one_thread(
                  b,
                  [&](Scope& th) {
                    if (wide) {
                      th.atomic_store(j.temp, value_slot(Expr(false, loc), blk, tiles), bits_of(total, j.type), {},
                                      loc);
                      th.atomic_store(j.temp, blk, word(kAggregate, total, j.type), MemoryOrder::Release, loc);
                    } else {
                      th.atomic_store(j.temp, blk, word(kAggregate, total, j.type), {}, loc);
                    }
                  },
                  loc);
            },
            [&](Scope& b) {
              b.if_(
                  cast<std::int64_t>(blk) == active - 1, [&](Scope& b) { last_tile(b); }, loc);
            },
            loc);
      },
      loc);
}

/// The scans' outputs: each thread's items, at its first item of its block's tile, by 16-byte
/// vectors where all are inside.
void store_items(Scope& b, const View& out_b, const TileState& s, const Expr& n64, int items,
                 const std::function<Expr(int)>& value, const Loc& loc) {
  View res = b.local_array("dev_out", out_b.elem(), items, at(thread(1)), loc);
  for (int e = 0; e < items; ++e) res[IndexArg(e, loc)] = value(e);
  Var t = b.let("dev_st", b.id(thread(1), loc), loc);
  b.partition(
      out_b, thread(1), [&](Expr i) { return t * items + i; },
      [&](Scope& b, View mine) {
        b.group(
            thread(1),
            [&](Scope& th) {
              th.if_(
                  s.first + items <= n64,
                  [&](Scope& th) {
                    for (int h = 0; h < items; h += 4)
                      th.for_(
                          "w", 0, 4, [&](Scope&, Expr w) { mine[IndexArg(h + w, loc)] = res[IndexArg(h + w, loc)]; },
                          loc);
                  },
                  [&](Scope& th) {
                    for (int e = 0; e < items; ++e)
                      th.if_(
                          s.first + e < n64, [&](Scope&) { mine[IndexArg(e, loc)] = res[IndexArg(e, loc)]; }, loc);
                  },
                  loc);
            },
            loc);
      },
      loc);
}

void scan(Scope& grid, const View& out, const View& in, const ExprArg& n, const Combine& op, std::optional<Op> known,
          const Expr& identity, const View& temp, DeviceTile tile, bool exclusive, const Loc& loc) {
  const char* helper = exclusive ? "device_exclusive_scan" : "device_inclusive_scan";
  if (out.elem() != in.elem()) {
    grid.diagnose("V0913",
                  std::string("lib::") + helper + " writes the type it reads: out is " + type_name(out.elem()) +
                      ", in " + type_name(in.elem()),
                  loc);
    return;
  }
  Job j{helper, in, n.expr, op, known, identity, temp, tile, in.elem(), nullptr};
  const int items = tile.items;
  run_tiles(
      grid, j, &out, [](Scope&, const Expr&, const Expr&, const Expr&) {},
      [&](Scope& b, const Expr&, const TileState& s, const View* out_b) {
        store_items(
            b, *out_b, s, cast<std::int64_t>(j.n), items,
            [&](int e) -> Expr {
              if (!exclusive) return op(s.prefix, s.incl[IndexArg(e, loc)]);
              return e == 0 ? Expr(s.prefix) : op(s.prefix, s.incl[IndexArg(e - 1, loc)]);
            },
            loc);
      },
      loc);
}

/// The last tile's inclusive value, written by its publishing thread to dst[0] (one atomic
/// exchange: no other thread of the launch writes it).
AtEnd last_tile_writes(const View& dst, const Loc& loc) {
  return [=](Scope& th, const Expr& blk, const Expr& tiles, const Expr& inclusive) {
    th.if_(
        cast<std::int64_t>(blk) == tiles - 1,
        [&](Scope& th) { th.atomic(AtomicOp::Exch, dst, 0, cast(dst.elem(), inclusive), AtomicScope::Device, loc); },
        loc);
  };
}

}  // namespace

std::int64_t device_blocks(std::int64_t n, std::int64_t threads, DeviceTile tile) {
  const std::int64_t per = std::max<std::int64_t>(tile_elems(std::max<std::int64_t>(threads, 1), tile), 1);
  return std::max<std::int64_t>((n + per - 1) / per, 1);
}

std::int64_t reduce_blocks(std::int64_t n, std::int64_t threads, DeviceTile tile) {
  // About 2^20 threads: a few waves of a large GPU (an H200 holds 132 x 2048), each block a few tiles.
  return std::min(device_blocks(n, threads, tile),
                  std::max<std::int64_t>((std::int64_t{1} << 20) / std::max<std::int64_t>(threads, 1), 1));
}

std::int64_t device_temp_words(std::int64_t n, std::int64_t threads, DeviceTile tile, ScalarType values) {
  const std::int64_t tiles = device_blocks(n, threads, tile);
  return tiles + 1 + (packed(values) ? 0 : 2 * tiles);
}

Expr device_temp_extent(const ExprArg& n, std::int64_t threads, DeviceTile tile, ScalarType values) {
  const Expr tiles = tiles_of(n.expr, std::max<std::int64_t>(tile_elems(threads, tile), 1));
  return packed(values) ? tiles + 1 : 3 * tiles + 1;
}

void device_inclusive_scan(Scope& grid, const View& out, const View& in, const ExprArg& n, Op op, const View& temp,
                           DeviceTile tile, Loc loc) {
  scan(grid, out, in, n, combiner(op), op, identity_of(op, in.elem()), temp, tile, false, loc);
}
void device_inclusive_scan(Scope& grid, const View& out, const View& in, const ExprArg& n, const Combine& op,
                           const ExprArg& identity, const View& temp, DeviceTile tile, Loc loc) {
  if (auto id = detail::identity_as(grid, "device_inclusive_scan", identity, in.elem(), loc))
    scan(grid, out, in, n, op, std::nullopt, *id, temp, tile, false, loc);
}
void device_exclusive_scan(Scope& grid, const View& out, const View& in, const ExprArg& n, Op op, const View& temp,
                           DeviceTile tile, Loc loc) {
  scan(grid, out, in, n, combiner(op), op, identity_of(op, in.elem()), temp, tile, true, loc);
}
void device_exclusive_scan(Scope& grid, const View& out, const View& in, const ExprArg& n, const Combine& op,
                           const ExprArg& identity, const View& temp, DeviceTile tile, Loc loc) {
  if (auto id = detail::identity_as(grid, "device_exclusive_scan", identity, in.elem(), loc))
    scan(grid, out, in, n, op, std::nullopt, *id, temp, tile, true, loc);
}

namespace {
Var tile_prefix_of(Scope& b, const std::string& name, const View& temp, const ExprArg& tile, const ExprArg& total,
                   const Combine& op, std::optional<Op> known, const Expr& identity, const Loc& loc) {
  const ScalarType type = total.expr.type();
  Job j{"tile_prefix", temp, Expr(0), op, known, identity, temp, DeviceTile{}, type, nullptr};
  if (!detail::warps_block(b, "tile_prefix", loc)) return b.let(name, identity, loc);
  if (!combinable(type) || !packed(type) || temp.elem() != ScalarType::U64) {
    b.diagnose("V0913",
               std::string("lib::tile_prefix combines values of 32 bits (i32, u32 or f32) through u64 words, not ") +
                   type_name(type) + " through " + type_name(temp.elem()),
               loc);
    return b.let(name, identity, loc);
  }
  Var at_tile = b.let(name + "_tile", tile, loc);
  View shared = look_back(b, j, name, at_tile, std::nullopt, total.expr, nullptr, loc);
  return b.let(name, shared[IndexArg(0, loc)], loc);
}
}  // namespace

Var tile_prefix(Scope& block, std::string name, const View& temp, const ExprArg& tile, const ExprArg& total, Op op,
                Loc loc) {
  return tile_prefix_of(block, name, temp, tile, total, combiner(op), op, identity_of(op, total.expr.type()), loc);
}
Var tile_prefix(Scope& block, std::string name, const View& temp, const ExprArg& tile, const ExprArg& total,
                const Combine& op, const ExprArg& identity, Loc loc) {
  auto id = detail::identity_as(block, "tile_prefix", identity, total.expr.type(), loc);
  if (!id) return block.let(name, total, loc);
  return tile_prefix_of(block, name, temp, tile, total, op, std::nullopt, *id, loc);
}

namespace {
void reduce(Scope& grid, const View& out, const View& in, const ExprArg& n, const Combine& op, std::optional<Op> known,
            const Expr& identity, const View& temp, DeviceTile tile, const Loc& loc) {
  if (out.elem() != in.elem()) {
    grid.diagnose("V0913",
                  std::string("lib::device_reduce writes the type it reads: out is ") + type_name(out.elem()) +
                      ", in " + type_name(in.elem()),
                  loc);
    return;
  }
  Job j{"device_reduce", in, n.expr, op, known, identity, temp, tile, in.elem(), nullptr};
  reduce_tiles(grid, j, out, loc);
}
}  // namespace

void device_reduce(Scope& grid, const View& out, const View& in, const ExprArg& n, Op op, const View& temp,
                   DeviceTile tile, Loc loc) {
  reduce(grid, out, in, n, combiner(op), op, identity_of(op, in.elem()), temp, tile, loc);
}
void device_reduce(Scope& grid, const View& out, const View& in, const ExprArg& n, const Combine& op,
                   const ExprArg& identity, const View& temp, DeviceTile tile, Loc loc) {
  reduce(grid, out, in, n, op, std::nullopt, identity.expr, temp, tile, loc);
}

void device_select(Scope& grid, const View& out, const View& count, const View& in, const ExprArg& n,
                   const Predicate& keep, const View& temp, DeviceTile tile, Loc loc) {
  if (out.elem() != in.elem()) {
    grid.diagnose("V0913",
                  std::string("lib::device_select writes the type it reads: out is ") + type_name(out.elem()) +
                      ", in " + type_name(in.elem()),
                  loc);
    return;
  }
  Job j{"device_select", in, n.expr, combiner(Op::Sum), Op::Sum, Expr(0), temp, tile, ScalarType::I32, keep};
  const int items = tile.items;
  run_tiles(
      grid, j, nullptr, last_tile_writes(count, loc),
      [&](Scope& b, const Expr&, const TileState& s, const View*) {
        // Each kept item to its place among the tile's kept items in shared memory (the kept items
        // of the threads before and its own before it) ...
        const std::int64_t T = *b.block_threads();  // run_tiles checked it is declared
        View staged = b.shared("dev_staged", in.elem(), T * items, loc);
        b.group(
            thread(1),
            [&](Scope& th) {
              for (int e = 0; e < items; ++e) {
                Expr kept = s.vals[IndexArg(e, loc)];
                Expr at_tile = s.before_thread + (s.incl[IndexArg(e, loc)] - kept);
                th.if_(
                    kept != 0,
                    [&](Scope& th) {
                      th.atomic(AtomicOp::Exch, staged, at_tile, s.raw[IndexArg(e, loc)], AtomicScope::Block, loc);
                    },
                    loc);
              }
            },
            loc);
        // ... then thread t the tile's kept items t, t + T, ... to the launch's places after the tiles'
        // before: neighbouring threads write neighbouring places (coalesced, as CUB's select
        // scatters through shared memory), where each thread's own kept items lay a thread's
        // share apart from its neighbour's.
        Var t = b.let("dev_sel_t", b.id(thread(1), loc), loc);
        b.group(
            thread(1),
            [&](Scope& th) {
              for (int e = 0; e < items; ++e) {
                Expr i = t + e * static_cast<int>(T);
                th.if_(
                    i < s.total,
                    [&](Scope& th) {
                      th.atomic(AtomicOp::Exch, out, cast<std::int64_t>(s.before_tile) + cast<std::int64_t>(i),
                                staged[IndexArg(i, loc)], AtomicScope::Device, loc);
                    },
                    loc);
              }
            },
            loc);
      },
      loc);
}

void device_histogram(Scope& grid, const View& out, const View& in, const ExprArg& n, int bins, const Binning& bin_of,
                      DeviceTile tile, Loc loc) {
  auto threads = detail::warps_block(grid, "device_histogram", loc);
  if (!threads) return;
  const ScalarType ct = out.elem();
  if ((ct != ScalarType::U32 && ct != ScalarType::I32) || bins < 1 || tile.items < 1) {
    grid.diagnose("V0913",
                  std::string("lib::device_histogram counts into u32 or i32 bins, at least one, with at least one "
                              "item a thread, not ") +
                      std::to_string(bins) + " of " + type_name(ct) + " with " + std::to_string(tile.items),
                  loc);
    return;
  }
  const std::int64_t T = *threads, per_tile = tile_elems(T, tile);
  Var blk = grid.let("blk", grid.id(block(1), loc), loc);
  grid.group(
      block(1),
      [&](Scope& b) {
        View hist = b.shared("dev_hist", ct, bins, loc);
        Var t = b.let("dev_t", b.id(thread(1), loc), loc);
        auto own_bins = [&](const std::function<void(Scope&, int, const Expr&, const View&)>& body) {
          detail::for_own(b, hist, t, T, bins, body, loc);
        };
        own_bins([&](Scope&, int k, const Expr&, const View& mine) { mine[IndexArg(k, loc)] = cast(ct, 0); });
        const Expr n64 = cast<std::int64_t>(n.expr);
        // The tiles blk, blk + G, ... (G the launch's blocks): a launch of fewer blocks than tiles
        // adds each block's counts to `out` once for all of its tiles.
        bool said = false;  // a float bin is refused once
        detail::for_each_share(
            b, "dev", blk, tiles_of(n.expr, per_tile),
            [&](Scope& th, const Expr& at_tile) {
              for (int e = 0; e < tile.items; ++e) {
                Expr i = at_tile * per_tile + (cast<std::int64_t>(t) + e * T);
                th.if_(
                    i < n64,
                    [&](Scope& th) {
                      Var bin = th.let("dev_bin", bin_of(in[IndexArg(i, loc)]), loc);
                      // A bin of any integer type: compared in 64 bits where it is not an i32 (a u8's
                      // range holds no 256, an i64 would wrap into range as an i32), then taken as one.
                      if (!is_integer(bin.type())) {
                        if (said) return;
                        said = true;
                        th.diagnose("V0913",
                                    std::string("lib::device_histogram's bin_of gives ") + type_name(bin.type()) +
                                        ": it must give an integer bin",
                                    loc);
                        return;
                      }
                      const bool narrow = bin.type() == ScalarType::I32;
                      const Expr wide = narrow ? Expr(bin) : cast<std::int64_t>(bin);
                      th.if_(
                          wide >= 0 && wide < bins,
                          [&](Scope& th) {
                            th.atomic(AtomicOp::Add, hist, narrow ? Expr(bin) : cast<int>(bin), cast(ct, 1),
                                      AtomicScope::Block, loc);
                          },
                          loc);
                    },
                    loc);
              }
            },
            loc);
        own_bins([&](Scope& th, int k, const Expr& bin, const View& mine) {
          Var c = th.let("dev_count", mine[IndexArg(k, loc)], loc);
          th.if_(
              c != cast(ct, 0), [&](Scope& th) { th.atomic(AtomicOp::Add, out, bin, c, AtomicScope::Device, loc); },
              loc);
        });
      },
      loc);
}

}  // namespace vantage::lib
