// The device library (include/vantage/library.hpp): each helper computes what its reference says on
// the interpreter (every check on) and on the CPU backend, at block sizes that are and are not powers
// of two and sizes that are not multiples of the block; the library forms of the examples generate
// the same CUDA as their primitive forms, or fewer barriers, in at most a third of the lines; misuse
// is reported at the caller's line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <tuple>

#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "reject_helpers.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

std::vector<Device> devices() {
  std::vector<Device> d{Device::interpreter({ThreadOrder::Forward, 7, true}),
                        Device::interpreter({ThreadOrder::Reverse, 7, true})};
  if (Device::cpu_available()) {
    d.push_back(Device::cpu(1));
    d.push_back(Device::cpu(2));
  }
  return d;
}

int combine(lib::Op op, int a, int b) {
  switch (op) {
    case lib::Op::Sum: return static_cast<int>(static_cast<unsigned>(a) + static_cast<unsigned>(b));
    case lib::Op::Min: return std::min(a, b);
    case lib::Op::Max: return std::max(a, b);
  }
  return 0;
}
const char* name(lib::Op op) { return op == lib::Op::Sum ? "sum" : op == lib::Op::Min ? "min" : "max"; }

std::vector<int> inputs(int n) {
  std::vector<int> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = (i * 7919) % 2003 - 1000;
  return x;
}

/// out[b] = op over the block's elements of x (elements past n count as 0 for a sum and are left out
/// of min and max).
Kernel reduce_kernel(int threads, lib::Op op) {
  KernelBuilder k("reduce_" + std::to_string(threads) + "_" + name(op));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(threads);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr blk, View out_b) {
      Expr idx = blk * threads + b.id(thread(1));
      Expr mine = x[min(idx, n - 1)];
      Expr value = op == lib::Op::Sum ? select(idx < n, mine, 0) : mine;  // x[n - 1] repeats harmlessly
      Var r = lib::block_reduce(b, "r", value, op);
      lib::store_by_one(b, out_b, 0, r);
    });
  });
  return k.build();
}

/// out[i] = op over x[block start .. i] within each block.
Kernel scan_kernel(int threads, lib::Op op) {
  KernelBuilder k("scan_" + std::to_string(threads) + "_" + name(op));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(n));
  k.block_threads(threads);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, threads, [&](Scope& b, Expr blk, View out_b) {
      Expr idx = blk * threads + b.id(thread(1));
      Var s = lib::block_inclusive_scan(b, "s", x[min(idx, n - 1)], op);
      lib::block_store(b, out_b, n - blk * threads, s);
    });
  });
  return k.build();
}

// lib::by_one_thread: thread 0 of each block writes the block's sum, minimum and maximum into its
// share of out (three elements a block), on the interpreter (both thread orders, checked) and the CPU
// backend, at sizes no block divides; from a block onto memory of the grid, it is refused by name.
TEST(Library, ByOneThreadWritesTheBlocksResultsFromOneThread) {
  KernelBuilder k("stats");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 3, [&](Scope& b, Expr blk, View out_b) {
      Expr idx = blk * 64 + b.id(thread(1));
      Expr mine = x[min(idx, n - 1)];
      Var sum = lib::block_reduce(b, "sum", select(idx < n, mine, 0), lib::Op::Sum);
      Var lo = lib::block_reduce(b, "lo", mine, lib::Op::Min);
      Var hi = lib::block_reduce(b, "hi", mine, lib::Op::Max);
      lib::by_one_thread(b, out_b, [&](Scope&, View o) {
        o[0] = sum;
        o[1] = lo;
        o[2] = hi;
      });
    });
  });
  Kernel kernel = k.build();
  for (const Device& d : devices())
    for (int n : {1, 64, 1000, 4097}) {
      const int blocks = (n + 63) / 64;
      std::vector<int> x = inputs(n), out(static_cast<std::size_t>(3 * blocks), -7);
      kernel.launch(d, Grid{blocks, 64}, n, std::as_const(x), out);
      for (int b = 0; b < blocks; ++b) {
        int sum = 0, lo = INT32_MAX, hi = INT32_MIN;
        for (int i = b * 64; i < std::min(n, b * 64 + 64); ++i) {
          sum += x[static_cast<std::size_t>(i)];
          lo = std::min(lo, x[static_cast<std::size_t>(i)]);
          hi = std::max(hi, x[static_cast<std::size_t>(i)]);
        }
        EXPECT_EQ(out[static_cast<std::size_t>(3 * b)], sum) << d.name() << " n=" << n << " block " << b;
        EXPECT_EQ(out[static_cast<std::size_t>(3 * b + 1)], lo) << d.name() << " n=" << n << " block " << b;
        EXPECT_EQ(out[static_cast<std::size_t>(3 * b + 2)], hi) << d.name() << " n=" << n << " block " << b;
      }
    }
  // A block writing all of `out` from one of its threads: every block would write it (V0303 names
  // the helper).
  int bad = 0;
  try {
    KernelBuilder w("whole");
    auto o = w.param<GlobalPtr<int>>("o", extent(4));
    w.block_threads(64);
    w.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        bad = __LINE__ + 1;
        lib::by_one_thread(b, o, [&](Scope&, View mine) { mine[0] = 1; });
      });
    });
    w.build();
    ADD_FAILURE() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0303", bad, "tests/test_library.cpp"));
    EXPECT_NE(testing::describe(e.diagnostics()).find("lib::by_one_thread (a claim) of 'o'"), std::string::npos);
  }
}

// copy_tile by name (lib::TileOf) builds the same kernel as by position; a tile of no rows is V0913
// at the user's line.
TEST(Library, CopyTileByNameIsTheSameKernelAsByPosition) {
  auto transpose_in = [](bool named, int tile_rows) {
    KernelBuilder k("copy");
    auto M = k.param<int>("M");
    auto N = k.param<int>("N");
    auto in = k.param<GlobalPtr<const float>>("in", extent(M * N));
    auto out = k.param<GlobalPtr<float>>("out", extent(M * N));
    k.block_threads(256);
    k.body([&](Scope& g) {
      lib::for_each_tile(g, out, M, N, 32, 32, [&](Scope& b, const lib::MatrixTile& o) {
        auto tile = b.shared<float>("tile", 32 * 33);
        if (named)
          lib::copy_tile(b, tile,
                         {.src = in,
                          .rows = M,
                          .cols = N,
                          .row0 = o.row0,
                          .col0 = o.col0,
                          .tile_rows = tile_rows,
                          .tile_cols = 32},
                         {.pad = 1, .async = true});
        else
          lib::copy_tile(b, tile, in, M, N, o.row0, o.col0, tile_rows, 32, {1, true, true});
        lib::update_sub_tile(b, o, o.row, o.col, lib::SubTile{4, 1, 8, 1},
                             [&](Scope&, int i, int, ElemRef e) { e = tile[(o.row + 8 * i) * 33 + o.col]; });
      });
    });
    return k.build();
  };
  auto code = [](const Kernel& k) {  // the generated CUDA without its #line directives (the calls' lines differ)
    std::string out, line;
    std::istringstream in(k.source(Spec{}));
    while (std::getline(in, line))
      if (line.rfind("#line", 0) != 0) out += line + "\n";
    return out;
  };
  EXPECT_EQ(code(transpose_in(true, 32)), code(transpose_in(false, 32)));
  try {
    transpose_in(true, 0);
    ADD_FAILURE() << "a tile of no rows was accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(e.has("V0913"));
    EXPECT_NE(testing::describe(e.diagnostics()).find("lib::copy_tile needs a tile of at least one row and column"),
              std::string::npos);
  }
}

// lib::store_by_one on a kernel parameter from block code: the diagnostic names the helper the user
// called and what to do, not a `claim` the user never wrote; the advice given (do it at grid(1))
// builds and runs.
TEST(Library, StoreByOneWhereItsTargetIsWiderNamesTheHelperAndTheFix) {
  int bad = 0;
  auto make = [&](bool at_grid) {
    KernelBuilder k("total");
    auto out = k.param<GlobalPtr<float>>("out", extent(1));
    k.block_threads(128);
    k.body([&](Scope& g) {
      if (at_grid) {
        lib::store_by_one(g, out, 0, 1.0f);
      } else {
        g.group(block(1), [&](Scope& b) {
          bad = __LINE__ + 1;
          lib::store_by_one(b, out, 0, 1.0f);
        });
      }
    });
    return k.build();
  };
  try {
    make(false);
    ADD_FAILURE() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0303", bad, "tests/test_library.cpp"));
    const std::string said = testing::describe(e.diagnostics());
    EXPECT_NE(said.find("lib::store_by_one (a claim) of 'out' needs the code at grid(1), where 'out' lives; the code "
                        "is at block(1), so every block(1) would write all of it: give each block(1) its share first "
                        "(partition, lib::for_each_block), or do this at grid(1)"),
              std::string::npos)
        << said;
  }
  Kernel k = make(true);
  std::vector<float> out(1, 0.0f);
  k.launch(Device::interpreter(), Grid{3, 128}, out);
  EXPECT_EQ(out[0], 1.0f);
}

TEST(Library, BlockReduceGivesEveryOperationAtEveryBlockSize) {
  for (int threads : {32, 64, 96, 256, 1024})
    for (lib::Op op : {lib::Op::Sum, lib::Op::Min, lib::Op::Max}) {
      Kernel kernel = reduce_kernel(threads, op);
      for (int n : {1, threads - 1, 3 * threads + 5}) {
        if (n < 1) continue;
        auto x = inputs(n);
        std::int64_t blocks = lib::blocks_for(n, threads);
        std::vector<int> want(static_cast<std::size_t>(blocks));
        for (std::int64_t b = 0; b < blocks; ++b) {
          int acc = x[static_cast<std::size_t>(std::min<std::int64_t>(b * threads, n - 1))];
          for (std::int64_t i = b * threads + 1; i < (b + 1) * threads && i < n; ++i)
            acc = combine(op, acc, x[static_cast<std::size_t>(i)]);
          want[static_cast<std::size_t>(b)] = acc;
        }
        for (const Device& d : devices()) {
          std::vector<int> got(static_cast<std::size_t>(blocks), -7);
          const auto& cx = x;
          kernel.launch(d, Grid{blocks, threads}, n, cx, got);
          EXPECT_EQ(got, want) << kernel.name() << " n=" << n << " on " << d.name();
        }
      }
    }
}

