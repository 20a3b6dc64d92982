// Small Hopper kernels the tests share: a TMA box copied out through an mbarrier, a warpgroup's
// wgmma on tiles its threads wrote, and tiles stored by TMA.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "vantage/vantage.hpp"

namespace vantage::testing {

/// An f32 as bf16 by dropping its low 16 bits: exact for the quarters the GEMM inputs use.
inline bfloat16 bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bfloat16{static_cast<std::uint16_t>(bits >> 16)};
}

/// A bf16 GEMM's inputs and its result.
struct Gemm {
  std::vector<bfloat16> A, Bt;
  std::vector<float> want;
};

/// A (M x K) and Bt (N x K) of quarters in [-1, 1], and C = A * Bt^T: every product and sum is exact
/// in f32, in any order.
inline Gemm gemm_inputs(int K, int M = 64, int N = 64) {
  Gemm g;
  auto quarter = [](std::size_t i, int a, int b) {
    return static_cast<float>((static_cast<int>(i) * a + b) % 9 - 4) / 4;
  };
  std::vector<float> fa(static_cast<std::size_t>(M * K)), fb(static_cast<std::size_t>(N * K));
  for (std::size_t i = 0; i < fa.size(); ++i) g.A.push_back(bf16(fa[i] = quarter(i, 7, 3)));
  for (std::size_t i = 0; i < fb.size(); ++i) g.Bt.push_back(bf16(fb[i] = quarter(i, 5, 6)));
  g.want.assign(static_cast<std::size_t>(M * N), 0.0f);
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double s = 0;
      for (int p = 0; p < K; ++p)
        s += static_cast<double>(fa[static_cast<std::size_t>(r * K + p)]) * fb[static_cast<std::size_t>(c * K + p)];
      g.want[static_cast<std::size_t>(r * N + c)] = static_cast<float>(s);
    }
  return g;
}

/// One block of `threads` threads: thread 0 loads the 8 x 32 f32 box at (0, 0) of the n x 32 matrix
/// `src` (parameters n, src, out) by TMA into a 1024-aligned tile; every thread waits on the
/// mbarrier and writes element t of the tile (the box as the 128-byte swizzle lays it) to out[t].
inline Kernel tma_box_copy(int threads) {
  KernelBuilder kb("tma_box_copy");
  auto n = kb.param<int>("n");
  auto src = kb.param<GlobalPtr<const float>>("src");
  auto out = kb.param<GlobalPtr<float>>("out", extent(threads));
  kb.block_threads(threads);
  TensorMap map = kb.tensor_map("src_map", src, n, 32, 8, 32);
  kb.body([&](Scope& g) {
    lib::for_each_block(g, out, threads, [&](Scope& b, Expr, View out_b) {
      View tile = b.shared_aligned("tile", ScalarType::F32, 8 * 32, 1024);
      View bar = b.shared<std::uint64_t>("bar", 1);
      b.split(Level::Thread, {{1, [&](Scope& th) {
                                 th.mbarrier_init(bar, 0, 1);
                                 th.mbarrier_arrive_expect_tx(bar, 0, map.box_bytes());
                                 th.tma_load(tile, 0, map, 0, 0, bar, 0);
                               }}});
      b.mbarrier_wait(bar, 0, 0);
      auto t = b.let("t", b.id(thread(1)));
      lib::block_store(b, out_b, threads, tile[t]);
    });
  });
  return kb.build();
}

