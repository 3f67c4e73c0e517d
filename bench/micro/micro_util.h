// What the micro benchmarks under bench/micro share: a checked CUDA call and a median time.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
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
