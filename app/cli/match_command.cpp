// featmatch match A B: extract (or load) features, match, verify, report, draw.
#include <cmath>
#include <cstdio>
#include <string>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "command.h"
#include "fm/core/feature_io.h"
#include "fm/matcher/draw.h"
#include "fm/matcher/image.h"
#include "inputs.h"
#include "options.h"
#include "output.h"

namespace fm::app {
namespace {

struct MatchArgs {
  std::string a, b;
  matcher::SiftOptions sift;
  MatchCliOptions match;
  BackendCliOptions backend;
  std::string draw;
  std::string report;
  bool json = false;
  bool keypoints = false;
  bool no_outliers = false;
  std::string mask_a, mask_b;
};

void PrintSummary(const MatchArgs& args, const LoadedInput& a, const LoadedInput& b,
                  const matcher::MatchResult& r, const std::string& note) {
  const auto& v = r.verification;
  std::printf("featmatch match\n");
  std::printf("  A: %s  (%lld features)\n", a.path.c_str(), static_cast<long long>(r.features_a));
  std::printf("  B: %s  (%lld features)\n", b.path.c_str(), static_cast<long long>(r.features_b));
  std::printf("  %s\n", note.c_str());
  std::printf("  matches after filters (ratio %.2f%s%s): %zu\n", args.match.match.filter.ratio,
              args.match.match.filter.mutual ? ", mutual" : "",
              args.match.match.filter.max_distance > 0 ? ", max distance" : "", r.matches.size());
  // A model refused with inliers enough says why: they lie at too few distinct points, or
  // matches at random would fit as well.
  char by_chance[96];
  std::snprintf(by_chance, sizeof by_chance, " (random matches would fit as well: NFA 10^%.1f)",
                v.log10_nfa);
  const std::string collapsed =
      matcher::InliersTooCrowded(v, args.match.match.verify)
          ? (v.distinct_inliers == 1
                 ? std::string(" (its inliers lie at one point)")
                 : " (its inliers lie at " + std::to_string(v.distinct_inliers) +
                       " distinct points)")
      : matcher::InliersByChance(v, args.match.match.verify) ? std::string(by_chance)
                                                             : "";
  // A verified model's strength: how often random matches would fit as well.
  char strength[48] = "";
  if (v.verified && std::isfinite(v.log10_nfa))
    std::snprintf(strength, sizeof strength, "  (NFA 10^%.1f)", v.log10_nfa);
  std::printf("  verified inliers (%s, %s, %.1f px): %d%s\n",
              matcher::GeometryModelName(v.model),
              matcher::UsacMethodName(args.match.match.verify.method),
              args.match.match.verify.threshold, v.num_inliers,
              v.model == matcher::GeometryModel::kNone
                  ? " (verification off)"
                  : (v.verified ? std::string(strength) : "  -- NOT verified" + collapsed).c_str());
  if (r.guided.applied)
    std::printf("  guided: matched again under the model, %lld matches / %d inliers before\n",
                static_cast<long long>(r.guided.matches_before), r.guided.inliers_before);
  if (!v.matrix.empty()) {
    std::printf("  %s:\n", matcher::GeometryModelName(v.model));
    for (int i = 0; i < 3; ++i)
      std::printf("    [% 12.6g % 12.6g % 12.6g]\n", v.matrix.at<double>(i, 0),
                  v.matrix.at<double>(i, 1), v.matrix.at<double>(i, 2));
  }
  std::printf("  time (ms): load %.1f + %.1f, extract %.1f + %.1f", a.load_ms, b.load_ms,
              a.extract_ms, b.extract_ms);
  for (const auto& s : r.times) std::printf(", %s %.2f", s.stage.c_str(), s.ms);
  std::printf("\n");
  if (!args.draw.empty()) std::printf("  drawing: %s\n", args.draw.c_str());
  if (!args.report.empty()) std::printf("  report:  %s\n", args.report.c_str());
}

int RunMatch(MatchArgs& args) {
  args.match.Finish();
  args.backend.backend.threads = args.match.match.threads;
  args.backend.Finish();
  CheckOrThrow(args.sift, "SIFT options");
  // What would fail after the work is checked before it.
  const bool fmf_a = IsFeatureFile(args.a), fmf_b = IsFeatureFile(args.b);
  if (!args.draw.empty()) {
    if (fmf_a || fmf_b) {
      std::fprintf(stderr, "featmatch match: --draw needs images, not feature files\n");
      return kExitUsage;
    }
    if (!matcher::CanWriteImage(args.draw)) {
      std::fprintf(stderr,
                   "featmatch match: --draw %s: no image format for that name (use .png or "
                   ".jpg)\n",
                   args.draw.c_str());
      return kExitUsage;
    }
  }
  for (const std::string* out : {&args.draw, &args.report}) {
    if (out->empty()) continue;
    const std::string problem = OutputFolderProblem(*out);
    if (!problem.empty()) {
      std::fprintf(stderr, "featmatch match: cannot write %s: %s\n", out->c_str(),
                   problem.c_str());
      return kExitError;
    }
  }
  if ((fmf_a || fmf_b) && args.sift.ToJson() != matcher::SiftOptions{}.ToJson()) {
    std::fprintf(stderr,
                 "featmatch match: note: the extraction options apply to images only; %s\n",
                 fmf_a && fmf_b ? "both inputs are feature files"
                                : "one input is a feature file, its features are used as stored");
  }
  cv::Mat mask_image_a, mask_image_b;
  try {
    if (!args.mask_a.empty()) mask_image_a = matcher::LoadMaskImage(args.mask_a);
    if (!args.mask_b.empty()) mask_image_b = matcher::LoadMaskImage(args.mask_b);
  } catch (const matcher::ImageError& e) {
    std::fprintf(stderr, "featmatch match: mask: %s\n", e.what());
    return kExitBadInput;
  }
  LoadedInput a, b;
  try {
    const bool color = !args.draw.empty();
    a = LoadInput(args.a, args.sift, color);
    b = LoadInput(args.b, args.sift, color);
  } catch (const matcher::ImageError& e) {
    std::fprintf(stderr, "featmatch match: %s\n", e.what());
    return kExitBadInput;
  } catch (const core::FeatureFileError& e) {
    std::fprintf(stderr, "featmatch match: %s\n", e.what());
    return kExitBadInput;
  }
  std::string note;
  std::unique_ptr<core::KnnBackend> backend;
  try {
    const matcher::SearchWork work = matcher::SearchWorkOf(
        a.features.descriptors, b.features.descriptors, args.match.match.filter.mutual ? 2 : 1);
    backend = matcher::CreateKnnBackendFor(args.backend.backend, work, &note);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "featmatch match: %s (use --backend cpu or auto)\n", e.what());
    return kExitGpu;
  }
  matcher::MatchResult r;
  try {
    matcher::FeatureMasks masks;
    if (!mask_image_a.empty()) masks.a = matcher::MaskFromImage(a.features, mask_image_a);
    if (!mask_image_b.empty()) masks.b = matcher::MaskFromImage(b.features, mask_image_b);
    r = matcher::MatchFeatures(a.features, b.features, args.match.match, *backend, &masks);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "featmatch match: %s\n", e.what());
    return kExitBadInput;
  }

