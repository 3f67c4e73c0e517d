// What a selection's output costs beside its read: 8192 rows of 8192 floats read once, and k
// values with k 64-bit indices written a row (the output select_k writes), against the read
// alone. Each block reads a row at a time (256 threads, eight float4 loads each in flight) and
// writes the row's k outputs in order; store policies: plain, streaming (st.global.cs), L2
// evict-first and evict-last hints; the output in one buffer, or rotated over four so that no
// run finds the previous run's lines in L2. First, the read alone by a few kernels (ReadKernel<1>,
// the select benchmark's only read until 12e6042, and three others; bench/micro/read_shapes.cu
// does the same over more sizes). Build and run on the device:
//   nvcc -arch=sm_90 -O3 bench/micro/write_cost.cu -o /tmp/write_cost && /tmp/write_cost
// (bench/results/select.md "What the output costs").
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "micro_util.h"
#include "read_kernels.cuh"

using fm::bench::ReadKernel;

constexpr int kRows = 8192, kCols = 8192;

enum Policy { kPlain, kStreaming, kEvictFirst, kEvictLast };

template <int P>
__device__ __forceinline__ void Store(float* p, float v, uint64_t pol) {
  if constexpr (P == kPlain) {
    *p = v;
  } else if constexpr (P == kStreaming) {
    __stcs(p, v);
  } else {
    asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" ::"l"(p), "f"(v), "l"(pol)
                 : "memory");
  }
}
template <int P>
__device__ __forceinline__ void Store(int64_t* p, int64_t v, uint64_t pol) {
  if constexpr (P == kPlain) {
    *p = v;
  } else if constexpr (P == kStreaming) {
    __stcs(reinterpret_cast<long long*>(p), static_cast<long long>(v));
  } else {
    asm volatile("st.global.L2::cache_hint.s64 [%0], %1, %2;" ::"l"(p), "l"(v), "l"(pol)
                 : "memory");
  }
}

// A row a block at a time: its 2048 float4 (eight a thread, all in flight), then k values and k
// indices written in order (k = 0: the read alone, in this kernel's shape).
template <int P>
__global__ void __launch_bounds__(256)
    RowReadWrite(const float* d, int k, float* values, int64_t* indices) {
  uint64_t pol = 0;
  if constexpr (P == kEvictFirst) {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  } else if constexpr (P == kEvictLast) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  }
  for (int r = blockIdx.x; r < kRows; r += gridDim.x) {
    const float4* row = reinterpret_cast<const float4*>(d + int64_t{r} * kCols);
    float4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = __ldcs(row + u * 256 + threadIdx.x);
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < 8; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
    const int64_t o = int64_t{r} * k;
    for (int j = threadIdx.x; j < k; j += 256) {
      Store<P>(values + o + j, s + j, pol);
      Store<P>(indices + o + j, int64_t{j} + r, pol);
    }
  }
}

// Writes alone: the same outputs with no read.
__global__ void WriteOnly(int k, float* values, int64_t* indices) {
  const int64_t n = int64_t{kRows} * k;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    values[i] = static_cast<float>(i);
    indices[i] = i;
  }
}

