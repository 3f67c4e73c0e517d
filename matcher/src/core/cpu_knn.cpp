// The CPU exact kNN backend: blocks of queries against blocks of the corpus, distances from one
// GEMM per block pair (||q||^2 + ||c||^2 - 2 q.c for L2), each block's rows reduced at once into
// the running per-query top-k while the block is still in cache. Threads take query blocks.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "fm/core/knn.h"
#include "gemm.h"
#include "order.h"
#include "parallel.h"
#include "row_topk.h"
#include "uint8_l2.h"

namespace fm::core {
namespace {

constexpr int64_t kQueryBlock = 64;
constexpr int64_t kCorpusBlock = 1024;

// Float copy of descriptors prepared for a metric: centred for Pearson, unit length for cosine
// and Pearson (zero vectors stay zero), plus squared norms for L2.
struct Prepared {
  std::vector<float> data;
  std::vector<float> norms;  // L2 only
  int32_t dim = 0;
};

Prepared Prepare(const DescriptorMatrix& m, Metric metric) {
  Prepared p;
  p.dim = m.dim();
  const int64_t n = m.rows();
  const int32_t d = m.dim();
  p.data.resize(static_cast<std::size_t>(n) * d);
  if (m.type() == DescriptorType::kUint8) {
    const uint8_t* src = m.u8();
    for (std::size_t i = 0; i < p.data.size(); ++i) p.data[i] = static_cast<float>(src[i]);
  } else {
    std::copy(m.f32(), m.f32() + p.data.size(), p.data.begin());
  }
  if (metric == Metric::kL2Squared) {
    p.norms.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      const float* r = p.data.data() + i * d;
      float s = 0;
      for (int32_t j = 0; j < d; ++j) s += r[j] * r[j];
      p.norms[i] = s;
    }
  } else if (metric == Metric::kCosine || metric == Metric::kPearson) {
    for (int64_t i = 0; i < n; ++i) {
      float* r = p.data.data() + i * d;
      if (metric == Metric::kPearson) {
        double mean = 0;
        for (int32_t j = 0; j < d; ++j) mean += r[j];
        mean /= d;
        for (int32_t j = 0; j < d; ++j) r[j] = static_cast<float>(r[j] - mean);
      }
      double s = 0;
      for (int32_t j = 0; j < d; ++j) s += static_cast<double>(r[j]) * r[j];
      if (s > 0) {
        const float inv = static_cast<float>(1.0 / std::sqrt(s));
        for (int32_t j = 0; j < d; ++j) r[j] *= inv;
      }
    }
  }
  return p;
}

using detail::RowTopK;

class CpuKnnBackend final : public KnnBackend {
 public:
  explicit CpuKnnBackend(const CpuKnnOptions& options)
      : integer_kernel_(options.integer_kernels && detail::HaveUint8L2Kernel()),
        max_threads_(options.threads > 0 ? options.threads : HardwareThreads()) {
    detail::UseSingleThreadedBlas();
  }

  std::string name() const override { return "cpu"; }
  std::string description() const override {
    // What a user reads as "the threads it used": the limit before any search, then what the
    // searches took (a --threads 1 run must not read as two threads).
    const int used = threads_used_.load();
    const int threads = used > 0 ? used : max_threads_;
    return "cpu (" + std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") +
           detail::GemmLibraryName() + " GEMM" +
           (integer_kernel_ ? ", AVX-512 VNNI for uint8 L2)" : ")");
  }

