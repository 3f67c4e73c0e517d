// The logo library: SQLite storage, the in-memory concatenated corpus, and the query.
#include "fm/matcher/logo_library.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <complex>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <unordered_map>

#include "fm/core/feature_io.h"
#include "fm/core/timer.h"
#include "fm/matcher/image.h"

namespace fm::matcher {

namespace fs = std::filesystem;

// "FMLG" in the SQLite header's application id field: tells a logo library from other databases.
constexpr int32_t kApplicationId = 0x464D4C47;
constexpr const char* kFormatName = "featmatch-logo-library";

bool LogoLibrarySettings::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (!sift.Check(why)) return false;
  if (max_logo_side < 32) return bad("max logo side must be >= 32 px");
  if (min_logo_features < 4) return bad("min logo features must be >= 4 (a homography needs 4)");
  if (pyramid_levels < 1 || pyramid_levels > 12) return bad("pyramid levels must be in [1, 12]");
  if (!(pyramid_scale > 1 && pyramid_scale <= 4)) return bad("pyramid scale must be in (1, 4]");
  return true;
}

bool LogoQueryOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (k < 2) return bad("k must be >= 2 (the per-logo ratio test needs a second neighbour)");
  if (!(ratio > 0 && ratio <= 1)) return bad("ratio must be in (0, 1]");
  if (max_candidates < 1) return bad("max candidates must be >= 1");
  if (max_instances < 1) return bad("max instances must be >= 1");
  if (min_inliers < 4) return bad("min inliers must be >= 4");
  if (!(min_confidence >= 0 && min_confidence <= 1)) return bad("min confidence must be in [0, 1]");
  if (!(threshold > 0 && threshold < 100)) return bad("threshold must be in (0, 100) px");
  if (max_iterations < 1) return bad("max iterations must be >= 1");
  if (!(same_point_px >= 0)) return bad("same point distance must be >= 0 px");
  if (!(max_anisotropy >= 1)) return bad("max anisotropy must be >= 1");
  if (!(min_side_px >= 0)) return bad("min side must be >= 0 px");
  if (!(max_scale_change >= 1)) return bad("max scale change must be >= 1");
  if (!(guided_ratio > 0 && guided_ratio <= 1)) return bad("guided ratio must be in (0, 1]");
  if (guided_min_matches < 2) return bad("guided min matches must be >= 2");
  if (!(guided_radius > 0 && guided_radius <= 1)) return bad("guided radius must be in (0, 1]");
  if (!(guided_min_evidence >= 0 && guided_min_evidence <= 1))
    return bad("guided min evidence must be in [0, 1]");
  if (top < 0) return bad("top must be >= 0");
  if (threads < 0) return bad("threads must be >= 0");
  return true;
}

double LogoConfidence(int inliers, double inlier_ratio) {
  // Logistic model fitted on the detections of the generated evaluation set with seed 101 (150
  // scenes, min confidence 0; the evaluation reports use other seeds): z = a + b * ln(inliers) +
  // c * inlier_ratio. See docs/logo_library.md.
  constexpr double a = -5.59, b = 3.52, c = -0.60;
  if (inliers <= 0) return 0.0;
  const double z = a + b * std::log(static_cast<double>(inliers)) + c * inlier_ratio;
  return 1.0 / (1.0 + std::exp(-z));
}

namespace {

// ---- SQLite helpers ---------------------------------------------------------------------------

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw LogoLibraryError(std::string("SQLite: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  void Bind(int i, int64_t v) { Check(sqlite3_bind_int64(stmt_, i, v)); }
  void Bind(int i, const std::string& v) {
    Check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void BindBlob(int i, const std::string& v) {
    Check(sqlite3_bind_blob64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT));
  }
  // true while there is a row.
  bool Step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw LogoLibraryError(std::string("SQLite: ") + sqlite3_errmsg(db_));
  }
  int64_t Int(int c) const { return sqlite3_column_int64(stmt_, c); }
  std::string Text(int c) const {
    const auto* t = sqlite3_column_text(stmt_, c);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<std::size_t>(sqlite3_column_bytes(stmt_, c)))
             : std::string();
  }
  const void* Blob(int c) const { return sqlite3_column_blob(stmt_, c); }
  std::size_t BlobSize(int c) const {
    return static_cast<std::size_t>(sqlite3_column_bytes(stmt_, c));
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK) throw LogoLibraryError(std::string("SQLite: ") + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw LogoLibraryError("SQLite: " + msg);
  }
}

// Rolls back unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { Exec(db_, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void Commit() {
    Exec(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

DbPtr OpenDb(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK)
    throw LogoLibraryError("cannot open logo library " + path + ": " +
                           (raw ? sqlite3_errmsg(raw) : "out of memory"));
  sqlite3_busy_timeout(raw, 5000);
  return db;
}

std::string NowUtc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json SettingsToJson(const LogoLibrarySettings& s) {
  return {{"sift", nlohmann::json::parse(s.sift.ToJson())},
          {"max_logo_side", s.max_logo_side},
          {"min_logo_features", s.min_logo_features},
          {"pyramid_levels", s.pyramid_levels},
          {"pyramid_scale", s.pyramid_scale}};
}

LogoLibrarySettings SettingsFromJson(const nlohmann::json& j) {
  LogoLibrarySettings s;
  const auto& f = j.at("sift");
  if (f.value("extractor", std::string()) != "opencv-sift")
    throw LogoLibraryError("unknown extractor in library settings");
  s.sift.max_features = f.at("max_features").get<int>();
  s.sift.octave_layers = f.at("octave_layers").get<int>();
  s.sift.contrast_threshold = f.at("contrast_threshold").get<double>();
  s.sift.edge_threshold = f.at("edge_threshold").get<double>();
  s.sift.sigma = f.at("sigma").get<double>();
  s.sift.root_sift = f.at("root_sift").get<bool>();
  s.sift.max_image_size = f.at("max_image_size").get<int>();
  s.max_logo_side = j.at("max_logo_side").get<int>();
  s.min_logo_features = j.at("min_logo_features").get<int>();
  s.pyramid_levels = j.at("pyramid_levels").get<int>();
  // Libraries written before the step was a setting halved the logo between levels.
  s.pyramid_scale = j.value("pyramid_scale", 2.0);
  return s;
}

// ---- geometry --------------------------------------------------------------------------------

std::array<cv::Point2f, 4> MapCorners(const cv::Matx33d& h, double w, double hgt) {
  const double xs[4] = {0, w, w, 0}, ys[4] = {0, 0, hgt, hgt};
  std::array<cv::Point2f, 4> q;
  for (int i = 0; i < 4; ++i) {
    const double X = h(0, 0) * xs[i] + h(0, 1) * ys[i] + h(0, 2);
    const double Y = h(1, 0) * xs[i] + h(1, 1) * ys[i] + h(1, 2);
    const double W = h(2, 0) * xs[i] + h(2, 1) * ys[i] + h(2, 2);
    q[i] = cv::Point2f(static_cast<float>(X / W), static_cast<float>(Y / W));
  }
  return q;
}

