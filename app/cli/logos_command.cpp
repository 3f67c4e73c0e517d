// featmatch logos add|list|remove|query|eval: the logo library and its evaluation.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <optional>
#include <set>

#include "command.h"
#include "fm/core/feature_io.h"
#include "fm/core/timer.h"
#include "fm/matcher/image.h"
#include "fm/matcher/logo_eval.h"
#include "fm/matcher/logo_library.h"
#include "options.h"
#include "output.h"

namespace fm::app {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_interrupted{false};
extern "C" void OnInterrupt(int) { g_interrupted.store(true); }

// Query options shared by `query` and `eval`.
void AddQueryOptions(CLI::App& app, matcher::LogoQueryOptions& q, std::string& usac) {
  app.add_option("--k", q.k, "neighbours per scene descriptor in the library-wide search")
      ->capture_default_str()->group("Query");
  app.add_option("--ratio", q.ratio, "per-logo ratio test threshold")->capture_default_str()
      ->group("Query");
  app.add_option("--min-inliers", q.min_inliers, "verified inliers needed for a detection")
      ->capture_default_str()->group("Query");
  app.add_option("--min-confidence", q.min_confidence, "drop detections below this confidence")
      ->capture_default_str()->group("Query");
  app.add_option("--threshold", q.threshold, "homography inlier threshold, pixels")
      ->capture_default_str()->group("Query");
  app.add_option("--max-candidates", q.max_candidates, "logos verified per scene")
      ->capture_default_str()->group("Query");
  app.add_option("--max-instances", q.max_instances, "instances of one logo searched per scene")
      ->capture_default_str()->group("Query");
  app.add_option("--usac", usac, "USAC variant: magsac, default, accurate, prosac, fast, parallel")
      ->capture_default_str()->group("Query");
  app.add_option("--threads", q.threads, "CPU threads (0 = all)")->capture_default_str()
      ->group("Query");
  app.add_flag("!--no-guided", q.guided,
               "skip the guided pass (hypotheses from few matches gathering looser ones)")
      ->group("Query");
  app.add_option("--guided-ratio", q.guided_ratio,
                 "ratio test of the matches the guided pass gathers")
      ->capture_default_str()
      ->group("Query");
  app.add_option("--guided-min-matches", q.guided_min_matches,
                 "ratio-test matches that must agree on a guided hypothesis")
      ->capture_default_str()->group("Query");
  app.add_option("--guided-radius", q.guided_radius,
                 "guided gathering radius, fraction of the logo's width in the scene")
      ->capture_default_str()->group("Query");
  app.add_option("--guided-min-evidence", q.guided_min_evidence,
                 "guided detections: (inlier hull area / logo area) * (inliers / scene "
                 "keypoints in the outline) at least this")
      ->capture_default_str()->group("Query");
}

void FinishQueryOptions(matcher::LogoQueryOptions& q, const std::string& usac) {
  try {
    q.usac = matcher::ParseUsacMethod(usac);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--usac", e.what());
  }
  CheckOrThrow(q, "query options");
  LimitLibraryThreads(q.threads);
}

// Opens a library for a subcommand; a logo whose stored features are damaged is left out with a
// warning that says how to remove it, so that the rest of the library stays usable.
matcher::LogoLibrary OpenLibrary(const std::string& path, const char* command) {
  matcher::LogoLibrary lib = matcher::LogoLibrary::Open(path, true);
  for (const auto& [name, why] : lib.Damaged()) {
    std::fprintf(stderr,
                 "featmatch logos %s: warning: %s; that logo is left out (remove it with "
                 "`featmatch logos remove %s '%s'` and add it again)\n",
                 command, why.c_str(), path.c_str(), name.c_str());
  }
  return lib;
}

// ---- add ----------------------------------------------------------------------------------------

struct AddArgs {
  std::string library;
  std::vector<std::string> images;
  std::string name;
  matcher::LogoLibrarySettings settings;
  CLI::App* sub = nullptr;
};

bool SiftOptionGiven(CLI::App& sub) {
  for (const char* o : {"--max-features", "--octave-layers", "--contrast-threshold",
                        "--edge-threshold", "--sigma", "--root-sift", "--max-image-size",
                        "--max-logo-side", "--min-features"})
    if (sub.count(o) > 0) return true;
  return false;
}

int RunAdd(AddArgs& args) {
  CheckOrThrow(args.settings, "library settings");
  if (!args.name.empty() && args.images.size() != 1)
    throw CLI::ValidationError("--name", "--name names one logo; give one image with it");
  if (args.sub->count("--name") > 0 && args.name.empty())
    throw CLI::ValidationError("--name", "the name is empty (leave --name out to use the file's)");
  const bool exists = fs::exists(args.library);
  if (exists && SiftOptionGiven(*args.sub))
    throw CLI::ValidationError(
        "extraction options",
        "the library exists and keeps the settings it was created with; extraction options "
        "apply only when add creates a new library");
  std::optional<matcher::LogoLibrary> opened;
  try {
    opened = exists ? OpenLibrary(args.library, "add")
                    : matcher::LogoLibrary::Create(args.library, args.settings);
  } catch (const matcher::LogoLibraryError& e) {
    std::fprintf(stderr, "featmatch logos add: %s\n", e.what());
    return kExitBadInput;
  }
  matcher::LogoLibrary& lib = *opened;
  int failed = 0;
  for (const auto& img : args.images) {
    if (g_interrupted) return kExitInterrupted;
    try {
      const auto info = lib.AddFile(img, args.name);
      std::printf("added '%s' (id %lld, %dx%d, %lld features) from %s\n", info.name.c_str(),
                  static_cast<long long>(info.id), info.width, info.height,
                  static_cast<long long>(info.num_features), img.c_str());
    } catch (const matcher::LogoLibraryError& e) {
      std::fprintf(stderr, "featmatch logos add: %s: %s\n", img.c_str(), e.what());
      ++failed;
    }
  }
  if (!exists && lib.size() == 0) {
    // Nothing was added to the library this command created: it is not left behind, holding
    // settings that every later add would have to keep.
    opened.reset();
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      fs::remove(args.library + suffix, ec);
    std::fprintf(stderr, "featmatch logos add: no logo added; %s not created\n",
                 args.library.c_str());
    return kExitBadInput;
  }
  if (!exists) std::printf("created logo library %s\n", args.library.c_str());
  std::printf("%s: %lld logos, %lld descriptors\n", args.library.c_str(),
              static_cast<long long>(lib.size()), static_cast<long long>(lib.num_descriptors()));
  if (failed == 0) return kExitOk;
  return failed == static_cast<int>(args.images.size()) ? kExitBadInput : kExitPartial;
}

// ---- list / remove ------------------------------------------------------------------------------

struct ListArgs {
  std::string library;
  bool json = false;
};

int RunList(const ListArgs& args) {
  std::optional<matcher::LogoLibrary> opened;
  try {
    opened = OpenLibrary(args.library, "list");
  } catch (const matcher::LogoLibraryError& e) {
    std::fprintf(stderr, "featmatch logos list: %s\n", e.what());
    return kExitBadInput;
  }
  matcher::LogoLibrary& lib = *opened;
  const auto logos = lib.List();
  if (args.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& l : logos)
      j.push_back({{"id", l.id},
                   {"name", l.name},
                   {"source", l.source},
                   {"width", l.width},
                   {"height", l.height},
                   {"features", l.num_features},
                   {"added", l.added}});
    nlohmann::json damaged = nlohmann::json::array();
    for (const auto& [name, why] : lib.Damaged())
      damaged.push_back({{"name", name}, {"error", why}});
    nlohmann::json out = {{"library", args.library},
                          {"settings", nlohmann::json::parse(lib.settings().sift.ToJson())},
                          {"descriptors", lib.num_descriptors()},
                          {"logos", j},
                          {"damaged", damaged}};
    std::printf("%s\n", JsonText(out).c_str());
    return kExitOk;
  }
  std::printf("%s: %zu logos, %lld descriptors\n", args.library.c_str(), logos.size(),
              static_cast<long long>(lib.num_descriptors()));
  std::printf("  %5s  %-24s %9s %9s  %-20s  %s\n", "id", "name", "size", "features", "added",
              "source");
  for (const auto& l : logos) {
    char size[32];
    std::snprintf(size, sizeof size, "%dx%d", l.width, l.height);
    std::printf("  %5lld  %-24s %9s %9lld  %-20s  %s\n", static_cast<long long>(l.id),
                l.name.c_str(), size, static_cast<long long>(l.num_features), l.added.c_str(),
                l.source.c_str());
  }
  return kExitOk;
}

