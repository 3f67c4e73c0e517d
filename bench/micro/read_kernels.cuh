// Kernels that read a matrix of floats once and sum it (one partial sum a block, added into
// out[block % 1024]): the reads the select benchmark takes its fractions against
// (bench/gpu/bench_select.cu, LaunchRead) and the micro benchmarks beside it compare.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fm::bench {

// A warp's partial sum into out (lane 0 adds it).
__device__ __forceinline__ void AddWarpSum(float s, float* out) {
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out + blockIdx.x % 1024, s);
}

// n4 float4 (16-byte aligned) read once by a grid-stride loop, U float4 a thread in flight each
// step (U = 1: one load at a time).
template <int U>
__global__ void ReadKernel(const float4* d, int64_t n4, float* out) {
  float s = 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  for (; i + (U - 1) * step < n4; i += U * step) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcs(d + i + u * step);
#pragma unroll
    for (int u = 0; u < U; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  for (; i < n4; i += step) {
    const float4 v = __ldcs(d + i);
    s += v.x + v.y + v.z + v.w;
  }
  AddWarpSum(s, out);
}

// The same read in chunks of 32 KiB (2048 float4), a block of T = 256 threads a chunk at a time,
// eight float4 a thread in flight; n4 a multiple of 2048.
template <int T = 256>
__global__ void __launch_bounds__(T) ReadChunksKernel(const float4* d, int64_t n4, float* out) {
  static_assert(T * 8 == 2048, "eight float4 a thread, a chunk a block");
  float s = 0;
  for (int64_t c = blockIdx.x; c < n4 / 2048; c += gridDim.x) {
    float4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = __ldcs(d + c * 2048 + u * T + threadIdx.x);
#pragma unroll
    for (int u = 0; u < 8; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  AddWarpSum(s, out);
}

}  // namespace fm::bench
