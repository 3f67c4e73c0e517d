// featmatch extract IMG... --out DIR: SIFT features of each image into DIR/<name>.fmf.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "command.h"
#include "fm/core/feature_io.h"
#include "fm/core/timer.h"
#include "fm/matcher/image.h"
#include "options.h"
#include "output.h"

namespace fm::app {
namespace {

namespace fs = std::filesystem;

struct ExtractArgs {
  std::vector<std::string> images;
  std::string out;
  matcher::SiftOptions sift;
  bool json = false;
};

int RunExtract(ExtractArgs& args) {
  CheckOrThrow(args.sift, "SIFT options");
  std::error_code ec;
  fs::create_directories(args.out, ec);
  if (ec || !fs::is_directory(args.out)) {
    std::fprintf(stderr, "featmatch extract: cannot create output folder %s: %s\n",
                 args.out.c_str(), ec ? ec.message().c_str() : "not a folder");
    return kExitError;
  }
  std::set<std::string> used;
  int failed = 0;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& img : args.images) {
    // <file name>.fmf, made unique when two inputs share a name.
    std::string name = fs::path(img).filename().string() + ".fmf";
    for (int i = 1; used.count(name); ++i)
      name = fs::path(img).filename().string() + "." + std::to_string(i) + ".fmf";
    used.insert(name);
    const std::string out = (fs::path(args.out) / name).string();
    core::Stopwatch sw;
    core::Features f;
    try {
      f = matcher::ExtractFeatures(matcher::LoadGrayImage(img), args.sift, cv::Mat(), img);
    } catch (const std::exception& e) {
      // An input that cannot be used is skipped; the message names it.
      std::string what = e.what();
      if (what.rfind(img + ":", 0) != 0) what = img + ": " + what;
      ++failed;
      report.push_back({{"image", img}, {"error", what}});
      std::fprintf(stderr, "featmatch extract: skipped %s\n", what.c_str());
      continue;
    }
    try {
      nlohmann::json meta = {{"source", img}, {"sift", nlohmann::json::parse(args.sift.ToJson())}};
      core::WriteFeatureFile(out, f, meta.dump(-1, ' ', false,
                                               nlohmann::json::error_handler_t::replace));
    } catch (const std::exception& e) {
      // An output that cannot be written stops the run: the next would fail alike. The files
      // written before it are kept.
      std::fprintf(stderr, "featmatch extract: cannot write the features of %s: %s\n",
                   img.c_str(), e.what());
      if (args.json) PrintText(JsonText(report) + "\n");
      return kExitError;
    }
    const double ms = sw.ElapsedMs();
    report.push_back({{"image", img}, {"features", f.size()}, {"file", out}, {"ms", ms}});
    if (!args.json)
      std::printf("%s: %lld features -> %s (%.0f ms)\n", img.c_str(),
                  static_cast<long long>(f.size()), out.c_str(), ms);
  }
  if (args.json && !PrintText(JsonText(report) + "\n")) {
    std::fprintf(stderr, "featmatch extract: cannot write the JSON report to stdout\n");
    return kExitError;
  }
  if (failed == static_cast<int>(args.images.size())) return kExitBadInput;
  return failed ? kExitPartial : kExitOk;
}

RunFn SetupExtract(CLI::App& sub) {
  auto args = std::make_shared<ExtractArgs>();
  sub.add_option("images", args->images, "images to extract features from")->required();
  sub.add_option("-o,--out", args->out, "output folder for the .fmf feature files")->required();
  sub.add_flag("--json", args->json, "print a JSON report");
  AddSiftOptions(sub, args->sift);
  return [args] { return RunExtract(*args); };
}

FM_REGISTER_COMMAND("extract", "extract SIFT features of images into .fmf feature files",
                    SetupExtract);

}  // namespace
}  // namespace fm::app
