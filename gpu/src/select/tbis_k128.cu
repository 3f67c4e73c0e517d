// TBiS instantiated for k <= 128.
#include "select/tbis.cuh"

namespace fm::gpu::detail {
template void LaunchTbis<128>(const SelectArgs&);
}  // namespace fm::gpu::detail
