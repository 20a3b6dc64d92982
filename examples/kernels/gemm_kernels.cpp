// Vantage example kernels: the GEMM ladder (sgemm from one element a thread to cp.async pipelines,
// and mma.sync on tensor cores), sharing one signature. See paper_kernels.hpp.
#include "kernels/paper_kernels.hpp"

namespace vantage::examples {

namespace {
/// The sgemm signature every rung shares: C = alpha * A(MxK) * B(KxN) + beta * C.
struct SgemmParams {
  Expr M, N, K, alpha, beta;
  View A, B, C;
};
/// `sized`: N and K specialized (constants in the code, so that a row of A or B is a known number of
/// 16-byte vectors).
SgemmParams sgemm_params(KernelBuilder& k, bool sized = false) {
  SgemmParams p;
  p.M = k.param<int>("M");
  p.N = sized ? k.param<int>("N", specialize) : k.param<int>("N");
  p.K = sized ? k.param<int>("K", specialize) : k.param<int>("K");
  p.alpha = k.param<float>("alpha");
  p.beta = k.param<float>("beta");
  p.A = k.param<GlobalPtr<const float>>("A", extent(p.M * p.K));
  p.B = k.param<GlobalPtr<const float>>("B", extent(p.K * p.N));
  p.C = k.param<GlobalPtr<float>>("C", extent(p.M * p.N));
  return p;
}

Kernel sgemm_one_per_thread(const char* name, bool coalesced) {
  constexpr int kThreads = 256;
  KernelBuilder k(name);
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k);
  k.block_threads(kThreads);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));  // global thread index
    // Rung 1 walks C down columns (neighbouring threads far apart); rung 2 along rows.
    auto row = g.let("row", coalesced ? gid / N : gid % M);
    auto col = g.let("col", coalesced ? gid % N : gid / M);
    g.partition(
        C, thread(1), [&](Expr i) { return row * N + col + i; },
        [&](Scope& g, View C_t) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(gid < M * N, [&](Scope& th) {
              auto acc = th.let("acc", 0.0f);
              th.for_("kk", 0, K, [&](Scope& th, Expr kk) { th.assign(acc, acc + A[row * K + kk] * B[kk * N + col]); });
              C_t[0] = alpha * acc + beta * C_t[0];
            });
          });
        });
  });
  return k.build();
}
}  // namespace

Kernel sgemm_naive() { return sgemm_one_per_thread("sgemm_naive", false); }
Kernel sgemm_coalesced() { return sgemm_one_per_thread("sgemm_coalesced", true); }

