// fm::matcher::KnnDescriptorMatcher against cv::BFMatcher on the same descriptors: knnMatch,
// match, radiusMatch, masks, train collections, clone / clear, both norms, both element types.
// Runs on the CPU backend in CI (and on the GPU backend where one is present).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/features2d.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fm/matcher/backend.h"
#include "fm/matcher/cv_matcher.h"

namespace fm::matcher {
namespace {

// SIFT-like rows (integer values, so float distances are exact in both matchers).
cv::Mat RandomDescriptors(int rows, int cols, int type, uint32_t seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<float> ex(1.0f / 25.0f);
  cv::Mat m(rows, cols, type);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const float v = std::floor(std::min(255.0f, ex(rng)));
      if (type == CV_8U) m.at<uint8_t>(r, c) = static_cast<uint8_t>(v);
      else m.at<float>(r, c) = v;
    }
  return m;
}

cv::Mat RandomMask(int rows, int cols, double keep, uint32_t seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution b(keep);
  cv::Mat m(rows, cols, CV_8U);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m.at<uint8_t>(r, c) = b(rng) ? 1 : 0;
  return m;
}

// Same matches; where the train index differs the distances must tie.
void ExpectSameMatches(const std::vector<std::vector<cv::DMatch>>& ref,
                       const std::vector<std::vector<cv::DMatch>>& got, const std::string& what) {
  ASSERT_EQ(ref.size(), got.size()) << what;
  int bad = 0;
  for (std::size_t q = 0; q < ref.size(); ++q) {
    if (ref[q].size() != got[q].size()) {
      if (bad++ < 5)
        ADD_FAILURE() << what << ": query " << q << ": " << ref[q].size() << " vs "
                      << got[q].size() << " matches";
      continue;
    }
    for (std::size_t j = 0; j < ref[q].size(); ++j) {
      const cv::DMatch &a = ref[q][j], &b = got[q][j];
      const bool dist_ok = std::abs(a.distance - b.distance) <= 1e-5f * std::max(1.0f, a.distance);
      const bool same = a.trainIdx == b.trainIdx && a.imgIdx == b.imgIdx;
      if ((!dist_ok || (!same && a.distance != b.distance) || a.queryIdx != b.queryIdx) &&
          bad++ < 5)
        ADD_FAILURE() << what << ": query " << q << " #" << j << ": bf (" << a.queryIdx << ","
                      << a.imgIdx << "/" << a.trainIdx << "," << a.distance << ") fm ("
                      << b.queryIdx << "," << b.imgIdx << "/" << b.trainIdx << "," << b.distance
                      << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

BackendOptions Cpu() {
  BackendOptions o;
  o.kind = BackendKind::kCpu;
  return o;
}

struct Case {
  int type;
  int norm;
};

class CvMatcher : public testing::TestWithParam<Case> {};

TEST_P(CvMatcher, KnnMatchAndMatchLikeBFMatcher) {
  const auto [type, norm] = GetParam();
  const cv::Mat train = RandomDescriptors(700, 128, type, 1);
  const cv::Mat query = RandomDescriptors(150, 128, type, 2);
  cv::BFMatcher bf(norm);
  auto fm = KnnDescriptorMatcher::create(norm, Cpu());
  for (int k : {1, 2, 5}) {
    std::vector<std::vector<cv::DMatch>> a, b;
    bf.knnMatch(query, train, a, k);
    fm->knnMatch(query, train, b, k);
    ExpectSameMatches(a, b, "knnMatch k=" + std::to_string(k));
  }
  std::vector<cv::DMatch> a, b;
  bf.match(query, train, a);
  fm->match(query, train, b);
  ExpectSameMatches({a}, {b}, "match");
}

TEST_P(CvMatcher, TrainCollectionWithImgIdxAndMasks) {
  const auto [type, norm] = GetParam();
  std::vector<cv::Mat> images = {RandomDescriptors(300, 64, type, 3),
                                 RandomDescriptors(40, 64, type, 4),
                                 RandomDescriptors(450, 64, type, 5)};
  const cv::Mat query = RandomDescriptors(80, 64, type, 6);
  cv::BFMatcher bf(norm);
  KnnDescriptorMatcher fm(norm, Cpu());
  bf.add(images);
  fm.add(images);
  bf.train();
  fm.train();
  EXPECT_EQ(fm.getTrainDescriptors().size(), 3u);
  EXPECT_TRUE(fm.isMaskSupported());
  std::vector<std::vector<cv::DMatch>> a, b;
  bf.knnMatch(query, a, 4);
  fm.knnMatch(query, b, 4);
  ExpectSameMatches(a, b, "collection knnMatch");
  // Masks: one per image, image 1 unmasked (empty), some query rows fully masked.
  std::vector<cv::Mat> masks = {RandomMask(80, 300, 0.3, 7), cv::Mat(),
                                RandomMask(80, 450, 0.5, 8)};
  masks[0].row(3).setTo(0);
  masks[2].row(3).setTo(0);
  // cv::BFMatcher 4.6 returns garbage for an empty mask inside a collection; it gets all-ones.
  auto for_bf = [](std::vector<cv::Mat> m) {
    if (m[1].empty()) m[1] = cv::Mat::ones(80, 40, CV_8U);
    return m;
  };
  for (bool compact : {false, true}) {
    a.clear();  // BFMatcher appends to the output in the masked path
    bf.knnMatch(query, a, 3, for_bf(masks), compact);
    fm.knnMatch(query, b, 3, masks, compact);
    ExpectSameMatches(a, b, std::string("masked knnMatch compact=") + (compact ? "1" : "0"));
  }
  // Image 1 masked out entirely for every query: query 3 has nothing left.
  masks[1] = cv::Mat::zeros(80, 40, CV_8U);
  for (bool compact : {false, true}) {
    a.clear();
    bf.knnMatch(query, a, 2, for_bf(masks), compact);
    fm.knnMatch(query, b, 2, masks, compact);
    ExpectSameMatches(a, b, std::string("fully masked row compact=") + (compact ? "1" : "0"));
  }
  std::vector<cv::DMatch> ma, mb;
  ma.clear();
  bf.match(query, ma, for_bf(masks));
  fm.match(query, mb, masks);
  ExpectSameMatches({ma}, {mb}, "masked match");
}

TEST_P(CvMatcher, RadiusMatchLikeBFMatcher) {
  const auto [type, norm] = GetParam();
  const cv::Mat train = RandomDescriptors(600, 32, type, 9);
  const cv::Mat query = RandomDescriptors(60, 32, type, 10);
  // A radius between integer squared distances, so no distance sits on it.
  const float radius = norm == cv::NORM_L2 ? 160.37f : 25600.5f;
  cv::BFMatcher bf(norm);
  auto fm = KnnDescriptorMatcher::create(norm, Cpu());
  std::vector<std::vector<cv::DMatch>> a, b;
  bf.radiusMatch(query, train, a, radius);
  fm->radiusMatch(query, train, b, radius);
  std::size_t total = 0;
  for (const auto& r : a) total += r.size();
  EXPECT_GT(total, 60u) << "radius too small to test anything";
  ExpectSameMatches(a, b, "radiusMatch");
  const cv::Mat mask = RandomMask(60, 600, 0.5, 11);
  a.clear();
  bf.radiusMatch(query, train, a, radius, mask, true);
  fm->radiusMatch(query, train, b, radius, mask, true);
  // cv::BFMatcher 4.6 moves the emptied rows to the end instead of dropping them.
  a.erase(std::remove_if(a.begin(), a.end(), [](const auto& r) { return r.empty(); }), a.end());
  ExpectSameMatches(a, b, "masked radiusMatch");
}

INSTANTIATE_TEST_SUITE_P(All, CvMatcher,
                         testing::Values(Case{CV_32F, cv::NORM_L2}, Case{CV_8U, cv::NORM_L2},
                                         Case{CV_32F, cv::NORM_L2SQR},
                                         Case{CV_8U, cv::NORM_L2SQR}),
                         [](const testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.type == CV_8U ? "u8" : "f32") +
                                  (i.param.norm == cv::NORM_L2 ? "_l2" : "_l2sqr");
                         });

TEST(CvMatcherBasics, CloneClearEmpty) {
  auto fm = KnnDescriptorMatcher::create(cv::NORM_L2, Cpu());
  EXPECT_TRUE(fm->empty());
  fm->add(std::vector<cv::Mat>{RandomDescriptors(50, 16, CV_32F, 1)});
  fm->add(RandomDescriptors(20, 16, CV_32F, 2));
  EXPECT_FALSE(fm->empty());
  EXPECT_EQ(fm->getTrainDescriptors().size(), 2u);
  cv::Ptr<cv::DescriptorMatcher> full = fm->clone();
  cv::Ptr<cv::DescriptorMatcher> bare = fm->clone(true);
  EXPECT_EQ(full->getTrainDescriptors().size(), 2u);
  EXPECT_TRUE(bare->empty());
  const cv::Mat q = RandomDescriptors(5, 16, CV_32F, 3);
  std::vector<std::vector<cv::DMatch>> a, b;
  fm->knnMatch(q, a, 3);
  full->knnMatch(q, b, 3);
  ExpectSameMatches(a, b, "clone");
  fm->clear();
  EXPECT_TRUE(fm->empty());
  a.clear();
  fm->knnMatch(q, a, 3);
  EXPECT_TRUE(a.empty());
}

TEST(CvMatcherBasics, KLargerThanTrainAndMixedTypes) {
  const cv::Mat train = RandomDescriptors(3, 8, CV_8U, 1);
  const cv::Mat query = RandomDescriptors(4, 8, CV_32F, 2);
  auto fm = KnnDescriptorMatcher::create(cv::NORM_L2, Cpu());
  cv::BFMatcher bf(cv::NORM_L2);
  std::vector<std::vector<cv::DMatch>> a, b;
  cv::Mat train_f;
  train.convertTo(train_f, CV_32F);
  bf.knnMatch(query, train_f, a, 10);
  fm->knnMatch(query, train, b, 10);
  ExpectSameMatches(a, b, "k > train size, uint8 train vs float query");
  for (const auto& r : b) EXPECT_EQ(r.size(), 3u);
}

TEST(CvMatcherBasics, ClearErrors) {
  EXPECT_THROW(KnnDescriptorMatcher(cv::NORM_HAMMING, Cpu()), std::invalid_argument);
  auto fm = KnnDescriptorMatcher::create(cv::NORM_L2, Cpu());
  fm->add(RandomDescriptors(10, 16, CV_32F, 1));
  std::vector<std::vector<cv::DMatch>> m;
  EXPECT_THROW(fm->knnMatch(RandomDescriptors(2, 8, CV_32F, 2), m, 1), cv::Exception);
  EXPECT_NE(fm->backendDescription().find("cpu"), std::string::npos);
}

TEST(CvMatcherBasics, AutoBackendSaysWhichItUses) {
  auto fm = KnnDescriptorMatcher::create(cv::NORM_L2);  // auto: GPU when present
  const std::string d = fm->backendDescription();
  EXPECT_TRUE(d.find("gpu") != std::string::npos || d.find("cpu") != std::string::npos) << d;
  const cv::Mat train = RandomDescriptors(400, 128, CV_8U, 4);
  const cv::Mat query = RandomDescriptors(40, 128, CV_8U, 5);
  std::vector<std::vector<cv::DMatch>> a, b;
  cv::BFMatcher(cv::NORM_L2).knnMatch(query, train, a, 2);
  fm->knnMatch(query, train, b, 2);
  ExpectSameMatches(a, b, "auto backend (" + d + ")");
}

}  // namespace
}  // namespace fm::matcher
