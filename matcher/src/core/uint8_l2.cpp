// Integer squared-L2 kNN for uint8 descriptors on AVX-512 VNNI.
//
// dot(q, c) is computed with vpdpbusd, which multiplies unsigned bytes by signed bytes: the corpus
// stays uint8, the query is shifted to int8 (q' = q - 128) and the shift is corrected with the
// corpus row sums: q.c = q'.c + 128 * sum(c). So
//   ||q - c||^2 = ||q||^2 + (||c||^2 - 256 * sum(c)) - 2 * q'.c,
// all in int32, exact. The corpus is packed in panels of 16 rows, four dimensions per 32-bit lane,
// so one vpdpbusd multiplies four dimensions of 16 corpus rows by four dimensions of one query.
// A micro-kernel keeps 6 queries x 64 corpus rows of accumulators in registers.
#include "uint8_l2.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "parallel.h"
#include "row_topk.h"

namespace fm::core::detail {
namespace {

constexpr int64_t kPanel = 16;         // corpus rows per packed panel (one zmm of int32)
constexpr int64_t kMicroQ = 6;         // queries per micro-kernel
constexpr int64_t kMicroC = 64;        // corpus rows per micro-kernel (4 panels)
constexpr int64_t kQueryBlock = kUint8L2QueryBlock;  // queries per work item
static_assert(kQueryBlock % kMicroQ == 0, "whole micro-kernels a work item");
constexpr int64_t kCorpusBlock = 1024; // corpus rows per tile (multiple of kMicroC)

struct PackedCorpus {
  int64_t rows = 0;         // real rows
  int64_t padded_rows = 0;  // multiple of kMicroC
  int64_t groups = 0;       // dimension / 4, rounded up
  std::vector<uint8_t> panels;  // [panel][group][16 rows][4 bytes]
  std::vector<int32_t> term;    // ||c||^2 - 256 * sum(c); padding rows: huge
};

PackedCorpus Pack(const DescriptorMatrix& c) {
  PackedCorpus p;
  p.rows = c.rows();
  p.padded_rows = (c.rows() + kMicroC - 1) / kMicroC * kMicroC;
  const int64_t d = c.dim();
  p.groups = (d + 3) / 4;
  p.panels.assign(static_cast<std::size_t>(p.padded_rows * p.groups * 4), 0);
  p.term.assign(static_cast<std::size_t>(p.padded_rows), 0);
  const uint8_t* src = c.u8();
  for (int64_t i = 0; i < p.rows; ++i) {
    const uint8_t* row = src + i * d;
    const int64_t panel = i / kPanel, lane = i % kPanel;
    uint8_t* base = p.panels.data() + panel * p.groups * kPanel * 4;
    int32_t sq = 0, sum = 0;
    for (int64_t j = 0; j < d; ++j) {
      base[(j / 4) * kPanel * 4 + lane * 4 + (j % 4)] = row[j];
      sq += int32_t{row[j]} * row[j];
      sum += row[j];
    }
    p.term[i] = sq - 256 * sum;
  }
  return p;
}

// Queries shifted to int8, rows padded to a multiple of kMicroQ, dimension to a multiple of 4.
struct ShiftedQueries {
  int64_t rows = 0, padded_rows = 0, stride = 0;
  std::vector<int8_t> data;
  std::vector<int32_t> norms;  // ||q||^2
};

ShiftedQueries Shift(const DescriptorMatrix& q) {
  ShiftedQueries s;
  s.rows = q.rows();
  s.padded_rows = (q.rows() + kMicroQ - 1) / kMicroQ * kMicroQ;
  const int64_t d = q.dim();
  s.stride = (d + 3) / 4 * 4;
  s.data.assign(static_cast<std::size_t>(s.padded_rows * s.stride), 0);
  s.norms.assign(static_cast<std::size_t>(s.padded_rows), 0);
  const uint8_t* src = q.u8();
  for (int64_t i = 0; i < s.rows; ++i) {
    int32_t sq = 0;
    for (int64_t j = 0; j < d; ++j) {
      const int32_t v = src[i * d + j];
      s.data[i * s.stride + j] = static_cast<int8_t>(v - 128);
      sq += v * v;
    }
    s.norms[i] = sq;
  }
  return s;
}

// acc[6][64] = q'[6 queries] . c[64 corpus rows] for one micro tile; writes int32 to `out`
// (row stride ldo).
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void MicroKernel(
    const int8_t* q, int64_t q_stride, const uint8_t* panels, int64_t groups, int32_t* out,
    int64_t ldo) {
  __m512i acc[kMicroQ][4];
  for (int i = 0; i < kMicroQ; ++i)
    for (int p = 0; p < 4; ++p) acc[i][p] = _mm512_setzero_si512();
  const int64_t panel_bytes = groups * kPanel * 4;
  for (int64_t g = 0; g < groups; ++g) {
    const uint8_t* cg = panels + g * kPanel * 4;
    const __m512i c0 = _mm512_loadu_si512(cg);
    const __m512i c1 = _mm512_loadu_si512(cg + panel_bytes);
    const __m512i c2 = _mm512_loadu_si512(cg + 2 * panel_bytes);
    const __m512i c3 = _mm512_loadu_si512(cg + 3 * panel_bytes);
    for (int i = 0; i < kMicroQ; ++i) {
      int32_t word;
      std::memcpy(&word, q + i * q_stride + g * 4, 4);
      const __m512i qb = _mm512_set1_epi32(word);
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], c0, qb);
      acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], c1, qb);
      acc[i][2] = _mm512_dpbusd_epi32(acc[i][2], c2, qb);
      acc[i][3] = _mm512_dpbusd_epi32(acc[i][3], c3, qb);
    }
  }
  for (int i = 0; i < kMicroQ; ++i)
    for (int p = 0; p < 4; ++p) _mm512_storeu_si512(out + i * ldo + p * kPanel, acc[i][p]);
}

