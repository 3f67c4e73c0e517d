// The fused int8 path for uint8 descriptors under L2 or inner product: int8 tensor-core scoring
// (mma.sync m16n8k32, int32 accumulation) of a 128-query block against 128-row corpus blocks,
// with the distance computed in registers and compared at once with each query's threshold (the
// k-th distance within a corpus sample, an upper bound of its true k-th distance). Only rows at
// or under the threshold leave the kernel, as (distance, index) keys; a segmented sort of those
// few keys gives the exact top-k. The distance matrix never exists.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>

#include "async_copy.cuh"
#include "cuda_check.cuh"
#include "knn/knn_common.cuh"
#include "knn/knn_kernels.cuh"
#include "select/select_sorted.cuh"

namespace fm::gpu::detail {
namespace {

constexpr int kBlockRows = 128;  // queries per CTA; corpus rows per sub-block
constexpr int kSub = 1;          // corpus sub-blocks per pipeline stage (2 measured slower)
constexpr int kIterRows = kBlockRows * kSub;
constexpr int kThreads = 256;    // 8 warps: 4 along queries (32 rows) x 2 along corpus (64)

__device__ __forceinline__ void MmaS8(int (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                      uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], const void* smem_row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// Scores the CTA's 128 queries against corpus blocks blockIdx.y, +ysplit, ... of the (strided)
// corpus. Each CTA owns, per query, a private slice of `per` candidate slots (no global atomics):
// a shared-memory counter per query row hands out the slots, the count is written at the end.
template <int KD, bool kGated>
__global__ void __launch_bounds__(kThreads, 2)
    FusedFilterKernel(const int8_t* __restrict__ queries, const RowStats* __restrict__ qstats,
                      int64_t nq, const int8_t* __restrict__ corpus,
                      const RowStats* __restrict__ cstats, int64_t n, int64_t row_stride,
                      int dim, MetricCode metric, const float* __restrict__ thresholds,
                      uint64_t* __restrict__ keys, int32_t* __restrict__ counts, int per,
                      int64_t nblocks, int ysplit) {
  constexpr int kDp = KD * 32;
  constexpr int kLd = kDp + 16;  // padded smem row: conflict-free fragment loads
  constexpr int kChunks = kDp / 16;
  extern __shared__ __align__(16) unsigned char smem[];
  int8_t* a_s = reinterpret_cast<int8_t*>(smem);
  int8_t* b_s = a_s + kBlockRows * kLd;
  RowStats* st_s = reinterpret_cast<RowStats*>(b_s + 2 * kIterRows * kLd);  // [2][256]
  int* cnt_s = reinterpret_cast<int*>(st_s + 2 * kIterRows);                 // [128]
  int* qterm_s = cnt_s + kBlockRows;                                          // [128]

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp & 3, wn = warp >> 2;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kBlockRows;
  const bool l2 = metric == MetricCode::kL2;
  const int alpha = l2 ? -2 : -1;

  for (int i = tid; i < kBlockRows * kChunks; i += kThreads) {
    const int r = i / kChunks, ch = i % kChunks;
    int4 v = make_int4(0, 0, 0, 0);
    if (q0 + r < nq) v = *reinterpret_cast<const int4*>(queries + (q0 + r) * kDp + ch * 16);
    *reinterpret_cast<int4*>(a_s + r * kLd + ch * 16) = v;
  }
  if (tid < kBlockRows) {
    cnt_s[tid] = 0;
    qterm_s[tid] = q0 + tid < nq ? FusedQueryTerm(qstats[q0 + tid], l2, dim) : 0;
  }
  // The four query rows of this thread's accumulators: wm*32 + mt*16 + h*8 + g. The test
  // d = qterm + cterm + alpha*ip <= thr becomes cterm + alpha*ip <= thr - qterm.
  int qlim[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t q = q0 + wm * 32 + (i >> 1) * 16 + (i & 1) * 8 + g;
    qlim[i] = q < nq ? FusedRowLimit(thresholds[q], FusedQueryTerm(qstats[q], l2, dim))
                     : -(1 << 28);
  }

  auto load_b = [&](int64_t blk, int stage) {
    const int64_t c0 = blk * kIterRows;
    int8_t* dst = b_s + stage * kIterRows * kLd;
    for (int i = tid; i < kIterRows * kChunks; i += kThreads) {
      const int r = i / kChunks, ch = i % kChunks;
      const int64_t row = c0 + r;
      const bool ok = row < n;
      CpAsync16(dst + r * kLd + ch * 16, corpus + (ok ? row * row_stride : 0) * kDp + ch * 16,
                ok ? 16 : 0);
    }
    for (int r = tid; r < kIterRows; r += kThreads) {
      const int64_t row = c0 + r;
      const bool ok = row < n;
      CpAsync16(st_s + stage * kIterRows + r, cstats + (ok ? row * row_stride : 0), ok ? 16 : 0);
    }
    CpAsyncCommit();
  };

  int64_t blk = blockIdx.y;
  int stage = 0;
  if (blk < nblocks) load_b(blk, 0);
  for (; blk < nblocks; blk += ysplit) {
    const int64_t next = blk + ysplit;
    if (next < nblocks) {
      load_b(next, stage ^ 1);
      CpAsyncWait<1>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();

  for (int sb = 0; sb < kSub; ++sb) {
    const int8_t* b_tile = b_s + (stage * kIterRows + sb * kBlockRows) * kLd;
    const RowStats* cs = st_s + stage * kIterRows + sb * kBlockRows;
    const int64_t cbase = blk * kIterRows + sb * kBlockRows;
    // The accumulators start at -bound(q, c): after the products, acc >= 0 exactly for the
    // candidates (cterm + alpha * ip <= qlim  <=>  ip >= bound), so one AND per 8 values finds
    // whether any of them passed.
    int acc[2][8][4];
    if constexpr (kGated) {
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const RowStats st = cs[wn * 64 + nt * 8 + 2 * t + j];
        const int cterm = FusedColumnTerm(st, l2);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int diff = cterm - qlim[i];
          acc[i >> 1][nt][(i & 1) * 2 + j] = -(l2 ? (diff + 1) >> 1 : diff);
        }
      }
    }
    } else {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0;
    }

#pragma unroll 2
    for (int ks = 0; ks < KD; ++ks) {
      // A (16 x 32 int8 = 16 x 16 b16): matrices rows 0-7/8-15 x bytes 0-15/16-31.
      uint32_t a[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const int r = wm * 32 + mt * 16 + (lane & 15);
        LdMatrixX4(a[mt], a_s + r * kLd + ks * 32 + (lane >> 4) * 16);
      }
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        // Two n-tiles: matrices (n 0-7, bytes 0-15), (n 0-7, 16-31), (n 8-15, 0-15), (8-15, 16-31).
        uint32_t b[4];
        const int r = wn * 64 + np * 16 + (lane & 7) + ((lane >> 4) << 3);
        LdMatrixX4(b, b_tile + r * kLd + ks * 32 + ((lane >> 3) & 1) * 16);
        MmaS8(acc[0][2 * np], a[0], b[0], b[1]);
        MmaS8(acc[1][2 * np], a[1], b[0], b[1]);
        MmaS8(acc[0][2 * np + 1], a[0], b[2], b[3]);
        MmaS8(acc[1][2 * np + 1], a[1], b[2], b[3]);
      }
    }

    if constexpr (kGated) {
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const int any = acc[0][nt][0] & acc[0][nt][1] & acc[0][nt][2] & acc[0][nt][3] &
                      acc[1][nt][0] & acc[1][nt][1] & acc[1][nt][2] & acc[1][nt][3];
      if (any >= 0) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int cl = wn * 64 + nt * 8 + 2 * t + j;
          const int64_t c = cbase + cl;
          const RowStats st = cs[cl];
          const int cterm = FusedColumnTerm(st, l2);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int a = acc[i >> 1][nt][(i & 1) * 2 + j];
            if (a >= 0 && c < n) {
              const int diff = cterm - qlim[i];
              const int ip = a + (l2 ? (diff + 1) >> 1 : diff);
              const int row = wm * 32 + (i >> 1) * 16 + (i & 1) * 8 + g;
              const int d = qterm_s[row] + cterm + alpha * ip;
              const int pos = atomicAdd(cnt_s + row, 1);
              if (pos < per)
                keys[((q0 + row) * ysplit + blockIdx.y) * per + pos] =
                    (static_cast<uint64_t>(OrderedBits(static_cast<float>(d))) << 32) |
                    static_cast<uint32_t>(c);
            }
          }
        }
      }
    }
    } else {
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int cl = wn * 64 + nt * 8 + 2 * t + j;
        const RowStats st = cs[cl];
        const int cterm = FusedColumnTerm(st, l2);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int v = cterm + alpha * acc[i >> 1][nt][(i & 1) * 2 + j];
          if (v <= qlim[i]) {
            const int64_t c = cbase + cl;
            const int row = wm * 32 + (i >> 1) * 16 + (i & 1) * 8 + g;
            if (c < n) {
              const int d = v + qterm_s[row];
              const int pos = atomicAdd(cnt_s + row, 1);
              if (pos < per)
                keys[((q0 + row) * ysplit + blockIdx.y) * per + pos] =
                    (static_cast<uint64_t>(OrderedBits(static_cast<float>(d))) << 32) |
                    static_cast<uint32_t>(c);
            }
          }
        }
      }
    }
    }
  }
    __syncthreads();
    stage ^= 1;
  }
  __syncthreads();
  if (tid < kBlockRows && q0 + tid < nq) counts[(q0 + tid) * ysplit + blockIdx.y] = cnt_s[tid];
}

