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
// The first partition is of the whole row, around a pivot taken from a sample of the row
// (SamplePivot): the row is streamed once (select_stream.cuh) and only the words under the pivot,
// a little more than k of them, are placed in shared memory. Should the buffer pass
// max(2*KB, 1024) words the partitioning cuts it back to the k smallest and their maximum becomes
// the new bound. The partitions that follow work in shared memory; at the end the k survivors
// are sorted with a bitonic sort; a few survivors more than k (the usual case) are sorted directly.
#pragma once

#include "select/select_common.cuh"
#include "select/select_launch.cuh"
#include "select/select_stream.cuh"

namespace fm::gpu::detail {

template <int KB, int T, int U, int D>
struct QmsConfig {
  static constexpr int kChunk = T * 4 * U;
  static constexpr int kDepth = D;  // chunks in the row's shared-memory ring
  // Cut the buffer back only when it holds many words: each cut is a few latency-bound rounds,
  // so rows should need about two of them (the first chunk, then rarely more).
  // (k = 1024: room for the sampled pivot's usual 1.5k to 2.5k survivors without a cut.)
  static constexpr int kFlushAt = KB == 1024 ? 3 * KB : 2 * KB > 1024 ? 2 * KB : 1024;
  static constexpr int kCap = kFlushAt + kChunk;
  static constexpr int kPerThread = (kCap + T - 1) / T;
  static constexpr int kShared = kCap * 8 + D * kChunk * 4;
};

struct QmsShared {
  unsigned hist[256];
  int sel_bin, sel_rank;
  int less[2];
  int warp_left[32];
  int warp_right[32];
  u64 pivot;
  u64 warp_max[32];
};

// Leaves the k smallest of buf[0, n) in buf[0, k) (any order) and returns the largest of them.
// Requires k < n <= MAXE * T.
template <int T, int MAXE>
__device__ __noinline__ u64 QuickCompact(u64* buf, int n, int k, QmsShared& qs) {
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

// The first partition's pivot, chosen from a sample of the row as in Floyd and Rivest's
// selection: 8 * T words, eight consecutive ones (one 32-byte sector) at each of T evenly spaced
// places, and the sample word of rank lambda + 4 sqrt(lambda) + 4, lambda = k * 8T / N being the
// expected number of sample words among the row's k smallest. Fewer than k row words fall under
// it only when more than that many sample words do, a tail below 1e-5 for any k and N: the row
// is then streamed again without a bound (the result stays exact either way). The sample rank is
// found by a radix select over the sample's keys (four rounds of a 256-bin shared histogram).
// Returns the threshold word (key, 2^32 - 1): every word whose value is at most the pivot's
// value passes, so ties with the pivot are kept. kSentinel when the row is too short to sample.
template <int T>
__device__ u64 SamplePivot(const SelectArgs& a, int64_t row, int k, QmsShared& qs) {
  static_assert(T == 256, "one histogram bin per thread");
  constexpr int kPer = 8;
  const RowView rv = GetRow(a, row);
  const int64_t cols = rv.cols;
  const double lambda = static_cast<double>(k) * (kPer * T) / static_cast<double>(cols);
  const int rank = static_cast<int>(lambda + 4.0 * sqrt(lambda) + 4.0);
  if (cols < int64_t{kPer} * T || cols < 8 * static_cast<int64_t>(k) || rank >= kPer * T / 2)
    return kSentinel;
  const int64_t p = static_cast<int64_t>(threadIdx.x) * (cols / T) / kPer * kPer;
  const float* sp = rv.p + p;
  unsigned key[kPer];
  if ((reinterpret_cast<uintptr_t>(sp) & 15u) == 0) {
    const float4 v0 = __ldg(reinterpret_cast<const float4*>(sp));
    const float4 v1 = __ldg(reinterpret_cast<const float4*>(sp) + 1);
    key[0] = FloatKey(v0.x); key[1] = FloatKey(v0.y); key[2] = FloatKey(v0.z); key[3] = FloatKey(v0.w);
    key[4] = FloatKey(v1.x); key[5] = FloatKey(v1.y); key[6] = FloatKey(v1.z); key[7] = FloatKey(v1.w);
  } else {
#pragma unroll
    for (int j = 0; j < kPer; ++j) key[j] = FloatKey(__ldg(sp + j));
  }
  const int lane = threadIdx.x & 31;
  unsigned prefix = 0, mask = 0;
  int r = rank;
  for (int shift = 24; shift >= 0; shift -= 8) {
    qs.hist[threadIdx.x] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kPer; ++j)
      if ((key[j] & mask) == prefix) atomicAdd(&qs.hist[(key[j] >> shift) & 255u], 1u);
    __syncthreads();
    if (threadIdx.x < 32) {
      unsigned c[8], sum = 0;
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        c[b] = qs.hist[lane * 8 + b];
        sum += c[b];
      }
      unsigned incl = sum;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned t = __shfl_up_sync(kFullMask, incl, o);
        if (lane >= o) incl += t;
      }
      unsigned acc = incl - sum;
      if (acc <= static_cast<unsigned>(r) && static_cast<unsigned>(r) < incl) {
#pragma unroll
        for (int b = 0; b < 8; ++b) {
          if (static_cast<unsigned>(r) >= acc && static_cast<unsigned>(r) < acc + c[b]) {
            qs.sel_bin = lane * 8 + b;
            qs.sel_rank = r - static_cast<int>(acc);
          }
          acc += c[b];
        }
      }
    }
    __syncthreads();
    prefix |= static_cast<unsigned>(qs.sel_bin) << shift;
    mask |= 255u << shift;
    r = qs.sel_rank;
  }
  __syncthreads();  // hist and sel_* are reused
  return Pack(prefix, 0xffffffffu);
}

