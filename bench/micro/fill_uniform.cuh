// Uniform floats in [0, 1) on the device, 24 random bits each from a hash of the element's index
// and a seed, so that a matrix is the same in every run and on every device.
#pragma once

#include <cstdint>

namespace fm::bench {

static __global__ void FillUniformKernel(float* d, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t x = (static_cast<uint64_t>(i) + seed) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    d[i] = static_cast<float>(x >> 40) * (1.0f / 16777216.0f);
  }
}

}  // namespace fm::bench
