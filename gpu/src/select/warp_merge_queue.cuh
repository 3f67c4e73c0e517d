// Merge queue k-selection, one warp per row (several rows per block), for k up to 1024 (k <= 128:
// the queue in registers, the second half of this file).
//
// Each warp owns one row and a small piece of shared memory: the queue (the KB smallest words seen
// so far, sorted ascending) and a candidate buffer of B words. The row is streamed once: every
// lane loads U float4 per chunk (32 * 4 * U columns per warp, all loads of a chunk in flight
// together, so many warps per SM keep enough bytes in flight to reach the read bandwidth).
//
// Hierarchical partition, top-down: the minimum of each float4 against the warp's threshold,
// voted over the warp (one vote rejects 128 columns); only the groups that pass test their
// elements, and only lanes with candidates write them, placed with ballots and population counts.
// Buffered search: when the buffer would overflow, the warp sorts it (a bitonic network over its
// shared memory) and merges its KB smallest into the queue (min of the queue and the mirrored
// run, then a bitonic merge), which lowers the threshold to the queue's k-th word.
//
// A tight threshold comes early: in the first chunk each lane splits its 4U values into g groups
// (32 g >= k); the largest of the 32 g group minima has at least k values at or below it, so it
// bounds the k-th smallest value of the row and prunes the rest of the first chunk already.
#pragma once

#include "select/select_common.cuh"
#include "select/select_stream.cuh"

