// featmatch-bench batch-gpu: the matching stage of an exhaustive batch on the GPU engine.
// 100 images x 4000 SIFT descriptors (drawn from real SIFT descriptors, perturbed), all 4950
// pairs: for each image j, the descriptors of every image i < j are searched at once against j
// (k = 2; exactly the per-pair result, since the corpus of each search is one image), then Lowe's
// ratio test per query. Reports pairs per second; no OpenCV needed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "fm/core/feature_io.h"
#include "fm/gpu/index.h"
#include "fm/gpu/resources.h"

namespace fm::bench {
namespace {

// Per image: descriptors drawn from a pool of real SIFT rows with a little noise, so nearest
// neighbours and ratio tests behave as on photographs.
std::vector<uint8_t> MakeImages(const std::vector<uint8_t>& pool, int64_t pool_rows, int images,
                                int64_t features, uint32_t seed) {
  std::vector<uint8_t> out(static_cast<std::size_t>(images) * features * 128);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, pool_rows - 1);
  std::normal_distribution<float> noise(0.f, 6.f);
  for (int64_t r = 0; r < images * features; ++r) {
    const uint8_t* src = pool.data() + pick(rng) * 128;
    for (int j = 0; j < 128; ++j)
      out[r * 128 + j] = static_cast<uint8_t>(std::clamp(src[j] + noise(rng), 0.f, 255.f));
  }
  return out;
}

int RunBatchGpu(const std::vector<std::string>& args) {
  if (gpu::DeviceCount() == 0) {
    std::fprintf(stderr, "batch-gpu: no CUDA device\n");
    return 1;
  }
  const int images = std::stoi(ArgValue(args, "--images", "100"));
  const int64_t features = std::stoll(ArgValue(args, "--features", "4000"));
  const int runs = std::stoi(ArgValue(args, "--runs", "5"));
  const float ratio = std::stof(ArgValue(args, "--ratio", "0.8"));
  const std::string dir = ArgValue(args, "--data", std::string(FM_SOURCE_DIR) + "/tests/gpu/data");

  std::vector<uint8_t> pool;
  int64_t pool_rows = 0;
  for (const char* f : {"graf1_sift.fmf", "graf3_sift.fmf"}) {
    auto feats = core::ReadFeatureFile(dir + "/" + f);
    pool.insert(pool.end(), feats.descriptors.u8(),
                feats.descriptors.u8() + feats.descriptors.size_bytes());
    pool_rows += feats.descriptors.rows();
  }
  const std::vector<uint8_t> data = MakeImages(pool, pool_rows, images, features, 7);
  const int64_t pairs = static_cast<int64_t>(images) * (images - 1) / 2;

  gpu::IndexOptions io;
  io.type = gpu::ElementType::kUint8;
  io.dim = 128;
  gpu::Index index(io);
  const int64_t max_q = static_cast<int64_t>(images - 1) * features;
  std::vector<float> dist(static_cast<std::size_t>(max_q) * 2);
  std::vector<int64_t> idx(dist.size());
  int64_t matches = 0;
  auto one_batch = [&] {
    matches = 0;
    for (int j = 1; j < images; ++j) {
      index.Reset();
      index.AddUint8(data.data() + static_cast<std::size_t>(j) * features * 128, features);
      const int64_t nq = static_cast<int64_t>(j) * features;  // images 0 .. j-1
      index.Search(data.data(), nq, 2, dist.data(), idx.data());
      const float r2 = ratio * ratio;
      for (int64_t q = 0; q < nq; ++q)
        matches += idx[q * 2 + 1] >= 0 && dist[q * 2] < r2 * dist[q * 2 + 1];
    }
  };
  const auto t = TimeRuns(one_batch, runs, 1);
  const double ms = Median(t);
  std::printf(
      "{\"bench\":\"batch_gpu_matching\",\"device\":\"%s\",\"images\":%d,\"features\":%lld,"
      "\"pairs\":%lld,\"k\":2,\"ratio\":%.2f,\"runs\":%d,\"median_ms\":%.3f,"
      "\"pairs_per_s\":%.1f,\"ratio_matches_total\":%lld,\"index\":\"%s\"}\n",
      gpu::GetDeviceInfo(0).name.c_str(), images, static_cast<long long>(features),
      static_cast<long long>(pairs), ratio, runs, ms, pairs / (ms / 1000.0),
      static_cast<long long>(matches), index.Describe().c_str());
  return 0;
}

// The kNN part of one logo query: a scene's SIFT descriptors (graf3, 3498 rows) against a
// library of `--library` descriptors resident on the GPU (loaded once, as `featmatch logos query`
// keeps it), k = 16 as the logo query uses. Median of `--runs` searches.
int RunLogosGpu(const std::vector<std::string>& args) {
  if (gpu::DeviceCount() == 0) {
    std::fprintf(stderr, "logos-gpu: no CUDA device\n");
    return 1;
  }
  const int64_t library = std::stoll(ArgValue(args, "--library", "1048576"));
  const int64_t k = std::stoll(ArgValue(args, "--k", "16"));
  const int runs = std::stoi(ArgValue(args, "--runs", "20"));
  const std::string dir = ArgValue(args, "--data", std::string(FM_SOURCE_DIR) + "/tests/gpu/data");
  auto g1 = core::ReadFeatureFile(dir + "/graf1_sift.fmf");
  auto scene = core::ReadFeatureFile(dir + "/graf3_sift.fmf");
  const std::vector<uint8_t> pool(g1.descriptors.u8(),
                                  g1.descriptors.u8() + g1.descriptors.size_bytes());
  const std::vector<uint8_t> lib = MakeImages(pool, g1.descriptors.rows(), 1, library, 11);
  gpu::IndexOptions io;
  gpu::Index index(io);
  index.AddUint8(lib.data(), library);
  const int64_t nq = scene.descriptors.rows();
  std::vector<float> dist(static_cast<std::size_t>(nq * k));
  std::vector<int64_t> idx(dist.size());
  const auto t = TimeRuns(
      [&] { index.Search(scene.descriptors.u8(), nq, k, dist.data(), idx.data()); }, runs, 2);
  std::printf(
      "{\"bench\":\"logo_query_knn_gpu\",\"device\":\"%s\",\"queries\":%lld,\"library\":%lld,"
      "\"k\":%lld,\"runs\":%d,\"median_ms\":%.3f,\"min_ms\":%.3f,\"path\":\"%s\"}\n",
      gpu::GetDeviceInfo(0).name.c_str(), static_cast<long long>(nq),
      static_cast<long long>(library), static_cast<long long>(k), runs, Median(t),
      *std::min_element(t.begin(), t.end()), index.last_stats().path.c_str());
  return 0;
}

FM_REGISTER_BENCH("logos-gpu",
                  "kNN part of one logo query: a scene (3498 SIFT) against a 1M-descriptor "
                  "library resident on the GPU, k=16 [--library N --k N --runs N]",
                  RunLogosGpu);

FM_REGISTER_BENCH("batch-gpu",
                  "matching stage of an exhaustive batch (100 images x 4000 SIFT) on the GPU "
                  "engine, pairs/s [--images N --features N --runs N]",
                  RunBatchGpu);

}  // namespace
}  // namespace fm::bench
