// select_k: argument checks, the choice of algorithm (kAuto) and the dispatch to a bucket of k.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "fm/gpu/select_k.h"
#include "select/select_launch.cuh"

namespace fm::gpu {
namespace detail {

void* SelectWorkspace(std::size_t bytes, cudaStream_t stream, int slot) {
  int device = 0;
  FM_CUDA_CHECK(cudaGetDevice(&device));
  thread_local std::map<std::tuple<int, cudaStream_t, int>, DeviceBuffer<unsigned char>> cache;
  DeviceBuffer<unsigned char>& buf = cache[{device, stream, slot}];
  if (buf.size() < bytes) {
    FM_CUDA_CHECK(cudaStreamSynchronize(stream));  // earlier work may still use the old buffer
    buf.Resize(bytes);
  }
  return buf.data();
}

namespace {

template <void (*L32)(const SelectArgs&), void (*L64)(const SelectArgs&),
          void (*L128)(const SelectArgs&), void (*L256)(const SelectArgs&),
          void (*L512)(const SelectArgs&), void (*L1024)(const SelectArgs&),
          void (*L2048)(const SelectArgs&)>
void DispatchBucket(const SelectArgs& a) {
  switch (SelectBucket(a.k)) {
    case 32: return L32(a);
    case 64: return L64(a);
    case 128: return L128(a);
    case 256: return L256(a);
    case 512: return L512(a);
    case 1024: return L1024(a);
    default: return L2048(a);
  }
}

void Launch(SelectAlgo use, const SelectArgs& a) {
  switch (use) {
    case SelectAlgo::kTruncatedBitonic:
      DispatchBucket<LaunchTbis<32>, LaunchTbis<64>, LaunchTbis<128>, LaunchTbis<256>,
                     LaunchTbis<512>, LaunchTbis<1024>, LaunchTbis<2048>>(a);
      break;
    case SelectAlgo::kMergeQueue:
      DispatchBucket<LaunchMergeQueue<32>, LaunchMergeQueue<64>, LaunchMergeQueue<128>,
                     LaunchMergeQueue<256>, LaunchMergeQueue<512>, LaunchMergeQueue<1024>,
                     LaunchMergeQueue<2048>>(a);
      break;
    case SelectAlgo::kQuickMultiSelect:
      DispatchBucket<LaunchQuickMultiSelect<32>, LaunchQuickMultiSelect<64>,
                     LaunchQuickMultiSelect<128>, LaunchQuickMultiSelect<256>,
                     LaunchQuickMultiSelect<512>, LaunchQuickMultiSelect<1024>,
                     LaunchQuickMultiSelect<2048>>(a);
      break;
    default:
      LaunchSortTruncate(a);
      break;
  }
}

}  // namespace
}  // namespace detail

const char* SelectAlgoName(SelectAlgo algo) {
  switch (algo) {
    case SelectAlgo::kAuto: return "auto";
    case SelectAlgo::kTruncatedBitonic: return "tbis";
    case SelectAlgo::kMergeQueue: return "merge-queue";
    case SelectAlgo::kQuickMultiSelect: return "quick-multiselect";
    case SelectAlgo::kSortTruncate: return "sort";
  }
  return "unknown";
}

SelectAlgo ParseSelectAlgo(const std::string& name) {
  for (SelectAlgo a : {SelectAlgo::kAuto, SelectAlgo::kTruncatedBitonic, SelectAlgo::kMergeQueue,
                       SelectAlgo::kQuickMultiSelect, SelectAlgo::kSortTruncate}) {
    if (name == SelectAlgoName(a)) return a;
  }
  throw std::invalid_argument("unknown selection algorithm '" + name +
                              "': use auto, tbis, merge-queue, quick-multiselect or sort");
}

// Thresholds from featmatch-bench select on an H100 and an H200 (bench/results/select_h100.jsonl,
// select_h200.jsonl; tables in bench/results/select.md). Quick multi-select is the fastest for every
// k >= 128 on every shape of both, and for smaller k wherever its row-parallel path applies (many
// rows of 2048 columns and more; at 8192 x 65536, k = 32, within 1 % of the merge queue) and on
// rows of 2^18 columns and more (cut into pieces when they are few). The merge queue (one warp
// per row) keeps k <= 64 on the other shapes, where quick multi-select would take one block per
// short row. k above the largest bucket sorts whole rows.
SelectAlgo ChooseSelectAlgo(int64_t rows, int64_t cols, int64_t k) {
  if (k > detail::kMaxSelectBucket) return SelectAlgo::kSortTruncate;
  if (k > 64) return SelectAlgo::kQuickMultiSelect;
  if (rows >= 1024 && detail::QmsRowParallelFits(cols, k)) return SelectAlgo::kQuickMultiSelect;
  if (cols >= (int64_t{1} << 18)) return SelectAlgo::kQuickMultiSelect;
  return SelectAlgo::kMergeQueue;
}

namespace {

// What the launchers need to know of a device, queried once per device (the memory clock and
// bus width take far longer to query than a small selection takes to run).
struct DeviceLimits {
  int sms = 0;
  int max_shared_bytes = 0;
  double dram_bytes_per_us_sm = 0;
};

const DeviceLimits& Limits(int device) {
  static std::mutex mu;
  static std::map<int, DeviceLimits> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  DeviceLimits l;
  FM_CUDA_CHECK(cudaDeviceGetAttribute(&l.sms, cudaDevAttrMultiProcessorCount, device));
  FM_CUDA_CHECK(
      cudaDeviceGetAttribute(&l.max_shared_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  int mem_khz = 0, bus_bits = 0;
  FM_CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  FM_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  // Two transfers a clock on each pin of the bus.
  l.dram_bytes_per_us_sm = 2.0 * mem_khz * 1e-3 * bus_bits / 8 / std::max(l.sms, 1);
  return cache.emplace(device, l).first->second;
}

}  // namespace

void select_k(const Resources& res, const float* distances, int64_t rows, int64_t cols,
              int64_t row_stride, int64_t k, SelectAlgo algo, float* out_values,
              int64_t* out_indices, const int64_t* in_indices) {
  using namespace detail;
  if (k <= 0) throw std::invalid_argument("select_k: k must be positive, got " + std::to_string(k));
  if (rows < 0 || cols < 0) {
    throw std::invalid_argument("select_k: rows and cols must be >= 0, got " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  }
  if (row_stride < cols) {
    throw std::invalid_argument("select_k: row_stride (" + std::to_string(row_stride) +
                                ") is smaller than cols (" + std::to_string(cols) + ")");
  }
  if (cols >= int64_t{0xffffffff}) {
    throw std::invalid_argument("select_k: cols must be below 2^32 - 1, got " +
                                std::to_string(cols) + "; split the rows into column tiles");
  }
  if (k > int64_t{0x7fffffff}) {
    throw std::invalid_argument("select_k: k must be below 2^31, got " + std::to_string(k));
  }
  if (!distances || !out_values || !out_indices) {
    throw std::invalid_argument("select_k: distances, out_values and out_indices must be non-null");
  }
  switch (algo) {
    case SelectAlgo::kAuto:
    case SelectAlgo::kTruncatedBitonic:
    case SelectAlgo::kMergeQueue:
    case SelectAlgo::kQuickMultiSelect:
    case SelectAlgo::kSortTruncate: break;
    default: throw std::invalid_argument("select_k: unknown SelectAlgo value");
  }
  if (rows == 0) return;

  SelectAlgo use = algo == SelectAlgo::kAuto ? ChooseSelectAlgo(rows, cols, k) : algo;
  // Documented fallback: the bucketed kernels stop at k = 2048; larger k sort whole rows.
  if (k > kMaxSelectBucket) use = SelectAlgo::kSortTruncate;

  DeviceScope scope(res.device());
  SelectArgs a;
  a.distances = distances;
  a.rows = rows;
  a.cols = cols;
  a.row_stride = row_stride;
  a.k = static_cast<int>(k);
  a.out_values = out_values;
  a.out_indices = out_indices;
  a.in_indices = in_indices;
  a.stream = AsStream(res.stream());
  const DeviceLimits& lim = Limits(res.device());
  a.max_shared_bytes = lim.max_shared_bytes;
  a.sms = lim.sms;
  a.dram_bytes_per_us_sm = lim.dram_bytes_per_us_sm;
  const int sms = lim.sms;
  if (use == SelectAlgo::kMergeQueue || use == SelectAlgo::kQuickMultiSelect) {
    // Few long rows leave SMs idle with one block per row: cut each row into pieces (each at
    // least 16384 and 8k columns, a multiple of 4 so 16-byte loads stay aligned), select k in
    // every piece, then select k again over the pieces' results, carrying their indices.
    // Launch rows that fill the GPU: the warp-per-row merge queue needs about 32 per SM.
    const bool warp_rows = use == SelectAlgo::kMergeQueue && k <= 1024;
    const int64_t want = (warp_rows ? 32 : 6) * static_cast<int64_t>(sms);
    const int64_t min_len = std::max<int64_t>(16384, 8 * k);
    if (rows < want && cols >= 2 * min_len) {
      int64_t pieces = std::min((want + rows - 1) / rows, cols / min_len);
      int64_t len = (cols / pieces + 3) / 4 * 4;
      pieces = std::max<int64_t>(1, cols / len);  // the last piece takes the rest (>= len)
      if (pieces > 1) {
        const int64_t inter = rows * pieces * k;
        char* ws = static_cast<char*>(SelectWorkspace(
            static_cast<size_t>(inter) * (sizeof(float) + sizeof(int64_t)) + 256, a.stream, 0));
        int64_t* mid_idx = reinterpret_cast<int64_t*>(ws);
        float* mid_val = reinterpret_cast<float*>(ws + inter * sizeof(int64_t));
        SelectArgs s1 = a;
        s1.rows = rows * pieces;
        s1.segments = pieces;
        s1.seg_len = len;
        s1.out_values = mid_val;
        s1.out_indices = mid_idx;
        Launch(use, s1);
        SelectArgs s2 = a;
        s2.distances = mid_val;
        s2.cols = pieces * k;
        s2.row_stride = pieces * k;
        s2.in_indices = mid_idx;
        Launch(use, s2);
        return;
      }
    }
  }
  Launch(use, a);
}

}  // namespace fm::gpu
