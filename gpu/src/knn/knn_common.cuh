// Device helpers shared by the kNN kernels: the result order, integer distance formulas and the
// 64-bit (distance, index) keys of the fused path.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace fm::gpu::detail {

// Ascending value, NaN after +inf, ties to the lower index, padding (index < 0) after all.
__device__ __forceinline__ bool NeighbourLess(float va, int64_t ia, float vb, int64_t ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return nb;
  if (!na && va != vb) return va < vb;
  return ia < ib;
}

// Squared L2 distance of integer-valued rows from their (exact) squared norms and inner product.
__device__ __forceinline__ int L2FromIp(int ip, float qn2, float cn2) {
  return __float2int_rn(qn2) + __float2int_rn(cn2) - 2 * ip;
}

// Inner product of the uint8 rows from that of their int8 shifts (x - 128) and shifted sums.
__device__ __forceinline__ int RawIpFromShifted(int ip, float qsum, float csum, int dim) {
  return ip + 128 * (__float2int_rn(qsum) + __float2int_rn(csum)) + 16384 * dim;
}

// Order-preserving map of a float (no NaN) to uint32, and back.
__device__ __forceinline__ uint32_t OrderedBits(float v) {
  const uint32_t b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float FromOrderedBits(uint32_t o) {
  const uint32_t b = (o & 0x80000000u) ? (o & 0x7fffffffu) : ~o;
  return __uint_as_float(b);
}

// Fused int8 path (shifted operands x' = x - 128, row statistics s: x = squared norm, y = sum):
// distance = query term + column term + alpha * ip', all integers.
//   L2 (alpha -2): ||q'||^2 + ||c'||^2 - 2 ip'            (shift-invariant)
//   IP (alpha -1): -(ip' + 128 (sum q' + sum c') + 16384 D)
__device__ __forceinline__ int FusedQueryTerm(const float4& s, bool l2, int dim) {
  return l2 ? __float2int_rn(s.x) : -128 * __float2int_rn(s.y) - 16384 * dim;
}
__device__ __forceinline__ int FusedColumnTerm(const float4& s, bool l2) {
  return l2 ? __float2int_rn(s.x) : -128 * __float2int_rn(s.y);
}
// The test d <= threshold as column term + alpha * ip' <= limit: floor(th) - qterm, clamped to
// +-2^28 (distances stay within +-2^25, so every comparison and sum stays in int).
__device__ __forceinline__ int FusedRowLimit(float th, int qterm) {
  const long long lim = th >= 1.0e9f ? INT_MAX
                        : th < -1.0e9f ? INT_MIN
                                       : static_cast<long long>(floorf(th)) - qterm;
  return static_cast<int>(lim > (1 << 28) ? (1 << 28) : (lim < -(1 << 28) ? -(1 << 28) : lim));
}

}  // namespace fm::gpu::detail
