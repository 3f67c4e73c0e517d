#include "inputs.h"

#include <filesystem>
#include <opencv2/imgproc.hpp>

#include "fm/core/feature_io.h"
#include "fm/core/timer.h"
#include "fm/matcher/image.h"

namespace fm::app {

bool IsFeatureFile(const std::string& path) {
  return std::filesystem::path(path).extension() == ".fmf";
}

LoadedInput LoadInput(const std::string& path, const matcher::SiftOptions& sift) {
  LoadedInput in;
  in.path = path;
  core::Stopwatch sw;
  if (IsFeatureFile(path)) {
    in.features = core::ReadFeatureFile(path);
    in.from_feature_file = true;
    in.load_ms = sw.ElapsedMs();
    return in;
  }
  in.image = matcher::LoadColorImage(path);
  in.load_ms = sw.ElapsedMs();
  sw.Reset();
  in.features = matcher::ExtractFeatures(in.image, sift);
  in.extract_ms = sw.ElapsedMs();
  return in;
}

}  // namespace fm::app
