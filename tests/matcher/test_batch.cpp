// Batch matching into a COLMAP database: contents, COLMAP blob layouts, resume after a stop,
// pairing modes, clear errors.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "fm/matcher/batch.h"
#include "fm/matcher/colmap_database.h"
#include "../../matcher/src/matcher/batch_internal.h"
#include "test_batch_data.h"

namespace fm::matcher {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("fm_batch_" + std::to_string(::getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

BatchOptions Options(const std::string& folder, const std::string& db) {
  BatchOptions o;
  o.folder = folder;
  o.database = db;
  o.match.threads = 2;
  o.match.verify.model = GeometryModel::kHomography;
  o.backend.kind = BackendKind::kCpu;
  o.commit_pairs = 2;
  return o;
}

BatchSummary RunBatch(const BatchOptions& o) {
  BatchController c;
  c.Start(o);
  c.Wait();
  return c.Summary();
}

// The message of the BatchError a run's start refuses it with; empty when it starts (it then
// runs to its end).
std::string StartRefusal(const BatchOptions& o) {
  BatchController c;
  try {
    c.Start(o);
  } catch (const BatchError& e) {
    return e.what();
  }
  c.Wait();
  return "";
}

class BatchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::HaveSamples()) return;
    folder_ = new test::BatchFolder(test::MakeBatchFolder(TempDir("photos")));
    reference_db_ = new std::string(TempDir("reference") + "/ref.db");
    reference_ = new BatchSummary(RunBatch(Options(folder_->dir, *reference_db_)));
  }
  static void TearDownTestSuite() {
    delete folder_;
    delete reference_db_;
    delete reference_;
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("fm_batch_" + std::to_string(::getpid())), ec);
  }
  void SetUp() override {
    if (!test::HaveSamples()) GTEST_SKIP() << "OpenCV sample images not installed";
  }
  static test::BatchFolder* folder_;
  static std::string* reference_db_;
  static BatchSummary* reference_;
};
test::BatchFolder* BatchTest::folder_ = nullptr;
std::string* BatchTest::reference_db_ = nullptr;
BatchSummary* BatchTest::reference_ = nullptr;

