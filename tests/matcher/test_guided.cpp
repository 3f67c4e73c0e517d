// Guided matching: features matched again among those a verified model allows.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/core/persistence.hpp>
#include <random>
#include <string>
#include <vector>

#include "fm/core/knn.h"
#include "fm/matcher/backend.h"
#include "fm/matcher/guided.h"
#include "fm/matcher/image.h"
#include "fm/matcher/pipeline.h"
#include "fm/matcher/sift.h"
#include "test_images.h"

namespace fm::matcher {
namespace {

core::Keypoint Point(double x, double y) {
  core::Keypoint k;
  k.x = static_cast<float>(x);
  k.y = static_cast<float>(y);
  return k;
}

// 60 features of A under a homography in B, each B descriptor its A descriptor with noise; and,
// for every one of the first 30, a look-alike in B far from where the model puts it, as near in
// descriptor space as the true partner (the same noise drawn again), so that the ratio test over
// all of B drops the pair as ambiguous.
struct Scene {
  core::Features a, b;
  cv::Matx33d h{0.9, 0.1, 20, -0.05, 1.1, 10, 1e-4, 0, 1};
  std::vector<int> partner;  // B index of each A feature's true partner
};

Scene MakeScene() {
  Scene s;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> x(20, 600), y(20, 440);
  std::uniform_int_distribution<int> byte(0, 255), noise(-6, 6);
  const int n = 60, dim = 128;
  s.a.descriptors = core::DescriptorMatrix(core::DescriptorType::kUint8, n, dim);
  s.b.descriptors = core::DescriptorMatrix(core::DescriptorType::kUint8, n + 30, dim);
  auto clamp = [](int v) { return static_cast<uint8_t>(std::min(255, std::max(0, v))); };
  for (int i = 0; i < n; ++i) {
    const double ax = x(rng), ay = y(rng);
    s.a.keypoints.push_back(Point(ax, ay));
    const cv::Vec3d q = s.h * cv::Vec3d(ax, ay, 1);
    s.b.keypoints.push_back(Point(q[0] / q[2], q[1] / q[2]));
    s.partner.push_back(i);
    for (int c = 0; c < dim; ++c) {
      const uint8_t v = static_cast<uint8_t>(byte(rng));
      s.a.descriptors.u8()[i * dim + c] = v;
      s.b.descriptors.u8()[i * dim + c] = clamp(v + noise(rng));
    }
  }
  for (int i = 0; i < 30; ++i) {
    // The look-alike, 250 px away from the partner.
    const core::Keypoint& p = s.b.keypoints[i];
    s.b.keypoints.push_back(Point(std::fmod(p.x + 200, 640.0), std::fmod(p.y + 150, 480.0)));
    for (int c = 0; c < dim; ++c) {
      const uint8_t v = s.a.descriptors.u8()[i * dim + c];
      s.b.descriptors.u8()[(n + i) * dim + c] = clamp(v + noise(rng));
    }
  }
  return s;
}

TEST(Guided, AModelBringsBackMatchesALookAlikeHid) {
  const Scene s = MakeScene();
  auto cpu = core::CreateCpuKnnBackend();
  MatchOptions o;
  const MatchResult plain = MatchFeatures(s.a, s.b, o, *cpu);
  ASSERT_TRUE(plain.verification.verified);
  // The ratio test over all of B keeps only the 30 pairs without a look-alike.
  EXPECT_EQ(plain.matches.size(), 30u);
  EXPECT_FALSE(plain.guided.applied);

  o.guided = true;
  const MatchResult g = MatchFeatures(s.a, s.b, o, *cpu);
  ASSERT_TRUE(g.guided.applied);
  EXPECT_EQ(g.guided.matches_before, 30);
  EXPECT_EQ(g.guided.inliers_before, plain.verification.num_inliers);
  // Under the model the features find their partners, none a look-alike; a few partners may be
  // farther in descriptor space than the farthest of the 30 inliers, the bound of the pass.
  EXPECT_GE(g.matches.size(), 55u);
  for (const auto& m : g.matches) EXPECT_EQ(m.train, s.partner[m.query]) << m.query;
  EXPECT_TRUE(g.verification.verified);
  EXPECT_EQ(g.verification.num_inliers, static_cast<int>(g.matches.size()));
  // Chosen by the model, the guided matches say nothing of chance: the significance is the
  // search's.
  EXPECT_EQ(g.verification.log10_nfa, plain.verification.log10_nfa);
}

// A backend that sets a cancel flag once it has run `after` searches, as a user pressing Cancel
// while the match runs would.
class CancellingBackend : public core::KnnBackend {
 public:
  CancellingBackend(std::atomic<bool>& flag, int after)
      : flag_(flag), after_(after), cpu_(core::CreateCpuKnnBackend()) {}
  std::string name() const override { return "cancelling"; }
  std::string description() const override { return "cancelling cpu"; }
  core::KnnResult Search(const core::DescriptorMatrix& q, const core::DescriptorMatrix& c,
                         const core::KnnParams& p) override {
    ++searches;
    core::KnnResult r = cpu_->Search(q, c, p);
    if (searches >= after_) flag_ = true;
    return r;
  }
  int searches = 0;

