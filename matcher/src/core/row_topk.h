// Running top-k of one query row, shared by the CPU kNN kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "order.h"

namespace fm::core::detail {

inline constexpr int64_t kInsertionMaxK = 16;  // above this, candidates are buffered and merged

// Running top-k of one query, kept sorted in its output row (distances `v`, indices `ix`).
class RowTopK {
 public:
  // Below this value a distance is a candidate; AcceptsAll() means every value is (the row is
  // not full yet or its last slot holds NaN), so callers may skip values >= Threshold() only
  // when AcceptsAll() is false.
  float Threshold() const { return thr_; }
  bool AcceptsAll() const { return special_; }

  RowTopK(int64_t k, float* v, int64_t* ix) : k_(k), v_(v), ix_(ix) {
    if (k_ > kInsertionMaxK) {
      bv_.reserve(k_);
      bi_.reserve(k_);
      mv_.resize(k_);
      mi_.resize(k_);
    }
    Refresh();
  }

  // Offers distance d of corpus index j; indices must arrive in increasing order.
  inline void Offer(float d, int64_t j) {
    if (!(d < thr_) && !(special_ && detail::NeighbourLess(d, j, v_[k_ - 1], ix_[k_ - 1])))
      return;
    if (k_ <= kInsertionMaxK) {
      Insert(d, j);
    } else {
      bv_.push_back(d);
      bi_.push_back(j);
      if (static_cast<int64_t>(bv_.size()) == k_) Flush();
    }
  }

  void Flush() {
    if (bv_.empty()) return;
    const std::size_t nb = bv_.size();
    order_.resize(nb);
    for (std::size_t i = 0; i < nb; ++i) order_[i] = static_cast<uint32_t>(i);
    std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
      return detail::NeighbourLess(bv_[a], bi_[a], bv_[b], bi_[b]);
    });
    // Merge the sorted buffer with the current top-k, keep the k smallest.
    int64_t a = 0;
    std::size_t b = 0;
    for (int64_t o = 0; o < k_; ++o) {
      if (b < nb && detail::NeighbourLess(bv_[order_[b]], bi_[order_[b]], v_[a], ix_[a])) {
        mv_[o] = bv_[order_[b]];
        mi_[o] = bi_[order_[b]];
        ++b;
      } else {
        mv_[o] = v_[a];
        mi_[o] = ix_[a];
        ++a;
      }
    }
    std::copy(mv_.begin(), mv_.end(), v_);
    std::copy(mi_.begin(), mi_.end(), ix_);
    bv_.clear();
    bi_.clear();
    Refresh();
  }

 private:
  void Insert(float d, int64_t j) {
    int64_t p = k_ - 1;
    while (p > 0 && detail::NeighbourLess(d, j, v_[p - 1], ix_[p - 1])) {
      v_[p] = v_[p - 1];
      ix_[p] = ix_[p - 1];
      --p;
    }
    v_[p] = d;
    ix_[p] = j;
    Refresh();
  }

  void Refresh() {
    thr_ = v_[k_ - 1];
    special_ = ix_[k_ - 1] < 0 || std::isnan(thr_);
    if (special_) thr_ = -std::numeric_limits<float>::infinity();  // force the full comparison
  }

  int64_t k_;
  float* v_;
  int64_t* ix_;
  float thr_ = 0;
  bool special_ = true;
  std::vector<float> bv_, mv_;
  std::vector<int64_t> bi_, mi_;
  std::vector<uint32_t> order_;
};

// Offers a row of distances (corpus indices c0, c0+1, ...) to `top`, skipping blocks of 16 with
// nothing below the threshold (the common case once the row is full).
inline void OfferRow(const float* dist, int64_t count, int64_t c0, RowTopK& top) {
  int64_t j = 0;
  for (; j + 16 <= count; j += 16) {
    if (!top.AcceptsAll()) {
      const float thr = top.Threshold();
      bool any = false;
      for (int t = 0; t < 16; ++t) any |= dist[j + t] < thr;
      if (!any) continue;
    }
    for (int t = 0; t < 16; ++t) top.Offer(dist[j + t], c0 + j + t);
  }
  for (; j < count; ++j) top.Offer(dist[j], c0 + j);
}

}  // namespace fm::core::detail
