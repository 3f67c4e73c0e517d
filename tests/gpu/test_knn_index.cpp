// fm::gpu::Index against the CPU backend of fm::core: every metric x precision x tiling /
// streaming configuration, nasty shapes (k > N, N = 1, N not a multiple of 32, duplicates), the
// fused int8 path with and without candidate overflow, the k-NN graph, device pointers, errors.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fm/core/feature_io.h"
#include "fm/core/knn.h"
#include "fm/gpu/index.h"
#include "fm/gpu/resources.h"

namespace fm::gpu {
namespace {

#define SKIP_WITHOUT_GPU()                                                              \
  do {                                                                                  \
    if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: GPU kNN tests skipped";   \
  } while (0)

// SIFT-like uint8 rows: most values small, a few large, some rows clustered so that neighbours
// are close (and ties happen).
core::DescriptorMatrix RandomSift(int64_t rows, int32_t dim, uint32_t seed, int clusters = 0) {
  std::mt19937 rng(seed);
  std::exponential_distribution<float> ex(1.0f / 20.0f);
  std::vector<uint8_t> v(static_cast<std::size_t>(rows) * dim);
  std::vector<uint8_t> centres(static_cast<std::size_t>(std::max(clusters, 1)) * dim);
  for (auto& c : centres) c = static_cast<uint8_t>(std::min(255.0f, ex(rng)));
  std::uniform_int_distribution<int> noise(-6, 6);
  for (int64_t i = 0; i < rows; ++i) {
    const uint8_t* c = centres.data() + (clusters ? (rng() % clusters) * dim : 0);
    for (int32_t j = 0; j < dim; ++j) {
      int x = clusters ? c[j] + noise(rng) : static_cast<int>(std::min(255.0f, ex(rng)));
      v[i * dim + j] = static_cast<uint8_t>(std::clamp(x, 0, 255));
    }
  }
  return core::DescriptorMatrix::FromUint8(v, rows, dim);
}

core::DescriptorMatrix RandomFloat(int64_t rows, int32_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.5f, 0.3f);
  std::vector<float> v(static_cast<std::size_t>(rows) * dim);
  for (auto& x : v) x = nd(rng);
  return core::DescriptorMatrix::FromFloat(v, rows, dim);
}

core::Metric ToCore(KnnMetric m) {
  switch (m) {
    case KnnMetric::kL2Squared: return core::Metric::kL2Squared;
    case KnnMetric::kInnerProduct: return core::Metric::kInnerProduct;
    case KnnMetric::kCosine: return core::Metric::kCosine;
    case KnnMetric::kPearson: return core::Metric::kPearson;
  }
  return core::Metric::kL2Squared;
}

struct GpuResult {
  std::vector<float> d;
  std::vector<int64_t> i;
};

GpuResult RunGpu(Index& index, const core::DescriptorMatrix& q, int64_t k) {
  GpuResult r;
  r.d.assign(static_cast<std::size_t>(q.rows() * k), -7.0f);  // poison
  r.i.assign(static_cast<std::size_t>(q.rows() * k), -7);
  index.Search(q.bytes(), q.rows(), k, r.d.data(), r.i.data());
  return r;
}

// Exact distance of one pair under a metric (double), as BruteForceKnn defines it.
double PairDistance(const core::DescriptorMatrix& a, int64_t ia, const core::DescriptorMatrix& b,
                    int64_t ib, core::Metric metric) {
  const int32_t d = a.dim();
  std::vector<float> x(d), y(d);
  a.RowAsFloat(ia, x.data());
  b.RowAsFloat(ib, y.data());
  if (metric == core::Metric::kL2Squared) {
    double s = 0;
    for (int j = 0; j < d; ++j) s += (double(x[j]) - y[j]) * (double(x[j]) - y[j]);
    return s;
  }
  double mx = 0, my = 0;
  if (metric == core::Metric::kPearson) {
    for (int j = 0; j < d; ++j) mx += x[j], my += y[j];
    mx /= d;
    my /= d;
  }
  double dot = 0, nx = 0, ny = 0;
  for (int j = 0; j < d; ++j) {
    dot += (x[j] - mx) * (y[j] - my);
    nx += (x[j] - mx) * (x[j] - mx);
    ny += (y[j] - my) * (y[j] - my);
  }
  if (metric == core::Metric::kInnerProduct) return -dot;
  if (nx == 0 || ny == 0) return 1.0;
  return 1.0 - dot / (std::sqrt(nx) * std::sqrt(ny));
}

// Bit-exact comparison: same indices and the same float distances.
void ExpectExact(const core::KnnResult& ref, const GpuResult& got, const std::string& what) {
  ASSERT_EQ(ref.distances.size(), got.d.size());
  int64_t bad = 0;
  for (std::size_t j = 0; j < got.d.size(); ++j) {
    const bool same = ref.indices[j] == got.i[j] &&
                      (ref.distances[j] == got.d[j] ||
                       (std::isnan(ref.distances[j]) && std::isnan(got.d[j])));
    if (!same && bad++ < 5) {
      ADD_FAILURE() << what << ": row " << j / ref.k << " slot " << j % ref.k << ": cpu ("
                    << ref.distances[j] << ", " << ref.indices[j] << ") gpu (" << got.d[j] << ", "
                    << got.i[j] << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

// Tolerant comparison: distances within tol * scale, and every returned index a real neighbour
// (its exact distance within tolerance of the reference distance in the same slot), no
// duplicates, padding where the reference pads.
void ExpectClose(const core::KnnResult& ref, const GpuResult& got, const core::DescriptorMatrix& q,
                 const core::DescriptorMatrix& c, core::Metric metric, double tol,
                 const std::string& what) {
  ASSERT_EQ(ref.distances.size(), got.d.size());
  int64_t bad = 0;
  for (int64_t r = 0; r < ref.rows; ++r) {
    std::vector<int64_t> seen;
    for (int64_t j = 0; j < ref.k; ++j) {
      const std::size_t at = static_cast<std::size_t>(r * ref.k + j);
      const int64_t gi = got.i[at];
      std::string err;
      if (ref.indices[at] < 0) {
        if (gi != -1 || !std::isinf(got.d[at])) err = "padding expected";
      } else if (gi < 0 || gi >= c.rows()) {
        err = "index out of range";
      } else {
        const double scale = metric == core::Metric::kL2Squared
                                 ? std::max(1.0, std::abs(double(ref.distances[at])))
                                 : (metric == core::Metric::kInnerProduct
                                        ? std::max(1.0, std::abs(double(ref.distances[at])))
                                        : 1.0);
        const double truth = PairDistance(q, r, c, gi, metric);
        if (std::abs(got.d[at] - ref.distances[at]) > tol * scale) err = "distance off";
        if (std::abs(truth - ref.distances[at]) > tol * scale) err = "not a true neighbour";
        if (std::find(seen.begin(), seen.end(), gi) != seen.end()) err = "duplicate index";
        seen.push_back(gi);
      }
      if (!err.empty() && bad++ < 5)
        ADD_FAILURE() << what << ": row " << r << " slot " << j << ": " << err << ": cpu ("
                      << ref.distances[at] << ", " << ref.indices[at] << ") gpu (" << got.d[at]
                      << ", " << gi << ")";
    }
    for (int64_t j = 1; j < ref.k; ++j) {
      const std::size_t at = static_cast<std::size_t>(r * ref.k + j);
      if (got.i[at] >= 0 && got.d[at] < got.d[at - 1] && bad++ < 5)
        ADD_FAILURE() << what << ": row " << r << " not sorted at slot " << j;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

// ---- value-parameterised sweep --------------------------------------------------------------

enum class Config { kDefault, kTinyTiles, kStreamed, kTinyBudget, kFusedOverflow, kNoFused };

const char* ConfigName(Config c) {
  switch (c) {
    case Config::kDefault: return "default";
    case Config::kTinyTiles: return "tinytiles";
    case Config::kStreamed: return "streamed";
    case Config::kTinyBudget: return "tinybudget";
    case Config::kFusedOverflow: return "fusedoverflow";
    case Config::kNoFused: return "nofused";
  }
  return "?";
}

struct Shape {
  const char* name;
  int64_t nq, n, k;
  int32_t dim;
  int clusters;
};

struct Param {
  ElementType type;
  KnnMetric metric;
  Precision precision;
  Config config;
  Shape shape;
};

std::string ParamName(const testing::TestParamInfo<Param>& info) {
  const Param& p = info.param;
  return std::string(ElementTypeName(p.type)) + "_" + KnnMetricName(p.metric) + "_" +
         PrecisionName(p.precision) + "_" + ConfigName(p.config) + "_" + p.shape.name;
}

IndexOptions OptionsFor(const Param& p) {
  IndexOptions o;
  o.type = p.type;
  o.dim = p.shape.dim;
  o.metric = p.metric;
  o.precision = p.precision;
  switch (p.config) {
    case Config::kDefault: break;
    case Config::kTinyTiles:
      o.query_tile = 7;
      o.corpus_tile = 48;
      break;
    case Config::kStreamed:
      o.storage = CorpusStorage::kHost;
      o.corpus_tile = 333;  // chunk rows: several chunks, a ragged last one
      o.query_tile = 50;
      break;
    case Config::kTinyBudget:
      o.memory_budget = 1u << 20;  // 1 MiB: the corpus goes to the host, tiles shrink
      break;
    case Config::kFusedOverflow:
      o.fused_candidates = 8;  // forces the fused path to overflow and fall back
      break;
    case Config::kNoFused:
      o.fused = false;
      break;
  }
  return o;
}

class KnnIndexSweep : public testing::TestWithParam<Param> {};

TEST_P(KnnIndexSweep, MatchesCpuBackend) {
  SKIP_WITHOUT_GPU();
  const Param& p = GetParam();
  const Shape& s = p.shape;
  const uint32_t seed = 1234u + static_cast<uint32_t>(s.n * 7 + s.nq);
  core::DescriptorMatrix corpus, queries;
  if (p.type == ElementType::kUint8) {
    corpus = RandomSift(s.n, s.dim, seed, s.clusters);
    queries = RandomSift(s.nq, s.dim, seed + 1, s.clusters);
  } else {
    corpus = RandomFloat(s.n, s.dim, seed);
    queries = RandomFloat(s.nq, s.dim, seed + 1);
  }
  // Duplicate some corpus rows so that ties must be broken by index.
  if (s.n > 8) {
    core::DescriptorMatrix dup = corpus.Slice(0, s.n / 8);
    corpus.Append(dup);
  }
  Index index(OptionsFor(p));
  // Added in two pieces to exercise growth.
  const int64_t half = corpus.rows() / 2;
  index.Add(corpus.bytes(), half);
  index.Add(corpus.bytes() + half * corpus.size_bytes() / corpus.rows(), corpus.rows() - half);
  ASSERT_EQ(index.size(), corpus.rows());
  if (p.config == Config::kStreamed) EXPECT_TRUE(index.streamed());
  if (p.config == Config::kTinyBudget)  // over half the budget: moved to the host while adding
    EXPECT_EQ(index.streamed(), corpus.rows() * (((s.dim + 31) / 32 * 32) + 16) > (1 << 19));
  const GpuResult got = RunGpu(index, queries, s.k);
  core::KnnParams kp;
  kp.k = s.k;
  kp.metric = ToCore(p.metric);
  const core::KnnResult ref = core::CreateCpuKnnBackend()->Search(queries, corpus, kp);
  const std::string what = ParamName({p, 0}) + " path=" + index.last_stats().path;
  const bool integer_metric =
      p.metric == KnnMetric::kL2Squared || p.metric == KnnMetric::kInnerProduct;
  if (p.type == ElementType::kUint8 && integer_metric) {
    ExpectExact(ref, got, what);  // every precision is exact on uint8 L2 / IP
  } else {
    double tol = 1e-4;
    if (p.precision == Precision::kTf32 || p.precision == Precision::kFp16) tol = 3e-3;
    if (p.type == ElementType::kUint8 && !integer_metric) tol = 2e-5;
    ExpectClose(ref, got, queries, corpus, kp.metric, tol, what);
  }
  if (p.config == Config::kFusedOverflow && index.last_stats().path != "streamed") {
    EXPECT_TRUE(index.last_stats().fused_fallback || index.last_stats().path == "tiled");
  }
}

const Shape kShapes[] = {
    {"q100_n3000_k5", 100, 3000, 5, 128, 0},
    {"q257_n4100_k32_clustered", 257, 4100, 32, 128, 20},
    {"q33_n10_k16", 33, 10, 16, 128, 0},     // k > N: padding
    {"q5_n1_k3", 5, 1, 3, 128, 0},           // N = 1
    {"q40_n2600_k7_d72", 40, 2600, 7, 72, 0},  // dim not a multiple of 32, N not of 128
};

std::vector<Param> SweepParams() {
  std::vector<Param> out;
  const KnnMetric metrics[] = {KnnMetric::kL2Squared, KnnMetric::kInnerProduct,
                               KnnMetric::kCosine, KnnMetric::kPearson};
  // uint8: every precision x every metric on the main shapes; configs on L2/exact.
  for (KnnMetric m : metrics)
    for (Precision pr : {Precision::kExact, Precision::kFp32, Precision::kTf32, Precision::kFp16})
      for (int s = 0; s < 2; ++s)
        out.push_back({ElementType::kUint8, m, pr, Config::kDefault, kShapes[s]});
  for (KnnMetric m : metrics)
    for (Precision pr : {Precision::kExact, Precision::kTf32, Precision::kFp16})
      out.push_back({ElementType::kFloat32, m, pr, Config::kDefault, kShapes[0]});
  for (Config c : {Config::kTinyTiles, Config::kStreamed, Config::kTinyBudget,
                   Config::kFusedOverflow, Config::kNoFused})
    for (const Shape& s : kShapes) {
      out.push_back({ElementType::kUint8, KnnMetric::kL2Squared, Precision::kExact, c, s});
    }
  for (Config c : {Config::kTinyTiles, Config::kStreamed})
    for (KnnMetric m : {KnnMetric::kInnerProduct, KnnMetric::kCosine}) {
      out.push_back({ElementType::kUint8, m, Precision::kExact, c, kShapes[1]});
      out.push_back({ElementType::kFloat32, m, Precision::kFp32, c, kShapes[4]});
    }
  for (int s = 2; s < 5; ++s)
    out.push_back({ElementType::kFloat32, KnnMetric::kL2Squared, Precision::kExact,
                   Config::kDefault, kShapes[s]});
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, KnnIndexSweep, testing::ValuesIn(SweepParams()), ParamName);

// ---- fused path specifics ------------------------------------------------------------------

TEST(KnnIndex, FusedPathIsTakenAndExact) {
  SKIP_WITHOUT_GPU();
  const auto corpus = RandomSift(20000, 128, 77, 50);
  const auto queries = RandomSift(300, 128, 78, 50);
  for (KnnMetric m : {KnnMetric::kL2Squared, KnnMetric::kInnerProduct}) {
    IndexOptions o;
    o.metric = m;
    Index index(o);
    index.AddUint8(corpus.u8(), corpus.rows());
    const GpuResult got = RunGpu(index, queries, 20);
    EXPECT_EQ(index.last_stats().path, "fused");
    EXPECT_FALSE(index.last_stats().fused_fallback);
    EXPECT_GE(index.last_stats().candidates, 300 * 20);
    core::KnnParams kp;
    kp.k = 20;
    kp.metric = ToCore(m);
    ExpectExact(core::CreateCpuKnnBackend()->Search(queries, corpus, kp), got,
                std::string("fused ") + KnnMetricName(m));
    // Too few candidate slots: the fused path overflows and the tiled path redoes the search.
    o.fused_candidates = 16;
    Index small(o);
    small.AddUint8(corpus.u8(), corpus.rows());
    const GpuResult again = RunGpu(small, queries, 20);
    EXPECT_TRUE(small.last_stats().fused_fallback);
    EXPECT_EQ(small.last_stats().path, "tiled");
    ExpectExact(core::CreateCpuKnnBackend()->Search(queries, corpus, kp), again,
                std::string("fused overflow ") + KnnMetricName(m));
  }
}

// Both fused scoring kernels (the Hopper wgmma one where the device has it, the portable
// mma.sync one everywhere) against the CPU: partial query and corpus blocks, clustered rows
// (ties), a dimension padded up to 128 bytes, k = 1 and k = 20, L2 and IP; the last level under
// the automatic tentative bound and under a far too tight one (rank 1: most queries are short
// of k rows and searched again).
TEST(KnnIndex, FusedKernelsExact) {
  SKIP_WITHOUT_GPU();
  const DeviceInfo info = GetDeviceInfo(0);
  const bool hopper = info.sm_major == 9 && info.sm_minor == 0;
  for (int32_t dim : {128, 100}) {
    const auto corpus = RandomSift(30000 + 37, dim, 91, 400);
    const auto queries = RandomSift(333, dim, 92, 400);
    for (KnnMetric m : {KnnMetric::kL2Squared, KnnMetric::kInnerProduct}) {
      for (int variant = 0; variant < 3; ++variant) {
        const bool wgmma = variant != 1;
        IndexOptions o;
        o.dim = dim;
        o.metric = m;
        o.fused_wgmma = wgmma;
        o.fused_tentative_rank = variant == 2 ? 1 : 0;
        Index index(o);
        index.AddUint8(corpus.u8(), corpus.rows());
        for (int64_t k : {1, 20}) {
          const GpuResult got = RunGpu(index, queries, k);
          const SearchStats st = index.last_stats();
          const std::string what = std::string(KnnMetricName(m)) + " dim=" +
                                   std::to_string(dim) + " k=" + std::to_string(k) +
                                   " kernel=" + st.score_kernel + " tentative rank " +
                                   std::to_string(o.fused_tentative_rank);
          EXPECT_EQ(st.path, "fused") << what;
          EXPECT_FALSE(st.fused_fallback) << what;
          if (variant == 2 && k == 20) EXPECT_GT(st.fused_redone, 0) << what;
          EXPECT_EQ(st.score_kernel, wgmma && hopper ? "wgmma" : "mma.sync") << what;
          core::KnnParams kp;
          kp.k = k;
          kp.metric = ToCore(m);
          ExpectExact(core::CreateCpuKnnBackend()->Search(queries, corpus, kp), got, what);
        }
      }
    }
  }
}

// Tentative bounds far too tight and candidate slots far too small: the short queries'
// second search overflows as well and they go through the GEMM + select path; the rest keep
// their fused results. Exact either way.
TEST(KnnIndex, TentativeRedoFallsBackPerQuery) {
  SKIP_WITHOUT_GPU();
  const auto corpus = RandomSift(40000, 128, 401, 500);
  const auto queries = RandomSift(260, 128, 402, 500);
  for (int64_t slots : {0, 48}) {
    IndexOptions o;
    o.fused_tentative_rank = 1;
    o.fused_candidates = slots;
    Index index(o);
    index.AddUint8(corpus.u8(), corpus.rows());
    const GpuResult got = RunGpu(index, queries, 16);
    const std::string what = "tentative rank 1, slots " + std::to_string(slots);
    EXPECT_EQ(index.last_stats().path, "fused") << what;
    EXPECT_GT(index.last_stats().fused_redone, 0) << what;
    core::KnnParams kp;
    kp.k = 16;
    ExpectExact(core::CreateCpuKnnBackend()->Search(queries, corpus, kp), got, what);
  }
}

// Every device of the machine, one after the other in the same process: the kernels' shared
// memory limits and the per-device choices hold on each (with one device, on that one; the
// second-device case needs a machine with two, as the GPU checks have).
TEST(KnnIndex, EveryDeviceSearchesExactly) {
  SKIP_WITHOUT_GPU();
  const int devices = DeviceCount();
  const auto corpus = RandomSift(30000, 128, 501, 300);
  const auto queries = RandomSift(300, 128, 502, 300);
  for (int dev = 0; dev < std::min(devices, 4); ++dev) {
    for (bool fused : {true, false}) {
      for (int64_t k : {20, 300}) {
        IndexOptions o;
        o.device = dev;
        o.fused = fused;
        Index index(o);
        index.AddUint8(corpus.u8(), corpus.rows());
        const GpuResult got = RunGpu(index, queries, k);
        core::KnnParams kp;
        kp.k = k;
        ExpectExact(core::CreateCpuKnnBackend()->Search(queries, corpus, kp), got,
                    "device " + std::to_string(dev) + (fused ? " fused" : " tiled") + " k=" +
                        std::to_string(k) + " path " + index.last_stats().path);
      }
    }
  }
}

// A corpus replaced by another of the same size (Reset, then Add): nothing of the first one's
// per-corpus state survives in the second one's results.
TEST(KnnIndex, ResetThenAddSameSizeIsExact) {
  SKIP_WITHOUT_GPU();
  const auto first = RandomSift(20000, 128, 301, 300);
  const auto second = RandomSift(20000, 128, 302);
  const auto queries = RandomSift(200, 128, 303, 300);
  IndexOptions o;
  Index index(o);
  index.AddUint8(first.u8(), first.rows());
  (void)RunGpu(index, queries, 24);
  index.Reset();
  index.AddUint8(second.u8(), second.rows());
  const GpuResult got = RunGpu(index, queries, 24);
  EXPECT_EQ(index.last_stats().path, "fused");
  core::KnnParams kp;
  kp.k = 24;
  ExpectExact(core::CreateCpuKnnBackend()->Search(queries, second, kp), got, "after Reset");
}

// ---- real SIFT descriptors (graf1 / graf3), when the feature files are present --------------

TEST(KnnIndex, RealSiftExact) {
  SKIP_WITHOUT_GPU();
  const std::string dir = std::string(FM_SOURCE_DIR) + "/tests/gpu/data";
  const std::string a = dir + "/graf1_sift.fmf", b = dir + "/graf3_sift.fmf";
  if (!std::filesystem::exists(a) || !std::filesystem::exists(b))
    GTEST_SKIP() << "real SIFT feature files missing in " << dir;
  const core::Features fa = core::ReadFeatureFile(a), fb = core::ReadFeatureFile(b);
  ASSERT_EQ(fa.descriptors.type(), core::DescriptorType::kUint8);
  for (int64_t k : {2, 32}) {
    for (bool fused : {true, false}) {
      IndexOptions o;
      o.dim = fb.descriptors.dim();
      o.fused = fused;
      Index index(o);
      index.AddUint8(fb.descriptors.u8(), fb.descriptors.rows());
      const GpuResult got = RunGpu(index, fa.descriptors, k);
      core::KnnParams kp;
      kp.k = k;
      ExpectExact(core::CreateCpuKnnBackend()->Search(fa.descriptors, fb.descriptors, kp), got,
                  "graf1 vs graf3 k=" + std::to_string(k) + " path=" + index.last_stats().path);
    }
  }
}

// ---- k-NN graph -----------------------------------------------------------------------------

core::KnnResult RefGraph(const core::DescriptorMatrix& c, int64_t k, core::Metric metric) {
  core::KnnParams kp;
  kp.k = k + 1;
  kp.metric = metric;
  const core::KnnResult full = core::CreateCpuKnnBackend()->Search(c, c, kp);
  core::KnnResult r;
  r.rows = c.rows();
  r.k = k;
  r.distances.assign(static_cast<std::size_t>(r.rows * k), std::numeric_limits<float>::infinity());
  r.indices.assign(static_cast<std::size_t>(r.rows * k), -1);
  for (int64_t i = 0; i < r.rows; ++i) {
    int64_t o = 0;
    for (int64_t j = 0; j <= k && o < k; ++j) {
      if (full.index(i, j) == i) continue;
      r.distances[i * k + o] = full.distance(i, j);
      r.indices[i * k + o] = full.index(i, j);
      ++o;
    }
  }
  return r;
}

TEST(KnnIndex, KnnGraphExcludesSelf) {
  SKIP_WITHOUT_GPU();
  const auto corpus = RandomSift(3000, 128, 99, 30);
  for (CorpusStorage st : {CorpusStorage::kDevice, CorpusStorage::kHost}) {
    IndexOptions o;
    o.storage = st;
    if (st == CorpusStorage::kHost) o.corpus_tile = 700;
    Index index(o);
    index.AddUint8(corpus.u8(), corpus.rows());
    const int64_t k = 10;
    GpuResult got;
    got.d.assign(static_cast<std::size_t>(corpus.rows() * k), -7.f);
    got.i.assign(static_cast<std::size_t>(corpus.rows() * k), -7);
    index.KnnGraph(k, got.d.data(), got.i.data());
    for (int64_t i = 0; i < corpus.rows(); ++i)
      for (int64_t j = 0; j < k; ++j) ASSERT_NE(got.i[i * k + j], i) << "self in row " << i;
    ExpectExact(RefGraph(corpus, k, core::Metric::kL2Squared), got,
                std::string("graph ") + (st == CorpusStorage::kHost ? "host" : "device"));
  }
}

// ---- device pointers, streamed large-ish corpus, errors -----------------------------------

TEST(KnnIndex, DevicePointersInAndOut) {
  SKIP_WITHOUT_GPU();
  const auto corpus = RandomSift(5000, 128, 5);
  const auto queries = RandomSift(64, 128, 6);
  const int64_t k = 8;
  Index index(IndexOptions{});
  index.AddUint8(corpus.u8(), corpus.rows());
  uint8_t* dq = nullptr;
  float* dd = nullptr;
  int64_t* di = nullptr;
  ASSERT_EQ(cudaMalloc(&dq, queries.size_bytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dd, 64 * k * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&di, 64 * k * sizeof(int64_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dq, queries.u8(), queries.size_bytes(), cudaMemcpyHostToDevice),
            cudaSuccess);
  SearchOptions so;
  so.queries_on_device = true;
  so.outputs_on_device = true;
  index.Search(dq, 64, k, dd, di, so);
  GpuResult got;
  got.d.resize(64 * k);
  got.i.resize(64 * k);
  ASSERT_EQ(cudaMemcpy(got.d.data(), dd, 64 * k * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.i.data(), di, 64 * k * sizeof(int64_t), cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(dq);
  cudaFree(dd);
  cudaFree(di);
  core::KnnParams kp;
  kp.k = k;
  ExpectExact(core::CreateCpuKnnBackend()->Search(queries, corpus, kp), got, "device pointers");
}

TEST(KnnIndex, StreamedCorpusManyChunksOverlapped) {
  SKIP_WITHOUT_GPU();
  const auto corpus = RandomSift(40000, 128, 11, 100);
  const auto queries = RandomSift(500, 128, 12, 100);
  IndexOptions o;
  o.memory_budget = 2u << 20;  // 2 MiB: the 5 MB corpus is streamed in small chunks
  o.copy_streams = 3;
  o.collect_stats = true;
  Index index(o);
  index.AddUint8(corpus.u8(), corpus.rows());
  ASSERT_TRUE(index.streamed());
  const GpuResult got = RunGpu(index, queries, 16);
  EXPECT_EQ(index.last_stats().path, "streamed");
  EXPECT_GT(index.last_stats().corpus_tiles, 4);
  EXPECT_GE(index.last_stats().h2d_bytes, 40000.0 * 128);
  core::KnnParams kp;
  kp.k = 16;
  const core::KnnResult ref = core::CreateCpuKnnBackend()->Search(queries, corpus, kp);
  ExpectExact(ref, got, "streamed");
  // Chunks large enough for the fused path (bounded by the running k-th distances), for L2 and
  // for IP, and one whose candidate slots overflow (GEMM + select for every chunk).
  for (int64_t slots : {int64_t{0}, int64_t{8}}) {
    IndexOptions f;
    f.storage = CorpusStorage::kHost;
    f.corpus_tile = 6000;
    f.fused_candidates = slots;
    Index fused(f);
    fused.AddUint8(corpus.u8(), corpus.rows());
    const GpuResult fg = RunGpu(fused, queries, 16);
    EXPECT_EQ(fused.last_stats().path, "streamed");
    if (slots == 0) {
      EXPECT_GT(fused.last_stats().candidates, 0);
      EXPECT_FALSE(fused.last_stats().fused_fallback);
    } else {
      EXPECT_TRUE(fused.last_stats().fused_fallback);
    }
    ExpectExact(ref, fg, "streamed fused chunks, slots=" + std::to_string(slots));
  }
  IndexOptions ip;
  ip.storage = CorpusStorage::kHost;
  ip.corpus_tile = 6000;
  ip.metric = KnnMetric::kInnerProduct;
  Index ipi(ip);
  ipi.AddUint8(corpus.u8(), corpus.rows());
  kp.metric = core::Metric::kInnerProduct;
  ExpectExact(core::CreateCpuKnnBackend()->Search(queries, corpus, kp), RunGpu(ipi, queries, 16),
              "streamed fused chunks, IP");
}

TEST(KnnIndex, EmptyCorpusPads) {
  SKIP_WITHOUT_GPU();
  Index index(IndexOptions{});
  const auto queries = RandomSift(3, 128, 1);
  const GpuResult got = RunGpu(index, queries, 4);
  for (std::size_t j = 0; j < got.i.size(); ++j) {
    EXPECT_EQ(got.i[j], -1);
    EXPECT_TRUE(std::isinf(got.d[j]));
  }
}

TEST(KnnIndex, ClearErrors) {
  SKIP_WITHOUT_GPU();
  IndexOptions bad;
  bad.type = ElementType::kFloat32;
  bad.precision = Precision::kInt8;
  EXPECT_THROW(Index{bad}, std::invalid_argument);
  bad = IndexOptions{};
  bad.dim = 0;
  EXPECT_THROW(Index{bad}, std::invalid_argument);
  Index index(IndexOptions{});
  const auto corpus = RandomSift(10, 128, 2);
  index.AddUint8(corpus.u8(), corpus.rows());
  std::vector<float> d(100);
  std::vector<int64_t> i(100);
  EXPECT_THROW(index.Search(corpus.u8(), 1, 0, d.data(), i.data()), std::invalid_argument);
  try {
    index.Search(corpus.u8(), 1, Index::kMaxK + 1, d.data(), i.data());
    ADD_FAILURE() << "k above the limit accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(index.Search(nullptr, 1, 2, d.data(), i.data()), std::invalid_argument);
  EXPECT_THROW(index.Search(corpus.u8(), 1, 2, nullptr, i.data()), std::invalid_argument);
  EXPECT_THROW(index.AddFloat(reinterpret_cast<const float*>(corpus.u8()), 1),
               std::invalid_argument);
  EXPECT_THROW(ParsePrecision("fp64"), std::invalid_argument);
  IndexOptions dev;
  dev.storage = CorpusStorage::kDevice;
  dev.memory_budget = 1u << 20;
  Index small(dev);
  const auto big = RandomSift(20000, 128, 3);
  EXPECT_THROW(small.AddUint8(big.u8(), big.rows()), GpuOutOfMemory);
}

}  // namespace
}  // namespace fm::gpu
