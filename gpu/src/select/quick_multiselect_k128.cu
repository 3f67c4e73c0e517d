// Quick multi-select instantiated for k <= 128.
#include "select/quick_multiselect.cuh"

namespace fm::gpu::detail {
template void LaunchQuickMultiSelect<128>(const SelectArgs&);
template bool QmsSplitSuits<128>(const SelectArgs&);
}  // namespace fm::gpu::detail