TEST(Library, BlockInclusiveScanGivesEveryOperationAtEveryBlockSize) {
  for (int threads : {32, 64, 96, 256, 1024})
    for (lib::Op op : {lib::Op::Sum, lib::Op::Min, lib::Op::Max}) {
      Kernel kernel = scan_kernel(threads, op);
      for (int n : {1, threads - 1, 2 * threads + 33}) {
        if (n < 1) continue;
        auto x = inputs(n);
        std::vector<int> want(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
          want[static_cast<std::size_t>(i)] =
              i % threads == 0 ? x[static_cast<std::size_t>(i)]
                               : combine(op, want[static_cast<std::size_t>(i - 1)], x[static_cast<std::size_t>(i)]);
        for (const Device& d : devices()) {
          std::vector<int> got(static_cast<std::size_t>(n), -7);
          const auto& cx = x;
          kernel.launch(d, Grid{lib::blocks_for(n, threads), threads}, n, cx, got);
          EXPECT_EQ(got, want) << kernel.name() << " n=" << n << " on " << d.name();
        }
      }
    }
}

// Scans and reductions over the user's own operator (a builder lambda), and exclusive scans, at
// block sizes that are and are not powers of two and sizes no block divides. The operators do not
// commute: "the later non-zero" (b where b != 0, else a) and "the earlier non-zero" make the scan's
// and the reduction's order visible; a sum and a bitwise or check the Op and commuting forms.
enum class UserScan { ExclusiveSum, ExclusiveLater, InclusiveLater, ReduceEarlier, ReduceOr };
const char* name(UserScan u) {
  static const char* const kNames[] = {"exclusive_sum", "exclusive_later", "inclusive_later", "reduce_earlier",
                                       "reduce_or"};
  return kNames[static_cast<int>(u)];
}
Expr later_nonzero(const Expr& a, const Expr& b) { return select(b != 0, b, a); }
Expr earlier_nonzero(const Expr& a, const Expr& b) { return select(a != 0, a, b); }
int later_nonzero_of(int a, int b) { return b != 0 ? b : a; }
int earlier_nonzero_of(int a, int b) { return a != 0 ? a : b; }

/// out[i] = the scan's value at element i (scans), or out[b] = the block's result (reductions); the
/// elements past n are 0 (the identity of every operator here).
Kernel user_scan_kernel(int threads, UserScan u) {
  KernelBuilder k(std::string("user_") + name(u) + "_" + std::to_string(threads));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(threads);
  const bool reduce = u == UserScan::ReduceEarlier || u == UserScan::ReduceOr;
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, reduce ? 1 : threads, [&](Scope& b, Expr blk, View out_b) {
      Var v = lib::read_below(b, "v", x, blk * threads + b.id(thread(1)), n, 0);
      switch (u) {
        case UserScan::ExclusiveSum: {
          Var s = lib::block_exclusive_scan(b, "s", v, lib::Op::Sum, 0);
          lib::block_store(b, out_b, n - blk * threads, s);
          break;
        }
        case UserScan::ExclusiveLater: {
          Var s = lib::block_exclusive_scan(b, "s", v, later_nonzero, 0);
          lib::block_store(b, out_b, n - blk * threads, s);
          break;
        }
        case UserScan::InclusiveLater: {
          Var s = lib::block_inclusive_scan(b, "s", v, later_nonzero);
          lib::block_store(b, out_b, n - blk * threads, s);
          break;
        }
        case UserScan::ReduceEarlier:
          lib::store_by_one(b, out_b, 0, lib::block_reduce(b, "r", v, earlier_nonzero));
          break;
        case UserScan::ReduceOr:
          lib::store_by_one(b, out_b, 0,
                            lib::block_reduce(b, "r", v, [](const Expr& a, const Expr& c) { return a | c; }));
          break;
      }
    });
  });
  return k.build();
}

TEST(Library, ScansAndReductionsTakeTheUsersOperatorAndExclusiveScansStartAtTheIdentity) {
  for (int threads : {32, 96, 256, 1024})
    for (UserScan u : {UserScan::ExclusiveSum, UserScan::ExclusiveLater, UserScan::InclusiveLater,
                       UserScan::ReduceEarlier, UserScan::ReduceOr}) {
      Kernel kernel = user_scan_kernel(threads, u);
      const bool reduce = u == UserScan::ReduceEarlier || u == UserScan::ReduceOr;
      for (int n : {1, threads - 1, 2 * threads + 33}) {
        if (n < 1) continue;
        // Mostly zeros, so that the non-zero operators' answers depend on where the values are.
        std::vector<int> x(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = i % 7 == 3 || i % 11 == 5 ? (i * 37) % 101 + 1 : 0;
        const std::int64_t blocks = lib::blocks_for(n, threads);
        std::vector<int> want;
        for (std::int64_t b = 0; b < blocks; ++b) {
          int acc = 0, reduced = 0;
          for (std::int64_t i = b * threads; i < std::min<std::int64_t>(n, (b + 1) * threads); ++i) {
            const int xi = x[static_cast<std::size_t>(i)];
            switch (u) {
              case UserScan::ExclusiveSum: want.push_back(acc), acc += xi; break;
              case UserScan::ExclusiveLater: want.push_back(acc), acc = later_nonzero_of(acc, xi); break;
              case UserScan::InclusiveLater: acc = later_nonzero_of(acc, xi), want.push_back(acc); break;
              case UserScan::ReduceEarlier: reduced = earlier_nonzero_of(reduced, xi); break;
              case UserScan::ReduceOr: reduced |= xi; break;
            }
          }
          if (reduce) want.push_back(reduced);
        }
        for (const Device& d : devices()) {
          std::vector<int> got(want.size(), -7);
          kernel.launch(d, Grid{blocks, threads}, n, std::as_const(x), got);
          EXPECT_EQ(got, want) << kernel.name() << " n=" << n << " on " << d.name();
        }
      }
    }
}

// A warp's exclusive scan with the user's operator, and a warp reduction with one that does not
// commute: every lane gets the same, ordered, result.
TEST(Library, WarpExclusiveScanAndOrderedWarpReduceGiveEveryLaneItsValue) {
  KernelBuilder k("warp_user_ops");
  auto xs = k.param<GlobalPtr<const int>>("x", extent(64));
  auto out = k.param<GlobalPtr<int>>("out", extent(128));  // the reductions, then the scans
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(32), [&](Scope& w) {
              Var r = lib::warp_reduce(w, "r", xs[t], earlier_nonzero);
              Var p = lib::warp_exclusive_scan(w, "p", xs[t], later_nonzero, 0);
              w.group(thread(1), [&](Scope&) {
                mine[0] = r;
                mine[64] = p;
              });
            });
          });
    });
  });
  Kernel kernel = k.build();
  std::vector<int> x(64, 0);
  for (int i : {5, 9, 17, 40, 41, 63}) x[static_cast<std::size_t>(i)] = i;
  std::vector<int> want(128);
  for (int w = 0; w < 2; ++w) {
    int first = 0, acc = 0;
    for (int l = 0; l < 32; ++l) first = earlier_nonzero_of(first, x[static_cast<std::size_t>(w * 32 + l)]);
    for (int l = 0; l < 32; ++l) {
      want[static_cast<std::size_t>(w * 32 + l)] = first;
      want[static_cast<std::size_t>(64 + w * 32 + l)] = acc;
      acc = later_nonzero_of(acc, x[static_cast<std::size_t>(w * 32 + l)]);
    }
  }
  for (const Device& d : devices()) {
    std::vector<int> got(128);
    kernel.launch(d, Grid{1, 64}, std::as_const(x), got);
    EXPECT_EQ(got, want) << d.name();
  }
}

// A block's exclusive scan called from a warp's code: refused at the caller's line.
TEST(Library, ABlockExclusiveScanFromAWarpIsRefusedAtTheCallersLine) {
  KernelBuilder k("scan_at_warp");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  int line = 0;
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(32), [&](Scope& w) {
              line = __LINE__ + 1;
              Var s = lib::block_exclusive_scan(w, "s", t, lib::Op::Sum, 0);  // w is a warp, not the block
              w.group(thread(1), [&](Scope&) { mine[0] = s; });
            });
          });
    });
  });
  EXPECT_TRUE(testing::rejected_at(k, line));
}

/// Each block loads its T x K items of x in `from`'s arrangement, exchanges them, and stores them in
/// the other: out == x where the exchange is right (and a permutation of x where it is not).
/// With `warps`, each warp exchanges its own 32 x items elements (lib::warp_exchange) and the
/// arrangements are the warp's: blocked by lane, striped over 32 lanes.
Kernel exchange_kernel(int threads, int items, lib::Arrangement from, bool warps = false) {
  KernelBuilder k(std::string(warps ? "warp_" : "") + "exchange_" + std::to_string(threads) + "_" +
                  std::to_string(items) + (from == lib::Arrangement::Blocked ? "_blocked" : "_striped"));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(n));
  const int tile = threads * items;
  k.block_threads(threads);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, tile, [&](Scope& b, Expr blk, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      View mine = b.local_array("mine", ScalarType::I32, items, at(thread(1)));
      const int width = warps ? 32 : threads;  // the threads that exchange together
      auto base = [&]() -> Expr { return warps ? t / 32 * (32 * items) : Expr(0); };
      auto lane = [&]() -> Expr { return warps ? t % 32 : Expr(t); };
      auto slot = [&](lib::Arrangement a, int e) -> Expr {
        return base() + (a == lib::Arrangement::Blocked ? lane() * items + e : Expr(e * width) + lane());
      };
      b.group(thread(1), [&](Scope& th) {
        for (int e = 0; e < items; ++e) {
          Expr i = blk * tile + slot(from, e);
          th.if_(
              i < n, [&](Scope&) { mine[e] = x[i]; }, [&](Scope&) { mine[e] = -1; });
        }
      });
      if (warps)
        b.group(thread(32), [&](Scope& w) { lib::warp_exchange(w, "swap", mine, items, from); });
      else
        lib::block_exchange(b, "swap", mine, items, from);
      const lib::Arrangement to =
          from == lib::Arrangement::Blocked ? lib::Arrangement::Striped : lib::Arrangement::Blocked;
      b.partition(
          out_b, thread(1),
          [&](Expr e) { return base() + (to == lib::Arrangement::Blocked ? lane() * items + e : e * width + lane()); },
          [&](Scope& b, View o) {
            b.group(thread(1), [&](Scope& th) {
              for (int e = 0; e < items; ++e) th.if_(blk * tile + slot(to, e) < n, [&](Scope&) { o[e] = mine[e]; });
            });
          });
    });
  });
  return k.build();
}

