// Hand-written twin of the tf32 tensor-core GEMM (examples/kernels/gemm_kernels.cpp, mma_tf32): the
// same tiles, staging, fragments and mma.sync instructions as the Vantage kernel, with no check but
// the bounds a tile at the matrix's edge needs. A baseline for measurement (bench/twins/twins.hpp).
//
// C = alpha * A * B + beta * C (row-major, any M, N, K): 32 x 32 block tiles stepping K by 8, four
// warps each computing a 16 x 16 tile as two m16n8k8 mma.sync, 128 threads, one block per tile of C
// in row-major tile order. Tiles past the edges read as zeros.

__device__ __forceinline__ unsigned twin_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void twin_mma_tf32(float (&d)[4], const float (&a)[4], const float (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(twin_tf32(a[0])), "r"(twin_tf32(a[1])), "r"(twin_tf32(a[2])), "r"(twin_tf32(a[3])), "r"(twin_tf32(b[0])),
        "r"(twin_tf32(b[1])));
}

extern "C" __global__ void __launch_bounds__(128)
    twin_mma_tf32(int M, int N, int K, float alpha, float beta, const float* __restrict__ A,
                  const float* __restrict__ B, float* __restrict__ C) {
  constexpr int BM = 32, BN = 32, BK = 8, T = 128;
  __shared__ float As[BM * BK], Bs[BK * BN];
  const int tiles_per_row = (N + BN - 1) / BN;
  const int brow = blockIdx.x / tiles_per_row, bcol = blockIdx.x % tiles_per_row;
  const int t = threadIdx.x, warp = t / 32, lane = t % 32, g = lane / 4, q = lane % 4;
  const int wr = warp / 2 * 16, wc = warp % 2 * 16;
  float acc[2][4] = {};
  for (int kb = 0; kb < K; kb += BK) {
#pragma unroll
    for (int l = 0; l < BM * BK / T; ++l) {
      const int i = t + l * T, r = brow * BM + i / BK, c = kb + i % BK;
      As[i] = r < M && c < K ? A[static_cast<long long>(r) * K + c] : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < BK * BN / T; ++l) {
      const int i = t + l * T, r = kb + i / BN, c = bcol * BN + i % BN;
      Bs[i] = r < K && c < N ? B[static_cast<long long>(r) * N + c] : 0.0f;
    }
    __syncthreads();
    // The A fragment of the warp's 16 rows; a B fragment for each of its two 8-column halves.
    const float fa[4] = {As[(wr + g) * BK + q], As[(wr + g + 8) * BK + q], As[(wr + g) * BK + q + 4],
                         As[(wr + g + 8) * BK + q + 4]};
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const float fb[2] = {Bs[q * BN + wc + 8 * j + g], Bs[(q + 4) * BN + wc + 8 * j + g]};
      twin_mma_tf32(acc[j], fa, fb);
    }
    __syncthreads();
  }
  // Element e of accumulator j: row g + 8 (e / 2), column 8 j + 2 q + e % 2 of the warp's tile.
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = brow * BM + wr + g + e / 2 * 8, c = bcol * BN + wc + 8 * j + 2 * q + e % 2;
      if (r < M && c < N) {
        float& out = C[static_cast<long long>(r) * N + c];
        out = alpha * acc[j][e] + beta * out;
      }
    }
}

// Hand-written twin of the int8 tensor-core GEMM (igemm_mma): mma_tf32's tiles and warps on bytes.
// C (i32) = A (s8, M x K) * B (s8, K x N), row-major, any M, N, K: 32 x 32 block tiles stepping K by
// 32, four warps each computing a 16 x 16 tile as two m16n8k32 mma.sync; tiles past the edges read as
// zeros. Fragment register r holds four bytes: A (g + 8 (r % 2), 4 q + 16 (r / 2) ..), B (4 q + 16 r .., g).
__device__ __forceinline__ void twin_mma_s8(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ unsigned twin_bytes(signed char b0, signed char b1, signed char b2, signed char b3) {
  return static_cast<unsigned char>(b0) | static_cast<unsigned char>(b1) << 8 | static_cast<unsigned char>(b2) << 16 |
         static_cast<unsigned>(static_cast<unsigned char>(b3)) << 24;
}

extern "C" __global__ void __launch_bounds__(128)
    twin_igemm_mma(int M, int N, int K, const signed char* __restrict__ A, const signed char* __restrict__ B,
                   int* __restrict__ C) {
  constexpr int BM = 32, BN = 32, BK = 32, T = 128;
  __shared__ __align__(16) signed char As[BM * BK], Bs[BK * BN];
  const int tiles_per_row = (N + BN - 1) / BN;
  const int brow = blockIdx.x / tiles_per_row, bcol = blockIdx.x % tiles_per_row;
  const int t = threadIdx.x, warp = t / 32, lane = t % 32, g = lane / 4, q = lane % 4;
  const int wr = warp / 2 * 16, wc = warp % 2 * 16;
  int acc[2][4] = {};
  for (int kb = 0; kb < K; kb += BK) {
#pragma unroll
    for (int l = 0; l < BM * BK / T; ++l) {
      const int i = t + l * T, r = brow * BM + i / BK, c = kb + i % BK;
      As[i] = r < M && c < K ? A[static_cast<long long>(r) * K + c] : 0;
    }
#pragma unroll
    for (int l = 0; l < BK * BN / T; ++l) {
      const int i = t + l * T, r = kb + i / BN, c = bcol * BN + i % BN;
      Bs[i] = r < K && c < N ? B[static_cast<long long>(r) * N + c] : 0;
    }
    __syncthreads();
    unsigned fa[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const signed char* row = &As[(wr + g + 8 * (r % 2)) * BK + 4 * q + 16 * (r / 2)];
      fa[r] = twin_bytes(row[0], row[1], row[2], row[3]);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      unsigned fb[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const signed char* col = &Bs[(4 * q + 16 * r) * BN + wc + 8 * j + g];
        fb[r] = twin_bytes(col[0], col[BN], col[2 * BN], col[3 * BN]);
      }
      twin_mma_s8(acc[j], fa, fb);
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = brow * BM + wr + g + e / 2 * 8, c = bcol * BN + wc + 8 * j + 2 * q + e % 2;
      if (r < M && c < N) C[static_cast<long long>(r) * N + c] = acc[j][e];
    }
}
