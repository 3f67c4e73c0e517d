// CPU kNN backend against the brute-force reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>
#include <limits>
#include <random>

#include "../knn_test_data.h"
#include "fm/core/knn.h"

namespace fm::core {
namespace {

using test::RandomF32;
using test::RandomU8;
using test::ExpectSame;

struct Shape {
  int64_t nq, n;
  int32_t dim;
  int64_t k;
};

class CpuKnnExact : public ::testing::TestWithParam<Shape> {};

TEST_P(CpuKnnExact, MatchesBruteForceOnUint8) {
  const Shape s = GetParam();
  auto q = RandomU8(s.nq, s.dim, 1);
  auto c = RandomU8(s.n, s.dim, 2);
  KnnParams p;
  p.k = s.k;
  const KnnResult want = BruteForceKnn(q, c, p);
  for (bool integer : {true, false}) {
    SCOPED_TRACE(integer ? "integer kernel" : "float GEMM");
    auto backend = CreateCpuKnnBackend(CpuKnnOptions{integer});
    ExpectSame(backend->Search(q, c, p), want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuKnnExact,
    ::testing::Values(Shape{1, 1, 128, 1}, Shape{5, 1, 128, 3}, Shape{100, 7, 128, 7},
                      Shape{100, 7, 128, 10}, Shape{300, 2500, 128, 2}, Shape{70, 1500, 128, 17},
                      Shape{130, 3000, 128, 100}, Shape{64, 1100, 32, 1024},
                      Shape{3, 5000, 128, 2048}, Shape{200, 1029, 13, 5},
                      Shape{49, 1025, 128, 2}, Shape{7, 65, 130, 64}));

TEST(CpuKnn, TiesGoToTheLowerIndex) {
  // Few distinct values: many equal distances.
  auto q = RandomU8(200, 8, 3, 1);
  auto c = RandomU8(3000, 8, 4, 1);
  for (int64_t k : {1, 2, 20, 40}) {
    KnnParams p;
    p.k = k;
    const KnnResult want = BruteForceKnn(q, c, p);
    ExpectSame(CreateCpuKnnBackend(CpuKnnOptions{true})->Search(q, c, p), want);
    ExpectSame(CreateCpuKnnBackend(CpuKnnOptions{false})->Search(q, c, p), want);
  }
}

TEST(CpuKnn, DuplicateCorpusRows) {
  auto c = RandomU8(50, 16, 5);
  DescriptorMatrix dup = c;
  dup.Append(c);
  dup.Append(c);
  KnnParams p;
  p.k = 5;
  auto r = CreateCpuKnnBackend()->Search(c, dup, p);
  for (int64_t q = 0; q < 50; ++q) {
    EXPECT_EQ(r.index(q, 0), q);
    EXPECT_EQ(r.index(q, 1), q + 50);
    EXPECT_EQ(r.index(q, 2), q + 100);
    EXPECT_EQ(r.distance(q, 2), 0.0f);
  }
  ExpectSame(r, BruteForceKnn(c, dup, p));
}

TEST(CpuKnn, KLargerThanCorpusIsPadded) {
  auto q = RandomU8(10, 16, 6);
  auto c = RandomU8(3, 16, 7);
  KnnParams p;
  p.k = 8;
  auto r = CreateCpuKnnBackend()->Search(q, c, p);
  for (int64_t i = 0; i < 10; ++i) {
    for (int64_t j = 3; j < 8; ++j) {
      EXPECT_EQ(r.index(i, j), -1);
      EXPECT_EQ(r.distance(i, j), std::numeric_limits<float>::infinity());
    }
  }
  ExpectSame(r, BruteForceKnn(q, c, p));
}

// Far more neighbours asked than the corpus holds, on the float path and the uint8 one: the n
// that exist as with k = n, the rest padding.
TEST(CpuKnn, KFarLargerThanCorpusMatchesKEqualN) {
  for (const bool u8 : {false, true}) {
    auto q = u8 ? RandomU8(37, 24, 11) : RandomF32(37, 24, 11);
    auto c = u8 ? RandomU8(19, 24, 12) : RandomF32(19, 24, 12);
    KnnParams p;
    p.k = 5000;
    auto r = CreateCpuKnnBackend()->Search(q, c, p);
    KnnParams pn = p;
    pn.k = 19;
    auto rn = CreateCpuKnnBackend()->Search(q, c, pn);
    ASSERT_EQ(r.rows, 37);
    ASSERT_EQ(r.k, 5000);
    for (int64_t i = 0; i < 37; ++i) {
      for (int64_t j = 0; j < 19; ++j) {
        EXPECT_EQ(r.index(i, j), rn.index(i, j));
        EXPECT_EQ(r.distance(i, j), rn.distance(i, j));
      }
      for (int64_t j = 19; j < 5000; ++j) {
        EXPECT_EQ(r.index(i, j), -1);
        EXPECT_EQ(r.distance(i, j), std::numeric_limits<float>::infinity());
      }
    }
    if (u8) ExpectSame(r, BruteForceKnn(q, c, p));  // integer distances: exact on both sides
  }
}

TEST(CpuKnn, EmptyCorpusGivesOnlyPadding) {
  auto q = RandomU8(4, 16, 6);
  DescriptorMatrix c(DescriptorType::kUint8, 0, 16);
  KnnParams p;
  p.k = 2;
  auto r = CreateCpuKnnBackend()->Search(q, c, p);
  ASSERT_EQ(r.rows, 4);
  for (auto i : r.indices) EXPECT_EQ(i, -1);
}

TEST(CpuKnn, BadArgumentsAreRejected) {
  auto q = RandomU8(4, 16, 6);
  auto c = RandomU8(4, 32, 6);
  KnnParams p;
  p.k = 2;
  auto b = CreateCpuKnnBackend();
  EXPECT_THROW(b->Search(q, c, p), std::invalid_argument);  // dimension mismatch
  p.k = 0;
  EXPECT_THROW(b->Search(q, q, p), std::invalid_argument);
  p.k = -3;
  EXPECT_THROW(b->Search(q, q, p), std::invalid_argument);
  p.k = 2;
  auto f = RandomF32(4, 16, 1);
  EXPECT_THROW(b->Search(q, f, p), std::invalid_argument);  // type mismatch
  try {
    p.k = 0;
    b->Search(q, q, p);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("k must be"), std::string::npos) << e.what();
  }
}

TEST(CpuKnn, NanDistancesSortLast) {
  auto q = RandomF32(20, 8, 8);
  auto c = RandomF32(40, 8, 9);
  for (int64_t i : {3, 17, 25}) c.f32()[i * 8 + 2] = std::numeric_limits<float>::quiet_NaN();
  KnnParams p;
  p.k = 40;
  auto r = CreateCpuKnnBackend()->Search(q, c, p);
  for (int64_t qi = 0; qi < 20; ++qi) {
    EXPECT_EQ(r.index(qi, 37), 3);
    EXPECT_EQ(r.index(qi, 38), 17);
    EXPECT_EQ(r.index(qi, 39), 25);
    EXPECT_TRUE(std::isnan(r.distance(qi, 39)));
    EXPECT_FALSE(std::isnan(r.distance(qi, 36)));
  }
}

// More NaN distances than the row has room for past its real ones: the k-th is NaN while values
// still come (k above the sorted-insertion limit, so the pool path), NaNs kept by lower index.
TEST(CpuKnn, AKthThatIsNanStillTakesEveryRealDistance) {
  auto q = RandomF32(9, 8, 31);
  auto c = RandomF32(400, 8, 32);
  for (int64_t i = 0; i < 400; ++i)
    if (i % 7 != 3) c.f32()[i * 8 + 5] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t k : {17, 64, 100, 399}) {
    KnnParams p;
    p.k = k;
    const KnnResult r = CreateCpuKnnBackend()->Search(q, c, p);
    const KnnResult want = BruteForceKnn(q, c, p);
    for (int64_t qi = 0; qi < 9; ++qi) {
      for (int64_t j = 0; j < std::min<int64_t>(k, 57); ++j) {  // the 57 rows without NaN first
        EXPECT_EQ(r.index(qi, j) % 7, 3) << "k " << k << " row " << qi << " slot " << j;
        EXPECT_FALSE(std::isnan(r.distance(qi, j)));
        EXPECT_EQ(r.index(qi, j), want.index(qi, j)) << "k " << k << " row " << qi;
      }
      for (int64_t j = 57; j < k; ++j) {
        EXPECT_TRUE(std::isnan(r.distance(qi, j)));
        EXPECT_EQ(r.index(qi, j), want.index(qi, j)) << "k " << k << " row " << qi;
      }
    }
  }
}

TEST(CpuKnn, RegisteredCorpusGivesTheSameResults) {
  auto q = RandomU8(30, 32, 21);
  auto c = RandomU8(700, 32, 22);
  KnnParams p;
  p.k = 4;
  auto b = CreateCpuKnnBackend();
  EXPECT_THROW(b->SearchCorpus(q, p), std::logic_error);
  b->SetCorpus(c);
  ExpectSame(b->SearchCorpus(q, p), b->Search(q, c, p));
  auto other = RandomU8(50, 32, 23);
  ExpectSame(b->Search(q, other, p), BruteForceKnn(q, other, p));  // one-off search in between
  ExpectSame(b->SearchCorpus(q, p), BruteForceKnn(q, c, p));
  b->ClearCorpus();
  EXPECT_THROW(b->SearchCorpus(q, p), std::logic_error);
}

// Real-valued data: same neighbours as the double-precision reference up to near-ties, and
// distances within float rounding.
class CpuKnnMetrics : public ::testing::TestWithParam<Metric> {};

TEST_P(CpuKnnMetrics, MatchesReferenceOnFloat) {
  auto q = RandomF32(150, 64, 10);
  auto c = RandomF32(2100, 64, 11);
  KnnParams p;
  p.k = 10;
  p.metric = GetParam();
  auto got = CreateCpuKnnBackend()->Search(q, c, p);
  auto want = BruteForceKnn(q, c, p);
  int64_t mismatched = 0;
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t j = 0; j < got.k; ++j) {
      const float a = got.distance(i, j), b = want.distance(i, j);
      EXPECT_NEAR(a, b, 1e-4f * std::max(1.0f, std::abs(b))) << i << "," << j;
      mismatched += got.index(i, j) != want.index(i, j);
    }
  // Index swaps only where two distances agree to float precision.
  EXPECT_LE(mismatched, 4);
}

INSTANTIATE_TEST_SUITE_P(All, CpuKnnMetrics,
                         ::testing::Values(Metric::kL2Squared, Metric::kInnerProduct,
                                           Metric::kCosine, Metric::kPearson));

TEST(CpuKnn, MetricsOnUint8AgreeWithFloat) {
  auto q = RandomU8(40, 32, 12);
  auto c = RandomU8(500, 32, 13);
  for (Metric m : {Metric::kInnerProduct, Metric::kCosine, Metric::kPearson}) {
    KnnParams p;
    p.k = 3;
    p.metric = m;
    auto got = CreateCpuKnnBackend()->Search(q, c, p);
    auto want = BruteForceKnn(q, c, p);
    for (std::size_t i = 0; i < got.distances.size(); ++i)
      EXPECT_NEAR(got.distances[i], want.distances[i],
                  1e-3 * std::max(1.0f, std::abs(want.distances[i])));
  }
}

// Q * N beyond 2^31: checked row by row on a sample of queries.
TEST(CpuKnn, MoreThanTwoToThe31Pairs) {
  const int64_t nq = 40000, n = 60000;  // 2.4e9 pairs
  ASSERT_GT(nq * n, int64_t{1} << 31);
  auto q = RandomU8(nq, 4, 14, 15);
  auto c = RandomU8(n, 4, 15, 15);
  KnnParams p;
  p.k = 3;
  auto r = CreateCpuKnnBackend()->Search(q, c, p);
  ASSERT_EQ(r.rows, nq);
  std::mt19937 rng(16);
  for (int s = 0; s < 25; ++s) {
    const int64_t qi = std::uniform_int_distribution<int64_t>(0, nq - 1)(rng);
    auto one = BruteForceKnn(q.Slice(qi, 1), c, p);
    for (int64_t j = 0; j < 3; ++j) {
      ASSERT_EQ(r.index(qi, j), one.index(0, j)) << "query " << qi;
      ASSERT_EQ(r.distance(qi, j), one.distance(0, j));
    }
  }
  // The last query, whose output offset is the largest.
  auto last = BruteForceKnn(q.Slice(nq - 1, 1), c, p);
  EXPECT_EQ(r.index(nq - 1, 0), last.index(0, 0));
}

// A cancel, on both CPU paths (float GEMM and the uint8 integer kernel, or GEMM where the
// processor lacks it): the flag set before the search stops it before any work; set while it
// runs, between its blocks of queries (the 40000 x 40000 search below takes seconds here, tenths
// of a second on a large machine; the flag is set 10 ms into it). The backend still searches,
// exactly, once the flag is cleared.
TEST(CpuKnn, ACancelStopsTheSearch) {
  for (const bool integer : {false, true}) {
    for (const bool under_way : {false, true}) {
      SCOPED_TRACE(std::string("integer kernels ") + (integer ? "on" : "off") +
                   (under_way ? ", set while the search runs" : ", set before"));
      CpuKnnOptions o;
      o.integer_kernels = integer;
      auto b = CreateCpuKnnBackend(o);
      const int64_t n = under_way ? 40000 : 300;
      const auto q = RandomU8(n, 128, 31), c = RandomU8(n, 128, 32);
      std::atomic<bool> cancel{!under_way};
      KnnParams p;
      p.k = 2;
      p.cancel = &cancel;
      std::thread setter([&] {
        if (!under_way) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        cancel = true;
      });
      bool cancelled = false;
      try {
        b->Search(q, c, p);
      } catch (const Cancelled&) {
        cancelled = true;
      }
      setter.join();
      EXPECT_TRUE(cancelled) << "the search ran to its end";
      const auto q2 = RandomU8(50, 128, 35), c2 = RandomU8(400, 128, 36);
      cancel = false;
      ExpectSame(b->Search(q2, c2, p), BruteForceKnn(q2, c2, p));
    }
  }
}

// Threads of this process now (Linux), or -1.
int ProcessThreads() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

TEST(CpuKnn, DescriptionNamesTheThreadsItsSearchesRunOn) {
  // A user who asks for one thread reads one thread in the report, and the search takes no more.
  CpuKnnOptions one;
  one.threads = 1;
  auto b = CreateCpuKnnBackend(one);
  EXPECT_NE(b->description().find("(1 thread,"), std::string::npos) << b->description();
  const auto q = RandomU8(4096, 128, 21), c = RandomU8(8192, 128, 22);
  KnnParams p;
  p.k = 2;
  std::atomic<bool> searching{true};
  std::atomic<int> most{0};
  const int before = ProcessThreads();
  std::thread watch([&] {
    while (searching.load()) {
      most = std::max(most.load(), ProcessThreads());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  b->Search(q, c, p);  // params.threads = 0 (all) does not lift the backend's limit
  searching = false;
  watch.join();
  EXPECT_NE(b->description().find("(1 thread,"), std::string::npos) << b->description();
  if (before > 0) EXPECT_LE(most.load(), before + 1) << "the watcher is the one thread added";

  // Two threads allowed: a large search takes both, and the description says two.
  CpuKnnOptions two;
  two.threads = 2;
  auto b2 = CreateCpuKnnBackend(two);
  EXPECT_NE(b2->description().find("(2 threads,"), std::string::npos) << b2->description();
  b2->Search(q, c, p);
  EXPECT_NE(b2->description().find("(2 threads,"), std::string::npos) << b2->description();
  // A search's own limit lowers the backend's.
  auto b3 = CreateCpuKnnBackend(two);
  KnnParams p1 = p;
  p1.threads = 1;
  b3->Search(q, c, p1);
  EXPECT_NE(b3->description().find("(1 thread,"), std::string::npos) << b3->description();
  // A small search runs on the calling thread alone, and says so.
  auto b4 = CreateCpuKnnBackend(two);
  b4->Search(RandomU8(8, 128, 23), RandomU8(16, 128, 24), p);
  EXPECT_NE(b4->description().find("(1 thread,"), std::string::npos) << b4->description();
  // 60 queries are two of the integer kernel's work items (48 queries each) but one of the float
  // path's (64): each path is given the threads it can use, and the description follows.
  auto b5 = CreateCpuKnnBackend(two);
  b5->Search(RandomU8(60, 128, 25), c, p);
  const bool integer = b5->description().find("VNNI") != std::string::npos;
  EXPECT_NE(b5->description().find(integer ? "(2 threads," : "(1 thread,"), std::string::npos)
      << b5->description();
}

}  // namespace
}  // namespace fm::core
