// Vantage example kernels: see paper_kernels.hpp. Each follows the paper's figure; where the figure
// has a typo (Fig. 2 declares A at thread[4] but fills it per thread; Fig. 5 stores C[2] at [0, 0])
// the builder version uses the layout `mma.sync.m16n8k8` really has.
#include "kernels/paper_kernels.hpp"

#include <limits>
#include <stdexcept>

namespace vantage::examples {

// PRIMITIVE FORM saxpy
Kernel saxpy_primitive() {
  KernelBuilder k("saxpy");
  auto n = k.param<int>("n");
  auto a = k.param<float>("a");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        y, block(1), [&](Expr i) { return blk * 256 + i; },
        [&](Scope& g, View y_blk) {
          g.group(block(1), [&](Scope& b) {
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                y_blk, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View y_t) {
                  b.group(thread(1), [&](Scope& th) {
                    th.if_(blk * 256 + t < n, [&](Scope&) { y_t[0] = a * x[blk * 256 + t] + y_t[0]; });
                  });
                });
          });
        });
  });
  return k.build();
}
// END FORM

Kernel warp_mma() {
  KernelBuilder k("warp_mma");
  auto d_out = k.param<GlobalPtr<float>>("d_out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto tid = g.let("tid", g.id(thread(1)));
    g.partition(
        d_out, thread(1), [&](Expr i) { return tid * 4 + i; },
        [&](Scope& g, View d_t) {
          g.group(thread(32), [&](Scope& w) {
            auto A = w.local_array("A", ScalarType::F32, 4, at(thread(1)));
            auto B = w.local_array("B", ScalarType::F32, 2, at(thread(1)));
            auto C = w.local_array("C", ScalarType::F32, 4, at(thread(1)));
            auto D = w.local_array("D", ScalarType::F32, 4, at(thread(1)));
            w.for_("i", 0, 4, [&](Scope&, Expr i) {
              A[i] = cast<float>(tid * 4 + 1);
              C[i] = 0.0f;
            });
            w.for_("i", 0, 2, [&](Scope&, Expr i) { B[i] = cast<float>(tid * 4 + 1); });
            w.mma_sync(MmaKind::TF32_M16N8K8, D, A, B, C);
            w.for_("i", 0, 4, [&](Scope&, Expr i) { d_t[i] = D[i]; });
          });
        });
  });
  return k.build();
}

DeviceFunction simple_mma(MemSpace space) {
  FunctionBuilder f(space == MemSpace::Shared ? "simple_mma_smem" : "simple_mma");
  f.requires_perspective(warp());
  auto a = f.pointer_param("a", ScalarType::F32, space, true);
  auto b = f.pointer_param("b", ScalarType::F32, space, true);
  auto c = f.pointer_param("c", ScalarType::F32, space, false);
  auto k = f.param<int>("k");
  auto n = f.param<int>("n");
  f.body([&](Scope& w) {
    auto x = w.let("x", w.id(thread(1)));
    auto g = w.let("g", x / 4);
    auto t = w.let("t", x % 4);
    auto A = w.local_array("A", ScalarType::F32, 4, at(thread(1)));
    auto B = w.local_array("B", ScalarType::F32, 2, at(thread(1)));
    auto C = w.local_array("C", ScalarType::F32, 4, at(thread(1)));
    auto D = w.local_array("D", ScalarType::F32, 4, at(thread(1)));
    // Reads do not need narrowing.
    A[0] = a[g * k + t];
    A[1] = a[(g + 8) * k + t];
    A[2] = a[g * k + t + 4];
    A[3] = a[(g + 8) * k + t + 4];
    B[0] = b[t * n + g];
    B[1] = b[(t + 4) * n + g];
    C[0] = c[g * n + 2 * t];
    C[1] = c[g * n + 2 * t + 1];
    C[2] = c[(g + 8) * n + 2 * t];
    C[3] = c[(g + 8) * n + 2 * t + 1];
    w.mma_sync(MmaKind::TF32_M16N8K8, D, A, B, C);
    // Writes need c narrowed to one thread.
    w.partition(
        c, thread(1), [&](Expr ro, Expr co) { return (g + ro) * n + 2 * t + co; },
        [&](Scope&, View c_thrd) {
          c_thrd(0, 0) = D[0];
          c_thrd(0, 1) = D[1];
          c_thrd(8, 0) = D[2];
          c_thrd(8, 1) = D[3];
        });
  });
  return f.build();
}

