#include "bench_util.h"

#include <algorithm>
#include <chrono>

namespace fm::bench {

namespace {
std::map<std::string, BenchCommand>& Registry() {
  static std::map<std::string, BenchCommand> registry;
  return registry;
}
}  // namespace

bool RegisterBench(const std::string& name, const std::string& help, BenchFn fn) {
  Registry()[name] = BenchCommand{name, help, std::move(fn)};
  return true;
}

const std::map<std::string, BenchCommand>& Benches() { return Registry(); }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<double> TimeRuns(const std::function<void()>& fn, int runs, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  t.reserve(runs);
  for (int i = 0; i < runs; ++i) {
    auto s = std::chrono::steady_clock::now();
    fn();
    auto e = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(e - s).count());
  }
  return t;
}

std::string ArgValue(const std::vector<std::string>& args, const std::string& name,
                     const std::string& def) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind(name + "=", 0) == 0) return args[i].substr(name.size() + 1);
  }
  return def;
}

bool HasFlag(const std::vector<std::string>& args, const std::string& name) {
  return std::find(args.begin(), args.end(), name) != args.end();
}

}  // namespace fm::bench