double SignedArea(const std::array<cv::Point2f, 4>& q) {
  double s = 0;
  for (int i = 0; i < 4; ++i) {
    const auto& a = q[i];
    const auto& b = q[(i + 1) % 4];
    s += static_cast<double>(a.x) * b.y - static_cast<double>(b.x) * a.y;
  }
  return 0.5 * s;
}

// A homography that a flat logo seen by a camera can produce: maps the logo in front of the
// camera (positive w at every corner), keeps orientation, gives a convex outline with sides of
// a visible size, and does not squash the logo more than max_anisotropy at its centre.
bool PlausibleHomography(const cv::Matx33d& h, double w, double hgt,
                         const LogoQueryOptions& o, double scene_area,
                         std::array<cv::Point2f, 4>* quad) {
  const double xs[4] = {0, w, w, 0}, ys[4] = {0, 0, hgt, hgt};
  for (int i = 0; i < 4; ++i)
    if (h(2, 0) * xs[i] + h(2, 1) * ys[i] + h(2, 2) <= 0) return false;
  *quad = MapCorners(h, w, hgt);
  for (const auto& p : *quad)
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) return false;
  const double area = SignedArea(*quad);
  if (!(area > 0)) return false;
  if (area > 4.0 * scene_area) return false;
  std::vector<cv::Point2f> contour(quad->begin(), quad->end());
  if (!cv::isContourConvex(contour)) return false;
  for (int i = 0; i < 4; ++i)
    if (cv::norm((*quad)[i] - (*quad)[(i + 1) % 4]) < o.min_side_px) return false;
  // Jacobian of the homography at the logo centre.
  const double cx = w / 2, cy = hgt / 2;
  const double W = h(2, 0) * cx + h(2, 1) * cy + h(2, 2);
  const double X = (h(0, 0) * cx + h(0, 1) * cy + h(0, 2)) / W;
  const double Y = (h(1, 0) * cx + h(1, 1) * cy + h(1, 2)) / W;
  cv::Matx22d J((h(0, 0) - h(2, 0) * X) / W, (h(0, 1) - h(2, 1) * X) / W,
                (h(1, 0) - h(2, 0) * Y) / W, (h(1, 1) - h(2, 1) * Y) / W);
  cv::Mat s;
  cv::SVD::compute(cv::Mat(J), s, cv::SVD::NO_UV);
  const double s1 = s.at<double>(0), s2 = s.at<double>(1);
  if (!(s2 > 1e-9) || s1 / s2 > o.max_anisotropy) return false;
  // Local area scale (Jacobian determinant) at the corners: a flat logo seen by a camera does
  // not grow several times larger from one corner to the other. A homography fitted to matches
  // bunched in one part of the logo can pass the tests above and still extrapolate wildly.
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (int i = 0; i < 4; ++i) {
    const double Wi = h(2, 0) * xs[i] + h(2, 1) * ys[i] + h(2, 2);
    const double det = cv::determinant(h) / (Wi * Wi * Wi);
    const double scale = std::sqrt(std::abs(det));
    lo = std::min(lo, scale);
    hi = std::max(hi, scale);
  }
  if (!(lo > 0) || hi / lo > o.max_scale_change) return false;
  return true;
}

// Features of one logo image. A BGRA image (a logo with transparency) is seen in scenes over
// backgrounds it does not know: its features are taken from it laid over white and over black,
// and only where it is at least half opaque, so that both polarities of its outline are known
// and no feature describes the backdrop alone. Duplicated points are one point to the query's
// ratio test (same_point_px).
core::Features ExtractLogoFeatures(const cv::Mat& img, const SiftOptions& sift) {
  if (img.channels() != 4) return ExtractFeatures(img, sift);
  std::vector<cv::Mat> ch;
  cv::split(img, ch);
  const cv::Mat alpha = ch[3];
  cv::Mat bgr;
  cv::merge(std::vector<cv::Mat>{ch[0], ch[1], ch[2]}, bgr);
  cv::Mat mask;
  cv::threshold(alpha, mask, 127, 255, cv::THRESH_BINARY);
  if (cv::countNonZero(mask) == 0) return core::Features{};
  cv::Mat a, b, one_minus;
  alpha.convertTo(a, CV_32F, 1.0 / 255);
  cv::cvtColor(a, a, cv::COLOR_GRAY2BGR);
  bgr.convertTo(b, CV_32FC3);
  one_minus = cv::Scalar::all(1.0) - a;
  core::Features out;
  for (const double backdrop : {255.0, 0.0}) {
    cv::Mat comp = b.mul(a) + one_minus * backdrop, comp8;
    comp.convertTo(comp8, CV_8UC3);
    core::Features f = ExtractFeatures(comp8, sift, mask);
    if (out.size() == 0) {
      out = std::move(f);
      continue;
    }
    for (const auto& kp : f.keypoints) out.keypoints.push_back(kp);
    if (f.size() > 0) out.descriptors.Append(f.descriptors);
  }
  return out;
}

// Squared L2 distance between row i of `a` and row j of `b` (same type and dim).
double DescriptorDistance2(const core::DescriptorMatrix& a, int64_t i,
                           const core::DescriptorMatrix& b, int64_t j) {
  const int32_t dim = a.dim();
  if (a.type() == core::DescriptorType::kUint8) {
    const uint8_t* x = a.u8() + i * dim;
    const uint8_t* y = b.u8() + j * dim;
    int32_t sum = 0;
    for (int32_t c = 0; c < dim; ++c) {
      const int32_t t = static_cast<int32_t>(x[c]) - static_cast<int32_t>(y[c]);
      sum += t * t;
    }
    return sum;
  }
  const float* x = a.f32() + i * dim;
  const float* y = b.f32() + j * dim;
  double sum = 0;
  for (int32_t c = 0; c < dim; ++c) {
    const double t = static_cast<double>(x[c]) - y[c];
    sum += t * t;
  }
  return sum;
}

bool InsideQuad(const std::array<cv::Point2f, 4>& q, float x, float y) {
  std::vector<cv::Point2f> c(q.begin(), q.end());
  return cv::pointPolygonTest(c, cv::Point2f(x, y), false) >= 0;
}

double QuadIou(const std::array<cv::Point2f, 4>& a, const std::array<cv::Point2f, 4>& b) {
  std::vector<cv::Point2f> pa(a.begin(), a.end()), pb(b.begin(), b.end()), inter;
  const double ia = std::abs(cv::contourArea(pa)), ib = std::abs(cv::contourArea(pb));
  if (ia <= 0 || ib <= 0) return 0;
  const float i = cv::intersectConvexConvex(pa, pb, inter, true);
  if (i <= 0) return 0;
  return i / (ia + ib - i);
}

}  // namespace

