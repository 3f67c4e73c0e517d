// Feature extraction with OpenCV SIFT (and RootSIFT).
#pragma once

#include <opencv2/core.hpp>
#include <cstdint>
#include <string>

#include "fm/core/types.h"

namespace fm::matcher {

struct SiftOptions {
  int max_features = 0;              // keep the best N by response; 0 = all
  int octave_layers = 3;             // layers per octave
  double contrast_threshold = 0.04;  // larger = fewer, stronger features
  double edge_threshold = 10;        // larger = more edge-like features kept
  double sigma = 1.6;                // Gaussian of the input octave
  bool root_sift = false;            // RootSIFT: L1-normalise, square root (float descriptors)
  int max_image_size = 0;            // downscale so the longer side is at most this; 0 = never

  bool Check(std::string* why) const;
  std::string ToJson() const;  // the settings, as stored with extracted features
};

// Extracts SIFT features from an 8-bit image (grayscale or BGR). Descriptors are uint8 (SIFT's
// own 0..255 values) or float32 for RootSIFT. Keypoints are in the coordinates of `image` (even
// when max_image_size downscales it). `mask` (optional, 8-bit, same size) limits detection.
// An image with no features gives empty Features (not an error). At most max_features features
// (the strongest; OpenCV's ties at the N-th are cut). Throws ImageError when the image is too
// large for the memory available (CheckSiftMemory), its message led by `name` (the image's
// file) when one is given.
core::Features ExtractFeatures(const cv::Mat& image, const SiftOptions& options,
                               const cv::Mat& mask = cv::Mat(), const std::string& name = {});

// Bytes SIFT (as ExtractFeatures runs it) is expected to hold for an image of width x height.
int64_t SiftMemoryEstimate(int width, int height, const SiftOptions& options);
// MemAvailable of /proc/meminfo in bytes; -1 where it cannot be read.
int64_t AvailableMemoryBytes();
// Throws ImageError, saying how far to downscale, when the estimate exceeds `available` bytes
// (available <= 0: no check); the message is led by `name` when one is given. ExtractFeatures
// calls it before SIFT runs.
void CheckSiftMemory(int width, int height, const SiftOptions& options, int64_t available,
                     const std::string& name = {});

// RootSIFT of uint8 SIFT descriptors (Arandjelovic & Zisserman 2012): L1 normalise, sqrt.
core::DescriptorMatrix ToRootSift(const core::DescriptorMatrix& sift);

}  // namespace fm::matcher