// PRIMITIVE FORM sgemm_smem
Kernel sgemm_smem_primitive(int kTile, const std::string& name) {
  KernelBuilder k(!name.empty() ? name : kTile == 32 ? "sgemm_smem" : "sgemm_smem_" + std::to_string(kTile));
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k);
  k.block_threads(kTile * kTile);
  k.shared_budget(2 * kTile * kTile * 4);
  k.body([&](Scope& g) {
    auto nbn = g.let("nbn", (N + kTile - 1) / kTile);
    auto brow = g.let("brow", g.id(block(1)) / nbn);
    auto bcol = g.let("bcol", g.id(block(1)) % nbn);
    g.partition(
        C, block(1), [&](Expr i) { return brow * kTile * N + bcol * kTile + i; },
        [&](Scope& g, View C_blk) {
          g.group(block(1), [&](Scope& b) {
            auto As = b.shared<float>("As", kTile * kTile);
            auto Bs = b.shared<float>("Bs", kTile * kTile);
            auto t = b.let("t", b.id(thread(1)));
            auto tr = b.let("tr", t / kTile);
            auto tc = b.let("tc", t % kTile);
            auto acc = b.let("acc", 0.0f, at(thread(1)));
            b.for_("kb", 0, K, kTile, [&](Scope& b, Expr kb) {
              // Tiles past the edges of A and B read as zeros, so any M, N and K work; the index is
              // clamped as well, so that the load (which select evaluates anyway) stays inside.
              b.partition(
                  As, thread(1), [&](Expr i) { return t + i; },
                  [&](Scope& b, View As_t) {
                    b.group(thread(1), [&](Scope& th) {
                      auto r = th.let("a_row", brow * kTile + tr);
                      auto c = th.let("a_col", kb + tc);
                      As_t[0] = select(r < M && c < K, A[min(r, M - 1) * K + min(c, K - 1)], 0.0f);
                    });
                  });
              b.partition(
                  Bs, thread(1), [&](Expr i) { return t + i; },
                  [&](Scope& b, View Bs_t) {
                    b.group(thread(1), [&](Scope& th) {
                      auto r = th.let("b_row", kb + tr);
                      auto c = th.let("b_col", bcol * kTile + tc);
                      Bs_t[0] = select(r < K && c < N, B[min(r, K - 1) * N + min(c, N - 1)], 0.0f);
                    });
                  });
              b.for_("kk", 0, kTile,
                     [&](Scope& b, Expr kk) { b.assign(acc, acc + As[tr * kTile + kk] * Bs[kk * kTile + tc]); });
            });
            b.partition(
                C_blk, thread(1), [&](Expr i) { return tr * N + tc + i; },
                [&](Scope& b, View C_t) {
                  b.group(thread(1), [&](Scope& th) {
                    th.if_(brow * kTile + tr < M && bcol * kTile + tc < N,
                           [&](Scope&) { C_t[0] = alpha * acc + beta * C_t[0]; });
                  });
                });
          });
        });
  });
  return k.build();
}
// END FORM

// LIBRARY FORM sgemm_smem
Kernel sgemm_smem(int kTile, const std::string& name) {
  KernelBuilder k(!name.empty() ? name : kTile == 32 ? "sgemm_smem" : "sgemm_smem_" + std::to_string(kTile));
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k);
  k.block_threads(kTile * kTile);
  k.shared_budget(2 * kTile * kTile * 4);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, kTile, kTile, [&](Scope& b, const lib::MatrixTile& c) {
      auto acc = b.let("acc", 0.0f, at(thread(1)));
      auto As = b.shared<float>("As", kTile * kTile), Bs = b.shared<float>("Bs", kTile * kTile);
      b.for_("kb", 0, K, kTile, [&](Scope& b, Expr kb) {
        lib::stage_tile(b, As, A, M, K, c.row0, kb, kTile, kTile, &c);  // zeros past the edges
        lib::stage_tile(b, Bs, B, K, N, kb, c.col0, kTile, kTile, &c);
        b.for_("kk", 0, kTile,
               [&](Scope& b, Expr kk) { b.assign(acc, acc + As[c.row * kTile + kk] * Bs[kk * kTile + c.col]); });
      });
      lib::update_own(b, c, [&](Scope&, ElemRef e) { e = alpha * acc + beta * e; });
    });
  });
  return k.build();
}
// END FORM

Kernel sgemm_reg1d(const Reg1dShape& sh, const std::string& name) {
  const int BM = sh.bm, BN = sh.bn, BK = sh.bk, TM = sh.tm;
  const int T = BM * BN / TM;  // threads: each computes TM rows of one column of the block's tile
  KernelBuilder k(!name.empty() ? name : "sgemm_reg1d");
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k);
  k.block_threads(T);
  k.shared_budget((BM * BK + BK * BN) * 4);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, BM, BN, [&](Scope& b, const lib::MatrixTile& c) {
      auto tr = b.let("tr", c.thread / BN);  // the thread's rows: tr * TM .. tr * TM + TM - 1
      auto tc = b.let("tc", c.thread % BN);
      auto acc = b.local_array("acc", ScalarType::F32, TM, at(thread(1)));
      for (int i = 0; i < TM; ++i) acc[i] = 0.0f;
      auto As = b.shared<float>("As", BM * BK), Bs = b.shared<float>("Bs", BK * BN);
      b.for_("kb", 0, K, BK, [&](Scope& b, Expr kb) {
        // Striped by T, so that neighbouring threads read neighbouring elements; zeros past the edges.
        lib::stage_tile(b, As, A, M, K, c.row0, kb, BM, BK);
        lib::stage_tile(b, Bs, B, K, N, kb, c.col0, BK, BN);
        b.for_("kk", 0, BK, [&](Scope& b, Expr kk) {
          auto bv = b.let("b_val", Bs[kk * BN + tc]);
          for (int i = 0; i < TM; ++i) acc[i] = acc[i] + As[(tr * TM + i) * BK + kk] * bv;
        });
      });
      lib::update_sub_tile(b, c, tr * TM, tc, TM, 1, 1, 1,
                           [&](Scope&, int i, int, ElemRef e) { e = alpha * acc[i] + beta * e; });
    });
  });
  return k.build();
}

