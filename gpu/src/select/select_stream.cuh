// Buffered search: one block streams one row once, reading it with 16-byte loads, and appends to a
// shared-memory buffer only the words below the block's current threshold (the k-th smallest word
// known so far, kSentinel until k words have been seen). Each element costs one float compare
// against the threshold, behind one compare per float4 minimum and one warp vote (hierarchical
// partition: warp, group of four, element).
// Each thread with candidates reserves its slots with one shared atomic;
// when the buffer passes its fill mark the whole block flushes it together (the flush is the
// algorithm's own: merge into a queue, or quick multi-select compaction), which lowers the
// threshold. So threads never diverge on insertion and the row is read exactly once.
#pragma once

#include "async_copy.cuh"
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
// `tid`: the thread's index among the T that share the chunk.
template <int T, int U>
__device__ inline void LoadChunk(const float* rp, int64_t cols, int64_t base, bool vec,
                                 float4 (&v)[U], int tid = threadIdx.x) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t c0 = base + static_cast<int64_t>(u * T + tid) * 4;
    if (vec && c0 + 3 < cols) {
      v[u] = __ldcs(reinterpret_cast<const float4*>(rp + c0));
    } else {
      float e4[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t c =
            vec ? c0 + e : base + static_cast<int64_t>((u * 4 + e) * T + tid);
        e4[e] = c < cols ? __ldcs(rp + c) : __int_as_float(0x7fffffff);
      }
      v[u] = make_float4(e4[0], e4[1], e4[2], e4[3]);
    }
  }
}

__device__ inline float Lane4(const float4& f, int e) {
  return e == 0 ? f.x : e == 1 ? f.y : e == 2 ? f.z : f.w;
}

// Offset within a chunk of thread tid's element e of float4 u (the layout of LoadChunk).
template <int T>
__device__ __forceinline__ int ChunkOffset(bool vec, int u, int e, int tid) {
  return vec ? (u * T + tid) * 4 + e : (u * 4 + e) * T + tid;
}

// Bit 4u + e set where element e of float4 u is <= thr_f (see CandidateBits).
template <int U>
__device__ __forceinline__ unsigned ValueLeBits(const float4 (&cur)[U], float thr_f) {
  static_assert(4 * U <= 32, "one bit per element");
  unsigned bits = 0;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    bits |= (cur[u].x <= thr_f ? 1u : 0u) << (u * 4);
    bits |= (cur[u].y <= thr_f ? 1u : 0u) << (u * 4 + 1);
    bits |= (cur[u].z <= thr_f ? 1u : 0u) << (u * 4 + 2);
    bits |= (cur[u].w <= thr_f ? 1u : 0u) << (u * 4 + 3);
  }
  return bits;
}

// Marks this thread's candidates among its U float4 of the chunk at column `base` (bit 4u + e
// for element e of float4 u). One float compare per element: for a threshold word (key, col)
// with a finite or +inf value, value <= the threshold's value admits every word below the
// threshold and, besides, only words of the same value and a larger column: those lie above the
// threshold and never displace a smaller word, so a buffer may hold them. A NaN threshold
// (including kSentinel) compares words exactly. Elements past the row's end are masked off.
template <int T, int U>
__device__ __forceinline__ unsigned CandidateBits(const float4 (&cur)[U], int64_t base,
                                                  int64_t cols, bool vec, u64 thr,
                                                  int tid = threadIdx.x) {
  static_assert(4 * U <= 32, "one bit per element");
  constexpr int kChunk = T * 4 * U;
  const unsigned thr_key = static_cast<unsigned>(thr >> 32);
  unsigned bits = 0;
  if (thr_key != 0xffffffffu) {
    bits = ValueLeBits(cur, KeyToFloat(thr_key));
  } else {
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t c = base + ChunkOffset<T>(vec, u, e, tid);
        if (Pack(FloatKey(Lane4(cur[u], e)), c) < thr) bits |= 1u << (u * 4 + e);
      }
    }
  }
  if (base + kChunk > cols) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (base + ChunkOffset<T>(vec, u, e, tid) >= cols) bits &= ~(1u << (u * 4 + e));
      }
    }
  }
  return bits;
}

// The word of candidate bit j (see CandidateBits) of the chunk at column `base`.
template <int T, int U>
__device__ __forceinline__ u64 CandidateWord(const float4 (&cur)[U], int j, int64_t base,
                                             bool vec, int tid = threadIdx.x) {
  float v = cur[0].x;
#pragma unroll
  for (int uu = 0; uu < U; ++uu) {
    v = j == uu * 4 ? cur[uu].x : v;
    v = j == uu * 4 + 1 ? cur[uu].y : v;
    v = j == uu * 4 + 2 ? cur[uu].z : v;
    v = j == uu * 4 + 3 ? cur[uu].w : v;
  }
  return Pack(FloatKey(v), base + ChunkOffset<T>(vec, j >> 2, j & 3, tid));
}

// Top level of the hierarchy: each float4's minimum against the threshold's value, voted over
// the warp (one vote rejects the warp's 128 U columns). False where no lane's chunk can hold a
// candidate; a NaN threshold (it may pass NaN words) skips the test. All 32 lanes must call it.
template <int U>
__device__ __forceinline__ bool WarpChunkMayHold(const float4 (&cur)[U], u64 thr) {
  const unsigned thr_key = static_cast<unsigned>(thr >> 32);
  const float thr_f = KeyToFloat(thr_key);
  bool any = thr_key == 0xffffffffu;
#pragma unroll
  for (int u = 0; u < U; ++u)
    any |= fminf(fminf(cur[u].x, cur[u].y), fminf(cur[u].z, cur[u].w)) <= thr_f;
  return __any_sync(kFullMask, any);
}

