// Row-wise k-selection on the GPU: the k smallest values of each row of a device matrix, sorted
// ascending, with their column (or given) indices.
#pragma once

#include <cstdint>
#include <string>

#include "fm/gpu/resources.h"

namespace fm::gpu {

enum class SelectAlgo {
  kAuto,               // chosen from (rows, cols, k); see ChooseSelectAlgo
  kTruncatedBitonic,   // truncated bitonic sort (TBiS)
  kMergeQueue,         // merge queue with buffered search and hierarchical partition
  kQuickMultiSelect,   // quick multi-select with warp ballots
  kSortTruncate,       // baseline: CUB segmented radix sort, then keep the first k
};

const char* SelectAlgoName(SelectAlgo algo);
// Parses "auto", "tbis", "merge-queue", "quick-multiselect", "sort"; throws std::invalid_argument.
SelectAlgo ParseSelectAlgo(const std::string& name);

// The algorithm kAuto runs for a shape; thresholds come from bench/results (see select_k.cu).
SelectAlgo ChooseSelectAlgo(int64_t rows, int64_t cols, int64_t k);

// Selects the k smallest of each row of `distances` (device memory, row-major, fp32, row i at
// distances + i * row_stride, `cols` valid entries per row). Output (device memory, row-major,
// rows x k): `out_values` ascending, `out_indices` the column of each value, or, when
// `in_indices` is given (device, same layout as distances), in_indices[i * row_stride + col].
// Rules: ties go to the lower column; NaN sorts after +inf; when k > cols the missing slots are
// index -1, value +inf. Throws std::invalid_argument for k <= 0, null pointers, row_stride < cols.
// Work is queued on res.stream(); the call does not synchronise.
void select_k(const Resources& res, const float* distances, int64_t rows, int64_t cols,
              int64_t row_stride, int64_t k, SelectAlgo algo, float* out_values,
              int64_t* out_indices, const int64_t* in_indices = nullptr);

}  // namespace fm::gpu
