// TBiS instantiated for k <= 32.
#include "select/tbis.cuh"

namespace fm::gpu::detail {
template void LaunchTbis<32>(const SelectArgs&);
}  // namespace fm::gpu::detail
