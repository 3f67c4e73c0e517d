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
#include "select/select_sorted.cuh"
#include "select/select_stream.cuh"
#include "select/qms_resident.cuh"
#include "select/bucket_finish.cuh"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

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
// selection: 8 * T words, 64 consecutive ones (256 bytes, whole DRAM bursts) at each of 32 evenly
// spaced places, and (a bound just above) the sample word of rank lambda + 4 sqrt(lambda) + 4,
// lambda = k * 8T / N
// being the expected number of sample words among the row's k smallest. Fewer than k row words
// fall under it only when more than that many sample words do, a tail below 1e-5 for any k and N
// on rows in random order: the row is then handed to a pass without a bound (the result stays
// exact either way). The sample rank is found by a radix select over the sample's keys (four
// rounds of a 256-bin shared histogram).
// Returns the threshold word (key, 2^32 - 1): every word whose value is at most the pivot's
// value passes, so ties with the pivot are kept. kSentinel when the row is too short to sample.
// This thread's kSamplePer sample keys of a row of `cols` columns at rp.
template <int T>
__device__ void LoadSample(const float* rp, int64_t cols, unsigned (&key)[kSamplePer]) {
  const int64_t p =
      static_cast<int64_t>(threadIdx.x / 8) * (cols / (T / 8)) / kSamplePer * kSamplePer +
      (threadIdx.x % 8) * kSamplePer;
  const float* sp = rp + p;
  if ((reinterpret_cast<uintptr_t>(sp) & 15u) == 0) {
    const float4 v0 = __ldg(reinterpret_cast<const float4*>(sp));
    const float4 v1 = __ldg(reinterpret_cast<const float4*>(sp) + 1);
    key[0] = FloatKey(v0.x);
    key[1] = FloatKey(v0.y);
    key[2] = FloatKey(v0.z);
    key[3] = FloatKey(v0.w);
    key[4] = FloatKey(v1.x);
    key[5] = FloatKey(v1.y);
    key[6] = FloatKey(v1.z);
    key[7] = FloatKey(v1.w);
  } else {
#pragma unroll
    for (int j = 0; j < kSamplePer; ++j) key[j] = FloatKey(__ldg(sp + j));
  }
}

template <int T>
__device__ u64 SamplePivot(const SelectArgs& a, int64_t row, int k, QmsShared& qs) {
  static_assert(T == 256, "one histogram bin per thread");
  const RowView rv = GetRow(a, row);
  const int rank = SampleRank(rv.cols, k);
  if (rank < 0) return kSentinel;
  unsigned key[kSamplePer];
  LoadSample<T>(rv.p, rv.cols, key);
  return PivotFromSample<T>(key, rank, qs);
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
    __syncthreads();  // every thread has read the last chunk's count before it is cleared
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
__global__ void __launch_bounds__(T, KB >= 1024 ? 2 : 3)
    QuickMultiSelectKernel(SelectArgs a, int64_t row0) {
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
  WaitPrimaryGrid();  // the rows handed back
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
//   1. QmsWarpPivotKernel: the sampled pivot of every row (one warp per row);
//   2. QmsFilterKernel: the rows cut into pieces of 1024 columns, one warp per piece, all of a
//      lane's loads in flight at once; the words under the row's pivot are appended to the row's
//      survivor list in global memory (one atomic per warp and piece). No block barrier: full
//      occupancy, like a copy. For k <= 256 the warp that completes a row also finishes it: the
//      k-th smallest survivor by a radix select, the k smallest gathered with ballots and sorted;
//   3. k > 256: a launch of its own, a block per row ranking the survivors by a counting sort
//      (QmsBucketFinishKernel, bucket_finish.cuh); rows whose buckets crowd it selects again
//      from their survivor lists (BlockRowReselect);
//   On rows of up to 65536 columns steps 2 and 3 are one kernel instead, for every k from rows
//   of four pieces on (QmsBlockRowKernel: a block filters a row into shared memory and ranks its
//   survivors there by the same counting sort); it also takes rows too short for the filter's
//   sample at the k asked (fewer than 8k columns), whole or under a pivot of a higher rank;
//   4. QuickMultiSelectListKernel: the rows whose pivot fell under the k-th word (fewer than k
//      survivors) or that overflowed the survivor list are selected again by the one-block
//      path. The fused kernel needs no such launch: its block selects such a row again itself,
//      from its survivor list where that holds every survivor, else from the row
//      (BlockRowReselect).
constexpr int kFilterVec = 8;  // float4 per lane and piece: pieces of 1024 columns, one per warp
constexpr int kFilterPiece = 32 * 4 * kFilterVec;
// Sample ranks that are not ranks: no sample, every word survives; no pivot suits the rows.
constexpr int kAdmitAll = -1, kNoRank = -2;

struct QmsSplitScratch {
  u64* pivots;        // [rows]
  int* count;         // [rows] survivors found (may pass the cap)
  int* done;          // [rows] groups of pieces filtered
  int* fail_count;    // rows handed back
  int* ticket;        // next group of pieces to filter
  int64_t* fail_rows;
  u64* survivors;     // [rows][cap] words (above kWarpFinishMax: keys, then columns; see below)
  int cap;
};

// Above kWarpFinishMax a row's survivors are kept as two arrays, keys then columns (the bucket
// finish's first passes read only the keys, four a load; the columns in 16 bits on rows of up to
// 65536 columns, SurvivorColsNarrow); at and below it as words.
__device__ __forceinline__ unsigned* SurvivorKeys(const QmsSplitScratch& s, int64_t lr) {
  return reinterpret_cast<unsigned*>(s.survivors + lr * s.cap);
}
__device__ __forceinline__ unsigned* SurvivorCols(const QmsSplitScratch& s, int64_t lr) {
  return SurvivorKeys(s, lr) + s.cap;
}
// Rows of up to 65536 columns keep their survivors' columns in 16 bits: 1-3 % off the time at
// k = 512-2048 on 8192 rows of 8192-65536 columns (H200, bench/results/select.md "Survivor
// columns in 16 bits").
__host__ __device__ __forceinline__ bool SurvivorColsNarrow(int64_t cols) { return cols <= 65536; }
// Stores survivor i of a row above kWarpFinishMax: its key and its column.
__device__ __forceinline__ void StoreSurvivor(unsigned* keys, unsigned* cols, bool narrow, int i,
                                              u64 w) {
  keys[i] = static_cast<unsigned>(w >> 32);
  if (narrow) {
    reinterpret_cast<uint16_t*>(cols)[i] = static_cast<uint16_t>(w);
  } else {
    cols[i] = static_cast<unsigned>(w);
  }
}

// An L2 cache-policy word for every line an access touches, made once: kept (evict-last) or let go
// first (evict-first). The pivots' sample loads ask L2 to keep their lines: the filter reads the
// same lines again with its streaming (evict-first) loads, and on rows of up to 32768 columns the
// 8192 rows' samples (32 MiB) then mostly come from L2 instead of DRAM: 1-3 % off the time at
// k = 64-1024 on an H100 (bench/results/select.md "Sample kept in L2, merge-path finish sort").
template <bool kEvictFirst>
__device__ __forceinline__ uint64_t L2Policy() {
  uint64_t pol = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kEvictFirst) {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  } else {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  }
#endif
  return pol;
}
__device__ __forceinline__ float4 LdgEvictLast(const float4* p, uint64_t pol) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  return __ldg(p);  // no cache policies before sm_80
#else
  float4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p), "l"(pol));
  return v;
#endif
}

