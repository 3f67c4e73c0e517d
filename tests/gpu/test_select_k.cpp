// select_k against a brute-force CPU reference: every algorithm x k x shape, nasty rows included.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fm/gpu/resources.h"
#include "fm/gpu/select_k.h"

namespace fm::gpu {
namespace {

// The order the GPU uses (see gpu/src/select/select_common.cuh), written independently here:
// -0 equals +0, every NaN is larger than +inf, ties go to the lower column.
uint32_t RefKey(float v) {
  if (std::isnan(v)) return 0xffffffffu;
  if (v == 0.0f) v = 0.0f;
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

uint32_t Bits(float v) {
  if (std::isnan(v)) return 0x7fc00000u;
  if (v == 0.0f) v = 0.0f;
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

// kSampleTrap: small increasing values exactly where quick multi-select samples a row for its first
// pivot (64 words at each of 32 evenly spaced places), large values elsewhere, so the pivot
// falls below the k-th word for most k and the row must be streamed again.
// kMixed: rows cycle through random, sample-trap and all-equal rows, so one launch holds rows the
// sampled partition finishes and rows it hands back (too few or too many survivors).
// kCrowded: every other row random, the others random but with every 16th column one of two
// neighbouring floats next to 0.001, low in the row: hundreds of candidates crowd into one bucket
// of the counting-sort finish, which refuses the row (it is selected again from the whole row).
// kNegNan: NaNs with the sign bit set (they order under -inf by their bits), a third of the
// words on even rows (the sampled pivot is such a NaN) and one in fifty on odd rows, a few NaNs
// of a clear sign bit besides.
// kZeros: random, with one word in twenty -0 and one +0: the sampled pivot is zero for k up to
// a few hundred on 8192 columns, and -0 and +0 tie (ordered by column).
// kLevels: every value one of 256 levels (about cols / 256 words share each value, as distances
// that take few values do): on rows of 65536 columns about 256 survivors share a key, which crowds
// the counting-sort finish's buckets, and the fused kernel selects the row again from its list.
enum class Fill {
  kRandom, kDuplicates, kAllEqual, kInfNan, kSorted, kReverse, kNegative, kSampleTrap, kMixed,
  kCrowded, kNegNan, kZeros, kLevels
};

struct Shape {
  const char* name;
  int64_t rows;
  int64_t cols;  // with relative_to_k: N = k + cols (so -1 is N = k - 1)
  Fill fill;
  int64_t stride_pad = 0;  // row_stride = cols + pad (an odd pad also misaligns rows)
  bool in_indices = false;
  bool relative_to_k = false;
  // FM_SELECT_LONG_ROWS for the call ("pieces": long rows stored back to back selected as
  // pieces of up to 65536 columns, then again over the pieces' results).
  const char* long_rows = nullptr;
  // FM_QMS_SLOT for the call ("1": the fused kernel's pieces by bulk copies into a slot a warp
  // wherever they can be, "0": never; unset, the device rule).
  const char* slot = nullptr;
  // FM_QMS_BLOCK_THREADS for the call ("128" / "256": the fused kernel's block size where the
  // kernel allows it; unset, the device rule).
  const char* block_threads = nullptr;
};

struct Param {
  SelectAlgo algo;
  int64_t k;
  Shape shape;
};

std::string ParamName(const testing::TestParamInfo<Param>& info) {
  std::string algo = SelectAlgoName(info.param.algo);
  std::replace(algo.begin(), algo.end(), '-', '_');
  return algo + "_k" + std::to_string(info.param.k) + "_" + info.param.shape.name;
}

class SelectKTest : public testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: select_k tests need a GPU";
  }
};

std::vector<float> MakeRows(const Shape& s, int64_t cols, int64_t stride, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float neg_nan = std::bit_cast<float>(0xffc00000u);
  std::vector<float> d(static_cast<size_t>(s.rows * stride), -12345.0f);
  for (int64_t r = 0; r < s.rows; ++r) {
    float* row = d.data() + r * stride;
    Fill fill = s.fill;
    if (fill == Fill::kMixed) {
      fill = r % 3 == 0 ? Fill::kRandom : r % 3 == 1 ? Fill::kSampleTrap : Fill::kAllEqual;
    }
    for (int64_t c = 0; c < cols; ++c) {
      float v = uni(gen);
      switch (fill) {
        case Fill::kMixed: break;
        case Fill::kCrowded:
          if (r % 2 == 1 && c % 16 == 0) v = (c / 16) % 2 ? 0.001f : std::nextafter(0.001f, 1.0f);
          break;
        case Fill::kRandom: break;
        case Fill::kDuplicates: v = static_cast<float>(gen() % 7); break;
        case Fill::kAllEqual: v = 0.5f; break;
        case Fill::kLevels: v = std::floor(v * 256.0f) / 256.0f; break;
        case Fill::kNegNan: {
          const uint32_t p = gen() % 300;
          v = p < (r % 2 == 0 ? 100u : 6u) ? neg_nan : p == 299 ? nan : v;
          break;
        }
        case Fill::kZeros: {
          const uint32_t p = gen() % 20;
          v = p == 0 ? -0.0f : p == 1 ? 0.0f : v;
          break;
        }
        case Fill::kInfNan: {
          const uint32_t p = gen() % 10;
          v = p == 0 ? nan : p == 1 ? inf : p == 2 ? -inf : p == 3 ? -0.0f : p == 4 ? 0.0f : v;
          break;
        }
        case Fill::kSorted: v = static_cast<float>(c) * 0.25f; break;
        case Fill::kReverse: v = static_cast<float>(cols - c) * 0.25f; break;
        case Fill::kNegative: v = -v * 1e30f; break;
        case Fill::kSampleTrap: {
          const int64_t step = cols / 32, t = step > 0 ? c / step : 0;
          const int64_t p = t * step / 8 * 8;
          v = (t < 32 && c >= p && c < p + 64) ? static_cast<float>(t * 64 + (c - p)) : 1e6f + v;
          break;
        }
      }
      row[c] = v;
    }
  }
  return d;
}

TEST_P(SelectKTest, MatchesCpuReference) {
  const Param& p = GetParam();
  const int64_t k = p.k;
  const int64_t cols =
      p.shape.relative_to_k ? std::max<int64_t>(0, k + p.shape.cols) : p.shape.cols;
  const int64_t rows = p.shape.rows;
  const int64_t stride = cols + p.shape.stride_pad;
  const uint32_t seed = static_cast<uint32_t>(k * 7919 + rows * 31 + cols);
  std::vector<float> host = MakeRows(p.shape, cols, stride, seed);
  std::vector<int64_t> host_ids;
  if (p.shape.in_indices) {
    host_ids.resize(host.size());
    for (size_t i = 0; i < host_ids.size(); ++i) host_ids[i] = 1000000007LL + 3 * int64_t(i);
  }

  Resources res(0);
  float* d_dist = nullptr;
  float* d_vals = nullptr;
  int64_t* d_idx = nullptr;
  int64_t* d_ids = nullptr;
  const size_t out_n = static_cast<size_t>(rows * k);
  CUDA_OK(cudaMalloc(&d_dist, std::max<size_t>(1, host.size()) * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_vals, out_n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_idx, out_n * sizeof(int64_t)));
  CUDA_OK(cudaMemcpy(d_dist, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  // Poison the outputs so unwritten slots show.
  CUDA_OK(cudaMemset(d_vals, 0x5a, out_n * sizeof(float)));
  CUDA_OK(cudaMemset(d_idx, 0x5a, out_n * sizeof(int64_t)));
  if (p.shape.in_indices) {
    CUDA_OK(cudaMalloc(&d_ids, host_ids.size() * sizeof(int64_t)));
    CUDA_OK(cudaMemcpy(d_ids, host_ids.data(), host_ids.size() * sizeof(int64_t),
                       cudaMemcpyHostToDevice));
  }
  // cudaMemcpy/cudaMemset on the legacy stream do not order with the library's non-blocking
  // stream: wait for them before queueing the selection.
  CUDA_OK(cudaDeviceSynchronize());
  {
    // The shape's FM_SELECT_LONG_ROWS, FM_QMS_SLOT and FM_QMS_BLOCK_THREADS for this call
    // only, even if it throws.
    struct ScopedEnv {
      ScopedEnv(const char* name, const char* v) : name(name), set(v != nullptr) {
        if (set) setenv(name, v, 1);
      }
      ~ScopedEnv() {
        if (set) unsetenv(name);
      }
      const char* name;
      bool set;
    } long_rows("FM_SELECT_LONG_ROWS", p.shape.long_rows), slot("FM_QMS_SLOT", p.shape.slot),
        threads("FM_QMS_BLOCK_THREADS", p.shape.block_threads);
    select_k(res, d_dist, rows, cols, stride, k, p.algo, d_vals, d_idx, d_ids);
    res.Synchronize();
  }
  std::vector<float> vals(out_n);
  std::vector<int64_t> idx(out_n);
  CUDA_OK(cudaMemcpy(vals.data(), d_vals, out_n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(idx.data(), d_idx, out_n * sizeof(int64_t), cudaMemcpyDeviceToHost));
  cudaFree(d_dist);
  cudaFree(d_vals);
  cudaFree(d_idx);
  if (d_ids) cudaFree(d_ids);

  std::vector<uint64_t> words(static_cast<size_t>(cols));
  int bad = 0;
  for (int64_t r = 0; r < rows && bad < 5; ++r) {
    const float* row = host.data() + r * stride;
    for (int64_t c = 0; c < cols; ++c)
      words[c] = (uint64_t{RefKey(row[c])} << 32) | static_cast<uint64_t>(c);
    const int64_t m = std::min(k, cols);
    std::partial_sort(words.begin(), words.begin() + m, words.end());
    for (int64_t j = 0; j < k && bad < 5; ++j) {
      int64_t want_idx = -1;
      uint32_t want_bits = 0x7f800000u;
      if (j < m) {
        const int64_t col = static_cast<int64_t>(words[j] & 0xffffffffu);
        want_idx = p.shape.in_indices ? host_ids[r * stride + col] : col;
        want_bits = Bits(row[col]);
      }
      const size_t o = static_cast<size_t>(r * k + j);
      if (idx[o] != want_idx || Bits(vals[o]) != want_bits) {
        ADD_FAILURE() << "row " << r << " slot " << j << ": got (" << vals[o] << ", " << idx[o]
                      << ") want (" << (j < m ? row[words[j] & 0xffffffffu] : INFINITY) << ", "
                      << want_idx << ")";
        ++bad;
      }
    }
  }
}

const Shape kShapes[] = {
    {"random", 37, 1000, Fill::kRandom},
    {"n1", 5, 1, Fill::kRandom},
    {"n_km1", 3, -1, Fill::kRandom, 0, false, true},
    {"n_eq_k", 3, 0, Fill::kRandom, 0, false, true},
    {"n33", 7, 33, Fill::kRandom},
    {"dups", 9, 5000, Fill::kDuplicates},
    {"all_equal", 4, 3000, Fill::kAllEqual},
    {"inf_nan", 8, 2000, Fill::kInfNan},
    {"sorted", 4, 4096, Fill::kSorted},
    {"reverse", 4, 4096, Fill::kReverse},
    {"negative", 6, 3001, Fill::kNegative},
    {"strided_ids", 5, 2500, Fill::kRandom, 3, true},
    {"n65536", 12, 65536, Fill::kRandom},
    {"sample_trap", 3, 65536, Fill::kSampleTrap},
    // For k <= 32 quick multi-select holds rows of 2048 to 16384 columns whole in shared memory
    // where the device's blocks keep enough of them in flight (on an H100 rows of 8192 columns:
    // sampled pivot, one filtering pass, the whole row again when the pivot fails),
    // otherwise and for larger k it takes them row-parallel: NaN/inf rows, sample traps,
    // misaligned rows with odd lengths, ties everywhere, and a mix in one launch.
    {"inf_nan_wide", 8, 8192, Fill::kInfNan, 1},
    {"sample_trap_16k", 8, 16384, Fill::kSampleTrap},
    {"mixed_8k", 300, 8192, Fill::kMixed, 2},
    // The rows the fused kernel refuses, selected again by its block from the row, with the
    // caller's indices on misaligned rows.
    {"mixed_8k_ids", 300, 8192, Fill::kMixed, 1, true},
    {"rows_8k_misaligned", 600, 8192, Fill::kRandom, 3},
    {"dups_8k", 200, 8191, Fill::kDuplicates, 1},
    {"dups_12k", 200, 12001, Fill::kDuplicates, 1},
    {"reverse_16k", 40, 16384, Fill::kReverse, 2},
    {"crowded_8k", 64, 8192, Fill::kCrowded},
    {"crowded_40k", 16, 40000, Fill::kCrowded, 1},
    // Rows of few values: at 65536 columns about 256 words share a value, the finish's buckets
    // up to the k-th ranked in place or, crowded past that, the row selected again from the
    // survivor list; with the caller's indices on misaligned rows at 40000 (about 156 a value);
    // at 16384 columns about 64 a value, ranked in place; at 8192 columns about 32.
    {"levels_64k", 8, 65536, Fill::kLevels},
    {"levels_40k_ids", 8, 40000, Fill::kLevels, 1, true},
    {"levels_16k", 32, 16384, Fill::kLevels},
    {"levels_8k", 64, 8192, Fill::kLevels},
    // Survivors' columns are kept in 16 bits on rows of up to 65536 columns: one column more,
    // with the smallest values at the end of the row.
    {"reverse_65537", 4, 65537, Fill::kReverse},
    {"neg_nan_8k", 16, 8192, Fill::kNegNan},
    // Aligned rows under a finite pivot of zero (the survivors' keys are made without the NaN
    // test; -0 and +0 must tie).
    {"zeros_8k", 16, 8192, Fill::kZeros},
    // Rows where k is a large share (under 8k columns) go row-parallel through the fused kernel:
    // the whole row its survivors where it fits the list (3000 columns at k = 1000), else a pivot
    // from a wider sample rank (5000 columns at k = 1000, 3000 at k = 500).
    {"mixed_3k", 300, 3000, Fill::kMixed, 1},
    {"mixed_5k", 300, 5000, Fill::kMixed, 2},
    // Longer rows, many of them, are selected row-parallel (pivot, fused filter and finish, the
    // failed rows selected again): finished and reselected rows in one launch.
    {"mixed_rows", 300, 20000, Fill::kMixed},
    {"many_rows", 8192, 40, Fill::kRandom},
    {"big_n1m", 2, 1048576, Fill::kRandom},
    // One long row: cut into pieces (quick multi-select's row-parallel path takes two rows and
    // more), k selected in each, then again over the pieces' results.
    {"one_row_64k", 1, 65536, Fill::kMixed},
};

std::vector<Param> AllParams() {
  std::vector<Param> out;
  for (SelectAlgo a : {SelectAlgo::kTruncatedBitonic, SelectAlgo::kMergeQueue,
                       SelectAlgo::kQuickMultiSelect, SelectAlgo::kSortTruncate,
                       SelectAlgo::kAuto}) {
    for (int64_t k : {1, 2, 31, 32, 33, 100, 256, 1000, 1024, 2048}) {
      for (const Shape& s : kShapes) out.push_back({a, k, s});
    }
  }
  // The 512 bucket (its row-parallel finish a counting sort, as at 1024 and 2048).
  for (const Shape& s : kShapes) out.push_back({SelectAlgo::kQuickMultiSelect, 500, s});
  // Many long rows (at least 6 a multiprocessor, so not cut into pieces) go row-parallel, their
  // groups taken in stretches across rows, with survivor lists longer than the bucket's at
  // k = 256 and 1000 on 131072 columns and k = 256 on 100003: finished and handed-back rows in
  // one launch, and an odd length (misaligned rows, a last stretch of 9 groups).
  for (SelectAlgo a : {SelectAlgo::kQuickMultiSelect, SelectAlgo::kAuto}) {
    for (int64_t k : {32, 256, 1000}) {
      out.push_back({a, k, {"long_rows", 800, 131072, Fill::kRandom}});
      out.push_back({a, k, {"long_mixed", 800, 100003, Fill::kMixed}});
    }
    // Rows of 256 values there (about 512 words a value): above k = 256 the counting-sort
    // finish's buckets crowd and its block selects each row again from the survivor list (32-bit
    // columns).
    for (int64_t k : {500, 1000}) {
      out.push_back({a, k, {"long_levels", 800, 131072, Fill::kLevels}});
    }
  }
  // Fewer rows than fill the device, of up to 65536 columns: quick multi-select takes them
  // row-parallel, uncut; with refused rows, and misaligned rows with the caller's indices and
  // NaN/inf.
  for (SelectAlgo a : {SelectAlgo::kQuickMultiSelect, SelectAlgo::kAuto}) {
    for (int64_t k : {1, 32, 256, 1000, 2048}) {
      out.push_back({a, k, {"few_rows_48k", 300, 49152, Fill::kMixed}});
      out.push_back({a, k, {"few_rows_64k_ids", 500, 65536, Fill::kInfNan, 3, true}});
    }
    // Longer, of a length the long rows' pieces cannot divide: uncut from 100 rows, cut below.
    for (int64_t k : {1, 32, 256, 1000}) {
      out.push_back({a, k, {"few_long_rows_odd", 150, 100003, Fill::kMixed}});
      out.push_back({a, k, {"fewer_long_rows_odd", 40, 100003, Fill::kDuplicates}});
    }
  }
  // Rows enough that the pivot kernel takes more than one wave of blocks (on an H100 5280 rows
  // with a 512-word sample, 3168 with 1024 or 2048 words): the fused kernel then starts each row
  // on its own pivot as the pivot kernel publishes it, and takes its rows from a counter; rows
  // handed back among them (mixed rows), an odd stride (misaligned rows, samples by scalar
  // loads), each sample size.
  for (SelectAlgo a : {SelectAlgo::kQuickMultiSelect, SelectAlgo::kAuto}) {
    for (int64_t k : {32, 256, 1000}) {
      out.push_back({a, k, {"published_8k", 6000, 8192, Fill::kMixed}});
    }
    out.push_back({a, 100, {"published_16k_misaligned", 6000, 16384, Fill::kRandom, 1}});
    out.push_back({a, 1000, {"published_20k", 3500, 20000, Fill::kMixed}});
    out.push_back({a, 256, {"published_33k", 3300, 33000, Fill::kDuplicates}});
  }
  // Long rows stored back to back, as pieces (forced; the rule takes them where they measured
  // faster): pieces of 16384 columns on few rows (16 a row of 2^18, 12 a row of 196608 with the
  // caller's indices and NaN/inf, 300000 columns in pieces of 20000), 65536 on enough rows; the
  // second pass merges each row's sorted pieces in shared memory. Where their results would not
  // fit it (256 pieces a row of 2^22 at k = 256, 1000 and 2048) the rows stay on the cut-rows path.
  for (SelectAlgo a : {SelectAlgo::kQuickMultiSelect, SelectAlgo::kAuto}) {
    for (int64_t k : {1, 32, 256, 1000, 2048}) {
      out.push_back({a, k, {"long_pieces", 48, 262144, Fill::kMixed, 0, false, false, "pieces"}});
      out.push_back(
          {a, k, {"long_pieces_ids", 16, 196608, Fill::kInfNan, 0, true, false, "pieces"}});
      out.push_back({a, k, {"long_pieces_300k", 8, 300000, Fill::kDuplicates, 0, false, false,
                            "pieces"}});
      out.push_back({a, k, {"long_pieces_2rows", 2, 4194304, Fill::kMixed, 0, false, false,
                            "pieces"}});
    }
    for (int64_t k : {32, 1000}) {
      out.push_back({a, k, {"long_pieces_many", 400, 131072, Fill::kRandom, 0, false, false,
                            "pieces"}});
    }
  }
  // The fused kernel's pieces by bulk copies into a slot a warp (forced; the device rule takes
  // them on devices with more DRAM bandwidth an SM): 8192 columns with rows refused and
  // reselected, 6000 (warps of one and of two pieces a row), 8000 (a last piece of 832 columns)
  // with NaN/inf, 4096 (a piece a warp, sorted rows), a padded stride of aligned rows, enough
  // rows that blocks take several; and rows the slots cannot take (an odd length, misaligned)
  // with the switch on.
  for (SelectAlgo a : {SelectAlgo::kQuickMultiSelect, SelectAlgo::kAuto}) {
    for (int64_t k : {32, 100, 256}) {
      out.push_back({a, k, {"slot_8k", 2000, 8192, Fill::kMixed, 0, false, false, nullptr, "1"}});
      out.push_back({a, k, {"slot_6000", 900, 6000, Fill::kDuplicates, 0, false, false, nullptr,
                            "1"}});
      out.push_back({a, k, {"slot_8000", 900, 8000, Fill::kInfNan, 4, true, false, nullptr,
                            "1"}});
      out.push_back({a, k, {"slot_4096", 900, 4096, Fill::kSorted, 0, false, false, nullptr,
                            "1"}});
      out.push_back({a, k, {"slot_8190", 300, 8190, Fill::kRandom, 0, false, false, nullptr,
                            "1"}});
      out.push_back({a, k, {"slot_misaligned", 300, 8192, Fill::kMixed, 1, false, false, nullptr,
                            "1"}});
    }
    out.push_back({a, 64, {"no_slot_8k", 2000, 8192, Fill::kMixed, 0, false, false, nullptr,
                           "0"}});
  }
  // The fused kernel's block size forced (the device rule takes 128 threads on rows of up to
  // 16384 columns at k <= 256 on devices with more DRAM bandwidth an SM): 128 threads on 16384
  // columns with refused rows, on 12288 misaligned rows and on 10000 with the caller's indices
  // (a last piece of 784 columns); 256 on 8192 columns.
  for (SelectAlgo a : {SelectAlgo::kQuickMultiSelect, SelectAlgo::kAuto}) {
    for (int64_t k : {32, 100, 256}) {
      out.push_back({a, k, {"narrow_16k", 1200, 16384, Fill::kMixed, 0, false, false, nullptr,
                            nullptr, "128"}});
      out.push_back({a, k, {"narrow_12k_misaligned", 600, 12288, Fill::kDuplicates, 1, false,
                            false, nullptr, nullptr, "128"}});
      out.push_back({a, k, {"narrow_10000_ids", 600, 10000, Fill::kInfNan, 0, true, false,
                            nullptr, nullptr, "128"}});
      out.push_back({a, k, {"wide_8k", 1200, 8192, Fill::kMixed, 0, false, false, nullptr,
                            nullptr, "256"}});
    }
  }
  // Rows shorter than 512 columns, which auto gives the merge queue where TBiS is not the faster
  // (its queue in registers up to k = 128): more rows than there are warps resident, so each warp
  // takes several rows one after the other; k under, equal to and over the row; an odd stride
  // (rows not 16-byte aligned, loaded by scalars) with the caller's indices.
  for (SelectAlgo a : {SelectAlgo::kMergeQueue, SelectAlgo::kAuto}) {
    for (int64_t k : {100, 300, 500}) {
      out.push_back({a, k, {"short_9k", 9000, 300, Fill::kMixed}});
    }
    out.push_back({a, 64, {"short_9k_misaligned_ids", 9000, 383, Fill::kDuplicates, 1, true}});
  }
  // Rows of up to 512 columns, which truncated bitonic sort takes a warp a row with the row in
  // registers: k under, equal to and over the row (in its bucket and past it), rows of one, two,
  // four, eight and sixteen registers a lane, an odd stride with the caller's indices, ties,
  // NaN and inf, and more rows than the warps resident (an H200's warps take several rows each).
  for (SelectAlgo a : {SelectAlgo::kTruncatedBitonic, SelectAlgo::kAuto}) {
    for (int64_t k : {1, 2, 8, 31, 32, 33, 64, 100, 128, 200, 256, 500, 512}) {
      out.push_back({a, k, {"short_rows_20", 64, 20, Fill::kRandom}});
      out.push_back({a, k, {"short_rows_97_dups", 1000, 97, Fill::kDuplicates, 1}});
      out.push_back({a, k, {"short_rows_301_ids", 700, 301, Fill::kInfNan, 3, true}});
      out.push_back({a, k, {"short_rows_512", 300, 512, Fill::kMixed}});
      out.push_back({a, k, {"short_rows_10k", 10000, 130, Fill::kMixed}});
    }
    out.push_back({a, 64, {"short_rows_all_equal", 50, 200, Fill::kAllEqual}});
    out.push_back({a, 256, {"short_rows_sorted", 40, 511, Fill::kSorted}});
    out.push_back({a, 256, {"short_rows_reverse", 40, 509, Fill::kReverse}});
  }
  // k above the row length: the rows selected whole (k = cols) into a workspace, a batch of rows
  // at a time (64 MiB: 5592 rows of 1000 columns), then copied out with their padding; every
  // algorithm but the sort takes that way on these three shapes. 7000 misaligned rows with the
  // caller's indices at k = 2048 (two batches, the second's rows and indices offset); k past the
  // largest bucket over 700 columns (the bucketed algorithms still select the rows, the sort
  // fallback is not needed); rows of no columns (padding only, the sort too). (Rows in the bucket
  // of k, taken this way by quick multi-select, and by auto where it chooses quick multi-select:
  // "random" at k = 1024, "n_km1" from k = 1000; auto's TBiS and merge queue select "n_km1" and
  // "short_rows_97_dups" at k = 100 and 128 directly.)
  for (SelectAlgo a : {SelectAlgo::kTruncatedBitonic, SelectAlgo::kMergeQueue,
                       SelectAlgo::kQuickMultiSelect, SelectAlgo::kSortTruncate,
                       SelectAlgo::kAuto}) {
    out.push_back({a, 2048, {"pad_batches_ids", 7000, 1000, Fill::kDuplicates, 1, true}});
    out.push_back({a, 3000, {"pad_past_bucket", 50, 700, Fill::kInfNan}});
    out.push_back({a, 5, {"no_cols", 6, 0, Fill::kRandom}});
  }
  // Past the largest bucket: the documented fallback.
  out.push_back({SelectAlgo::kQuickMultiSelect, 3000, {"random", 3, 5000, Fill::kRandom}});
  out.push_back(
      {SelectAlgo::kTruncatedBitonic, 2049, {"n_km1", 2, -1, Fill::kRandom, 0, false, true}});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AlgoKShape, SelectKTest, testing::ValuesIn(AllParams()), ParamName);

class SelectKArgs : public testing::Test {
 protected:
  void SetUp() override {
    if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: select_k tests need a GPU";
  }
};

TEST_F(SelectKArgs, RejectsBadArguments) {
  Resources res(0);
  float* d = nullptr;
  float* v = nullptr;
  int64_t* i = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&v, 64 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&i, 64 * sizeof(int64_t)), cudaSuccess);
  const auto A = SelectAlgo::kAuto;
  EXPECT_THROW(select_k(res, d, 1, 8, 8, 0, A, v, i), std::invalid_argument);
  EXPECT_THROW(select_k(res, d, 1, 8, 8, -3, A, v, i), std::invalid_argument);
  EXPECT_THROW(select_k(res, nullptr, 1, 8, 8, 2, A, v, i), std::invalid_argument);
  EXPECT_THROW(select_k(res, d, 1, 8, 8, 2, A, nullptr, i), std::invalid_argument);
  EXPECT_THROW(select_k(res, d, 1, 8, 8, 2, A, v, nullptr), std::invalid_argument);
  EXPECT_THROW(select_k(res, d, 1, 8, 7, 2, A, v, i), std::invalid_argument);
  EXPECT_THROW(select_k(res, d, -1, 8, 8, 2, A, v, i), std::invalid_argument);
  EXPECT_THROW(select_k(res, d, 1, int64_t{1} << 33, int64_t{1} << 33, 2, A, v, i),
               std::invalid_argument);
  EXPECT_NO_THROW(select_k(res, d, 0, 8, 8, 2, A, v, i));
  res.Synchronize();
  cudaFree(d);
  cudaFree(v);
  cudaFree(i);
}

TEST(SelectAlgoNames, RoundTrip) {
  for (SelectAlgo a : {SelectAlgo::kAuto, SelectAlgo::kTruncatedBitonic, SelectAlgo::kMergeQueue,
                       SelectAlgo::kQuickMultiSelect, SelectAlgo::kSortTruncate}) {
    EXPECT_EQ(ParseSelectAlgo(SelectAlgoName(a)), a);
  }
  EXPECT_THROW(ParseSelectAlgo("heap"), std::invalid_argument);
  EXPECT_NE(ChooseSelectAlgo(8192, 65536, 4096), SelectAlgo::kAuto);
}

// The measured rule of kAuto at the edges its benchmarks drew (select_k.cu; no device needed).
TEST(SelectAuto, ChoosesAsMeasured) {
  const SelectAlgo mq = SelectAlgo::kMergeQueue, qms = SelectAlgo::kQuickMultiSelect;
  const SelectAlgo tbis = SelectAlgo::kTruncatedBitonic;
  const struct {
    int64_t rows, cols, k;
    SelectAlgo want;
  } cases[] = {
      {8192, 8192, 32, qms},  // many rows, row-parallel
      // Under the 512-word pivot sample: TBiS a warp a row where it was the faster, else the
      // merge queue.
      {8192, 128, 1, tbis}, {8192, 256, 32, mq}, {8192, 256, 33, tbis}, {8192, 257, 128, mq},
      {1000, 384, 129, tbis}, {8192, 511, 512, tbis}, {8192, 512, 32, mq}, {8192, 512, 100, qms},
      // Fewer than 1024 rows at k <= 64: quick multi-select from 4096 columns on.
      {300, 3000, 32, mq}, {300, 4096, 32, qms}, {10, 30000, 1, qms}, {1, 100000, 64, qms},
      {500, 65536, 65, qms}, {100, int64_t{1} << 18, 32, qms},
      // 1024 to 4095 rows of under 3072 columns at k <= 32: the merge queue.
      {2048, 3000, 32, mq}, {2048, 3000, 64, qms}, {2048, 3072, 8, qms}, {4096, 2048, 1, qms},
      {100, 8192, 4096, SelectAlgo::kSortTruncate},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SelectAlgoName(ChooseSelectAlgo(c.rows, c.cols, c.k)), SelectAlgoName(c.want))
        << c.rows << " x " << c.cols << " at k = " << c.k;
  }
}

}  // namespace
}  // namespace fm::gpu
