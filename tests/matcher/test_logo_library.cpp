// The logo library: storage (create, add, list, remove, reopen, bad files) and queries on
// generated scenes with a known answer.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <opencv2/imgproc.hpp>

#include "fm/matcher/backend.h"
#include "fm/matcher/image.h"
#include "fm/matcher/logo_eval.h"
#include "fm/matcher/logo_library.h"
#include "test_images.h"

namespace fm::matcher {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("fm-logo-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};


TEST(LogoLibrary, CreateAddListRemove) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  const std::string db = dir.File("lib.db");
  LogoLibrary lib = LogoLibrary::Create(db);
  EXPECT_EQ(lib.size(), 0);
  EXPECT_EQ(lib.num_descriptors(), 0);
  const LogoInfo box = lib.AddFile(test::Sample("box.png"));
  EXPECT_EQ(box.name, "box");
  EXPECT_GT(box.num_features, 100);
  const LogoInfo linux_logo = lib.AddFile(test::Sample("LinuxLogo.jpg"), "tux");
  EXPECT_EQ(lib.size(), 2);
  EXPECT_EQ(lib.num_descriptors(), box.num_features + linux_logo.num_features);

  auto list = lib.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "box");
  EXPECT_EQ(list[1].name, "tux");
  EXPECT_EQ(list[1].width, 320);

  // A name is unique; the failed add changes nothing.
  EXPECT_THROW(lib.AddFile(test::Sample("WindowsLogo.jpg"), "tux"), LogoLibraryError);
  EXPECT_EQ(lib.size(), 2);
  // A missing image is refused with the library unchanged.
  EXPECT_THROW(lib.AddFile(dir.File("missing.png")), LogoLibraryError);

  EXPECT_TRUE(lib.Remove("box"));
  EXPECT_FALSE(lib.Remove("box"));
  EXPECT_EQ(lib.size(), 1);
  EXPECT_EQ(lib.num_descriptors(), linux_logo.num_features);
  // Creating over an existing file is refused.
  EXPECT_THROW(LogoLibrary::Create(db), LogoLibraryError);
}

TEST(LogoLibrary, PersistsAcrossReopen) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  const std::string db = dir.File("lib.db");
  LogoLibrarySettings s;
  s.sift.contrast_threshold = 0.03;
  s.max_logo_side = 256;
  std::vector<uint8_t> tux_bytes;
  {
    LogoLibrary lib = LogoLibrary::Create(db, s);
    lib.AddFile(test::Sample("box.png"));
    const auto tux = lib.AddFile(test::Sample("LinuxLogo.jpg"), "tux");
    lib.AddFile(test::Sample("WindowsLogo.jpg"), "win");
    lib.Remove("win");
    const auto& d = lib.LogoFeatures(tux.id).descriptors;
    tux_bytes.assign(d.bytes(), d.bytes() + d.size_bytes());
  }
  LogoLibrary again = LogoLibrary::Open(db);
  EXPECT_DOUBLE_EQ(again.settings().sift.contrast_threshold, 0.03);
  EXPECT_EQ(again.settings().max_logo_side, 256);
  auto list = again.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "box");
  EXPECT_EQ(list[1].name, "tux");
  EXPECT_LE(std::max(list[0].width, list[0].height), 256);
  const auto& d = again.LogoFeatures(list[1].id).descriptors;
  ASSERT_EQ(d.size_bytes(), tux_bytes.size());
  EXPECT_TRUE(std::equal(tux_bytes.begin(), tux_bytes.end(), d.bytes()));
  // Ids are not reused after a removal.
  const auto w = again.AddFile(test::Sample("WindowsLogo.jpg"), "win");
  EXPECT_GT(w.id, list[1].id + 1);
}

TEST(LogoLibrary, RefusesLogoWithTooFewFeatures) {
  TempDir dir;
  LogoLibrary lib = LogoLibrary::Create(dir.File("lib.db"));
  cv::Mat flat(200, 300, CV_8UC1, cv::Scalar(128));
  cv::rectangle(flat, {100, 60}, {200, 140}, cv::Scalar(30), cv::FILLED);  // four corners only
  try {
    lib.Add("flat", flat);
    FAIL() << "a logo with too few features was accepted";
  } catch (const LogoLibraryError& e) {
    EXPECT_NE(std::string(e.what()).find("too few features"), std::string::npos) << e.what();
  }
  EXPECT_EQ(lib.size(), 0);
  EXPECT_TRUE(LogoLibrary::Open(dir.File("lib.db")).List().empty());
}

