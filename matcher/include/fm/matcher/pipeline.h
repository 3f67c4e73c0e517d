// Matching two feature sets end to end: kNN, filters, geometric verification, report.
#pragma once

#include <atomic>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "fm/core/filters.h"
#include "fm/core/knn.h"
#include "fm/matcher/backend.h"
#include "fm/matcher/sift.h"
#include "fm/matcher/verify.h"

namespace fm::matcher {

struct MatchOptions {
  int64_t k = 2;                           // >= 2 for the ratio test (the filter reads two)
  core::Metric metric = core::Metric::kL2Squared;
  core::FilterOptions filter;
  VerifyOptions verify;
  // After a model is verified, match the features again among those it allows (GuidedMatches)
  // and verify the new matches; kept when they verify (the verification's log10_nfa staying the
  // search's: matches chosen by the model fit it whatever chance would give).
  bool guided = false;
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
  // Whether a guided pass replaced the matches, and what the search alone had found.
  struct Guided {
    bool applied = false;
    int64_t matches_before = 0;
    int inliers_before = 0;
  } guided;
  std::vector<StageTime> times;      // in order

  int64_t num_inliers() const { return verification.num_inliers; }
};

// Optional per-feature masks: one byte per keypoint, non-zero = the feature may be matched.
// An empty vector allows every feature of that image. Masked-out features take no part in the
// search at all, so a masked match is exactly the match of the allowed subsets.
struct FeatureMasks {
  std::vector<uint8_t> a;
  std::vector<uint8_t> b;
};

// Masks from 8-bit mask images (non-zero pixels allowed), looked up under each keypoint.
// Throws std::invalid_argument when a mask's size differs from the image the features came from.
std::vector<uint8_t> MaskFromImage(const core::Features& f, const cv::Mat& mask);

// Matches features of image A (queries) against image B (train). `cancel`, when given and set
// while it runs, stops it with core::Cancelled: within a CPU search (between its blocks of
// queries), within the guided pass, and between the stages (a USAC run under way finishes first).
MatchResult MatchFeatures(const core::Features& a, const core::Features& b,
                          const MatchOptions& options, core::KnnBackend& backend,
                          const FeatureMasks* masks = nullptr,
                          const std::atomic<bool>* cancel = nullptr);

// The options that decide which matches a search keeps and verifies (metric, filters, model and
// USAC settings; not k, of which the filters read two), as JSON.
nlohmann::json FilterAndVerifySettingsToJson(const MatchOptions& match);
// The settings a match ran with, as the "settings" object of a match report (CLI and GUI):
// those above, the extraction settings, k and the backend.
nlohmann::json MatchSettingsToJson(const SiftOptions& sift, const MatchOptions& match,
                                   const BackendOptions& backend);

// The JSON report of a match (counts, model, matches with inlier flags, times, inputs).
nlohmann::json MatchResultToJson(const MatchResult& result, const core::Features& a,
                                 const core::Features& b, bool include_matches = true);

}  // namespace fm::matcher
