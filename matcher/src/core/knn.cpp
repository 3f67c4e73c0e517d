#include "fm/core/knn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "order.h"

namespace fm::core {

const char* MetricName(Metric m) {
  switch (m) {
    case Metric::kL2Squared: return "l2";
    case Metric::kInnerProduct: return "ip";
    case Metric::kCosine: return "cosine";
    case Metric::kPearson: return "pearson";
  }
  return "unknown";
}

Metric ParseMetric(const std::string& name) {
  if (name == "l2" || name == "l2sq" || name == "euclidean") return Metric::kL2Squared;
  if (name == "ip" || name == "inner-product" || name == "dot") return Metric::kInnerProduct;
  if (name == "cosine" || name == "cos") return Metric::kCosine;
  if (name == "pearson" || name == "correlation") return Metric::kPearson;
  throw std::invalid_argument("unknown metric '" + name + "' (use l2, ip, cosine or pearson)");
}

KnnResult KnnResult::Padded(int64_t rows, int64_t k) {
  KnnResult r;
  r.rows = rows;
  r.k = k;
  r.distances.assign(static_cast<std::size_t>(rows * k), std::numeric_limits<float>::infinity());
  r.indices.assign(static_cast<std::size_t>(rows * k), -1);
  return r;
}

bool KnnParams::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (k <= 0) return bad("k must be at least 1 (got " + std::to_string(k) + ")");
  if (threads < 0) return bad("threads must be 0 (all) or positive");
  return true;
}

void CheckKnnArguments(const DescriptorMatrix& queries, const DescriptorMatrix& corpus,
                       const KnnParams& params) {
  std::string why;
  if (!params.Check(&why)) throw std::invalid_argument("kNN: " + why);
  if (queries.rows() > 0 && queries.dim() <= 0)
    throw std::invalid_argument("kNN: query descriptors have dimension 0");
  if (queries.rows() > 0 && corpus.rows() > 0 && queries.dim() != corpus.dim())
    throw std::invalid_argument("kNN: dimension mismatch: queries have " +
                                std::to_string(queries.dim()) + ", corpus has " +
                                std::to_string(corpus.dim()));
  if (queries.rows() > 0 && corpus.rows() > 0 && queries.type() != corpus.type())
    throw std::invalid_argument(std::string("kNN: descriptor type mismatch: queries are ") +
                                DescriptorTypeName(queries.type()) + ", corpus is " +
                                DescriptorTypeName(corpus.type()));
}

double DescriptorDistance(const float* a, const float* b, int32_t d, Metric metric) {
  if (metric == Metric::kL2Squared) {
    double s = 0;
    for (int32_t j = 0; j < d; ++j) {
      double t = static_cast<double>(a[j]) - b[j];
      s += t * t;
    }
    return s;
  }
  double ma = 0, mb = 0;
  if (metric == Metric::kPearson) {
    for (int32_t j = 0; j < d; ++j) ma += a[j], mb += b[j];
    ma /= d;
    mb /= d;
  }
  double dot = 0, na = 0, nb = 0;
  for (int32_t j = 0; j < d; ++j) {
    double x = a[j] - ma, y = b[j] - mb;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  if (metric == Metric::kInnerProduct) return -dot;
  if (na == 0 || nb == 0) return 1.0;  // a zero vector has similarity 0 with everything
  return 1.0 - dot / (std::sqrt(na) * std::sqrt(nb));
}

KnnResult BruteForceKnn(const DescriptorMatrix& queries, const DescriptorMatrix& corpus,
                        const KnnParams& params) {
  CheckKnnArguments(queries, corpus, params);
  const int64_t nq = queries.rows(), n = corpus.rows(), k = params.k;
  const int32_t d = queries.dim();
  KnnResult r = KnnResult::Padded(nq, k);
  std::vector<float> q(d), c(static_cast<std::size_t>(n) * d);
  for (int64_t i = 0; i < n; ++i) corpus.RowAsFloat(i, c.data() + i * d);
  std::vector<std::pair<float, int64_t>> row(static_cast<std::size_t>(n));
  for (int64_t qi = 0; qi < nq; ++qi) {
    queries.RowAsFloat(qi, q.data());
    for (int64_t i = 0; i < n; ++i)
      row[i] = {
          static_cast<float>(DescriptorDistance(q.data(), c.data() + i * d, d, params.metric)), i};
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) {
      return detail::NeighbourLess(a.first, a.second, b.first, b.second);
    });
    for (int64_t j = 0; j < std::min(k, n); ++j) {
      r.distances[qi * k + j] = row[j].first;
      r.indices[qi * k + j] = row[j].second;
    }
  }
  return r;
}

}  // namespace fm::core