TEST(LogoLibrary, RefusesCorruptAndForeignFiles) {
  TempDir dir;
  {
    std::ofstream f(dir.File("garbage.db"), std::ios::binary);
    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 131) & 0xff));
  }
  EXPECT_THROW(LogoLibrary::Open(dir.File("garbage.db")), LogoLibraryError);
  EXPECT_THROW(LogoLibrary::Open(dir.File("does-not-exist.db")), LogoLibraryError);

  // A valid SQLite database that is not a logo library.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(dir.File("foreign.db").c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE logos(id INTEGER, name TEXT)", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  try {
    LogoLibrary::Open(dir.File("foreign.db"));
    FAIL() << "a foreign database was accepted";
  } catch (const LogoLibraryError& e) {
    EXPECT_NE(std::string(e.what()).find("not a featmatch logo library"), std::string::npos);
  }
}

// The message a library at `path` is refused with; empty when it opens.
std::string OpenRefusal(const std::string& path) {
  try {
    LogoLibrary::Open(path);
  } catch (const LogoLibraryError& e) {
    return e.what();
  }
  return "";
}

// Flips bytes in the middle of the stored features of the logos `where` selects (SQL, "" = all):
// their checksum must catch it.
void DamageStoredFeatures(const std::string& db, const std::string& where) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  const std::string sql =
      "UPDATE logos SET features = substr(features, 1, 200) || x'DEADBEEF' || "
      "substr(features, 205)" + where;
  ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
}

TEST(LogoLibrary, RefusesDamagedFeaturesAndNewerSchema) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  const std::string db = dir.File("lib.db");
  LogoLibrary::Create(db).AddFile(test::Sample("box.png"));
  DamageStoredFeatures(db, "");
  EXPECT_THROW(LogoLibrary::Open(db), LogoLibraryError);

  const std::string db2 = dir.File("newer.db");
  LogoLibrary::Create(db2);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db2.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr,
               nullptr);
  sqlite3_close(raw);
  const std::string why = OpenRefusal(db2);
  EXPECT_NE(why.find("version 99"), std::string::npos) << "refusal: '" << why << "'";
}

TEST(LogoLibrary, ADamagedLogoCanBeLeftOutAndRemoved) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  const std::string db = dir.File("lib.db");
  {
    LogoLibrary lib = LogoLibrary::Create(db);
    lib.AddFile(test::Sample("box.png"));
    lib.AddFile(test::Sample("LinuxLogo.jpg"), "tux");
  }
  DamageStoredFeatures(db, " WHERE name = 'tux'");
  EXPECT_THROW(LogoLibrary::Open(db), LogoLibraryError);
  {
    LogoLibrary lib = LogoLibrary::Open(db, true);
    ASSERT_EQ(lib.size(), 1);
    EXPECT_EQ(lib.List()[0].name, "box");
    ASSERT_EQ(lib.Damaged().size(), 1u);
    EXPECT_EQ(lib.Damaged()[0].first, "tux");
    EXPECT_NE(lib.Damaged()[0].second.find("checksum"), std::string::npos);
    EXPECT_THROW(lib.AddFile(test::Sample("WindowsLogo.jpg"), "tux"), LogoLibraryError);
    EXPECT_TRUE(lib.Remove("tux"));
    EXPECT_TRUE(lib.Damaged().empty());
  }
  LogoLibrary again = LogoLibrary::Open(db);  // whole again
  EXPECT_EQ(again.size(), 1);
  EXPECT_NO_THROW(again.AddFile(test::Sample("LinuxLogo.jpg"), "tux"));
}

TEST(LogoLibrary, RefusesBlankNamesAndFolders) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  LogoLibrary lib = LogoLibrary::Create(dir.File("lib.db"));
  for (const std::string name : {"  ", " box", "box "})
    EXPECT_THROW(lib.AddFile(test::Sample("box.png"), name), LogoLibraryError) << name << ".";
  EXPECT_EQ(lib.size(), 0);
  const std::string why = OpenRefusal(dir.File(""));
  EXPECT_NE(why.find("is a folder"), std::string::npos) << "refusal: '" << why << "'";
}

