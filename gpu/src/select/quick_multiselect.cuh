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

#include <algorithm>
#include <cmath>

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

// The key of rank r (0 = smallest) among the 32-bit keys the block's T threads present:
// each_key(f) calls f(key) for every key of the calling thread. A radix select, four rounds of a
// 256-bin shared histogram, most significant byte first. All threads must call it.
template <int T, typename EachKey>
__device__ unsigned BlockRadixSelect(int r, QmsShared& qs, EachKey&& each_key) {
  static_assert(T == 256, "one histogram bin per thread");
  const int lane = threadIdx.x & 31;
  unsigned prefix = 0, mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    qs.hist[threadIdx.x] = 0;
    __syncthreads();
    each_key([&](unsigned key) {
      if ((key & mask) == prefix) atomicAdd(&qs.hist[(key >> shift) & 255u], 1u);
    });
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
  return prefix;
}

// The first partition's pivot, chosen from a sample of the row as in Floyd and Rivest's
// selection: 8 * T words, 64 consecutive ones (256 bytes, whole DRAM bursts) at each of 32 evenly
// spaced places, and the sample word of rank lambda + 4 sqrt(lambda) + 4, lambda = k * 8T / N
// being the expected number of sample words among the row's k smallest. Fewer than k row words
// fall under it only when more than that many sample words do, a tail below 1e-5 for any k and N
// on rows in random order: the row is then handed to a pass without a bound (the result stays
// exact either way). The sample rank is found by a radix select over the sample's keys (four
// rounds of a 256-bin shared histogram).
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
  const int64_t p = static_cast<int64_t>(threadIdx.x / 8) * (cols / (T / 8)) / kPer * kPer +
                    (threadIdx.x % 8) * kPer;
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
  const unsigned pivot_key = BlockRadixSelect<T>(rank, qs, [&](auto&& f) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) f(key[j]);
  });
  return Pack(pivot_key, 0xffffffffu);
}

