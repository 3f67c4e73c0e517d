// The total order of kNN results shared by every CPU component: ascending distance, NaN after
// +inf, ties to the lower index; padding slots (index -1) after everything.
#pragma once

#include <cmath>
#include <cstdint>

namespace fm::core::detail {

inline bool NeighbourLess(float da, int64_t ia, float db, int64_t ib) {
  if (ia < 0) return false;  // padding is never less
  if (ib < 0) return true;   // a real entry precedes padding
  const bool na = std::isnan(da), nb = std::isnan(db);
  if (na != nb) return nb;   // non-NaN before NaN
  if (!na && da != db) return da < db;
  return ia < ib;
}

}  // namespace fm::core::detail