TEST(LogoEval, SharesOfNothingReadNotANumberInWords) {
  FM_REQUIRE_SAMPLES();
  // Two scenes leave most of the report's bins empty: their shares are "n/a", not "nan %".
  LogoEvalOptions o;
  o.scenes = 2;
  BackendOptions b;
  b.kind = BackendKind::kCpu;
  const LogoEvalReport rep = RunLogoEval(o, CreateKnnBackend(b));
  EXPECT_EQ(rep.markdown.find("nan"), std::string::npos) << rep.markdown;
  EXPECT_NE(rep.markdown.find("n/a (0)"), std::string::npos) << rep.markdown;
}

// The CPU backend, noting the k of every search it is asked for (and setting a flag, if given,
// as each search ends).
class KRecordingBackend : public core::KnnBackend {
 public:
  std::string name() const override { return "k-recording"; }
  std::string description() const override { return "cpu, k recorded"; }
  core::KnnResult Search(const core::DescriptorMatrix& queries,
                         const core::DescriptorMatrix& corpus,
                         const core::KnnParams& params) override {
    ks.push_back(params.k);
    core::KnnResult r = cpu_->Search(queries, corpus, params);
    if (set_during) *set_during = true;  // a cancel pressed while the search ran
    return r;
  }
  std::vector<int64_t> ks;
  std::atomic<bool>* set_during = nullptr;

 private:
  std::unique_ptr<core::KnnBackend> cpu_ = core::CreateCpuKnnBackend();
};

// A k far above the library's descriptors searches one past them (the padding slot that tells a
// logo seen once from one whose second point lies beyond the list) and finds what that k finds.
TEST(LogoLibrary, KAboveTheLibraryIsSearchedAsOnePastIt) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  LogoLibrary lib = LogoLibrary::Create(dir.File("lib.db"));
  lib.AddFile(test::Sample("box.png"));
  const int64_t n = lib.num_descriptors();
  auto rec = std::make_unique<KRecordingBackend>();
  KRecordingBackend* seen = rec.get();
  lib.SetBackend(std::move(rec));
  const cv::Mat scene = LoadGrayImage(test::Sample("box_in_scene.png"));
  LogoQueryOptions o;
  o.guided = false;
  o.k = 20 * n;
  const LogoQueryResult huge = lib.QueryImage(scene, o);
  ASSERT_FALSE(seen->ks.empty());
  EXPECT_EQ(seen->ks.front(), n + 1);
  o.k = n + 1;
  const LogoQueryResult one_past = lib.QueryImage(scene, o);
  ASSERT_EQ(huge.detections.size(), one_past.detections.size());
  ASSERT_FALSE(huge.detections.empty());
  EXPECT_EQ(huge.detections[0].name, "box");
  for (std::size_t i = 0; i < huge.detections.size(); ++i) {
    EXPECT_EQ(huge.detections[i].name, one_past.detections[i].name);
    EXPECT_EQ(huge.detections[i].inliers, one_past.detections[i].inliers);
  }
}

// A cancel stops a query: set before it, nothing is searched; set while the library is searched,
// the query stops before its first logo is verified; cleared, the library finds the box again.
TEST(LogoLibrary, ACancelStopsAQuery) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  LogoLibrary lib = LogoLibrary::Create(dir.File("lib.db"));
  lib.AddFile(test::Sample("box.png"));
  std::atomic<bool> cancel{true};
  auto rec = std::make_unique<KRecordingBackend>();
  KRecordingBackend* seen = rec.get();
  rec->set_during = &cancel;
  lib.SetBackend(std::move(rec));
  const cv::Mat scene = LoadGrayImage(test::Sample("box_in_scene.png"));
  EXPECT_THROW(lib.QueryImage(scene, {}, &cancel), core::Cancelled);
  EXPECT_TRUE(seen->ks.empty());
  cancel = false;
  EXPECT_THROW(lib.QueryImage(scene, {}, &cancel), core::Cancelled);
  EXPECT_EQ(seen->ks.size(), 1u);
  seen->set_during = nullptr;
  cancel = false;
  const LogoQueryResult r = lib.QueryImage(scene, {}, &cancel);
  ASSERT_FALSE(r.detections.empty());
  EXPECT_EQ(r.detections[0].name, "box");
}

