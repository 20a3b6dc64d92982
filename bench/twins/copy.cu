// Hand-written twins of the copy, the vector saxpy, the two plain transposes and the stencil
// (examples/kernels/paper_kernels.cpp): the same work per thread, tile shape, thread count and block
// order as each Vantage kernel, with no check but the bounds a block at the edge needs. Baselines for measurement (bench/twins/twins.hpp);
// the transpose staged by cp.async is in async.cu (inline PTX, which the host-thread runs of these
// twins cannot compile).

// vec_copy: out = in (n floats), each of 256 threads per block copying 4 consecutive floats with one
// 16-byte load and store, the last thread of the array the n % 4 left one by one.
extern "C" __global__ void __launch_bounds__(256)
    twin_vec_copy(int n, const float* __restrict__ in, float* __restrict__ out) {
  const long long first = static_cast<long long>(blockIdx.x) * 1024 + threadIdx.x * 4;
  if (first + 4 <= n) {
    *reinterpret_cast<float4*>(&out[first]) = *reinterpret_cast<const float4*>(&in[first]);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (first + e < n) out[first + e] = in[first + e];
  }
}

// saxpy_vec: y = a * x + y (n floats), each of 256 threads per block loading 4 consecutive floats of x
// and of y with one 16-byte load each and storing 4 of y with one, the last thread of the array the
// n % 4 left one by one.
extern "C" __global__ void __launch_bounds__(256)
    twin_saxpy_vec(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  const long long first = static_cast<long long>(blockIdx.x) * 1024 + threadIdx.x * 4;
  if (first + 4 <= n) {
    const float4 xv = *reinterpret_cast<const float4*>(&x[first]);
    float4 yv = *reinterpret_cast<const float4*>(&y[first]);
    yv.x = a * xv.x + yv.x;
    yv.y = a * xv.y + yv.y;
    yv.z = a * xv.z + yv.z;
    yv.w = a * xv.w + yv.w;
    *reinterpret_cast<float4*>(&y[first]) = yv;
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (first + e < n) y[first + e] = a * x[first + e] + y[first + e];
  }
}

// The transposes: out (N x M) = in (M x N)^T through a 32 x (32 + PAD) shared tile, 256 threads per
// block (32 x 8, each moving 4 elements 8 rows apart), block b writing tile (b / ceil(M / 32),
// b % ceil(M / 32)) of out, which is the transposed tile of in (read row by row: coalesced), then
// written row by row from the tile's columns.
template <int PAD>
__device__ __forceinline__ void twin_transpose(int M, int N, const float* __restrict__ in, float* __restrict__ out) {
  constexpr int TILE = 32, ROWS = 8;
  __shared__ float tile[TILE * (TILE + PAD)];
  const int tiles_per_row = (M + TILE - 1) / TILE;
  const int brow = blockIdx.x / tiles_per_row, bcol = blockIdx.x % tiles_per_row;
  const int t = threadIdx.x, tr = t / TILE, tc = t % TILE;
  // in's elements (bcol * 32 + tr + 8 i, brow * 32 + tc) into tile[tr + 8 i][tc].
#pragma unroll
  for (int i = 0; i < TILE; i += ROWS) {
    const int r = bcol * TILE + tr + i, c = brow * TILE + tc;
    if (r < M && c < N) tile[(tr + i) * (TILE + PAD) + tc] = in[static_cast<long long>(r) * N + c];
  }
  __syncthreads();
  // out's element (brow * 32 + tr + 8 i, bcol * 32 + tc) = in(bcol * 32 + tc, brow * 32 + tr + 8 i)
  // = tile[tc][tr + 8 i].
#pragma unroll
  for (int i = 0; i < TILE; i += ROWS) {
    const int orow = brow * TILE + tr + i, ocol = bcol * TILE + tc;
    if (orow < N && ocol < M) out[static_cast<long long>(orow) * M + ocol] = tile[tc * (TILE + PAD) + tr + i];
  }
}

extern "C" __global__ void __launch_bounds__(256)
    twin_transpose(int M, int N, const float* __restrict__ in, float* __restrict__ out) {
  twin_transpose<0>(M, N, in, out);
}

extern "C" __global__ void __launch_bounds__(256)
    twin_transpose_padded(int M, int N, const float* __restrict__ in, float* __restrict__ out) {
  twin_transpose<1>(M, N, in, out);
}

// stencil: out(r, c) = 0.2 * (in(r, c) + in(r - 1, c) + in(r + 1, c) + in(r, c - 1) + in(r, c + 1)), zeros
// past the edges, through a 34 x 34 shared tile (a 32 x 32 tile and its halo), 256 threads per block
// (32 x 8, each computing 4 elements 8 rows apart), block b computing tile (b / ceil(N / 32),
// b % ceil(N / 32)) of out.
extern "C" __global__ void __launch_bounds__(256)
    twin_stencil(int M, int N, const float* __restrict__ in, float* __restrict__ out) {
  constexpr int TILE = 32, ROWS = 8, HALO = TILE + 2;
  __shared__ float s[HALO * HALO];
  const int tiles_per_row = (N + TILE - 1) / TILE;
  const int row0 = blockIdx.x / tiles_per_row * TILE, col0 = blockIdx.x % tiles_per_row * TILE;
  const int t = threadIdx.x;
  for (int e = t; e < HALO * HALO; e += TILE * ROWS) {
    const int r = row0 - 1 + e / HALO, c = col0 - 1 + e % HALO;
    s[e] = r >= 0 && r < M && c >= 0 && c < N ? in[static_cast<long long>(r) * N + c] : 0.0f;
  }
  __syncthreads();
  const int tr = t / TILE, tc = t % TILE;
#pragma unroll
  for (int i = 0; i < TILE; i += ROWS) {
    const int r = row0 + tr + i, c = col0 + tc;
    const int at = (tr + i + 1) * HALO + tc + 1;
    if (r < M && c < N)
      out[static_cast<long long>(r) * N + c] = 0.2f * (s[at] + s[at - HALO] + s[at + HALO] + s[at - 1] + s[at + 1]);
  }
}
