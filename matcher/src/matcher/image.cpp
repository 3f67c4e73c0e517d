#include "fm/matcher/image.h"

#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace fm::matcher {
namespace {

cv::Mat Load(const std::string& path, int flags) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw ImageError("no image path given");
  if (!fs::exists(path, ec)) throw ImageError(path + ": no such file");
  if (fs::is_directory(path, ec)) throw ImageError(path + ": is a directory, not an image");
  const auto size = fs::file_size(path, ec);
  if (ec) throw ImageError(path + ": cannot read (" + ec.message() + ")");
  if (size == 0) throw ImageError(path + ": empty file");
  cv::Mat img;
  try {
    img = cv::imread(path, flags);
  } catch (const cv::Exception& e) {
    throw ImageError(path + ": cannot decode image (" + e.msg + ")");
  }
  if (img.empty())
    throw ImageError(path + ": not a readable image (unsupported format, truncated or corrupt)");
  if (img.depth() != CV_8U) {
    cv::Mat tmp;
    double scale = img.depth() == CV_16U ? 1.0 / 257.0 : 1.0;
    img.convertTo(tmp, CV_8U, scale);
    img = tmp;
  }
  return img;
}

}  // namespace

cv::Mat LoadGrayImage(const std::string& path) { return Load(path, cv::IMREAD_GRAYSCALE); }

cv::Mat LoadColorImage(const std::string& path) { return Load(path, cv::IMREAD_COLOR); }

}  // namespace fm::matcher