template <int KB, int T, int U, int D>
__global__ void __launch_bounds__(T, KB >= 1024 ? 2 : 3) QuickMultiSelectKernel(SelectArgs a, int64_t row0) {
  using C = QmsConfig<KB, T, U, D>;
  extern __shared__ u64 smem[];
  u64* buf = smem;
  __shared__ StreamShared ss;
  __shared__ QmsShared qs;
  const int64_t row = row0 + blockIdx.x;
  const int k = a.k;
  // The row's first chunks are requested before the pivot is chosen, hiding the sample's latency.
  const RingStream<T, U, D> ring(a, row, reinterpret_cast<float*>(smem + C::kCap));
  const bool use_ring = ring.Usable();
  if (use_ring) ring.Prologue();
  const u64 pivot = SamplePivot<T>(a, row, k, qs);
  if (threadIdx.x == 0) {
    ss.count[0] = ss.count[1] = ss.count[2] = 0;
    ss.threshold = pivot;
  }
  __syncthreads();
  auto flush = [&](int n) {
    const u64 t = QuickCompact<T, C::kPerThread>(buf, n, k, qs);
    if (threadIdx.x == 0) ss.threshold = t;
    __syncthreads();
    return k;
  };
  // First partition of the whole row around the sampled pivot: only the words under it are
  // kept (in shared memory), the rest is never written.
  int n = use_ring ? ring.Run(buf, 0, C::kFlushAt, ss, flush)
                   : StreamRow<T, U>(a, row, buf, 0, C::kFlushAt, ss, flush);
  if (pivot != kSentinel && n < k) {  // the pivot fell below the k-th word: again, unbounded
    if (threadIdx.x == 0) {
      ss.count[0] = ss.count[1] = ss.count[2] = 0;
      ss.threshold = kSentinel;
    }
    __syncthreads();
    if (use_ring) {
      ring.Prologue();
      n = ring.Run(buf, 0, C::kFlushAt, ss, flush);
    } else {
      n = StreamRow<T, U>(a, row, buf, 0, C::kFlushAt, ss, flush);
    }
  }
  // Few survivors (the usual case after a sampled pivot) are finished by a direct sort, as the
  // algorithm does once a partition is small: runs of KB are sorted and merged pairwise keeping
  // the lower half (the truncated bitonic merge). Otherwise partition down to k first.
  const int runs = (n + KB - 1) / KB;
  const int p2 = NextPow2(runs < 1 ? 1 : runs);
  if (p2 * KB > C::kCap) {
    n = flush(n);
    for (int i = n + threadIdx.x; i < KB; i += T) buf[i] = kSentinel;
    __syncthreads();
    BitonicSortRuns<T>(buf, 1, KB, KB);
  } else {
    for (int i = n + threadIdx.x; i < p2 * KB; i += T) buf[i] = kSentinel;
    __syncthreads();
    BitonicSortRuns<T>(buf, p2, KB, KB);
    TruncatedMergeDown<T>(buf, p2, KB);
  }
  WriteRow<T>(a, row, buf);
}

// Block shape per bucket (one warp per row for small k measured slower: bench/results).
template <int KB>
struct QmsShape {
  static constexpr int kThreads = 256;
  static constexpr int kVec = 2;
  static constexpr int kDepth = 4;
};

template <int KB>
void LaunchQuickMultiSelect(const SelectArgs& a) {
  constexpr int T = QmsShape<KB>::kThreads, U = QmsShape<KB>::kVec, D = QmsShape<KB>::kDepth;
  using C = QmsConfig<KB, T, U, D>;
  auto kernel = QuickMultiSelectKernel<KB, T, U, D>;
  PrepareSharedMemory(kernel, C::kShared, a);
  LaunchPerRow(kernel, T, C::kShared, a);
}

}  // namespace fm::gpu::detail
