// A COLMAP-compatible SQLite feature database: cameras, images, keypoints, descriptors, matches
// and two-view geometries laid out as COLMAP reads them, so that COLMAP's mapper can continue from
// a database featmatch wrote.
//
// Schema followed: COLMAP 3.12 (src/colmap/scene/database.cc, `PRAGMA user_version = 3900`), the
// first release with rigs and frames. Older COLMAP releases (3.8 to 3.11) read the same cameras,
// images, keypoints, descriptors, matches and two_view_geometries tables and ignore the others.
// See docs/batch.md for the column-by-column description.
//
// Conventions (as COLMAP defines them):
//  - image ids are 1..2^31-2; pair_id = id1 * 2147483647 + id2 with id1 < id2; the matches of a
//    pair are stored with column 0 indexing image id1's keypoints;
//  - keypoints: rows x 6 float32 (x, y, a11, a12, a21, a22), pixel centres at +0.5 (the centre of
//    the top-left pixel is (0.5, 0.5)); rows x 4 (x, y, scale, orientation) and rows x 2 (x, y)
//    are read too;
//  - descriptors: rows x 128 uint8; matches and inlier matches: rows x 2 uint32;
//  - F, E, H: 3x3 float64, row-major; qvec (w, x, y, z) and tvec: float64.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fm/core/types.h"

struct sqlite3;

namespace fm::matcher {

class DatabaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int64_t kColmapMaxImageId = 2147483647;  // exclusive
inline constexpr int kColmapUserVersion = 3900;

// pair_id of two distinct image ids (either order). Throws std::invalid_argument for ids out of
// range or equal.
int64_t ColmapPairId(int64_t image_id1, int64_t image_id2);
// The (smaller, larger) image ids of a pair_id.
std::pair<int64_t, int64_t> ColmapPairImages(int64_t pair_id);

// COLMAP's TwoViewGeometry::ConfigurationType.
enum class TwoViewConfig : int {
  kUndefined = 0,
  kDegenerate = 1,
  kCalibrated = 2,         // essential matrix
  kUncalibrated = 3,       // fundamental matrix
  kPlanar = 4,             // homography with baseline
  kPanoramic = 5,          // homography, pure rotation
  kPlanarOrPanoramic = 6,  // homography
  kWatermark = 7,
  kMultiple = 8,
};
const char* TwoViewConfigName(TwoViewConfig c);

// COLMAP camera model ids used here.
inline constexpr int kColmapSimpleRadial = 2;  // params f, cx, cy, k

struct ColmapCamera {
  int64_t camera_id = 0;
  int model = kColmapSimpleRadial;
  int64_t width = 0;
  int64_t height = 0;
  std::vector<double> params;
  bool prior_focal_length = false;
};

// COLMAP's default guess for an unknown camera: SIMPLE_RADIAL, f = 1.2 * max(w, h), centred.
ColmapCamera DefaultCamera(int64_t width, int64_t height);

struct ColmapImage {
  int64_t image_id = 0;
  std::string name;  // path relative to the image folder, '/' separated
  int64_t camera_id = 0;
};

// One keypoint row as stored (COLMAP pixel convention: +0.5 from OpenCV's).
struct ColmapKeypoint {
  float x = 0, y = 0;
  float a11 = 1, a12 = 0, a21 = 0, a22 = 1;
};

// OpenCV/featmatch keypoint -> COLMAP row (adds 0.5; scale = size / 2, orientation from angle).
ColmapKeypoint ToColmapKeypoint(const core::Keypoint& k);
// COLMAP row -> featmatch keypoint (subtracts 0.5; size and angle from the affine shape).
core::Keypoint FromColmapKeypoint(const ColmapKeypoint& k);

using ColmapMatches = std::vector<std::array<uint32_t, 2>>;

struct TwoViewGeometryRecord {
  TwoViewConfig config = TwoViewConfig::kUndefined;
  ColmapMatches inlier_matches;
  // Row-major 3x3 matrices; written only when there are inlier matches (COLMAP's rule), zero
  // otherwise.
  std::array<double, 9> F{}, E{}, H{};
};

// An open database. One object per thread: the connection is not shared between threads (open a
// second object for concurrent reading; SQLite's WAL mode lets readers run beside the writer).
class ColmapDatabase {
 public:
  enum class Mode { kReadOnly, kReadWrite };

