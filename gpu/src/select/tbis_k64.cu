// TBiS instantiated for k <= 64.
#include "select/tbis.cuh"

namespace fm::gpu::detail {
template void LaunchTbis<64>(const SelectArgs&);
}  // namespace fm::gpu::detail
