#include "inputs.h"

#include <filesystem>

#include "fm/core/feature_io.h"
#include "fm/core/timer.h"
#include "fm/matcher/image.h"

namespace fm::app {

bool IsFeatureFile(const std::string& path) {
  return std::filesystem::path(path).extension() == ".fmf";
}

LoadedInput LoadInput(const std::string& path, const matcher::SiftOptions& sift,
                      bool need_color) {
  LoadedInput in;
  in.path = path;
  core::Stopwatch sw;
  if (IsFeatureFile(path)) {
    in.features = core::ReadFeatureFile(path);
    in.from_feature_file = true;
    in.load_ms = sw.ElapsedMs();
    return in;
  }
  // Features come from the same grayscale decode as `extract`, the batch and the logo library
  // use, so that an image and its .fmf file match alike; the colour image is for drawing only.
  const cv::Mat gray = matcher::LoadGrayImage(path);
  if (need_color) in.image = matcher::LoadColorImage(path);
  in.load_ms = sw.ElapsedMs();
  sw.Reset();
  in.features = matcher::ExtractFeatures(gray, sift, cv::Mat(), path);
  in.extract_ms = sw.ElapsedMs();
  return in;
}

}  // namespace fm::app
