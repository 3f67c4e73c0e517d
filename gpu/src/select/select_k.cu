// select_k: argument checks, the choice of algorithm (kAuto) and the dispatch to a bucket of k.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include <cub/block/block_scan.cuh>

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
std::mutex g_kernel_facts_mu;
// (device, kernel) -> the dynamic shared memory limit set; (device, kernel, threads, shmem) ->
// blocks an SM.
std::map<std::pair<int, const void*>, int> g_shared_limits;
std::map<std::tuple<int, const void*, int, int>, int> g_blocks_per_sm;
}  // namespace

void RaiseSharedLimit(const void* kernel, int bytes, int device) {
  std::lock_guard<std::mutex> lock(g_kernel_facts_mu);
  int& set = g_shared_limits[{device, kernel}];
  if (set >= bytes) return;
  FM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  set = bytes;
}

int CachedBlocksPerSm(const void* kernel, int threads, int shmem, int device) {
  std::lock_guard<std::mutex> lock(g_kernel_facts_mu);
  const auto key = std::make_tuple(device, kernel, threads, shmem);
  auto it = g_blocks_per_sm.find(key);
  if (it != g_blocks_per_sm.end()) return it->second;
  int per_sm = 0;
  FM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads,
                                                              static_cast<size_t>(shmem)));
  g_blocks_per_sm.emplace(key, per_sm);
  return per_sm;
}

