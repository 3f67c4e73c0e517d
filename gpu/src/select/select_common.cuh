// Pieces shared by every k-selection kernel: the order-preserving key, the packed (key, column)
// word every algorithm sorts, block-wide bitonic networks in shared memory, and the output step.
//
// Ordering. A float is mapped to a 32-bit unsigned key whose unsigned order is the float order:
// -0 is folded onto +0 (they compare equal as floats), every NaN maps to the largest key, so NaN
// sorts after +inf. The key goes in the high word and the column in the low word of a 64-bit
// word, so ordering the words orders by value, then by column: ties go to the lower column and
// all words of a row are distinct, which makes every algorithm's result unique and deterministic.
// kSentinel (all ones) is larger than every real word (columns are below 2^32 - 1); it pads
// missing slots and decodes to index -1, value +inf.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda_check.cuh"

namespace fm::gpu::detail {

using u64 = unsigned long long;

constexpr u64 kSentinel = ~0ull;
constexpr unsigned kFullMask = 0xffffffffu;
// Largest bucket of k the selection kernels are instantiated for; larger k use the fallback.
constexpr int kMaxSelectBucket = 2048;
// The bucket (a power of two from 32 up) whose kernels select k.
__host__ __device__ constexpr int SelectBucket(int64_t k) {
  int kb = 32;
  while (kb < k) kb *= 2;
  return kb;
}

// Everything a selection launch needs (device pointers, sizes, the stream).
struct SelectArgs {
  const float* distances = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;
  int k = 0;
  float* out_values = nullptr;
  int64_t* out_indices = nullptr;
  const int64_t* in_indices = nullptr;
  cudaStream_t stream = nullptr;
  int max_shared_bytes = 0;  // opt-in shared memory limit per block of the device
  int sms = 1;               // multiprocessors of the device
  int device = 0;            // the CUDA device the launches go to (current while they are made)
  double dram_bytes_per_us_sm = 0;  // the device's peak DRAM bandwidth over its SMs (0: unknown)
  // Long rows may be cut into `segments` pieces of seg_len columns (the last takes the rest);
  // launch row v is then piece v % segments of row v / segments (select_k.cu merges the pieces).
  int64_t segments = 1;
  int64_t seg_len = 0;
};

// One launch row: its data, length, first column and the source row it belongs to.
struct RowView {
  const float* p;
  int64_t cols;
  int64_t col0;
  int64_t src_row;
};

__host__ __device__ inline RowView GetRow(const SelectArgs& a, int64_t v) {
  if (a.segments == 1) return {a.distances + v * a.row_stride, a.cols, 0, v};
  const int64_t r = v / a.segments, s = v % a.segments;
  const int64_t c0 = s * a.seg_len;
  const int64_t n = s == a.segments - 1 ? a.cols - c0 : a.seg_len;
  return {a.distances + r * a.row_stride + c0, n, c0, r};
}

__host__ __device__ inline unsigned FloatKey(float v) {
  unsigned u;
#ifdef __CUDA_ARCH__
  u = __float_as_uint(v);
#else
  __builtin_memcpy(&u, &v, 4);
#endif
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;  // any NaN
  if (u == 0x80000000u) u = 0;                              // -0 -> +0
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// FloatKey of a value known not to be NaN (a word at or under a finite threshold): the same key,
// without the NaN test.
__device__ __forceinline__ unsigned NumberKey(float v) {
  const unsigned u = __float_as_uint(v);
  if (u == 0x80000000u) return u;  // -0 -> the key of +0
  return u ^ (static_cast<unsigned>(static_cast<int>(u) >> 31) | 0x80000000u);
}

// FloatKey without the NaN and -0 cases: the same order for every other value, -0 just under +0,
// NaNs of a set sign bit under -inf and the others above +inf.
__device__ __forceinline__ unsigned OrderKey(float v) {
  const unsigned u = __float_as_uint(v);
  return u ^ (static_cast<unsigned>(static_cast<int>(u) >> 31) | 0x80000000u);
}

__host__ __device__ inline float KeyToFloat(unsigned key) {
  unsigned u;
  if (key == 0xffffffffu) {
    u = 0x7fc00000u;  // canonical quiet NaN
  } else {
    u = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
  }
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
#endif
}

__host__ __device__ inline u64 Pack(unsigned key, int64_t col) {
  return (static_cast<u64>(key) << 32) | static_cast<u64>(static_cast<uint32_t>(col));
}

__device__ inline u64 MinU64(u64 a, u64 b) { return a < b ? a : b; }
__device__ inline u64 MaxU64(u64 a, u64 b) { return a < b ? b : a; }

__device__ inline unsigned LaneMaskLt() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

// The sum of v over this lane and the lanes below it. All 32 lanes must call it.
template <typename V>
__device__ __forceinline__ V WarpInclusiveSum(V v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const V t = __shfl_up_sync(kFullMask, v, o);
    if (lane >= o) v += t;
  }
  return v;
}

// The first of the slots a warp's lanes take for their `c` items each in a list whose fill is
// *counter: an inclusive scan of the counts and one atomic by the last lane. Every lane gets its
// own first slot. All 32 lanes must call it.
__device__ inline int WarpAppendSlots(int c, int* counter) {
  const int lane = threadIdx.x & 31;
  const int incl = WarpInclusiveSum(c);
  int first = 0;
  if (lane == 31) first = atomicAdd(counter, incl);
  return __shfl_sync(kFullMask, first, 31) + incl - c;
}

// One output slot from a sorted word: padding (the sentinel) becomes index -1 / +inf; a real
// word gives its value and its column (offset by col0), or the caller's index for that column.
__device__ inline void DecodeWord(const SelectArgs& a, u64 w, int64_t src_row, int64_t col0,
                                  float* value, int64_t* index) {
  if (w == kSentinel) {
    *value = __int_as_float(0x7f800000);
    *index = -1;
    return;
  }
  *value = KeyToFloat(static_cast<unsigned>(w >> 32));
  const int64_t col = col0 + static_cast<int64_t>(w & 0xffffffffull);
  *index = a.in_indices ? a.in_indices[src_row * a.row_stride + col] : col;
}

// Writes the first k words of `sorted` (ascending, shared memory) as row `row` of the output.
// T threads, this one being number tid. With kRun > 0 the words are padded by one after every
// kRun (word i at sorted[i + i / kRun], as WarpSelectSorted leaves them above 256 words).
template <int T, int kRun = 0>
__device__ void WriteRow(const SelectArgs& a, int64_t row, const u64* sorted,
                         int tid = threadIdx.x) {
  const RowView rv = GetRow(a, row);
  const int64_t out0 = row * static_cast<int64_t>(a.k);
  for (int i = tid; i < a.k; i += T) {
    DecodeWord(a, sorted[kRun > 0 ? i + i / kRun : i], rv.src_row, rv.col0,
               &a.out_values[out0 + i], &a.out_indices[out0 + i]);
  }
}

// ---- block-wide bitonic networks over shared memory -------------------------------------------
// Runs are `R` consecutive logical elements; run m starts at physical offset m * gap (gap >= R).
// All T threads of the block must call these; each ends with __syncthreads().

__device__ inline int RunPos(int logical, int R, int gap) {
  return (logical / R) * gap + (logical % R);
}

// Sorts each of the `nruns` runs of length R (a power of two) ascending.
template <int T>
__device__ void BitonicSortRuns(u64* a, int nruns, int R, int gap) {
  const int half = nruns * R / 2;
  for (int size = 2; size <= R; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int p = threadIdx.x; p < half; p += T) {
        const int i = ((p & ~(stride - 1)) << 1) | (p & (stride - 1));  // logical, i & stride == 0
        const int j = i + stride;
        const bool asc = (size == R) || ((i & size) == 0);
        const int pi = RunPos(i, R, gap), pj = RunPos(j, R, gap);
        const u64 x = a[pi], y = a[pj];
        if ((x > y) == asc) {
          a[pi] = y;
          a[pj] = x;
        }
      }
      __syncthreads();
    }
  }
}

