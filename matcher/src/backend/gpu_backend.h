// The GPU implementation of core::KnnBackend (built when fm::gpu is).
#pragma once

#include <memory>

#include "fm/core/knn.h"
#include "fm/matcher/backend.h"

namespace fm::matcher::detail {

// Throws std::runtime_error (with the reason) when no GPU can be used.
std::unique_ptr<core::KnnBackend> CreateGpuKnnBackend(const BackendOptions& options);

}  // namespace fm::matcher::detail
