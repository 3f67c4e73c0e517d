// The logo retrieval evaluation: a labelled set of scenes generated from a seed (logos from the
// OpenCV sample images and logos drawn here, pasted into real photographs under random
// homographies and photometric changes, plus scenes with no logo), queried against a library
// of those logos, and scored.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "fm/core/knn.h"
#include "fm/matcher/logo_library.h"

namespace fm::matcher {

struct LogoEvalOptions {
  uint64_t seed = 1;
  int scenes = 400;                 // scenes in all, negatives included
  double negative_fraction = 0.3;   // scenes with no library logo (half of them with drawn
                                    // text and shapes that are not in the library)
  double two_logo_fraction = 0.15;  // positive scenes holding two different logos
  double repeat_fraction = 0.1;     // positive scenes holding two instances of one logo
  int scene_width = 640;
  int scene_height = 480;
  int min_logo_width = 60;          // logo width in the scene, pixels (log-uniform in between)
  int max_logo_width = 240;
  double max_rotation_deg = 45;     // in-plane rotation, uniform in +-this
  double perspective = 0.12;        // corner jitter as a fraction of the logo's width
  double occlusion_probability = 0.3;  // a patch over 10-25 % of the logo
  std::string data_dir;             // OpenCV sample data; empty = $FM_SAMPLE_DATA or the default
  std::string draw_dir;             // when set, scenes with a miss or a false detection are drawn
  LogoLibrarySettings library;
  LogoQueryOptions query;

  bool Check(std::string* why) const;
};

// A logo of the evaluation set: BGR image and its opacity mask (255 = logo).
struct EvalLogo {
  std::string name;
  std::string origin;  // "sample:<file>", "crop:<file>" or "drawn"
  cv::Mat image;
  cv::Mat mask;
};

struct EvalInstance {
  std::string name;
  std::array<cv::Point2f, 4> quad;  // the logo's corners in the scene: TL, TR, BR, BL
  double width_px = 0;              // logo width in the scene (mean of top and bottom edges)
  bool occluded = false;
};

struct EvalScene {
  cv::Mat image;                      // BGR
  std::vector<EvalInstance> truth;    // empty for a negative scene
  std::string background;
  bool distractors = false;           // drawn text / shapes not in the library
};

// Directory of the OpenCV sample images used by the evaluation.
std::string DefaultSampleDir();
// The evaluation's logos (fixed designs, independent of the seed). Throws LogoLibraryError when
// the sample images are missing.
std::vector<EvalLogo> MakeEvalLogos(const std::string& data_dir);
// The image a user would add for `logo`: BGR when it is opaque, else BGRA with its mask as alpha
// (as the transparent PNG it came from).
cv::Mat LibraryImage(const EvalLogo& logo);
// Background photographs (BGR) and their file names.
std::vector<std::pair<std::string, cv::Mat>> LoadEvalBackgrounds(const std::string& data_dir);
// One scene with the given logos pasted in (none = negative scene). Deterministic in `rng`.
EvalScene MakeEvalScene(const std::vector<const EvalLogo*>& logos,
                        const std::pair<std::string, cv::Mat>& background, bool repeat_first,
                        bool distractors, cv::RNG& rng, const LogoEvalOptions& options);

// Scoring of one detection against the truth of its scene.
double QuadCornerError(const std::array<cv::Point2f, 4>& a, const std::array<cv::Point2f, 4>& b);
double QuadOverlap(const std::array<cv::Point2f, 4>& a, const std::array<cv::Point2f, 4>& b);

struct LogoEvalReport {
  nlohmann::json json;    // every figure, the settings and the per-scene outcomes
  std::string markdown;   // the human-readable summary
  bool cancelled = false;
  double top1 = 0, precision = 0, recall = 0, fp_per_negative = 0, false_positive_rate = 0,
         median_corner_error = 0;
};

// Runs the evaluation. `backend` may be null (the library's default is used). `progress` (may
// be empty) is called after each scene with (done, total); setting `*cancel` stops after the
// current scene with a report of the scenes done so far (cancelled = true).
LogoEvalReport RunLogoEval(const LogoEvalOptions& options,
                           std::unique_ptr<core::KnnBackend> backend = nullptr,
                           const std::function<void(int, int)>& progress = {},
                           const std::atomic<bool>* cancel = nullptr);

}  // namespace fm::matcher
