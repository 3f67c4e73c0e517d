// A library of logos kept in one SQLite file, and the query that finds them in a scene.
//
// The query searches every scene descriptor against the descriptors of all logos at once (one
// kNN search over the concatenated library, each row tagged with its logo), applies a ratio test
// per logo, then verifies each candidate logo with a USAC homography, several times over to find
// several instances. The schema of the file is described in docs/logo_library.md.
//
// Thread safety: a LogoLibrary is not shared between threads without a lock; every method may be
// called from any one thread at a time (the GUI runs it off its main thread). Methods throw
// LogoLibraryError for bad files and bad input, std::invalid_argument for bad options; a failed
// Add or Remove leaves the file and the object as they were.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <opencv2/core.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fm/core/filters.h"
#include "fm/core/knn.h"
#include "fm/core/types.h"
#include "fm/matcher/backend.h"
#include "fm/matcher/sift.h"
#include "fm/matcher/verify.h"

namespace fm::matcher {

class LogoLibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Version of the SQLite schema written by this build (stored in the `meta` table).
inline constexpr int kLogoLibrarySchemaVersion = 1;

// Settings fixed when a library is created: every logo and every scene is extracted with them.
struct LogoLibrarySettings {
  SiftOptions sift;
  int max_logo_side = 512;      // logo images are downscaled so the longer side is at most this
  int min_logo_features = 24;   // a logo image with fewer SIFT features is refused
  // Features are also extracted from the logo shrunk by pyramid_scale, pyramid_scale^2, ...
  // (pyramid_levels images in all, each at least 48 px wide) and stored in the full-size logo's
  // coordinates: small logos in scenes then meet descriptors computed near their own resolution.
  int pyramid_levels = 6;
  double pyramid_scale = 1.41421356;  // shrink factor between levels, in (1, 4]

  bool Check(std::string* why) const;
};

struct LogoInfo {
  int64_t id = 0;
  std::string name;
  std::string source;         // path of the image it came from
  int32_t width = 0;          // size of the stored logo image (after downscaling), pixels
  int32_t height = 0;
  int64_t num_features = 0;
  std::string added;          // UTC time, ISO 8601
};

struct LogoQueryOptions {
  int64_t k = 16;                 // neighbours per scene descriptor in the library-wide search
                                  // (pyramid copies of one logo point fill several of them)
  float ratio = 0.85f;            // per-logo Lowe ratio: nearest / second nearest in that logo
                                  // at another place (more than same_point_px away)
  double same_point_px = 6.0;     // logo keypoints closer than this are one point (pyramid copies)
  int max_candidates = 12;        // logos verified per scene, most candidate matches first
  int max_instances = 4;          // instances of one logo searched per scene
  int min_inliers = 7;            // verified inliers needed for a detection
  double min_confidence = 0.5;    // detections below this calibrated confidence are dropped
  double threshold = 4.0;         // homography inlier threshold, scene pixels
  UsacMethod usac = UsacMethod::kMagsac;
  int max_iterations = 5000;
  double max_anisotropy = 6.0;    // largest / smallest singular value of the local affine part
  double min_side_px = 12.0;      // shortest side of the outline in the scene, pixels
  double max_scale_change = 4.0;  // largest / smallest local scale over the logo's corners
  // Guided second pass for logos the first pass does not find (small, far or partly hidden
  // logos leave few matches that pass the ratio test): a similarity hypothesis from
  // guided_min_matches or more ratio-test matches that agree on position and keypoint scale
  // gathers every looser match (ratio <= guided_ratio) that lands near where the hypothesis puts
  // its logo point, at a consistent scale; those are verified with a homography as above.
  bool guided = true;
  float guided_ratio = 0.95f;     // ratio test of the matches the hypothesis may gather
  int guided_min_matches = 3;     // ratio-test matches that must agree on the hypothesis
  double guided_radius = 0.15;    // gathering radius, fraction of the logo's width in the scene
                                  // (at least 2 * threshold)
  // A guided detection needs spread * explained >= this: spread = area of the convex hull of
  // its inliers in the logo / the logo's area; explained = inliers / scene keypoints inside its
  // outline.
  double guided_min_evidence = 0.012;
  int top = 0;                    // keep the best N detections per scene; 0 = all
  int threads = 0;                // CPU threads for the kNN search; 0 = all

