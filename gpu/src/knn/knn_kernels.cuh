// Kernels of the kNN engine (gpu/src/knn): descriptor preparation, the distance epilogue after
// the GEMM, merging of partial top-k lists, the k-NN graph's self removal, and the fused int8
// scoring + threshold filter with its candidate finalisation.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fm::gpu::detail {

// How the GEMM operands encode descriptors.
enum class OperandKind : int {
  kInt8Shifted = 0,  // uint8 data stored as x - 128 (int8); int32 inner products
  kUint8Values = 1,  // uint8 data stored as float or half with their integer values
  kFloat = 2,        // float data stored as float or half (centred/normalised for cos/Pearson)
};

enum class MetricCode : int { kL2 = 0, kIp = 1, kCos = 2, kPearson = 3 };

// Per-row statistics kept beside every prepared row (one float4):
//   x: squared norm of the operand row (L2)
//   y: sum of the operand row (int8: of the shifted values; exact integers for uint8 data)
//   z: cosine: 1/||x||; Pearson on uint8: 1/sqrt(D*sum(x^2) - sum(x)^2); 0 for degenerate rows
//   w: unused
using RowStats = float4;

// Converts `rows` descriptors (row-major, `dim` wide, uint8 or float) to operands of `padded_dim`
// columns (zero padding): int8 (shifted), float or half, and computes their RowStats.
// out_type: 0 int8, 1 float, 2 half.
void LaunchPrepare(const void* raw, bool raw_is_uint8, int64_t rows, int32_t dim,
                   int32_t padded_dim, MetricCode metric, OperandKind kind, int out_type,
                   void* operands, RowStats* stats, cudaStream_t stream);

// Turns a tile of inner products (row-major [query][corpus], int32 when `ip_is_int`, else float)
// into float distances in place. Column c uses cstats[c * cstride] (strided corpus samples).
void LaunchDistanceEpilogue(void* tile, bool ip_is_int, int64_t rows, int64_t cols, int64_t ld,
                            const RowStats* qstats, const RowStats* cstats, int64_t cstride,
                            MetricCode metric, OperandKind kind, int32_t dim,
                            cudaStream_t stream);

// Fills rows x k with (+inf, -1): empty running lists.
void LaunchFillEmpty(float* vals, int64_t* idx, int64_t count, cudaStream_t stream);

// Merges, per row, the sorted running list (k entries, updated in place) with a sorted tile list
// (kb entries whose indices get `offset` added unless negative). Total order: value ascending,
// NaN after +inf, ties to the lower index, index -1 (padding) last.
void LaunchMergeTopK(float* run_vals, int64_t* run_idx, int64_t k, const float* tile_vals,
                     const int64_t* tile_idx, int64_t kb, int64_t offset, int64_t rows,
                     cudaStream_t stream);

// k-NN graph: row r of the (k+1)-lists without its own index r (or without its last entry when
// r is absent), written as k-lists. `row0` is the global index of row 0.
void LaunchDropSelf(const float* in_vals, const int64_t* in_idx, int64_t k, int64_t rows,
                    int64_t row0, float* out_vals, int64_t* out_idx, cudaStream_t stream);

// ---- fused int8 path -----------------------------------------------------------------------

// Launch shape of the fused kernel: the corpus blocks are split into `ysplit` slices (one CTA
// per query block and slice); each CTA keeps up to `per` candidates per query in its own slice
// of the key buffer (nq * ysplit * per keys, counts nq * ysplit). max_keys: the per-query
// selection's shared-memory capacity (a power of two).
struct FusedPlan {
  int64_t ysplit = 1;
  int64_t per = 16;
  int64_t max_keys = 16;
  bool gated = false;  // test groups of 8 outputs at once (sparse candidates)
};
// all_pass: every row passes (infinite thresholds); the slices are sized for all of them.
// ctas_per_sm / query_block: CTAs of the scoring kernel one SM holds and queries per CTA
// (mma.sync 2 / 128, wgmma FusedWgmmaCtasPerSm() / FusedWgmmaQueryBlock()).
FusedPlan PlanFused(int64_t nq, int64_t n, double expected_per_query, int num_sms,
                    bool all_pass = false, int ctas_per_sm = 2, int query_block = 128);

