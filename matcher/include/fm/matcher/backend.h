// Choosing a kNN backend: CPU, GPU, or whichever is present.
#pragma once

#include <memory>
#include <string>

#include "fm/core/knn.h"

namespace fm::matcher {

enum class BackendKind { kAuto, kCpu, kGpu };
const char* BackendKindName(BackendKind k);
BackendKind ParseBackendKind(const std::string& name);  // throws std::invalid_argument

struct BackendOptions {
  BackendKind kind = BackendKind::kAuto;
  int device = 0;                 // GPU ordinal
  std::string select_algo = "auto";  // GPU selection algorithm (see fm::gpu::ParseSelectAlgo)
  std::string precision = "exact";   // GPU scoring precision: exact, fp32, tf32, fp16
  double memory_fraction = 0.5;   // GPU memory budget as a fraction of free memory
  int threads = 0;                // most threads a CPU search runs on (0 = every hardware thread)

  bool Check(std::string* why) const;
};

// Whether this build has the GPU module and a device is present; `name` gets the device name.
bool GpuAvailable(std::string* name = nullptr);

// Creates the backend. kAuto takes the GPU when one is present, else the CPU; `note` (optional)
// says which was chosen and why. kGpu without a GPU throws std::runtime_error.
std::unique_ptr<core::KnnBackend> CreateKnnBackend(const BackendOptions& options,
                                                   std::string* note = nullptr);

}  // namespace fm::matcher
