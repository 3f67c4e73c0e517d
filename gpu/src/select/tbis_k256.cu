// TBiS instantiated for k <= 256.
#include "select/tbis.cuh"

namespace fm::gpu::detail {
template void LaunchTbis<256>(const SelectArgs&);
}  // namespace fm::gpu::detail
