#include "fm/matcher/verify.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <opencv2/calib3d.hpp>
#include <set>
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
  if (!(max_nfa >= 0 && std::isfinite(max_nfa))) return bad("max NFA must be >= 0 (0 = no test)");
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

// The matches a model is estimated from: what USAC is given at the least.
int SampleSize(GeometryModel model) { return model == GeometryModel::kHomography ? 4 : 8; }

// Points closer than the inlier threshold are no independent evidence: positions are told apart
// by the cells of a grid of the threshold (at least a pixel).
using Cell = std::pair<int64_t, int64_t>;
double CellSize(double threshold) { return std::max(1.0, threshold); }
Cell CellOf(const cv::Point2f& p, double cell) {
  return {static_cast<int64_t>(std::floor(p.x / cell)),
          static_cast<int64_t>(std::floor(p.y / cell))};
}

// Distinct positions of the points whose `counts` byte is set: the cells that hold one or more.
int DistinctPositions(const std::vector<cv::Point2f>& points, const std::vector<uint8_t>& counts,
                      double cell) {
  std::vector<Cell> cells;
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i]) cells.push_back(CellOf(points[i], cell));
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

// The inliers (at distinct points, with distinct_points) a verified model needs: min_inliers, and
// at least the sample the model is estimated from.
int InliersNeeded(const VerifyOptions& options) {
  return std::max(options.min_inliers, SampleSize(options.model));
}

// log10 of the binomial coefficient C(n, k).
double Log10Binomial(double n, double k) {
  return (std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1)) / std::log(10.0);
}

// Verification::log10_nfa of `model` (3x3) over the matches pa[i] -> pb[i] whose `use` byte is
// set. The background: image B's keypoints' bounding box, over which a random match's point
// falls uniformly. A match fits within e px of a homography's transfer with probability
// alpha(e) = pi e^2 / area, of a fundamental matrix's epipolar line with 2 e diagonal / area.
// k matches fitting within e_k (the k-th smallest residual) out of n, m of them the sample the
// model came from, happen by chance NFA(k) = models (n - m) C(n, k) C(k, m) alpha(e_k)^(k - m)
// times (models: the solutions one sample gives, 1 for a homography, 3 for the 7-point
// fundamental matrix). The a contrario test of Moisan and Stival (2004), as AC-RANSAC uses it.
double Log10Nfa(GeometryModel kind, const cv::Matx33d& model, const std::vector<cv::Point2f>& pa,
                const std::vector<cv::Point2f>& pb, const std::vector<uint8_t>& use,
                const std::vector<core::Keypoint>& b, double threshold) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const bool homography = kind == GeometryModel::kHomography;
  float x0 = std::numeric_limits<float>::max(), y0 = x0, x1 = -x0, y1 = -x0;
  for (const auto& kp : b) {
    x0 = std::min(x0, kp.x), y0 = std::min(y0, kp.y);
    x1 = std::max(x1, kp.x), y1 = std::max(y1, kp.y);
  }
  if (b.empty()) return kInf;
  const double w = std::max(1.0, static_cast<double>(x1) - x0);
  const double h = std::max(1.0, static_cast<double>(y1) - y0);
  const double area = w * h, diagonal = std::hypot(w, h);

  struct Fit {
    double residual;
    std::size_t i;
  };
  std::vector<Fit> fits;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    if (!use[i]) continue;
    const cv::Vec3d x(pa[i].x, pa[i].y, 1.0);
    const cv::Vec3d l = model * x;
    double r = kInf;
    if (homography) {
      if (std::abs(l[2]) > 1e-12) r = std::hypot(l[0] / l[2] - pb[i].x, l[1] / l[2] - pb[i].y);
    } else {
      const double norm = std::hypot(l[0], l[1]);
      if (norm > 0) r = std::abs(l[0] * pb[i].x + l[1] * pb[i].y + l[2]) / norm;
    }
    if (std::isfinite(r)) fits.push_back({r, i});
  }
  std::sort(fits.begin(), fits.end(), [](const Fit& p, const Fit& q) {
    return p.residual < q.residual || (p.residual == q.residual && p.i < q.i);
  });
  // One match a cell of each image, the best fitting: matches onto one spot are one piece of
  // evidence, not several.
  const double cell = CellSize(threshold);
  std::set<Cell> taken_a, taken_b;
  std::vector<double> residuals;
  for (const Fit& f : fits) {
    const Cell ca = CellOf(pa[f.i], cell), cb = CellOf(pb[f.i], cell);
    if (taken_a.count(ca) || taken_b.count(cb)) continue;
    taken_a.insert(ca);
    taken_b.insert(cb);
    residuals.push_back(f.residual);
  }
  const int n = static_cast<int>(residuals.size());
  const int m = homography ? 4 : 7;
  const double models = homography ? 1.0 : 3.0;
  if (n <= m) return kInf;
  // Keypoints are placed to about a tenth of a pixel: a closer fit is no stronger evidence.
  constexpr double kPrecision = 0.1;
  const double head = std::log10(models) + std::log10(static_cast<double>(n - m));
  // log10 C(n, k) and log10 C(k, m), carried from one k to the next.
  double choose_n = Log10Binomial(n, m), choose_m = 0;
  double best = kInf;
  for (int k = m + 1; k <= n && residuals[k - 1] <= threshold; ++k) {
    choose_n += std::log10(static_cast<double>(n - k + 1) / k);
    choose_m += std::log10(static_cast<double>(k) / (k - m));
    const double e = std::max(residuals[k - 1], kPrecision);
    const double alpha =
        std::min(1.0, homography ? CV_PI * e * e / area : 2.0 * e * diagonal / area);
    best = std::min(best, head + choose_n + choose_m + (k - m) * std::log10(alpha));
  }
  return best;
}

}  // namespace

bool InliersTooCrowded(const Verification& v, const VerifyOptions& options) {
  const int need = InliersNeeded(options);
  return !v.verified && options.distinct_points && v.num_inliers > 0 && v.num_inliers >= need &&
         v.distinct_inliers < need;
}

bool InliersByChance(const Verification& v, const VerifyOptions& options) {
  const int support = options.distinct_points ? v.distinct_inliers : v.num_inliers;
  return !v.verified && options.max_nfa > 0 && v.num_inliers > 0 &&
         support >= InliersNeeded(options) && !(v.log10_nfa < std::log10(options.max_nfa));
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
  if (static_cast<int64_t>(matches.size()) < SampleSize(options.model)) return v;

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
  std::vector<uint8_t> use(pa.size(), 1);  // the matches that count: not at an epipole
  if (options.model == GeometryModel::kFundamental)
    DropEpipoleMatches(v.matrix, pa, pb, 2 * options.threshold, &use);
  std::vector<uint8_t> counts(pa.size());
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = mask.data[i] && use[i] ? 1 : 0;
  const double cell = CellSize(options.threshold);
  v.distinct_inliers =
      std::min(DistinctPositions(pa, counts, cell), DistinctPositions(pb, counts, cell));
  const int support = options.distinct_points ? v.distinct_inliers : v.num_inliers;
  v.log10_nfa = Log10Nfa(options.model, cv::Matx33d(v.matrix), pa, pb, use, b, options.threshold);
  v.verified = v.num_inliers > 0 && support >= InliersNeeded(options) &&
               (options.max_nfa <= 0 || v.log10_nfa < std::log10(options.max_nfa));
  return v;
}

}  // namespace fm::matcher
