// featmatch-bench cpu: the CPU exact kNN backend against cv::BFMatcher and FAISS's flat index on
// the same descriptors, in the same run. k = 2 (the ratio-test setting).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <opencv2/features2d.hpp>
#include <random>
#include <thread>

#include "bench_util.h"
#include "fm/core/knn.h"
#include "fm/matcher/image.h"
#include "fm/matcher/sift.h"

#ifdef FM_BENCH_HAVE_FAISS
#include <faiss/IndexFlat.h>
#endif

namespace fm::bench {
namespace {

using core::DescriptorMatrix;

// SIFT-like uint8 descriptors: sparse, skewed values clipped at SIFT's cap, in clusters so that
// nearest neighbours are meaningful (not all equidistant as with uniform noise).
DescriptorMatrix SiftLike(int64_t rows, uint32_t seed, int64_t clusters = 512) {
  std::mt19937 rng(seed);
  std::gamma_distribution<float> g(0.6f, 30.0f);
  std::normal_distribution<float> noise(0.f, 12.f);
  std::vector<float> centres(static_cast<std::size_t>(clusters) * 128);
  for (auto& c : centres) c = std::min(g(rng), 160.0f);
  DescriptorMatrix m(core::DescriptorType::kUint8, rows, 128);
  std::uniform_int_distribution<int64_t> pick(0, clusters - 1);
  for (int64_t i = 0; i < rows; ++i) {
    const float* c = centres.data() + pick(rng) * 128;
    for (int j = 0; j < 128; ++j)
      m.u8()[i * 128 + j] = static_cast<uint8_t>(std::clamp(c[j] + noise(rng), 0.f, 255.f));
  }
  return m;
}

cv::Mat AsFloatMat(const DescriptorMatrix& m) {
  cv::Mat out(static_cast<int>(m.rows()), m.dim(), CV_32F);
  for (int64_t i = 0; i < m.rows(); ++i) m.RowAsFloat(i, out.ptr<float>(static_cast<int>(i)));
  return out;
}

void Emit(const std::string& dataset, int64_t q, int64_t n, const std::string& impl,
          const std::vector<double>& t, double agree) {
  nlohmann::json j = {{"bench", "cpu_knn"}, {"dataset", dataset}, {"queries", q},
                      {"corpus", n},        {"dim", 128},         {"k", 2},
                      {"impl", impl},       {"runs", t.size()},   {"median_ms", Median(t)},
                      {"min_ms", *std::min_element(t.begin(), t.end())},
                      {"threads", std::thread::hardware_concurrency()}};
  if (agree >= 0) j["agreement_with_fm_cpu"] = agree;
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

void RunDataset(const std::string& name, const DescriptorMatrix& q, const DescriptorMatrix& c,
                int runs, bool peers) {
  core::KnnParams p;
  p.k = 2;
  auto backend = core::CreateCpuKnnBackend();
  core::KnnResult ours;
  auto t = TimeRuns([&] { ours = backend->Search(q, c, p); }, runs);
  Emit(name, q.rows(), c.rows(), "featmatch-cpu", t, -1);
  // The same backend without the integer kernel: float GEMM through BLAS + the row selection.
  auto blas = core::CreateCpuKnnBackend(core::CpuKnnOptions{false});
  core::KnnResult blas_result;
  t = TimeRuns([&] { blas_result = blas->Search(q, c, p); }, runs);
  Emit(name, q.rows(), c.rows(), "featmatch-cpu-blas", t,
       blas_result.indices == ours.indices ? 1.0 : 0.0);
  if (!peers) return;

  auto agreement = [&](auto index_of) {
    int64_t same = 0;
    for (int64_t i = 0; i < q.rows(); ++i) same += index_of(i) == ours.index(i, 0);
    return static_cast<double>(same) / std::max<int64_t>(1, q.rows());
  };

  cv::Mat qf = AsFloatMat(q), cf = AsFloatMat(c);
  cv::BFMatcher bf(cv::NORM_L2);
  std::vector<std::vector<cv::DMatch>> bfm;
  t = TimeRuns([&] { bf.knnMatch(qf, cf, bfm, 2); }, runs);
  Emit(name, q.rows(), c.rows(), "cv::BFMatcher", t,
       agreement([&](int64_t i) { return bfm[i].empty() ? -1 : int64_t{bfm[i][0].trainIdx}; }));

#ifdef FM_BENCH_HAVE_FAISS
  faiss::IndexFlatL2 index(128);
  index.add(c.rows(), cf.ptr<float>());
  std::vector<float> fd(static_cast<std::size_t>(q.rows()) * 2);
  std::vector<faiss::Index::idx_t> fi(fd.size());
  t = TimeRuns([&] { index.search(q.rows(), qf.ptr<float>(), 2, fd.data(), fi.data()); }, runs);
  Emit(name, q.rows(), c.rows(), "faiss::IndexFlatL2", t,
       agreement([&](int64_t i) { return static_cast<int64_t>(fi[i * 2]); }));
#endif
}

int RunCpuBench(const std::vector<std::string>& args) {
  const int runs = std::stoi(ArgValue(args, "--runs", "9"));
  const std::string data = ArgValue(args, "--data", "/usr/share/doc/opencv-doc/examples/data");
  const std::string only = ArgValue(args, "--only", "");
  const bool peers = !HasFlag(args, "--no-peers");
  if (only.empty() || only == "graf") {
    matcher::SiftOptions sift;
    auto a = matcher::ExtractFeatures(matcher::LoadGrayImage(data + "/graf1.png"), sift);
    auto b = matcher::ExtractFeatures(matcher::LoadGrayImage(data + "/graf3.png"), sift);
    RunDataset("graf1-graf3-sift", a.descriptors, b.descriptors, runs, peers);
  }
  if (only.empty() || only == "10k") {
    RunDataset("siftlike-10k", SiftLike(10000, 1), SiftLike(10000, 2), std::max(3, runs / 2),
               peers);
  }
  if (only.empty() || only == "100k") {
    RunDataset("siftlike-100k", SiftLike(10000, 3), SiftLike(100000, 4), 3, peers);
  }
  return 0;
}

FM_REGISTER_BENCH("cpu", "CPU exact kNN (k=2) vs cv::BFMatcher and FAISS flat, [--runs N] "
                  "[--only graf|10k|100k] [--no-peers]", RunCpuBench);

}  // namespace
}  // namespace fm::bench
