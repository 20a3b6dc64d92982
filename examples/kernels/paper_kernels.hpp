// Vantage example kernels: builder versions of the kernels of the perspectives paper (Fig. 2, 5, 6,
// section 6.4), a block reduction, saxpy and the first rungs of an sgemm ladder. Shared by the
// examples, the golden tests, the benchmarks and the `vantage` CLI.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "vantage/vantage.hpp"

namespace vantage::examples {

/// y = a * x + y over n elements; 256 threads per block. Written with the device library
/// (`lib::for_each`); `saxpy_primitive` is the same kernel in the primitives it is made of, and both
/// generate the same CUDA.
Kernel saxpy();
Kernel saxpy_primitive();
/// The same in f32x4 vectors (include/vantage/vector.hpp): each of 256 threads a block loads 4
/// elements of x and of y as one 16-byte access each and stores 4 of y; the thread holding the tail
/// runs it element by element.
Kernel saxpy_vec();
/// Fig. 2: one warp fills fragments and issues a tf32 `mma.sync`; each thread stores its D fragment.
Kernel warp_mma();
/// Fig. 5: `simple_mma`, a thread(32) device function that loads 16x8 and 8x8 tf32 tiles with strides
/// k and n, multiplies and accumulates into c (partitioned to threads for the write).
DeviceFunction simple_mma(MemSpace space = MemSpace::Global);
/// Fig. 6: naive TF32 tensor-core GEMM, one 16x8 tile of C per block of 32 threads, staged in shared
/// memory, the mma issued by a claimed warp through `simple_mma`.
Kernel mma_tf32_naive();
/// Section 6.4: CUB-style BlockLoad as a block(1) device function.
DeviceFunction block_load();
/// A kernel that stages a tile in shared memory and gives each thread its items through block_load.
Kernel block_load_copy();
/// Sum of each block's 256 floats (of n) into out[block], with the device library: shuffles within each
/// warp, the warps' sums through shared memory, shuffles again (`lib::block_reduce`), one barrier.
Kernel block_reduce();
/// The same sums in primitives only, as a shared-memory tree down to 64 partial sums, then shuffles.
Kernel block_reduce_primitive();
/// sgemm rung 1 (naive, uncoalesced) and rung 2 (coalesced): one C element per thread.
Kernel sgemm_naive();
Kernel sgemm_coalesced();
/// sgemm rung 3: tile x tile blocks staged in shared memory, tile * tile threads per block; any M, N
/// and K (edge tiles are padded with zeros and their stores guarded).
Kernel sgemm_smem(int tile = 32, const std::string& name = "");
/// The same rung in primitives only (`sgemm_smem` is written with lib::for_each_tile, stage_tile and
/// update_own).
Kernel sgemm_smem_primitive(int tile = 32, const std::string& name = "");  ///< name: "sgemm_smem[_TILE]" by default
/// sgemm rung 4's shape: a block computes a bm x bn tile of C, stepping K by bk; each of its
/// bm * bn / tm threads computes tm consecutive rows of one column, in registers. Needs bm % tm == 0,
/// (bm * bk) and (bk * bn) multiples of the thread count, and at most 1024 threads.
struct Reg1dShape {
  int bm = 64, bn = 64, bk = 8, tm = 8;
};
/// sgemm rung 4 (1-D register blocking); any M, N and K (edge tiles padded, stores guarded).
Kernel sgemm_reg1d(const Reg1dShape& shape = {}, const std::string& name = "");
/// sgemm rung 5's shape: a block computes a bm x bn tile of C, stepping K by bk; each of its
/// (bm / tm) * (bn / tn) threads computes a tm x tn sub-tile in registers, from tm values of A and tn
/// of B read from shared memory per step of k. Needs bm % tm == 0, bn % tn == 0, (bm * bk) and
/// (bk * bn) multiples of the thread count, and at most 1024 threads.
struct Reg2dShape {
  int bm = 64, bn = 64, bk = 8, tm = 4, tn = 4;
};
/// sgemm rung 5 (2-D register blocking); any M, N and K (edge tiles padded, stores guarded).
Kernel sgemm_reg2d(const Reg2dShape& shape = {}, const std::string& name = "");
/// sgemm rung 6: rung 5 at 64 x 64 x 16 with 4 x 4 per thread (256 threads), M, N and K specialized,
/// each thread staging one 16-byte vector of A and one of B per step of k. A vector copy is emitted
/// only where lowering proves all four elements inside A (or B) and the addresses 16-byte aligned
/// (K, or N, a multiple of 4); other sizes, and the tiles at the matrix's edges, copy element by
/// element with zeros past the edge. Any M, N and K.
Kernel sgemm_vec(const std::string& name = "");
/// sgemm rung 7 (warp tiling): a 64 x 64 block tile in four 32 x 32 warp tiles (a partition of the
/// block's tile at thread(32), then of each warp's tile at thread(1)); lane l computes rows
/// l / 8 + 4i (i < 8) and columns l % 8 + 8j (j < 4) of its warp's tile, so that a warp's shared
/// reads of a step of k touch 4 rows of A and 8 columns of B, broadcast across the lanes. 128
/// threads; any M, N and K.
Kernel sgemm_warptile(const std::string& name = "");
/// sgemm rung 8's shape: a bm x bn block tile (bm a multiple of 4 * tm, bn of 64) in warp tiles of
/// 4 * tm x 64, each lane computing tm x 8 of C, bm / (4 * tm) * bn / 64 * 32 threads (at most 1024);
/// k stepped by bk (a multiple of 4). Another shape throws std::invalid_argument.
struct PipelinedShape {
  int bm = 128, bn = 128, bk = 8;
  int stages = 2;      ///< slots of shared memory: tiles in flight while one is multiplied, plus one
  int min_blocks = 0;  ///< KernelBuilder::min_blocks_per_sm (0: as the compiler likes)
  int tm = 8;          ///< rows of C a lane computes, 8 or 16 (warp tiles of 4 * tm x 64)
};
/// sgemm rung 8: tiles of A and B copied by 16-byte `cp.async` into one of `stages` slots of shared
/// memory (lib::start_tile_copy) while another slot's tile is multiplied, one barrier per step of k
/// (the copies of the next stages - 2 tiles stay in flight across it); each
/// lane reads 4 steps of k of its tm rows of A, and 8 columns of B per step, as 16-byte shared loads
/// (an outer product of tm x 8 per step). Any M, N and K (edge tiles padded with zeros, stores
/// guarded; 16-byte copies where a row of A or B is a multiple of 4 elements).
Kernel sgemm_pipelined(const PipelinedShape& shape = {}, const std::string& name = "");
/// Each thread copies 4 consecutive floats: one 16-byte vector load and store where all 4 are inside
/// n, one by one in the last thread's tail.
Kernel vec_copy();  ///< written with lib::copy
/// The same in primitives only.
Kernel vec_copy_primitive();

/// C = alpha * A * B + beta * C on tensor cores in tf32 (inputs rounded to tf32, products accumulated
/// in f32): 32 x 32 block tiles staged in shared memory (zeros past the edges), four warps each
/// computing a 16 x 16 tile as two m16n8k8 `mma_sync`s per step of 8 in K, with the fragments loaded
/// by lib::mma_load_a / mma_load_b. 128 threads; any M, N and K.
Kernel mma_tf32();
/// int8 tensor-core GEMM: C (i32) = A (s8, M x K) * B (s8, K x N), mma_tf32's tiles with m16n8k32 mmas.
Kernel igemm_mma();

/// Single-pass inclusive scan of n ints (y[i] = x[0] + ... + x[i], wrapping) with decoupled look-back
/// (Merrill and Garland): block b scans its 256 elements (lib::block_inclusive_scan), publishes their
/// sum in desc[b], and its first thread walks back over the words of earlier blocks, waiting on each,
/// until one holds the inclusive sum of everything before it. `desc` (one u64 per block) must be zero
/// at launch; n > 0. Like CUB's scan, it relies on a block never waiting for a block of higher index
/// that has not started: the GPU dispatches blocks in index order, the CPU backend takes them in
/// increasing chunks, and the interpreter runs them in order.
Kernel scan_lookback();

/// The same scan with `items` ints per thread (by default 8 on 1024 threads, 8192 per block): each
/// thread loads its consecutive items as 16-byte vectors where all are inside n (one by one, zeros
/// past n, in the last block), scans them in registers, the threads' totals are scanned over the
/// block, the first warp looks back over 32 blocks at a time, and each thread stores its results as
/// vectors. `desc` holds ceil(n / (threads * items)) words, zero at launch; n > 0. Threads: a
/// multiple of 32 from 64 to 1024; items: a multiple of 4 up to 32. With `backoff_ns` > 0 (at most
/// kMaxNanosleepNs) the look-back sleeps that long (Scope::nanosleep) before each poll of a window
/// not yet published, as CUB's scan does (648 ns for 4-byte values on sm_90), so that the polls leave
/// L2 to the blocks publishing.
Kernel scan_tiled(int threads = 1024, int items = 8, const std::string& name = "", int backoff_ns = 0);

/// y = the softmax of each row of the rows x cols row-major x: y(r, c) = exp(x(r, c) - m_r) / s_r, with
/// m_r the row's maximum and s_r the sum of exp(x(r, c) - m_r), one block of 256 threads a row
/// (`lib::for_each_row`): each thread reads columns t, t + 256, ... (`block_strided`), the maximum and
/// the sum are block reductions, and each thread writes its columns (`block_for_each`). Launch `rows`
/// blocks; any rows and cols.
Kernel softmax();

/// out = one Jacobi step of a 5-point stencil over the M x N row-major `in`: out(r, c) = 0.2 * (in(r, c) +
/// in(r - 1, c) + in(r + 1, c) + in(r, c - 1) + in(r, c + 1)), summed in that order, with zeros past the
/// matrix's edges. A block of 256 threads computes a 32 x 32 tile from the 34 x 34 tile around it (its
/// halo), staged in shared memory by `lib::copy_tile` from (row0 - 1, col0 - 1), so that the first row
/// and column of tiles read zeros above and left of the matrix. Any M and N.
Kernel stencil();

/// out (N x M) = in (M x N) transposed, through a 32 x 32 shared tile per block (1024 threads): reads
/// and writes of global memory coalesced, the tile written by rows and read by columns. `transpose`
/// keeps the tile 32 x 32, so a warp's column read hits one bank 32 times; `transpose_padded` pads
/// the rows to 33, which spreads the column over the 32 banks; `transpose_async` stages the padded
/// tile with cp.async. Any M and N.
Kernel transpose();
Kernel transpose_padded();
Kernel transpose_async();

/// y[i] = x[i] * Phi(x[i]) = x[i] / 2 * (1 + erf(x[i] / sqrt(2))): the exact GELU of a transformer's
/// feed-forward layer, elementwise (lib::for_each, 256 threads).
Kernel gelu();

/// out (rows x cols, f32) = q (an f8e4m3 matrix) dequantized: each element converted to f32 (exact)
/// and multiplied by its row's scale. 256 threads, one element each (lib::for_each).
Kernel fp8_dequant();

/// The device library's device-wide operations as whole kernels (lib::device_*, docs/library.md).
/// `device_scan`: scan_tiled in one call, y = the inclusive sums of x, 1024 threads of 8 items;
/// `temp` (lib::device_temp_words of it) zero when allocated, and left zero by every launch.
/// With `tile`, in that many items a thread and with that look-back back-off (lib::DeviceTile).
Kernel device_scan(lib::DeviceTile tile = {}, const std::string& name = "device_scan");
/// out[0] = the sum of x (wrapping), lib::device_reduce on device_scan's tiles, `temp` as its.
Kernel device_sum();
/// A radix sort of u32 keys with u32 values, 8-bit digits, four passes of three kernels each:
/// `radix_counts` (each tile's keys by digit), `radix_places` (their exclusive scan) and `radix_sort`
/// (the scatter, the example itself). 256 threads of 16 keys.
Kernel radix_sort();
Kernel radix_counts();
Kernel radix_places();
/// The one-sweep sort's kernels (lib::radix_histogram, lib::radix_onesweep), 256 threads, 16 keys a
/// thread, 8-bit digits: one histogram launch, then four passes. Timed by bench_speed beside the
/// three-kernel passes above (variant radix_sort_onesweep); not examples of their own.
Kernel radix_histogram_all();
Kernel radix_onesweep_pass();
/// Stream compaction: the elements of x above `threshold`, in their order, to out, and their number
/// to count[0]; 256 threads of 8 items, `temp` as device_scan's.
Kernel compact();
/// hist[b] += the number of bytes equal to b, for 256 bins: 256 threads of 16 bytes, each block
/// counting in shared memory.
Kernel byte_histogram();

struct Example {
  std::string name;
  std::string what;
  std::function<Kernel()> build;
  /// Values of its specialized parameters for a tool that compiles it without sizes (most have none).
  std::map<std::string, std::int64_t> sizes = {};
  /// The target it needs, where the default (sm_90) lacks an instruction it uses (wgmma: sm_90a).
  std::optional<Arch> arch = std::nullopt;
  /// `base` with the example's sizes added where `base` gives none, and its target where it needs one.
  Spec spec(Spec base = {}) const {
    for (const auto& [k, v] : sizes) base.sizes.emplace(k, v);
    if (arch) base.arch = *arch;
    return base;
  }
  /// Whether the CPU backend runs it. Every example runs on the interpreter; wgmma, TMA and mbarriers
  /// run there and on a GPU only (the CPU backend stops at the first with UnsupportedOnDevice).
  bool runs_on_cpu() const { return !arch; }
  /// An example whose shape can be tuned (`vantage tune NAME`, kernels/tuning.hpp): its space of
  /// configurations, and the kernel and grid of one configuration for a problem of sizes `size` (its
  /// run's names: M, N, K). Null for the others.
  std::function<tune::Space()> space = nullptr;
  std::function<tune::Candidate(const tune::Config&, const std::map<std::string, std::int64_t>& size)> candidate =
      nullptr;
  bool tunable() const { return space && candidate; }
  /// A kernel a library registered (`vantage --load`, vantage/registry.hpp): its launch at sizes, for
  /// `vantage run` and `vantage tune`. Null for the built-in examples (their runs: kernels/runs.hpp).
  std::function<KernelRun(const Device&, const Sizes&)> run = nullptr;
};
/// Every example kernel, in a stable order.
const std::vector<Example>& all();
/// The bf16 wgmma GEMM for sm_90a (TMA, an mbarrier pipeline, warp specialization).
Kernel gemm_wgmma_bf16();
/// Rung 2: the same on 128 x 256 tiles (m64n256k16), taken in groups of 16 tile rows, so that the
/// blocks running at one time share their rows of A and columns of Bt in L2.
Kernel gemm_wgmma_bf16_wide();
/// Either, named `name`, on 128 x `bn` tiles (128 or 256) taken in groups of `group_rows` tile rows
/// (lib::for_each_tile_grouped; 1: row by row), with `in_flight` (0 or 1) of a consumer's wgmma
/// groups left running as it goes on to the next K step. With `tma_store` (bn 256) each consumer
/// warpgroup stores its 64 x 256 of C by TMA, 64 x 32 at a time through two swizzled buffers.
Kernel wgmma_gemm(const std::string& name, int bn, int group_rows, int in_flight = 0, bool tma_store = false);
/// Rung 3: rung 2 as a persistent kernel. Launch one block an SM (any number up to the tiles): block
/// b takes tiles b, b + G, ... of the grouped order, its pipeline running on from one to the next.
/// With `cluster` 2, in clusters of two blocks, one tile above the other at each of their tiles, that
/// share each Bt tile as wgmma_gemm_cluster's do (`group_rows` even; M a multiple of 256; an even grid).
Kernel wgmma_gemm_persistent(const std::string& name, int group_rows, int in_flight = 0, int cluster = 1);
/// Rung 2 (BN 256) in clusters of two blocks, one tile above the other, that share each Bt tile: each
/// block's producer loads half of it, multicast into both (`group_rows` even; M a multiple of 256).
Kernel wgmma_gemm_cluster(const std::string& name, int group_rows, int in_flight = 0);
/// The int8 GEMM on Hopper: rung 2 of C (i32, M x N) = A (i8, M x K) * Bt^T (Bt: i8, N x K), the
/// products summed in s32 (wrapping) by wgmma's integer form (m64n256k32.s32.s8.s8): 128 x 256 tiles
/// in groups of 16 tile rows, 128-deep K steps (one 128-byte row of each tile), the same TMA and
/// mbarrier pipeline and warp specialization. M a multiple of 128, N of 256, K of 128. With
/// `unsigned_a`, A holds u8 (activations after a zero point, say) and Bt i8: `.s32.u8.s8`.
Kernel igemm_wgmma(const std::string& name = "igemm_wgmma", int in_flight = 0, bool unsigned_a = false);

}  // namespace vantage::examples
