// Selection of the k smallest of a few thousand words, sorted, by one warp or one block: the
// k-th smallest key by a radix select over a shared histogram, the words up to it gathered with
// ballots (when the k-th value is tied, its words are cut at the k-th column by a second radix
// select, over the columns), then a bitonic sort of the k gathered words. The warp version stops
// its radix rounds once the k-th key's bin holds at most 32 words and takes the rest of the k
// from a sort of that bin, in the gather's pass. The finish of quick multi-select and the
// candidate selection of the fused kNN kernel.
#pragma once

#include "select/select_common.cuh"

namespace fm::gpu::detail {

// Shared state of the selection steps of one block (or, for the warp routines, one warp).
struct QmsShared {
  unsigned hist[256];
  int sel_bin, sel_rank;
  int less[2];
  int warp_left[32];
  int warp_right[32];
  u64 pivot;
  union {
    u64 warp_max[32];   // the block routines: a word per warp
    u64 bin_words[32];  // the warp routines: the words of the k-th key's radix bin
  };
};

// Of a histogram of 256 bins (shared memory) read by one warp: the bin holding rank r (0-based,
// below the histogram's total) and r's rank within that bin, on every lane.
__device__ __forceinline__ void WarpHistPick(const unsigned* hist, int r, int& bin, int& rest) {
  const int lane = threadIdx.x & 31;
  unsigned c[8], sum = 0;
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    c[b] = hist[lane * 8 + b];
    sum += c[b];
  }
  const unsigned incl = WarpInclusiveSum(sum);
  unsigned acc = incl - sum;
  const bool here = acc <= static_cast<unsigned>(r) && static_cast<unsigned>(r) < incl;
  int my_bin = 0, my_rest = 0;
  if (here) {
#pragma unroll
    for (int b = 0; b < 8; ++b) {
      if (static_cast<unsigned>(r) >= acc && static_cast<unsigned>(r) < acc + c[b]) {
        my_bin = lane * 8 + b;
        my_rest = r - static_cast<int>(acc);
      }
      acc += c[b];
    }
  }
  const int owner = __ffs(__ballot_sync(kFullMask, here)) - 1;
  bin = __shfl_sync(kFullMask, my_bin, owner);
  rest = __shfl_sync(kFullMask, my_rest, owner);
}

// The smallest and largest of the keys the warp presents (each_key as in BlockRadixSelect), on
// every lane.
template <typename EachKey>
__device__ __forceinline__ void WarpKeyRange(EachKey&& each_key, unsigned& mn, unsigned& mx) {
  mn = 0xffffffffu;
  mx = 0;
  each_key([&](unsigned key) {
    mn = min(mn, key);
    mx = max(mx, key);
  });
  // One warp reduction each from sm_80 on (redux.sync) where five shuffle rounds were: H100 and
  // H200, -0.1 to -1.4 % of the time on 8192 rows of 8192 to 65536 columns
  // (bench/results/select.md "The warp's key range by reduction, the pivot's rounds").
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  mn = __reduce_min_sync(kFullMask, mn);
  mx = __reduce_max_sync(kFullMask, mx);
#else
  for (int o = 16; o > 0; o >>= 1) {
    mn = min(mn, __shfl_xor_sync(kFullMask, mn, o));
    mx = max(mx, __shfl_xor_sync(kFullMask, mx, o));
  }
#endif
}

// Bounds of the keys a warp selects from, when its caller already knows them (lo <= every key
// <= hi, the same on every lane); otherwise the first pass over the keys finds them.
struct KeyBounds {
  unsigned lo = 0, hi = 0;
  bool known = false;
};

