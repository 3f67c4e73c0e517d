#include "options.h"

#include <opencv2/core.hpp>

namespace fm::app {

void AddSiftOptions(CLI::App& app, matcher::SiftOptions& o) {
  app.add_option("--max-features", o.max_features, "SIFT: keep the N strongest features (0 = all)")
      ->capture_default_str()->group("Extraction");
  app.add_option("--octave-layers", o.octave_layers, "SIFT: layers per octave")
      ->capture_default_str()->group("Extraction");
  app.add_option("--contrast-threshold", o.contrast_threshold,
                 "SIFT: contrast threshold (larger = fewer features)")
      ->capture_default_str()->group("Extraction");
  app.add_option("--edge-threshold", o.edge_threshold, "SIFT: edge threshold")
      ->capture_default_str()->group("Extraction");
  app.add_option("--sigma", o.sigma, "SIFT: Gaussian sigma of the first octave")
      ->capture_default_str()->group("Extraction");
  app.add_flag("--root-sift", o.root_sift, "RootSIFT descriptors (float) instead of SIFT (uint8)")
      ->group("Extraction");
  app.add_option("--max-image-size", o.max_image_size,
                 "downscale images whose longer side exceeds this before extraction (0 = never)")
      ->capture_default_str()->group("Extraction");
}

void MatchCliOptions::Finish() {
  try {
    match.metric = core::ParseMetric(metric);
    match.verify.model = matcher::ParseGeometryModel(model);
    match.verify.method = matcher::ParseUsacMethod(usac);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("option", e.what());
  }
  CheckOrThrow(match, "matching options");
  LimitLibraryThreads(match.threads);
}

void LimitLibraryThreads(int threads) {
  // OpenCV's own loops (SIFT's pyramid, USAC) take every core unless told; --threads bounds them
  // as it bounds featmatch's own workers.
  if (threads > 0) cv::setNumThreads(threads);
}

void AddMatchOptions(CLI::App& app, MatchCliOptions& o) {
  auto& m = o.match;
  app.add_option("-k,--k", m.k, "neighbours searched per feature")->capture_default_str()
      ->group("Matching");
  app.add_option("--metric", o.metric, "distance: l2, ip, cosine, pearson")->capture_default_str()
      ->group("Matching");
  app.add_option("--ratio", m.filter.ratio, "Lowe's ratio test threshold (1 = off)")
      ->capture_default_str()->group("Matching");
  // CLI11 shows no default for a flag (the {false} it prints is the value --no-mutual sets), and
  // batch turns the check on: the description says which.
  app.add_flag("--mutual,!--no-mutual", m.filter.mutual,
               std::string("keep only mutual nearest neighbours (cross check; ") +
                   (m.filter.mutual ? "on" : "off") + " by default); --no-mutual: keep all")
      ->group("Matching");
  app.add_option("--max-distance", m.filter.max_distance,
                 "drop matches farther than this (0 = no limit)")
      ->capture_default_str()->group("Matching");
  app.add_option("--threads", m.threads, "CPU threads (0 = all)")->capture_default_str()
      ->group("Matching");
  app.add_option("--model", o.model, "geometric model: homography, fundamental, none")
      ->capture_default_str()->group("Verification");
  app.add_option("--usac", o.usac,
                 "USAC variant: magsac, default, accurate, prosac, fast, parallel")
      ->capture_default_str()
      ->group("Verification");
  app.add_option("--threshold", m.verify.threshold, "inlier threshold in pixels")
      ->capture_default_str()->group("Verification");
  app.add_option("--confidence", m.verify.confidence, "RANSAC confidence")->capture_default_str()
      ->group("Verification");
  app.add_option("--max-iterations", m.verify.max_iterations, "RANSAC iteration limit")
      ->capture_default_str()->group("Verification");
  app.add_option("--min-inliers", m.verify.min_inliers, "inliers needed to call a pair verified")
      ->capture_default_str()->group("Verification");
  app.add_flag("--guided", m.guided,
               "after a model is verified, match again among the features it allows and verify "
               "those matches")
      ->group("Verification");
  app.add_option("--max-nfa", m.verify.max_nfa,
                 "most false alarms a verified model may have: how often matches at random would "
                 "fit as well (0 = no test)")
      ->capture_default_str()->group("Verification");
}

void BackendCliOptions::Finish() {
  try {
    backend.kind = matcher::ParseBackendKind(kind);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--backend", e.what());
  }
  CheckOrThrow(backend, "backend options");
}

void AddBackendOptions(CLI::App& app, BackendCliOptions& o) {
  app.add_option("--backend", o.kind, "kNN backend: auto (GPU if present), cpu, gpu")
      ->capture_default_str()->group("Backend");
  app.add_option("--device", o.backend.device, "GPU ordinal")->capture_default_str()
      ->group("Backend");
  app.add_option("--select", o.backend.select_algo,
                 "GPU k-selection: auto, tbis, merge-queue, quick-multiselect, sort")
      ->capture_default_str()->group("Backend");
  app.add_option("--precision", o.backend.precision, "GPU scoring: exact, fp32, tf32, fp16")
      ->capture_default_str()->group("Backend");
  app.add_option("--gpu-memory", o.backend.memory_fraction,
                 "GPU memory budget as a fraction of free memory")
      ->capture_default_str()->group("Backend");
}

}  // namespace fm::app
