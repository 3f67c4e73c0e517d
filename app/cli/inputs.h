// Loading a match input: an image (features extracted) or a feature file (.fmf).
#pragma once

#include <opencv2/core.hpp>
#include <string>

#include "fm/core/types.h"
#include "fm/matcher/sift.h"

namespace fm::app {

struct LoadedInput {
  std::string path;
  cv::Mat image;  // colour image when asked for, empty for a feature file
  core::Features features;
  double load_ms = 0;
  double extract_ms = 0;
  bool from_feature_file = false;
};

bool IsFeatureFile(const std::string& path);

// Features of an image (its grayscale decode) or of a feature file; with need_color the image in
// colour as well. Throws matcher::ImageError or core::FeatureFileError with a clear message.
LoadedInput LoadInput(const std::string& path, const matcher::SiftOptions& sift,
                      bool need_color = false);

}  // namespace fm::app