// Writes the k selected words sel[0, k) (sorted; cnt of them real) as distances and indices,
// thread tid of nthreads; slots past cnt get +inf / -1.
__device__ __forceinline__ void StoreSelected(const u64* sel, int cnt, int64_t k, float* ov,
                                              int64_t* oi, int tid, int nthreads) {
  for (int64_t j = tid; j < k; j += nthreads) {
    if (j < cnt) {
      ov[j] = FromOrderedBits(static_cast<uint32_t>(sel[j] >> 32));
      oi[j] = static_cast<int64_t>(sel[j] & 0xffffffffu);
    } else {
      ov[j] = INFINITY;
      oi[j] = -1;
    }
  }
}

// One block per query: its candidates from the ysplit slices (placed in any order through a
// shared counter) padded to a power of two with the largest key, bitonic-sorted in shared
// memory, the first k written out. Sets flags[0] when a slice or the block overflowed.
__global__ void SelectCandidatesKernel(const uint64_t* __restrict__ keys,
                                       const int32_t* __restrict__ counts, int ysplit, int per,
                                       int max_keys, int64_t k, float* __restrict__ out_vals,
                                       int64_t* __restrict__ out_idx, int32_t* flags,
                                       int64_t* total) {
  extern __shared__ uint64_t skeys[];
  __shared__ int total_s;
  const int64_t q = blockIdx.x;
  if (threadIdx.x == 0) total_s = 0;
  __syncthreads();
  // One warp per slice: lane 0 reserves the slice's place, the warp copies it coalesced.
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  for (int sl = warp; sl < ysplit; sl += nwarps) {
    int c = counts[q * ysplit + sl];
    if (c > per) {
      if (lane == 0) atomicExch(flags, 1);
      c = per;
    }
    if (c == 0) continue;
    int base = 0;
    if (lane == 0) base = atomicAdd(&total_s, c);
    base = __shfl_sync(0xffffffffu, base, 0);
    const uint64_t* src = keys + (q * ysplit + sl) * per;
    for (int j = lane; j < c && base + j < max_keys; j += 32) skeys[base + j] = src[j];
  }
  __syncthreads();
  const int tot = total_s;
  if (threadIdx.x == 0) {
    if (tot > max_keys) atomicExch(flags, 1);
    atomicAdd(reinterpret_cast<unsigned long long*>(total), static_cast<unsigned long long>(tot));
  }
  const int cnt = tot < max_keys ? tot : max_keys;
  if (k <= kMaxSelectBucket && blockDim.x == 256) {
    // The k smallest by a radix select, then only they are sorted (into the words after the
    // candidates).
    __shared__ QmsShared qs;
    const u64* cand = reinterpret_cast<const u64*>(skeys);
    u64* sel = reinterpret_cast<u64*>(skeys + max_keys);
    const int kk = static_cast<int>(k);
    if (k <= 32) BlockSelectSorted<32>(cand, cnt, kk, qs, sel);
    else if (k <= 64) BlockSelectSorted<64>(cand, cnt, kk, qs, sel);
    else if (k <= 128) BlockSelectSorted<128>(cand, cnt, kk, qs, sel);
    else if (k <= 256) BlockSelectSorted<256>(cand, cnt, kk, qs, sel);
    else if (k <= 512) BlockSelectSorted<512>(cand, cnt, kk, qs, sel);
    else if (k <= 1024) BlockSelectSorted<1024>(cand, cnt, kk, qs, sel);
    else BlockSelectSorted<2048>(cand, cnt, kk, qs, sel);
    StoreSelected(sel, cnt, k, out_vals + q * k, out_idx + q * k, threadIdx.x, blockDim.x);
    return;
  }
  int n2 = 2;
  while (n2 < cnt) n2 <<= 1;
  for (int i = cnt + threadIdx.x; i < n2; i += blockDim.x) skeys[i] = ~0ull;
  __syncthreads();
  for (int size = 2; size <= n2; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < (n2 >> 1); i += blockDim.x) {
        const int pos = 2 * i - (i & (stride - 1));
        const int partner = pos + stride;
        const bool asc = (pos & size) == 0;
        const uint64_t a = skeys[pos], b = skeys[partner];
        if ((a > b) == asc) {
          skeys[pos] = b;
          skeys[partner] = a;
        }
      }
      __syncthreads();
    }
  }
  for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
    if (j < cnt) {
      const uint64_t key = skeys[j];
      out_vals[q * k + j] = FromOrderedBits(static_cast<uint32_t>(key >> 32));
      out_idx[q * k + j] = static_cast<int64_t>(key & 0xffffffffu);
    } else {
      out_vals[q * k + j] = INFINITY;
      out_idx[q * k + j] = -1;
    }
  }
}