// The radix bin of the key of rank r (0-based) among the 32-bit keys one warp presents (each_key
// as in BlockRadixSelect below; qs is the warp's own): rounds of 256-bin histograms from the keys'
// first differing bit down, the bin picked by shuffles, stopping after max_rounds rounds, once
// every bit is resolved, or as soon as the bin holding rank r has at most `stop` keys. On return
// the bin is the keys k with (k & mask) == prefix: `count` keys (INT_MAX before a round has
// counted them) of which `rest` rank under rank r's (r - rest keys lie under the bin).
template <typename EachKey>
__device__ void WarpRadixBin(int r, int stop, int max_rounds, QmsShared& qs, EachKey&& each_key,
                             unsigned& prefix, unsigned& mask, int& rest, int& count,
                             KeyBounds bounds = {}) {
  const int lane = threadIdx.x & 31;
  unsigned mn = bounds.lo, mx = bounds.hi;
  if (!bounds.known) WarpKeyRange(each_key, mn, mx);
  rest = r;
  count = 0x7fffffff;
  if (mn == mx) {  // one key value (or none): it is every rank's key
    prefix = mn;
    mask = 0xffffffffu;
    return;
  }
  const int top = 31 - __clz(mn ^ mx);  // highest differing bit
  mask = top == 31 ? 0u : ~((2u << top) - 1u);
  prefix = mn & mask;
  int shift = top - 7;
  for (int round = 0; round < max_rounds && mask != 0xffffffffu && count > stop; ++round) {
    if (shift < 0) shift = 0;  // the last byte; its bits above `top` are fixed already
    for (int i = lane; i < 256; i += 32) qs.hist[i] = 0;
    __syncwarp();
    each_key([&](unsigned key) {
      if ((key & mask) == prefix) atomicAdd(&qs.hist[(key >> shift) & 255u], 1u);
    });
    __syncwarp();
    int bin;
    WarpHistPick(qs.hist, rest, bin, rest);
    count = static_cast<int>(qs.hist[bin]);
    prefix |= static_cast<unsigned>(bin) << shift;
    mask |= 255u << shift;
    shift -= 8;
    __syncwarp();  // the histogram is cleared again
  }
}

