// featmatch-bench logos: the kNN part of one logo query (all descriptors of one scene against a
// logo library of a million descriptors or more), featmatch's backend against cv::BFMatcher and
// FAISS IndexFlatL2 in the same run.
//
// The library is built from real SIFT descriptors of the OpenCV sample photographs (each photo
// also at 0.7x and rotated), then filled up to --library rows with copies of those descriptors
// under small random perturbations (uint8 values +-4, clamped), so that the distance
// distribution stays that of SIFT. The scene is graf3.png (about 3,500 descriptors).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <opencv2/features2d.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <thread>

#include "bench_util.h"
#include "fm/core/knn.h"
#include "fm/matcher/backend.h"
#include "fm/matcher/sift.h"

#ifdef FM_BENCH_HAVE_FAISS
#include <faiss/IndexFlat.h>
#endif

namespace fm::bench {
namespace {

namespace fs = std::filesystem;

std::string SampleDir() {
  if (const char* env = std::getenv("FM_SAMPLE_DATA")) return env;
  return "/usr/share/doc/opencv-doc/examples/data";
}

core::DescriptorMatrix RealDescriptors(const std::string& dir, const std::string& skip) {
  core::DescriptorMatrix all;
  matcher::SiftOptions sift;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (ext != ".jpg" && ext != ".png") continue;
    if (e.path().filename() == skip) continue;
    cv::Mat img = cv::imread(e.path().string(), cv::IMREAD_GRAYSCALE);
    if (img.empty() || img.cols < 64 || img.rows < 64) continue;
    cv::Mat small, rot;
    cv::resize(img, small, cv::Size(), 0.7, 0.7, cv::INTER_AREA);
    cv::rotate(img, rot, cv::ROTATE_90_CLOCKWISE);
    for (const cv::Mat* m : {&img, &small, &rot}) {
      core::Features f = matcher::ExtractFeatures(*m, sift);
      if (f.size() == 0) continue;
      if (all.rows() == 0)
        all = f.descriptors;
      else
        all.Append(f.descriptors);
    }
  }
  return all;
}

core::DescriptorMatrix FillTo(const core::DescriptorMatrix& real, int64_t rows, uint64_t seed) {
  core::DescriptorMatrix out(core::DescriptorType::kUint8, rows, real.dim());
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(real.rows() - 1));
  std::uniform_int_distribution<int> jitter(-4, 4);
  const int32_t d = real.dim();
  for (int64_t r = 0; r < rows; ++r) {
    const bool copy = r < real.rows();
    const uint8_t* src = real.u8() + (copy ? r : pick(rng)) * d;
    uint8_t* dst = out.u8() + r * d;
    for (int32_t j = 0; j < d; ++j)
      dst[j] =
          copy ? src[j]
               : static_cast<uint8_t>(std::clamp(static_cast<int>(src[j]) + jitter(rng), 0, 255));
  }
  return out;
}

cv::Mat AsFloatMat(const core::DescriptorMatrix& m) {
  cv::Mat u(static_cast<int>(m.rows()), m.dim(), CV_8U, const_cast<uint8_t*>(m.u8()));
  cv::Mat f;
  u.convertTo(f, CV_32F);
  return f;
}

