// Hopper (sm_90a) scoring kernel of the fused int8 path, for 128-byte rows (D <= 128 uint8
// descriptors). Warp-specialised: one producer warp moves each 128-row corpus block (TMA, in the
// 128-byte swizzle the tensor cores read) and its column terms (bulk copy) into a ring of shared
// memory stages, tracked by mbarriers; four consumer warpgroups (64 queries each, 256 per CTA)
// score a block with warpgroup MMA (wgmma m64n128k32, int8 x int8 -> int32, both operands from
// shared memory) and test the scores, each warpgroup at its own pace (no block-wide barrier), so
// one warpgroup's MMA runs while the others test. A test turns a score into v = cterm + alpha * ip
// (the distance minus the query's own term) and checks groups of four against the rows' limits;
// only groups holding a candidate are looked at one by one. Same inputs and outputs as the portable
// mma.sync kernel (fused_int8.cu).
//
// This file is compiled for sm_90a only (gpu/CMakeLists.txt); elsewhere the kernel body is empty
// and FusedWgmmaAvailable() is false, so it is never launched.
#include <cuda.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <string>

#include "async_copy.cuh"
#include "cuda_check.cuh"
#include "knn/knn_common.cuh"
#include "knn/knn_kernels.cuh"

namespace fm::gpu::detail {
namespace {

constexpr int kConsumerWgs = 4;               // consumer warpgroups, 64 queries each
constexpr int kQ = 64 * kConsumerWgs;         // queries per CTA
constexpr int kC = 128;                       // corpus rows per stage (the MMA's N)
constexpr int kStages = 6;                    // shared-memory ring depth
constexpr int kConsumerThreads = 128 * kConsumerWgs;
constexpr int kThreads = kConsumerThreads + 32;  // + the producer warp
constexpr int kRow = 128;                     // bytes per row: one swizzle row
constexpr int kTile = kC * kRow;              // 16 KiB per corpus stage
constexpr int kStageBytes = kTile + kC * 4;   // what a stage's full barrier waits for
// A (queries) | B stages | column-term stages | barriers: full[kStages], empty[kStages], a_full |
// per-row (counter, query term) pairs; plus slack for the 1024-byte alignment of the swizzle
// atoms.
constexpr int kBarOffset = kQ * kRow + kStages * kTile + kStages * kC * 4;
constexpr int kCntOffset = kBarOffset + (2 * kStages + 1) * 8;
constexpr int kSmemBytes = 1024 + kCntOffset + kQ * 8;

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FM_WGMMA_ENABLED 1
#endif

// Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t SmemDescriptor(const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return static_cast<uint64_t>((a >> 4) & 0x3fff) | (static_cast<uint64_t>(1024 >> 4) << 32) |
         (static_cast<uint64_t>(1) << 62);
}

#ifdef FM_WGMMA_ENABLED
__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void BarArrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(SmemAddr(bar)) : "memory");
}
// x, as a value the compiler must keep in a register: it cannot recompute it from its inputs at
// every use (which, in the rarely taken candidate path, it otherwise does at a cost of a dozen
// instructions per candidate).
__device__ __forceinline__ uint32_t Kept(uint32_t x) {
  asm volatile("" : "+r"(x));
  return x;
}
__device__ __forceinline__ int2 LdsInt2(uint32_t addr) {
  int2 v;
  asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ int LdsInt(uint32_t addr) {
  int v;
  asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ int SharedFetchAdd(uint32_t addr, int x) {
  int old;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;\n" : "=r"(old) : "r"(addr), "r"(x) : "memory");
  return old;
}
// One poll of the barrier (the producer's wait, which sleeps between polls: spinning would take
// issue slots from the consumer warps of its scheduler).
__device__ __forceinline__ bool BarTryWait(uint64_t* bar, int parity) {
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(SmemAddr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
// 2-D tile of a tensor map (x: byte column, y: row) into shared memory, completing on `bar`.
__device__ __forceinline__ void TmaLoad2d(void* dst, const CUtensorMap* map, int x, int y,
                                          uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%2, %3}], [%4];\n" ::"r"(SmemAddr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(SmemAddr(bar))
      : "memory");
}
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMA.
__device__ __forceinline__ void FenceAcc(int (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// d (64 x 128 int32 per warpgroup, 64 per thread) = A (64 x 32) * B (128 x 32)^T (+ d). The
// descriptors as their low words (the start address; it never carries into the high word) and
// the high word both share.
__device__ __forceinline__ void WgmmaS8(int (&d)[64], uint32_t lo_a, uint32_t lo_b, uint32_t hi,
                                        int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      ".reg .b64 da, db;\n"
      "mov.b64 da, {%64, %66};\n"
      "mov.b64 db, {%65, %66};\n"
      "setp.ne.b32 p, %67, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "da, db, p;\n"
      "}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
        "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
        "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
        "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
        "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]),
        "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
        "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
        "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]),
        "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]),
        "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "r"(lo_a), "r"(lo_b), "r"(hi), "r"(accumulate));
}

// The block's product for this warpgroup: K = 128 in four steps of 32 bytes (+2 in the
// descriptors' address field).
__device__ __forceinline__ void IssueBlock(int (&d)[64], uint32_t lo_a, uint32_t lo_b,
                                           uint32_t hi) {
  WgmmaFence();
#pragma unroll
  for (int ks = 0; ks < kRow / 32; ++ks) WgmmaS8(d, lo_a + 2 * ks, lo_b + 2 * ks, hi, ks > 0);
  WgmmaCommit();
}
#endif

template <bool kL2>
__global__ void __launch_bounds__(kThreads, 1)
    FusedWgmmaKernel(const __grid_constant__ CUtensorMap qmap,
                     const __grid_constant__ CUtensorMap cmap,
                     const RowStats* __restrict__ qstats, int64_t nq,
                     const int32_t* __restrict__ cterms, int64_t n, int dim,
                     const float* __restrict__ thresholds, uint64_t* __restrict__ keys,
                     int32_t* __restrict__ counts, int per, int64_t nblocks, int ysplit) {
#ifdef FM_WGMMA_ENABLED
  extern __shared__ unsigned char smem_raw[];
  // 1024-byte alignment for the swizzle atoms, by an offset from the shared array itself so that
  // the compiler keeps shared-memory instructions.
  unsigned char* smem = smem_raw + ((1024 - (SmemAddr(smem_raw) & 1023)) & 1023);
  int8_t* a_s = reinterpret_cast<int8_t*>(smem);
  int8_t* b_s = a_s + kQ * kRow;
  int32_t* ct_s = reinterpret_cast<int32_t*>(b_s + kStages * kTile);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kBarOffset);
  uint64_t* empty = full + kStages;
  uint64_t* a_full = empty + kStages;
  int* cnt_s = reinterpret_cast<int*>(smem + kCntOffset);  // [2 r]: row r's count, [2 r + 1]: term

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kQ;
  const int nblk = static_cast<int>(nblocks), n32 = static_cast<int>(n);  // n < 2^31
  if (tid == kConsumerThreads) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      MbarInitNoFence(full + s, 1);
      MbarInitNoFence(empty + s, kConsumerThreads / 32);  // lane 0 of every consumer warp
    }
    MbarInitNoFence(a_full, 1);
    MbarInitFence();
  }
  if (tid < kQ) cnt_s[2 * tid] = 0;
  __syncthreads();

  // The role as a value the compiler knows to be the same across each warp (the MMA must not be
  // seen to sit on a divergent path).
  const int role = __shfl_sync(0xffffffffu, tid / 128, 0);
  if (role == kConsumerThreads / 128) {  // producer warp: one lane issues every copy
    if (lane == 0) {
      MbarExpectTx(a_full, kQ * kRow);
#pragma unroll
      for (int w = 0; w < kConsumerWgs; ++w)  // one 64-row box per consumer warpgroup
        TmaLoad2d(a_s + w * 64 * kRow, &qmap, 0, static_cast<int>(q0) + 64 * w, a_full);
      int s = 0, phase = 0;
      for (int blk = blockIdx.y; blk < nblk; blk += ysplit) {
        while (!BarTryWait(empty + s, phase ^ 1)) __nanosleep(128);  // fresh: parity 1 passes
        MbarExpectTx(full + s, kStageBytes);
        TmaLoad2d(b_s + s * kTile, &cmap, 0, blk * kC, full + s);
        BulkCopy(ct_s + s * kC, cterms + static_cast<int64_t>(blk) * kC, kC * 4, full + s);
        if (++s == kStages) {
          s = 0;
          phase ^= 1;
        }
      }
    }
    return;
  }

  // Consumers. This thread's two query rows: accumulator rows g and g + 8 of its warp's 16.
  const int wg = warp >> 2, g = lane >> 2, t = lane & 3;
  const int r0 = wg * 64 + (warp & 3) * 16 + g, r1 = r0 + 8;
  constexpr int kAlpha = kL2 ? -2 : -1;
  int qlim0 = -(1 << 28), qlim1 = -(1 << 28), qterm0 = 0, qterm1 = 0;
  if (q0 + r0 < nq) {
    qterm0 = FusedQueryTerm(qstats[q0 + r0], kL2, dim);
    qlim0 = FusedRowLimit(thresholds[q0 + r0], qterm0);
  }
  if (q0 + r1 < nq) {
    qterm1 = FusedQueryTerm(qstats[q0 + r1], kL2, dim);
    qlim1 = FusedRowLimit(thresholds[q0 + r1], qterm1);
  }
  // The candidate path's values, kept in registers where it needs them (row r1's are derived
  // from row r0's): the offset of row r0's key slice from the block's (a query's slices are
  // ysplit * per keys apart; the host checks that kQ of them fit an int), and the address of row
  // r0's counter and query term (row r1's 8 pairs on).
  uint64_t* const keys_cta = keys + (q0 * ysplit + blockIdx.y) * per;
  const int row_keys = ysplit * per;
  const int off0 = static_cast<int>(Kept(static_cast<uint32_t>(r0 * row_keys)));
  const uint32_t cnt0 = Kept(SmemAddr(cnt_s + 2 * r0));
  if (t == 0) {
    cnt_s[2 * r0 + 1] = qterm0;
    cnt_s[2 * r1 + 1] = qterm1;
  }
  __syncwarp();  // rows r0 and r1 are this warp's own
  const uint64_t desc_a = SmemDescriptor(a_s + wg * 64 * kRow);
  const uint32_t lo_a = static_cast<uint32_t>(desc_a);
  const uint32_t hi = static_cast<uint32_t>(desc_a >> 32);

  // Writes the candidates among a row's two scores va, vb (columns col, col + 1 of the block,
  // keys' low words cb + col, cb + col + 1): one shared counter update for both. cnt: the row's
  // counter (its query term 4 bytes on); off: its key slice's offset.
  auto emit = [&](int va, int vb, int lim, int col, int valid, uint32_t cb, uint32_t cnt,
                  int off) {
    const bool pa = va <= lim && col < valid, pb = vb <= lim && col + 1 < valid;
    if (pa || pb) {
      int pos = SharedFetchAdd(cnt, static_cast<int>(pa) + static_cast<int>(pb));
      const int qterm = LdsInt(cnt + 4);
      uint64_t* out = keys_cta + off;
      if (pa) {
        if (pos < per)
          out[pos] = (static_cast<uint64_t>(OrderedBits(static_cast<float>(va + qterm))) << 32) |
                     (cb + col);
        ++pos;
      }
      if (pb && pos < per)
        out[pos] = (static_cast<uint64_t>(OrderedBits(static_cast<float>(vb + qterm))) << 32) |
                   (cb + col + 1);
    }
  };

  // Tests block `blk` (ring stage s) from its accumulators, then frees the stage.
  auto test_block = [&](int (&acc)[64], int blk, int s) {
    // acc[4j + e]: row (e < 2 ? r0 : r1), column 8j + 2t + (e & 1); v = cterm + alpha * acc.
    const int32_t* ct = ct_s + s * kC + 2 * t;
    uint32_t hits = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int2 c = *reinterpret_cast<const int2*>(ct + 8 * j);
      const int v0 = c.x + kAlpha * acc[4 * j + 0], v1 = c.y + kAlpha * acc[4 * j + 1];
      const int v2 = c.x + kAlpha * acc[4 * j + 2], v3 = c.y + kAlpha * acc[4 * j + 3];
      if (min(v0, v1) <= qlim0 || min(v2, v3) <= qlim1) hits |= 1u << j;
    }
    // The groups with a candidate, one at a time (their values picked by a jump on j). Hits are
    // sparse and spread over the lanes, so this loop seldom runs more than once or twice.
    if (hits != 0) {
      // Column 8j + 2t + e of the block exists when 8j + e < valid.
      const int valid = min(n32 - blk * kC, kC) - 2 * t;
      const uint32_t cb = static_cast<uint32_t>(blk * kC + 2 * t);
      const uint32_t ct_s_t = SmemAddr(ct_s + s * kC + 2 * t);
      do {
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
        const int2 c = LdsInt2(ct_s_t + 32 * j);
        emit(c.x + kAlpha * a[0], c.y + kAlpha * a[1], qlim0, 8 * j, valid, cb, cnt0, off0);
        emit(c.x + kAlpha * a[2], c.y + kAlpha * a[3], qlim1, 8 * j, valid, cb, cnt0 + 64,
             off0 + 8 * row_keys);
      } while (hits != 0);
    }
    __syncwarp();
    if (lane == 0) BarArrive(empty + s);
  };

  int acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0;
  MbarWait(a_full, 0);
  // Stage s's B descriptor: lo_b0 + s * kTile / 16.
  const uint32_t lo_b0 = static_cast<uint32_t>(SmemDescriptor(b_s));
  int s = 0, phase = 0;
  for (int blk = blockIdx.y; blk < nblk; blk += ysplit) {
    MbarWait(full + s, phase);
    IssueBlock(acc, lo_a, lo_b0 + s * (kTile >> 4), hi);
    WgmmaWait<0>();
    FenceAcc(acc);
    test_block(acc, blk, s);
    if (++s == kStages) {
      s = 0;
      phase ^= 1;
    }
  }

  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");  // consumers only
  if (tid < kQ && q0 + tid < nq) counts[(q0 + tid) * ysplit + blockIdx.y] = cnt_s[2 * tid];
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

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn EncodeTiled() {
  static EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    (void)cudaGetLastError();
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// Rows of 128 bytes, `rows` of them, `stride_bytes` apart; boxes of box_rows x 128 bytes,
// 128-byte swizzle; rows past the end read as zeros.
CUtensorMap RowMap(const void* base, int64_t rows, int64_t stride_bytes, int box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(kRow), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kRow), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t estr[2] = {1, 1};
  const CUresult r = EncodeTiled()(
      &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides, box, estr,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw GpuError("fused wgmma kernel: cuTensorMapEncodeTiled failed (" + std::to_string(r) +
                   ")");
  return map;
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
    ok = ok && major == 9 && minor == 0 && EncodeTiled() != nullptr && KernelUsable<true>() &&
         KernelUsable<false>();
    if (!ok) (void)cudaGetLastError();
    cached[device] = ok ? 1 : 2;
  }
  return cached[device] == 1;
}

