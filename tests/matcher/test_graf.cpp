// End to end on real photographs with ground truth: graf1 -> graf3 and H1to3p.xml.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/core/persistence.hpp>

#include "fm/matcher/backend.h"
#include "fm/matcher/image.h"
#include "fm/matcher/pipeline.h"
#include "test_images.h"

namespace fm::matcher {
namespace {

cv::Mat LoadGroundTruth() {
  // H1to3p.xml is an OpenCV FileStorage file holding a 3x3 matrix named H13.
  cv::FileStorage fs(test::Sample("H1to3p.xml"), cv::FileStorage::READ);
  cv::Mat h;
  fs.getFirstTopLevelNode() >> h;
  h.convertTo(h, CV_64F);
  return h;
}

double ReprojectionError(const cv::Mat& h, const core::Keypoint& a, const core::Keypoint& b) {
  cv::Mat p = (cv::Mat_<double>(3, 1) << a.x, a.y, 1.0);
  cv::Mat q = h * p;
  const double x = q.at<double>(0) / q.at<double>(2), y = q.at<double>(1) / q.at<double>(2);
  return std::hypot(x - b.x, y - b.y);
}

TEST(Graf, RatioMatchesAgreeWithGroundTruth) {
  if (!test::HaveSamples()) GTEST_SKIP() << "OpenCV sample data (opencv-doc) not installed";
  const cv::Mat h = LoadGroundTruth();
  ASSERT_EQ(h.rows, 3);
  ASSERT_EQ(h.cols, 3);
  SiftOptions sift;
  auto a = ExtractFeatures(LoadGrayImage(test::Sample("graf1.png")), sift);
  auto b = ExtractFeatures(LoadGrayImage(test::Sample("graf3.png")), sift);
  ASSERT_GT(a.size(), 1000);
  ASSERT_GT(b.size(), 1000);
  EXPECT_EQ(a.descriptors.type(), core::DescriptorType::kUint8);

  MatchOptions opt;
  opt.k = 2;
  opt.filter.ratio = 0.8f;
  BackendOptions bo;
  bo.kind = BackendKind::kCpu;
  auto backend = CreateKnnBackend(bo);
  auto r = MatchFeatures(a, b, opt, *backend);

  int correct = 0;
  for (const auto& m : r.matches)
    correct += ReprojectionError(h, a.keypoints[m.query], b.keypoints[m.train]) < 3.0;
  int inliers = 0, inliers_correct = 0;
  for (std::size_t i = 0; i < r.matches.size(); ++i) {
    if (!r.verification.inliers[i]) continue;
    ++inliers;
    const auto& m = r.matches[i];
    inliers_correct += ReprojectionError(h, a.keypoints[m.query], b.keypoints[m.train]) < 3.0;
  }
  RecordProperty("ratio_matches", static_cast<int>(r.matches.size()));
  RecordProperty("correct", correct);
  RecordProperty("inliers", inliers);
  std::printf("graf1->graf3: %zu ratio matches, %d agree with H1to3p, %d inliers, %d agree\n",
              r.matches.size(), correct, inliers, inliers_correct);
  EXPECT_GE(correct, 390);
  EXPECT_TRUE(r.verification.verified);
  ASSERT_GT(inliers, 0);
  EXPECT_GE(static_cast<double>(inliers_correct) / inliers, 0.95);
}

}  // namespace
}  // namespace fm::matcher

namespace fm::matcher {
namespace {

TEST(Masks, MaskedMatchEqualsMatchOfTheAllowedSubsets) {
  if (!test::HaveSamples()) GTEST_SKIP() << "OpenCV sample data (opencv-doc) not installed";
  auto a = ExtractFeatures(LoadGrayImage(test::Sample("box.png")), SiftOptions{});
  auto b = ExtractFeatures(LoadGrayImage(test::Sample("box_in_scene.png")), SiftOptions{});
  // Left half of A, every feature of B.
  cv::Mat mask(a.image_height, a.image_width, CV_8UC1, cv::Scalar(0));
  mask(cv::Rect(0, 0, a.image_width / 2, a.image_height)).setTo(255);
  FeatureMasks masks;
  masks.a = MaskFromImage(a, mask);
  MatchOptions opt;
  opt.verify.model = GeometryModel::kNone;
  opt.filter.mutual = true;
  BackendOptions bo;
  bo.kind = BackendKind::kCpu;
  auto backend = CreateKnnBackend(bo);
  auto masked = MatchFeatures(a, b, opt, *backend, &masks);
  ASSERT_FALSE(masked.matches.empty());
  for (const auto& m : masked.matches) EXPECT_LT(a.keypoints[m.query].x, a.image_width / 2 + 1);

  // The same by hand: keep only the allowed features, match, map back.
  core::Features sub;
  std::vector<int> map;
  for (int i = 0; i < a.size(); ++i)
    if (masks.a[i]) {
      sub.keypoints.push_back(a.keypoints[i]);
      map.push_back(i);
    }
  std::vector<int64_t> rows(map.begin(), map.end());
  sub.descriptors = core::GatherRows(a.descriptors, rows);
  auto manual = MatchFeatures(sub, b, opt, *backend);
  ASSERT_EQ(manual.matches.size(), masked.matches.size());
  for (std::size_t i = 0; i < manual.matches.size(); ++i) {
    EXPECT_EQ(map[manual.matches[i].query], masked.matches[i].query);
    EXPECT_EQ(manual.matches[i].train, masked.matches[i].train);
  }
  cv::Mat wrong(10, 10, CV_8UC1, cv::Scalar(255));
  EXPECT_THROW(MaskFromImage(a, wrong), std::invalid_argument);
}

}  // namespace
}  // namespace fm::matcher

#include "fm/matcher/draw.h"

namespace fm::matcher {
namespace {

// Pixels of the drawing in the inlier colour (green well above red and blue).
int GreenPixels(const cv::Mat& bgr) {
  int n = 0;
  for (int y = 0; y < bgr.rows; ++y)
    for (int x = 0; x < bgr.cols; ++x) {
      const cv::Vec3b p = bgr.at<cv::Vec3b>(y, x);
      n += p[1] > 150 && p[0] < 100 && p[2] < 100;
    }
  return n;
}

TEST(Draw, OnlyAVerifiedModelHasInliersDrawn) {
  const cv::Mat black(120, 120, CV_8UC3, cv::Scalar(0, 0, 0));
  core::Features a, b;
  for (int i = 0; i < 3; ++i) {
    a.keypoints.push_back({20.f + 30 * i, 30.f, 4.f, 0.f, 1.f, 0});
    b.keypoints.push_back({25.f + 30 * i, 80.f, 4.f, 0.f, 1.f, 0});
  }
  MatchResult r;
  for (int i = 0; i < 3; ++i) {
    core::Match m;
    m.query = m.train = i;
    r.matches.push_back(m);
  }
  r.verification.model = GeometryModel::kHomography;
  r.verification.inliers = {1, 1, 0};
  r.verification.num_inliers = 2;
  r.verification.verified = true;
  EXPECT_GT(GreenPixels(DrawMatchResult(black, black, a, b, r)), 50);
  // The same agreement from a model that failed verification (fewer than min_inliers) is no
  // inlier: nothing is drawn in the inlier colour.
  r.verification.verified = false;
  EXPECT_EQ(GreenPixels(DrawMatchResult(black, black, a, b, r)), 0);
}

}  // namespace
}  // namespace fm::matcher
