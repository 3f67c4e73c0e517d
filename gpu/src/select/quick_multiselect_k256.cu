// Quick multi-select instantiated for k <= 256.
#include "select/quick_multiselect.cuh"

namespace fm::gpu::detail {
template void LaunchQuickMultiSelect<256>(const SelectArgs&);
template bool QmsSplitSuits<256>(const SelectArgs&);
}  // namespace fm::gpu::detail
