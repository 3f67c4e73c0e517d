// fm::gpu::Index: corpus storage (device, or pinned host chunks streamed at search time) and the
// search pipelines.
//
// Tiled path (every metric and precision): for each corpus tile (a device slice, or a streamed
// chunk copied on one of several copy streams into a ring of device buffers) and each query
// tile, the score stream runs the GEMM and the distance epilogue into one of two tile buffers
// while the main stream selects the previous tile's top-k (select_k) and merges it into the
// running per-query lists. Events order the two: the score stream waits for a buffer to be freed
// by its merge, the main stream for a buffer to be scored.
//
// Fused path (uint8, int8 precision, L2 or IP, device corpus): a fused int8 tensor-core kernel
// (wgmma on Hopper for 128-byte rows, mma.sync elsewhere) that keeps only the rows under each
// query's threshold, run over nested strided samples of the corpus and finally the whole corpus,
// each level's exact k-th distance (or, for large searches, a tentative smaller one) becoming the
// next level's threshold; a per-query selection of the few survivors. Queries a tentative bound
// left short are searched again under their safe bound; if a query overflows its candidate slots
// at the last level otherwise, the tiled path redoes the search.
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "fm/gpu/index.h"
#include "knn/knn_kernels.cuh"
#include "knn/lt_gemm.cuh"

namespace fm::gpu {

using detail::CudaEvent;
using detail::DeviceBuffer;
using detail::DeviceScope;
using detail::GemmType;
using detail::MetricCode;
using detail::OperandKind;
using detail::PinnedBuffer;
using detail::RowStats;

const char* ElementTypeName(ElementType t) {
  return t == ElementType::kUint8 ? "uint8" : "float32";
}

const char* KnnMetricName(KnnMetric m) {
  switch (m) {
    case KnnMetric::kL2Squared: return "l2";
    case KnnMetric::kInnerProduct: return "ip";
    case KnnMetric::kCosine: return "cosine";
    case KnnMetric::kPearson: return "pearson";
  }
  return "unknown";
}

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kExact: return "exact";
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kInt8: return "int8";
  }
  return "unknown";
}

KnnMetric ParseKnnMetric(const std::string& name) {
  if (name == "l2" || name == "l2sq" || name == "euclidean") return KnnMetric::kL2Squared;
  if (name == "ip" || name == "inner-product" || name == "dot") return KnnMetric::kInnerProduct;
  if (name == "cosine" || name == "cos") return KnnMetric::kCosine;
  if (name == "pearson" || name == "correlation") return KnnMetric::kPearson;
  throw std::invalid_argument("unknown metric '" + name + "' (use l2, ip, cosine or pearson)");
}

Precision ParsePrecision(const std::string& name) {
  if (name == "exact") return Precision::kExact;
  if (name == "fp32") return Precision::kFp32;
  if (name == "tf32") return Precision::kTf32;
  if (name == "fp16") return Precision::kFp16;
  if (name == "int8") return Precision::kInt8;
  throw std::invalid_argument("unknown precision '" + name +
                              "' (use exact, fp32, tf32, fp16 or int8)");
}

bool IndexOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (device < 0) return bad("device must be >= 0");
  if (dim < 1 || dim > 4096) return bad("dim must be in 1..4096 (got " + std::to_string(dim) + ")");
  if (precision == Precision::kInt8 && type != ElementType::kUint8)
    return bad("precision int8 needs uint8 descriptors; use exact, fp32, tf32 or fp16");
  if (precision == Precision::kInt8 && dim > 256)
    return bad("precision int8 supports dim <= 256 (exact int32 sums); use fp32");
  if (!(memory_fraction > 0 && memory_fraction <= 0.95))
    return bad("memory_fraction must be in (0, 0.95]");
  if (memory_budget != 0 && memory_budget < (1u << 20))
    return bad("memory_budget must be 0 (automatic) or at least 1 MiB");
  if (query_tile < 0 || corpus_tile < 0) return bad("tile sizes must be >= 0 (0 = automatic)");
  if (copy_streams < 1 || copy_streams > 8) return bad("copy_streams must be in 1..8");
  if (stream_buffers < 2 || stream_buffers > 8) return bad("stream_buffers must be in 2..8");
  if (fused_candidates < 0) return bad("fused_candidates must be >= 0 (0 = automatic)");
  return true;
}

namespace {

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

class Stream {
 public:
  Stream() { FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_{};
};

// Timing of one stage: pairs of events, summed after the search synchronised.
class StageTimer {
 public:
  explicit StageTimer(bool on) : on_(on) {}
  void Begin(cudaStream_t s) {
    if (!on_) return;
    events_.emplace_back(std::make_unique<CudaEvent>());
    FM_CUDA_CHECK(cudaEventRecord(events_.back()->get(), s));
  }
  void End(cudaStream_t s) { Begin(s); }
  double TotalMs() const {
    double t = 0;
    for (std::size_t i = 0; i + 1 < events_.size(); i += 2) {
      float ms = 0;
      FM_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i]->get(), events_[i + 1]->get()));
      t += ms;
    }
    return t;
  }

 private:
  bool on_;
  std::vector<std::unique_ptr<CudaEvent>> events_;
};

}  // namespace

struct Index::Impl {
  IndexOptions opt;
  std::unique_ptr<Resources> res;
  int32_t dp = 0;          // padded dimension of the operands
  OperandKind kind{};
  MetricCode metric{};
  int out_type = 1;        // 0 int8, 1 float, 2 half
  std::size_t es = 4;      // operand element size
  GemmType gemm{};
  std::size_t budget = 0;
  int num_sms = 1;

  int64_t n = 0;
  bool host_mode = false;
  // Device corpus.
  DeviceBuffer<uint8_t> corpus;
  DeviceBuffer<RowStats> cstats;
  int64_t cap_rows = 0;
  // Host corpus: pinned chunks of chunk_rows rows.
  int64_t chunk_rows = 0;
  std::vector<PinnedBuffer<uint8_t>> chunks;
  std::vector<PinnedBuffer<RowStats>> chunk_stats;