// Bitonic sort of 32 * KPL keys held KPL per lane (element e = lane * KPL + j), ascending.
template <int KPL>
__device__ __forceinline__ void WarpBitonicSort(uint64_t (&key)[KPL], int lane) {
  constexpr int kN = 32 * KPL;
#pragma unroll
  for (int size = 2; size <= kN; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      if (stride >= KPL) {
        const int lane_mask = stride / KPL;
        const bool lower = (lane & lane_mask) == 0;
#pragma unroll
        for (int j = 0; j < KPL; ++j) {
          const int e = lane * KPL + j;
          const bool asc = (e & size) == 0;
          const uint32_t lo =
              __shfl_xor_sync(0xffffffffu, static_cast<uint32_t>(key[j]), lane_mask);
          const uint32_t hi =
              __shfl_xor_sync(0xffffffffu, static_cast<uint32_t>(key[j] >> 32), lane_mask);
          const uint64_t other = (static_cast<uint64_t>(hi) << 32) | lo;
          const bool take_min = lower == asc;
          key[j] = take_min ? (other < key[j] ? other : key[j]) : (other > key[j] ? other : key[j]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < KPL; ++j) {
          if ((j & stride) == 0) {
            const int e = lane * KPL + j;
            const bool asc = (e & size) == 0;
            const uint64_t a = key[j], b = key[j + stride];
            if ((a > b) == asc) {
              key[j] = b;
              key[j + stride] = a;
            }
          }
        }
      }
    }
  }
}

