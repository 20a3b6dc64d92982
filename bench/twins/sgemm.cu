// Hand-written twins of the sgemm ladder's rungs 3 to 7 (examples/kernels/gemm_kernels.cpp): the
// same algorithm, tile shape, thread count, block order and barriers as each Vantage kernel, written
// the way a CUDA programmer would, with no check but the bounds a tile at the matrix's edge needs. A
// twin is a baseline for measurement (bench/twins/twins.hpp), never something the library runs.
//
// Every kernel computes C = alpha * A * B + beta * C for row-major A (M x K), B (K x N) and C
// (M x N), one block per tile of C in row-major tile order on a one-dimensional grid, and takes the
// Vantage kernel's parameters in its order. Tiles past the matrix's edges read as zeros; only C's
// elements inside the matrix are written.

/// The block's tile of C: its row and column of tiles (row-major over ceil(N / BN) columns).
template <int BN>
__device__ __forceinline__ void twin_tile_of(int N, int& brow, int& bcol) {
  const int tiles_per_row = (N + BN - 1) / BN;
  brow = blockIdx.x / tiles_per_row;
  bcol = blockIdx.x % tiles_per_row;
}

/// The ROWS x COLS tile at (row0, col0) of the row-major `src` (rows x cols) into `dst`, striped
/// over T threads (element i by thread i % T), zeros past the edges.
template <int ROWS, int COLS, int T>
__device__ __forceinline__ void twin_stage(float* __restrict__ dst, const float* __restrict__ src, int rows, int cols,
                                           int row0, int col0) {
  static_assert(ROWS * COLS % T == 0, "every thread stages as many elements");
#pragma unroll
  for (int l = 0; l < ROWS * COLS / T; ++l) {
    const int i = threadIdx.x + l * T, r = row0 + i / COLS, c = col0 + i % COLS;
    dst[i] = r < rows && c < cols ? src[static_cast<long long>(r) * cols + c] : 0.0f;
  }
}

// ---------------------------------------------------------------- rung 3: sgemm_smem
// 32 x 32 tiles staged in shared memory, one C element per thread (1,024 threads).
extern "C" __global__ void __launch_bounds__(1024)
    twin_sgemm_smem(int M, int N, int K, float alpha, float beta, const float* __restrict__ A,
                    const float* __restrict__ B, float* __restrict__ C) {
  constexpr int TILE = 32, T = TILE * TILE;
  __shared__ float As[TILE * TILE], Bs[TILE * TILE];
  int brow, bcol;
  twin_tile_of<TILE>(N, brow, bcol);
  const int t = threadIdx.x, tr = t / TILE, tc = t % TILE;
  float acc = 0.0f;
  for (int kb = 0; kb < K; kb += TILE) {
    twin_stage<TILE, TILE, T>(As, A, M, K, brow * TILE, kb);
    twin_stage<TILE, TILE, T>(Bs, B, K, N, kb, bcol * TILE);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += As[tr * TILE + kk] * Bs[kk * TILE + tc];
    __syncthreads();
  }
  const int r = brow * TILE + tr, c = bcol * TILE + tc;
  if (r < M && c < N) {
    float& e = C[static_cast<long long>(r) * N + c];
    e = alpha * acc + beta * e;
  }
}

// ---------------------------------------------------------------- rung 4: sgemm_reg1d
// 64 x 64 block tiles stepping K by 8; each of 512 threads computes 8 rows of one column of C.
extern "C" __global__ void __launch_bounds__(512)
    twin_sgemm_reg1d(int M, int N, int K, float alpha, float beta, const float* __restrict__ A,
                     const float* __restrict__ B, float* __restrict__ C) {
  constexpr int BM = 64, BN = 64, BK = 8, TM = 8, T = BM * BN / TM;
  __shared__ float As[BM * BK], Bs[BK * BN];
  int brow, bcol;
  twin_tile_of<BN>(N, brow, bcol);
  const int t = threadIdx.x, tr = t / BN, tc = t % BN;
  float acc[TM] = {};
  for (int kb = 0; kb < K; kb += BK) {
    twin_stage<BM, BK, T>(As, A, M, K, brow * BM, kb);
    twin_stage<BK, BN, T>(Bs, B, K, N, kb, bcol * BN);
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < BK; ++kk) {
      const float b = Bs[kk * BN + tc];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[(tr * TM + i) * BK + kk] * b;
    }
    __syncthreads();
  }
  const int c = bcol * BN + tc;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = brow * BM + tr * TM + i;
    if (r < M && c < N) {
      float& e = C[static_cast<long long>(r) * N + c];
      e = alpha * acc[i] + beta * e;
    }
  }
}

// ---------------------------------------------------------------- rungs 5 and 7: register tiles
/// A thread's TM x TN sub-tile of C, at rows row + RS * i and columns col + CS * j of the block's
/// BM x BN tile, from As (BM x BK) and Bs (BK x BN): the outer product of TM values of A and TN of B
/// per step of k.
template <int BK, int BN, int TM, int TN, int RS, int CS>
__device__ __forceinline__ void twin_steps(const float* __restrict__ As, const float* __restrict__ Bs, int row, int col,
                                           float (&acc)[TM * TN]) {
#pragma unroll 4
  for (int kk = 0; kk < BK; ++kk) {
    float a[TM], b[TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) a[i] = As[(row + RS * i) * BK + kk];
#pragma unroll
    for (int j = 0; j < TN; ++j) b[j] = Bs[kk * BN + col + CS * j];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i * TN + j] += a[i] * b[j];
  }
}

