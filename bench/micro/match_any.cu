// Throughput of __match_any_sync against __shfl_sync, in warp instructions per clock and SM: two
// blocks of 1024 threads an SM, 8 independent chains a thread. Build and run on the device:
//   nvcc -arch=sm_90 -O3 bench/micro/match_any.cu -o /tmp/match_any && /tmp/match_any
// (bench/results/select.md "Sample kept in L2, merge-path finish sort": why the warp finish does
// not rank words by match.any.)
#include <cstdio>
#include <cstdlib>

#include "micro_util.h"

template <int MODE>
__global__ void K(unsigned* out, int iters, unsigned seed) {
  unsigned v[8];
  for (int j = 0; j < 8; ++j) v[j] = (threadIdx.x * 2654435761u + j * 97u + seed);
  unsigned acc = 0;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      unsigned d = (v[j] >> (i & 7)) & (MODE == 2 ? 3u : 255u);
      unsigned r;
      if (MODE == 0)
        r = __shfl_sync(0xffffffffu, d, (threadIdx.x + 1) & 31);
      else
        r = __match_any_sync(0xffffffffu, d);
      v[j] += r;
    }
  }
  for (int j = 0; j < 8; ++j) acc += v[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
int main() {
  int sms;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned* o;
  CHECK(cudaMalloc(&o, static_cast<size_t>(sms) * 2 * 1024 * 4));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  int clk;
  CHECK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
  const int iters = 2000;
  const char* names[3] = {"shfl", "match(256 values)", "match(4 values)"};
  for (int rep = 0; rep < 2; ++rep) {
    for (int m = 0; m < 3; ++m) {
      auto f = m == 0 ? K<0> : m == 1 ? K<1> : K<2>;
      f<<<sms * 2, 1024>>>(o, iters, 1);
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(a));
      f<<<sms * 2, 1024>>>(o, iters, 2);
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      double warp_ops = double(sms) * 2 * 32 * iters * 8;  // warp instructions of the op
      double per_sm_clk = warp_ops / sms / (ms * 1e-3 * clk * 1e3);
      std::printf("%-20s %.3f ms  %.3f warp-ops/clk/SM\n", names[m], ms, per_sm_clk);
    }
  }
}
