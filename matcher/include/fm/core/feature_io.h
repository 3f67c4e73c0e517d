// The featmatch feature file (.fmf): keypoints and descriptors of one image, with a checksum.
// The layout is documented in docs/feature_format.md.
#pragma once

#include <stdexcept>
#include <string>

#include "fm/core/types.h"

namespace fm::core {

class FeatureFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr uint32_t kFeatureFileVersion = 1;

// Writes `bytes` to path whole or not at all: through a temporary file beside it, renamed over
// path once complete (a device or a pipe, which cannot be replaced, is written in place). On any
// failure returns false with the reason in *why and leaves no temporary file.
bool WriteFileWhole(const std::string& path, const std::string& bytes, std::string* why);

// Writes atomically (WriteFileWhole). Throws FeatureFileError on I/O failure.
// `metadata` is free UTF-8 text kept with the file (featmatch stores the extraction settings and
// the source image as JSON there).
void WriteFeatureFile(const std::string& path, const Features& features,
                      const std::string& metadata = {});

// Reads and validates a feature file. Throws FeatureFileError naming the file and the problem
// (not a feature file, unsupported version, truncated, checksum mismatch, inconsistent header).
// Never reads past the data it has.
Features ReadFeatureFile(const std::string& path, std::string* metadata = nullptr);

// The same on memory buffers (used by the SQLite stores and by tests).
std::string EncodeFeatures(const Features& features, const std::string& metadata = {});
Features DecodeFeatures(const void* data, std::size_t size, std::string* metadata = nullptr,
                        const std::string& what = "feature data");

// CRC-32 (IEEE 802.3 polynomial, as zlib) of a byte range, continuing from `crc`.
uint32_t Crc32(const void* data, std::size_t size, uint32_t crc = 0);

}  // namespace fm::core
