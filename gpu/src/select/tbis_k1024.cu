// TBiS instantiated for k <= 1024.
#include "select/tbis.cuh"

namespace fm::gpu::detail {
template void LaunchTbis<1024>(const SelectArgs&);
}  // namespace fm::gpu::detail
