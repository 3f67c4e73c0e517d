// Hopper (sm_90a) scoring kernel of the fused int8 path, for 128-byte rows (D <= 128 uint8
// descriptors): warpgroup MMA (wgmma m64n128k32, int8 x int8 -> int32) reads the 128-query block
// and each 128-row corpus block straight from shared memory, laid out in the 128-byte swizzle the
// tensor cores expect; corpus blocks arrive through a 4-stage cp.async ring. Each thread then turns
// its 64 accumulators into v = cterm + alpha * ip (the distance minus the query's own term), keeps
// a running minimum per query row, and only when a minimum reaches the row's limit looks at the
// values one by one. Same inputs and outputs as the portable mma.sync kernel (fused_int8.cu).
//
// This file is compiled for sm_90a only (gpu/CMakeLists.txt); elsewhere the kernel body is empty
// and FusedWgmmaAvailable() is false, so it is never launched.
#include <climits>
#include <cstdint>

#include "async_copy.cuh"
#include "cuda_check.cuh"
#include "knn/knn_common.cuh"
#include "knn/knn_kernels.cuh"

namespace fm::gpu::detail {
namespace {

constexpr int kQ = 128;                     // queries per CTA: two warpgroups of 64
constexpr int kC = 128;                     // corpus rows per stage (the MMA's N)
constexpr int kStages = 4;                  // cp.async ring depth
constexpr int kThreads = 256;
constexpr int kRow = 128;                   // bytes per row: one swizzle row
constexpr int kTile = kC * kRow;            // 16 KiB per corpus stage
constexpr int kSmemBytes = 1024 /* alignment slack */ + kQ * kRow + kStages * kTile +
                           kStages * kC * 4 /* column terms */ + kQ * 4 /* counters */;

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FM_WGMMA_ENABLED 1
#endif

// Byte offset of 16-byte chunk `ch` of row `r` in a 128-byte-swizzled tile (1024-byte atoms of
// 8 rows; the chunk index is XORed with the row within the atom).
__device__ __forceinline__ int SwizzledOffset(int r, int ch) {
  return r * kRow + ((ch ^ (r & 7)) << 4);
}

// Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t SmemDescriptor(const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return static_cast<uint64_t>((a >> 4) & 0x3fff) | (static_cast<uint64_t>(1024 >> 4) << 32) |
         (static_cast<uint64_t>(1) << 62);
}

#ifdef FM_WGMMA_ENABLED
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaWaitAll() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMA.
__device__ __forceinline__ void FenceOperand(int& r) { asm volatile("" : "+r"(r)::"memory"); }

// d (64 x 128 int32 per warpgroup, 64 per thread) = A (64 x 32) * B (128 x 32)^T (+ d).
__device__ __forceinline__ void WgmmaS8(int (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                        int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p;\n"
      "}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
        "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
        "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
        "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#endif

// thresholds -> the limit on v = cterm + alpha * ip: d = qterm + v <= floor(thr).
__device__ __forceinline__ int RowLimit(float th, int qterm) {
  const long long lim = th >= 1.0e9f ? INT_MAX
                        : th < -1.0e9f ? INT_MIN
                                       : static_cast<long long>(floorf(th)) - qterm;
  // Distances stay within +-2^25: clamping keeps every comparison in int.
  return static_cast<int>(lim > (1 << 28) ? (1 << 28) : (lim < -(1 << 28) ? -(1 << 28) : lim));
}

template <bool kL2>
__global__ void __launch_bounds__(kThreads, 2)
    FusedWgmmaKernel(const int8_t* __restrict__ queries, const RowStats* __restrict__ qstats,
                     int64_t nq, const int8_t* __restrict__ corpus,
                     const int32_t* __restrict__ cterms, int64_t n, int64_t row_stride, int dim,
                     const float* __restrict__ thresholds, uint64_t* __restrict__ keys,
                     int32_t* __restrict__ counts, int per, int64_t nblocks, int ysplit) {
#ifdef FM_WGMMA_ENABLED
  extern __shared__ unsigned char smem_raw[];
  // 1024-byte alignment for the swizzle atoms, by an offset from the shared array itself so that
  // the compiler keeps shared-memory instructions (a pointer from an integer would be generic).
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem = smem_raw + ((1024 - (base & 1023)) & 1023);
  int8_t* a_s = reinterpret_cast<int8_t*>(smem);
  int8_t* b_s = a_s + kQ * kRow;
  int32_t* ct_s = reinterpret_cast<int32_t*>(b_s + kStages * kTile);
  int* cnt_s = ct_s + kStages * kC;

  const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kQ;
  constexpr int kAlpha = kL2 ? -2 : -1;

  for (int i = tid; i < kQ * 8; i += kThreads) {
    const int r = i >> 3, ch = i & 7;
    const bool ok = q0 + r < nq;
    CpAsync16(a_s + SwizzledOffset(r, ch), queries + (ok ? (q0 + r) * kRow + ch * 16 : 0),
              ok ? 16 : 0);
  }
  if (tid < kQ) cnt_s[tid] = 0;

  // This thread's two query rows (accumulator rows g and g + 8 of its warp's 16).
  const int r0 = wg * 64 + warp * 16 + g, r1 = r0 + 8;
  int qlim0 = -(1 << 28), qlim1 = -(1 << 28), qterm0 = 0, qterm1 = 0;
  auto query_term = [&](const RowStats& s) {
    return kL2 ? __float2int_rn(s.x) : -128 * __float2int_rn(s.y) - 16384 * dim;
  };
  if (q0 + r0 < nq) {
    qterm0 = query_term(qstats[q0 + r0]);
    qlim0 = RowLimit(thresholds[q0 + r0], qterm0);
  }
  if (q0 + r1 < nq) {
    qterm1 = query_term(qstats[q0 + r1]);
    qlim1 = RowLimit(thresholds[q0 + r1], qterm1);
  }

  // Loads of a corpus block: this thread copies chunk (tid & 7) of rows tid / 8 + 32 j, j < 4;
  // their swizzled places and the byte steps between its rows and between the blocks of this
  // CTA are the same for every block. Only the corpus's last block needs bounds.
  const int lrow = tid >> 3, lch = tid & 7;
  const int dst_off = SwizzledOffset(lrow, lch);
  const int64_t row_bytes = row_stride * kRow;
  const int64_t rows32_bytes = 32 * row_bytes;
  const int8_t* src0 = corpus + lrow * row_bytes + lch * 16;
  const int64_t full_blocks = n / kC;
  auto load = [&](int64_t blk, const int8_t* src, int stage) {
    int8_t* dst = b_s + stage * kTile + dst_off;
    int32_t* cdst = ct_s + stage * kC + tid * 4;
    if (blk < full_blocks) {
#pragma unroll
      for (int j = 0; j < kC / 32; ++j) CpAsync16(dst + j * 32 * kRow, src + j * rows32_bytes, 16);
      if (tid < kC / 4) CpAsync16(cdst, cterms + blk * kC + tid * 4, 16);
      return;
    }
    const int64_t valid = n - blk * kC;  // rows of this block that exist (1 ... kC - 1)
#pragma unroll
    for (int j = 0; j < kC / 32; ++j) {
      const bool ok = lrow + 32 * j < valid;
      CpAsync16(dst + j * 32 * kRow, ok ? src + j * rows32_bytes : corpus, ok ? 16 : 0);
    }
    if (tid < kC / 4) {
      const int64_t left = valid - tid * 4;
      const int bytes = left <= 0 ? 0 : (left >= 4 ? 16 : static_cast<int>(left) * 4);
      CpAsync16(cdst, bytes ? cterms + blk * kC + tid * 4 : cterms, bytes);
    }
  };

  const int64_t blk_step_bytes = static_cast<int64_t>(ysplit) * kC * row_bytes;
  const int8_t* src_next = src0 + static_cast<int64_t>(blockIdx.y) * kC * row_bytes;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    const int64_t blk = blockIdx.y + static_cast<int64_t>(s) * ysplit;
    if (blk < nblocks) load(blk, src_next, s);
    src_next += blk_step_bytes;
    CpAsyncCommit();  // the queries travel with the first group
  }

  // Where this thread's two rows keep their candidates.
  uint64_t* keys0 = keys + ((q0 + r0) * ysplit + blockIdx.y) * per;
  uint64_t* keys1 = keys + ((q0 + r1) * ysplit + blockIdx.y) * per;
  const uint64_t desc_a = SmemDescriptor(a_s + wg * 64 * kRow);
  int acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0;
  int it = 0;
  for (int64_t blk = blockIdx.y; blk < nblocks; blk += ysplit, ++it) {
    const int stage = it % kStages;
    CpAsyncWait<kStages - 2>();
    FenceProxyAsync();  // this thread's cp.async data, visible to the tensor cores' reads
    __syncthreads();    // everyone's; and the stage read last iteration is free again
    {
      const int64_t next = blk + static_cast<int64_t>(kStages - 1) * ysplit;
      if (next < nblocks) load(next, src_next, (it + kStages - 1) % kStages);
      src_next += blk_step_bytes;
      CpAsyncCommit();
    }

    const uint64_t desc_b = SmemDescriptor(b_s + stage * kTile);
    WgmmaFence();
#pragma unroll
    for (int ks = 0; ks < kRow / 32; ++ks)  // +32 bytes along K = +2 in the address field
      WgmmaS8(acc, desc_a + 2 * ks, desc_b + 2 * ks, ks > 0);
    WgmmaCommit();
    WgmmaWaitAll();
#pragma unroll
    for (int i = 0; i < 64; ++i) FenceOperand(acc[i]);

    // acc[4j + e]: row (e < 2 ? r0 : r1), column 8j + 2t + (e & 1); v = cterm + alpha * acc.
    // Group j's four values are tested together (bit j of `hits`); only the groups with a
    // candidate are looked at one by one. The accumulators are only read here, so the next
    // block's MMA finds them in place.
    const int32_t* ct = ct_s + stage * kC + 2 * t;
    uint32_t hits = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int2 c = *reinterpret_cast<const int2*>(ct + 8 * j);
      const int v0 = c.x + kAlpha * acc[4 * j + 0], v1 = c.y + kAlpha * acc[4 * j + 1];
      const int v2 = c.x + kAlpha * acc[4 * j + 2], v3 = c.y + kAlpha * acc[4 * j + 3];
      if (min(v0, v1) <= qlim0 || min(v2, v3) <= qlim1) hits |= 1u << j;
    }
    // The groups with a candidate, one at a time (their values picked by a jump on j).
    const int valid = n - blk * kC < kC ? static_cast<int>(n - blk * kC) : kC;
    const uint32_t cbase = static_cast<uint32_t>(blk * kC);
    while (hits != 0) {
      const int j = __ffs(hits) - 1;
      hits &= hits - 1;
      int a[4];
      switch (j) {
#define FM_PICK(J)                                                                          \
  case J:                                                                                   \
    a[0] = acc[4 * J];                                                                      \
    a[1] = acc[4 * J + 1];                                                                  \
    a[2] = acc[4 * J + 2];                                                                  \
    a[3] = acc[4 * J + 3];                                                                  \
    break;
        FM_PICK(0) FM_PICK(1) FM_PICK(2) FM_PICK(3) FM_PICK(4) FM_PICK(5) FM_PICK(6) FM_PICK(7)
        FM_PICK(8) FM_PICK(9) FM_PICK(10) FM_PICK(11) FM_PICK(12) FM_PICK(13) FM_PICK(14)
        FM_PICK(15)
#undef FM_PICK
        default: a[0] = a[1] = a[2] = a[3] = 0;
      }
      const int2 c = *reinterpret_cast<const int2*>(ct + 8 * j);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool lo = e < 2;
        const int col = 8 * j + 2 * t + (e & 1);
        const int v = (e & 1 ? c.y : c.x) + kAlpha * a[e];
        if (v <= (lo ? qlim0 : qlim1) && col < valid) {
          const int row = lo ? r0 : r1;
          const int d = v + (lo ? qterm0 : qterm1);
          const int pos = atomicAdd(cnt_s + row, 1);
          if (pos < per)
            (lo ? keys0 : keys1)[pos] =
                (static_cast<uint64_t>(OrderedBits(static_cast<float>(d))) << 32) | (cbase + col);
        }
      }
    }
  }
  CpAsyncWait<0>();
  __syncthreads();
  if (tid < kQ && q0 + tid < nq) counts[(q0 + tid) * ysplit + blockIdx.y] = cnt_s[tid];
#endif
}

