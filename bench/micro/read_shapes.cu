// The read bandwidth of an H100 / H200 as different read kernels draw it: the select benchmark's
// (bench/gpu/bench_select.cu: a grid-stride loop, one float4 a step, 8 blocks of 512 threads an
// SM launched), the same with U float4 a thread in flight, and 32 KiB chunks a block (8 float4 a
// thread, all in flight, 256 threads). Matrices of 2^26 to 2^30 floats (8192 x 8192 to 1024 x
// 2^20). Build and run on the device:
//   nvcc -arch=sm_90 -O3 bench/micro/read_shapes.cu -o /tmp/read_shapes && /tmp/read_shapes
// (bench/results/select.md "The read the fractions are taken against").
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

__global__ void Fill(float* d, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    d[i] = static_cast<float>((static_cast<uint32_t>(i) * 2654435761u) >> 8);
  }
}

__global__ void ReadKernel(const float4* d, int64_t n4, float* out) {
  float s = 0.0f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n4;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float4 v = __ldcs(d + i);
    s += v.x + v.y + v.z + v.w;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out + blockIdx.x % 1024, s);
}

template <int U>
__global__ void ReadUnrolled(const float4* d, int64_t n4, float* out) {
  float s = 0.0f;
  const int64_t step = int64_t{gridDim.x} * blockDim.x;
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
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
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out + blockIdx.x % 1024, s);
}

// 32 KiB chunks (2048 float4), a block a chunk at a time.
__global__ void __launch_bounds__(256) ReadChunks(const float4* d, int64_t chunks, float* out) {
  float s = 0.0f;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const float4* p = d + c * 2048;
    float4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = __ldcs(p + u * 256 + threadIdx.x);
#pragma unroll
    for (int u = 0; u < 8; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out + blockIdx.x % 1024, s);
}

template <typename F>
double MedianMs(int runs, F&& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < runs + 2; ++i) {
    CHECK(cudaEventRecord(a));
    launch();
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

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 15;
  int sms;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int64_t max_n = int64_t{1} << 30;
  float* d;
  CHECK(cudaMalloc(&d, max_n * 4));
  Fill<<<sms * 8, 512>>>(d, max_n);
  CHECK(cudaGetLastError());
  float* sums;
  CHECK(cudaMalloc(&sums, 1024 * 4));
  const float4* d4 = reinterpret_cast<const float4*>(d);
  for (int i = 0; i < 1000; ++i) ReadKernel<<<sms * 8, 512>>>(d4, (int64_t{1} << 26) / 4, sums);
  CHECK(cudaDeviceSynchronize());
  int chunk_blocks = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&chunk_blocks, ReadChunks, 256, 0));
  for (int rep = 0; rep < 2; ++rep) {
    for (int lg = 26; lg <= 30; ++lg) {
      const int64_t n = int64_t{1} << lg, n4 = n / 4;
      const double bench = MedianMs(runs, [&] { ReadKernel<<<sms * 8, 512>>>(d4, n4, sums); });
      const double u4 = MedianMs(runs, [&] { ReadUnrolled<4><<<sms * 4, 512>>>(d4, n4, sums); });
      const double u8 = MedianMs(runs, [&] { ReadUnrolled<8><<<sms * 4, 512>>>(d4, n4, sums); });
      const double ch =
          MedianMs(runs, [&] { ReadChunks<<<sms * chunk_blocks, 256>>>(d4, n4 / 2048, sums); });
      const double bench2 = MedianMs(runs, [&] { ReadKernel<<<sms * 8, 512>>>(d4, n4, sums); });
      const double b = 0.5 * (bench + bench2);
      const double best = std::min({b, u4, u8, ch});
      std::printf(
          "{\"device\":\"%s\",\"floats\":%lld,\"bench_read_ms\":%.4f,\"unrolled4_ms\":%.4f,"
          "\"unrolled8_ms\":%.4f,\"chunks_ms\":%.4f,\"bench_GBps\":%.1f,\"best_GBps\":%.1f,"
          "\"bench_over_best\":%.3f}\n",
          prop.name, static_cast<long long>(n), b, u4, u8, ch, n * 4 / 1e6 / b, n * 4 / 1e6 / best,
          b / best);
    }
  }
  return 0;
}
