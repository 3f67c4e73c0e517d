#include "fm/matcher/guided.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace fm::matcher {

namespace {

// The nearest two (distance, index) of a search among candidates, in the kNN's order: smaller
// distance first, ties to the lower index.
struct BestTwo {
  float d[2] = {INFINITY, INFINITY};
  int64_t i[2] = {-1, -1};
  void Offer(float dist, int64_t idx) {
    auto less = [](float da, int64_t ia, float db, int64_t ib) {
      if (ib < 0) return true;
      return da < db || (da == db && ia < ib);
    };
    if (less(dist, idx, d[0], i[0])) {
      d[1] = d[0], i[1] = i[0];
      d[0] = dist, i[0] = idx;
    } else if (less(dist, idx, d[1], i[1])) {
      d[1] = dist, i[1] = idx;
    }
  }
};

// Keypoints of B by cells of `cell` px, for the candidates near a point.
class Grid {
 public:
  Grid(const std::vector<core::Keypoint>& k, const std::vector<uint8_t>& allowed, double cell)
      : cell_(cell) {
    for (std::size_t j = 0; j < k.size(); ++j)
      if ((allowed.empty() || allowed[j]) && Placeable(k[j].x, k[j].y))
        cells_[Key(Cell(k[j].x), Cell(k[j].y))].push_back(j);
  }
  // Whether a point's cell can be computed (a finite point within a billion pixels).
  static bool Placeable(double x, double y) {
    return std::abs(x) < 1e9 && std::abs(y) < 1e9;
  }
  // Calls f(j) for the keypoints in the cells within one of (x, y)'s.
  template <typename F>
  void Near(double x, double y, F&& f) const {
    const int64_t cx = Cell(x), cy = Cell(y);
    for (int64_t dy = -1; dy <= 1; ++dy)
      for (int64_t dx = -1; dx <= 1; ++dx) {
        const auto it = cells_.find(Key(cx + dx, cy + dy));
        if (it == cells_.end()) continue;
        for (const std::size_t j : it->second) f(j);
      }
  }

 private:
  int64_t Cell(double v) const { return static_cast<int64_t>(std::floor(v / cell_)); }
  static int64_t Key(int64_t cx, int64_t cy) { return cx * 1000003 + cy; }
  double cell_;
  std::unordered_map<int64_t, std::vector<std::size_t>> cells_;
};

}  // namespace

