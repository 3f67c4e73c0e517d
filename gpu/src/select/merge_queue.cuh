// Merge queue k-selection with buffered search and hierarchical partition, one block per row
// (used above kMaxWarpMergeQueue; smaller k run one warp per row, see warp_merge_queue.cuh).
//
// The queue holds the KB smallest words seen so far, sorted ascending in shared memory; its k-th
// word is the threshold of the buffered search (select_stream.cuh), whose per-group minima prune
// the row top-down. When the candidate buffer fills, the block merges it into the queue level by
// level with bitonic networks: the buffer is cut into sorted runs of KB (bitonic sort), runs are
// merged pairwise keeping the lower half (so each level halves the data), and the surviving run
// is merged into the queue with a reverse bitonic merge (min of the queue and the mirrored run,
// then a bitonic merge). Lazy update: the queue is touched only when a buffer is full.
#pragma once

#include "select/select_common.cuh"
#include "select/select_launch.cuh"
#include "select/select_stream.cuh"
#include "select/warp_merge_queue.cuh"

namespace fm::gpu::detail {

template <int KB, int T, int U>
struct MergeQueueConfig {
  static constexpr int kChunk = T * 4 * U;
  static constexpr int kBuf = NextPow2(KB + kChunk);  // sorted in runs of KB at a flush
  static constexpr int kFlushAt = kBuf - kChunk;
  static constexpr int kShared = (kBuf + KB) * 8;
};

template <int KB, int T, int U>
__global__ void __launch_bounds__(T, 3) MergeQueueKernel(SelectArgs a, int64_t row0) {
  using C = MergeQueueConfig<KB, T, U>;
  extern __shared__ u64 smem[];
  u64* queue = smem;
  u64* buf = smem + KB;
  __shared__ StreamShared ss;
  const int64_t row = row0 + blockIdx.x;
  for (int i = threadIdx.x; i < KB; i += T) queue[i] = kSentinel;
  if (threadIdx.x == 0) {
    ss.count[0] = ss.count[1] = ss.count[2] = 0;
    ss.threshold = kSentinel;
  }
  __syncthreads();

  auto flush = [&](int n) {
    const int p = NextPow2(n < KB ? KB : n);
    for (int i = n + threadIdx.x; i < p; i += T) buf[i] = kSentinel;
    __syncthreads();
    BitonicSortRuns<T>(buf, p / KB, KB, KB);
    TruncatedMergeDown<T>(buf, p / KB, KB);
    MergeIntoQueue<T>(queue, buf, KB);
    if (threadIdx.x == 0) ss.threshold = queue[a.k - 1];
    __syncthreads();
    return 0;
  };
  const int n = StreamRow<T, U>(a, row, buf, 0, C::kFlushAt, ss, flush);
  if (n > 0) flush(n);
  WriteRow<T>(a, row, queue);
}

// k <= 1024: one warp per row (warp_merge_queue.cuh); larger buckets: one block per row.
template <int KB>
void LaunchMergeQueue(const SelectArgs& a) {
  if constexpr (KB <= kMaxWarpMergeQueue) {
    LaunchWarpMergeQueue<KB>(a);
  } else {
    constexpr int T = 256, U = 4;
    using C = MergeQueueConfig<KB, T, U>;
    auto kernel = MergeQueueKernel<KB, T, U>;
    PrepareSharedMemory(kernel, C::kShared, a);
    LaunchPerRow(kernel, T, C::kShared, a);
  }
}

}  // namespace fm::gpu::detail
