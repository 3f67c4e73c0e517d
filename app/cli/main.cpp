// featmatch: the command-line front end. main() only builds the subcommand table and dispatches.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <map>

#include "command.h"

namespace fm::app {

namespace {
std::vector<Command>& Table() {
  static std::vector<Command> table;
  return table;
}
}  // namespace

bool RegisterCommand(const std::string& name, const std::string& help, SetupFn setup) {
  Table().push_back({name, help, std::move(setup)});
  return true;
}

const std::vector<Command>& Commands() { return Table(); }

}  // namespace fm::app

int main(int argc, char** argv) {
  using namespace fm::app;
  CLI::App app{"featmatch: image feature matching on the GPU (exact kNN), with a CPU fallback"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "featmatch 0.1.0");
  std::map<CLI::App*, RunFn> runs;
  for (const auto& cmd : Commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    runs[sub] = cmd.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (auto& [sub, run] : runs) {
    if (!sub->parsed()) continue;
    try {
      return run();
    } catch (const CLI::ParseError& e) {
      std::fprintf(stderr, "featmatch %s: %s\n", sub->get_name().c_str(), e.what());
      return kExitUsage;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "featmatch %s: error: %s\n", sub->get_name().c_str(), e.what());
      return kExitError;
    }
  }
  return kExitUsage;
}
