#include "fm/matcher/verify.h"

#include <opencv2/calib3d.hpp>
#include <stdexcept>

namespace fm::matcher {

const char* GeometryModelName(GeometryModel m) {
  switch (m) {
    case GeometryModel::kNone: return "none";
    case GeometryModel::kHomography: return "homography";
    case GeometryModel::kFundamental: return "fundamental";
  }
  return "unknown";
}

GeometryModel ParseGeometryModel(const std::string& name) {
  if (name == "none") return GeometryModel::kNone;
  if (name == "homography" || name == "H") return GeometryModel::kHomography;
  if (name == "fundamental" || name == "F") return GeometryModel::kFundamental;
  throw std::invalid_argument("unknown geometry model '" + name +
                              "' (use homography, fundamental or none)");
}

const char* UsacMethodName(UsacMethod m) {
  switch (m) {
    case UsacMethod::kMagsac: return "magsac";
    case UsacMethod::kDefault: return "default";
    case UsacMethod::kAccurate: return "accurate";
    case UsacMethod::kProsac: return "prosac";
    case UsacMethod::kFast: return "fast";
    case UsacMethod::kParallel: return "parallel";
  }
  return "unknown";
}

UsacMethod ParseUsacMethod(const std::string& name) {
  if (name == "magsac") return UsacMethod::kMagsac;
  if (name == "default") return UsacMethod::kDefault;
  if (name == "accurate") return UsacMethod::kAccurate;
  if (name == "prosac") return UsacMethod::kProsac;
  if (name == "fast") return UsacMethod::kFast;
  if (name == "parallel") return UsacMethod::kParallel;
  throw std::invalid_argument("unknown USAC method '" + name +
                              "' (use magsac, default, accurate, prosac, fast or parallel)");
}

bool VerifyOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (!(threshold > 0 && threshold < 1000)) return bad("verification threshold must be in (0, 1000) px");
  if (!(confidence > 0 && confidence < 1)) return bad("confidence must be in (0, 1)");
  if (max_iterations < 1) return bad("max iterations must be >= 1");
  if (min_inliers < 0) return bad("min inliers must be >= 0");
  return true;
}

namespace {

int UsacFlag(UsacMethod m) {
  switch (m) {
    case UsacMethod::kMagsac: return cv::USAC_MAGSAC;
    case UsacMethod::kDefault: return cv::USAC_DEFAULT;
    case UsacMethod::kAccurate: return cv::USAC_ACCURATE;
    case UsacMethod::kProsac: return cv::USAC_PROSAC;
    case UsacMethod::kFast: return cv::USAC_FAST;
    case UsacMethod::kParallel: return cv::USAC_PARALLEL;
  }
  return cv::USAC_MAGSAC;
}

}  // namespace

Verification VerifyMatches(const std::vector<core::Keypoint>& a,
                           const std::vector<core::Keypoint>& b,
                           const std::vector<core::Match>& matches, const VerifyOptions& options) {
  std::string why;
  if (!options.Check(&why)) throw std::invalid_argument("verification options: " + why);
  Verification v;
  v.model = options.model;
  v.inliers.assign(matches.size(), 0);
  if (options.model == GeometryModel::kNone) return v;
  const std::size_t min_sample = options.model == GeometryModel::kHomography ? 4 : 8;
  if (matches.size() < min_sample) return v;

  std::vector<cv::Point2f> pa, pb;
  pa.reserve(matches.size());
  pb.reserve(matches.size());
  for (const auto& m : matches) {
    if (m.query < 0 || static_cast<std::size_t>(m.query) >= a.size() || m.train < 0 ||
        static_cast<std::size_t>(m.train) >= b.size())
      throw std::out_of_range("VerifyMatches: a match refers to a missing keypoint");
    pa.emplace_back(a[m.query].x, a[m.query].y);
    pb.emplace_back(b[m.train].x, b[m.train].y);
  }
  // PROSAC expects matches ordered by quality: sort a copy by ratio (then distance).
  std::vector<int> order(matches.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  if (options.method == UsacMethod::kProsac) {
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return matches[x].ratio < matches[y].ratio ||
             (matches[x].ratio == matches[y].ratio && matches[x].distance < matches[y].distance);
    });
    std::vector<cv::Point2f> sa(pa.size()), sb(pb.size());
    for (std::size_t i = 0; i < order.size(); ++i) sa[i] = pa[order[i]], sb[i] = pb[order[i]];
    pa.swap(sa);
    pb.swap(sb);
  }
  cv::Mat mask;
  cv::Mat model;
  try {
    if (options.model == GeometryModel::kHomography) {
      model = cv::findHomography(pa, pb, UsacFlag(options.method), options.threshold, mask,
                                 options.max_iterations, options.confidence);
    } else {
      model = cv::findFundamentalMat(pa, pb, UsacFlag(options.method), options.threshold,
                                     options.confidence, options.max_iterations, mask);
    }
  } catch (const cv::Exception&) {
    // Degenerate configurations (all points collinear, ...) mean "not verified".
    return v;
  }
  if (model.empty() || mask.empty()) return v;
  if (model.rows > 3) model = model.rowRange(0, 3).clone();  // F may come back as 9x3
  model.convertTo(v.matrix, CV_64F);
  for (int i = 0; i < mask.rows * mask.cols; ++i) {
    if (mask.data[i]) {
      v.inliers[order[i]] = 1;
      ++v.num_inliers;
    }
  }
  v.verified = v.num_inliers >= options.min_inliers && v.num_inliers > 0;
  return v;
}

}  // namespace fm::matcher