// ---- the library -----------------------------------------------------------------------------

struct LogoLibrary::Impl {
  std::string path;
  DbPtr db;
  LogoLibrarySettings settings;
  std::vector<LogoInfo> logos;              // ordered by id
  std::vector<core::Features> features;     // parallel to logos
  std::vector<std::pair<std::string, std::string>> damaged;  // left out by Open: name, reason
  // The concatenated corpus: every logo's descriptors, in the order of `logos`.
  core::DescriptorMatrix corpus;
  std::vector<int32_t> row_logo;            // corpus row -> index into `logos`
  std::vector<int32_t> row_local;           // corpus row -> keypoint index in that logo
  std::unique_ptr<core::KnnBackend> backend;
  BackendFactory backend_factory;  // called at the next search, then dropped
  bool corpus_registered = false;  // `corpus` is registered with `backend` (SetCorpus)

  void AppendToCorpus(std::size_t logo_index) {
    corpus_registered = false;
    const auto& d = features[logo_index].descriptors;
    if (corpus.rows() == 0 && corpus.dim() == 0) {
      corpus = d;
    } else {
      corpus.Append(d);
    }
    for (int64_t r = 0; r < d.rows(); ++r) {
      row_logo.push_back(static_cast<int32_t>(logo_index));
      row_local.push_back(static_cast<int32_t>(r));
    }
  }
  void RebuildCorpus() {
    corpus_registered = false;
    corpus = core::DescriptorMatrix();
    row_logo.clear();
    row_local.clear();
    for (std::size_t i = 0; i < logos.size(); ++i) AppendToCorpus(i);
  }
  std::size_t IndexOfId(int64_t id) const {
    for (std::size_t i = 0; i < logos.size(); ++i)
      if (logos[i].id == id) return i;
    throw LogoLibraryError("no logo with id " + std::to_string(id) + " in " + path);
  }
};

LogoLibrary::LogoLibrary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LogoLibrary::LogoLibrary(LogoLibrary&&) noexcept = default;
LogoLibrary& LogoLibrary::operator=(LogoLibrary&&) noexcept = default;
LogoLibrary::~LogoLibrary() = default;

const std::string& LogoLibrary::path() const { return impl_->path; }
const LogoLibrarySettings& LogoLibrary::settings() const { return impl_->settings; }

LogoLibrary LogoLibrary::Create(const std::string& path, const LogoLibrarySettings& settings) {
  std::string why;
  if (!settings.Check(&why)) throw std::invalid_argument("logo library settings: " + why);
  std::error_code ec;
  if (fs::exists(path, ec))
    throw LogoLibraryError("cannot create logo library " + path + ": the file already exists");
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->settings = settings;
  try {
    impl->db = OpenDb(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    Transaction t(impl->db.get());
    Exec(impl->db.get(),
         ("PRAGMA application_id = " + std::to_string(kApplicationId) + ";" +
          "PRAGMA user_version = " + std::to_string(kLogoLibrarySchemaVersion) + ";")
             .c_str());
    Exec(impl->db.get(),
         "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
         "CREATE TABLE logos("
         "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
         "  name TEXT NOT NULL UNIQUE,"
         "  source TEXT NOT NULL,"
         "  width INTEGER NOT NULL,"
         "  height INTEGER NOT NULL,"
         "  num_features INTEGER NOT NULL,"
         "  descriptor_type TEXT NOT NULL,"
         "  descriptor_dim INTEGER NOT NULL,"
         "  added TEXT NOT NULL,"
         "  features BLOB NOT NULL);");
    const std::pair<std::string, std::string> rows[] = {
        {"format", kFormatName},
        {"schema_version", std::to_string(kLogoLibrarySchemaVersion)},
        {"settings", SettingsToJson(settings).dump()},
        {"created", NowUtc()}};
    for (const auto& [k, v] : rows) {
      Stmt s(impl->db.get(), "INSERT INTO meta(key, value) VALUES (?, ?)");
      s.Bind(1, k);
      s.Bind(2, v);
      s.Step();
    }
    t.Commit();
  } catch (...) {
    impl->db.reset();
    fs::remove(path, ec);
    throw;
  }
  return LogoLibrary(std::move(impl));
}

LogoLibrary LogoLibrary::Open(const std::string& path, bool skip_damaged) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw LogoLibraryError(path + " is a folder, not a logo library file");
  if (!fs::is_regular_file(path, ec))
    throw LogoLibraryError("logo library " + path + " does not exist (add a logo to create it)");
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->db = OpenDb(path, SQLITE_OPEN_READWRITE);
  sqlite3* db = impl->db.get();
  const std::string not_lib = path + " is not a featmatch logo library";
  try {
    Stmt app(db, "PRAGMA application_id");
    if (!app.Step() || app.Int(0) != kApplicationId) throw LogoLibraryError(not_lib);
    Stmt meta(db, "SELECT key, value FROM meta");
    std::map<std::string, std::string> m;
    while (meta.Step()) m[meta.Text(0)] = meta.Text(1);
    if (m["format"] != kFormatName) throw LogoLibraryError(not_lib);
    const int version = std::atoi(m["schema_version"].c_str());
    if (version < 1 || version > kLogoLibrarySchemaVersion)
      throw LogoLibraryError(path + ": logo library schema version " + m["schema_version"] +
                             " is not supported by this featmatch (it reads up to version " +
                             std::to_string(kLogoLibrarySchemaVersion) + ")");
    try {
      impl->settings = SettingsFromJson(nlohmann::json::parse(m["settings"]));
    } catch (const std::exception& e) {
      throw LogoLibraryError(path + ": damaged settings in the logo library (" + e.what() + ")");
    }
    Stmt s(db,
           "SELECT id, name, source, width, height, num_features, added, features FROM logos "
           "ORDER BY id");
    while (s.Step()) {
      LogoInfo info;
      info.id = s.Int(0);
      info.name = s.Text(1);
      info.source = s.Text(2);
      info.width = static_cast<int32_t>(s.Int(3));
      info.height = static_cast<int32_t>(s.Int(4));
      info.num_features = s.Int(5);
      info.added = s.Text(6);
      core::Features f;
      std::string damage;
      try {
        f = core::DecodeFeatures(s.Blob(7), s.BlobSize(7), nullptr,
                                 "features of logo '" + info.name + "'");
        if (f.size() != info.num_features || f.descriptors.rows() != f.size())
          damage = "logo '" + info.name + "' has inconsistent features";
        else if (!impl->features.empty() &&
                 (f.descriptors.type() != impl->features[0].descriptors.type() ||
                  f.descriptors.dim() != impl->features[0].descriptors.dim()))
          damage = "logo '" + info.name + "' has descriptors of another type than the rest";
      } catch (const core::FeatureFileError& e) {
        damage = e.what();
      }
      if (!damage.empty()) {
        if (!skip_damaged) throw LogoLibraryError(path + ": " + damage);
        impl->damaged.emplace_back(info.name, damage);
        continue;
      }
      impl->logos.push_back(std::move(info));
      impl->features.push_back(std::move(f));
    }
  } catch (const LogoLibraryError& e) {
    // SQLite says "file is not a database" for foreign or damaged files; say it our way.
    const std::string msg = e.what();
    if (msg.find("not a database") != std::string::npos || msg.find("no such table") !=
                                                               std::string::npos)
      throw LogoLibraryError(not_lib + " (" + msg + ")");
    throw;
  }
  impl->RebuildCorpus();
  return LogoLibrary(std::move(impl));
}

