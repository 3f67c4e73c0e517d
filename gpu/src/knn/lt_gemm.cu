#include "knn/lt_gemm.cuh"

#include <string>

#include "cuda_check.cuh"

namespace fm::gpu::detail {

LtGemm::~LtGemm() {
  for (auto& [key, p] : plans_) {
    if (p.la) cublasLtMatrixLayoutDestroy(p.la);
    if (p.lb) cublasLtMatrixLayoutDestroy(p.lb);
    if (p.lc) cublasLtMatrixLayoutDestroy(p.lc);
    if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  }
}

void LtGemm::Run(cublasLtHandle_t handle, GemmType type, int64_t m, int64_t n, int64_t k,
                 const void* a, int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc,
                 void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  const Key key{static_cast<int>(type), m, n, k, lda, ldb, ldc, workspace_bytes};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    Plan p;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    cudaDataType_t scale = CUDA_R_32F, ab = CUDA_R_32F, ct = CUDA_R_32F;
    switch (type) {
      case GemmType::kInt8:
        compute = CUBLAS_COMPUTE_32I;
        scale = CUDA_R_32I;
        ab = CUDA_R_8I;
        ct = CUDA_R_32I;
        break;
      case GemmType::kFp32:
        break;
      case GemmType::kTf32:
        compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        break;
      case GemmType::kFp16:
        ab = CUDA_R_16F;
        break;
    }
    FM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, compute, scale));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    FM_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    FM_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    FM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.la, ab, k, m, lda));
    FM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.lb, ab, k, n, ldb));
    FM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.lc, ct, m, n, ldc));
    cublasLtMatmulPreference_t pref = nullptr;
    FM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    FM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
        sizeof(workspace_bytes)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.la, p.lb, p.lc, p.lc,
                                                       pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      cublasLtMatrixLayoutDestroy(p.la);
      cublasLtMatrixLayoutDestroy(p.lb);
      cublasLtMatrixLayoutDestroy(p.lc);
      cublasLtMatmulDescDestroy(p.desc);
      throw GpuError("cuBLASLt has no algorithm for the scoring GEMM (m=" + std::to_string(m) +
                     ", n=" + std::to_string(n) + ", k=" + std::to_string(k) +
                     "); try another precision");
    }
    p.algo = result.algo;
    it = plans_.emplace(key, p).first;
  }
  const Plan& p = it->second;
  if (type == GemmType::kInt8) {
    const int32_t alpha = 1, beta = 0;
    FM_CUBLAS_CHECK(cublasLtMatmul(handle, p.desc, &alpha, a, p.la, b, p.lb, &beta, c, p.lc, c,
                                   p.lc, &p.algo, workspace, workspace_bytes, stream));
  } else {
    const float alpha = 1.f, beta = 0.f;
    FM_CUBLAS_CHECK(cublasLtMatmul(handle, p.desc, &alpha, a, p.la, b, p.lb, &beta, c, p.lc, c,
                                   p.lc, &p.algo, workspace, workspace_bytes, stream));
  }
}

}  // namespace fm::gpu::detail
