// Quick multi-select instantiated for k <= 2048.
#include "select/quick_multiselect.cuh"

namespace fm::gpu::detail {
template void LaunchQuickMultiSelect<2048>(const SelectArgs&);
template bool QmsSplitSuits<2048>(const SelectArgs&);
}  // namespace fm::gpu::detail