TEST(MemoryBudget, ConcurrentExtractionsWaitForRoom) {
  // Two images of 60 units under a budget of 100 do not run at once: the second waits.
  detail::MemoryBudget budget(100);
  budget.Acquire(60);
  std::atomic<bool> second_started{false};
  std::thread second([&] {
    budget.Acquire(60);
    second_started = true;
    budget.Release(60);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(second_started.load()) << "both would hold 120 of 100";
  EXPECT_EQ(budget.InUse(), 60);
  budget.Release(60);
  second.join();
  EXPECT_TRUE(second_started.load());
  EXPECT_EQ(budget.InUse(), 0);
  // Small ones share the budget; one larger than all of it still runs when alone.
  budget.Acquire(40);
  budget.Acquire(40);
  EXPECT_EQ(budget.InUse(), 80);
  budget.Release(40);
  budget.Release(40);
  budget.Acquire(500);
  budget.Release(500);
  // An unknown amount of memory (capacity <= 0) bounds nothing.
  detail::MemoryBudget unbounded(-1);
  unbounded.Acquire(1000);
  unbounded.Acquire(1000);
  EXPECT_EQ(unbounded.InUse(), 2000);
}

TEST(ColmapPairId, FollowsColmapsRule) {
  EXPECT_EQ(ColmapPairId(1, 2), 2147483647LL + 2);
  EXPECT_EQ(ColmapPairId(2, 1), 2147483647LL + 2);
  EXPECT_EQ(ColmapPairId(7, 5000), 7 * 2147483647LL + 5000);
  const auto ids = ColmapPairImages(ColmapPairId(123456, 99));
  EXPECT_EQ(ids.first, 99);
  EXPECT_EQ(ids.second, 123456);
  EXPECT_THROW(ColmapPairId(3, 3), std::invalid_argument);
  EXPECT_THROW(ColmapPairId(-1, 3), std::invalid_argument);
}

TEST(ColmapDatabaseTest, SwappedPairsAreStoredInColmapOrder) {
  const std::string db_path = TempDir("swap") + "/swap.db";
  ColmapDatabase db(db_path, ColmapDatabase::Mode::kReadWrite);
  const int64_t c = db.AddCamera(DefaultCamera(100, 80));
  const int64_t a = db.AddImage({0, "a.png", c});
  const int64_t b = db.AddImage({0, "b.png", db.AddCamera(DefaultCamera(100, 80))});
  ASSERT_LT(a, b);
  db.WriteMatches(b, a, {{3, 7}, {4, 9}});  // column 0 indexes image b here
  const auto stored = db.ReadMatches(a, b);
  ASSERT_TRUE(stored.has_value());
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ((*stored)[0][0], 7u);
  EXPECT_EQ((*stored)[0][1], 3u);
  TwoViewGeometryRecord g;
  g.config = TwoViewConfig::kPlanarOrPanoramic;
  g.inlier_matches = {{3, 7}};
  g.H = {2, 0, 10, 0, 2, 20, 0, 0, 1};  // b -> a
  db.WriteTwoViewGeometry(b, a, g);
  const auto back = db.ReadTwoViewGeometry(a, b);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->inlier_matches[0][0], 7u);
  // a -> b is the inverse.
  EXPECT_NEAR(back->H[0], 0.5, 1e-12);
  EXPECT_NEAR(back->H[2], -5, 1e-12);
  EXPECT_NEAR(back->H[5], -10, 1e-12);
}

TEST(ColmapDatabaseTest, RejectsFilesThatAreNotDatabases) {
  const std::string dir = TempDir("notdb");
  std::ofstream(dir + "/x.db") << std::string(4096, 'z');
  EXPECT_THROW(ColmapDatabase(dir + "/x.db", ColmapDatabase::Mode::kReadWrite), DatabaseError);
  EXPECT_THROW(ColmapDatabase(dir + "/missing.db", ColmapDatabase::Mode::kReadOnly), DatabaseError);
}

TEST(UsacDeterminism, SameInputSameModelAcrossRunsAndThreads) {
  // Resume equality needs verification to give the same answer every time.
  std::vector<core::Keypoint> a, b;
  std::vector<core::Match> m;
  cv::RNG rng(7);
  for (int i = 0; i < 400; ++i) {
    core::Keypoint ka, kb;
    ka.x = static_cast<float>(rng.uniform(0.0, 640.0));
    ka.y = static_cast<float>(rng.uniform(0.0, 480.0));
    const bool outlier = i % 3 == 0;
    kb.x = outlier ? static_cast<float>(rng.uniform(0.0, 640.0)) : 0.9f * ka.x + 0.1f * ka.y + 12;
    kb.y = outlier ? static_cast<float>(rng.uniform(0.0, 480.0))
                   : -0.05f * ka.x + ka.y - 7 + static_cast<float>(rng.gaussian(0.5));
    a.push_back(ka);
    b.push_back(kb);
    m.push_back({i, i, 0, 1.0f, 0.5f});
  }
  for (UsacMethod method : {UsacMethod::kMagsac, UsacMethod::kDefault, UsacMethod::kAccurate}) {
    VerifyOptions o;
    o.method = method;
    for (GeometryModel model : {GeometryModel::kHomography, GeometryModel::kFundamental}) {
      o.model = model;
      const Verification first = VerifyMatches(a, b, m, o);
      cv::theRNG().state = 12345;  // unrelated global RNG use must not matter
      Verification other;
      std::thread t([&] { other = VerifyMatches(a, b, m, o); });
      t.join();
      ASSERT_EQ(first.matrix.empty(), other.matrix.empty());
      EXPECT_EQ(first.inliers, other.inliers) << UsacMethodName(method);
      if (!first.matrix.empty())
        EXPECT_EQ(0, std::memcmp(first.matrix.data, other.matrix.data, 9 * sizeof(double)))
            << UsacMethodName(method) << " " << GeometryModelName(model);
    }
  }
}

TEST_F(BatchTest, DatabaseHoldsImagesPairsAndVerifiedGeometries) {
  const BatchSummary& s = *reference_;
  ASSERT_EQ(s.stage, BatchStage::kDone) << s.error;
  const int64_t n = static_cast<int64_t>(folder_->views.size());
  EXPECT_EQ(s.images_found, n + 1);  // the corrupt file has an image extension
  EXPECT_EQ(s.images_extracted, n);
  ASSERT_EQ(s.bad_images.size(), 1u);
  EXPECT_NE(s.bad_images[0].path.find(folder_->corrupt), std::string::npos);
  EXPECT_FALSE(s.bad_images[0].reason.empty());
  ASSERT_EQ(s.ignored_files.size(), 1u);
  EXPECT_NE(s.ignored_files[0].path.find(folder_->not_image), std::string::npos);
  EXPECT_EQ(s.pairs_total, n * (n - 1) / 2);
  EXPECT_EQ(s.pairs_matched, s.pairs_total);

  ColmapDatabase db(*reference_db_, ColmapDatabase::Mode::kReadOnly);
  const auto images = db.ReadImages();
  ASSERT_EQ(static_cast<int64_t>(images.size()), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(images[i].image_id, i + 1);
    EXPECT_EQ(images[i].name, folder_->views[i].name);  // ids in name order
  }
  EXPECT_EQ(db.CountRows("two_view_geometries"), n * (n - 1) / 2);
  EXPECT_EQ(db.CountRows("matches"), n * (n - 1) / 2);
  EXPECT_EQ(db.CountRows("frames"), n);
  EXPECT_EQ(db.CountRows("rigs"), n);

  int64_t verified_same = 0;
  for (const auto& r : ReadPairResults(*reference_db_)) {
    const auto& va = folder_->views[r.image_id1 - 1];
    const auto& vb = folder_->views[r.image_id2 - 1];
    EXPECT_EQ(r.name1, va.name);
    if (va.base != vb.base) {
      EXPECT_FALSE(r.verified() && r.inliers > 30) << r.name1 << " " << r.name2;
      continue;
    }
    ASSERT_TRUE(r.verified()) << r.name1 << " " << r.name2 << " inliers " << r.inliers;
    EXPECT_GE(r.inliers, 30);
    ++verified_same;
    const auto g = db.ReadTwoViewGeometry(r.image_id1, r.image_id2);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->config, TwoViewConfig::kPlanarOrPanoramic);
    // The stored H maps image 1 to image 2 in COLMAP's pixel convention (centres at +0.5).
    const cv::Matx33d truth = vb.H * va.H.inv();
    for (double x : {100.0, 180.0, 250.0})
      for (double y : {80.0, 150.0, 220.0}) {
        const cv::Vec3d t = truth * cv::Vec3d(x, y, 1);
        const auto& h = g->H;
        const double w = h[6] * (x + 0.5) + h[7] * (y + 0.5) + h[8];
        const double u = (h[0] * (x + 0.5) + h[1] * (y + 0.5) + h[2]) / w;
        const double v = (h[3] * (x + 0.5) + h[4] * (y + 0.5) + h[5]) / w;
        EXPECT_NEAR(u, t[0] / t[2] + 0.5, 2.0);
        EXPECT_NEAR(v, t[1] / t[2] + 0.5, 2.0);
      }
  }
  EXPECT_EQ(verified_same, 6);
  EXPECT_EQ(s.pairs_verified, 6);
}

