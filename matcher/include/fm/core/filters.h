// Match filters that need no image: Lowe's ratio test, mutual (cross) check, maximum distance,
// and keypoint masks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fm/core/knn.h"

namespace fm::core {

// One correspondence: query feature -> train feature (in image `image` of a train collection).
struct Match {
  int32_t query = -1;
  int32_t train = -1;
  int32_t image = 0;
  // Distance in the metric's natural unit: Euclidean distance for kL2Squared (the square root of
  // the kNN distance, as cv::BFMatcher reports it), the kNN distance for the other metrics.
  float distance = 0;
  // distance / second-nearest distance (same unit); 0 when there is no second neighbour.
  float ratio = 0;
};

struct FilterOptions {
  float ratio = 0.8f;          // Lowe's ratio threshold in (0, 1]; 1 keeps every nearest match
  bool mutual = false;         // keep only matches that are also nearest in the other direction
  float max_distance = 0.0f;   // drop matches farther than this (metric's unit); 0 = no limit

  bool Check(std::string* why) const;
};

// Natural-unit distance of a kNN distance under `metric` (sqrt for squared L2).
float NaturalDistance(float knn_distance, Metric metric);

// Turns forward kNN results (k >= 2 for the ratio test; k >= 1 otherwise) into matches.
// `backward` (corpus -> queries, k >= 1) is required when options.mutual is set.
// `query_mask` / `train_mask` (optional, one byte per feature, non-zero = allowed) restrict the
// matches; the kNN must already have been computed on the allowed rows for exact semantics, see
// MaskedRows.
std::vector<Match> FilterMatches(const KnnResult& forward, const KnnResult* backward,
                                 Metric metric, const FilterOptions& options);

// Indices of the rows whose mask byte is non-zero (all rows when mask is empty).
std::vector<int64_t> MaskedRows(const std::vector<uint8_t>& mask, int64_t rows);
// Copy of the given rows of a descriptor matrix.
DescriptorMatrix GatherRows(const DescriptorMatrix& m, const std::vector<int64_t>& rows);

}  // namespace fm::core
