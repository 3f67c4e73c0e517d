// Geometric verification: a model counts as verified only on inliers at distinct points, a
// fundamental matrix not on matches at its epipoles, and only a model that matches at random
// would not fit as well (its number of false alarms under one).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <opencv2/core.hpp>
#include <random>
#include <string>
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
  EXPECT_FALSE(InliersByChance(v, VerifyOptions{}));
  // 40 exact fits out of 40: chance would give that about never.
  EXPECT_LT(v.log10_nfa, -100);
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
    o.max_nfa = 0;  // this rule alone
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
  o.max_nfa = 0;  // this rule alone
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
  EXPECT_LT(v.log10_nfa, -20);
}

// Matches with nothing in common: each point of A paired with a random point of B.
Scene Random(int n, uint32_t seed) {
  Scene s;
  const auto p = Spread(2 * n, seed);
  for (int i = 0; i < n; ++i) s.Add(p[i].x, p[i].y, p[n + i].x, p[n + i].y);
  return s;
}

TEST(Verify, AModelRandomMatchesFitAsWellIsNotVerified) {
  // A fundamental matrix confines a match to a line: among 150 random matches one passes within
  // 3 px of several, at distinct points, enough for the inlier count alone.
  const Scene s = Random(150, 7);
  VerifyOptions o;
  o.model = GeometryModel::kFundamental;
  o.max_nfa = 0;
  const Verification counted = VerifyMatches(s.a, s.b, s.matches, o);
  ASSERT_GE(counted.distinct_inliers, o.min_inliers) << "no chance fit to refuse";
  EXPECT_TRUE(counted.verified);
  // The inlier count is what chance gives: refused, and said why.
  o.max_nfa = 1;
  const Verification v = VerifyMatches(s.a, s.b, s.matches, o);
  EXPECT_FALSE(v.verified) << v.num_inliers << " inliers, log10 NFA " << v.log10_nfa;
  EXPECT_GT(v.log10_nfa, 0);
  EXPECT_TRUE(InliersByChance(v, o));
  EXPECT_FALSE(InliersTooCrowded(v, o));
  // The same matches with 30 fits of a real motion among them are verified.
  Scene t = s;
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> depth(1.0f, 3.0f);
  for (const cv::Point2f& p : Spread(30, 9)) t.Add(p.x, p.y, p.x + 60.0f / depth(rng), p.y);
  const Verification w = VerifyMatches(t.a, t.b, t.matches, o);
  EXPECT_TRUE(w.verified) << w.num_inliers << " inliers, log10 NFA " << w.log10_nfa;
  EXPECT_LT(w.log10_nfa, 0);
}

TEST(Verify, TheFalseAlarmBoundIsChecked) {
  VerifyOptions o;
  std::string why;
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    o.max_nfa = bad;
    EXPECT_FALSE(o.Check(&why)) << bad;
    EXPECT_NE(why.find("NFA"), std::string::npos) << why;
  }
  o.max_nfa = 0;
  EXPECT_TRUE(o.Check(&why));
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

TEST(Verify, UnrelatedPhotographsAreNotVerifiedByAChanceFundamentalMatrix) {
  FM_REQUIRE_SAMPLES("aloeL.jpg", "home.jpg", "left01.jpg", "left02.jpg");
  // The batch's settings. aloeL.jpg and home.jpg show different scenes; a fundamental matrix
  // fitted 17 of their 89 matches, at 16 distinct points, what random matches give.
  auto features = [](const char* name) {
    return ExtractFeatures(LoadGrayImage(test::Sample(name)), SiftOptions{});
  };
  auto cpu = core::CreateCpuKnnBackend();
  MatchOptions o;
  o.filter.mutual = true;
  o.verify.model = GeometryModel::kFundamental;
  o.verify.min_inliers = 15;
  const MatchResult r = MatchFeatures(features("aloeL.jpg"), features("home.jpg"), o, *cpu);
  EXPECT_FALSE(r.verification.verified)
      << r.verification.num_inliers << " inliers, log10 NFA " << r.verification.log10_nfa;
  EXPECT_GT(r.verification.log10_nfa, 0);
  // Two views of one chessboard: hundreds of inliers, a number of false alarms far under one.
  const MatchResult g = MatchFeatures(features("left01.jpg"), features("left02.jpg"), o, *cpu);
  EXPECT_TRUE(g.verification.verified);
  EXPECT_LT(g.verification.log10_nfa, -100);
}

}  // namespace
}  // namespace fm::matcher