  Stream score_stream;
  std::vector<std::unique_ptr<Stream>> copy_streams;
  DeviceBuffer<uint8_t> workspace;
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;
  detail::LtGemm lt;
  SearchStats stats;
  // Scratch kept across searches (grow-only), so that repeated searches allocate nothing.
  DeviceBuffer<uint8_t> s_qraw, s_qop, s_temp;
  DeviceBuffer<RowStats> s_qst;
  DeviceBuffer<float> s_ov, s_gv, s_tile[2], s_tv[2], s_thr;
  DeviceBuffer<int64_t> s_oi, s_gi, s_ti[2];
  DeviceBuffer<uint64_t> s_keys;
  DeviceBuffer<int32_t> s_counts, s_cterms;
  // Column terms of the resident corpus for the wgmma kernel, per sample stride (for n rows).
  std::map<int64_t, DeviceBuffer<int32_t>> ct_cache;
  int64_t ct_cache_n = -1;
  DeviceBuffer<float> s_thr_safe, s_redo_thr, s_redo_v;  // fused: tentative last level, redo
  DeviceBuffer<int64_t> s_short_ids, s_redo_i, s_ctl;
  DeviceBuffer<uint8_t> s_redo_q;
  DeviceBuffer<RowStats> s_redo_st;
  DeviceBuffer<float> s_lv, s_cv, s_thr0;     // fused: level lists, chunk lists, running k-th
  DeviceBuffer<int64_t> s_li, s_ci;
  std::vector<DeviceBuffer<uint8_t>> s_ring;
  std::vector<DeviceBuffer<RowStats>> s_ring_st;

  std::size_t RowBytes() const { return static_cast<std::size_t>(dp) * es; }
  std::size_t RawRowBytes() const {
    return static_cast<std::size_t>(opt.dim) * (opt.type == ElementType::kUint8 ? 1 : 4);
  }
  cudaStream_t main() const { return detail::AsStream(res->stream()); }
  std::string Where() const {
    return "GPU " + std::to_string(opt.device) + ": ";
  }

  void Prepare(const void* raw_dev, int64_t rows, void* out, RowStats* st, cudaStream_t s) {
    detail::LaunchPrepare(raw_dev, opt.type == ElementType::kUint8, rows, opt.dim, dp, metric,
                          kind, out_type, out, st, s);
  }

  void EnsureDeviceCapacity(int64_t rows) {
    if (rows <= cap_rows) return;
    int64_t want = std::max<int64_t>(rows, cap_rows * 2);
    const int64_t limit = static_cast<int64_t>(budget / 2 / (RowBytes() + sizeof(RowStats)));
    if (want > limit) want = std::max(rows, limit);
    DeviceBuffer<uint8_t> nc(static_cast<std::size_t>(want) * RowBytes());
    DeviceBuffer<RowStats> ns(static_cast<std::size_t>(want));
    if (n > 0) {
      FM_CUDA_CHECK(cudaMemcpyAsync(nc.data(), corpus.data(), n * RowBytes(),
                                    cudaMemcpyDeviceToDevice, main()));
      FM_CUDA_CHECK(cudaMemcpyAsync(ns.data(), cstats.data(), n * sizeof(RowStats),
                                    cudaMemcpyDeviceToDevice, main()));
      FM_CUDA_CHECK(cudaStreamSynchronize(main()));
    }
    corpus = std::move(nc);
    cstats = std::move(ns);
    cap_rows = want;
  }

  // Appends prepared rows (device memory) to the pinned host chunks.
  void AppendHost(const uint8_t* op_dev, const RowStats* st_dev, int64_t rows) {
    int64_t done = 0;
    while (done < rows) {
      const int64_t at = n + done;
      const int64_t ci = at / chunk_rows, off = at % chunk_rows;
      if (ci >= static_cast<int64_t>(chunks.size())) {
        chunks.emplace_back(static_cast<std::size_t>(chunk_rows) * RowBytes());
        chunk_stats.emplace_back(static_cast<std::size_t>(chunk_rows));
      }
      const int64_t take = std::min(rows - done, chunk_rows - off);
      FM_CUDA_CHECK(cudaMemcpyAsync(chunks[ci].data() + off * RowBytes(),
                                    op_dev + done * RowBytes(), take * RowBytes(),
                                    cudaMemcpyDeviceToHost, main()));
      FM_CUDA_CHECK(cudaMemcpyAsync(chunk_stats[ci].data() + off, st_dev + done,
                                    take * sizeof(RowStats), cudaMemcpyDeviceToHost, main()));
      done += take;
    }
    FM_CUDA_CHECK(cudaStreamSynchronize(main()));
  }

  void SwitchToHost() {
    host_mode = true;
    // Chunk size: the ring of stream_buffers chunks takes about 3/8 of the budget.
    chunk_rows = opt.corpus_tile > 0
                     ? opt.corpus_tile
                     : static_cast<int64_t>(budget * 3 / 8 / opt.stream_buffers /
                                            (RowBytes() + sizeof(RowStats)));
    chunk_rows = std::max<int64_t>(chunk_rows, 16);
    if (n > 0) {
      const int64_t rows = n;
      n = 0;
      AppendHost(corpus.data(), cstats.data(), rows);
      n = rows;
    }
    corpus.Release();
    cstats.Release();
    cap_rows = 0;
  }

