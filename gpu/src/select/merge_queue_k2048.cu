// Merge queue instantiated for k <= 2048.
#include "select/merge_queue.cuh"

namespace fm::gpu::detail {
template void LaunchMergeQueue<2048>(const SelectArgs&);
}  // namespace fm::gpu::detail