Kernel mma_tf32_naive() {
  static const DeviceFunction mma = simple_mma(MemSpace::Shared);
  KernelBuilder k("mma_tf32_naive");
  auto A = k.param<GlobalPtr<const float>>("A");
  auto B = k.param<GlobalPtr<const float>>("B");
  auto C = k.param<GlobalPtr<float>>("C");
  auto M = k.param<int>("M");
  auto N = k.param<int>("N");
  auto K = k.param<int>("K");
  // C is tiled in 16x8 and K in 8 with no edge handling: the launch must give multiples (checked
  // on every launch; a launch that breaks it is refused, naming this line).
  k.require(M % 16 == 0 && N % 8 == 0 && K % 8 == 0);
  k.block_threads(32);
  k.shared_budget(1280);
  k.body([&](Scope& g) {
    auto num_blocks_n = g.let("num_blocks_n", (N + 8 - 1) / 8);
    auto k_tiles = g.let("k_tiles", (K + 8 - 1) / 8);
    auto blk_row = g.let("blk_row", (g.id(block(1)) / num_blocks_n) * 16);
    auto blk_col = g.let("blk_col", (g.id(block(1)) % num_blocks_n) * 8);
    g.partition(
        C, block(1), [&](Expr x) { return blk_row * N + blk_col + x; },
        [&](Scope& g, View C_blk) {
          g.group(block(1), [&](Scope& b) {
            auto A_smem = b.shared<float>("A_smem", 16 * 8);
            auto B_smem = b.shared<float>("B_smem", 8 * 8);
            auto C_smem = b.shared<float>("C_smem", 16 * 8);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                C_smem, thread(1), [&](Expr i) { return t * 4 + i; },
                [&](Scope& b, View C_th) {
                  b.for_("i", 0, 4, [&](Scope& b, Expr i) { b.group(thread(1), [&](Scope&) { C_th[i] = 0.0f; }); });
                });
            b.for_("kt", 0, k_tiles, [&](Scope& b, Expr kt) {
              b.for_("j", 0, 4, [&](Scope& b, Expr j) {
                auto flat = b.let("flat", t * 4 + j);
                auto row = b.let("row", flat / 8);
                auto col = b.let("col", flat % 8);
                b.partition(
                    A_smem, thread(1), [&](Expr i) { return flat + i; },
                    [&](Scope& b, View A_th) {
                      b.group(thread(1), [&](Scope&) { A_th[0] = A[(blk_row + row) * K + kt * 8 + col]; });
                    });
              });
              b.for_("j", 0, 2, [&](Scope& b, Expr j) {
                auto flat = b.let("flat", t * 2 + j);
                auto row = b.let("row", flat / 8);
                auto col = b.let("col", flat % 8);
                b.partition(
                    B_smem, thread(1), [&](Expr i) { return flat + i; },
                    [&](Scope& b, View B_th) {
                      b.group(thread(1), [&](Scope&) { B_th[0] = B[(kt * 8 + row) * N + blk_col + col]; });
                    });
              });
              b.claim(C_smem, warp(), [&](Scope& b, View Cs_warp) {
                b.split(Level::Thread, {{32, [&](Scope& w) { w.call(mma, {A_smem, B_smem, Cs_warp, 8, 8}); }}});
              });
            });
            b.for_("j", 0, 4, [&](Scope& b, Expr j) {
              auto flat_c = b.let("flat_c", t * 4 + j);
              auto row_c = b.let("row_c", flat_c / 8);
              auto col_c = b.let("col_c", flat_c % 8);
              b.partition(
                  C_blk, thread(1), [&](Expr x) { return row_c * N + col_c + x; },
                  [&](Scope& b, View C_th) {
                    b.group(thread(1), [&](Scope&) { C_th[0] = C_smem[row_c * 8 + col_c]; });
                  });
            });
          });
        });
  });
  return k.build();
}

DeviceFunction block_load() {
  FunctionBuilder f("block_load");
  f.requires_perspective(block(1));
  auto src = f.param<SharedPtr<const int>>("src", at(block(1)));
  auto items_per_thread = f.param<int>("items_per_thread", at(block(1)));
  auto total_size = f.param<int>("total_size", at(block(1)));
  auto thread_data = f.param<LocalPtr<int>>("thread_data", at(thread(1)));
  f.body([&](Scope& b) {
    auto t = b.let("t", b.id(thread(1)));
    b.for_("i", 0, items_per_thread, [&](Scope& b, Expr i) {
      b.group(thread(1), [&](Scope& th) {
        auto idx = th.let("idx", t * items_per_thread + i);
        th.if_(idx < total_size, [&](Scope&) { thread_data[i] = src[idx]; });
      });
    });
  });
  return f.build();
}

Kernel block_load_copy() {
  static const DeviceFunction load = block_load();
  constexpr int kThreads = 128, kItems = 4, kTile = kThreads * kItems;
  KernelBuilder k("block_load_copy");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const int>>("in", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(n));
  k.block_threads(kThreads);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * kTile + i; },
        [&](Scope& g, View out_b) {
          g.group(block(1), [&](Scope& b) {
            auto tile = b.shared<int>("tile", kTile);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                tile, thread(1), [&](Expr i) { return t + i * kThreads; },
                [&](Scope& b, View tile_t) {
                  b.for_("i", 0, kItems, [&](Scope& b, Expr i) {
                    b.group(thread(1), [&](Scope& th) {
                      auto g_idx = th.let("g_idx", blk * kTile + t + i * kThreads);
                      tile_t[i] = select(g_idx < n, in[min(g_idx, n - 1)], 0);
                    });
                  });
                });
            auto items = b.local_array("items", ScalarType::I32, kItems, at(thread(1)));
            b.call(load, {tile, kItems, kTile, items});
            b.partition(
                out_b, thread(1), [&](Expr i) { return t * kItems + i; },
                [&](Scope& b, View out_t) {
                  b.for_("i", 0, kItems, [&](Scope& b, Expr i) {
                    b.group(thread(1), [&](Scope& th) {
                      th.if_(blk * kTile + t * kItems + i < n, [&](Scope&) { out_t[i] = items[i]; });
                    });
                  });
                });
          });
        });
  });
  return k.build();
}

// PRIMITIVE FORM block_reduce
Kernel block_reduce_primitive() {
  constexpr int kThreads = 256;
  KernelBuilder k("block_reduce");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(kThreads);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk + i; },
        [&](Scope& g, View out_b) {
          g.group(block(1), [&](Scope& b) {
            auto partial = b.shared<float>("partial", kThreads);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                partial, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View p_t) {
                  b.group(thread(1), [&](Scope& th) {
                    auto idx = th.let("idx", blk * kThreads + t);
                    p_t[0] = select(idx < n, x[min(idx, n - 1)], 0.0f);
                  });
                });
            // Tree in shared memory down to 64 partial sums.
            for (int s = kThreads / 2; s >= 64; s /= 2) {
              b.partition(
                  partial, thread(1), [&](Expr i) { return t + i; },
                  [&](Scope& b, View p_t) {
                    b.group(thread(1), [&](Scope& th) { th.if_(t < s, [&](Scope&) { p_t[0] = p_t[0] + p_t[s]; }); });
                  });
            }
            // The first warp finishes with shuffles; its first thread writes the block's sum.
            b.claim(out_b, thread(1), [&](Scope& b, View out_one) {
              b.split(Level::Thread, {{32, [&](Scope& w) {
                                         auto lane = w.let("lane", w.id(thread(1)));
                                         auto v = w.let("v", partial[lane] + partial[lane + 32]);
                                         for (int off = 16; off >= 1; off /= 2) {
                                           auto other = w.shfl_down("other", v, off);
                                           w.assign(v, v + other);
                                         }
                                         w.split(Level::Thread, {{1, [&](Scope&) { out_one[0] = v; }}});
                                       }}});
            });
          });
        });
  });
  return k.build();
}
// END FORM

