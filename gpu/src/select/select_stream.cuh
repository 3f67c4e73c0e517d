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
template <int T, int U, typename Flush>
__device__ int StreamRow(const SelectArgs& a, int64_t row, u64* buf, int start, int flush_at,
                         StreamShared& ss, Flush&& flush) {
  constexpr int kChunk = T * 4 * U;
  const float* rp = a.distances + row * a.row_stride;
  const int64_t cols = a.cols;
  const bool vec = (reinterpret_cast<uintptr_t>(rp) & 15u) == 0;
  const int lane = threadIdx.x & 31;
  const unsigned lt = LaneMaskLt();
  int it = 0;
  for (int64_t base = 0; base < cols; base += kChunk, ++it) {
    int* ctr = &ss.count[it % 3];
    if (threadIdx.x == 0) ss.count[(it + 1) % 3] = 0;
    const u64 thr = ss.threshold;
    const unsigned thr_key = static_cast<unsigned>(thr >> 32);
    float v[U][4];
    // Load the chunk: vector path (float4 per thread) or, for a misaligned row, scalars.
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c0 = base + static_cast<int64_t>(u * T + threadIdx.x) * 4;
      if (vec && c0 + 3 < cols) {
        const float4 f = __ldcs(reinterpret_cast<const float4*>(rp + c0));
        v[u][0] = f.x;
        v[u][1] = f.y;
        v[u][2] = f.z;
        v[u][3] = f.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t c =
              vec ? c0 + e : base + static_cast<int64_t>((u * 4 + e) * T + threadIdx.x);
          v[u][e] = c < cols ? __ldcs(rp + c) : __int_as_float(0x7fffffff);
        }
      }
    }
    // Group minima: one compare of the smallest key of each float4 against the threshold.
    unsigned keys[U][4];
    bool any = false;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      unsigned gmin = 0xffffffffu;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        keys[u][e] = FloatKey(v[u][e]);
        gmin = min(gmin, keys[u][e]);
      }
      any |= gmin <= thr_key;
    }
    if (__any_sync(kFullMask, any)) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t c =
              vec ? base + static_cast<int64_t>(u * T + threadIdx.x) * 4 + e
                  : base + static_cast<int64_t>((u * 4 + e) * T + threadIdx.x);
          const u64 w = Pack(keys[u][e], c);
          const bool cand = keys[u][e] <= thr_key && c < cols && w < thr;
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
    __syncthreads();
    start += *ctr;
    if (start > flush_at) start = flush(start);
  }
  return start;
}

}  // namespace fm::gpu::detail
