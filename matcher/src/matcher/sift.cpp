#include "fm/matcher/sift.h"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <opencv2/features2d.hpp>
#include <opencv2/imgproc.hpp>

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
  if (!(edge_threshold > 0)) return bad("edge threshold must be > 0");
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

core::Features ExtractFeatures(const cv::Mat& image, const SiftOptions& options,
                               const cv::Mat& mask) {
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
    auto sift = cv::SIFT::create(options.max_features, options.octave_layers,
                                 options.contrast_threshold, options.edge_threshold, options.sigma,
                                 CV_8U);
    sift->detectAndCompute(work, work_mask, kps, desc);
  }
  const int32_t dim = 128;
  core::DescriptorMatrix d(core::DescriptorType::kUint8, static_cast<int64_t>(kps.size()), dim);
  if (!kps.empty()) {
    CV_Assert(desc.type() == CV_8U && desc.cols == dim && desc.rows == static_cast<int>(kps.size()));
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