template <int KPL>
__device__ __forceinline__ void WarpSortSelect(const uint64_t* skeys, int cnt, int64_t k,
                                               int lane, float* out_vals, int64_t* out_idx) {
  uint64_t key[KPL];
#pragma unroll
  for (int j = 0; j < KPL; ++j) {
    const int e = lane * KPL + j;
    key[j] = e < cnt ? skeys[e] : ~0ull;
  }
  WarpBitonicSort<KPL>(key, lane);
#pragma unroll
  for (int j = 0; j < KPL; ++j) {
    const int64_t e = lane * KPL + j;
    if (e < k) {
      if (e < cnt) {
        out_vals[e] = FromOrderedBits(static_cast<uint32_t>(key[j] >> 32));
        out_idx[e] = static_cast<int64_t>(key[j] & 0xffffffffu);
      } else {
        out_vals[e] = INFINITY;
        out_idx[e] = -1;
      }
    }
  }
}

// Copies query q's candidates from its ysplit slices into skeys (this warp's shared memory, at
// most max_keys): slice counts prefix-summed across the warp, each slice copied by the whole warp.
// Flags overflows, adds the count to *total; returns the number copied.
__device__ __forceinline__ int GatherSlices(const uint64_t* __restrict__ keys,
                                            const int32_t* __restrict__ counts, int64_t q,
                                            int ysplit, int per, int max_keys, uint64_t* skeys,
                                            int32_t* flags, int64_t* total) {
  const int lane = threadIdx.x & 31;
  int base = 0;
  bool over = false;
  for (int s0 = 0; s0 < ysplit; s0 += 32) {
    const int sl = s0 + lane;
    int c = sl < ysplit ? counts[q * ysplit + sl] : 0;
    if (c > per) {
      over = true;
      c = per;
    }
    const int incl = WarpInclusiveSum(c);
    const int nsl = ysplit - s0 < 32 ? ysplit - s0 : 32;
    for (int i = 0; i < nsl; ++i) {
      const int ci = __shfl_sync(0xffffffffu, c, i);
      const int start = base + __shfl_sync(0xffffffffu, incl, i) - ci;
      const uint64_t* src = keys + (q * ysplit + s0 + i) * per;
      for (int j = lane; j < ci && start + j < max_keys; j += 32) skeys[start + j] = src[j];
    }
    base += __shfl_sync(0xffffffffu, incl, 31);
  }
  over = __any_sync(0xffffffffu, over) || base > max_keys;
  __syncwarp();
  if (lane == 0) {
    if (over) atomicExch(flags, 1);
    atomicAdd(reinterpret_cast<unsigned long long*>(total), static_cast<unsigned long long>(base));
  }
  return base < max_keys ? base : max_keys;
}

