// featmatch-bench select: k-selection per row on the GPU, every algorithm over the grid of the
// papers (rows = 8192, N = 2^13 .. 2^16, k = 32 .. 1024) and a long-row shape (rows = 1024,
// N = 2^20). Each result is reported against the read bandwidth measured in the same process (a
// kernel that sums the same matrix with 16-byte loads), timed right before and after the result's
// own runs.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cuda_check.cuh"
#include "fm/gpu/resources.h"
#include "fm/gpu/select_k.h"

namespace fm::bench {
namespace {

using fm::gpu::detail::CudaEvent;
using fm::gpu::detail::DeviceBuffer;

__global__ void FillUniformKernel(float* d, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t x = (static_cast<uint64_t>(i) + seed) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    d[i] = static_cast<float>(x >> 40) * (1.0f / 16777216.0f);
  }
}

// Reads n floats (n % 4 == 0, 16-byte aligned) once; one partial sum per block.
__global__ void ReadKernel(const float4* d, int64_t n4, float* out) {
  float s = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 v = __ldcs(d + i);
    s += v.x + v.y + v.z + v.w;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out + blockIdx.x % 1024, s);
}

// `runs` event-timed executions of fn on `stream` (after `warmup` untimed ones), in ms.
template <typename Fn>
std::vector<double> TimedMs(cudaStream_t stream, int runs, int warmup, Fn&& fn) {
  CudaEvent start, stop;
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    FM_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    fn();
    FM_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    FM_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    FM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    t.push_back(ms);
  }
  return t;
}

std::vector<int64_t> ParseList(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}

