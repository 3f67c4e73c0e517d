#include "fm/matcher/backend.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>

#ifdef FM_WITH_GPU
#include "fm/gpu/resources.h"
#endif
#ifdef FM_WITH_GPU_BACKEND
#include "gpu_backend.h"
#endif

namespace fm::matcher {

const char* BackendKindName(BackendKind k) {
  switch (k) {
    case BackendKind::kAuto: return "auto";
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kGpu: return "gpu";
  }
  return "unknown";
}

BackendKind ParseBackendKind(const std::string& name) {
  if (name == "auto") return BackendKind::kAuto;
  if (name == "cpu") return BackendKind::kCpu;
  if (name == "gpu") return BackendKind::kGpu;
  throw std::invalid_argument("unknown backend '" + name + "' (use auto, cpu or gpu)");
}

bool BackendOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (device < 0) return bad("GPU device must be >= 0");
  if (threads < 0) return bad("threads must be >= 0");
  if (!(memory_fraction > 0 && memory_fraction <= 0.95))
    return bad("GPU memory fraction must be in (0, 0.95]");
  if (precision != "exact" && precision != "fp32" && precision != "tf32" && precision != "fp16")
    return bad("precision must be exact, fp32, tf32 or fp16");
  if (select_algo != "auto" && select_algo != "tbis" && select_algo != "merge-queue" &&
      select_algo != "quick-multiselect" && select_algo != "sort")
    return bad("GPU k-selection must be auto, tbis, merge-queue, quick-multiselect or sort");
  return true;
}

bool GpuAvailable(std::string* name) {
#if defined(FM_WITH_GPU) && defined(FM_WITH_GPU_BACKEND)
  try {
    if (fm::gpu::DeviceCount() <= 0) return false;
    if (name) *name = fm::gpu::GetDeviceInfo(0).name;
    return true;
  } catch (const std::exception&) {
    return false;
  }
#else
  (void)name;
  return false;
#endif
}

std::unique_ptr<core::KnnBackend> CreateKnnBackend(const BackendOptions& options,
                                                   std::string* note) {
  std::string why;
  if (!options.Check(&why)) throw std::invalid_argument("backend options: " + why);
  auto say = [&](const std::string& s) {
    if (note) *note = s;
  };
  core::CpuKnnOptions cpu;
  cpu.threads = options.threads;
  if (options.kind == BackendKind::kCpu) {
    auto b = core::CreateCpuKnnBackend(cpu);
    say("backend: " + b->description() + " (requested)");
    return b;
  }
#ifdef FM_WITH_GPU_BACKEND
  std::string gpu_error;
  try {
    auto b = detail::CreateGpuKnnBackend(options);
    say("backend: " + b->description() +
        (options.kind == BackendKind::kAuto ? " (auto: a GPU is present)" : " (requested)"));
    return b;
  } catch (const std::exception& e) {
    if (options.kind == BackendKind::kGpu)
      throw std::runtime_error(std::string("GPU backend unavailable: ") + e.what());
    gpu_error = e.what();
  }
  auto b = core::CreateCpuKnnBackend(cpu);
  say("backend: " + b->description() + " (auto: no usable GPU: " + gpu_error + ")");
  return b;
#else
  if (options.kind == BackendKind::kGpu)
    throw std::runtime_error("GPU backend unavailable: this build has no CUDA support");
  auto b = core::CreateCpuKnnBackend(cpu);
  say("backend: " + b->description() + " (auto: this build has no CUDA support)");
  return b;
#endif
}

double EstimatedCpuSeconds(const SearchWork& work, int threads) {
  constexpr double kPairsPerThreadSecond = 0.4e9;  // uint8, 128 dimensions
  const int t = threads > 0 ? threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const double pairs = static_cast<double>(work.queries) * static_cast<double>(work.corpus) *
                       std::max(work.searches, 1);
  const double rate = kPairsPerThreadSecond * (work.float_descriptors ? 0.5 : 1.0) * 128.0 /
                      std::max(work.dim, 1);
  return pairs / (rate * t);
}

SearchWork SearchWorkOf(const core::DescriptorMatrix& queries, const core::DescriptorMatrix& corpus,
                        int searches) {
  SearchWork w;
  w.queries = queries.rows();
  w.corpus = corpus.rows();
  w.dim = queries.dim();
  w.float_descriptors = queries.type() != core::DescriptorType::kUint8;
  w.searches = searches;
  return w;
}

bool AutoTakesTheCpuFor(const BackendOptions& options, const SearchWork& work) {
  return options.kind == BackendKind::kAuto &&
         EstimatedCpuSeconds(work, options.threads) < kGpuStartSeconds;
}

std::unique_ptr<core::KnnBackend> CreateKnnBackendFor(const BackendOptions& options,
                                                      const SearchWork& work,
                                                      std::string* note) {
  if (!AutoTakesTheCpuFor(options, work)) return CreateKnnBackend(options, note);
  const double cpu_s = EstimatedCpuSeconds(work, options.threads);
  BackendOptions cpu = options;
  cpu.kind = BackendKind::kCpu;
  auto b = CreateKnnBackend(cpu, nullptr);
  if (note) {
    char buf[160];
    const bool two = work.searches > 1;
    std::snprintf(buf, sizeof buf,
                  " (auto: the search%s, about %.0f ms here, end%s before a GPU would have "
                  "started)",
                  two ? "es" : "", cpu_s * 1e3, two ? "" : "s");
    *note = "backend: " + b->description() + buf;
  }
  return b;
}

}  // namespace fm::matcher