  KnnResult Search(const DescriptorMatrix& queries, const DescriptorMatrix& corpus,
                   const KnnParams& params) override {
    CheckKnnArguments(queries, corpus, params);
    ThrowIfCancelled(params.cancel);
    const int64_t nq = queries.rows(), n = corpus.rows(), k = params.k;
    KnnResult r = KnnResult::Padded(nq, k);
    if (nq == 0 || n == 0) return r;
    if (k > n) {
      // Only n neighbours exist: search for those and leave the rest of each row as padding.
      // (Selecting among k slots a row cost time in k: 604 x 969 SIFT at k = 100000, 7.2 -> 3.4 s
      // on a busy 2-core machine, what is left being the padded rows' memory.)
      KnnParams all = params;
      all.k = n;
      const KnnResult found = Search(queries, corpus, all);
      for (int64_t i = 0; i < nq; ++i) {
        std::copy_n(found.distances.begin() + i * n, n, r.distances.begin() + i * k);
        std::copy_n(found.indices.begin() + i * n, n, r.indices.begin() + i * k);
      }
      return r;
    }

    const Metric metric = params.metric;
    const int64_t d = queries.dim();
    int threads = params.threads > 0 ? std::min(params.threads, max_threads_) : max_threads_;
    // Small problems do not pay for threads.
    if (static_cast<double>(nq) * static_cast<double>(n) * static_cast<double>(d) < 2e6)
      threads = 1;
    const bool integer = integer_kernel_ && metric == Metric::kL2Squared &&
                         queries.type() == DescriptorType::kUint8;
    // Threads take blocks of queries (each path its own size): no more threads than blocks, so
    // that the count noted here is the one the search runs on.
    const int64_t block_rows = integer ? detail::kUint8L2QueryBlock : kQueryBlock;
    const int64_t query_blocks = (nq + block_rows - 1) / block_rows;
    threads = static_cast<int>(std::clamp<int64_t>(threads, 1, query_blocks));
    for (int seen = threads_used_.load(); seen < threads;)
      if (threads_used_.compare_exchange_weak(seen, threads)) break;
    if (integer) {
      detail::Uint8L2Knn(queries, corpus, k, threads, r, params.cancel);
      return r;
    }
    const int64_t blocks = (nq + kQueryBlock - 1) / kQueryBlock;
    const Prepared q = Prepare(queries, metric);
    const Prepared c = Prepare(corpus, metric);

    detail::RunBlocks(blocks, threads, [&](auto&& next) {
      std::vector<float> tile(static_cast<std::size_t>(kQueryBlock * kCorpusBlock));
      std::vector<RowTopK> tops;
      for (int64_t b; next(b);) {
        const int64_t q0 = b * kQueryBlock;
        const int64_t qn = std::min(kQueryBlock, nq - q0);
        tops.clear();
        for (int64_t i = 0; i < qn; ++i)
          tops.emplace_back(k, r.distances.data() + (q0 + i) * k, r.indices.data() + (q0 + i) * k);
        for (int64_t c0 = 0; c0 < n; c0 += kCorpusBlock) {
          const int64_t cn = std::min(kCorpusBlock, n - c0);
          detail::GemmNT(qn, cn, d, q.data.data() + q0 * d, d, c.data.data() + c0 * d, d,
                         tile.data(), cn);
          for (int64_t i = 0; i < qn; ++i) {
            float* row = tile.data() + i * cn;
            if (metric == Metric::kL2Squared) {
              const float qn2 = q.norms[q0 + i];
              const float* cn2 = c.norms.data() + c0;
              for (int64_t j = 0; j < cn; ++j) {
                const float dist = (qn2 + cn2[j]) - 2.0f * row[j];
                row[j] = dist < 0 ? 0.0f : dist;  // rounding on real-valued data
              }
            } else if (metric == Metric::kInnerProduct) {
              for (int64_t j = 0; j < cn; ++j) row[j] = -row[j];
            } else {
              for (int64_t j = 0; j < cn; ++j) row[j] = 1.0f - row[j];
            }
            detail::OfferRow(row, cn, c0, tops[i]);
          }
        }
        for (auto& top : tops) top.Flush();
      }
    }, params.cancel);
    return r;
  }

 private:
  static int HardwareThreads() {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  bool integer_kernel_;
  int max_threads_;                  // the most threads one search may take
  std::atomic<int> threads_used_{0};  // the most threads a search has taken so far
};

}  // namespace

std::unique_ptr<KnnBackend> CreateCpuKnnBackend(const CpuKnnOptions& options) {
  return std::make_unique<CpuKnnBackend>(options);
}

}  // namespace fm::core