/// alpha * acc + beta * C into the thread's elements of C that are inside the matrix.
template <int BM, int BN, int TM, int TN, int RS, int CS>
__device__ __forceinline__ void twin_update(int M, int N, float alpha, float beta, float* __restrict__ C, int brow,
                                            int bcol, int row, int col, const float (&acc)[TM * TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int r = brow * BM + row + RS * i, c = bcol * BN + col + CS * j;
      if (r < M && c < N) {
        float& e = C[static_cast<long long>(r) * N + c];
        e = alpha * acc[i * TN + j] + beta * e;
      }
    }
}

// Rung 5, sgemm_reg2d: 64 x 64 x 8 block tiles, 4 x 4 of C per thread (256 threads).
extern "C" __global__ void __launch_bounds__(256)
    twin_sgemm_reg2d(int M, int N, int K, float alpha, float beta, const float* __restrict__ A,
                     const float* __restrict__ B, float* __restrict__ C) {
  constexpr int BM = 64, BN = 64, BK = 8, TM = 4, TN = 4, TC = BN / TN, T = BM / TM * TC;
  __shared__ float As[BM * BK], Bs[BK * BN];
  int brow, bcol;
  twin_tile_of<BN>(N, brow, bcol);
  const int t = threadIdx.x, tr = t / TC, tc = t % TC;
  float acc[TM * TN] = {};
  for (int kb = 0; kb < K; kb += BK) {
    twin_stage<BM, BK, T>(As, A, M, K, brow * BM, kb);
    twin_stage<BK, BN, T>(Bs, B, K, N, kb, bcol * BN);
    __syncthreads();
    twin_steps<BK, BN, TM, TN, 1, 1>(As, Bs, tr * TM, tc * TN, acc);
    __syncthreads();
  }
  twin_update<BM, BN, TM, TN, 1, 1>(M, N, alpha, beta, C, brow, bcol, tr * TM, tc * TN, acc);
}

// Rung 7, sgemm_warptile: 64 x 64 x 16 block tiles in four 32 x 32 warp tiles; lane l of a warp
// computes rows lr + 4 i and columns lc + 8 j of its warp's tile (8 x 4 per lane, 128 threads).
extern "C" __global__ void __launch_bounds__(128)
    twin_sgemm_warptile(int M, int N, int K, float alpha, float beta, const float* __restrict__ A,
                        const float* __restrict__ B, float* __restrict__ C) {
  constexpr int BM = 64, BN = 64, BK = 16, WM = 32, WN = 32, TM = 8, TN = 4, T = 128;
  constexpr int WC = BN / WN, LC = WN / TN, LR = WM / TM;
  __shared__ float As[BM * BK], Bs[BK * BN];
  int brow, bcol;
  twin_tile_of<BN>(N, brow, bcol);
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int row = warp / WC * WM + lane / LC, col = warp % WC * WN + lane % LC;
  float acc[TM * TN] = {};
  for (int kb = 0; kb < K; kb += BK) {
    twin_stage<BM, BK, T>(As, A, M, K, brow * BM, kb);
    twin_stage<BK, BN, T>(Bs, B, K, N, kb, bcol * BN);
    __syncthreads();
    twin_steps<BK, BN, TM, TN, LR, LC>(As, Bs, row, col, acc);
    __syncthreads();
  }
  twin_update<BM, BN, TM, TN, LR, LC>(M, N, alpha, beta, C, brow, bcol, row, col, acc);
}

// ---------------------------------------------------------------- rung 6: sgemm_vec
// Rung 5 at 64 x 64 x 16 with 4 x 4 per thread (256 threads), each thread staging one 16-byte vector
// of A and one of B per step of k. Like the Vantage kernel at its benchmark sizes, N and K are known
// when it is compiled (TWIN_N, TWIN_K; default 4096); a vector is copied where all four elements are
// inside the matrix and the row is a multiple of four long, element by element otherwise.
#ifndef TWIN_N
#define TWIN_N 4096
#endif
#ifndef TWIN_K
#define TWIN_K 4096
#endif
/// Four elements of row r of the row-major `src` (rows x COLS) from column c into dst[0..3].
template <int COLS>
__device__ __forceinline__ void twin_stage4(float* __restrict__ dst, const float* __restrict__ src, int rows, int r,
                                            int c) {
  if (COLS % 4 == 0 && r < rows && c + 4 <= COLS) {
    *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(&src[static_cast<long long>(r) * COLS + c]);
  } else {
#pragma unroll
    for (int v = 0; v < 4; ++v)
      dst[v] = r < rows && c + v < COLS ? src[static_cast<long long>(r) * COLS + c + v] : 0.0f;
  }
}

extern "C" __global__ void __launch_bounds__(256)
    twin_sgemm_vec(int M, int, int, float alpha, float beta, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C) {
  constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, TC = BN / TN, N = TWIN_N, K = TWIN_K;
  __shared__ __align__(16) float As[BM * BK];
  __shared__ __align__(16) float Bs[BK * BN];
  int brow, bcol;
  twin_tile_of<BN>(N, brow, bcol);
  const int t = threadIdx.x, tr = t / TC, tc = t % TC;
  float acc[TM * TN] = {};
#pragma unroll 4
  for (int kt = 0; kt < (K + BK - 1) / BK; ++kt) {
    twin_stage4<K>(&As[t * 4], A, M, brow * BM + t / (BK / 4), kt * BK + t % (BK / 4) * 4);
    twin_stage4<N>(&Bs[t * 4], B, K, kt * BK + t / (BN / 4), bcol * BN + t % (BN / 4) * 4);
    __syncthreads();
    twin_steps<BK, BN, TM, TN, 1, 1>(As, Bs, tr * TM, tc * TN, acc);
    __syncthreads();
  }
  twin_update<BM, BN, TM, TN, 1, 1>(M, N, alpha, beta, C, brow, bcol, tr * TM, tc * TN, acc);
}