namespace {

// Calls the function of a's bucket of k (each taking the SelectArgs), returning what it returns.
template <auto L32, auto L64, auto L128, auto L256, auto L512, auto L1024, auto L2048>
auto DispatchBucket(const SelectArgs& a) {
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

// Whether quick multi-select takes the rows of `a` by its row-parallel path at a's bucket of k.
bool QmsTakesRowParallelAt(const SelectArgs& a) {
  return DispatchBucket<QmsSplitSuits<32>, QmsSplitSuits<64>, QmsSplitSuits<128>,
                        QmsSplitSuits<256>, QmsSplitSuits<512>, QmsSplitSuits<1024>,
                        QmsSplitSuits<2048>>(a);
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
// select_h200.jsonl; tables in bench/results/select.md). Quick multi-select is the fastest for
// every k >= 128 on every shape of both, and for smaller k wherever its row-parallel path applies
// (many rows of 2048 columns and more; at 8192 x 65536, k = 32, within 1 % of the merge queue) and
// on rows of 2^18 columns and more (cut into pieces when they are few). The merge queue (one warp
// per row) keeps k <= 64 on the other shapes, where quick multi-select would take one block per
// short row. Rows shorter than the fused kernel's 512-word pivot sample go to truncated bitonic
// sort (a warp a row, the row in registers) up to 128 columns, up to 256 above k = 32, and above
// k = 128 on any of them; to the merge queue otherwise (H200, 1000 and 8192 rows of 32 to 384
// columns: TBiS 0.35-0.98 of the merge queue's time on those cells, 0.88-1.07 on 256 columns at
// k <= 32 and 1.1-1.9 on 384 columns at k <= 128, bench/results/select_tbis_warp_h200.txt; quick
// multi-select took 1.2-5.4 times the merge queue's time on every one of those rows).
// On fewer than 1024 rows quick multi-select takes
// k <= 64 too from 4096 columns on, and the merge queue k <= 32 on 1024 to 4095 rows of under
// 3072 columns (H200, bench/results/select_auto_few_rows_h200.txt: on 1 to 1000 rows at k <= 64
// the merge queue took up to 5.1 times quick multi-select's time from 4096 columns on, in most
// cells 1.0 or more, 0.66-0.99 in some, 300 to 700 rows of 65536 columns at k <= 32 the most,
// where quick multi-select then cut its rows into pieces: uncut it takes 0.34-0.83 of the merge
// queue's time on 100 to 791 rows of 32768 to 65536 columns at k <= 32,
// select_qms_few_rows_uncut_h200.txt; on 1024 and 2048 rows of 2048 and 3000 columns at k <= 32
// 0.77-0.95, from 4096 rows 1.02-1.35).
// k above the largest bucket sorts whole rows.
SelectAlgo ChooseSelectAlgo(int64_t rows, int64_t cols, int64_t k) {
  if (k > detail::kMaxSelectBucket) return SelectAlgo::kSortTruncate;
  if (cols < detail::kBlockRowSample && k <= 512) {
    if (cols <= 128 || (cols <= 256 && k > 32) || k > 128) return SelectAlgo::kTruncatedBitonic;
    return SelectAlgo::kMergeQueue;
  }
  if (k > 64) return SelectAlgo::kQuickMultiSelect;
  const bool fits = detail::QmsRowParallelFits(cols, k);
  if (rows >= 4096 && fits) return SelectAlgo::kQuickMultiSelect;
  if (rows >= 1024 && fits && (cols >= 3072 || k > 32)) return SelectAlgo::kQuickMultiSelect;
  // Fewer rows: the merge queue runs a warp a row (rows under 32768 columns are not cut into
  // pieces), a fraction of the warps the device holds.
  if (cols >= 4096 && fits) return SelectAlgo::kQuickMultiSelect;
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

using namespace detail;

// The pieces' results between the two passes over cut rows: `words` values and indices in the
// selection workspace's slot 0.
struct PieceResults {
  float* values;
  int64_t* indices;
};
PieceResults PieceResultsWorkspace(int64_t words, cudaStream_t stream) {
  char* ws = static_cast<char*>(SelectWorkspace(
      static_cast<size_t>(words) * (sizeof(float) + sizeof(int64_t)) + 256, stream, 0));
  return {reinterpret_cast<float*>(ws + words * sizeof(int64_t)), reinterpret_cast<int64_t*>(ws)};
}

// The shortest piece a long row is cut into for k: 16384 columns and at least 8k, so that every
// piece holds many more words than the k it gives.
int64_t MinPieceLen(int64_t k) { return std::max<int64_t>(16384, 8 * k); }

// Long rows viewed as pieces. Rows of more than kBlockRowMaxCols columns stored back to back
// (row_stride == cols) are, cut into pieces of `len` columns that divide them, a matrix of
// rows x (cols / len) rows of len columns: the fused filter-and-finish kernel selects k in each
// piece, then k are selected again over each row's pieces. The length: a multiple of 4 that
// divides cols, at least 16384 and 8k columns; the longest up to kBlockRowMaxCols that makes at
// least `want` pieces in all, else the shortest (0: none).
int64_t LongRowPieceLen(int64_t rows, int64_t cols, int64_t k, int64_t want) {
  const int64_t min_len = MinPieceLen(k);
  int64_t best = 0;
  for (int64_t pieces = (cols + kBlockRowMaxCols - 1) / kBlockRowMaxCols;; ++pieces) {
    const int64_t len = cols / pieces;
    if (len < min_len) return best;
    if (len * pieces == cols && len % 4 == 0) {
      best = len;
      if (rows * pieces >= want) return best;
    }
  }
}

// Launch rows that fill the GPU for quick multi-select's one-block and fused paths.
int64_t WantRows(const SelectArgs& a) { return 6 * static_cast<int64_t>(a.sms); }

// Few rows longer than kBlockRowMaxCols that quick multi-select takes uncut (where they are not
// taken as pieces): at least kUncutMinRows of up to kUncutMaxCols columns (select_k).
constexpr int64_t kUncutMinRows = 100;
constexpr int64_t kUncutMaxCols = int64_t{1} << 18;

// The second pass over the pieces, where a row's results fit shared memory: its `pieces` runs of
// k words, each ascending by (value, column), the pieces in column order. The k-th smallest key
// is found by bisection over the keys (the words at or under a key counted by a binary search in
// each run); every run then gives its words under that key and, in run order, as many of its
// words at it as k still needs (equal keys: the lower column first). Those k words, packed with
// their place in the row's results (which orders ties by column), are sorted by the block and
// written. A block a row: 256 threads sort 256 E words (k <= 256 E).
constexpr int kMergeThreads = 256;
template <int E>
__global__ void __launch_bounds__(kMergeThreads)
    MergePiecesKernel(const float* mid_val, const int64_t* mid_idx, int pieces, int k,
                      int64_t len, bool offset, float* out_val, int64_t* out_idx) {
  constexpr int N = kMergeThreads * E;
  extern __shared__ __align__(16) unsigned char merge_smem[];
  u64* words = reinterpret_cast<u64*>(merge_smem);  // N
  int* take = reinterpret_cast<int*>(words + N);     // pieces: words a run gives
  int* first = take + pieces;                        // pieces: where they go in words[]
  unsigned* keys = reinterpret_cast<unsigned*>(first + pieces);  // pieces * k
  using Scan = cub::BlockScan<u64, kMergeThreads>;
  __shared__ typename Scan::TempStorage scan_tmp;
  __shared__ int count;
  const int t = threadIdx.x;
  const int64_t r = blockIdx.x;
  const int n = pieces * k;
  const float* v = mid_val + r * n;
  // Eight loads a thread in flight (one at a time, the few blocks of few rows waited on each).
  constexpr int kBatch = 8;
  for (int i0 = t; i0 < n; i0 += kMergeThreads * kBatch) {
    float x[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int i = i0 + b * kMergeThreads;
      x[b] = i < n ? __ldg(v + i) : 0.0f;
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int i = i0 + b * kMergeThreads;
      if (i < n) keys[i] = FloatKey(x[b]);
    }
  }
  // The words of run p under key x (or at most x).
  auto count_in = [&](int p, unsigned x, bool at_most) {
    const unsigned* run = keys + static_cast<int64_t>(p) * k;
    int lo = 0, hi = k;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (run[mid] < x || (at_most && run[mid] == x)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  };
  // The k-th key: the smallest with k words at or under it.
  unsigned lo = 0, hi = 0xffffffffu;
  while (lo < hi) {
    const unsigned mid = lo + (hi - lo) / 2;
    if (t == 0) count = 0;
    __syncthreads();
    int c = 0;
    for (int p = t; p < pieces; p += kMergeThreads) c += count_in(p, mid, true);
    if (c) atomicAdd(&count, c);
    __syncthreads();
    if (count >= k) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
    __syncthreads();  // count is cleared again
  }
  // Each thread a stretch of runs: their words under the key and at it, summed over the block.
  const int per = (pieces + kMergeThreads - 1) / kMergeThreads;
  const int p0 = min(pieces, t * per), p1 = min(pieces, p0 + per);
  u64 mine = 0;  // words under the key << 32 | words at it
  for (int p = p0; p < p1; ++p) {
    const int under = count_in(p, lo, false), at = count_in(p, lo, true) - under;
    take[p] = under;
    first[p] = at;
    mine += (u64{static_cast<unsigned>(under)} << 32) | static_cast<unsigned>(at);
  }
  u64 before = 0, all = 0;
  Scan(scan_tmp).ExclusiveSum(mine, before, all);
  const int need = k - static_cast<int>(all >> 32);  // words at the key taken, in run order
  int under_before = static_cast<int>(before >> 32);
  int at_before = static_cast<int>(before & 0xffffffffu);
  for (int p = p0; p < p1; ++p) {
    const int under = take[p], at = first[p];
    take[p] = under + max(0, min(at, need - at_before));
    first[p] = under_before + min(at_before, need);
    under_before += under;
    at_before += at;
  }
  for (int i = k + t; i < N; i += kMergeThreads) words[i] = ~u64{0};
  __syncthreads();
  for (int e = t; e < n; e += kMergeThreads) {
    const int p = e / k, i = e - p * k;
    if (i < take[p]) words[first[p] + i] = Pack(keys[e], e);
  }
  __syncthreads();
  BlockSortWords<kMergeThreads, E>(words);
  int at[E];
  float val[E];
  int64_t id[E];
#pragma unroll
  for (int m = 0; m < E; ++m) {
    const int j = t + m * kMergeThreads;
    at[m] = j < k ? static_cast<int>(words[j] & 0xffffffffu) : 0;
    val[m] = __ldg(v + at[m]);
    id[m] = __ldg(mid_idx + r * n + at[m]);
  }
#pragma unroll
  for (int m = 0; m < E; ++m) {
    const int j = t + m * kMergeThreads;
    if (j < k) {
      out_val[r * k + j] = val[m];
      out_idx[r * k + j] = offset ? at[m] / k * len + id[m] : id[m];
    }
  }
}

// Shared memory of MergePiecesKernel<E> for a row of `pieces` runs of k words.
int64_t MergePiecesShared(int e, int64_t pieces, int64_t k) {
  return int64_t{kMergeThreads} * e * 8 + pieces * 8 + pieces * k * 4;
}
int MergePiecesE(int64_t k) { return k <= 256 ? 1 : k <= 512 ? 2 : k <= 1024 ? 4 : 8; }
// Whether a row of `pieces` runs fits the merge's shared memory (beside its scan and count).
bool MergePiecesFits(const SelectArgs& a, int64_t pieces) {
  return MergePiecesShared(MergePiecesE(a.k), pieces, a.k) + 1024 <= a.max_shared_bytes;
}

// Whether quick multi-select takes long rows as pieces, a row having at most kMergeMaxPieces
// pieces whose results fit the merge's shared memory: where the rows are too few to fill the GPU
// (against rows cut for the one-block path, H100: 256 rows of 2^20 columns -9 / -9 / -24 % at
// k = 32 / 256 / 1024, 64 rows of 2^22 -19 / -18 % at k = 32 / 256, 8 rows of 2^20 -41 % at
// k = 256, k = 32 the same; 2 rows of 2^24, 512 pieces a row, +24 % at k = 32; H200: 256 rows of
// 2^20 -18 / -24 / -39 %), and for k <= 256 on devices whose DRAM outruns the row-parallel
// filter, each SM's share of its peak above kPiecesDramPerSm (an H200, about 36 KB a
// microsecond, where the filter reads 0.73-0.76 of the bandwidth on 1024 rows of 2^20 columns
// and the pieces 0.81-0.87: -12 / -12 / -11 / -10 % at k = 32 / 64 / 128 / 256, -0.4 % at 512,
// +7 % at 1024; not an H100, about 25 KB, where the filter reads 0.95 / 0.91 / 0.90 at k = 32 /
// 256 / 1024 and the pieces 0.90 / 0.85 / 0.77). bench/results/select_long_pieces_ab_h100.txt,
// select_long_pieces_ab_h200.txt. FM_SELECT_LONG_ROWS=pieces or =rows overrides the rule
// wherever the rows can be viewed as pieces whose results fit the merge.
constexpr int64_t kMergeMaxPieces = 256;
constexpr double kPiecesDramPerSm = 30000;  // bytes a microsecond
// The pieces' length where quick multi-select takes the rows as pieces, else 0.
int64_t LongRowsAsPieces(const SelectArgs& a) {
  if (a.cols <= kBlockRowMaxCols || a.row_stride != a.cols) return 0;
  const int64_t len = LongRowPieceLen(a.rows, a.cols, a.k, WantRows(a));
  if (len == 0 || !MergePiecesFits(a, a.cols / len)) return 0;
  if (const char* env = std::getenv("FM_SELECT_LONG_ROWS")) {
    if (std::strcmp(env, "pieces") == 0) return len;
    if (std::strcmp(env, "rows") == 0) return 0;
  }
  if (a.cols / len > kMergeMaxPieces) return 0;
  const bool take =
      a.rows < WantRows(a) || (a.k <= 256 && a.dram_bytes_per_us_sm > kPiecesDramPerSm);
  return take ? len : 0;
}

void SelectLongRowsAsPieces(SelectAlgo use, const SelectArgs& a, int64_t len) {
  const int64_t pieces = a.cols / len;
  const PieceResults mid = PieceResultsWorkspace(a.rows * pieces * a.k, a.stream);
  SelectArgs s1 = a;  // the caller's indices, if any, are viewed the same way
  s1.rows = a.rows * pieces;
  s1.cols = len;
  s1.row_stride = len;
  s1.out_values = mid.values;
  s1.out_indices = mid.indices;
  Launch(use, s1);
  const int e = MergePiecesE(a.k);
  auto kernel = e == 1   ? MergePiecesKernel<1>
                : e == 2 ? MergePiecesKernel<2>
                : e == 4 ? MergePiecesKernel<4>
                         : MergePiecesKernel<8>;
  const int bytes = static_cast<int>(MergePiecesShared(e, pieces, a.k));
  PrepareSharedMemory(kernel, bytes, a);
  kernel<<<static_cast<unsigned>(a.rows), kMergeThreads, bytes, a.stream>>>(
      mid.values, mid.indices, static_cast<int>(pieces), a.k, len, a.in_indices == nullptr,
      a.out_values, a.out_indices);
  FM_CUDA_CHECK_LAUNCH();
}

// Rows of a k above their length, selected whole into a workspace: out row r is its cols words
// (ascending) then k - cols of padding (+inf, -1). One thread an output word.
__global__ void PadSelectedRowsKernel(const float* values, const int64_t* indices, int64_t rows,
                                      int64_t cols, int64_t k, float* out_values,
                                      int64_t* out_indices) {
  const int64_t n = rows * k;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = t / k, j = t - r * k;
    if (j < cols) {
      out_values[t] = values[r * cols + j];
      out_indices[t] = indices[r * cols + j];
    } else {
      out_values[t] = __int_as_float(0x7f800000);
      out_indices[t] = -1;
    }
  }
}

// The workspace of the rows selected whole, at most this many bytes a batch of rows.
constexpr int64_t kPadBatchBytes = int64_t{64} << 20;

// For k above the row length (every word of a row among its k smallest): whether the rows are
// selected whole (k = cols) into a workspace and copied out with their padding, rather than by
// the kernels for k, which sort and write k words a row in the bucket of k. Measured on an H200
// (bench/results/select_k_above_cols_h200.txt, 1000 and 8192 rows of 40 to 2000 columns, k = 513
// to 3000): quick multi-select and auto gain on every shape (8192 x 128 at k = 1024 0.50 ->
// 0.11 ms, 8192 x 2000 at k = 2048 1.01 -> 0.46), the merge queue and the truncated bitonic sort
// where cols falls in a smaller bucket than k (8192 x 511 at k = 1024 0.39 -> 0.25 ms), and lose
// 8-16 % where both share one (the copy added to the same kernel). Sorting whole rows gains
// nothing from it; rows of no columns are all padding. `auto` follows the algorithm it chooses
// (on rows under 512 columns TBiS or the merge queue: 8192 x 100 at k = 128, one bucket, took
// 0.036 ms through the workspace against 0.027 by TBiS directly;
// bench/results/select_auto_h200_bd2002e.txt).
bool SelectWholeRowsThenPad(SelectAlgo algo, int64_t rows, int64_t cols, int64_t k) {
  if (cols == 0) return true;
  if (cols > kMaxSelectBucket || algo == SelectAlgo::kSortTruncate) return false;
  if (algo == SelectAlgo::kAuto) algo = ChooseSelectAlgo(rows, cols, k);
  if (algo == SelectAlgo::kQuickMultiSelect) return true;
  return k > kMaxSelectBucket || SelectBucket(cols) < SelectBucket(k);
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

  if (k > cols && SelectWholeRowsThenPad(algo, rows, cols, k)) {
    // The rows selected whole into a workspace, a batch at a time, then copied out padded.
    DeviceScope scope(res.device());
    const cudaStream_t stream = AsStream(res.stream());
    const int64_t per_row = cols * static_cast<int64_t>(sizeof(float) + sizeof(int64_t));
    const int64_t batch = std::min(rows, kPadBatchBytes / std::max<int64_t>(per_row, 1));
    char* ws = static_cast<char*>(
        SelectWorkspace(static_cast<size_t>(batch * per_row) + 256, stream, 2));
    int64_t* ws_indices = reinterpret_cast<int64_t*>(ws);
    float* ws_values = reinterpret_cast<float*>(ws + batch * cols * sizeof(int64_t));
    for (int64_t r0 = 0; r0 < rows; r0 += batch) {
      const int64_t n = std::min(batch, rows - r0);
      if (cols > 0) {
        select_k(res, distances + r0 * row_stride, n, cols, row_stride, cols, algo, ws_values,
                 ws_indices, in_indices ? in_indices + r0 * row_stride : nullptr);
      }
      const int64_t words = n * k;
      const int64_t blocks = std::min<int64_t>((words + 255) / 256, int64_t{1} << 20);
      PadSelectedRowsKernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
          ws_values, ws_indices, n, cols, k, out_values + r0 * k, out_indices + r0 * k);
      FM_CUDA_CHECK_LAUNCH();
    }
    return;
  }

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
  a.device = res.device();
  const DeviceLimits& lim = Limits(res.device());
  a.max_shared_bytes = lim.max_shared_bytes;
  a.sms = lim.sms;
  a.dram_bytes_per_us_sm = lim.dram_bytes_per_us_sm;
  const int sms = lim.sms;
  if (use == SelectAlgo::kQuickMultiSelect) {
    if (const int64_t len = LongRowsAsPieces(a)) {
      SelectLongRowsAsPieces(use, a, len);
      return;
    }
  }
  if (use == SelectAlgo::kMergeQueue || use == SelectAlgo::kQuickMultiSelect) {
    // Few long rows leave SMs idle with one block per row (where they were not taken as pieces
    // by the fused kernel above): cut each row into pieces (each at
    // least 16384 and 8k columns, a multiple of 4 so 16-byte loads stay aligned), select k in
    // every piece, then select k again over the pieces' results, carrying their indices.
    // Launch rows that fill the GPU: the warp-per-row merge queue needs about 32 per SM. Quick
    // multi-select's row-parallel path takes rows of up to kBlockRowMaxCols columns uncut, however
    // few (cut, their pieces were selected a block each; H200, 2 to 791 rows of 32768 to 65536
    // columns: uncut 0.42-0.88 of the time at k <= 64, 0.35-0.71 at k = 128 / 256, 0.18-0.54 at
    // k = 1024; bench/results/select_qms_few_rows_uncut_h200.txt), and from 100 rows those of up
    // to kUncutMaxCols the long rows' pieces did not take (100 to 700 rows of 65537 to 262143
    // columns 0.23-0.82; 8 rows of 100003 0.94-1.16, 2 rows of 4000037 at k <= 32 44 times as
    // long, likely their warp finishes over long survivor lists;
    // select_qms_few_long_rows_uncut_h200.txt).
    const bool warp_rows = use == SelectAlgo::kMergeQueue && k <= 1024;
    const int64_t want = warp_rows ? 32 * static_cast<int64_t>(sms) : WantRows(a);
    const int64_t min_len = MinPieceLen(k);
    auto uncut = [&] {
      return use == SelectAlgo::kQuickMultiSelect &&
             (cols <= kBlockRowMaxCols || (rows >= kUncutMinRows && cols <= kUncutMaxCols)) &&
             QmsTakesRowParallelAt(a);
    };
    if (rows < want && cols >= 2 * min_len && !uncut()) {
      int64_t pieces = std::min((want + rows - 1) / rows, cols / min_len);
      // Rounded down to a multiple of 4, so that cols / len keeps the count (rounded up, it had
      // lost a piece wherever 4 x pieces did not divide cols, and the last piece was nearly twice
      // the others: bench/results/select_pieces_rounding_h200.txt).
      const int64_t len = cols / pieces / 4 * 4;
      pieces = std::max<int64_t>(1, cols / len);  // the last piece takes the rest (>= len)
      if (pieces > 1) {
        const PieceResults mid = PieceResultsWorkspace(rows * pieces * k, a.stream);
        SelectArgs s1 = a;
        s1.rows = rows * pieces;
        s1.segments = pieces;
        s1.seg_len = len;
        s1.out_values = mid.values;
        s1.out_indices = mid.indices;
        Launch(use, s1);
        SelectArgs s2 = a;
        s2.distances = mid.values;
        s2.cols = pieces * k;
        s2.row_stride = pieces * k;
        s2.in_indices = mid.indices;
        Launch(use, s2);
        return;
      }
    }
  }
  Launch(use, a);
}

}  // namespace fm::gpu
