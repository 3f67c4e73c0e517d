#include "output.h"

#include <cstdio>
#include <filesystem>

namespace fm::app {

namespace fs = std::filesystem;

std::string JsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool PrintText(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 && !std::ferror(stdout);
}

std::string OutputFolderProblem(const std::string& path) {
  std::error_code ec;
  // A folder in the file's place would fail the write only after the work.
  if (fs::is_directory(path, ec)) return path + " is a folder, not a file";
  const fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) return "";
  if (!fs::exists(folder, ec)) return "folder " + folder.string() + " does not exist";
  if (!fs::is_directory(folder, ec)) return folder.string() + " is not a folder";
  return "";
}

}  // namespace fm::app