namespace {
/// A thread's tm x tn accumulators (zeroed) and the tm values of A and tn of B it reads per step of k.
struct RegTile {
  View acc, a, b;
  int tm, tn;
  RegTile(Scope& s, int m, int n)
      : acc(s.local_array("acc", ScalarType::F32, m * n, at(thread(1)))),
        a(s.local_array("a_reg", ScalarType::F32, m, at(thread(1)))),
        b(s.local_array("b_reg", ScalarType::F32, n, at(thread(1)))),
        tm(m),
        tn(n) {
    for (int i = 0; i < m * n; ++i) acc[i] = 0.0f;
  }
  /// The steps of k through the staged tiles As (rows bk long) and Bs (rows bn long): a[i] from As's
  /// row `a_row(i)`, b[j] from Bs's column `b_col(j)`, and their outer product into acc.
  void steps(Scope& s, const View& As, const View& Bs, int bk, int bn, const std::function<Expr(int)>& a_row,
             const std::function<Expr(int)>& b_col) const {
    s.for_("kk", 0, bk, [&](Scope&, Expr kk) {
      for (int i = 0; i < tm; ++i) a[i] = As[a_row(i) * bk + kk];
      for (int j = 0; j < tn; ++j) b[j] = Bs[kk * bn + b_col(j)];
      for (int i = 0; i < tm; ++i)
        for (int j = 0; j < tn; ++j) acc[i * tn + j] = acc[i * tn + j] + a[i] * b[j];
    });
  }
  /// C's elements of the thread (rows row + row_step * i, columns col + col_step * j of the tile):
  /// alpha * acc + beta * C.
  void update(Scope& s, const lib::MatrixTile& c, const Expr& row, const Expr& col, int row_step, int col_step,
              const Expr& alpha, const Expr& beta) const {
    lib::update_sub_tile(s, c, row, col, tm, tn, row_step, col_step,
                         [&](Scope&, int i, int j, ElemRef e) { e = alpha * acc[i * tn + j] + beta * e; });
  }
};
}  // namespace

Kernel sgemm_reg2d(const Reg2dShape& sh, const std::string& name) {
  const int BM = sh.bm, BN = sh.bn, BK = sh.bk, TM = sh.tm, TN = sh.tn;
  const int TC = BN / TN, T = BM / TM * TC;  // thread t computes rows (t / TC) * TM.., cols (t % TC) * TN..
  KernelBuilder k(!name.empty() ? name : "sgemm_reg2d");
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k);
  k.block_threads(T);
  k.shared_budget((BM * BK + BK * BN) * 4);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, BM, BN, [&](Scope& b, const lib::MatrixTile& c) {
      auto tr = b.let("tr", c.thread / TC), tc = b.let("tc", c.thread % TC);
      RegTile r(b, TM, TN);
      auto As = b.shared<float>("As", BM * BK), Bs = b.shared<float>("Bs", BK * BN);
      b.for_("kb", 0, K, BK, [&](Scope& b, Expr kb) {
        lib::stage_tile(b, As, A, M, K, c.row0, kb, BM, BK);  // zeros past the edges
        lib::stage_tile(b, Bs, B, K, N, kb, c.col0, BK, BN);
        r.steps(
            b, As, Bs, BK, BN, [&](int i) { return tr * TM + i; }, [&](int j) { return tc * TN + j; });
      });
      r.update(b, c, tr * TM, tc * TN, 1, 1, alpha, beta);
    });
  });
  return k.build();
}