TEST(Library, BlockExchangeTurnsBlockedItemsStripedAndBack) {
  for (int threads : {32, 96, 256})
    for (int items : {1, 3, 4})
      for (lib::Arrangement from : {lib::Arrangement::Blocked, lib::Arrangement::Striped}) {
        Kernel kernel = exchange_kernel(threads, items, from);
        for (int n : {1, threads * items - 1, 2 * threads * items + 7}) {
          const auto x = inputs(n);
          const std::int64_t blocks = (n + threads * items - 1) / (threads * items);
          for (const Device& d : devices()) {
            std::vector<int> got(static_cast<std::size_t>(n), -7);
            kernel.launch(d, Grid{blocks, threads}, n, x, got);
            EXPECT_EQ(got, x) << kernel.name() << " n=" << n << " on " << d.name();
          }
        }
      }
}

TEST(Library, WarpExchangeTurnsEachWarpsBlockedItemsStripedAndBack) {
  for (int threads : {32, 96})
    for (int items : {1, 3, 4, 8})
      for (lib::Arrangement from : {lib::Arrangement::Blocked, lib::Arrangement::Striped}) {
        Kernel kernel = exchange_kernel(threads, items, from, true);
        for (int n : {1, threads * items - 1, 2 * threads * items + 7}) {
          const auto x = inputs(n);
          const std::int64_t blocks = (n + threads * items - 1) / (threads * items);
          for (const Device& d : devices()) {
            std::vector<int> got(static_cast<std::size_t>(n), -7);
            kernel.launch(d, Grid{blocks, threads}, n, x, got);
            EXPECT_EQ(got, x) << kernel.name() << " n=" << n << " on " << d.name();
          }
        }
        if (items == 4 && threads == 32) {
          const std::string src = specialize_for(kernel, Spec{}).source;
          EXPECT_EQ(src.find("__shared__"), std::string::npos) << "a warp exchange needs no shared memory";
          EXPECT_EQ(src.find("__syncthreads"), std::string::npos);
          if (nvrtc_available()) {
            EXPECT_EQ(compile(kernel, Spec{}).log, "");
          }
        }
      }
}

// The accumulators' store partitions the block's tile among its threads: from a warp's code it is
// refused at the caller's line.
TEST(Library, AnMmaStoreFromAWarpIsRefusedAtTheCallersLine) {
  KernelBuilder k("mma_store_at_warp");
  auto M = k.param<int>("M"), N = k.param<int>("N");
  auto C = k.param<GlobalPtr<int>>("C", extent(M * N));
  k.block_threads(128);
  int line = 0;
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, 32, 32, [&](Scope& b, const lib::MatrixTile& c) {
      View acc = b.local_array("acc", ScalarType::I32, 4, at(thread(1)));
      for (int e = 0; e < 4; ++e) acc[e] = e;
      b.group(thread(32), [&](Scope& w) {
        line = __LINE__ + 1;
        lib::mma_store_c(w, c, {acc}, 0, 0, [](const Expr& v, const ElemRef&) { return v; });  // w: a warp
      });
    });
  });
  EXPECT_TRUE(testing::rejected_at(k, line));
}

// A warp exchange from a block's code (its shuffles need a warp), or of no items: at the caller's line.
TEST(Library, AWarpExchangeFromABlockOrOfNoItemsIsRefusedAtTheCallersLine) {
  for (int items : {2, 0}) {
    KernelBuilder k("warp_exchange_misuse");
    auto out = k.param<GlobalPtr<int>>("out", extent(64));
    k.block_threads(64);
    int line = 0;
    k.body([&](Scope& g) {
      lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View) {
        View mine = b.local_array("mine", ScalarType::I32, 2, at(thread(1)));
        if (items == 0) {
          b.group(thread(32), [&](Scope& w) {
            line = __LINE__ + 1;
            lib::warp_exchange(w, "swap", mine, items, lib::Arrangement::Blocked);
          });
        } else {
          line = __LINE__ + 1;
          lib::warp_exchange(b, "swap", mine, items, lib::Arrangement::Blocked);  // b is the block, not a warp
        }
      });
    });
    EXPECT_TRUE(testing::rejected_at(k, line)) << items << " items";
  }
}

// From a warp's code, where the block's items are not all there: refused at the caller's line.
TEST(Library, ABlockExchangeFromAWarpIsRefusedAtTheCallersLine) {
  KernelBuilder k("exchange_at_warp");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  int line = 0;
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View) {
      View mine = b.local_array("mine", ScalarType::I32, 2, at(thread(1)));
      b.group(thread(32), [&](Scope& w) {
        line = __LINE__ + 1;
        lib::block_exchange(w, "swap", mine, 2, lib::Arrangement::Blocked);  // w is a warp, not the block
      });
    });
  });
  EXPECT_TRUE(testing::rejected_at(k, line));
}

/// Each block sorts its keys (keys past n are all ones, sorted last) by their low `bits` bits and
/// stores the first n - block start of them.
Kernel radix_kernel(int threads, int bits) {
  KernelBuilder k("radix_" + std::to_string(threads) + "_" + std::to_string(bits));
  auto n = k.param<int>("n");
  auto keys = k.param<GlobalPtr<const std::uint32_t>>("keys", extent(n));
  auto out = k.param<GlobalPtr<std::uint32_t>>("out", extent(n));
  k.block_threads(threads);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, threads, [&](Scope& b, Expr blk, View out_b) {
      Var key = lib::read_below(b, "key", keys, blk * threads + b.id(thread(1)), n, 0xffffffffu);
      Var sorted = lib::block_radix_sort(b, "s", key, bits);
      lib::block_store(b, out_b, n - blk * threads, sorted);
    });
  });
  return k.build();
}

TEST(Library, BlockRadixSortSortsEachBlocksKeysStablyByTheirLowBits) {
  for (int threads : {32, 96, 256})
    for (int bits : {32, 5}) {
      Kernel kernel = radix_kernel(threads, bits);
      for (int n : {1, threads - 1, 2 * threads + 19}) {
        std::vector<std::uint32_t> keys(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
          keys[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(i) * 2654435761u ^ 0x5bd1e995u;
        const std::uint32_t mask = bits == 32 ? 0xffffffffu : (1u << bits) - 1;
        std::vector<std::uint32_t> want = keys;
        for (int b = 0; b * threads < n; ++b) {
          auto first = want.begin() + b * threads, last = want.begin() + std::min(n, (b + 1) * threads);
          std::stable_sort(first, last, [&](std::uint32_t x, std::uint32_t y) { return (x & mask) < (y & mask); });
        }
        const std::int64_t blocks = (n + threads - 1) / threads;
        for (const Device& d : devices()) {
          std::vector<std::uint32_t> got(static_cast<std::size_t>(n), 7);
          kernel.launch(d, Grid{blocks, threads}, n, keys, got);
          EXPECT_EQ(got, want) << kernel.name() << " n=" << n << " on " << d.name();
        }
      }
    }
  if (nvrtc_available()) {
    const Kernel k = radix_kernel(256, 5);
    EXPECT_EQ(compile(k, Spec{}).log, "");
    EXPECT_NE(specialize_for(k, Spec{}).source.find("vt_atomic_store<__NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_BLOCK>("),
              std::string::npos);
  }
}

TEST(Library, ForEachCoversEveryElementOnceInEveryTileShape) {
  for (lib::Tile tile :
       {lib::Tile{1, lib::Layout::Striped}, lib::Tile{4, lib::Layout::Striped}, lib::Tile{3, lib::Layout::Blocked}}) {
    KernelBuilder k("add_index");
    auto n = k.param<int>("n");
    auto y = k.param<GlobalPtr<int>>("y", extent(n));
    k.block_threads(64);
    k.body([&](Scope& g) {
      lib::for_each(
          g, y, n, [&](Scope&, Expr i, ElemRef yi) { yi = yi + i * 2; }, tile);
    });
    Kernel kernel = k.build();
    for (int n : {1, 63, 64 * tile.items, 1000}) {
      for (const Device& d : devices()) {
        std::vector<int> y(static_cast<std::size_t>(n), 5), want(y);
        for (int i = 0; i < n; ++i) want[static_cast<std::size_t>(i)] += 2 * i;
        kernel.launch(d, Grid{lib::blocks_for(n, 64, tile), 64}, n, y);
        EXPECT_EQ(y, want) << "items " << tile.items << " n=" << n << " on " << d.name();
      }
    }
  }
}

TEST(Library, BlockStridedLoopVisitsEachIndexOfTheRangeOnce) {
  // One block per row: row r's sum of x[r * cols .. (r + 1) * cols), read block-strided.
  KernelBuilder k("row_sums");
  auto rows = k.param<int>("rows");
  auto cols = k.param<int>("cols");
  auto x = k.param<GlobalPtr<const int>>("x", extent(rows * cols));
  auto out = k.param<GlobalPtr<int>>("out", extent(rows));
  k.block_threads(128);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr row, View out_b) {
      Var acc = b.let("acc", 0, at(thread(1)));
      lib::block_strided(b, row * cols, row * cols + cols, [&](Scope& th, Expr i) { th.assign(acc, acc + x[i]); });
      Var total = lib::block_reduce(b, "total", acc, lib::Op::Sum);
      b.if_(row < rows, [&](Scope& b) { lib::store_by_one(b, out_b, 0, total); });
    });
  });
  Kernel kernel = k.build();
  for (int cols : {1, 127, 128, 1000}) {
    const int rows = 3;
    auto x = inputs(rows * cols);
    std::vector<int> want(rows, 0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) want[static_cast<std::size_t>(r)] += x[static_cast<std::size_t>(r * cols + c)];
    for (const Device& d : devices()) {
      std::vector<int> got(rows, -1);
      const auto& cx = x;
      kernel.launch(d, Grid{rows, 128}, rows, cols, cx, got);
      EXPECT_EQ(got, want) << "cols " << cols << " on " << d.name();
    }
  }
}

