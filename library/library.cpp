// The device library (include/vantage/library.hpp): written only with the public builder, so that
// what it records is checked, synchronized and lowered like code a user wrote. Every primitive gets
// the caller's source location, so a misuse is reported at the caller's line.
#include "vantage/library.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "library/common.h"

namespace vantage::lib {

using Loc = std::source_location;

namespace detail {

/// The block size a block-level helper needs: declared, a multiple of 32, at most 1024. Diagnoses
/// (at the caller's line) and returns nothing otherwise.
std::optional<std::int64_t> warps_block(Scope& s, const char* helper, const Loc& loc) {
  auto t = s.block_threads();
  if (!t) {
    s.diagnose("V0913",
               std::string("lib::") + helper +
                   " needs the kernel's block size: call block_threads() before body() (and not in a device function)",
               loc);
    return std::nullopt;
  }
  if (*t % 32 != 0 || *t > 1024) {
    s.diagnose("V0913",
               std::string("lib::") + helper + " needs a block of whole warps, at most 1024 threads, not " +
                   std::to_string(*t),
               loc);
    return std::nullopt;
  }
  return t;
}

}  // namespace detail

using detail::warps_block;

namespace {

/// A literal zero of `t` (a folded constant, where a cast of 0 would be an operation to compute).
Expr zero_of(ScalarType t, const Loc& loc) {
  switch (t) {
    case ScalarType::F32: return Expr(0.0f, loc);
    case ScalarType::F64: return Expr(0.0, loc);
    case ScalarType::I32: return Expr(0, loc);
    case ScalarType::I64: return Expr(0LL, loc);
    case ScalarType::U32: return Expr(0u, loc);
    case ScalarType::U64: return Expr(0ul, loc);
    default: return cast(t, Expr(0, loc));
  }
}

/// Butterfly over `width` lanes (a power of two up to 32): afterwards every lane of each aligned
/// group of `width` lanes holds the group's result. An operator known to commute (`commutes`, the Op
/// forms) takes the masks from the widest down, once each; any other takes them from 1 up, so that
/// each step joins two neighbouring runs of lanes, and puts the lower run's value on the left (both
/// orders computed, one selected), so that every lane holds op(v_0, ..., v_31) in lane order.
void butterfly(Scope& warp, const Var& v, const Combine& op, int width, const std::string& name, const Loc& loc,
               bool commutes) {
  if (commutes) {
    for (int mask = width / 2; mask >= 1; mask /= 2) {
      Var other = warp.shfl_xor(name + "_x" + std::to_string(mask), v, mask, loc);
      warp.assign(v, op(v, other), loc);
    }
    return;
  }
  Var lane = warp.let(name + "_lane", warp.id(thread(1), loc), loc);
  for (int mask = 1; mask < width; mask *= 2) {
    Var other = warp.shfl_xor(name + "_x" + std::to_string(mask), v, mask, loc);
    warp.assign(v, select((lane & mask) == 0, op(v, other), op(other, v)), loc);
  }
}

/// At block(1): lane 0 of warp w writes `value(warp)` (made in the warp's code) into shared[w] (a
/// partition of `shared` per warp, a claim and a one-thread split). Returns the warp's index.
Var publish_per_warp(Scope& b, const View& shared, const std::string& name,
                     const std::function<Expr(Scope& warp)>& value, const Loc& loc) {
  Var wid = b.let(name + "_warp", b.id(thread(32), loc), loc);
  b.partition(
      shared, thread(32), [&](Expr i) { return wid + i; },
      [&](Scope& b, View mine) {
        b.group(
            thread(32),
            [&](Scope& w) {
              Expr v = value(w);
              w.claim(
                  mine, thread(1),
                  [&](Scope& w, View one) {
                    w.split(Level::Thread, {{1, [&](Scope&) { one[IndexArg(0, loc)] = v; }, loc}}, loc);
                  },
                  loc);
            },
            loc);
      },
      loc);
  return wid;
}

/// Hillis-Steele scan over the 32 lanes: lane l ends with op(v_0 .. v_l).
void lane_scan(Scope& warp, const Var& v, const Combine& op, const std::string& name, const Loc& loc, bool commutes) {
  Var lane = warp.let(name + "_lane", warp.id(thread(1), loc), loc);
  for (int d = 1; d < 32; d *= 2) {
    Var other = warp.shfl_up(name + "_up" + std::to_string(d), v, d, loc);
    // The lanes below come first (the order an operator that commutes does not need).
    warp.assign(v, select(lane >= d, commutes ? op(v, other) : op(other, v), v), loc);
  }
}

}  // namespace

std::int64_t blocks_for(std::int64_t n, std::int64_t threads, Tile tile) {
  std::int64_t per_block = std::max<std::int64_t>(threads, 1) * std::max(tile.items, 1);
  return std::max<std::int64_t>((n + per_block - 1) / per_block, 1);
}

namespace detail {
/// The block size a grid-level helper needs, or a V0913 at the caller's line.
std::optional<std::int64_t> declared_threads(Scope& grid, const char* helper, Loc loc) {
  auto threads = grid.block_threads();
  if (!threads)
    grid.diagnose("V0913",
                  std::string("lib::") + helper +
                      " needs the kernel's block size: call block_threads() before body() (and not in a device "
                      "function)",
                  loc);
  return threads;
}

bool i32_counts(Scope& s, const char* helper, std::initializer_list<std::pair<const char*, const ExprArg*>> counts,
                Loc loc) {
  bool ok = true;
  for (const auto& [name, arg] : counts) {
    const ScalarType t = arg->expr.type();
    if (t == ScalarType::I32) continue;
    s.diagnose("V0913",
               std::string("lib::") + helper + " numbers its elements with i32, so its " + name +
                   " must be an i32, not " + type_name(t) + " (cast<int>() it where it fits)",
               loc);
    ok = false;
  }
  return ok;
}

std::optional<Expr> identity_as(Scope& s, const char* helper, const ExprArg& identity, ScalarType t, Loc loc) {
  const ScalarType from = identity.expr.type();
  if (from == t) return identity.expr;
  const bool converts = identity.weak_literal &&
                        ((is_integer(from) && (is_integer(t) || is_float(t))) || (is_float(from) && is_float(t)));
  if (converts) return cast(t, identity.expr);
  s.diagnose("V0913",
             std::string("lib::") + helper + "'s identity is " + type_name(from) + ", its values " + type_name(t) +
                 ": give the identity the values' type",
             loc);
  return std::nullopt;
}

/// At grid(1): block blk owns out[blk * per_block ..), and thread t of it the elements
/// `share(t, i)` of that block share; `body(b, blk, t, out_t)` runs at block(1) with out_t the
/// thread's share (the shape of for_each and copy).
void thread_shares(Scope& grid, const View& out, std::int64_t per_block, const std::function<Expr(Expr, Expr)>& share,
                   const std::function<void(Scope&, const Var&, const Var&, View)>& body, Loc loc) {
  Var blk = grid.let("blk", grid.id(block(1), loc), loc);
  grid.partition(
      out, block(1), [&](Expr i) { return blk * per_block + i; },
      [&](Scope& g, View out_b) {
        g.group(
            block(1),
            [&](Scope& b) {
              Var t = b.let("t", b.id(thread(1), loc), loc);
              b.partition(
                  out_b, thread(1), [&](Expr i) { return share(t, i); },
                  [&](Scope& b, View out_t) { body(b, blk, t, out_t); }, loc);
            },
            loc);
      },
      loc);
}
}  // namespace detail

using detail::declared_threads;
using detail::i32_counts;
using detail::identity_as;
using detail::thread_shares;

namespace detail {
void runs_of(Scope& grid, const View& out, const ExprArg& n, int run,
             const std::function<void(Scope&, const Run&)>& whole,
             const std::function<void(Scope&, const Run&, const Expr&)>& one, const Loc& loc) {
  auto threads = grid.block_threads();
  if (!threads) return;
  const std::int64_t T = *threads, per_block = T * run;
  const Expr count = n.expr;
  thread_shares(
      grid, out, per_block, [&](Expr t, Expr i) { return t * run + i; },
      [&](Scope& b, const Var& blk, const Var& t, View out_t) {
        b.group(
            thread(1),
            [&](Scope& th) {
              // In 64 bits, so that the comparisons cannot wrap for any grid: blk * per_block itself
              // (past 2^31 from 2^21 blocks of 256) is computed in 64 bits.
              Var first = th.let("first", cast<std::int64_t>(blk) * per_block + cast<std::int64_t>(t * run), loc);
              Var len = th.let("len", cast<std::int64_t>(count), loc);
              const Run r{blk, t, out_t, blk * per_block + t * run};
              auto tail = [&](Scope& th) {
                th.for_(
                    "e", 0, run,
                    [&](Scope& th, Expr e) {
                      th.if_(
                          first + cast<std::int64_t>(e) < len, [&](Scope& th) { one(th, r, e); }, loc);
                    },
                    loc);
              };
              if (run == 1)
                tail(th);
              else
                th.if_(
                    first + run <= len, [&](Scope& th) { whole(th, r); }, tail, loc);
            },
            loc);
      },
      loc);
}
}  // namespace detail

void copy(Scope& grid, const View& out, const View& in, const ExprArg& n, Loc loc) {
  if (!declared_threads(grid, "copy", loc)) return;
  const int v = 16 / type_bytes(out.elem());
  auto one = [&](Scope&, const detail::Run& r, const Expr& e) {
    r.out[IndexArg(e, loc)] = in[IndexArg(r.first + e, loc)];
  };
  detail::runs_of(
      grid, out, n, v,
      [&](Scope& th, const detail::Run& r) {
        th.for_(
            "e", 0, v, [&](Scope& s, Expr e) { one(s, r, e); }, loc);
      },
      one, loc);
}

void for_each(Scope& grid, const View& out, const ExprArg& n,
              const std::function<void(Scope& th, Expr i, ElemRef out_i)>& body, Tile tile, Loc loc) {
  auto threads = declared_threads(grid, "for_each", loc);
  if (!threads || !i32_counts(grid, "for_each", {{"n", &n}}, loc)) return;
  if (tile.items < 1) {
    grid.diagnose("V0913", "lib::for_each needs at least one item per thread, not " + std::to_string(tile.items), loc);
    return;
  }
  const std::int64_t T = *threads, items = tile.items, per_block = T * items;
  const Expr count = n.expr;
  auto share = [&](const Expr& t, const Expr& k) -> Expr {
    if (items == 1) return t + k;
    return tile.layout == Layout::Striped ? t + k * T : t * items + k;
  };
  thread_shares(
      grid, out, per_block, share,
      [&](Scope& b, const Var& blk, const Var& t, View out_t) {
        auto one = [&](Scope& s, const Expr& k) {
          s.group(
              thread(1),
              [&](Scope& th) {
                Expr at = items == 1 ? Expr(t) : share(t, k), i = blk * per_block + at;
                // With several items per thread, blk * per_block may pass 2^31 (2^21 blocks of 1024
                // elements), and wrapped it could land under n: the test is then made in 64 bits. Under
                // n, i fits an i32. (One item per thread: i is a thread's position, under 2^31.)
                Expr inside = items == 1 ? i < count
                                         : cast<std::int64_t>(blk) * per_block + cast<std::int64_t>(at) <
                                               cast<std::int64_t>(count);
                th.if_(
                    inside, [&](Scope& th) { body(th, i, out_t[IndexArg(k, loc)]); }, loc);
              },
              loc);
        };
        if (items == 1)
          one(b, Expr(0, loc));
        else
          b.for_(
              "k", 0, items, [&](Scope& b, Expr k) { one(b, k); }, loc);
      },
      loc);
}

void grid_stride(Scope& grid, const View& out, const ExprArg& n,
                 const std::function<void(Scope& th, Expr i, ElemRef out_i)>& body, Loc loc) {
  auto threads = declared_threads(grid, "grid_stride", loc);
  if (!threads) return;
  if (!i32_counts(grid, "grid_stride", {{"n", &n}}, loc)) return;
  const Expr count = n.expr;
  Var stride = grid.let("stride", grid.grid_blocks(loc) * *threads, loc);  // threads in the launch
  Var gid = grid.let("gid", grid.id(thread(1), loc), loc);
  grid.partition(
      out, thread(1), [&](Expr k) { return gid + k * stride; },
      [&](Scope& g, View mine) {
        g.group(
            thread(1),
            [&](Scope& th) {
              // Rounds: ceil((n - gid) / stride), in 64 bits (n - gid + stride - 1 may pass INT_MAX);
              // none when gid >= n. Every i = gid + k * stride below it is under n, so fits an i32.
              Expr wide = cast(ScalarType::I64, stride);
              Var rounds = th.let(
                  "rounds",
                  cast(
                      ScalarType::I32,
                      max(cast(ScalarType::I64, count) - cast(ScalarType::I64, gid) + wide - 1, Expr(0LL, loc)) / wide),
                  loc);
              th.for_(
                  "k", 0, rounds,
                  [&](Scope& th, Expr k) {
                    Expr i = gid + k * stride;
                    th.if_(
                        i < count, [&](Scope& th) { body(th, i, mine[IndexArg(k, loc)]); }, loc);
                  },
                  loc);
            },
            loc);
      },
      loc);
}

namespace {
void tiles_in_order(Scope& grid, const View& m, const ExprArg& rows, const ExprArg& cols, int tile_rows, int tile_cols,
                    int group_rows, const std::function<void(Scope& block, const MatrixTile& tile)>& body, Loc loc) {
  if (tile_rows < 1 || tile_cols < 1 || group_rows < 1) {
    grid.diagnose("V0913",
                  "lib::for_each_tile needs tiles of at least 1 x 1 and groups of at least one row, not " +
                      std::to_string(tile_rows) + " x " + std::to_string(tile_cols) + " in groups of " +
                      std::to_string(group_rows),
                  loc);
    return;
  }
  if (!i32_counts(grid, "for_each_tile", {{"rows", &rows}, {"cols", &cols}}, loc)) return;
  const Expr R = rows.expr, C = cols.expr;
  // At least one, so that every block's row of tiles is at least 0 whatever the number of columns.
  Var per_row = grid.let("tiles_per_row", max((C + (tile_cols - 1)) / tile_cols, 1), loc);
  Var brow, bcol;
  if (group_rows == 1) {
    brow = grid.let("brow", grid.id(block(1), loc) / per_row, loc);
    bcol = grid.let("bcol", grid.id(block(1), loc) % per_row, loc);
  } else {
    // Block b: group b / (G * per_row), whose first tile row is that times G; the group's rows (G, or
    // what is left of the matrix's, at least one) are walked down each column in turn.
    Var per_group = grid.let("tiles_per_group", per_row * group_rows, loc);
    Var bid = grid.let("bid", grid.id(block(1), loc), loc);
    Var first = grid.let("first_row", bid / per_group * group_rows, loc);
    Var tile_rows_all = grid.let("tile_rows_all", (R + (tile_rows - 1)) / tile_rows, loc);
    Var in_group = grid.let("rows_in_group", max(min(tile_rows_all - first, group_rows), 1), loc);
    Var local = grid.let("in_group", bid % per_group, loc);
    brow = grid.let("brow", first + local % in_group, loc);
    bcol = grid.let("bcol", local / in_group, loc);
  }
  grid.partition(
      m, block(1), [&](Expr i) { return brow * tile_rows * C + bcol * tile_cols + i; },
      [&](Scope& g, View share) {
        g.group(
            block(1),
            [&](Scope& b) {
              Var t = b.let("t", b.id(thread(1), loc), loc);
              // The thread's own element as variables where the block has one thread per element of
              // the tile; otherwise (a thread computes several) as expressions the caller may ignore.
              auto threads = b.block_threads();
              bool own = threads && *threads == std::int64_t{tile_rows} * tile_cols;
              Expr tr = own ? Expr(b.let("tr", t / tile_cols, loc)) : t / tile_cols;
              Expr tc = own ? Expr(b.let("tc", t % tile_cols, loc)) : t % tile_cols;
              MatrixTile tile{brow * tile_rows, bcol * tile_cols, tr, tc, share, R, C, tile_rows, tile_cols, t};
              body(b, tile);
            },
            loc);
      },
      loc);
}

}  // namespace

void for_each_tile(Scope& grid, const View& m, const ExprArg& rows, const ExprArg& cols, int tile_rows, int tile_cols,
                   const std::function<void(Scope& block, const MatrixTile& tile)>& body, Loc loc) {
  tiles_in_order(grid, m, rows, cols, tile_rows, tile_cols, 1, body, loc);
}

void for_each_tile_grouped(Scope& grid, const View& m, const ExprArg& rows, const ExprArg& cols, int tile_rows,
                           int tile_cols, int group_rows,
                           const std::function<void(Scope& block, const MatrixTile& tile)>& body, Loc loc) {
  tiles_in_order(grid, m, rows, cols, tile_rows, tile_cols, group_rows, body, loc);
}

void update_own(Scope& b, const MatrixTile& tile, const std::function<void(Scope& th, ElemRef e)>& body, Loc loc) {
  b.partition(
      tile.view, thread(1), [&](Expr i) { return tile.row * tile.cols + tile.col + i; },
      [&](Scope& b, View mine) {
        b.group(
            thread(1),
            [&](Scope& th) {
              th.if_(
                  tile.row0 + tile.row < tile.rows && tile.col0 + tile.col < tile.cols,
                  [&](Scope& th) { body(th, mine[IndexArg(0, loc)]); }, loc);
            },
            loc);
      },
      loc);
}

void update_sub_tile(Scope& b, const MatrixTile& tile, const ExprArg& row, const ExprArg& col, int tm, int tn,
                     int row_step, int col_step, const std::function<void(Scope& th, int i, int j, ElemRef e)>& body,
                     Loc loc) {
  update_sub_tile(b, tile, row, col, SubTile{tm, tn, row_step, col_step, 0, 0}, body, loc);
}

void update_sub_tile(Scope& b, const MatrixTile& tile, const ExprArg& row, const ExprArg& col, const SubTile& shape,
                     const std::function<void(Scope& th, int i, int j, ElemRef e)>& body, Loc loc) {
  const int tm = shape.tm, tn = shape.tn, row_step = shape.row_step, col_step = shape.col_step;
  const int group = shape.col_group == 0 ? tn : shape.col_group;
  if (tm < 1 || tn < 1 || row_step < 1 || col_step < 1 || group < 1 || tn % group != 0 ||
      (group < tn && shape.group_step < group * col_step)) {
    b.diagnose("V0913",
               "lib::update_sub_tile needs at least 1 x 1 elements per thread, steps of at least 1, and column groups "
               "that divide the columns and do not overlap, not " +
                   std::to_string(tm) + " x " + std::to_string(tn) + " with steps " + std::to_string(row_step) +
                   " and " + std::to_string(col_step) + " in groups of " + std::to_string(group) + " " +
                   std::to_string(shape.group_step) + " apart",
               loc);
    return;
  }
  const Expr r = row.expr, c = col.expr;
  // Column j's offset from `col`, for a constant j and for the partition's index.
  auto column = [&](int j) { return col_step * (j % group) + shape.group_step * (j / group); };
  auto column_of = [&](const Expr& j) {
    return group == tn ? col_step * j : col_step * (j % group) + shape.group_step * (j / group);
  };
  b.partition(
      tile.view, thread(1), [&](Expr i) { return (r + row_step * (i / tn)) * tile.cols + c + column_of(i % tn); },
      [&](Scope& b, View mine) {
        b.group(
            thread(1),
            [&](Scope& th) {
              for (int i = 0; i < tm; ++i)
                for (int j = 0; j < tn; ++j)
                  th.if_(
                      tile.row0 + r + row_step * i < tile.rows && tile.col0 + c + column(j) < tile.cols,
                      [&](Scope& th) { body(th, i, j, mine[IndexArg(i * tn + j, loc)]); }, loc);
            },
            loc);
      },
      loc);
}

namespace {
/// stage_tile and copy_tile: the tile at (row0, col0) of src into dst with rows `tile_cols + pad`
/// apart, zeros past the matrix's edges; `like` (stage_tile only) the thread's own element.
void copy_tile_impl(Scope& b, const View& dst, const View& src, const ExprArg& src_rows, const ExprArg& src_cols,
                    const ExprArg& row0, const ExprArg& col0, int tile_rows, int tile_cols, const MatrixTile* like,
                    TileCopy how, const char* helper, Loc loc) {
  auto threads = b.block_threads();
  if (!threads || tile_rows < 1 || tile_cols < 1 || how.pad < 0) {
    b.diagnose("V0913",
               std::string("lib::") + helper +
                   " needs the kernel's block size (block_threads() before body()), a tile of at least 1 x 1 and a "
                   "padding of at least 0",
               loc);
    return;
  }
  const int bytes = type_bytes(src.elem());
  if (how.async && bytes != 4 && bytes != 8) {
    b.diagnose("V0913",
               std::string("lib::") + helper + " with async copies moves elements of 4 or 8 bytes (cp.async), not " +
                   type_name(src.elem()),
               loc);
    return;
  }
  const std::int64_t T = *threads, elems = std::int64_t{tile_rows} * tile_cols, rounds = (elems + T - 1) / T;
  const std::int64_t stride = tile_cols + how.pad;
  const Expr R = src_rows.expr, C = src_cols.expr, r0 = row0.expr, c0 = col0.expr;
  const bool own =
      like && like->tile_rows == tile_rows && like->tile_cols == tile_cols && elems == T && how.pad == 0 && !how.async;
  // The thread's position in the block, as a variable of the block (an id() is relative to where it
  // is read, so it is read here, at block(1)).
  Expr t = own ? like->thread : Expr(b.let(dst.name() + "_t", b.id(thread(1), loc), loc));
  // The share's index function (i: the round) and the element of round l, folded in C++.
  auto share = [&](const Expr& i) { return rounds == 1 ? t + i : t + i * T; };
  auto element = [&](std::int64_t l) { return l == 0 ? t : t + l * T; };
  // Where element e of the tile lives in dst: contiguous without padding, else row by padded row.
  auto place = [&](const Expr& e) { return how.pad == 0 ? e : e / tile_cols * stride + e % tile_cols; };
  // Runs `one(th, l, r, c)` for each of the thread's elements (l: the round, r and c: its place in the
  // tile), at thread(1) on the thread's share of `view`.
  auto each = [&](Scope& b, const View& view, const std::function<void(Scope&, View, int, Expr, Expr)>& one) {
    b.partition(
        view, thread(1), [&](Expr i) { return place(share(i)); },
        [&](Scope& b, View mine) {
          b.group(
              thread(1),
              [&](Scope& th) {
                if (own) {
                  one(th, mine, 0, like->row, like->col);
                  return;
                }
                for (std::int64_t l = 0; l < rounds; ++l) {
                  auto at = [&](Scope& th) {
                    Expr e = element(l);
                    one(th, mine, static_cast<int>(l), e / tile_cols, e % tile_cols);
                  };
                  if ((l + 1) * T <= elems)
                    at(th);
                  else
                    th.if_(t + l * T < elems, at, loc);  // the last round's threads past the tile
                }
              },
              loc);
        },
        loc);
  };
  // The source element is read only inside the matrix (a branch, not a select, which would read it
  // anyway): there lowering proves the read inside `src` from the branch's condition, as a CUDA
  // programmer's `r < R && c < C ? src[r * C + c] : 0` needs no check.
  // The row and column in 64 bits: `c0 + c_in` cannot wrap, so a column past the matrix is never
  // taken for one inside it, and the proof has the ranges it needs.
  auto source = [&](const Expr& r, const Expr& c) { return r * cast<std::int64_t>(C) + c; };
  // A tile may start above or left of the matrix (a stencil's halo): those rows and columns are past
  // its edges too. Lowering drops the tests where the origin is proven at least 0.
  auto inside = [&](const Expr& r, const Expr& c) {
    return r >= 0 && r < cast<std::int64_t>(R) && c >= 0 && c < cast<std::int64_t>(C);
  };
  if (!how.async) {
    each(b, dst, [&](Scope& th, View mine, int l, Expr r_in, Expr c_in) {
      Var r = th.let(dst.name() + "_row", cast<std::int64_t>(r0) + cast<std::int64_t>(r_in), loc);
      Var c = th.let(dst.name() + "_col", cast<std::int64_t>(c0) + cast<std::int64_t>(c_in), loc);
      if (how.zeros)
        th.if_(
            inside(r, c), [&](Scope&) { mine[IndexArg(l, loc)] = src[IndexArg(source(r, c), loc)]; },
            [&](Scope&) { mine[IndexArg(l, loc)] = zero_of(src.elem(), loc); }, loc);
      else
        th.if_(
            inside(r, c), [&](Scope&) { mine[IndexArg(l, loc)] = src[IndexArg(source(r, c), loc)]; }, loc);
    });
    return;
  }
  // Asynchronous: zeros past the edges by plain stores (unless not wanted), then one cp.async per element inside (async
  // memory takes only async copies), each thread waiting for its own before the barrier the sync pass
  // places ahead of the first read by another thread.
  auto row = [&](const Expr& r_in) { return cast<std::int64_t>(r0) + cast<std::int64_t>(r_in); };
  auto col = [&](const Expr& c_in) { return cast<std::int64_t>(c0) + cast<std::int64_t>(c_in); };
  if (how.zeros)
    each(b, dst, [&](Scope& th, View mine, int l, Expr r_in, Expr c_in) {
      th.if_(
          !inside(row(r_in), col(c_in)), [&](Scope&) { mine[IndexArg(l, loc)] = zero_of(src.elem(), loc); }, loc);
    });
  b.async(
      dst,
      [&](Scope& b, View dst_async) {
        each(b, dst_async, [&](Scope& th, View mine, int l, Expr r_in, Expr c_in) {
          Var r = th.let(dst.name() + "_row", row(r_in), loc);
          Var c = th.let(dst.name() + "_col", col(c_in), loc);
          th.if_(
              inside(r, c), [&](Scope& th) { th.cp_async(mine, l, src, source(r, c), bytes, loc); }, loc);
        });
        b.group(
            thread(1),
            [&](Scope& th) {
              th.cp_async_commit(loc);
              th.cp_async_wait(0, loc);
            },
            loc);
      },
      loc);
}
}  // namespace

void stage_tile(Scope& b, const View& dst, const View& src, const ExprArg& src_rows, const ExprArg& src_cols,
                const ExprArg& row0, const ExprArg& col0, int tile_rows, int tile_cols, const MatrixTile* like,
                Loc loc) {
  copy_tile_impl(b, dst, src, src_rows, src_cols, row0, col0, tile_rows, tile_cols, like, {}, "stage_tile", loc);
}

void copy_tile(Scope& b, const View& dst, const View& src, const ExprArg& src_rows, const ExprArg& src_cols,
               const ExprArg& row0, const ExprArg& col0, int tile_rows, int tile_cols, TileCopy how, Loc loc) {
  copy_tile_impl(b, dst, src, src_rows, src_cols, row0, col0, tile_rows, tile_cols, nullptr, how, "copy_tile", loc);
}

void copy_tile(Scope& block, const View& dst, const TileOf& from, TileCopy how, Loc loc) {
  if (from.tile_rows < 1 || from.tile_cols < 1) {
    block.diagnose("V0913",
                   "lib::copy_tile needs a tile of at least one row and column (.tile_rows and .tile_cols), not " +
                       std::to_string(from.tile_rows) + " x " + std::to_string(from.tile_cols),
                   loc);
    return;
  }
  copy_tile(block, dst, from.src, from.rows, from.cols, from.row0, from.col0, from.tile_rows, from.tile_cols, how, loc);
}

void start_tile_copy(Scope& b, const View& dst, const View& src, const ExprArg& src_rows, const ExprArg& src_cols,
                     const ExprArg& row0, const ExprArg& col0, int tile_rows, int tile_cols, Loc loc) {
  auto threads = b.block_threads();
  if (!threads || tile_rows < 1 || tile_cols < 4 || tile_cols % 4 != 0 || type_bytes(src.elem()) != 4) {
    b.diagnose("V0913",
               "lib::start_tile_copy needs the kernel's block size (block_threads() before body()), a tile whose rows "
               "are a multiple of 4 elements, and elements of 4 bytes (16-byte copies), not a " +
                   std::to_string(tile_rows) + " x " + std::to_string(tile_cols) + " tile of " + type_name(src.elem()),
               loc);
    return;
  }
  const std::int64_t T = *threads, vectors = std::int64_t{tile_rows} * tile_cols / 4, rounds = (vectors + T - 1) / T;
  const Expr R = cast<std::int64_t>(src_rows.expr), C = cast<std::int64_t>(src_cols.expr);
  Var t = b.let(dst.name() + "_t", b.id(thread(1), loc), loc);
  // Round l's vector is t + l * T; element i of the thread's share is element i % 4 of its vector
  // i / 4.
  auto vector = [&](std::int64_t l) { return l == 0 ? Expr(t) : t + l * T; };
  b.partition(
      dst, thread(1), [&](Expr i) { return rounds == 1 ? t * 4 + i : (i / 4 * T + t) * 4 + i % 4; },
      [&](Scope& b, View mine) {
        b.group(
            thread(1),
            [&](Scope& th) {
              // Each round's place in the matrix (64 bits: nothing wraps), and whether its vector is
              // one aligned copy.
              std::vector<Var> rows, cols;
              std::vector<Expr> whole;
              auto inside = [&](std::size_t l, int e) {
                return rows[l] >= 0 && rows[l] < R && cols[l] + e >= 0 && cols[l] + e < C;
              };
              for (std::int64_t l = 0; l < rounds; ++l) {
                const Expr first = vector(l) * 4;
                rows.push_back(th.let(dst.name() + "_row",
                                      cast<std::int64_t>(row0.expr) + cast<std::int64_t>(first / tile_cols), loc));
                cols.push_back(th.let(dst.name() + "_col",
                                      cast<std::int64_t>(col0.expr) + cast<std::int64_t>(first % tile_cols), loc));
                // Aligned: the row's length and the tile's first column multiples of 4 (a
                // vector's column is the tile's plus a multiple of 4).
                whole.push_back(rows.back() >= 0 && rows.back() < R && cols.back() >= 0 && cols.back() + 4 <= C &&
                                C % 4 == 0 && cast<std::int64_t>(col0.expr) % 4 == 0);
              }
              // The last round's threads past the tile copy nothing.
              auto each_round = [&](Scope& th, const std::function<void(Scope&, std::size_t)>& one) {
                for (std::int64_t l = 0; l < rounds; ++l) {
                  const auto at = static_cast<std::size_t>(l);
                  if ((l + 1) * T <= vectors)
                    one(th, at);
                  else
                    th.if_(
                        vector(l) < vectors, [&](Scope& th) { one(th, at); }, loc);
                }
              };
              // One branch per vector, as by hand: the 16-byte copy, or each element's copy or zero
              // (async memory takes only copies, so each copy opens the thread's share as such).
              auto copy = [&](Scope& th, std::int64_t at, const Expr& from, int bytes) {
                th.async(
                    mine, [&](Scope& th, View mine_async) { th.cp_async(mine_async, at, src, from, bytes, loc); }, loc);
              };
              each_round(th, [&](Scope& th, std::size_t l) {
                const std::int64_t at = static_cast<std::int64_t>(l) * 4;
                th.if_(
                    whole[l], [&](Scope& th) { copy(th, at, rows[l] * C + cols[l], 16); },
                    [&](Scope& th) {
                      for (int e = 0; e < 4; ++e)
                        th.if_(
                            inside(l, e), [&](Scope& th) { copy(th, at + e, rows[l] * C + cols[l] + e, 4); },
                            [&](Scope&) { mine[IndexArg(at + e, loc)] = zero_of(src.elem(), loc); }, loc);
                    },
                    loc);
              });
            },
            loc);
      },
      loc);
}

void block_strided(Scope& block, const ExprArg& begin, const ExprArg& end,
                   const std::function<void(Scope& th, Expr i)>& body, Loc loc) {
  auto threads = declared_threads(block, "block_strided", loc);
  if (!threads) return;
  const Expr first = begin.expr, last = end.expr;
  Var t = block.let("t", block.id(thread(1), loc), loc);
  // A range of 64-bit indices takes the thread's position in 64 bits.
  const Expr from = first.type() == ScalarType::I32 ? first + t : first + cast(first.type(), t);
  block.group(
      thread(1),
      [&](Scope& th) {
        th.for_(
            "i", from, last, *threads, [&](Scope& th, Expr i) { body(th, i); }, loc);
      },
      loc);
}

void for_each_row(Scope& grid, const View& out, const ExprArg& rows, const ExprArg& cols,
                  const std::function<void(Scope& block, Expr row, View out_row)>& body, Loc loc) {
  if (!i32_counts(grid, "for_each_row", {{"rows", &rows}, {"cols", &cols}}, loc)) return;
  grid.called_as("lib::for_each_row", [&] {
    Var row = grid.let("row", grid.id(block(1), loc), loc);
    const Expr width = cols.expr;
    grid.partition(
        out, block(1), [&](Expr i) { return row * width + i; },
        [&](Scope& g, View out_row) {
          g.group(
              block(1),
              [&](Scope& b) {
                b.if_(
                    row < rows, [&](Scope& b) { b.called_as("", [&] { body(b, row, out_row); }); }, loc);
              },
              loc);
        },
        loc);
  });
}

void block_for_each(Scope& scope, const View& out, const ExprArg& n,
                    const std::function<void(Scope& th, Expr i, ElemRef out_i)>& body, Loc loc) {
  auto threads = declared_threads(scope, "block_for_each", loc);
  if (!threads) return;
  if (!i32_counts(scope, "block_for_each", {{"n", &n}}, loc)) return;
  const std::int64_t T = *threads;
  const Expr count = n.expr;
  // In a group over blocks, so that a call from the grid's code, where `out` would be every block's at
  // once, is the checker's V0303 at the caller's line (each block must be given its share first).
  scope.called_as("lib::block_for_each", [&] {
    scope.group(
        block(1),
        [&](Scope& b) {
          Var t = b.let(out.name() + "_t", b.id(thread(1), loc), loc);
          b.partition(
              out, thread(1), [&](Expr k) { return t + k * T; },
              [&](Scope& b, View mine) {
                b.group(
                    thread(1),
                    [&](Scope& th) {
                      // n / T whole rounds, in which every thread's t + k * T is below n (lowering
                      // proves it from k * T + T <= n), then one round for the n % T left, taken by
                      // the threads below it. With T a power of two t + (n / T) * T fits an i32 for
                      // every n; otherwise it can pass 2^31 for the largest n, and that round's
                      // accesses are checked as they run.
                      auto one = [&](Scope& th, const Expr& k) {
                        th.called_as("", [&] { body(th, t + k * T, mine[IndexArg(k, loc)]); });
                      };
                      th.for_("k", 0, count / T, one, loc);
                      // Not a variable: its range is the division's, at least 0 (n below 0 takes no
                      // round), so the round's elements are proven at least 0.
                      const Expr last = max(count, 0) / T;
                      th.if_(
                          t + last * T < count, [&](Scope& th) { one(th, last); }, loc);
                    },
                    loc);
              },
              loc);
        },
        loc);
  });
}

Combine combiner(Op op) {
  switch (op) {
    case Op::Min: return [](const Expr& a, const Expr& b) { return min(a, b); };
    case Op::Max: return [](const Expr& a, const Expr& b) { return max(a, b); };
    case Op::Sum: break;
  }
  return [](const Expr& a, const Expr& b) { return a + b; };
}

Var warp_reduce(Scope& warp, std::string name, const ExprArg& value, Op op, Loc loc) {
  Var v = warp.let(name, value, at(thread(1)), loc);
  butterfly(warp, v, combiner(op), 32, name, loc, true);
  return v;
}
Var warp_reduce(Scope& warp, std::string name, const ExprArg& value, const Combine& op, Loc loc) {
  Var v = warp.let(name, value, at(thread(1)), loc);
  butterfly(warp, v, op, 32, name, loc, false);
  return v;
}

Var warp_inclusive_scan(Scope& warp, std::string name, const ExprArg& value, Op op, Loc loc) {
  Var v = warp.let(name, value, at(thread(1)), loc);
  lane_scan(warp, v, combiner(op), name, loc, true);
  return v;
}
Var warp_inclusive_scan(Scope& warp, std::string name, const ExprArg& value, const Combine& op, Loc loc) {
  Var v = warp.let(name, value, at(thread(1)), loc);
  lane_scan(warp, v, op, name, loc, false);
  return v;
}

namespace {
/// The warp's exclusive scan from its inclusive one: lane l takes lane l - 1's, lane 0 the identity.
Var shifted_up(Scope& warp, const std::string& name, const Var& inclusive, const Expr& identity, Loc loc) {
  Var up = warp.shfl_up(name + "_up", inclusive, 1, loc);
  return warp.let(name, select(warp.id(thread(1), loc) == 0, identity, up), at(thread(1)), loc);
}
}  // namespace

Var warp_exclusive_scan(Scope& warp, std::string name, const ExprArg& value, Op op, const ExprArg& identity, Loc loc) {
  auto id = identity_as(warp, "warp_exclusive_scan", identity, value.expr.type(), loc);
  if (!id) return warp.let(name, value, at(thread(1)), loc);
  return shifted_up(warp, name, warp_inclusive_scan(warp, name + "_incl", value, op, loc), *id, loc);
}
Var warp_exclusive_scan(Scope& warp, std::string name, const ExprArg& value, const Combine& op, const ExprArg& identity,
                        Loc loc) {
  auto id = identity_as(warp, "warp_exclusive_scan", identity, value.expr.type(), loc);
  if (!id) return warp.let(name, value, at(thread(1)), loc);
  return shifted_up(warp, name, warp_inclusive_scan(warp, name + "_incl", value, op, loc), *id, loc);
}

Var read_below(Scope& s, std::string name, const View& src, const ExprArg& index, const ExprArg& count,
               const ExprArg& otherwise, Loc loc) {
  if (!index.weak_literal && !count.weak_literal && index.expr.type() != count.expr.type()) {
    s.diagnose("V0913",
               std::string("lib::read_below's index is ") + type_name(index.expr.type()) + " and its count " +
                   type_name(count.expr.type()) + ": give them one type",
               loc);
    return s.let(name, otherwise, vantage::at(thread(1)), loc);
  }
  // The index as the thread's value here: an id() in it keeps its meaning inside the group below.
  Var at = s.let(name + "_at", index, loc);
  Var v = s.let(name, otherwise, vantage::at(thread(1)), loc);
  s.group(
      thread(1),
      [&](Scope& th) {
        th.if_(
            at < count, [&](Scope& th) { th.assign(v, src[IndexArg(at, loc)], loc); }, loc);
      },
      loc);
  return v;
}

namespace {
Var block_reduce_by(Scope& b, const std::string& name, const ExprArg& value, const Combine& op, bool commutes,
                    Loc loc) {
  Var v = b.let(name + "_part", value, at(thread(1)), loc);
  auto threads = warps_block(b, "block_reduce", loc);
  if (!threads) return v;
  const std::int64_t warps = *threads / 32;
  b.group(
      thread(32), [&](Scope& w) { butterfly(w, v, op, 32, name, loc, commutes); }, loc);
  // Lane 0 of each warp publishes the warp's result.
  View partial = b.shared(name + "_warps", value.expr.type(), warps, loc);
  publish_per_warp(
      b, partial, name, [&](Scope&) -> Expr { return v; }, loc);
  // After the barrier, the whole block reads the partials in order (loads every thread makes at
  // the same address, so the result is one value of the block, living at block(1)).
  Var total = b.let(name, partial[IndexArg(0, loc)], loc);
  if (warps > 1)
    b.for_(
        name + "_w", 1, warps, [&](Scope& b, Expr w) { b.assign(total, op(total, partial[IndexArg(w, loc)]), loc); },
        loc);
  return total;
}
}  // namespace

Var block_reduce(Scope& b, std::string name, const ExprArg& value, Op op, Loc loc) {
  return block_reduce_by(b, name, value, combiner(op), true, loc);
}
Var block_reduce(Scope& b, std::string name, const ExprArg& value, const Combine& op, Loc loc) {
  return block_reduce_by(b, name, value, op, false, loc);
}

namespace {
/// The block scans: inclusive, or exclusive where `identity` is given.
Var block_scan(Scope& b, const std::string& name, const ExprArg& value, const Combine& op, bool commutes, Var* total,
               const std::optional<Expr>& identity, const char* helper, Loc loc) {
  Var v = b.let(identity ? name + "_incl" : name, value, at(thread(1)), loc);
  auto threads = warps_block(b, helper, loc);
  if (!threads) return v;
  const std::int64_t warps = *threads / 32;
  b.group(
      thread(32), [&](Scope& w) { lane_scan(w, v, op, name, loc, commutes); }, loc);
  // Exclusive: each lane takes the inclusive result of the lane below it (lane 0 the identity, or
  // the warps' before it below), with the block's prefix of earlier warps added in the same step.
  std::optional<Var> ex;
  if (identity) ex = b.let(name, *identity, at(thread(1)), loc);
  auto finish = [&](Scope& w, const std::optional<Expr>& before, const Expr& wid) {
    if (!identity) return;
    Var up = w.shfl_up(name + "_below", v, 1, loc);
    Expr lane0 = w.id(thread(1), loc) == 0;
    if (before)
      w.assign(*ex, select(wid > 0, select(lane0, *before, op(*before, up)), select(lane0, *identity, up)), loc);
    else
      w.assign(*ex, select(lane0, *identity, up), loc);
  };
  if (warps == 1 && !total) {
    b.group(
        thread(32), [&](Scope& w) { finish(w, std::nullopt, Expr(0)); }, loc);
    return identity ? *ex : v;
  }
  // The last lane of each warp holds the warp's total; lane 0 publishes it.
  View totals = b.shared(name + "_warps", value.expr.type(), warps, loc);
  Var wid = publish_per_warp(
      b, totals, name, [&](Scope& w) -> Expr { return w.shfl_idx(name + "_total", v, 31, loc); }, loc);
  if (total) {
    // The block's result: the warps' totals combined in warp order, read by the whole block.
    *total = b.let(name + "_sum", totals[IndexArg(0, loc)], loc);
    for (std::int64_t w = 1; w < warps; ++w)
      b.assign(*total, op(*total, totals[IndexArg(static_cast<int>(w), loc)]), loc);
  }
  if (warps == 1) {
    b.group(
        thread(32), [&](Scope& w) { finish(w, std::nullopt, Expr(0)); }, loc);
    return identity ? *ex : v;
  }
  // Each warp scans the totals across its lanes and adds the totals of the warps before it.
  b.group(
      thread(32),
      [&](Scope& w) {
        Expr lane = w.id(thread(1), loc);
        Var prefix = w.let(name + "_prefix", totals[IndexArg(min(lane, warps - 1), loc)], at(thread(1)), loc);
        lane_scan(w, prefix, op, name + "_w", loc, commutes);
        Var before = w.shfl_idx(name + "_before", prefix, max(wid - 1, 0), loc);
        finish(w, Expr(before), wid);
        w.assign(v, select(wid > 0, op(before, v), v), loc);
      },
      loc);
  return identity ? *ex : v;
}
}  // namespace

Var block_inclusive_scan(Scope& b, std::string name, const ExprArg& value, Op op, Var* total, Loc loc) {
  return block_scan(b, name, value, combiner(op), true, total, std::nullopt, "block_inclusive_scan", loc);
}
Var block_inclusive_scan(Scope& b, std::string name, const ExprArg& value, const Combine& op, Var* total, Loc loc) {
  return block_scan(b, name, value, op, false, total, std::nullopt, "block_inclusive_scan", loc);
}
Var block_exclusive_scan(Scope& b, std::string name, const ExprArg& value, Op op, const ExprArg& identity, Var* total,
                         Loc loc) {
  auto id = identity_as(b, "block_exclusive_scan", identity, value.expr.type(), loc);
  if (!id) return b.let(name, value, at(thread(1)), loc);
  return block_scan(b, name, value, combiner(op), true, total, *id, "block_exclusive_scan", loc);
}
Var block_exclusive_scan(Scope& b, std::string name, const ExprArg& value, const Combine& op, const ExprArg& identity,
                         Var* total, Loc loc) {
  auto id = identity_as(b, "block_exclusive_scan", identity, value.expr.type(), loc);
  if (!id) return b.let(name, value, at(thread(1)), loc);
  return block_scan(b, name, value, op, false, total, *id, "block_exclusive_scan", loc);
}

void block_exchange(Scope& b, std::string name, const View& items, int count, Arrangement from, Loc loc) {
  auto threads = b.block_threads();
  if (!threads || count < 1) {
    b.diagnose("V0913",
               !threads ? std::string("lib::block_exchange needs the kernel's block size: call block_threads() before "
                                      "body() (and not in a device function)")
                        : "lib::block_exchange needs at least one item a thread, not " + std::to_string(count),
               loc);
    return;
  }
  const std::int64_t T = *threads;
  View tmp = b.shared(name, items.elem(), T * count, loc);
  Var t = b.let(name + "_t", b.id(thread(1), loc), loc);
  // Each thread writes its items where they lie in the block's order, then reads its items in the
  // other arrangement from there.
  auto place = [&](Arrangement a, const Expr& k) { return a == Arrangement::Blocked ? t * count + k : k * T + t; };
  b.partition(
      tmp, thread(1), [&](Expr k) { return place(from, k); },
      [&](Scope& b, View mine) {
        b.group(
            thread(1),
            [&](Scope&) {
              for (int k = 0; k < count; ++k) mine[IndexArg(k, loc)] = items[IndexArg(k, loc)];
            },
            loc);
      },
      loc);
  const Arrangement to = from == Arrangement::Blocked ? Arrangement::Striped : Arrangement::Blocked;
  b.group(
      thread(1),
      [&](Scope&) {
        for (int k = 0; k < count; ++k) items[IndexArg(k, loc)] = tmp[IndexArg(place(to, Expr(k)), loc)];
      },
      loc);
}

void warp_exchange(Scope& w, std::string name, const View& items, int count, Arrangement from, Loc loc) {
  if (count < 1 || count > 32) {
    w.diagnose("V0913", "lib::warp_exchange takes 1 to 32 items a lane, not " + std::to_string(count), loc);
    return;
  }
  Var lane = w.let(name + "_lane", w.id(thread(1), loc), loc);
  View out = w.local_array(name + "_out", items.elem(), count, at(thread(1)), loc);
  for (int j = 0; j < count; ++j) {
    // The item a lane holds at j in the new arrangement: its index in the warp's order, then the lane
    // and the slot that hold it now. Every lane sends its slot p in round p; each keeps its own slot's.
    const Expr g = from == Arrangement::Blocked ? Expr(32 * j) + lane : lane * count + j;
    const Expr src = from == Arrangement::Blocked ? g / count : g % 32;
    Var slot = w.let(name + "_slot", from == Arrangement::Blocked ? g % count : g / 32, loc);
    Var got = w.let(name + "_got", items[IndexArg(0, loc)], at(thread(1)), loc);
    for (int p = 0; p < count; ++p) {
      Var v = w.shfl_idx(name + "_v", items[IndexArg(p, loc)], src, loc);
      if (p == 0)
        w.assign(got, v, loc);
      else
        w.assign(got, select(slot == p, v, got), loc);
    }
    out[IndexArg(j, loc)] = got;
  }
  for (int j = 0; j < count; ++j) items[IndexArg(j, loc)] = out[IndexArg(j, loc)];
}

Var block_radix_sort(Scope& b, std::string name, const ExprArg& key, int bits, Loc loc) {
  Var k = b.let(name, key, at(thread(1)), loc);
  auto threads = warps_block(b, "block_radix_sort", loc);
  if (!threads) return k;
  if (key.expr.type() != ScalarType::U32 || bits < 1 || bits > 32) {
    b.diagnose("V0913",
               std::string("lib::block_radix_sort sorts u32 keys by 1 to 32 of their low bits, not ") +
                   type_name(key.expr.type()) + " keys by " + std::to_string(bits),
               loc);
    return k;
  }
  View slots = b.shared(name + "_slots", ScalarType::U32, *threads, loc);
  Var t = b.let(name + "_t", b.id(thread(1), loc), loc);
  for (int bit = 0; bit < bits; ++bit) {
    const std::string pass = name + "_" + std::to_string(bit);
    Var one = b.let(pass + "_one", cast<int>((k >> static_cast<unsigned>(bit)) & 1u), at(thread(1)), loc);
    Var zeros;  // the block's keys with the bit clear: those go first, in thread order
    Var zeros_before = block_exclusive_scan(b, pass, Expr(1) - one, Op::Sum, 0, &zeros, loc);
    b.group(
        thread(1),
        [&](Scope& th) {
          Expr place = select(one == 0, zeros_before, zeros + (t - zeros_before));
          th.atomic(AtomicOp::Exch, slots, place, k, AtomicScope::Block, loc);
        },
        loc);
    b.group(
        thread(1), [&](Scope& th) { th.assign(k, slots[IndexArg(t, loc)], loc); }, loc);
  }
  return k;
}

void mma_load_a(Scope& w, const View& frag, const View& src, const ExprArg& ld, const ExprArg& row0,
                const ExprArg& col0, Loc loc) {
  Var lane = w.let(frag.name() + "_lane", w.id(thread(1), loc), loc);
  const Expr g = lane / 4, t = lane % 4, L = ld.expr, r0 = row0.expr, c0 = col0.expr;
  if (frag.elem() == ScalarType::F16 || frag.elem() == ScalarType::BF16) {
    for (int e = 0; e < 8; ++e)
      frag[IndexArg(e, loc)] = src[IndexArg((r0 + g + 8 * (e / 2 % 2)) * L + c0 + 2 * t + e % 2 + 8 * (e / 4), loc)];
    return;
  }
  if (frag.elem() == ScalarType::I8) {  // four bytes a register where the 16-bit shapes have two halves
    for (int e = 0; e < 16; ++e)
      frag[IndexArg(e, loc)] = src[IndexArg((r0 + g + 8 * (e / 4 % 2)) * L + c0 + 4 * t + e % 4 + 16 * (e / 8), loc)];
    return;
  }
  const int rows[] = {0, 8, 0, 8}, cols[] = {0, 0, 4, 4};
  for (int e = 0; e < 4; ++e) frag[IndexArg(e, loc)] = src[IndexArg((r0 + g + rows[e]) * L + c0 + t + cols[e], loc)];
}

void mma_load_b(Scope& w, const View& frag, const View& src, const ExprArg& ld, const ExprArg& row0,
                const ExprArg& col0, Loc loc) {
  Var lane = w.let(frag.name() + "_lane", w.id(thread(1), loc), loc);
  const Expr g = lane / 4, t = lane % 4, L = ld.expr, r0 = row0.expr, c0 = col0.expr;
  if (frag.elem() == ScalarType::F16 || frag.elem() == ScalarType::BF16) {
    for (int e = 0; e < 4; ++e)
      frag[IndexArg(e, loc)] = src[IndexArg((r0 + 2 * t + e % 2 + 8 * (e / 2)) * L + c0 + g, loc)];
    return;
  }
  if (frag.elem() == ScalarType::I8) {
    for (int e = 0; e < 8; ++e)
      frag[IndexArg(e, loc)] = src[IndexArg((r0 + 4 * t + e % 4 + 16 * (e / 4)) * L + c0 + g, loc)];
    return;
  }
  for (int e = 0; e < 2; ++e) frag[IndexArg(e, loc)] = src[IndexArg((r0 + t + 4 * e) * L + c0 + g, loc)];
}

Expr mma_c_row(const ExprArg& lane, int e) { return lane.expr / 4 + (e >= 2 ? 8 : 0); }
Expr mma_c_col(const ExprArg& lane, int e) { return lane.expr % 4 * 2 + e % 2; }

void mma_store_c(Scope& b, const MatrixTile& c, const std::vector<View>& acc, const ExprArg& warp_row,
                 const ExprArg& warp_col, const MmaOutput& value, Loc loc) {
  Var lane = b.let("lane", c.thread % 32, loc);
  const Expr wr = warp_row.expr, wc = warp_col.expr;
  // Element 4j + e of a lane's share: its accumulator j's element e, where PTX places it.
  auto row_of = [&](const Expr& e) { return wr + lane / 4 + e / 2 * 8; };
  auto col_of = [&](const Expr& j, const Expr& e) { return wc + j * 8 + lane % 4 * 2 + e % 2; };
  b.partition(
      c.view, thread(1), [&](Expr i) { return row_of(i % 4) * c.cols + col_of(i / 4, i % 4); },
      [&](Scope& b, View mine) {
        b.group(
            thread(1),
            [&](Scope& th) {
              for (std::size_t j = 0; j < acc.size(); ++j)
                for (int e = 0; e < 4; ++e) {
                  const int jj = static_cast<int>(j);
                  th.if_(
                      c.row0 + wr + mma_c_row(lane, e) < c.rows && c.col0 + wc + 8 * jj + mma_c_col(lane, e) < c.cols,
                      [&](Scope&) {
                        ElemRef old = mine[IndexArg(4 * jj + e, loc)];
                        old = value(acc[j][IndexArg(e, loc)], old);
                      },
                      loc);
                }
            },
            loc);
      },
      loc);
}

void store_by_one(Scope& scope, const View& dst, const ExprArg& index, const ExprArg& value, Loc loc) {
  scope.called_as("lib::store_by_one", [&] {
    scope.claim(
        dst, thread(1),
        [&](Scope& s, View mine) {
          s.split(Level::Thread, {{1, [&](Scope&) { mine[IndexArg(index.expr, loc)] = value; }, loc}}, loc);
        },
        loc);
  });
}

void by_one_thread(Scope& scope, const std::function<void(Scope& one)>& body, Loc loc) {
  scope.split(Level::Thread, {{1, [&](Scope& one) { body(one); }, loc}}, loc);
}

void by_one_thread(Scope& scope, const View& dst, const std::function<void(Scope& one, View mine)>& body, Loc loc) {
  scope.called_as("lib::by_one_thread", [&] {
    scope.claim(
        dst, thread(1),
        [&](Scope& s, View mine) {
          s.split(Level::Thread, {{1, [&](Scope& one) { one.called_as("", [&] { body(one, mine); }); }, loc}}, loc);
        },
        loc);
  });
}

void for_each_block(Scope& grid, const View& out, std::int64_t per_block,
                    const std::function<void(Scope& block, Expr blk, View out_b)>& body, Loc loc) {
  if (per_block < 1) {
    grid.diagnose("V0913", "lib::for_each_block needs at least one element per block, not " + std::to_string(per_block),
                  loc);
    return;
  }
  Var blk = grid.let("blk", grid.id(block(1), loc), loc);
  grid.partition(
      out, block(1), [&](Expr i) { return per_block == 1 ? blk + i : blk * per_block + i; },
      [&](Scope& g, View out_b) {
        g.group(
            block(1), [&](Scope& b) { body(b, blk, out_b); }, loc);
      },
      loc);
}

void for_each_block(Scope& grid, const View& out, const std::function<void(Scope& block, Expr blk, View out_b)>& body,
                    Loc loc) {
  for_each_block(grid, out, 1, body, loc);
}

void block_store(Scope& b, const View& dst, const ExprArg& valid, const ExprArg& value, Loc loc) {
  if (!i32_counts(b, "block_store", {{"valid", &valid}}, loc)) return;
  Var t = b.let("t", b.id(thread(1), loc), loc);
  b.partition(
      dst, thread(1), [&](Expr i) { return t + i; },
      [&](Scope& b, View mine) {
        b.group(
            thread(1),
            [&](Scope& th) {
              th.if_(
                  t < valid, [&](Scope&) { mine[IndexArg(0, loc)] = value; }, loc);
            },
            loc);
      },
      loc);
}

}  // namespace vantage::lib