// One query per warp, blockDim.x / 32 a block: this warp's query, its max_keys candidate slots at
// the start of the block's dynamic shared memory (wkeys), and the candidates gathered there from
// the query's slices (GatherSlices; cnt of them). A warp past the last query (q >= nq) gathers
// nothing and should return.
struct WarpQuery {
  int lane, warp, nwarps;
  int64_t q;
  uint64_t* skeys;
  int cnt;
};
__device__ __forceinline__ WarpQuery GatherWarpQuery(uint64_t* wkeys, int max_keys, int64_t nq,
                                                     const uint64_t* __restrict__ keys,
                                                     const int32_t* __restrict__ counts,
                                                     int ysplit, int per, int32_t* flags,
                                                     int64_t* total) {
  WarpQuery w;
  w.lane = threadIdx.x & 31;
  w.warp = threadIdx.x >> 5;
  w.nwarps = blockDim.x >> 5;
  w.q = static_cast<int64_t>(blockIdx.x) * w.nwarps + w.warp;
  w.skeys = wkeys + static_cast<int64_t>(w.warp) * max_keys;
  w.cnt = 0;
  if (w.q < nq) {
    w.cnt = GatherSlices(keys, counts, w.q, ysplit, per, max_keys, w.skeys, flags, total);
    __syncwarp();
  }
  return w;
}

// One warp per query (up to 32 * KPL candidates), every candidate sorted in registers.
template <int KPL>
__global__ void __launch_bounds__(128)
    SelectCandidatesWarpKernel(const uint64_t* __restrict__ keys,
                               const int32_t* __restrict__ counts, int64_t nq, int ysplit,
                               int per, int max_keys, int64_t k, float* __restrict__ out_vals,
                               int64_t* __restrict__ out_idx, int32_t* flags, int64_t* total) {
  extern __shared__ uint64_t wkeys[];
  const WarpQuery w =
      GatherWarpQuery(wkeys, max_keys, nq, keys, counts, ysplit, per, flags, total);
  if (w.q >= nq) return;
  const int lane = w.lane, cnt = w.cnt;
  uint64_t* skeys = w.skeys;
  float* ov = out_vals + w.q * k;
  int64_t* oi = out_idx + w.q * k;
  if (KPL > 4 && cnt <= 128) WarpSortSelect<4>(skeys, cnt, k, lane, ov, oi);
  else if (KPL > 8 && cnt <= 256) WarpSortSelect<(KPL > 8 ? 8 : 4)>(skeys, cnt, k, lane, ov, oi);
  else if (KPL > 16 && cnt <= 512) WarpSortSelect<(KPL > 16 ? 16 : 4)>(skeys, cnt, k, lane, ov, oi);
  else WarpSortSelect<KPL>(skeys, cnt, k, lane, ov, oi);
}

// One warp per query, k <= KB <= 256: the k smallest candidates by a radix select, then only
// they are sorted (WarpSelectSorted). Shared memory per warp: max_keys candidates, KB selected
// words, the selection's state.
template <int KB>
__global__ void __launch_bounds__(128)
    SelectCandidatesRadixKernel(const uint64_t* __restrict__ keys,
                                const int32_t* __restrict__ counts, int64_t nq, int ysplit,
                                int per, int max_keys, int64_t k, float* __restrict__ out_vals,
                                int64_t* __restrict__ out_idx, int32_t* flags, int64_t* total) {
  extern __shared__ uint64_t wkeys[];
  const WarpQuery w =
      GatherWarpQuery(wkeys, max_keys, nq, keys, counts, ysplit, per, flags, total);
  if (w.q >= nq) return;
  u64* sel =
      reinterpret_cast<u64*>(wkeys + static_cast<int64_t>(w.nwarps) * max_keys) + w.warp * KB;
  QmsShared& qs = reinterpret_cast<QmsShared*>(
      wkeys + static_cast<int64_t>(w.nwarps) * (max_keys + KB))[w.warp];
  WarpSelectSorted<KB, 1>(w.cnt, static_cast<int>(k),
                          [&](int i) { return static_cast<u64>(w.skeys[i]); }, qs, sel);
  StoreSelected(sel, w.cnt, k, out_vals + w.q * k, out_idx + w.q * k, w.lane, 32);
}