LogoLibrary LogoLibrary::OpenOrCreate(const std::string& path,
                                      const LogoLibrarySettings& settings) {
  std::error_code ec;
  if (fs::exists(path, ec)) return Open(path);
  return Create(path, settings);
}

LogoInfo LogoLibrary::Add(const std::string& name, const cv::Mat& image,
                          const std::string& source) {
  Impl& d = *impl_;
  if (name.find_first_not_of(" \t\r\n") == std::string::npos)
    throw LogoLibraryError("a logo needs a name (one that is not only spaces)");
  if (std::isspace(static_cast<unsigned char>(name.front())) ||
      std::isspace(static_cast<unsigned char>(name.back())))
    throw LogoLibraryError("the logo name '" + name + "' starts or ends with a space");
  for (const auto& l : d.logos)
    if (l.name == name)
      throw LogoLibraryError("a logo named '" + name + "' is already in " + d.path +
                             " (remove it first or choose another --name)");
  for (const auto& b : d.damaged)
    if (b.first == name)
      throw LogoLibraryError("a damaged logo named '" + name + "' is in " + d.path +
                             " (remove it first or choose another --name)");
  if (image.empty() || image.depth() != CV_8U ||
      (image.channels() != 1 && image.channels() != 3 && image.channels() != 4))
    throw LogoLibraryError("logo '" + name +
                           "': the image is empty or not 8-bit gray, BGR or BGRA");
  cv::Mat img = image;
  const int side = std::max(img.cols, img.rows);
  if (side > d.settings.max_logo_side) {
    const double f = static_cast<double>(d.settings.max_logo_side) / side;
    cv::resize(image, img, cv::Size(), f, f, cv::INTER_AREA);
  }
  core::Features f = ExtractLogoFeatures(img, d.settings.sift);
  const int64_t base_features = f.size();
  if (base_features < d.settings.min_logo_features)
    throw LogoLibraryError("logo '" + name + "' has too few features: " +
                           std::to_string(base_features) + " SIFT features, at least " +
                           std::to_string(d.settings.min_logo_features) +
                           " are needed (use a larger or more detailed image)");
  // Shrunk copies, features mapped back to the full-size logo.
  // Every level is shrunk from the full-size image (no accumulated resampling).
  for (int l = 1; l < d.settings.pyramid_levels; ++l) {
    const double shrink = std::pow(d.settings.pyramid_scale, -l);
    const cv::Size size(std::max(1, static_cast<int>(std::lround(img.cols * shrink))),
                        std::max(1, static_cast<int>(std::lround(img.rows * shrink))));
    if (size.width < 48 || size.height < 24) break;
    cv::Mat level;
    cv::resize(img, level, size, 0, 0, cv::INTER_AREA);
    const double sx = static_cast<double>(img.cols) / level.cols;
    const double sy = static_cast<double>(img.rows) / level.rows;
    core::Features lf = ExtractLogoFeatures(level, d.settings.sift);
    if (lf.size() == 0) continue;
    for (auto& kp : lf.keypoints) {
      // Pixel centres: x_full + 0.5 = (x_level + 0.5) * s.
      kp.x = static_cast<float>((kp.x + 0.5) * sx - 0.5);
      kp.y = static_cast<float>((kp.y + 0.5) * sy - 0.5);
      kp.size = static_cast<float>(kp.size * 0.5 * (sx + sy));
      f.keypoints.push_back(kp);
    }
    f.descriptors.Append(lf.descriptors);
  }
  if (!d.features.empty() && (f.descriptors.type() != d.features[0].descriptors.type() ||
                              f.descriptors.dim() != d.features[0].descriptors.dim()))
    throw LogoLibraryError("logo '" + name + "': descriptors differ from the library's");
  LogoInfo info;
  info.name = name;
  info.source = source;
  info.width = img.cols;
  info.height = img.rows;
  info.num_features = f.size();
  info.added = NowUtc();
  const std::string blob = core::EncodeFeatures(f);
  {
    Transaction t(d.db.get());
    Stmt s(d.db.get(),
           "INSERT INTO logos(name, source, width, height, num_features, descriptor_type, "
           "descriptor_dim, added, features) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    s.Bind(1, info.name);
    s.Bind(2, info.source);
    s.Bind(3, static_cast<int64_t>(info.width));
    s.Bind(4, static_cast<int64_t>(info.height));
    s.Bind(5, info.num_features);
    s.Bind(6, std::string(core::DescriptorTypeName(f.descriptors.type())));
    s.Bind(7, static_cast<int64_t>(f.descriptors.dim()));
    s.Bind(8, info.added);
    s.BindBlob(9, blob);
    try {
      s.Step();
    } catch (const LogoLibraryError& e) {
      throw LogoLibraryError("cannot add logo '" + name + "' to " + d.path + ": " + e.what());
    }
    info.id = sqlite3_last_insert_rowid(d.db.get());
    t.Commit();
  }
  // Memory is updated only after the commit; a failure above leaves both as they were.
  d.logos.push_back(info);
  d.features.push_back(std::move(f));
  d.AppendToCorpus(d.logos.size() - 1);
  return info;
}

LogoInfo LogoLibrary::AddFile(const std::string& image_path, const std::string& name) {
  cv::Mat img;
  try {
    img = LoadGrayImage(image_path);
  } catch (const ImageError& e) {
    throw LogoLibraryError(e.what());
  }
  // A logo with transparency keeps it (see ExtractLogoFeatures).
  const cv::Mat full = cv::imread(image_path, cv::IMREAD_UNCHANGED);
  if (full.channels() == 4 && full.depth() == CV_8U && full.size() == img.size()) img = full;
  const std::string n = name.empty() ? fs::path(image_path).stem().string() : name;
  return Add(n, img, image_path);
}

bool LogoLibrary::Remove(const std::string& name) {
  Impl& d = *impl_;
  auto it = std::find_if(d.logos.begin(), d.logos.end(),
                         [&](const LogoInfo& l) { return l.name == name; });
  auto bad = std::find_if(d.damaged.begin(), d.damaged.end(),
                          [&](const auto& b) { return b.first == name; });
  if (it == d.logos.end() && bad == d.damaged.end()) return false;
  {
    Transaction t(d.db.get());
    Stmt s(d.db.get(), "DELETE FROM logos WHERE name = ?");
    s.Bind(1, name);
    s.Step();
    t.Commit();
  }
  if (it == d.logos.end()) {  // a damaged logo: never in the corpus
    d.damaged.erase(bad);
    return true;
  }
  const auto i = static_cast<std::size_t>(it - d.logos.begin());
  d.logos.erase(d.logos.begin() + static_cast<std::ptrdiff_t>(i));
  d.features.erase(d.features.begin() + static_cast<std::ptrdiff_t>(i));
  d.RebuildCorpus();
  return true;
}

std::vector<LogoInfo> LogoLibrary::List() const { return impl_->logos; }
std::vector<std::pair<std::string, std::string>> LogoLibrary::Damaged() const {
  return impl_->damaged;
}
int64_t LogoLibrary::size() const { return static_cast<int64_t>(impl_->logos.size()); }
int64_t LogoLibrary::num_descriptors() const { return impl_->corpus.rows(); }

const core::Features& LogoLibrary::LogoFeatures(int64_t logo_id) const {
  return impl_->features[impl_->IndexOfId(logo_id)];
}

void LogoLibrary::SetBackend(std::unique_ptr<core::KnnBackend> backend) {
  impl_->backend = std::move(backend);
  impl_->backend_factory = nullptr;
  impl_->corpus_registered = false;
}

void LogoLibrary::SetBackendFactory(BackendFactory factory) {
  impl_->backend_factory = std::move(factory);
}

core::KnnBackend& LogoLibrary::backend() {
  if (!impl_->backend) impl_->backend = CreateKnnBackend(BackendOptions{});
  return *impl_->backend;
}

core::Features LogoLibrary::ExtractSceneFeatures(const cv::Mat& scene) const {
  if (scene.empty()) throw LogoLibraryError("the scene image is empty");
  return ExtractFeatures(scene, impl_->settings.sift);
}

LogoQueryResult LogoLibrary::QueryImage(const cv::Mat& scene, const LogoQueryOptions& options,
                                        const std::atomic<bool>* cancel) {
  core::ThrowIfCancelled(cancel);
  core::Stopwatch sw;
  core::Features f = ExtractSceneFeatures(scene);
  const double ms = sw.ElapsedMs();
  LogoQueryResult r = Query(f, options, cancel);
  r.extract_ms = ms;
  return r;
}

LogoQueryResult LogoLibrary::Query(const core::Features& scene, const LogoQueryOptions& options,
                                   const std::atomic<bool>* cancel) {
  std::string why;
  if (!options.Check(&why)) throw std::invalid_argument("logo query options: " + why);
  Impl& d = *impl_;
  LogoQueryResult r;
  r.scene_features = scene.size();
  r.library_descriptors = d.corpus.rows();
  if (d.corpus.rows() == 0 || scene.size() == 0) return r;
  if (scene.descriptors.type() != d.corpus.type() || scene.descriptors.dim() != d.corpus.dim())
    throw LogoLibraryError(std::string("scene descriptors (") +
                           core::DescriptorTypeName(scene.descriptors.type()) + ", " +
                           std::to_string(scene.descriptors.dim()) +
                           ") do not match the library's (" +
                           core::DescriptorTypeName(d.corpus.type()) + ", " +
                           std::to_string(d.corpus.dim()) + ")");
  if (d.backend_factory) {
    const BackendFactory factory = std::move(d.backend_factory);
    d.backend_factory = nullptr;
    auto made = factory(SearchWorkOf(scene.descriptors, d.corpus));
    if (made) {
      d.backend = std::move(made);
      d.corpus_registered = false;
    } else if (!d.backend) {
      throw std::logic_error("the backend factory made no backend");
    }
  }
  core::KnnBackend& be = backend();
  r.backend = be.description();

  // 1. One search of every scene descriptor against the whole library.
  core::Stopwatch sw;
  core::KnnParams p;
  // Past the library's size the neighbours are padding: one slot of it is kept (the list then
  // ends short, so a logo seen once is known to have no second point, as with any larger k),
  // the rest would only cost memory (k = 10^6 on a 1446-descriptor library took 101 s here).
  p.k = std::min<int64_t>(options.k, d.corpus.rows() + 1);
  p.metric = core::Metric::kL2Squared;
  p.threads = options.threads;
  p.cancel = cancel;
  core::ThrowIfCancelled(cancel);
  // The library is registered with the backend once (a GPU keeps it resident) and searched by
  // every scene after that; adding or removing a logo registers it again.
  if (!d.corpus_registered) {
    be.SetCorpus(d.corpus);
    d.corpus_registered = true;
  }
  const core::KnnResult knn = be.SearchCorpus(scene.descriptors, p);
  r.knn_ms = sw.ElapsedMs();
  core::ThrowIfCancelled(cancel);

  // 2. Per-logo candidates: for each scene feature, its nearest row in each logo that appears
  // among its k neighbours, kept when nearest / second nearest in the same logo passes the
  // ratio test. A logo seen once in the list has its second nearest at or beyond the k-th
  // neighbour, so the k-th distance bounds the ratio from above (the test stays conservative).
  sw.Reset();
  const int64_t k = knn.k;
  std::unordered_map<int32_t, std::vector<core::Match>> per_logo;
  std::vector<int32_t> seen_logo;
  std::vector<float> first, second;
  std::vector<int64_t> first_row;
  for (int64_t q = 0; q < knn.rows; ++q) {
    seen_logo.clear();
    first.clear();
    second.clear();
    first_row.clear();
    float kth = std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < k; ++j) {
      const int64_t row = knn.index(q, j);
      if (row < 0) break;
      const float dist = knn.distance(q, j);
      kth = dist;
      const int32_t logo = d.row_logo[static_cast<std::size_t>(row)];
      auto it = std::find(seen_logo.begin(), seen_logo.end(), logo);
      if (it == seen_logo.end()) {
        seen_logo.push_back(logo);
        first.push_back(dist);
        second.push_back(std::numeric_limits<float>::infinity());
        first_row.push_back(row);
      } else {
        const auto i = static_cast<std::size_t>(it - seen_logo.begin());
        if (!std::isinf(second[i])) continue;
        // A copy of the same logo point (from another pyramid level) is no rival.
        const auto& kps = d.features[static_cast<std::size_t>(logo)].keypoints;
        const auto& a =
            kps[static_cast<std::size_t>(d.row_local[static_cast<std::size_t>(first_row[i])])];
        const auto& b = kps[static_cast<std::size_t>(d.row_local[static_cast<std::size_t>(row)])];
        if (std::hypot(a.x - b.x, a.y - b.y) <= options.same_point_px) continue;
        second[i] = dist;
      }
    }
    const bool full = knn.index(q, k - 1) >= 0;
    for (std::size_t i = 0; i < seen_logo.size(); ++i) {
      float d2 = second[i];
      if (std::isinf(d2) && full) d2 = kth;
      const float n1 = core::NaturalDistance(first[i], core::Metric::kL2Squared);
      const float n2 = core::NaturalDistance(d2, core::Metric::kL2Squared);
      const float ratio = std::isinf(n2) ? 0.0f : (n2 > 0 ? n1 / n2 : 1.0f);
      if (ratio > options.ratio) continue;
      core::Match m;
      m.query = d.row_local[static_cast<std::size_t>(first_row[i])];
      m.train = static_cast<int32_t>(q);
      m.image = seen_logo[i];
      m.distance = n1;
      m.ratio = ratio;
      per_logo[seen_logo[i]].push_back(m);
    }
  }
  std::vector<std::pair<int32_t, std::size_t>> ranked;
  for (const auto& [logo, ms] : per_logo)
    if (static_cast<int>(ms.size()) >= options.min_inliers) ranked.emplace_back(logo, ms.size());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  });
  if (ranked.size() > static_cast<std::size_t>(options.max_candidates))
    ranked.resize(static_cast<std::size_t>(options.max_candidates));
  r.candidates_ms = sw.ElapsedMs();

  // 3. Verification: a homography per candidate logo, repeated on the matches left over to find
  // further instances.
  sw.Reset();
  const double scene_area = std::max(1.0, static_cast<double>(scene.image_width) *
                                              static_cast<double>(scene.image_height));
  VerifyOptions vo;
  vo.model = GeometryModel::kHomography;
  vo.method = options.usac;
  vo.threshold = options.threshold;
  vo.max_iterations = options.max_iterations;
  vo.min_inliers = options.min_inliers;
  // Inliers as they come, each keypoint once (below), with the outline's plausibility: counted
  // at distinct points of the scene, `logos eval --seed 1 --scenes 400` lost two logos under
  // 80 px wide (top-1 95.3 -> 94.9 %).
  vo.distinct_points = false;
  vo.max_nfa = 0;  // the same: its own rules decide
  // One instance: a homography from `matches`, plausible for a flat logo, and its inliers with
  // each logo keypoint and each scene keypoint counted once (several scene features matched to
  // one logo feature, or the reverse, are one piece of evidence).
  struct Instance {
    cv::Matx33d H;
    std::array<cv::Point2f, 4> quad;
    std::vector<uint8_t> inlier_mask;  // parallel to the matches
    std::vector<core::Match> in;       // distinct inliers
  };
  auto fit_instance = [&](int32_t logo,
                          const std::vector<core::Match>& matches) -> std::optional<Instance> {
    const LogoInfo& info = d.logos[static_cast<std::size_t>(logo)];
    const core::Features& lf = d.features[static_cast<std::size_t>(logo)];
    Verification v = VerifyMatches(lf.keypoints, scene.keypoints, matches, vo);
    if (!v.verified || v.matrix.empty()) return std::nullopt;
    Instance inst;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) inst.H(a, b) = v.matrix.at<double>(a, b);
    if (!PlausibleHomography(inst.H, info.width, info.height, options, scene_area, &inst.quad))
      return std::nullopt;
    inst.inlier_mask = v.inliers;
    std::vector<int32_t> used_logo, used_scene;
    for (std::size_t i = 0; i < matches.size(); ++i) {
      if (!v.inliers[i]) continue;
      const auto& m = matches[i];
      if (std::find(used_logo.begin(), used_logo.end(), m.query) != used_logo.end()) continue;
      if (std::find(used_scene.begin(), used_scene.end(), m.train) != used_scene.end()) continue;
      used_logo.push_back(m.query);
      used_scene.push_back(m.train);
      inst.in.push_back(m);
    }
    return inst;
  };
  std::vector<LogoDetection> found;
  // Adds the detection of an instance when it has enough inliers and confidence.
  auto add_detection = [&](int32_t logo, Instance& inst, std::size_t num_matches) {
    const int inliers = static_cast<int>(inst.in.size());
    if (inliers < options.min_inliers) return false;
    const LogoInfo& info = d.logos[static_cast<std::size_t>(logo)];
    LogoDetection det;
    det.name = info.name;
    det.logo_id = info.id;
    det.inliers = inliers;
    det.candidates = static_cast<int>(num_matches);
    det.inlier_ratio = static_cast<double>(inliers) / static_cast<double>(num_matches);
    det.confidence = LogoConfidence(inliers, det.inlier_ratio);
    det.quad = inst.quad;
    det.homography = inst.H;
    det.matches = inst.in;
    if (det.confidence < options.min_confidence) return false;
    found.push_back(std::move(det));
    return true;
  };
  for (const auto& [logo, count] : ranked) {
    core::ThrowIfCancelled(cancel);
    std::vector<core::Match> remaining = per_logo[logo];
    for (int inst = 0; inst < options.max_instances; ++inst) {
      if (static_cast<int>(remaining.size()) < options.min_inliers) break;
      std::optional<Instance> fit = fit_instance(logo, remaining);
      if (!fit) break;
      // Leave out the inliers and every match that lands inside this instance's outline.
      std::vector<core::Match> rest;
      for (std::size_t i = 0; i < remaining.size(); ++i) {
        if (fit->inlier_mask[i]) continue;
        const auto& kp = scene.keypoints[static_cast<std::size_t>(remaining[i].train)];
        if (InsideQuad(fit->quad, kp.x, kp.y)) continue;
        rest.push_back(remaining[i]);
      }
      add_detection(logo, *fit, remaining.size());
      remaining.swap(rest);
    }
  }

  // 4. The guided pass (see LogoQueryOptions::guided), for the matches of each logo that no
  // detection of that logo covers.
  if (options.guided) {
    std::vector<std::pair<int32_t, std::size_t>> guided;
    for (const auto& [logo, ms] : per_logo)
      if (static_cast<int>(ms.size()) >= options.guided_min_matches)
        guided.emplace_back(logo, ms.size());
    std::sort(guided.begin(), guided.end(), [](const auto& a, const auto& b) {
      return a.second > b.second || (a.second == b.second && a.first < b.first);
    });
    if (guided.size() > static_cast<std::size_t>(options.max_candidates))
      guided.resize(static_cast<std::size_t>(options.max_candidates));
    constexpr double kScaleTolerance = 1.7;  // keypoint size ratio vs the hypothesis' scale
    constexpr std::size_t kMaxSeeds = 64;    // strongest ratio-test matches tried as pairs
    constexpr double kAngleTolerance = 30;   // keypoint angle vs the hypothesis' rotation, deg
    for (const auto& [logo, count] : guided) {
      core::ThrowIfCancelled(cancel);
      const LogoInfo& info = d.logos[static_cast<std::size_t>(logo)];
      const auto& lk = d.features[static_cast<std::size_t>(logo)].keypoints;
      std::vector<std::array<cv::Point2f, 4>> taken;
      for (const auto& det : found)
        if (det.logo_id == info.id) taken.push_back(det.quad);
      auto uncovered = [&](const std::vector<core::Match>& ms) {
        std::vector<core::Match> out;
        for (const auto& m : ms) {
          const auto& kp = scene.keypoints[static_cast<std::size_t>(m.train)];
          bool inside = false;
          for (const auto& q : taken) inside = inside || InsideQuad(q, kp.x, kp.y);
          if (!inside) out.push_back(m);
        }
        return out;
      };
      std::vector<core::Match> strict = uncovered(per_logo[logo]);
      for (int inst = static_cast<int>(taken.size()); inst < options.max_instances; ++inst) {
        if (static_cast<int>(strict.size()) < options.guided_min_matches) break;
        std::vector<core::Match> seeds = strict;
        std::sort(seeds.begin(), seeds.end(), [](const core::Match& a, const core::Match& b) {
          return a.ratio < b.ratio || (a.ratio == b.ratio && a.train < b.train);
        });
        if (seeds.size() > kMaxSeeds) seeds.resize(kMaxSeeds);
        // A similarity logo -> scene from each pair of seeds: z = complex scale-rotation.
        auto lp = [&](const core::Match& m) {
          const auto& k = lk[static_cast<std::size_t>(m.query)];
          return std::complex<double>(k.x, k.y);
        };
        auto sp = [&](const core::Match& m) {
          const auto& k = scene.keypoints[static_cast<std::size_t>(m.train)];
          return std::complex<double>(k.x, k.y);
        };
        auto size_ratio = [&](const core::Match& m) {
          const double a = lk[static_cast<std::size_t>(m.query)].size;
          const double b = scene.keypoints[static_cast<std::size_t>(m.train)].size;
          return a > 0 && b > 0 ? b / a : 0.0;
        };
        // SIFT orientations turn with the logo: the scene keypoint's angle minus the logo
        // keypoint's is the hypothesis' rotation (degrees, image axes), up to blur and
        // perspective.
        auto angle_ok = [&](const core::Match& m, double rotation_deg) {
          const double a = lk[static_cast<std::size_t>(m.query)].angle;
          const double b = scene.keypoints[static_cast<std::size_t>(m.train)].angle;
          if (a < 0 || b < 0) return true;  // no orientation known
          const double diff = std::remainder(b - a - rotation_deg, 360.0);
          return std::abs(diff) <= kAngleTolerance;
        };
        auto scale_ok = [&](const core::Match& m, double s, double tol) {
          const double r = size_ratio(m);
          return r > 0 && r <= s * tol && r * tol >= s;
        };
        int best_support = 0;
        double best_residual = 0;
        std::complex<double> best_z, best_a, best_b;
        for (std::size_t i = 0; i < seeds.size(); ++i) {
          for (std::size_t j = i + 1; j < seeds.size(); ++j) {
            const auto dl = lp(seeds[j]) - lp(seeds[i]);
            const auto ds = sp(seeds[j]) - sp(seeds[i]);
            if (std::abs(dl) < 4.0 || std::abs(ds) < 3.0) continue;
            const std::complex<double> z = ds / dl;
            const double s = std::abs(z);
            const double width = s * info.width, height = s * info.height;
            if (width < options.min_side_px || height < options.min_side_px) continue;
            // The whole logo fits in the scene and its centre lies inside it (this also keeps
            // the guided matching below from comparing most of the scene with the logo).
            // (Only known when the features carry the scene's size.)
            if (scene.image_width > 0 && scene.image_height > 0) {
              if (width > scene.image_width || height > scene.image_height) continue;
              const std::complex<double> centre =
                  sp(seeds[i]) +
                  z * (std::complex<double>(info.width / 2.0, info.height / 2.0) - lp(seeds[i]));
              if (centre.real() < 0 || centre.real() > scene.image_width || centre.imag() < 0 ||
                  centre.imag() > scene.image_height)
                continue;
            }
            if (!scale_ok(seeds[i], s, kScaleTolerance) || !scale_ok(seeds[j], s, kScaleTolerance))
              continue;
            const double rot = std::arg(z) * 180.0 / CV_PI;
            if (!angle_ok(seeds[i], rot) || !angle_ok(seeds[j], rot)) continue;
            const double tol = std::max(2.0 * options.threshold, 0.08 * width);
            int support = 0;
            double residual = 0;
            std::vector<int32_t> scene_pts;
            for (const auto& m : seeds) {
              const double e = std::abs(sp(seeds[i]) + z * (lp(m) - lp(seeds[i])) - sp(m));
              if (e > tol || !scale_ok(m, s, kScaleTolerance) || !angle_ok(m, rot)) continue;
              if (std::find(scene_pts.begin(), scene_pts.end(), m.train) != scene_pts.end())
                continue;
              scene_pts.push_back(m.train);
              ++support;
              residual += e;
            }
            if (support > best_support || (support == best_support && residual < best_residual)) {
              best_support = support;
              best_residual = residual;
              best_z = z;
              best_a = lp(seeds[i]);
              best_b = sp(seeds[i]);
            }
          }
        }
        if (best_support < options.guided_min_matches) break;
        // Guided matching: each scene keypoint in the hypothesised outline is compared with the
        // logo's descriptors; its nearest logo point among those the hypothesis puts within
        // `radius` of it (at a consistent scale and angle) is kept when that distance beats
        // every logo point elsewhere by the guided ratio.
        const double s = std::abs(best_z);
        const double rot = std::arg(best_z) * 180.0 / CV_PI;
        const double radius =
            std::max(2.0 * options.threshold, options.guided_radius * s * info.width);
        const std::complex<double> inv = 1.0 / best_z;
        const core::DescriptorMatrix& ld = d.features[static_cast<std::size_t>(logo)].descriptors;
        const int64_t nl = ld.rows();
        std::vector<std::complex<double>> predicted(static_cast<std::size_t>(nl));
        for (int64_t a = 0; a < nl; ++a) {
          const auto& k = lk[static_cast<std::size_t>(a)];
          predicted[static_cast<std::size_t>(a)] =
              best_b + best_z * (std::complex<double>(k.x, k.y) - best_a);
        }
        const double margin = radius / s;  // in logo pixels
        std::vector<core::Match> gathered;
        for (std::size_t b = 0; b < scene.keypoints.size(); ++b) {
          const auto& sk = scene.keypoints[b];
          const std::complex<double> pos(sk.x, sk.y);
          const std::complex<double> in_logo = best_a + inv * (pos - best_b);
          if (in_logo.real() < -margin || in_logo.real() > info.width + margin ||
              in_logo.imag() < -margin || in_logo.imag() > info.height + margin)
            continue;
          bool covered = false;
          for (const auto& q : taken) covered = covered || InsideQuad(q, sk.x, sk.y);
          if (covered) continue;
          double best_in = std::numeric_limits<double>::infinity();
          double best_out = std::numeric_limits<double>::infinity();
          int32_t best_row = -1;
          for (int64_t a = 0; a < nl; ++a) {
            const double dist = DescriptorDistance2(ld, a, scene.descriptors,
                                                    static_cast<int64_t>(b));
            if (std::abs(predicted[static_cast<std::size_t>(a)] - pos) > radius) {
              best_out = std::min(best_out, dist);
              continue;
            }
            core::Match m;
            m.query = static_cast<int32_t>(a);
            m.train = static_cast<int32_t>(b);
            if (dist < best_in && scale_ok(m, s, 2.0) && angle_ok(m, rot)) {
              best_in = dist;
              best_row = static_cast<int32_t>(a);
            }
          }
          if (best_row < 0) continue;
          const double ratio = std::isinf(best_out) ? 0.0
                               : best_out > 0      ? std::sqrt(best_in / best_out)
                                                   : 1.0;
          if (ratio > options.guided_ratio) continue;
          core::Match m;
          m.query = best_row;
          m.train = static_cast<int32_t>(b);
          m.image = logo;
          m.distance = static_cast<float>(std::sqrt(best_in));
          m.ratio = static_cast<float>(ratio);
          gathered.push_back(m);
        }
        if (static_cast<int>(gathered.size()) < options.min_inliers) break;
        std::optional<Instance> fit = fit_instance(logo, gathered);
        if (!fit) break;
        // Evidence of a guided detection: the part of the logo its inliers span (convex hull,
        // fraction of the logo's area) times the part of the scene keypoints inside its outline
        // that they explain. A hypothesis grown from one shared detail (two letters that another
        // word also has) gathers matches around that detail only; a wrong outline over a busy
        // region explains few of the keypoints it covers.
        std::vector<cv::Point2f> pts;
        for (const auto& m : fit->in) {
          const auto& k = lk[static_cast<std::size_t>(m.query)];
          pts.emplace_back(k.x, k.y);
        }
        std::vector<cv::Point2f> hull;
        cv::convexHull(pts, hull);
        const double spread = hull.size() >= 3 ? cv::contourArea(hull) /
                                                     (static_cast<double>(info.width) * info.height)
                                               : 0.0;
        int inside = 0;
        for (const auto& k : scene.keypoints) inside += InsideQuad(fit->quad, k.x, k.y) ? 1 : 0;
        const double explained =
            static_cast<double>(fit->in.size()) / static_cast<double>(std::max(1, inside));
        if (spread * explained < options.guided_min_evidence) break;
        if (!add_detection(logo, *fit, gathered.size())) break;
        taken.push_back(fit->quad);
        strict = uncovered(strict);
      }
    }
  }
  // Rank, then drop detections whose outline mostly covers a better one (another logo claiming
  // the same place, or the same instance found twice).
  std::sort(found.begin(), found.end(), [](const LogoDetection& a, const LogoDetection& b) {
    if (a.confidence != b.confidence) return a.confidence > b.confidence;
    if (a.inliers != b.inliers) return a.inliers > b.inliers;
    return a.logo_id < b.logo_id;
  });
  for (auto& det : found) {
    bool overlaps = false;
    for (const auto& kept : r.detections)
      if (QuadIou(det.quad, kept.quad) > 0.5) {
        overlaps = true;
        break;
      }
    if (!overlaps) r.detections.push_back(std::move(det));
  }
  if (options.top > 0 && r.detections.size() > static_cast<std::size_t>(options.top))
    r.detections.resize(static_cast<std::size_t>(options.top));
  r.verify_ms = sw.ElapsedMs();
  return r;
}

