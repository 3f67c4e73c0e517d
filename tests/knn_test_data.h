// What the kNN tests of several executables share: random descriptor matrices and the exact
// comparison of two kNN results.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "fm/core/knn.h"

namespace fm::test {

// rows x dim uint8 values drawn uniformly from 0 .. max_value.
inline core::DescriptorMatrix RandomU8(int64_t rows, int32_t dim, uint32_t seed,
                                       int max_value = 255) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, max_value);
  core::DescriptorMatrix m(core::DescriptorType::kUint8, rows, dim);
  for (std::size_t i = 0; i < m.size_bytes(); ++i) m.u8()[i] = static_cast<uint8_t>(u(rng));
  return m;
}

// rows x dim floats drawn from a standard normal distribution.
inline core::DescriptorMatrix RandomF32(int64_t rows, int32_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  core::DescriptorMatrix m(core::DescriptorType::kFloat32, rows, dim);
  for (int64_t i = 0; i < rows * dim; ++i) m.f32()[i] = g(rng);
  return m;
}

// Exact equality of neighbours and distances, NaN equal to NaN (uint8 L2 and inner-product
// distances are exact integers on every backend).
inline void ExpectSame(const core::KnnResult& got, const core::KnnResult& want) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.k, want.k);
  for (int64_t q = 0; q < got.rows; ++q)
    for (int64_t j = 0; j < got.k; ++j) {
      ASSERT_EQ(got.index(q, j), want.index(q, j)) << "query " << q << " slot " << j;
      const float a = got.distance(q, j), b = want.distance(q, j);
      if (std::isnan(b)) {
        ASSERT_TRUE(std::isnan(a)) << "query " << q << " slot " << j;
      } else {
        ASSERT_EQ(a, b) << "query " << q << " slot " << j;
      }
    }
}

}  // namespace fm::test