TEST(Library, WarpReduceAndScanGiveEveryLaneItsValue) {
  KernelBuilder k("warp_ops");
  auto xs = k.param<GlobalPtr<const int>>("x", extent(64));
  auto out = k.param<GlobalPtr<int>>("out", extent(128));  // the maxima, then the scans
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(32), [&](Scope& w) {
              Var s = lib::warp_reduce(w, "s", xs[t], lib::Op::Max);
              Var p = lib::warp_inclusive_scan(w, "p", xs[t], lib::Op::Sum);
              w.group(thread(1), [&](Scope&) {
                mine[0] = s;
                mine[64] = p;
              });
            });
          });
    });
  });
  Kernel kernel = k.build();
  auto x = inputs(64);
  std::vector<int> want_max(64), want_scan(64);
  for (int w = 0; w < 2; ++w) {
    int m = x[static_cast<std::size_t>(w * 32)], acc = 0;
    for (int l = 0; l < 32; ++l) m = std::max(m, x[static_cast<std::size_t>(w * 32 + l)]);
    for (int l = 0; l < 32; ++l) {
      acc += x[static_cast<std::size_t>(w * 32 + l)];
      want_max[static_cast<std::size_t>(w * 32 + l)] = m;
      want_scan[static_cast<std::size_t>(w * 32 + l)] = acc;
    }
  }
  std::vector<int> want = want_max;
  want.insert(want.end(), want_scan.begin(), want_scan.end());
  for (const Device& d : devices()) {
    std::vector<int> got(128);
    const auto& cx = x;
    kernel.launch(d, Grid{1, 64}, cx, got);
    EXPECT_EQ(got, want) << d.name();
  }
}

/// The CUDA text without its `#line` directives (which name each form's own source lines).
std::string without_line_directives(const std::string& cuda) {
  std::istringstream in(cuda);
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("#line ", 0) != 0) out += line + "\n";
  return out;
}

TEST(Library, SaxpyGeneratesTheSameCudaAsItsPrimitiveForm) {
  for (Arch arch : {Arch::SM_80, Arch::SM_90}) {
    Spec spec = Spec{}.with_arch(arch);
    EXPECT_EQ(without_line_directives(examples::saxpy().source(spec)),
              without_line_directives(examples::saxpy_primitive().source(spec)))
        << arch_name(arch);
    EXPECT_EQ(examples::saxpy().lowered(spec), examples::saxpy_primitive().lowered(spec)) << arch_name(arch);
  }
}

int count(const std::string& text, const std::string& what) {
  int c = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++c;
  return c;
}

TEST(Library, BlockReduceNeedsOneBarrierWhereItsPrimitiveFormHasThree) {
  std::string lib = examples::block_reduce().source(Spec{}), prim = examples::block_reduce_primitive().source(Spec{});
  EXPECT_EQ(count(lib, "__syncthreads()"), 1) << lib;
  EXPECT_EQ(count(prim, "__syncthreads()"), 3) << prim;
  // Both give the block sums (in their own orders of addition) at sizes that are not multiples.
  for (const auto& size : examples::default_sizes("block_reduce")) {
    auto a = examples::run_example("block_reduce", size, Device::interpreter());
    EXPECT_TRUE(a.ok) << a.summary;
  }
}

// lib::read_below reads an element only below the count (a branch): the read is proven and
// unchecked, where a select of a clamped read (which reads anyway) is checked; the last block's
// threads past n get the default.
TEST(Library, ReadBelowReadsOnlyBelowTheCountAndNeedsNoCheck) {
  KernelBuilder k("read_below");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(256));
  k.block_threads(128);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128, [&](Scope& b, Expr blk, View o) {
      Var v = lib::read_below(b, "v", x, blk * 128 + b.id(thread(1)), n, -7);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          o, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = v * 2; }); });
    });
  });
  Kernel kernel = k.build();
  std::string src = specialize_for(kernel, Spec{}).source;
  EXPECT_EQ(count(src, "vt_ld(x"), 0) << src;
  EXPECT_NE(src.find("if (v_at < n) {"), std::string::npos) << src;
  for (int nv : {0, 1, 130, 256}) {
    std::vector<int> in(static_cast<std::size_t>(nv)), got(256, 0);
    for (int i = 0; i < nv; ++i) in[static_cast<std::size_t>(i)] = i + 1;
    for (const Device& d : devices()) {
      kernel.launch(d, Grid{2, 128}, nv, std::as_const(in), got);
      for (int i = 0; i < 256; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], i < nv ? 2 * (i + 1) : -14) << i;
    }
  }
}

TEST(Library, SgemmSmemIsItsPrimitiveFormWithoutItsChecks) {
  // The same barriers and shared memory, and the same result to the bit on the interpreter; but the
  // library reads A and B only inside the matrices (a branch), where lowering proves every access,
  // while the primitive form's clamped reads of a select (which reads both arms) stay checked.
  std::string lib = examples::sgemm_smem().source(Spec{}), prim = examples::sgemm_smem_primitive().source(Spec{});
  for (const char* what : {"__syncthreads()", "vt_smem[8192]", "#pragma unroll"})
    EXPECT_EQ(count(lib, what), count(prim, what)) << what << "\n" << lib;
  EXPECT_EQ(count(lib, "vt_ld(") + count(lib, "vt_st("), 0) << lib;
  EXPECT_EQ(count(prim, "vt_ld(") + count(prim, "vt_st("), 6) << prim;
  for (const auto& size : examples::default_sizes("sgemm_smem")) {
    auto a = examples::run_example("sgemm_smem", size, Device::interpreter());
    EXPECT_TRUE(a.ok) << a.summary;
    std::int64_t M = size.at("M"), N = size.at("N"), K = size.at("K");
    std::vector<float> A(static_cast<std::size_t>(M * K)), B(static_cast<std::size_t>(K * N)),
        C1(static_cast<std::size_t>(M * N));
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(i % 7) * 0.25f;
    for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(i % 5) * 0.5f;
    for (std::size_t i = 0; i < C1.size(); ++i) C1[i] = static_cast<float>(i % 3);
    auto C2 = C1;
    Grid g{((M + 31) / 32) * ((N + 31) / 32), 1024};
    auto run = [&](const Kernel& k, std::vector<float>& C) {
      k.launch(Device::interpreter(), g, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.5f, 0.5f,
               std::as_const(A), std::as_const(B), C);
    };
    run(examples::sgemm_smem(), C1);
    run(examples::sgemm_smem_primitive(), C2);
    EXPECT_EQ(C1, C2) << "M=" << M << " N=" << N << " K=" << K;
  }
}

/// Lines of `k.body(...)` in the form of the example between "// <kind> FORM name" and "// END FORM"
/// in the example kernels' files (the parameters, the same in both forms, are not counted).
int body_lines(const std::string& kind, const std::string& example) {
  std::stringstream in;
  for (const char* file : {"paper_kernels.cpp", "gemm_kernels.cpp"})
    in << std::ifstream(std::string(VANTAGE_SOURCE_DIR) + "/examples/kernels/" + file).rdbuf();
  std::string line;
  bool inside = false, body = false;
  int lines = 0;
  while (std::getline(in, line)) {
    if (line == "// " + kind + " FORM " + example) inside = true;
    if (!inside) continue;
    if (line == "// END FORM") break;
    if (line.find("k.body(") != std::string::npos) body = true;
    if (line.find("return k.build();") != std::string::npos) body = false;
    if (body && line.find_first_not_of(' ') != std::string::npos) ++lines;
  }
  return lines;
}

TEST(Library, LibraryFormsAreAtMostAThirdOfThePrimitiveLines) {
  for (const char* ex : {"saxpy", "block_reduce", "sgemm_smem", "vec_copy", "device_scan"}) {
    int lib = body_lines("LIBRARY", ex), prim = body_lines("PRIMITIVE", ex);
    ASSERT_GT(lib, 0) << ex << ": no library form found";
    ASSERT_GT(prim, 0) << ex << ": no primitive form found";
    EXPECT_LE(3 * lib, prim) << ex << ": " << lib << " lines with the library, " << prim << " without";
    std::printf("%s: %d lines with the library, %d in primitives\n", ex, lib, prim);
  }
}

/// Lines of the body of CUDA kernel `entry` in bench/twins/`file`: after the line that opens it up to
/// the `}` that closes it, not counting blank lines, comment lines and `#pragma unroll`.
int cuda_lines(const std::string& file, const std::string& entry) {
  std::ifstream in(std::string(VANTAGE_SOURCE_DIR) + "/bench/twins/" + file);
  std::string line;
  bool signature = false, body = false;
  int lines = 0;
  while (std::getline(in, line)) {
    if (!signature && !body && line.find(entry + "(") != std::string::npos) signature = true;
    if (signature && !line.empty() && line.back() == '{') {
      signature = false;
      body = true;
      continue;
    }
    if (!body) continue;
    if (line == "}") break;
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line.compare(first, 2, "//") == 0 || line.compare(first, 7, "#pragma") == 0)
      continue;
    ++lines;
  }
  return body ? lines : 0;
}

// Issue 38's measure: a device-wide kernel written with the library takes at most the lines of the
// same kernel in plain CUDA without CUB (its twin in bench/twins, counted without comments).
TEST(Library, LibraryKernelsTakeFewerLinesThanTheirPlainCudaTwins) {
  const std::tuple<const char*, const char*, const char*> kPairs[] = {
      {"device_scan", "reduce_scan.cu", "twin_scan_tiled"},
      {"compact", "device.cu", "twin_compact"},
      {"byte_histogram", "device.cu", "twin_byte_histogram"},
      {"igemm_mma", "mma.cu", "twin_igemm_mma"},
      {"saxpy_vec", "copy.cu", "twin_saxpy_vec"},
      {"stencil", "copy.cu", "twin_stencil"},
      {"softmax", "reduce_scan.cu", "twin_softmax"},
  };
  for (const auto& [ex, file, entry] : kPairs) {
    const int lib = body_lines("LIBRARY", ex), cuda = cuda_lines(file, entry);
    ASSERT_GT(lib, 0) << ex << ": no library form found";
    ASSERT_GT(cuda, 0) << entry << " not found in bench/twins/" << file;
    EXPECT_LE(lib, cuda) << ex << ": " << lib << " lines with the library, " << cuda << " in plain CUDA";
    std::printf("%s: %d lines with the library, %d in plain CUDA (%s)\n", ex, lib, cuda, entry);
  }
}

TEST(Library, AHelperWithoutTheBlockSizeIsReportedAtTheCallersLine) {
  KernelBuilder k("no_threads");
  auto n = k.param<int>("n");
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::for_each(g, y, n, [&](Scope&, Expr, ElemRef yi) { yi = 1; });
  });
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0913", line, "tests/test_library.cpp"));
  }
}

TEST(Library, ABlockReduceOverPartialWarpsIsRefusedAtTheCallersLine) {
  KernelBuilder k("partial_warps");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(48);
  int line = 0;
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr, View out_b) {
      line = __LINE__ + 1;
      Var r = lib::block_reduce(b, "r", b.id(thread(1)), lib::Op::Sum);
      lib::store_by_one(b, out_b, 0, r);
    });
  });
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0913", line, "tests/test_library.cpp"));
  }
}