 private:
  std::atomic<bool>& flag_;
  int after_;
  std::unique_ptr<core::KnnBackend> cpu_;
};

TEST(Guided, ACancelStopsTheMatchAtItsNextStage) {
  const Scene s = MakeScene();
  MatchOptions o;
  o.filter.mutual = true;
  o.guided = true;
  std::atomic<bool> cancel{true};
  {  // set before the start: no search runs
    CancellingBackend b(cancel, 99);
    EXPECT_THROW(MatchFeatures(s.a, s.b, o, b, nullptr, &cancel), core::Cancelled);
    EXPECT_EQ(b.searches, 0);
  }
  for (const int after : {1, 2}) {  // set during the forward, then the backward search
    cancel = false;
    CancellingBackend b(cancel, after);
    EXPECT_THROW(MatchFeatures(s.a, s.b, o, b, nullptr, &cancel), core::Cancelled) << after;
    EXPECT_EQ(b.searches, after);
  }
  // Never set: the match is the one without a flag.
  cancel = false;
  CancellingBackend b(cancel, 99);
  const MatchResult with = MatchFeatures(s.a, s.b, o, b, nullptr, &cancel);
  auto cpu = core::CreateCpuKnnBackend();
  const MatchResult without = MatchFeatures(s.a, s.b, o, *cpu);
  ASSERT_TRUE(with.guided.applied);
  EXPECT_EQ(with.matches.size(), without.matches.size());
  EXPECT_EQ(with.verification.num_inliers, without.verification.num_inliers);
  // The guided pass stops on it by itself, under either model.
  cancel = true;
  for (const GeometryModel kind : {GeometryModel::kHomography, GeometryModel::kFundamental}) {
    const GuidedModel model{kind, s.h, 3.0};
    EXPECT_THROW(GuidedMatches(s.a.keypoints, s.a.descriptors, s.b.keypoints, s.b.descriptors,
                               model, core::Metric::kL2Squared, o.filter, {}, {}, &cancel),
                 core::Cancelled);
  }
}

TEST(Guided, NeighboursAmongTheCandidatesAreABruteForceSearchs) {
  // Every A feature's candidates: the B features within the threshold of its transfer. The
  // guided match must be the nearest of them by the reference distance, ties to the lower index.
  const Scene s = MakeScene();
  const GuidedModel model{GeometryModel::kHomography, s.h, 3.0};
  core::FilterOptions f;
  f.ratio = 1.0f;  // every nearest candidate
  const auto matches =
      GuidedMatches(s.a.keypoints, s.a.descriptors, s.b.keypoints, s.b.descriptors, model,
                    core::Metric::kL2Squared, f);
  const int dim = s.a.descriptors.dim();
  std::vector<float> qa(dim), cb(dim);
  std::size_t next = 0;
  for (int i = 0; i < s.a.size(); ++i) {
    const cv::Vec3d q = s.h * cv::Vec3d(s.a.keypoints[i].x, s.a.keypoints[i].y, 1);
    s.a.descriptors.RowAsFloat(i, qa.data());
    double best = INFINITY;
    int best_j = -1;
    for (int j = 0; j < s.b.size(); ++j) {
      if (std::hypot(s.b.keypoints[j].x - q[0] / q[2], s.b.keypoints[j].y - q[1] / q[2]) > 3.0)
        continue;
      s.b.descriptors.RowAsFloat(j, cb.data());
      const double d =
          core::DescriptorDistance(qa.data(), cb.data(), dim, core::Metric::kL2Squared);
      if (d < best) best = d, best_j = j;
    }
    if (best_j < 0) continue;
    ASSERT_LT(next, matches.size());
    EXPECT_EQ(matches[next].query, i);
    EXPECT_EQ(matches[next].train, best_j);
    EXPECT_FLOAT_EQ(matches[next].distance, static_cast<float>(std::sqrt(best)));
    ++next;
  }
  EXPECT_EQ(next, matches.size());
}

TEST(Guided, AFeatureWithOneCandidateNeedsADescriptorLikeTheInliers) {
  // A fundamental matrix of a horizontal motion: every epipolar line is a row. One A feature,
  // two B features on its row, one far in descriptor space: the bound of the pair's inliers
  // keeps it out even where it is the only candidate.
  core::Features a, b;
  a.keypoints = {Point(100, 50)};
  b.keypoints = {Point(300, 50.5), Point(500, 200)};
  a.descriptors = core::DescriptorMatrix(core::DescriptorType::kUint8, 1, 4);
  b.descriptors = core::DescriptorMatrix(core::DescriptorType::kUint8, 2, 4);
  const uint8_t da[4] = {10, 20, 30, 40}, db[8] = {200, 200, 200, 200, 10, 20, 30, 41};
  std::copy(da, da + 4, a.descriptors.u8());
  std::copy(db, db + 8, b.descriptors.u8());
  const GuidedModel model{GeometryModel::kFundamental,
                          cv::Matx33d(0, 0, 0, 0, 0, -1, 0, 1, 0), 3.0};
  core::FilterOptions f;
  // Unbounded, the only candidate on the row passes as unambiguous.
  auto m = GuidedMatches(a.keypoints, a.descriptors, b.keypoints, b.descriptors, model,
                         core::Metric::kL2Squared, f);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].train, 0);
  // Bounded by inliers at distance 1 (the look-alike off the row), it does not.
  core::Match inlier;
  inlier.distance = 1.0f;
  f.max_distance = GuidedDistanceBound({inlier}, {1}, 0.0f);
  EXPECT_FLOAT_EQ(f.max_distance, 1.0f);
  EXPECT_TRUE(GuidedMatches(a.keypoints, a.descriptors, b.keypoints, b.descriptors, model,
                            core::Metric::kL2Squared, f)
                  .empty());
  // Inliers at distance 0 admit distance 0 only, not everything.
  EXPECT_GT(GuidedDistanceBound({core::Match{}}, {1}, 0.0f), 0.0f);
}

