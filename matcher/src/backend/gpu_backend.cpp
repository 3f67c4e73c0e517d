// core::KnnBackend on fm::gpu::Index: the corpus is uploaded into a device index (kept while the
// descriptor type, dimension and metric stay the same), the queries searched against it.
// With BackendKind::kAuto a search the GPU cannot take (out of memory, k above the engine's
// limit) runs on the CPU backend instead; with kGpu it is an error.
#include "gpu_backend.h"

#include <limits>
#include <stdexcept>
#include <string>

#include "fm/gpu/index.h"
#include "fm/gpu/resources.h"

namespace fm::matcher::detail {
namespace {

gpu::KnnMetric ToGpu(core::Metric m) {
  switch (m) {
    case core::Metric::kL2Squared: return gpu::KnnMetric::kL2Squared;
    case core::Metric::kInnerProduct: return gpu::KnnMetric::kInnerProduct;
    case core::Metric::kCosine: return gpu::KnnMetric::kCosine;
    case core::Metric::kPearson: return gpu::KnnMetric::kPearson;
  }
  throw std::invalid_argument("GPU backend: unknown metric");
}

class GpuKnnBackend final : public core::KnnBackend {
 public:
  explicit GpuKnnBackend(const BackendOptions& options) : options_(options) {
    if (gpu::DeviceCount() <= 0)
      throw std::runtime_error("no CUDA device is present (or no driver)");
    info_ = gpu::GetDeviceInfo(options.device);
    precision_ = gpu::ParsePrecision(options.precision);
    select_algo_ = gpu::ParseSelectAlgo(options.select_algo);
  }

  std::string name() const override { return "gpu"; }
  std::string description() const override {
    return "gpu (" + info_.name + ", device " + std::to_string(info_.ordinal) + ", " +
           options_.precision + " scoring, select " + options_.select_algo + ")";
  }

  core::KnnResult Search(const core::DescriptorMatrix& queries,
                         const core::DescriptorMatrix& corpus,
                         const core::KnnParams& params) override {
    return Guarded(
        queries, corpus, params,
        [&](core::KnnResult& r) {
          gpu::Index& index = IndexFor(corpus, params.metric);
          index.Reset();
          index.Add(corpus.bytes(), corpus.rows());
          index.Search(queries.bytes(), queries.rows(), params.k, r.distances.data(),
                       r.indices.data());
        },
        [&] { index_.reset(); });
  }

  void SetCorpus(const core::DescriptorMatrix& corpus) override {
    core::KnnBackend::SetCorpus(corpus);
    resident_.reset();  // uploaded at the next SearchCorpus, for its metric
  }
  void ClearCorpus() override {
    core::KnnBackend::ClearCorpus();
    resident_.reset();
  }

  // The registered corpus stays on the device between searches (its own index, so one-off
  // Search calls do not evict it).
  core::KnnResult SearchCorpus(const core::DescriptorMatrix& queries,
                               const core::KnnParams& params) override {
    if (!corpus_) throw std::logic_error("SearchCorpus called without SetCorpus");
    const core::DescriptorMatrix& corpus = *corpus_;
    return Guarded(
        queries, corpus, params,
        [&](core::KnnResult& r) {
          if (!resident_ || resident_->options().metric != ToGpu(params.metric)) {
            resident_.reset();
            resident_ = MakeIndex(corpus, params.metric);
            resident_->Add(corpus.bytes(), corpus.rows());
          }
          resident_->Search(queries.bytes(), queries.rows(), params.k, r.distances.data(),
                            r.indices.data());
        },
        [&] { resident_.reset(); });
  }

 private:
  // What both searches share: the argument checks, empty inputs, k above the engine's limit, and
  // an out-of-memory GPU search (drop_index frees the index that ran out) going to Fallback.
  // search(r) runs the GPU search into the padded result r.
  template <typename SearchFn, typename DropFn>
  core::KnnResult Guarded(const core::DescriptorMatrix& queries,
                          const core::DescriptorMatrix& corpus, const core::KnnParams& params,
                          SearchFn&& search, DropFn&& drop_index) {
    core::CheckKnnArguments(queries, corpus, params);
    // A GPU search takes milliseconds: the cancel is looked at before it, not during it.
    core::ThrowIfCancelled(params.cancel);
    core::KnnResult r = core::KnnResult::Padded(queries.rows(), params.k);
    if (queries.rows() == 0 || corpus.rows() == 0) return r;
    if (params.k > gpu::Index::kMaxK)
      return Fallback(queries, corpus, params, "k above the GPU limit");
    try {
      search(r);
      return r;
    } catch (const gpu::GpuOutOfMemory& e) {
      drop_index();
      return Fallback(queries, corpus, params, e.what());
    }
  }

  static gpu::ElementType TypeOf(const core::DescriptorMatrix& corpus) {
    return corpus.type() == core::DescriptorType::kUint8 ? gpu::ElementType::kUint8
                                                         : gpu::ElementType::kFloat32;
  }

  gpu::Index& IndexFor(const core::DescriptorMatrix& corpus, core::Metric metric) {
    const gpu::ElementType type = TypeOf(corpus);
    const gpu::KnnMetric m = ToGpu(metric);
    if (index_ && index_->options().type == type && index_->dim() == corpus.dim() &&
        index_->options().metric == m)
      return *index_;
    index_.reset();
    index_ = MakeIndex(corpus, metric);
    return *index_;
  }

  std::unique_ptr<gpu::Index> MakeIndex(const core::DescriptorMatrix& corpus,
                                        core::Metric metric) const {
    const gpu::ElementType type = TypeOf(corpus);
    gpu::IndexOptions o;
    o.device = options_.device;
    o.type = type;
    o.dim = corpus.dim();
    o.metric = ToGpu(metric);
    o.precision = precision_;
    if (o.precision == gpu::Precision::kInt8 && type != gpu::ElementType::kUint8)
      o.precision = gpu::Precision::kExact;
    o.select_algo = select_algo_;
    o.memory_fraction = options_.memory_fraction;
    std::string why;
    if (!o.Check(&why)) throw std::invalid_argument("GPU backend: " + why);
    return std::make_unique<gpu::Index>(o);
  }

  core::KnnResult Fallback(const core::DescriptorMatrix& queries,
                           const core::DescriptorMatrix& corpus, const core::KnnParams& params,
                           const std::string& why) {
    if (options_.kind != BackendKind::kAuto)
      throw std::runtime_error("GPU backend cannot run this search (" + why +
                               "); use --backend auto or cpu");
    if (!cpu_) cpu_ = core::CreateCpuKnnBackend();
    return cpu_->Search(queries, corpus, params);
  }

  BackendOptions options_;
  gpu::DeviceInfo info_;
  gpu::Precision precision_ = gpu::Precision::kExact;
  gpu::SelectAlgo select_algo_ = gpu::SelectAlgo::kAuto;
  std::unique_ptr<gpu::Index> index_;     // one-off searches
  std::unique_ptr<gpu::Index> resident_;  // the registered corpus
  std::unique_ptr<core::KnnBackend> cpu_;
};

}  // namespace

std::unique_ptr<core::KnnBackend> CreateGpuKnnBackend(const BackendOptions& options) {
  try {
    return std::make_unique<GpuKnnBackend>(options);
  } catch (const gpu::GpuError& e) {
    throw std::runtime_error(std::string("GPU backend: ") + e.what());
  }
}

}  // namespace fm::matcher::detail