TEST_F(BatchTest, BlobsDecodeAsColmapDefinesThem) {
  // Read with plain SQLite, as COLMAP or its Python scripts would.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(reference_db_->c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto query = [&](const std::string& sql, const std::function<void(sqlite3_stmt*)>& row) {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    while (sqlite3_step(s) == SQLITE_ROW) row(s);
    sqlite3_finalize(s);
  };
  std::map<int64_t, int64_t> num_kp;
  std::map<int64_t, std::pair<int64_t, int64_t>> size;
  query("SELECT image_id, width, height FROM images JOIN cameras USING(camera_id)",
        [&](sqlite3_stmt* s) {
          size[sqlite3_column_int64(s, 0)] = {sqlite3_column_int64(s, 1),
                                              sqlite3_column_int64(s, 2)};
        });
  query("SELECT image_id, rows, cols, data FROM keypoints", [&](sqlite3_stmt* s) {
    const int64_t id = sqlite3_column_int64(s, 0), rows = sqlite3_column_int64(s, 1);
    EXPECT_EQ(sqlite3_column_int64(s, 2), 6);
    ASSERT_EQ(sqlite3_column_bytes(s, 3), rows * 6 * 4);
    const float* p = static_cast<const float*>(sqlite3_column_blob(s, 3));
    for (int64_t i = 0; i < rows; ++i) {
      EXPECT_GE(p[i * 6], 0.0f);
      EXPECT_LE(p[i * 6], size[id].first);
      EXPECT_LE(p[i * 6 + 1], size[id].second);
      const float scale = std::hypot(p[i * 6 + 2], p[i * 6 + 4]);
      EXPECT_GT(scale, 0.5f);  // SIFT scales, not an identity placeholder
    }
    num_kp[id] = rows;
  });
  ASSERT_EQ(num_kp.size(), folder_->views.size());
  query("SELECT image_id, rows, cols, length(data) FROM descriptors", [&](sqlite3_stmt* s) {
    const int64_t id = sqlite3_column_int64(s, 0), rows = sqlite3_column_int64(s, 1);
    EXPECT_EQ(rows, num_kp[id]);
    EXPECT_EQ(sqlite3_column_int64(s, 2), 128);
    EXPECT_EQ(sqlite3_column_int64(s, 3), rows * 128);
  });
  int pairs = 0;
  query("SELECT pair_id, rows, cols, data FROM matches", [&](sqlite3_stmt* s) {
    const int64_t pair_id = sqlite3_column_int64(s, 0), rows = sqlite3_column_int64(s, 1);
    const int64_t id2 = pair_id % 2147483647, id1 = pair_id / 2147483647;
    EXPECT_LT(id1, id2);
    EXPECT_TRUE(num_kp.count(id1) && num_kp.count(id2));
    EXPECT_EQ(sqlite3_column_int64(s, 2), 2);
    ASSERT_EQ(sqlite3_column_bytes(s, 3), rows * 8);
    const uint32_t* m = static_cast<const uint32_t*>(sqlite3_column_blob(s, 3));
    for (int64_t i = 0; i < rows; ++i) {
      EXPECT_LT(m[2 * i], num_kp[id1]);
      EXPECT_LT(m[2 * i + 1], num_kp[id2]);
    }
    ++pairs;
  });
  EXPECT_EQ(pairs, 15);
  int verified = 0;
  query("SELECT pair_id, rows, config, length(F), length(E), length(H), H FROM "
        "two_view_geometries",
        [&](sqlite3_stmt* s) {
          const int64_t rows = sqlite3_column_int64(s, 1);
          const int config = static_cast<int>(sqlite3_column_int64(s, 2));
          if (rows > 0) {
            EXPECT_EQ(config, 6);
            EXPECT_EQ(sqlite3_column_int64(s, 3), 72);
            EXPECT_EQ(sqlite3_column_int64(s, 4), 72);
            EXPECT_EQ(sqlite3_column_int64(s, 5), 72);
            const double* h = static_cast<const double*>(sqlite3_column_blob(s, 6));
            EXPECT_NEAR(h[8], 1.0, 1e-6);  // row-major, normalised homography
            ++verified;
          } else {
            EXPECT_EQ(config, 1);
            EXPECT_EQ(sqlite3_column_int64(s, 5), 0);
          }
        });
  EXPECT_EQ(verified, 6);
  query("PRAGMA user_version", [&](sqlite3_stmt* s) { EXPECT_EQ(sqlite3_column_int(s, 0), 3900); });
  sqlite3_close(db);
}