TEST(Guided, NeedsAModelAndMatchingInputs) {
  const Scene s = MakeScene();
  MatchOptions o;
  o.guided = true;
  o.verify.model = GeometryModel::kNone;
  std::string why;
  EXPECT_FALSE(o.Check(&why));
  EXPECT_NE(why.find("guided"), std::string::npos) << why;
  const GuidedModel none{GeometryModel::kNone, cv::Matx33d::eye(), 3.0};
  EXPECT_THROW(GuidedMatches(s.a.keypoints, s.a.descriptors, s.b.keypoints, s.b.descriptors, none,
                             core::Metric::kL2Squared, {}),
               std::invalid_argument);
  const GuidedModel h{GeometryModel::kHomography, s.h, 3.0};
  EXPECT_THROW(GuidedMatches(s.a.keypoints, s.a.descriptors, s.a.keypoints, s.b.descriptors, h,
                             core::Metric::kL2Squared, {}),
               std::invalid_argument);
  EXPECT_THROW(GuidedMatches(s.a.keypoints, s.a.descriptors, s.b.keypoints, s.b.descriptors, h,
                             core::Metric::kL2Squared, {}, {1, 0}),
               std::invalid_argument);
}

TEST(Guided, KeypointsThatCannotBePlacedAreNoCandidates) {
  // A keypoint at NaN or far off any image (a damaged feature file) is nobody's candidate, under
  // either model, and the search goes on.
  Scene s = MakeScene();
  s.b.keypoints[0].x = NAN;
  s.b.keypoints[1].x = 1e20f;
  s.a.keypoints[2].y = NAN;
  core::FilterOptions f;
  f.ratio = 1.0f;
  for (const GuidedModel& model :
       {GuidedModel{GeometryModel::kHomography, s.h, 3.0},
        GuidedModel{GeometryModel::kFundamental, cv::Matx33d(0, 0, 0, 0, 0, -1, 0, 1, 0), 3.0}}) {
    const auto matches = GuidedMatches(s.a.keypoints, s.a.descriptors, s.b.keypoints,
                                       s.b.descriptors, model, core::Metric::kL2Squared, f);
    for (const auto& m : matches) {
      EXPECT_NE(m.train, 0);
      EXPECT_NE(m.train, 1);
      EXPECT_NE(m.query, 2);
    }
    if (model.kind == GeometryModel::kHomography) EXPECT_GE(matches.size(), 50u);
  }
}

