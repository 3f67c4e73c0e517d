// Merge queue instantiated for k <= 64.
#include "select/merge_queue.cuh"

namespace fm::gpu::detail {
template void LaunchMergeQueue<64>(const SelectArgs&);
}  // namespace fm::gpu::detail
