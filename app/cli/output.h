// Writing the CLI's outputs so that a failure is seen: files replaced whole or not at all, JSON
// that stays valid for any file name, stdout checked after it is written.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace fm::app {

// Writes `text` to path by way of a temporary file beside it, renamed over path once complete.
// Returns false with the reason in *why (and no file left behind) when any step fails.
bool WriteTextFile(const std::string& path, const std::string& text, std::string* why);

// The JSON text of j, indented; bytes of a name that are not UTF-8 (a file name on Linux may
// hold any) become U+FFFD instead of making the dump throw.
std::string JsonText(const nlohmann::json& j);

// Writes text to stdout and flushes it; false when the stream failed (a closed pipe, a full disk).
bool PrintText(const std::string& text);

// Where writing `path` would fail before any work is done: an empty string when its folder
// exists, else the reason.
std::string OutputFolderProblem(const std::string& path);

}  // namespace fm::app