// The library forms (include/vantage/library.hpp): what the two kernels above are, as a user writes them.
// LIBRARY FORM saxpy
Kernel saxpy() {
  KernelBuilder k("saxpy");
  auto n = k.param<int>("n");
  auto a = k.param<float>("a");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) { lib::for_each(g, y, n, [&](Scope&, Expr i, ElemRef yi) { yi = a * x[i] + yi; }); });
  return k.build();
}
// END FORM

// LIBRARY FORM gelu
Kernel gelu() {
  KernelBuilder k("gelu");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each(g, y, n, [&](Scope&, Expr i, ElemRef yi) { yi = 0.5f * x[i] * (1.0f + erf(x[i] * 0.70710678f)); });
  });
  return k.build();
}
// END FORM

// LIBRARY FORM block_reduce
Kernel block_reduce() {
  constexpr int kThreads = 256;
  KernelBuilder k("block_reduce");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  const Expr sums = (n + kThreads - 1) / kThreads;  // one per block with elements
  auto out = k.param<GlobalPtr<float>>("out", extent(sums));
  k.block_threads(kThreads);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr blk, View out_b) {
      Expr idx = blk * kThreads + b.id(thread(1));
      Var v = lib::read_below(b, "v", x, idx, n, 0.0f);  // read only below n: proven, unchecked
      Var sum = lib::block_reduce(b, "sum", v, lib::Op::Sum);
      b.if_(blk < sums, [&](Scope& b) { lib::store_by_one(b, out_b, 0, sum); });
    });
  });
  return k.build();
}
// END FORM

Kernel scan_lookback() {
  constexpr int T = 256;
  KernelBuilder k("scan_lookback");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  auto desc = k.param<GlobalPtr<std::uint64_t>>("desc");  // one word per block, zero before the launch
  k.block_threads(T);
  k.require(n > 0);
  // A block's word: status in bits 62..63 (0: not yet, 1: its own sum, 2: the sum of every element
  // up to its last), the value's 32 bits below. One 64-bit atomic publishes both, so a reader never
  // sees a status without its value.
  constexpr int kAggregate = 1, kInclusive = 2;
  auto word = [](int status, const Expr& value) {
    return (cast<std::uint64_t>(status) << 62) | cast<std::uint64_t>(cast<std::uint32_t>(value));
  };
  k.body([&](Scope& g) {
    lib::for_each_block(g, y, T, [&](Scope& b, Expr blk, View y_b) {
      auto t = b.let("t", b.id(thread(1)));
      auto i = b.let("i", blk * T + t);
      Var total;
      Var v = lib::block_inclusive_scan(b, "v", select(i < n, x[min(i, n - 1)], 0), lib::Op::Sum, &total);
      // The first thread publishes and looks back; the block's prefix comes back through shared memory.
      auto prefix_s = b.shared<int>("prefix_s", 1);
      b.claim(prefix_s, thread(1), [&](Scope& b, View one) {
        b.split(Level::Thread,
                {{1, [&](Scope& th) {
                    th.if_(
                        blk == 0,
                        [&](Scope& th) {
                          th.atomic(AtomicOp::Exch, desc, blk, word(kInclusive, total));
                          one[0] = 0;
                        },
                        [&](Scope& th) {
                          // Its own sum first, so that later blocks need not wait for the look-back;
                          // then the words of earlier blocks, waiting on each, until one is inclusive.
                          th.atomic(AtomicOp::Exch, desc, blk, word(kAggregate, total));
                          auto before = th.let("before", 0);
                          auto j = th.let("j", blk - 1);
                          auto looking = th.let("looking", true);
                          th.while_(looking, [&](Scope& th) {
                            auto d = th.atomic("d", AtomicOp::Add, desc, j, cast<std::uint64_t>(0));  // a read
                            auto status = th.let("status", cast<int>(d >> 62));
                            th.if_(status != 0, [&](Scope& th) {
                              th.assign(before, before + cast<int>(cast<std::uint32_t>(d & 0xffffffffu)));
                              th.if_(
                                  status == kInclusive, [&](Scope& th) { th.assign(looking, false); },
                                  [&](Scope& th) { th.assign(j, j - 1); });
                            });
                          });
                          th.atomic(AtomicOp::Exch, desc, blk, word(kInclusive, before + total));
                          one[0] = before;
                        });
                  }}});
      });
      auto prefix = b.let("prefix", prefix_s[0]);
      lib::block_store(b, y_b, n - blk * T, prefix + v);
    });
  });
  return k.build();
}

