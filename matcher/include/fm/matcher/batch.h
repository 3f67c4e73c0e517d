// Batch matching of image folders into a COLMAP database: extraction in parallel on the CPU,
// pairs matched in batches through a KnnBackend (many small pairs per kNN search), geometric
// verification on CPU threads alongside, results committed in transactions so that a run stopped
// at any moment (Cancel, Ctrl-C, kill -9, power cut aside) resumes where it stopped and ends with
// the same database as an uninterrupted run. See docs/batch.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "fm/matcher/backend.h"
#include "fm/matcher/colmap_database.h"
#include "fm/matcher/pipeline.h"
#include "fm/matcher/sift.h"

namespace fm::matcher {

// Bad options or inputs that make a batch impossible (empty folder, no images, unwritable
// database, foreign extraction settings, unknown names in a pair list). The message says what to
// do.
class BatchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class PairMode {
  kExhaustive,  // every pair of images
  kSequential,  // each image with the next `overlap` images in name order (video, scans)
  kQuery,       // every image of `query_folder` against every image of the folder
  kList,        // the pairs named in `list_file` ("name1 name2" per line, '#' comments)
};

struct PairingOptions {
  PairMode mode = PairMode::kExhaustive;
  int overlap = 10;          // kSequential: neighbours after each image
  std::string query_folder;  // kQuery
  std::string list_file;     // kList

  bool Check(std::string* why) const;
  // "exhaustive", "sequential:N", "query:FOLDER", "list:FILE". Throws std::invalid_argument.
  static PairingOptions Parse(const std::string& spec);
  std::string ToString() const;
};

struct BatchOptions {
  std::string folder;    // images (searched recursively; names relative to it)
  std::string database;  // COLMAP database, created or resumed
  PairingOptions pairs;
  SiftOptions sift;
  // kNN, filters, verification. match.threads: CPU threads for extraction, the CPU kNN and
  // verification (0 = all cores). The model defaults to the fundamental matrix, right for the
  // general 3-D scenes COLMAP reconstructs; choose the homography for planar or panoramic sets.
  // A pair needs 15 inliers to count as verified (COLMAP's own two-view default): with fewer,
  // a fundamental matrix fits unrelated pairs too often.
  MatchOptions match = [] {
    MatchOptions m;
    m.verify.model = GeometryModel::kFundamental;
    m.verify.min_inliers = 15;
    return m;
  }();
  BackendOptions backend;

  // Batching of the kNN: query images of one corpus image are concatenated up to these limits.
  int64_t max_batch_rows = 1 << 18;
  int max_batch_images = 64;
  // Results are committed every `commit_pairs` pairs or `commit_seconds`, whichever comes first.
  int commit_pairs = 256;
  double commit_seconds = 1.0;
  // Cached images (descriptors and keypoints) on the matching side; bounds memory.
  int cache_images = 128;
  // Stop after this many pairs have been committed in this run (0 = run to the end); the rest is
  // left for a later run, as after Cancel.
  int64_t max_pairs = 0;

  bool Check(std::string* why) const;
};

enum class BatchStage {
  kIdle,
  kScanning,
  kExtracting,
  kPairing,
  kMatching,
  kDone,
  kCancelled,
  kFailed
};
const char* BatchStageName(BatchStage s);

struct BatchProgress {
  BatchStage stage = BatchStage::kIdle;
  int64_t done = 0;             // images (extracting) or pairs (matching) done, committed
  int64_t total = 0;
  double per_second = 0;        // in this run
  double eta_seconds = -1;      // -1 = unknown yet
  double elapsed_seconds = 0;   // since Start
};

struct SkippedFile {
  std::string path;
  std::string reason;
};

struct BatchSummary {
  BatchStage stage = BatchStage::kIdle;  // kDone, kCancelled or kFailed once finished
  std::string error;                     // kFailed: what went wrong
  std::string database;
  std::string pairing;
  std::string backend;  // description of the kNN backend

  int64_t images_found = 0;      // files with an image extension
  int64_t images_extracted = 0;  // in this run
  int64_t images_reused = 0;     // features already in the database
  std::vector<SkippedFile> bad_images;     // unreadable or corrupt: skipped
  std::vector<SkippedFile> ignored_files;  // not images (by extension), broken links

  int64_t pairs_total = 0;       // pairs of this job
  int64_t pairs_previous = 0;    // already in the database when this run started
  int64_t pairs_matched = 0;     // matched and committed in this run
  int64_t pairs_verified = 0;    // job pairs with a verified geometry (whole database)

  double extract_seconds = 0;
  double match_seconds = 0;
  double total_seconds = 0;
  double match_pairs_per_second = 0;

  bool finished() const { return stage == BatchStage::kDone; }
};
nlohmann::json BatchSummaryToJson(const BatchSummary& s);

// One pair of a database, for result tables.
struct PairResult {
  int64_t image_id1 = 0, image_id2 = 0;
  std::string name1, name2;
  int64_t matches = 0;
  int64_t inliers = 0;
  TwoViewConfig config = TwoViewConfig::kUndefined;
  bool verified() const;
};
// Every matched pair of a database, ascending pair id. Throws DatabaseError.
std::vector<PairResult> ReadPairResults(const std::string& database_path);

// Runs one batch on worker threads. Start returns at once; Wait / WaitFor block until the batch
// has finished (done, cancelled or failed); Summary says how it went. Nothing thrown inside the
// workers escapes: failures end as BatchStage::kFailed with Summary().error. The destructor
// cancels and waits. All methods are thread-safe.
class BatchController {
 public:
  // Called from a worker thread (never the caller of Start), at most a few times per second and
  // at every stage change. Must not call back into the controller except Cancel. Exceptions it
  // throws are swallowed.
  using ProgressFn = std::function<void(const BatchProgress&)>;

  BatchController();
  ~BatchController();
  BatchController(const BatchController&) = delete;
  BatchController& operator=(const BatchController&) = delete;

  void SetProgressCallback(ProgressFn fn);  // before Start

  // Checks the options, the folder (exists, holds images) and the database (openable for writing,
  // same extraction settings) and starts. Throws BatchError (or std::logic_error when a batch is
  // already running); nothing is started then.
  void Start(const BatchOptions& options);
  // Asks the batch to stop: pairs in flight are finished and committed, then it ends kCancelled.
  void Cancel();
  void Wait();
  // True when finished within the timeout.
  bool WaitFor(std::chrono::milliseconds timeout);
  bool Running() const;
  BatchProgress Progress() const;
  BatchSummary Summary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fm::matcher
