// Merge queue instantiated for k <= 32.
#include "select/merge_queue.cuh"

namespace fm::gpu::detail {
template void LaunchMergeQueue<32>(const SelectArgs&);
}  // namespace fm::gpu::detail