// Without a backend set, the factory makes one at the first search, from that search's work (the
// scene's features against the whole library), once; its queries find what a backend set
// beforehand finds. A factory that makes nothing is an error, not a crash.
TEST(LogoLibrary, ABackendFactoryIsGivenTheFirstSearchsWork) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  LogoLibrary lib = LogoLibrary::Create(dir.File("lib.db"));
  lib.AddFile(test::Sample("box.png"));
  lib.AddFile(test::Sample("opencv-logo.png"));
  std::vector<SearchWork> asked;
  KRecordingBackend* made = nullptr;
  lib.SetBackendFactory([&](const SearchWork& w) {
    asked.push_back(w);
    auto b = std::make_unique<KRecordingBackend>();
    made = b.get();
    return b;
  });
  const cv::Mat scene = LoadGrayImage(test::Sample("box_in_scene.png"));
  const core::Features f = lib.ExtractSceneFeatures(scene);
  const LogoQueryResult first = lib.Query(f);
  const LogoQueryResult second = lib.QueryImage(scene);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].queries, f.size());
  EXPECT_EQ(asked[0].corpus, lib.num_descriptors());
  EXPECT_EQ(asked[0].dim, 128);
  EXPECT_FALSE(asked[0].float_descriptors);
  EXPECT_EQ(asked[0].searches, 1);
  ASSERT_NE(made, nullptr);
  EXPECT_EQ(made->ks.size(), 2u);
  EXPECT_EQ(first.backend, "cpu, k recorded");

  LogoLibrary again = LogoLibrary::Open(dir.File("lib.db"));
  again.SetBackend(core::CreateCpuKnnBackend());
  const LogoQueryResult set = again.Query(f);
  ASSERT_EQ(first.detections.size(), set.detections.size());
  ASSERT_FALSE(set.detections.empty());
  EXPECT_EQ(set.detections[0].name, "box");
  for (std::size_t i = 0; i < set.detections.size(); ++i) {
    EXPECT_EQ(first.detections[i].name, set.detections[i].name);
    EXPECT_EQ(first.detections[i].inliers, set.detections[i].inliers);
    EXPECT_EQ(second.detections[i].inliers, set.detections[i].inliers);
  }

  LogoLibrary none = LogoLibrary::Open(dir.File("lib.db"));
  none.SetBackendFactory([](const SearchWork&) { return std::unique_ptr<core::KnnBackend>(); });
  EXPECT_THROW(none.Query(f), std::logic_error);
}

// A factory set on a library that has a backend is asked at the next search only: nullptr keeps
// the backend the library has, a backend made replaces it; SetBackend drops a factory not asked.
TEST(LogoLibrary, ABackendFactorySetLaterChoosesAgainAtTheNextSearch) {
  FM_REQUIRE_SAMPLES();
  TempDir dir;
  LogoLibrary lib = LogoLibrary::Create(dir.File("lib.db"));
  lib.AddFile(test::Sample("box.png"));
  auto first = std::make_unique<KRecordingBackend>();
  KRecordingBackend* kept = first.get();
  lib.SetBackend(std::move(first));
  const cv::Mat scene = LoadGrayImage(test::Sample("box_in_scene.png"));
  const core::Features f = lib.ExtractSceneFeatures(scene);
  const LogoQueryResult before = lib.Query(f);

  int asked = 0;
  lib.SetBackendFactory([&](const SearchWork& w) {
    ++asked;
    EXPECT_EQ(w.queries, f.size());
    return std::unique_ptr<core::KnnBackend>();  // keep the library's
  });
  const LogoQueryResult kept_result = lib.Query(f);
  lib.Query(f);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(kept->ks.size(), 3u);

  KRecordingBackend* replaced = nullptr;
  lib.SetBackendFactory([&](const SearchWork&) {
    ++asked;
    auto b = std::make_unique<KRecordingBackend>();
    replaced = b.get();
    return b;
  });
  const LogoQueryResult after = lib.Query(f);
  EXPECT_EQ(asked, 2);
  ASSERT_NE(replaced, nullptr);
  EXPECT_EQ(replaced->ks.size(), 1u);

  lib.SetBackendFactory([&](const SearchWork&) {
    ++asked;
    return std::unique_ptr<core::KnnBackend>();
  });
  lib.SetBackend(core::CreateCpuKnnBackend());
  const LogoQueryResult plain = lib.Query(f);
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(plain.backend.rfind("cpu", 0), 0u);

  ASSERT_FALSE(before.detections.empty());
  for (const LogoQueryResult* r : {&kept_result, &after, &plain}) {
    ASSERT_EQ(r->detections.size(), before.detections.size());
    for (std::size_t i = 0; i < before.detections.size(); ++i) {
      EXPECT_EQ(r->detections[i].name, before.detections[i].name);
      EXPECT_EQ(r->detections[i].inliers, before.detections[i].inliers);
    }
  }
}

