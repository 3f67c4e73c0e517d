#include "fm/matcher/verify.h"

#include <algorithm>
#include <cmath>
#include <opencv2/calib3d.hpp>
#include <stdexcept>
#include <utility>

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
  if (!(threshold > 0 && threshold < 1000))
    return bad("verification threshold must be in (0, 1000) px");
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

// Distinct positions of the points whose `counts` byte is set: the cells of a grid of `cell` px
// that hold one or more (points closer than the inlier threshold are no independent evidence).
int DistinctPositions(const std::vector<cv::Point2f>& points, const std::vector<uint8_t>& counts,
                      double cell) {
  std::vector<std::pair<int64_t, int64_t>> cells;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (!counts[i]) continue;
    cells.emplace_back(static_cast<int64_t>(std::floor(points[i].x / cell)),
                       static_cast<int64_t>(std::floor(points[i].y / cell)));
  }
  std::sort(cells.begin(), cells.end());
  return static_cast<int>(std::unique(cells.begin(), cells.end()) - cells.begin());
}

// Clears the bytes of the matches a fundamental matrix f explains whatever they are: a point at
// (within `radius` px of) an epipole lies on every epipolar line of its image, so its match
// satisfies f for any point of the other image.
void DropEpipoleMatches(const cv::Mat& f, const std::vector<cv::Point2f>& pa,
                        const std::vector<cv::Point2f>& pb, double radius,
                        std::vector<uint8_t>* counts) {
  cv::Mat w, u, vt;
  cv::SVD::compute(f, w, u, vt, cv::SVD::FULL_UV);
  // F e = 0 (the epipole in A: the last row of V^T), F^T e' = 0 (in B: the last column of U).
  const cv::Vec3d e(vt.at<double>(2, 0), vt.at<double>(2, 1), vt.at<double>(2, 2));
  const cv::Vec3d e2(u.at<double>(0, 2), u.at<double>(1, 2), u.at<double>(2, 2));
  auto near = [&](const cv::Vec3d& h, const cv::Point2f& p) {
    if (std::abs(h[2]) < 1e-12) return false;  // at infinity: no point of the image is there
    return std::hypot(p.x - h[0] / h[2], p.y - h[1] / h[2]) <= radius;
  };
  for (std::size_t i = 0; i < counts->size(); ++i)
    if ((*counts)[i] && (near(e, pa[i]) || near(e2, pb[i]))) (*counts)[i] = 0;
}

}  // namespace

bool InliersTooCrowded(const Verification& v, const VerifyOptions& options) {
  return !v.verified && options.distinct_points && v.num_inliers >= options.min_inliers &&
         v.num_inliers > 0 && v.distinct_inliers < v.num_inliers;
}

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
  // The evidence: inliers at distinct points (a cell of the inlier threshold) in both images, and
  // for a fundamental matrix not at an epipole (within twice the threshold).
  std::vector<uint8_t> counts(pa.size());
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = mask.data[i] ? 1 : 0;
  if (options.model == GeometryModel::kFundamental)
    DropEpipoleMatches(v.matrix, pa, pb, 2 * options.threshold, &counts);
  const double cell = std::max(1.0, options.threshold);
  v.distinct_inliers =
      std::min(DistinctPositions(pa, counts, cell), DistinctPositions(pb, counts, cell));
  const int support = options.distinct_points ? v.distinct_inliers : v.num_inliers;
  v.verified = v.num_inliers > 0 && support >= options.min_inliers &&
               support >= static_cast<int>(min_sample);
  return v;
}

}  // namespace fm::matcher
