// Merge queue instantiated for k <= 128.
#include "select/merge_queue.cuh"

namespace fm::gpu::detail {
template void LaunchMergeQueue<128>(const SelectArgs&);
}  // namespace fm::gpu::detail