// Queries against a library of every evaluation logo, built once.
class LogoQueryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::HaveSamples()) return;
    dir_ = new TempDir();
    logos_ = new std::vector<EvalLogo>(MakeEvalLogos(test::SampleDir()));
    backgrounds_ = new std::vector<std::pair<std::string, cv::Mat>>(
        LoadEvalBackgrounds(test::SampleDir()));
    lib_ = new LogoLibrary(LogoLibrary::Create(dir_->File("eval.db")));
    for (const auto& l : *logos_) lib_->Add(l.name, LibraryImage(l), l.origin);
  }
  static void TearDownTestSuite() {
    delete lib_;
    delete backgrounds_;
    delete logos_;
    delete dir_;
  }
  void SetUp() override { FM_REQUIRE_SAMPLES(); }

  static const EvalLogo* Logo(const std::string& name) {
    for (const auto& l : *logos_)
      if (l.name == name) return &l;
    return nullptr;
  }
  static LogoEvalOptions SceneOptions() {
    LogoEvalOptions o;
    o.min_logo_width = 120;
    o.max_logo_width = 200;
    o.max_rotation_deg = 30;
    o.occlusion_probability = 0;
    return o;
  }
  // The detection of `truth`, or null.
  static const LogoDetection* Find(const LogoQueryResult& r, const EvalInstance& truth) {
    for (const auto& d : r.detections)
      if (d.name == truth.name && QuadOverlap(d.quad, truth.quad) >= 0.5) return &d;
    return nullptr;
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::vector<EvalLogo>* logos_ = nullptr;
  static inline std::vector<std::pair<std::string, cv::Mat>>* backgrounds_ = nullptr;
  static inline LogoLibrary* lib_ = nullptr;
};

TEST_F(LogoQueryTest, FindsTheLogoOfAGeneratedScene) {
  cv::RNG rng(7);
  const EvalScene s =
      MakeEvalScene({Logo("box")}, (*backgrounds_)[0], false, false, rng, SceneOptions());
  ASSERT_EQ(s.truth.size(), 1u);
  const LogoQueryResult r = lib_->QueryImage(s.image);
  ASSERT_FALSE(r.detections.empty()) << "no logo found";
  const LogoDetection& top = r.detections[0];
  EXPECT_EQ(top.name, "box");
  EXPECT_LT(QuadCornerError(top.quad, s.truth[0].quad), 5.0);
  EXPECT_GE(top.inliers, 10);
  EXPECT_GT(top.confidence, 0.9);
  EXPECT_EQ(static_cast<int>(top.matches.size()), top.inliers);
  EXPECT_EQ(r.library_descriptors, lib_->num_descriptors());
}

TEST_F(LogoQueryTest, FindsTwoLogosInOneScene) {
  cv::RNG rng(11);
  const EvalScene s = MakeEvalScene({Logo("opencv"), Logo("graffiti")}, (*backgrounds_)[1], false,
                                    false, rng, SceneOptions());
  ASSERT_EQ(s.truth.size(), 2u);
  const LogoQueryResult r = lib_->QueryImage(s.image);
  for (const auto& t : s.truth) EXPECT_NE(Find(r, t), nullptr) << t.name << " not found";
  EXPECT_EQ(r.detections.size(), 2u);
}

TEST_F(LogoQueryTest, FindsTwoInstancesOfOneLogo) {
  cv::RNG rng(5);
  const EvalScene s =
      MakeEvalScene({Logo("baboon")}, (*backgrounds_)[2], true, false, rng, SceneOptions());
  ASSERT_EQ(s.truth.size(), 2u);
  const LogoQueryResult r = lib_->QueryImage(s.image);
  for (const auto& t : s.truth) EXPECT_NE(Find(r, t), nullptr) << "an instance was missed";
  EXPECT_EQ(r.detections.size(), 2u);
}

TEST_F(LogoQueryTest, NegativeSceneHasNoDetection) {
  for (int i = 0; i < 3; ++i) {
    cv::RNG rng(100 + i);
    const EvalScene s =
        MakeEvalScene({}, (*backgrounds_)[static_cast<std::size_t>(i)], false, false, rng,
                      SceneOptions());
    const LogoQueryResult r = lib_->QueryImage(s.image);
    EXPECT_TRUE(r.detections.empty())
        << s.background << ": false detection of " << r.detections[0].name << " with "
        << r.detections[0].inliers << " inliers, confidence " << r.detections[0].confidence;
  }
}

