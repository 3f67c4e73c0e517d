// Drawings of features and matches.
#pragma once

#include <opencv2/core.hpp>

#include "fm/matcher/pipeline.h"

namespace fm::matcher {

struct DrawOptions {
  bool draw_outliers = true;   // outliers in red, inliers in green
  bool draw_keypoints = false; // all keypoints as small circles
  bool draw_model = true;      // outline of image A mapped by the homography into B
  int thickness = 1;
};

// Side-by-side image (A left, B right) with match lines coloured by inlier/outlier (inliers of a
// verified model only: when verification failed every match is drawn as an outlier).
cv::Mat DrawMatchResult(const cv::Mat& image_a, const cv::Mat& image_b, const core::Features& a,
                        const core::Features& b, const MatchResult& result,
                        const DrawOptions& options = {});

}  // namespace fm::matcher