int RunSelect(const std::vector<std::string>& args) {
  if (fm::gpu::DeviceCount() == 0) {
    std::fprintf(stderr, "featmatch-bench select: no CUDA device\n");
    return 1;
  }
  const bool json = HasFlag(args, "--json");
  const int runs = std::stoi(ArgValue(args, "--runs", "15"));
  std::vector<std::string> algo_names;
  {
    std::stringstream ss(ArgValue(args, "--algos", "tbis,merge-queue,quick-multiselect,sort,auto"));
    std::string item;
    while (std::getline(ss, item, ',')) algo_names.push_back(item);
  }
  struct Shape {
    int64_t rows, cols;
  };
  std::vector<Shape> shapes;
  const std::string only_rows = ArgValue(args, "--rows", "");
  const std::string only_cols = ArgValue(args, "--cols", "");
  if (!only_rows.empty() && !only_cols.empty()) {
    for (int64_t r : ParseList(only_rows))
      for (int64_t c : ParseList(only_cols)) shapes.push_back({r, c});
  } else {
    for (int64_t c : {8192, 16384, 32768, 65536}) shapes.push_back({8192, c});
    shapes.push_back({1024, int64_t{1} << 20});
  }
  const std::vector<int64_t> ks = ParseList(ArgValue(args, "--k", "32,64,128,256,512,1024"));

  fm::gpu::Resources res(0);
  const auto info = fm::gpu::GetDeviceInfo(0);
  cudaStream_t stream = static_cast<cudaStream_t>(res.stream());
  int64_t max_elems = 0, max_out = 0;
  for (const Shape& s : shapes) {
    max_elems = std::max(max_elems, s.rows * s.cols);
    for (int64_t k : ks) max_out = std::max(max_out, s.rows * k);
  }
  DeviceBuffer<float> data(static_cast<size_t>(max_elems));
  DeviceBuffer<float> sums(1024);
  DeviceBuffer<float> out_v(static_cast<size_t>(max_out));
  DeviceBuffer<int64_t> out_i(static_cast<size_t>(max_out));
  FillUniformKernel<<<4096, 256, 0, stream>>>(data.data(), max_elems, 12345);
  FM_CUDA_CHECK(cudaGetLastError());

  // Half a second of reads of the whole matrix before anything is timed: the first kernels of a
  // process ran slower (an H100 read 8192 x 8192 in 0.102 ms at the start of a grid, 0.092 ms in
  // the processes just before it, and took 0.137 ms at k = 32 against 0.106), which slowed the
  // first cells and, through the read, inflated the fractions of the others of that shape.
  {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n4 = max_elems / 4;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500)) {
      for (int i = 0; i < 4; ++i) {
        ReadKernel<<<info.multiprocessors * 8, 512, 0, stream>>>(
            reinterpret_cast<const float4*>(data.data()), n4, sums.data());
      }
      FM_CUDA_CHECK(cudaGetLastError());
      FM_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }

  if (!json) {
    std::printf("%-6s %-8s %-5s %-18s %9s %9s %7s\n", "rows", "N", "k", "algo", "median_ms",
                "GB/s", "frac");
  }
  for (const Shape& s : shapes) {
    const int64_t n = s.rows * s.cols;
    const double bytes = static_cast<double>(n) * 4.0;
    const int read_runs = std::max(runs, 10);
    auto read = [&] {
      ReadKernel<<<info.multiprocessors * 8, 512, 0, stream>>>(
          reinterpret_cast<const float4*>(data.data()), n / 4, sums.data());
    };
    const double read_ms = Median(TimedMs(stream, read_runs, 2, read));
    const double read_gbs = bytes / read_ms / 1e6;
    if (json) {
      std::printf(
          "{\"bench\":\"select\",\"device\":\"%s\",\"rows\":%lld,\"N\":%lld,\"algo\":\"read\","
          "\"median_ms\":%.4f,\"GBps\":%.1f}\n",
          info.name.c_str(), static_cast<long long>(s.rows), static_cast<long long>(s.cols),
          read_ms, read_gbs);
    }
    for (int64_t k : ks) {
      for (const std::string& name : algo_names) {
        const fm::gpu::SelectAlgo algo = fm::gpu::ParseSelectAlgo(name);
        const int r = algo == fm::gpu::SelectAlgo::kSortTruncate ? 10 : std::max(runs, 10);
        // The cell's read: timed right before and right after its runs, the median of both
        // sets. The shape's read above came first of all its cells, up to seconds before some of
        // them, and a card's pace drifts: one H100 grid read 8192 x 8192 in 0.110 ms against
        // 0.091-0.094 in the processes around it, and one cell of auto that ran after the sort
        // took 0.149 ms against 0.117-0.119 everywhere else (bench/results/select.md "The grid
        // at eed42be, every algorithm"). A read beside the cell runs in the state the cell ran in.
        std::vector<double> cell_read = TimedMs(stream, read_runs, 1, read);
        const double ms = Median(TimedMs(stream, r, 1, [&] {
          fm::gpu::select_k(res, data.data(), s.rows, s.cols, s.cols, k, algo, out_v.data(),
                            out_i.data());
        }));
        const std::vector<double> after = TimedMs(stream, read_runs, 0, read);
        cell_read.insert(cell_read.end(), after.begin(), after.end());
        const double cell_read_ms = Median(cell_read);
        const double gbs = bytes / ms / 1e6;
        const std::string chosen =
            fm::gpu::SelectAlgoName(algo == fm::gpu::SelectAlgo::kAuto
                                        ? fm::gpu::ChooseSelectAlgo(s.rows, s.cols, k)
                                        : algo);
        if (json) {
          std::printf(
              "{\"bench\":\"select\",\"device\":\"%s\",\"rows\":%lld,\"N\":%lld,\"k\":%lld,"
              "\"algo\":\"%s\",\"runs_as\":\"%s\",\"runs\":%d,\"median_ms\":%.4f,\"GBps\":%.1f,"
              "\"read_ms\":%.4f,\"read_GBps\":%.1f,\"frac_read_bw\":%.3f}\n",
              info.name.c_str(), static_cast<long long>(s.rows), static_cast<long long>(s.cols),
              static_cast<long long>(k), name.c_str(), chosen.c_str(), r, ms, gbs, cell_read_ms,
              bytes / cell_read_ms / 1e6, cell_read_ms / ms);
        } else {
          std::printf("%-6lld %-8lld %-5lld %-18s %9.3f %9.1f %7.3f\n",
                      static_cast<long long>(s.rows), static_cast<long long>(s.cols),
                      static_cast<long long>(k), name.c_str(), ms, gbs, cell_read_ms / ms);
        }
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

FM_REGISTER_BENCH("select",
                  "k-selection per row: tbis, merge-queue, quick-multiselect, sort, auto "
                  "[--json] [--runs N] [--algos a,b] [--rows R --cols N] [--k 32,64]",
                  RunSelect);

}  // namespace
}  // namespace fm::bench