// Distances of one query row of a tile, offered to its top-k; 16 at a time, skipping groups with
// no value below the row's threshold.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void ReduceRow(
    const int32_t* dots, const int32_t* term, int32_t qnorm, int64_t c0, int64_t count,
    RowTopK& top) {
  const __m512i qn = _mm512_set1_epi32(qnorm);
  int64_t j = 0;
  for (; j + 16 <= count; j += 16) {
    const __m512i dot = _mm512_loadu_si512(dots + j);
    const __m512i t = _mm512_loadu_si512(term + j);
    const __m512i dist = _mm512_sub_epi32(_mm512_add_epi32(qn, t), _mm512_slli_epi32(dot, 1));
    const __m512 df = _mm512_cvtepi32_ps(dist);
    __mmask16 m = top.AcceptsAll() ? __mmask16(0xFFFF)
                                   : _mm512_cmp_ps_mask(df, _mm512_set1_ps(top.Threshold()),
                                                        _CMP_LT_OQ);
    if (!m) continue;
    alignas(64) float buf[16];
    _mm512_store_ps(buf, df);
    while (m) {
      const int b = __builtin_ctz(m);
      m &= m - 1;
      top.Offer(buf[b], c0 + j + b);
      if (!top.AcceptsAll()) {
        // The threshold may have dropped: drop lanes that no longer qualify.
        m &= _mm512_cmp_ps_mask(df, _mm512_set1_ps(top.Threshold()), _CMP_LT_OQ);
      }
    }
  }
  for (; j < count; ++j) {
    const int32_t dist = qnorm + term[j] - 2 * dots[j];
    top.Offer(static_cast<float>(dist), c0 + j);
  }
}

}  // namespace

bool HaveUint8L2Kernel() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
}

void Uint8L2Knn(const DescriptorMatrix& queries, const DescriptorMatrix& corpus, int64_t k,
                int threads, KnnResult& out, const std::atomic<bool>* cancel) {
  const PackedCorpus pc = Pack(corpus);
  const ShiftedQueries sq = Shift(queries);
  const int64_t nq = queries.rows(), n = corpus.rows();
  const int64_t blocks = (nq + kQueryBlock - 1) / kQueryBlock;
  threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, blocks)));
  detail::RunBlocks(blocks, threads, [&](auto&& next) {
    std::vector<int32_t> tile(static_cast<std::size_t>(kQueryBlock * kCorpusBlock));
    std::vector<RowTopK> tops;
    for (int64_t b; next(b);) {
      const int64_t q0 = b * kQueryBlock;
      const int64_t qn = std::min(kQueryBlock, nq - q0);
      const int64_t qn_padded = (qn + kMicroQ - 1) / kMicroQ * kMicroQ;
      tops.clear();
      for (int64_t i = 0; i < qn; ++i)
        tops.emplace_back(k, out.distances.data() + (q0 + i) * k,
                          out.indices.data() + (q0 + i) * k);
      for (int64_t c0 = 0; c0 < n; c0 += kCorpusBlock) {
        const int64_t cn = std::min(kCorpusBlock, n - c0);
        const int64_t cn_padded = (cn + kMicroC - 1) / kMicroC * kMicroC;
        for (int64_t cm = 0; cm < cn_padded; cm += kMicroC) {
          const uint8_t* panels = pc.panels.data() + ((c0 + cm) / kPanel) * pc.groups * kPanel * 4;
          for (int64_t qm = 0; qm < qn_padded; qm += kMicroQ) {
            MicroKernel(sq.data.data() + (q0 + qm) * sq.stride, sq.stride, panels, pc.groups,
                        tile.data() + qm * kCorpusBlock + cm, kCorpusBlock);
          }
        }
        for (int64_t i = 0; i < qn; ++i)
          ReduceRow(tile.data() + i * kCorpusBlock, pc.term.data() + c0, sq.norms[q0 + i], c0, cn,
                    tops[i]);
      }
      for (auto& top : tops) top.Flush();
    }
  }, cancel);
}

}  // namespace fm::core::detail
