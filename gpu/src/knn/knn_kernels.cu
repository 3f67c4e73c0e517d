// Element-wise and per-row kernels of the kNN engine: preparation of descriptors into GEMM
// operands, the distance epilogue, and the merge of partial top-k lists.
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda_check.cuh"
#include "knn/knn_common.cuh"
#include "knn/knn_kernels.cuh"

namespace fm::gpu::detail {
namespace {

constexpr int kWarp = 32;

__device__ __forceinline__ float WarpSumF(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double WarpSumD(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ long long WarpSumL(long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ int WarpSumI(int v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_add_sync(0xffffffffu, v);
#else
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
#endif
}

template <typename OutT>
__device__ __forceinline__ void StoreOperand(OutT* p, float v);
template <>
__device__ __forceinline__ void StoreOperand<float>(float* p, float v) {
  *p = v;
}
template <>
__device__ __forceinline__ void StoreOperand<__half>(__half* p, float v) {
  *p = __float2half_rn(v);
}
// An integer operand value (|v| <= 255): int8 operands without a float round trip.
template <typename OutT>
__device__ __forceinline__ void StoreIntOperand(OutT* p, int v) {
  if constexpr (std::is_same_v<OutT, int8_t>) {
    *p = static_cast<int8_t>(v);
  } else {
    StoreOperand<OutT>(p, static_cast<float>(v));
  }
}

// One warp per row. uint8 input: exact integer statistics. Float input: the CPU backend's
// preparation (centre in double, scale by float(1/sqrt(double))).
template <bool kU8, typename OutT>
__global__ void PrepareKernel(const void* __restrict__ raw, int64_t rows, int32_t dim,
                              int32_t padded_dim, MetricCode metric, OperandKind kind,
                              OutT* __restrict__ out, RowStats* __restrict__ stats) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  OutT* o = out + row * padded_dim;
  RowStats st = make_float4(0.f, 0.f, 0.f, 0.f);
  if constexpr (kU8) {
    const uint8_t* r = static_cast<const uint8_t*>(raw) + row * dim;
    const int shift = kind == OperandKind::kInt8Shifted ? 128 : 0;
    const bool raw = metric == MetricCode::kCos || metric == MetricCode::kPearson;
    long long s = 0, s2 = 0, s_raw = 0, s2_raw = 0;
    // The row's sums (shifted and raw, plain and squared) in zero's type, the operands written
    // on the way; reduce sums a lane's value over the warp.
    auto sums = [&](auto zero, auto reduce) {
      decltype(zero) a = zero, a2 = zero, b = zero, b2 = zero;
      for (int j = lane; j < padded_dim; j += kWarp) {
        int v = 0;
        if (j < dim) {
          const int x = r[j];
          v = x - shift;
          a += v;
          a2 += v * v;
          b += x;
          b2 += x * x;
        }
        StoreIntOperand<OutT>(o + j, v);
      }
      s = reduce(a);
      s2 = reduce(a2);
      if (raw) {
        s_raw = reduce(b);
        s2_raw = reduce(b2);
      }
    };
    // Sums of squares stay under 2^31 up to 32768 dimensions: int sums, one reduction each.
    if (dim <= 32768) sums(0, [](int v) { return static_cast<long long>(WarpSumI(v)); });
    else sums(0LL, [](long long v) { return WarpSumL(v); });
    st.x = static_cast<float>(s2);
    st.y = static_cast<float>(s);
    if (metric == MetricCode::kCos) {
      st.z = s2_raw > 0 ? static_cast<float>(1.0 / sqrt(static_cast<double>(s2_raw))) : 0.f;
    } else if (metric == MetricCode::kPearson) {
      const long long var = static_cast<long long>(dim) * s2_raw - s_raw * s_raw;
      st.z = var > 0 ? static_cast<float>(1.0 / sqrt(static_cast<double>(var))) : 0.f;
    }
  } else {
    const float* r = static_cast<const float*>(raw) + row * dim;
    double mean = 0;
    if (metric == MetricCode::kPearson) {
      double s = 0;
      for (int j = lane; j < dim; j += kWarp) s += r[j];
      mean = WarpSumD(s) / dim;
    }
    float scale = 1.f;
    if (metric == MetricCode::kCos || metric == MetricCode::kPearson) {
      double s2 = 0;
      for (int j = lane; j < dim; j += kWarp) {
        const float v = static_cast<float>(r[j] - mean);
        s2 += static_cast<double>(v) * v;
      }
      s2 = WarpSumD(s2);
      if (s2 > 0) scale = static_cast<float>(1.0 / sqrt(s2));
    }
    float n2 = 0, sum = 0;
    for (int j = lane; j < padded_dim; j += kWarp) {
      float v = 0;
      if (j < dim) {
        v = static_cast<float>(r[j] - mean) * scale;
        n2 += v * v;
        sum += v;
      }
      StoreOperand<OutT>(o + j, v);
    }
    st.x = WarpSumF(n2);
    st.y = WarpSumF(sum);
  }
  if (lane == 0) stats[row] = st;
}

// Distance of one (query, corpus) pair from its inner product, shared by the epilogue and (for
// the integer part) the fused kernel.
template <bool kIntIp>
__device__ __forceinline__ float PairDistance(float ipf, int ipi, const RowStats& q,
                                              const RowStats& c, MetricCode metric,
                                              OperandKind kind, int32_t dim) {
  if (kind == OperandKind::kFloat) {
    const float ip = ipf;
    if (metric == MetricCode::kL2) {
      const float d = (q.x + c.x) - 2.0f * ip;
      return d < 0.f ? 0.f : d;
    }
    if (metric == MetricCode::kIp) return -ip;
    return 1.0f - ip;
  }
  // uint8 data: the inner product is an exact integer.
  const int ip = kIntIp ? ipi : __float2int_rn(ipf);
  if (metric == MetricCode::kL2) {
    return static_cast<float>(L2FromIp(ip, q.x, c.x));
  }
  const bool shifted = kind == OperandKind::kInt8Shifted;
  const int ip_raw = shifted ? RawIpFromShifted(ip, q.y, c.y, dim) : ip;
  if (metric == MetricCode::kIp) return static_cast<float>(-ip_raw);
  if (metric == MetricCode::kCos) {
    return static_cast<float>(1.0 - static_cast<double>(ip_raw) * q.z * c.z);
  }
  // Pearson: D*ip - Sq*Sc over the product of the centred norms (times sqrt(D) each).
  const long long sq = static_cast<long long>(q.y) + (shifted ? 128LL * dim : 0);
  const long long sc = static_cast<long long>(c.y) + (shifted ? 128LL * dim : 0);
  const long long num = static_cast<long long>(dim) * ip_raw - sq * sc;
  return static_cast<float>(1.0 - static_cast<double>(num) * q.z * c.z);
}

template <bool kIntIp>
__global__ void EpilogueKernel(void* tile, int64_t rows, int64_t cols, int64_t ld,
                               const RowStats* __restrict__ qstats,
                               const RowStats* __restrict__ cstats, int64_t cstride,
                               MetricCode metric, OperandKind kind, int32_t dim) {
  const int64_t r = blockIdx.y;
  const RowStats q = qstats[r];
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t at = r * ld + c;
    float d;
    if constexpr (kIntIp) {
      d = PairDistance<true>(0.f, static_cast<const int*>(tile)[at], q, cstats[c * cstride], metric,
                             kind, dim);
    } else {
      d = PairDistance<false>(static_cast<const float*>(tile)[at], 0, q, cstats[c * cstride],
                              metric, kind, dim);
    }
    static_cast<float*>(tile)[at] = d;
  }
}

__global__ void FillEmptyKernel(float* vals, int64_t* idx, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    vals[i] = INFINITY;
    idx[i] = -1;
  }
}

// Rank of an element among `n` sorted entries of the other list: the number strictly before it
// (kStrict) or before-or-equal.
template <bool kStrict>
__device__ __forceinline__ int64_t RankIn(const float* v, const int64_t* ix, int64_t n, float x,
                                          int64_t xi) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    const bool before = kStrict ? NeighbourLess(v[mid], ix[mid], x, xi)
                                : !NeighbourLess(x, xi, v[mid], ix[mid]);
    if (before) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// One block per row; both lists staged in shared memory, every element placed by its rank.
__global__ void MergeKernel(float* run_vals, int64_t* run_idx, int64_t k,
                            const float* __restrict__ tile_vals,
                            const int64_t* __restrict__ tile_idx, int64_t kb, int64_t offset) {
  extern __shared__ unsigned char smem[];
  int64_t* ai = reinterpret_cast<int64_t*>(smem);
  int64_t* bi = ai + k;
  float* av = reinterpret_cast<float*>(bi + kb);
  float* bv = av + k;
  const int64_t row = blockIdx.x;
  float* rv = run_vals + row * k;
  int64_t* ri = run_idx + row * k;
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x) {
    av[i] = rv[i];
    ai[i] = ri[i];
  }
  for (int64_t j = threadIdx.x; j < kb; j += blockDim.x) {
    bv[j] = tile_vals[row * kb + j];
    const int64_t t = tile_idx[row * kb + j];
    bi[j] = t < 0 ? -1 : t + offset;
  }
  __syncthreads();
  // Running entries precede equal tile entries (they come from lower corpus indices anyway).
  for (int64_t i = threadIdx.x; i < k; i += blockDim.x) {
    const int64_t pos = i + RankIn<true>(bv, bi, kb, av[i], ai[i]);
    if (pos < k) {
      rv[pos] = av[i];
      ri[pos] = ai[i];
    }
  }
  for (int64_t j = threadIdx.x; j < kb; j += blockDim.x) {
    const int64_t pos = j + RankIn<false>(av, ai, k, bv[j], bi[j]);
    if (pos < k) {
      rv[pos] = bv[j];
      ri[pos] = bi[j];
    }
  }
}

__global__ void DropSelfKernel(const float* __restrict__ in_vals,
                               const int64_t* __restrict__ in_idx, int64_t k, int64_t rows,
                               int64_t row0, float* out_vals, int64_t* out_idx) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* v = in_vals + r * (k + 1);
  const int64_t* ix = in_idx + r * (k + 1);
  const int64_t self = row0 + r;
  int64_t o = 0;
  for (int64_t j = 0; j <= k && o < k; ++j) {
    if (ix[j] == self) continue;
    out_vals[r * k + o] = v[j];
    out_idx[r * k + o] = ix[j];
    ++o;
  }
}

