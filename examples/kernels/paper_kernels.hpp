// Vantage example kernels: builder versions of the kernels of the perspectives paper (Fig. 2, 5, 6,
// section 6.4), a block reduction, saxpy and the first rungs of an sgemm ladder. Shared by the
// examples, the golden tests, the benchmarks and the `vantage` CLI.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "vantage/vantage.hpp"

namespace vantage::examples {

/// y = a * x + y over n elements; 256 threads per block. Written with the device library
/// (`lib::for_each`); `saxpy_primitive` is the same kernel in the primitives it is made of, and both
/// generate the same CUDA.
Kernel saxpy();
Kernel saxpy_primitive();
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
/// Each thread copies 4 consecutive floats: one 16-byte vector load and store where all 4 are inside
/// n, one by one in the last thread's tail.
Kernel vec_copy();

struct Example {
  std::string name;
  std::string what;
  std::function<Kernel()> build;
};
/// Every example kernel, in a stable order.
const std::vector<Example>& all();

}  // namespace vantage::examples
