// Geometric verification with OpenCV's USAC estimators.
#pragma once

#include <limits>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "fm/core/filters.h"
#include "fm/core/types.h"

namespace fm::matcher {

enum class GeometryModel { kNone, kHomography, kFundamental };
const char* GeometryModelName(GeometryModel m);
GeometryModel ParseGeometryModel(const std::string& name);  // throws std::invalid_argument

enum class UsacMethod { kMagsac, kDefault, kAccurate, kProsac, kFast, kParallel };
const char* UsacMethodName(UsacMethod m);
UsacMethod ParseUsacMethod(const std::string& name);

struct VerifyOptions {
  GeometryModel model = GeometryModel::kHomography;
  UsacMethod method = UsacMethod::kMagsac;
  double threshold = 3.0;     // inlier reprojection / Sampson threshold in pixels
  double confidence = 0.999;  // RANSAC confidence
  int max_iterations = 10000;
  int min_inliers = 8;        // fewer verified inliers than this = not verified
  // Whether those inliers must lie at distinct points (Verification::distinct_inliers). A caller
  // that checks the model's shape itself may count them as they come (the logo library: a small
  // logo's inliers crowd into a few pixels of the scene, and a folded homography is no plausible
  // outline of a flat logo).
  bool distinct_points = true;
  // The most false alarms a verified model may have (Verification::log10_nfa): 1 asks that
  // chance explain its inliers less than once; 0 turns the test off.
  double max_nfa = 1.0;

  bool Check(std::string* why) const;
};

struct Verification {
  GeometryModel model = GeometryModel::kNone;
  // A model was found whose inliers lie at min_inliers distinct points (and at least the model's
  // minimal sample) in each image; without distinct_points, with min_inliers inliers. And, where
  // max_nfa > 0, a model chance explains less than max_nfa times (log10_nfa).
  bool verified = false;
  cv::Mat matrix;                 // 3x3 CV_64F (homography or fundamental), empty if none
  std::vector<uint8_t> inliers;   // one byte per match, non-zero = inlier
  int num_inliers = 0;
  // The inliers' distinct positions (cells of the inlier threshold), the fewer of image A's and
  // image B's, for a fundamental matrix leaving out matches at an epipole. Many
  // matches onto one point (a corner of a repeated pattern, one spot under several keypoint
  // orientations) are one piece of evidence: a homography that folds a region of A onto that
  // point, or a fundamental matrix with its epipole there, agrees with all of them and verifies
  // nothing.
  int distinct_inliers = 0;
  // How meaningful the model is, a contrario: log10 of its number of false alarms, the number of
  // times matches spread at random over image B would fit some model as well, taken at the
  // inlier count where that number is least (within the inlier threshold). Counted over the
  // matches at distinct points (one a cell of the threshold in each image, the best fitting
  // kept) and, for a fundamental matrix, away from its epipoles. Below 0: chance would give
  // such a fit less than once. +inf where no model was found.
  double log10_nfa = std::numeric_limits<double>::infinity();
};

// Whether `v` was refused for where its inliers lie, not for their number: enough of them, too
// few distinct points among them (what a front end tells its user).
bool InliersTooCrowded(const Verification& v, const VerifyOptions& options);
// Whether `v` was refused because chance explains it: inliers enough at distinct points, but no
// fewer false alarms than options.max_nfa.
bool InliersByChance(const Verification& v, const VerifyOptions& options);

// Estimates the model from the matches' keypoints (query in image A, train in image B).
Verification VerifyMatches(const std::vector<core::Keypoint>& a,
                           const std::vector<core::Keypoint>& b,
                           const std::vector<core::Match>& matches, const VerifyOptions& options);

}  // namespace fm::matcher