// Each run of length R holds a bitonic sequence; turns each into an ascending run.
template <int T>
__device__ void BitonicMergeRuns(u64* a, int nruns, int R, int gap) {
  const int half = nruns * R / 2;
  for (int stride = R >> 1; stride > 0; stride >>= 1) {
    for (int p = threadIdx.x; p < half; p += T) {
      const int i = ((p & ~(stride - 1)) << 1) | (p & (stride - 1));
      const int pi = RunPos(i, R, gap), pj = RunPos(i + stride, R, gap);
      const u64 x = a[pi], y = a[pj];
      if (x > y) {
        a[pi] = y;
        a[pj] = x;
      }
    }
    __syncthreads();
  }
}

// The truncated merge of TBiS: `a` holds nruns sorted runs of length R, contiguous. Pairs of
// runs are merged keeping only the lower half (min of a[i] and the mirrored element of the
// partner run gives a bitonic sequence holding the R smallest of the pair), halving the data each
// level, until one sorted run of the R smallest sits at a[0, R).
template <int T>
__device__ void TruncatedMergeDown(u64* a, int nruns, int R) {
  int gap = R;
  while (nruns > 1) {
    const int pairs = nruns / 2;
    for (int p = threadIdx.x; p < pairs * R; p += T) {
      const int m = p / R, r = p % R;
      u64* lo = a + 2 * m * gap;
      u64* hi = lo + gap;
      lo[r] = MinU64(lo[r], hi[R - 1 - r]);
    }
    __syncthreads();
    gap *= 2;
    nruns = pairs;
    BitonicMergeRuns<T>(a, nruns, R, gap);
  }
}

