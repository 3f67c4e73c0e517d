// The kNN backends by name (fm::backend): the CPU backend, and where a GPU is present the GPU
// backend that `--backend gpu` and `auto` run on (the device index behind core::KnnBackend: its
// uploads, its registered corpus, its fallbacks), against the brute-force reference. Built
// without OpenCV, so that these run on machines that have CUDA alone; the GPU tests skip, saying
// so, where no GPU can be used.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../knn_test_data.h"
#include "fm/core/knn.h"
#include "fm/matcher/backend.h"

namespace fm::matcher {
namespace {

using test::RandomF32;
using test::RandomU8;

// Where no GPU can be used the GPU tests skip, saying so; with FM_REQUIRE_GPU=1 (set by
// bench/device_check.sh on the GPU machine) that is a failure, so that a backend left out of the
// build, or a device the process cannot reach, is not read as a pass.
bool GpuRequired() {
  const char* v = std::getenv("FM_REQUIRE_GPU");
  return v && std::string(v) == "1";
}
#define FM_REQUIRE_GPU()                                                                \
  do {                                                                                  \
    if (!GpuAvailable()) {                                                              \
      if (GpuRequired()) FAIL() << "FM_REQUIRE_GPU=1 but the GPU backend cannot be used"; \
      GTEST_SKIP() << "no usable GPU: GPU backend test skipped";                          \
    }                                                                                   \
  } while (0)

std::unique_ptr<core::KnnBackend> Backend(BackendKind kind) {
  BackendOptions o;
  o.kind = kind;
  return CreateKnnBackend(o);
}

using test::ExpectSame;

// Float scoring: every distance within `tol` of the reference's, every row the reference's where
// the reference's neighbours are further apart than that (elsewhere a tie within rounding).
void ExpectClose(const core::KnnResult& got, const core::KnnResult& want, double tol) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.k, want.k);
  for (int64_t q = 0; q < got.rows; ++q)
    for (int64_t j = 0; j < got.k; ++j) {
      const double d = want.distance(q, j);
      ASSERT_NEAR(got.distance(q, j), d, tol * std::max(1.0, std::abs(d))) << q << " " << j;
      const bool apart =
          (j == 0 || d - want.distance(q, j - 1) > 2 * tol * std::max(1.0, std::abs(d))) &&
          (j + 1 == got.k || want.distance(q, j + 1) - d > 2 * tol * std::max(1.0, std::abs(d)));
      if (apart) ASSERT_EQ(got.index(q, j), want.index(q, j)) << q << " " << j;
    }
}

TEST(GpuBackend, SearchesAsTheReferenceDoes) {
  FM_REQUIRE_GPU();
  auto b = Backend(BackendKind::kGpu);
  EXPECT_EQ(b->name(), "gpu");
  std::string device;
  ASSERT_TRUE(GpuAvailable(&device));
  EXPECT_NE(b->description().find(device), std::string::npos) << b->description();
  const auto qu = RandomU8(300, 128, 1), cu = RandomU8(5000, 128, 2);
  const auto qf = RandomF32(300, 64, 3), cf = RandomF32(5000, 64, 4);
  for (const core::Metric metric : {core::Metric::kL2Squared, core::Metric::kInnerProduct,
                                    core::Metric::kCosine}) {
    SCOPED_TRACE(core::MetricName(metric));
    core::KnnParams p;
    p.k = 8;
    p.metric = metric;
    if (metric == core::Metric::kCosine) {
      ExpectClose(b->Search(qu, cu, p), core::BruteForceKnn(qu, cu, p), 2e-5);
    } else {
      ExpectSame(b->Search(qu, cu, p), core::BruteForceKnn(qu, cu, p));
    }
    ExpectClose(b->Search(qf, cf, p), core::BruteForceKnn(qf, cf, p), 1e-4);
  }
}

TEST(GpuBackend, ARegisteredCorpusIsSearchedAsTheSameSearchWouldBe) {
  FM_REQUIRE_GPU();
  auto b = Backend(BackendKind::kGpu);
  const auto q = RandomU8(200, 128, 5), c = RandomU8(3000, 128, 6), other = RandomU8(700, 128, 7);
  core::KnnParams p;
  p.k = 5;
  b->SetCorpus(c);
  ExpectSame(b->SearchCorpus(q, p), core::BruteForceKnn(q, c, p));
  // A one-off search in between leaves the registered corpus as it was.
  ExpectSame(b->Search(q, other, p), core::BruteForceKnn(q, other, p));
  ExpectSame(b->SearchCorpus(q, p), core::BruteForceKnn(q, c, p));
  p.metric = core::Metric::kInnerProduct;  // another metric: uploaded again for it
  ExpectSame(b->SearchCorpus(q, p), core::BruteForceKnn(q, c, p));
  b->SetCorpus(other);
  ExpectSame(b->SearchCorpus(q, p), core::BruteForceKnn(q, other, p));
  b->ClearCorpus();
  EXPECT_THROW(b->SearchCorpus(q, p), std::logic_error);
}

TEST(GpuBackend, KAboveTheDeviceLimitRunsOnTheCpuUnderAutoOnly) {
  FM_REQUIRE_GPU();
  const auto q = RandomU8(40, 32, 8), c = RandomU8(3000, 32, 9);
  core::KnnParams p;
  p.k = 2100;  // above the device engine's 2048
  ExpectSame(Backend(BackendKind::kAuto)->Search(q, c, p), core::BruteForceKnn(q, c, p));
  try {
    Backend(BackendKind::kGpu)->Search(q, c, p);
    ADD_FAILURE() << "the GPU backend took k = 2100";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("use --backend auto or cpu"), std::string::npos)
        << e.what();
  }
}