TEST_F(BatchTest, StoppedRunResumesToTheSameDatabase) {
  const std::string db = TempDir("resume") + "/r.db";
  BatchOptions o = Options(folder_->dir, db);
  o.max_pairs = 4;
  const BatchSummary first = RunBatch(o);
  ASSERT_EQ(first.stage, BatchStage::kCancelled) << first.error;
  EXPECT_EQ(first.pairs_matched, 4);
  EXPECT_EQ(test::CountRows(db, "two_view_geometries"), 4);
  o.max_pairs = 0;
  const BatchSummary second = RunBatch(o);
  ASSERT_EQ(second.stage, BatchStage::kDone) << second.error;
  EXPECT_EQ(second.images_reused, static_cast<int64_t>(folder_->views.size()));
  EXPECT_EQ(second.images_extracted, 0);
  EXPECT_EQ(second.pairs_previous, 4);
  EXPECT_EQ(second.pairs_matched, 11);
  EXPECT_EQ(test::DumpDatabase(db), test::DumpDatabase(*reference_db_));
  // A third run has nothing left to do and changes nothing.
  const BatchSummary third = RunBatch(o);
  EXPECT_EQ(third.pairs_matched, 0);
  EXPECT_EQ(test::DumpDatabase(db), test::DumpDatabase(*reference_db_));
}

TEST_F(BatchTest, CancelFromTheProgressCallbackThenResume) {
  const std::string db = TempDir("cancel") + "/c.db";
  BatchOptions o = Options(folder_->dir, db);
  o.commit_pairs = 1;
  {
    BatchController c;
    std::vector<BatchProgress> seen;
    c.SetProgressCallback([&](const BatchProgress& p) {
      seen.push_back(p);
      if (p.stage == BatchStage::kMatching && p.done >= 1) c.Cancel();
    });
    c.Start(o);
    c.Wait();
    const BatchSummary s = c.Summary();
    ASSERT_EQ(s.stage, BatchStage::kCancelled) << s.error;
    EXPECT_LT(s.pairs_matched, s.pairs_total);
    EXPECT_GE(s.pairs_matched, 1);
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.front().stage, BatchStage::kExtracting);
    EXPECT_EQ(seen.back().stage, BatchStage::kCancelled);
  }
  o.commit_pairs = 7;
  const BatchSummary s = RunBatch(o);
  ASSERT_EQ(s.stage, BatchStage::kDone) << s.error;
  EXPECT_EQ(test::DumpDatabase(db), test::DumpDatabase(*reference_db_));
}

