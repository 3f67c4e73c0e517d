// Paths of the OpenCV sample images the tests use (Debian package opencv-doc).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>

namespace fm::test {

inline std::string SampleDir() {
  if (const char* env = std::getenv("FM_SAMPLE_DATA")) return env;
  return "/usr/share/doc/opencv-doc/examples/data";
}

inline std::string Sample(const std::string& name) { return SampleDir() + "/" + name; }

// Whether the sample images the tests use are there: graf1.png and box.png, which most read, and
// any others a test names. Where they must be (FM_REQUIRE_SAMPLES=1, set by scripts/test.sh, which
// installs them), their absence is a test failure, not a skip.
inline bool HaveSamples(std::initializer_list<const char*> also = {}) {
  std::string missing;
  auto check = [&](const char* name) {
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
  return missing.empty();
}

}  // namespace fm::test

// Skips a test that reads sample images when one of them is missing (named after graf1.png and
// box.png), or fails it where they must be (HaveSamples).
#define FM_REQUIRE_SAMPLES(...)                \
  if (!::fm::test::HaveSamples({__VA_ARGS__})) \
  GTEST_SKIP() << "OpenCV sample images not found in " << ::fm::test::SampleDir()
