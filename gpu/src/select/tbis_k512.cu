// TBiS instantiated for k <= 512.
#include "select/tbis.cuh"

namespace fm::gpu::detail {
template void LaunchTbis<512>(const SelectArgs&);
}  // namespace fm::gpu::detail