  nlohmann::json report = matcher::MatchResultToJson(r, a.features, b.features);
  report["inputs"] = {{"a", a.path}, {"b", b.path}};
  report["settings"] =
      matcher::MatchSettingsToJson(args.sift, args.match.match, args.backend.backend);
  report["times_ms"]["load_a"] = a.load_ms;
  report["times_ms"]["load_b"] = b.load_ms;
  report["times_ms"]["extract_a"] = a.extract_ms;
  report["times_ms"]["extract_b"] = b.extract_ms;

  if (!args.draw.empty()) {
    matcher::DrawOptions d;
    d.draw_keypoints = args.keypoints;
    d.draw_outliers = !args.no_outliers;
    cv::Mat canvas = matcher::DrawMatchResult(a.image, b.image, a.features, b.features, r, d);
    bool ok = false;
    try {
      ok = cv::imwrite(args.draw, canvas);
    } catch (const cv::Exception& e) {
      std::fprintf(stderr, "featmatch match: %s\n", e.what());
    }
    if (!ok) {
      std::fprintf(stderr, "featmatch match: cannot write drawing %s\n", args.draw.c_str());
      return kExitError;
    }
  }
  std::string why;
  if (!args.report.empty() &&
      !core::WriteFileWhole(args.report, JsonText(report) + "\n", &why)) {
    std::fprintf(stderr, "featmatch match: cannot write report %s: %s\n", args.report.c_str(),
                 why.c_str());
    return kExitError;
  }
  if (args.json) {
    if (!PrintText(JsonText(report) + "\n")) {
      std::fprintf(stderr, "featmatch match: cannot write the JSON report to stdout\n");
      return kExitError;
    }
  } else {
    PrintSummary(args, a, b, r, note);
  }
  return kExitOk;
}

RunFn SetupMatch(CLI::App& sub) {
  auto args = std::make_shared<MatchArgs>();
  sub.add_option("A", args->a, "first image (or .fmf feature file): the queries")->required();
  sub.add_option("B", args->b, "second image (or .fmf feature file)")->required();
  sub.add_option("--draw", args->draw, "write a drawing of the matches (PNG, JPEG, ...)")
      ->group("Output");
  sub.add_option("--report", args->report, "write the JSON report to this file")->group("Output");
  sub.add_flag("--json", args->json, "print the JSON report instead of the summary")
      ->group("Output");
  sub.add_flag("--draw-keypoints", args->keypoints, "draw every keypoint too")->group("Output");
  sub.add_flag("--inliers-only", args->no_outliers, "draw only verified inliers")
      ->group("Output");
  sub.add_option("--mask-a", args->mask_a,
                 "mask image for A: only features on non-zero pixels are matched")
      ->group("Matching");
  sub.add_option("--mask-b", args->mask_b, "mask image for B")->group("Matching");
  AddSiftOptions(sub, args->sift);
  AddMatchOptions(sub, args->match);
  AddBackendOptions(sub, args->backend);
  return [args] { return RunMatch(*args); };
}

FM_REGISTER_COMMAND("match", "match two images (or feature files), verify, report and draw",
                    SetupMatch);

}  // namespace
}  // namespace fm::app