TEST(Library, AWarpReduceOutsideAWarpIsTheShufflesErrorAtTheCallersLine) {
  KernelBuilder k("reduce_at_block");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(64);
  int line = 0;
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr, View out_b) {
      line = __LINE__ + 1;
      Var r = lib::warp_reduce(b, "r", b.id(thread(1)), lib::Op::Sum);  // b is block(1), not a warp
      lib::store_by_one(b, out_b, 0, r);
    });
  });
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    bool at_line = false;
    for (const auto& d : e.diagnostics()) at_line |= static_cast<int>(d.loc.line) == line;
    EXPECT_TRUE(at_line) << testing::describe(e.diagnostics());
  }
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// A shuffle from one lane that every lane names (a warp-uniform lane) is a broadcast: its result is
// typed as one value of the warp, so it may bound a loop and guard a sync_warp (issue 11, item 0).
// From a lane that varies per thread it stays a per-thread value, and the same code is refused.
int loop_line = 0, if_line = 0;
Kernel broadcast_kernel(bool uniform_lane) {
  KernelBuilder k(uniform_lane ? "broadcast" : "not_broadcast");
  auto xs = k.param<GlobalPtr<const int>>("x", extent(64));
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) {
            b.group(thread(32), [&](Scope& w) {
              Var lane = w.let("lane", w.id(thread(1)));
              Var v = w.let("v", xs[t], at(thread(1)));
              Var trips = w.shfl_idx("trips", v, uniform_lane ? Expr(3) : Expr(lane));  // lane 3's value
              Var acc = w.let("acc", 0, at(thread(1)));
              loop_line = __LINE__ + 1;
              w.for_("i", 0, trips, [&](Scope& w, Expr) { w.assign(acc, acc + lane); });
              if_line = __LINE__ + 1;
              w.if_(trips > 2, [&](Scope& w) { w.sync_warp(); });
              w.group(thread(1), [&](Scope&) { mine[0] = acc; });
            });
          });
    });
  });
  return k.build();
}

TEST(Library, AShuffleFromAWarpUniformLaneIsAValueOfTheWarp) {
  Kernel kernel = broadcast_kernel(true);
  std::vector<int> x(64);
  for (int i = 0; i < 64; ++i) x[static_cast<std::size_t>(i)] = i % 7;
  std::vector<int> want(64);
  for (int i = 0; i < 64; ++i)
    want[static_cast<std::size_t>(i)] = (i % 32) * x[static_cast<std::size_t>(i / 32 * 32 + 3)];
  for (const Device& d : devices()) {
    std::vector<int> got(64, -1);
    kernel.launch(d, Grid{1, 64}, std::as_const(x), got);
    EXPECT_EQ(got, want) << d.name();
  }
  if (nvrtc_available()) {
    EXPECT_FALSE(kernel.cubin(Spec{}).empty()) << "NVRTC compiles the loop and the sync_warp";
  }
}

TEST(Library, AShuffleFromAPerThreadLaneStaysPerThread) {
  try {
    broadcast_kernel(false);
    FAIL() << "accepted a loop bounded by a per-thread shuffle result in warp code";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0204", loop_line, "tests/test_library.cpp"));
    EXPECT_TRUE(testing::has_diag(e, "V0203", if_line, "tests/test_library.cpp"));
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
TEST(Library, AGridStrideLoopCoversEveryElementWithAnyNumberOfBlocks) {
  KernelBuilder k("add_index_strided");
  auto n = k.param<int>("n");
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  k.block_threads(64);
  k.body([&](Scope& g) { lib::grid_stride(g, y, n, [&](Scope&, Expr i, ElemRef yi) { yi = yi + i * 2; }); });
  Kernel kernel = k.build();
  for (int n : {1, 100, 1000, 4097})
    for (std::int64_t blocks : {std::int64_t{1}, std::int64_t{3}, lib::blocks_for(n, 64), lib::blocks_for(n, 64) + 2})
      for (const Device& d : devices()) {
        std::vector<int> y(static_cast<std::size_t>(n), 5), want(y);
        for (int i = 0; i < n; ++i) want[static_cast<std::size_t>(i)] += 2 * i;
        kernel.launch(d, Grid{blocks, 64}, n, y);
        EXPECT_EQ(y, want) << "n=" << n << " over " << blocks << " blocks on " << d.name();
      }
  std::string cuda = kernel.source(Spec{});
  EXPECT_NE(cuda.find("gridDim.x"), std::string::npos) << cuda;
  if (nvrtc_available()) {
    EXPECT_FALSE(kernel.cubin(Spec{}).empty());
  }
}

TEST(Library, TheGridsBlocksAreOneValueOfTheGrid) {
  // grid_blocks() may bound a loop at grid(1) and guard a block-wide barrier.
  KernelBuilder k("blocks_value");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    Var acc = g.let("acc", 0, at(thread(1)));
    g.for_("b", 0, g.grid_blocks(), [&](Scope& g, Expr) { g.assign(acc, acc + 1); });
    lib::for_each_block(g, out, [&](Scope& b, Expr, View out_b) {
      b.if_(b.grid_blocks() > 1, [&](Scope& b) { b.sync_threads(); });
      lib::store_by_one(b, out_b, 0, acc);
    });
  });
  Kernel kernel = k.build();
  for (const Device& d : devices()) {
    std::vector<int> got(5, -1);
    kernel.launch(d, Grid{5, 32}, got);
    EXPECT_EQ(got, std::vector<int>(5, 5)) << d.name();
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// stage_tile without a tile of the same shape: a 12 x 8 tile staged by 64 threads (two rounds, the
// second partial), then each thread copies its own element of the block's 8 x 8 tile from it.
TEST(Library, StageTileCopiesATileInRoundsWithZerosPastTheEdges) {
  KernelBuilder k("stage_copy");
  auto rows = k.param<int>("rows");
  auto cols = k.param<int>("cols");
  auto in = k.param<GlobalPtr<const float>>("in", extent(rows * cols));
  auto out = k.param<GlobalPtr<float>>("out", extent(rows * cols));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, out, rows, cols, 8, 8, [&](Scope& b, const lib::MatrixTile& c) {
      View s = b.shared<float>("s", 12 * 8);
      lib::stage_tile(b, s, in, rows, cols, c.row0, c.col0, 12, 8);
      lib::update_own(b, c, [&](Scope&, ElemRef e) { e = s[c.row * 8 + c.col] + s[(c.row + 4) * 8 + c.col]; });
    });
  });
  Kernel kernel = k.build();
  for (auto [R, C] : {std::pair{8, 8}, std::pair{13, 11}, std::pair{3, 20}}) {
    std::vector<float> x(static_cast<std::size_t>(R * C)), want(x.size());
    for (int i = 0; i < R * C; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) {
        // Row r + 4 of the staged tile is past the matrix (a zero) when it leaves the tile's block
        // of 8 rows' matrix rows: tile rows are row0 .. row0 + 11.
        int below = r + 4 < R ? static_cast<int>(x[static_cast<std::size_t>((r + 4) * C + c)]) : 0;
        want[static_cast<std::size_t>(r * C + c)] = x[static_cast<std::size_t>(r * C + c)] + static_cast<float>(below);
      }
    std::int64_t blocks = ((R + 7) / 8) * ((C + 7) / 8);
    for (const Device& d : devices()) {
      std::vector<float> got(x.size(), -1);
      kernel.launch(d, Grid{blocks, 64}, R, C, std::as_const(x), got);
      EXPECT_EQ(got, want) << R << " x " << C << " on " << d.name();
    }
  }
}

// examples::scan_tiled in the shapes the GPU's speed rows time (threads x items a thread, and with a
// sleep before each poll of the look-back): the inclusive sums at sizes the tiles do not divide, one
// of them past the look-back's window of 32 blocks, on every backend and under both thread orders of
// the interpreter.
TEST(Library, TheTiledScanIsRightInEveryShape) {
  for (auto [threads, items, backoff] :
       {std::tuple{64, 4, 0}, {128, 8, 0}, {512, 12, 0}, {256, 16, 0}, {64, 4, 650}, {128, 24, 650}}) {
    Kernel k = examples::scan_tiled(threads, items, "scan_tiled_shape", backoff);
    const int tile = threads * items;
    std::vector<int> sizes = {1, tile - 1, 3 * tile + 5};
    if (tile <= 256) sizes.push_back(33 * tile + 1);
    for (int n : sizes) {
      std::vector<int> x(static_cast<std::size_t>(n)), want(x.size());
      std::uint32_t sum = 0;
      for (int i = 0; i < n; ++i) {
        x[static_cast<std::size_t>(i)] = (i * 7919) % 201 - 100;
        sum += static_cast<std::uint32_t>(x[static_cast<std::size_t>(i)]);
        want[static_cast<std::size_t>(i)] = static_cast<int>(sum);
      }
      const int blocks = (n + tile - 1) / tile;
      for (const Device& d : devices()) {
        std::vector<int> y(x.size(), -1);
        std::vector<std::uint64_t> desc(static_cast<std::size_t>(blocks), 0);
        k.launch(d, Grid{blocks, threads}, n, std::as_const(x), y, desc);
        d.synchronize();
        EXPECT_EQ(y, want) << threads << " x " << items << ", sleeping " << backoff << " ns, n = " << n << " on "
                           << d.name();
      }
    }
  }
  EXPECT_THROW(examples::scan_tiled(96, 6), std::invalid_argument);           // items not a multiple of 4
  EXPECT_THROW(examples::scan_tiled(128, 8, "", -1), std::invalid_argument);  // a back-off below 0
  EXPECT_THROW(examples::scan_tiled(128, 8, "", kMaxNanosleepNs + 1), std::invalid_argument);  // over 1 ms
}