Kernel sgemm_vec(const std::string& name) {
  constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, TC = BN / TN, T = BM / TM * TC;
  static_assert(BM * BK == 4 * T && BK * BN == 4 * T, "each thread stages one vector of A and one of B");
  KernelBuilder k(!name.empty() ? name : "sgemm_vec");
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k, true);
  k.block_threads(T);
  k.shared_budget((BM * BK + BK * BN) * 4);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, BM, BN, [&](Scope& b, const lib::MatrixTile& c) {
      Expr t = c.thread;
      auto tr = b.let("tr", t / TC), tc = b.let("tc", t % TC);
      RegTile r(b, TM, TN);
      auto As = b.shared<float>("As", BM * BK), Bs = b.shared<float>("Bs", BK * BN);
      // Thread t stages the 4 elements at (t * 4) / cols, (t * 4) % cols of each tile: one vector.
      auto stage = [&](Scope& b, const View& dst, const View& src, const Expr& rows, const Expr& cols, const Expr& r,
                       const Expr& col) {
        b.partition(
            dst, thread(1), [&](Expr i) { return t * 4 + i; },
            [&](Scope& b, View mine) {
              b.group(thread(1), [&](Scope& th) {
                th.if_(
                    r < rows && col + 4 <= cols,
                    [&](Scope& th) { th.for_("v", 0, 4, [&](Scope&, Expr v) { mine[v] = src[r * cols + col + v]; }); },
                    [&](Scope& th) {
                      // At the edge, element by element, each read only inside the matrix.
                      for (int v = 0; v < 4; ++v)
                        th.if_(
                            r < rows && col + v < cols, [&](Scope&) { mine[v] = src[r * cols + col + v]; },
                            [&](Scope&) { mine[v] = 0.0f; });
                    });
              });
            });
      };
      // The k steps counted in tiles, so that a tile's first column is a known multiple of BK.
      b.for_("kt", 0, (K + BK - 1) / BK, [&](Scope& b, Expr kt) {
        stage(b, As, A, M, K, c.row0 + t / (BK / 4), kt * BK + t % (BK / 4) * 4);
        stage(b, Bs, B, K, N, kt * BK + t / (BN / 4), c.col0 + t % (BN / 4) * 4);
        r.steps(
            b, As, Bs, BK, BN, [&](int i) { return tr * TM + i; }, [&](int j) { return tc * TN + j; });
      });
      r.update(b, c, tr * TM, tc * TN, 1, 1, alpha, beta);
    });
  });
  return k.build();
}

Kernel sgemm_warptile(const std::string& name) {
  constexpr int BM = 64, BN = 64, BK = 16, WM = 32, WN = 32, TM = 8, TN = 4, T = 128;
  constexpr int WC = BN / WN;  // warps across the block tile
  constexpr int LC = WN / TN;  // lanes across a warp tile: 8
  constexpr int LR = WM / TM;  // lanes down a warp tile: 4
  static_assert(LR * LC == 32 && BM / WM * WC * 32 == T, "one warp per warp tile, one lane per sub-tile");
  KernelBuilder k(!name.empty() ? name : "sgemm_warptile");
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k);
  k.block_threads(T);
  k.shared_budget((BM * BK + BK * BN) * 4);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, BM, BN, [&](Scope& b, const lib::MatrixTile& c) {
      RegTile r(b, TM, TN);
      // The warp's tile and the lane's place in it: rows wr * WM + lr + LR * i, columns
      // wc * WN + lc + LC * j, so that the lanes of a warp read 4 rows of As and 8 columns of Bs.
      auto warp = b.let("warp", c.thread / 32), lane = b.let("lane", c.thread % 32);
      auto row = b.let("row", warp / WC * WM + lane / LC), col = b.let("col", warp % WC * WN + lane % LC);
      auto As = b.shared<float>("As", BM * BK), Bs = b.shared<float>("Bs", BK * BN);
      b.for_("kb", 0, K, BK, [&](Scope& b, Expr kb) {
        lib::stage_tile(b, As, A, M, K, c.row0, kb, BM, BK);
        lib::stage_tile(b, Bs, B, K, N, kb, c.col0, BK, BN);
        r.steps(
            b, As, Bs, BK, BN, [&](int i) { return row + LR * i; }, [&](int j) { return col + LC * j; });
      });
      r.update(b, c, row, col, LR, LC, alpha, beta);
    });
  });
  return k.build();
}

