// Hand-written twin of the transpose whose tile is staged by cp.async (examples/kernels/paper_kernels.cpp,
// transpose_async): a baseline for measurement (bench/twins/twins.hpp), beside copy.cu's.

// The padded transpose with the tile staged by cp.async (4 bytes per thread): copies issued only
// inside the matrix, waited for, then one barrier.
extern "C" __global__ void __launch_bounds__(1024)
    twin_transpose_async(int M, int N, const float* __restrict__ in, float* __restrict__ out) {
  constexpr int TILE = 32, PAD = 1;
  __shared__ float tile[TILE * (TILE + PAD)];
  const int tiles_per_row = (M + TILE - 1) / TILE;
  const int brow = blockIdx.x / tiles_per_row, bcol = blockIdx.x % tiles_per_row;
  const int t = threadIdx.x, tr = t / TILE, tc = t % TILE;
  const int r = bcol * TILE + tr, c = brow * TILE + tc;
  if (r < M && c < N) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&tile[tr * (TILE + PAD) + tc]));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(&in[static_cast<long long>(r) * N + c])
                 : "memory");
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  const int orow = brow * TILE + tr, ocol = bcol * TILE + tc;
  if (orow < N && ocol < M) out[static_cast<long long>(orow) * M + ocol] = tile[tc * (TILE + PAD) + tr];
}
