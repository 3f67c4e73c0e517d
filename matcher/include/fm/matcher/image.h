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

// Loads an image as 8-bit grayscale: the pixels every feature extraction of featmatch uses
// (a JPEG that ends early is refused, not decoded with gray rows). Throws ImageError saying why
// it could not be used.
cv::Mat LoadGrayImage(const std::string& path);
// As LoadGrayImage, the pixels as stored: a JPEG's EXIF orientation is not applied (what COLMAP
// reads, for the batch's database). Throws ImageError.
cv::Mat LoadGrayImageAsStored(const std::string& path);
// Loads an image in colour (BGR, 8-bit) for drawing. Throws ImageError.
cv::Mat LoadColorImage(const std::string& path);
// Whether OpenCV can encode an image file of that name (by its extension), without throwing.
bool CanWriteImage(const std::string& path);

// Loads a mask image as 8-bit 0 / 255: 255 where any colour channel is non-zero at its own depth
// (8- or 16-bit, gray or colour; an alpha channel is not looked at). Throws ImageError.
cv::Mat LoadMaskImage(const std::string& path);

}  // namespace fm::matcher