// PRIMITIVE FORM device_scan
Kernel scan_tiled(int T, int ITEMS, const std::string& name, int backoff_ns) {
  if (T < 64 || T > 1024 || T % 32 != 0 || ITEMS < 4 || ITEMS % 4 != 0 || ITEMS > 32 || backoff_ns < 0 ||
      backoff_ns > kMaxNanosleepNs)
    throw std::invalid_argument("scan_tiled: " + std::to_string(T) + " threads of " + std::to_string(ITEMS) +
                                " items, a back-off of " + std::to_string(backoff_ns) +
                                " ns; threads are a multiple of 32 from 64 to 1024, items a multiple of 4 up to 32, "
                                "the back-off 0 to " +
                                std::to_string(kMaxNanosleepNs) + " ns");
  const int TILE = T * ITEMS;
  KernelBuilder k(!name.empty() ? name : "scan_tiled");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  auto desc = k.param<GlobalPtr<std::uint64_t>>("desc", extent((n + (TILE - 1)) / TILE));  // zero at launch
  k.block_threads(T);
  k.require(n > 0);
  // n + TILE - 1 does not wrap, so that the tiles' count is exact (and desc's extent with it).
  k.require(n <= std::numeric_limits<int>::max() - (TILE - 1));
  constexpr int kAggregate = 1, kInclusive = 2;  // a block's word, as scan_lookback's
  auto word = [](int status, const Expr& value) {
    return (cast<std::uint64_t>(status) << 62) | cast<std::uint64_t>(cast<std::uint32_t>(value));
  };
  k.body([&](Scope& g) {
    lib::for_each_block(g, y, TILE, [&](Scope& b, Expr blk, View y_b) {
      auto t = b.let("t", b.id(thread(1)));
      // The thread's items: x[first .. first + ITEMS - 1], 16-byte loads where all are inside.
      auto first = b.let("first", cast<std::int64_t>(blk) * TILE + cast<std::int64_t>(t * ITEMS));
      auto items = b.local_array("items", ScalarType::I32, ITEMS, at(thread(1)));
      b.group(thread(1), [&](Scope& th) {
        th.if_(
            first + ITEMS <= cast<std::int64_t>(n),
            [&](Scope& th) {
              for (int h = 0; h < ITEMS; h += 4)
                th.for_("v", 0, 4, [&](Scope&, Expr v) { items[h + v] = x[first + h + cast<std::int64_t>(v)]; });
            },
            [&](Scope& th) {
              for (int e = 0; e < ITEMS; ++e)
                th.if_(
                    first + e < cast<std::int64_t>(n), [&](Scope&) { items[e] = x[first + e]; },
                    [&](Scope&) { items[e] = 0; });
            });
      });
      // Their inclusive scan in registers, then the threads' totals scanned over the block.
      for (int e = 1; e < ITEMS; ++e) items[e] = items[e] + items[e - 1];
      auto mine = b.let("mine", items[ITEMS - 1]);
      Var total;
      Var upto = lib::block_inclusive_scan(b, "upto", mine, lib::Op::Sum, &total);
      // The first warp publishes the block's sum and looks back over 32 blocks at a time: each lane
      // reads one predecessor's word (blk - 1 - lane, then 32 further back), the warp waits until
      // every word of its window is published, then sums the words up to the nearest block whose
      // word holds its inclusive prefix (the lowest such lane), or all 32 and goes on further back.
      auto prefix_s = b.shared<int>("prefix_s", 1);
      b.claim(prefix_s, warp(), [&](Scope& b, View pw) {
        b.split(
            Level::Thread,
            {{32, [&](Scope& w) {
                auto lane = w.let("lane", w.id(thread(1)));
                auto before = w.let("before", 0);
                // A block of the tiles (a grid of more blocks than tiles has nothing to publish).
                auto tiles = (n + (TILE - 1)) / TILE;
                w.if_(blk > 0 && blk < tiles, [&](Scope& w) {
                  w.claim(pw, thread(1), [&](Scope& w, View) {
                    w.split(Level::Thread,
                            {{1, [&](Scope& th) { th.atomic(AtomicOp::Exch, desc, blk, word(kAggregate, total)); }}});
                  });
                  auto base = w.let("base", blk - 1);
                  auto looking = w.let("looking", true);
                  w.while_(looking, [&](Scope& w) {
                    // Lanes past block 0 read its word and count as an inclusive 0 (the index is also
                    // at most blk, which j < blk keeps anyway).
                    auto j = w.let("j", base - lane);
                    auto at_j = min(max(j, 0), blk);
                    auto d = w.atomic("d", AtomicOp::Add, desc, at_j, cast<std::uint64_t>(0));  // a read
                    auto status = w.let("status", select(j >= 0, cast<int>(d >> 62), kInclusive));
                    // Until every word of the window is published.
                    auto waiting = w.let("waiting", w.ballot("unpublished", status == 0));
                    w.while_(waiting != 0u, [&](Scope& w) {
                      if (backoff_ns > 0) w.nanosleep(backoff_ns);
                      auto again = w.atomic("again", AtomicOp::Add, desc, at_j, cast<std::uint64_t>(0));
                      w.assign(d, again);
                      w.assign(status, select(j >= 0, cast<int>(again >> 62), kInclusive));
                      w.assign(waiting, w.ballot("unpublished_yet", status == 0));
                    });
                    {  // the window: the words up to the nearest inclusive one, or all 32
                      auto done = w.ballot("done", status == kInclusive);
                      auto last = w.let("last", select(done != 0u, ffs(done) - 1, 31));
                      auto mine_d = select(lane <= last && j >= 0, cast<int>(cast<std::uint32_t>(d & 0xffffffffu)), 0);
                      auto window = lib::warp_reduce(w, "window", mine_d, lib::Op::Sum);
                      auto sum = w.shfl_idx("window_sum", window, 0);
                      w.assign(before, before + sum);
                      w.if_(
                          done != 0u, [&](Scope& w) { w.assign(looking, false); },
                          [&](Scope& w) { w.assign(base, base - 32); });
                    }
                  });
                });
                w.claim(pw, thread(1), [&](Scope& w, View one) {
                  w.split(Level::Thread, {{1, [&](Scope& th) {
                                             th.if_(blk < tiles, [&](Scope& th) {
                                               th.atomic(AtomicOp::Exch, desc, blk, word(kInclusive, before + total));
                                             });
                                             one[0] = before;
                                           }}});
                });
              }}});
      });
      // Everything before the thread's first item, then its results, 16-byte stores where all are
      // inside.
      auto before_me = b.let("before_me", prefix_s[0] + upto - mine);
      auto out = b.local_array("out", ScalarType::I32, ITEMS, at(thread(1)));
      for (int e = 0; e < ITEMS; ++e) out[e] = items[e] + before_me;
      b.partition(
          y_b, thread(1), [&](Expr i) { return t * ITEMS + i; },
          [&](Scope& b, View y_t) {
            b.group(thread(1), [&](Scope& th) {
              th.if_(
                  first + ITEMS <= cast<std::int64_t>(n),
                  [&](Scope& th) {
                    for (int h = 0; h < ITEMS; h += 4)
                      th.for_("w", 0, 4, [&](Scope&, Expr w) { y_t[h + w] = out[h + w]; });
                  },
                  [&](Scope& th) {
                    for (int e = 0; e < ITEMS; ++e)
                      th.if_(first + e < cast<std::int64_t>(n), [&](Scope&) { y_t[e] = out[e]; });
                  });
            });
          });
    });
  });
  return k.build();
}
// END FORM