// The key of rank r (0 = smallest) among the 32-bit keys the block's T threads present:
// each_key(f) calls f(key) for every key of the calling thread. A radix select over a 256-bin
// shared histogram, one byte per round, starting at the highest bit where the keys differ (the
// keys' minimum and maximum come first: values of one magnitude share their leading bits, which
// would all fall in one bin). After max_rounds rounds the bits not yet resolved are set, giving
// an upper bound of the rank-r key instead (exact with max_rounds = 4). All threads must call it.
// With the exact key, tie_rank is r's rank among the keys equal to it. Known bounds of the keys
// spare their first pass. T = 32: one warp selects alone (WarpRadixBin run to the exact key; qs
// is the warp's own).
struct RadixPick {
  unsigned key;
  int tie_rank;
};
template <int T, typename EachKey>
__device__ RadixPick BlockRadixPick(int r, QmsShared& qs, EachKey&& each_key, int max_rounds = 4,
                                    KeyBounds bounds = {}) {
  static_assert(T % 32 == 0 && T <= 1024, "whole warps");
  if constexpr (T == 32) {
    unsigned prefix, mask;
    int rest, count;
    WarpRadixBin(r, 0, max_rounds, qs, each_key, prefix, mask, rest, count, bounds);
    return {prefix | ~mask, rest};
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  unsigned mn = bounds.lo, mx = bounds.hi;
  if (!bounds.known) {
    WarpKeyRange(each_key, mn, mx);
    if (lane == 0) {
      qs.warp_left[warp] = static_cast<int>(mn);
      qs.warp_right[warp] = static_cast<int>(mx);
    }
    __syncthreads();
    mn = 0xffffffffu;
    mx = 0;
    for (int w = 0; w < T / 32; ++w) {
      mn = min(mn, static_cast<unsigned>(qs.warp_left[w]));
      mx = max(mx, static_cast<unsigned>(qs.warp_right[w]));
    }
  }
  if (mn == mx) {  // one key value (or none): it is every rank's key
    __syncthreads();
    return {mn, r};
  }
  const int top = 31 - __clz(mn ^ mx);  // highest differing bit
  unsigned mask = top == 31 ? 0u : ~((2u << top) - 1u);
  unsigned prefix = mn & mask;
  int shift = top - 7;
  for (int round = 0; round < max_rounds && mask != 0xffffffffu; ++round) {
    if (shift < 0) shift = 0;  // the last byte; its bits above `top` are fixed already
    for (int i = threadIdx.x; i < 256; i += T) qs.hist[i] = 0;
    __syncthreads();
    each_key([&](unsigned key) {
      if ((key & mask) == prefix) atomicAdd(&qs.hist[(key >> shift) & 255u], 1u);
    });
    __syncthreads();
    if (warp == 0) {  // the first warp picks the bin for the block
      int bin, rest;
      WarpHistPick(qs.hist, r, bin, rest);
      if (lane == 0) {
        qs.sel_bin = bin;
        qs.sel_rank = rest;
      }
    }
    __syncthreads();
    prefix |= static_cast<unsigned>(qs.sel_bin) << shift;
    mask |= 255u << shift;
    r = qs.sel_rank;
    shift -= 8;
  }
  __syncthreads();  // hist, sel_* and the warp slots are reused
  return {prefix | ~mask, r};
}
template <int T, typename EachKey>
__device__ unsigned BlockRadixSelect(int r, QmsShared& qs, EachKey&& each_key,
                                     int max_rounds = 4) {
  return BlockRadixPick<T>(r, qs, each_key, max_rounds).key;
}

// The threshold word from the block's sample keys (see SamplePivot in quick_multiselect.cuh).
template <int T>
__device__ u64 PivotFromSample(const unsigned (&key)[kSamplePer], int rank, QmsShared& qs) {
  // Two rounds (16 bits below the keys' common prefix) give a bound above the rank's key that
  // admits a fraction of a percent more words; a bound in the NaN range admits everything.
  unsigned pivot_key = BlockRadixSelect<T>(
      rank, qs,
      [&](auto&& f) {
#pragma unroll
        for (int j = 0; j < kSamplePer; ++j) f(key[j]);
      },
      2);
  if (pivot_key > FloatKey(__int_as_float(0x7f800000))) pivot_key = 0xffffffffu;
  return Pack(pivot_key, 0xffffffffu);
}

// Upper bounds of the keys of ranks ra and rb (0-based, below the number of keys) among the
// 32-bit keys one warp presents (each_key as in BlockRadixSelect), from one pass over the keys'
// minimum and maximum and two radix rounds shared by both ranks: 16 bits from the keys' first
// differing bit down are resolved, the bits left are set (exact when that bit is bit 15 or
// lower; for the ordered bits of floats the bits left are low mantissa bits). qs.hist and hist_b
// (256 words of the warp's shared memory) are the histograms.
template <typename EachKey>
__device__ void WarpTwoRankBounds(int ra, int rb, QmsShared& qs, unsigned* hist_b,
                                  EachKey&& each_key, unsigned& va, unsigned& vb) {
  const int lane = threadIdx.x & 31;
  unsigned mn, mx;
  WarpKeyRange(each_key, mn, mx);
  if (mn == mx) {
    va = vb = mn;
    return;
  }
  const int top = 31 - __clz(mn ^ mx);  // highest differing bit; the bits above it are shared
  unsigned mask = top == 31 ? 0u : ~((2u << top) - 1u);
  const unsigned prefix = mn & mask;
  const int shift = top - 7 < 0 ? 0 : top - 7;
  for (int i = lane; i < 256; i += 32) qs.hist[i] = 0;
  __syncwarp();
  each_key([&](unsigned key) { atomicAdd(&qs.hist[(key >> shift) & 255u], 1u); });
  __syncwarp();
  int bin_a, rest_a, bin_b, rest_b;
  WarpHistPick(qs.hist, ra, bin_a, rest_a);
  if (rb == ra) {
    bin_b = bin_a;
    rest_b = rest_a;
  } else {
    WarpHistPick(qs.hist, rb, bin_b, rest_b);
  }
  const unsigned pa = prefix | (static_cast<unsigned>(bin_a) << shift);
  const unsigned pb = prefix | (static_cast<unsigned>(bin_b) << shift);
  mask |= 255u << shift;
  if (mask == 0xffffffffu) {  // every bit resolved in one round
    va = pa;
    vb = pb;
    __syncwarp();
    return;
  }
  const int shift2 = shift - 8 < 0 ? 0 : shift - 8;
  __syncwarp();
  for (int i = lane; i < 256; i += 32) {
    qs.hist[i] = 0;
    hist_b[i] = 0;
  }
  __syncwarp();
  each_key([&](unsigned key) {
    const unsigned p = key & mask;
    if (p == pa) atomicAdd(&qs.hist[(key >> shift2) & 255u], 1u);
    if (p == pb && pb != pa) atomicAdd(&hist_b[(key >> shift2) & 255u], 1u);
  });
  __syncwarp();
  WarpHistPick(qs.hist, rest_a, bin_a, rest_a);
  if (ra == rb) {
    bin_b = bin_a;
  } else {
    WarpHistPick(pb == pa ? qs.hist : hist_b, rest_b, bin_b, rest_b);
  }
  mask |= 255u << shift2;
  va = (pa | (static_cast<unsigned>(bin_a) << shift2)) | ~mask;
  vb = (pb | (static_cast<unsigned>(bin_b) << shift2)) | ~mask;
  __syncwarp();  // the histograms are free again
}

// Orders a and b ascending when up, descending otherwise.
__device__ __forceinline__ void CompareExchange(u64& a, u64& b, bool up) {
  if ((a > b) == up) {
    const u64 t = a;
    a = b;
    b = t;
  }
}

// Bitonic sort of the 32 * E words a warp holds in registers, lane-major (word lane * E + e is
// x[e]), ascending on return. Runs of up to E words are sorted inside each lane; each merge of
// longer runs exchanges across lanes by shuffles down to a stride of E words and finishes inside
// the lane, where every stage's direction is the lane's own. Most stages (40 of the 55 for
// 1024 words) then need no shuffle, and the merges are a loop, not unrolled, to keep the code
// small.
template <int E>
__device__ __forceinline__ void WarpSortRegisters(u64 (&x)[E]) {
  static_assert(E >= 2 && (E & (E - 1)) == 0, "a power of two");
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int size = 2; size <= E; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if ((e & stride) == 0) {
          CompareExchange(x[e], x[e + stride], size == E ? (lane & 1) == 0 : (e & size) == 0);
        }
      }
    }
  }
