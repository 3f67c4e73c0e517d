// Guided matching: the features of two images matched again under a verified model.
#pragma once

#include <atomic>
#include <vector>

#include "fm/core/filters.h"
#include "fm/core/knn.h"
#include "fm/core/types.h"
#include "fm/matcher/verify.h"

namespace fm::matcher {

// The model a guided search runs under and how it bounds a match.
struct GuidedModel {
  GeometryModel kind = GeometryModel::kNone;
  cv::Matx33d matrix;
  double threshold = 3.0;  // px: a homography's transfer, or the distance to the epipolar line in B
};

// Each feature of A searched among the features of B that the model puts within its threshold,
// with the filters of the unguided search applied to those neighbours (the ratio test against the
// second nearest of them, the mutual check among them, the distance bound): a match the ratio
// test over all of B dropped, because a look-alike elsewhere in B was as near (a repeated
// texture, a symmetric pattern), comes back once the model rules the look-alike out. Exact: the
// neighbours of a feature among its candidates are a brute-force search's over them, ties to the
// lower index. `allowed_a` / `allowed_b`: one byte a feature, non-zero = may be matched (empty:
// all). Descriptors are those the keypoints belong to, row for row. `cancel`, when given and set,
// stops the search with core::Cancelled.
std::vector<core::Match> GuidedMatches(const std::vector<core::Keypoint>& ka,
                                       const core::DescriptorMatrix& da,
                                       const std::vector<core::Keypoint>& kb,
                                       const core::DescriptorMatrix& db, const GuidedModel& model,
                                       core::Metric metric, const core::FilterOptions& filter,
                                       const std::vector<uint8_t>& allowed_a = {},
                                       const std::vector<uint8_t>& allowed_b = {},
                                       const std::atomic<bool>* cancel = nullptr);

// The distance bound a guided search of a verified pair runs under: no match farther (in the
// metric's natural unit) than the farthest inlier that verified the model, nor than the filter's
// own bound where it has one. A feature whose only candidate is some unrelated one would
// otherwise pass the ratio test unopposed.
float GuidedDistanceBound(const std::vector<core::Match>& matches,
                          const std::vector<uint8_t>& inliers, float max_distance);

// The guided pass of a pair whose search found `matches`, verified as `verification` under
// `verify`: GuidedMatches under the verified model, bounded by GuidedDistanceBound, then verified
// again. `applied` when the new matches verify; their verification keeps the search's log10_nfa
// (matches chosen by the model fit it whatever chance would give). Not applied to a pair whose
// search was not verified.
struct GuidedPass {
  bool applied = false;
  std::vector<core::Match> matches;
  Verification verification;
};
GuidedPass RunGuidedPass(const std::vector<core::Keypoint>& ka, const core::DescriptorMatrix& da,
                         const std::vector<core::Keypoint>& kb, const core::DescriptorMatrix& db,
                         const std::vector<core::Match>& matches,
                         const Verification& verification, const VerifyOptions& verify,
                         core::Metric metric, const core::FilterOptions& filter,
                         const std::vector<uint8_t>& allowed_a = {},
                         const std::vector<uint8_t>& allowed_b = {},
                         const std::atomic<bool>* cancel = nullptr);

}  // namespace fm::matcher
