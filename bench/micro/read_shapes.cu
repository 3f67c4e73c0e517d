// The read bandwidth of an H100 / H200 as different read kernels draw it (read_kernels.cuh): the
// one the select benchmark took its fractions against until 12e6042 (ReadKernel<1>, a grid-stride
// loop, one float4 a step, 8 blocks of 512 threads launched an SM), the same with U float4 a
// thread in flight, and 32 KiB chunks a block (8 float4 a thread, all in flight, 256 threads).
// Matrices of 2^26 to 2^30 floats (8192 x 8192 to 1024 x 2^20). Build and run on the device:
//   nvcc -arch=sm_90 -O3 bench/micro/read_shapes.cu -o /tmp/read_shapes && /tmp/read_shapes
// (bench/results/select.md "The read the fractions are taken against").
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "micro_util.h"
#include "read_kernels.cuh"

using fm::bench::ReadChunksKernel;
using fm::bench::ReadKernel;

int main(int argc, char** argv) {
  const int runs = RunsArg(argc, argv);
  const cudaDeviceProp prop = CurrentDevice();
  const int sms = prop.multiProcessorCount;
  const int64_t max_n = int64_t{1} << 30;
  const ReadInput in = MakeReadInput(max_n, sms);
  float *d = in.d, *sums = in.sums;
  const float4* d4 = reinterpret_cast<const float4*>(d);
  for (int i = 0; i < 1000; ++i) ReadKernel<1><<<sms * 8, 512>>>(d4, (int64_t{1} << 26) / 4, sums);
  CHECK(cudaDeviceSynchronize());
  int chunk_blocks = 0;
  CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&chunk_blocks, ReadChunksKernel<256>, 256, 0));
  for (int rep = 0; rep < 2; ++rep) {
    for (int lg = 26; lg <= 30; ++lg) {
      const int64_t n = int64_t{1} << lg, n4 = n / 4;
      const double bench =
          MedianMs(runs, [&](int) { ReadKernel<1><<<sms * 8, 512>>>(d4, n4, sums); });
      const double u4 = MedianMs(runs, [&](int) { ReadKernel<4><<<sms * 4, 512>>>(d4, n4, sums); });
      const double u8 = MedianMs(runs, [&](int) { ReadKernel<8><<<sms * 4, 512>>>(d4, n4, sums); });
      const double ch =
          MedianMs(runs, [&](int) { ReadChunksKernel<<<sms * chunk_blocks, 256>>>(d4, n4, sums); });
      const double bench2 =
          MedianMs(runs, [&](int) { ReadKernel<1><<<sms * 8, 512>>>(d4, n4, sums); });
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
