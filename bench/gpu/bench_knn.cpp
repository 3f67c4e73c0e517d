// featmatch-bench knn: the GPU exact kNN engine on D = 128 uint8 SIFT-like data, the target
// shapes of DESIGN.md, plus a corpus streamed from host memory at 4x the memory budget. One line
// per shape: median time over several runs, the stage times of one run, and the cuBLASLt int8 GEMM
// of the same product measured in the same process (the scoring floor of the unfused approach).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "cuda_check.cuh"
#include "fm/gpu/index.h"
#include "fm/gpu/resources.h"
#include "knn/lt_gemm.cuh"

namespace fm::bench {
namespace {

using gpu::detail::DeviceBuffer;

// SIFT-like values: a byte of a xorshift stream mapped through an exponential quantile table
// (mean about 20, clamped at 255), filled by all hardware threads.
void FillSiftLike(uint8_t* out, std::size_t n, uint64_t seed) {
  uint8_t table[256];
  for (int i = 0; i < 256; ++i) {
    const double u = (i + 0.5) / 256.0;
    table[i] = static_cast<uint8_t>(std::min(255.0, -20.0 * std::log(1.0 - u)));
  }
  const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  const std::size_t per = (n + nt - 1) / nt;
  for (unsigned t = 0; t < nt; ++t) {
    pool.emplace_back([=, &table] {
      uint64_t x = seed * 0x9E3779B97F4A7C15ull + t + 1;
      const std::size_t b = t * per, e = std::min(n, b + per);
      for (std::size_t i = b; i < e; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (std::size_t j = 0; j < 8 && i + j < e; ++j) out[i + j] = table[(x >> (8 * j)) & 255];
      }
    });
  }
  for (auto& th : pool) th.join();
}

struct Shape {
  int64_t q, n, k;
  double target_ms;
};

std::string DeviceName() { return gpu::GetDeviceInfo(0).name; }

// Median time of the cuBLASLt int8 GEMM computing the full Q x N inner products (in tiles of at
// most 2^29 outputs, int32).
double GemmFloorMs(gpu::Resources& res, const uint8_t* dq, const uint8_t* dc, int64_t q,
                   int64_t n, int runs) {
  const int64_t d = 128;
  const int64_t max_out = int64_t{1} << 29;
  const int64_t qt = std::min<int64_t>(q, std::max<int64_t>(1, max_out / std::min(n, max_out)));
  const int64_t ct = std::min<int64_t>(n, max_out / qt);
  DeviceBuffer<int32_t> c(static_cast<std::size_t>(qt * ct));
  DeviceBuffer<uint8_t> ws(32u << 20);
  gpu::detail::LtGemm lt;
  cudaStream_t s = static_cast<cudaStream_t>(res.stream());
  auto run_all = [&] {
    for (int64_t q0 = 0; q0 < q; q0 += qt)
      for (int64_t c0 = 0; c0 < n; c0 += ct)
        lt.Run(static_cast<cublasLtHandle_t>(res.cublaslt_handle()), gpu::detail::GemmType::kInt8,
               std::min(ct, n - c0), std::min(qt, q - q0), d, dc + c0 * d, d, dq + q0 * d, d,
               c.data(), ct, ws.data(), ws.size(), s);
  };
  gpu::detail::CudaEvent a, b;
  run_all();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    FM_CUDA_CHECK(cudaEventRecord(a.get(), s));
    run_all();
    FM_CUDA_CHECK(cudaEventRecord(b.get(), s));
    FM_CUDA_CHECK(cudaEventSynchronize(b.get()));
    float ms = 0;
    FM_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
    t.push_back(ms);
  }
  return Median(t);
}

void PrintStats(const gpu::SearchStats& st) {
  std::printf(
      "\"path\":\"%s\",\"score_kernel\":\"%s\",\"fused_fallback\":%s,\"fused_redone\":%lld,"
      "\"candidates\":%lld,\"tile_rows\":%lld,"
      "\"tile_cols\":%lld,\"query_tiles\":%lld,\"corpus_tiles\":%lld,\"prepare_ms\":%.4f,"
      "\"score_ms\":%.4f,\"select_ms\":%.4f,\"copy_ms\":%.4f,\"stats_total_ms\":%.4f",
      st.path.c_str(), st.score_kernel.c_str(), st.fused_fallback ? "true" : "false",
      static_cast<long long>(st.fused_redone), static_cast<long long>(st.candidates),
      static_cast<long long>(st.tile_rows), static_cast<long long>(st.tile_cols),
      static_cast<long long>(st.query_tiles), static_cast<long long>(st.corpus_tiles),
      st.prepare_ms, st.score_ms, st.select_ms, st.copy_ms, st.total_ms);
}

int RunKnnBench(const std::vector<std::string>& args) {
  if (gpu::DeviceCount() == 0) {
    std::fprintf(stderr, "featmatch-bench knn: no CUDA device\n");
    return 1;
  }
  const int runs = std::stoi(ArgValue(args, "--runs", "7"));
  const std::string only = ArgValue(args, "--only", "");
  const std::string precision = ArgValue(args, "--precision", "exact");
  const bool fused = !HasFlag(args, "--no-fused");
  const bool mma_sync = HasFlag(args, "--mma-sync");  // the portable fused kernel on Hopper too
  // --check: the results must equal, bit for bit, those of the other fused kernel run under the
  // safe bounds.
  const bool check = HasFlag(args, "--check");
  // --tentative-rank J: the fused last level's bound (0 auto, -1 off).
  const int64_t tent_rank = std::stoll(ArgValue(args, "--tentative-rank", "0"));
  const std::string dev = DeviceName();
  std::vector<Shape> shapes = {{8192, 65536, 32, 0.5},
                               {65536, 65536, 32, 3.0},
                               {1024, 4194304, 32, 3.0},
                               {8192, 1048576, 128, 10.0}};
  const int64_t d = 128;
  gpu::Resources res(0);
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    if (!only.empty() && only.find(std::to_string(si)) == std::string::npos) continue;
    const Shape& s = shapes[si];
    std::vector<uint8_t> hc(static_cast<std::size_t>(s.n * d)),
        hq(static_cast<std::size_t>(s.q * d));
    FillSiftLike(hc.data(), hc.size(), 1 + si);
    FillSiftLike(hq.data(), hq.size(), 100 + si);
    gpu::IndexOptions o;
    o.precision = gpu::ParsePrecision(precision);
    o.fused = fused;
    o.fused_wgmma = !mma_sync;
    o.fused_tentative_rank = tent_rank;
    o.collect_stats = false;
    gpu::Index index(o);
    const auto a0 = std::chrono::steady_clock::now();
    index.AddUint8(hc.data(), s.n);
    const double add_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a0).count();
    DeviceBuffer<uint8_t> dq(hq.size());
    DeviceBuffer<float> dd(static_cast<std::size_t>(s.q * s.k));
    DeviceBuffer<int64_t> di(static_cast<std::size_t>(s.q * s.k));
    FM_CUDA_CHECK(cudaMemcpy(dq.data(), hq.data(), hq.size(), cudaMemcpyHostToDevice));
    gpu::SearchOptions so;
    so.queries_on_device = true;
    so.outputs_on_device = true;
    auto search = [&] { index.Search(dq.data(), s.q, s.k, dd.data(), di.data(), so); };
    const std::vector<double> t = TimeRuns(search, runs, 2);
    const double med = Median(t);
    const double mn = *std::min_element(t.begin(), t.end());
    const gpu::SearchStats plain = index.last_stats();
    // One more run with stage events.
    gpu::IndexOptions o2 = o;
    o2.collect_stats = true;
    gpu::Index staged(o2);
    staged.AddUint8(hc.data(), s.n);
    staged.Search(dq.data(), s.q, s.k, dd.data(), di.data(), so);
    staged.Search(dq.data(), s.q, s.k, dd.data(), di.data(), so);
    const gpu::SearchStats st = staged.last_stats();
    long long mismatches = -1;  // -1: not checked
    if (check) {
      std::vector<float> ha(static_cast<std::size_t>(s.q * s.k)), hb(ha.size());
      std::vector<int64_t> ia(ha.size()), ib(ha.size());
      FM_CUDA_CHECK(cudaMemcpy(ha.data(), dd.data(), ha.size() * sizeof(float),
                               cudaMemcpyDeviceToHost));
      FM_CUDA_CHECK(cudaMemcpy(ia.data(), di.data(), ia.size() * sizeof(int64_t),
                               cudaMemcpyDeviceToHost));
      gpu::IndexOptions o3 = o;
      o3.fused_wgmma = mma_sync;
      o3.fused_tentative_rank = -1;  // and the safe bound at every level
      gpu::Index other(o3);
      other.AddUint8(hc.data(), s.n);
      other.Search(dq.data(), s.q, s.k, dd.data(), di.data(), so);
      FM_CUDA_CHECK(cudaMemcpy(hb.data(), dd.data(), hb.size() * sizeof(float),
                               cudaMemcpyDeviceToHost));
      FM_CUDA_CHECK(cudaMemcpy(ib.data(), di.data(), ib.size() * sizeof(int64_t),
                               cudaMemcpyDeviceToHost));
      mismatches = 0;
      for (std::size_t j = 0; j < ha.size(); ++j)
        mismatches += (ha[j] != hb[j] || ia[j] != ib[j]) ? 1 : 0;
    }
    // The GEMM floor: cuBLASLt int8 on the same operands (values shifted or not, same speed).
    DeviceBuffer<uint8_t> dc(hc.size());
    FM_CUDA_CHECK(cudaMemcpy(dc.data(), hc.data(), hc.size(), cudaMemcpyHostToDevice));
    const double gemm_ms = GemmFloorMs(res, dq.data(), dc.data(), s.q, s.n, 5);
    const double ops = 2.0 * s.q * s.n * d;
    std::printf(
        "{\"bench\":\"knn\",\"device\":\"%s\",\"q\":%lld,\"n\":%lld,\"k\":%lld,\"d\":128,"
        "\"type\":\"uint8\",\"metric\":\"l2\",\"precision\":\"%s\",\"runs\":%d,"
        "\"median_ms\":%.4f,\"min_ms\":%.4f,\"target_ms\":%.2f,\"add_ms\":%.2f,"
        "\"gemm_int8_ms\":%.4f,\"gemm_int8_tops\":%.1f,\"effective_tops\":%.1f,"
        "\"fraction_of_gemm\":%.3f,\"run_path\":\"%s\",\"check_mismatches\":%lld,",
        dev.c_str(), static_cast<long long>(s.q), static_cast<long long>(s.n),
        static_cast<long long>(s.k), precision.c_str(), runs, med, mn, s.target_ms, add_ms,
        gemm_ms, ops / gemm_ms * 1e-9, ops / med * 1e-9, gemm_ms / med, plain.path.c_str(),
        mismatches);
    PrintStats(st);
    std::printf("}\n");
    std::fflush(stdout);
  }

  // Streamed corpus: 4x the memory budget, held in pinned host memory.
  if (only.empty() || only.find('s') != std::string::npos) {
    const std::size_t budget = std::stoull(ArgValue(args, "--stream-budget-mb", "1024")) << 20;
    const int64_t n = static_cast<int64_t>(4 * budget / d);
    const int64_t q = 1024, k = 32;
    std::vector<uint8_t> hc(static_cast<std::size_t>(n * d)), hq(static_cast<std::size_t>(q * d));
    FillSiftLike(hc.data(), hc.size(), 7);
    FillSiftLike(hq.data(), hq.size(), 8);
    gpu::IndexOptions o;
    o.memory_budget = budget;
    o.collect_stats = true;
    gpu::Index index(o);
    const auto a0 = std::chrono::steady_clock::now();
    index.AddUint8(hc.data(), n);
    const double add_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a0).count();
    std::vector<float> hd(static_cast<std::size_t>(q * k));
    std::vector<int64_t> hi(static_cast<std::size_t>(q * k));
    auto search = [&] { index.Search(hq.data(), q, k, hd.data(), hi.data()); };
    const std::vector<double> t = TimeRuns(search, 3, 1);
    const double med = Median(t);
    const double corpus_gb = static_cast<double>(n) * d * 1e-9;
    std::printf(
        "{\"bench\":\"knn_streamed\",\"device\":\"%s\",\"q\":%lld,\"n\":%lld,\"k\":%lld,\"d\":128,"
        "\"budget_mb\":%zu,\"corpus_gb\":%.3f,\"streamed\":%s,\"median_ms\":%.2f,"
        "\"corpus_gb_per_s\":%.2f,\"h2d_gb\":%.3f,\"add_ms\":%.1f,",
        dev.c_str(), static_cast<long long>(q), static_cast<long long>(n),
        static_cast<long long>(k), budget >> 20, corpus_gb, index.streamed() ? "true" : "false",
        med, corpus_gb / (med * 1e-3), index.last_stats().h2d_bytes * 1e-9, add_ms);
    PrintStats(index.last_stats());
    std::printf("}\n");
    std::fflush(stdout);
  }
  return 0;
}

FM_REGISTER_BENCH("knn",
                  "GPU exact kNN engine (D=128 uint8; --runs N, --only 0123s, --precision P, "
                  "--no-fused, --mma-sync, --check, --tentative-rank J)",
                  RunKnnBench);

}  // namespace
}  // namespace fm::bench