// lib::for_each_tile_grouped: every tile once, in the grouped order (block b of group b / (G * tiles
// per row) walks down the group's rows, column by column), with a last group of fewer rows, on every
// backend; groups of 0 rows are refused at the caller's line.
TEST(Library, GroupedTilesCoverEveryTileOnceInTheGroupedOrder) {
  constexpr int G = 3;
  KernelBuilder k("grouped_tiles");
  auto rows = k.param<int>("rows");
  auto cols = k.param<int>("cols");
  auto out = k.param<GlobalPtr<int>>("out", extent(rows * cols));
  k.block_threads(16);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    lib::for_each_tile_grouped(g, out, rows, cols, 4, 4, G, [&](Scope& b, const lib::MatrixTile& c) {
      lib::update_own(b, c, [&](Scope&, ElemRef e) { e = blk; });
    });
  });
  Kernel kernel = k.build();
  for (auto [R, C] : {std::pair{16, 16}, std::pair{30, 13}, std::pair{4, 9}, std::pair{50, 5}}) {
    const int tr = (R + 3) / 4, tc = (C + 3) / 4;
    std::vector<int> want(static_cast<std::size_t>(R * C), -1);
    for (int b = 0; b < tr * tc; ++b) {
      const int first = b / (G * tc) * G, in_group = std::min(tr - first, G), local = b % (G * tc);
      const int brow = first + local % in_group, bcol = local / in_group;
      for (int r = brow * 4; r < std::min(R, brow * 4 + 4); ++r)
        for (int c = bcol * 4; c < std::min(C, bcol * 4 + 4); ++c) {
          ASSERT_EQ(want[static_cast<std::size_t>(r * C + c)], -1) << "tile of block " << b << " taken twice";
          want[static_cast<std::size_t>(r * C + c)] = b;
        }
    }
    ASSERT_EQ(std::count(want.begin(), want.end(), -1), 0) << "a tile no block takes";
    for (const Device& d : devices()) {
      std::vector<int> got(want.size(), -1);
      kernel.launch(d, Grid{tr * tc, 16}, R, C, got);
      d.synchronize();
      EXPECT_EQ(got, want) << R << " x " << C << " on " << d.name();
    }
  }
  int line = 0;
  KernelBuilder bad("no_groups");
  auto o = bad.param<GlobalPtr<int>>("o", extent(64));
  bad.block_threads(16);
  bad.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::for_each_tile_grouped(g, o, 8, 8, 4, 4, 0, [&](Scope&, const lib::MatrixTile&) {});
  });
  try {
    bad.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0913", line, "tests/test_library.cpp")) << render_all(e.diagnostics());
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// lib::copy: one 16-byte vector per thread where it is whole, the tail element by element. The vector
// copy is proven (no check runs on it), and the result is exact at sizes around the tiles, for 4-byte
// and 8-byte elements, on every backend.
TEST(Library, CopyMovesWholeVectorsAndATailAndMatchesItsPrimitiveForm) {
  std::string lib_cuda = examples::vec_copy().source(Spec{}), prim_cuda = examples::vec_copy_primitive().source(Spec{});
  for (const std::string* cuda : {&lib_cuda, &prim_cuda}) {
    EXPECT_NE(cuda->find("*reinterpret_cast<float4*>(&out["), std::string::npos) << *cuda;
    EXPECT_EQ(cuda->find("vt_ld("), std::string::npos) << "a read is checked as it runs:\n" << *cuda;
  }
  KernelBuilder k("copy_f64");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const double>>("in", extent(n));
  auto out = k.param<GlobalPtr<double>>("out", extent(n));
  k.block_threads(64);
  k.body([&](Scope& g) { lib::copy(g, out, in, n); });
  Kernel kd = k.build();
  EXPECT_NE(kd.source(Spec{}).find("double2"), std::string::npos) << kd.source(Spec{});
  std::vector<Device> devices = {Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (int size : {1, 127, 128, 129, 1000}) {
    std::vector<double> x(static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i) x[static_cast<std::size_t>(i)] = i * 0.5 - 3;
    for (const Device& d : devices) {
      std::vector<double> y(static_cast<std::size_t>(size), -1);
      kd.launch(d, Grid{lib::blocks_for(size, 64, lib::Tile{2}), 64}, size, std::as_const(x), y);
      d.synchronize();
      EXPECT_EQ(y, x) << "n = " << size << " on " << d.name();
    }
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// The tile helpers refuse what they cannot do, at the caller's line.
TEST(Library, TileHelpersRefuseWhatTheyCannotDoAtTheCallersLine) {
  int async_line = 0, steps_line = 0, groups_line = 0, started_line = 0;
  KernelBuilder k("bad_tiles");
  auto m = k.param<GlobalPtr<const half>>("m", extent(64 * 64));
  auto out = k.param<GlobalPtr<half>>("out", extent(64 * 64));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, out, 64, 64, 16, 16, [&](Scope& b, const lib::MatrixTile& c) {
      auto s = b.shared<half>("s", 16 * 16);
      async_line = __LINE__ + 1;
      lib::copy_tile(b, s, m, 64, 64, c.row0, c.col0, 16, 16, {0, true});  // cp.async moves 4 or 8 bytes
      steps_line = __LINE__ + 1;
      lib::update_sub_tile(b, c, c.row, c.col, 1, 1, 0, 1, [&](Scope&, int, int, ElemRef e) { e = s[0]; });
      groups_line = __LINE__ + 1;  // two groups of 4 columns, 2 apart: they overlap
      lib::update_sub_tile(b, c, c.row, c.col, lib::SubTile{1, 8, 1, 1, 4, 2},
                           [&](Scope&, int, int, ElemRef e) { e = s[0]; });
      started_line = __LINE__ + 1;  // 16-byte copies of 2-byte elements
      lib::start_tile_copy(b, s, m, 64, 64, c.row0, c.col0, 16, 16);
    });
  });
  try {
    k.build();
    FAIL() << "accepted";
  } catch (const CheckError& e) {
    for (int line : {async_line, steps_line, groups_line, started_line})
      EXPECT_TRUE(testing::has_diag(e, "V0913", line, "tests/test_library.cpp")) << line << render_all(e.diagnostics());
  }
}

// lib::start_tile_copy starts the copies and leaves the waiting to the caller: a 16-byte cp.async
// per vector wholly inside a matrix whose rows are a multiple of 4 elements, element by element with
// zeros past the edges otherwise, for tiles of one and of several rounds of the block's threads, on
// every host device and at sizes the tiles do not divide.
TEST(Library, StartTileCopyCopiesTheTileAndZerosPastTheMatrix) {
  for (int tile_rows : {8, 16}) {  // 8 x 16: 32 vectors, one per thread; 16 x 16: two rounds
    KernelBuilder k("started_copy");
    auto R = k.param<int>("R"), C = k.param<int>("C"), col0 = k.param<int>("col0");
    auto m = k.param<GlobalPtr<const float>>("m", extent(R * C));
    auto out = k.param<GlobalPtr<float>>("out", extent(Expr(tile_rows * 16)));
    k.block_threads(32);
    k.body([&](Scope& g) {
      lib::for_each_block(g, out, tile_rows * 16, [&](Scope& b, Expr, View out_b) {
        auto s = b.shared<float>("s", tile_rows * 16);
        lib::start_tile_copy(b, s, m, R, C, 3, col0, tile_rows, 16);  // the tile at row 3
        b.group(thread(1), [&](Scope& th) {
          th.cp_async_commit();
          th.cp_async_wait(0);
        });
        auto t = b.let("t", b.id(thread(1)));
        b.partition(
            out_b, thread(1), [&](Expr i) { return t + i * 32; },
            [&](Scope& b, View mine) {
              b.group(thread(1), [&](Scope&) {
                for (int l = 0; l < tile_rows * 16 / 32; ++l) mine[l] = s[t + l * 32];
              });
            });
      });
    });
    Kernel kernel = k.build();
    // Rows of 24 (16-byte copies), of 22 (element by element), a matrix the tile runs past, and a
    // tile at a column that is no multiple of 4 (element by element: a vector there is misaligned).
    for (auto [rows, cols, c0] :
         std::vector<std::tuple<int, int, int>>{{40, 24, 4}, {40, 22, 4}, {9, 13, 4}, {40, 24, 2}})
      for (const Device& d : devices()) {
        std::vector<float> src(static_cast<std::size_t>(rows * cols));
        for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i + 1);
        std::vector<float> got(static_cast<std::size_t>(tile_rows * 16), -1.0f), want(got.size(), 0.0f);
        for (int r = 0; r < tile_rows; ++r)
          for (int c = 0; c < 16; ++c)
            if (3 + r < rows && c0 + c < cols)
              want[static_cast<std::size_t>(r * 16 + c)] = src[(3 + r) * cols + c0 + c];
        kernel.launch(d, Grid{1, 32}, rows, cols, c0, std::as_const(src), got);
        EXPECT_EQ(got, want) << tile_rows << " rows, " << rows << " x " << cols << " at column " << c0 << " on "
                             << d.name();
      }
  }
}

