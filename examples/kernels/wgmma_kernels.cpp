// Vantage example kernels: the bf16 wgmma GEMMs for Hopper (TMA, an mbarrier pipeline, warp
// specialization) and their rungs: wider tiles, a wgmma group in flight, a TMA-store epilogue, a
// persistent kernel, and clusters of two blocks sharing each Bt tile by multicast; and the int8 GEMM,
// the wide rung on bytes. See paper_kernels.hpp.
#include <stdexcept>
#include <string>

#include "kernels/paper_kernels.hpp"

namespace vantage::examples {

// C (f32, M x N) = A (bf16, M x K) * Bt^T (Bt: bf16, N x K), both operands K-major as wgmma reads
// them. 128 x BN tiles of C, 64-deep K steps, 4 pipeline slots. Warpgroups 0 and 1 consume (64 rows
// of C each, four m64nBNk16 wgmma per step, BN / 2 accumulators a thread); warpgroup 2 produces (one
// thread issues the TMA loads). The slots are a loop: slot s = step % 4 is used in round step / 4,
// whose parity the waits name. BN is 128 (rung 1) or 256 (rung 2: a quarter fewer tile loads per
// product). With `in_flight` 1 a consumer keeps one step's wgmma group running while it waits for
// the next slot and issues the next step's: after the step's commit it waits for all but that group
// and frees the slot the step before read (wgmma_wait(1)), where 0 waits for the step's own and
// frees its slot.
namespace {
constexpr int kWgBM = 128, kWgStages = 4;

/// What a GEMM multiplies: bf16 into f32 accumulators, or bytes into s32 (wgmma's integer form; A's
/// `in` and Bt's `in_b` each i8 or u8). A K step is one 128-byte row of each tile (`bk` elements: 64
/// bf16 or 128 bytes), four wgmma of 32 bytes each (`kstep` elements).
struct WgmmaElem {
  ScalarType in, acc;
  int bk, kstep;
  ScalarType in_b = in;
};
constexpr WgmmaElem kBf16{ScalarType::BF16, ScalarType::F32, 64, 16, ScalarType::BF16};
constexpr WgmmaElem kInt8{ScalarType::I8, ScalarType::I32, 128, 32, ScalarType::I8};
constexpr WgmmaElem kUint8Int8{ScalarType::U8, ScalarType::I32, 128, 32, ScalarType::I8};

/// The TMA-store epilogue's chunks of C: 64 rows (a consumer warpgroup's) by 32 columns (one
/// 128-byte row of f32), two buffers a warpgroup.
constexpr int kChunkCols = 32, kChunk = 64 * kChunkCols;

/// The bf16 GEMMs' parameters, requirements, shared budget and tensor maps (C's for a TMA-store
/// epilogue: its buffers are in the budget).
struct WgmmaGemm {
  Expr M, N, K;
  View C;
  TensorMap a_map, b_map, c_map;
  WgmmaElem e;
};
WgmmaGemm wgmma_gemm_params(KernelBuilder& k, int BN, bool tma_store = false, int cluster = 1,
                            const WgmmaElem& e = kBf16) {
  auto M = k.param<int>("M", specialize);
  auto N = k.param<int>("N", specialize);
  auto K = k.param<int>("K", specialize);
  const bool bf16 = e.in == ScalarType::BF16;
  auto operand = [&](ScalarType t, const char* name, const Expr& count) {
    if (t == ScalarType::BF16) return View(k.param<GlobalPtr<const bfloat16>>(name, extent(count)));
    if (t == ScalarType::U8) return View(k.param<GlobalPtr<const std::uint8_t>>(name, extent(count)));
    return View(k.param<GlobalPtr<const std::int8_t>>(name, extent(count)));
  };
  View A = operand(e.in, "A", M * K), Bt = operand(e.in_b, "Bt", N * K);
  View C =
      bf16 ? View(k.param<GlobalPtr<float>>("C", extent(M * N))) : View(k.param<GlobalPtr<int>>("C", extent(M * N)));
  const int bk = e.bk;
  k.require(M % kWgBM == 0 && N % BN == 0 && K % bk == 0);
  k.block_threads(384);
  // The tiles (rows of 128 bytes), up to 1024 bytes kept to align them, the barriers; and C's
  // buffers, 1024-aligned after.
  k.shared_budget(kWgStages * (kWgBM + BN) * 128 + 1024 + 64 + (tma_store ? 1024 + 2 * 2 * kChunk * 4 : 0));
  TensorMap a_map = k.tensor_map("A_map", A, M, K, kWgBM, bk);
  // In a cluster each block loads its part of the Bt tile for all of them.
  TensorMap b_map = k.tensor_map("Bt_map", Bt, N, K, BN / cluster, bk);
  TensorMap c_map = tma_store ? k.tensor_map("C_map", C, M, N, 64, kChunkCols) : TensorMap{};
  return {M, N, K, C, a_map, b_map, c_map, e};
}

/// A block's pipeline: 4 slots of A and B tiles and an mbarrier of each kind a slot.
struct WgmmaPipeline {
  View As, Bs, full, empty;
  int BN;
  int cluster = 1;  ///< blocks sharing each Bt tile (a cluster's; 1: none)
  WgmmaElem e = kBf16;
};
WgmmaPipeline wgmma_pipeline(Scope& b, int BN, int cluster = 1, const WgmmaElem& e = kBf16) {
  View As = b.shared_aligned("As", e.in, kWgStages * kWgBM * e.bk, 1024);
  View Bs = b.shared_aligned("Bs", e.in_b, kWgStages * BN * e.bk, 1024);
  View full = b.shared<std::uint64_t>("full", kWgStages);    // slot s holds data: TMA completes it
  View empty = b.shared<std::uint64_t>("empty", kWgStages);  // slot s is free: the consumers arrive
  return {As, Bs, full, empty, BN, cluster, e};
}
void init_pipeline(Scope& b, const WgmmaPipeline& p) {
  // Alone, each of the 256 consumer threads frees a slot; in a cluster, lane 0 of each consumer warp
  // of each block (8 warps a block), in every block.
  b.split(Level::Thread, {{1, [&](Scope& th) {
                             th.for_("s", 0, kWgStages, [&](Scope& th, Expr s) {
                               th.mbarrier_init(p.full, s, 1);
                               th.mbarrier_init(p.empty, s, p.cluster > 1 ? 8 * p.cluster : 256);
                             });
                           }}});
}

/// A consumer warpgroup frees slot `s` (its wgmma have read it). In a cluster the other blocks'
/// producers load into it too: lane 0 of each warp arrives at the slot's `empty` in every block of
/// the cluster, once the warp's lanes have all waited for their wgmma (sync_warp).
void free_slot(Scope& w, const WgmmaPipeline& p, const Expr& s) {
  if (p.cluster == 1) return w.mbarrier_arrive(p.empty, s);
  w.group(warp(), [&](Scope& wp) {
    wp.sync_warp();
    lib::by_one_thread(wp, [&](Scope& one) {
      for (int r = 0; r < p.cluster; ++r) one.mbarrier_arrive_cluster(p.empty, s, r);
    });
  });
}

/// Consumer warpgroup wg's K step `step` of the pipeline (`kt`: the step within its tile): wait for
/// the slot, four wgmma into `acc`, and free a slot.
void consume_step(Scope& w, const WgmmaPipeline& p, int wg, const View& acc, const Expr& step, const Expr& kt,
                  int in_flight) {
  const int BN = p.BN, bk = p.e.bk, ks = p.e.kstep;
  auto s = w.let("s", step % kWgStages), round = w.let("round", step / kWgStages);
  w.mbarrier_wait(p.full, s, round % 2);
  w.wgmma_fence();
  for (int kk = 0; kk < bk / ks; ++kk)
    w.wgmma(BN, acc, p.As, s * (kWgBM * bk) + wg * (64 * bk) + kk * ks, p.Bs, s * (BN * bk) + kk * ks);
  w.wgmma_commit();
  if (in_flight == 0) {
    w.wgmma_wait(0);
    free_slot(w, p, s);
  } else {
    w.wgmma_wait(1);
    w.if_(kt > 0, [&](Scope& w) { free_slot(w, p, (step + kWgStages - 1) % kWgStages); });
  }
}

/// The producer's K step `step` (`kt`: the step within the tile at row0, col0): wait for the slot's
/// previous round to be consumed, announce its bytes, load both tiles. In a cluster (`rank`: the
/// block's) it loads its part of the Bt tile into every block of the cluster, and the slot's `full`
/// expects every block's part.
void produce_step(Scope& th, const WgmmaPipeline& p, const WgmmaGemm& g, const Expr& step, const Expr& kt,
                  const ExprArg& row0, const ExprArg& col0, const Expr* rank = nullptr) {
  const int bk = p.e.bk;
  auto s = th.let("s", step % kWgStages);
  auto round = th.let("round", step / kWgStages);
  th.if_(step >= kWgStages, [&](Scope& th) { th.mbarrier_wait(p.empty, s, (round - 1) % 2); });
  th.mbarrier_arrive_expect_tx(p.full, s, g.a_map.box_bytes() + p.cluster * g.b_map.box_bytes());
  th.tma_load(p.As, s * (kWgBM * bk), g.a_map, row0, kt * bk, p.full, s);
  if (!rank) return th.tma_load(p.Bs, s * (p.BN * bk), g.b_map, col0, kt * bk, p.full, s);
  const int part = p.BN / p.cluster;  // Bt rows a block loads
  th.tma_load_multicast(p.Bs, s * (p.BN * bk) + *rank * (part * bk), g.b_map, col0.expr + *rank * part, kt * bk, p.full,
                        s, (1 << p.cluster) - 1);
}

/// The block's roles: warpgroups 0 and 1 consume (`consume(w, wg)`), one thread of warpgroup 2,
/// its registers lowered to 40, produces.
void split_roles(Scope& b, const std::function<void(Scope&, int)>& consume,
                 const std::function<void(Scope&)>& produce) {
  b.split(Level::Thread, {{128, [&](Scope& w) { consume(w, 0); }},
                          {128, [&](Scope& w) { consume(w, 1); }},
                          {128, [&](Scope& producer) {
                             producer.setmaxnreg(40, false);
                             producer.split(Level::Thread, {{1, produce}});
                           }}});
}

/// Rung 2's block with a TMA-store epilogue: consumer warpgroup wg owns rows wg * 64.. of the tile
/// (and its two buffers of Cs); after its K steps it stores its 64 x 256 of C in 8 chunks of 64 x
/// 32, alternating buffers: its threads write the chunk's accumulators into the buffer in the 128-byte
/// swizzle, and its thread 0 stores the buffer by TMA, first waiting until the store two chunks back
/// has read it (tma_store_wait(1)). Vantage places the warpgroup's barriers, fenced from the TMA unit.
void tma_store_epilogue(Scope& b, const WgmmaGemm& gm, const WgmmaPipeline& p, const lib::MatrixTile& c,
                        const Expr& k_tiles, int in_flight, const std::function<void(Scope&)>& produce) {
  constexpr int BN = 256;
  const Expr& t = c.thread;
  View Cs = b.shared_aligned("Cs", ScalarType::F32, 2 * 2 * kChunk, 1024);
  // The warpgroup's rows and buffers: buffer k of warpgroup w at (2k + w) * kChunk, so that the two
  // buffers are apart in the array whichever warpgroup stores (the barriers Vantage places see that
  // a store into one buffer needs no wait for the other's TMA read). The producer's (warpgroup 2)
  // buffers are warpgroup 1's, which it never touches.
  Var wg = b.let("wg", b.id(thread(128)));
  b.partition(
      Cs, thread(128), [&](Expr i) { return (i / kChunk * 2 + min(wg, 1)) * kChunk + i % kChunk; },
      [&](Scope& b, View cs) {
        b.partition(
            c.view, thread(128), [&](Expr i) { return wg * 64 * gm.N + i; },
            [&](Scope& b, View rows) {
              auto consume = [&](Scope& w, int consumer) {
                w.setmaxnreg(232, true);
                View acc = w.local_array("acc", ScalarType::F32, BN / 2, at(thread(1)));
                for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
                w.for_("kt", 0, k_tiles,
                       [&](Scope& w, Expr kt) { consume_step(w, p, consumer, acc, kt, kt, in_flight); });
                if (in_flight) w.wgmma_wait(0);
                // Element i (< 16) of thread t's part of a chunk: accumulator 16 j + i, at row r and
                // column q of the chunk, its 16-byte group moved by the row (the 128-byte swizzle).
                auto place = [&](const Expr& i) {
                  Expr r = t % 128 / 32 * 16 + t % 32 / 4 + 8 * (i / 2 % 2), q = 8 * (i / 4) + 2 * (t % 4) + i % 2;
                  return r * kChunkCols + ((q / 4) ^ (r % 8)) * 4 + q % 4;
                };
                for (int j = 0; j < BN / kChunkCols; ++j) {
                  if (j >= 2) lib::by_one_thread(w, [&](Scope& one) { one.tma_store_wait(1); });
                  w.partition(
                      cs, thread(1), [&](Expr i) { return (j % 2) * kChunk + place(i); },
                      [&](Scope& w, View mine) {
                        w.group(thread(1), [&](Scope&) {
                          for (int i = 0; i < 16; ++i) mine[i] = acc[16 * j + i];
                        });
                      });
                  lib::by_one_thread(w, rows, [&](Scope& one, View mine) {
                    one.tma_store(gm.c_map, cs, (j % 2) * kChunk, mine, j * kChunkCols);
                    if (j == BN / kChunkCols - 1) one.tma_store_wait(0);
                  });
                }
              };
              split_roles(b, consume, produce);
            });
      });
}

/// Rung 2's block after its pipeline is made: the consumer warpgroups run their K steps and store
/// their accumulators into C (each thread its own elements), the producer runs `produce`.
void threads_store(Scope& b, const WgmmaGemm& gm, const WgmmaPipeline& p, const lib::MatrixTile& c, const Expr& k_tiles,
                   int in_flight, const std::function<void(Scope&)>& produce) {
  const int BN = p.BN;
  const Expr& t = c.thread;
  // Element i of consumer thread t's accumulators (warpgroup t / 128) is C's row wg * 64 + warp *
  // 16 + lane / 4 + 8 * (i / 2 % 2), column 8 * (i / 4) + 2 * (lane % 4) + i % 2: wgmma's D.
  auto row_of = [&](const Expr& i) { return t / 128 * 64 + t % 128 / 32 * 16 + t % 32 / 4 + 8 * (i / 2 % 2); };
  auto col_of = [&](const Expr& i) { return 8 * (i / 4) + 2 * (t % 4) + i % 2; };
  b.partition(
      c.view, thread(1), [&](Expr i) { return row_of(i) * gm.N + col_of(i); },
      [&](Scope& b, View mine) {
        // Consumer warpgroup wg (0 or 1): rows wg * 64.. of the tile.
        auto consume = [&](Scope& w, int wg) {
          w.setmaxnreg(232, true);
          View acc = w.local_array("acc", p.e.acc, BN / 2, at(thread(1)));
          for (int i = 0; i < BN / 2; ++i) acc[i] = p.e.acc == ScalarType::I32 ? Expr(0) : Expr(0.0f);
          w.for_("kt", 0, k_tiles, [&](Scope& w, Expr kt) { consume_step(w, p, wg, acc, kt, kt, in_flight); });
          if (in_flight) w.wgmma_wait(0);  // the last step's group, before its accumulators are read
          w.group(thread(1), [&](Scope& th) {
            for (int i = 0; i < BN / 2; ++i)
              th.if_(c.row0 + row_of(i) < gm.M && c.col0 + col_of(i) < gm.N, [&](Scope&) { mine[i] = acc[i]; });
          });
        };
        split_roles(b, consume, produce);
      });
}

/// A cluster of 1 or 2 blocks, and for 2 an even group of tile rows, so that blocks 2j and 2j + 1
/// take the tiles one above the other.
void check_cluster(const char* who, int group_rows, int cluster) {
  if (cluster != 1 && cluster != 2)
    throw std::invalid_argument(std::string(who) + ": a cluster of 1 or 2 blocks, not " + std::to_string(cluster));
  if (cluster == 2 && group_rows % 2 != 0)
    throw std::invalid_argument(std::string(who) + ": the group of tile rows is even (pairs of tiles), not " +
                                std::to_string(group_rows));
}

void check_in_flight(const char* who, int in_flight) {
  if (in_flight != 0 && in_flight != 1)
    throw std::invalid_argument(std::string(who) + ": in_flight is 0 or 1, not " + std::to_string(in_flight));
}

/// Rungs 1 and 2 of `e`'s elements.
Kernel wgmma_gemm_of(const std::string& name, int BN, int group_rows, int in_flight, bool tma_store,
                     const WgmmaElem& e) {
  if (BN != 128 && BN != 256) throw std::invalid_argument("wgmma_gemm: BN is 128 or 256, not " + std::to_string(BN));
  if (tma_store && (BN != 256 || e.acc != ScalarType::F32))
    throw std::invalid_argument("wgmma_gemm: the TMA-store epilogue is for BN 256 and f32 accumulators");
  check_in_flight("wgmma_gemm", in_flight);
  KernelBuilder k(name);
  const WgmmaGemm gm = wgmma_gemm_params(k, BN, tma_store, 1, e);
  const Expr &M = gm.M, &N = gm.N;
  k.body([&](Scope& g) {
    lib::for_each_tile_grouped(g, gm.C, M, N, kWgBM, BN, group_rows, [&](Scope& b, const lib::MatrixTile& c) {
      const WgmmaPipeline p = wgmma_pipeline(b, BN, 1, e);
      auto k_tiles = b.let("k_tiles", gm.K / gm.e.bk);
      init_pipeline(b, p);
      auto produce = [&](Scope& th) {
        th.for_("kt", 0, k_tiles, [&](Scope& th, Expr kt) { produce_step(th, p, gm, kt, kt, c.row0, c.col0); });
      };
      if (tma_store) return tma_store_epilogue(b, gm, p, c, k_tiles, in_flight, produce);
      threads_store(b, gm, p, c, k_tiles, in_flight, produce);
    });
  });
  return k.build();
}
}  // namespace

Kernel wgmma_gemm(const std::string& name, int BN, int group_rows, int in_flight, bool tma_store) {
  return wgmma_gemm_of(name, BN, group_rows, in_flight, tma_store, kBf16);
}

// Rung 2 in clusters of two blocks whose tiles are one above the other (the grouped order walks
// down each column of a group, so with an even group and an even count of tile rows blocks 2j and
// 2j + 1 are such a pair): they multiply the same Bt tile at each K step, so each block's producer
// loads its own A tile and half of the Bt tile, multicast into both blocks, and each slot is loaded
// again only when the consumers of both blocks have freed it. Each block loads half the Bt bytes it
// did: a quarter fewer bytes of L2 traffic per product. The blocks meet after making their barriers
// (before any multicast or arrival reaches the other) and before they end.
Kernel wgmma_gemm_cluster(const std::string& name, int group_rows, int in_flight) {
  check_in_flight("wgmma_gemm_cluster", in_flight);
  constexpr int BN = 256, kCluster = 2;
  check_cluster("wgmma_gemm_cluster", group_rows, kCluster);
  KernelBuilder k(name);
  k.cluster(kCluster);
  const WgmmaGemm gm = wgmma_gemm_params(k, BN, false, kCluster);
  k.require(gm.M % (kCluster * kWgBM) == 0);  // an even count of tile rows: every group's pairs
  k.body([&](Scope& g) {
    lib::for_each_tile_grouped(g, gm.C, gm.M, gm.N, kWgBM, BN, group_rows, [&](Scope& b, const lib::MatrixTile& c) {
      const WgmmaPipeline p = wgmma_pipeline(b, BN, kCluster);
      auto k_tiles = b.let("k_tiles", gm.K / gm.e.bk);
      auto rank = b.let("rank", b.cluster_rank());
      init_pipeline(b, p);
      b.cluster_sync();
      threads_store(b, gm, p, c, k_tiles, in_flight, [&](Scope& th) {
        th.for_("kt", 0, k_tiles, [&](Scope& th, Expr kt) { produce_step(th, p, gm, kt, kt, c.row0, c.col0, &rank); });
      });
      b.cluster_sync();
    });
  });
  return k.build();
}

// Rung 3, persistent: a block of each SM takes the 128 x 256 tiles b, b + G, b + 2G, ... (G: the
// launch's blocks) in the grouped order, and its pipeline runs on across them: K step kt of the
// block's j-th tile is step j * k_tiles + kt of one sequence of slots and parities, so the producer
// loads the next tile's first steps while the consumers store the last one's C. The block's share of
// C is its tiles, one after another; its accumulators are zeroed at each tile.
Kernel wgmma_gemm_persistent(const std::string& name, int group_rows, int in_flight, int cluster) {
  check_in_flight("wgmma_gemm_persistent", in_flight);
  check_cluster("wgmma_gemm_persistent", group_rows, cluster);
  constexpr int BN = 256, TE = kWgBM * BN;
  KernelBuilder k(name);
  if (cluster > 1) k.cluster(cluster);
  const WgmmaGemm gm = wgmma_gemm_params(k, BN, false, cluster);
  if (cluster > 1) k.require(gm.M % (cluster * kWgBM) == 0);
  const Expr &M = gm.M, &N = gm.N;
  k.body([&](Scope& g) {
    Var per_row = g.let("tiles_per_row", N / BN), tile_rows = g.let("tile_rows", M / kWgBM);
    Var tiles = g.let("tiles", per_row * tile_rows), blocks = g.let("blocks", g.grid_blocks());
    Var bid = g.let("bid", g.id(block(1)));
    // Tile `tile`'s first row and column in the grouped order (lib::for_each_tile_grouped's).
    auto first_of = [&](const Expr& tile) {
      const Expr per_group = per_row * group_rows, first = tile / per_group * group_rows;
      const Expr in_group = max(min(tile_rows - first, group_rows), 1), local = tile % per_group;
      return std::pair<Expr, Expr>{(first + local % in_group) * kWgBM, local / in_group * BN};
    };
    g.partition(
        gm.C, block(1),
        [&](Expr i) {
          auto [row0, col0] = first_of(bid + i / TE * blocks);
          return (row0 + i % TE / BN) * N + col0 + i % BN;
        },
        [&](Scope& g, View share) {
          g.group(block(1), [&](Scope& b) {
            const WgmmaPipeline p = wgmma_pipeline(b, BN, cluster);
            auto k_tiles = b.let("k_tiles", gm.K / gm.e.bk);
            auto my_tiles = b.let("my_tiles", (tiles - bid + blocks - 1) / blocks);  // tiles bid, bid + G, ...
            auto t = b.let("t", b.id(thread(1)));
            const Expr rank = cluster > 1 ? Expr(b.let("rank", b.cluster_rank())) : Expr();
            init_pipeline(b, p);
            if (cluster > 1) b.cluster_sync();
            auto row_of = [&](const Expr& i) {
              return t / 128 * 64 + t % 128 / 32 * 16 + t % 32 / 4 + 8 * (i / 2 % 2);
            };
            auto col_of = [&](const Expr& i) { return 8 * (i / 4) + 2 * (t % 4) + i % 2; };
            b.partition(
                share, thread(1),
                [&](Expr i) { return i / (BN / 2) * TE + row_of(i % (BN / 2)) * BN + col_of(i % (BN / 2)); },
                [&](Scope& b, View mine) {
                  auto consume = [&](Scope& w, int wg) {
                    w.setmaxnreg(232, true);
                    View acc = w.local_array("acc", ScalarType::F32, BN / 2, at(thread(1)));
                    w.for_("j", 0, my_tiles, [&](Scope& w, Expr j) {
                      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
                      w.for_("kt", 0, k_tiles, [&](Scope& w, Expr kt) {
                        consume_step(w, p, wg, acc, w.let("step", j * k_tiles + kt), kt, in_flight);
                      });
                      if (in_flight) {  // the tile's last step: its group, then its slot
                        w.wgmma_wait(0);
                        free_slot(w, p, (j * k_tiles + k_tiles - 1) % kWgStages);
                      }
                      w.group(thread(1), [&](Scope&) {
                        for (int i = 0; i < BN / 2; ++i) mine[j * (BN / 2) + i] = acc[i];
                      });
                    });
                  };
                  split_roles(b, consume, [&](Scope& th) {
                    th.for_("j", 0, my_tiles, [&](Scope& th, Expr j) {
                      auto [row0, col0] = first_of(bid + j * blocks);
                      auto r0 = th.let("row0", row0);
                      auto c0 = th.let("col0", col0);
                      th.for_("kt", 0, k_tiles, [&](Scope& th, Expr kt) {
                        produce_step(th, p, gm, th.let("step", j * k_tiles + kt), kt, r0, c0,
                                     cluster > 1 ? &rank : nullptr);
                      });
                    });
                  });
                });
            if (cluster > 1) b.cluster_sync();
          });
        });
  });
  return k.build();
}

Kernel gemm_wgmma_bf16() { return wgmma_gemm("gemm_wgmma_bf16", 128, 1); }
Kernel igemm_wgmma(const std::string& name, int in_flight, bool unsigned_a) {
  return wgmma_gemm_of(name, 256, 16, in_flight, false, unsigned_a ? kUint8Int8 : kInt8);
}
Kernel gemm_wgmma_bf16_wide() { return wgmma_gemm("gemm_wgmma_bf16_wide", 256, 16); }

}  // namespace vantage::examples