int FusedWgmmaCtasPerSm() { return 1; }
int FusedWgmmaQueryBlock() { return kQ; }

void LaunchFusedFilterWgmma(const int8_t* queries, const RowStats* qstats, int64_t nq,
                            const int8_t* corpus, const int32_t* cterms, int64_t n,
                            int64_t row_stride, int32_t dim, MetricCode metric,
                            const float* thresholds, uint64_t* keys, int32_t* counts,
                            const FusedPlan& plan, cudaStream_t stream) {
  if (nq <= 0) return;
  const int64_t qblocks = (nq + kQ - 1) / kQ;
  const int64_t nblocks = (n + kC - 1) / kC;
  const CUtensorMap qmap = RowMap(queries, nq, kRow, 64);
  const CUtensorMap cmap = RowMap(corpus, n, row_stride * kRow, kC);
  if (static_cast<double>(kQ) * plan.ysplit * plan.per >= 2147483648.0)
    throw GpuError("fused wgmma kernel: candidate slices too large for one launch");
  dim3 grid(static_cast<unsigned>(qblocks), static_cast<unsigned>(plan.ysplit));
  static std::atomic<uint64_t> shared_set[2];
  auto launch = [&](auto kernel, int which) {
    SetMaxDynamicShared(kernel, kSmemBytes, shared_set[which]);
    kernel<<<grid, kThreads, kSmemBytes, stream>>>(qmap, cmap, qstats, nq, cterms, n, dim,
                                                    thresholds, keys, counts,
                                                    static_cast<int>(plan.per), nblocks,
                                                    static_cast<int>(plan.ysplit));
    FM_CUDA_CHECK_LAUNCH();
  };
  if (metric == MetricCode::kL2) launch(FusedWgmmaKernel<true>, 0);
  else launch(FusedWgmmaKernel<false>, 1);
}

}  // namespace fm::gpu::detail