struct RemoveArgs {
  std::string library;
  std::vector<std::string> names;
};

int RunRemove(const RemoveArgs& args) {
  std::optional<matcher::LogoLibrary> opened;
  try {
    opened = OpenLibrary(args.library, "remove");
  } catch (const matcher::LogoLibraryError& e) {
    std::fprintf(stderr, "featmatch logos remove: %s\n", e.what());
    return kExitBadInput;
  }
  matcher::LogoLibrary& lib = *opened;
  int missing = 0;
  std::set<std::string> asked;  // a name given twice is removed once
  for (const auto& n : args.names) {
    if (!asked.insert(n).second) continue;
    if (lib.Remove(n)) {
      std::printf("removed '%s'\n", n.c_str());
    } else {
      std::fprintf(stderr, "featmatch logos remove: no logo named '%s' in %s\n", n.c_str(),
                   args.library.c_str());
      ++missing;
    }
  }
  if (missing == 0) return kExitOk;
  return missing == static_cast<int>(asked.size()) ? kExitBadInput : kExitPartial;
}

// ---- query --------------------------------------------------------------------------------------

struct QueryArgs {
  std::string library;
  std::vector<std::string> scenes;
  matcher::LogoQueryOptions query;
  std::string usac = "magsac";
  BackendCliOptions backend;
  std::string draw;
  bool json = false;
  bool matches = false;
};