#pragma unroll 1
  for (int lanes = 2; lanes <= 32; lanes <<= 1) {  // runs of lanes * E words
    const bool up = lanes == 32 || (lane & lanes) == 0;
#pragma unroll 1
    for (int ls = lanes >> 1; ls > 0; ls >>= 1) {  // stride ls * E: the partner is lane ^ ls
      const bool keep_min = ((lane & ls) == 0) == up;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const u64 o = __shfl_xor_sync(kFullMask, x[e], ls);
        x[e] = (o < x[e]) == keep_min ? o : x[e];
      }
    }
#pragma unroll
    for (int stride = E >> 1; stride > 0; stride >>= 1) {
#pragma unroll
      for (int e = 0; e < E; ++e) {
        if ((e & stride) == 0) CompareExchange(x[e], x[e + stride], up);
      }
    }
  }
}

// With kRegs WarpSelectSorted sorts in registers (WarpSortRegisters, KB >= 64) and leaves its
// output padded: sorted word i at out[WarpSortedSlot<KB, kRegs>(i)], one spare word after every
// KB / 32 (a lane's run), so that each lane reads and writes its run without bank conflicts;
// without, it sorts through shared memory (BlockSortWords: twice the code, fully unrolled) and
// leaves the words in order. kRegs is the default above kWarpSortInShared; a caller may ask for
// it from KB = 64 on.
constexpr int kWarpSortInShared = 256;
template <int KB, bool kRegs = (KB > kWarpSortInShared)>
__host__ __device__ constexpr int WarpSortedRun() {  // words between spare slots; 0: none
  return kRegs ? KB / 32 : 0;
}
template <int KB, bool kRegs = (KB > kWarpSortInShared)>
__host__ __device__ constexpr int WarpSortedSlot(int i) {
  return WarpSortedRun<KB, kRegs>() > 0 ? i + i / WarpSortedRun<KB, kRegs>() : i;
}
template <int KB, bool kRegs = (KB > kWarpSortInShared)>
__host__ __device__ constexpr int WarpSortedWords() {
  return kRegs ? KB + 32 : KB;
}

