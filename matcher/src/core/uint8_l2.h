// Exact squared-L2 kNN of uint8 descriptors with integer dot products (AVX-512 VNNI), used by the
// CPU backend when the processor has it. Distances are exact integers, the same values the float
// path gives for uint8 data.
#pragma once

#include <cstdint>

#include "fm/core/knn.h"

namespace fm::core::detail {

// Queries a work item of Uint8L2Knn takes (a multiple of its micro-kernel's 6): a search runs on
// at most one thread per such block.
inline constexpr int64_t kUint8L2QueryBlock = 48;

// Whether this processor can run Uint8L2Knn.
bool HaveUint8L2Kernel();

// Fills `out` (already sized rows x k and padded with -1 / +inf) with the k nearest corpus rows of
// each query under squared L2. Both matrices uint8 with the same dimension. Throws Cancelled
// between blocks of queries once `cancel` is set.
void Uint8L2Knn(const DescriptorMatrix& queries, const DescriptorMatrix& corpus, int64_t k,
                int threads, KnnResult& out, const std::atomic<bool>* cancel = nullptr);

}  // namespace fm::core::detail
