// Writing the CLI's outputs so that a failure is seen (files are written whole or not at all by
// core::WriteFileWhole): JSON that stays valid for any file name, stdout checked after it is
// written, output folders checked before the work.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace fm::app {

// The JSON text of j, indented; bytes of a name that are not UTF-8 (a file name on Linux may
// hold any) become U+FFFD instead of making the dump throw.
std::string JsonText(const nlohmann::json& j);

// Writes text to stdout and flushes it; false when the stream failed (a closed pipe, a full disk).
bool PrintText(const std::string& text);

// Where writing `path` would fail before any work is done: an empty string when its folder
// exists and the path is not itself a folder, else the reason.
std::string OutputFolderProblem(const std::string& path);

}  // namespace fm::app