int RunQuery(QueryArgs& args) {
  FinishQueryOptions(args.query, args.usac);
  args.backend.backend.threads = args.query.threads;
  args.backend.Finish();
  std::optional<matcher::LogoLibrary> opened;
  try {
    opened = OpenLibrary(args.library, "query");
  } catch (const matcher::LogoLibraryError& e) {
    std::fprintf(stderr, "featmatch logos query: %s\n", e.what());
    return kExitBadInput;
  }
  matcher::LogoLibrary& lib = *opened;
  if (lib.size() == 0) {
    std::fprintf(stderr, "featmatch logos query: %s holds no logos (add some first)\n",
                 args.library.c_str());
    return kExitBadInput;
  }
  std::string note;
  if (args.backend.backend.kind == matcher::BackendKind::kAuto) {
    // Chosen at the first scene, by its features times the scenes asked for: a query of a few
    // scenes against a small library ends on the CPU before a GPU would have started.
    const int scenes = static_cast<int>(args.scenes.size());
    lib.SetBackendFactory([&args, scenes](const matcher::SearchWork& first) {
      matcher::SearchWork all = first;
      all.searches = std::max(scenes, 1);
      std::string chosen;
      auto b = matcher::CreateKnnBackendFor(args.backend.backend, all, &chosen);
      if (!args.json) std::printf("%s\n", chosen.c_str());
      return b;
    });
  } else {
    try {
      lib.SetBackend(matcher::CreateKnnBackend(args.backend.backend, &note));
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "featmatch logos query: %s (use --backend cpu or auto)\n", e.what());
      return kExitGpu;
    }
  }
  if (!args.draw.empty()) {
    std::error_code ec;
    fs::create_directories(args.draw, ec);
    if (ec) {
      std::fprintf(stderr, "featmatch logos query: cannot create %s: %s\n", args.draw.c_str(),
                   ec.message().c_str());
      return kExitError;
    }
  }
  args.query.top = std::max(args.query.top, 0);
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  nlohmann::json all = nlohmann::json::array();
  int bad = 0;
  std::set<std::string> drawn;  // drawings' names written so far
  if (!args.json)
    std::printf("library %s: %lld logos, %lld descriptors%s%s\n", args.library.c_str(),
                static_cast<long long>(lib.size()), static_cast<long long>(lib.num_descriptors()),
                note.empty() ? "" : "; ", note.c_str());
  for (const auto& path : args.scenes) {
    if (g_interrupted) break;
    cv::Mat color;
    core::Stopwatch sw;
    try {
      color = matcher::LoadColorImage(path);
    } catch (const matcher::ImageError& e) {
      std::fprintf(stderr, "featmatch logos query: %s\n", e.what());
      ++bad;
      continue;
    }
    const double load_ms = sw.ElapsedMs();
    matcher::LogoQueryResult r = lib.QueryImage(color, args.query);
    nlohmann::json j = matcher::LogoQueryResultToJson(r, args.matches);
    j["scene"] = path;
    j["times_ms"]["load"] = load_ms;
    if (!args.draw.empty()) {
      // <scene name>_logos.png, made unique when two scenes share a name (a/s.png, b/s.png).
      std::string name = fs::path(path).stem().string() + "_logos.png";
      for (int i = 1; drawn.count(name); ++i)
        name = fs::path(path).stem().string() + "_logos." + std::to_string(i) + ".png";
      drawn.insert(name);
      const std::string out = (fs::path(args.draw) / name).string();
      bool ok = false;
      try {
        ok = cv::imwrite(out, matcher::DrawLogoDetections(color, r.detections));
      } catch (const cv::Exception&) {
      }
      if (!ok) {
        std::fprintf(stderr, "featmatch logos query: cannot write %s\n", out.c_str());
        return kExitError;
      }
      j["drawing"] = out;
    }
    if (args.json) {
      all.push_back(j);
      continue;
    }
    std::printf("%s  (%lld features; extract %.1f ms, knn %.1f ms, verify %.1f ms)\n",
                path.c_str(), static_cast<long long>(r.scene_features), r.extract_ms, r.knn_ms,
                r.verify_ms);
    if (r.detections.empty()) std::printf("  no logo found\n");
    int rank = 1;
    for (const auto& d : r.detections) {
      std::printf("  %d. %-24s confidence %.3f  inliers %d  inlier ratio %.2f  quad", rank++,
                  d.name.c_str(), d.confidence, d.inliers, d.inlier_ratio);
      for (const auto& p : d.quad) std::printf(" (%.1f,%.1f)", p.x, p.y);
      std::printf("\n");
    }
    if (j.contains("drawing"))
      std::printf("  drawing: %s\n", j["drawing"].get<std::string>().c_str());
  }
  if (args.json && !PrintText(JsonText(all) + "\n")) {
    std::fprintf(stderr, "featmatch logos query: cannot write the JSON report to stdout\n");
    return kExitError;
  }
  if (g_interrupted) return kExitInterrupted;
  if (bad == 0) return kExitOk;
  return bad == static_cast<int>(args.scenes.size()) ? kExitBadInput : kExitPartial;
}