  void Add(const void* data, int64_t rows) {
    DeviceScope scope(opt.device);
    const std::size_t row_bytes = RowBytes() + sizeof(RowStats);
    const bool want_host =
        opt.storage == CorpusStorage::kHost ||
        (opt.storage == CorpusStorage::kAuto &&
         static_cast<double>(n + rows) * row_bytes > static_cast<double>(budget) / 2);
    if (want_host && !host_mode) SwitchToHost();
    if (!host_mode && opt.storage == CorpusStorage::kDevice &&
        static_cast<double>(n + rows) * row_bytes > static_cast<double>(budget) * 0.9) {
      throw GpuOutOfMemory(Where() + "the corpus (" + std::to_string(n + rows) +
                           " rows) does not fit in the memory budget of " +
                           std::to_string(budget >> 20) +
                           " MiB with storage=device; use storage auto/host or a larger budget");
    }
    // Staged in pieces of at most 64 MiB of raw descriptors.
    const int64_t piece = std::max<int64_t>(1, static_cast<int64_t>((64u << 20) / RawRowBytes()));
    DeviceBuffer<uint8_t> raw(static_cast<std::size_t>(std::min(rows, piece)) * RawRowBytes());
    DeviceBuffer<uint8_t> op;
    DeviceBuffer<RowStats> st;
    if (host_mode) {
      op.Resize(static_cast<std::size_t>(std::min(rows, piece)) * RowBytes());
      st.Resize(static_cast<std::size_t>(std::min(rows, piece)));
    } else {
      EnsureDeviceCapacity(n + rows);
    }
    const uint8_t* src = static_cast<const uint8_t*>(data);
    for (int64_t r0 = 0; r0 < rows; r0 += piece) {
      const int64_t rn = std::min(piece, rows - r0);
      FM_CUDA_CHECK(cudaMemcpyAsync(raw.data(), src + r0 * RawRowBytes(), rn * RawRowBytes(),
                                    cudaMemcpyHostToDevice, main()));
      if (host_mode) {
        Prepare(raw.data(), rn, op.data(), st.data(), main());
        AppendHost(op.data(), st.data(), rn);
      } else {
        Prepare(raw.data(), rn, corpus.data() + (n + r0) * RowBytes(), cstats.data() + n + r0,
                main());
      }
      if (host_mode) n += rn;
    }
    if (!host_mode) n += rows;
    FM_CUDA_CHECK(cudaStreamSynchronize(main()));
  }

  // ---- search ---------------------------------------------------------------------------

  void Gemm(int64_t m, int64_t nn, const void* a, int64_t lda, const void* b, void* c,
            int64_t ldc, cudaStream_t s) {
    lt.Run(static_cast<cublasLtHandle_t>(res->cublaslt_handle()), gemm, m, nn, dp, a, lda, b, dp,
           c, ldc, workspace.data(), kWorkspaceBytes, s);
  }

  std::size_t FreeForScratch(int64_t nq, int64_t k) const {
    std::size_t used = static_cast<std::size_t>(nq) * (RowBytes() + sizeof(RowStats)) +
                       static_cast<std::size_t>(nq) * k * 12 + kWorkspaceBytes;
    if (!host_mode) used += static_cast<std::size_t>(cap_rows) * (RowBytes() + sizeof(RowStats));
    const std::size_t floor = 4u << 20;
    return budget > used + floor ? budget - used : floor;
  }

