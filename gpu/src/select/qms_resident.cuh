// Quick multi-select for many short rows and small k, each row held whole in shared memory.
//
// The row-parallel path (quick_multiselect.cuh) draws every row's pivot from a 2048-word sample
// read from DRAM in a launch of its own: on rows of 8192 columns that is a quarter more traffic.
// A row of up to kResidentMaxCols columns fits in a block's shared memory, so here the sample is
// taken from the copy already there. A block (256 threads) works through rows gridDim.x apart:
//   1. the row arrives by one bulk copy (cp.async per thread for a row off a 16-byte boundary);
//   2. the block draws the pivot from the same 32 runs of 64 words, at the same sample rank, as
//      the streamed paths (SamplePivot);
//   3. one pass over the row appends the words under the pivot to a survivor list (per 32 words
//      a thread: float compares into a mask, a scan of the lanes' counts, one shared atomic);
//   4. the next row's copy is issued, and one warp selects the k smallest survivors (radix
//      select of the k-th key, ballot gather, bitonic sort: WarpSelectSorted) while it is in
//      flight; the other warps wait for it at the top of the loop.
// One launch, the matrix read once. A row whose pivot fell under its k-th word, or that leaves
// more survivors than the list holds (ties everywhere), is selected from the whole row in shared
// memory instead: slower, still exact.
// Measured against the row-parallel path in one call (bench/results/select.md), 8192 rows on an
// H100: k = 32 gains 17 % at 8192 columns and 9 % at 16384 (equal at 12288); k = 64 gains 8 % and
// 6 % but loses 8 % at 12288 columns, and k = 128 loses, so only k <= 32 comes here. Above, the
// one-warp finish of a few hundred survivors is too long a chain for the three to five rows an
// SM holds; a block-wide finish (measured too) costs more in barriers than the sample saves.
// (Those gains were against the row-parallel path of then; against today's, 16384 columns lose:
// see kResidentMinBlocks.)
#pragma once

#include <algorithm>

#include "async_copy.cuh"
#include "select/select_common.cuh"
#include "select/select_sorted.cuh"

namespace fm::gpu::detail {

constexpr int64_t kResidentMaxCols = 16384;  // 64 KiB a row
constexpr int kResidentMaxBucket = 32;

template <int KB>
struct QmsResidentConfig {
  static constexpr int kThreads = 256;
  static constexpr int kCap = 1024;  // survivors kept per row
  // Survivors, the sorted k, then the row (cols + 4 floats: a row that starts off a 16-byte
  // boundary is placed at the same offset from one).
  static int Shared(int64_t cols) {
    return (kCap + KB) * 8 + static_cast<int>((cols + 4 + 3) / 4 * 16);
  }
};

// Whether rows of `cols` suit the resident path for k <= KB: short enough to fit, long enough to
// sample, and a sampled pivot expected to leave at most half the survivor list.
template <int KB>
__host__ __device__ inline bool QmsResidentFits(int64_t cols, int64_t k) {
  if (KB > kResidentMaxBucket || cols > kResidentMaxCols) return false;
  const int rank = SampleRank(cols, static_cast<int>(k));
  if (rank < 0) return false;
  return static_cast<double>(rank) * static_cast<double>(cols) / (kSamplePer * 256) <=
         QmsResidentConfig<KB>::kCap / 2;
}

// The row's offset from a 16-byte boundary, in words.
__device__ __forceinline__ int WordsOffAligned(const float* p) {
  return static_cast<int>((reinterpret_cast<uintptr_t>(p) >> 2) & 3u);
}

// Issues the copies of the `cols` words at rp into buf (16-byte aligned shared memory): word j
// lands at buf[q + j], q = WordsOffAligned(rp), so every whole aligned float4 is one 16-byte copy
// and the at most six words at the ends go by 4-byte copies. One commit group per thread.
template <int T>
__device__ void IssueRowCopy(const float* rp, int cols, float* buf) {
  const int q = WordsOffAligned(rp);
  const int groups = (q + cols + 3) / 4;
  for (int g = threadIdx.x; g < groups; g += T) {
    const int j0 = 4 * g - q;
    if (j0 >= 0 && j0 + 4 <= cols) {
      CpAsync16(buf + 4 * g, rp + j0, 16);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = j0 + e;
        if (j >= 0 && j < cols) CpAsync4(buf + 4 * g + e, rp + j);
      }
    }
  }
  CpAsyncCommit();
}