  // Opens (and in kReadWrite mode creates, with the schema) the database. Throws DatabaseError
  // naming the path and the reason (missing, not writable, not a database, foreign schema).
  ColmapDatabase(const std::string& path, Mode mode);
  ~ColmapDatabase();
  ColmapDatabase(const ColmapDatabase&) = delete;
  ColmapDatabase& operator=(const ColmapDatabase&) = delete;

  const std::string& path() const { return path_; }

  // Transactions (not nested). Prefer the RAII Transaction below.
  void Begin();
  void Commit();
  void Rollback();

  class Transaction {
   public:
    explicit Transaction(ColmapDatabase& db) : db_(db) { db_.Begin(); }
    ~Transaction() {
      if (!done_) {
        try {
          db_.Rollback();
        } catch (...) {
        }
      }
    }
    void Commit() {
      db_.Commit();
      done_ = true;
    }

   private:
    ColmapDatabase& db_;
    bool done_ = false;
  };

  // Cameras and images. Ids are given explicitly (0 = next free id) and returned.
  int64_t AddCamera(const ColmapCamera& camera);
  // Adds the image, and its rig (one per camera) and frame, as COLMAP 3.12 expects.
  int64_t AddImage(const ColmapImage& image);
  std::optional<ColmapCamera> ReadCamera(int64_t camera_id);
  std::optional<ColmapImage> FindImage(const std::string& name);
  std::vector<ColmapImage> ReadImages();  // ordered by image_id
  int64_t MaxImageId();

  void WriteKeypoints(int64_t image_id, const std::vector<ColmapKeypoint>& keypoints);
  std::vector<ColmapKeypoint> ReadKeypoints(int64_t image_id);
  // Descriptors must be uint8 (COLMAP stores nothing else); any dimension is accepted.
  void WriteDescriptors(int64_t image_id, const core::DescriptorMatrix& descriptors);
  core::DescriptorMatrix ReadDescriptors(int64_t image_id);
  bool HasFeatures(int64_t image_id);
  int64_t NumKeypoints(int64_t image_id);

  // Matches of (id1, id2); swapped into COLMAP's order when id1 > id2.
  void WriteMatches(int64_t image_id1, int64_t image_id2, const ColmapMatches& matches);
  // Matches in the order (id1, id2) asked for; nullopt when the pair has no row.
  std::optional<ColmapMatches> ReadMatches(int64_t image_id1, int64_t image_id2);
  void WriteTwoViewGeometry(int64_t image_id1, int64_t image_id2,
                            const TwoViewGeometryRecord& geometry);
  std::optional<TwoViewGeometryRecord> ReadTwoViewGeometry(int64_t image_id1, int64_t image_id2);
  // Every pair_id with a two_view_geometries row, ascending.
  std::vector<int64_t> GeometryPairIds();
  // Inlier counts and configs of all pairs: (pair_id, rows, config), ascending pair_id.
  struct PairRow {
    int64_t pair_id = 0;
    int64_t matches = 0;
    int64_t inliers = 0;
    TwoViewConfig config = TwoViewConfig::kUndefined;
  };
  std::vector<PairRow> ReadPairRows();

  // featmatch's own key/value table (COLMAP ignores it): extraction settings and the like.
  void SetSetting(const std::string& key, const std::string& value);
  std::optional<std::string> GetSetting(const std::string& key);

  int64_t CountRows(const std::string& table);

  // Folds the write-ahead log into the main file (done before close after a finished run).
  void Checkpoint();

  sqlite3* handle() { return db_; }

 private:
  void Exec(const std::string& sql);
  void CreateSchema();

  std::string path_;
  sqlite3* db_ = nullptr;
  bool in_transaction_ = false;
};

}  // namespace fm::matcher
