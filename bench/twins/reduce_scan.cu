// Hand-written twins of the block reduction, the row softmax and the look-back scan
// (examples/kernels/paper_kernels.cpp):
// the same algorithm, thread count and shuffles as each Vantage kernel, with no check but the bounds
// the last block needs. Baselines for measurement (bench/twins/twins.hpp).

// block_reduce: out[b] = the sum of x[256 b .. 256 b + 255] (zeros past n): a shuffle tree in each
// warp, the eight warps' sums through shared memory, and thread 0 writes the block's sum.
extern "C" __global__ void __launch_bounds__(256)
    twin_block_reduce(int n, const float* __restrict__ x, float* __restrict__ out) {
  constexpr int T = 256, WARPS = T / 32;
  __shared__ float warps[WARPS];
  const int t = threadIdx.x, i = blockIdx.x * T + t;
  float sum = i < n ? x[i] : 0.0f;
#pragma unroll
  for (int d = 16; d >= 1; d /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
  if (t % 32 == 0) warps[t / 32] = sum;
  __syncthreads();
  if (t == 0) {
    float total = warps[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w) total += warps[w];
    out[blockIdx.x] = total;
  }
}

// softmax: y = the softmax of each row of x (rows x cols), one block of 256 threads a row: each thread
// takes columns t, t + 256, ...; the row's maximum and then its sum of exponentials are a shuffle tree
// in each warp and the eight warps' results through shared memory, combined in warp order.
extern "C" __global__ void __launch_bounds__(256)
    twin_softmax(int rows, int cols, const float* __restrict__ x, float* __restrict__ y) {
  constexpr int T = 256, WARPS = T / 32;
  __shared__ float warps[2][WARPS];
  const int row = blockIdx.x, t = threadIdx.x;
  if (row >= rows) return;
  const float* in = x + static_cast<long long>(row) * cols;
  float m = -__int_as_float(0x7f800000);  // -infinity
  for (int c = t; c < cols; c += T) m = fmaxf(m, in[c]);
#pragma unroll
  for (int d = 16; d >= 1; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
  if (t % 32 == 0) warps[0][t / 32] = m;
  __syncthreads();
  m = warps[0][0];
#pragma unroll
  for (int w = 1; w < WARPS; ++w) m = fmaxf(m, warps[0][w]);
  float sum = 0.0f;
  for (int c = t; c < cols; c += T) sum += expf(in[c] - m);
#pragma unroll
  for (int d = 16; d >= 1; d /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
  if (t % 32 == 0) warps[1][t / 32] = sum;
  __syncthreads();
  sum = warps[1][0];
#pragma unroll
  for (int w = 1; w < WARPS; ++w) sum += warps[1][w];
  float* out = y + static_cast<long long>(row) * cols;
  for (int c = t; c < cols; c += T) out[c] = expf(in[c] - m) / sum;
}

// scan_lookback: y = the inclusive prefix sums of x (n ints), one pass with decoupled look-back. A
// block of 256 scans its elements (shuffles in each warp, then the warps' totals scanned by every
// warp), thread 0 publishes the block's sum in its descriptor word (status in bits 62..63: 1 its
// own sum, 2 the sum of everything up to its end; the value in the low 32 bits), reads the words of
// earlier blocks until an inclusive one, publishes its own inclusive sum, and hands the prefix to
// the block through shared memory. `desc` holds one zeroed word per block.
__device__ __forceinline__ int twin_warp_inclusive_scan(int v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += up;
  }
  return v;
}

// The block's inclusive scan of each thread's `v`: shuffles in each warp, the warps' totals through
// `warps` (a barrier), then scanned by every warp; `total` gets the block's sum.
template <int WARPS>
__device__ __forceinline__ int twin_block_inclusive_scan(int v, int lane, int warp, int* warps, int& total) {
  v = twin_warp_inclusive_scan(v, lane);
  if (lane == 31) warps[warp] = v;
  __syncthreads();
  total = 0;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) total += warps[w];
  const int before_warp =
      __shfl_sync(0xffffffffu, twin_warp_inclusive_scan(warps[min(lane, WARPS - 1)], lane), max(warp - 1, 0));
  return warp > 0 ? v + before_warp : v;
}

extern "C" __global__ void __launch_bounds__(256)
    twin_scan_lookback(int n, const int* __restrict__ x, int* __restrict__ y, unsigned long long* __restrict__ desc) {
  constexpr int T = 256, WARPS = T / 32;
  constexpr unsigned long long kAggregate = 1ull << 62, kInclusive = 2ull << 62;
  __shared__ int warps[WARPS];
  __shared__ int prefix_s;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, blk = blockIdx.x, i = blk * T + t;
  int total;
  const int v = twin_block_inclusive_scan<WARPS>(i < n ? x[i] : 0, lane, warp, warps, total);
  if (t == 0) {
    const unsigned long long sum = static_cast<unsigned>(total);
    if (blk == 0) {
      atomicExch(&desc[0], kInclusive | sum);
      prefix_s = 0;
    } else {
      atomicExch(&desc[blk], kAggregate | sum);
      int before = 0;
      for (int j = blk - 1;;) {
        const unsigned long long d = atomicAdd(&desc[j], 0ull);  // a read that sees the latest word
        const unsigned long long status = d >> 62;
        if (status == 0) continue;
        before += static_cast<int>(static_cast<unsigned>(d & 0xffffffffu));
        if (status == 2) break;
        --j;
      }
      atomicExch(&desc[blk], kInclusive | static_cast<unsigned>(before + total));
      prefix_s = before;
    }
  }
  __syncthreads();
  if (i < n) y[i] = prefix_s + v;
}

// scan_tiled: a look-back scan with 8 ints per thread (8192 per block of 1024): each thread loads its
// 8 consecutive items as two 16-byte vectors where all are inside n (one by one, zeros past n,
// otherwise), scans them in registers, the threads' totals are scanned over the block (shuffles in
// each warp, the warps' totals through shared memory), the first warp looks back 32 blocks at a time,
// and each thread stores its 8 results as two vectors where all are inside n.
extern "C" __global__ void __launch_bounds__(1024)
    twin_scan_tiled(int n, const int* __restrict__ x, int* __restrict__ y, unsigned long long* __restrict__ desc) {
  constexpr int T = 1024, WARPS = T / 32, ITEMS = 8;
  constexpr unsigned long long kAggregate = 1ull << 62, kInclusive = 2ull << 62;
  __shared__ int warps[WARPS];
  __shared__ int prefix_s;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, blk = blockIdx.x;
  const long long first = static_cast<long long>(blk) * T * ITEMS + t * ITEMS;
  int items[ITEMS];
  if (first + ITEMS <= n) {
    *reinterpret_cast<int4*>(&items[0]) = *reinterpret_cast<const int4*>(&x[first]);
    *reinterpret_cast<int4*>(&items[4]) = *reinterpret_cast<const int4*>(&x[first + 4]);
  } else {
#pragma unroll
    for (int e = 0; e < ITEMS; ++e) items[e] = first + e < n ? x[first + e] : 0;
  }
#pragma unroll
  for (int e = 1; e < ITEMS; ++e) items[e] += items[e - 1];
  const int mine = items[ITEMS - 1];
  int total;
  const int upto = twin_block_inclusive_scan<WARPS>(mine, lane, warp, warps, total);
  // The first warp looks back over 32 blocks at a time: lane l reads the word of block base - l, the
  // warp waits until its whole window is published, then sums the words up to the nearest inclusive
  // one (the lowest such lane), or all 32 and moves the window 32 blocks back.
  if (warp == 0) {
    int before = 0;
    if (blk > 0) {
      if (lane == 0) atomicExch(&desc[blk], kAggregate | static_cast<unsigned>(total));
      int base = blk - 1;
      __syncwarp();
      for (;;) {
        const int j = base - lane;
        unsigned long long d = atomicAdd(&desc[max(j, 0)], 0ull);
        int status = j >= 0 ? static_cast<int>(d >> 62) : 2;
        while (__ballot_sync(0xffffffffu, status == 0) != 0u) {  // until the whole window is published
          d = atomicAdd(&desc[max(j, 0)], 0ull);
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
      atomicExch(&desc[blk], kInclusive | static_cast<unsigned>(before + total));
      prefix_s = before;
    }
  }
  __syncthreads();
  const int before_me = prefix_s + upto - mine;
#pragma unroll
  for (int e = 0; e < ITEMS; ++e) items[e] += before_me;
  if (first + ITEMS <= n) {
    *reinterpret_cast<int4*>(&y[first]) = *reinterpret_cast<const int4*>(&items[0]);
    *reinterpret_cast<int4*>(&y[first + 4]) = *reinterpret_cast<const int4*>(&items[4]);
  } else {
#pragma unroll
    for (int e = 0; e < ITEMS; ++e)
      if (first + e < n) y[first + e] = items[e];
  }
}
