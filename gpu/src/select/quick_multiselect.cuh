// Quick multi-select with warp ballots, one block per row.
//
// Partitioning: the words of the active range are taken into registers, a pivot is chosen from a
// sorted sample of 32 (at the sample rank matching the fraction still needed), and every warp
// places its words around the pivot with a ballot and population counts: words <= pivot fill the
// range from the left, the others from the right, each warp's slots following from a tiny
// scan of the per-warp counts by one thread (no shared atomics, the range read once). Only the
// side holding the k-th word is partitioned again; the side wholly inside the k smallest is kept
// as is. When a partition leaves
// everything on the left (the pivot was the range's maximum), the same pivot is applied strictly.
//
// The row itself is streamed once by the buffered search (select_stream.cuh); whenever the
// candidate buffer passes max(2*KB, 1024) words the partitioning cuts it back to the k smallest and their
// maximum becomes the new threshold. At the end the k survivors are sorted with a bitonic sort.
#pragma once

#include "select/select_common.cuh"
#include "select/select_launch.cuh"
#include "select/select_stream.cuh"

namespace fm::gpu::detail {

template <int KB, int T, int U>
struct QmsConfig {
  static constexpr int kChunk = T * 4 * U;
  // Cut the buffer back only when it holds many words: each cut is a few latency-bound rounds,
  // so rows should need about two of them (the first chunk, then rarely more).
  static constexpr int kFlushAt = 2 * KB > 1024 ? 2 * KB : 1024;
  static constexpr int kCap = kFlushAt + kChunk;
  static constexpr int kPerThread = (kCap + T - 1) / T;
  static constexpr int kShared = kCap * 8;
};

struct QmsShared {
  int less[2];
  int warp_left[32];
  int warp_right[32];
  u64 pivot;
  u64 warp_max[32];
};

// Leaves the k smallest of buf[0, n) in buf[0, k) (any order) and returns the largest of them.
// Requires k < n <= MAXE * T.
template <int T, int MAXE>
__device__ u64 QuickCompact(u64* buf, int n, int k, QmsShared& qs) {
  const int lane = threadIdx.x & 31;
  const unsigned lt = LaneMaskLt();
  int lo = 0, hi = n, need = k;
  bool strict = false;
  for (int round = 0;; ++round) {
    const int m = hi - lo;
    if (need == 0 || need == m) break;
    const int par = round & 1;
    if (threadIdx.x < 32) {
      if (!strict) {
        u64 s = buf[lo + static_cast<int>((static_cast<int64_t>(lane) * m + m / 2) / 32)];
        s = WarpBitonicSort(s);
        int r = static_cast<int>((static_cast<int64_t>(need) * 32 + m - 1) / m);
        r = r > 31 ? 31 : r;
        const u64 p = __shfl_sync(kFullMask, s, r);
        if (lane == 0) qs.pivot = p;
      }
    }
    __syncthreads();
    const u64 p = qs.pivot;
    u64 x[MAXE];
#pragma unroll
    for (int j = 0; j < MAXE; ++j) {
      const int i = lo + j * T + threadIdx.x;
      x[j] = i < hi ? buf[i] : 0;
    }
    // Count pass: each warp's words on either side, from ballots, then one thread turns the
    // per-warp counts into offsets (the block-level step of the paper; no shared atomics).
    int nl = 0, nr = 0;
#pragma unroll
    for (int j = 0; j < MAXE; ++j) {
      const bool valid = lo + j * T + static_cast<int>(threadIdx.x) < hi;
      const bool left = valid && (strict ? x[j] < p : x[j] <= p);
      nl += __popc(__ballot_sync(kFullMask, left));
      nr += __popc(__ballot_sync(kFullMask, valid && !left));
    }
    const int warp = threadIdx.x / 32;
    if (lane == 0) {
      qs.warp_left[warp] = nl;
      qs.warp_right[warp] = nr;
    }
    __syncthreads();  // also: every word is in registers before any is written back
    if (threadIdx.x == 0) {
      int sl = 0, sr = 0;
      for (int w = 0; w < T / 32; ++w) {
        const int a = qs.warp_left[w], b = qs.warp_right[w];
        qs.warp_left[w] = sl;
        qs.warp_right[w] = sr;
        sl += a;
        sr += b;
      }
      qs.less[par] = sl;
    }
    __syncthreads();
    int ol = lo + qs.warp_left[warp];
    int orr = hi - 1 - qs.warp_right[warp];
#pragma unroll
    for (int j = 0; j < MAXE; ++j) {
      const bool valid = lo + j * T + static_cast<int>(threadIdx.x) < hi;
      const bool left = valid && (strict ? x[j] < p : x[j] <= p);
      const bool right = valid && !left;
      const unsigned bl = __ballot_sync(kFullMask, left);
      const unsigned br = __ballot_sync(kFullMask, right);
      if (left) buf[ol + __popc(bl & lt)] = x[j];
      if (right) buf[orr - __popc(br & lt)] = x[j];
      ol += __popc(bl);
      orr -= __popc(br);
    }
    __syncthreads();
    const int L = qs.less[par];
    if (L <= need) {  // the whole left side is among the k smallest
      lo += L;
      need -= L;
      strict = false;
    } else if (L == m) {  // pivot was the maximum: split it off with a strict compare
      strict = true;
    } else {
      hi = lo + L;
      strict = false;
    }
  }
  // Largest of the k kept words: the new threshold.
  u64 mx = 0;
  for (int i = threadIdx.x; i < k; i += T) mx = MaxU64(mx, buf[i]);
  for (int o = 16; o > 0; o >>= 1) mx = MaxU64(mx, __shfl_xor_sync(kFullMask, mx, o));
  if (lane == 0) qs.warp_max[threadIdx.x / 32] = mx;
  __syncthreads();
  mx = 0;
  for (int w = 0; w < T / 32; ++w) mx = MaxU64(mx, qs.warp_max[w]);
  __syncthreads();  // warp_max may be rewritten by the next call
  return mx;
}

template <int KB, int T, int U>
__global__ void __launch_bounds__(T, KB >= 1024 ? 2 : 4) QuickMultiSelectKernel(SelectArgs a, int64_t row0) {
  using C = QmsConfig<KB, T, U>;
  extern __shared__ u64 smem[];
  u64* buf = smem;
  __shared__ StreamShared ss;
  __shared__ QmsShared qs;
  const int64_t row = row0 + blockIdx.x;
  const int k = a.k;
  if (threadIdx.x == 0) {
    ss.count[0] = ss.count[1] = ss.count[2] = 0;
    ss.threshold = kSentinel;
  }
  __syncthreads();
  auto flush = [&](int n) {
    const u64 t = QuickCompact<T, C::kPerThread>(buf, n, k, qs);
    if (threadIdx.x == 0) ss.threshold = t;
    __syncthreads();
    return k;
  };
  int n = StreamRow<T, U>(a, row, buf, 0, C::kFlushAt, ss, flush);
  if (n > k) n = flush(n);
  for (int i = n + threadIdx.x; i < KB; i += T) buf[i] = kSentinel;
  __syncthreads();
  BitonicSortRuns<T>(buf, 1, KB, KB);
  WriteRow<T>(a, row, buf);
}

// Block shape per bucket (one warp per row for small k measured slower: bench/results).
template <int KB>
struct QmsShape {
  static constexpr int kThreads = 256;
  static constexpr int kVec = 2;
};

template <int KB>
void LaunchQuickMultiSelect(const SelectArgs& a) {
  constexpr int T = QmsShape<KB>::kThreads, U = QmsShape<KB>::kVec;
  using C = QmsConfig<KB, T, U>;
  auto kernel = QuickMultiSelectKernel<KB, T, U>;
  PrepareSharedMemory(kernel, C::kShared, a);
  LaunchPerRow(kernel, T, C::kShared, a);
}

}  // namespace fm::gpu::detail
