#include "fm/core/filters.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fm::core {

bool FilterOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (!(ratio > 0.0f && ratio <= 1.0f)) return bad("ratio must be in (0, 1]");
  if (!(max_distance >= 0.0f)) return bad("max distance must be >= 0 (0 = no limit)");
  return true;
}

float NaturalDistance(float knn_distance, Metric metric) {
  if (metric == Metric::kL2Squared) return std::sqrt(std::max(0.0f, knn_distance));
  return knn_distance;
}

std::vector<Match> FilterMatches(const KnnResult& forward, const KnnResult* backward,
                                 Metric metric, const FilterOptions& options) {
  std::string why;
  if (!options.Check(&why)) throw std::invalid_argument("match filter: " + why);
  if (options.mutual && !backward)
    throw std::invalid_argument("match filter: the mutual check needs the backward kNN result");
  if (forward.k < 1) throw std::invalid_argument("match filter: kNN result with k = 0");
  const bool use_ratio = options.ratio < 1.0f;
  if (use_ratio && forward.k < 2)
    throw std::invalid_argument("match filter: the ratio test needs k >= 2");
  std::vector<Match> out;
  for (int64_t q = 0; q < forward.rows; ++q) {
    const int64_t t = forward.index(q, 0);
    if (t < 0) continue;
    const float d1 = forward.distance(q, 0);
    if (std::isnan(d1)) continue;
    Match m;
    m.query = static_cast<int32_t>(q);
    m.train = static_cast<int32_t>(t);
    m.distance = NaturalDistance(d1, metric);
    if (forward.k >= 2 && forward.index(q, 1) >= 0) {
      const float d2 = NaturalDistance(forward.distance(q, 1), metric);
      m.ratio = d2 > 0 ? m.distance / d2 : (m.distance > 0 ? INFINITY : 1.0f);
      // For non-L2 metrics distances can be negative (inner product): the ratio is only
      // meaningful for non-negative distances, so negative ones never pass it.
      if (use_ratio && !(m.distance >= 0 && m.ratio < options.ratio)) continue;
    } else if (use_ratio) {
      // A single candidate has no second neighbour to compare with: it is unambiguous.
      m.ratio = 0;
    }
    if (options.max_distance > 0 && !(m.distance <= options.max_distance)) continue;
    if (options.mutual) {
      if (t >= backward->rows || backward->index(t, 0) != q) continue;
    }
    out.push_back(m);
  }
  return out;
}

std::vector<int64_t> MaskedRows(const std::vector<uint8_t>& mask, int64_t rows) {
  std::vector<int64_t> out;
  if (mask.empty()) {
    out.resize(rows);
    for (int64_t i = 0; i < rows; ++i) out[i] = i;
    return out;
  }
  if (static_cast<int64_t>(mask.size()) != rows)
    throw std::invalid_argument("mask has " + std::to_string(mask.size()) + " entries for " +
                                std::to_string(rows) + " features");
  for (int64_t i = 0; i < rows; ++i)
    if (mask[i]) out.push_back(i);
  return out;
}

DescriptorMatrix GatherRows(const DescriptorMatrix& m, const std::vector<int64_t>& rows) {
  DescriptorMatrix out(m.type(), static_cast<int64_t>(rows.size()), m.dim());
  const std::size_t rb = static_cast<std::size_t>(m.dim()) * DescriptorTypeSize(m.type());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= m.rows()) throw std::out_of_range("GatherRows: row out of range");
    std::copy(m.bytes() + rows[i] * rb, m.bytes() + (rows[i] + 1) * rb, out.bytes() + i * rb);
  }
  return out;
}

}  // namespace fm::core