// One row, one block: sampled first partition of the streamed row, then the partitions and the
// sort in shared memory. smem: QmsConfig::kShared bytes.
template <int KB, int T, int U, int D>
__device__ void QmsRow(const SelectArgs& a, int64_t row, u64* smem, StreamShared& ss,
                       QmsShared& qs) {
  using C = QmsConfig<KB, T, U, D>;
  u64* buf = smem;
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

template <int KB, int T, int U, int D>
__global__ void __launch_bounds__(T, KB >= 1024 ? 2 : 3) QuickMultiSelectKernel(SelectArgs a, int64_t row0) {
  extern __shared__ u64 smem[];
  __shared__ StreamShared ss;
  __shared__ QmsShared qs;
  QmsRow<KB, T, U, D>(a, row0 + blockIdx.x, smem, ss, qs);
}

// The same for the rows listed in rows[0, *n) (the rows the row-parallel partition below hands
// back), each block taking every gridDim.x-th of them.
template <int KB, int T, int U, int D>
__global__ void __launch_bounds__(T, KB >= 1024 ? 2 : 3)
    QuickMultiSelectListKernel(SelectArgs a, const int* n, const int64_t* rows) {
  extern __shared__ u64 smem[];
  __shared__ StreamShared ss;
  __shared__ QmsShared qs;
  const int count = *n;
  for (int i = blockIdx.x; i < count; i += gridDim.x) {
    QmsRow<KB, T, U, D>(a, rows[i], smem, ss, qs);
    __syncthreads();  // the next row reuses the shared state
  }
}

// ---- row-parallel first partition ---------------------------------------------------------------
// With many rows, a block per row leaves each row's fixed costs (the sample, the final sort)
// exposed: while a block samples or sorts, its share of the memory pipe idles. The first partition
// is then split into launches that each keep the GPU busy:
//   1. QmsPivotKernel: the sampled pivot of every row (one small block per row);
//   2. QmsFilterKernel: the rows cut into pieces of T * 4 * U columns; blocks stride over the
//      pieces (the next piece's loads in flight while the current one is filtered), keep the words
//      under their row's pivot and append them to the row's survivor list in global memory (one
//      atomic per warp and piece). No barrier, no shared memory: full occupancy, like a copy;
//   3. QmsFinishKernel: per row, the survivors (about 1.5 to 4 k) are cut to the k smallest by
//      the ballot partition (QuickCompact) and sorted;
//   4. QuickMultiSelectListKernel: the rows whose pivot fell under the k-th word (fewer than k
//      survivors) or that overflowed the survivor list are selected again by the one-block path.
template <int KB>
struct QmsSplitConfig {
  static constexpr int kThreads = 256;
  static constexpr int kCap = 4 * KB > 2048 ? 4 * KB : 2048;  // survivors kept per row
  static constexpr int kShared = (kCap + KB) * 8;
};
constexpr int kFilterVec = 8;  // float4 per lane and piece: pieces of 1024 columns, one per warp
constexpr int kFilterPiece = 32 * 4 * kFilterVec;

struct QmsSplitScratch {
  u64* pivots;        // [rows]
  int* count;         // [rows] survivors found (may pass the cap)
  int* fail_count;    // rows handed back
  int64_t* fail_rows;
  u64* survivors;     // [rows][cap]
  int cap;
};

template <int T>
__global__ void __launch_bounds__(T) QmsPivotKernel(SelectArgs a, int64_t row0, u64* pivots) {
  __shared__ QmsShared qs;
  const u64 p = SamplePivot<T>(a, row0 + blockIdx.x, a.k, qs);
  if (threadIdx.x == 0) pivots[blockIdx.x] = p;
}

// Rows row0 .. row0 + rows - 1 (segments == 1), cut into `ppr` pieces of kFilterPiece columns,
// one warp per piece (rows * ppr < 2^31). Each lane loads kFilterVec float4 at once; a whole,
// aligned piece takes the short path (one compare per element, no bounds checks).
template <int U>
__global__ void __launch_bounds__(256, 4) QmsFilterKernel(SelectArgs a, int64_t row0, int rows,
                                                      int ppr, QmsSplitScratch s) {
  static_assert(32 * 4 * U == kFilterPiece, "one warp per piece");
  const int lane = threadIdx.x & 31;
  const int items = rows * ppr;
  const int stride = static_cast<int>(gridDim.x * (blockDim.x / 32));
  for (int it = static_cast<int>(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32); it < items;
       it += stride) {
    const int lr = it / ppr;
    const int64_t base = static_cast<int64_t>(it - lr * ppr) * kFilterPiece;
    const float* rp = a.distances + (row0 + lr) * a.row_stride;
    const bool vec = (reinterpret_cast<uintptr_t>(rp) & 15u) == 0;
    float4 v[U];
    LoadChunk<32, U>(rp, a.cols, base, vec, v, lane);
    const u64 thr = s.pivots[lr];
    unsigned bits = CandidateBits<32, U>(v, base, a.cols, vec, thr, lane);
    if (!__any_sync(kFullMask, bits != 0)) continue;
    // Slots for the warp's candidates: an inclusive scan of the per-lane counts, one atomic.
    const int c = __popc(bits);
    int incl = c;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int t = __shfl_up_sync(kFullMask, incl, o);
      if (lane >= o) incl += t;
    }
    int first = 0;
    if (lane == 31) first = atomicAdd(&s.count[lr], incl);
    int pos = __shfl_sync(kFullMask, first, 31) + incl - c;
    u64* out = s.survivors + static_cast<int64_t>(lr) * s.cap;
    while (bits) {
      const int j = __ffs(bits) - 1;
      bits &= bits - 1;
      if (pos < s.cap) out[pos] = CandidateWord<32, U>(v, j, base, vec, lane);
      ++pos;
    }
  }
}

