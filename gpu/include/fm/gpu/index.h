// The GPU exact k-nearest-neighbour engine: a corpus of descriptors held on the device (or, when it
// is larger than the memory budget, in pinned host memory and streamed through the device), and
// searches that score queries against it by GEMM and select the k nearest per query.
//
// Plain C++: no CUDA header is needed to use it. fm::gpu knows nothing of fm::core; the matcher
// layer adapts DescriptorMatrix / KnnParams to this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fm/gpu/resources.h"
#include "fm/gpu/select_k.h"

namespace fm::gpu {

enum class ElementType { kUint8, kFloat32 };

// Distances are "smaller is nearer": L2 squared, -<q,c>, 1 - cos, 1 - Pearson correlation.
enum class KnnMetric { kL2Squared, kInnerProduct, kCosine, kPearson };

// Scoring precision.
//   kExact: kInt8 for uint8 descriptors, kFp32 for float descriptors (the default).
//   kFp32:  fp32 GEMM (exact reference for float data).
//   kTf32:  fp32 data, TF32 tensor-core GEMM (about 1e-3 relative error on float data).
//   kFp16:  fp16 operands, fp32 accumulation (about 1e-3 relative error on float data).
//   kInt8:  uint8 data only: values shifted to int8, int8 GEMM with int32 accumulation, the shift
//           corrected with row sums. Bit-exact.
// For uint8 descriptors every mode gives exact L2 and IP distances (0..255 is exactly
// representable in tf32 and fp16 and the fp32 accumulation of the products stays below 2^24 for
// dimensions up to 256); the modes differ in speed only. Cosine and Pearson on uint8 data are
// computed from exact integer products and sums (within 2e-5 of the CPU backend).
// Tolerance of the approximate modes on float data (tested in tests/gpu/test_knn_index.cpp):
// every returned distance within 3e-3 * max(1, |d|) of the exact one (L2, IP) or 3e-3 absolute
// (cosine, Pearson), and every returned row a true neighbour within that tolerance; fp32 within
// 1e-4 (GEMM summation order differs from the CPU backend's).
enum class Precision { kExact, kFp32, kTf32, kFp16, kInt8 };

// Where the corpus lives. kAuto: on the device while it fits in half of the memory budget,
// otherwise in pinned host memory, streamed in chunks at every search.
enum class CorpusStorage { kAuto, kDevice, kHost };

const char* ElementTypeName(ElementType t);
const char* KnnMetricName(KnnMetric m);
const char* PrecisionName(Precision p);
// Parse "l2", "ip", "cosine", "pearson" / "exact", "fp32", "tf32", "fp16", "int8";
// throw std::invalid_argument naming the accepted values.
KnnMetric ParseKnnMetric(const std::string& name);
Precision ParsePrecision(const std::string& name);

struct IndexOptions {
  int device = 0;                         // CUDA ordinal
  ElementType type = ElementType::kUint8; // element type of corpus and queries
  int32_t dim = 128;                      // descriptor dimension (1..4096)
  KnnMetric metric = KnnMetric::kL2Squared;
  Precision precision = Precision::kExact;
  SelectAlgo select_algo = SelectAlgo::kAuto;  // per-tile k-selection
  // Memory budget for the corpus and the search's scratch. 0: memory_fraction of the free device
  // memory at construction.
  std::size_t memory_budget = 0;
  double memory_fraction = 0.5;           // (0, 0.95]
  CorpusStorage storage = CorpusStorage::kAuto;
  // Tile shape (rows of queries x rows of corpus scored at once); 0 = chosen from the budget.
  int64_t query_tile = 0;
  int64_t corpus_tile = 0;
  int copy_streams = 2;                   // streams for H2D copies of a streamed corpus (>= 1)
  int stream_buffers = 3;                 // device chunk buffers of a streamed corpus (>= 2)
  // Fused int8 scoring + threshold filtering (uint8 data, int8 precision, L2 or IP). Falls back
  // to the tiled GEMM + select path on its own when a query overflows its candidate buffer.
  bool fused = true;
  int64_t fused_candidates = 0;           // candidate slots per query; 0 = auto (testing knob)
  // Hopper (compute capability 9.0) with 128-byte rows: score with the warpgroup-MMA kernel;
  // false: the portable mma.sync kernel everywhere (same results).
  bool fused_wgmma = true;
  // Fused path: the rank j of the previous level's distance used as a tentative bound for the
  // next (queries left with fewer than k rows are searched again, exactly). 0 = auto (k/4 + 8
  // for k >= 16 and searches of at least 2^28 query x corpus pairs, else off); -1 = off (always
  // the k-th); j > 0 as given (testing knob).
  int64_t fused_tentative_rank = 0;
  bool collect_stats = false;             // time each stage with events (adds synchronisation)

  bool Check(std::string* why) const;
};

struct SearchOptions {
  bool queries_on_device = false;  // `queries` is a device pointer
  bool outputs_on_device = false;  // `distances` / `indices` are device pointers
};

// What the last search did, for benchmarks and for users who wonder.
struct SearchStats {
  std::string path;           // "tiled", "streamed", "fused"
  std::string score_kernel;   // "cublas" (GEMM + epilogue), "wgmma" or "mma.sync" (fused kernel)
  int64_t query_tiles = 0;
  int64_t corpus_tiles = 0;
  int64_t tile_rows = 0;      // query tile
  int64_t tile_cols = 0;      // corpus tile
  int64_t candidates = 0;     // fused path: candidates kept, all levels together
  bool fused_fallback = false;  // fused path overflowed and the tiled path redid the search
  int64_t fused_redone = 0;     // fused path: queries searched again under the safe bound
  double prepare_ms = 0;      // query upload and conversion
  double score_ms = 0;        // GEMM + distance epilogue (or the fused kernel), summed over tiles
  double select_ms = 0;       // per-tile selection + merge (or candidate sort), summed
  double copy_ms = 0;         // H2D corpus chunk copies, summed
  double total_ms = 0;        // wall time of the search, outputs included
  double h2d_bytes = 0;       // bytes of corpus streamed to the device
};

class Index {
 public:
  explicit Index(const IndexOptions& options);
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;
  Index(Index&&) noexcept;
  Index& operator=(Index&&) noexcept;

  const IndexOptions& options() const;
  int64_t size() const;
  int32_t dim() const;
  // Whether the corpus is held on the host and streamed at search time.
  bool streamed() const;
  // The memory budget in bytes this index works under.
  std::size_t memory_budget() const;
  std::string Describe() const;

  // Appends `rows` descriptors (host memory, row-major, options().type / dim()).
  void Add(const void* data, int64_t rows);
  void AddUint8(const uint8_t* data, int64_t rows);
  void AddFloat(const float* data, int64_t rows);
  void Reset();

  // k nearest corpus rows of each of the nq queries (same type and dim as the corpus): rows of k
  // distances ascending (ties to the lower index, NaN last) and int64 indices; k > size() pads
  // with -1 / +inf. Outputs are nq * k each. Blocks until the results are written.
  void Search(const void* queries, int64_t nq, int64_t k, float* distances, int64_t* indices,
              const SearchOptions& options = {});
  // k-NN graph of the corpus: for every corpus row its k nearest other rows (self excluded).
  // Outputs are size() * k each.
  void KnnGraph(int64_t k, float* distances, int64_t* indices,
                const SearchOptions& options = {});

  const SearchStats& last_stats() const;

  // The largest k a search accepts.
  static constexpr int64_t kMaxK = 2048;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fm::gpu