  bool Check(std::string* why) const;
};

// One logo instance found in a scene.
struct LogoDetection {
  std::string name;
  int64_t logo_id = 0;
  int inliers = 0;                // verified homography inliers
  int candidates = 0;             // per-logo matches that passed the ratio test
  double inlier_ratio = 0;        // inliers / candidate matches of that instance's search
  double confidence = 0;          // calibrated probability that the detection is right
  std::array<cv::Point2f, 4> quad;  // logo corners in the scene: TL, TR, BR, BL
  cv::Matx33d homography;         // logo image -> scene
  // Verified correspondences: query = logo keypoint index, train = scene keypoint index.
  std::vector<core::Match> matches;
};

struct LogoQueryResult {
  std::vector<LogoDetection> detections;  // ranked by confidence, then inliers
  int64_t scene_features = 0;
  int64_t library_descriptors = 0;
  std::string backend;
  double extract_ms = 0, knn_ms = 0, candidates_ms = 0, verify_ms = 0;
};

// The confidence model: P(correct | inliers, inlier ratio), logistic in log(inliers) and the
// ratio. Exposed so the evaluation can report its calibration.
double LogoConfidence(int inliers, double inlier_ratio);

class LogoLibrary {
 public:
  // Creates a new, empty library file (refuses to overwrite an existing file).
  static LogoLibrary Create(const std::string& path, const LogoLibrarySettings& settings = {});
  // Opens an existing library; checks that it is a featmatch logo library of a known version.
  // A logo whose stored features are damaged (checksum, size, type) makes it throw, or, with
  // skip_damaged, is left out of the library and listed by Damaged(), so that the rest can be
  // used and the damaged one removed.
  static LogoLibrary Open(const std::string& path, bool skip_damaged = false);
  // Opens `path` when it exists, else creates it with `settings`.
  static LogoLibrary OpenOrCreate(const std::string& path,
                                  const LogoLibrarySettings& settings = {});

  LogoLibrary(LogoLibrary&&) noexcept;
  LogoLibrary& operator=(LogoLibrary&&) noexcept;
  ~LogoLibrary();

  const std::string& path() const;
  const LogoLibrarySettings& settings() const;

  // Adds a logo from an image (8-bit gray or BGR). Throws LogoLibraryError when the name is
  // taken, the image is empty, or it has fewer than settings().min_logo_features features.
  LogoInfo Add(const std::string& name, const cv::Mat& image, const std::string& source = {});
  // Loads the image file and adds it; `name` empty = the file's stem.
  LogoInfo AddFile(const std::string& image_path, const std::string& name = {});
  // Removes a logo by name (a damaged one too); false when there is none of that name.
  bool Remove(const std::string& name);
  // Logos left out when the library was opened with skip_damaged: name and reason.
  std::vector<std::pair<std::string, std::string>> Damaged() const;
  std::vector<LogoInfo> List() const;
  int64_t size() const;               // number of logos
  int64_t num_descriptors() const;    // rows of the concatenated library

  // Keypoints and descriptors of one logo (throws when the id is unknown).
  const core::Features& LogoFeatures(int64_t logo_id) const;

  // The kNN backend used by Query; the library keeps it (and whatever it caches) across
  // queries. Without one, Query creates the default (kAuto) backend on first use. Drops a
  // factory set before it.
  void SetBackend(std::unique_ptr<core::KnnBackend> backend);
  // The next search calls `factory` with its work (the scene's features against the whole
  // library, one search), then drops it. The factory returns the backend to search with from
  // then on, or nullptr to keep the library's (an error where it has none). A caller that knows
  // how many scenes will follow can so choose the backend by the whole work
  // (CreateKnnBackendFor), which it cannot before the first scene's features are known, and
  // choose again at a later query.
  using BackendFactory = std::function<std::unique_ptr<core::KnnBackend>(const SearchWork& work)>;
  void SetBackendFactory(BackendFactory factory);
  core::KnnBackend& backend();

  // Extracts features of the scene with the library's settings.
  core::Features ExtractSceneFeatures(const cv::Mat& scene) const;
  // `cancel`, when given and set while a query runs, stops it with core::Cancelled: within a CPU
  // search of the library (between its blocks of scene features) and between the logos it
  // verifies (extraction and a USAC run under way finish first).
  LogoQueryResult Query(const core::Features& scene, const LogoQueryOptions& options = {},
                        const std::atomic<bool>* cancel = nullptr);
  LogoQueryResult QueryImage(const cv::Mat& scene, const LogoQueryOptions& options = {},
                             const std::atomic<bool>* cancel = nullptr);

 private:
  struct Impl;
  explicit LogoLibrary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// JSON of one scene's result (detections with quad, scores; matches when asked).
nlohmann::json LogoQueryResultToJson(const LogoQueryResult& result, bool include_matches = false);

// Draws outlines and names of the detections on a copy of the (colour or gray) scene.
cv::Mat DrawLogoDetections(const cv::Mat& scene, const std::vector<LogoDetection>& detections);

}  // namespace fm::matcher
