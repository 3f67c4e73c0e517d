// Merge queue instantiated for k <= 1024.
#include "select/merge_queue.cuh"

namespace fm::gpu::detail {
template void LaunchMergeQueue<1024>(const SelectArgs&);
}  // namespace fm::gpu::detail