// Calls f(any, i, w) for the n words load(0 .. n-1), word i on lane i % 32 (any: whether the
// warp's 32 indices include one below n; w is kSentinel past n). Every pass issues B loads a
// lane before using any (the words live in L2: one round trip per B words instead of one per
// word).
template <int B, typename Load, typename F>
__device__ __forceinline__ void WarpEachWord(int n, Load&& load, F&& f) {
  const int lane = threadIdx.x & 31;
  for (int i0 = 0; i0 < n; i0 += 32 * B) {
    u64 w[B];
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const int i = i0 + b * 32 + lane;
      w[b] = i < n ? load(i) : kSentinel;
    }
#pragma unroll
    for (int b = 0; b < B; ++b) f(i0 + b * 32 < n, i0 + b * 32 + lane, w[b]);
  }
}

// Leaves the k smallest of the n words load(0 .. n-1) (load may be called several times for an
// index) sorted ascending in out (this warp's shared memory, WarpSortedWords<KB>() words; word i
// at WarpSortedSlot<KB>(i)), padded with kSentinel. k <= KB; one warp, qs its own. Every pass
// over the words issues B loads a lane before using any (WarpEachWord); known bounds of the
// words' keys spare the pass that finds them.
// The rounds stop at a bin of at most 32 words (WarpRadixBin): one pass then gathers the words
// under it and the bin's own, and a 32-lane sort of the bin picks the last of the k. Against
// rounds down to the exact k-th key, a gather and, for a tied k-th key, a select over its
// columns, this saves one to three passes over the words: 1-5 % of quick multi-select's time on
// an H100 at every k from 32 to 1024 (bench/results/select.md "Radix rounds stopped at a bin of
// 32 words").
template <int KB, int B, bool kRegs = (KB > kWarpSortInShared), typename Load>
__device__ void WarpSelectSorted(int n, int k, Load&& load, QmsShared& qs, u64* out,
                                 KeyBounds bounds = {}) {
  static_assert(KB >= 32 && KB <= 1024, "KB / 32 words a lane, in registers");
  auto each_word = [&](auto&& f) { WarpEachWord<B>(n, load, f); };
  auto each_key = [&](auto&& f) {
    WarpEachWord<B>(n, load, [&](bool, int i, u64 w) {
      if (i < n) f(static_cast<unsigned>(w >> 32));
    });
  };
  constexpr int E = KB / 32;
  auto slot = [](int i) { return WarpSortedSlot<KB, kRegs>(i); };
  const int lane = threadIdx.x & 31;
  if (n <= KB) {  // few enough to sort them all
    for (int i = lane; i < KB; i += 32) out[slot(i)] = i < n ? load(i) : kSentinel;
  } else {
    const unsigned lt = LaneMaskLt();
    unsigned prefix, mask;
    int rest, count;
    WarpRadixBin(k - 1, 32, 4, qs, each_key, prefix, mask, rest, count, bounds);
    if (count <= 32) {
      // One more pass: the words under the bin go to out (in any order), the bin's to
      // bin_words; sorted by (key, column) there, the first rest + 1 complete the k, the words
      // of a tied k-th key cut at the right column with no second select.
      int m = 0, c = 0;
      each_word([&](bool any, int i, u64 w) {
        if (!any) return;  // warp-uniform: past the end for every lane
        const unsigned key = static_cast<unsigned>(w >> 32);
        const bool under = i < n && key < prefix;
        const bool in_bin = i < n && (key & mask) == prefix;
        const unsigned bu = __ballot_sync(kFullMask, under);
        const unsigned bb = __ballot_sync(kFullMask, in_bin);
        if (under) out[slot(m + __popc(bu & lt))] = w;
        if (in_bin) qs.bin_words[c + __popc(bb & lt)] = w;
        m += __popc(bu);
        c += __popc(bb);
      });
      __syncwarp();
      const u64 x = WarpBitonicSort(lane < count ? qs.bin_words[lane] : kSentinel);
      if (lane <= rest) out[slot(m + lane)] = x;
      for (int i = m + rest + 1 + lane; i < KB; i += 32) out[slot(i)] = kSentinel;
    } else {
      // Every bit resolved and still more than 32 words hold the k-th key (prefix): gather the
      // words up to (kth, col_max) into out (or only count those under kth).
      const unsigned kth = prefix;
      auto gather = [&](unsigned col_max, bool count_below) {
        int m = 0;
        each_word([&](bool any, int i, u64 w) {
          if (!any) return;  // warp-uniform: past the end for every lane
          const unsigned key = static_cast<unsigned>(w >> 32);
          const bool take =
              i < n && (count_below ? key < kth
                                    : key < kth || (key == kth &&
                                                    static_cast<unsigned>(w) <= col_max));
          const unsigned b = __ballot_sync(kFullMask, take);
          const int pos = m + __popc(b & lt);
          if (!count_below && take && pos < KB) out[slot(pos)] = w;
          m += __popc(b);
        });
        return m;
      };
      int m = gather(0xffffffffu, false);
      if (m > k) {
        // The k-th value is tied: of the words holding it, those of the lowest columns.
        const int below = gather(0, true);
        const unsigned col_max = BlockRadixSelect<32>(k - 1 - below, qs, [&](auto&& f) {
          each_word([&](bool, int i, u64 w) {
            if (i < n && static_cast<unsigned>(w >> 32) == kth) f(static_cast<unsigned>(w));
          });
        });
        m = gather(col_max, false);
      }
      for (int i = m + lane; i < KB; i += 32) out[slot(i)] = kSentinel;
    }
  }
  __syncwarp();
  if constexpr (kRegs) {
    u64 x[E];
#pragma unroll
    for (int e = 0; e < E; ++e) x[e] = out[lane * (E + 1) + e];
    WarpSortRegisters<E>(x);
#pragma unroll
    for (int e = 0; e < E; ++e) out[lane * (E + 1) + e] = x[e];
    __syncwarp();
  } else {
    BlockSortWords<32, E>(out, lane);
  }
}

