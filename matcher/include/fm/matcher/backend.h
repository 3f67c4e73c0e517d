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

// The searches a process will make, for kAuto where it makes only a few (`featmatch match`).
struct SearchWork {
  int64_t queries = 0;   // rows searched for
  int64_t corpus = 0;    // rows searched among
  int32_t dim = 0;
  bool float_descriptors = false;
  int searches = 1;      // 2 with the mutual check
};

// The work of `searches` searches of `queries` among `corpus`.
SearchWork SearchWorkOf(const core::DescriptorMatrix& queries, const core::DescriptorMatrix& corpus,
                        int searches = 1);

// The seconds a process spends bringing a GPU up before its first search (the driver, the
// context, cuBLAS, the search's first launches): 0.27-0.43 s on an H200 host, measured as the
// wall time `featmatch match` takes with --backend gpu over --backend cpu on five pairs of sample
// photographs (bench/results/app_gpu_h200.md).
constexpr double kGpuStartSeconds = 0.35;

// The CPU's estimated time for `work` on `threads` threads (0 = every hardware thread): 0.4e9
// uint8 SIFT pairs a second a thread (an H200 host's 16 threads took 60-81 ms for the 23255 x
// 23503 of aloeL.jpg -> aloeR.jpg, 0.42-0.57e9 a thread; the 2-core development machine 0.72e9),
// float pairs at half that (RootSIFT graf1 -> graf3: 6.8-9.0 against 3.9-4.9 ms there), in
// proportion to the dimension.
double EstimatedCpuSeconds(const SearchWork& work, int threads);

// Whether `options` are kAuto and the CPU is estimated to end `work` before a GPU would have
// started: CreateKnnBackendFor's rule, for callers that say why or choose again later.
bool AutoTakesTheCpuFor(const BackendOptions& options, const SearchWork& work);

// CreateKnnBackend for a process that makes only `work`'s searches: under kAuto the CPU where it
// is estimated to finish them before a GPU would have started (no CUDA call is made then), else
// as CreateKnnBackend. A process that searches many times (the batch, the logo library's
// queries and evaluation, the desktop app) pays the start once and calls CreateKnnBackend.
std::unique_ptr<core::KnnBackend> CreateKnnBackendFor(const BackendOptions& options,
                                                      const SearchWork& work,
                                                      std::string* note = nullptr);

}  // namespace fm::matcher