Kernel sgemm_pipelined(const PipelinedShape& sh, const std::string& name) {
  const int BM = sh.bm, BN = sh.bn, BK = sh.bk, S = sh.stages, TM = sh.tm;
  constexpr int TN = 8, WN = 64;  // a lane: TM x 8 of C; a warp: 4 x 8 lanes
  const int WM = 4 * TM;
  if ((TM != 8 && TM != 16) || BM < WM || BM % WM != 0 || BN < WN || BN % WN != 0 || BK < 4 || BK % 4 != 0 ||
      BM / WM * (BN / WN) > 32 || S < 2 || S > 8)
    throw std::invalid_argument("sgemm_pipelined: a " + std::to_string(BM) + " x " + std::to_string(BN) + " x " +
                                std::to_string(BK) + " tile in " + std::to_string(S) + " slots, " + std::to_string(TM) +
                                " rows a lane; a lane has 8 or 16 rows, BM is a multiple of "
                                "4 times those, BN of 64, BK of 4, there are at most 32 warps and 2 to 8 slots");
  const int T = BM / WM * (BN / WN) * 32;
  KernelBuilder k(!name.empty() ? name : "sgemm_pipelined");
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k);
  k.block_threads(T);
  k.shared_budget(S * (BM * BK + BK * BN) * 4);
  if (sh.min_blocks > 0) k.min_blocks_per_sm(sh.min_blocks);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, BM, BN, [&](Scope& b, const lib::MatrixTile& c) {
      // Warp w's tile: rows w / (BN / WN) * WM, columns w % (BN / WN) * 64. Lane l: rows
      // l / 8 * TM + i (i < TM) of it, columns l % 8 * 4 + j and that + 32 (j < 4), so that the 8
      // lanes of a quarter warp read one row of As (a broadcast) and 8 consecutive vectors of Bs.
      // With 16 rows a lane holds 128 sums and reads 6 vectors a step of k for 128 products, where
      // 8 rows read 4 for 64.
      auto warp = b.let("warp", c.thread / 32), lane = b.let("lane", c.thread % 32);
      auto row = b.let("row", warp / (BN / WN) * WM + lane / 8 * TM);
      auto col = b.let("col", warp % (BN / WN) * WN + lane % 8 * 4);
      auto acc = b.local_array("acc", ScalarType::F32, TM * TN, at(thread(1)));
      auto a = b.local_array("a_reg", ScalarType::F32, TM * 4, at(thread(1)));  // 4 steps of k a row
      auto bv = b.local_array("b_reg", ScalarType::F32, TN, at(thread(1)));
      for (int i = 0; i < TM * TN; ++i) acc[i] = 0.0f;
      // S slots, so that tiles kt + 1 to kt + S - 1 arrive while tile kt is multiplied.
      std::vector<View> As, Bs;
      for (int s = 0; s < S; ++s) As.push_back(b.shared<float>("As" + std::to_string(s), BM * BK));
      for (int s = 0; s < S; ++s) Bs.push_back(b.shared<float>("Bs" + std::to_string(s), BK * BN));
      auto tiles = b.let("tiles", (K + BK - 1) / BK);
      auto start = [&](Scope& b, const Expr& kt, int slot) {
        // In 32 bits: where a launch's K is at most 2^30 (its size class) the copies are proven
        // inside A and B; past that, they are checked as they run.
        lib::start_tile_copy(b, As[slot], A, M, K, c.row0, kt * BK, BM, BK);  // zeros past the edges
        lib::start_tile_copy(b, Bs[slot], B, K, N, kt * BK, c.col0, BK, BN);
      };
      // One group a step, empty past the last tile, so that a wait for all but the newest S - 2
      // groups always completes the tile the step multiplies.
      auto commit = [&](Scope& b) { b.group(thread(1), [&](Scope& th) { th.cp_async_commit(); }); };
      auto multiply = [&](Scope& b, int slot) {
        b.for_("kq", 0, BK / 4, [&](Scope&, Expr kq) {
          for (int i = 0; i < TM; ++i)
            for (int v = 0; v < 4; ++v) a[i * 4 + v] = As[slot][(row + i) * BK + kq * 4 + v];
          for (int kk = 0; kk < 4; ++kk) {
            for (int j = 0; j < TN; ++j) bv[j] = Bs[slot][(kq * 4 + kk) * BN + col + j % 4 + j / 4 * 32];
            for (int i = 0; i < TM; ++i)
              for (int j = 0; j < TN; ++j) acc[i * TN + j] = acc[i * TN + j] + a[i * 4 + kk] * bv[j];
          }
        });
      };
      // Each step waits for its tile (the barrier Vantage places after the wait makes every thread's
      // copies visible, and frees the slot the step before read; the S - 2 newer tiles' copies stay
      // in flight across it), starts the copies of tile kt + S - 1 into that slot, then multiplies:
      // one barrier per tile. S steps per round, one per slot; past the last tile a step only waits
      // and commits, so that every thread commits and waits alike whatever the tile count, and
      // Vantage counts the groups in flight exactly.
      start(b, Expr(0), 0);
      commit(b);
      for (int s = 1; s + 1 < S; ++s) {
        b.if_(tiles > s, [&](Scope& b) { start(b, Expr(s), s); });
        commit(b);
      }
      b.for_("kt", 0, tiles, S, [&](Scope& b, Expr kt) {
        for (int slot = 0; slot < S; ++slot) {
          b.group(thread(1), [&](Scope& th) { th.cp_async_wait(S - 2); });
          b.if_(kt + slot + (S - 1) < tiles, [&](Scope& b) { start(b, kt + slot + (S - 1), (slot + S - 1) % S); });
          commit(b);
          if (slot == 0)
            multiply(b, slot);
          else
            b.if_(kt + slot < tiles, [&](Scope& b) { multiply(b, slot); });
        }
      });
      lib::update_sub_tile(b, c, row, col, lib::SubTile{TM, TN, 1, 1, 4, 32},
                           [&](Scope&, int i, int j, ElemRef e) { e = alpha * acc[i * TN + j] + beta * e; });
    });
  });
  return k.build();
}