// ---- eval ---------------------------------------------------------------------------------------

struct EvalArgs {
  matcher::LogoEvalOptions eval;
  std::string usac = "magsac";
  BackendCliOptions backend;
  std::string report;
  std::string markdown;
  bool quiet = false;
};

int RunEval(EvalArgs& args) {
  FinishQueryOptions(args.eval.query, args.usac);
  args.backend.backend.threads = args.eval.query.threads;
  args.backend.Finish();
  CheckOrThrow(args.eval, "evaluation options");
  // The evaluation takes minutes: an output that cannot be written is said before it, not after.
  for (const std::string* out : {&args.report, &args.markdown}) {
    const std::string problem = out->empty() ? "" : OutputFolderProblem(*out);
    if (!problem.empty()) {
      std::fprintf(stderr, "featmatch logos eval: cannot write %s: %s\n", out->c_str(),
                   problem.c_str());
      return kExitError;
    }
  }
  std::string note;
  std::unique_ptr<core::KnnBackend> backend;
  try {
    backend = matcher::CreateKnnBackend(args.backend.backend, &note);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "featmatch logos eval: %s (use --backend cpu or auto)\n", e.what());
    return kExitGpu;
  }
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  if (!args.quiet) std::fprintf(stderr, "%s\n", note.c_str());
  auto progress = [&](int done, int total) {
    if (!args.quiet && (done % 20 == 0 || done == total))
      std::fprintf(stderr, "  %d / %d scenes\n", done, total);
  };
  matcher::LogoEvalReport rep;
  try {
    rep = matcher::RunLogoEval(args.eval, std::move(backend), progress, &g_interrupted);
  } catch (const matcher::LogoLibraryError& e) {
    std::fprintf(stderr, "featmatch logos eval: %s\n", e.what());
    return kExitBadInput;
  }
  auto write = [](const std::string& path, const std::string& text) {
    std::string why;
    if (core::WriteFileWhole(path, text, &why)) return true;
    std::fprintf(stderr, "featmatch logos eval: cannot write %s: %s\n", path.c_str(), why.c_str());
    return false;
  };
  if (!args.report.empty() && !write(args.report, JsonText(rep.json) + "\n")) return kExitError;
  if (!args.markdown.empty() && !write(args.markdown, rep.markdown)) return kExitError;
  std::printf("%s", rep.markdown.c_str());
  return rep.cancelled ? kExitInterrupted : kExitOk;
}

