#include "gemm.h"

#include <algorithm>

#ifdef FM_HAVE_CBLAS
#include <cblas.h>
#endif

namespace fm::core::detail {

#ifdef FM_HAVE_CBLAS

void GemmNT(int64_t m, int64_t n, int64_t d, const float* a, int64_t lda, const float* b,
            int64_t ldb, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(d), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f,
              c, static_cast<int>(ldc));
}

void UseSingleThreadedBlas() {
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(1);
#endif
}

std::string GemmLibraryName() { return "openblas"; }

#else

// Blocked dot-product GEMM: each C entry is a dot product of two contiguous rows; blocks keep a
// few rows of B hot in cache while a block of A streams past.
void GemmNT(int64_t m, int64_t n, int64_t d, const float* a, int64_t lda, const float* b,
            int64_t ldb, float* c, int64_t ldc) {
  constexpr int64_t kBn = 64;
  for (int64_t j0 = 0; j0 < n; j0 += kBn) {
    const int64_t j1 = std::min(n, j0 + kBn);
    for (int64_t i = 0; i < m; ++i) {
      const float* ai = a + i * lda;
      for (int64_t j = j0; j < j1; ++j) {
        const float* bj = b + j * ldb;
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t t = 0;
        for (; t + 4 <= d; t += 4) {
          s0 += ai[t] * bj[t];
          s1 += ai[t + 1] * bj[t + 1];
          s2 += ai[t + 2] * bj[t + 2];
          s3 += ai[t + 3] * bj[t + 3];
        }
        for (; t < d; ++t) s0 += ai[t] * bj[t];
        c[i * ldc + j] = (s0 + s1) + (s2 + s3);
      }
    }
  }
}

void UseSingleThreadedBlas() {}

std::string GemmLibraryName() { return "built-in"; }

#endif

}  // namespace fm::core::detail