nlohmann::json LogoQueryResultToJson(const LogoQueryResult& result, bool include_matches) {
  using nlohmann::json;
  json dets = json::array();
  for (const auto& d : result.detections) {
    json quad = json::array();
    for (const auto& p : d.quad) quad.push_back({p.x, p.y});
    json h = json::array();
    for (int r = 0; r < 3; ++r) h.push_back({d.homography(r, 0), d.homography(r, 1),
                                             d.homography(r, 2)});
    json j = {{"name", d.name},
              {"logo_id", d.logo_id},
              {"inliers", d.inliers},
              {"candidate_matches", d.candidates},
              {"inlier_ratio", d.inlier_ratio},
              {"confidence", d.confidence},
              {"quad", quad},
              {"homography", h}};
    if (include_matches) {
      json ms = json::array();
      for (const auto& m : d.matches) ms.push_back({{"logo", m.query}, {"scene", m.train}});
      j["matches"] = ms;
    }
    dets.push_back(j);
  }
  return {{"detections", dets},
          {"found", !result.detections.empty()},
          {"scene_features", result.scene_features},
          {"library_descriptors", result.library_descriptors},
          {"backend", result.backend},
          {"times_ms",
           {{"extract", result.extract_ms},
            {"knn", result.knn_ms},
            {"candidates", result.candidates_ms},
            {"verify", result.verify_ms}}}};
}

