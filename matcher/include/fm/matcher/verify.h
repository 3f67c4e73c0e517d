// Geometric verification with OpenCV's USAC estimators.
#pragma once

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

  bool Check(std::string* why) const;
};

struct Verification {
  GeometryModel model = GeometryModel::kNone;
  bool verified = false;          // a model was found with at least min_inliers inliers
  cv::Mat matrix;                 // 3x3 CV_64F (homography or fundamental), empty if none
  std::vector<uint8_t> inliers;   // one byte per match, non-zero = inlier
  int num_inliers = 0;
};

// Estimates the model from the matches' keypoints (query in image A, train in image B).
Verification VerifyMatches(const std::vector<core::Keypoint>& a,
                           const std::vector<core::Keypoint>& b,
                           const std::vector<core::Match>& matches, const VerifyOptions& options);

}  // namespace fm::matcher
