// The featmatch CLI's subcommand table: each subcommand file registers a setup function that
// declares its options on a CLI11 subcommand and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace fm::app {

// Exit codes (documented in docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,        // unexpected failure (I/O error, internal error)
  kExitUsage = 2,        // bad command line or option values
  kExitBadInput = 3,     // an input could not be used (unreadable image, damaged file, ...)
  kExitGpu = 4,          // --backend gpu was asked for and no GPU can be used
  kExitPartial = 5,      // the command finished, but some inputs were skipped (see its report)
  kExitInterrupted = 130 // stopped by Ctrl-C / SIGTERM (work done so far is kept)
};

using RunFn = std::function<int()>;
using SetupFn = std::function<RunFn(CLI::App& sub)>;

struct Command {
  std::string name;
  std::string help;
  SetupFn setup;
};

bool RegisterCommand(const std::string& name, const std::string& help, SetupFn setup);
const std::vector<Command>& Commands();

#define FM_REGISTER_COMMAND(name, help, setup) \
  static const bool fm_cmd_registered_##setup = ::fm::app::RegisterCommand(name, help, setup)

}  // namespace fm::app