namespace {
Kernel transpose_tiled(const char* name, int pad, bool async) {
  // 32 x 8 threads a 32 x 32 tile: each thread moves 4 elements, 8 rows apart, so that each has
  // several loads in flight and a barrier waits for 256 threads rather than 1,024.
  constexpr int kTile = 32, kRows = 8;
  KernelBuilder k(name);
  auto M = k.param<int>("M");
  auto N = k.param<int>("N");
  auto in = k.param<GlobalPtr<const float>>("in", extent(M * N));  // M x N
  auto out = k.param<GlobalPtr<float>>("out", extent(M * N));      // N x M
  k.block_threads(kTile * kRows);
  k.shared_budget(kTile * (kTile + pad) * 4);
  k.body([&](Scope& g) {
    // Block (i, j) writes tile (i, j) of out, which is tile (j, i) of in transposed.
    lib::for_each_tile(g, out, N, M, kTile, kTile, [&](Scope& b, const lib::MatrixTile& o) {
      auto tile = b.shared<float>("tile", kTile * (kTile + pad));
      // Coalesced reads; the tile's elements past the matrix are never read, so they need no zeros.
      lib::copy_tile(
          b, tile,
          {.src = in, .rows = M, .cols = N, .row0 = o.col0, .col0 = o.row0, .tile_rows = kTile, .tile_cols = kTile},
          {.pad = pad, .async = async, .zeros = false});
      // out(row0 + r, col0 + c) = in(col0 + c, row0 + r) = tile[c][r], for the thread's rows
      // r = t / 32 + 8 i: a warp (fixed r, 32 values of c) reads a column of the tile, 32 rows apart:
      // one bank unpadded, 32 banks with a pad of 1.
      lib::update_sub_tile(b, o, o.row, o.col, lib::SubTile{kTile / kRows, 1, kRows, 1},
                           [&](Scope&, int i, int, ElemRef e) { e = tile[o.col * (kTile + pad) + o.row + kRows * i]; });
    });
  });
  return k.build();
}
}  // namespace

// LIBRARY FORM fp8_dequant
Kernel fp8_dequant() {
  KernelBuilder k("fp8_dequant");
  auto rows = k.param<int>("rows");
  auto cols = k.param<int>("cols");
  auto q = k.param<GlobalPtr<const fp8_e4m3>>("q", extent(rows * cols));
  auto scale = k.param<GlobalPtr<const float>>("scale", extent(rows));
  auto out = k.param<GlobalPtr<float>>("out", extent(rows * cols));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each(g, out, rows * cols, [&](Scope&, Expr i, ElemRef o) { o = cast<float>(q[i]) * scale[i / cols]; });
  });
  return k.build();
}
// END FORM

// LIBRARY FORM device_scan
Kernel device_scan(lib::DeviceTile tile, const std::string& name) {
  constexpr int T = 1024;  // 8 items a thread: scan_tiled's tile of 8192
  KernelBuilder k(name);
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, T, tile)));
  k.block_threads(T);
  k.body([&](Scope& g) { lib::device_inclusive_scan(g, y, x, n, lib::Op::Sum, temp, tile); });
  return k.build();
}
// END FORM

// LIBRARY FORM device_sum
Kernel device_sum() {
  constexpr int T = 1024;
  KernelBuilder k("device_sum");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(1));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, T)));
  k.block_threads(T);
  k.body([&](Scope& g) { lib::device_reduce(g, out, x, n, lib::Op::Sum, temp); });
  return k.build();
}
// END FORM

// LIBRARY FORM radix_sort
Kernel radix_sort() {     // a pass's scatter; its counts and their places: radix_counts, radix_places
  constexpr int T = 256;  // 16 keys a thread, 8-bit digits: four passes
  KernelBuilder k("radix_sort");
  auto n = k.param<int>("n");
  auto shift = k.param<int>("shift");
  auto keys_in = k.param<GlobalPtr<const std::uint32_t>>("keys_in", extent(n));
  auto vals_in = k.param<GlobalPtr<const std::uint32_t>>("vals_in", extent(n));
  auto places = k.param<GlobalPtr<const int>>("places", extent(lib::radix_table_extent(n, T)));
  auto keys_out = k.param<GlobalPtr<std::uint32_t>>("keys_out", extent(n));
  auto vals_out = k.param<GlobalPtr<std::uint32_t>>("vals_out", extent(n));
  k.block_threads(T);
  k.body([&](Scope& g) { lib::radix_scatter(g, keys_out, vals_out, keys_in, vals_in, n, places, shift); });
  return k.build();
}
// END FORM

Kernel radix_counts() {
  constexpr int T = 256;
  KernelBuilder k("radix_counts");
  auto n = k.param<int>("n");
  auto shift = k.param<int>("shift");
  auto keys = k.param<GlobalPtr<const std::uint32_t>>("keys", extent(n));
  auto table = k.param<GlobalPtr<int>>("table", extent(lib::radix_table_extent(n, T)));
  k.block_threads(T);
  k.body([&](Scope& g) { lib::radix_count(g, table, keys, n, shift); });
  return k.build();
}

Kernel radix_histogram_all() {
  constexpr int T = 256;
  KernelBuilder k("radix_histogram_all");
  auto n = k.param<int>("n");
  auto keys = k.param<GlobalPtr<const std::uint32_t>>("keys", extent(n));
  auto hist = k.param<GlobalPtr<int>>("hist", extent(lib::radix_hist_size()));
  k.block_threads(T);
  k.body([&](Scope& g) { lib::radix_histogram(g, hist, keys, n); });
  return k.build();
}

Kernel radix_onesweep_pass() {
  constexpr int T = 256;
  KernelBuilder k("radix_onesweep_pass");
  auto n = k.param<int>("n");
  auto shift = k.param<int>("shift");
  auto keys_in = k.param<GlobalPtr<const std::uint32_t>>("keys_in", extent(n));
  auto vals_in = k.param<GlobalPtr<const std::uint32_t>>("vals_in", extent(n));
  auto hist = k.param<GlobalPtr<int>>("hist", extent(lib::radix_hist_size()));
  auto lookback = k.param<GlobalPtr<std::uint32_t>>("lookback", extent(lib::radix_lookback_extent(n, T)));
  auto keys_out = k.param<GlobalPtr<std::uint32_t>>("keys_out", extent(n));
  auto vals_out = k.param<GlobalPtr<std::uint32_t>>("vals_out", extent(n));
  k.block_threads(T);
  k.body([&](Scope& g) { lib::radix_onesweep(g, keys_out, vals_out, keys_in, vals_in, n, hist, lookback, shift); });
  return k.build();
}

