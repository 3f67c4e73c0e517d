#include "fm/ui/feature_cache.h"

#include <QFileInfo>

#include "fm/core/timer.h"
#include "fm/matcher/image.h"

namespace fm::ui {

std::string FeatureCache::KeyOf(const QString& path) {
  const QFileInfo info(path);
  // A missing file gets a key too; loading it then fails with the library's message.
  return (info.absoluteFilePath() + '|' + QString::number(info.size()) + '|' +
          QString::number(info.lastModified().toMSecsSinceEpoch()))
      .toStdString();
}

FeatureCache::Entry& FeatureCache::Touch(const std::string& key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key == key) {
      entries_.splice(entries_.begin(), entries_, it);
      return entries_.front();
    }
  }
  entries_.push_front(Entry{key, {}, {}, 0, 0, {}});
  while (entries_.size() > max_images_) entries_.pop_back();
  return entries_.front();
}

FeatureCache::Image FeatureCache::Color(const QString& path) {
  const std::string key = KeyOf(path);
  {
    std::lock_guard lock(mutex_);
    Entry& e = Touch(key);
    if (e.color) return {e.color, e.color_ms, true};
  }
  core::Stopwatch sw;
  auto mat = std::make_shared<const cv::Mat>(matcher::LoadColorImage(path.toStdString()));
  const double ms = sw.ElapsedMs();
  std::lock_guard lock(mutex_);
  Entry& e = Touch(key);
  e.color = mat;
  e.color_ms = ms;
  return {mat, ms, false};
}

FeatureCache::Image FeatureCache::Gray(const QString& path) {
  const std::string key = KeyOf(path);
  {
    std::lock_guard lock(mutex_);
    Entry& e = Touch(key);
    if (e.gray) return {e.gray, e.gray_ms, true};
  }
  core::Stopwatch sw;
  auto mat = std::make_shared<const cv::Mat>(matcher::LoadGrayImage(path.toStdString()));
  const double ms = sw.ElapsedMs();
  std::lock_guard lock(mutex_);
  Entry& e = Touch(key);
  e.gray = mat;
  e.gray_ms = ms;
  return {mat, ms, false};
}

FeatureCache::Extracted FeatureCache::Features(const QString& path,
                                               const matcher::SiftOptions& options) {
  const std::string key = KeyOf(path);
  const std::string settings = options.ToJson();
  {
    std::lock_guard lock(mutex_);
    Entry& e = Touch(key);
    auto it = e.features.find(settings);
    if (it != e.features.end()) return {it->second, 0, true};
  }
  const Image gray = Gray(path);
  core::Stopwatch sw;
  auto features =
      std::make_shared<const core::Features>(matcher::ExtractFeatures(*gray.mat, options));
  const double ms = sw.ElapsedMs();
  std::lock_guard lock(mutex_);
  Entry& e = Touch(key);
  e.features[settings] = features;
  return {features, ms, false};
}

void FeatureCache::Clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

std::size_t FeatureCache::images() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace fm::ui
