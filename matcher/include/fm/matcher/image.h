// Image loading with clear errors.
#pragma once

#include <opencv2/core.hpp>
#include <stdexcept>
#include <string>

namespace fm::matcher {

// Thrown when an image cannot be used: missing, unreadable, not an image, too small.
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads an image as 8-bit grayscale. Throws ImageError saying why it could not be used.
cv::Mat LoadGrayImage(const std::string& path);
// Loads an image in colour (BGR, 8-bit) for drawing. Throws ImageError.
cv::Mat LoadColorImage(const std::string& path);

}  // namespace fm::matcher