// Pivots of rows row0 .. row0 + rows - 1 (all of one length, long enough to sample), one warp
// per row (8 rows a block): the warp loads a sample of 32 runs of kRun words (QmsSplitSample;
// with kRun = 64 the runs of LoadSample) and selects the word of rank `rank` alone, without
// block barriers (rank kAdmitAll: no sample, a pivot that admits every word). Also clears
// the filter's counters (QmsSplitScratch: count[rows], done[rows], fail_count, ticket,
// contiguous). With a tag (not 0) each pivot word is published after its row's counters, with
// release semantics, its low 32 bits the tag instead of all ones, for the fused kernel to start
// the row on (QmsBlockRowKernel). The radix rounds stop once the bin holding the rank has at most
// `stop` sample keys (0: both rounds): the pivot is then that bin's upper bound, still above the
// rank's key. (A block per row measured slower:
// the pivots are a chain of latencies, and warps hide more of them. So did computing the pivots
// beside the filter, the filter starting on rows whose pivot was ready: the pivot kernel then
// held registers the filter needs to keep its loads in flight.)
template <int kRun>
__global__ void __launch_bounds__(256, 3) QmsWarpPivotKernel(SelectArgs a, int64_t row0,
                                                            int rows, int rank, u64* pivots,
                                                            int* counters, unsigned tag,
                                                            int stop) {
  AllowDependentGrid();
  static_assert(kRun == 16 || kRun == 32 || kRun == 64, "32 runs of kRun words");
  constexpr int kLanesPerRun = kRun / 4, kRunsPerLoad = 32 / kLanesPerRun;
  __shared__ QmsShared qs_all[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int lr = blockIdx.x * 8 + warp;
  if (lr >= rows) return;
  // The row's pivot word, and its filter counters cleared.
  auto publish = [&](u64 pivot) {
    if (lane == 0) {
      counters[lr] = 0;         // survivors
      counters[rows + lr] = 0;  // groups done
      if (lr == 0) counters[2 * rows] = counters[2 * rows + 1] = 0;  // rows handed back, ticket
      if (tag == 0) {
        pivots[lr] = pivot;
      } else {  // the fused kernel's row may start now: the pivot's key with the launch's tag
        StoreReleaseGpu(&pivots[lr], (pivot & ~u64{0xffffffffu}) | tag);
      }
    }
  };
  if (rank < 0) {  // kAdmitAll: every word of the row survives
    publish(kSentinel);
    return;
  }
  const int64_t cols = a.cols;
  const float* rp = a.distances + (row0 + lr) * a.row_stride;
  // Load j takes kRunsPerLoad runs, kLanesPerRun lanes on each (whole runs per request).
  const int sub = lane / kLanesPerRun, quad = lane % kLanesPerRun;
  auto run = [&](int q) { return rp + static_cast<int64_t>(q) * (cols / 32) / 8 * 8; };
  // The sample's keys need only the order of the values (OrderKey: 11.3 -> 9.4 M instructions,
  // 24.1 -> 20.7 us at 8192 x 8192, k = 64; with FloatKey the select 0.8-3.2 % slower on 8192
  // columns, 1.0-1.8 % on 16384, H100, bench/results/select_first_piece_ab_h100.txt). The pivot
  // bounds the filter's float compare: a pivot under -0 admits +0 too, one above +inf everything,
  // and a NaN pivot (a sample whose low ranks hold NaNs of a set sign bit) admits nothing, so the
  // row is handed back to the one-block path.
  unsigned key[kRun];
  if ((reinterpret_cast<uintptr_t>(rp) & 15u) == 0) {  // runs start on multiples of 8 words
    const uint64_t keep = L2Policy<false>();
#pragma unroll
    for (int j = 0; j < kRun / 4; ++j) {
      const float4* q = reinterpret_cast<const float4*>(run(kRunsPerLoad * j + sub)) + quad;
      const float4 v = LdgEvictLast(q, keep);
      key[4 * j] = OrderKey(v.x);
      key[4 * j + 1] = OrderKey(v.y);
      key[4 * j + 2] = OrderKey(v.z);
      key[4 * j + 3] = OrderKey(v.w);
    }
  } else {
#pragma unroll
    for (int j = 0; j < kRun; ++j) {
      const int w = j * 32 + lane;  // of the 32 * kRun sample words
      key[j] = OrderKey(__ldg(run(w / kRun) + w % kRun));
    }
  }
  unsigned prefix, mask;
  int rest, count;
  WarpRadixBin(
      rank, stop, 2, qs_all[warp],
      [&](auto&& f) {
#pragma unroll
        for (int j = 0; j < kRun; ++j) f(key[j]);
      },
      prefix, mask, rest, count);
  unsigned pivot_key = prefix | ~mask;
  if (pivot_key > FloatKey(__int_as_float(0x7f800000))) pivot_key = 0xffffffffu;
  publish(Pack(pivot_key, 0xffffffffu));
}

// The finish of local row lr by one warp: no block barrier, its n survivors read from L2 in
// each radix round, the k smallest gathered into `out` (WarpSortedWords<KB, kRegs>() words of
// shared memory) and sorted (KB / 32 words a lane; in registers with kRegs). When the k-th value
// is tied, its words are cut at the k-th column by a second radix select (over the columns).
// Rows with too few or too many survivors are handed back. The filter's warp that completes a
// row runs it (within the filter's 64 registers), up to kWarpFinishMax; above, the bucket finish.
constexpr int kWarpFinishMax = 256;

template <int KB, bool kRegs = (KB > kWarpSortInShared)>
__device__ void WarpFinishRow(const SelectArgs& a, int64_t row0, int64_t lr, int n, QmsShared& qs,
                              u64* out, const QmsSplitScratch& s, KeyBounds bounds = {}) {
  static_assert(KB >= 32 && KB <= kWarpFinishMax, "warp finish bucket");
  const int lane = threadIdx.x & 31;
  if (n < a.k || n > s.cap) {
    if (lane == 0) s.fail_rows[atomicAdd(s.fail_count, 1)] = row0 + lr;
    return;
  }
  // Eight words a lane in flight per pass over the survivors (they are read from L2 in each
  // radix round and gather): one load per word in turn measured 1 % slower.
  const u64* src = s.survivors + lr * s.cap;
  WarpSelectSorted<KB, 8, kRegs>(
      n, a.k, [&](int i) { return __ldcg(src + i); }, qs, out, bounds);
  // The survivors are read for the last time: their L2 lines are dropped rather than written
  // back to DRAM (the list ends inside the row's own cap x 8 bytes, whole lines). About half of
  // them were still in L2: -2.5 to -4.6 % at k = 64-256 from 8192 to 65536 columns and -1.8 to
  // -2.6 % on the long rows on an H100, -2.2 to +0.3 % on an H200 (bench/results/select.md
  // "Survivors dropped from L2").
  __syncwarp();
  DiscardL2(src, int64_t{n} * 8, lane, 32);
  WriteRow<32, WarpSortedRun<KB, kRegs>()>(a, row0 + lr, out, lane);
}

// Rows row0 .. row0 + rows - 1 (segments == 1), cut into `ppr` pieces of kFilterPiece columns
// filtered by one warp each (each lane loads kFilterVec float4 at once; the warps of a full SM
// keep enough loads in flight). Warps take groups of pieces of a row (QmsFilterGroup: kGroup, or
// the whole row) from a ticket counter. For KB <= kWarpFinishMax the warp that completes a
// row's last group (a counter per row) also finishes the row (WarpFinishRow), while the other
// warps keep streaming; a warp busy finishing simply takes fewer groups. (Measured slower,
// bench/results/select.md: requesting a warp's next piece before filtering the current one;
// pieces brought in by bulk copies with fewer, deeper-staged warps; each row's pivot computed in
// here by the warp opening an earlier row. At k = 256 anything that takes warps from the stream
// costs most; one counter update per group instead of per piece made no difference.)
constexpr int kGroup = 4;
// Rows of up to kWholeRowPieces pieces (8192 columns) are one group each for k <= 256: the warp
// that filters a row finishes it, with no hand-off (fence, counter) between warps. H100, 8192
// columns: -2.5 / -0.7 % at k = 256 / 128; for k > 256 (no finish in the filter) +3.2 %
// (bench/results/select.md "Survivors stored together, first piece early").
constexpr int kWholeRowPieces = 8;
// Pieces a warp filters in one go (a group) on rows of `ppr` pieces, for bucket KB.
__host__ __device__ constexpr int QmsFilterGroup(int kb, int ppr) {
  return kb <= kWarpFinishMax && ppr <= kWholeRowPieces ? ppr : kGroup;
}
constexpr int kFilterSlots = 768;  // survivors of a piece a warp stores together
static_assert(kFilterSlots * 2 <= sizeof(QmsShared), "the slots share the warp's finish state");
constexpr int kStretch = 16;    // groups of a row taken in turn on long rows
constexpr int kTileRows = 256;  // rows whose stretches alternate

// A staged piece (a warp's U float4 a lane, float4 u of lane l at words u * 128 + l * 4): the
// stage position of this lane's candidate bit j (element j & 3 of its float4 j >> 2), and the
// column within the piece of the word at stage position `at` (element at & 3 of float4 at >> 7
// of lane (at >> 2) & 31; see LoadChunk for the layout of rows that are not 16-byte aligned).
__device__ __forceinline__ int StagePos(int j, int lane) {
  return (j >> 2) * 128 + lane * 4 + (j & 3);
}
__device__ __forceinline__ int StageColumn(bool vec, int at) {
  return vec ? at : ChunkOffset<32>(false, at >> 7, at & 3, (at >> 2) & 31);
}

// Loads this lane's U float4 of the piece of row rp at column `base` into v and returns its
// candidate bits under the threshold word thr (thr_f its value). A whole piece of an aligned row
// under a finite threshold (`whole`) takes unchecked loads and one float compare an element.
template <int U>
__device__ __forceinline__ unsigned LoadPieceBits(const float* rp, int64_t cols, int64_t base,
                                                  bool vec, bool whole, u64 thr, float thr_f,
                                                  float4 (&v)[U], int lane) {
  if (whole && base + 32 * 4 * U <= cols) {
    const float4* q = reinterpret_cast<const float4*>(rp + base) + lane;
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcs(q + u * 32);
    return ValueLeBits(v, thr_f);
  }
  LoadChunk<32, U>(rp, cols, base, vec, v, lane);
  return CandidateBits<32, U>(v, base, cols, vec, thr, lane);
}

template <int U, int KB>
__global__ void __launch_bounds__(256, 4) QmsFilterKernel(SelectArgs a, int64_t row0, int rows,
                                                         int ppr, QmsSplitScratch s) {
  static_assert(32 * 4 * U == kFilterPiece, "one warp per piece");
  constexpr bool kFinish = KB <= kWarpFinishMax;
  // The finish sorts the k words in registers from k = 64 on (KB / 32 a lane): the sort in
  // shared memory is twice the code, and the warps that stream the rows wait on instruction
  // fetches while others finish (bench/results/select.md "Finish sorted in registers").
  constexpr bool kSortInRegisters = KB >= 64;
  static_assert(WarpSortedWords<KB, kSortInRegisters>() * 8 <= kFilterPiece * 4 || !kFinish,
                "the finish reuses the warp's stage");
  __shared__ __align__(16) float stage_all[8][kFilterPiece];
  // A warp's survivor slots (positions in its stage) while it filters; its finish state after.
  union WarpSlots {
    QmsShared qs;
    uint16_t idx[kFilterSlots];
  };
  __shared__ WarpSlots slots_all[8];
  AllowDependentGrid();
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  float* stage = stage_all[warp];
  const bool narrow = SurvivorColsNarrow(a.cols);  // above kWarpFinishMax
  const int group = QmsFilterGroup(KB, ppr);
  const int gpr = (ppr + group - 1) / group;
  const int groups = rows * gpr;
  // Group g: group gi of row lr.
  auto place = [&](int g, int& lr, int& gi) {
    if (gpr <= kStretch) {  // row after row
      lr = g / gpr;
      gi = g - lr * gpr;
    } else {
      // Long rows: tiles of kTileRows rows, in each a stretch of kStretch groups of every row in
      // turn, then the next stretch (the last one holds gpr % kStretch groups). Taken row after
      // row, the few thousand groups in flight covered about 16 rows of 2^20 columns, and the
      // filter drew 74 % of the DRAM peak where it draws 84 % on rows of 65536 columns (H100,
      // bench/results/select.md "Long rows row-parallel").
      const int tile = g / (kTileRows * gpr), rem = g - tile * kTileRows * gpr;
      const int tr = min(kTileRows, rows - tile * kTileRows);
      const int full = gpr / kStretch, head = full * kStretch * tr;
      if (rem < head) {
        const int sc = rem / (kStretch * tr), r2 = rem - sc * kStretch * tr;
        lr = tile * kTileRows + r2 / kStretch;
        gi = sc * kStretch + r2 % kStretch;
      } else {
        const int last = gpr - full * kStretch, r2 = rem - head;
        lr = tile * kTileRows + r2 / last;
        gi = full * kStretch + r2 % last;
      }
    }
  };
  // A warp's first group is its own (the warps' index), the others come from the ticket counter
  // (offset by the warps launched), which the pivot kernel clears: so the first piece is brought
  // into L2 before the pivots are waited for, while the pivot kernel's last blocks drain. Waiting
  // first measured 0.8-2.2 % slower on 8192-32768 columns (H100, bench/results/select.md
  // "Survivors stored together, first piece early").
  const int warps = static_cast<int>(gridDim.x) * 8;
  int g = static_cast<int>(blockIdx.x) * 8 + warp;
  if (g < groups && lane == 0) {
    int lr, gi;
    place(g, lr, gi);
    const float* rp = a.distances + (row0 + lr) * a.row_stride;
    const int64_t base = static_cast<int64_t>(gi) * group * kFilterPiece;
    if ((reinterpret_cast<uintptr_t>(rp) & 15u) == 0 && base + kFilterPiece <= a.cols) {
      PrefetchL2(rp + base, kFilterPiece * 4);
    }
  }
  WaitPrimaryGrid();  // the pivots and cleared counters
  while (g < groups) {
    int g_next = 0;
    if (lane == 0) g_next = atomicAdd(s.ticket, 1) + warps;  // in flight while g is filtered
    int lr, gi;
    place(g, lr, gi);
    const int p0 = gi * group;
    const int p1 = min(p0 + group, ppr);
    const float* rp = a.distances + (row0 + lr) * a.row_stride;
    const bool vec = (reinterpret_cast<uintptr_t>(rp) & 15u) == 0;
    const u64 thr = s.pivots[lr];
    const float thr_f = KeyToFloat(static_cast<unsigned>(thr >> 32));
    const bool whole = vec && static_cast<unsigned>(thr >> 32) != 0xffffffffu;
    u64* out = s.survivors + static_cast<int64_t>(lr) * s.cap;
    // The smallest and largest key this lane stores (for a row the warp finishes alone).
    unsigned key_lo = 0xffffffffu, key_hi = 0;
    unsigned* out_keys = SurvivorKeys(s, lr);  // above kWarpFinishMax
    unsigned* out_cols = SurvivorCols(s, lr);
    for (int p = p0; p < p1; ++p) {
      const int64_t base = static_cast<int64_t>(p) * kFilterPiece;
      float4 v[U];
      unsigned bits = LoadPieceBits(rp, a.cols, base, vec, whole, thr, thr_f, v, lane);
      if (!__any_sync(kFullMask, bits != 0)) continue;
      // Slots for the warp's candidates: an inclusive scan of the per-lane counts, one atomic.
      // (Its answer waited for only when the words are stored measured no faster.)
      const int cnt = __popc(bits);
      const int pos = WarpAppendSlots(cnt, &s.count[lr]);
      const int first = __shfl_sync(kFullMask, pos, 0);
      const int total = __shfl_sync(kFullMask, pos + cnt, 31) - first;
      if (bits) {
#pragma unroll
        for (int u = 0; u < U; ++u) *reinterpret_cast<float4*>(stage + u * 128 + lane * 4) = v[u];
      }
      // The word at stage position `at`; a word stored to survivor slot `slot`.
      auto word_at = [&](int at) {
        const int off = StageColumn(vec, at);
        return Pack(FloatKey(stage[at]), base + off);
      };
      auto store = [&](int slot, u64 w) {
        if constexpr (kFinish) {
          out[slot] = w;
          key_lo = min(key_lo, static_cast<unsigned>(w >> 32));
          key_hi = max(key_hi, static_cast<unsigned>(w >> 32));
        } else {
          StoreSurvivor(out_keys, out_cols, narrow, slot, w);
        }
      };
      // The survivors are written by the warp together, lane i taking the warp's survivors i,
      // i + 32, ...: each lane first notes its candidates' places in the stage (one shared store
      // each), then the words are built from the stage and stored contiguously. Built by each
      // lane from its own candidates, a word costs about 39 instructions and the warp waits for
      // the lane with the most (3.8 a piece against 1.2 on average at k = 128 on 8192 columns).
      // With the whole-piece loads above: -2 / -6 / -8 % at k = 64 / 128 / 256 on 8192 columns,
      // -1 to -4 % on 16384 on an H100; above k = 256 as fast as the words packed in shared
      // memory by each lane first (bench/results/select.md "Survivors stored together, first piece
      // early").
      if (total <= kFilterSlots) {
        uint16_t* idx = slots_all[warp].idx;
        for (int q = pos - first; bits; ++q) {
          const int j = __ffs(bits) - 1;
          bits &= bits - 1;
          idx[q] = static_cast<uint16_t>(StagePos(j, lane));
        }
        __syncwarp();
        for (int i = lane; i < total && first + i < s.cap; i += 32) {
          store(first + i, word_at(idx[i]));
        }
        __syncwarp();  // the slots and the stage are reused by the next piece
        continue;
      }
      // More candidates than slots: each lane stores its own, picked from the stage.
      for (int at_pos = pos; bits; ++at_pos) {
        const int j = __ffs(bits) - 1;
        bits &= bits - 1;
        if (at_pos < s.cap) store(at_pos, word_at(StagePos(j, lane)));
      }
    }
    if constexpr (kFinish) {
      // Publish this group's survivors, then count the group; the row's last group finishes it.
      __syncwarp();
      int last = gpr == 1;  // a row of one group is the warp's own: no hand-off
      if (lane == 0 && gpr > 1) {
        FenceAcqRelGpu();
        last = atomicAdd(&s.done[lr], 1) == gpr - 1;
      }
      if (__shfl_sync(kFullMask, last, 0)) {
        if (gpr > 1) FenceAcqRelGpu();
        const int n = __ldcg(&s.count[lr]);
        // A row of one group: every survivor was stored by this warp, so their keys' range is
        // known without a pass over them (H100, 8192 columns: -1.9 / -0.7 % at k = 256 / 128;
        // bench/results/select_key_bounds_ab_h100.txt).
        KeyBounds bounds;
        if (gpr == 1) {
          for (int o = 16; o > 0; o >>= 1) {
            key_lo = min(key_lo, __shfl_xor_sync(kFullMask, key_lo, o));
            key_hi = max(key_hi, __shfl_xor_sync(kFullMask, key_hi, o));
          }
          bounds = {key_lo, key_hi, true};
        }
        __syncwarp();  // the stage is reused as the finish's buffer
        WarpFinishRow<KB, kSortInRegisters>(a, row0, lr, n, slots_all[warp].qs,
                                            reinterpret_cast<u64*>(stage), s, bounds);
        __syncwarp();
      }
    }
    g = __shfl_sync(kFullMask, g_next, 0);
  }
}

// The finish above kWarpFinishMax: a block per row ranks the survivors by a counting sort over
// kBuckets buckets (bucket_finish.cuh, QmsBucketFinishKernel below BlockRowReselect); a row it
// refuses is selected again by the same block from its survivor list (which holds every survivor
// of such a row: crowded buckets, rows of few values), the rows whose pivot missed are handed
// back (1024 x 2^20 of 256 values at k = 1024: 2.94 -> 1.61 ms on an H200, bench/results/select.md
// "Crowded rows of the long rows' finish"). Against the k words sorted by a warp per row (and a
// block per row at k = 2048), 19-28 % off quick multi-select's time at k = 1024 on 8192 rows of
// 8192 to 32768 columns on an H200, 48-57 % at k = 2048 (H100 grid at k = 1024: 0.26 -> 0.35 of
// the read bandwidth at 8192 columns; bench/results/select.md "Finish by a counting sort"). Twice
// as many buckets, or half as many, measured slower, as did the survivors' columns held in
// registers from the first pass.
template <int KB>
struct QmsBucketFinishConfig {
  static constexpr int kThreads = KB >= 2048 ? 256 : 128;
  static constexpr int kBuckets = KB;
  static constexpr int kSlack = 64;  // placed words past the k-th (BucketFinishShared)
  static constexpr int kRegs = 4;  // uint4 of keys a thread holds between the passes
  static constexpr int kShared = BucketFinishShared<KB, kBuckets, kSlack>();
};

// The filter and the finish in one kernel, on rows of up to kBlockRowMaxCols columns, for k of 32
// to 2048 (k = 1500 / 2048: -12 to -23 % on 8192 rows of 16384-65536 columns, H100; at and below
// kWarpFinishMax on rows of more than three pieces; H100, 8192 rows, against the filter's warp
// finish: -7.9 / -10.4 / -6.0 / -3.1 % at k = 256 on 8192 / 16384 / 32768 / 65536 columns, -3.7 /
// -4.9 % at k = 128 on 8192 / 16384, -10 to -22 % on fewer rows of 12000 and 65536 columns; +11 %
// at k = 32 / 64 on rows of 2048 columns, bench/results/select_block_row_small_k_ab_h100.txt): a
// block takes a row at a time (its first by its index, the next from a counter as it starts a row),
// its warps filter the row's pieces under the row's pivot into a survivor list in the block's
// shared memory (keys and 16-bit columns, the keys' range noted as they are stored), and the block
// ranks the survivors by the counting sort of the bucket finish and writes the row. The survivors
// never leave the SM (on 8192 columns at k = 1024 they were about 70 MB written to global memory
// and read back), and a block's finish overlaps the other blocks' streaming; before it, each warp
// asks L2 for the first piece it will filter of the block's next row. Rows taken from a counter
// rather than every gridDim.x-th: rows cost unequal time (their survivors, their finish), and a
// fixed share left blocks idle while the slowest finished; and 8192 rows on 792 blocks left an
// eleventh round of 272 rows (H100, 8192 x 8192: -4 to -8 % at k = 32 to 256, -3 % at 1024;
// bench/results/select.md "Rows taken from a counter"). Rows the finish refuses the block selects
// again from the list; rows with fewer than k or more survivors than the list holds, from the row
// itself (BlockRowReselect). (kBlockRowMaxCols: the 16-bit columns of the list.)
template <int KB>
constexpr bool kBlockRowBucket = KB >= 32 && KB <= 2048;

template <int KB, int T, bool kSlot = false>
struct QmsBlockRowConfig {
  static constexpr int kWarps = T / 32;
  static constexpr int kBuckets = KB < T ? T : KB;
  static constexpr int kSlack = 64;  // placed words past the k-th (BucketFinishShared)
  // Survivors a row may leave (the rank rules take a pivot only where six standard deviations
  // above the survivors it leaves fit the list, QmsListHolds): 2048 words at k <= 512, 3584 at
  // k <= 1024, 6144 at k <= 2048. With the slots at 128 < k <= 256 (rows of up to 8192 columns,
  // where six deviations are 1176 at k = 256): 1536, so that the block's 30848 bytes let seven
  // blocks an SM in instead of six (H200: 8192 rows of 4096 / 6000 / 8192 columns -4.5 / -6.4 /
  // -5.0 % at k = 256, 2000 and 5000 rows of 8192 -2.8 / -4.1 %; at k <= 128 seven blocks
  // measured +0.7 to +1.8 %, so six there; bench/results/select.md "Seven slot blocks an SM at
  // k = 256"). In 128-thread blocks at 256 < k <= 1024: 3072 (six deviations above k = 1024 on
  // 8192 columns are 2581), so that six blocks an SM fit at k = 1024 as well, not five (ptxas: 80
  // registers, no spills; 8192 rows of 4096 to 8192 columns -5.3 to -7.6 % at k = 600 / 1024 on
  // an H100 and an H200, select.md "Six blocks an SM at k = 1024, the wide rank before the whole
  // row").
  static constexpr int kCap = kSlot && KB == 256    ? 1536
                              : KB <= 512           ? 2048
                              : KB <= 1024 && T == 128 ? 3072
                              : KB <= 1024          ? 3584
                                                    : 6144;
  static constexpr int kListBytes = kCap * 6;  // 32-bit keys, then 16-bit columns
  static constexpr int kStage = kWarps * kFilterPiece * 4;
  static constexpr int kFinish = BucketFinishShared<KB, kBuckets, kSlack>();
  static constexpr int kShared = kListBytes + (kStage > kFinish ? kStage : kFinish);
  // With kSlot (QmsBlockRowKernel): the list, the slots (a piece a warp), the finish.
  static constexpr int kSlotShared = kListBytes + kStage + kFinish;
  // The finish's bytes (after the slots with kSlot, else over the stages) and the words its
  // placement buffer holds there.
  static constexpr int kWork = kSlot ? kFinish : (kStage > kFinish ? kStage : kFinish);
  static constexpr int kPlace = BucketFinishPlaceCap(kWork, kBuckets);
  static_assert(kListBytes % 16 == 0, "the stage and the finish's words 16-byte aligned");
  static_assert(kStage % 16 == 0, "the finish after the slots 16-byte aligned");
};

// A row the fused kernel's sampled pivot did not settle, selected again by the same block, exact
// for any row. Where the list holds every survivor (k <= n <= its cap: the counting-sort finish
// refused the row, a bucket up to the k-th crowded by equal keys, as in rows of distances that take
// few values) from the list (`keys`, `cols`: n words, their keys within `bounds` where known; in
// shared memory, or in global memory for the long rows' finish launch, QmsBucketFinishKernel);
// otherwise (fewer than k survivors, more than the list holds: keys == nullptr) from the row
// itself. The k-th key and its rank among its ties by BlockRadixPick, the column of the last tie
// taken by a second pick over the ties' columns (a row's columns are distinct, in 16 or 32 bits,
// ColT), the k words gathered into `words` (KB words), sorted there by a bitonic sort and
// written; the radix state `qs` after the words. From the row: seven reads of it, slower than the
// filter, but a launch after the fused kernel to do it cost every call 1.5-2 us on 8192 rows and
// 2-4 us on 300-2000 (H100; bench/results/select.md "Refused rows reselected by the fused kernel").
// From the list: rows of 65536 columns whose values take 256 levels (every row crowded: about 256
// words share each key) took 5.3-7.7 ms for 8192 rows at k = 32-1024 on an H200 when each was
// selected again from the row, 0.55-0.98 ms from the list (bench/results/select.md "Rows of few
// values"). All T threads call it.
template <int T, int KB, typename ColT = uint16_t>
__device__ __forceinline__ void BlockRowReselect(const SelectArgs& a, int64_t row, int n,
                                                 const unsigned* keys, const ColT* cols,
                                                 KeyBounds bounds, u64* words, QmsShared& qs) {
  static_assert((KB & (KB - 1)) == 0 && KB >= 32, "a power of two");
  const float* rp = a.distances + row * a.row_stride;
  const bool list = keys != nullptr;
  const int count = list ? n : static_cast<int>(a.cols);
  // Rows 16-byte aligned with a multiple of 4 columns are read four words a load.
  const bool vec = !list && (reinterpret_cast<uintptr_t>(rp) & 15u) == 0 && count % 4 == 0;
  const int tid = threadIdx.x;
  // fn(key, column) for each of this thread's words. The loops are not unrolled: unrolled, the
  // fused kernel spilled.
  auto each_word = [&](auto&& fn) {
    if (list) {
#pragma unroll 1
      for (int i = tid; i < count; i += T) fn(keys[i], static_cast<unsigned>(cols[i]));
    } else if (vec) {
      const float4* r4 = reinterpret_cast<const float4*>(rp);
#pragma unroll 1
      for (int i = tid; i < count / 4; i += T) {
        const float4 v = __ldcg(r4 + i);
        const unsigned c = 4u * static_cast<unsigned>(i);
        fn(FloatKey(v.x), c);
        fn(FloatKey(v.y), c + 1);
        fn(FloatKey(v.z), c + 2);
        fn(FloatKey(v.w), c + 3);
      }
    } else {
#pragma unroll 1
      for (int i = tid; i < count; i += T) fn(FloatKey(__ldcg(rp + i)), static_cast<unsigned>(i));
    }
  };
  // From the row, bounds of the whole key range: four rounds from the top bit, no pass for the
  // row's range.
  const RadixPick pick = BlockRadixPick<T>(
      a.k - 1, qs, [&](auto&& f) { each_word([&](unsigned key, unsigned) { f(key); }); }, 4,
      list ? bounds : KeyBounds{0u, 0xffffffffu, true});
  const unsigned kth = pick.key;
  // The ties taken are the first pick.tie_rank + 1 in column order.
  const RadixPick cut = BlockRadixPick<T>(
      pick.tie_rank, qs,
      [&](auto&& f) {
        each_word([&](unsigned key, unsigned col) {
          if (key == kth) f(col);
        });
      },
      4, KeyBounds{0u, sizeof(ColT) == 2 ? 0xffffu : 0xffffffffu, true});
  int* fill = &qs.less[0];
  if (tid == 0) *fill = 0;
  __syncthreads();
  each_word([&](unsigned key, unsigned col) {
    if (key < kth || (key == kth && col <= cut.key)) words[atomicAdd(fill, 1)] = Pack(key, col);
  });
  for (int i = a.k + tid; i < KB; i += T) words[i] = kSentinel;
  __syncthreads();
  BitonicSortRuns<T>(words, 1, KB, KB);
  WriteRow<T>(a, row, words, tid);
}

template <int KB, typename ColT>
__global__ void __launch_bounds__(QmsBucketFinishConfig<KB>::kThreads)
    QmsBucketFinishKernel(SelectArgs a, int64_t row0, QmsSplitScratch s) {
  using C = QmsBucketFinishConfig<KB>;
  extern __shared__ __align__(16) unsigned char bucket_smem[];
  AllowDependentGrid();
  WaitPrimaryGrid();  // the survivors
  const int64_t lr = blockIdx.x;
  const int n = s.count[lr];
  bool done = false;
  if (n >= a.k && n <= s.cap) {
    const ColT* cols = reinterpret_cast<const ColT*>(SurvivorCols(s, lr));
    done = BlockBucketFinish<C::kThreads, KB, C::kBuckets, C::kSlack, C::kRegs>(
        a, row0 + lr, n, SurvivorKeys(s, lr), cols, bucket_smem);
    if (!done) {  // crowded: selected again from the survivor list, which holds every survivor
      static_assert(KB * 8 + sizeof(QmsShared) <= C::kShared && sizeof(QmsShared) % 8 == 0,
                    "the reselect's words and radix state in the finish's shared memory");
      __syncthreads();  // the finish's reads of its shared memory are done
      BlockRowReselect<C::kThreads, KB, ColT>(
          a, row0 + lr, n, SurvivorKeys(s, lr), cols, KeyBounds{},
          reinterpret_cast<u64*>(bucket_smem),
          *reinterpret_cast<QmsShared*>(bucket_smem + KB * 8));
      done = true;
    }
  }
  if (!done && threadIdx.x == 0) s.fail_rows[atomicAdd(s.fail_count, 1)] = row0 + lr;
}

// The finish kernel for the survivor columns of rows of `cols` columns (16 or 32 bits).
template <int KB>
auto QmsBucketFinishFor(int64_t cols) {
  return SurvivorColsNarrow(cols) ? QmsBucketFinishKernel<KB, uint16_t>
                                  : QmsBucketFinishKernel<KB, unsigned>;
}

// kSlot: each warp's pieces come by bulk copies into a slot of a piece a warp in shared memory
// instead of by its lanes' loads, the next copied as soon as the warp has taken the last from the
// slot, across rows: the block's next row's first pieces are in flight while it finishes a row.
// The slot is the piece's stage. Rows 16-byte aligned, columns a multiple of 4, a piece a warp
// (QmsBlockRowSlot).
template <int KB, int T, int MB, bool kAhead = false, bool kSlot = false>
__global__ void __launch_bounds__(T, MB) QmsBlockRowKernel(SelectArgs a, int64_t row0, int rows,
                                                          int ppr, QmsSplitScratch s,
                                                          unsigned tag) {
  using C = QmsBlockRowConfig<KB, T, kSlot>;
  constexpr int U = kFilterVec;
  constexpr bool kNumberKeys = KB >= 512 || (T == 128 && KB >= 128);
  static_assert(!(kSlot && kAhead), "the slot asks for the row's pieces itself");
  extern __shared__ __align__(16) unsigned char block_row_smem[];
  unsigned* keys = reinterpret_cast<unsigned*>(block_row_smem);
  uint16_t* cols16 = reinterpret_cast<uint16_t*>(block_row_smem + C::kCap * 4);
  // The stages, then the finish's state in the same bytes; with kSlot the finish's state after
  // the slots.
  unsigned char* work = block_row_smem + C::kListBytes + (kSlot ? C::kStage : 0);
  __shared__ int fill;
  __shared__ unsigned key_lo, key_hi;
  __shared__ u64 row_pivot;
  __shared__ int next_row;
  __shared__ uint64_t slot_bar[kSlot ? C::kWarps : 1];
  AllowDependentGrid();
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  float* stage = reinterpret_cast<float*>(block_row_smem + C::kListBytes) + warp * kFilterPiece;
  auto row_ptr = [&](int lr) { return a.distances + (row0 + lr) * a.row_stride; };
  // Piece i of this warp's pieces of row lr (columns from (warp + i * kWarps) * kFilterPiece)
  // asked for into its slot by lane 0, L2 told its lines are read once.
  const uint64_t slot_policy = kSlot ? L2Policy<true>() : 0;
  auto slot_fill = [&](int lr, int i) {
    if (kSlot && lane == 0) {
      const int64_t base = int64_t{warp + i * C::kWarps} * kFilterPiece;
      const int bytes = static_cast<int>(std::min<int64_t>(kFilterPiece, a.cols - base)) * 4;
      MbarExpectTx(&slot_bar[warp], bytes);
      BulkCopyHint(stage, row_ptr(lr) + base, bytes, &slot_bar[warp], slot_policy);
    }
  };
  if constexpr (kSlot) {
    if (lane == 0) MbarInit(&slot_bar[warp], 1);
    __syncwarp();
    // The block's first row's first piece: the rows were written before the pivot kernel
    // started, which it has by now.
    slot_fill(static_cast<int>(blockIdx.x), 0);
  }
  int taken = 0;  // pieces this warp has taken from its slot (the barrier's parity)
  // Each warp's first piece of a row asked of L2: of the block's first row while the pivot
  // kernel's last blocks drain, as the filter does (H100, 8192 rows, separate builds: -1.6 /
  // -3.5 % at k = 64 / 256 on 8192 columns, -0.9 / -1.1 % at k = 256 / 1024 on 16384, -0.2 to
  // -1.0 % on 32768 and 65536, bench/results/select_block_row_small_k_ab_h100.txt); of the next
  // row before each finish.
  // Whole pieces of 16-byte aligned rows only.
  auto prefetch_piece = [&](const float* rp, int p) {
    if ((reinterpret_cast<uintptr_t>(rp) & 15u) == 0 && int64_t{p + 1} * kFilterPiece <= a.cols) {
      PrefetchL2(rp + int64_t{p} * kFilterPiece, kFilterPiece * 4);
    }
  };
  auto prefetch_first = [&](int lr) {
    if (!kSlot && lane == 0 && lr < rows && warp < ppr) prefetch_piece(row_ptr(lr), warp);
  };
  prefetch_first(static_cast<int>(blockIdx.x));
  // The pivots: with a tag, each row's own as the pivot kernel publishes it (its counters cleared
  // before it, and row 0's before the launch's hand-back counters are used: its pivot is awaited
  // first), so a row starts while the pivot kernel still works on later rows; without, all of
  // them once the pivot kernel has finished.
  auto await_pivot = [&](int lr) {
    u64 w;
    while (static_cast<unsigned>(w = LoadAcquireGpu(&s.pivots[lr])) != tag) __nanosleep(64);
    return w | 0xffffffffu;
  };
  if (tag == 0) {
    WaitPrimaryGrid();
  } else if (threadIdx.x == 0) {
    await_pivot(0);
  }
  for (int lr = blockIdx.x; lr < rows;) {
    // kAhead: each warp's later pieces of the row asked of L2 as the row starts, from the block's
    // second row on (QmsBlockRowAhead).
    if (kAhead && lane == 0 && lr != static_cast<int>(blockIdx.x)) {
      for (int p = warp + C::kWarps; p < ppr; p += C::kWarps) prefetch_piece(row_ptr(lr), p);
    }
    if (threadIdx.x == 0) {
      // The block's next row, taken now so its first pieces can be asked of L2 before the finish
      // (the counter is cleared by the pivot kernel: with a tag, before row 0's pivot is
      // published, which the block awaited above).
      next_row = atomicAdd(s.ticket, 1) + static_cast<int>(gridDim.x);
      fill = 0;
      key_lo = 0xffffffffu;
      key_hi = 0;
      if (tag != 0) row_pivot = await_pivot(lr);
    }
    __syncthreads();
    unsigned lo = 0xffffffffu, hi = 0;  // of the keys this lane stores
    const float* rp = row_ptr(lr);
    const bool vec = (reinterpret_cast<uintptr_t>(rp) & 15u) == 0;
    const u64 thr = tag == 0 ? s.pivots[lr] : row_pivot;
    const float thr_f = KeyToFloat(static_cast<unsigned>(thr >> 32));
    const bool whole = vec && static_cast<unsigned>(thr >> 32) != 0xffffffffu;
    // A piece's survivors (bits; the piece in v, staged at `stage`, where with kSlot it came)
    // into the list.
    auto take = [&](unsigned bits, const float4 (&v)[U], int64_t base) {
      const int count = __popc(bits);
      const int pos = WarpAppendSlots(count, &fill);
      const int first = __shfl_sync(kFullMask, pos, 0);
      const int end = min(__shfl_sync(kFullMask, pos + count, 31), C::kCap);
      if (!kSlot && bits) {
#pragma unroll
        for (int u = 0; u < U; ++u) *reinterpret_cast<float4*>(stage + u * 128 + lane * 4) = v[u];
      }
      // The survivors stored by the warp together: each lane notes its candidates' stage
      // positions in their slots' column entries (a short loop over its own bits), then lane i
      // makes slots first + i, first + i + 32, ... from the stage, instead of each lane making its
      // own survivors while the warp waits for the lane with the most. H100, separate builds,
      // two calls: -1.7 to -3.7 % at k = 512 / 1024 on 8192 x 8192, -2.5 to -4.4 % at k = 1024
      // on 12288 and 16384 columns, -2.0 / -3.0 % at k = 256 on 12288, -0.5 to -6 % on 300 to
      // 5000 rows (300 x 8192 at k = 256 -5.0 / +5.9 %), 32768 and 65536 columns within 0.7 %;
      // no spills left in the kernel
      // (bench/results/select.md "Survivors stored by the warp together, in the fused kernel").
      for (int slot = pos; bits && slot < C::kCap; ++slot) {
        cols16[slot] = static_cast<uint16_t>(StagePos(__ffs(bits) - 1, lane));
        bits &= bits - 1;
      }
      __syncwarp();
      // The piece's survivors into the list. Under a finite threshold (`whole`) none is NaN and
      // the key needs no NaN test (kNumberKeys): H100, 8192 rows, separate builds, -1.9 to -2.9 %
      // at k = 512 / 1024 on 8192 columns, -1.3 to -2.5 % on 16384, -0.7 to -2.2 % at k = 256 on
      // 8192; with 256 threads at k <= 256 it cost +0.2 to +1.3 % on 32768 and 65536 columns, so
      // not there (bench/results/select.md "Survivor keys without the NaN test").
      auto store_all = [&](auto finite) {
        for (int slot = first + lane; slot < end; slot += 32) {
          const int at = cols16[slot];
          const unsigned key =
              decltype(finite)::value ? NumberKey(stage[at]) : FloatKey(stage[at]);
          keys[slot] = key;
          cols16[slot] = static_cast<uint16_t>(base + StageColumn(vec, at));
          lo = min(lo, key);
          hi = max(hi, key);
        }
      };
      if constexpr (kNumberKeys) {
        if (whole) {
          store_all(std::true_type{});
        } else {
          store_all(std::false_type{});
        }
      } else {
        store_all(std::false_type{});
      }
      __syncwarp();  // the stage is reused by the next piece
    };
    if constexpr (kSlot) {
      const int nxt = next_row;
      const int mine = (ppr - warp + C::kWarps - 1) / C::kWarps;  // this warp's pieces, >= 1
      for (int i = 0; i < mine; ++i, ++taken) {
        const int64_t base = int64_t{warp + i * C::kWarps} * kFilterPiece;
        MbarWait(&slot_bar[warp], taken & 1);
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = reinterpret_cast<const float4*>(stage)[u * 32 + lane];
        const unsigned bits = whole && base + kFilterPiece <= a.cols
                                  ? ValueLeBits(v, thr_f)
                                  : CandidateBits<32, U>(v, base, a.cols, true, thr, lane);
        if (__any_sync(kFullMask, bits != 0)) take(bits, v, base);
        // The slot takes this warp's next piece: of this row, else of the block's next row (every
        // lane has read the slot by now: the vote above waits for its bits, take's last
        // __syncwarp for its survivors).
        if (i + 1 < mine) {
          slot_fill(lr, i + 1);
        } else if (nxt < rows) {
          slot_fill(nxt, 0);
        }
      }
    } else {
      for (int p = warp; p < ppr; p += C::kWarps) {
        const int64_t base = static_cast<int64_t>(p) * kFilterPiece;
        float4 v[U];
        const unsigned bits = LoadPieceBits(rp, a.cols, base, vec, whole, thr, thr_f, v, lane);
        if (__any_sync(kFullMask, bits != 0)) take(bits, v, base);
      }
    }
    const int nxt = next_row;
    prefetch_first(nxt);
    for (int o = 16; o > 0; o >>= 1) {
      lo = min(lo, __shfl_xor_sync(kFullMask, lo, o));
      hi = max(hi, __shfl_xor_sync(kFullMask, hi, o));
    }
    if (lane == 0 && lo <= hi) {
      atomicMin(&key_lo, lo);
      atomicMax(&key_hi, hi);
    }
    __syncthreads();
    const int n = fill;
    bool done = false;
    if (n >= a.k && n <= C::kCap) {
      done = BlockBucketFinish<T, KB, C::kBuckets, C::kSlack, 0, uint16_t, true, C::kPlace>(
          a, row0 + lr, n, keys, cols16, work, KeyBounds{key_lo, key_hi, true});
    }
    if (!done) {
      static_assert(KB * 8 + sizeof(QmsShared) <= C::kFinish && sizeof(QmsShared) % 8 == 0,
                    "the reselect's words and radix state in the work area");
      __syncthreads();  // the finish's reads of the list and the work area are done
      // The survivors' count read again, not kept in a register across the finish (which then
      // spilled).
      const int m = fill;
      const bool whole_list = m >= a.k && m <= C::kCap;
      BlockRowReselect<T, KB>(a, row0 + lr, m, whole_list ? keys : nullptr, cols16,
                              KeyBounds{key_lo, key_hi, true}, reinterpret_cast<u64*>(work),
                              *reinterpret_cast<QmsShared*>(work + KB * 8));
    }
    __syncthreads();  // fill, the list and the finish's state are reused by the next row
    lr = nxt;
  }
}

// The fused kernel's block: 256 threads (three blocks an SM by registers), or 128 at k <= 1024 on
// rows of up to 8192 columns (six an SM, at k = 1024 too with the shorter list of
// QmsBlockRowConfig; each warp filters two pieces a row; on some devices also longer rows,
// QmsBlockRowNarrowFor). H100, 8192 rows: 128 threads 17.3 % faster than the three-kernel path
// at k = 512 on 8192 columns where 256 are 11.5 %, and 1.4-7.4 points behind 256 on every other
// shape of the grid (bench/results/select_block_row_ab_h100.txt); at k = 1024, once rows were
// taken from a counter, 1.7-2.9 % faster than 256 on 8192 and 12000 rows (select.md "Rows taken
// from a counter").
template <int KB>
constexpr bool QmsBlockRowNarrow(int64_t cols) {
  return KB <= 1024 && cols <= 8192;
}

// The survivor list the fused kernel's rules count on: the shorter of its 128- and 256-thread
// blocks' (rows where k is a large share of the row run in 128-thread blocks at k <= 1024).
template <int KB>
constexpr int QmsBlockRowCap() {
  return std::min(QmsBlockRowConfig<KB, 128>::kCap, QmsBlockRowConfig<KB, 256>::kCap);
}

// Whether a survivor list of `cap` words holds six standard deviations above the row words a
// pivot leaves when `mean` sample keys fall under it (a sample of `sample` words).
inline bool QmsListHolds(int64_t cols, int sample, double mean, int cap) {
  return SixSigmaSurvivors(cols, sample, mean) <= cap;
}
// The same for the fused kernel's list (the slot kernel's may be shorter: QmsBlockRowSlot).
template <int KB>
bool QmsBlockRowListHolds(int64_t cols, int sample, double mean) {
  return QmsListHolds(cols, sample, mean, QmsBlockRowCap<KB>());
}

// The sample rank of the fused kernel's pivots, from a sample of `sample` words: SampleRank
// where it applies (rows of at least 8k columns); on rows where k is a larger share, the rank
// SampleRank's rule gives if it is under half the sample and six standard deviations above the
// survivors it leaves fit the list, else the whole row when it fits the list (kAdmitAll: no
// sample; kNoRank if not). The rank first: on rows of 1200 to 3500 columns at k = 256 / 600 /
// 1024 the whole row took 1.5 to 2.0 times as long where the rank applies (H200,
// bench/results/select.md "Six blocks an SM at k = 1024, the wide rank before the whole row").
template <int KB>
int QmsBlockRowRank(int64_t cols, int k, int sample) {
  const int rank = SampleRank(cols, k, sample);
  if (rank >= 0) return rank;
  if (cols < k || cols < sample) return kNoRank;
  const int wide = SampleRankOf(cols, k, sample);
  if (wide < sample / 2 && QmsBlockRowListHolds<KB>(cols, sample, wide + 1.0)) return wide;
  return cols <= QmsBlockRowCap<KB>() ? kAdmitAll : kNoRank;
}

// The words of the fused kernel's pivot sample: 512 on rows of up to 16384 columns (the list
// absorbs the extra survivors), else as the filter's (QmsSplitSample).
inline int QmsBlockRowSample(int64_t cols, int64_t k) {
  return cols <= 16384 ? kBlockRowSample : QmsSplitSample(cols, k);
}

// Whether the fused kernel can take the rows: up to kBlockRowMaxCols columns, its shared memory
// within the device's.
template <int KB>
bool QmsBlockRowFits(const SelectArgs& a) {
  if constexpr (!kBlockRowBucket<KB>) {
    return false;
  } else {
    return a.cols <= kBlockRowMaxCols &&
           QmsBlockRowConfig<KB, 256>::kShared <= a.max_shared_bytes;
  }
}

// Whether the fused kernel takes the rows of the row-parallel path: where it fits, above
// kWarpFinishMax always; at and below, on rows of four pieces and more (on rows of two pieces
// the filter measured faster), and on rows too short for the filter's sample (k a large share
// of the row, where otherwise one block would select each row).
template <int KB>
bool QmsBlockRowSuits(const SelectArgs& a) {
  if (!QmsBlockRowFits<KB>(a)) return false;
  return KB > kWarpFinishMax || a.cols > 3 * kFilterPiece || !QmsRowParallelFits(a.cols, a.k);
}

// Whether the row-parallel path suits the shape (QmsRowParallelFits, or the fused kernel's
// wider rule) and the launch.
template <int KB>
bool QmsSplitSuits(const SelectArgs& a) {
  if (a.segments != 1 || a.rows < 2) return false;
  if (QmsRowParallelFits(a.cols, a.k)) return true;
  return QmsBlockRowFits<KB>(a) &&
         QmsBlockRowRank<KB>(a.cols, a.k, QmsBlockRowSample(a.cols, a.k)) != kNoRank;
}

// Block shape per bucket (one warp per row for small k measured slower: bench/results).
template <int KB>
struct QmsShape {
  static constexpr int kThreads = 256;
  static constexpr int kVec = 2;
  static constexpr int kDepth = 4;
};

// The fused kernel's pivots stop their radix rounds at a bin of at most kBlockRowPivotStop sample
// keys (on uniform rows the first round's bin at the rank usually holds one to three; its upper
// bound admits a few more words than the second round's) where the survivor list still holds six
// standard deviations above the survivors such a pivot may leave; elsewhere, and on the filter
// path, whose lists are sized closer to their survivors, both rounds. At k = 512 on 32768 and
// 65536 columns (the list at 4.4 standard deviations) the looser pivots cost 7-11 %, likely rows
// overflowing the list and selected again (bench/results/select.md "The warp's key range by
// reduction, the pivot's rounds"). `cap`: the list of the kernel the launch runs.
constexpr int kBlockRowPivotStop = 4;
inline int QmsBlockRowPivotStop(int64_t cols, int rank, int sample, int cap) {
  if (rank < 0) return 0;
  return QmsListHolds(cols, sample, rank + 1.0 + kBlockRowPivotStop, cap) ? kBlockRowPivotStop : 0;
}

// A launch's tag for its published pivots (never 0, which means none, nor 2^32 - 1): a pivot
// word left in the workspace by an earlier launch carries another tag.
inline unsigned NextPivotTag() {
  static std::atomic<unsigned> next{0};
  unsigned t;
  do {
    t = next.fetch_add(1, std::memory_order_relaxed) + 1;
  } while (t == 0 || t == 0xffffffffu);
  return t;
}

// Rows are taken in batches whose survivor lists fit kSplitScratchBytes. (Running the pivot and
// finish launches of one batch beside the filter of the next, on side streams, measured no
// faster: the filter needs every register of the SM to keep enough loads in flight.)
constexpr int64_t kSplitScratchBytes = int64_t{320} << 20;

// Whether the fused kernel asks L2 for each warp's later pieces of a row as the row starts (the
// first piece of the block's next row is asked for before each finish in any case), from each
// block's second row on: on rows of up to 16384 columns with more pieces than the block has
// warps, in 256-thread blocks at every k and in 128-thread blocks (rows of up to 8192 columns) at
// k > 256. H100, 8192 rows, separate builds: -1.0 to -3.5 % at k = 512 / 1024 on 8192 to 16384
// columns (8192 x 8192 at k = 1024 0.499-0.505 -> 0.514-0.519 of the read), -0.7 / -3.2 % at
// k = 2048 on 12288 / 16384, -2.2 to -2.8 % at k = 32-256 on 12288; 12000 rows -2.6 % at
// k = 1024. Not taken: at k <= 256 in 128-thread blocks (+1.2 % at k = 32 on 8192 columns, no
// gain at 128 / 256); on the blocks' first rows, which start together and whose prefetches crowd
// the first pieces' loads (2000 and 5000 rows of 8192 columns 2-4 % slower at k = 1024); on 32768
// and 65536 columns (three and seven prefetches a warp a row, +2.5 to +28 %)
// (bench/results/select.md "A row's later pieces asked of L2").
template <int KB>
bool QmsBlockRowAhead(int64_t cols, int threads) {
  return cols <= 16384 && cols > int64_t{threads / 32} * kFilterPiece &&
         (threads > 128 || KB >= 512);
}

// Devices whose SM's share of the DRAM bandwidth exceeds this (bytes a microsecond; an H200's 36
// KB/us, not an H100's 25) run the fused kernel's rows at k <= 256 bound by each block's chain of
// a row (its loads, its filter, its finish) rather than by the read: there the two rules below
// keep more rows in flight an SM and the next row's loads in flight during a finish.
constexpr double kFastDramPerSm = 30000;

// The fused kernel's block size: 128 threads on rows of up to 8192 columns at k <= 1024
// (QmsBlockRowNarrow), and on devices above kFastDramPerSm on rows of up to 16384 columns at
// k <= 256 where the rows fill the SMs' six 128-thread blocks (six rows in flight an SM instead of
// three). H200, separate builds: 8192 rows of 10000 / 12288 / 16384 columns -22 to -26 / -16 to
// -19 / -8 to -10 % at k = 32-256, 5000 x 16384 -8.1 / -6.7 % at k = 32 / 256, 2000 x 16384
// -3.8 / -2.2 %; but 300 x 16384 +14 / +22 % (a row's filter shared by four warps instead of
// eight, and no second round to fill), hence the rows; on an H100 256 threads measured faster
// ("The fused kernel for every k"; bench/results/select.md "128-thread blocks on 16384 columns").
// FM_QMS_BLOCK_THREADS=128 / 256 overrides the choice where the kernel allows it.
template <int KB>
bool QmsBlockRowNarrowFor(const SelectArgs& a) {
  const bool wide_rows = KB <= 256 && a.cols <= 16384;
  if (const char* env = std::getenv("FM_QMS_BLOCK_THREADS")) {
    if (std::strcmp(env, "128") == 0) return QmsBlockRowNarrow<KB>(a.cols) || wide_rows;
    if (std::strcmp(env, "256") == 0) return false;
  }
  return QmsBlockRowNarrow<KB>(a.cols) ||
         (wide_rows && a.dram_bytes_per_us_sm > kFastDramPerSm && a.rows >= int64_t{6} * a.sms);
}

// Whether the fused kernel's pieces come by bulk copies into a slot a warp (QmsBlockRowKernel's
// kSlot): in its 128-thread blocks at k <= 256 on rows of up to 8192 columns, on devices above
// kFastDramPerSm, and elsewhere at 64 < k <= 256 on rows of up to 6144 columns; on 16-byte
// aligned rows of a multiple of 4 columns. H200, 8192 rows of 8192 columns: -4.5 / -7.6 / -3.1 %
// at k = 32 / 128 / 256, 5000 rows -3.6 %; H100: -1.3 to +1.3 % there, and with the seven blocks
// an SM at k = 256 (84bad66) +1.1 to +2.4 % at k = 128-256, but on 8192 rows of 4096 / 6000
// columns -1.8 / -8.4 % at k = 128, -4.2 / -7.7 % at k = 256 (select.md "Slots on an H100 at
// k = 128-256"); and in either, where the slots cost blocks an SM (k = 512 / 1024: +6 to +11 %)
// or in 256-thread blocks (+5 to +10 % on 65536 columns), slower; in 128-thread blocks on 12288
// and 16384 columns (H200) -2 to +11 % against none (bench/results/select.md "The fused kernel's
// pieces by bulk copies", "128-thread blocks on 16384 columns"). FM_QMS_SLOT=1 / 0 overrides the
// device rule where the slots can be used: where the survivors the pivot's rank in its sample
// leaves (QmsBlockRowRank) fit the slot kernel's list with six standard deviations to spare.
template <int KB>
bool QmsBlockRowSlot(const SelectArgs& a, int threads, int sample, int rank) {
  using SC = QmsBlockRowConfig<KB, 128, true>;
  if (!BulkCopyAvailable() || threads != 128 || KB > 256) return false;
  const bool aligned = (reinterpret_cast<uintptr_t>(a.distances) & 15u) == 0 &&
                       a.row_stride % 4 == 0 && a.cols % 4 == 0;
  const int64_t ppr = (a.cols + kFilterPiece - 1) / kFilterPiece;
  if (!aligned || ppr < threads / 32 || SC::kSlotShared > a.max_shared_bytes) return false;
  if (rank < 0 || !QmsListHolds(a.cols, sample, rank + 1.0, SC::kCap)) return false;
  if (const char* env = std::getenv("FM_QMS_SLOT")) return std::strcmp(env, "1") == 0;
  if (a.dram_bytes_per_us_sm > kFastDramPerSm) return a.cols <= 8192;
  return KB >= 128 && a.cols <= 6144;
}

template <int KB>
void LaunchQmsRowParallel(const SelectArgs& a) {
  constexpr int T = QmsShape<KB>::kThreads, U = QmsShape<KB>::kVec, D = QmsShape<KB>::kDepth;
  using C = QmsConfig<KB, T, U, D>;
  auto list = QuickMultiSelectListKernel<KB, T, U, D>;  // the hand-back, not on the fused path
  using BF = QmsBucketFinishConfig<KB>;
  const bool block_row = QmsBlockRowSuits<KB>(a);
  if (!block_row) PrepareSharedMemory(list, C::kShared, a);
  if constexpr (KB > kWarpFinishMax) {
    if (!block_row) PrepareSharedMemory(QmsBucketFinishFor<KB>(a.cols), BF::kShared, a);
  }
  // The pivots' sample (32 runs of sample / 32 words a row) and the rank taken from it.
  const int sample = block_row ? QmsBlockRowSample(a.cols, a.k) : QmsSplitSample(a.cols, a.k);
  const int rank = block_row ? QmsBlockRowRank<KB>(a.cols, a.k, sample)
                             : SampleRank(a.cols, a.k, sample);
  const bool narrow_block = QmsBlockRowNarrowFor<KB>(a);
  const int block_threads = narrow_block ? 128 : 256;
  const bool slot = block_row && QmsBlockRowSlot<KB>(a, block_threads, sample, rank);
  const bool ahead = !slot && QmsBlockRowAhead<KB>(a.cols, block_threads);
  auto block_row_kernel = [&] {
    if constexpr (kBlockRowBucket<KB>) {
      if constexpr (KB <= 1024) {
        if (narrow_block) {
          constexpr int kPerSm = 6;  // 128-thread blocks an SM
          if constexpr (KB <= 256) {
            // Seven slot blocks an SM at KB = 256, whose list is shorter (QmsBlockRowConfig).
            if (slot) return QmsBlockRowKernel<KB, 128, KB == 256 ? 7 : kPerSm, false, true>;
          }
          if constexpr (KB >= 512) {
            if (ahead) return QmsBlockRowKernel<KB, 128, kPerSm, true>;
          }
          return QmsBlockRowKernel<KB, 128, kPerSm>;
        }
      }
      return ahead ? QmsBlockRowKernel<KB, 256, 3, true> : QmsBlockRowKernel<KB, 256, 3>;
    } else {
      return 0;
    }
  }();
  const int block_row_shared = slot           ? QmsBlockRowConfig<KB, 128, true>::kSlotShared
                               : narrow_block ? QmsBlockRowConfig<KB, 128>::kShared
                                              : QmsBlockRowConfig<KB, 256>::kShared;
  int block_row_grid = 0;  // blocks a launch: as many as the SMs hold at once
  if constexpr (kBlockRowBucket<KB>) {
    if (block_row) {
      PrepareSharedMemory(block_row_kernel, block_row_shared, a);
      const int per_sm = BlocksPerSm(block_row_kernel, block_threads, block_row_shared, a);
      block_row_grid = a.sms * std::max(per_sm, 1);
    }
  }
  const int64_t ppr = (a.cols + kFilterPiece - 1) / kFilterPiece;
  const int cap = block_row ? 0 : QmsSplitCap(a.cols, a.k);  // fused: lists in shared memory
  const int64_t per_row = int64_t{cap} * 8 + 8 + 8 + 8;
  int64_t batch = std::min<int64_t>(a.rows, kSplitScratchBytes / per_row);
  batch = std::min<int64_t>(batch, (int64_t{1} << 31) / ppr - 1);
  auto align = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  const int64_t b_piv = align(batch * 8), b_cnt = align(batch * 8 + 8);
  const int64_t b_fail = block_row ? 0 : align(batch * 8);  // the rows handed back
  char* ws = static_cast<char*>(SelectWorkspace(
      static_cast<size_t>(b_piv + b_cnt + b_fail + batch * cap * 8), a.stream, 1));
  QmsSplitScratch s;
  s.pivots = reinterpret_cast<u64*>(ws);
  s.count = reinterpret_cast<int*>(ws + b_piv);
  s.fail_rows = block_row ? nullptr : reinterpret_cast<int64_t*>(ws + b_piv + b_cnt);
  s.survivors = reinterpret_cast<u64*>(ws + b_piv + b_cnt + b_fail);
  s.cap = cap;
  auto pivot = sample == 512    ? QmsWarpPivotKernel<16>
               : sample == 1024 ? QmsWarpPivotKernel<32>
                                : QmsWarpPivotKernel<64>;
  const int group = QmsFilterGroup(KB, static_cast<int>(ppr));
  const int sms = a.sms;
  // Pivot kernel blocks an SM holds at once.
  const int pivot_per_sm = block_row ? BlocksPerSm(pivot, 256, 0, a) : 0;
  const int list_cap = slot ? QmsBlockRowConfig<KB, 128, true>::kCap : QmsBlockRowCap<KB>();
  const int stop = block_row ? QmsBlockRowPivotStop(a.cols, rank, sample, list_cap) : 0;
  for (int64_t row0 = 0; row0 < a.rows; row0 += batch) {
    const int64_t n = std::min(batch, a.rows - row0);
    s.done = s.count + n;  // count[n], done[n], fail_count, ticket: cleared by the pivot kernel
    s.fail_count = s.done + n;
    s.ticket = s.fail_count + 1;
    // The fused kernel's rows start on their own pivots where the pivot kernel takes more than
    // one wave of blocks (its first wave's pivots are then ready well before its last): H100,
    // 8192 rows, -0.8 to -2.9 % on 8192 columns, -0.9 to -1.5 % on 16384, -0.8 to 0.0 % on 32768
    // and 65536; on 2000 and 300 rows (one wave) it cost up to 2 / 4 us, the blocks polling for
    // pivots that arrive together (bench/results/select.md "Rows started on their own pivots";
    // with the kernel facts kept, -0.1 to -2.4 % of the time on 8192 and 16384 columns, "Rows
    // taken from a counter").
    const int64_t pivot_blocks = (n + 7) / 8;
    const unsigned tag =
        block_row && pivot_blocks > int64_t{pivot_per_sm} * sms ? NextPivotTag() : 0u;
    pivot<<<static_cast<unsigned>(pivot_blocks), 256, 0, a.stream>>>(
        a, row0, static_cast<int>(n), rank, s.pivots, s.count, tag, stop);
    FM_CUDA_CHECK_LAUNCH();
    // The launches that follow may start while the one before drains (each waits for its
    // predecessor's results first: programmatic dependent launch).
    bool fused = false;
    if constexpr (kBlockRowBucket<KB>) {
      if (block_row) {
        LaunchDependent(block_row_kernel, std::min<int64_t>(n, block_row_grid), block_threads,
                        block_row_shared, a.stream, a, row0, static_cast<int>(n),
                        static_cast<int>(ppr), s, tag);
        fused = true;
      }
    }
    if (!fused) {
      const int64_t groups = n * ((ppr + group - 1) / group);
      const int64_t fgrid = std::min<int64_t>((groups + 7) / 8, static_cast<int64_t>(sms) * 4);
      LaunchDependent(QmsFilterKernel<kFilterVec, KB>, fgrid, 256, 0, a.stream, a, row0,
                      static_cast<int>(n), static_cast<int>(ppr), s);
      if constexpr (KB > kWarpFinishMax) {
        LaunchDependent(QmsBucketFinishFor<KB>(a.cols), n, BF::kThreads, BF::kShared, a.stream,
                        a, row0, s);
      }
    }
    if (fused) continue;  // the fused kernel reselects the rows it refuses itself
    const int64_t grid = std::min<int64_t>(n, static_cast<int64_t>(sms) * (KB >= 1024 ? 2 : 3));
    LaunchDependent(list, grid, T, C::kShared, a.stream, a,
                    static_cast<const int*>(s.fail_count),
                    static_cast<const int64_t*>(s.fail_rows));
  }
}

template <int KB>
void LaunchQuickMultiSelect(const SelectArgs& a) {
  constexpr int T = QmsShape<KB>::kThreads, U = QmsShape<KB>::kVec, D = QmsShape<KB>::kDepth;
  using C = QmsConfig<KB, T, U, D>;
  auto kernel = QuickMultiSelectKernel<KB, T, U, D>;
  PrepareSharedMemory(kernel, C::kShared, a);
  // Rows held whole in shared memory (k <= 32), except where the fused kernel takes rows of 8192
  // columns and more: on 8192 x 8192 at k = 32 it ran 6.3 % faster, on 12288 columns within
  // 0.6 % (H100, bench/results/select_block_row_small_k_ab_h100.txt, round 8).
  const bool split = QmsSplitSuits<KB>(a);
  bool resident = false;
  if constexpr (KB <= kResidentMaxBucket) {
    resident = QmsResidentSuits<KB>(a) && !(a.cols >= 8192 && split && QmsBlockRowSuits<KB>(a));
  }
  if (resident) {
    if constexpr (KB <= kResidentMaxBucket) LaunchQmsResident<KB>(a);
  } else if (split) {
    LaunchQmsRowParallel<KB>(a);
  } else {
    LaunchPerRow(kernel, T, C::kShared, a);
  }
}

}  // namespace fm::gpu::detail