__global__ void KthColumnKernel(const float* vals, int64_t k, int64_t rows, const float* bound,
                                float* thr) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float v = vals[r * k + k - 1];
  thr[r] = bound ? fminf(v, bound[r]) : v;
}

__global__ void NextThresholdsKernel(const float* vals, const int64_t* idx, int64_t k,
                                     int64_t rows, const float* bound, int64_t rank, float* safe,
                                     float* thr) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const bool full = idx[r * k + k - 1] >= 0;
  float s = full ? vals[r * k + k - 1] : safe[r];
  if (bound) s = fminf(s, bound[r]);
  safe[r] = s;
  thr[r] = rank > 0 && full ? fminf(vals[r * k + rank - 1], s) : s;
}

__global__ void ShortRowsKernel(const int64_t* idx, int64_t k, int64_t rows,
                                const int32_t* counts, int64_t ysplit, int64_t per,
                                int64_t max_keys, int64_t* count, int64_t* ids) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  bool redo = idx[r * k + k - 1] < 0;
  int64_t sum = 0;
  for (int64_t sl = 0; sl < ysplit && !redo; ++sl) {
    const int64_t c = counts[r * ysplit + sl];
    redo = c > per;
    sum += c;
  }
  if (!redo && sum <= max_keys) return;
  const unsigned long long pos = atomicAdd(reinterpret_cast<unsigned long long*>(count), 1ull);
  ids[pos] = r;
}

