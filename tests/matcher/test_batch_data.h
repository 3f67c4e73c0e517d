// A small image folder for the batch tests: views of real sample photographs warped under known
// homographies, plus one corrupt image and one file that is not an image.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_images.h"

namespace fm::test {

struct BatchView {
  std::string name;
  int base = 0;        // which photograph
  cv::Matx33d H;       // photograph -> this view (OpenCV pixel coordinates)
};

struct BatchFolder {
  std::string dir;
  std::vector<BatchView> views;  // sorted by name
  std::string corrupt = "b_corrupt.jpg";
  std::string not_image = "notes.txt";
};

inline cv::Matx33d ViewHomography(double angle_deg, double scale, double px, double py,
                                  double cx, double cy) {
  const double a = angle_deg * CV_PI / 180.0;
  cv::Matx33d to_c(1, 0, -cx, 0, 1, -cy, 0, 0, 1), back(1, 0, cx, 0, 1, cy, 0, 0, 1);
  cv::Matx33d r(scale * std::cos(a), -scale * std::sin(a), 0, scale * std::sin(a),
                scale * std::cos(a), 0, px, py, 1);
  return back * r * to_c;
}

// Writes `per_base` views of each photograph in `bases` (names a_00.png, a_01.png, b_00.png, ...)
// into `dir`, plus the corrupt file and the non-image.
inline BatchFolder MakeBatchFolder(const std::string& dir,
                                   const std::vector<std::string>& bases = {"graf1.png",
                                                                            "box_in_scene.png"},
                                   int per_base = 3, int max_side = 360) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  fs::create_directories(dir);
  BatchFolder f;
  f.dir = dir;
  for (std::size_t b = 0; b < bases.size(); ++b) {
    cv::Mat img = cv::imread(Sample(bases[b]), cv::IMREAD_GRAYSCALE);
    if (img.empty()) throw std::runtime_error("missing sample " + bases[b]);
    const double s = static_cast<double>(max_side) / std::max(img.cols, img.rows);
    cv::resize(img, img, cv::Size(), s, s, cv::INTER_AREA);
    for (int v = 0; v < per_base; ++v) {
      const double angle = -8.0 + 8.0 * v, scale = 1.0 - 0.06 * v;
      const cv::Matx33d H =
          ViewHomography(angle, scale, 1e-4 * (v - 1), -5e-5 * v, img.cols / 2.0, img.rows / 2.0);
      cv::Mat out;
      cv::warpPerspective(img, out, cv::Mat(H), img.size(), cv::INTER_LINEAR,
                          cv::BORDER_CONSTANT, 0);
      std::ostringstream name;
      name << static_cast<char>('a' + 2 * b) << "_0" << v << ".png";
      cv::imwrite(dir + "/" + name.str(), out);
      f.views.push_back({name.str(), static_cast<int>(b), H});
    }
  }
  // A JPEG header followed by garbage, and a text file.
  std::ofstream(dir + "/" + f.corrupt, std::ios::binary)
      << std::string("\xFF\xD8\xFF\xE0\x00\x10JFIF\x00", 11) << std::string(300, '\x5A');
  std::ofstream(dir + "/" + f.not_image) << "these are notes, not an image\n";
  std::sort(f.views.begin(), f.views.end(),
            [](const BatchView& x, const BatchView& y) { return x.name < y.name; });
  return f;
}

// Every row of every table of an SQLite file, in primary-key order, as text (blobs in hex).
inline std::string DumpDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return "cannot open " + path;
  }
  std::vector<std::string> tables;
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE "
                     "'sqlite_%' ORDER BY name",
                     -1, &s, nullptr);
  while (sqlite3_step(s) == SQLITE_ROW)
    tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
  sqlite3_finalize(s);
  std::ostringstream out;
  for (const auto& t : tables) {
    out << "## " << t << "\n";
    sqlite3_prepare_v2(db, ("SELECT * FROM " + t + " ORDER BY 1, 2").c_str(), -1, &s, nullptr);
    while (sqlite3_step(s) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        if (sqlite3_column_type(s, c) == SQLITE_BLOB) {
          const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(s, c));
          const int n = sqlite3_column_bytes(s, c);
          static const char* hex = "0123456789abcdef";
          out << "x";
          for (int i = 0; i < n; ++i) out << hex[p[i] >> 4] << hex[p[i] & 15];
        } else if (sqlite3_column_type(s, c) == SQLITE_NULL) {
          out << "NULL";
        } else {
          out << sqlite3_column_text(s, c);
        }
        out << "|";
      }
      out << "\n";
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out.str();
}

inline int64_t CountRows(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  int64_t n = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &s, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
      n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return n;
}

}  // namespace fm::test
