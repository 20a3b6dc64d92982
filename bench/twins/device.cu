// Twins of the device library's device-wide examples, written as a CUDA programmer without CUB writes
// them: the same tiles, the same look-back, the same shared-memory counts.

// compact: the floats of x above `threshold`, in their order, to out, and their number to count[0].
// 256 threads of 8 items a block (16-byte loads where all are inside n), the kept items counted in
// registers and scanned over the block, the blocks chained by a decoupled look-back in temp (a word a
// block and a count of the blocks finished, zero at launch); the block that finishes last zeroes
// temp again, as lib::device_select does.
extern "C" __global__ void __launch_bounds__(256)
    twin_compact(int n, float threshold, const float* __restrict__ x, float* __restrict__ out, int* __restrict__ count,
                 unsigned long long* __restrict__ temp) {
  constexpr int T = 256, ITEMS = 8, WARPS = T / 32;
  constexpr unsigned long long kAggregate = 1ull << 62, kInclusive = 2ull << 62;
  __shared__ int warps[WARPS];
  __shared__ int prefix_s, last_s;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, blk = blockIdx.x;
  const int tiles = max(static_cast<int>((static_cast<long long>(n) + T * ITEMS - 1) / (T * ITEMS)), 1);
  const long long first = static_cast<long long>(blk) * T * ITEMS + t * ITEMS;
  float items[ITEMS];
  if (first + ITEMS <= n) {
    *reinterpret_cast<float4*>(&items[0]) = *reinterpret_cast<const float4*>(&x[first]);
    *reinterpret_cast<float4*>(&items[4]) = *reinterpret_cast<const float4*>(&x[first + 4]);
  } else {
#pragma unroll
    for (int e = 0; e < ITEMS; ++e) items[e] = first + e < n ? x[first + e] : 0.0f;
  }
  int kept = 0;
#pragma unroll
  for (int e = 0; e < ITEMS; ++e) kept += first + e < n && items[e] > threshold ? 1 : 0;
  // The kept counts scanned over the block: each warp by shuffles, the warps' totals in shared memory.
  int upto = kept;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int other = __shfl_up_sync(0xffffffffu, upto, d);
    if (lane >= d) upto += other;
  }
  if (lane == 31) warps[warp] = upto;
  __syncthreads();
  int total = 0;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    if (w < warp) upto += warps[w];
    total += warps[w];
  }
  // The first warp looks back over 32 blocks at a time, as twin_scan_tiled does.
  if (warp == 0) {
    int before = 0;
    if (blk > 0 && blk < tiles) {
      if (lane == 0) atomicExch(&temp[blk], kAggregate | static_cast<unsigned>(total));
      int base = blk - 1;
      __syncwarp();
      for (;;) {
        const int j = base - lane;
        unsigned long long d = atomicAdd(&temp[max(j, 0)], 0ull);
        int status = j >= 0 ? static_cast<int>(d >> 62) : 2;
        while (__ballot_sync(0xffffffffu, status == 0) != 0u) {
          d = atomicAdd(&temp[max(j, 0)], 0ull);
          status = j >= 0 ? static_cast<int>(d >> 62) : 2;
        }
        const unsigned done = __ballot_sync(0xffffffffu, status == 2);
        const int last = done != 0u ? __ffs(done) - 1 : 31;
        int window = lane <= last && j >= 0 ? static_cast<int>(static_cast<unsigned>(d)) : 0;
#pragma unroll
        for (int m = 16; m >= 1; m /= 2) window += __shfl_xor_sync(0xffffffffu, window, m);
        before += window;
        if (done != 0u) break;
        base -= 32;
      }
    }
    __syncwarp();
    if (lane == 0) {
      int finished = 0;
      if (blk < tiles) {
        atomicExch(&temp[blk], kInclusive | static_cast<unsigned>(before + total));
        if (blk == tiles - 1) *count = before + total;
        finished = atomicAdd(&temp[tiles], 1ull) == static_cast<unsigned long long>(tiles - 1);
      }
      prefix_s = before;
      last_s = finished;
    }
  }
  __syncthreads();
  int place = prefix_s + upto - kept;
#pragma unroll
  for (int e = 0; e < ITEMS; ++e)
    if (first + e < n && items[e] > threshold) out[place++] = items[e];
  if (last_s)
    for (int i = t; i <= tiles; i += T) temp[i] = 0;
}

// byte_histogram: hist[b] += the number of bytes equal to b. Tiles of 4096 bytes, 16 a thread of 256,
// striped (thread t reads bytes t, t + 256, ... of the tile); block b counts the tiles b, b + G, ... in
// shared memory, then adds its counts once.
extern "C" __global__ void __launch_bounds__(256)
    twin_byte_histogram(int n, const unsigned char* __restrict__ bytes, unsigned* __restrict__ hist) {
  __shared__ unsigned counts[256];
  const int t = threadIdx.x;
  counts[t] = 0;
  __syncthreads();
  // The tiles blockIdx.x, + gridDim.x, ...: each block adds its counts once for all of its tiles.
  const long long tiles = (static_cast<long long>(n) + 4095) / 4096;
  for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
#pragma unroll
    for (int e = 0; e < 16; ++e) {
      const long long i = tile * 4096 + e * 256 + t;
      if (i < n) atomicAdd(&counts[bytes[i]], 1u);
    }
  }
  __syncthreads();
  if (counts[t] != 0) atomicAdd(&hist[t], counts[t]);
}