__global__ void CopyRows4Kernel(const uint32_t* src, int64_t words, const int64_t* ids,
                                int64_t count, uint32_t* dst, bool gather) {
  const int64_t total = count * words;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / words, w = e % words;
    if (gather) dst[e] = src[ids[i] * words + w];
    else dst[ids[i] * words + w] = src[e];
  }
}

unsigned GridFor(int64_t n, int block) {
  const int64_t g = (n + block - 1) / block;
  return static_cast<unsigned>(g < 1 ? 1 : (g > (1 << 30) ? (1 << 30) : g));
}

}  // namespace

void LaunchPrepare(const void* raw, bool raw_is_uint8, int64_t rows, int32_t dim,
                   int32_t padded_dim, MetricCode metric, OperandKind kind, int out_type,
                   void* operands, RowStats* stats, cudaStream_t stream) {
  if (rows <= 0) return;
  const int block = 256;
  const unsigned grid = GridFor(rows * kWarp, block);
#define FM_PREP(U8, T)                                                                   \
  PrepareKernel<U8, T><<<grid, block, 0, stream>>>(raw, rows, dim, padded_dim, metric, kind, \
                                                   static_cast<T*>(operands), stats)
  if (raw_is_uint8) {
    if (out_type == 0) FM_PREP(true, int8_t);
    else if (out_type == 1) FM_PREP(true, float);
    else FM_PREP(true, __half);
  } else {
    if (out_type == 1) FM_PREP(false, float);
    else FM_PREP(false, __half);
  }
#undef FM_PREP
  FM_CUDA_CHECK_LAUNCH();
}