std::vector<core::Match> GuidedMatches(const std::vector<core::Keypoint>& ka,
                                       const core::DescriptorMatrix& da,
                                       const std::vector<core::Keypoint>& kb,
                                       const core::DescriptorMatrix& db, const GuidedModel& model,
                                       core::Metric metric, const core::FilterOptions& filter,
                                       const std::vector<uint8_t>& allowed_a,
                                       const std::vector<uint8_t>& allowed_b,
                                       const std::atomic<bool>* cancel) {
  const int64_t na = static_cast<int64_t>(ka.size()), nb = static_cast<int64_t>(kb.size());
  if (da.rows() != na || db.rows() != nb)
    throw std::invalid_argument("guided matching: keypoints and descriptors differ in number");
  if ((!allowed_a.empty() && static_cast<int64_t>(allowed_a.size()) != na) ||
      (!allowed_b.empty() && static_cast<int64_t>(allowed_b.size()) != nb))
    throw std::invalid_argument("guided matching: a mask's size differs from its features'");
  if (model.kind == GeometryModel::kNone || !(model.threshold > 0))
    throw std::invalid_argument("guided matching needs a homography or a fundamental matrix");
  if (na == 0 || nb == 0) return {};
  if (da.dim() != db.dim() || da.type() != db.type())
    throw std::invalid_argument("guided matching: descriptors of different kinds");
  const int32_t dim = da.dim();
  const double t = model.threshold;

  std::vector<float> fb(static_cast<std::size_t>(nb) * dim), fa(dim);
  for (int64_t j = 0; j < nb; ++j) db.RowAsFloat(j, fb.data() + j * dim);

  core::KnnResult forward = core::KnnResult::Padded(na, 2);
  core::KnnResult backward = core::KnnResult::Padded(nb, 1);
  std::vector<BestTwo> back(filter.mutual ? nb : 0);
  const Grid grid(kb, allowed_b, std::max(1.0, t));
  for (int64_t i = 0; i < na; ++i) {
    // A fundamental matrix's candidates are every feature of B: on large images the pass takes
    // seconds, so the cancel is looked at every 64 features of A.
    if (i % 64 == 0) core::ThrowIfCancelled(cancel);
    if (!allowed_a.empty() && !allowed_a[i]) continue;
    const cv::Vec3d x(ka[i].x, ka[i].y, 1.0);
    const cv::Vec3d y = model.matrix * x;
    bool loaded = false;
    BestTwo best;
    auto offer = [&](std::size_t j) {
      if (!loaded) {
        da.RowAsFloat(i, fa.data());
        loaded = true;
      }
      const float d =
          static_cast<float>(core::DescriptorDistance(fa.data(), fb.data() + j * dim, dim, metric));
      best.Offer(d, static_cast<int64_t>(j));
      if (filter.mutual) back[j].Offer(d, i);
    };
    if (model.kind == GeometryModel::kHomography) {
      if (!(std::abs(y[2]) > 1e-12)) continue;
      const double px = y[0] / y[2], py = y[1] / y[2];
      if (!Grid::Placeable(px, py)) continue;
      grid.Near(px, py, [&](std::size_t j) {
        if (std::hypot(kb[j].x - px, kb[j].y - py) <= t) offer(j);
      });
    } else {
      const double norm = std::hypot(y[0], y[1]);
      if (!(norm > 0) || !std::isfinite(norm)) continue;
      for (int64_t j = 0; j < nb; ++j) {
        if (!allowed_b.empty() && !allowed_b[j]) continue;
        if (std::abs(y[0] * kb[j].x + y[1] * kb[j].y + y[2]) <= t * norm) offer(j);
      }
    }
    for (int s = 0; s < 2; ++s) {
      forward.distances[i * 2 + s] = best.d[s];
      forward.indices[i * 2 + s] = best.i[s];
    }
  }
  for (int64_t j = 0; j < static_cast<int64_t>(back.size()); ++j) {
    backward.distances[j] = back[j].d[0];
    backward.indices[j] = back[j].i[0];
  }
  return core::FilterMatches(forward, filter.mutual ? &backward : nullptr, metric, filter);
}

float GuidedDistanceBound(const std::vector<core::Match>& matches,
                          const std::vector<uint8_t>& inliers, float max_distance) {
  float bound = 0;
  for (std::size_t i = 0; i < matches.size() && i < inliers.size(); ++i)
    if (inliers[i]) bound = std::max(bound, matches[i].distance);
  if (max_distance > 0) bound = std::min(bound, max_distance);
  // 0 would read as no bound at all: inliers at distance 0 (an image against itself) admit only
  // matches at distance 0.
  return std::max(bound, std::numeric_limits<float>::min());
}

GuidedPass RunGuidedPass(const std::vector<core::Keypoint>& ka, const core::DescriptorMatrix& da,
                         const std::vector<core::Keypoint>& kb, const core::DescriptorMatrix& db,
                         const std::vector<core::Match>& matches,
                         const Verification& verification, const VerifyOptions& verify,
                         core::Metric metric, const core::FilterOptions& filter,
                         const std::vector<uint8_t>& allowed_a,
                         const std::vector<uint8_t>& allowed_b,
                         const std::atomic<bool>* cancel) {
  GuidedPass pass;
  if (!verification.verified || verification.matrix.empty()) return pass;
  core::FilterOptions bounded = filter;
  bounded.max_distance = GuidedDistanceBound(matches, verification.inliers, filter.max_distance);
  pass.matches = GuidedMatches(ka, da, kb, db,
                               {verify.model, cv::Matx33d(verification.matrix), verify.threshold},
                               metric, bounded, allowed_a, allowed_b, cancel);
  core::ThrowIfCancelled(cancel);
  pass.verification = VerifyMatches(ka, kb, pass.matches, verify);
  pass.applied = pass.verification.verified && !pass.verification.matrix.empty();
  pass.verification.log10_nfa = verification.log10_nfa;
  return pass;
}

}  // namespace fm::matcher