// One warp per query of an inner level: only the next level's bounds, from the candidates'
// distances (no sorted list, no indices), with the rules of NextThresholdsKernel: a query with
// fewer than k candidates keeps its safe bound. The k-th and the rank-th distances come from
// WarpTwoRankBounds (rounded up below 16 resolved bits: an upper bound is as valid a bound as the
// value itself). Shared memory per warp: max_keys candidates, the selection's state, a second
// histogram.
__global__ void __launch_bounds__(128)
    LevelBoundsKernel(const uint64_t* __restrict__ keys, const int32_t* __restrict__ counts,
                      int64_t nq, int ysplit, int per, int max_keys, int64_t k, int64_t rank,
                      const float* __restrict__ bound, float* __restrict__ safe,
                      float* __restrict__ thr, int32_t* flags, int64_t* total) {
  extern __shared__ uint64_t wkeys[];
  const WarpQuery w =
      GatherWarpQuery(wkeys, max_keys, nq, keys, counts, ysplit, per, flags, total);
  if (w.q >= nq) return;
  QmsShared* qs_all =
      reinterpret_cast<QmsShared*>(wkeys + static_cast<int64_t>(w.nwarps) * max_keys);
  unsigned* hist_b = reinterpret_cast<unsigned*>(qs_all + w.nwarps) + w.warp * 256;
  const bool full = w.cnt >= k;
  float s = safe[w.q];
  unsigned kth = 0, rth = 0;
  if (full) {
    WarpTwoRankBounds(
        static_cast<int>(k - 1), static_cast<int>(rank > 0 ? rank - 1 : k - 1), qs_all[w.warp],
        hist_b,
        [&](auto&& f) {
          for (int i = w.lane; i < w.cnt; i += 32) f(static_cast<unsigned>(w.skeys[i] >> 32));
        },
        kth, rth);
    s = FromOrderedBits(kth);
  }
  if (bound) s = fminf(s, bound[w.q]);
  const float t = rank > 0 && full ? fminf(FromOrderedBits(rth), s) : s;
  if (w.lane == 0) {
    safe[w.q] = s;
    thr[w.q] = t;
  }
}

constexpr int64_t kMaxKeys = 16384;

template <int KD, bool kGated>
void LaunchFusedKdG(const int8_t* queries, const RowStats* qstats, int64_t nq,
                    const int8_t* corpus, const RowStats* cstats, int64_t n, int64_t row_stride,
                    int32_t dim, MetricCode metric, const float* thresholds, uint64_t* keys,
                    int32_t* counts, const FusedPlan& plan, cudaStream_t stream) {
  constexpr int kLd = KD * 32 + 16;
  const std::size_t smem = kBlockRows * kLd + 2 * kIterRows * kLd +
                           2 * kIterRows * sizeof(RowStats) + 2 * kBlockRows * sizeof(int);
  static std::atomic<uint64_t> shared_set{0};
  SetMaxDynamicShared(FusedFilterKernel<KD, kGated>, static_cast<int>(smem), shared_set);
  const int64_t qblocks = (nq + kBlockRows - 1) / kBlockRows;
  const int64_t nblocks = (n + kIterRows - 1) / kIterRows;
  dim3 grid(static_cast<unsigned>(qblocks), static_cast<unsigned>(plan.ysplit));
  FusedFilterKernel<KD, kGated><<<grid, kThreads, smem, stream>>>(
      queries, qstats, nq, corpus, cstats, n, row_stride, dim, metric, thresholds, keys, counts,
      static_cast<int>(plan.per), nblocks, static_cast<int>(plan.ysplit));
  FM_CUDA_CHECK_LAUNCH();
}

// Sparse levels test 8 outputs at once (accumulators start at minus the bound); dense ones
// test every output.
template <int KD>
void LaunchFusedKd(const int8_t* queries, const RowStats* qstats, int64_t nq,
                   const int8_t* corpus, const RowStats* cstats, int64_t n, int64_t row_stride,
                   int32_t dim, MetricCode metric, const float* thresholds, uint64_t* keys,
                   int32_t* counts, const FusedPlan& plan, cudaStream_t stream) {
  if (plan.gated)
    LaunchFusedKdG<KD, true>(queries, qstats, nq, corpus, cstats, n, row_stride, dim, metric,
                             thresholds, keys, counts, plan, stream);
  else
    LaunchFusedKdG<KD, false>(queries, qstats, nq, corpus, cstats, n, row_stride, dim, metric,
                              thresholds, keys, counts, plan, stream);
}

}  // namespace

