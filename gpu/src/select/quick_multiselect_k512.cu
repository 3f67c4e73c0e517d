// Quick multi-select instantiated for k <= 512.
#include "select/quick_multiselect.cuh"

namespace fm::gpu::detail {
template void LaunchQuickMultiSelect<512>(const SelectArgs&);
template bool QmsSplitSuits<512>(const SelectArgs&);
}  // namespace fm::gpu::detail