// A cancel leaves the pairs still queued for verification to the next run. The database writer is
// held in its first progress report for a second, while the search and the one verifier run
// ahead until their queues are full (4 x threads + 16 pairs each); the cancel then commits what
// was verified, at most the writer's queue and the pair under way, not the pairs queued before the
// verifier.
TEST_F(BatchTest, CancelLeavesQueuedPairsToTheNextRun) {
  const test::BatchFolder many =
      test::MakeBatchFolder(TempDir("many"), {"graf1.png", "box_in_scene.png"}, 6, 200);
  const std::string db = TempDir("queued") + "/q.db";
  BatchOptions o = Options(many.dir, db);
  o.match.threads = 1;
  o.commit_pairs = 1;
  BatchSummary s;
  {
    BatchController c;
    bool held = false;  // the writer's thread alone reports matching progress
    c.SetProgressCallback([&](const BatchProgress& p) {
      if (held || p.stage != BatchStage::kMatching || p.done < 1) return;
      held = true;
      std::this_thread::sleep_for(std::chrono::seconds(1));
      c.Cancel();
    });
    c.Start(o);
    c.Wait();
    s = c.Summary();
  }
  ASSERT_EQ(s.stage, BatchStage::kCancelled) << s.error;
  ASSERT_EQ(s.pairs_total, 66);  // 12 views
  // The first pair, the writer's pending one and queue (20), the verifier's pair under way.
  EXPECT_LE(s.pairs_matched, 23);
  EXPECT_EQ(test::CountRows(db, "two_view_geometries"), s.pairs_matched);
  o.commit_pairs = 7;
  const BatchSummary rest = RunBatch(o);
  ASSERT_EQ(rest.stage, BatchStage::kDone) << rest.error;
  EXPECT_EQ(rest.pairs_previous, s.pairs_matched);
  EXPECT_EQ(rest.pairs_previous + rest.pairs_matched, 66);
}

