// Geometric verification: a model counts as verified only on inliers at distinct points, and a
// fundamental matrix not on matches at its epipoles.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <random>
#include <vector>

#include "fm/core/knn.h"
#include "fm/matcher/image.h"
#include "fm/matcher/pipeline.h"
#include "fm/matcher/sift.h"
#include "fm/matcher/verify.h"
#include "test_images.h"

namespace fm::matcher {
namespace {

struct Scene {
  std::vector<core::Keypoint> a, b;
  std::vector<core::Match> matches;
  void Add(float ax, float ay, float bx, float by) {
    core::Keypoint ka, kb;
    ka.x = ax;
    ka.y = ay;
    kb.x = bx;
    kb.y = by;
    a.push_back(ka);
    b.push_back(kb);
    core::Match m;
    m.query = static_cast<int32_t>(a.size() - 1);
    m.train = static_cast<int32_t>(b.size() - 1);
    matches.push_back(m);
  }
};

// Points of A spread over a 640 x 480 image.
std::vector<cv::Point2f> Spread(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> x(10, 630), y(10, 470);
  std::vector<cv::Point2f> p;
  for (int i = 0; i < n; ++i) p.emplace_back(x(rng), y(rng));
  return p;
}

TEST(Verify, AHomographyOnSpreadInliersIsVerified) {
  Scene s;
  const cv::Matx33d h(0.9, 0.1, 20, -0.05, 1.1, 10, 1e-4, 0, 1);
  for (const cv::Point2f& p : Spread(40, 1)) {
    const cv::Vec3d q = h * cv::Vec3d(p.x, p.y, 1);
    s.Add(p.x, p.y, static_cast<float>(q[0] / q[2]), static_cast<float>(q[1] / q[2]));
  }
  const Verification v = VerifyMatches(s.a, s.b, s.matches, VerifyOptions{});
  EXPECT_TRUE(v.verified);
  EXPECT_EQ(v.num_inliers, 40);
  EXPECT_EQ(v.distinct_inliers, 40);
  EXPECT_FALSE(InliersTooCrowded(v, VerifyOptions{}));
}

// Thirty features of A matched to points of B within `spread` px of (500.5, 20.25) (say a corner
// of a repeated pattern), and ten scattered matches.
Scene Folded(float spread) {
  Scene s;
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> jitter(-spread, spread);
  for (const cv::Point2f& p : Spread(30, 2))
    s.Add(p.x, p.y, 500.5f + jitter(rng), 20.25f + jitter(rng));
  const auto noise = Spread(20, 3);
  for (int i = 0; i < 10; ++i) s.Add(noise[i].x, noise[i].y, noise[10 + i].x, noise[10 + i].y);
  return s;
}

TEST(Verify, ManyMatchesOntoOnePointVerifyNothing) {
  // A homography folding A onto that point, or a fundamental matrix with its epipole there,
  // agrees with the thirty.
  const Scene s = Folded(1.0f);
  for (GeometryModel model : {GeometryModel::kHomography, GeometryModel::kFundamental}) {
    VerifyOptions o;
    o.model = model;
    const Verification v = VerifyMatches(s.a, s.b, s.matches, o);
    EXPECT_GE(v.num_inliers, 30) << GeometryModelName(model);
    EXPECT_FALSE(v.verified) << GeometryModelName(model) << ": " << v.num_inliers << " inliers, "
                             << v.distinct_inliers << " distinct";
    EXPECT_LT(v.distinct_inliers, o.min_inliers) << GeometryModelName(model);
    EXPECT_TRUE(InliersTooCrowded(v, o)) << GeometryModelName(model);
  }
}

TEST(Verify, MatchesAtAnEpipoleAreNoEvidenceForAFundamentalMatrix) {
  // The thirty spread over a few pixels: more cells than the minimum, but every one within two
  // thresholds of where the model puts its epipole.
  const Scene s = Folded(4.0f);
  VerifyOptions o;
  o.model = GeometryModel::kFundamental;
  const Verification v = VerifyMatches(s.a, s.b, s.matches, o);
  EXPECT_GE(v.num_inliers, 20);
  EXPECT_FALSE(v.verified) << v.num_inliers << " inliers, " << v.distinct_inliers << " distinct";
}

TEST(Verify, AFundamentalMatrixOfATranslationCountsEveryInlier) {
  // A pure translation along x: every epipolar line is horizontal, the epipoles are at infinity
  // and no match is left out.
  Scene s;
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> depth(1.0f, 3.0f);
  for (const cv::Point2f& p : Spread(40, 5)) s.Add(p.x, p.y, p.x + 60.0f / depth(rng), p.y);
  VerifyOptions o;
  o.model = GeometryModel::kFundamental;
  const Verification v = VerifyMatches(s.a, s.b, s.matches, o);
  EXPECT_TRUE(v.verified);
  EXPECT_GE(v.distinct_inliers, 36);  // a few may share a cell or fall outside the threshold
}

TEST(Verify, UnrelatedPhotographsAreNotVerifiedByAFoldedHomography) {
  FM_REQUIRE_SAMPLES("graf3.png", "left01.jpg");
  // graf1.png and left01.jpg show nothing in common; many graffiti features match one point of
  // the chessboard photograph, and the homography through it had 17 "inliers".
  auto features = [](const char* name) {
    return ExtractFeatures(LoadGrayImage(test::Sample(name)), SiftOptions{});
  };
  const core::Features graf1 = features("graf1.png");
  auto cpu = core::CreateCpuKnnBackend();
  MatchOptions o;
  o.verify.model = GeometryModel::kHomography;
  const MatchResult r = MatchFeatures(graf1, features("left01.jpg"), o, *cpu);
  EXPECT_GE(r.verification.num_inliers, o.verify.min_inliers);
  EXPECT_FALSE(r.verification.verified)
      << r.verification.num_inliers << " inliers, " << r.verification.distinct_inliers
      << " distinct";
  // The same rule keeps a real pair verified with (nearly) every inlier counted.
  const MatchResult g = MatchFeatures(graf1, features("graf3.png"), o, *cpu);
  EXPECT_TRUE(g.verification.verified);
  EXPECT_GE(g.verification.distinct_inliers, g.verification.num_inliers * 9 / 10);
}

}  // namespace
}  // namespace fm::matcher