cv::Mat DrawLogoDetections(const cv::Mat& scene, const std::vector<LogoDetection>& detections) {
  cv::Mat out;
  if (scene.channels() == 1)
    cv::cvtColor(scene, out, cv::COLOR_GRAY2BGR);
  else
    out = scene.clone();
  const int thick = std::max(2, std::max(out.cols, out.rows) / 400);
  const double font = std::max(0.5, std::max(out.cols, out.rows) / 1200.0);
  for (const auto& d : detections) {
    std::vector<cv::Point> poly;
    for (const auto& p : d.quad) poly.emplace_back(cvRound(p.x), cvRound(p.y));
    cv::polylines(out, poly, true, cv::Scalar(0, 255, 0), thick, cv::LINE_AA);
    char label[256];
    std::snprintf(label, sizeof label, "%s %.2f (%d)", d.name.c_str(), d.confidence, d.inliers);
    cv::Point org = poly[0];
    for (const auto& p : poly) org = (p.y < org.y) ? p : org;
    org.y = std::max(org.y - 6, 14);
    cv::putText(out, label, org, cv::FONT_HERSHEY_SIMPLEX, font, cv::Scalar(0, 0, 0), thick + 2,
                cv::LINE_AA);
    cv::putText(out, label, org, cv::FONT_HERSHEY_SIMPLEX, font, cv::Scalar(0, 255, 255), thick,
                cv::LINE_AA);
  }
  return out;
}

}  // namespace fm::matcher
