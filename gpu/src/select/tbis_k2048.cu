// TBiS instantiated for k <= 2048.
#include "select/tbis.cuh"

namespace fm::gpu::detail {
template void LaunchTbis<2048>(const SelectArgs&);
}  // namespace fm::gpu::detail
