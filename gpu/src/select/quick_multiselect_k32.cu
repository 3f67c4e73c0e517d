// Quick multi-select instantiated for k <= 32.
#include "select/quick_multiselect.cuh"

namespace fm::gpu::detail {
template void LaunchQuickMultiSelect<32>(const SelectArgs&);
template bool QmsSplitSuits<32>(const SelectArgs&);
}  // namespace fm::gpu::detail
