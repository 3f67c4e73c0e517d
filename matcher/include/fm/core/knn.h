// The exact k-nearest-neighbour interface every backend (CPU, GPU) implements.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fm/core/types.h"

namespace fm::core {

enum class Metric {
  kL2Squared,     // ||q - c||^2, smaller is nearer
  kInnerProduct,  // reported as -<q, c> so that smaller is nearer
  kCosine,        // 1 - cos(q, c)
  kPearson,       // 1 - Pearson correlation (cosine of the mean-centred vectors)
};
const char* MetricName(Metric m);
Metric ParseMetric(const std::string& name);  // throws std::invalid_argument

// Work stopped because its caller asked it to (a flag it was given was set): thrown by a search
// and by the stages built on searches, so that a caller can tell a cancel from a failure.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

// Throws Cancelled when `flag` is given and set.
inline void ThrowIfCancelled(const std::atomic<bool>* flag) {
  if (flag && flag->load(std::memory_order_relaxed)) throw Cancelled();
}

struct KnnParams {
  int64_t k = 2;                   // neighbours per query; k > corpus size pads with -1 / +inf
  Metric metric = Metric::kL2Squared;
  int threads = 0;                 // CPU threads; 0 = all hardware threads
  // Set while a search runs, it stops the search, which throws Cancelled: the CPU backend
  // between its blocks of queries (tens of queries against the whole corpus), the GPU backend
  // before the search starts. Not owned; must outlive the search.
  const std::atomic<bool>* cancel = nullptr;

  bool Check(std::string* why) const;
};

// Sorted neighbours per query: row q holds k (distance, index) pairs, ascending by distance,
// ties to the lower index, NaN last, missing slots index -1 and distance +inf.
struct KnnResult {
  int64_t rows = 0;
  int64_t k = 0;
  std::vector<float> distances;  // rows * k
  std::vector<int64_t> indices;  // rows * k

  // rows x k of padding (index -1, distance +inf), to be filled by a search.
  static KnnResult Padded(int64_t rows, int64_t k);

  float distance(int64_t q, int64_t j) const { return distances[q * k + j]; }
  int64_t index(int64_t q, int64_t j) const { return indices[q * k + j]; }
};

class KnnBackend {
 public:
  virtual ~KnnBackend() = default;
  // Short name of the backend ("cpu", "gpu") and a longer description (device, threads).
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // Exact k nearest neighbours of each query row among the corpus rows. Throws
  // std::invalid_argument for k <= 0, dimension or type mismatch, or an empty query dimension.
  virtual KnnResult Search(const DescriptorMatrix& queries, const DescriptorMatrix& corpus,
                           const KnnParams& params) = 0;

  // A corpus searched again and again (a logo library): registered once, then searched with
  // SearchCorpus. Backends that keep data elsewhere (the GPU) upload it once and keep it there.
  // `corpus` must stay alive and unchanged until the next SetCorpus or ClearCorpus; call
  // SetCorpus again after changing it. The results equal Search(queries, corpus, params).
  virtual void SetCorpus(const DescriptorMatrix& corpus) { corpus_ = &corpus; }
  virtual void ClearCorpus() { corpus_ = nullptr; }
  virtual KnnResult SearchCorpus(const DescriptorMatrix& queries, const KnnParams& params) {
    if (!corpus_) throw std::logic_error("SearchCorpus called without SetCorpus");
    return Search(queries, *corpus_, params);
  }

 protected:
  const DescriptorMatrix* corpus_ = nullptr;
};

// Checks the arguments every backend rejects the same way (throws std::invalid_argument).
void CheckKnnArguments(const DescriptorMatrix& queries, const DescriptorMatrix& corpus,
                       const KnnParams& params);

struct CpuKnnOptions {
  // Use the integer (AVX-512 VNNI) kernel for uint8 descriptors under squared L2 when the
  // processor has it; otherwise, and for every other case, float GEMM through BLAS.
  bool integer_kernels = true;
  // Most threads one search runs on (0 = one per hardware thread); a search's
  // KnnParams::threads lowers it further, never raises it.
  int threads = 0;
};

// The multi-threaded CPU backend (BLAS GEMM or integer kernel + per-row selection). Its
// description names the threads its searches run on: the limit until a search has run, then the
// most that any search used (small searches run on one).
std::unique_ptr<KnnBackend> CreateCpuKnnBackend(const CpuKnnOptions& options = {});

// Distance of two vectors of d floats under `metric`, in double precision (the reference's: for
// uint8 descriptors under kL2Squared an exact integer).
double DescriptorDistance(const float* a, const float* b, int32_t d, Metric metric);

// Brute-force reference: double-precision distances, full sort. Slow; for tests.
KnnResult BruteForceKnn(const DescriptorMatrix& queries, const DescriptorMatrix& corpus,
                        const KnnParams& params);

}  // namespace fm::core
