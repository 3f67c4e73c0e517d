// Buffered search: one block streams one row once, reading it with 16-byte loads, and appends to a
// shared-memory buffer only the words below the block's current threshold (the k-th smallest word
// known so far, kSentinel until k words have been seen). The threshold is tested top-down over a
// small hierarchy of group minima: the warp (one vote), then each thread's groups of 4 (one
// float4), then single elements, so almost all of a row is rejected with one compare per group.
// Candidates are placed with a warp ballot and a population count (one shared atomic per warp);
// when the buffer passes its fill mark the whole block flushes it together (the flush is the
// algorithm's own: merge into a queue, or quick multi-select compaction), which lowers the
// threshold. So threads never diverge on insertion and the row is read exactly once.
#pragma once

#include "select/select_common.cuh"

namespace fm::gpu::detail {

// Shared state of the streaming loop.
struct StreamShared {
  int count[3];  // per-chunk append counters, rotated so one barrier per chunk suffices
  u64 threshold;
};

// Streams row `row` of a. T threads, U float4 per thread per chunk. `buf` receives candidates
// from position `start` on; `flush_at`: after a chunk, when more than this many words are
// buffered, flush(n) is called by all threads and returns the new fill (it must update
// ss.threshold and end with __syncthreads). Returns the final fill of the buffer.
// Loads chunk `base` of a row: U float4 per thread (vector path) or, for a misaligned row,
// 4 * U scalars per thread; columns past the row's end read as NaN and are masked later.
template <int T, int U>
__device__ inline void LoadChunk(const float* rp, int64_t cols, int64_t base, bool vec,
                                 float4 (&v)[U]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t c0 = base + static_cast<int64_t>(u * T + threadIdx.x) * 4;
    if (vec && c0 + 3 < cols) {
      v[u] = __ldcs(reinterpret_cast<const float4*>(rp + c0));
    } else {
      float e4[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t c =
            vec ? c0 + e : base + static_cast<int64_t>((u * 4 + e) * T + threadIdx.x);
        e4[e] = c < cols ? __ldcs(rp + c) : __int_as_float(0x7fffffff);
      }
      v[u] = make_float4(e4[0], e4[1], e4[2], e4[3]);
    }
  }
}

__device__ inline float Lane4(const float4& f, int e) {
  return e == 0 ? f.x : e == 1 ? f.y : e == 2 ? f.z : f.w;
}

// Streams row `row` of a. T threads, U float4 per thread per chunk; the next chunk's loads are
// issued before the current chunk is filtered, so the block barrier never drains the memory
// pipe. `buf` receives candidates from position `start` on; `flush_at`: after a chunk, when more
// than this many words are buffered, flush(n) is called by all threads and returns the new fill
// (it must update ss.threshold and end with __syncthreads). Returns the final fill.
template <int T, int U, typename Flush>
__device__ int StreamRow(const SelectArgs& a, int64_t row, u64* buf, int start, int flush_at,
                         StreamShared& ss, Flush&& flush) {
  constexpr int kChunk = T * 4 * U;
  const RowView rv = GetRow(a, row);
  const float* rp = rv.p;
  const int64_t cols = rv.cols;
  const bool vec = (reinterpret_cast<uintptr_t>(rp) & 15u) == 0;
  const int lane = threadIdx.x & 31;
  const unsigned lt = LaneMaskLt();
  float4 cur[U], nxt[U];
  if (cols > 0) LoadChunk<T, U>(rp, cols, 0, vec, cur);
  int it = 0;
  for (int64_t base = 0; base < cols; base += kChunk, ++it) {
    if (base + kChunk < cols) LoadChunk<T, U>(rp, cols, base + kChunk, vec, nxt);
    int* ctr = &ss.count[it % 3];
    if (threadIdx.x == 0) ss.count[(it + 1) % 3] = 0;
    const u64 thr = ss.threshold;
    const unsigned thr_key = static_cast<unsigned>(thr >> 32);
    if (thr == kSentinel && base + kChunk <= cols) {
      // Fewer than k words seen: the whole (full) chunk is taken, in place, no atomics.
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int local = vec ? (u * T + threadIdx.x) * 4 + e : (u * 4 + e) * T + threadIdx.x;
          buf[start + local] = Pack(FloatKey(Lane4(cur[u], e)), base + local);
        }
      }
      if (threadIdx.x == 0) *ctr = kChunk;
    } else {
      // Group minima on the raw floats: a float4 whose minimum is above the threshold's value
      // holds no candidate. Exact only for a finite threshold; otherwise test every element.
      const float thr_f = KeyToFloat(thr_key);
      const bool loose = thr_key >= 0xff800000u;  // threshold +inf, NaN or none yet
      bool any = loose;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float g = fminf(fminf(cur[u].x, cur[u].y), fminf(cur[u].z, cur[u].w));
        any |= g <= thr_f;
      }
      if (__any_sync(kFullMask, any)) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int64_t c =
                vec ? base + static_cast<int64_t>(u * T + threadIdx.x) * 4 + e
                    : base + static_cast<int64_t>((u * 4 + e) * T + threadIdx.x);
            const unsigned key = FloatKey(Lane4(cur[u], e));
            const u64 w = Pack(key, c);
            const bool cand = key <= thr_key && c < cols && w < thr;
            const unsigned ballot = __ballot_sync(kFullMask, cand);
            if (ballot) {
              int wbase = 0;
              if (lane == 0) wbase = atomicAdd(ctr, __popc(ballot));
              wbase = __shfl_sync(kFullMask, wbase, 0);
              if (cand) buf[start + wbase + __popc(ballot & lt)] = w;
            }
          }
        }
      }
    }
    __syncthreads();
    start += *ctr;
    if (start > flush_at) start = flush(start);
#pragma unroll
    for (int u = 0; u < U; ++u) cur[u] = nxt[u];
  }
  return start;
}

}  // namespace fm::gpu::detail
