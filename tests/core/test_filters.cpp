#include <gtest/gtest.h>

#include <cmath>

#include "fm/core/filters.h"

namespace fm::core {
namespace {

KnnResult Make(int64_t rows, int64_t k, std::vector<float> d, std::vector<int64_t> i) {
  KnnResult r;
  r.rows = rows;
  r.k = k;
  r.distances = std::move(d);
  r.indices = std::move(i);
  return r;
}

TEST(Filters, RatioTestOnEuclideanDistances) {
  // Squared distances: (9, 16) -> ratio 3/4 = 0.75 passes 0.8; (9, 10) -> 0.949 fails.
  auto fwd = Make(2, 2, {9, 16, 9, 10}, {4, 5, 6, 7});
  FilterOptions o;
  o.ratio = 0.8f;
  auto m = FilterMatches(fwd, nullptr, Metric::kL2Squared, o);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].query, 0);
  EXPECT_EQ(m[0].train, 4);
  EXPECT_FLOAT_EQ(m[0].distance, 3.0f);
  EXPECT_FLOAT_EQ(m[0].ratio, 0.75f);
}

TEST(Filters, MutualCheckAndMaxDistance) {
  auto fwd = Make(3, 2, {1, 100, 4, 100, 1, 100}, {0, 1, 1, 0, 1, 2});
  auto bwd = Make(3, 1, {1, 4, 9}, {0, 1, 0});
  FilterOptions o;
  o.ratio = 0.8f;
  o.mutual = true;
  auto m = FilterMatches(fwd, &bwd, Metric::kL2Squared, o);
  ASSERT_EQ(m.size(), 2u);  // query 2 -> train 1, but train 1's nearest is query 1
  EXPECT_EQ(m[0].query, 0);
  EXPECT_EQ(m[1].query, 1);
  o.max_distance = 1.5f;
  m = FilterMatches(fwd, &bwd, Metric::kL2Squared, o);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].query, 0);
  o.mutual = true;
  EXPECT_THROW(FilterMatches(fwd, nullptr, Metric::kL2Squared, o), std::invalid_argument);
}

TEST(Filters, PaddingAndSingleNeighbour) {
  auto fwd = Make(2, 2, {4, INFINITY, INFINITY, INFINITY}, {0, -1, -1, -1});
  FilterOptions o;
  auto m = FilterMatches(fwd, nullptr, Metric::kL2Squared, o);
  ASSERT_EQ(m.size(), 1u);  // a lone candidate is unambiguous; a query with none gives nothing
  EXPECT_EQ(m[0].train, 0);
}

TEST(Filters, MasksSelectRows) {
  EXPECT_EQ(MaskedRows({}, 3), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(MaskedRows({1, 0, 1}, 3), (std::vector<int64_t>{0, 2}));
  EXPECT_THROW(MaskedRows({1, 0}, 3), std::invalid_argument);
  auto m = DescriptorMatrix::FromUint8(std::vector<uint8_t>{1, 2, 3, 4, 5, 6}, 3, 2);
  auto g = GatherRows(m, {2, 0});
  EXPECT_EQ(g.u8()[0], 5);
  EXPECT_EQ(g.u8()[3], 2);
}

TEST(Filters, BadOptionsRejected) {
  FilterOptions o;
  o.ratio = 0;
  std::string why;
  EXPECT_FALSE(o.Check(&why));
  EXPECT_FALSE(why.empty());
  o.ratio = 1.5f;
  EXPECT_FALSE(o.Check(&why));
}

}  // namespace
}  // namespace fm::core