void LaunchDistanceEpilogue(void* tile, bool ip_is_int, int64_t rows, int64_t cols, int64_t ld,
                            const RowStats* qstats, const RowStats* cstats, int64_t cstride,
                            MetricCode metric, OperandKind kind, int32_t dim,
                            cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int block = 256;
  int64_t gx = (cols + block * 4 - 1) / (block * 4);
  if (gx < 1) gx = 1;
  for (int64_t r0 = 0; r0 < rows; r0 += 65535) {
    const int64_t rn = rows - r0 < 65535 ? rows - r0 : 65535;
    dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(rn));
    void* t = ip_is_int ? static_cast<void*>(static_cast<int*>(tile) + r0 * ld)
                        : static_cast<void*>(static_cast<float*>(tile) + r0 * ld);
    if (ip_is_int)
      EpilogueKernel<true><<<grid, block, 0, stream>>>(t, rn, cols, ld, qstats + r0, cstats,
                                                       cstride, metric, kind, dim);
    else
      EpilogueKernel<false><<<grid, block, 0, stream>>>(t, rn, cols, ld, qstats + r0, cstats,
                                                        cstride, metric, kind, dim);
    FM_CUDA_CHECK_LAUNCH();
  }
}

void LaunchFillEmpty(float* vals, int64_t* idx, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  FillEmptyKernel<<<GridFor(count, 256), 256, 0, stream>>>(vals, idx, count);
  FM_CUDA_CHECK_LAUNCH();
}

void LaunchMergeTopK(float* run_vals, int64_t* run_idx, int64_t k, const float* tile_vals,
                     const int64_t* tile_idx, int64_t kb, int64_t offset, int64_t rows,
                     cudaStream_t stream) {
  if (rows <= 0) return;
  const std::size_t smem = static_cast<std::size_t>(k + kb) * (sizeof(float) + sizeof(int64_t));
  static std::atomic<uint64_t> shared_set{0};
  SetMaxDynamicShared(MergeKernel, 96 * 1024, shared_set);
  const int block = k + kb >= 512 ? 256 : 128;
  for (int64_t r0 = 0; r0 < rows; r0 += (1LL << 30)) {
    const int64_t rn = rows - r0 < (1LL << 30) ? rows - r0 : (1LL << 30);
    MergeKernel<<<static_cast<unsigned>(rn), block, smem, stream>>>(
        run_vals + r0 * k, run_idx + r0 * k, k, tile_vals + r0 * kb, tile_idx + r0 * kb, kb,
        offset);
    FM_CUDA_CHECK_LAUNCH();
  }
}

void LaunchDropSelf(const float* in_vals, const int64_t* in_idx, int64_t k, int64_t rows,
                    int64_t row0, float* out_vals, int64_t* out_idx, cudaStream_t stream) {
  if (rows <= 0) return;
  DropSelfKernel<<<GridFor(rows, 128), 128, 0, stream>>>(in_vals, in_idx, k, rows, row0,
                                                          out_vals, out_idx);
  FM_CUDA_CHECK_LAUNCH();
}

void LaunchKthColumn(const float* vals, int64_t k, int64_t rows, const float* bound,
                     float* thresholds, cudaStream_t stream) {
  if (rows <= 0) return;
  KthColumnKernel<<<GridFor(rows, 256), 256, 0, stream>>>(vals, k, rows, bound, thresholds);
  FM_CUDA_CHECK_LAUNCH();
}

void LaunchNextThresholds(const float* vals, const int64_t* idx, int64_t k, int64_t rows,
                          const float* bound, int64_t rank, float* safe, float* thr,
                          cudaStream_t stream) {
  if (rows <= 0) return;
  NextThresholdsKernel<<<GridFor(rows, 256), 256, 0, stream>>>(vals, idx, k, rows, bound, rank,
                                                               safe, thr);
  FM_CUDA_CHECK_LAUNCH();
}

void LaunchShortRows(const int64_t* idx, int64_t k, int64_t rows, const int32_t* counts,
                     int64_t ysplit, int64_t per, int64_t max_keys, int64_t* count,
                     int64_t* ids, cudaStream_t stream) {
  if (rows <= 0) return;
  ShortRowsKernel<<<GridFor(rows, 256), 256, 0, stream>>>(idx, k, rows, counts, ysplit, per,
                                                          max_keys, count, ids);
  FM_CUDA_CHECK_LAUNCH();
}

void LaunchCopyRows4(const void* src, int64_t words, const int64_t* ids, int64_t count, void* dst,
                     bool gather, cudaStream_t stream) {
  if (count <= 0 || words <= 0) return;
  const int64_t total = count * words;
  const int64_t blocks = std::min<int64_t>((total + 255) / 256, 65535);
  CopyRows4Kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
      static_cast<const uint32_t*>(src), words, ids, count, static_cast<uint32_t*>(dst), gather);
  FM_CUDA_CHECK_LAUNCH();
}

}  // namespace fm::gpu::detail