TEST(Guided, GrafMatchesMoreAndStaysWithTheGroundTruth) {
  FM_REQUIRE_SAMPLES("graf1.png", "graf3.png", "H1to3p.xml");
  cv::FileStorage fs(test::Sample("H1to3p.xml"), cv::FileStorage::READ);
  cv::Mat truth;
  fs.getFirstTopLevelNode() >> truth;
  truth.convertTo(truth, CV_64F);
  const cv::Matx33d h(truth);
  const auto a = ExtractFeatures(LoadGrayImage(test::Sample("graf1.png")), SiftOptions{});
  const auto b = ExtractFeatures(LoadGrayImage(test::Sample("graf3.png")), SiftOptions{});
  auto cpu = core::CreateCpuKnnBackend();
  MatchOptions o;
  const MatchResult plain = MatchFeatures(a, b, o, *cpu);
  o.guided = true;
  const MatchResult g = MatchFeatures(a, b, o, *cpu);
  ASSERT_TRUE(g.guided.applied);
  ASSERT_TRUE(g.verification.verified);
  int agree = 0;
  for (std::size_t i = 0; i < g.matches.size(); ++i) {
    if (!g.verification.inliers[i]) continue;
    const auto& p = a.keypoints[g.matches[i].query];
    const auto& q = b.keypoints[g.matches[i].train];
    const cv::Vec3d t = h * cv::Vec3d(p.x, p.y, 1);
    agree += std::hypot(t[0] / t[2] - q.x, t[1] / t[2] - q.y) < 3.0;
  }
  std::printf("graf1->graf3 guided: %d inliers (%d before), %d agree with H1to3p\n",
              g.verification.num_inliers, plain.verification.num_inliers, agree);
  // Half as many inliers again, and as faithful to the ground truth as the search's own.
  EXPECT_GE(g.verification.num_inliers, plain.verification.num_inliers * 3 / 2);
  EXPECT_GE(agree, g.verification.num_inliers * 97 / 100);
}

}  // namespace
}  // namespace fm::matcher
