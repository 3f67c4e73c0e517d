// cp.async (global -> shared, 16 bytes, zero-filled past src_bytes) and its group fences, shared
// by the kernels that stage global data in shared memory.
#pragma once

#include <cstdint>

namespace fm::gpu::detail {

__device__ __forceinline__ void CpAsync16(void* smem_dst, const void* src, int src_bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
// One 4-byte word (both addresses 4-byte aligned), through L1.
__device__ __forceinline__ void CpAsync4(void* smem_dst, const void* src) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Bulk copies tracked by an mbarrier (sm_90 and later; callers check BulkCopyAvailable()).
__host__ __device__ constexpr bool BulkCopyAvailable() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  return false;
#else
  return true;
#endif
}
// Initialises the barrier without the fences that publish it (for callers that initialise
// several and fence once).
__device__ __forceinline__ void MbarInitNoFence(uint64_t* bar, int count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(a), "r"(count));
#endif
}
// Publishes the barriers this thread initialised to the block and to the copy engine.
__device__ __forceinline__ void MbarInitFence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void MbarInit(uint64_t* bar, int count) {
  MbarInitNoFence(bar, count);
  MbarInitFence();
}
// Arrives on bar, which is to expect `bytes` from copies.
__device__ __forceinline__ void MbarExpectTx(uint64_t* bar, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes)
               : "memory");
#endif
}
// Copies `bytes` (a multiple of 16, both ends 16-byte aligned) from src into shared memory; the
// copy counts its bytes on bar.
__device__ __forceinline__ void BulkCopy(void* dst, const void* src, int bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(d),
      "l"(src), "r"(bytes), "r"(b)
      : "memory");
#endif
}
// BulkCopy with an L2 cache policy for the lines it reads (a createpolicy word).
__device__ __forceinline__ void BulkCopyHint(void* dst, const void* src, int bytes, uint64_t* bar,
                                             uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1], %2, [%3], %4;\n" ::"r"(d),
      "l"(src), "r"(bytes), "r"(b), "l"(policy)
      : "memory");
#endif
}
// Arrives on bar expecting `bytes`, then copies them from src (as BulkCopy); the copy completes
// the barrier's phase.
__device__ __forceinline__ void BulkCopyArrive(void* dst, const void* src, int bytes,
                                               uint64_t* bar) {
  MbarExpectTx(bar, bytes);
  BulkCopy(dst, src, bytes, bar);
}
__device__ __forceinline__ void MbarWait(uint64_t* bar, int parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(b),
      "r"(parity)
      : "memory");
#endif
}

}  // namespace fm::gpu::detail