namespace fm::gpu::detail {

// Largest bucket of k run one warp per row.
constexpr int kMaxWarpMergeQueue = 1024;

template <int KB>
struct WarpMqShape {
  static_assert(KB > 128, "k <= 128 keep the queue in registers (WarpMqRegShape)");
  static constexpr int kBuf = KB;                         // candidate buffer
  static constexpr int kVec = KB <= 256 ? 8 : 4;          // float4 per lane per chunk
  static constexpr int kWarps = 4;                        // rows per block
  static constexpr int kMinBlocks = KB <= 512 ? 6 : 4;
  static constexpr int kChunk = 32 * 4 * kVec;
  static constexpr int kSharedPerWarp = (KB + kBuf) * 8;
  static constexpr int kShared = kWarps * kSharedPerWarp;
};

// Merges buf[0, fill) into queue (both per-warp shared memory); returns the new threshold. The
// networks run over shared memory with loops, not unrolled: the flush is rare, and compact code
// keeps the streaming loop of the 30-odd warps of an SM in the instruction cache.
template <int KB>
__device__ __noinline__ u64 WarpMqFlush(u64* queue, u64* buf, int fill, int k, u64 bound) {
  constexpr int B = WarpMqShape<KB>::kBuf;
  const int lane = threadIdx.x & 31;
  __syncwarp();
  for (int i = fill + lane; i < B; i += 32) buf[i] = kSentinel;
  __syncwarp();
  // Bitonic sort of buf, descending.
#pragma unroll 1
  for (int size = 2; size <= B; size <<= 1) {
#pragma unroll 1
    for (int s = size >> 1; s > 0; s >>= 1) {
#pragma unroll
      for (int p = lane; p < B / 2; p += 32) {
        const int i = ((p & ~(s - 1)) << 1) | (p & (s - 1));
        const u64 x = buf[i], y = buf[i + s];
        const bool up = (i & size) == 0;
        if (up ? (x < y) : (x > y)) {
          buf[i] = y;
          buf[i + s] = x;
        }
      }
      __syncwarp();
    }
  }
  // buf[B - KB + i] is the buffer's (KB - 1 - i)-th smallest: min with queue[i] is bitonic.
#pragma unroll
  for (int i = lane; i < KB; i += 32) queue[i] = MinU64(queue[i], buf[B - KB + i]);
  __syncwarp();
#pragma unroll 1
  for (int s = KB >> 1; s > 0; s >>= 1) {
#pragma unroll
    for (int p = lane; p < KB / 2; p += 32) {
      const int i = ((p & ~(s - 1)) << 1) | (p & (s - 1));
      const u64 x = queue[i], y = queue[i + s];
      if (x > y) {
        queue[i] = y;
        queue[i + s] = x;
      }
    }
    __syncwarp();
  }
  const u64 t = queue[k - 1];
  __syncwarp();
  return MinU64(t, bound);
}

template <int KB>
__global__ void __launch_bounds__(32 * WarpMqShape<KB>::kWarps, WarpMqShape<KB>::kMinBlocks)
    WarpMergeQueueKernel(SelectArgs a, int64_t row0) {
  using S = WarpMqShape<KB>;
  constexpr int U = S::kVec, B = S::kBuf, kChunk = S::kChunk;
  extern __shared__ u64 smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int64_t row = row0 + static_cast<int64_t>(blockIdx.x) * S::kWarps + warp;
  if (row >= a.rows) return;
  u64* queue = smem + warp * (KB + B);
  u64* buf = queue + KB;
  for (int i = lane; i < KB; i += 32) queue[i] = kSentinel;
  const int k = a.k;
  const RowView rv = GetRow(a, row);
  const float* rp = rv.p;
  const int64_t cols = rv.cols;
  const bool vec = (reinterpret_cast<uintptr_t>(rp) & 15u) == 0;
  const unsigned lt = LaneMaskLt();
  u64 thr = kSentinel, bound = kSentinel;
  int fill = 0;
  for (int64_t base = 0; base < cols; base += kChunk) {
    float4 v[U];
    if (vec && base + kChunk <= cols) {  // full chunk of an aligned row: plain 16-byte loads
      const float4* p4 = reinterpret_cast<const float4*>(rp + base) + lane;
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = __ldcs(p4 + 32 * u);
    } else {
      LoadChunk<32, U>(rp, cols, base, vec, v, lane);  // partial chunk or misaligned row
    }
    const unsigned cbase = static_cast<unsigned>(base);
    const int lim = cols - base < kChunk ? static_cast<int>(cols - base) : kChunk;
    // Group minima are recomputed where needed rather than kept (registers are the limit).
    auto m = [&](int u) { return fminf(fminf(v[u].x, v[u].y), fminf(v[u].z, v[u].w)); };
    if (base == 0 && cols >= kChunk && k <= 32 * U) {
      // g groups per lane of U / g float4 each, 32 g >= k: the largest group minimum bounds
      // the k-th smallest value.
      int g = 1;
      while (32 * g < k) g <<= 1;
      const int per = U / g;
      unsigned lb = 0;
      float mm = __int_as_float(0x7fffffff);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        mm = fminf(mm, m(u));
        if ((u + 1) % per == 0) {
          lb = max(lb, FloatKey(mm));
          mm = __int_as_float(0x7fffffff);
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) lb = max(lb, __shfl_xor_sync(kFullMask, lb, o));
      bound = (static_cast<u64>(lb) << 32) | 0xffffffffull;
      thr = bound;
    }
    // Top level of the partition: the chunk's minimum against the threshold, one vote.
    unsigned thr_key = static_cast<unsigned>(thr >> 32);
    bool loose = thr_key >= 0xff800000u;  // threshold +inf, NaN or none yet
    float thr_f = KeyToFloat(thr_key);
    float mc = m(0);
#pragma unroll
    for (int u = 1; u < U; ++u) mc = fminf(mc, m(u));
    if (!__any_sync(kFullMask, loose || mc <= thr_f)) continue;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      // A float4 whose minimum is above a finite threshold value holds no candidate.
      bool pass = loose || m(u) <= thr_f;
      if (!__any_sync(kFullMask, pass)) continue;
      const float ve[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
      // Column of element e within the chunk (columns fit 32 bits: cols < 2^32 - 1).
      const int off0 = vec ? (u * 32 + lane) * 4 : u * 128 + lane;
      const int step = vec ? 1 : 32;
      bool cand[4];
      unsigned bal[4];
      int total;
      for (;;) {
        total = 0;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int off = off0 + e * step;
          const float x = ve[e];
          // Below the threshold's value, or equal to it with the word test deciding the tie.
          const bool below = loose ? true : (x < thr_f ? true : x == thr_f);
          cand[e] = pass && off < lim && below && Pack(FloatKey(x), cbase + off) < thr;
          bal[e] = __ballot_sync(kFullMask, cand[e]);
          total += __popc(bal[e]);
        }
        if (fill + total <= B) break;
        thr = WarpMqFlush<KB>(queue, buf, fill, k, bound);
        fill = 0;
        thr_key = static_cast<unsigned>(thr >> 32);
        loose = thr_key >= 0xff800000u;
        thr_f = KeyToFloat(thr_key);
        pass = loose || m(u) <= thr_f;
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (cand[e]) {
          buf[fill + __popc(bal[e] & lt)] = Pack(FloatKey(ve[e]), cbase + off0 + e * step);
        }
        fill += __popc(bal[e]);
      }
    }
  }
  if (fill > 0) WarpMqFlush<KB>(queue, buf, fill, k, bound);
  __syncwarp();
  const int64_t out0 = row * static_cast<int64_t>(k);
  for (int i = lane; i < k; i += 32) {
    const u64 w = queue[i];
    float val;
    int64_t idx;
    if (w == kSentinel) {
      val = __int_as_float(0x7f800000);
      idx = -1;
    } else {
      val = KeyToFloat(static_cast<unsigned>(w >> 32));
      const int64_t col = rv.col0 + static_cast<int64_t>(w & 0xffffffffull);
      idx = a.in_indices ? a.in_indices[rv.src_row * a.row_stride + col] : col;
    }
    a.out_values[out0 + i] = val;
    a.out_indices[out0 + i] = idx;
  }
}