template <int KB>
__global__ void __launch_bounds__(256, 4) QmsResidentKernel(SelectArgs a) {
  using C = QmsResidentConfig<KB>;
  constexpr int T = C::kThreads;
  extern __shared__ u64 smem[];
  u64* cand = smem;
  u64* out = smem + C::kCap;
  float* buf = reinterpret_cast<float*>(smem + C::kCap + KB);
  __shared__ QmsShared qs;
  __shared__ int counts[2];  // survivors of the rows taken at even and odd steps
  __shared__ uint64_t bar;  // completes when a row brought by one bulk copy has arrived
  const int cols = static_cast<int>(a.cols);
  const int k = a.k;
  const int rank = SampleRank(cols, k);
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  auto row_ptr = [&](int64_t r) { return a.distances + r * a.row_stride; };
  // A row that starts on a 16-byte boundary and is a multiple of 16 bytes long arrives by one
  // bulk copy issued by thread 0; any other by every thread's cp.async.
  auto by_bulk = [&](int64_t r) {
    return BulkCopyAvailable() && WordsOffAligned(row_ptr(r)) == 0 && (cols & 3) == 0;
  };
  auto issue = [&](int64_t r) {
    if (by_bulk(r)) {
      if (threadIdx.x == 0) BulkCopyArrive(buf, row_ptr(r), cols * 4, &bar);
    } else {
      IssueRowCopy<T>(row_ptr(r), cols, buf);
    }
  };
  if (threadIdx.x == 0) {
    MbarInit(&bar, 1);
    counts[0] = counts[1] = 0;
  }
  __syncthreads();
  int phase = 0, step = 0;
  int64_t row = blockIdx.x;
  if (row < a.rows) issue(row);
  while (row < a.rows) {
    const int64_t next = row + gridDim.x;
    const int q = WordsOffAligned(row_ptr(row));
    const float* r = buf + q;
    int* count = &counts[step & 1];
    if (by_bulk(row)) {
      MbarWait(&bar, phase);
      phase ^= 1;
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();  // the row is in shared memory; every thread has read the last row's count
    // The next row's counter is cleared here, not at the next top: a warp may still be reading
    // this one's when warp 0, done with its finish, gets there.
    if (threadIdx.x == 0) counts[(step + 1) & 1] = 0;
    // The pivot: a bound just above the sample word of rank `rank` (kSentinel: every word).
    u64 thr = kSentinel;
    if (rank >= 0) {
      const int p = (threadIdx.x / 8) * (cols / (T / 8)) / kSamplePer * kSamplePer +
                    (threadIdx.x % 8) * kSamplePer;
      unsigned key[kSamplePer];
#pragma unroll
      for (int j = 0; j < kSamplePer; ++j) key[j] = FloatKey(r[p + j]);
      thr = PivotFromSample<T>(key, rank, qs);
    }
    // The words whose value is at most the pivot's, appended to cand in any order: each thread
    // tests U float4 (a 32-bit mask), then one scan and one shared atomic per warp. Rows that
    // start on a 16-byte boundary with a length a multiple of 4 take float compares without
    // bounds checks; the others (and a pivot that admits everything, NaN included) compare keys.
    constexpr int U = 8;
    const unsigned thr_key = static_cast<unsigned>(thr >> 32);
    const float thr_f = KeyToFloat(thr_key);
    const bool fast = q == 0 && (cols & 3) == 0 && thr_key != 0xffffffffu;
    for (int c0 = 0; c0 < cols; c0 += T * 4 * U) {
      unsigned bits = 0;
      if (fast) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int j = c0 + (u * T + static_cast<int>(threadIdx.x)) * 4;
          if (j < cols) {
            const float4 v = *reinterpret_cast<const float4*>(r + j);
            bits |= (v.x <= thr_f ? 1u : 0u) << (4 * u);
            bits |= (v.y <= thr_f ? 1u : 0u) << (4 * u + 1);
            bits |= (v.z <= thr_f ? 1u : 0u) << (4 * u + 2);
            bits |= (v.w <= thr_f ? 1u : 0u) << (4 * u + 3);
          }
        }
      } else {
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int j = c0 + (u * T + static_cast<int>(threadIdx.x)) * 4 + e;
            if (j < cols && FloatKey(r[j]) <= thr_key) bits |= 1u << (4 * u + e);
          }
        }
      }
      if (!__any_sync(kFullMask, bits != 0)) continue;
      int pos = WarpAppendSlots(__popc(bits), count);
      while (bits) {
        const int b = __ffs(bits) - 1;
        bits &= bits - 1;
        const int j = c0 + ((b >> 2) * T + static_cast<int>(threadIdx.x)) * 4 + (b & 3);
        if (pos < C::kCap) cand[pos] = Pack(FloatKey(r[j]), j);
        ++pos;
      }
    }
    __syncthreads();  // the survivors are in cand
    const int n = *count;
    const bool whole = n < k || n > C::kCap;
    // The buffer is free for the next row, unless this one must be selected from it whole.
    if (!whole && next < a.rows) issue(next);
    if (warp == 0) {
      if (!whole) {
        WarpSelectSorted<KB, 4>(n, k, [&](int i) { return cand[i]; }, qs, out);
      } else {
        WarpSelectSorted<KB, 4>(
            cols, k, [&](int i) { return Pack(FloatKey(r[i]), i); }, qs, out);
      }
      WriteRow<32>(a, row, out, lane);
    }
    if (whole) {
      __syncthreads();  // warp 0 is done with the row
      if (next < a.rows) issue(next);
    }
    row = next;
    ++step;
  }
}

