// The GEMM fm::core's CPU kNN is built on: C (m x n) = A (m x d) * B (n x d)^T, row-major,
// single-threaded (callers parallelise over blocks).
#pragma once

#include <cstdint>
#include <string>

namespace fm::core::detail {

void GemmNT(int64_t m, int64_t n, int64_t d, const float* a, int64_t lda, const float* b,
            int64_t ldb, float* c, int64_t ldc);

// Makes the BLAS library run each call on the calling thread only (no nested thread pools).
void UseSingleThreadedBlas();

// "openblas" or "built-in", for reports.
std::string GemmLibraryName();

}  // namespace fm::core::detail
