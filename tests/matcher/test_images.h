// Paths of the OpenCV sample images the tests use (Debian package opencv-doc).
#pragma once

#include <filesystem>
#include <string>

namespace fm::test {

inline std::string SampleDir() {
  if (const char* env = std::getenv("FM_SAMPLE_DATA")) return env;
  return "/usr/share/doc/opencv-doc/examples/data";
}

inline std::string Sample(const std::string& name) { return SampleDir() + "/" + name; }

inline bool HaveSamples() { return std::filesystem::exists(Sample("graf1.png")); }

}  // namespace fm::test
