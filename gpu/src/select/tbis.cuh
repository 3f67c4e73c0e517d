// Truncated bitonic sort (TBiS), one block per row.
//
// The row is read in tiles of kTile words. Each tile is cut into sublists of KB that are sorted
// with a bitonic sort; then sublists are merged pairwise by truncated bitonic merges that keep
// only the lower half, halving the tile each level until one sorted list of KB is left, which is
// merged the same way into the row's running result. The network is data-independent; the one
// data-dependent step is that a tile with no word below the running k-th word is skipped whole.
#pragma once

#include <algorithm>

#include "select/select_common.cuh"
#include "select/select_launch.cuh"

namespace fm::gpu::detail {

template <int KB, int T>
struct TbisConfig {
  static constexpr int kTile = KB * 2 > 2048 ? KB * 2 : 2048;
  static constexpr int kShared = (kTile + KB) * 8;
};

template <int KB, int T>
__global__ void __launch_bounds__(T) TbisKernel(SelectArgs a, int64_t row0) {
  using C = TbisConfig<KB, T>;
  extern __shared__ u64 smem[];
  u64* result = smem;
  u64* tile = smem + KB;
  const int64_t row = row0 + blockIdx.x;
  const RowView rv = GetRow(a, row);
  const float* rp = rv.p;
  for (int i = threadIdx.x; i < KB; i += T) result[i] = kSentinel;
  u64 thr = kSentinel;
  for (int64_t base = 0; base < rv.cols; base += C::kTile) {
    bool any = false;
    for (int i = threadIdx.x; i < C::kTile; i += T) {
      const int64_t c = base + i;
      const u64 w = c < rv.cols ? Pack(FloatKey(__ldcs(rp + c)), c) : kSentinel;
      any |= w < thr;
      tile[i] = w;
    }
    if (!__syncthreads_or(any)) continue;  // nothing in this tile can enter the result
    BitonicSortRuns<T>(tile, C::kTile / KB, KB, KB);
    TruncatedMergeDown<T>(tile, C::kTile / KB, KB);
    MergeIntoQueue<T>(result, tile, KB);
    thr = result[a.k - 1];
  }
  __syncthreads();
  WriteRow<T>(a, row, result);
}

// Rows of up to kTbisWarpMaxCols columns: one warp a row, the row in registers (word j * 32 + lane
// in w[j] of that lane, padded with the sentinel to 32 E words, E a power of two), and the same
// network without shared memory or barriers. Runs of KB words (KB / 32 registers of every lane)
// are sorted by a bitonic network, partners under 32 words apart exchanged by shuffles and the
// others within a lane; then pairs of runs are merged keeping the lower half, which halves the
// registers in use each level, until the KB smallest are left in w[0, KB / 32).
constexpr int kTbisWarpMaxCols = 512;
constexpr int kTbisWarpThreads = 128;  // four rows in flight a block

template <int KB, int E>
__global__ void __launch_bounds__(kTbisWarpThreads) TbisWarpKernel(SelectArgs a) {
  static_assert(KB >= 32 && 32 * E >= KB, "a run of KB words spans whole registers");
  constexpr int C = KB / 32;  // registers a run takes in every lane
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
       row < a.rows; row += warps) {
    const RowView rv = GetRow(a, row);
    u64 w[E];
#pragma unroll
    for (int j = 0; j < E; ++j) {
      const int c = j * 32 + lane;
      w[j] = c < rv.cols ? Pack(FloatKey(__ldcs(rv.p + c)), c) : kSentinel;
    }
    // Every run of KB sorted ascending (the direction alternates below the run's length).
#pragma unroll
    for (int size = 2; size <= KB; size <<= 1) {
#pragma unroll
      for (int s = size >> 1; s > 0; s >>= 1) {
        WarpBitonicStep(w, E, s, lane, [&](int i) { return size == KB || (i & size) == 0; });
      }
    }
    // Truncated merges: run m of the next level is the lower half of runs 2m and 2m + 1 (the
    // minimum of each word and its mirror in the partner run, a bitonic sequence), merged.
#pragma unroll
    for (int runs = E / C; runs > 1; runs >>= 1) {
#pragma unroll
      for (int m = 0; m < runs / 2; ++m) {
#pragma unroll
        for (int t = 0; t < C; ++t) {
          const u64 mirror = __shfl_sync(kFullMask, w[(2 * m + 1) * C + C - 1 - t], 31 - lane);
          w[m * C + t] = MinU64(w[2 * m * C + t], mirror);
        }
      }
      WarpBitonicMergeUp(w, runs / 2 * C, C, lane);
    }
    const int64_t out0 = row * static_cast<int64_t>(a.k);
#pragma unroll
    for (int j = 0; j < C; ++j) {
      const int i = j * 32 + lane;
      if (i < a.k) {
        DecodeWord(a, w[j], rv.src_row, rv.col0, &a.out_values[out0 + i],
                   &a.out_indices[out0 + i]);
      }
    }
  }
}

template <int KB, int E>
void LaunchTbisWarp(const SelectArgs& a) {
  if constexpr (32 * E < KB) {
    LaunchTbisWarp<KB, KB / 32>(a);
  } else {
    constexpr int kWarps = kTbisWarpThreads / 32;
    auto kernel = TbisWarpKernel<KB, E>;
    // As many blocks as the device holds at once, at most a row a warp; warps past them take
    // further rows in turn.
    const int64_t resident =
        static_cast<int64_t>(std::max(BlocksPerSm(kernel, kTbisWarpThreads, 0, a), 1)) * a.sms;
    const int64_t blocks = std::min((a.rows + kWarps - 1) / kWarps, resident);
    kernel<<<static_cast<unsigned>(blocks), kTbisWarpThreads, 0, a.stream>>>(a);
    FM_CUDA_CHECK_LAUNCH();
  }
}

template <int KB>
void LaunchTbis(const SelectArgs& a) {
  if constexpr (KB <= kTbisWarpMaxCols) {
    if (a.segments == 1 && a.cols <= kTbisWarpMaxCols) {
      const int64_t n = a.cols > KB ? a.cols : KB;  // the row padded to whole runs
      if (n <= 32) return LaunchTbisWarp<KB, 1>(a);
      if (n <= 64) return LaunchTbisWarp<KB, 2>(a);
      if (n <= 128) return LaunchTbisWarp<KB, 4>(a);
      if (n <= 256) return LaunchTbisWarp<KB, 8>(a);
      return LaunchTbisWarp<KB, 16>(a);
    }
  }
  constexpr int T = 256;
  using C = TbisConfig<KB, T>;
  auto kernel = TbisKernel<KB, T>;
  PrepareSharedMemory(kernel, C::kShared, a);
  LaunchPerRow(kernel, T, C::kShared, a);
}

}  // namespace fm::gpu::detail
