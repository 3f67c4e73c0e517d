// Matching two feature sets end to end: kNN, filters, geometric verification, report.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "fm/core/filters.h"
#include "fm/core/knn.h"
#include "fm/matcher/sift.h"
#include "fm/matcher/verify.h"

namespace fm::matcher {

struct MatchOptions {
  int64_t k = 2;                           // neighbours searched per feature (>= 2 for ratio)
  core::Metric metric = core::Metric::kL2Squared;
  core::FilterOptions filter;
  VerifyOptions verify;
  int threads = 0;                         // CPU threads; 0 = all

  bool Check(std::string* why) const;
};

struct StageTime {
  std::string stage;
  double ms = 0;
};

struct MatchResult {
  int64_t features_a = 0;
  int64_t features_b = 0;
  std::vector<core::Match> matches;  // after ratio / mutual / distance filters
  Verification verification;         // inliers index into `matches`
  std::string backend;               // description of the kNN backend used
  std::vector<StageTime> times;      // in order

  int64_t num_inliers() const { return verification.num_inliers; }
};

// Matches features of image A (queries) against image B (train).
MatchResult MatchFeatures(const core::Features& a, const core::Features& b,
                          const MatchOptions& options, core::KnnBackend& backend);

// The JSON report of a match (counts, model, matches with inlier flags, times, inputs).
nlohmann::json MatchResultToJson(const MatchResult& result, const core::Features& a,
                                 const core::Features& b, bool include_matches = true);

}  // namespace fm::matcher
