#include "fm/matcher/image.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace fm::matcher {
namespace {

// Whether a JPEG file ends before the end-of-image marker that must follow its last scan.
// libjpeg decodes such a file with a warning and fills the missing rows with gray, which would
// then be searched for features as if it were the picture. Markers cannot occur inside a
// scan's entropy-coded bytes (a 0xFF there is followed by 0x00 or a restart marker), so the last
// start-of-scan found is the image's own, and a whole file has an end-of-image after it.
bool JpegTruncated(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> b((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
  if (b.size() < 3 || b[0] != 0xFF || b[1] != 0xD8 || b[2] != 0xFF) return false;  // not a JPEG
  std::size_t sos = 0;
  for (std::size_t i = b.size() - 1; i-- > 0;) {
    if (b[i] == 0xFF && b[i + 1] == 0xDA) {
      sos = i;
      break;
    }
  }
  if (sos == 0) return true;  // no scan at all
  for (std::size_t i = sos + 2; i + 1 < b.size(); ++i) {
    if (b[i] == 0xFF && b[i + 1] == 0xD9) return false;
  }
  return true;
}

void CheckFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw ImageError("no image path given");
  if (!fs::exists(path, ec)) throw ImageError(path + ": no such file");
  if (fs::is_directory(path, ec)) throw ImageError(path + ": is a directory, not an image");
  // A FIFO, socket or device is no image file (and reading a FIFO would wait for a writer).
  if (!fs::is_regular_file(path, ec))
    throw ImageError(path + ": not a regular file (a pipe, socket or device), not an image");
  const auto size = fs::file_size(path, ec);
  if (ec) throw ImageError(path + ": cannot read (" + ec.message() + ")");
  if (size == 0) throw ImageError(path + ": empty file");
}

cv::Mat Decode(const std::string& path, int flags) {
  CheckFile(path);
  if (JpegTruncated(path))
    throw ImageError(path + ": truncated JPEG (the file ends before the image does)");
  cv::Mat img;
  try {
    img = cv::imread(path, flags);
  } catch (const cv::Exception& e) {
    throw ImageError(path + ": cannot decode image (" + e.msg + ")");
  }
  if (img.empty())
    throw ImageError(path + ": not a readable image (unsupported format, truncated or corrupt)");
  return img;
}

cv::Mat Load(const std::string& path, int flags) {
  cv::Mat img = Decode(path, flags);
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

cv::Mat LoadGrayImageAsStored(const std::string& path) {
  return Load(path, cv::IMREAD_GRAYSCALE | cv::IMREAD_IGNORE_ORIENTATION);
}

cv::Mat LoadColorImage(const std::string& path) { return Load(path, cv::IMREAD_COLOR); }

bool CanWriteImage(const std::string& path) {
  try {
    return cv::haveImageWriter(path);
  } catch (const cv::Exception&) {
    return false;  // OpenCV throws for a name it has no writer for at all
  }
}

cv::Mat LoadMaskImage(const std::string& path) {
  const cv::Mat img = Decode(path, cv::IMREAD_UNCHANGED);
  std::vector<cv::Mat> planes;
  cv::split(img, planes);
  const std::size_t colour = planes.size() == 4 ? 3 : planes.size();  // alpha is not looked at
  cv::Mat on(img.size(), CV_8UC1, cv::Scalar(0));
  for (std::size_t c = 0; c < colour; ++c) {
    cv::Mat nz;
    cv::compare(planes[c], 0, nz, cv::CMP_NE);
    cv::bitwise_or(on, nz, on);
  }
  return on;
}

}  // namespace fm::matcher