/// One warpgroup fills two 1024-aligned 64 x 64 bf16 tiles with plain stores (element k of a row:
/// k % 4 - 1.5), then runs one m64n64k16 wgmma on them; thread t writes acc[0] + acc[31] (each
/// 4 * (2.25 + 0.25 + 0.25 + 2.25) = 20) to out[t]. `wait` false leaves the wgmma_wait until after
/// that read.
inline Kernel fill_then_wgmma(bool wait = true) {
  KernelBuilder k("fill_then_wgmma");
  auto out = k.param<GlobalPtr<float>>("out", extent(128));
  k.block_threads(128);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View out_b) {
      View a = b.shared_aligned("a", ScalarType::BF16, 64 * 64, 1024);
      View bt = b.shared_aligned("bt", ScalarType::BF16, 64 * 64, 1024);
      auto t = b.let("t", b.id(thread(1)));
      for (const View* tile : {&a, &bt})
        b.partition(
            *tile, thread(1), [&](Expr i) { return t * 32 + i; },
            [&](Scope& b, View mine) {
              b.group(thread(1), [&](Scope& th) {
                th.for_("i", 0, 32, [&](Scope&, Expr i) { mine[i] = cast<bfloat16>(cast<float>(i % 4) - 1.5f); });
              });
            });
      View acc = b.local_array("acc", ScalarType::F32, 32, at(thread(1)));
      for (int i = 0; i < 32; ++i) acc[i] = 0.0f;
      b.group(warpgroup(), [&](Scope& w) {
        w.wgmma_fence();
        w.wgmma(64, acc, a, 0, bt, 0);
        w.wgmma_commit();
        if (wait) w.wgmma_wait(0);
      });
      lib::block_store(b, out_b, 128, acc[0] + acc[31]);
      if (!wait) b.group(warpgroup(), [&](Scope& w) { w.wgmma_wait(0); });
    });
  });
  return k.build();
}

/// How the storing thread of tma_store_tiles ends: it waits for its store; it does not; every thread
/// writes the source again first (before the wait), then it waits; or thread 1, which stored nothing,
/// waits, and every thread writes the source again.
enum class StoreEnd { Wait, NoWait, Rewrite, OtherThreadWaits };

/// Tiles of 8 x 32 f32, one 128-thread block each, of the rows x cols matrix `out` (parameters rows,
/// cols, out): each thread writes two elements of its tile, (r, c) of the matrix as r * 1000 + c,
/// into a 1024-aligned array in the 128-byte swizzle, and one thread stores the array to the tile
/// by TMA (past the matrix, nothing is written).
inline Kernel tma_store_tiles(StoreEnd end = StoreEnd::Wait) {
  KernelBuilder kb("tma_store_tiles");
  auto rows = kb.param<int>("rows");
  auto cols = kb.param<int>("cols");
  auto out = kb.param<GlobalPtr<float>>("out", extent(rows * cols));
  kb.block_threads(128);
  TensorMap map = kb.tensor_map("out_map", out, rows, cols, 8, 32);
  kb.body([&](Scope& g) {
    lib::for_each_tile(g, out, rows, cols, 8, 32, [&](Scope& b, const lib::MatrixTile& tile) {
      View stage = b.shared_aligned("stage", ScalarType::F32, 8 * 32, 1024);
      const Expr& t = tile.thread;
      // Element e of the tile (row e / 32, column e % 32): its 16-byte chunk moved by the row.
      auto swizzled = [](const Expr& e) { return e / 32 * 32 + ((e % 32 / 4) ^ (e / 32 % 8)) * 4 + e % 4; };
      auto fill = [&](Scope& b, int pass) {
        b.partition(
            stage, thread(1), [&](Expr i) { return swizzled(t * 2 + i); },
            [&](Scope& b, View mine) {
              b.group(thread(1), [&](Scope&) {
                for (int i = 0; i < 2; ++i) {
                  Expr e = t * 2 + i;
                  mine[i] = cast<float>((tile.row0 + e / 32) * 1000 + tile.col0 + e % 32 + pass);
                }
              });
            });
      };
      fill(b, 0);
      lib::by_one_thread(b, tile.view, [&](Scope& one, View mine) {
        one.tma_store(map, stage, 0, mine, 0);
        if (end == StoreEnd::Wait) one.tma_store_wait(0);
      });
      if (end == StoreEnd::Rewrite) {
        fill(b, 1);
        lib::by_one_thread(b, [&](Scope& one) { one.tma_store_wait(0); });
      }
      if (end == StoreEnd::OtherThreadWaits) {
        b.split(Level::Thread, {{1, [](Scope&) {}}, {1, [](Scope& second) { second.tma_store_wait(0); }}});
        fill(b, 1);
      }
    });
  });
  return kb.build();
}

}  // namespace vantage::testing
