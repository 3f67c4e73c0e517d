// featmatch-bench select: k-selection per row on the GPU, every algorithm over the grid of the
// papers (rows = 8192, N = 2^13 .. 2^16, k = 32 .. 1024) and a long-row shape (rows = 1024,
// N = 2^20). Each result is reported against the read bandwidth measured in the same process (the
// fastest of three kernels that sum the same matrix with 16-byte loads, LaunchRead), timed right
// before and after the result's own runs.
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
#include "micro/fill_uniform.cuh"
#include "micro/read_kernels.cuh"

namespace fm::bench {
namespace {

using fm::gpu::detail::CudaEvent;
using fm::gpu::detail::DeviceBuffer;

// --data zero: each row of `cols` columns also holds one 0 (at a column drawn from the row's
// index), as a distance row does whose query is in the corpus (a self-join, a duplicate image).
// --data ties: every value one of 256 levels, so that a row's k-th value is shared by about
// cols / 256 words. --data trap: a row's smallest 2048 words
// lie in 32 runs of 64 where quick multi-select draws its pivot sample (runs at multiples of
// cols / 32, rounded down to 8 words), the rest above 1e6: the pivot falls under the k-th value and
// every row is selected again from the row.
__global__ void PlantZerosKernel(float* d, int64_t rows, int64_t cols, uint64_t seed) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t x = (static_cast<uint64_t>(r) + seed) * 0xD1B54A32D192ED03ull;
    x ^= x >> 32;
    d[r * cols + static_cast<int64_t>(x % static_cast<uint64_t>(cols))] = 0.0f;
  }
}
__global__ void TrapKernel(float* d, int64_t rows, int64_t cols) {
  const int64_t step = cols / 32;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * cols;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % cols, t = step > 0 ? c / step : 0, p = t * step / 8 * 8;
    d[i] = t < 32 && c >= p && c < p + 64 ? static_cast<float>(t * 64 + (c - p)) : 1e6f + d[i];
  }
}
__global__ void QuantizeKernel(float* d, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    d[i] = floorf(d[i] * 256.0f) * (1.0f / 256.0f);
  }
}