void Print(const std::string& algo, int64_t q, int64_t n, int32_t d, int64_t k,
           const std::vector<double>& times, double agreement, const std::string& note) {
  const double med = Median(times);
  nlohmann::json j = {{"bench", "logos"},
                      {"algorithm", algo},
                      {"queries", q},
                      {"library", n},
                      {"dim", d},
                      {"k", k},
                      {"median_ms", med},
                      {"runs_ms", times},
                      {"gflops", 2.0 * q * n * d / (med * 1e6)},
                      {"top1_agreement_with_fm", agreement},
                      {"threads", std::thread::hardware_concurrency()},
                      {"note", note}};
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

// Fraction of queries whose nearest index equals the reference's (or whose distance ties it).
double Agreement(const std::vector<int64_t>& ref_idx, const std::vector<float>& ref_dist,
                 int64_t ref_k, const std::vector<int64_t>& idx, const std::vector<float>& dist,
                 int64_t k, int64_t q) {
  int64_t same = 0;
  for (int64_t i = 0; i < q; ++i) {
    const float a = ref_dist[i * ref_k], b = dist[i * k];
    if (ref_idx[i * ref_k] == idx[i * k] || std::abs(a - b) <= 1e-4f * std::max(1.0f, a)) ++same;
  }
  return static_cast<double>(same) / static_cast<double>(q);
}

int RunLogosBench(const std::vector<std::string>& args) {
  const int64_t rows = std::stoll(ArgValue(args, "--library", "1048576"));
  const int64_t k = std::stoll(ArgValue(args, "--k", "16"));
  const int runs = std::stoi(ArgValue(args, "--runs", "3"));
  const std::string scene_name = ArgValue(args, "--scene", "graf3.png");
  const bool skip_bf = HasFlag(args, "--no-bf");
  const std::string dir = SampleDir();

  cv::Mat scene = cv::imread((fs::path(dir) / scene_name).string(), cv::IMREAD_GRAYSCALE);
  if (scene.empty()) {
    std::fprintf(stderr, "featmatch-bench logos: cannot read %s in %s\n", scene_name.c_str(),
                 dir.c_str());
    return 1;
  }
  const core::Features sf = matcher::ExtractFeatures(scene, matcher::SiftOptions{});
  const core::DescriptorMatrix real = RealDescriptors(dir, scene_name);
  const core::DescriptorMatrix lib = FillTo(real, rows, 12345);
  const core::DescriptorMatrix& q = sf.descriptors;
  std::fprintf(stderr, "scene %s: %lld descriptors; library %lld rows (%lld real SIFT)\n",
               scene_name.c_str(), static_cast<long long>(q.rows()),
               static_cast<long long>(lib.rows()), static_cast<long long>(real.rows()));

  core::KnnParams p;
  p.k = k;
  std::string note;
  auto backend = matcher::CreateKnnBackend(matcher::BackendOptions{}, &note);
  core::KnnResult ref;
  auto t_fm = TimeRuns([&] { ref = backend->Search(q, lib, p); }, runs, 1);
  Print("fm-" + backend->name(), q.rows(), lib.rows(), q.dim(), k, t_fm, 1.0,
        backend->description());

  const cv::Mat qf = AsFloatMat(q);
  const cv::Mat lf = AsFloatMat(lib);
#ifdef FM_BENCH_HAVE_FAISS
  {
    faiss::IndexFlatL2 index(q.dim());
    index.add(lf.rows, lf.ptr<float>());
    std::vector<float> dist(static_cast<std::size_t>(q.rows() * k));
    std::vector<faiss::Index::idx_t> idx(dist.size());
    auto t = TimeRuns([&] { index.search(qf.rows, qf.ptr<float>(), k, dist.data(), idx.data()); },
                      runs, 1);
    std::vector<int64_t> idx64(idx.begin(), idx.end());
    Print("faiss-IndexFlatL2", q.rows(), lib.rows(), q.dim(), k, t,
          Agreement(ref.indices, ref.distances, ref.k, idx64, dist, k, q.rows()),
          "float32 copy of the uint8 descriptors");
  }
#endif
  if (!skip_bf) {
    cv::BFMatcher bf(cv::NORM_L2);
    std::vector<std::vector<cv::DMatch>> m;
    std::vector<double> t;
    try {
      t = TimeRuns([&] { bf.knnMatch(qf, lf, m, static_cast<int>(k)); }, runs, 1);
    } catch (const cv::Exception& e) {
      // cv::BFMatcher packs the train index into 20 bits: a train set of 2^20 rows or more is
      // refused with an assertion. Reported as a result, not as a failure of the benchmark.
      std::printf("{\"algorithm\":\"cv-BFMatcher\",\"bench\":\"logos\",\"library\":%lld,"
                  "\"error\":\"cv::BFMatcher refuses a train set of this size (%s)\"}\n",
                  static_cast<long long>(lib.rows()),
                  e.err.c_str());
      return 0;
    }
    std::vector<int64_t> idx(static_cast<std::size_t>(q.rows() * k), -1);
    std::vector<float> dist(idx.size(), 0);
    for (std::size_t i = 0; i < m.size(); ++i)
      for (std::size_t j = 0; j < m[i].size() && j < static_cast<std::size_t>(k); ++j) {
        idx[i * k + j] = m[i][j].trainIdx;
        dist[i * k + j] = m[i][j].distance * m[i][j].distance;
      }
    Print("cv-BFMatcher", q.rows(), lib.rows(), q.dim(), k, t,
          Agreement(ref.indices, ref.distances, ref.k, idx, dist, k, q.rows()),
          "NORM_L2 on float32; distances squared for the comparison");
  }
  return 0;
}

FM_REGISTER_BENCH("logos", "kNN of one scene against a logo library of >= 1M descriptors "
                  "[--library N] [--k K] [--runs R] [--scene FILE] [--no-bf]",
                  RunLogosBench);

}  // namespace
}  // namespace fm::bench
