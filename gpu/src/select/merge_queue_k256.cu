// Merge queue instantiated for k <= 256.
#include "select/merge_queue.cuh"

namespace fm::gpu::detail {
template void LaunchMergeQueue<256>(const SelectArgs&);
}  // namespace fm::gpu::detail
