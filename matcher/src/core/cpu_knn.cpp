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

namespace fm::core {
namespace {

constexpr int64_t kQueryBlock = 64;
constexpr int64_t kCorpusBlock = 1024;
constexpr int64_t kInsertionMaxK = 16;  // above this, candidates are buffered and merged

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

// Running top-k of one query, kept sorted in its output row (distances `v`, indices `ix`).
class RowTopK {
 public:
  RowTopK(int64_t k, float* v, int64_t* ix) : k_(k), v_(v), ix_(ix) {
    if (k_ > kInsertionMaxK) {
      bv_.reserve(k_);
      bi_.reserve(k_);
      mv_.resize(k_);
      mi_.resize(k_);
    }
    Refresh();
  }

  // Offers distance d of corpus index j; indices must arrive in increasing order.
  inline void Offer(float d, int64_t j) {
    if (!(d < thr_) && !(special_ && detail::NeighbourLess(d, j, v_[k_ - 1], ix_[k_ - 1])))
      return;
    if (k_ <= kInsertionMaxK) {
      Insert(d, j);
    } else {
      bv_.push_back(d);
      bi_.push_back(j);
      if (static_cast<int64_t>(bv_.size()) == k_) Flush();
    }
  }

  void Flush() {
    if (bv_.empty()) return;
    const std::size_t nb = bv_.size();
    order_.resize(nb);
    for (std::size_t i = 0; i < nb; ++i) order_[i] = static_cast<uint32_t>(i);
    std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
      return detail::NeighbourLess(bv_[a], bi_[a], bv_[b], bi_[b]);
    });
    // Merge the sorted buffer with the current top-k, keep the k smallest.
    int64_t a = 0;
    std::size_t b = 0;
    for (int64_t o = 0; o < k_; ++o) {
      if (b < nb && detail::NeighbourLess(bv_[order_[b]], bi_[order_[b]], v_[a], ix_[a])) {
        mv_[o] = bv_[order_[b]];
        mi_[o] = bi_[order_[b]];
        ++b;
      } else {
        mv_[o] = v_[a];
        mi_[o] = ix_[a];
        ++a;
      }
    }
    std::copy(mv_.begin(), mv_.end(), v_);
    std::copy(mi_.begin(), mi_.end(), ix_);
    bv_.clear();
    bi_.clear();
    Refresh();
  }

 private:
  void Insert(float d, int64_t j) {
    int64_t p = k_ - 1;
    while (p > 0 && detail::NeighbourLess(d, j, v_[p - 1], ix_[p - 1])) {
      v_[p] = v_[p - 1];
      ix_[p] = ix_[p - 1];
      --p;
    }
    v_[p] = d;
    ix_[p] = j;
    Refresh();
  }

  void Refresh() {
    thr_ = v_[k_ - 1];
    special_ = ix_[k_ - 1] < 0 || std::isnan(thr_);
    if (special_) thr_ = -std::numeric_limits<float>::infinity();  // force the full comparison
  }

  int64_t k_;
  float* v_;
  int64_t* ix_;
  float thr_ = 0;
  bool special_ = true;
  std::vector<float> bv_, mv_;
  std::vector<int64_t> bi_, mi_;
  std::vector<uint32_t> order_;
};

class CpuKnnBackend final : public KnnBackend {
 public:
  CpuKnnBackend() { detail::UseSingleThreadedBlas(); }

  std::string name() const override { return "cpu"; }
  std::string description() const override {
    return "cpu (" + std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
           " threads, " + detail::GemmLibraryName() + " GEMM)";
  }

  KnnResult Search(const DescriptorMatrix& queries, const DescriptorMatrix& corpus,
                   const KnnParams& params) override {
    CheckKnnArguments(queries, corpus, params);
    const int64_t nq = queries.rows(), n = corpus.rows(), k = params.k;
    KnnResult r;
    r.rows = nq;
    r.k = k;
    r.distances.assign(static_cast<std::size_t>(nq * k), std::numeric_limits<float>::infinity());
    r.indices.assign(static_cast<std::size_t>(nq * k), -1);
    if (nq == 0 || n == 0) return r;

    const Metric metric = params.metric;
    const Prepared q = Prepare(queries, metric);
    const Prepared c = Prepare(corpus, metric);
    const int64_t d = queries.dim();
    const int64_t blocks = (nq + kQueryBlock - 1) / kQueryBlock;
    int threads = params.threads > 0 ? params.threads
                                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // Small problems do not pay for threads.
    if (static_cast<double>(nq) * static_cast<double>(n) * static_cast<double>(d) < 2e6) threads = 1;
    threads = static_cast<int>(std::min<int64_t>(threads, blocks));

    std::atomic<int64_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto worker = [&] {
      try {
        std::vector<float> tile(static_cast<std::size_t>(kQueryBlock * kCorpusBlock));
        std::vector<RowTopK> tops;
        for (int64_t b; (b = next.fetch_add(1)) < blocks;) {
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
              const float* row = tile.data() + i * cn;
              RowTopK& top = tops[i];
              if (metric == Metric::kL2Squared) {
                const float qn2 = q.norms[q0 + i];
                const float* cn2 = c.norms.data() + c0;
                for (int64_t j = 0; j < cn; ++j) {
                  float dist = (qn2 + cn2[j]) - 2.0f * row[j];
                  if (dist < 0) dist = 0;  // rounding on real-valued data
                  top.Offer(dist, c0 + j);
                }
              } else if (metric == Metric::kInnerProduct) {
                for (int64_t j = 0; j < cn; ++j) top.Offer(-row[j], c0 + j);
              } else {
                for (int64_t j = 0; j < cn; ++j) top.Offer(1.0f - row[j], c0 + j);
              }
            }
          }
          for (auto& top : tops) top.Flush();
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(blocks);
      }
    };
    if (threads <= 1) {
      worker();
    } else {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
      for (auto& t : pool) t.join();
    }
    if (error) std::rethrow_exception(error);
    return r;
  }
};

}  // namespace

std::unique_ptr<KnnBackend> CreateCpuKnnBackend() { return std::make_unique<CpuKnnBackend>(); }

}  // namespace fm::core