  // Tiled path. `qop`/`qst`: prepared queries on the device. Results into out_v/out_i (device).
  void SearchTiled(const uint8_t* qop, const RowStats* qst, int64_t nq, int64_t k, float* out_v,
                   int64_t* out_i, StageTimer& t_score, StageTimer& t_select,
                   StageTimer& t_copy) {
    cudaStream_t ms = main(), ss = score_stream.get();
    std::size_t avail = FreeForScratch(nq, k);
    int64_t ring_rows = 0;
    if (host_mode) {
      ring_rows = chunk_rows;
      const std::size_t ring = static_cast<std::size_t>(opt.stream_buffers) * chunk_rows *
                               (RowBytes() + sizeof(RowStats));
      avail = avail > ring + (4u << 20) ? avail - ring : (4u << 20);
    }
    // Tile shape: two score buffers of qt x ct floats plus their top-k lists.
    const std::size_t per_buffer = std::min<std::size_t>(avail / 2, std::size_t{1} << 30);
    const int64_t corpus_span = host_mode ? chunk_rows : n;
    int64_t qt = opt.query_tile > 0 ? std::min(opt.query_tile, nq) : std::min<int64_t>(nq, 8192);
    int64_t ct;
    if (host_mode) {
      ct = chunk_rows;
    } else if (opt.corpus_tile > 0) {
      ct = std::min(opt.corpus_tile, n);
    } else {
      const int64_t per_row = 4;
      ct = std::min<int64_t>(corpus_span, static_cast<int64_t>(per_buffer / (per_row * qt)));
      if (ct < 1024 && ct < corpus_span && opt.query_tile == 0) {
        ct = std::min<int64_t>(corpus_span, 1024);
        qt = std::max<int64_t>(1, static_cast<int64_t>(per_buffer / (4 * ct)));
        qt = std::min(qt, nq);
      }
      if (ct < corpus_span) ct = std::max<int64_t>(16, ct / 16 * 16);
      ct = std::max<int64_t>(ct, 1);
    }
    const int64_t ld = RoundUp(ct, 16);
    const int64_t kt = std::min(k, ct);
    stats.tile_rows = qt;
    stats.tile_cols = ct;

    DeviceBuffer<float>* tile = s_tile;
    DeviceBuffer<float>* tv = s_tv;
    DeviceBuffer<int64_t>* ti = s_ti;
    for (int b = 0; b < 2; ++b) {
      tile[b].Resize(static_cast<std::size_t>(qt) * ld);
      tv[b].Resize(static_cast<std::size_t>(qt) * kt);
      ti[b].Resize(static_cast<std::size_t>(qt) * kt);
    }
    CudaEvent ev_scored[2], ev_free[2], ev_start;
    const int nbuf = host_mode ? opt.stream_buffers : 0;
    if (static_cast<int>(s_ring.size()) < nbuf) {
      s_ring.resize(nbuf);
      s_ring_st.resize(nbuf);
    }
    auto& ring = s_ring;
    auto& ring_st = s_ring_st;
    std::vector<std::unique_ptr<CudaEvent>> ev_copied, ev_slot_free;
    for (int i = 0; i < nbuf; ++i) {
      ring[i].Resize(static_cast<std::size_t>(ring_rows) * RowBytes());
      ring_st[i].Resize(static_cast<std::size_t>(ring_rows));
      ev_copied.emplace_back(std::make_unique<CudaEvent>());
      ev_slot_free.emplace_back(std::make_unique<CudaEvent>());
    }
    detail::LaunchFillEmpty(out_v, out_i, nq * k, ms);
    FM_CUDA_CHECK(cudaEventRecord(ev_start.get(), ms));
    FM_CUDA_CHECK(cudaStreamWaitEvent(ss, ev_start.get(), 0));

    const int64_t ntiles = (n + ct - 1) / ct;
    auto issue_copy = [&](int64_t chunk) {
      if (chunk >= ntiles) return;
      const int slot = static_cast<int>(chunk % nbuf);
      cudaStream_t cs = copy_streams[chunk % copy_streams.size()]->get();
      FM_CUDA_CHECK(cudaStreamWaitEvent(cs, ev_slot_free[slot]->get(), 0));
      const int64_t rows = std::min(chunk_rows, n - chunk * chunk_rows);
      t_copy.Begin(cs);
      FM_CUDA_CHECK(cudaMemcpyAsync(ring[slot].data(), chunks[chunk].data(), rows * RowBytes(),
                                    cudaMemcpyHostToDevice, cs));
      FM_CUDA_CHECK(cudaMemcpyAsync(ring_st[slot].data(), chunk_stats[chunk].data(),
                                    rows * sizeof(RowStats), cudaMemcpyHostToDevice, cs));
      t_copy.End(cs);
      FM_CUDA_CHECK(cudaEventRecord(ev_copied[slot]->get(), cs));
      stats.h2d_bytes += static_cast<double>(rows) * (RowBytes() + sizeof(RowStats));
    };
    if (host_mode)
      for (int64_t c = 0; c < std::min<int64_t>(nbuf, ntiles); ++c) issue_copy(c);

    int64_t step = 0;
    for (int64_t ci = 0; ci < ntiles; ++ci) {
      const int64_t c0 = ci * ct;
      const int64_t cn = std::min(ct, n - c0);
      const uint8_t* cop;
      const RowStats* cst;
      int slot = 0;
      if (host_mode) {
        slot = static_cast<int>(ci % nbuf);
        FM_CUDA_CHECK(cudaStreamWaitEvent(ss, ev_copied[slot]->get(), 0));
        cop = ring[slot].data();
        cst = ring_st[slot].data();
      } else {
        cop = corpus.data() + c0 * RowBytes();
        cst = cstats.data() + c0;
      }
      if (host_mode && FusedEligibleRows(cn, k)) {
        // A streamed chunk through the fused path, bounded by the running k-th distances.
        FM_CUDA_CHECK(cudaStreamWaitEvent(ms, ev_copied[slot]->get(), 0));
        s_thr0.Resize(static_cast<std::size_t>(nq));
        s_cv.Resize(static_cast<std::size_t>(nq) * k);
        s_ci.Resize(static_cast<std::size_t>(nq) * k);
        detail::LaunchKthColumn(out_v, k, nq, nullptr, s_thr0.data(), ms);
        if (SearchFused(qop, qst, nq, k, cop, cst, cn, s_thr0.data(), s_cv.data(), s_ci.data(),
                        t_score, t_select)) {
          detail::LaunchMergeTopK(out_v, out_i, k, s_cv.data(), s_ci.data(), k, c0, nq, ms);
          FM_CUDA_CHECK(cudaEventRecord(ev_slot_free[slot]->get(), ms));
          issue_copy(ci + nbuf);
          continue;
        }
        stats.fused_fallback = true;  // this chunk takes the GEMM + select steps below
      }
      for (int64_t q0 = 0; q0 < nq; q0 += qt, ++step) {
        const int64_t qn = std::min(qt, nq - q0);
        const int b = static_cast<int>(step % 2);
        // Score on the score stream once the merge of this buffer's last tile is done.
        FM_CUDA_CHECK(cudaStreamWaitEvent(ss, ev_free[b].get(), 0));
        t_score.Begin(ss);
        Gemm(cn, qn, cop, dp, qop + q0 * RowBytes(), tile[b].data(), ld, ss);
        detail::LaunchDistanceEpilogue(tile[b].data(), gemm == GemmType::kInt8, qn, cn, ld,
                                       qst + q0, cst, 1, metric, kind, opt.dim, ss);
        t_score.End(ss);
        FM_CUDA_CHECK(cudaEventRecord(ev_scored[b].get(), ss));
        // Select and merge on the main stream.
        FM_CUDA_CHECK(cudaStreamWaitEvent(ms, ev_scored[b].get(), 0));
        t_select.Begin(ms);
        select_k(*res, tile[b].data(), qn, cn, ld, kt, opt.select_algo, tv[b].data(),
                 ti[b].data());
        detail::LaunchMergeTopK(out_v + q0 * k, out_i + q0 * k, k, tv[b].data(), ti[b].data(),
                                kt, c0, qn, ms);
        t_select.End(ms);
        FM_CUDA_CHECK(cudaEventRecord(ev_free[b].get(), ms));
      }
      if (host_mode) {
        FM_CUDA_CHECK(cudaEventRecord(ev_slot_free[slot]->get(), ss));
        issue_copy(ci + nbuf);
      }
    }
    stats.query_tiles = (nq + qt - 1) / qt;
    stats.corpus_tiles = ntiles;
    // The main stream's last merge follows the last score; wait for copies too.
    for (auto& cs : copy_streams) {
      CudaEvent done;
      FM_CUDA_CHECK(cudaEventRecord(done.get(), cs->get()));
      FM_CUDA_CHECK(cudaStreamWaitEvent(ms, done.get(), 0));
    }
    FM_CUDA_CHECK(cudaStreamSynchronize(ms));
    FM_CUDA_CHECK(cudaStreamSynchronize(ss));
  }

  // Whether the fused int8 path can search `rows` corpus rows for k neighbours.
  bool FusedEligibleRows(int64_t rows, int64_t k) const {
    return opt.fused && kind == OperandKind::kInt8Shifted &&
           (metric == MetricCode::kL2 || metric == MetricCode::kIp) &&
           (dp == 64 || dp == 128 || dp == 256) && rows >= 2048 && rows >= 16 * k &&
           rows < (int64_t{1} << 32);
  }

