#include "fm/matcher/draw.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace fm::matcher {
namespace {

cv::Mat ToBgr(const cv::Mat& img) {
  cv::Mat out;
  if (img.channels() == 1) {
    cv::cvtColor(img, out, cv::COLOR_GRAY2BGR);
  } else if (img.channels() == 4) {
    cv::cvtColor(img, out, cv::COLOR_BGRA2BGR);
  } else {
    out = img.clone();
  }
  return out;
}

}  // namespace

cv::Mat DrawMatchResult(const cv::Mat& image_a, const cv::Mat& image_b, const core::Features& a,
                        const core::Features& b, const MatchResult& result,
                        const DrawOptions& options) {
  cv::Mat ca = ToBgr(image_a), cb = ToBgr(image_b);
  const int h = std::max(ca.rows, cb.rows);
  cv::Mat canvas(h, ca.cols + cb.cols, CV_8UC3, cv::Scalar(40, 40, 40));
  ca.copyTo(canvas(cv::Rect(0, 0, ca.cols, ca.rows)));
  cb.copyTo(canvas(cv::Rect(ca.cols, 0, cb.cols, cb.rows)));
  const cv::Point2f off(static_cast<float>(ca.cols), 0.f);
  const int shift = 4;  // sub-pixel drawing
  auto fp = [&](cv::Point2f p) { return cv::Point(cvRound(p.x * 16), cvRound(p.y * 16)); };

  if (options.draw_keypoints) {
    for (const auto& k : a.keypoints)
      cv::circle(canvas, fp({k.x, k.y}), 2 * 16, cv::Scalar(255, 200, 0), 1, cv::LINE_AA, shift);
    for (const auto& k : b.keypoints)
      cv::circle(canvas, fp(cv::Point2f(k.x, k.y) + off), 2 * 16, cv::Scalar(255, 200, 0), 1,
                 cv::LINE_AA, shift);
  }
  const auto& inl = result.verification.inliers;
  // Only a verified model has inliers to show: the points a model that failed verification
  // (fewer than min_inliers) agrees with are drawn as the rest, as the batch stores none for it.
  const bool verified = result.verification.verified;
  // Outliers first so inliers are drawn on top.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < result.matches.size(); ++i) {
      const bool inlier = verified && i < inl.size() && inl[i];
      if ((pass == 0) == inlier) continue;
      if (!inlier && !options.draw_outliers) continue;
      const auto& m = result.matches[i];
      cv::Point2f pa(a.keypoints[m.query].x, a.keypoints[m.query].y);
      cv::Point2f pb = cv::Point2f(b.keypoints[m.train].x, b.keypoints[m.train].y) + off;
      const cv::Scalar color = inlier ? cv::Scalar(60, 220, 60) : cv::Scalar(40, 40, 230);
      cv::line(canvas, fp(pa), fp(pb), color, options.thickness, cv::LINE_AA, shift);
      cv::circle(canvas, fp(pa), 3 * 16, color, options.thickness, cv::LINE_AA, shift);
      cv::circle(canvas, fp(pb), 3 * 16, color, options.thickness, cv::LINE_AA, shift);
    }
  }
  const auto& v = result.verification;
  if (options.draw_model && v.verified && v.model == GeometryModel::kHomography &&
      !v.matrix.empty()) {
    std::vector<cv::Point2f> corners = {{0, 0},
                                        {static_cast<float>(ca.cols), 0},
                                        {static_cast<float>(ca.cols), static_cast<float>(ca.rows)},
                                        {0, static_cast<float>(ca.rows)}};
    std::vector<cv::Point2f> mapped;
    cv::perspectiveTransform(corners, mapped, v.matrix);
    std::vector<cv::Point> poly;
    for (auto& p : mapped) poly.push_back(fp(p + off));
    cv::polylines(canvas, poly, true, cv::Scalar(0, 255, 255), 2, cv::LINE_AA, shift);
  }
  return canvas;
}

}  // namespace fm::matcher