// queue (sorted ascending, length R) := the R smallest of queue and run (sorted ascending).
template <int T>
__device__ void MergeIntoQueue(u64* queue, const u64* run, int R) {
  for (int i = threadIdx.x; i < R; i += T) queue[i] = MinU64(queue[i], run[R - 1 - i]);
  __syncthreads();
  BitonicMergeRuns<T>(queue, 1, R, R);
}

// Sorts the 32 words held one per lane ascending (lane 0 gets the smallest).
__device__ inline u64 WarpBitonicSort(u64 x) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int size = 2; size <= 32; size <<= 1) {
#pragma unroll
    for (int s = size >> 1; s > 0; s >>= 1) {
      const u64 o = __shfl_xor_sync(kFullMask, x, s);
      const bool asc = (lane & size) == 0;
      const bool lower = (lane & s) == 0;
      x = (lower == asc) ? MinU64(x, o) : MaxU64(x, o);
    }
  }
  return x;
}

// One compare-exchange step of a bitonic network over w[0, live) (the word of index i = j * 32 +
// lane in w[j]): each word against the one `s` indices away, ascending where up(i) holds. `s` and
// `live` are constants once the callers' loops are unrolled.
template <int E, typename Up>
__device__ __forceinline__ void WarpBitonicStep(u64 (&w)[E], int live, int s, int lane, Up up) {
  if (s >= 32) {
    const int d = s / 32;
#pragma unroll
    for (int j = 0; j < E; ++j) {
      if (j < live && (j & d) == 0) {
        const u64 lo = MinU64(w[j], w[j + d]), hi = MaxU64(w[j], w[j + d]);
        const bool asc = up(j * 32 + lane);
        w[j] = asc ? lo : hi;
        w[j + d] = asc ? hi : lo;
      }
    }
  } else {
    const bool lower = (lane & s) == 0;
#pragma unroll
    for (int j = 0; j < E; ++j) {
      if (j >= live) break;
      const u64 o = __shfl_xor_sync(kFullMask, w[j], s);
      w[j] = (lower == up(j * 32 + lane)) ? MinU64(w[j], o) : MaxU64(w[j], o);
    }
  }
}