  // Fused path; returns false (and leaves outputs unspecified) when the last level overflowed
  // or the shape does not pay for it.
  //
  // Thresholds come from nested strided samples of the corpus (strides F^L, ..., F, 1 with
  // F = 8), each scored by the fused kernel: the coarsest (a few hundred rows) keeps all its
  // rows, every finer one the rows under the previous level's k-th distance. The k-th distance
  // within any set of corpus rows bounds the true k-th distance from above, so each threshold
  // keeps every true neighbour; about F * k candidates per query survive each level. An
  // overflow at an inner level only loosens the next threshold; at the last level it sends the
  // search to the tiled path.
  // `cop`/`cst`/`cn`: the corpus rows searched (the device corpus or a streamed chunk).
  // `init_thr` (optional, device): per-query upper bounds known beforehand (a streamed search's
  // running k-th distances); results may then hold fewer than k rows, padded.
  bool SearchFused(const uint8_t* qop, const RowStats* qst, int64_t nq, int64_t k,
                   const uint8_t* cop, const RowStats* cst, int64_t cn, const float* init_thr,
                   float* out_v, int64_t* out_i, StageTimer& t_score, StageTimer& t_select) {
    cudaStream_t ms = main();
    const int64_t n = cn;
    constexpr int64_t kFactor = 8;
    const std::size_t avail = FreeForScratch(nq, k);
    // Strides F^L, ..., F, 1: the coarsest sample is small enough (<= max(8k, 128) rows, at
    // least k) for all its rows to be candidates.
    std::vector<int64_t> strides = {1};
    const int64_t coarse_max = std::max<int64_t>(kFactor * k, 128);
    while ((n - 1) / strides.back() + 1 > coarse_max) {
      const int64_t next = strides.back() * kFactor;
      if ((n - 1) / next + 1 < k) break;
      strides.push_back(next);
    }
    if (strides.size() < 2) return false;
    const int64_t sample = (n - 1) / strides.back() + 1;

    DeviceBuffer<float>& thr = s_thr;
    thr.Resize(static_cast<std::size_t>(nq));
    DeviceBuffer<float>& lv = s_lv;
    DeviceBuffer<int64_t>& li = s_li;
    lv.Resize(static_cast<std::size_t>(std::max<int64_t>(nq * k, nq)));
    li.Resize(static_cast<std::size_t>(std::max<int64_t>(nq * k, nq)));
    if (init_thr) {
      FM_CUDA_CHECK(cudaMemcpyAsync(thr.data(), init_thr, nq * sizeof(float),
                                    cudaMemcpyDeviceToDevice, ms));
    } else {
      detail::LaunchFillEmpty(thr.data(), li.data(), nq, ms);  // +inf: the coarsest keeps all
    }
    DeviceBuffer<uint64_t>& keys = s_keys;
    DeviceBuffer<int32_t>& counts = s_counts;
    // Control words, cleared at once and read back at once: [0] the last level's overflow
    // flags, [1] the inner levels' (an overflow there only loosens a bound), [2] candidates of
    // every level, [3] short queries, [4] the second search's overflow flags.
    DeviceBuffer<int64_t>& ctl = s_ctl;
    ctl.Resize(5);
    FM_CUDA_CHECK(cudaMemsetAsync(ctl.data(), 0, 5 * sizeof(int64_t), ms));
    int32_t* last_flags = reinterpret_cast<int32_t*>(ctl.data());
    int32_t* inner_flags = reinterpret_cast<int32_t*>(ctl.data() + 1);
    int32_t* redo_flags = reinterpret_cast<int32_t*>(ctl.data() + 4);
    int64_t* total = ctl.data() + 2;
    // Hopper: the wgmma kernel for 128-byte rows; it reads the column terms as one int per row.
    const bool use_wgmma = opt.fused_wgmma && dp == 128 && n < (int64_t{1} << 31) &&
                           detail::FusedWgmmaAvailable(opt.device);
    DeviceBuffer<int32_t>& cterms = s_cterms;
    if (use_wgmma && cop != corpus.data())
      cterms.Resize(static_cast<std::size_t>((n + 127) / 128 * 128));
    stats.score_kernel = use_wgmma ? "wgmma" : "mma.sync";
    // Tentative bounds: a level after the coarsest may run under the previous level's j-th
    // distance (j = k/4 + 8 by default; bench/results/h100.md) instead of its k-th, which lets
    // about 8j rows per query pass instead of 8k. A query left with fewer than k rows under it
    // (or overflowing its slots) keeps its safe bound (the last valid k-th it had) for the next
    // level; after the last level such queries are searched again under their safe bound, with
    // room for many more candidates (or, should that overflow too, by the tiled path), so the
    // result stays exact. That second search costs a round trip, so bounds are tentative only
    // for large searches (nq x n >= 2^28) unless the rank is given. Not with bounds given from
    // outside (they may leave fewer than k rows on purpose).
    int64_t tent_rank = opt.fused_tentative_rank;
    if (tent_rank == 0) tent_rank = k >= 16 ? k / 4 + 8 : -1;
    const bool tentative = !init_thr && tent_rank > 0 && tent_rank < k &&
                           (opt.fused_tentative_rank > 0 ||
                            static_cast<double>(nq) * static_cast<double>(n) >= 268435456.0);
    DeviceBuffer<float>& thr_safe = s_thr_safe;
    thr_safe.Resize(static_cast<std::size_t>(nq));
    FM_CUDA_CHECK(cudaMemcpyAsync(thr_safe.data(), thr.data(), nq * sizeof(float),
                                  cudaMemcpyDeviceToDevice, ms));
    // One level: queries q_* (q_n of them) against corpus rows r * st, r < rows, keeping the rows
    // at or under th[q]; the k best per query into ov / oi, or with ov null (an inner level of
    // all nq queries) the next level's bounds into thr / thr_safe. False when the scratch is too
    // small.
    detail::FusedPlan level_plan;  // the plan of the last run_level
    auto run_level = [&](const uint8_t* q_op, const RowStats* q_st, int64_t q_n, int64_t rows,
                         int64_t st, const float* th, double expected, bool all_pass, float* ov,
                         int64_t* oi, int32_t* flags) {
      detail::FusedPlan plan = detail::PlanFused(
          q_n, rows, expected, num_sms, all_pass, use_wgmma ? detail::FusedWgmmaCtasPerSm() : 2,
          use_wgmma ? detail::FusedWgmmaQueryBlock() : 128);
      if (opt.fused_candidates > 0) {  // testing knob: tiny slices force overflows
        plan.per = std::max<int64_t>(1, opt.fused_candidates / plan.ysplit);
      }
      const std::size_t nkeys = static_cast<std::size_t>(q_n) * plan.ysplit * plan.per;
      if (nkeys * sizeof(uint64_t) > avail / 2 || plan.max_keys > 16384) return false;
      keys.Resize(nkeys);
      counts.Resize(static_cast<std::size_t>(q_n) * plan.ysplit);
      t_score.Begin(ms);
      if (use_wgmma) {
        const int32_t* ct = nullptr;
        if (cop == corpus.data()) {  // the resident corpus: its terms per stride are kept
          if (ct_cache_n != n) {
            ct_cache.clear();
            ct_cache_n = n;
          }
          auto it = ct_cache.find(st);
          if (it == ct_cache.end()) {
            it = ct_cache.emplace(st, DeviceBuffer<int32_t>((rows + 127) / 128 * 128)).first;
            detail::LaunchColumnTerms(cst, rows, st, metric, it->second.data(), ms);
          }
          ct = it->second.data();
        } else {
          detail::LaunchColumnTerms(cst, rows, st, metric, cterms.data(), ms);
          ct = cterms.data();
        }
        detail::LaunchFusedFilterWgmma(reinterpret_cast<const int8_t*>(q_op), q_st, q_n,
                                       reinterpret_cast<const int8_t*>(cop), ct, rows,
                                       st, opt.dim, metric, th, keys.data(), counts.data(), plan,
                                       ms);
      } else {
        detail::LaunchFusedFilterInt8(reinterpret_cast<const int8_t*>(q_op), q_st, q_n,
                                      reinterpret_cast<const int8_t*>(cop), cst, rows, st, dp,
                                      opt.dim, metric, th, keys.data(), counts.data(), plan, ms);
      }
      t_score.End(ms);
      t_select.Begin(ms);
      const int64_t rank = tentative ? tent_rank : 0;
      if (ov != nullptr) {
        detail::LaunchSelectCandidates(keys.data(), counts.data(), q_n, plan, k, ov, oi, flags,
                                       total, ms);
      } else if (!detail::LaunchLevelBounds(keys.data(), counts.data(), q_n, plan, k, rank,
                                            init_thr, thr_safe.data(), thr.data(), flags, total,
                                            ms)) {
        detail::LaunchSelectCandidates(keys.data(), counts.data(), q_n, plan, k, lv.data(),
                                       li.data(), flags, total, ms);
        detail::LaunchNextThresholds(lv.data(), li.data(), k, q_n, init_thr, rank,
                                     thr_safe.data(), thr.data(), ms);
      }
      t_select.End(ms);
      stats.tile_cols = plan.ysplit;
      level_plan = plan;
      return true;
    };
    for (int level = static_cast<int>(strides.size()) - 1; level >= 0; --level) {
      const int64_t st = strides[level];
      const int64_t rows = (n - 1) / st + 1;
      const bool last = level == 0;
      const bool coarsest = level == static_cast<int>(strides.size()) - 1;
      // The coarsest level's slices hold all its rows (all pass unless a bound is given).
      const double expected = coarsest    ? static_cast<double>(rows)
                              : tentative ? static_cast<double>(kFactor * tent_rank)
                                          : static_cast<double>(kFactor * k);
      if (!run_level(qop, qst, nq, rows, st, thr.data(), expected, coarsest,
                     last ? out_v : nullptr, last ? out_i : nullptr,
                     last ? last_flags : inner_flags))
        return false;
    }
    DeviceBuffer<int64_t>& short_ids = s_short_ids;
    if (tentative) {
      short_ids.Resize(static_cast<std::size_t>(nq));
      detail::LaunchShortRows(out_i, k, nq, counts.data(), level_plan.ysplit, level_plan.per,
                              level_plan.max_keys, ctl.data() + 3, short_ids.data(), ms);
    }
    int64_t host_ctl[5] = {};
    FM_CUDA_CHECK(cudaMemcpyAsync(host_ctl, ctl.data(), 4 * sizeof(int64_t),
                                  cudaMemcpyDeviceToHost, ms));
    FM_CUDA_CHECK(cudaStreamSynchronize(ms));
    int32_t host_overflow = 0;  // the low word of ctl[0]: the last level's overflow flag
    std::memcpy(&host_overflow, host_ctl, sizeof(int32_t));
    const int64_t host_total = host_ctl[2], host_short = host_ctl[3];
    stats.candidates += host_total;
    stats.tile_rows = sample;  // fused: rows of the coarsest sample; tile_cols: slices
    stats.query_tiles = 1;
    stats.corpus_tiles = static_cast<int64_t>(strides.size());  // levels
    // Under a tentative bound an overflowing query is one of the short ones (searched again).
    if (host_overflow != 0 && !tentative) return false;
    if (host_short > 0) {
      // The short queries again, gathered into their own rows, under the safe bound.
      const int64_t m = host_short;
      const int64_t* ids = short_ids.data();
      const int64_t op_words = RowBytes() / 4;
      s_redo_q.Resize(static_cast<std::size_t>(m) * RowBytes());
      s_redo_st.Resize(static_cast<std::size_t>(m));
      s_redo_thr.Resize(static_cast<std::size_t>(m));
      s_redo_v.Resize(static_cast<std::size_t>(m * k));
      s_redo_i.Resize(static_cast<std::size_t>(m * k));
      detail::LaunchCopyRows4(qop, op_words, ids, m, s_redo_q.data(), true, ms);
      detail::LaunchCopyRows4(qst, 4, ids, m, s_redo_st.data(), true, ms);
      detail::LaunchCopyRows4(thr_safe.data(), 1, ids, m, s_redo_thr.data(), true, ms);
      bool redone = run_level(s_redo_q.data(), s_redo_st.data(), m, n, 1, s_redo_thr.data(),
                              static_cast<double>(kFactor * kFactor * k), false,
                              s_redo_v.data(), s_redo_i.data(), redo_flags);
      if (redone) {
        FM_CUDA_CHECK(cudaMemcpyAsync(host_ctl, ctl.data(), 5 * sizeof(int64_t),
                                      cudaMemcpyDeviceToHost, ms));
        FM_CUDA_CHECK(cudaStreamSynchronize(ms));
        stats.candidates += host_ctl[2] - host_total;
        int32_t redo_overflow = 0;
        std::memcpy(&redo_overflow, host_ctl + 4, sizeof(int32_t));
        redone = redo_overflow == 0;
      }
      if (!redone) {
        // A safe bound carried over several levels can still let too many rows through: these
        // few queries take the GEMM + select path, which has no candidate limit.
        StageTimer t_copy(false);
        SearchTiled(s_redo_q.data(), s_redo_st.data(), m, k, s_redo_v.data(), s_redo_i.data(),
                    t_score, t_select, t_copy);
      }
      detail::LaunchCopyRows4(s_redo_v.data(), k, ids, m, out_v, false, ms);
      detail::LaunchCopyRows4(s_redo_i.data(), 2 * k, ids, m, out_i, false, ms);
      stats.fused_redone += m;
    }
    return true;
  }