// Scores every query against corpus rows r = 0..n-1 (stored at row r * row_stride) with int8
// tensor cores and keeps the rows whose distance is <= thresholds[q] as 64-bit keys (ordered
// distance bits << 32 | r). Operands are int8 (shifted), padded_dim 64, 128 or 256.
void LaunchFusedFilterInt8(const int8_t* queries, const RowStats* qstats, int64_t nq,
                           const int8_t* corpus, const RowStats* cstats, int64_t n,
                           int64_t row_stride, int32_t padded_dim, int32_t dim, MetricCode metric,
                           const float* thresholds, uint64_t* keys, int32_t* counts,
                           const FusedPlan& plan, cudaStream_t stream);

// Hopper kernel for the same job with 128-byte rows (padded_dim 128): wgmma from swizzled shared
// memory (gpu/src/sm90a). `cterms[r]` is row r's column term (LaunchColumnTerms), contiguous and
// readable up to n rounded up to 128 rows; n < 2^31.
// FusedWgmmaAvailable: compiled in and the device is compute capability 9.0.
bool FusedWgmmaAvailable(int device);
int FusedWgmmaCtasPerSm();
int FusedWgmmaQueryBlock();
void LaunchFusedFilterWgmma(const int8_t* queries, const RowStats* qstats, int64_t nq,
                            const int8_t* corpus, const int32_t* cterms, int64_t n,
                            int64_t row_stride, int32_t dim, MetricCode metric,
                            const float* thresholds, uint64_t* keys, int32_t* counts,
                            const FusedPlan& plan, cudaStream_t stream);
// cterms[r] = the integer column term of corpus row r * row_stride (L2: its squared norm; IP:
// -128 x its shifted sum), r < n; rows n ... up to a multiple of 128 get 2^28 (never a candidate).
void LaunchColumnTerms(const RowStats* cstats, int64_t n, int64_t row_stride, MetricCode metric,
                       int32_t* cterms, cudaStream_t stream);

// Per query: gathers its candidates, sorts them, writes the first k (distance, index), padding
// with (+inf, -1). flags[0] is set when any slice or query overflowed; *total gets the number
// of candidates.
void LaunchSelectCandidates(const uint64_t* keys, const int32_t* counts, int64_t nq,
                            const FusedPlan& plan, int64_t k, float* out_vals, int64_t* out_idx,
                            int32_t* flags, int64_t* total, cudaStream_t stream);

// The next level's bounds straight from an inner level's candidates, with the rules of
// LaunchNextThresholds (k-th and rank-th distances rounded up to 16 bits below the candidates'
// first differing bit; no k-lists written). False, launching nothing, when the candidates are too
// many for it (plan.max_keys > 1024): then select and LaunchNextThresholds.
bool LaunchLevelBounds(const uint64_t* keys, const int32_t* counts, int64_t nq,
                       const FusedPlan& plan, int64_t k, int64_t rank, const float* bound,
                       float* safe, float* thr, int32_t* flags, int64_t* total,
                       cudaStream_t stream);

// Strided k-th value: thresholds[q] = vals[q * k + k - 1], or its minimum with bound[q].
void LaunchKthColumn(const float* vals, int64_t k, int64_t rows, const float* bound,
                     float* thresholds, cudaStream_t stream);

// Bounds for the next level of the fused path from this level's k-lists (vals / idx, rows of
// k): a full list's k-th value becomes the query's safe bound (min with bound[q] when given),
// a list short of k rows keeps the safe bound it had (safe[q], updated in place). thr[q] = the
// safe bound, or with rank > 0 and a full list the tentative min(vals[q * k + rank - 1], safe).
void LaunchNextThresholds(const float* vals, const int64_t* idx, int64_t k, int64_t rows,
                          const float* bound, int64_t rank, float* safe, float* thr,
                          cudaStream_t stream);

// Appends to ids (count in *count, zeroed by the caller) every row q < rows whose k-list is not
// full (idx[q * k + k - 1] < 0) or whose candidates overflowed (a slice count of a fused level
// over `per`, or their sum over max_keys).
void LaunchShortRows(const int64_t* idx, int64_t k, int64_t rows, const int32_t* counts,
                     int64_t ysplit, int64_t per, int64_t max_keys, int64_t* count, int64_t* ids,
                     cudaStream_t stream);

// Rows of `words` 4-byte words: gather (dst[i] = src[ids[i]]) or scatter (dst[ids[i]] = src[i]),
// i < count.
void LaunchCopyRows4(const void* src, int64_t words, const int64_t* ids, int64_t count, void* dst,
                     bool gather, cudaStream_t stream);

}  // namespace fm::gpu::detail
