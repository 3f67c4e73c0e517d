#include "output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace fm::app {

namespace fs = std::filesystem;

bool WriteTextFile(const std::string& path, const std::string& text, std::string* why) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device or a pipe (/dev/stdout, a FIFO) is written in place: it cannot be replaced.
    std::ofstream out(path, std::ios::binary);
    if (!out) {
      if (why) *why = std::string("cannot open for writing: ") + std::strerror(errno);
      return false;
    }
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out && why) *why = "write failed";
    return static_cast<bool>(out);
  }
  const std::string tmp = path + ".tmp";
  auto fail = [&](const std::string& reason) {
    std::error_code ec;
    fs::remove(tmp, ec);
    if (why) *why = reason;
    return false;
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail(std::string("cannot open for writing: ") + std::strerror(errno));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) return fail("write failed (disk full?)");
    out.close();
    if (!out) return fail("write failed on close (disk full?)");
  }
  fs::rename(tmp, path, ec);
  if (ec) return fail("cannot replace it: " + ec.message());
  return true;
}

std::string JsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool PrintText(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 && !std::ferror(stdout);
}

std::string OutputFolderProblem(const std::string& path) {
  const fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) return "";
  std::error_code ec;
  if (!fs::exists(folder, ec)) return "folder " + folder.string() + " does not exist";
  if (!fs::is_directory(folder, ec)) return folder.string() + " is not a folder";
  return "";
}

}  // namespace fm::app
