// featmatch-bench batch: the matching stage of `featmatch batch` (exhaustive pairs, features
// already in the database): pairs per second through BatchController, and the same kNN work done
// pair by pair for comparison.
//
// Features: N images x F SIFT-like features built from real SIFT descriptors of the OpenCV sample
// photographs. Images come in scenes of `--scene` images; images of one scene share most of their
// features (a real descriptor plus noise, keypoints moved by a per-image affine map), the rest are
// other real descriptors, so the ratio test keeps true matches and rejects most others as on real
// photographs.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench_util.h"
#include "fm/core/filters.h"
#include "fm/core/timer.h"
#include "fm/matcher/batch.h"
#include "fm/matcher/colmap_database.h"
#include "fm/matcher/image.h"
#include "fm/matcher/sift.h"

namespace fm::bench {
namespace {

namespace fs = std::filesystem;

// Real SIFT descriptors from the sample photographs.
core::DescriptorMatrix RealPool(const std::string& dir, int64_t want) {
  core::DescriptorMatrix pool(core::DescriptorType::kUint8, 0, 128);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto ext = e.path().extension().string();
    if (ext == ".jpg" || ext == ".png") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  matcher::SiftOptions so;
  so.max_features = 3000;
  for (const auto& f : files) {
    if (pool.rows() >= want) break;
    try {
      const cv::Mat img = matcher::LoadGrayImage(f.string());
      if (img.cols < 200 || img.rows < 200) continue;
      pool.Append(matcher::ExtractFeatures(img, so).descriptors);
    } catch (const std::exception&) {
    }
  }
  return pool;
}

void Fill(const std::string& db_path, const core::DescriptorMatrix& pool, int images, int features,
          int scene, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, pool.rows() - 1);
  std::normal_distribution<float> noise(0.f, 6.f);
  std::uniform_real_distribution<float> ux(0.f, 1600.f), uy(0.f, 1200.f), u01(0.f, 1.f);
  matcher::ColmapDatabase db(db_path, matcher::ColmapDatabase::Mode::kReadWrite);
  matcher::ColmapDatabase::Transaction tx(db);
  std::vector<int64_t> base;
  std::vector<std::pair<float, float>> base_xy;
  for (int i = 0; i < images; ++i) {
    if (i % scene == 0) {  // a new scene
      base.resize(features);
      base_xy.resize(features);
      for (int f = 0; f < features; ++f) {
        base[f] = pick(rng);
        base_xy[f] = {ux(rng), uy(rng)};
      }
    }
    const float a = 1.0f + 0.05f * (u01(rng) - 0.5f), b = 0.05f * (u01(rng) - 0.5f);
    const float tx_ = 40 * (u01(rng) - 0.5f), ty = 40 * (u01(rng) - 0.5f);
    core::DescriptorMatrix d(core::DescriptorType::kUint8, features, 128);
    std::vector<matcher::ColmapKeypoint> kps(features);
    for (int f = 0; f < features; ++f) {
      const bool shared = u01(rng) < 0.5f;
      const int64_t src = shared ? base[f] : pick(rng);
      for (int j = 0; j < 128; ++j) {
        float v = pool.u8()[src * 128 + j] + (shared ? noise(rng) : 0.f);
        d.u8()[static_cast<int64_t>(f) * 128 + j] =
            static_cast<uint8_t>(std::clamp(v, 0.f, 255.f));
      }
      const auto [x, y] = shared ? base_xy[f] : std::make_pair(ux(rng), uy(rng));
      kps[f].x = a * x + b * y + tx_;
      kps[f].y = -b * x + a * y + ty;
    }
    const int64_t cam = db.AddCamera(matcher::DefaultCamera(1600, 1200));
    char name[32];
    std::snprintf(name, sizeof name, "img_%04d.jpg", i);
    const int64_t id = db.AddImage({0, name, cam});
    db.WriteKeypoints(id, kps);
    db.WriteDescriptors(id, d);
  }
  tx.Commit();
}

int RunBatchBench(const std::vector<std::string>& args) {
  const int images = std::stoi(ArgValue(args, "--images", "100"));
  const int features = std::stoi(ArgValue(args, "--features", "4000"));
  const int scene = std::stoi(ArgValue(args, "--scene", "5"));
  const int64_t max_pairs = std::stoll(ArgValue(args, "--max-pairs", "0"));
  const int threads = std::stoi(ArgValue(args, "--threads", "0"));
  const std::string model = ArgValue(args, "--model", "none");
  const std::string backend = ArgValue(args, "--backend", "auto");
  const std::string data = ArgValue(args, "--data", "/usr/share/doc/opencv-doc/examples/data");
  const std::string work =
      ArgValue(args, "--work", (fs::temp_directory_path() / "fm_bench_batch").string());
  const bool per_pair = HasFlag(args, "--per-pair");

  fs::remove_all(work);
  fs::create_directories(work);
  core::Stopwatch sw;
  const core::DescriptorMatrix pool = RealPool(data, 60000);
  if (pool.rows() < 1000) {
    std::fprintf(stderr, "bench batch: too few SIFT descriptors from %s\n", data.c_str());
    return 1;
  }
  const std::string db_path = work + "/bench.db";
  Fill(db_path, pool, images, features, scene, 1234);
  std::fprintf(stderr, "bench batch: pool %lld real SIFT descriptors, database ready in %.1f s\n",
               static_cast<long long>(pool.rows()), sw.ElapsedMs() / 1000);
  // The batch needs a folder; an image per database row is not needed since features exist, but
  // the folder scan wants the names: write tiny placeholder files with the same names.
  const std::string folder = work + "/images";
  fs::create_directories(folder);
  {
    matcher::ColmapDatabase db(db_path, matcher::ColmapDatabase::Mode::kReadWrite);
    db.SetSetting("sift", matcher::SiftOptions{}.ToJson());
    for (const auto& im : db.ReadImages()) std::ofstream(folder + "/" + im.name) << "x";
  }

  matcher::BatchOptions o;
  o.folder = folder;
  o.database = db_path;
  o.match.threads = threads;
  o.match.verify.model = matcher::ParseGeometryModel(model);
  o.backend.kind = matcher::ParseBackendKind(backend);
  o.max_pairs = max_pairs;
  o.commit_pairs = 512;
  if (per_pair) o.max_batch_images = 1;
  matcher::BatchController c;
  c.Start(o);
  c.Wait();
  const matcher::BatchSummary s = c.Summary();
  if (s.stage == matcher::BatchStage::kFailed) {
    std::fprintf(stderr, "bench batch: %s\n", s.error.c_str());
    return 1;
  }
  int64_t matches = 0, inliers = 0, n = 0;
  for (const auto& r : matcher::ReadPairResults(db_path)) {
    matches += r.matches;
    inliers += r.inliers;
    ++n;
  }
  nlohmann::json j = {
      {"bench", "batch"},
      {"stage", "matching"},
      {"images", images},
      {"features", features},
      {"scene_size", scene},
      {"pairs_total", s.pairs_total},
      {"pairs_measured", s.pairs_matched},
      {"batching", per_pair ? "one pair per kNN search" : "batched"},
      {"model", model},
      {"backend", s.backend},
      {"threads", threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency())},
      {"match_seconds", s.match_seconds},
      {"pairs_per_second", s.match_pairs_per_second},
      {"mean_matches_per_pair", n ? static_cast<double>(matches) / n : 0},
      {"mean_inliers_per_pair", n ? static_cast<double>(inliers) / n : 0}};
  std::printf("%s\n", j.dump().c_str());
  fs::remove_all(work);
  return 0;
}

FM_REGISTER_BENCH("batch",
                  "batch matching stage: exhaustive pairs of N images x F SIFT-like features "
                  "(--images 100 --features 4000 --max-pairs 0 --model none --per-pair)",
                  RunBatchBench);

}  // namespace
}  // namespace fm::bench
