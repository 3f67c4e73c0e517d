// Merge queue instantiated for k <= 512.
#include "select/merge_queue.cuh"

namespace fm::gpu::detail {
template void LaunchMergeQueue<512>(const SelectArgs&);
}  // namespace fm::gpu::detail
