// featmatch-bench SUBCOMMAND [options]: benchmarks that print one JSON object per measurement.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench_util.h"

int main(int argc, char** argv) {
  const auto& benches = fm::bench::Benches();
  auto usage = [&] {
    std::fprintf(stderr, "usage: featmatch-bench SUBCOMMAND [options]\n\nsubcommands:\n");
    for (const auto& [name, cmd] : benches)
      std::fprintf(stderr, "  %-10s %s\n", name.c_str(), cmd.help.c_str());
    std::fprintf(stderr, "\nEach prints one JSON object per line on stdout.\n");
  };
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    usage();
    return argc < 2 ? 2 : 0;
  }
  auto it = benches.find(argv[1]);
  if (it == benches.end()) {
    std::fprintf(stderr, "featmatch-bench: unknown subcommand '%s'\n", argv[1]);
    usage();
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  // A benchmark reads only the options it knows, so --help after it would go unseen and run it.
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::printf("featmatch-bench %s: %s\n", argv[1], it->second.help.c_str());
      return 0;
    }
  }
  try {
    return it->second.run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "featmatch-bench %s: %s\n", argv[1], e.what());
    return 1;
  }
}