  // Runs a search of prepared device queries into device outputs.
  void SearchPrepared(const uint8_t* qop, const RowStats* qst, int64_t nq, int64_t k,
                      float* out_v, int64_t* out_i, StageTimer& t_score, StageTimer& t_select,
                      StageTimer& t_copy) {
    if (!host_mode && FusedEligibleRows(n, k)) {
      stats.path = "fused";
      if (SearchFused(qop, qst, nq, k, corpus.data(), cstats.data(), n, nullptr, out_v, out_i,
                      t_score, t_select))
        return;
      stats.fused_fallback = true;
    }
    stats.path = host_mode ? "streamed" : "tiled";
    stats.score_kernel = "cublas";
    SearchTiled(qop, qst, nq, k, out_v, out_i, t_score, t_select, t_copy);
  }

  void CheckK(int64_t k, int64_t max_k) const {
    if (k <= 0) throw std::invalid_argument("kNN: k must be at least 1 (got " +
                                            std::to_string(k) + ")");
    if (k > max_k)
      throw std::invalid_argument("kNN: k = " + std::to_string(k) +
                                  " exceeds the GPU engine's limit of " + std::to_string(max_k) +
                                  "; use the CPU backend for larger k");
  }

  void FinishStats(const StageTimer& t_prep, const StageTimer& t_score,
                   const StageTimer& t_select, const StageTimer& t_copy,
                   std::chrono::steady_clock::time_point t0) {
    stats.prepare_ms = t_prep.TotalMs();
    stats.score_ms = t_score.TotalMs();
    stats.select_ms = t_select.TotalMs();
    stats.copy_ms = t_copy.TotalMs();
    stats.total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  void Search(const void* queries, int64_t nq, int64_t k, float* distances, int64_t* indices,
              const SearchOptions& so) {
    const auto t0 = std::chrono::steady_clock::now();
    CheckK(k, kMaxK);
    if (nq < 0) throw std::invalid_argument("kNN: negative query count");
    if (nq == 0) return;
    if (!queries) throw std::invalid_argument("kNN: queries is null");
    if (!distances || !indices) throw std::invalid_argument("kNN: output pointers are null");
    DeviceScope scope(opt.device);
    stats = SearchStats{};
    StageTimer t_prep(opt.collect_stats), t_score(opt.collect_stats),
        t_select(opt.collect_stats), t_copy(opt.collect_stats);
    cudaStream_t ms = main();
    const auto out_kind = so.outputs_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    DeviceBuffer<float>& ov = s_ov;
    DeviceBuffer<int64_t>& oi = s_oi;
    ov.Resize(static_cast<std::size_t>(nq) * k);
    oi.Resize(static_cast<std::size_t>(nq) * k);
    if (n == 0) {
      detail::LaunchFillEmpty(ov.data(), oi.data(), nq * k, ms);
    } else {
      t_prep.Begin(ms);
      DeviceBuffer<uint8_t>& raw = s_qraw;
      const void* raw_dev = queries;
      if (!so.queries_on_device) {
        raw.Resize(static_cast<std::size_t>(nq) * RawRowBytes());
        FM_CUDA_CHECK(cudaMemcpyAsync(raw.data(), queries, nq * RawRowBytes(),
                                      cudaMemcpyHostToDevice, ms));
        raw_dev = raw.data();
      }
      DeviceBuffer<uint8_t>& qop = s_qop;
      DeviceBuffer<RowStats>& qst = s_qst;
      qop.Resize(static_cast<std::size_t>(nq) * RowBytes());
      qst.Resize(static_cast<std::size_t>(nq));
      Prepare(raw_dev, nq, qop.data(), qst.data(), ms);
      t_prep.End(ms);
      SearchPrepared(qop.data(), qst.data(), nq, k, ov.data(), oi.data(), t_score, t_select,
                     t_copy);
    }
    FM_CUDA_CHECK(cudaMemcpyAsync(distances, ov.data(), nq * k * sizeof(float), out_kind, ms));
    FM_CUDA_CHECK(cudaMemcpyAsync(indices, oi.data(), nq * k * sizeof(int64_t), out_kind, ms));
    FM_CUDA_CHECK(cudaStreamSynchronize(ms));
    FinishStats(t_prep, t_score, t_select, t_copy, t0);
  }

  void KnnGraph(int64_t k, float* distances, int64_t* indices, const SearchOptions& so) {
    const auto t0 = std::chrono::steady_clock::now();
    CheckK(k, kMaxK - 1);
    if (n == 0) return;
    if (!distances || !indices) throw std::invalid_argument("kNN graph: output pointers are null");
    DeviceScope scope(opt.device);
    stats = SearchStats{};
    StageTimer t_prep(opt.collect_stats), t_score(opt.collect_stats),
        t_select(opt.collect_stats), t_copy(opt.collect_stats);
    cudaStream_t ms = main();
    const int64_t k1 = k + 1;
    DeviceBuffer<float> ov(static_cast<std::size_t>(n) * k1);
    DeviceBuffer<int64_t> oi(static_cast<std::size_t>(n) * k1);
    DeviceBuffer<float> gv(static_cast<std::size_t>(n) * k);
    DeviceBuffer<int64_t> gi(static_cast<std::size_t>(n) * k);
    if (host_mode) {
      // The queries are the corpus itself: gather the chunks onto the device once.
      t_prep.Begin(ms);
      DeviceBuffer<uint8_t> qop(static_cast<std::size_t>(n) * RowBytes());
      DeviceBuffer<RowStats> qst(static_cast<std::size_t>(n));
      for (std::size_t c = 0; c < chunks.size(); ++c) {
        const int64_t r0 = static_cast<int64_t>(c) * chunk_rows;
        const int64_t rows = std::min(chunk_rows, n - r0);
        FM_CUDA_CHECK(cudaMemcpyAsync(qop.data() + r0 * RowBytes(), chunks[c].data(),
                                      rows * RowBytes(), cudaMemcpyHostToDevice, ms));
        FM_CUDA_CHECK(cudaMemcpyAsync(qst.data() + r0, chunk_stats[c].data(),
                                      rows * sizeof(RowStats), cudaMemcpyHostToDevice, ms));
      }
      t_prep.End(ms);
      SearchPrepared(qop.data(), qst.data(), n, k1, ov.data(), oi.data(), t_score, t_select,
                     t_copy);
    } else {
      SearchPrepared(corpus.data(), cstats.data(), n, k1, ov.data(), oi.data(), t_score,
                     t_select, t_copy);
    }
    detail::LaunchDropSelf(ov.data(), oi.data(), k, n, 0, gv.data(), gi.data(), ms);
    const auto out_kind = so.outputs_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    FM_CUDA_CHECK(cudaMemcpyAsync(distances, gv.data(), n * k * sizeof(float), out_kind, ms));
    FM_CUDA_CHECK(cudaMemcpyAsync(indices, gi.data(), n * k * sizeof(int64_t), out_kind, ms));
    FM_CUDA_CHECK(cudaStreamSynchronize(ms));
    FinishStats(t_prep, t_score, t_select, t_copy, t0);
  }
};

Index::Index(const IndexOptions& options) {
  std::string why;
  if (!options.Check(&why)) throw std::invalid_argument("GPU index options: " + why);
  if (DeviceCount() == 0)
    throw GpuError("no CUDA device is available (no driver or no GPU); use the CPU backend");
  DeviceScope scope(options.device);
  auto impl = std::make_unique<Impl>();
  impl->opt = options;
  impl->res = std::make_unique<Resources>(options.device);
  const DeviceInfo info = GetDeviceInfo(options.device);
  impl->num_sms = info.multiprocessors;
  impl->budget = options.memory_budget
                     ? options.memory_budget
                     : static_cast<std::size_t>(options.memory_fraction *
                                                static_cast<double>(info.free_memory));
  const bool u8 = options.type == ElementType::kUint8;
  Precision p = options.precision;
  if (p == Precision::kExact) p = u8 ? Precision::kInt8 : Precision::kFp32;
  switch (p) {
    case Precision::kInt8:
      impl->kind = OperandKind::kInt8Shifted;
      impl->out_type = 0;
      impl->es = 1;
      impl->gemm = GemmType::kInt8;
      break;
    case Precision::kFp16:
      impl->kind = u8 ? OperandKind::kUint8Values : OperandKind::kFloat;
      impl->out_type = 2;
      impl->es = 2;
      impl->gemm = GemmType::kFp16;
      break;
    default:
      impl->kind = u8 ? OperandKind::kUint8Values : OperandKind::kFloat;
      impl->out_type = 1;
      impl->es = 4;
      impl->gemm = p == Precision::kTf32 ? GemmType::kTf32 : GemmType::kFp32;
      break;
  }
  switch (options.metric) {
    case KnnMetric::kL2Squared: impl->metric = MetricCode::kL2; break;
    case KnnMetric::kInnerProduct: impl->metric = MetricCode::kIp; break;
    case KnnMetric::kCosine: impl->metric = MetricCode::kCos; break;
    case KnnMetric::kPearson: impl->metric = MetricCode::kPearson; break;
  }
  impl->dp = static_cast<int32_t>(RoundUp(options.dim, 32));
  for (int i = 0; i < options.copy_streams; ++i)
    impl->copy_streams.emplace_back(std::make_unique<Stream>());
  impl->workspace.Resize(Impl::kWorkspaceBytes);
  if (options.storage == CorpusStorage::kHost) impl->SwitchToHost();
  impl_ = std::move(impl);
}

Index::~Index() {
  if (impl_) {
    try {
      DeviceScope scope(impl_->opt.device);
      impl_->res->Synchronize();
    } catch (...) {
    }
  }
}
Index::Index(Index&&) noexcept = default;
Index& Index::operator=(Index&&) noexcept = default;

const IndexOptions& Index::options() const { return impl_->opt; }
int64_t Index::size() const { return impl_->n; }
int32_t Index::dim() const { return impl_->opt.dim; }
bool Index::streamed() const { return impl_->host_mode; }
std::size_t Index::memory_budget() const { return impl_->budget; }
const SearchStats& Index::last_stats() const { return impl_->stats; }

std::string Index::Describe() const {
  const DeviceInfo info = GetDeviceInfo(impl_->opt.device);
  return info.name + " (GPU " + std::to_string(info.ordinal) + ", " +
         KnnMetricName(impl_->opt.metric) + ", " + PrecisionName(impl_->opt.precision) +
         (impl_->host_mode ? ", corpus streamed from host" : "") + ", budget " +
         std::to_string(impl_->budget >> 20) + " MiB)";
}

void Index::Add(const void* data, int64_t rows) {
  if (rows < 0) throw std::invalid_argument("GPU index: negative row count");
  if (rows == 0) return;
  if (!data) throw std::invalid_argument("GPU index: descriptor data is null");
  impl_->Add(data, rows);
}
void Index::AddUint8(const uint8_t* data, int64_t rows) {
  if (impl_->opt.type != ElementType::kUint8)
    throw std::invalid_argument("GPU index holds float descriptors; uint8 rows were given");
  Add(data, rows);
}
void Index::AddFloat(const float* data, int64_t rows) {
  if (impl_->opt.type != ElementType::kFloat32)
    throw std::invalid_argument("GPU index holds uint8 descriptors; float rows were given");
  Add(data, rows);
}

void Index::Reset() {
  DeviceScope scope(impl_->opt.device);
  impl_->res->Synchronize();
  impl_->n = 0;
  impl_->ct_cache.clear();
  impl_->ct_cache_n = -1;
  impl_->corpus.Release();
  impl_->cstats.Release();
  impl_->cap_rows = 0;
  impl_->chunks.clear();
  impl_->chunk_stats.clear();
  impl_->host_mode = false;
  if (impl_->opt.storage == CorpusStorage::kHost) impl_->SwitchToHost();
}

void Index::Search(const void* queries, int64_t nq, int64_t k, float* distances,
                   int64_t* indices, const SearchOptions& options) {
  impl_->Search(queries, nq, k, distances, indices, options);
}

void Index::KnnGraph(int64_t k, float* distances, int64_t* indices,
                     const SearchOptions& options) {
  impl_->KnnGraph(k, distances, indices, options);
}

}  // namespace fm::gpu