int main(int argc, char** argv) {
  const int runs = RunsArg(argc, argv);
  const cudaDeviceProp prop = CurrentDevice();
  const int sms = prop.multiProcessorCount;
  const int64_t n = int64_t{kRows} * kCols;
  const ReadInput in = MakeReadInput(n, sms);
  float *d = in.d, *sums = in.sums;
  constexpr int kBufs = 4, kMaxK = 1024;
  float* values[kBufs];
  int64_t* indices[kBufs];
  for (int b = 0; b < kBufs; ++b) {
    CHECK(cudaMalloc(&values[b], int64_t{kRows} * kMaxK * 4));
    CHECK(cudaMalloc(&indices[b], int64_t{kRows} * kMaxK * 8));
  }
  auto read = [&](int) {
    ReadKernel<1><<<sms * 8, 512>>>(reinterpret_cast<const float4*>(d), n / 4, sums);
  };
  // Half a second of reads first: a card's first kernels run slower.
  for (int i = 0; i < 4000; ++i) read(0);
  CHECK(cudaDeviceSynchronize());
  // Reads alone, in several shapes: the benchmark's, its grid sized to the resident blocks, and
  // U float4 a thread in flight.
  {
    int r512 = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r512, ReadKernel<1>, 512, 0));
    const float4* d4 = reinterpret_cast<const float4*>(d);
    for (int rep = 0; rep < 2; ++rep) {
      const double base = MedianMs(runs, read);
      const double resident =
          MedianMs(runs, [&](int) { ReadKernel<1><<<sms * r512, 512>>>(d4, n / 4, sums); });
      const double u4 =
          MedianMs(runs, [&](int) { ReadKernel<4><<<sms * 4, 512>>>(d4, n / 4, sums); });
      const double u8 =
          MedianMs(runs, [&](int) { ReadKernel<8><<<sms * 4, 512>>>(d4, n / 4, sums); });
      int rows_per_sm = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&rows_per_sm, RowReadWrite<0>, 256, 0));
      const double rowwise = MedianMs(
          runs, [&](int) { RowReadWrite<0><<<sms * rows_per_sm, 256>>>(d, 0, nullptr, nullptr); });
      std::printf(
          "{\"reads_ms\":{\"bench_read\":%.4f,\"bench_read_resident_grid\":%.4f,"
          "\"unrolled4\":%.4f,\"unrolled8\":%.4f,\"row_blocks\":%.4f},\"GBps_best\":%.1f}\n",
          base, resident, u4, u8, rowwise,
          n * 4 / 1e6 / std::min({base, resident, u4, u8, rowwise}));
    }
  }
  const char* names[4] = {"plain", "streaming", "evict_first", "evict_last"};
  void (*kernels[4])(const float*, int, float*, int64_t*) = {
      RowReadWrite<kPlain>, RowReadWrite<kStreaming>, RowReadWrite<kEvictFirst>,
      RowReadWrite<kEvictLast>};
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, RowReadWrite<kPlain>, 256, 0));
  std::printf("{\"device\":\"%s\",\"rows\":%d,\"N\":%d,\"blocks_per_sm\":%d}\n", prop.name, kRows,
              kCols, per_sm);
  for (int k : {0, 32, 128, 256, 1024}) {
    for (int bufs : {1, kBufs}) {
      for (int p = 0; p < 4; ++p) {
        if (k == 0 && (p > 0 || bufs > 1)) continue;
        const double read_a = MedianMs(runs, read);
        const double ms = MedianMs(runs, [&](int i) {
          kernels[p]<<<sms * per_sm, 256>>>(d, k, values[i % bufs], indices[i % bufs]);
        });
        const double read_b = MedianMs(runs, read);
        const double rd = 0.5 * (read_a + read_b);
        const double out_mb = double{kRows} * k * 12 / 1e6;
        double w_ms = 0.0;
        if (k > 0 && p == 0) {
          w_ms = MedianMs(runs, [&](int i) {
            WriteOnly<<<sms * 8, 512>>>(k, values[i % bufs], indices[i % bufs]);
          });
        }
        std::printf(
            "{\"k\":%d,\"policy\":\"%s\",\"out_buffers\":%d,\"ms\":%.4f,\"read_ms\":%.4f,"
            "\"extra_us\":%.2f,\"out_MB\":%.1f,\"out_at_read_rate_us\":%.2f,"
            "\"write_only_ms\":%.4f,\"frac_read\":%.3f}\n",
            k, k == 0 ? "none" : names[p], bufs, ms, rd, (ms - rd) * 1e3, out_mb,
            out_mb / (n * 4 / 1e6) * rd * 1e3, w_ms, rd / ms);
      }
    }
  }
  return 0;
}
