// featmatch batch FOLDER --db OUT.db: match a folder of images into a COLMAP database, with a
// progress bar, Ctrl-C that stops cleanly, and resume by running the same command again.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command.h"
#include "fm/core/feature_io.h"
#include "fm/matcher/batch.h"
#include "options.h"
#include "output.h"

namespace fm::app {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void OnStopSignal(int sig) { g_stop_signal = sig; }

// Installs SIGINT/SIGTERM handlers for the lifetime of the object and restores the old ones.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

struct BatchArgs {
  std::string folder;
  std::string db;
  std::string pairs = "exhaustive";
  std::string summary;
  matcher::SiftOptions sift;
  MatchCliOptions match;
  BackendCliOptions backend;
  int commit_every = 256;
  int64_t max_pairs = 0;
  int64_t batch_rows = 1 << 18;
  int batch_images = 64;
  bool quiet = false;
};

std::string Duration(double s) {
  if (!(s >= 0)) return "--:--";
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", t / 60, t % 60);
  return buf;
}

void DrawProgress(const matcher::BatchProgress& p, bool tty) {
  const char* unit = p.stage == matcher::BatchStage::kExtracting ? "images" : "pairs";
  const double frac = p.total > 0 ? static_cast<double>(p.done) / p.total : 0.0;
  const int width = 30;
  const int filled = static_cast<int>(frac * width);
  std::string bar(filled, '#');
  bar += std::string(width - filled, '.');
  std::fprintf(stderr, "%s%-10s [%s] %lld/%lld %s  %.1f %s/s  left %s%s",
               tty ? "\r" : "", matcher::BatchStageName(p.stage), bar.c_str(),
               static_cast<long long>(p.done), static_cast<long long>(p.total), unit,
               p.per_second, unit, Duration(p.eta_seconds).c_str(), tty ? "   " : "\n");
  std::fflush(stderr);
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Writes the run summary (JSON) or the per-pair table with skipped images (CSV).
void WriteSummary(const std::string& path, const matcher::BatchSummary& s) {
  std::vector<matcher::PairResult> pairs;
  try {
    pairs = matcher::ReadPairResults(s.database);
  } catch (const std::exception&) {
    // No database (a failure before extraction): the summary still says why.
  }
  std::ostringstream out;
  const bool csv = std::filesystem::path(path).extension() == ".csv";
  if (csv) {
    out << "kind,name1,name2,matches,inliers,config,note\n";
    for (const auto& f : s.bad_images)
      out << "bad_image," << CsvField(f.path) << ",,,,," << CsvField(f.reason) << "\n";
    for (const auto& f : s.ignored_files)
      out << "ignored_file," << CsvField(f.path) << ",,,,," << CsvField(f.reason) << "\n";
    for (const auto& p : pairs)
      out << "pair," << CsvField(p.name1) << "," << CsvField(p.name2) << "," << p.matches << ","
          << p.inliers << "," << matcher::TwoViewConfigName(p.config) << ","
          << (p.verified() ? "verified" : "") << "\n";
  } else {
    nlohmann::json j = matcher::BatchSummaryToJson(s);
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : pairs)
      list.push_back({{"image1", p.name1},
                      {"image2", p.name2},
                      {"image_id1", p.image_id1},
                      {"image_id2", p.image_id2},
                      {"matches", p.matches},
                      {"inliers", p.inliers},
                      {"config", matcher::TwoViewConfigName(p.config)},
                      {"verified", p.verified()}});
    j["pair_results"] = list;
    out << JsonText(j) << "\n";
  }
  std::string why;
  if (!core::WriteFileWhole(path, out.str(), &why))
    throw std::runtime_error("cannot write the summary " + path + ": " + why);
}

int RunBatch(BatchArgs& args) {
  args.match.Finish();
  args.backend.backend.threads = args.match.match.threads;
  args.backend.Finish();
  CheckOrThrow(args.sift, "SIFT options");
  if (!args.summary.empty()) {
    const auto ext = std::filesystem::path(args.summary).extension();
    if (ext != ".json" && ext != ".csv")
      throw CLI::ValidationError("--summary", "the summary file must end in .json or .csv");
    const std::string problem = OutputFolderProblem(args.summary);
    if (!problem.empty()) {
      std::fprintf(stderr, "featmatch batch: cannot write the summary %s: %s\n",
                   args.summary.c_str(), problem.c_str());
      return kExitError;
    }
  }
  matcher::BatchOptions o;
  o.folder = args.folder;
  o.database = args.db;
  try {
    o.pairs = matcher::PairingOptions::Parse(args.pairs);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--pairs", e.what());
  }
  o.sift = args.sift;
  o.match = args.match.match;
  o.backend = args.backend.backend;
  o.commit_pairs = args.commit_every;
  o.max_pairs = args.max_pairs;
  o.max_batch_rows = args.batch_rows;
  o.max_batch_images = args.batch_images;
  CheckOrThrow(o, "batch options");
  if (o.backend.kind == matcher::BackendKind::kGpu && !matcher::GpuAvailable()) {
    std::fprintf(stderr,
                 "featmatch batch: --backend gpu: no usable GPU (use --backend cpu or auto)\n");
    return kExitGpu;
  }

  StopSignals signals;
  matcher::BatchController controller;
  try {
    controller.Start(o);
  } catch (const matcher::BatchError& e) {
    std::fprintf(stderr, "featmatch batch: %s\n", e.what());
    return kExitBadInput;
  }
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  matcher::BatchStage last_stage = matcher::BatchStage::kIdle;
  int ticks = 0;
  bool stopping = false;
  while (!controller.WaitFor(std::chrono::milliseconds(100))) {
    if (g_stop_signal && !stopping) {
      stopping = true;
      controller.Cancel();
      std::fprintf(stderr, "%sfeatmatch batch: stopping, committing the pairs in flight...\n",
                   tty ? "\n" : "");
    }
    if (args.quiet) continue;
    const auto p = controller.Progress();
    ++ticks;
    // On a terminal, redraw every 0.2 s; in a log, a line per stage change and every 10 s.
    if ((tty && ticks % 2 == 0) || p.stage != last_stage || ticks % 100 == 0) DrawProgress(p, tty);
    last_stage = p.stage;
  }
  const matcher::BatchSummary s = controller.Summary();
  if (!args.quiet) {
    DrawProgress(controller.Progress(), tty);
    if (tty) std::fprintf(stderr, "\n");
  }

  // A stop at --max-pairs is the run asked for, not a cancellation.
  const bool at_limit = s.stage == matcher::BatchStage::kCancelled && !g_stop_signal;
  std::printf("featmatch batch: %s\n",
              at_limit ? "stopped at --max-pairs" : matcher::BatchStageName(s.stage));
  std::printf("  database: %s\n", s.database.c_str());
  std::printf("  backend:  %s\n", s.backend.c_str());
  std::printf("  images: %lld found, %lld extracted, %lld reused, %zu bad, %zu other files\n",
              static_cast<long long>(s.images_found), static_cast<long long>(s.images_extracted),
              static_cast<long long>(s.images_reused), s.bad_images.size(),
              s.ignored_files.size());
  for (const auto& f : s.bad_images) std::printf("    skipped: %s\n", f.reason.c_str());
  std::printf("  pairs (%s): %lld total, %lld done before, %lld matched now, %lld verified\n",
              s.pairing.c_str(), static_cast<long long>(s.pairs_total),
              static_cast<long long>(s.pairs_previous), static_cast<long long>(s.pairs_matched),
              static_cast<long long>(s.pairs_verified));
  std::printf("  time: extract %.1f s, match %.1f s (%.1f pairs/s), total %.1f s\n",
              s.extract_seconds, s.match_seconds, s.match_pairs_per_second, s.total_seconds);
  if (s.stage == matcher::BatchStage::kCancelled)
    std::printf("  stopped before the end: run the same command again to continue\n");
  if (s.stage == matcher::BatchStage::kFailed)
    std::fprintf(stderr, "featmatch batch: %s\n", s.error.c_str());

  if (!args.summary.empty()) {
    try {
      WriteSummary(args.summary, s);
      std::printf("  summary: %s\n", args.summary.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "featmatch batch: %s\n", e.what());
      return kExitError;
    }
  }
  // A signal that lands as the last pairs are committed stops nothing: the run is done and exits
  // as done (a caller resumes only the runs that exit with 130).
  if (g_stop_signal && s.stage != matcher::BatchStage::kDone) {  // `stopping` implies a signal
    return kExitInterrupted;
  }
  switch (s.stage) {
    case matcher::BatchStage::kDone: return s.bad_images.empty() ? kExitOk : kExitPartial;
    case matcher::BatchStage::kCancelled: return kExitOk;  // --max-pairs reached
    default: return kExitError;
  }
}

RunFn SetupBatch(CLI::App& sub) {
  auto args = std::make_shared<BatchArgs>();
  // Batch defaults: the fundamental matrix (general 3-D scenes, what COLMAP reconstructs).
  args->match.model = "fundamental";
  args->match.match.verify.min_inliers = 15;  // COLMAP's two-view default
  // Mutual nearest neighbours, as COLMAP's matchers (cross check on by default): without it many
  // features of one image take the same feature of the other, and a fundamental matrix through
  // that one point verifies unrelated pairs.
  args->match.match.filter.mutual = true;
  sub.add_option("FOLDER", args->folder, "folder of images (searched recursively)")->required();
  sub.add_option("--db", args->db, "COLMAP database to create or resume")->required();
  sub.add_option("--pairs", args->pairs,
                 "pairs to match: exhaustive, sequential:N, query:QFOLDER, list:FILE")
      ->capture_default_str();
  sub.add_option("--summary", args->summary,
                 "write the run summary: FILE.json (summary and per-pair results) or FILE.csv "
                 "(per-pair table with skipped files)")
      ->group("Output");
  sub.add_flag("--quiet", args->quiet, "no progress bar")->group("Output");
  sub.add_option("--commit-every", args->commit_every,
                 "commit results every N pairs (and at least every second)")
      ->capture_default_str()->group("Batch");
  sub.add_option("--max-pairs", args->max_pairs,
                 "stop after N pairs in this run (0 = all); run again to continue")
      ->capture_default_str()->group("Batch");
  sub.add_option("--batch-rows", args->batch_rows,
                 "most descriptor rows concatenated into one kNN search")
      ->capture_default_str()->group("Batch");
  sub.add_option("--batch-images", args->batch_images,
                 "most images concatenated into one kNN search")
      ->capture_default_str()->group("Batch");
  AddSiftOptions(sub, args->sift);
  AddMatchOptions(sub, args->match);
  AddBackendOptions(sub, args->backend);
  return [args] { return RunBatch(*args); };
}

FM_REGISTER_COMMAND("batch",
                    "match a folder of images into a COLMAP database (resumable; Ctrl-C stops "
                    "cleanly)",
                    SetupBatch);

}  // namespace
}  // namespace fm::app