Kernel radix_places() {
  constexpr int T = 256;
  KernelBuilder k("radix_places");
  auto m = k.param<int>("m");
  auto table = k.param<GlobalPtr<const int>>("table", extent(m));
  auto places = k.param<GlobalPtr<int>>("places", extent(m));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(m, T)));
  k.block_threads(T);
  k.body([&](Scope& g) { lib::device_exclusive_scan(g, places, table, m, lib::Op::Sum, temp); });
  return k.build();
}

// LIBRARY FORM compact
Kernel compact() {
  constexpr int T = 256;
  KernelBuilder k("compact");
  auto n = k.param<int>("n");
  auto threshold = k.param<float>("threshold");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  auto count = k.param<GlobalPtr<int>>("count", extent(1));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, T)));
  k.block_threads(T);
  k.body([&](Scope& g) {
    lib::device_select(
        g, out, count, x, n, [&](const Expr& v) { return v > threshold; }, temp);
  });
  return k.build();
}
// END FORM

// LIBRARY FORM byte_histogram
Kernel byte_histogram() {
  constexpr int T = 256;
  KernelBuilder k("byte_histogram");
  auto n = k.param<int>("n");
  auto bytes = k.param<GlobalPtr<const std::uint8_t>>("bytes", extent(n));
  auto hist = k.param<GlobalPtr<std::uint32_t>>("hist", extent(256));
  k.block_threads(T);
  k.body([&](Scope& g) {
    lib::device_histogram(g, hist, bytes, n, 256, [](const Expr& b) { return cast<int>(b); }, {16});
  });
  return k.build();
}
// END FORM

// LIBRARY FORM softmax
Kernel softmax() {
  KernelBuilder k("softmax");
  auto rows = k.param<int>("rows");
  auto cols = k.param<int>("cols");
  auto x = k.param<GlobalPtr<const float>>("x", extent(rows * cols));
  auto y = k.param<GlobalPtr<float>>("y", extent(rows * cols));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_row(g, y, rows, cols, [&](Scope& b, Expr row, View y_row) {
      auto in = [&](Expr c) { return x[row * cols + c]; };
      auto m = b.let("m", -std::numeric_limits<float>::infinity(), at(thread(1)));
      lib::block_strided(b, 0, cols, [&](Scope& th, Expr c) { th.assign(m, max(m, in(c))); });
      Var row_max = lib::block_reduce(b, "row_max", m, lib::Op::Max);
      auto s = b.let("s", 0.0f, at(thread(1)));
      lib::block_strided(b, 0, cols, [&](Scope& th, Expr c) { th.assign(s, s + exp(in(c)-row_max)); });
      Var total = lib::block_reduce(b, "total", s, lib::Op::Sum);
      lib::block_for_each(b, y_row, cols, [&](Scope&, Expr c, ElemRef e) { e = exp(in(c)-row_max) / total; });
    });
  });
  return k.build();
}
// END FORM

// LIBRARY FORM stencil
Kernel stencil() {
  // 32 x 8 threads a 32 x 32 tile of out, each computing 4 elements 8 rows apart (as the transposes),
  // from the tile of in and a ring of one element around it (34 x 34) staged in shared memory once,
  // with zeros past the matrix's edges: each input element is read from global memory once a tile.
  constexpr int kTile = 32, kRows = 8, kHalo = kTile + 2;
  KernelBuilder k("stencil");
  auto M = k.param<int>("M");
  auto N = k.param<int>("N");
  auto in = k.param<GlobalPtr<const float>>("in", extent(M * N));
  auto out = k.param<GlobalPtr<float>>("out", extent(M * N));
  k.block_threads(kTile * kRows);
  k.shared_budget(kHalo * kHalo * 4);
  k.body([&](Scope& g) {
    lib::for_each_tile(g, out, M, N, kTile, kTile, [&](Scope& b, const lib::MatrixTile& o) {
      auto s = b.shared<float>("s", kHalo * kHalo);  // s[(r + 1) * 34 + c + 1] is in(row0 + r, col0 + c)
      lib::copy_tile(b, s, in, M, N, o.row0 - 1, o.col0 - 1, kHalo, kHalo);  // from one row up, one column left
      lib::update_sub_tile(b, o, o.row, o.col, lib::SubTile{kTile / kRows, 1, kRows, 1},
                           [&](Scope&, int i, int, ElemRef e) {
                             Expr c = (o.row + kRows * i + 1) * kHalo + o.col + 1;
                             e = 0.2f * (s[c] + s[c - kHalo] + s[c + kHalo] + s[c - 1] + s[c + 1]);
                           });
    });
  });
  return k.build();
}
// END FORM

Kernel transpose() { return transpose_tiled("transpose", 0, false); }
Kernel transpose_padded() { return transpose_tiled("transpose_padded", 1, false); }
Kernel transpose_async() { return transpose_tiled("transpose_async", 1, true); }

// PRIMITIVE FORM vec_copy
Kernel vec_copy_primitive() {
  KernelBuilder k("vec_copy");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const float>>("in", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return gid * 4 + i; },
        [&](Scope& g, View out_t) {
          g.group(thread(1), [&](Scope& th) {
            // In 64 bits, so that the tests cannot wrap for any grid.
            auto first = th.let("first", cast<std::int64_t>(gid) * 4);
            auto len = th.let("len", cast<std::int64_t>(n));
            th.if_(
                first + 4 <= len,
                [&](Scope& th) { th.for_("i", 0, 4, [&](Scope&, Expr i) { out_t[i] = in[gid * 4 + i]; }); },
                [&](Scope& th) {
                  // The tail: the last thread copies the n % 4 elements left one by one.
                  th.for_("i", 0, 4, [&](Scope& th, Expr i) {
                    th.if_(first + cast<std::int64_t>(i) < len, [&](Scope&) { out_t[i] = in[gid * 4 + i]; });
                  });
                });
          });
        });
  });
  return k.build();
}
// END FORM

// LIBRARY FORM saxpy_vec
Kernel saxpy_vec() {
  KernelBuilder k("saxpy_vec");
  auto n = k.param<int>("n");
  auto a = k.param<float>("a");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_vector(g, y, n, f32x4, [&](Scope& th, const VecRef& y_v) {
      lib::store(th, y_v, a * lib::load(th, "xv", y_v.like(x)) + lib::load(th, "yv", y_v));
    });
  });
  return k.build();
}
// END FORM

