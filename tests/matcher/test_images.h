// Paths of the OpenCV sample images the tests use (Debian package opencv-doc).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

namespace fm::test {

inline std::string SampleDir() {
  if (const char* env = std::getenv("FM_SAMPLE_DATA")) return env;
  return "/usr/share/doc/opencv-doc/examples/data";
}

inline std::string Sample(const std::string& name) { return SampleDir() + "/" + name; }

// The sample images the tests use that are missing, by name, comma-separated (empty when all are
// there): graf1.png and box.png, which most read, and any others a test names. Where they must be
// (FM_REQUIRE_SAMPLES=1, set by scripts/test.sh, which installs them), their absence is a test
// failure, not a skip.
inline std::string MissingSamples(std::initializer_list<const char*> also = {}) {
  std::string missing;
  std::vector<std::string> checked;
  auto check = [&](const char* name) {
    if (std::find(checked.begin(), checked.end(), name) != checked.end()) return;
    checked.emplace_back(name);
    if (std::filesystem::exists(Sample(name))) return;
    missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  check("graf1.png");
  check("box.png");
  for (const char* name : also) check(name);
  const char* required = std::getenv("FM_REQUIRE_SAMPLES");
  if (!missing.empty() && required && std::string(required) == "1") {
    ADD_FAILURE() << "FM_REQUIRE_SAMPLES=1 but sample images are missing in " << SampleDir() << ": "
                  << missing;
  }
  return missing;
}
inline bool HaveSamples(std::initializer_list<const char*> also = {}) {
  return MissingSamples(also).empty();
}

}  // namespace fm::test

// Skips a test that reads sample images when one of them is missing (graf1.png, box.png and the
// ones named), saying which, or fails it where they must be (MissingSamples). A whole if/else, so
// that an `else` after it cannot bind to it.
#define FM_REQUIRE_SAMPLES(...)                                                         \
  if (const std::string fm_missing_samples = ::fm::test::MissingSamples({__VA_ARGS__}); \
      fm_missing_samples.empty()) {                                                     \
  } else                                                                                \
    GTEST_SKIP() << "OpenCV sample images missing in " << ::fm::test::SampleDir() << ": " \
                 << fm_missing_samples
