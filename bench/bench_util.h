// Shared pieces of featmatch-bench: the subcommand registry, timing and JSON-line output.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fm::bench {

// A subcommand gets its arguments (without the program and subcommand names) and returns the
// process exit code.
using BenchFn = std::function<int(const std::vector<std::string>& args)>;

struct BenchCommand {
  std::string name;
  std::string help;
  BenchFn run;
};

// Registers a subcommand (called from a static initialiser in each bench file).
bool RegisterBench(const std::string& name, const std::string& help, BenchFn fn);
const std::map<std::string, BenchCommand>& Benches();

#define FM_REGISTER_BENCH(name, help, fn) \
  static const bool fm_bench_registered_##fn = ::fm::bench::RegisterBench(name, help, fn)

double Median(std::vector<double> v);

// Runs fn `warmup` times untimed, then `runs` times timed (wall clock, ms); returns the times.
std::vector<double> TimeRuns(const std::function<void()>& fn, int runs, int warmup = 1);

// Value of "--name value" or "--name=value" in args, or `def`.
std::string ArgValue(const std::vector<std::string>& args, const std::string& name,
                     const std::string& def);
bool HasFlag(const std::vector<std::string>& args, const std::string& name);

}  // namespace fm::bench