TEST_F(BatchTest, OneRunPerDatabaseAtATime) {
  const std::string dir = TempDir("two_runs");
  const std::string db = dir + "/d.db";
  const BatchOptions o = Options(folder_->dir, db);
  // The first run holds still in its first progress report, so the second surely meets it.
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  BatchController first;
  first.SetProgressCallback([gate](const BatchProgress&) { gate.wait(); });
  first.Start(o);
  std::string refusal = StartRefusal(o);
  EXPECT_NE(refusal.find("in use by another featmatch batch run"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find(db), std::string::npos) << refusal;
  // The same file under another name is the same database.
  fs::create_symlink(db, dir + "/link.db");
  refusal = StartRefusal(Options(folder_->dir, dir + "/link.db"));
  EXPECT_NE(refusal.find("in use by another featmatch batch run"), std::string::npos) << refusal;
  go.set_value();
  first.Wait();
  ASSERT_EQ(first.Summary().stage, BatchStage::kDone) << first.Summary().error;
  EXPECT_EQ(test::DumpDatabase(db), test::DumpDatabase(*reference_db_));
  // The lock ends with the run: nothing is left beside the database, and a rerun starts.
  EXPECT_FALSE(fs::exists(db + "-featmatch.lock"));
  EXPECT_EQ(StartRefusal(o), "");
  EXPECT_EQ(test::DumpDatabase(db), test::DumpDatabase(*reference_db_));
}

TEST_F(BatchTest, ALockFileLeftByAKilledRunDoesNotBlock) {
  // A run killed with SIGKILL leaves its lock file; the kernel released the lock with it.
  const std::string db = TempDir("stale_lock") + "/s.db";
  std::ofstream(db + "-featmatch.lock") << "999999\n";
  EXPECT_EQ(StartRefusal(Options(folder_->dir, db)), "");
  EXPECT_EQ(test::DumpDatabase(db), test::DumpDatabase(*reference_db_));
  EXPECT_FALSE(fs::exists(db + "-featmatch.lock"));
}

TEST_F(BatchTest, BatchingLimitsDoNotChangeResults) {
  const std::string db = TempDir("unbatched") + "/u.db";
  BatchOptions o = Options(folder_->dir, db);
  o.max_batch_images = 1;
  o.match.threads = 1;
  o.commit_pairs = 100;
  ASSERT_EQ(RunBatch(o).stage, BatchStage::kDone);
  EXPECT_EQ(test::DumpDatabase(db), test::DumpDatabase(*reference_db_));
}

// Under auto the backend is chosen once the pairs are known: six small images are searched on the
// CPU, which says why, into the database the CPU backend makes; two views of a photograph of
// about 10000 features each, searched both ways on one thread, are estimated past a GPU's start
// and go to CreateKnnBackend's choice (the GPU where there is one), with no such reason.
TEST_F(BatchTest, AutoChoosesTheBackendByTheJobsSearches) {
  const std::string db = TempDir("auto") + "/a.db";
  BatchOptions o = Options(folder_->dir, db);
  o.backend.kind = BackendKind::kAuto;
  const BatchSummary small = RunBatch(o);
  ASSERT_EQ(small.stage, BatchStage::kDone) << small.error;
  EXPECT_EQ(small.backend.rfind("cpu (", 0), 0u) << small.backend;
  EXPECT_NE(small.backend.find("(auto: the searches, about"), std::string::npos) << small.backend;
  EXPECT_EQ(test::DumpDatabase(db), test::DumpDatabase(*reference_db_));

  const test::BatchFolder large =
      test::MakeBatchFolder(TempDir("aloe"), {"aloeL.jpg"}, 2, 900);
  BatchOptions lo = Options(large.dir, TempDir("aloe_db") + "/l.db");
  lo.backend.kind = BackendKind::kAuto;
  lo.backend.threads = 1;
  lo.match.filter.mutual = true;
  const BatchSummary big = RunBatch(lo);
  ASSERT_EQ(big.stage, BatchStage::kDone) << big.error;
  EXPECT_EQ(big.backend.find("before a GPU would have started"), std::string::npos)
      << big.backend;
  EXPECT_EQ(big.backend.rfind(GpuAvailable() ? "gpu (" : "cpu (", 0), 0u) << big.backend;
}

TEST_F(BatchTest, SequentialPairsNeighboursInNameOrder) {
  const std::string db = TempDir("seq") + "/s.db";
  BatchOptions o = Options(folder_->dir, db);
  o.pairs = PairingOptions::Parse("sequential:2");
  const BatchSummary s = RunBatch(o);
  ASSERT_EQ(s.stage, BatchStage::kDone) << s.error;
  std::set<std::pair<int64_t, int64_t>> got;
  for (const auto& r : ReadPairResults(db)) got.insert({r.image_id1, r.image_id2});
  const std::set<std::pair<int64_t, int64_t>> want = {{1, 2}, {1, 3}, {2, 3}, {2, 4}, {3, 4},
                                                      {3, 5}, {4, 5}, {4, 6}, {5, 6}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(s.pairs_total, 9);
}

TEST_F(BatchTest, QueryFolderAgainstTheFolder) {
  const std::string root = TempDir("query");
  const std::string db_dir = root + "/db", q_dir = root + "/queries";
  fs::create_directories(db_dir);
  fs::create_directories(q_dir);
  // Folder: the two first views of each photograph; queries: the third ones.
  for (const auto& v : folder_->views)
    fs::copy_file(folder_->dir + "/" + v.name,
                  (v.name.find("_02") != std::string::npos ? q_dir : db_dir) + "/" + v.name);
  const std::string db = root + "/q.db";
  BatchOptions o = Options(db_dir, db);
  o.pairs = PairingOptions::Parse("query:" + q_dir);
  const BatchSummary s = RunBatch(o);
  ASSERT_EQ(s.stage, BatchStage::kDone) << s.error;
  EXPECT_EQ(s.pairs_total, 2 * 4);
  ColmapDatabase d(db, ColmapDatabase::Mode::kReadOnly);
  std::map<int64_t, std::string> names;
  for (const auto& im : d.ReadImages()) names[im.image_id] = im.name;
  ASSERT_EQ(names.size(), 6u);
  EXPECT_EQ(names[1], "db/a_00.png");  // names relative to the folder holding both
  EXPECT_EQ(names[5], "queries/a_02.png");
  int verified = 0;
  for (const auto& r : ReadPairResults(db)) {
    const bool q1 = r.name1.rfind("queries/", 0) == 0, q2 = r.name2.rfind("queries/", 0) == 0;
    EXPECT_NE(q1, q2) << "a pair must join a query and a folder image";
    if (r.verified()) {
      ++verified;
      EXPECT_EQ(r.name1.substr(r.name1.find('/') + 1, 1), r.name2.substr(r.name2.find('/') + 1, 1));
    }
  }
  EXPECT_EQ(verified, 4);
}

TEST_F(BatchTest, PairListNamesPairs) {
  const std::string dir = TempDir("list");
  std::ofstream(dir + "/pairs.txt") << "# comment\na_00.png a_02.png\nc_01.png a_00.png\n\n";
  BatchOptions o = Options(folder_->dir, dir + "/l.db");
  o.pairs = PairingOptions::Parse("list:" + dir + "/pairs.txt");
  const BatchSummary s = RunBatch(o);
  ASSERT_EQ(s.stage, BatchStage::kDone) << s.error;
  EXPECT_EQ(s.pairs_total, 2);
  EXPECT_EQ(s.pairs_verified, 1);
  // A list that cannot work is refused when the run starts, before any image is extracted.
  auto refused = [&](const std::string& text, const std::string& fragment) {
    std::ofstream(dir + "/bad.txt") << text;
    o.database = dir + "/bad.db";
    o.pairs = PairingOptions::Parse("list:" + dir + "/bad.txt");
    const std::string why = StartRefusal(o);
    EXPECT_NE(why.find(fragment), std::string::npos) << text << " refusal: '" << why << "'";
    EXPECT_FALSE(fs::exists(dir + "/bad.db")) << text;  // nothing done
  };
  refused("a_00.png nothere.png\n", "nothere.png");
  refused("a_00.png a_00.png\n", "itself");
  refused("a_00.png\n", "two image names");
  refused("a_00.png a_01.png a_02.png\n", "two image names");
}

TEST_F(BatchTest, OtherMatchingSettingsAreRefused) {
  // The reference database's matches were made with the ratio 0.8: a rerun asking for 0.7 would
  // mix two settings in one database (the pairs done before are not matched again).
  BatchOptions o = Options(folder_->dir, *reference_db_);
  o.match.filter.ratio = 0.7f;
  const std::string why = StartRefusal(o);
  EXPECT_NE(why.find("other matching settings"), std::string::npos) << "refusal: '" << why << "'";
  // Inliers counted as they come rather than at distinct points verify other pairs: a database
  // whose pairs were verified by one rule is not completed by the other (one made before the
  // rule was stored lacks the setting and is refused the same way).
  o = Options(folder_->dir, *reference_db_);
  o.match.verify.distinct_points = false;
  const std::string rule = StartRefusal(o);
  EXPECT_NE(rule.find("\"distinct_points\":true"), std::string::npos)
      << "refusal: '" << rule << "'";
  // The same settings, k aside (the filters read two neighbours), complete it as before.
  o = Options(folder_->dir, *reference_db_);
  o.match.k = 5;
  const BatchSummary again = RunBatch(o);
  EXPECT_EQ(again.stage, BatchStage::kDone) << again.error;
  EXPECT_EQ(again.pairs_matched, 0);
}

TEST_F(BatchTest, GuidedRunVerifiesTheSamePairsWithMoreInliersOnTheTruth) {
  const std::string db_path = TempDir("guided") + "/g.db";
  BatchOptions o = Options(folder_->dir, db_path);
  o.match.guided = true;
  const BatchSummary s = RunBatch(o);
  ASSERT_EQ(s.stage, BatchStage::kDone) << s.error;
  EXPECT_EQ(s.pairs_verified, reference_->pairs_verified);
  ColmapDatabase ref(*reference_db_, ColmapDatabase::Mode::kReadOnly);
  ColmapDatabase db(db_path, ColmapDatabase::Mode::kReadOnly);
  int64_t more = 0;
  for (const auto& r : ReadPairResults(db_path)) {
    const auto& va = folder_->views[r.image_id1 - 1];
    const auto& vb = folder_->views[r.image_id2 - 1];
    // The matches table holds the search's matches, as without the guided pass.
    EXPECT_EQ(db.ReadMatches(r.image_id1, r.image_id2), ref.ReadMatches(r.image_id1, r.image_id2));
    if (va.base != vb.base) {
      EXPECT_FALSE(r.verified() && r.inliers > 30) << r.name1 << " " << r.name2;
      continue;
    }
    ASSERT_TRUE(r.verified()) << r.name1 << " " << r.name2;
    const auto before = ref.ReadTwoViewGeometry(r.image_id1, r.image_id2);
    const auto g = db.ReadTwoViewGeometry(r.image_id1, r.image_id2);
    ASSERT_TRUE(before.has_value() && g.has_value());
    EXPECT_GE(g->inlier_matches.size(), before->inlier_matches.size()) << r.name1 << " " << r.name2;
    more += g->inlier_matches.size() > before->inlier_matches.size();
    // Every guided inlier on the views' true homography (keypoints as stored: centres at +0.5).
    const cv::Matx33d truth = vb.H * va.H.inv();
    const auto k1 = db.ReadKeypoints(r.image_id1), k2 = db.ReadKeypoints(r.image_id2);
    int off = 0;
    for (const auto& m : g->inlier_matches) {
      const cv::Vec3d t = truth * cv::Vec3d(k1[m[0]].x - 0.5, k1[m[0]].y - 0.5, 1);
      off += std::hypot(t[0] / t[2] - (k2[m[1]].x - 0.5), t[1] / t[2] - (k2[m[1]].y - 0.5)) > 4.0;
    }
    EXPECT_LE(off, static_cast<int>(g->inlier_matches.size()) / 50) << r.name1 << " " << r.name2;
  }
  EXPECT_GE(more, 4);  // of the 6 pairs of one photograph
  // A guided run's database is not completed by an unguided one, nor the reverse.
  o.match.guided = false;
  EXPECT_NE(StartRefusal(o).find("\"guided\":true"), std::string::npos);
}

TEST_F(BatchTest, AnImageReplacedUnderItsNameIsRefusedOnRerun) {
  const std::string dir = TempDir("replaced");
  fs::create_directories(dir + "/in");
  fs::copy_file(test::Sample("box.png"), dir + "/in/a.png");
  fs::copy_file(test::Sample("box_in_scene.png"), dir + "/in/b.png");
  const BatchOptions o = Options(dir + "/in", dir + "/r.db");
  ASSERT_EQ(RunBatch(o).stage, BatchStage::kDone);
  const BatchSummary same = RunBatch(o);  // unchanged files: reused
  ASSERT_EQ(same.stage, BatchStage::kDone) << same.error;
  EXPECT_EQ(same.images_reused, 2);
  fs::copy_file(test::Sample("graf1.png"), dir + "/in/a.png", fs::copy_options::overwrite_existing);
  const std::string why = StartRefusal(o);
  EXPECT_NE(why.find("a.png changed since"), std::string::npos) << "refusal: '" << why << "'";
}

TEST_F(BatchTest, AnotherApplicationsDatabaseIsNotTakenOver) {
  const std::string dir = TempDir("foreign");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/other.db").c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "CREATE TABLE logos(id INTEGER, name TEXT)", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  const std::string why = StartRefusal(Options(folder_->dir, dir + "/other.db"));
  EXPECT_NE(why.find("none of COLMAP's"), std::string::npos) << "refusal: '" << why << "'";
  ASSERT_EQ(sqlite3_open((dir + "/other.db").c_str(), &raw), SQLITE_OK);  // left as it was
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_master WHERE type='table'", -1, &st,
                     nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

TEST_F(BatchTest, LinksAreNamedAsLinksAndBrokenLinksAreListed) {
  const std::string dir = TempDir("links");
  fs::create_directories(dir + "/in/real");
  fs::copy_file(test::Sample("box.png"), dir + "/in/real/a.png");
  fs::copy_file(test::Sample("box_in_scene.png"), dir + "/in/b.png");
  fs::create_symlink("real/a.png", dir + "/in/a_link.png");              // another image's file
  fs::create_symlink(test::Sample("graf1.png"), dir + "/in/outside.png");  // a file elsewhere
  fs::create_symlink("missing.png", dir + "/in/broken.png");
  const BatchSummary s = RunBatch(Options(dir + "/in", dir + "/l.db"));
  ASSERT_EQ(s.stage, BatchStage::kDone) << s.error;
  ColmapDatabase db(dir + "/l.db", ColmapDatabase::Mode::kReadOnly);
  std::set<std::string> names;
  for (const auto& im : db.ReadImages()) names.insert(im.name);
  EXPECT_EQ(names, (std::set<std::string>{"a_link.png", "b.png", "outside.png", "real/a.png"}));
  bool listed = false;
  for (const auto& f : s.ignored_files)
    listed |= f.path.find("broken.png") != std::string::npos && f.reason == "broken symbolic link";
  EXPECT_TRUE(listed);
}

TEST_F(BatchTest, OtherExtractionSettingsAreRefused) {
  BatchOptions o = Options(folder_->dir, *reference_db_);
  o.sift.contrast_threshold = 0.02;
  const std::string why = StartRefusal(o);
  EXPECT_NE(why.find("other settings"), std::string::npos) << "refusal: '" << why << "'";
}

TEST(BatchErrors, ClearMessagesForUnusableInputs) {
  const std::string dir = TempDir("errors");
  fs::create_directories(dir + "/empty");
  fs::create_directories(dir + "/text");
  std::ofstream(dir + "/text/a.txt") << "x";
  std::ofstream(dir + "/text/b.doc") << "y";
  auto message = [&](const BatchOptions& o) {
    BatchController c;
    try {
      c.Start(o);
    } catch (const BatchError& e) {
      return std::string(e.what());
    }
    c.Wait();
    return std::string("started: ") + BatchStageName(c.Summary().stage);
  };
  EXPECT_NE(message(Options(dir + "/empty", dir + "/o.db")).find("holds no files"),
            std::string::npos);
  EXPECT_NE(message(Options(dir + "/text", dir + "/o.db")).find("no images in the folder"),
            std::string::npos);
  EXPECT_NE(message(Options(dir + "/missing", dir + "/o.db")).find("no such folder"),
            std::string::npos);
  if (::geteuid() != 0 && test::HaveSamples()) {
    const std::string ro = dir + "/readonly";
    fs::create_directories(ro + "/imgs");
    fs::copy_file(test::Sample("box.png"), ro + "/imgs/box.png");
    ::chmod(ro.c_str(), 0555);
    const std::string m = message(Options(ro + "/imgs", ro + "/out.db"));
    EXPECT_NE(m.find("out.db"), std::string::npos) << m;
    EXPECT_EQ(m.find("started"), std::string::npos) << m;
    ::chmod(ro.c_str(), 0755);
  }
  BatchOptions bad = Options(dir + "/text", dir + "/o.db");
  bad.commit_pairs = 0;
  EXPECT_NE(message(bad).find("commit"), std::string::npos);
}

}  // namespace
}  // namespace fm::matcher