FusedPlan PlanFused(int64_t nq, int64_t n, double expected_per_query, int num_sms,
                    bool all_pass, int ctas_per_sm, int query_block) {
  FusedPlan p;
  const int64_t qblocks = (nq + query_block - 1) / query_block;
  const int64_t nblocks = std::max<int64_t>(1, (n + kIterRows - 1) / kIterRows);
  const int64_t slots = static_cast<int64_t>(ctas_per_sm) * num_sms;  // resident CTAs
  // Split of the corpus blocks: the fewest slices whose wave count x blocks per slice is
  // within 3 % of the best (balanced waves, small per-query slice tables).
  auto cost = [&](int64_t ys) {
    const int64_t waves = (qblocks * ys + slots - 1) / slots;
    return static_cast<double>(waves) * static_cast<double>((nblocks + ys - 1) / ys);
  };
  const int64_t max_ys = std::min<int64_t>({nblocks, 2048, 65535});
  double best = 1e300;
  for (int64_t ys = 1; ys <= max_ys; ++ys) best = std::min(best, cost(ys));
  p.ysplit = 1;
  for (int64_t ys = 1; ys <= max_ys; ++ys)
    if (cost(ys) <= best * 1.03) {
      p.ysplit = ys;
      break;
    }
  // Slices sized for a query with twice the expected candidates (the count varies with its
  // threshold, a k-th order statistic) plus six standard deviations; the selection holds as
  // many as the slices or that bound, whichever is smaller.
  const double bound = 2.0 * expected_per_query + 64.0;
  const double lambda = bound / static_cast<double>(p.ysplit);
  p.per = (static_cast<int64_t>(lambda + 6.0 * std::sqrt(lambda) + 12.0) + 3) / 4 * 4;
  if (p.per * p.ysplit > kMaxKeys) p.per = std::max<int64_t>(1, kMaxKeys / p.ysplit);
  // Gated epilogue when a warp's 256 outputs of 8-output groups rarely hold a candidate.
  p.gated = expected_per_query / static_cast<double>(std::max<int64_t>(n, 1)) < 1e-3;
  int64_t mk = 2;
  while (mk < std::min<double>(static_cast<double>(p.per * p.ysplit), bound)) mk <<= 1;
  p.max_keys = std::min(mk, kMaxKeys);
  if (all_pass) {  // every row is a candidate: each slice holds its whole share
    p.per = (nblocks + p.ysplit - 1) / p.ysplit * kIterRows;
    mk = 2;
    while (mk < n) mk <<= 1;
    p.max_keys = mk;
    p.gated = false;
  }
  return p;
}

void LaunchFusedFilterInt8(const int8_t* queries, const RowStats* qstats, int64_t nq,
                           const int8_t* corpus, const RowStats* cstats, int64_t n,
                           int64_t row_stride, int32_t padded_dim, int32_t dim, MetricCode metric,
                           const float* thresholds, uint64_t* keys, int32_t* counts,
                           const FusedPlan& plan, cudaStream_t stream) {
  if (nq <= 0) return;
  if (static_cast<uint64_t>(n) >= (uint64_t{1} << 32))
    throw GpuError("fused int8 kernel: corpus has 2^32 rows or more");
  if ((nq + kBlockRows - 1) / kBlockRows > 0x7fffffff)
    throw GpuError("fused int8 kernel: too many queries in one launch");
  switch (padded_dim) {
    case 64:
      LaunchFusedKd<2>(queries, qstats, nq, corpus, cstats, n, row_stride, dim, metric,
                       thresholds, keys, counts, plan, stream);
      break;
    case 128:
      LaunchFusedKd<4>(queries, qstats, nq, corpus, cstats, n, row_stride, dim, metric,
                       thresholds, keys, counts, plan, stream);
      break;
    case 256:
      LaunchFusedKd<8>(queries, qstats, nq, corpus, cstats, n, row_stride, dim, metric,
                       thresholds, keys, counts, plan, stream);
      break;
    default:
      throw GpuError("fused int8 kernel: padded dimension " + std::to_string(padded_dim) +
                     " is not 64, 128 or 256");
  }
}

namespace {
__global__ void ColumnTermsKernel(const RowStats* __restrict__ cstats, int64_t n,
                                  int64_t row_stride, bool l2, int32_t* __restrict__ cterms) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= (n + 127) / 128 * 128) return;
  if (r >= n) {  // padding up to a whole 128-row block: never a candidate
    cterms[r] = 1 << 28;
    return;
  }
  cterms[r] = FusedColumnTerm(cstats[r * row_stride], l2);
}
}  // namespace

void LaunchColumnTerms(const RowStats* cstats, int64_t n, int64_t row_stride, MetricCode metric,
                       int32_t* cterms, cudaStream_t stream) {
  if (n <= 0) return;
  ColumnTermsKernel<<<static_cast<unsigned>((n + 127) / 128 * 128 / 256 + 1), 256, 0, stream>>>(
      cstats, n, row_stride, metric == MetricCode::kL2, cterms);
  FM_CUDA_CHECK_LAUNCH();
}