// LIBRARY FORM vec_copy
Kernel vec_copy() {
  KernelBuilder k("vec_copy");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const float>>("in", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) { lib::copy(g, out, in, n); });
  return k.build();
}
// END FORM

namespace {
// ---------------------------------------------------------------- the tunable sgemm rungs
using Size = std::map<std::string, std::int64_t>;

/// A candidate: the kernel, one block of `threads` per bm x bn tile of C.
tune::Candidate gemm_candidate(Kernel k, const Size& s, std::int64_t bm, std::int64_t bn, std::int64_t threads) {
  const std::int64_t blocks = (s.at("M") + bm - 1) / bm * ((s.at("N") + bn - 1) / bn);
  return {std::move(k), Grid{std::max<std::int64_t>(blocks, 1), threads}, std::nullopt};
}
int value(const tune::Config& c, const char* k) { return static_cast<int>(c.at(k)); }

/// Rung 3: the tile (tile x tile threads).
tune::Space smem_space() {
  tune::Space s;
  s.param("TILE", {8, 16, 32});
  return s;
}
tune::Candidate smem_candidate(const tune::Config& c, const Size& s) {
  const int tile = value(c, "TILE");
  return gemm_candidate(sgemm_smem(tile, "sgemm_smem_" + std::to_string(tile)), s, tile, tile, tile * tile);
}

/// Rung 4: BM x BN block tiles, K by BK, TM rows of one column per thread.
tune::Space reg1d_space() {
  tune::Space s;
  s.param("BM", {32, 64, 128}).param("BN", {32, 64, 128}).param("BK", {8, 16}).param("TM", {4, 8, 16});
  s.constraint([](const tune::Config& c) {
    std::int64_t bm = c.at("BM"), bn = c.at("BN"), bk = c.at("BK"), tm = c.at("TM");
    std::int64_t threads = bm * bn / tm;
    return bm % tm == 0 && threads >= 32 && threads <= 1024 && (bm * bk) % threads == 0 && (bk * bn) % threads == 0 &&
           (bm * bk + bk * bn) * 4 <= 48 * 1024;
  });
  return s;
}
tune::Candidate reg1d_candidate(const tune::Config& c, const Size& s) {
  Reg1dShape sh{value(c, "BM"), value(c, "BN"), value(c, "BK"), value(c, "TM")};
  return gemm_candidate(sgemm_reg1d(sh), s, sh.bm, sh.bn, std::int64_t{sh.bm} * sh.bn / sh.tm);
}

/// Rung 5: BM x BN block tiles, K by BK, TM x TN per thread.
tune::Space reg2d_space() {
  tune::Space s;
  s.param("BM", {32, 64, 128}).param("BN", {32, 64, 128}).param("BK", {8, 16}).param("TM", {4, 8}).param("TN", {4, 8});
  s.constraint([](const tune::Config& c) {
    std::int64_t bm = c.at("BM"), bn = c.at("BN"), bk = c.at("BK"), tm = c.at("TM"), tn = c.at("TN");
    if (bm % tm != 0 || bn % tn != 0) return false;
    std::int64_t threads = bm / tm * (bn / tn);
    return threads >= 32 && threads <= 1024 && (bm * bk) % threads == 0 && (bk * bn) % threads == 0 &&
           (bm * bk + bk * bn) * 4 <= 48 * 1024;
  });
  return s;
}
tune::Candidate reg2d_candidate(const tune::Config& c, const Size& s) {
  Reg2dShape sh{value(c, "BM"), value(c, "BN"), value(c, "BK"), value(c, "TM"), value(c, "TN")};
  return gemm_candidate(sgemm_reg2d(sh), s, sh.bm, sh.bn, std::int64_t{sh.bm} / sh.tm * (sh.bn / sh.tn));
}

/// Rung 8: BM x BN block tiles in 4 TM x 64 warp tiles (lanes of TM x 8), K by BK, S slots of shared
/// memory (S - 1 tiles in flight), within the 48 KiB a block may have without opting in. Lanes of 16
/// rows (128 sums each, as cuBLAS's FFMA kernels hold) only in block tiles of 128 rows or more and
/// steps of k of 8 or 16: 25 shapes beside the 45 of 8 rows.
tune::Space pipelined_space() {
  tune::Space s;
  s.param("BM", {64, 128, 256}).param("BN", {64, 128, 256}).param("BK", {8, 16, 32}).param("S", {2, 3, 4});
  s.param("TM", {8, 16});
  s.constraint([](const tune::Config& c) {
    std::int64_t bm = c.at("BM"), bn = c.at("BN"), bk = c.at("BK"), stages = c.at("S"), tm = c.at("TM");
    std::int64_t threads = bm / (4 * tm) * (bn / 64) * 32;
    if (tm == 16 && (bm < 128 || bk > 16)) return false;
    return threads <= 1024 && stages * (bm * bk + bk * bn) * 4 <= 48 * 1024;
  });
  return s;
}
tune::Candidate pipelined_candidate(const tune::Config& c, const Size& s) {
  // A configuration stored before the slots (or the lane's rows) were a parameter had two (eight).
  PipelinedShape sh{value(c, "BM"), value(c, "BN"), value(c, "BK"), c.count("S") ? value(c, "S") : 2};
  sh.tm = c.count("TM") ? value(c, "TM") : 8;
  return gemm_candidate(sgemm_pipelined(sh), s, sh.bm, sh.bn, std::int64_t{sh.bm} / (4 * sh.tm) * (sh.bn / 64) * 32);
}

// ---------------------------------------------------------------- the tunable scan
/// scan_tiled: T threads of I items a block, and the look-back's sleep before each poll of a window
/// not yet published (B ns; CUB's shapes for 4-byte values on sm_90 are 128 x 24 with 648 ns).
tune::Space scan_space() {
  tune::Space s;
  s.param("T", {128, 256, 512, 1024}).param("I", {8, 12, 16, 24}).param("B", {0, 650});
  return s;
}
tune::Candidate scan_candidate(const tune::Config& c, const Size& s) {
  const int threads = value(c, "T"), items = value(c, "I"), backoff = value(c, "B");
  const std::int64_t tile = std::int64_t{threads} * items;
  return {scan_tiled(
              threads, items,
              "scan_tiled_t" + std::to_string(threads) + "_i" + std::to_string(items) + "_b" + std::to_string(backoff),
              backoff),
          Grid{std::max<std::int64_t>(1, (s.at("n") + tile - 1) / tile), threads}, std::nullopt};
}
}  // namespace