Kernel mma_tf32() {
  constexpr int BM = 32, BN = 32, BK = 8, T = 128;  // four warps, each a 16 x 16 tile: two m16n8 mmas
  KernelBuilder k("mma_tf32");
  auto [M, N, K, alpha, beta, A, B, C] = sgemm_params(k);
  k.block_threads(T);
  k.shared_budget((BM * BK + BK * BN) * 4);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, BM, BN, [&](Scope& b, const lib::MatrixTile& c) {
      auto warp = b.let("warp", c.thread / 32);
      auto wr = b.let("wr", warp / 2 * 16), wc = b.let("wc", warp % 2 * 16);  // the warp's tile
      View acc[2] = {b.local_array("acc0", ScalarType::F32, 4, at(thread(1))),
                     b.local_array("acc1", ScalarType::F32, 4, at(thread(1)))};
      for (const View& a : acc)
        for (int e = 0; e < 4; ++e) a[e] = 0.0f;
      auto fa = b.local_array("fa", ScalarType::F32, 4, at(thread(1)));
      View fb[2] = {b.local_array("fb0", ScalarType::F32, 2, at(thread(1))),
                    b.local_array("fb1", ScalarType::F32, 2, at(thread(1)))};
      auto As = b.shared<float>("As", BM * BK), Bs = b.shared<float>("Bs", BK * BN);
      b.for_("kb", 0, K, BK, [&](Scope& b, Expr kb) {
        lib::stage_tile(b, As, A, M, K, c.row0, kb, BM, BK);  // zeros past the edges: any M, N, K
        lib::stage_tile(b, Bs, B, K, N, kb, c.col0, BK, BN);
        b.group(thread(32), [&](Scope& w) {
          lib::mma_load_a(w, fa, As, BK, wr, 0);
          for (int j = 0; j < 2; ++j) {
            lib::mma_load_b(w, fb[j], Bs, BN, 0, wc + 8 * j);
            w.mma_sync(MmaKind::TF32_M16N8K8, acc[j], fa, fb[j], acc[j]);
          }
        });
      });
      lib::mma_store_c(b, c, {acc[0], acc[1]}, wr, wc,
                       [&](const Expr& v, const ElemRef& old) { return alpha * v + beta * old; });
    });
  });
  return k.build();
}

