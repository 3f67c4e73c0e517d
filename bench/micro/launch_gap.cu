// How much of a timed select_k call is its host side: each call timed by events as
// `featmatch-bench select` times it (the stream idle before the start event, so the time from
// the start event to the first kernel counts), and again with the stream held by a spin kernel
// of about 200 us, so that every launch is queued before the start event runs (the GPU's time
// alone); also the host's time in the call. The same for two of the read kernels the fractions
// are taken against. Build and run on the device (bench/results/select.md "The host's share of a
// call (no change)"):
//   cmake -S . -B /tmp/b -G Ninja -DFM_GPU_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
//     -DGTEST_SOURCE_DIR=/usr/src/googletest && cmake --build /tmp/b --target fm_gpu
//   nvcc -std=c++20 -O2 -arch=sm_90 -Igpu/include -Igpu/src -Ibench bench/micro/launch_gap.cu \
//     /tmp/b/gpu/libfm_gpu.a -lcublas -lcublasLt -o /tmp/launch_gap && /tmp/launch_gap
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "cuda_check.cuh"
#include "fm/gpu/resources.h"
#include "fm/gpu/select_k.h"
#include "micro/fill_uniform.cuh"
#include "micro/read_kernels.cuh"

using fm::gpu::detail::CudaEvent;
using fm::gpu::detail::DeviceBuffer;

__global__ void Spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}
double Med(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Fn>
void Time(const char* what, cudaStream_t st, Fn&& fn, double* idle_ms, double* held_ms,
          double* host_us) {
  CudaEvent a, b;
  for (int i = 0; i < 3; ++i) fn();
  FM_CUDA_CHECK(cudaStreamSynchronize(st));
  std::vector<double> idle, held, host;
  for (int i = 0; i < 30; ++i) {
    FM_CUDA_CHECK(cudaEventRecord(a.get(), st));
    fn();
    FM_CUDA_CHECK(cudaEventRecord(b.get(), st));
    FM_CUDA_CHECK(cudaEventSynchronize(b.get()));
    float ms;
    FM_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
    idle.push_back(ms);
    Spin<<<1, 1, 0, st>>>(400000);  // about 200 us at 1.98 GHz
    FM_CUDA_CHECK(cudaEventRecord(a.get(), st));
    auto h0 = std::chrono::steady_clock::now();
    fn();
    auto h1 = std::chrono::steady_clock::now();
    FM_CUDA_CHECK(cudaEventRecord(b.get(), st));
    FM_CUDA_CHECK(cudaEventSynchronize(b.get()));
    FM_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
    held.push_back(ms);
    host.push_back(std::chrono::duration<double, std::micro>(h1 - h0).count());
  }
  *idle_ms = Med(idle);
  *held_ms = Med(held);
  *host_us = Med(host);
  std::printf("%-34s idle %.4f ms  held %.4f ms  gap %.2f us  host call %.2f us\n", what, *idle_ms,
              *held_ms, (*idle_ms - *held_ms) * 1e3, *host_us);
}

int main() {
  fm::gpu::Resources res(0);
  cudaStream_t st = static_cast<cudaStream_t>(res.stream());
  int sms = 0;
  FM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  struct S {
    int64_t rows, cols;
  } shapes[] = {{8192, 8192}, {8192, 16384}, {8192, 65536}};
  for (auto s : shapes) {
    const int64_t n = s.rows * s.cols;
    DeviceBuffer<float> d(n), sums(1 << 16);
    fm::bench::FillUniformKernel<<<4096, 256, 0, st>>>(d.data(), n, 1234);
    FM_CUDA_CHECK(cudaStreamSynchronize(st));
    DeviceBuffer<float> ov(s.rows * 1024);
    DeviceBuffer<int64_t> oi(s.rows * 1024);
    double ri, rh, hu;
    char name[96];
    const auto* d4 = reinterpret_cast<const float4*>(d.data());
    std::snprintf(name, sizeof name, "%lldx%lld read<1>", static_cast<long long>(s.rows),
                  static_cast<long long>(s.cols));
    Time(
        name, st,
        [&] { fm::bench::ReadKernel<1><<<sms * 8, 512, 0, st>>>(d4, n / 4, sums.data()); }, &ri,
        &rh, &hu);
    std::snprintf(name, sizeof name, "%lldx%lld read<4>", static_cast<long long>(s.rows),
                  static_cast<long long>(s.cols));
    Time(
        name, st,
        [&] { fm::bench::ReadKernel<4><<<sms * 4, 512, 0, st>>>(d4, n / 4, sums.data()); }, &ri,
        &rh, &hu);
    for (int k : {32, 128, 256, 1024}) {
      std::snprintf(name, sizeof name, "%lldx%lld k=%d auto", static_cast<long long>(s.rows),
                    static_cast<long long>(s.cols), k);
      Time(
          name, st,
          [&] {
            fm::gpu::select_k(res, d.data(), s.rows, s.cols, s.cols, k, fm::gpu::SelectAlgo::kAuto,
                              ov.data(), oi.data());
          },
          &ri, &rh, &hu);
    }
  }
  return 0;
}
