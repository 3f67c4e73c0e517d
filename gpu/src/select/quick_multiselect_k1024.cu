// Quick multi-select instantiated for k <= 1024.
#include "select/quick_multiselect.cuh"

namespace fm::gpu::detail {
template void LaunchQuickMultiSelect<1024>(const SelectArgs&);
template bool QmsSplitSuits<1024>(const SelectArgs&);
}  // namespace fm::gpu::detail