// Blocks of the resident kernel an SM holds for rows of `shmem` bytes of shared memory (its
// attribute set for them).
template <int KB>
int QmsResidentBlocksPerSm(int shmem, const SelectArgs& a) {
  auto kernel = QmsResidentKernel<KB>;
  PrepareSharedMemory(kernel, shmem, a);
  const int per_sm = BlocksPerSm(kernel, QmsResidentConfig<KB>::kThreads, shmem, a);
  return per_sm < 1 ? 1 : per_sm;
}

// A block's row copy is the only load it has in flight, so the SM's blocks together must hold
// enough of the memory pipe: their rows' bytes at least kResidentInFlightUs of the SM's share of
// the DRAM bandwidth. (Measured, bench/results/select.md "Row held in shared memory or row-
// parallel": on an H100, 25 KB/us an SM, the resident path won with 5 rows of 32 KiB or 3 of
// 64 KiB in flight and lost with 3 of 48 KiB, 5 of 16 KiB or 5 of 8 KiB; on an H200, 36 KB/us an
// SM, it lost with 5 x 32 and 3 x 64 KiB.) Since the row-parallel path's survivors are stored
// by the warp together and its first pieces are prefetched, three rows of 64 KiB (16384 columns)
// lose as well on an H100 (k = 16 / 32: 3.3 / 5.4 % slower than row-parallel; 8192 columns, five
// blocks: k = 1 3.4 % faster, k = 16 / 32 within the noise; bench/results/select.md "Survivors
// stored together, first piece early"): the SM must also hold kResidentMinBlocks of them.
constexpr double kResidentInFlightUs = 6.0;
constexpr int kResidentMinBlocks = 4;

// Whether the resident path takes the launch.
template <int KB>
bool QmsResidentSuits(const SelectArgs& a) {
  const int shmem = QmsResidentConfig<KB>::Shared(a.cols);
  if (a.segments != 1 || a.rows < 2 || !QmsResidentFits<KB>(a.cols, a.k) ||
      shmem > a.max_shared_bytes) {
    return false;
  }
  const int per_sm = QmsResidentBlocksPerSm<KB>(shmem, a);
  return per_sm >= kResidentMinBlocks &&
         static_cast<double>(per_sm) * static_cast<double>(a.cols) * 4.0 >=
             kResidentInFlightUs * a.dram_bytes_per_us_sm;
}

// One block per SM slot (as many as its shared memory allows), each taking every gridDim.x-th row.
template <int KB>
void LaunchQmsResident(const SelectArgs& a) {
  using C = QmsResidentConfig<KB>;
  const int shmem = C::Shared(a.cols);
  const int per_sm = QmsResidentBlocksPerSm<KB>(shmem, a);
  const int64_t grid = std::min<int64_t>(a.rows, static_cast<int64_t>(a.sms) * per_sm);
  QmsResidentKernel<KB><<<static_cast<unsigned>(grid), C::kThreads, shmem, a.stream>>>(a);
  FM_CUDA_CHECK_LAUNCH();
}

}  // namespace fm::gpu::detail
