#include "fm/matcher/sift.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/features2d.hpp>
#include <opencv2/imgproc.hpp>

#include "fm/matcher/image.h"

namespace fm::matcher {

bool SiftOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (max_features < 0) return bad("max features must be >= 0 (0 = no limit)");
  if (octave_layers < 1 || octave_layers > 10) return bad("octave layers must be in 1..10");
  if (!(contrast_threshold > 0 && contrast_threshold < 1))
    return bad("contrast threshold must be in (0, 1)");
  if (!(edge_threshold > 0 && std::isfinite(edge_threshold)))
    return bad("edge threshold must be a finite number > 0");
  if (!(sigma > 0 && sigma < 10)) return bad("sigma must be in (0, 10)");
  if (max_image_size < 0) return bad("max image size must be >= 0 (0 = keep the size)");
  return true;
}

std::string SiftOptions::ToJson() const {
  nlohmann::json j = {{"extractor", "opencv-sift"},
                      {"max_features", max_features},
                      {"octave_layers", octave_layers},
                      {"contrast_threshold", contrast_threshold},
                      {"edge_threshold", edge_threshold},
                      {"sigma", sigma},
                      {"root_sift", root_sift},
                      {"max_image_size", max_image_size}};
  return j.dump();
}

core::DescriptorMatrix ToRootSift(const core::DescriptorMatrix& sift) {
  core::DescriptorMatrix out(core::DescriptorType::kFloat32, sift.rows(), sift.dim());
  std::vector<float> row(sift.dim());
  for (int64_t i = 0; i < sift.rows(); ++i) {
    sift.RowAsFloat(i, row.data());
    double l1 = 0;
    for (float v : row) l1 += std::abs(v);
    float* dst = out.f32() + i * sift.dim();
    for (int32_t j = 0; j < sift.dim(); ++j)
      dst[j] = l1 > 0 ? static_cast<float>(std::sqrt(std::abs(row[j]) / l1)) : 0.0f;
  }
  return out;
}

int64_t SiftMemoryEstimate(int width, int height, const SiftOptions& options) {
  // OpenCV's SIFT doubles the image first, then keeps octave_layers + 3 Gaussian and
  // octave_layers + 2 difference images of 4-byte floats an octave, each octave a quarter of the
  // one before: (2 * layers + 5) * 4 bytes * 4 pixels * 4 / 3 a source pixel, plus the input.
  const double per_pixel = (2.0 * options.octave_layers + 5.0) * 4.0 * 4.0 * 4.0 / 3.0 + 1.0;
  return static_cast<int64_t>(per_pixel * static_cast<double>(width) * height);
}

int64_t AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return -1;
}

void CheckSiftMemory(int width, int height, const SiftOptions& options, int64_t available,
                     const std::string& name) {
  if (available <= 0) return;
  const int64_t need = SiftMemoryEstimate(width, height, options);
  if (need <= available) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const int longer = std::max(width, height);
  // The longer side at which the estimate fits in half of what is available.
  const int fits = std::max(
      16, static_cast<int>(longer * std::sqrt(0.5 * static_cast<double>(available) / need)));
  char msg[256];
  std::snprintf(msg, sizeof msg,
                "image of %d x %d pixels: SIFT would need about %.1f GiB of memory, %.1f GiB "
                "available; downscale it to a longer side of %d or less (--max-image-size)",
                width, height, need / gib, available / gib, fits);
  throw ImageError(name.empty() ? std::string(msg) : name + ": " + msg);
}

core::Features ExtractFeatures(const cv::Mat& image, const SiftOptions& options,
                               const cv::Mat& mask, const std::string& name) {
  std::string why;
  if (!options.Check(&why)) throw std::invalid_argument("SIFT options: " + why);
  if (image.empty()) throw std::invalid_argument("ExtractFeatures: empty image");
  if (!mask.empty() && (mask.size() != image.size() || mask.type() != CV_8UC1))
    throw std::invalid_argument("ExtractFeatures: the mask must be 8-bit, the image's size");
  cv::Mat gray;
  if (image.channels() == 3) {
    cv::cvtColor(image, gray, cv::COLOR_BGR2GRAY);
  } else if (image.channels() == 4) {
    cv::cvtColor(image, gray, cv::COLOR_BGRA2GRAY);
  } else {
    gray = image;
  }
  if (gray.depth() != CV_8U) gray.convertTo(gray, CV_8U);

  double scale = 1.0;
  cv::Mat work = gray, work_mask = mask;
  const int longer = std::max(gray.cols, gray.rows);
  if (options.max_image_size > 0 && longer > options.max_image_size) {
    scale = static_cast<double>(options.max_image_size) / longer;
    cv::resize(gray, work, cv::Size(), scale, scale, cv::INTER_AREA);
    if (!mask.empty()) cv::resize(mask, work_mask, work.size(), 0, 0, cv::INTER_NEAREST);
  }

  core::Features f;
  f.image_width = image.cols;
  f.image_height = image.rows;
  std::vector<cv::KeyPoint> kps;
  cv::Mat desc;
  // SIFT needs a few pixels of border; tiny images simply have no features.
  if (work.cols >= 16 && work.rows >= 16) {
    CheckSiftMemory(work.cols, work.rows, options, AvailableMemoryBytes(), name);
    auto sift = cv::SIFT::create(options.max_features, options.octave_layers,
                                 options.contrast_threshold, options.edge_threshold, options.sigma,
                                 CV_8U);
    sift->detectAndCompute(work, work_mask, kps, desc);
  }
  // OpenCV keeps every keypoint tied with the N-th strongest; the option promises N.
  if (options.max_features > 0 && static_cast<int>(kps.size()) > options.max_features) {
    std::vector<int> order(kps.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return kps[x].response > kps[y].response; });
    order.resize(options.max_features);
    std::sort(order.begin(), order.end());
    std::vector<cv::KeyPoint> kept;
    cv::Mat kept_desc(static_cast<int>(order.size()), desc.cols, desc.type());
    for (std::size_t i = 0; i < order.size(); ++i) {
      kept.push_back(kps[order[i]]);
      desc.row(order[i]).copyTo(kept_desc.row(static_cast<int>(i)));
    }
    kps = std::move(kept);
    desc = kept_desc;
  }
  const int32_t dim = 128;
  core::DescriptorMatrix d(core::DescriptorType::kUint8, static_cast<int64_t>(kps.size()), dim);
  if (!kps.empty()) {
    CV_Assert(desc.type() == CV_8U && desc.cols == dim &&
              desc.rows == static_cast<int>(kps.size()));
    for (int i = 0; i < desc.rows; ++i)
      std::memcpy(d.u8() + static_cast<std::size_t>(i) * dim, desc.ptr<uint8_t>(i), dim);
  }
  f.keypoints.reserve(kps.size());
  for (const auto& kp : kps) {
    core::Keypoint k;
    k.x = static_cast<float>(kp.pt.x / scale);
    k.y = static_cast<float>(kp.pt.y / scale);
    k.size = static_cast<float>(kp.size / scale);
    k.angle = kp.angle;
    k.response = kp.response;
    k.octave = kp.octave;
    f.keypoints.push_back(k);
  }
  f.descriptors = options.root_sift ? ToRootSift(d) : std::move(d);
  return f;
}

}  // namespace fm::matcher
