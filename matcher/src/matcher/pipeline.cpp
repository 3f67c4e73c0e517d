#include "fm/matcher/pipeline.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "fm/core/timer.h"
#include "fm/matcher/guided.h"

namespace fm::matcher {

bool MatchOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (k < 1) return bad("k must be >= 1");
  if (filter.ratio < 1.0f && k < 2) return bad("the ratio test needs k >= 2 (or --ratio 1)");
  // Inner-product distances are negated dot products, below zero for any two similar
  // descriptors, and a ratio of two of them says nothing of how distinct the nearest is: the
  // filter would pass nothing.
  if (filter.ratio < 1.0f && metric == core::Metric::kInnerProduct)
    return bad("the ratio test needs non-negative distances, which the ip metric does not give: "
               "use --ratio 1 with it, or the cosine metric");
  if (threads < 0) return bad("threads must be >= 0");
  if (!filter.Check(why)) return false;
  if (!verify.Check(why)) return false;
  if (guided && verify.model == GeometryModel::kNone)
    return bad("guided matching needs a geometric model (homography or fundamental)");
  return true;
}

std::vector<uint8_t> MaskFromImage(const core::Features& f, const cv::Mat& mask) {
  if (mask.empty()) return {};
  if (mask.type() != CV_8UC1)
    throw std::invalid_argument("a mask must be an 8-bit single-channel image");
  if (f.image_width > 0 && (mask.cols != f.image_width || mask.rows != f.image_height))
    throw std::invalid_argument("mask size " + std::to_string(mask.cols) + "x" +
                                std::to_string(mask.rows) + " differs from the image's " +
                                std::to_string(f.image_width) + "x" +
                                std::to_string(f.image_height));
  std::vector<uint8_t> out(f.keypoints.size(), 0);
  for (std::size_t i = 0; i < f.keypoints.size(); ++i) {
    const int x = static_cast<int>(f.keypoints[i].x), y = static_cast<int>(f.keypoints[i].y);
    out[i] = x >= 0 && y >= 0 && x < mask.cols && y < mask.rows && mask.at<uint8_t>(y, x) != 0;
  }
  return out;
}

MatchResult MatchFeatures(const core::Features& a, const core::Features& b,
                          const MatchOptions& options, core::KnnBackend& backend,
                          const FeatureMasks* masks, const std::atomic<bool>* cancel) {
  std::string why;
  if (!options.Check(&why)) throw std::invalid_argument("match options: " + why);
  MatchResult r;
  r.features_a = a.size();
  r.features_b = b.size();
  r.backend = backend.description();
  if (a.size() == 0 || b.size() == 0) {
    r.verification.model = options.verify.model;
    return r;
  }
  core::KnnParams p;
  p.k = options.k;
  p.metric = options.metric;
  p.threads = options.threads;
  p.cancel = cancel;

  // Masked features are removed before the search; indices are mapped back afterwards.
  const bool masked = masks && (!masks->a.empty() || !masks->b.empty());
  std::vector<int64_t> rows_a, rows_b;
  core::DescriptorMatrix da, db;
  if (masked) {
    rows_a = core::MaskedRows(masks->a, a.size());
    rows_b = core::MaskedRows(masks->b, b.size());
    da = core::GatherRows(a.descriptors, rows_a);
    db = core::GatherRows(b.descriptors, rows_b);
    if (rows_a.empty() || rows_b.empty()) {
      r.verification.model = options.verify.model;
      return r;
    }
  }
  const core::DescriptorMatrix& qa = masked ? da : a.descriptors;
  const core::DescriptorMatrix& qb = masked ? db : b.descriptors;
  // The filter reads the first two neighbours of a feature and no more: a larger k (--k 100000)
  // would cost time and memory for the same matches.
  p.k = std::min<int64_t>(p.k, 2);

  core::ThrowIfCancelled(cancel);
  core::Stopwatch sw;
  core::KnnResult fwd = backend.Search(qa, qb, p);
  r.times.push_back({"knn", sw.ElapsedMs()});
  core::KnnResult bwd;
  if (options.filter.mutual) {
    sw.Reset();
    core::KnnParams pb = p;
    pb.k = 1;
    core::ThrowIfCancelled(cancel);
    bwd = backend.Search(qb, qa, pb);
    r.times.push_back({"knn_backward", sw.ElapsedMs()});
  }
  sw.Reset();
  r.matches = core::FilterMatches(fwd, options.filter.mutual ? &bwd : nullptr, options.metric,
                                  options.filter);
  if (masked) {
    for (auto& m : r.matches) {
      m.query = static_cast<int32_t>(rows_a[m.query]);
      m.train = static_cast<int32_t>(rows_b[m.train]);
    }
  }
  r.times.push_back({"filter", sw.ElapsedMs()});
  core::ThrowIfCancelled(cancel);
  sw.Reset();
  r.verification = VerifyMatches(a.keypoints, b.keypoints, r.matches, options.verify);
  r.times.push_back({"verify", sw.ElapsedMs()});
  if (options.guided && r.verification.verified) {
    core::ThrowIfCancelled(cancel);
    sw.Reset();
    static const std::vector<uint8_t> kAll;
    GuidedPass pass = RunGuidedPass(a.keypoints, a.descriptors, b.keypoints, b.descriptors,
                                    r.matches, r.verification, options.verify, options.metric,
                                    options.filter, masks ? masks->a : kAll,
                                    masks ? masks->b : kAll, cancel);
    r.times.push_back({"guided", sw.ElapsedMs()});
    if (pass.applied) {
      r.guided = {true, static_cast<int64_t>(r.matches.size()), r.verification.num_inliers};
      r.matches = std::move(pass.matches);
      r.verification = std::move(pass.verification);
    }
  }
  r.backend = backend.description();  // after the searches: the threads they ran on
  return r;
}

