// CLI bindings of the option structs shared by every subcommand (and by the GUI's panel).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "fm/matcher/backend.h"
#include "fm/matcher/pipeline.h"
#include "fm/matcher/sift.h"

namespace fm::app {

void AddSiftOptions(CLI::App& app, matcher::SiftOptions& o);

// Options bound to strings that are parsed into enums after CLI11 has run (see Finish).
struct MatchCliOptions {
  matcher::MatchOptions match;
  std::string metric = "l2";
  std::string model = "homography";
  std::string usac = "magsac";
  // Parses the string fields into `match` (and bounds the libraries' threads by its --threads);
  // throws CLI::ValidationError with a clear message.
  void Finish();
};
void AddMatchOptions(CLI::App& app, MatchCliOptions& o);

// Bounds the threads OpenCV's own parallel loops take to `threads` (0: leaves them all).
void LimitLibraryThreads(int threads);

struct BackendCliOptions {
  matcher::BackendOptions backend;
  std::string kind = "auto";
  void Finish();
};
void AddBackendOptions(CLI::App& app, BackendCliOptions& o);

// Checks an options struct and turns a failure into a CLI usage error.
template <typename T>
void CheckOrThrow(const T& options, const std::string& what) {
  std::string why;
  if (!options.Check(&why)) throw CLI::ValidationError(what, why);
}

}  // namespace fm::app