// Per row: the k-th smallest key of the survivors by a radix select, the survivors up to it
// gathered (k of them unless the k-th value is tied) and sorted. smem: QmsSplitConfig::kShared.
template <int KB>
__global__ void __launch_bounds__(QmsSplitConfig<KB>::kThreads)
    QmsFinishKernel(SelectArgs a, int64_t row0, QmsSplitScratch s) {
  using C = QmsSplitConfig<KB>;
  constexpr int T = C::kThreads;
  extern __shared__ u64 buf[];  // [kCap] survivors, then [KB] the gathered ones
  __shared__ QmsShared qs;
  const int64_t row = row0 + blockIdx.x;
  const int n = s.count[blockIdx.x];
  const int k = a.k;
  if (n < k || n > C::kCap) {  // the pivot fell under the k-th word, or too many survivors
    if (threadIdx.x == 0) s.fail_rows[atomicAdd(s.fail_count, 1)] = row;
    return;
  }
  const u64* src = s.survivors + static_cast<int64_t>(blockIdx.x) * C::kCap;
  u64* out = buf + C::kCap;
  if (n <= KB) {
    for (int i = threadIdx.x; i < KB; i += T) out[i] = i < n ? src[i] : kSentinel;
  } else {
    for (int i = threadIdx.x; i < n; i += T) buf[i] = src[i];
    const unsigned kth = BlockRadixSelect<T>(k - 1, qs, [&](auto&& f) {
      for (int i = threadIdx.x; i < n; i += T) f(static_cast<unsigned>(buf[i] >> 32));
    });
    if (threadIdx.x == 0) qs.less[0] = 0;
    __syncthreads();
    const unsigned lt = LaneMaskLt();
    for (int i0 = 0; i0 < n; i0 += T) {
      const int i = i0 + threadIdx.x;
      const u64 w = i < n ? buf[i] : kSentinel;
      const bool take = i < n && static_cast<unsigned>(w >> 32) <= kth;
      const unsigned b = __ballot_sync(kFullMask, take);
      int first = 0;
      if ((threadIdx.x & 31) == 0 && b) first = atomicAdd(&qs.less[0], __popc(b));
      const int pos = __shfl_sync(kFullMask, first, 0) + __popc(b & lt);
      if (take && pos < KB) out[pos] = w;
    }
    __syncthreads();
    const int m = qs.less[0];
    if (m > KB) {  // the k-th value is tied past the bucket: sort every survivor instead
      const int p2 = NextPow2((n + KB - 1) / KB);
      for (int i = n + threadIdx.x; i < p2 * KB; i += T) buf[i] = kSentinel;
      __syncthreads();
      BitonicSortRuns<T>(buf, p2, KB, KB);
      TruncatedMergeDown<T>(buf, p2, KB);
      WriteRow<T>(a, row, buf);
      return;
    }
    for (int i = m + threadIdx.x; i < KB; i += T) out[i] = kSentinel;
  }
  __syncthreads();
  BitonicSortRuns<T>(out, 1, KB, KB);
  WriteRow<T>(a, row, out);
}

// Whether the row-parallel path suits the shape: rows long enough to sample, and a sampled pivot
// expected to leave at most half the survivor list (the expected survivors are the pivot's sample
// rank times cols / 2048). Mirrors SamplePivot's rank.
template <int KB>
bool QmsSplitSuits(const SelectArgs& a) {
  constexpr int kSample = 2048;
  if (a.segments != 1 || a.cols < kSample || a.cols < 8 * static_cast<int64_t>(a.k)) return false;
  const double lambda = static_cast<double>(a.k) * kSample / static_cast<double>(a.cols);
  const int rank = static_cast<int>(lambda + 4.0 * std::sqrt(lambda) + 4.0);
  if (rank >= kSample / 2) return false;
  return static_cast<double>(rank) * static_cast<double>(a.cols) / kSample <=
         QmsSplitConfig<KB>::kCap / 2;
}


