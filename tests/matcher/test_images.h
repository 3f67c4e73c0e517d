// Paths of the OpenCV sample images the tests use (Debian package opencv-doc).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace fm::test {

inline std::string SampleDir() {
  if (const char* env = std::getenv("FM_SAMPLE_DATA")) return env;
  return "/usr/share/doc/opencv-doc/examples/data";
}

inline std::string Sample(const std::string& name) { return SampleDir() + "/" + name; }

// Whether the sample images the tests use are there. Where they must be (FM_REQUIRE_SAMPLES=1, set
// by scripts/test.sh, which installs them), their absence is a test failure, not a skip.
inline bool HaveSamples() {
  const bool have =
      std::filesystem::exists(Sample("graf1.png")) && std::filesystem::exists(Sample("box.png"));
  const char* required = std::getenv("FM_REQUIRE_SAMPLES");
  if (!have && required && std::string(required) == "1") {
    ADD_FAILURE() << "FM_REQUIRE_SAMPLES=1 but the OpenCV sample images are not in " << SampleDir();
  }
  return have;
}

}  // namespace fm::test