// The same for a block of T = 256 threads: src[0, n) in shared memory, out[0, KB) (shared, not
// overlapping src) receives the k smallest sorted, padded with kSentinel. All threads must call.
template <int KB>
__device__ void BlockSelectSorted(const u64* src, int n, int k, QmsShared& qs, u64* out) {
  constexpr int T = 256;
  const unsigned lt = LaneMaskLt();
  if (n <= KB) {  // few enough to sort them all
    for (int i = threadIdx.x; i < KB; i += T) out[i] = i < n ? src[i] : kSentinel;
  } else {
    const unsigned kth = BlockRadixSelect<T>(k - 1, qs, [&](auto&& f) {
      for (int i = threadIdx.x; i < n; i += T) f(static_cast<unsigned>(src[i] >> 32));
    });
    // Gathers the words up to (kth, col_max) into out (or only counts those under kth).
    auto gather = [&](unsigned col_max, bool count_below) {
      if (threadIdx.x == 0) qs.less[0] = 0;
      __syncthreads();
      for (int i0 = 0; i0 < n; i0 += T) {
        const int i = i0 + threadIdx.x;
        const u64 w = i < n ? src[i] : kSentinel;
        const unsigned key = static_cast<unsigned>(w >> 32);
        const bool at_cut = key == kth && static_cast<unsigned>(w) <= col_max;
        const bool take = i < n && (count_below ? key < kth : key < kth || at_cut);
        const unsigned b = __ballot_sync(kFullMask, take);
        int first = 0;
        if ((threadIdx.x & 31) == 0 && b) first = atomicAdd(&qs.less[0], __popc(b));
        const int pos = __shfl_sync(kFullMask, first, 0) + __popc(b & lt);
        if (!count_below && take && pos < KB) out[pos] = w;
      }
      __syncthreads();
      const int m = qs.less[0];
      __syncthreads();
      return m;
    };
    int m = gather(0xffffffffu, false);
    if (m > k) {
      // The k-th value is tied: of the words holding it, those of the lowest columns.
      const int below = gather(0, true);
      const unsigned col_max = BlockRadixSelect<T>(k - 1 - below, qs, [&](auto&& f) {
        for (int i = threadIdx.x; i < n; i += T)
          if (static_cast<unsigned>(src[i] >> 32) == kth) f(static_cast<unsigned>(src[i]));
      });
      m = gather(col_max, false);
    }
    for (int i = m + threadIdx.x; i < KB; i += T) out[i] = kSentinel;
  }
  __syncthreads();
  if constexpr (KB >= T) {
    BlockSortWords<T, KB / T>(out);
  } else {
    BitonicSortRuns<T>(out, 1, KB, KB);
  }
}

}  // namespace fm::gpu::detail
