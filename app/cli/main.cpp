// featmatch: the command-line front end. main() only builds the subcommand table and dispatches.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <map>
#include <string>

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

namespace {

// CLI11 answers a command it does not know with "A subcommand is required". Walks the words of
// the command line down the table of commands and, where one is not a command of its level,
// names it and the commands there instead. Returns whether it said so.
bool ReportUnknownCommand(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = "featmatch";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return false;  // an option: CLI11's own message
    const auto named = at->get_subcommands([&](CLI::App* s) { return s->get_name() == word; });
    if (!named.empty()) {
      at = named.front();
      path += " " + word;
      continue;
    }
    const auto all = at->get_subcommands([](CLI::App*) { return true; });
    if (all.empty()) return false;  // a command's own arguments
    std::string names;
    for (const CLI::App* s : all) names += (names.empty() ? "" : ", ") + s->get_name();
    std::fprintf(stderr, "%s: unknown command '%s' (commands: %s; see %s --help)\n", path.c_str(),
                 word.c_str(), names.c_str(), path.c_str());
    return true;
  }
  return false;
}

}  // namespace
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
    if (e.get_exit_code() != 0 && ReportUnknownCommand(app, argc, argv)) return kExitUsage;
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