// A tile may start above or left of the matrix: a stencil's halo at the first row and column of
// tiles. Its rows and columns there are past the matrix's edges, zeros like those below and right of
// it. Each copying helper (stage_tile, copy_tile padded and by cp.async, start_tile_copy) copies a 9 x
// 12 tile at corners inside, astride each edge and wholly outside, on every host device, equal to the
// matrix read with zeros outside. Before, a row above the matrix read before its first element
// (memcheck) and a column left of it the row above's last elements (right in bounds, wrong).
TEST(Library, TileCopiesStartingAboveOrLeftOfTheMatrixReadZerosThere) {
  constexpr int TR = 9, TC = 12;
  enum class How { Stage, Padded, Async, Started };
  for (How how : {How::Stage, How::Padded, How::Async, How::Started}) {
    const int pad = how == How::Padded ? 3 : 0, stride = TC + pad;
    KernelBuilder k("halo_copy");
    auto R = k.param<int>("R"), C = k.param<int>("C"), row0 = k.param<int>("row0"), col0 = k.param<int>("col0");
    auto m = k.param<GlobalPtr<const float>>("m", extent(R * C));
    auto out = k.param<GlobalPtr<float>>("out", extent(Expr(TR * TC)));
    k.block_threads(32);
    k.body([&](Scope& g) {
      lib::for_each_block(g, out, TR * TC, [&](Scope& b, Expr, View out_b) {
        auto s = b.shared<float>("s", TR * stride);
        switch (how) {
          case How::Stage: lib::stage_tile(b, s, m, R, C, row0, col0, TR, TC); break;
          case How::Padded: lib::copy_tile(b, s, m, R, C, row0, col0, TR, TC, {.pad = pad}); break;
          case How::Async: lib::copy_tile(b, s, m, R, C, row0, col0, TR, TC, {.async = true}); break;
          case How::Started:
            lib::start_tile_copy(b, s, m, R, C, row0, col0, TR, TC);
            b.group(thread(1), [&](Scope& th) {
              th.cp_async_commit();
              th.cp_async_wait(0);
            });
            break;
        }
        auto t = b.let("t", b.id(thread(1)));
        b.partition(
            out_b, thread(1), [&](Expr i) { return t + i * 32; },
            [&](Scope& b, View mine) {
              b.group(thread(1), [&](Scope& th) {
                for (int l = 0; l * 32 < TR * TC; ++l) {
                  Expr e = t + l * 32;
                  th.if_(e < TR * TC, [&](Scope&) { mine[l] = s[e / TC * stride + e % TC]; });
                }
              });
            });
      });
    });
    Kernel kernel = k.build();
    const int rows = 20, cols = 24;  // rows of a multiple of 4: start_tile_copy's 16-byte copies
    std::vector<float> src(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i + 1);
    for (auto [r0, c0] : std::vector<std::pair<int, int>>{
             {0, 0}, {-1, -1}, {-1, 4}, {5, -1}, {-4, -8}, {-3, 2}, {15, 16}, {-9, 0}, {0, -12}, {-30, -30}})
      for (const Device& d : devices()) {
        std::vector<float> got(TR * TC, -1.0f), want(got.size(), 0.0f);
        for (int r = 0; r < TR; ++r)
          for (int c = 0; c < TC; ++c)
            if (r0 + r >= 0 && r0 + r < rows && c0 + c >= 0 && c0 + c < cols)
              want[static_cast<std::size_t>(r * TC + c)] = src[static_cast<std::size_t>((r0 + r) * cols + c0 + c)];
        kernel.launch(d, Grid{1, 32}, rows, cols, r0, c0, std::as_const(src), got);
        EXPECT_EQ(got, want) << "helper " << static_cast<int>(how) << ", tile at (" << r0 << ", " << c0 << ") on "
                             << d.name();
      }
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// The 16-bit fragments of mma_load_a / mma_load_b (m16n8k16): one warp computes C (16 x 8) = A (16 x
// 32) * B (32 x 8) in bf16 in two K steps, straight from global memory, on every host device, and
// NVRTC compiles it. Small integers make every product and sum exact.
TEST(Library, SixteenBitMmaFragmentsGiveTheProductOnEveryDevice) {
  KernelBuilder k("bf16_mma");
  auto A = k.param<GlobalPtr<const bfloat16>>("A", extent(16 * 32));
  auto B = k.param<GlobalPtr<const bfloat16>>("B", extent(32 * 8));
  auto C = k.param<GlobalPtr<float>>("C", extent(16 * 8));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each_block(g, C, 16 * 8, [&](Scope& b, Expr, View c) {
      auto lane = b.let("lane", b.id(thread(1)));
      View acc = b.local_array("acc", ScalarType::F32, 4, at(thread(1)));
      View fa = b.local_array("fa", ScalarType::BF16, 8, at(thread(1)));
      View fb = b.local_array("fb", ScalarType::BF16, 4, at(thread(1)));
      for (int e = 0; e < 4; ++e) acc[e] = 0.0f;
      b.group(warp(), [&](Scope& w) {
        for (int k0 = 0; k0 < 32; k0 += 16) {
          lib::mma_load_a(w, fa, A, 32, 0, k0);
          lib::mma_load_b(w, fb, B, 8, k0, 0);
          w.mma_sync(MmaKind::BF16_M16N8K16, acc, fa, fb, acc);
        }
      });
      b.partition(
          c, thread(1), [&](Expr i) { return (lane / 4 + i / 2 * 8) * 8 + lane % 4 * 2 + i % 2; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope&) {
              for (int e = 0; e < 4; ++e) mine[e] = acc[e];
            });
          });
    });
  });
  Kernel kernel = k.build();
  auto bf16 = [](float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bfloat16{static_cast<std::uint16_t>(bits >> 16)};
  };
  std::vector<bfloat16> a(16 * 32), b(32 * 8);
  std::vector<double> fa(a.size()), fb(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = bf16(static_cast<float>(fa[i] = static_cast<double>(i * 3 % 7) - 3));
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = bf16(static_cast<float>(fb[i] = static_cast<double>(i * 5 % 9) - 4));
  std::vector<float> want(16 * 8);
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 8; ++col) {
      double s = 0;
      for (int p = 0; p < 32; ++p)
        s += fa[static_cast<std::size_t>(r * 32 + p)] * fb[static_cast<std::size_t>(p * 8 + col)];
      want[static_cast<std::size_t>(r * 8 + col)] = static_cast<float>(s);
    }
  for (const Device& d : devices()) {
    std::vector<float> got(16 * 8, -1.0f);
    kernel.launch(d, Grid{1, 32}, std::as_const(a), std::as_const(b), got);
    EXPECT_EQ(got, want) << d.name();
  }
  if (nvrtc_available()) {
    Compiled compiled = compile(kernel, Spec{});
    EXPECT_EQ(compiled.log, "");
    EXPECT_NE(compiled.spec.source.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), std::string::npos);
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// The s8 fragments of mma_load_a / mma_load_b (m16n8k32, i32 sums): one warp computes C (16 x 8) +=
// A (16 x 64) * B (64 x 8) in two K steps straight from global memory, with every byte value from
// -128 to 127 among the inputs and C starting far from zero, on every host device; NVRTC compiles
// the mma; an f32 accumulator for the s8 shape is refused.
TEST(Library, EightBitIntegerMmaFragmentsGiveTheExactProductOnEveryDevice) {
  KernelBuilder k("s8_mma");
  auto A = k.param<GlobalPtr<const std::int8_t>>("A", extent(16 * 64));
  auto B = k.param<GlobalPtr<const std::int8_t>>("B", extent(64 * 8));
  auto C = k.param<GlobalPtr<int>>("C", extent(16 * 8));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each_block(g, C, 16 * 8, [&](Scope& b, Expr, View c) {
      auto lane = b.let("lane", b.id(thread(1)));
      auto place = [&](const Expr& i) { return (lane / 4 + i / 2 * 8) * 8 + lane % 4 * 2 + i % 2; };
      View acc = b.local_array("acc", ScalarType::I32, 4, at(thread(1)));
      View fa = b.local_array("fa", ScalarType::I8, 16, at(thread(1)));
      View fb = b.local_array("fb", ScalarType::I8, 8, at(thread(1)));
      for (int e = 0; e < 4; ++e) acc[e] = 1000000000 + place(e);
      b.group(warp(), [&](Scope& w) {
        for (int k0 = 0; k0 < 64; k0 += 32) {
          lib::mma_load_a(w, fa, A, 64, 0, k0);
          lib::mma_load_b(w, fb, B, 8, k0, 0);
          w.mma_sync(MmaKind::S8_M16N8K32, acc, fa, fb, acc);
        }
      });
      b.partition(c, thread(1), place, [&](Scope& b, View mine) {
        b.group(thread(1), [&](Scope&) {
          for (int e = 0; e < 4; ++e) mine[e] = acc[e];
        });
      });
    });
  });
  Kernel kernel = k.build();
  std::vector<std::int8_t> a(16 * 64), b(64 * 8);
  // Every row of A and of B differs from every other (a layout that mixes rows up shows).
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<std::int8_t>(static_cast<int>((i * 37 + i / 64) % 256) - 128);
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<std::int8_t>(static_cast<int>((i * 101 + i / 8 * 3) % 256) - 128);
  std::vector<int> want(16 * 8);
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 8; ++col) {
      long long s = 1000000000 + r * 8 + col;
      for (int p = 0; p < 64; ++p)
        s += a[static_cast<std::size_t>(r * 64 + p)] * b[static_cast<std::size_t>(p * 8 + col)];
      want[static_cast<std::size_t>(r * 8 + col)] = static_cast<int>(s);
    }
  for (const Device& d : devices()) {
    std::vector<int> got(16 * 8, -1);
    kernel.launch(d, Grid{1, 32}, std::as_const(a), std::as_const(b), got);
    EXPECT_EQ(got, want) << d.name();
  }
  if (nvrtc_available()) {
    Compiled compiled = compile(kernel, Spec{});
    EXPECT_EQ(compiled.log, "");
  }
  const std::string src = specialize_for(kernel, Spec{}).source;
  EXPECT_NE(src.find("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"), std::string::npos) << src;
  EXPECT_NE(src.find("alignas(4) signed char fa[16]"), std::string::npos) << src;
  // An f32 accumulator for the s8 shape, at the user's line.
  int line = 0;
  KernelBuilder r("s8_mma_f32_acc");
  r.block_threads(32);
  r.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      View acc = b.local_array("acc", ScalarType::F32, 4, at(thread(1)));
      View fa = b.local_array("fa", ScalarType::I8, 16, at(thread(1)));
      View fb = b.local_array("fb", ScalarType::I8, 8, at(thread(1)));
      b.group(warp(), [&](Scope& w) { line = __LINE__, w.mma_sync(MmaKind::S8_M16N8K32, acc, fa, fb, acc); });
    });
  });
  EXPECT_TRUE(testing::rejected_saying(r, "V0503", line, "tests/test_library.cpp", "i32"));
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
/// y[r][c] = x[r][c] * 1000 + (the sum of row r of x), rows of `cols` elements known only at run time:
/// lib::for_each_row hands block r its row of y, block_strided reads the row, block_reduce sums it,
/// and lib::block_for_each hands each thread its elements of the row.
Kernel row_kernel(int threads) {
  KernelBuilder k("rows_" + std::to_string(threads));
  auto rows = k.param<int>("rows");
  auto cols = k.param<int>("cols");
  auto x = k.param<GlobalPtr<const int>>("x", extent(rows * cols));
  auto y = k.param<GlobalPtr<int>>("y", extent(rows * cols));
  k.block_threads(threads);
  k.body([&](Scope& g) {
    lib::for_each_row(g, y, rows, cols, [&](Scope& b, Expr row, View y_row) {
      auto s = b.let("s", 0, at(thread(1)));
      lib::block_strided(b, 0, cols, [&](Scope& th, Expr c) { th.assign(s, s + x[row * cols + c]); });
      Var total = lib::block_reduce(b, "total", s, lib::Op::Sum);
      lib::block_for_each(b, y_row, cols, [&](Scope&, Expr c, ElemRef e) { e = x[row * cols + c] * 1000 + total; });
    });
  });
  return k.build();
}

