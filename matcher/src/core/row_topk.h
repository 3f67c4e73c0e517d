// Running top-k of one query row, shared by the CPU kNN kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "order.h"

namespace fm::core::detail {

inline constexpr int64_t kInsertionMaxK = 16;  // above this, candidates gather in a pool

// Running top-k of one query, written sorted to its output row (distances `v`, indices `ix`) by
// Flush. Up to kInsertionMaxK the row is kept sorted by insertion. Above it, candidates gather
// unsorted in a pool of twice k (at least k + 64); a full pool keeps its k smallest
// (std::nth_element, linear) and its k-th becomes the threshold, so each of the k words a pool
// drops costs a constant, and only the final k are sorted, once.
class RowTopK {
 public:
  // Below this value a distance is a candidate; AcceptsAll() means every value is (the row is
  // not full yet or its k-th holds NaN), so callers may skip values >= Threshold() only when
  // AcceptsAll() is false.
  float Threshold() const { return thr_; }
  bool AcceptsAll() const { return special_; }

  // The row's current entries (padding: index -1) are taken as candidates.
  RowTopK(int64_t k, float* v, int64_t* ix) : k_(k), v_(v), ix_(ix) {
    if (k_ > kInsertionMaxK) {
      cap_ = std::max<int64_t>(2 * k_, k_ + 64);
      pool_.reserve(static_cast<std::size_t>(std::min<int64_t>(cap_, 256)));  // grows as needed
      for (int64_t e = 0; e < k_; ++e)
        if (ix_[e] >= 0) pool_.push_back(Entry{Key(v_[e]), v_[e], ix_[e]});
      if (static_cast<int64_t>(pool_.size()) == k_) Compact();
    } else {
      kd_ = v_[k_ - 1];
      ki_ = ix_[k_ - 1];
    }
    Refresh();
  }

  // Offers distance d of corpus index j; indices must arrive in increasing order.
  inline void Offer(float d, int64_t j) {
    if (!(d < thr_) && !(special_ && detail::NeighbourLess(d, j, kd_, ki_))) return;
    if (k_ <= kInsertionMaxK) {
      Insert(d, j);
    } else {
      pool_.push_back(Entry{Key(d), d, j});
      if (static_cast<int64_t>(pool_.size()) == cap_) {
        Compact();
        Refresh();
      }
    }
  }

  // Writes the top-k so far to the output row, sorted (padding after the entries found); the
  // row may go on being offered values after it.
  void Flush() {
    if (k_ <= kInsertionMaxK) return;  // the row is kept sorted as it goes
    if (static_cast<int64_t>(pool_.size()) > k_) Compact();
    std::sort(pool_.begin(), pool_.end(), Less);
    const int64_t n = static_cast<int64_t>(pool_.size());
    for (int64_t e = 0; e < n; ++e) {
      v_[e] = pool_[static_cast<std::size_t>(e)].d;
      ix_[e] = pool_[static_cast<std::size_t>(e)].i;
    }
    for (int64_t e = n; e < k_; ++e) {
      v_[e] = std::numeric_limits<float>::infinity();
      ix_[e] = -1;
    }
  }

 private:
  // A pool entry: `key` orders distances as NeighbourLess does (NaN after +inf, -0 as 0), ties
  // going to the lower index.
  struct Entry {
    uint32_t key;
    float d;
    int64_t i;
  };
  static uint32_t Key(float d) {
    if (std::isnan(d)) return 0xFFFFFFFFu;
    if (d == 0.0f) d = 0.0f;
    uint32_t u;
    std::memcpy(&u, &d, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  static bool Less(const Entry& a, const Entry& b) {
    return a.key < b.key || (a.key == b.key && a.i < b.i);
  }

  // Keeps the pool's k smallest (it holds at least k); its k-th becomes the row's k-th.
  void Compact() {
    const auto kth = pool_.begin() + (k_ - 1);
    std::nth_element(pool_.begin(), kth, pool_.end(), Less);
    pool_.resize(static_cast<std::size_t>(k_));
    kd_ = kth->d;
    ki_ = kth->i;
  }

  void Insert(float d, int64_t j) {
    int64_t p = k_ - 1;
    while (p > 0 && detail::NeighbourLess(d, j, v_[p - 1], ix_[p - 1])) {
      v_[p] = v_[p - 1];
      ix_[p] = ix_[p - 1];
      --p;
    }
    v_[p] = d;
    ix_[p] = j;
    kd_ = v_[k_ - 1];
    ki_ = ix_[k_ - 1];
    Refresh();
  }

  void Refresh() {
    thr_ = kd_;
    special_ = ki_ < 0 || std::isnan(thr_);
    if (special_) thr_ = -std::numeric_limits<float>::infinity();  // force the full comparison
  }

  int64_t k_;
  float* v_;
  int64_t* ix_;
  float thr_ = 0;
  bool special_ = true;
  float kd_ = std::numeric_limits<float>::infinity();  // the row's k-th so far (padding: -1)
  int64_t ki_ = -1;
  int64_t cap_ = 0;
  std::vector<Entry> pool_;
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
