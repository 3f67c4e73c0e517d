// Baseline: sort every row completely with CUB's segmented radix sort, then keep the first k.
// Rows are sorted in batches so the scratch memory stays bounded (about 2^26 words per batch).
#include <algorithm>

#include <cub/device/device_segmented_radix_sort.cuh>

#include "select/select_common.cuh"
#include "select/select_launch.cuh"

namespace fm::gpu::detail {
namespace {

// Packs rows [row0, row0 + nrows) into words, row-major with cols per row; fills the offsets.
__global__ void PackRowsKernel(const float* d, int64_t row0, int64_t nrows, int64_t cols,
                               int64_t stride, u64* out, int64_t* offsets) {
  const int64_t total = nrows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    out[i] = Pack(FloatKey(d[(row0 + r) * stride + c]), c);
  }
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r <= nrows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    offsets[r] = r * cols;
  }
}

// Writes the first k words of each sorted row (sentinel-padded past cols) as output rows.
__global__ void TakeFirstKernel(SelectArgs a, const u64* sorted, int64_t row0, int64_t nrows) {
  const int64_t total = nrows * a.k;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / a.k, j = i % a.k;
    const int64_t row = row0 + r;
    const u64 w = j < a.cols ? sorted[r * a.cols + j] : kSentinel;
    DecodeWord(a, w, row, 0, &a.out_values[row * a.k + j], &a.out_indices[row * a.k + j]);
  }
}

int GridFor(int64_t n) {
  const int64_t blocks = (n + 255) / 256;
  return static_cast<int>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

void LaunchSortTruncate(const SelectArgs& a) {
  constexpr int64_t kBatchWords = int64_t{1} << 26;
  const int64_t cols = a.cols;
  const int64_t batch =
      cols == 0 ? a.rows : std::max<int64_t>(1, std::min<int64_t>(a.rows, kBatchWords / cols));
  const int64_t words = batch * cols;
  std::size_t temp_bytes = 0;
  if (words > 0) {
    FM_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeys(
        nullptr, temp_bytes, static_cast<const u64*>(nullptr), static_cast<u64*>(nullptr),
        static_cast<int>(words), static_cast<int>(batch), static_cast<const int64_t*>(nullptr),
        static_cast<const int64_t*>(nullptr), 0, 64, a.stream));
  }
  auto align = [](std::size_t b) { return (b + 255) / 256 * 256; };
  const std::size_t key_bytes = align(static_cast<std::size_t>(words) * sizeof(u64));
  const std::size_t off_bytes = align(static_cast<std::size_t>(batch + 1) * sizeof(int64_t));
  char* ws = static_cast<char*>(
      SelectWorkspace(2 * key_bytes + off_bytes + align(temp_bytes) + 256, a.stream, 1));
  u64* keys_in = reinterpret_cast<u64*>(ws);
  u64* keys_out = reinterpret_cast<u64*>(ws + key_bytes);
  int64_t* offsets = reinterpret_cast<int64_t*>(ws + 2 * key_bytes);
  void* temp = ws + 2 * key_bytes + off_bytes;
  for (int64_t row0 = 0; row0 < a.rows; row0 += batch) {
    const int64_t n = std::min(batch, a.rows - row0);
    if (cols > 0) {
      PackRowsKernel<<<GridFor(n * cols), 256, 0, a.stream>>>(a.distances, row0, n, cols,
                                                               a.row_stride, keys_in, offsets);
      FM_CUDA_CHECK_LAUNCH();
      FM_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeys(
          temp, temp_bytes, keys_in, keys_out, static_cast<int>(n * cols), static_cast<int>(n),
          offsets, offsets + 1, 0, 64, a.stream));
    }
    TakeFirstKernel<<<GridFor(n * a.k), 256, 0, a.stream>>>(a, keys_out, row0, n);
    FM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace fm::gpu::detail
