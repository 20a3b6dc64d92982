// Hand-written twin of the bf16 wgmma GEMMs (examples/kernels/wgmma_kernels.cpp: gemm_wgmma_bf16 and
// gemm_wgmma_bf16_wide): the same tiles, pipeline, warp roles and instructions as the Vantage kernels,
// written as a CUDA programmer would, with no check (the sizes must divide the tiles). A baseline for
// measurement (bench/twins/twins.hpp), compiled for sm_90a.
//
// C (f32, M x N, row-major) = A (bf16, M x K) * Bt^T (Bt: bf16, N x K), both K-major. 128 x BN tiles
// of C (BN 128, or 256 for the wide one), 64-deep K steps through 4 slots of shared memory in the
// 128-byte swizzle, filled by TMA (the tensor maps A_map: boxes of 128 rows x 64, Bt_map: BN rows x
// 64, made by the caller) under full/empty mbarriers. 384 threads: warpgroups 0 and 1 consume (rows
// 0..63 and 64..127 of the tile, four m64nBNk16 wgmma a step, waited for at once), one thread of
// warpgroup 2 produces. Tiles in row-major order (BN 128) or walked down the columns of groups of 16
// tile rows (BN 256). M % 128 == 0, N % BN == 0, K % 64 == 0.
#include <cuda_bf16.h>

// The sizes, as the Vantage kernel specializes them: fixed when the twin is compiled (TWIN_M, TWIN_N,
// TWIN_K; default 4096); the arguments M, N and K must equal them.
#ifndef TWIN_M
#define TWIN_M 4096
#endif
#ifndef TWIN_N
#define TWIN_N 4096
#endif
#ifndef TWIN_K
#define TWIN_K 4096
#endif

/// A TMA tensor map (CUtensorMap): 128 opaque bytes, passed by value.
struct alignas(128) TwinTensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned twin_smem(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// A K-major tile's wgmma descriptor in the 128-byte swizzle: its low word holds the address / 16
/// (under 2^14: a shared window is under 256 KiB, so a tile further on is the low word plus its offset
/// / 16) and the leading byte offset 1 (unused by this layout); its high word the 8-row groups' stride
/// (1024 bytes / 16) and the swizzle mode.
__device__ __forceinline__ unsigned twin_desc_lo(const void* p) { return (twin_smem(p) >> 4) | (1u << 16); }
__device__ __forceinline__ unsigned long long twin_desc(unsigned lo) { return (0x40000040ull << 32) | lo; }

__device__ __forceinline__ void twin_wait(unsigned long long* bar, int parity) {
  asm volatile(
      "{ .reg .pred p; TWIN_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra TWIN_WAIT; }" ::"r"(
          twin_smem(bar)),
      "r"(parity)
      : "memory");
}

// d += A (64 x 16, K-major in shared memory) * B (16 x 128): one warpgroup's wgmma, operands by descriptor.
__device__ __forceinline__ void twin_wgmma_n128(float (&d)[64], unsigned long long a, unsigned long long b) {
  asm volatile(
      "{ wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, 1, 1, 1, 0, 0; }"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b)
      : "memory");
}

/// Keeps the accumulators in registers across the wgmma fence and wait (the compiler may not move
/// their reads and writes past them).
__device__ __forceinline__ void twin_fence_acc_n128(float (&d)[64]) {
  asm volatile(""
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
                 "+f"(d[63]));
}

// d += A (64 x 16, K-major in shared memory) * B (16 x 256): one warpgroup's wgmma, operands by descriptor.
__device__ __forceinline__ void twin_wgmma_n256(float (&d)[128], unsigned long long a, unsigned long long b) {
  asm volatile(
      "{ wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, 1, 1, 1, 0, 0; }"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
        "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]),
        "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]),
        "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]),
        "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]),
        "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),
        "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]),
        "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]),
        "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(a), "l"(b)
      : "memory");
}