const std::vector<Example>& all() {
  static const std::vector<Example> kAll = {
      {"saxpy", "y = a*x + y, 256 threads per block", saxpy},
      {"saxpy_vec", "y = a*x + y in f32x4 vectors (one 16-byte load of x and y a thread), the tail by element",
       saxpy_vec},
      {"fp8_dequant", "an f8e4m3 matrix dequantized to f32 with a scale per row", fp8_dequant},
      {"gelu", "y = x * Phi(x), the exact GELU through erf, 256 threads per block", gelu},
      {"warp_mma", "Fig. 2: a warp issues a tf32 mma.sync", warp_mma},
      {"mma_tf32_naive", "Fig. 6: naive TF32 tensor-core GEMM through simple_mma (Fig. 5)", mma_tf32_naive},
      {"block_load_copy", "Section 6.4: BlockLoad as a block(1) device function", block_load_copy},
      {"block_reduce", "block sum: shared-memory tree, then warp shuffles", block_reduce},
      {"sgemm_naive", "sgemm rung 1: one C element per thread, uncoalesced", sgemm_naive},
      {"sgemm_coalesced", "sgemm rung 2: one C element per thread, coalesced", sgemm_coalesced},
      {"sgemm_smem",
       "sgemm rung 3: 32x32 tiles staged in shared memory",
       [] { return sgemm_smem(32); },
       {},
       std::nullopt,
       smem_space,
       smem_candidate},
      {"sgemm_reg1d",
       "sgemm rung 4: 64x64 block tiles, 8 rows of C per thread (1-D register blocking)",
       [] { return sgemm_reg1d(); },
       {},
       std::nullopt,
       reg1d_space,
       reg1d_candidate},
      {"sgemm_reg2d",
       "sgemm rung 5: 64x64 block tiles, 4x4 of C per thread (2-D register blocking)",
       [] { return sgemm_reg2d(); },
       {},
       std::nullopt,
       reg2d_space,
       reg2d_candidate},
      {"sgemm_vec",
       "sgemm rung 6: rung 5 with 16-byte vector loads of A and B (N and K specialized)",
       [] { return sgemm_vec(); },
       {{"N", 64}, {"K", 64}}},
      {"sgemm_warptile", "sgemm rung 7: 64x64 block tiles in four 32x32 warp tiles, 8x4 of C per lane",
       [] { return sgemm_warptile(); }},
      {"sgemm_pipelined",
       "sgemm rung 8: 128x128 block tiles, 8x8 of C per thread, cp.async double-buffered 16-byte copies",
       [] { return sgemm_pipelined(); },
       {},
       std::nullopt,
       pipelined_space,
       pipelined_candidate},
      {"vec_copy", "each thread copies 4 floats with one 16-byte load and store", vec_copy},
      {"mma_tf32", "tf32 tensor-core GEMM: 32x32 block tiles, four warps of two m16n8k8 mma.sync, any size", mma_tf32},
      {"igemm_mma",
       "int8 tensor-core GEMM: s8 in, i32 out, 32x32 block tiles, four warps of two m16n8k32 mma.sync, any size",
       igemm_mma},
      {"scan_lookback", "single-pass inclusive scan of ints, decoupled look-back across blocks of 256", scan_lookback},
      {"scan_tiled",
       "the look-back scan with 8 ints per thread in 16-byte loads and stores, 8192 per block of 1024",
       [] { return scan_tiled(); },
       {},
       std::nullopt,
       scan_space,
       scan_candidate},
      {"device_scan", "the tiled look-back scan as one library call: lib::device_inclusive_scan, 8192 ints per block",
       [] { return device_scan(); }},
      {"device_sum",
       "the sum of n ints as one library call: lib::device_reduce, tiles of 8192, up to 1024 blocks each "
       "taking its share of them",
       device_sum},
      {"radix_sort",
       "a pass of an LSD radix sort of u32 keys with values: each key to its digit's place, stably "
       "(lib::radix_scatter; the run adds radix_counts and radix_places, four passes)",
       radix_sort},
      {"compact", "stream compaction: the floats above a threshold, in order, and their count (lib::device_select)",
       compact},
      {"byte_histogram", "a 256-bin histogram of bytes: shared-memory counts per block (lib::device_histogram)",
       byte_histogram},
      {"softmax",
       "the softmax of each row of a matrix (rows of a run-time length): a block a row, its maximum and its sum "
       "by block reductions (lib::for_each_row, block_for_each)",
       softmax},
      {"stencil",
       "one Jacobi step of a 5-point stencil: each element the mean of itself and its 4 neighbours (zeros past the "
       "edges), through a 32x32 tile and its halo in shared memory",
       stencil},
      {"transpose", "out = in^T through a 32x32 shared tile (column reads: 32-way bank conflicts)", transpose},
      {"transpose_padded", "the same through a 32x33 tile (no bank conflicts)", transpose_padded},
      {"transpose_async", "the padded transpose with the tile staged by cp.async", transpose_async},
      {"gemm_wgmma_bf16",
       "bf16 GEMM for sm_90a: TMA tensor maps, a 4-slot mbarrier pipeline, a producer and two wgmma consumer "
       "warpgroups",
       gemm_wgmma_bf16,
       {{"M", 256}, {"N", 256}, {"K", 256}},
       Arch::SM_90a},
      {"gemm_wgmma_bf16_wide",
       "the bf16 wgmma GEMM on 128 x 256 tiles (m64n256k16), taken in groups of 16 tile rows for L2",
       gemm_wgmma_bf16_wide,
       {{"M", 256}, {"N", 512}, {"K", 256}},
       Arch::SM_90a},
      {"igemm_wgmma",
       "int8 GEMM for sm_90a: the wide wgmma GEMM's pipeline on i8 tiles, m64n256k32 summing in s32",
       [] { return igemm_wgmma(); },
       {{"M", 256}, {"N", 512}, {"K", 256}},
       Arch::SM_90a},
  };
  return kAll;
}

}  // namespace vantage::examples