// Each run of `run_regs` registers in w[0, live) (run_regs * 32 words, a bitonic sequence) merged
// ascending: the bitonic merge's steps from half the run's length down to neighbours.
template <int E>
__device__ __forceinline__ void WarpBitonicMergeUp(u64 (&w)[E], int live, int run_regs, int lane) {
#pragma unroll
  for (int s = run_regs * 16; s > 0; s >>= 1) {
    WarpBitonicStep(w, live, s, lane, [](int) { return true; });
  }
}

// Sorts the T * E words of a[] (shared memory) ascending with a bitonic network held in
// registers: thread t keeps words t*E .. t*E + E - 1; partners closer than E are in the same
// thread, closer than 32 E in the same warp (shuffles), farther ones go through a[] (two barriers
// a step). All T threads must call it (t: the caller's index; T = 32: one warp alone); ends with
// the sorted words in a[] and a barrier.
template <int T, int E>
__device__ void BlockSortWords(u64* a, int t = threadIdx.x) {
  constexpr int N = T * E;
  static_assert((N & (N - 1)) == 0 && (E & (E - 1)) == 0, "powers of two");
  u64 x[E];
#pragma unroll
  for (int e = 0; e < E; ++e) x[e] = a[t * E + e];
#pragma unroll
  for (int size = 2; size <= N; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      if (stride < E) {
#pragma unroll
        for (int e = 0; e < E; ++e) {
          if ((e & stride) == 0) {
            const bool asc = ((t * E + e) & size) == 0 || size == N;
            const u64 lo = x[e], hi = x[e + stride];
            if ((lo > hi) == asc) {
              x[e] = hi;
              x[e + stride] = lo;
            }
          }
        }
      } else if (stride < 32 * E) {
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const int i = t * E + e;
          const u64 o = __shfl_xor_sync(kFullMask, x[e], stride / E);
          const bool asc = (i & size) == 0 || size == N;
          x[e] = (((i & stride) == 0) == asc) ? MinU64(x[e], o) : MaxU64(x[e], o);
        }
      } else {
#pragma unroll
        for (int e = 0; e < E; ++e) a[t * E + e] = x[e];
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const int i = t * E + e;
          const u64 o = a[i ^ stride];
          const bool asc = (i & size) == 0 || size == N;
          x[e] = (((i & stride) == 0) == asc) ? MinU64(x[e], o) : MaxU64(x[e], o);
        }
        __syncthreads();
      }
    }
  }
#pragma unroll
  for (int e = 0; e < E; ++e) a[t * E + e] = x[e];
  if constexpr (T == 32) {
    __syncwarp();
  } else {
    __syncthreads();
  }
}

constexpr int NextPow2(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Programmatic dependent launch: a kernel launched by LaunchDependent may be scheduled while the
// kernel before it on the stream drains; it must call WaitPrimaryGrid() before it reads what that
// kernel wrote. AllowDependentGrid() lets the next such kernel be scheduled early. Both are no-ops
// for kernels launched the ordinary way and before sm_90.
__device__ inline void WaitPrimaryGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Orders this thread's memory operations before and after it at GPU scope, as the release or
// acquire side of a hand-off through a relaxed atomic (lighter than __threadfence's sequentially
// consistent fence).
__device__ inline void FenceAcqRelGpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
// Drops the L2 lines holding [p, p + bytes) (p 128-byte aligned; the caller owns the whole last
// line) without writing them back: for scratch no one reads again, its contents undefined after.
// Thread t of nt takes every nt-th line.
__device__ inline void DiscardL2(const void* p, int64_t bytes, int t, int nt) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const char* c = static_cast<const char*>(p);
  for (int64_t off = int64_t{t} * 128; off < bytes; off += int64_t{nt} * 128) {
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(c + off) : "memory");
  }
