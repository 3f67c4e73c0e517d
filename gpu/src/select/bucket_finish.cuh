// The finish of a row by a counting sort of its candidates: a block spreads a row's n candidate
// words (keys and columns, n >= k) over B buckets laid linearly over the span of their keys,
// places the words of the buckets up to the one holding the k-th into their buckets' slots, and
// gives each word its rank by comparing it with the few words of its own bucket. The k-th word is
// never looked for: a word's rank is its bucket's start plus the words of its bucket below it,
// and the words ranked under k are the k smallest, written straight to their output slots.
//
// Against sorting the k smallest (a bitonic sort of the 1024 words took about 7 k of a warp
// finish's 11.9 k warp instructions a row at k = 1024), this is three passes over the words and
// a handful of instructions a word. Its cost grows with the words a bucket holds (each compared
// with all of its bucket's): a row is refused, and the caller selects it another way, when a
// bucket up to the k-th holds more than kBucketRankMax words (many equal keys, or keys crowded at
// one end of their span) or the words up to the k-th bucket's last overflow the placement
// buffer. When all keys are equal the buckets are laid over the columns instead.
#pragma once

#include "select/select_common.cuh"
#include "select/select_sorted.cuh"

namespace fm::gpu::detail {

// Shared memory the finish needs with a placement buffer of `place` words and B buckets: the
// placed words, counts and starts of the buckets, and each placed word's bucket.
constexpr int BucketFinishBytes(int place, int B) {
  return place * 8 + B * 8 + (place * 2 + 15) / 16 * 16;
}
// The same for k <= KB with a buffer of KB + kSlack words (the cut bucket's words past the k-th).
template <int KB, int B, int kSlack>
constexpr int BucketFinishShared() {
  return BucketFinishBytes(KB + kSlack, B);
}

// The words a bucket up to the k-th may hold. Rows whose values take 256 levels (about 64 / 128 /
// 256 words a value on 16384 / 32768 / 65536 columns) crowd buckets with equal keys; ranked here
// rather than refused (and selected again from the survivor list) at up to 256 words a bucket,
// with a placement buffer as large as the fused kernel's stages allow, 8192 rows of 16384 columns
// took 17 / 35 / 50 % less time at k = 32 / 256 / 1024 and 32768 columns 22 / 27 / 28 % less on an
// H200; up to 128 words gained less on 32768 columns, and a bound of the whole row's compares
// instead (512 a thread, made one after the other) made 65536 columns 13-18 % slower at k = 32 /
// 256 (bench/results/select.md "Crowded buckets ranked in place").
constexpr int kBucketRankMax = 256;

// The words a placement buffer holds in `bytes` of shared memory beside the counts of B buckets:
// the largest `place` whose BucketFinishBytes fit.
constexpr int BucketFinishPlaceCap(int bytes, int B) {
  int c = (bytes - B * 8) / 10 + 2;
  while (c > 0 && BucketFinishBytes(c, B) > bytes) --c;
  return c;
}

// The bucket of a word: laid linearly over the values from lo to hi (LinearBuckets, when both are
// finite and apart), else over the key bits, (key - lo) >> shift, or, when every key is the same,
// over the columns, col >> shift (ShiftBuckets). Each map is non-decreasing in the word, so a
// bucket's words all rank below the next bucket's. The two are separate types so that each pass
// is compiled for one map: a map choosing its mode per word ran both arms, predicated.
struct LinearBuckets {
  static constexpr bool by_col = false;
  float lo_f, scale;
  int last;
  __device__ __forceinline__ int operator()(unsigned key, unsigned) const {
    const unsigned u = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
    return min(last, __float2int_rd((__uint_as_float(u) - lo_f) * scale));
  }
};
struct ShiftBuckets {
  bool by_col;
  unsigned lo;
  int shift;
  __device__ __forceinline__ int operator()(unsigned key, unsigned col) const {
    return static_cast<int>((by_col ? col : key - lo) >> shift);
  }
};

// Calls f with the map of B buckets for keys from lo to hi on a row of `cols` columns.
template <int B, typename F>
__device__ __forceinline__ auto WithBucketMap(unsigned lo, unsigned hi, int64_t cols, F&& f) {
  const float lo_f = KeyToFloat(lo), hi_f = KeyToFloat(hi);
  const float scale = static_cast<float>(B) / (hi_f - lo_f);
  if (lo != hi && isfinite(scale) && scale > 0.0f && isfinite(lo_f) && isfinite(hi_f)) {
    return f(LinearBuckets{lo_f, scale, B - 1});
  }
  const bool by_col = lo == hi;
  const unsigned span = by_col ? static_cast<unsigned>(cols - 1) : hi - lo;
  return f(ShiftBuckets{by_col, lo, max(0, 32 - __clz(span) - __builtin_ctz(B))});
}

// The last step, thread tid of T: each of the `placed` words of `words` (bucket b's words at
// [start[b] - count[b], start[b]), the bucket of slot p at slot_bucket[p]) takes as its rank its
// bucket's first slot plus the words of its bucket below it (keys, then columns); the words
// ranked under k go to launch row `row` of the output at their ranks. Most buckets hold one word,
// which needs no compare.
template <int T>
__device__ __forceinline__ void WriteRanked(const SelectArgs& a, int64_t row, const u64* words,
                                            const uint16_t* slot_bucket, int placed,
                                            const int* start, const int* count, int tid) {
  const RowView rv = GetRow(a, row);
  const int64_t out0 = row * static_cast<int64_t>(a.k);
  for (int p = tid; p < placed; p += T) {
    const u64 w = words[p];
    const int b = slot_bucket[p];
    const int end = start[b], c = count[b];
    int rank = end - c;
    if (c > 1) {
      int q = end - c;
      if (c >= 8) {  // a crowded bucket: four compares in flight
        int r0 = 0, r1 = 0, r2 = 0, r3 = 0;
#pragma unroll 1
        for (; q + 4 <= end; q += 4) {
          r0 += words[q] < w;
          r1 += words[q + 1] < w;
          r2 += words[q + 2] < w;
          r3 += words[q + 3] < w;
        }
        rank += r0 + r1 + r2 + r3;
      }
#pragma unroll 1
      for (; q < end; ++q) rank += words[q] < w;
    }
    if (rank < a.k) {
      DecodeWord(a, w, rv.src_row, rv.col0, &a.out_values[out0 + rank],
                 &a.out_indices[out0 + rank]);
    }
  }
}

// A load of the candidates: through L2 (__ldcg) from global memory, or from shared memory.
template <bool kShared, typename V>
__device__ __forceinline__ V LoadCand(const V* p) {
  if constexpr (kShared) {
    return *p;
  } else {
    return __ldcg(p);
  }
}

// Columns 4j .. 4j + 3 of a column array of 32- or 16-bit entries (16-byte / 8-byte aligned).
template <bool kShared>
__device__ __forceinline__ uint4 LoadCols4(const unsigned* cols, int j) {
  return LoadCand<kShared>(reinterpret_cast<const uint4*>(cols) + j);
}
template <bool kShared>
__device__ __forceinline__ uint4 LoadCols4(const uint16_t* cols, int j) {
  const uint2 v = LoadCand<kShared>(reinterpret_cast<const uint2*>(cols) + j);
  return make_uint4(v.x & 0xffffu, v.x >> 16, v.y & 0xffffu, v.y >> 16);
}

// Finishes launch row `row` from its n >= k candidates, keys[i] / cols[i] (columns of the row,
// below a.cols, in 32 or 16 bits; the keys 16-byte aligned, the columns 16 / 8, in global memory
// or, with kShared, in shared memory). All T threads of the block call it; smem holds
// BucketFinishBytes(kPlace, B) bytes, 16-byte aligned (a placement buffer of kPlace words, by
// default KB + kSlack). Returns false, the same in every thread and with nothing written, when a
// bucket up to the k-th holds more than kBucketRankMax words or the words up to the k-th's
// bucket's last are more than kPlace. kRegs uint4 of keys a thread stay in registers between the
// passes (the rest are read again). Known bounds of the keys spare the first pass.
template <int T, int KB, int B, int kSlack, int kRegs, typename ColT, bool kShared = false,
          int kPlace = KB + kSlack>
__device__ bool BlockBucketFinish(const SelectArgs& a, int64_t row, int n, const unsigned* keys,
                                  const ColT* cols, unsigned char* smem, KeyBounds bounds = {}) {
  static_assert(B % T == 0 && (B & (B - 1)) == 0, "B a power of two, a multiple of T");
  static_assert(B <= 65536, "a placed word's bucket kept in 16 bits");
  static_assert(kPlace >= KB + kSlack, "the placement buffer");
  constexpr int kPer = B / T;
  constexpr int kWarps = T / 32;
  __shared__ unsigned red[2][kWarps];
  __shared__ int wsum[kWarps];
  __shared__ int cut_bucket;
  u64* words = reinterpret_cast<u64*>(smem);                       // [kPlace]
  int* count = reinterpret_cast<int*>(words + kPlace);             // [B]
  int* start = count + B;                                          // [B]
  uint16_t* slot_bucket = reinterpret_cast<uint16_t*>(start + B);  // [kPlace]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid / 32;
  const int k = a.k;
  const uint4* kv = reinterpret_cast<const uint4*>(keys);
  const int n4 = n / 4;  // whole vectors; the last n % 4 words one at a time

  for (int b = tid; b < B; b += T) count[b] = 0;

  // Pass 1: the span of the keys. The first kRegs vectors of each thread are kept.
  uint4 held[kRegs > 0 ? kRegs : 1];
#pragma unroll
  for (int r = 0; r < kRegs; ++r) {
    const int j = r * T + tid;
    if (j < n4) held[r] = LoadCand<kShared>(kv + j);
  }
  // Every word: vector j covers words 4j .. 4j + 3, the first kRegs a thread from registers.
  auto each_vector = [&](auto&& f) {
#pragma unroll
    for (int r = 0; r < kRegs; ++r) {
      const int j = r * T + tid;
      if (j < n4) f(j, held[r]);
    }
    for (int j = kRegs * T + tid; j < n4; j += T) f(j, LoadCand<kShared>(kv + j));
  };
  auto each_tail = [&](auto&& f) {
    for (int i = 4 * n4 + tid; i < n; i += T) f(i, LoadCand<kShared>(keys + i));
  };
  unsigned lo = bounds.lo, hi = bounds.hi;
  if (!bounds.known) {
    WarpKeyRange(
        [&](auto&& f) {
          each_vector([&](int, const uint4& v) {
            f(v.x);
            f(v.y);
            f(v.z);
            f(v.w);
          });
          each_tail([&](int, unsigned key) { f(key); });
        },
        lo, hi);
    if (lane == 0) {
      red[0][warp] = lo;
      red[1][warp] = hi;
    }
  }
  __syncthreads();  // the counts are cleared
  if (!bounds.known) {
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      lo = min(lo, red[0][w]);
      hi = max(hi, red[1][w]);
    }
  }
  return WithBucketMap<B>(lo, hi, a.cols, [&](const auto& bucket_of) {
    // Pass 2: counts.
    if (!bucket_of.by_col) {
      each_vector([&](int, const uint4& v) {
        atomicAdd(&count[bucket_of(v.x, 0)], 1);
        atomicAdd(&count[bucket_of(v.y, 0)], 1);
        atomicAdd(&count[bucket_of(v.z, 0)], 1);
        atomicAdd(&count[bucket_of(v.w, 0)], 1);
      });
      each_tail([&](int, unsigned key) { atomicAdd(&count[bucket_of(key, 0)], 1); });
    } else {
      for (int i = tid; i < n; i += T) {
        atomicAdd(&count[bucket_of(0, static_cast<unsigned>(LoadCand<kShared>(cols + i)))], 1);
      }
    }
    __syncthreads();

    // Starts: an exclusive scan of the counts, kPer consecutive buckets a thread. The bucket
    // that holds rank k - 1 is the cut; a bucket up to it with more than kBucketRankMax words, or
    // a cut whose words end past the placement buffer, refuses the row.
    int c[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) c[i] = count[tid * kPer + i];
    int sum = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) sum += c[i];
    const int incl = WarpInclusiveSum(sum);
    if (lane == 31) wsum[warp] = incl;
    __syncthreads();
    int base = incl - sum;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) base += w < warp ? wsum[w] : 0;
    bool refuse = false;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int b = tid * kPer + i;
      start[b] = base;
      if (base < k) {
        refuse |= c[i] > kBucketRankMax;
        if (base + c[i] >= k) {
          cut_bucket = b;
          refuse |= base + c[i] > kPlace;
        }
      }
      base += c[i];
    }
    if (__syncthreads_or(refuse)) return false;
    const int cut = cut_bucket;

    // Pass 3: the words of the buckets up to the cut into their buckets' slots (start[] is their
    // cursor: afterwards it holds each bucket's end).
    auto place = [&](unsigned key, unsigned col) {
      const int b = bucket_of(key, col);
      if (b <= cut) {
        const int slot = atomicAdd(&start[b], 1);
        words[slot] = Pack(key, col);
        slot_bucket[slot] = static_cast<uint16_t>(b);
      }
    };
    auto place4 = [&](const uint4& v, const uint4& cc) {
      place(v.x, cc.x);
      place(v.y, cc.y);
      place(v.z, cc.z);
      place(v.w, cc.w);
    };
    each_vector([&](int j, const uint4& v) { place4(v, LoadCols4<kShared>(cols, j)); });
    each_tail([&](int i, unsigned key) {
      place(key, static_cast<unsigned>(LoadCand<kShared>(cols + i)));
    });
    __syncthreads();

    WriteRanked<T>(a, row, words, slot_bucket, start[cut], start, count, tid);
    return true;
  });
}

}  // namespace fm::gpu::detail