// ---- the queue in registers (k <= 128) ----------------------------------------------------
//
// For k <= 128 the queue fits the warp's registers: word j * 32 + lane of the queue in q[j] of
// that lane (KB / 32 words a lane). Candidates gather in the warp's shared buffer; each time 32
// are there the warp sorts them across its lanes (a bitonic network of shuffles) and merges them
// into the queue (min of the queue's last 32 words and the mirrored run, then a bitonic merge
// over the queue), so a flush costs a few dozen shuffles and no shared-memory traffic. The warps
// stay resident and take rows w, w + W, ... (W warps in the grid); each chunk's loads are issued
// before the chunk before it is filtered, across a row's end too, so a warp's next row is on its
// way while it finishes the last one.
template <int KB>
struct WarpMqRegShape {
  static_assert(KB == 32 || KB == 64 || KB == 128, "the queue in registers holds 32 to 128 words");
  static constexpr int kQ = KB / 32;                // queue words a lane
  static constexpr int kVec = 4;                    // float4 a lane a chunk
  static constexpr int kChunk = 32 * 4 * kVec;      // 512 columns a warp a chunk
  static constexpr int kWarps = 4;
  // Eight blocks an SM (32 warps): ptxas then keeps 64 registers and spills 48 / 80 / 112 bytes
  // at k <= 32 / 64 / 128; at k <= 64 that ran 1-8 % faster on an H200 than six blocks without
  // spills (bench/results/select_mq_registers_ab_h200.txt).
  static constexpr int kMinBlocks = 8;
  static constexpr int kBuf = 32 + kChunk;          // under 32 left + a whole chunk's candidates
  static constexpr int kShared = kWarps * kBuf * 8;
};

// The KB smallest of the queue q (ascending, word j * 32 + lane in q[j]) and the 32 words x
// (one a lane, any order) into q.
template <int Q>
__device__ __forceinline__ void WarpMergeRun(u64 (&q)[Q], u64 x, int lane) {
  x = WarpBitonicSort(x);
  q[Q - 1] = MinU64(q[Q - 1], __shfl_sync(kFullMask, x, 31 - lane));
  WarpBitonicMergeUp(q, Q, Q, lane);
}

// Word i of the queue, on every lane.
template <int Q>
__device__ __forceinline__ u64 WarpQueueWord(const u64 (&q)[Q], int i) {
  u64 w = q[0];
#pragma unroll
  for (int j = 1; j < Q; ++j) w = (i >> 5) == j ? q[j] : w;
  return __shfl_sync(kFullMask, w, i & 31);
}

