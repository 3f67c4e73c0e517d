// What the micro benchmarks under bench/micro share: a checked CUDA call, a median time and the
// matrix they read.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                         \
  do {                                                                                   \
    const cudaError_t err_ = (x);                                                        \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// The median of `runs` event-timed calls of launch(i) on the default stream, in ms, after two
// untimed ones (i counts every call, the untimed ones included).
template <typename F>
double MedianMs(int runs, F&& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < runs + 2; ++i) {
    CHECK(cudaEventRecord(a));
    launch(i);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 2) t.push_back(ms);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The runs a benchmark takes (its first argument, else 15), and the current device's properties.
inline int RunsArg(int argc, char** argv) { return argc > 1 ? std::atoi(argv[1]) : 15; }
inline cudaDeviceProp CurrentDevice() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  return prop;
}

// n floats in [0, 1) from a hash of their index (distinct values; what a read reads does not
// change its time).
__global__ void FillHashed(float* d, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    d[i] = static_cast<float>(h >> 8) * (1.0f / 16777216.0f);
  }
}

// The matrix a micro benchmark reads (n floats, filled) and the 1024 partial sums the read
// kernels of read_kernels.cuh add into, on the current device of `sms` multiprocessors.
struct ReadInput {
  float* d;
  float* sums;
};
inline ReadInput MakeReadInput(int64_t n, int sms) {
  ReadInput in;
  CHECK(cudaMalloc(&in.d, n * 4));
  FillHashed<<<sms * 8, 512>>>(in.d, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMalloc(&in.sums, 1024 * 4));
  return in;
}
