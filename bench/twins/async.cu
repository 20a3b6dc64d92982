// Hand-written twin of the transpose whose tile is staged by cp.async (examples/kernels/paper_kernels.cpp,
// transpose_async): a baseline for measurement (bench/twins/twins.hpp), beside copy.cu's.

// The padded transpose with the tile staged by cp.async (4 bytes per copy, 4 copies per thread of
// 256, 8 rows apart): copies issued only inside the matrix, waited for, then one barrier.
extern "C" __global__ void __launch_bounds__(256)
    twin_transpose_async(int M, int N, const float* __restrict__ in, float* __restrict__ out) {
  constexpr int TILE = 32, ROWS = 8, PAD = 1;
  __shared__ float tile[TILE * (TILE + PAD)];
  const int tiles_per_row = (M + TILE - 1) / TILE;
  const int brow = blockIdx.x / tiles_per_row, bcol = blockIdx.x % tiles_per_row;
  const int t = threadIdx.x, tr = t / TILE, tc = t % TILE;
#pragma unroll
  for (int i = 0; i < TILE; i += ROWS) {
    const int r = bcol * TILE + tr + i, c = brow * TILE + tc;
    if (r < M && c < N) {
      const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&tile[(tr + i) * (TILE + PAD) + tc]));
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(&in[static_cast<long long>(r) * N + c])
                   : "memory");
    }
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
#pragma unroll
  for (int i = 0; i < TILE; i += ROWS) {
    const int orow = brow * TILE + tr + i, ocol = bcol * TILE + tc;
    if (orow < N && ocol < M) out[static_cast<long long>(orow) * M + ocol] = tile[tc * (TILE + PAD) + tr + i];
  }
}

// sgemm rung 8 (sgemm_pipelined): C = alpha * A * B + beta * C through 128 x 128 block tiles, k stepped
// by 8, 256 threads; the tiles of A and B are copied by 16-byte cp.async into one of two slots while
// the other slot is multiplied, one barrier per step. Lane l of warp w computes rows
// w / 2 * 32 + l / 8 * 8 + i and columns w % 2 * 64 + l % 8 * 4 + j and that + 32 (i < 8, j < 4).
// A vector of 4 elements is one 16-byte copy where it lies inside the matrix and rows are a multiple
// of 4 elements; otherwise its elements inside are copied alone and those outside are zeros.
namespace twin_pipelined {
constexpr int BM = 128, BN = 128, BK = 8, T = 256, TM = 8, TN = 8;

__device__ __forceinline__ void start(float* __restrict__ dst, const float* __restrict__ src, int rows, int cols,
                                      int r, int c) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const float* at = src + static_cast<long long>(r) * cols + c;
  if (r < rows && c + 4 <= cols && cols % 4 == 0) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(at) : "memory");
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (r < rows && c + e < cols)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d + 4 * e), "l"(at + e) : "memory");
      else
        dst[e] = 0.0f;
    }
  }
}
}  // namespace twin_pipelined

extern "C" __global__ void __launch_bounds__(256)
    twin_sgemm_pipelined(int M, int N, int K, float alpha, float beta, const float* __restrict__ A,
                         const float* __restrict__ B, float* __restrict__ C) {
  using namespace twin_pipelined;
  __shared__ __align__(16) float As[2][BM * BK];
  __shared__ __align__(16) float Bs[2][BK * BN];
  const int tiles_per_row = max((N + BN - 1) / BN, 1);
  const int brow = blockIdx.x / tiles_per_row, bcol = blockIdx.x % tiles_per_row;
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int row = warp / 2 * 32 + lane / 8 * TM, col = warp % 2 * 64 + lane % 8 * 4;
  // This thread's vector of each tile: A's at (t / 2, t % 2 * 4), B's at (t / 32, t % 32 * 4).
  const int a_row = brow * BM + t / 2, b_col = bcol * BN + t % 32 * 4;
  auto start_tile = [&](int kt, int slot) {
    start(&As[slot][t * 4], A, M, K, a_row, kt * BK + t % 2 * 4);
    start(&Bs[slot][t * 4], B, K, N, kt * BK + t / 32, b_col);
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  float acc[TM * TN] = {};
  const int tiles = (K + BK - 1) / BK;
  start_tile(0, 0);
  for (int kt = 0; kt < tiles; ++kt) {
    const int slot = kt % 2;
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();  // every thread's copies of tile kt are in; everyone is done with the other slot
    if (kt + 1 < tiles) start_tile(kt + 1, 1 - slot);
#pragma unroll
    for (int kq = 0; kq < BK / 4; ++kq) {
      float a[TM * 4], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
        *reinterpret_cast<float4*>(&a[i * 4]) = *reinterpret_cast<const float4*>(&As[slot][(row + i) * BK + kq * 4]);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        *reinterpret_cast<float4*>(&b[0]) = *reinterpret_cast<const float4*>(&Bs[slot][(kq * 4 + kk) * BN + col]);
        *reinterpret_cast<float4*>(&b[4]) = *reinterpret_cast<const float4*>(&Bs[slot][(kq * 4 + kk) * BN + col + 32]);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i * TN + j] += a[i * 4 + kk] * b[j];
      }
    }
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int r = brow * BM + row + i, c = bcol * BN + col + j % 4 + j / 4 * 32;
      if (r < M && c < N) {
        float& e = C[static_cast<long long>(r) * N + c];
        e = alpha * acc[i * TN + j] + beta * e;
      }
    }
}