// Issue 38's helper for outputs of run-time length: each row's elements reach every thread of its
// block, below the row's length only, at lengths of none, one, fewer than a block, a block less one, a
// block and several blocks and a part, with blocks past the last row left idle; every access is proven
// at 256 threads (no check runs; at 96, the last round's are checked as they run), on every host device.
TEST(Library, RowsOfARunTimeLengthGoToABlockEachAndTheirElementsToItsThreads) {
  for (int threads : {96, 256}) {
    Kernel kernel = row_kernel(threads);
    if (threads == 256)  // a power of two: the last round's t + (n / T) * T fits an i32 for every n
      EXPECT_EQ(kernel.lowered(Spec{}).find(" if <"), std::string::npos) << "a checked access:\n"
                                                                         << kernel.lowered(Spec{});
    for (int cols : {0, 1, 7, threads - 1, threads, 3 * threads + 5})
      for (const Device& d : devices()) {
        const int rows = 3;
        std::vector<int> x(static_cast<std::size_t>(rows * cols));
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int>(i * 37 % 19) - 9;
        std::vector<int> want(x.size()), got(x.size(), -1);
        for (int r = 0; r < rows; ++r) {
          int sum = 0;
          for (int c = 0; c < cols; ++c) sum += x[static_cast<std::size_t>(r * cols + c)];
          for (int c = 0; c < cols; ++c)
            want[static_cast<std::size_t>(r * cols + c)] = x[static_cast<std::size_t>(r * cols + c)] * 1000 + sum;
        }
        kernel.launch(d, Grid{rows + 2, threads}, rows, cols, std::as_const(x), got);  // two idle blocks
        EXPECT_EQ(got, want) << threads << " threads, rows of " << cols << " on " << d.name();
      }
  }
}

/// Whether building `k` fails with V0303 whose message names `helper`.
::testing::AssertionResult rejected_naming(KernelBuilder& k, const std::string& helper) {
  try {
    k.build();
    return ::testing::AssertionFailure() << "accepted";
  } catch (const CheckError& e) {
    const std::string all = testing::describe(e.diagnostics());
    if (e.has("V0303") && all.find(helper) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << all;
  }
}

// Called from the wrong perspective, each is refused at the caller's line: the rows from a block's
// code (they are the grid's to hand out), a block's elements from the grid's.
TEST(Library, RowHelpersFromTheWrongPerspectiveAreRefusedAtTheCallersLine) {
  {
    KernelBuilder k("rows_in_block");
    auto n = k.param<int>("n");
    auto y = k.param<GlobalPtr<int>>("y", extent(n * n));
    k.block_threads(64);
    int line = 0;
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        line = __LINE__ + 1;
        lib::for_each_row(b, y, n, n, [&](Scope& b, Expr, View y_row) {  // b is a block, not the grid
          lib::block_for_each(b, y_row, n, [&](Scope&, Expr, ElemRef e) { e = 1; });
        });
      });
    });
    EXPECT_TRUE(testing::rejected_at(k, line));
    EXPECT_TRUE(rejected_naming(k, "lib::for_each_row"));
  }
  {
    KernelBuilder k("elements_in_grid");
    auto n = k.param<int>("n");
    auto y = k.param<GlobalPtr<int>>("y", extent(n));
    k.block_threads(64);
    int line = 0;
    k.body([&](Scope& g) {
      line = __LINE__ + 1;
      lib::block_for_each(g, y, n, [&](Scope&, Expr, ElemRef e) { e = 1; });  // g is the grid, not a block
    });
    EXPECT_TRUE(testing::rejected_at(k, line));
    EXPECT_TRUE(rejected_naming(k, "lib::block_for_each"));
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// A helper that numbers its elements with i32, given a count of another type, is V0913 at the caller's
// line naming the helper and the argument; it was a V0701 at a line inside the library (the mismatch
// of its own i32 index with the i64 count).
TEST(Library, ACountThatIsNotAnI32IsRefusedAtTheCallersLineNamingTheHelper) {
  using Call = std::function<void(KernelBuilder&, Expr n, int& line)>;
  const std::vector<std::pair<std::string, Call>> calls = {
      {"lib::for_each numbers its elements with i32, so its n must be an i32, not i64",
       [](KernelBuilder& k, Expr n, int& line) {
         auto y = k.param<GlobalPtr<float>>("y", extent(n));
         k.body([&](Scope& g) {
           line = __LINE__ + 1;
           lib::for_each(g, y, n, [&](Scope&, Expr, ElemRef e) { e = 1.0f; });
         });
       }},
      {"lib::grid_stride numbers its elements with i32, so its n must be an i32",
       [](KernelBuilder& k, Expr n, int& line) {
         auto y = k.param<GlobalPtr<float>>("y", extent(n));
         k.body([&](Scope& g) {
           line = __LINE__ + 1;
           lib::grid_stride(g, y, n, [&](Scope&, Expr, ElemRef e) { e = 1.0f; });
         });
       }},
      {"lib::for_each_tile numbers its elements with i32, so its rows must be an i32",
       [](KernelBuilder& k, Expr n, int& line) {
         auto y = k.param<GlobalPtr<float>>("y", extent(n * n));
         k.body([&](Scope& g) {
           line = __LINE__ + 1;
           lib::for_each_tile(g, y, n, n, 8, 16, [&](Scope& b, const lib::MatrixTile& t) {
             lib::update_own(b, t, [&](Scope&, ElemRef e) { e = 1.0f; });
           });
         });
       }},
      {"lib::for_each_row numbers its elements with i32, so its cols must be an i32",
       [](KernelBuilder& k, Expr n, int& line) {
         auto rows = k.param<int>("rows");
         auto y = k.param<GlobalPtr<float>>("y", extent(cast<std::int64_t>(rows) * n));
         k.body([&](Scope& g) {
           line = __LINE__ + 1;
           lib::for_each_row(g, y, rows, n, [&](Scope&, Expr, View) {});
         });
       }},
      {"lib::block_store numbers its elements with i32, so its valid must be an i32",
       [](KernelBuilder& k, Expr n, int& line) {
         auto y = k.param<GlobalPtr<float>>("y", extent(Expr(128)));
         k.body([&](Scope& g) {
           lib::for_each_block(g, y, 128, [&](Scope& b, Expr, View y_b) {
             line = __LINE__ + 1;
             lib::block_store(b, y_b, n, 1.0f);
           });
         });
       }},
      {"lib::block_for_each numbers its elements with i32, so its n must be an i32",
       [](KernelBuilder& k, Expr n, int& line) {
         auto y = k.param<GlobalPtr<float>>("y", extent(Expr(128)));
         k.body([&](Scope& g) {
           lib::for_each_block(g, y, 128, [&](Scope& b, Expr, View y_b) {
             line = __LINE__ + 1;
             lib::block_for_each(b, y_b, n, [&](Scope&, Expr, ElemRef e) { e = 1.0f; });
           });
         });
       }},
  };
  for (const auto& [message, call] : calls) {
    KernelBuilder k("wide_count");
    auto n = k.param<std::int64_t>("n");
    k.block_threads(128);
    int line = 0;
    call(k, n, line);
    try {
      k.build();
      ADD_FAILURE() << "accepted: " << message;
    } catch (const CheckError& e) {
      EXPECT_TRUE(testing::has_diag(e, "V0913", line, "tests/test_library.cpp")) << render_all(e.diagnostics());
      EXPECT_NE(testing::describe(e.diagnostics()).find(message), std::string::npos) << render_all(e.diagnostics());
      EXPECT_FALSE(e.has("V0701")) << render_all(e.diagnostics());
    }
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// A scan's identity of another type than its values is V0913 at the caller's line, naming the helper
// and both types (it was a V0701 inside the library); a C++ number converts, so `0` is the identity of
// a float sum (it too failed inside the library) and the scan is right on every host device. The
// same for read_below's index and count.
TEST(Library, AnIdentityOrCountOfAnotherTypeIsRefusedAtTheCallersLineAndANumberConverts) {
  using Call = std::function<void(Scope & b, View out, int& line)>;
  const std::vector<std::pair<std::string, Call>> calls = {
      {"lib::block_exclusive_scan's identity is f64, its values i32",
       [](Scope& b, View, int& line) {
         line = __LINE__ + 1;
         lib::block_exclusive_scan(b, "s", b.id(thread(1)), lib::Op::Sum, 0.5);
       }},
      {"lib::block_exclusive_scan's identity is i64, its values i32",
       [](Scope& b, View, int& line) {
         line = __LINE__ + 1;
         lib::block_exclusive_scan(b, "s", b.id(thread(1)), lib::combiner(lib::Op::Max), cast<std::int64_t>(0));
       }},
      {"lib::warp_exclusive_scan's identity is f32, its values i32",
       [](Scope& b, View, int& line) {
         b.group(warp(), [&](Scope& w) {
           line = __LINE__ + 1;
           lib::warp_exclusive_scan(w, "s", w.id(thread(1)), lib::Op::Sum, 0.0f);
         });
       }},
      {"lib::read_below's index is i32 and its count i64",
       [](Scope& b, View out, int& line) {
         line = __LINE__ + 1;
         lib::read_below(b, "v", out, b.id(thread(1)), cast<std::int64_t>(64), 0.0f);
       }},
  };
  for (const auto& [message, call] : calls) {
    KernelBuilder k("identity_type");
    auto y = k.param<GlobalPtr<float>>("y", extent(Expr(64)));
    k.block_threads(64);
    int line = 0;
    k.body([&](Scope& g) { lib::for_each_block(g, y, 64, [&](Scope& b, Expr, View y_b) { call(b, y_b, line); }); });
    try {
      k.build();
      ADD_FAILURE() << "accepted: " << message;
    } catch (const CheckError& e) {
      EXPECT_TRUE(testing::has_diag(e, "V0913", line, "tests/test_library.cpp")) << render_all(e.diagnostics());
      EXPECT_NE(testing::describe(e.diagnostics()).find(message), std::string::npos) << render_all(e.diagnostics());
      EXPECT_FALSE(e.has("V0701")) << render_all(e.diagnostics());
    }
  }
  // `0` as the identity of a float sum: each thread gets the sum of the values before it.
  KernelBuilder k("float_exclusive_scan");
  auto x = k.param<GlobalPtr<const float>>("x", extent(Expr(96)));
  auto y = k.param<GlobalPtr<float>>("y", extent(Expr(96)));
  k.block_threads(96);
  k.body([&](Scope& g) {
    lib::for_each_block(g, y, 96, [&](Scope& b, Expr, View y_b) {
      Var s = lib::block_exclusive_scan(b, "s", x[b.id(thread(1))], lib::Op::Sum, 0);
      lib::block_store(b, y_b, 96, s);
    });
  });
  Kernel kernel = k.build();
  std::vector<float> in(96), want(96);
  for (int i = 0; i < 96; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(i % 7 - 3);
  for (int i = 1; i < 96; ++i)
    want[static_cast<std::size_t>(i)] = want[static_cast<std::size_t>(i - 1)] + in[static_cast<std::size_t>(i - 1)];
  for (const Device& d : devices()) {
    std::vector<float> got(96, -1.0f);
    kernel.launch(d, Grid{1, 96}, std::as_const(in), got);
    EXPECT_EQ(got, want) << d.name();
  }
}
}  // namespace
}  // namespace vantage
