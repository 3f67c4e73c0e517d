// Truncated bitonic sort (TBiS), one block per row.
//
// The row is read in tiles of kTile words. Each tile is cut into sublists of KB that are sorted
// with a bitonic sort; then sublists are merged pairwise by truncated bitonic merges that keep
// only the lower half, halving the tile each level until one sorted list of KB is left, which is
// merged the same way into the row's running result. The network is data-independent; the one
// data-dependent step is that a tile with no word below the running k-th word is skipped whole.
#pragma once

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

template <int KB>
void LaunchTbis(const SelectArgs& a) {
  constexpr int T = 256;
  using C = TbisConfig<KB, T>;
  auto kernel = TbisKernel<KB, T>;
  PrepareSharedMemory(kernel, C::kShared, a);
  LaunchPerRow(kernel, T, C::kShared, a);
}

}  // namespace fm::gpu::detail