template <int KB>
__global__ void __launch_bounds__(32 * WarpMqRegShape<KB>::kWarps,
                                  WarpMqRegShape<KB>::kMinBlocks)
    WarpMergeQueueRegKernel(SelectArgs a, int64_t row0) {
  using S = WarpMqRegShape<KB>;
  constexpr int U = S::kVec, Q = S::kQ, kChunk = S::kChunk;
  extern __shared__ u64 smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * S::kWarps;
  int64_t row = row0 + static_cast<int64_t>(blockIdx.x) * S::kWarps + warp;
  if (row >= a.rows) return;
  u64* buf = smem + warp * S::kBuf;
  const int k = a.k;

  const RowView rv0 = GetRow(a, row);
  const float* rp = rv0.p;
  int64_t cols = rv0.cols;
  bool vec = (reinterpret_cast<uintptr_t>(rp) & 15u) == 0;
  int64_t base = 0;
  float4 cur[U];
  LoadChunk<32, U>(rp, cols, 0, vec, cur, lane);
  u64 q[Q];
#pragma unroll
  for (int j = 0; j < Q; ++j) q[j] = kSentinel;
  u64 thr = kSentinel, bound = kSentinel;
  int fill = 0;
  for (;;) {
    // The next chunk: of this row, or the first of the warp's next row.
    const bool last = base + kChunk >= cols;
    const int64_t nrow = last ? row + stride : row;
    const bool more = nrow < a.rows;
    const float* nrp = rp;
    int64_t ncols = cols;
    bool nvec = vec;
    int64_t nbase = base + kChunk;
    if (last && more) {
      const RowView nrv = GetRow(a, nrow);
      nrp = nrv.p;
      ncols = nrv.cols;
      nvec = (reinterpret_cast<uintptr_t>(nrp) & 15u) == 0;
      nbase = 0;
    }
    float4 nxt[U];
    if (more) LoadChunk<32, U>(nrp, ncols, nbase, nvec, nxt, lane);

    if (base == 0) {
      // Each lane's (KB / 32)-th smallest key of the chunk (padding past the row is NaN, the
      // largest key): the warp's largest of them has at least KB words at or under it.
      unsigned ks[Q];  // this lane's Q smallest keys, ascending
#pragma unroll
      for (int j = 0; j < Q; ++j) ks[j] = 0xffffffffu;
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          unsigned key = FloatKey(Lane4(cur[u], e));
#pragma unroll
          for (int j = 0; j < Q; ++j) {
            const unsigned lo = min(ks[j], key);
            key = max(ks[j], key);
            ks[j] = lo;
          }
        }
      }
      unsigned lb = ks[Q - 1];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) lb = max(lb, __shfl_xor_sync(kFullMask, lb, o));
      bound = (static_cast<u64>(lb) << 32) | 0xffffffffull;
      thr = bound;
    }
    // Top of the partition: each float4's minimum against the threshold, one vote a chunk.
    if (WarpChunkMayHold(cur, thr)) {
      unsigned bits = CandidateBits<32, U>(cur, base, cols, vec, thr, lane);
      const int c = __popc(bits);
      const int incl = WarpInclusiveSum(c);
      int pos = fill + incl - c;
      while (bits) {
        const int j = __ffs(bits) - 1;
        bits &= bits - 1;
        buf[pos++] = CandidateWord<32, U>(cur, j, base, vec, lane);
      }
      fill += __shfl_sync(kFullMask, incl, 31);
      __syncwarp();
      while (fill >= 32) {
        const u64 x = buf[fill - 32 + lane];
        __syncwarp();
        fill -= 32;
        WarpMergeRun(q, x, lane);
        thr = MinU64(WarpQueueWord(q, k - 1), bound);
      }
    }
    if (last) {
      if (fill > 0) {
        const u64 x = lane < fill ? buf[lane] : kSentinel;
        __syncwarp();
        WarpMergeRun(q, x, lane);
      }
      const int64_t out0 = row * static_cast<int64_t>(k);
      const RowView rv = GetRow(a, row);
#pragma unroll
      for (int j = 0; j < Q; ++j) {
        const int i = j * 32 + lane;
        if (i < k) {
          DecodeWord(a, q[j], rv.src_row, rv.col0, &a.out_values[out0 + i],
                     &a.out_indices[out0 + i]);
        }
        q[j] = kSentinel;
      }
      thr = bound = kSentinel;
      fill = 0;
      if (!more) break;
    }
    row = nrow;
    rp = nrp;
    cols = ncols;
    vec = nvec;
    base = nbase;
#pragma unroll
    for (int u = 0; u < U; ++u) cur[u] = nxt[u];
  }
}

template <int KB>
void LaunchWarpMergeQueueReg(const SelectArgs& a) {
  using S = WarpMqRegShape<KB>;
  auto kernel = WarpMergeQueueRegKernel<KB>;
  PrepareSharedMemory(kernel, S::kShared, a);
  const int per_sm = BlocksPerSm(kernel, 32 * S::kWarps, S::kShared, a);
  const int64_t resident = static_cast<int64_t>(per_sm > 0 ? per_sm : 1) * a.sms;
  const int64_t blocks = (a.rows + S::kWarps - 1) / S::kWarps;
  // As many blocks as are resident at once, each warp's rows spread evenly over them.
  const int64_t rounds = (blocks + resident - 1) / resident;
  const int64_t n = (blocks + rounds - 1) / rounds;
  kernel<<<static_cast<unsigned>(n), 32 * S::kWarps, S::kShared, a.stream>>>(a, 0);
  FM_CUDA_CHECK_LAUNCH();
}

template <int KB>
void LaunchWarpMergeQueue(const SelectArgs& a) {
  if constexpr (KB <= 128) {
    LaunchWarpMergeQueueReg<KB>(a);
  } else {
    using S = WarpMqShape<KB>;
    auto kernel = WarpMergeQueueKernel<KB>;
    PrepareSharedMemory(kernel, S::kShared, a);
    constexpr int64_t kMaxGrid = int64_t{1} << 30;
    const int64_t blocks = (a.rows + S::kWarps - 1) / S::kWarps;
    for (int64_t b0 = 0; b0 < blocks; b0 += kMaxGrid) {
      const int64_t n = blocks - b0 < kMaxGrid ? blocks - b0 : kMaxGrid;
      kernel<<<static_cast<unsigned>(n), 32 * S::kWarps, S::kShared, a.stream>>>(
          a, b0 * S::kWarps);
      FM_CUDA_CHECK_LAUNCH();
    }
  }
}

}  // namespace fm::gpu::detail