// Block shape per bucket (one warp per row for small k measured slower: bench/results).
template <int KB>
struct QmsShape {
  static constexpr int kThreads = 256;
  static constexpr int kVec = 2;
  static constexpr int kDepth = 4;
};

// Rows are taken in batches whose survivor lists fit kSplitScratchBytes.
constexpr int64_t kSplitScratchBytes = int64_t{256} << 20;

template <int KB>
void LaunchQuickMultiSelect(const SelectArgs& a) {
  constexpr int T = QmsShape<KB>::kThreads, U = QmsShape<KB>::kVec, D = QmsShape<KB>::kDepth;
  using C = QmsConfig<KB, T, U, D>;
  auto kernel = QuickMultiSelectKernel<KB, T, U, D>;
  PrepareSharedMemory(kernel, C::kShared, a);
  if (!QmsSplitSuits<KB>(a) || a.rows < 2) {
    LaunchPerRow(kernel, T, C::kShared, a);
    return;
  }
  using S = QmsSplitConfig<KB>;
  auto finish = QmsFinishKernel<KB>;
  auto list = QuickMultiSelectListKernel<KB, T, U, D>;
  PrepareSharedMemory(finish, S::kShared, a);
  PrepareSharedMemory(list, C::kShared, a);
  const int64_t ppr = (a.cols + kFilterPiece - 1) / kFilterPiece;
  const int64_t per_row = S::kCap * 8 + 8 + 4 + 8;
  int64_t batch = std::min<int64_t>(a.rows, kSplitScratchBytes / per_row);
  batch = std::min<int64_t>(batch, (int64_t{1} << 31) / ppr - 1);
  auto align = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  const int64_t b_piv = align(batch * 8), b_cnt = align(batch * 4 + 4), b_fail = align(batch * 8);
  char* ws = static_cast<char*>(SelectWorkspace(
      static_cast<size_t>(b_piv + b_cnt + b_fail + batch * S::kCap * 8), a.stream, 1));
  QmsSplitScratch s;
  s.pivots = reinterpret_cast<u64*>(ws);
  s.count = reinterpret_cast<int*>(ws + b_piv);
  s.fail_rows = reinterpret_cast<int64_t*>(ws + b_piv + b_cnt);
  s.survivors = reinterpret_cast<u64*>(ws + b_piv + b_cnt + b_fail);
  s.cap = S::kCap;
  int dev = 0, sms = 0;
  FM_CUDA_CHECK(cudaGetDevice(&dev));
  FM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  for (int64_t row0 = 0; row0 < a.rows; row0 += batch) {
    const int64_t n = std::min(batch, a.rows - row0);
    s.fail_count = s.count + n;  // count[n] and fail_count: contiguous, cleared together
    FM_CUDA_CHECK(cudaMemsetAsync(s.count, 0, (n + 1) * sizeof(int), a.stream));
    QmsPivotKernel<T><<<static_cast<unsigned>(n), T, 0, a.stream>>>(a, row0, s.pivots);
    FM_CUDA_CHECK_LAUNCH();
    const int64_t fgrid = std::min<int64_t>((n * ppr + 7) / 8, static_cast<int64_t>(sms) * 4);
    QmsFilterKernel<kFilterVec><<<static_cast<unsigned>(fgrid), 256, 0, a.stream>>>(
        a, row0, static_cast<int>(n), static_cast<int>(ppr), s);
    FM_CUDA_CHECK_LAUNCH();
    finish<<<static_cast<unsigned>(n), S::kThreads, S::kShared, a.stream>>>(a, row0, s);
    FM_CUDA_CHECK_LAUNCH();
    const int64_t grid = std::min<int64_t>(n, static_cast<int64_t>(sms) * (KB >= 1024 ? 2 : 3));
    list<<<static_cast<unsigned>(grid), T, C::kShared, a.stream>>>(a, s.fail_count, s.fail_rows);
    FM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace fm::gpu::detail
