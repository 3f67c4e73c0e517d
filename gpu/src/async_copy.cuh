// cp.async (global -> shared, 16 bytes, zero-filled past src_bytes) and its group fences, shared
// by the kernels that stage global data in shared memory.
#pragma once

namespace fm::gpu::detail {

__device__ __forceinline__ void CpAsync16(void* smem_dst, const void* src, int src_bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace fm::gpu::detail