#endif
}
// Asks L2 to fetch `bytes` (a multiple of 16) from p (16-byte aligned) by one bulk prefetch; the
// caller goes on at once. A no-op before sm_90.
__device__ inline void PrefetchL2(const void* p, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// A 64-bit word published to other blocks of a running grid: stored with release semantics at
// GPU scope (everything the thread wrote before it is visible to a reader that acquires it), and
// loaded with acquire semantics.
__device__ inline void StoreReleaseGpu(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ inline unsigned long long LoadAcquireGpu(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ inline void AllowDependentGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

template <typename... KArgs, typename... Args>
void LaunchDependent(void (*kernel)(KArgs...), int64_t grid, int threads, std::size_t shmem,
                     cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cfg.dynamicSmemBytes = shmem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  FM_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...));
}

constexpr int kSamplePer = 8;  // sample words per thread (T = 256)

// The sample rank lambda + 4 sqrt(lambda) + 4 for k of cols from a sample of kSample words
// (lambda = k kSample / cols, the sample words expected under the k-th), whatever the row.
__host__ __device__ inline int SampleRankOf(int64_t cols, int k, int kSample) {
  const double lambda = static_cast<double>(k) * kSample / static_cast<double>(cols);
  return static_cast<int>(lambda + 4.0 * sqrt(lambda) + 4.0);
}

// The sample rank for k of cols from a sample of kSample words, or -1 when the row is too short
// to sample.
__host__ __device__ inline int SampleRank(int64_t cols, int k, int kSample = kSamplePer * 256) {
  const int rank = SampleRankOf(cols, k, kSample);
  if (cols < kSample || cols < 8 * static_cast<int64_t>(k) || rank >= kSample / 2) return -1;
  return rank;
}

// Survivors the row-parallel quick multi-select keeps per row for bucket KB.
constexpr int QmsSurvivorCap(int kb) { return kb <= 256 ? 2048 : 4 * kb > 4096 ? 4 * kb : 4096; }

// Words in the pivot sample of the row-parallel quick multi-select: 1024 on rows of up to 32768
// columns for k <= 512 with cols * k <= 2^23, and for 256 < k <= 1024 from 16384 columns on
// (survivors of 6 bytes there), where the pivot pass weighs most and the survivors the smaller
// sample adds cost less than its read saves; 2048 elsewhere (A/B on the H100,
// bench/results/select.md "Pivot sample" and "Survivor columns in 16 bits").
__host__ __device__ inline int QmsSplitSample(int64_t cols, int64_t k) {
  if (cols > 32768) return 2048;
  if (k <= 512 && cols * k <= (int64_t{1} << 23)) return 1024;
  return k > 256 && k <= 1024 && cols >= 16384 ? 1024 : 2048;
}

// The row words a sampled pivot leaves, six standard deviations up, when `mean` of its sample's
// `sample` words fall under it (the count's spread sqrt(mean), scaled to the row's cols): the
// bound every survivor list is sized or checked against.
__host__ __device__ inline double SixSigmaSurvivors(int64_t cols, int sample, double mean) {
  return (mean + 6.0 * sqrt(mean)) * static_cast<double>(cols) / sample;
}

// Survivors kept per row by the row-parallel quick multi-select: the bucket's cap
// (QmsSurvivorCap), or, for k <= 1024 (whose finishes read any number of them) where that is
// short of six standard deviations above the expected survivors, the power of two above it, up
// to kLongCap words. The row words under the sample word of rank r number about
// (r + 1) x cols / sample, with a relative spread of 1 / sqrt(r + 1): on rows of 2^20 columns
// (r = 5-11) twice the mean overflowed 2 % of the rows at k = 256, each such row then selected
// again by one block. The shorter rows of the benchmark grid keep the bucket's cap (a larger one
// splits 8192 rows into two batches at k = 1024).
constexpr int kLongCap = 16384;
__host__ __device__ inline int QmsSplitCap(int64_t cols, int64_t k) {
  const int kb = SelectBucket(k);
  int cap = QmsSurvivorCap(kb);
  if (kb > 1024) return cap;
  const int sample = QmsSplitSample(cols, k);
  const int rank = SampleRank(cols, static_cast<int>(k), sample);
  if (rank < 0) return cap;
  const double mean = rank + 1.0;
  const double need = SixSigmaSurvivors(cols, sample, mean);
  while (cap < kLongCap && cap < need) cap *= 2;
  return cap;
}

// The longest rows quick multi-select's fused filter-and-finish kernel takes (its survivor
// list keeps 16-bit columns).
constexpr int64_t kBlockRowMaxCols = 65536;
// The words of the fused kernel's pivot sample on rows of up to 16384 columns (QmsBlockRowSample):
// shorter rows cannot draw it, and quick multi-select then selects each row by one block.
constexpr int kBlockRowSample = 512;

// Whether rows of `cols` suit the row-parallel quick multi-select for k: long enough to sample,
// and a sampled pivot expected to leave at most half the survivor list (QmsSplitCap; the
// expected survivors are the pivot's sample rank times cols / the sample's size).
__host__ __device__ inline bool QmsRowParallelFits(int64_t cols, int64_t k) {
  if (k > kMaxSelectBucket) return false;
  const int sample = QmsSplitSample(cols, k);
  const int rank = SampleRank(cols, static_cast<int>(k), sample);
  if (rank < 0) return false;
  return static_cast<double>(rank) * static_cast<double>(cols) / sample <= QmsSplitCap(cols, k) / 2;
}

// What a launch asks the runtime of a kernel, asked once per device and kept (select_k.cu): a
// small selection runs in a few microseconds, and the runtime's answers to these took about as
// long; on an idle stream the time before the first launch adds to the call. (The kernels'
// attributes belong to the device's context: a context torn down by cudaDeviceReset would need
// them set again.)
// Raises kernel's dynamic shared memory limit on `device` to at least `bytes` (unlike
// SetMaxDynamicShared in cuda_check.cuh, one fixed size a call site, the size here may grow
// with the shape: the resident path's depends on the row length).
void RaiseSharedLimit(const void* kernel, int bytes, int device);
// Blocks of the kernel an SM of `device` holds at once (the runtime's occupancy calculator).
int CachedBlocksPerSm(const void* kernel, int threads, int shmem, int device);

// Sets the kernel's dynamic shared memory limit and checks it fits the device.
template <typename Kernel>
void PrepareSharedMemory(Kernel kernel, int bytes, const SelectArgs& a) {
  if (bytes > a.max_shared_bytes) {
    throw GpuError("select_k: kernel needs " + std::to_string(bytes) +
                   " bytes of shared memory, the device allows " +
                   std::to_string(a.max_shared_bytes));
  }
  RaiseSharedLimit(reinterpret_cast<const void*>(kernel), bytes, a.device);
}

// Blocks of `threads` threads and `shmem` bytes of dynamic shared memory an SM of a.device holds.
template <typename Kernel>
int BlocksPerSm(Kernel kernel, int threads, int shmem, const SelectArgs& a) {
  return CachedBlocksPerSm(reinterpret_cast<const void*>(kernel), threads, shmem, a.device);
}

// Launches kernel<<<rows, T, shmem>>>(args, row0) over all rows, 2^30 rows per launch.
template <typename Kernel>
void LaunchPerRow(Kernel kernel, int threads, int shmem, const SelectArgs& a) {
  constexpr int64_t kMaxGrid = int64_t{1} << 30;
  for (int64_t row0 = 0; row0 < a.rows; row0 += kMaxGrid) {
    const int64_t n = a.rows - row0 < kMaxGrid ? a.rows - row0 : kMaxGrid;
    kernel<<<static_cast<unsigned>(n), threads, shmem, a.stream>>>(a, row0);
    FM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace fm::gpu::detail