bool LaunchLevelBounds(const uint64_t* keys, const int32_t* counts, int64_t nq,
                       const FusedPlan& plan, int64_t k, int64_t rank, const float* bound,
                       float* safe, float* thr, int32_t* flags, int64_t* total,
                       cudaStream_t stream) {
  if (plan.max_keys > 1024 || k > 0x7fffffff) return false;
  if (nq <= 0) return true;
  constexpr int kWarps = 4;
  const int64_t blocks = (nq + kWarps - 1) / kWarps;
  const std::size_t smem =
      kWarps * (plan.max_keys * sizeof(uint64_t) + sizeof(QmsShared) + 256 * sizeof(unsigned));
  LevelBoundsKernel<<<static_cast<unsigned>(blocks), kWarps * 32, smem, stream>>>(
      keys, counts, nq, static_cast<int>(plan.ysplit), static_cast<int>(plan.per),
      static_cast<int>(plan.max_keys), k, rank, bound, safe, thr, flags, total);
  FM_CUDA_CHECK_LAUNCH();
  return true;
}

void LaunchSelectCandidates(const uint64_t* keys, const int32_t* counts, int64_t nq,
                            const FusedPlan& plan, int64_t k, float* out_vals, int64_t* out_idx,
                            int32_t* flags, int64_t* total, cudaStream_t stream) {
  if (nq <= 0) return;
  if (plan.max_keys <= 1024) {
    constexpr int kWarps = 4;
    const int64_t blocks = (nq + kWarps - 1) / kWarps;
    if (k <= 256) {
#define FM_SELECT_RADIX(KB)                                                                    \
  SelectCandidatesRadixKernel<KB><<<static_cast<unsigned>(blocks), kWarps * 32,                  \
                                    kWarps * ((plan.max_keys + KB) * sizeof(uint64_t) +          \
                                              sizeof(QmsShared)),                               \
                                    stream>>>(keys, counts, nq, static_cast<int>(plan.ysplit),  \
                                              static_cast<int>(plan.per),                        \
                                              static_cast<int>(plan.max_keys), k, out_vals,      \
                                              out_idx, flags, total)
      if (k <= 32) FM_SELECT_RADIX(32);
      else if (k <= 64) FM_SELECT_RADIX(64);
      else if (k <= 128) FM_SELECT_RADIX(128);
      else FM_SELECT_RADIX(256);
#undef FM_SELECT_RADIX
      FM_CUDA_CHECK_LAUNCH();
      return;
    }
    const std::size_t smem = static_cast<std::size_t>(kWarps) * plan.max_keys * sizeof(uint64_t);
#define FM_SELECT_WARP(KPL)                                                                  \
  SelectCandidatesWarpKernel<KPL><<<static_cast<unsigned>(blocks), kWarps * 32, smem, stream>>>( \
      keys, counts, nq, static_cast<int>(plan.ysplit), static_cast<int>(plan.per),          \
      static_cast<int>(plan.max_keys), k, out_vals, out_idx, flags, total)
    if (plan.max_keys <= 128) FM_SELECT_WARP(4);
    else if (plan.max_keys <= 256) FM_SELECT_WARP(8);
    else if (plan.max_keys <= 512) FM_SELECT_WARP(16);
    else FM_SELECT_WARP(32);
#undef FM_SELECT_WARP
    FM_CUDA_CHECK_LAUNCH();
    return;
  }
  static std::atomic<uint64_t> shared_set{0};
  SetMaxDynamicShared(SelectCandidatesKernel,
                      static_cast<int>((kMaxKeys + kMaxSelectBucket) * sizeof(uint64_t)),
                      shared_set);
  // 256 threads select the k smallest (k up to kMaxSelectBucket); larger k sort every candidate.
  const int block = k <= kMaxSelectBucket ? 256 : plan.max_keys >= 4096 ? 512 : 256;
  const int64_t kb = SelectBucket(k);  // the selected words' bucket
  const std::size_t smem = (plan.max_keys + (k <= kMaxSelectBucket ? kb : 0)) * sizeof(uint64_t);
  for (int64_t q0 = 0; q0 < nq; q0 += (1LL << 30)) {
    const int64_t qn = nq - q0 < (1LL << 30) ? nq - q0 : (1LL << 30);
    SelectCandidatesKernel<<<static_cast<unsigned>(qn), block, smem, stream>>>(
        keys + q0 * plan.ysplit * plan.per, counts + q0 * plan.ysplit,
        static_cast<int>(plan.ysplit), static_cast<int>(plan.per),
        static_cast<int>(plan.max_keys), k, out_vals + q0 * k, out_idx + q0 * k, flags, total);
    FM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace fm::gpu::detail
