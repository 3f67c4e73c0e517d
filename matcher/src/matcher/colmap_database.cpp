#include "fm/matcher/colmap_database.h"

#include <sqlite3.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

namespace fm::matcher {
namespace {

constexpr double kPi = 3.14159265358979323846;

// A prepared statement that finalises itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql, const std::string& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw DatabaseError(path + ": " + sqlite3_errmsg(db) + " (in: " + sql + ")");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int i, int64_t v) {
    Check(sqlite3_bind_int64(s_, i, v));
    return *this;
  }
  Stmt& Bind(int i, const std::string& v) {
    Check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& BindBlob(int i, const void* data, std::size_t bytes) {
    if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw DatabaseError(path_ + ": blob of " + std::to_string(bytes) + " bytes is too large");
    // A zero-length blob (not NULL) for empty data, as COLMAP writes it.
    static const char kEmpty = 0;
    Check(sqlite3_bind_blob(s_, i, bytes ? data : &kEmpty, static_cast<int>(bytes),
                            SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& BindNull(int i) {
    Check(sqlite3_bind_null(s_, i));
    return *this;
  }
  // True while there is a row.
  bool Step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw DatabaseError(path_ + ": " + sqlite3_errmsg(db_));
  }
  void Run() { Step(); }
  int64_t Int(int c) const { return sqlite3_column_int64(s_, c); }
  std::string Text(int c) const {
    const auto* t = sqlite3_column_text(s_, c);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  }
  bool IsNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::size_t Bytes(int c) const { return static_cast<std::size_t>(sqlite3_column_bytes(s_, c)); }
  const void* Blob(int c) const { return sqlite3_column_blob(s_, c); }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK) throw DatabaseError(path_ + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  std::string path_;
};

// The tables as COLMAP 3.12 creates them, plus featmatch's settings table.
const char* kSchema = R"SQL(
CREATE TABLE IF NOT EXISTS rigs
  (rig_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
   ref_sensor_id INTEGER NOT NULL,
   ref_sensor_type INTEGER NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS rig_ref_sensor_assignment ON rigs(ref_sensor_id, ref_sensor_type);
CREATE TABLE IF NOT EXISTS rig_sensors
  (rig_id INTEGER NOT NULL,
   sensor_id INTEGER NOT NULL,
   sensor_type INTEGER NOT NULL,
   sensor_from_rig BLOB,
   FOREIGN KEY(rig_id) REFERENCES rigs(rig_id) ON DELETE CASCADE);
CREATE UNIQUE INDEX IF NOT EXISTS rig_sensor_assignment ON rig_sensors(sensor_id, sensor_type);
CREATE TABLE IF NOT EXISTS cameras
  (camera_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
   model INTEGER NOT NULL,
   width INTEGER NOT NULL,
   height INTEGER NOT NULL,
   params BLOB,
   prior_focal_length INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS frames
  (frame_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
   rig_id INTEGER NOT NULL,
   FOREIGN KEY(rig_id) REFERENCES rigs(rig_id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS frame_data
  (frame_id INTEGER NOT NULL,
   data_id INTEGER NOT NULL,
   sensor_id INTEGER NOT NULL,
   sensor_type INTEGER NOT NULL,
   FOREIGN KEY(frame_id) REFERENCES frames(frame_id) ON DELETE CASCADE);
CREATE UNIQUE INDEX IF NOT EXISTS frame_sensor_assignment ON frame_data(data_id, sensor_type);
CREATE TABLE IF NOT EXISTS images
  (image_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
   name TEXT NOT NULL UNIQUE,
   camera_id INTEGER NOT NULL,
   CONSTRAINT image_id_check CHECK(image_id >= 0 and image_id < 2147483647),
   FOREIGN KEY(camera_id) REFERENCES cameras(camera_id));
CREATE UNIQUE INDEX IF NOT EXISTS index_name ON images(name);
CREATE TABLE IF NOT EXISTS pose_priors
  (image_id INTEGER PRIMARY KEY NOT NULL,
   position BLOB,
   coordinate_system INTEGER NOT NULL,
   position_covariance BLOB,
   FOREIGN KEY(image_id) REFERENCES images(image_id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS keypoints
  (image_id INTEGER PRIMARY KEY NOT NULL,
   rows INTEGER NOT NULL,
   cols INTEGER NOT NULL,
   data BLOB,
   FOREIGN KEY(image_id) REFERENCES images(image_id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS descriptors
  (image_id INTEGER PRIMARY KEY NOT NULL,
   rows INTEGER NOT NULL,
   cols INTEGER NOT NULL,
   data BLOB,
   FOREIGN KEY(image_id) REFERENCES images(image_id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS matches
  (pair_id INTEGER PRIMARY KEY NOT NULL,
   rows INTEGER NOT NULL,
   cols INTEGER NOT NULL,
   data BLOB);
CREATE TABLE IF NOT EXISTS two_view_geometries
  (pair_id INTEGER PRIMARY KEY NOT NULL,
   rows INTEGER NOT NULL,
   cols INTEGER NOT NULL,
   data BLOB,
   config INTEGER NOT NULL,
   F BLOB,
   E BLOB,
   H BLOB,
   qvec BLOB,
   tvec BLOB);
CREATE TABLE IF NOT EXISTS featmatch_settings
  (key TEXT PRIMARY KEY NOT NULL,
   value TEXT NOT NULL);
)SQL";

constexpr int kSensorCamera = 0;

}  // namespace

int64_t ColmapPairId(int64_t image_id1, int64_t image_id2) {
  if (image_id1 < 0 || image_id2 < 0 || image_id1 >= kColmapMaxImageId ||
      image_id2 >= kColmapMaxImageId)
    throw std::invalid_argument("image id out of COLMAP's range [0, 2^31-1)");
  if (image_id1 == image_id2) throw std::invalid_argument("a pair needs two different images");
  if (image_id1 > image_id2) std::swap(image_id1, image_id2);
  return image_id1 * kColmapMaxImageId + image_id2;
}

std::pair<int64_t, int64_t> ColmapPairImages(int64_t pair_id) {
  const int64_t id2 = pair_id % kColmapMaxImageId;
  const int64_t id1 = (pair_id - id2) / kColmapMaxImageId;
  return {id1, id2};
}

const char* TwoViewConfigName(TwoViewConfig c) {
  switch (c) {
    case TwoViewConfig::kUndefined: return "undefined";
    case TwoViewConfig::kDegenerate: return "degenerate";
    case TwoViewConfig::kCalibrated: return "calibrated";
    case TwoViewConfig::kUncalibrated: return "uncalibrated";
    case TwoViewConfig::kPlanar: return "planar";
    case TwoViewConfig::kPanoramic: return "panoramic";
    case TwoViewConfig::kPlanarOrPanoramic: return "planar_or_panoramic";
    case TwoViewConfig::kWatermark: return "watermark";
    case TwoViewConfig::kMultiple: return "multiple";
  }
  return "unknown";
}

ColmapCamera DefaultCamera(int64_t width, int64_t height) {
  ColmapCamera c;
  c.model = kColmapSimpleRadial;
  c.width = width;
  c.height = height;
  c.params = {1.2 * static_cast<double>(std::max(width, height)), width / 2.0, height / 2.0, 0.0};
  c.prior_focal_length = false;
  return c;
}

ColmapKeypoint ToColmapKeypoint(const core::Keypoint& k) {
  ColmapKeypoint c;
  c.x = k.x + 0.5f;
  c.y = k.y + 0.5f;
  const double scale = k.size > 0 ? k.size / 2.0 : 1.0;
  const double ori = k.angle >= 0 ? k.angle * kPi / 180.0 : 0.0;
  c.a11 = static_cast<float>(scale * std::cos(ori));
  c.a12 = static_cast<float>(-scale * std::sin(ori));
  c.a21 = static_cast<float>(scale * std::sin(ori));
  c.a22 = static_cast<float>(scale * std::cos(ori));
  return c;
}

core::Keypoint FromColmapKeypoint(const ColmapKeypoint& c) {
  core::Keypoint k;
  k.x = c.x - 0.5f;
  k.y = c.y - 0.5f;
  k.size = static_cast<float>(2.0 * std::hypot(c.a11, c.a21));
  double deg = std::atan2(c.a21, c.a11) * 180.0 / kPi;
  if (deg < 0) deg += 360.0;
  k.angle = static_cast<float>(deg);
  return k;
}

ColmapDatabase::ColmapDatabase(const std::string& path, Mode mode) : path_(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw DatabaseError("no database path given");
  if (mode == Mode::kReadOnly && !fs::exists(path, ec))
    throw DatabaseError(path + ": no such database");
  if (fs::is_directory(path, ec)) throw DatabaseError(path + ": is a directory, not a database");
  if (mode == Mode::kReadWrite) {
    const fs::path parent = fs::absolute(fs::path(path), ec).parent_path();
    if (!fs::is_directory(parent, ec))
      throw DatabaseError(path + ": the folder " + parent.string() + " does not exist");
  }
  const int flags = mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY
                                            : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw DatabaseError(path + ": cannot open the database (" + msg + ")" +
                        (mode == Mode::kReadWrite ? "; is the file or its folder read-only?" : ""));
  }
  sqlite3_busy_timeout(db_, 30000);
  if (mode == Mode::kReadWrite && sqlite3_db_readonly(db_, "main") == 1) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw DatabaseError(path + ": the database file is read-only; choose a writable --db path");
  }
  try {
    // Any statement fails here when the file is not an SQLite database.
    Exec("PRAGMA foreign_keys=ON");
    if (mode == Mode::kReadWrite) {
      // An SQLite file holding other tables and none of COLMAP's (a logo library, an
      // application's data) is not taken over: its owner did not mean it as a COLMAP database.
      {
        Stmt t(db_,
               "SELECT count(*), sum(name IN ('cameras','images','keypoints','descriptors',"
               "'matches','two_view_geometries')) FROM sqlite_master WHERE type='table' AND "
               "name NOT LIKE 'sqlite_%'",
               path_);
        t.Step();
        if (t.Int(0) > 0 && t.Int(1) == 0)
          throw DatabaseError(path + ": an SQLite database of something else (" +
                              std::to_string(t.Int(0)) +
                              " tables, none of COLMAP's); choose a new database path");
      }  // the statement is finalized: the journal mode cannot change inside its transaction
      Exec("PRAGMA journal_mode=WAL");
      Exec("PRAGMA synchronous=NORMAL");
      CreateSchema();
    } else {
      Stmt s(db_, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN "
                  "('images','keypoints','descriptors','matches','two_view_geometries')",
             path_);
      s.Step();
      if (s.Int(0) != 5)
        throw DatabaseError(path + ": not a COLMAP database (tables are missing)");
    }
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

ColmapDatabase::~ColmapDatabase() {
  if (!db_) return;
  if (in_transaction_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  // The write-ahead log is for the run; the file is left in the rollback-journal mode, whole in
  // itself, so that it opens from read-only storage too. Best effort: another connection to the
  // file keeps it in WAL mode, and nothing is lost either way.
  if (sqlite3_db_readonly(db_, "main") == 0)
    sqlite3_exec(db_, "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  sqlite3_close_v2(db_);
}

void ColmapDatabase::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    if (sqlite3_errcode(db_) == SQLITE_NOTADB)
      throw DatabaseError(path_ + ": not an SQLite database");
    if (sqlite3_errcode(db_) == SQLITE_READONLY)
      throw DatabaseError(path_ + ": the database is read-only (" + msg + ")");
    throw DatabaseError(path_ + ": " + msg);
  }
}

void ColmapDatabase::CreateSchema() {
  Exec(std::string("BEGIN;") + kSchema + "PRAGMA user_version = " +
       std::to_string(kColmapUserVersion) + "; COMMIT;");
  // A database from an older COLMAP may lack the newer geometry columns.
  for (const char* col : {"F", "E", "H", "qvec", "tvec"}) {
    Stmt s(db_, "SELECT count(*) FROM pragma_table_info('two_view_geometries') WHERE name=?",
           path_);
    s.Bind(1, std::string(col));
    s.Step();
    if (s.Int(0) == 0) Exec(std::string("ALTER TABLE two_view_geometries ADD COLUMN ") + col +
                            " BLOB");
  }
}

void ColmapDatabase::Begin() {
  if (in_transaction_) throw std::logic_error("ColmapDatabase: transaction already open");
  Exec("BEGIN IMMEDIATE");
  in_transaction_ = true;
}

void ColmapDatabase::Commit() {
  if (!in_transaction_) throw std::logic_error("ColmapDatabase: no open transaction");
  Exec("COMMIT");
  in_transaction_ = false;
}

void ColmapDatabase::Rollback() {
  if (!in_transaction_) return;
  in_transaction_ = false;
  Exec("ROLLBACK");
}

int64_t ColmapDatabase::AddCamera(const ColmapCamera& camera) {
  Stmt s(db_,
         "INSERT INTO cameras(camera_id, model, width, height, params, prior_focal_length) "
         "VALUES(?, ?, ?, ?, ?, ?)",
         path_);
  if (camera.camera_id > 0) s.Bind(1, camera.camera_id); else s.BindNull(1);
  s.Bind(2, camera.model).Bind(3, camera.width).Bind(4, camera.height);
  s.BindBlob(5, camera.params.data(), camera.params.size() * sizeof(double));
  s.Bind(6, camera.prior_focal_length ? 1 : 0);
  s.Run();
  return sqlite3_last_insert_rowid(db_);
}

int64_t ColmapDatabase::AddImage(const ColmapImage& image) {
  if (image.name.empty()) throw std::invalid_argument("AddImage: empty image name");
  Stmt s(db_, "INSERT INTO images(image_id, name, camera_id) VALUES(?, ?, ?)", path_);
  if (image.image_id > 0) s.Bind(1, image.image_id); else s.BindNull(1);
  s.Bind(2, image.name).Bind(3, image.camera_id);
  s.Run();
  const int64_t image_id = sqlite3_last_insert_rowid(db_);
  // One rig per camera (the camera is its reference sensor), one frame per image.
  int64_t rig_id = 0;
  {
    Stmt r(db_, "SELECT rig_id FROM rigs WHERE ref_sensor_id=? AND ref_sensor_type=?", path_);
    r.Bind(1, image.camera_id).Bind(2, kSensorCamera);
    if (r.Step()) rig_id = r.Int(0);
  }
  if (rig_id == 0) {
    Stmt r(db_, "INSERT INTO rigs(rig_id, ref_sensor_id, ref_sensor_type) VALUES(?, ?, ?)",
           path_);
    r.Bind(1, image.camera_id).Bind(2, image.camera_id).Bind(3, kSensorCamera);
    r.Run();
    rig_id = sqlite3_last_insert_rowid(db_);
  }
  Stmt f(db_, "INSERT INTO frames(frame_id, rig_id) VALUES(?, ?)", path_);
  f.Bind(1, image_id).Bind(2, rig_id);
  f.Run();
  Stmt d(db_, "INSERT INTO frame_data(frame_id, data_id, sensor_id, sensor_type) VALUES(?,?,?,?)",
         path_);
  d.Bind(1, image_id).Bind(2, image_id).Bind(3, image.camera_id).Bind(4, kSensorCamera);
  d.Run();
  return image_id;
}

std::optional<ColmapCamera> ColmapDatabase::ReadCamera(int64_t camera_id) {
  Stmt s(db_, "SELECT camera_id, model, width, height, params, prior_focal_length FROM cameras "
              "WHERE camera_id=?",
         path_);
  s.Bind(1, camera_id);
  if (!s.Step()) return std::nullopt;
  ColmapCamera c;
  c.camera_id = s.Int(0);
  c.model = static_cast<int>(s.Int(1));
  c.width = s.Int(2);
  c.height = s.Int(3);
  c.params.resize(s.Bytes(4) / sizeof(double));
  if (!c.params.empty()) std::memcpy(c.params.data(), s.Blob(4), c.params.size() * sizeof(double));
  c.prior_focal_length = s.Int(5) != 0;
  return c;
}

std::optional<ColmapImage> ColmapDatabase::FindImage(const std::string& name) {
  Stmt s(db_, "SELECT image_id, name, camera_id FROM images WHERE name=?", path_);
  s.Bind(1, name);
  if (!s.Step()) return std::nullopt;
  return ColmapImage{s.Int(0), s.Text(1), s.Int(2)};
}

std::vector<ColmapImage> ColmapDatabase::ReadImages() {
  Stmt s(db_, "SELECT image_id, name, camera_id FROM images ORDER BY image_id", path_);
  std::vector<ColmapImage> out;
  while (s.Step()) out.push_back({s.Int(0), s.Text(1), s.Int(2)});
  return out;
}

int64_t ColmapDatabase::MaxImageId() {
  Stmt s(db_, "SELECT COALESCE(MAX(image_id), 0) FROM images", path_);
  s.Step();
  return s.Int(0);
}

void ColmapDatabase::WriteKeypoints(int64_t image_id, const std::vector<ColmapKeypoint>& kps) {
  static_assert(sizeof(ColmapKeypoint) == 6 * sizeof(float));
  Stmt s(db_, "INSERT OR REPLACE INTO keypoints(image_id, rows, cols, data) VALUES(?, ?, ?, ?)",
         path_);
  s.Bind(1, image_id).Bind(2, static_cast<int64_t>(kps.size())).Bind(3, 6);
  s.BindBlob(4, kps.data(), kps.size() * sizeof(ColmapKeypoint));
  s.Run();
}

std::vector<ColmapKeypoint> ColmapDatabase::ReadKeypoints(int64_t image_id) {
  Stmt s(db_, "SELECT rows, cols, data FROM keypoints WHERE image_id=?", path_);
  s.Bind(1, image_id);
  if (!s.Step()) return {};
  const int64_t rows = s.Int(0), cols = s.Int(1);
  if (rows < 0 || (cols != 2 && cols != 4 && cols != 6) ||
      s.Bytes(2) != static_cast<std::size_t>(rows * cols) * sizeof(float))
    throw DatabaseError(path_ + ": keypoints of image " + std::to_string(image_id) +
                        " are damaged (rows " + std::to_string(rows) + ", cols " +
                        std::to_string(cols) + ", " + std::to_string(s.Bytes(2)) + " bytes)");
  std::vector<float> raw(static_cast<std::size_t>(rows * cols));
  if (!raw.empty()) std::memcpy(raw.data(), s.Blob(2), raw.size() * sizeof(float));
  std::vector<ColmapKeypoint> out(static_cast<std::size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    const float* r = raw.data() + i * cols;
    ColmapKeypoint& k = out[i];
    k.x = r[0];
    k.y = r[1];
    if (cols == 4) {  // x, y, scale, orientation
      k.a11 = r[2] * std::cos(r[3]);
      k.a12 = -r[2] * std::sin(r[3]);
      k.a21 = r[2] * std::sin(r[3]);
      k.a22 = r[2] * std::cos(r[3]);
    } else if (cols == 6) {
      k.a11 = r[2];
      k.a12 = r[3];
      k.a21 = r[4];
      k.a22 = r[5];
    }
  }
  return out;
}

void ColmapDatabase::WriteDescriptors(int64_t image_id, const core::DescriptorMatrix& d) {
  if (d.type() != core::DescriptorType::kUint8)
    throw std::invalid_argument("COLMAP databases store uint8 descriptors only");
  Stmt s(db_, "INSERT OR REPLACE INTO descriptors(image_id, rows, cols, data) VALUES(?, ?, ?, ?)",
         path_);
  s.Bind(1, image_id).Bind(2, d.rows()).Bind(3, d.dim());
  s.BindBlob(4, d.bytes(), d.size_bytes());
  s.Run();
}

core::DescriptorMatrix ColmapDatabase::ReadDescriptors(int64_t image_id) {
  Stmt s(db_, "SELECT rows, cols, data FROM descriptors WHERE image_id=?", path_);
  s.Bind(1, image_id);
  if (!s.Step()) return core::DescriptorMatrix(core::DescriptorType::kUint8, 0, 128);
  const int64_t rows = s.Int(0), cols = s.Int(1);
  if (rows < 0 || cols <= 0 || cols > 65536 ||
      s.Bytes(2) != static_cast<std::size_t>(rows * cols))
    throw DatabaseError(path_ + ": descriptors of image " + std::to_string(image_id) +
                        " are damaged");
  core::DescriptorMatrix d(core::DescriptorType::kUint8, rows, static_cast<int32_t>(cols));
  if (rows > 0) std::memcpy(d.bytes(), s.Blob(2), d.size_bytes());
  return d;
}

bool ColmapDatabase::HasFeatures(int64_t image_id) {
  Stmt s(db_, "SELECT (SELECT count(*) FROM keypoints WHERE image_id=?1) + "
              "(SELECT count(*) FROM descriptors WHERE image_id=?1)",
         path_);
  s.Bind(1, image_id);
  s.Step();
  return s.Int(0) == 2;
}

int64_t ColmapDatabase::NumKeypoints(int64_t image_id) {
  Stmt s(db_, "SELECT rows FROM keypoints WHERE image_id=?", path_);
  s.Bind(1, image_id);
  return s.Step() ? s.Int(0) : 0;
}

namespace {

ColmapMatches OrderedMatches(int64_t id1, int64_t id2, const ColmapMatches& m) {
  if (id1 < id2) return m;
  ColmapMatches out(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) out[i] = {m[i][1], m[i][0]};
  return out;
}

ColmapMatches ReadMatchesBlob(const Stmt& s, int col, const std::string& what) {
  const int64_t rows = s.Int(col), cols = s.Int(col + 1);
  if (rows < 0 || (rows > 0 && cols != 2) ||
      s.Bytes(col + 2) != static_cast<std::size_t>(rows) * 2 * sizeof(uint32_t))
    throw DatabaseError(what + " are damaged");
  ColmapMatches m(static_cast<std::size_t>(rows));
  if (rows > 0) std::memcpy(m.data(), s.Blob(col + 2), m.size() * sizeof(m[0]));
  return m;
}

}  // namespace

void ColmapDatabase::WriteMatches(int64_t id1, int64_t id2, const ColmapMatches& matches) {
  const ColmapMatches m = OrderedMatches(id1, id2, matches);
  Stmt s(db_, "INSERT OR REPLACE INTO matches(pair_id, rows, cols, data) VALUES(?, ?, ?, ?)",
         path_);
  s.Bind(1, ColmapPairId(id1, id2)).Bind(2, static_cast<int64_t>(m.size())).Bind(3, 2);
  s.BindBlob(4, m.data(), m.size() * sizeof(m[0]));
  s.Run();
}

std::optional<ColmapMatches> ColmapDatabase::ReadMatches(int64_t id1, int64_t id2) {
  Stmt s(db_, "SELECT rows, cols, data FROM matches WHERE pair_id=?", path_);
  s.Bind(1, ColmapPairId(id1, id2));
  if (!s.Step()) return std::nullopt;
  ColmapMatches m = ReadMatchesBlob(s, 0, path_ + ": matches of pair " + std::to_string(id1) +
                                              "-" + std::to_string(id2));
  // Stored in ascending-id order; give them back in the order asked for.
  return id1 < id2 ? m : OrderedMatches(id2, id1, m);
}

void ColmapDatabase::WriteTwoViewGeometry(int64_t id1, int64_t id2,
                                          const TwoViewGeometryRecord& g) {
  const ColmapMatches m = OrderedMatches(id1, id2, g.inlier_matches);
  Stmt s(db_,
         "INSERT OR REPLACE INTO two_view_geometries(pair_id, rows, cols, data, config, F, E, H, "
         "qvec, tvec) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
         path_);
  s.Bind(1, ColmapPairId(id1, id2)).Bind(2, static_cast<int64_t>(m.size())).Bind(3, 2);
  s.BindBlob(4, m.data(), m.size() * sizeof(m[0]));
  s.Bind(5, static_cast<int64_t>(g.config));
  // Swapping the images inverts H and transposes F and E.
  std::array<double, 9> F = g.F, E = g.E, H = g.H;
  if (id1 > id2) {
    auto transpose = [](std::array<double, 9>& a) {
      std::swap(a[1], a[3]);
      std::swap(a[2], a[6]);
      std::swap(a[5], a[7]);
    };
    transpose(F);
    transpose(E);
    const auto& h = g.H;
    std::array<double, 9> inv{h[4] * h[8] - h[5] * h[7], h[2] * h[7] - h[1] * h[8],
                              h[1] * h[5] - h[2] * h[4], h[5] * h[6] - h[3] * h[8],
                              h[0] * h[8] - h[2] * h[6], h[2] * h[3] - h[0] * h[5],
                              h[3] * h[7] - h[4] * h[6], h[1] * h[6] - h[0] * h[7],
                              h[0] * h[4] - h[1] * h[3]};
    const double det = h[0] * inv[0] + h[1] * inv[3] + h[2] * inv[6];
    for (double& v : inv) v = det != 0 ? v / det : 0.0;
    H = inv;
  }
  if (!m.empty()) {
    const std::array<double, 4> qvec{1, 0, 0, 0};
    const std::array<double, 3> tvec{0, 0, 0};
    s.BindBlob(6, F.data(), sizeof(F)).BindBlob(7, E.data(), sizeof(E)).BindBlob(8, H.data(),
                                                                                  sizeof(H));
    s.BindBlob(9, qvec.data(), sizeof(qvec)).BindBlob(10, tvec.data(), sizeof(tvec));
  } else {
    for (int c = 6; c <= 10; ++c) s.BindBlob(c, nullptr, 0);
  }
  s.Run();
}

std::optional<TwoViewGeometryRecord> ColmapDatabase::ReadTwoViewGeometry(int64_t id1,
                                                                         int64_t id2) {
  Stmt s(db_, "SELECT rows, cols, data, config, F, E, H FROM two_view_geometries WHERE pair_id=?",
         path_);
  s.Bind(1, ColmapPairId(id1, id2));
  if (!s.Step()) return std::nullopt;
  TwoViewGeometryRecord g;
  g.inlier_matches = ReadMatchesBlob(s, 0, path_ + ": inlier matches of pair " +
                                               std::to_string(id1) + "-" + std::to_string(id2));
  if (id1 > id2) g.inlier_matches = OrderedMatches(id2, id1, g.inlier_matches);
  g.config = static_cast<TwoViewConfig>(s.Int(3));
  auto read = [&](int col, std::array<double, 9>& a) {
    if (s.Bytes(col) == sizeof(a)) std::memcpy(a.data(), s.Blob(col), sizeof(a));
    else if (s.Bytes(col) != 0) throw DatabaseError(path_ + ": a geometry matrix is damaged");
  };
  read(4, g.F);
  read(5, g.E);
  read(6, g.H);
  return g;
}

std::vector<int64_t> ColmapDatabase::GeometryPairIds() {
  Stmt s(db_, "SELECT pair_id FROM two_view_geometries ORDER BY pair_id", path_);
  std::vector<int64_t> out;
  while (s.Step()) out.push_back(s.Int(0));
  return out;
}

std::vector<ColmapDatabase::PairRow> ColmapDatabase::ReadPairRows() {
  Stmt s(db_,
         "SELECT g.pair_id, COALESCE(m.rows, 0), g.rows, g.config FROM two_view_geometries g "
         "LEFT JOIN matches m ON m.pair_id = g.pair_id ORDER BY g.pair_id",
         path_);
  std::vector<PairRow> out;
  while (s.Step())
    out.push_back({s.Int(0), s.Int(1), s.Int(2), static_cast<TwoViewConfig>(s.Int(3))});
  return out;
}

void ColmapDatabase::SetSetting(const std::string& key, const std::string& value) {
  Stmt s(db_, "INSERT OR REPLACE INTO featmatch_settings(key, value) VALUES(?, ?)", path_);
  s.Bind(1, key).Bind(2, value);
  s.Run();
}

std::optional<std::string> ColmapDatabase::GetSetting(const std::string& key) {
  Stmt check(db_, "SELECT count(*) FROM sqlite_master WHERE name='featmatch_settings'", path_);
  check.Step();
  if (check.Int(0) == 0) return std::nullopt;
  Stmt s(db_, "SELECT value FROM featmatch_settings WHERE key=?", path_);
  s.Bind(1, key);
  if (!s.Step()) return std::nullopt;
  return s.Text(0);
}

int64_t ColmapDatabase::CountRows(const std::string& table) {
  for (char ch : table)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'))
      throw std::invalid_argument("CountRows: bad table name");
  Stmt s(db_, "SELECT count(*) FROM " + table, path_);
  s.Step();
  return s.Int(0);
}

void ColmapDatabase::Checkpoint() { Exec("PRAGMA wal_checkpoint(TRUNCATE)"); }

}  // namespace fm::matcher