nlohmann::json FilterAndVerifySettingsToJson(const MatchOptions& m) {
  return {{"metric", core::MetricName(m.metric)},
          {"ratio", m.filter.ratio},
          {"mutual", m.filter.mutual},
          {"max_distance", m.filter.max_distance},
          {"model", GeometryModelName(m.verify.model)},
          {"usac", UsacMethodName(m.verify.method)},
          {"threshold", m.verify.threshold},
          {"confidence", m.verify.confidence},
          {"max_iterations", m.verify.max_iterations},
          {"min_inliers", m.verify.min_inliers},
          {"distinct_points", m.verify.distinct_points},
          {"max_nfa", m.verify.max_nfa},
          {"guided", m.guided}};
}

nlohmann::json MatchSettingsToJson(const SiftOptions& sift, const MatchOptions& m,
                                   const BackendOptions& backend) {
  nlohmann::json j = FilterAndVerifySettingsToJson(m);
  j["sift"] = nlohmann::json::parse(sift.ToJson());
  j["k"] = m.k;
  j["backend"] = BackendKindName(backend.kind);
  return j;
}

nlohmann::json MatchResultToJson(const MatchResult& result, const core::Features& a,
                                 const core::Features& b, bool include_matches) {
  using nlohmann::json;
  const auto& v = result.verification;
  json j;
  j["features"] = {{"a", result.features_a}, {"b", result.features_b}};
  j["matches"] = result.matches.size();
  if (result.guided.applied)
    j["guided"] = {{"matches_before", result.guided.matches_before},
                   {"inliers_before", result.guided.inliers_before}};
  j["backend"] = result.backend;
  json g = {{"model", GeometryModelName(v.model)},
            {"verified", v.verified},
            {"inliers", v.num_inliers},
            {"distinct_inliers", v.distinct_inliers},
            {"log10_nfa", std::isfinite(v.log10_nfa) ? json(v.log10_nfa) : json(nullptr)}};
  if (!v.matrix.empty()) {
    json m = json::array();
    for (int r = 0; r < v.matrix.rows; ++r) {
      json row = json::array();
      for (int c = 0; c < v.matrix.cols; ++c) row.push_back(v.matrix.at<double>(r, c));
      m.push_back(row);
    }
    g["matrix"] = m;
  } else {
    g["matrix"] = nullptr;
  }
  j["geometry"] = g;
  json t = json::object();
  for (const auto& s : result.times) t[s.stage] = s.ms;
  j["times_ms"] = t;
  if (include_matches) {
    json list = json::array();
    for (std::size_t i = 0; i < result.matches.size(); ++i) {
      const auto& m = result.matches[i];
      const auto& ka = a.keypoints[m.query];
      const auto& kb = b.keypoints[m.train];
      list.push_back({{"a", m.query},
                      {"b", m.train},
                      {"xa", ka.x},
                      {"ya", ka.y},
                      {"xb", kb.x},
                      {"yb", kb.y},
                      {"distance", m.distance},
                      {"ratio", m.ratio},
                      {"inlier", i < v.inliers.size() && v.inliers[i] != 0}});
    }
    j["match_list"] = list;
  }
  return j;
}

}  // namespace fm::matcher