TEST_F(LogoQueryTest, GuidedPassFindsSmallLogosTheFirstPassMisses) {
  // Logos about 60 px wide leave few matches that pass the ratio test. The guided pass must find
  // more of them than the first pass alone, keep what the first pass finds, and add no wrong
  // detection.
  LogoEvalOptions o = SceneOptions();
  o.min_logo_width = 58;
  o.max_logo_width = 64;
  o.max_rotation_deg = 45;
  LogoQueryOptions plain;
  plain.guided = false;
  const LogoQueryOptions guided;  // the default has the guided pass on
  int found_plain = 0, found_guided = 0, wrong = 0;
  const char* names[] = {"linux", "helix", "opencv", "windows", "zeta", "qubit"};
  for (int i = 0; i < 24; ++i) {
    cv::RNG rng(300 + i);
    const EvalScene s = MakeEvalScene({Logo(names[i % 6])},
                                      (*backgrounds_)[static_cast<std::size_t>(i) %
                                                      backgrounds_->size()],
                                      false, false, rng, o);
    ASSERT_EQ(s.truth.size(), 1u);
    const core::Features f = lib_->ExtractSceneFeatures(s.image);
    const LogoQueryResult a = lib_->Query(f, plain);
    const LogoQueryResult b = lib_->Query(f, guided);
    const bool in_a = Find(a, s.truth[0]) != nullptr, in_b = Find(b, s.truth[0]) != nullptr;
    found_plain += in_a;
    found_guided += in_b;
    EXPECT_TRUE(!in_a || in_b) << "scene " << i << ": the guided pass lost a detection";
    for (const auto& d : b.detections)
      if (!(d.name == s.truth[0].name && QuadOverlap(d.quad, s.truth[0].quad) >= 0.5)) ++wrong;
  }
  EXPECT_GT(found_guided, found_plain);
  EXPECT_EQ(wrong, 0);
}

TEST_F(LogoQueryTest, GuidedPassFindsNothingInDistractorScenes) {
  // Drawn words and shapes that are not in the library (some share letters with "ACME").
  for (int i = 0; i < 8; ++i) {
    cv::RNG rng(400 + i);
    const EvalScene s = MakeEvalScene(
        {}, (*backgrounds_)[static_cast<std::size_t>(i) % backgrounds_->size()], false, true,
        rng, SceneOptions());
    const LogoQueryResult r = lib_->QueryImage(s.image);
    EXPECT_TRUE(r.detections.empty())
        << "scene " << i << ": false detection of " << r.detections[0].name << " with "
        << r.detections[0].inliers << " inliers";
  }
}

TEST_F(LogoQueryTest, MakingASceneLeavesTheLogoUnchanged) {
  // Small logos are low-pass filtered before they are warped; the filter must work on a copy,
  // or every later scene would get a logo blurred once more.
  const EvalLogo& zeta = *Logo("zeta");
  const cv::Mat image = zeta.image.clone(), mask = zeta.mask.clone();
  LogoEvalOptions o = SceneOptions();
  o.min_logo_width = 60;
  o.max_logo_width = 80;
  for (int i = 0; i < 3; ++i) {
    cv::RNG rng(200 + i);
    const EvalScene s = MakeEvalScene({&zeta}, (*backgrounds_)[0], false, false, rng, o);
    ASSERT_EQ(s.truth.size(), 1u);
  }
  EXPECT_EQ(cv::norm(zeta.image, image, cv::NORM_INF), 0.0);
  EXPECT_EQ(cv::norm(zeta.mask, mask, cv::NORM_INF), 0.0);
}

TEST_F(LogoQueryTest, RejectsMismatchedDescriptorsAndBadOptions) {
  core::Features f;
  f.keypoints.resize(3);
  f.descriptors = core::DescriptorMatrix(core::DescriptorType::kFloat32, 3, 128);
  EXPECT_THROW(lib_->Query(f), LogoLibraryError);
  LogoQueryOptions o;
  o.k = 1;
  EXPECT_THROW(lib_->Query(f, o), std::invalid_argument);
  o = LogoQueryOptions();
  o.guided_min_matches = 1;
  EXPECT_THROW(lib_->Query(f, o), std::invalid_argument);
  o = LogoQueryOptions();
  o.guided_radius = 0;
  EXPECT_THROW(lib_->Query(f, o), std::invalid_argument);
}

}  // namespace
}  // namespace fm::matcher