// ---- wiring -------------------------------------------------------------------------------------

RunFn SetupLogos(CLI::App& sub) {
  sub.require_subcommand(1);

  auto add = std::make_shared<AddArgs>();
  CLI::App* a = sub.add_subcommand("add", "add logo images to a library (created if missing)");
  add->sub = a;
  a->add_option("LIB", add->library, "logo library (.db)")->required();
  a->add_option("IMAGE", add->images, "logo images")->required();
  a->add_option("--name", add->name, "name of the logo (default: the file name without suffix)");
  a->add_option("--max-logo-side", add->settings.max_logo_side,
                "new library: downscale logos to this longer side")
      ->capture_default_str()->group("Library");
  a->add_option("--min-features", add->settings.min_logo_features,
                "new library: refuse logos with fewer features")
      ->capture_default_str()->group("Library");
  AddSiftOptions(*a, add->settings.sift);

  auto list = std::make_shared<ListArgs>();
  CLI::App* l = sub.add_subcommand("list", "list the logos of a library");
  l->add_option("LIB", list->library, "logo library (.db)")->required();
  l->add_flag("--json", list->json, "print JSON");

  auto rem = std::make_shared<RemoveArgs>();
  CLI::App* r = sub.add_subcommand("remove", "remove logos from a library by name");
  r->add_option("LIB", rem->library, "logo library (.db)")->required();
  r->add_option("NAME", rem->names, "logo names")->required();

  auto query = std::make_shared<QueryArgs>();
  CLI::App* q = sub.add_subcommand("query", "find the library's logos in scene images");
  q->add_option("LIB", query->library, "logo library (.db)")->required();
  q->add_option("SCENE", query->scenes, "scene images")->required();
  q->add_option("--top", query->query.top, "report at most N logos per scene (0 = all)")
      ->capture_default_str()->group("Output");
  q->add_flag("--json", query->json, "print JSON")->group("Output");
  q->add_flag("--matches", query->matches, "include the verified matches in the JSON")
      ->group("Output");
  q->add_option("--draw", query->draw, "write each scene with the outlines into this folder")
      ->group("Output");
  AddQueryOptions(*q, query->query, query->usac);
  AddBackendOptions(*q, query->backend);

  auto ev = std::make_shared<EvalArgs>();
  CLI::App* e = sub.add_subcommand("eval", "generate a labelled scene set and score the query");
  e->add_option("--seed", ev->eval.seed, "seed of the generated set")->capture_default_str();
  e->add_option("--scenes", ev->eval.scenes, "number of scenes (negatives included)")
      ->capture_default_str();
  e->add_option("--negatives", ev->eval.negative_fraction, "fraction of scenes with no logo")
      ->capture_default_str();
  e->add_option("--min-width", ev->eval.min_logo_width, "smallest logo width in a scene, px")
      ->capture_default_str();
  e->add_option("--max-width", ev->eval.max_logo_width, "largest logo width in a scene, px")
      ->capture_default_str();
  e->add_option("--data", ev->eval.data_dir, "folder of the OpenCV sample images");
  e->add_option("--report", ev->report, "write the JSON report here")->group("Output");
  e->add_option("--markdown", ev->markdown, "write the Markdown summary here")->group("Output");
  e->add_option("--draw-failures", ev->eval.draw_dir,
                "write scenes with a miss or a false detection into this folder")
      ->group("Output");
  e->add_flag("--quiet", ev->quiet, "no progress on stderr")->group("Output");
  AddQueryOptions(*e, ev->eval.query, ev->usac);
  AddBackendOptions(*e, ev->backend);
  AddSiftOptions(*e, ev->eval.library.sift);

  return [a, l, r, q, e, add, list, rem, query, ev]() -> int {
    if (a->parsed()) return RunAdd(*add);
    if (l->parsed()) return RunList(*list);
    if (r->parsed()) return RunRemove(*rem);
    if (q->parsed()) return RunQuery(*query);
    if (e->parsed()) return RunEval(*ev);
    return kExitUsage;
  };
}

FM_REGISTER_COMMAND("logos", "logo library: add, list, remove, query scenes, evaluate",
                    SetupLogos);

}  // namespace
}  // namespace fm::app
