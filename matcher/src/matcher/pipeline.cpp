#include "fm/matcher/pipeline.h"

#include <nlohmann/json.hpp>

#include "fm/core/timer.h"

namespace fm::matcher {

bool MatchOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (k < 1) return bad("k must be >= 1");
  if (filter.ratio < 1.0f && k < 2) return bad("the ratio test needs k >= 2 (or --ratio 1)");
  if (threads < 0) return bad("threads must be >= 0");
  if (!filter.Check(why)) return false;
  if (!verify.Check(why)) return false;
  return true;
}

MatchResult MatchFeatures(const core::Features& a, const core::Features& b,
                          const MatchOptions& options, core::KnnBackend& backend) {
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

  core::Stopwatch sw;
  core::KnnResult fwd = backend.Search(a.descriptors, b.descriptors, p);
  r.times.push_back({"knn", sw.ElapsedMs()});
  core::KnnResult bwd;
  if (options.filter.mutual) {
    sw.Reset();
    core::KnnParams pb = p;
    pb.k = 1;
    bwd = backend.Search(b.descriptors, a.descriptors, pb);
    r.times.push_back({"knn_backward", sw.ElapsedMs()});
  }
  sw.Reset();
  r.matches = core::FilterMatches(fwd, options.filter.mutual ? &bwd : nullptr, options.metric,
                                  options.filter);
  r.times.push_back({"filter", sw.ElapsedMs()});
  sw.Reset();
  r.verification = VerifyMatches(a.keypoints, b.keypoints, r.matches, options.verify);
  r.times.push_back({"verify", sw.ElapsedMs()});
  return r;
}

nlohmann::json MatchResultToJson(const MatchResult& result, const core::Features& a,
                                 const core::Features& b, bool include_matches) {
  using nlohmann::json;
  const auto& v = result.verification;
  json j;
  j["features"] = {{"a", result.features_a}, {"b", result.features_b}};
  j["matches"] = result.matches.size();
  j["backend"] = result.backend;
  json g = {{"model", GeometryModelName(v.model)},
            {"verified", v.verified},
            {"inliers", v.num_inliers}};
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