TEST(GpuBackend, EmptyInputsGivePaddingAndBadOnesAreRefused) {
  FM_REQUIRE_GPU();
  auto b = Backend(BackendKind::kGpu);
  const auto q = RandomU8(4, 16, 10);
  core::DescriptorMatrix none(core::DescriptorType::kUint8, 0, 16);
  core::KnnParams p;
  p.k = 3;
  const core::KnnResult r = b->Search(q, none, p);
  ASSERT_EQ(r.rows, 4);
  for (int64_t i = 0; i < 4 * 3; ++i) EXPECT_EQ(r.indices[i], -1);
  EXPECT_EQ(b->Search(none, q, p).rows, 0);
  EXPECT_THROW(b->Search(q, RandomU8(4, 32, 11), p), std::invalid_argument);
  p.k = 0;
  EXPECT_THROW(b->Search(q, q, p), std::invalid_argument);
}

// The CPU's estimated time scales with the pairs, the searches, the dimension and the threads,
// and sits at the figure measured on the H200 host for a large pair of photographs.
TEST(Backends, TheCpuEstimateFollowsTheWork) {
  SearchWork box;  // box.png -> box_in_scene.png
  box.queries = 604;
  box.corpus = 969;
  box.dim = 128;
  const double t = EstimatedCpuSeconds(box, 1);
  EXPECT_GT(t, 0.0);
  EXPECT_LT(t, 0.01);
  SearchWork w = box;
  w.searches = 2;
  EXPECT_DOUBLE_EQ(EstimatedCpuSeconds(w, 1), 2 * t);
  w = box;
  w.float_descriptors = true;
  EXPECT_DOUBLE_EQ(EstimatedCpuSeconds(w, 1), 2 * t);
  w = box;
  w.dim = 256;
  EXPECT_DOUBLE_EQ(EstimatedCpuSeconds(w, 1), 2 * t);
  EXPECT_DOUBLE_EQ(EstimatedCpuSeconds(box, 4), t / 4);
  // aloeL.jpg -> aloeR.jpg on the 16 threads of the H200 host, where 60-81 ms were measured.
  SearchWork aloe{23255, 23503, 128, false, 1};
  EXPECT_NEAR(EstimatedCpuSeconds(aloe, 16), 0.081, 0.02);
}

// `match` (one or two searches a process): auto takes the CPU where it is estimated to finish
// before a GPU would have started, the GPU (where present) beyond; a backend asked for by name
// is the one asked for.
TEST(Backends, AutoTakesTheCpuForASearchThatEndsBeforeAGpuWouldStart) {
  SearchWork small{604, 969, 128, false, 2};
  BackendOptions o;  // auto
  std::string note;
  auto b = CreateKnnBackendFor(o, small, &note);
  EXPECT_EQ(b->description().rfind("cpu", 0), 0u) << b->description();
  EXPECT_NE(note.find("auto: the searches, about"), std::string::npos) << note;
  EXPECT_NE(note.find("end before a GPU would have started"), std::string::npos) << note;
  // The search it makes is the CPU backend's.
  const auto q = RandomU8(60, 128, 21), c = RandomU8(90, 128, 22);
  core::KnnParams p;
  p.k = 2;
  ExpectSame(b->Search(q, c, p), core::BruteForceKnn(q, c, p));
  // Asked for by name, each backend is what was asked for whatever the work.
  o.kind = BackendKind::kCpu;
  note.clear();
  EXPECT_EQ(CreateKnnBackendFor(o, small, &note)->description().rfind("cpu", 0), 0u);
  EXPECT_NE(note.find("(requested)"), std::string::npos) << note;
  o.kind = BackendKind::kGpu;
  if (GpuAvailable()) {
    EXPECT_EQ(CreateKnnBackendFor(o, small)->description().rfind("gpu", 0), 0u);
  } else {
    EXPECT_THROW(CreateKnnBackendFor(o, small), std::runtime_error);
  }
  // A search the CPU is estimated to take longer for than a GPU's start: as CreateKnnBackend.
  SearchWork large{200000, 200000, 128, false, 1};
  ASSERT_GT(EstimatedCpuSeconds(large, 0), kGpuStartSeconds);
  o.kind = BackendKind::kAuto;
  note.clear();
  auto l = CreateKnnBackendFor(o, large, &note);
  EXPECT_EQ(l->description().rfind(GpuAvailable() ? "gpu" : "cpu", 0), 0u) << l->description();
  EXPECT_EQ(note.find("before a GPU would have started"), std::string::npos) << note;
}

// A set cancel flag stops a search and a search of a registered corpus on the CPU backend and,
// where a GPU is present, on the GPU backend (which looks at it before it starts).
TEST(Backends, ACancelStopsTheSearchesOfEveryBackend) {
  std::vector<BackendKind> kinds = {BackendKind::kCpu};
  if (GpuAvailable()) kinds.push_back(BackendKind::kGpu);
  const auto q = RandomU8(20, 128, 12), c = RandomU8(60, 128, 13);
  for (const BackendKind kind : kinds) {
    SCOPED_TRACE(BackendKindName(kind));
    auto b = Backend(kind);
    std::atomic<bool> cancel{true};
    core::KnnParams p;
    p.cancel = &cancel;
    EXPECT_THROW(b->Search(q, c, p), core::Cancelled);
    b->SetCorpus(c);
    EXPECT_THROW(b->SearchCorpus(q, p), core::Cancelled);
    cancel = false;
    ExpectSame(b->SearchCorpus(q, p), core::BruteForceKnn(q, c, p));
  }
}

}  // namespace
}  // namespace fm::matcher