// LIBRARY FORM igemm_mma
Kernel igemm_mma() {
  constexpr int BM = 32, BN = 32, BK = 32, T = 128;  // four warps, each a 16 x 16 tile: two m16n8k32 mmas
  KernelBuilder k("igemm_mma");
  auto M = k.param<int>("M"), N = k.param<int>("N"), K = k.param<int>("K");
  auto A = k.param<GlobalPtr<const std::int8_t>>("A", extent(M * K));
  auto B = k.param<GlobalPtr<const std::int8_t>>("B", extent(K * N));
  auto C = k.param<GlobalPtr<int>>("C", extent(M * N));
  k.block_threads(T);
  k.shared_budget(BM * BK + BK * BN);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, C, M, N, BM, BN, [&](Scope& b, const lib::MatrixTile& c) {
      auto warp = b.let("warp", c.thread / 32);
      auto wr = b.let("wr", warp / 2 * 16), wc = b.let("wc", warp % 2 * 16);  // the warp's tile
      View acc[2] = {b.local_array("acc0", ScalarType::I32, 4, at(thread(1))),
                     b.local_array("acc1", ScalarType::I32, 4, at(thread(1)))};
      for (const View& a : acc)
        for (int e = 0; e < 4; ++e) a[e] = 0;
      auto fa = b.local_array("fa", ScalarType::I8, 16, at(thread(1)));
      View fb[2] = {b.local_array("fb0", ScalarType::I8, 8, at(thread(1))),
                    b.local_array("fb1", ScalarType::I8, 8, at(thread(1)))};
      auto As = b.shared<std::int8_t>("As", BM * BK), Bs = b.shared<std::int8_t>("Bs", BK * BN);
      b.for_("kb", 0, K, BK, [&](Scope& b, Expr kb) {
        lib::stage_tile(b, As, A, M, K, c.row0, kb, BM, BK);  // zeros past the edges: any M, N, K
        lib::stage_tile(b, Bs, B, K, N, kb, c.col0, BK, BN);
        b.group(thread(32), [&](Scope& w) {
          lib::mma_load_a(w, fa, As, BK, wr, 0);
          for (int j = 0; j < 2; ++j) {
            lib::mma_load_b(w, fb[j], Bs, BN, 0, wc + 8 * j);
            w.mma_sync(MmaKind::S8_M16N8K32, acc[j], fa, fb[j], acc[j]);
          }
        });
      });
      lib::mma_store_c(b, c, {acc[0], acc[1]}, wr, wc, [](const Expr& v, const ElemRef&) { return v; });
    });
  });
  return k.build();
}
// END FORM

}  // namespace vantage::examples
