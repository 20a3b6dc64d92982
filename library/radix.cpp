// The device library's radix sort passes (include/vantage/library.hpp, docs/library.md): a tile's
// keys counted by digit, and scattered to their places by a warp-level split of each round of keys
// into digits (ballots), written only with the public builder.
#include <optional>
#include <stdexcept>
#include <string>

#include "library/common.h"
#include "vantage/library.hpp"

namespace vantage::lib {

namespace {

using Loc = std::source_location;

/// A pass's shape: T threads of `items` keys, digits of `bits` bits.
struct Pass {
  std::int64_t threads = 0, warps = 0, digits = 0, per_tile = 0;
  int items = 0, bits = 0;
};

std::optional<Pass> pass_of(Scope& grid, const char* helper, const View& keys, RadixTile tile, const Loc& loc) {
  auto threads = detail::warps_block(grid, helper, loc);
  if (!threads) return std::nullopt;
  if (tile.bits < 1 || tile.bits > 8 || tile.items < 1 || tile.items > 32 ||
      (std::int64_t{1} << tile.bits) > *threads) {
    grid.diagnose("V0913",
                  std::string("lib::") + helper +
                      " takes digits of 1 to 8 bits on a block of at least 2^bits threads, and 1 to 32 keys a "
                      "thread, not " +
                      std::to_string(tile.bits) + " bits on " + std::to_string(*threads) + " threads with " +
                      std::to_string(tile.items),
                  loc);
    return std::nullopt;
  }
  if (keys.elem() != ScalarType::U32) {
    grid.diagnose("V0913", std::string("lib::") + helper + " sorts u32 keys, not " + type_name(keys.elem()), loc);
    return std::nullopt;
  }
  Pass p;
  p.threads = *threads;
  p.warps = *threads / 32;
  p.digits = std::int64_t{1} << tile.bits;
  p.items = tile.items;
  p.bits = tile.bits;
  p.per_tile = *threads * tile.items;
  return p;
}

/// Whether the table of counts is i32, as the scan of it and the places need; diagnoses if not.
bool table_ok(Scope& grid, const char* helper, const View& table, const Loc& loc) {
  if (table.elem() == ScalarType::I32) return true;
  grid.diagnose("V0913", std::string("lib::") + helper + "'s table of counts is i32, not " + type_name(table.elem()),
                loc);
  return false;
}

/// A key's digit: (key >> shift) & (digits - 1), as an i32.
Expr digit_of(const Expr& key, const Expr& shift, const Pass& p) {
  return cast<int>((key >> shift) & static_cast<std::uint32_t>(p.digits - 1));
}

/// At block(1): a shared array of `size` i32 counts, zeroed, then `count(th, counts, key)` for each
/// key of the block's tile (thread t the keys t, t + T, ...: coalesced), or with `share`, of each of
/// the tiles blk, blk + G, ... (G the launch's blocks). radix_count's and radix_histogram's tiles.
View tile_counts(Scope& b, const Expr& blk, const Expr& n64, const Pass& p, const Expr& t, std::int64_t size,
                 const View& keys, const std::function<void(Scope&, const View&, const Expr&)>& count, bool share,
                 const Loc& loc) {
  View h = b.shared("radix_hist", ScalarType::I32, size, loc);
  detail::for_own(
      b, h, t, p.threads, size, [&](Scope&, int k, const Expr&, const View& mine) { mine[IndexArg(k, loc)] = 0; }, loc);
  auto count_tile = [&](Scope& th, const Expr& tile) {
    for (int e = 0; e < p.items; ++e) {
      Expr i = tile * p.per_tile + (cast<std::int64_t>(t) + e * p.threads);
      th.if_(
          i < n64, [&](Scope& th) { count(th, h, keys[IndexArg(i, loc)]); }, loc);
    }
  };
  if (share)
    detail::for_each_share(b, "radix", blk, detail::tiles_of(n64, p.per_tile), count_tile, loc);
  else
    b.group(
        thread(1), [&](Scope& th) { count_tile(th, cast<std::int64_t>(blk)); }, loc);
  return h;
}

/// A one-sweep pass's storage: every pass's digit counts (and its count of the tiles finished), and
/// the tiles' look-back words, two regions a pass's parity apart.
struct Sweep {
  View hist, lookback;
};

/// The onesweep's look-back for digit t of tile blk (thread t, t < D): publishes the tile's count of
/// the digit, adds the counts of the tiles before until one holds their whole prefix, publishes its
/// own, and zeroes its word in the other region (the next pass's). Returns the count before the tile.
Expr digit_look_back(Scope& th, const Sweep& s, const Pass& p, const Expr& blk, const Expr& tiles, const Expr& t,
                     const Expr& pass, const Expr& total, const Loc& loc) {
  const Expr region = cast<std::int64_t>(pass % 2) * cast<std::int64_t>(tiles) * p.digits;
  const Expr other = cast<std::int64_t>((pass + 1) % 2) * cast<std::int64_t>(tiles) * p.digits;
  auto word = [&](std::uint32_t status, const Expr& v) { return Expr(status << 30) | cast<std::uint32_t>(v); };
  auto at = [&](const Expr& tile) { return region + cast<std::int64_t>(tile) * p.digits + cast<std::int64_t>(t); };
  th.atomic_store(s.lookback, at(blk), select(blk == 0, word(2u, total), word(1u, total)), {}, loc);
  Var before = th.let("radix_before", 0, loc);
  th.if_(
      blk > 0,
      [&](Scope& th) {
        Var j = th.let("radix_j", blk - 1, loc);
        Var looking = th.let("radix_looking", true, loc);
        th.while_(
            looking,
            [&](Scope& th) {
              Var w = th.atomic_load("radix_w", s.lookback, at(j), {}, loc);
              th.while_(
                  (w >> 30u) == 0u,
                  [&](Scope& th) { th.assign(w, th.atomic_load("radix_w_again", s.lookback, at(j), {}, loc), loc); },
                  loc);
              th.assign(before, before + cast<int>(w & 0x3fffffffu), loc);
              th.if_((w >> 30u) == 2u, [&](Scope& th) { th.assign(looking, false, loc); },
                     [&](Scope& th) { th.assign(j, j - 1, loc); }, loc);
            },
            loc);
        th.atomic_store(s.lookback, at(blk), word(2u, before + total), {}, loc);
      },
      loc);
  th.atomic_store(s.lookback, other + cast<std::int64_t>(blk) * p.digits + cast<std::int64_t>(t), 0u, {}, loc);
  return before;
}

/// The passes a onesweep sort of u32 keys makes, and the digits of each.
std::int64_t sweep_passes(const Pass& p) { return 32 / p.bits; }

/// After a onesweep tile: it counts itself finished (after its reads of the pass's counts; see
/// count_and_zero); the last tile zeroes the pass's counts and its count for the next sort.
void finish_pass(Scope& b, const Sweep& s, const Pass& p, const Expr& pass, const Expr& tiles, const Loc& loc) {
  const std::int64_t D = p.digits, P = sweep_passes(p);
  detail::count_and_zero(
      b, "radix_finished", s.hist, P * D + pass, tiles, Expr(D + 1, loc),
      [&](const Expr& i) { return select(i < D, cast<std::int64_t>(pass * D) + i, cast<std::int64_t>(P * D + pass)); },
      loc);
}

void scatter(Scope& grid, const View& keys_out, const View* vals_out, const View& keys_in, const View* vals_in,
             const ExprArg& n, const View& offsets, const ExprArg& shift, RadixTile tile, const Loc& loc,
             const Sweep* sweep = nullptr) {
  const char* helper = sweep ? "radix_onesweep" : "radix_scatter";
  auto p = pass_of(grid, helper, keys_in, tile, loc);
  if (!p || !table_ok(grid, helper, offsets, loc)) return;
  if (keys_out.elem() != ScalarType::U32 || (vals_in && vals_out->elem() != vals_in->elem())) {
    grid.diagnose("V0913",
                  "lib::radix_scatter writes the types it reads: keys_out is " +
                      std::string(type_name(keys_out.elem())) +
                      (vals_in ? std::string(", vals_out ") + type_name(vals_out->elem()) + " and vals_in " +
                                     type_name(vals_in->elem())
                               : std::string()),
                  loc);
    return;
  }
  const Expr n64 = cast<std::int64_t>(n.expr), tiles = cast<int>(detail::tiles_of(n.expr, p->per_tile));
  const std::int64_t D = p->digits, W = p->warps;
  Var blk = grid.let("blk", grid.id(block(1), loc), loc);
  grid.group(
      block(1),
      [&](Scope& b) {
        // counts[w * D + d]: warp w's keys of digit d so far, then the keys of digit d of the warps
        // before w; the last row, digit d's first place in keys_out less its first in the tile.
        const std::int64_t rows = W + 1;
        View counts = b.shared("radix_counts", ScalarType::I32, rows * D, loc);
        Var t = b.let("radix_t", b.id(thread(1), loc), loc);
        Var wid = b.let("radix_warp", b.id(thread(32), loc), loc);
        Var lane = b.let("radix_lane", t % 32, loc);
        detail::for_own(
            b, counts, t, p->threads, rows * D,
            [&](Scope&, int k, const Expr&, const View& mine) { mine[IndexArg(k, loc)] = 0; }, loc);
        // A onesweep's digits' first places in the launch: the exclusive scan of the pass's counts.
        const Expr pass = cast<int>(shift.expr) / p->bits;
        std::optional<Var> start;
        if (sweep) {  // atomic loads: the pass's last tile zeroes the counts while others may read
          Var count = b.let("radix_count", 0, at(thread(1)), loc);
          b.group(
              thread(1),
              [&](Scope& th) {
                th.if_(
                    t < D,
                    [&](Scope& th) {
                      th.assign(count, th.atomic_load("radix_h", sweep->hist, pass * D + t, {}, loc), loc);
                    },
                    loc);
              },
              loc);
          start = block_exclusive_scan(b, "radix_start", count, Op::Sum, 0, nullptr, loc);
        }
        // Warp w takes the tile's keys w * 32 * items .., round r its lanes' keys r * 32 + lane.
        auto index = [&](int r) {
          return cast<std::int64_t>(blk) * p->per_tile + cast<std::int64_t>(wid * (32 * p->items) + (r * 32 + lane));
        };
        View keys = b.local_array("radix_keys", ScalarType::U32, p->items, at(thread(1)), loc);
        View rank = b.local_array("radix_rank", ScalarType::I32, p->items, at(thread(1)), loc);
        std::optional<View> vals;
        if (vals_in) vals = b.local_array("radix_vals", vals_in->elem(), p->items, at(thread(1)), loc);
        b.group(
            thread(32),
            [&](Scope& w) {
              for (int r = 0; r < p->items; ++r) {
                const std::string rn = "radix_" + std::to_string(r);
                Var i = w.let(rn + "_i", index(r), loc);
                Var valid = w.let(rn + "_valid", i < n64, loc);
                keys[IndexArg(r, loc)] = 0xffffffffu;
                w.group(
                    thread(1),
                    [&](Scope& th) {
                      th.if_(
                          valid,
                          [&](Scope&) {
                            keys[IndexArg(r, loc)] = keys_in[IndexArg(i, loc)];
                            if (vals) (*vals)[IndexArg(r, loc)] = (*vals_in)[IndexArg(i, loc)];
                          },
                          loc);
                    },
                    loc);
                Var d = w.let(rn + "_d", digit_of(keys[IndexArg(r, loc)], shift.expr, *p), loc);
                // The lanes whose keys share this lane's digit: a ballot a bit.
                Var peers = w.let(rn + "_peers", w.ballot(rn + "_valid_lanes", valid, loc), at(thread(1)), loc);
                for (int bit = 0; bit < p->bits; ++bit) {
                  Expr set = ((d >> bit) & 1) != 0;
                  Var m = w.ballot(rn + "_bit" + std::to_string(bit), set, loc);
                  w.assign(peers, peers & select(set, Expr(m), ~m), loc);
                }
                // The lowest of them adds their number to the warp's count of the digit; each takes
                // the count before as its base and adds the peers below it.
                Var leader = w.let(rn + "_leader", select(valid, ffs(peers) - 1, lane), loc);
                Var old = w.let(rn + "_old", 0, at(thread(1)), loc);
                w.group(
                    thread(1),
                    [&](Scope& th) {
                      th.if_(
                          valid && lane == leader,
                          [&](Scope& th) {
                            th.assign(old,
                                      th.atomic(rn + "_before", AtomicOp::Add, counts, wid * D + d, popc(peers),
                                                AtomicScope::Block, loc),
                                      loc);
                          },
                          loc);
                    },
                    loc);
                Var base = w.shfl_idx(rn + "_base", old, leader, loc);
                rank[IndexArg(r, loc)] = base + popc(peers & ((Expr(1u) << cast<std::uint32_t>(lane)) - 1u));
              }
            },
            loc);
        // Each digit's counts over the warps, in warp order, become the warps' places in the digit;
        // thread d keeps the tile's count of digit d.
        Var tile_count = b.let("radix_tile_count", 0, at(thread(1)), loc);
        auto per_digit = [&](const std::function<void(Scope&, const View&)>& body) {
          b.partition(
              counts, thread(1), [&](Expr j) { return j * D + t; },
              [&](Scope& b, View mine) {
                b.group(
                    thread(1),
                    [&](Scope& th) {
                      th.if_(
                          t < D, [&](Scope& th) { body(th, mine); }, loc);
                    },
                    loc);
              },
              loc);
        };
        per_digit([&](Scope& th, const View& mine) {
          Var acc = th.let("radix_acc", 0, loc);
          for (std::int64_t j = 0; j < W; ++j) {
            Var c = th.let("radix_c" + std::to_string(j), mine[IndexArg(static_cast<int>(j), loc)], loc);
            mine[IndexArg(static_cast<int>(j), loc)] = acc;
            th.assign(acc, acc + c, loc);
          }
          th.assign(tile_count, acc, loc);
        });
        // The digits' first places in the tile sorted by digit (the exclusive scan of their counts):
        // each warp's place in its digit moves by its digit's, and the last row becomes the digit's
        // first place in keys_out (the pass's and the tiles' before, or the table's) less its
        // first in the tile.
        Var local = block_exclusive_scan(b, "radix_local", tile_count, Op::Sum, 0, nullptr, loc);
        per_digit([&](Scope& th, const View& mine) {
          for (std::int64_t j = 0; j < W; ++j)
            mine[IndexArg(static_cast<int>(j), loc)] = mine[IndexArg(static_cast<int>(j), loc)] + local;
          const Expr first = sweep ? *start + digit_look_back(th, *sweep, *p, blk, tiles, t, pass, tile_count, loc)
                                   : Expr(offsets[IndexArg(t * tiles + blk, loc)]);
          mine[IndexArg(static_cast<int>(W), loc)] = first - local;
        });
        // Each key to its place in the tile sorted by digit (its digit's first place, its warp's in
        // the digit, its rank in the warp) in shared memory ...
        View sorted = b.shared("radix_sorted", ScalarType::U32, p->per_tile, loc);
        std::optional<View> sorted_vals;
        if (vals_in) sorted_vals = b.shared("radix_sorted_vals", vals_in->elem(), p->per_tile, loc);
        b.group(
            thread(1),
            [&](Scope& th) {
              for (int r = 0; r < p->items; ++r) {
                th.if_(
                    index(r) < n64,
                    [&](Scope& th) {
                      Var d = th.let("radix_d", digit_of(keys[IndexArg(r, loc)], shift.expr, *p), loc);
                      Var at = th.let("radix_at", counts[IndexArg(wid * D + d, loc)] + rank[IndexArg(r, loc)], loc);
                      th.atomic(AtomicOp::Exch, sorted, at, keys[IndexArg(r, loc)], AtomicScope::Block, loc);
                      if (vals)
                        th.atomic(AtomicOp::Exch, *sorted_vals, at, (*vals)[IndexArg(r, loc)], AtomicScope::Block, loc);
                    },
                    loc);
              }
            },
            loc);
        // ... then from there, thread t the keys t, t + T, ...: neighbouring threads write neighbouring
        // places of a digit (coalesced), where each key straight from its thread lands a digit's run
        // away from its neighbour's.
        const Expr valid = select(n64 - cast<std::int64_t>(blk) * p->per_tile < p->per_tile,
                                  n64 - cast<std::int64_t>(blk) * p->per_tile, Expr(p->per_tile, loc));
        b.group(
            thread(1),
            [&](Scope& th) {
              for (int r = 0; r < p->items; ++r) {
                const Expr i = cast<std::int64_t>(t) + static_cast<std::int64_t>(r) * p->threads;
                th.if_(
                    i < valid,
                    [&](Scope& th) {
                      Var key = th.let("radix_key", sorted[IndexArg(i, loc)], loc);
                      Var place = th.let(
                          "radix_place",
                          counts[IndexArg(static_cast<int>(W * D) + digit_of(key, shift.expr, *p), loc)] + cast<int>(i),
                          loc);
                      th.atomic(AtomicOp::Exch, keys_out, place, key, AtomicScope::Device, loc);
                      if (vals)
                        th.atomic(AtomicOp::Exch, *vals_out, place, (*sorted_vals)[IndexArg(i, loc)],
                                  AtomicScope::Device, loc);
                    },
                    loc);
              }
            },
            loc);
        if (sweep) finish_pass(b, *sweep, *p, pass, tiles, loc);
      },
      loc);
}

}  // namespace

std::int64_t radix_blocks(std::int64_t n, std::int64_t threads, RadixTile tile) {
  const std::int64_t per = std::max<std::int64_t>(threads * tile.items, 1);
  return std::max<std::int64_t>((n + per - 1) / per, 1);
}

std::int64_t radix_table_size(std::int64_t n, std::int64_t threads, RadixTile tile) {
  return radix_blocks(n, threads, tile) << tile.bits;
}

Expr radix_table_extent(const ExprArg& n, std::int64_t threads, RadixTile tile) {
  return detail::tiles_of(n.expr, std::max<std::int64_t>(threads * tile.items, 1)) * (std::int64_t{1} << tile.bits);
}

void radix_count(Scope& grid, const View& table, const View& keys, const ExprArg& n, const ExprArg& shift,
                 RadixTile tile, Loc loc) {
  auto p = pass_of(grid, "radix_count", keys, tile, loc);
  if (!p || !table_ok(grid, "radix_count", table, loc)) return;
  const Expr n64 = cast<std::int64_t>(n.expr), tiles = cast<int>(detail::tiles_of(n.expr, p->per_tile));
  Var blk = grid.let("blk", grid.id(block(1), loc), loc);
  grid.group(
      block(1),
      [&](Scope& b) {
        Var t = b.let("radix_t", b.id(thread(1), loc), loc);
        View hist = tile_counts(
            b, blk, n64, *p, t, p->digits, keys,
            [&](Scope& th, const View& h, const Expr& key) {
              th.atomic(AtomicOp::Add, h, digit_of(key, shift.expr, *p), 1, AtomicScope::Block, loc);
            },
            false, loc);
        // The tile's counts, a digit a thread, into its column of the table (written whole, by
        // exchanges: the places are a block's stride apart).
        detail::for_own(
            b, hist, t, p->threads, p->digits,
            [&](Scope& th, int k, const Expr& d, const View& mine) {
              th.atomic(AtomicOp::Exch, table, d * tiles + blk, mine[IndexArg(k, loc)], AtomicScope::Device, loc);
            },
            loc);
      },
      loc);
}

namespace {
/// Whether a onesweep's tile and storage fit; diagnoses at the caller's line if not.
bool sweep_ok(Scope& grid, const char* helper, RadixTile tile, const View& hist, const View* lookback, const Loc& loc) {
  if (tile.bits != 1 && tile.bits != 2 && tile.bits != 4 && tile.bits != 8) {
    grid.diagnose("V0913",
                  std::string("lib::") + helper +
                      " takes digits of 1, 2, 4 or 8 bits (an even number of passes over 32), not " +
                      std::to_string(tile.bits),
                  loc);
    return false;
  }
  if (hist.elem() != ScalarType::I32 || (lookback && lookback->elem() != ScalarType::U32)) {
    grid.diagnose("V0913",
                  std::string("lib::") + helper + "'s counts are i32 and its look-back words u32, not " +
                      type_name(hist.elem()) + (lookback ? std::string(" and ") + type_name(lookback->elem()) : ""),
                  loc);
    return false;
  }
  return true;
}
}  // namespace

std::int64_t radix_histogram_blocks(std::int64_t n, std::int64_t threads, RadixTile tile) {
  // About 2^18 threads (1024 blocks of 256): each block adds its counts to `hist` once.
  return std::min(radix_blocks(n, threads, tile),
                  std::max<std::int64_t>((std::int64_t{1} << 18) / std::max<std::int64_t>(threads, 1), 1));
}

std::int64_t radix_hist_size(RadixTile tile) {
  const std::int64_t passes = 32 / std::max(tile.bits, 1);
  return passes * (std::int64_t{1} << tile.bits) + passes;
}

std::int64_t radix_lookback_words(std::int64_t n, std::int64_t threads, RadixTile tile) {
  if (n >= (std::int64_t{1} << 30))  // a look-back word holds a count of 30 bits
    throw std::invalid_argument("lib::radix_lookback_words: the one-sweep sort takes fewer than 2^30 keys, not " +
                                std::to_string(n));
  return 2 * radix_table_size(n, threads, tile);
}

Expr radix_lookback_extent(const ExprArg& n, std::int64_t threads, RadixTile tile) {
  return 2 * radix_table_extent(n, threads, tile);
}

void radix_histogram(Scope& grid, const View& hist, const View& keys, const ExprArg& n, RadixTile tile, Loc loc) {
  auto p = pass_of(grid, "radix_histogram", keys, tile, loc);
  if (!p || !sweep_ok(grid, "radix_histogram", tile, hist, nullptr, loc)) return;
  const std::int64_t P = sweep_passes(*p), D = p->digits;
  const Expr n64 = cast<std::int64_t>(n.expr);
  Var blk = grid.let("blk", grid.id(block(1), loc), loc);
  grid.group(
      block(1),
      [&](Scope& b) {
        Var t = b.let("radix_t", b.id(thread(1), loc), loc);
        View h = tile_counts(
            b, blk, n64, *p, t, P * D, keys,
            [&](Scope& th, const View& h, const Expr& key) {
              Var k = th.let("radix_key", key, loc);
              for (std::int64_t q = 0; q < P; ++q)
                th.atomic(AtomicOp::Add, h, q * D + digit_of(k, Expr(static_cast<int>(q * p->bits)), *p), 1,
                          AtomicScope::Block, loc);
            },
            true, loc);
        detail::for_own(
            b, h, t, p->threads, P * D,
            [&](Scope& th, int k, const Expr& idx, const View& mine) {
              Var c = th.let("radix_c", mine[IndexArg(k, loc)], loc);
              th.if_(
                  c != 0, [&](Scope& th) { th.atomic(AtomicOp::Add, hist, idx, c, AtomicScope::Device, loc); }, loc);
            },
            loc);
      },
      loc);
}

void radix_onesweep(Scope& grid, const View& keys_out, const View& keys_in, const ExprArg& n, const View& hist,
                    const View& lookback, const ExprArg& shift, RadixTile tile, Loc loc) {
  if (!sweep_ok(grid, "radix_onesweep", tile, hist, &lookback, loc)) return;
  const Sweep s{hist, lookback};
  scatter(grid, keys_out, nullptr, keys_in, nullptr, n, hist, shift, tile, loc, &s);
}
void radix_onesweep(Scope& grid, const View& keys_out, const View& vals_out, const View& keys_in, const View& vals_in,
                    const ExprArg& n, const View& hist, const View& lookback, const ExprArg& shift, RadixTile tile,
                    Loc loc) {
  if (!sweep_ok(grid, "radix_onesweep", tile, hist, &lookback, loc)) return;
  const Sweep s{hist, lookback};
  scatter(grid, keys_out, &vals_out, keys_in, &vals_in, n, hist, shift, tile, loc, &s);
}

void radix_scatter(Scope& grid, const View& keys_out, const View& keys_in, const ExprArg& n, const View& offsets,
                   const ExprArg& shift, RadixTile tile, Loc loc) {
  scatter(grid, keys_out, nullptr, keys_in, nullptr, n, offsets, shift, tile, loc);
}
void radix_scatter(Scope& grid, const View& keys_out, const View& vals_out, const View& keys_in, const View& vals_in,
                   const ExprArg& n, const View& offsets, const ExprArg& shift, RadixTile tile, Loc loc) {
  scatter(grid, keys_out, &vals_out, keys_in, &vals_in, n, offsets, shift, tile, loc);
}

}  // namespace vantage::lib
