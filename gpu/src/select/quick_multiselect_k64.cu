// Quick multi-select instantiated for k <= 64.
#include "select/quick_multiselect.cuh"

namespace fm::gpu::detail {
template void LaunchQuickMultiSelect<64>(const SelectArgs&);
template bool QmsSplitSuits<64>(const SelectArgs&);
}  // namespace fm::gpu::detail
