// Images and extracted features kept between runs, so that changing a matching parameter does
// not extract again. Keyed by path, file size and modification time (an edited file is reloaded)
// and, for features, by the SIFT settings (SiftOptions::ToJson).
#pragma once

#include <QString>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <opencv2/core.hpp>
#include <string>

#include "fm/core/types.h"
#include "fm/matcher/sift.h"

namespace fm::ui {

class FeatureCache {
 public:
  explicit FeatureCache(std::size_t max_images = 8) : max_images_(max_images) {}

  struct Image {
    std::shared_ptr<const cv::Mat> mat;
    double load_ms = 0;
    bool cached = false;  // true when no disk read was needed
  };
  struct Extracted {
    std::shared_ptr<const core::Features> features;
    double extract_ms = 0;  // time of the extraction (0 when it came from the cache)
    bool cached = false;
  };

  // Colour (BGR) and grayscale image of `path`. Throw matcher::ImageError when unusable.
  // Safe to call from any thread; the slow work runs outside the lock.
  Image Color(const QString& path);
  Image Gray(const QString& path);
  // Features of the grayscale image under `options` (extracted at most once per settings).
  Extracted Features(const QString& path, const matcher::SiftOptions& options);

  void Clear();
  std::size_t images() const;

 private:
  struct Entry {
    std::string key;  // path | size | mtime
    std::shared_ptr<const cv::Mat> color, gray;
    double color_ms = 0, gray_ms = 0;
    std::map<std::string, std::shared_ptr<const core::Features>> features;
  };
  Entry& Touch(const std::string& key);  // lock held
  static std::string KeyOf(const QString& path);

  std::size_t max_images_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace fm::ui
