// The scoring GEMM of the kNN engine through cuBLASLt: C (m x n, column-major, ldc) = A^T B with
// A stored k x m (lda) and B stored k x n (ldb), i.e. row-major corpus rows times row-major query
// rows. Descriptors and the chosen algorithm are cached per shape.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

namespace fm::gpu::detail {

enum class GemmType { kInt8, kFp32, kTf32, kFp16 };

class LtGemm {
 public:
  LtGemm() = default;
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void Run(cublasLtHandle_t handle, GemmType type, int64_t m, int64_t n, int64_t k,
           const void* a, int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc,
           void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, std::size_t>;
  std::map<Key, Plan> plans_;
};

}  // namespace fm::gpu::detail