// The read a fraction is taken against is the fastest of three kernels (micro/read_kernels.cuh),
// each timed beside the cell: ReadKernel<1> (8 blocks of 512 threads launched an SM, half of them
// resident at once; the only one before), ReadKernel<4> on the resident blocks, and
// ReadChunksKernel on the resident blocks (where n is a multiple of 8192). Reading 8192 x 8192, the
// first took 0.0679-0.0696 ms on H200s where the second took 0.0650-0.0665 and the third
// 0.0650-0.0667 (the fastest 4-6 % faster; 1-3 % on 2^27 to 2^30 floats); on an H100 0.0930-0.0948
// against 0.0919-0.0941 and 0.0915-0.0926 (0.5-2.7 %; up to 1 % on more floats)
// (bench/results/select.md "The read the fractions are taken against", bench/micro/read_shapes.cu).
constexpr int kReadKernels = 3;
bool ReadApplies(int which, int64_t n) { return which < 2 || n % 8192 == 0; }
void LaunchRead(int which, const float* d, int64_t n, float* sums, int multiprocessors,
                cudaStream_t stream) {
  const auto* d4 = reinterpret_cast<const float4*>(d);
  if (which == 0) {
    ReadKernel<1><<<multiprocessors * 8, 512, 0, stream>>>(d4, n / 4, sums);
  } else if (which == 1) {
    ReadKernel<4><<<multiprocessors * 4, 512, 0, stream>>>(d4, n / 4, sums);
  } else {
    ReadChunksKernel<256><<<multiprocessors * 8, 256, 0, stream>>>(d4, n / 4, sums);
  }
  FM_CUDA_CHECK(cudaGetLastError());
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
  const std::string data_kind = ArgValue(args, "--data", "uniform");
  if (data_kind != "uniform" && data_kind != "zero" && data_kind != "ties" && data_kind != "trap") {
    std::fprintf(stderr,
                 "featmatch-bench select: --data is uniform, zero, ties or trap, not '%s'\n",
                 data_kind.c_str());
    return 2;
  }
  // The field the JSON lines carry for data other than the default.
  const std::string data_field =
      data_kind == "uniform" ? std::string() : ",\"data\":\"" + data_kind + "\"";

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
  if (data_kind == "ties") {
    QuantizeKernel<<<4096, 256, 0, stream>>>(data.data(), max_elems);
    FM_CUDA_CHECK(cudaGetLastError());
  }

  // Half a second of reads of the whole matrix before anything is timed: the first kernels of a
  // process ran slower (an H100 read 8192 x 8192 in 0.102 ms at the start of a grid, 0.092 ms in
  // the processes just before it, and took 0.137 ms at k = 32 against 0.106), which slowed the
  // first cells and, through the read, inflated the fractions of the others of that shape.
  {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500)) {
      for (int i = 0; i < 4; ++i) {
        LaunchRead(i % kReadKernels, data.data(), max_elems - max_elems % 8192, sums.data(),
                   info.multiprocessors, stream);
      }
      FM_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }

  if (!json) {
    std::printf("%-6s %-8s %-5s %-18s %9s %9s %7s\n", "rows", "N", "k", "algo", "median_ms",
                "GB/s", "frac");
  }
  for (const Shape& s : shapes) {
    const int64_t n = s.rows * s.cols;
    if (data_kind == "zero" || data_kind == "trap") {  // uniform values again, then the shape's
      FillUniformKernel<<<4096, 256, 0, stream>>>(data.data(), n, 12345);
      FM_CUDA_CHECK(cudaGetLastError());
      if (data_kind == "zero") {
        PlantZerosKernel<<<64, 256, 0, stream>>>(data.data(), s.rows, s.cols, 777);
      } else {
        TrapKernel<<<4096, 256, 0, stream>>>(data.data(), s.rows, s.cols);
      }
      FM_CUDA_CHECK(cudaGetLastError());
    }
    const double bytes = static_cast<double>(n) * 4.0;
    const int read_runs = std::max(runs, 10);
    // The fastest of the reads (LaunchRead), each timed `read_runs` times around the work.
    auto read_ms_of = [&](int warmup, auto&& work) {
      std::vector<double> t[kReadKernels];
      auto time_reads = [&](int w) {
        for (int v = 0; v < kReadKernels; ++v) {
          if (!ReadApplies(v, n)) continue;
          const std::vector<double> r = TimedMs(stream, read_runs, w, [&] {
            LaunchRead(v, data.data(), n, sums.data(), info.multiprocessors, stream);
          });
          t[v].insert(t[v].end(), r.begin(), r.end());
        }
      };
      time_reads(warmup);
      work();
      time_reads(0);
      double best = 0;
      for (int v = 0; v < kReadKernels; ++v) {
        if (!t[v].empty() && (best == 0 || Median(t[v]) < best)) best = Median(t[v]);
      }
      return best;
    };
    const double read_ms = read_ms_of(2, [] {});
    const double read_gbs = bytes / read_ms / 1e6;
    if (json) {
      std::printf(
          "{\"bench\":\"select\",\"device\":\"%s\",\"rows\":%lld,\"N\":%lld,\"algo\":\"read\","
          "\"median_ms\":%.4f,\"GBps\":%.1f%s}\n",
          info.name.c_str(), static_cast<long long>(s.rows), static_cast<long long>(s.cols),
          read_ms, read_gbs, data_field.c_str());
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
        double ms = 0;
        const double cell_read_ms = read_ms_of(1, [&] {
          ms = Median(TimedMs(stream, r, 1, [&] {
            fm::gpu::select_k(res, data.data(), s.rows, s.cols, s.cols, k, algo, out_v.data(),
                              out_i.data());
          }));
        });
        const double gbs = bytes / ms / 1e6;
        const std::string chosen =
            fm::gpu::SelectAlgoName(algo == fm::gpu::SelectAlgo::kAuto
                                        ? fm::gpu::ChooseSelectAlgo(s.rows, s.cols, k)
                                        : algo);
        if (json) {
          std::printf(
              "{\"bench\":\"select\",\"device\":\"%s\",\"rows\":%lld,\"N\":%lld,\"k\":%lld,"
              "\"algo\":\"%s\",\"runs_as\":\"%s\",\"runs\":%d,\"median_ms\":%.4f,\"GBps\":%.1f,"
              "\"read_ms\":%.4f,\"read_GBps\":%.1f,\"frac_read_bw\":%.3f%s}\n",
              info.name.c_str(), static_cast<long long>(s.rows), static_cast<long long>(s.cols),
              static_cast<long long>(k), name.c_str(), chosen.c_str(), r, ms, gbs, cell_read_ms,
              bytes / cell_read_ms / 1e6, cell_read_ms / ms, data_field.c_str());
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
                  "[--json] [--runs N] [--algos a,b] [--rows R --cols N] [--k 32,64] "
                  "[--data uniform|zero|ties|trap]",
                  RunSelect);

}  // namespace
}  // namespace fm::bench