/// Keeps the accumulators in registers across the wgmma fence and wait (the compiler may not move
/// their reads and writes past them).
__device__ __forceinline__ void twin_fence_acc_n256(float (&d)[128]) {
  asm volatile(""
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                 "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                 "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                 "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                 "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                 "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]),
                 "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
                 "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]),
                 "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]),
                 "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]));
}

/// A consumer warpgroup: rows WG * 64.. of the block's tile (WG a constant, as each warpgroup's own
/// code path makes it, so that its descriptors are uniform), then its accumulators into C.
template <int BN, int WG>
__device__ __forceinline__ void twin_consume(float* __restrict__ C, const __nv_bfloat16* As, const __nv_bfloat16* Bs,
                                             unsigned long long* full, unsigned long long* empty, int brow, int bcol) {
  constexpr int BM = 128, BK = 64, STAGES = 4, ACC = BN / 2, N = TWIN_N, K = TWIN_K;
  const int t = threadIdx.x;
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  float acc[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
  // The descriptors of slot 0's first k16 step; a slot and a k16 step move the start address field
  // (bytes / 16) by a constant.
  const unsigned a0 = twin_desc_lo(&As[WG * 64 * BK]), b0 = twin_desc_lo(&Bs[0]);
  for (int kt = 0; kt < K / BK; ++kt) {
    const int s = kt % STAGES;
    twin_wait(&full[s], kt / STAGES % 2);
    if constexpr (BN == 128) {
      twin_fence_acc_n128(acc);
    } else {
      twin_fence_acc_n256(acc);
    }
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const unsigned long long a = twin_desc(a0 + (s * BM * BK * 2 + kk * 32) / 16);
      const unsigned long long b = twin_desc(b0 + (s * BN * BK * 2 + kk * 32) / 16);
      if constexpr (BN == 128) {
        twin_wgmma_n128(acc, a, b);
      } else {
        twin_wgmma_n256(acc, a, b);
      }
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    if constexpr (BN == 128) {
      twin_fence_acc_n128(acc);
    } else {
      twin_fence_acc_n256(acc);
    }
    asm volatile("{ .reg .b64 state; mbarrier.arrive.shared::cta.b64 state, [%0]; }" ::"r"(twin_smem(&empty[s]))
                 : "memory");
  }
  // wgmma's D: element i at row warp * 16 + lane / 4 + 8 * (i / 2 % 2), column 8 * (i / 4) +
  // 2 * (lane % 4) + i % 2 of the warpgroup's 64 rows; each pair of columns one 8-byte store.
  const int row = brow * BM + WG * 64 + t % 128 / 32 * 16 + t % 32 / 4;
  float* c = C + static_cast<long long>(row) * N + bcol * BN + 2 * (t % 4);
#pragma unroll
  for (int i = 0; i < ACC; i += 2) {
    float* at = c + static_cast<long long>(8 * (i / 2 % 2)) * N + 8 * (i / 4);
    *reinterpret_cast<float2*>(at) = make_float2(acc[i], acc[i + 1]);
  }
}

template <int BN, int GROUP>
__device__ __forceinline__ void twin_wgmma_gemm(float* __restrict__ C, const TwinTensorMap& a_map,
                                                const TwinTensorMap& b_map) {
  constexpr int BM = 128, BK = 64, STAGES = 4, M = TWIN_M, N = TWIN_N, K = TWIN_K;
  extern __shared__ __align__(16) unsigned char twin_smem_raw[];
  // The swizzled tiles want 1024-byte alignment.
  unsigned char* smem = twin_smem_raw + (1024u - twin_smem(twin_smem_raw) % 1024u) % 1024u;
  __nv_bfloat16* As = reinterpret_cast<__nv_bfloat16*>(smem);
  __nv_bfloat16* Bs = reinterpret_cast<__nv_bfloat16*>(smem + STAGES * BM * BK * 2);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * (BM + BN) * BK * 2);
  unsigned long long* empty = full + STAGES;
  const int t = threadIdx.x;
  // The block's tile.
  const int per_row = N / BN;
  int brow, bcol;
  if (GROUP == 1) {
    brow = blockIdx.x / per_row;
    bcol = blockIdx.x % per_row;
  } else {
    const int per_group = per_row * GROUP, first = blockIdx.x / per_group * GROUP;
    const int in_group = min(M / BM - first, GROUP), local = blockIdx.x % per_group;
    brow = first + local % in_group;
    bcol = local / in_group;
  }
  const int k_tiles = K / BK;
  if (t == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(twin_smem(&full[s])) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 256;" ::"r"(twin_smem(&empty[s])) : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (t < 128) {
    twin_consume<BN, 0>(C, As, Bs, full, empty, brow, bcol);
  } else if (t < 256) {
    twin_consume<BN, 1>(C, As, Bs, full, empty, brow, bcol);
  } else {
    // The producer warpgroup: one thread loads both tiles of each step into its slot.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 256) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        if (kt >= STAGES) twin_wait(&empty[s], (kt / STAGES - 1) % 2);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(twin_smem(&full[s])),
                     "r"((BM + BN) * BK * 2)
                     : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
            "[%4];" ::"r"(twin_smem(&As[s * BM * BK])),
            "l"(reinterpret_cast<unsigned long long>(&a_map)), "r"(kt * BK), "r"(brow * BM), "r"(twin_smem(&full[s]))
            : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
            "[%4];" ::"r"(twin_smem(&Bs[s * BN * BK])),
            "l"(reinterpret_cast<unsigned long long>(&b_map)), "r"(kt * BK), "r"(bcol * BN), "r"(twin_smem(&full[s]))
            : "memory");
      }
    }
  }
}

/// The dynamic shared memory the twins take: the slots, the barriers and 1024 bytes to align them.
#define TWIN_WGMMA_SHARED(BN) (4 * (128 + (BN)) * 64 * 2 + 64 + 1024)

extern "C" __global__ void __launch_bounds__(384, 1)
    twin_gemm_wgmma_bf16(int M, int N, int K, const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ Bt,
                         float* __restrict__ C, const __grid_constant__ TwinTensorMap A_map,
                         const __grid_constant__ TwinTensorMap Bt_map) {
  twin_wgmma_gemm<128, 1>(C, A_map, Bt_map);
}

extern "C" __global__ void __launch_bounds__(384, 1)
    twin_gemm_wgmma_bf16_wide(int M, int N, int K, const __nv_bfloat16* __restrict__ A,
                              const __nv_bfloat16* __restrict__ Bt, float* __restrict__ C,
                              const __grid_constant__ TwinTensorMap A_map,
                              const __grid_constant__ TwinTensorMap Bt_map) {
  twin_wgmma_gemm<256, 16>(C, A_map, Bt_map);
}