// Filters one chunk (cur: this thread's U float4 of the chunk at column `base`) into buf from
// position `start`, through the chunk's append counter `ctr`.
template <int T, int U>
__device__ __forceinline__ void FilterChunk(const float4 (&cur)[U], int64_t base, int64_t cols,
                                            bool vec, u64 thr, int* ctr, u64* buf, int start) {
  constexpr int kChunk = T * 4 * U;
  if (thr == kSentinel && base + kChunk <= cols) {
    // Fewer than k words seen: the whole (full) chunk is taken, in place, no atomics.
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int off = ChunkOffset<T>(vec, u, e, threadIdx.x);
        buf[start + off] = Pack(FloatKey(Lane4(cur[u], e)), base + off);
      }
    }
    if (threadIdx.x == 0) *ctr = kChunk;
    return;
  }
  if (!WarpChunkMayHold(cur, thr)) return;  // the warp's chunk holds no candidate
  unsigned bits = CandidateBits<T, U>(cur, base, cols, vec, thr);
  // A thread with candidates reserves its slots with one shared atomic and writes them; most
  // threads have none, and those that do rarely have more than one.
  if (bits) {
    int pos = start + atomicAdd(ctr, __popc(bits));
    do {
      const int j = __ffs(bits) - 1;
      bits &= bits - 1;
      buf[pos++] = CandidateWord<T, U>(cur, j, base, vec);
    } while (bits);
  }
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
  float4 cur[U], nxt[U];
  if (cols > 0) LoadChunk<T, U>(rp, cols, 0, vec, cur);
  int it = 0;
  for (int64_t base = 0; base < cols; base += kChunk, ++it) {
    if (base + kChunk < cols) LoadChunk<T, U>(rp, cols, base + kChunk, vec, nxt);
    int* ctr = &ss.count[it % 3];
    if (threadIdx.x == 0) ss.count[(it + 1) % 3] = 0;
    FilterChunk<T, U>(cur, base, cols, vec, ss.threshold, ctr, buf, start);
    __syncthreads();
    start += *ctr;
    if (start > flush_at) start = flush(start);
#pragma unroll
    for (int u = 0; u < U; ++u) cur[u] = nxt[u];
  }
  return start;
}

// A row streamed through a ring of D chunks in shared memory filled by cp.async, so D - 1 chunks
// (D - 1 times T * U * 16 bytes) are in flight per block without holding them in registers.
// Every thread copies and later reads only its own 16-byte pieces, so waiting on its own copy
// groups is enough. Rows whose start is not 16-byte aligned take StreamRow.
template <int T, int U, int D>
struct RingStream {
  static constexpr int kChunk = T * 4 * U;
  static constexpr int kFloats = D * kChunk;
  const float* rp;
  int64_t cols;
  int64_t nchunks;
  float* ring;

  __device__ RingStream(const SelectArgs& a, int64_t row, float* ring_smem) : ring(ring_smem) {
    const RowView rv = GetRow(a, row);
    rp = rv.p;
    cols = rv.cols;
    nchunks = (cols + kChunk - 1) / kChunk;
  }
  __device__ bool Usable() const { return (reinterpret_cast<uintptr_t>(rp) & 15u) == 0; }

  // Issues the copies of chunk ci (none past the row) and commits them as one group.
  __device__ void Issue(int64_t ci) const {
    if (ci < nchunks) {
      float* dst = ring + (ci % D) * kChunk + threadIdx.x * 4;
      const float* src = rp + ci * kChunk + threadIdx.x * 4;
      if ((ci + 1) * kChunk <= cols) {  // a full chunk
#pragma unroll
        for (int u = 0; u < U; ++u) CpAsync16(dst + u * T * 4, src + u * T * 4, 16);
      } else {
        // The row's last chunk: whole float4 by copy; the piece across the row's end (and what
        // lies past it) by plain loads and stores, so nothing past the row is read.
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t left = cols - (ci * kChunk + (u * T + threadIdx.x) * 4);
          if (left >= 4) {
            CpAsync16(dst + u * T * 4, src + u * T * 4, 16);
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) dst[u * T * 4 + e] = e < left ? src[u * T * 4 + e] : 0.0f;
          }
        }
      }
    }
    CpAsyncCommit();
  }
  // The first D - 1 chunks; may be called early to overlap the row's first loads with other work.
  __device__ void Prologue() const {
#pragma unroll
    for (int d = 0; d < D - 1; ++d) Issue(d);
  }

  // Streams the row (Prologue() must have been called). Same contract as StreamRow.
  template <typename Flush>
  __device__ int Run(u64* buf, int start, int flush_at, StreamShared& ss, Flush&& flush) const {
    int slot = 0, c0 = 0, c1 = 1, c2 = 2;  // ring slot; append counters, rotated
    for (int64_t it = 0; it < nchunks; ++it) {
      Issue(it + D - 1);
      CpAsyncWait<D - 1>();
      float4 cur[U];
      const float* src = ring + slot * kChunk;
#pragma unroll
      for (int u = 0; u < U; ++u)
        cur[u] = *reinterpret_cast<const float4*>(src + (u * T + threadIdx.x) * 4);
      slot = slot == D - 1 ? 0 : slot + 1;
      int* ctr = &ss.count[c0];
      if (threadIdx.x == 0) ss.count[c1] = 0;
      FilterChunk<T, U>(cur, it * kChunk, cols, true, ss.threshold, ctr, buf, start);
      __syncthreads();
      start += *ctr;
      const int t = c0;
      c0 = c1;
      c1 = c2;
      c2 = t;
      if (start > flush_at) start = flush(start);
    }
    CpAsyncWait<0>();
    return start;
  }
};

}  // namespace fm::gpu::detail