template <bool kL2>
bool KernelUsable() {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, FusedWgmmaKernel<kL2>) != cudaSuccess) {
    (void)cudaGetLastError();  // no sm_90a image for this device: not an error of the caller
    return false;
  }
  return true;
}

}  // namespace

bool FusedWgmmaAvailable(int device) {
  static int cached[64];  // 0 unknown, 1 yes, 2 no
  if (device < 0 || device >= 64) return false;
  if (cached[device] == 0) {
    int major = 0, minor = 0;
    bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
                  cudaSuccess &&
              cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) ==
                  cudaSuccess;
    ok = ok && major == 9 && minor == 0 && KernelUsable<true>() && KernelUsable<false>();
    if (!ok) (void)cudaGetLastError();
    cached[device] = ok ? 1 : 2;
  }
  return cached[device] == 1;
}

void LaunchFusedFilterWgmma(const int8_t* queries, const RowStats* qstats, int64_t nq,
                            const int8_t* corpus, const int32_t* cterms, int64_t n,
                            int64_t row_stride, int32_t dim, MetricCode metric,
                            const float* thresholds, uint64_t* keys, int32_t* counts,
                            const FusedPlan& plan, cudaStream_t stream) {
  if (nq <= 0) return;
  const int64_t qblocks = (nq + kQ - 1) / kQ;
  const int64_t nblocks = (n + kC - 1) / kC;
  dim3 grid(static_cast<unsigned>(qblocks), static_cast<unsigned>(plan.ysplit));
  static bool attr_set[2] = {false, false};
  auto launch = [&](auto kernel, int which) {
    if (!attr_set[which]) {
      FM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         kSmemBytes));
      attr_set[which] = true;
    }
    kernel<<<grid, kThreads, kSmemBytes, stream>>>(queries, qstats, nq, corpus, cterms, n,
                                                    row_stride, dim, thresholds, keys, counts,
                                                    static_cast<int>(plan.per), nblocks,
                                                    static_cast<int>(plan.ysplit));
    FM_CUDA_CHECK_LAUNCH();
  };
  if (metric == MetricCode::kL2) launch(FusedWgmmaKernel<true>, 0);
  else launch(FusedWgmmaKernel<false>, 1);
}

}  // namespace fm::gpu::detail
