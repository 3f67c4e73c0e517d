// Pieces of the batch controller that tests of the library reach only through BatchController:
// folder scanning, pair generation, descriptor conversion.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fm/matcher/batch.h"

namespace fm::matcher::detail {

struct ImageFile {
  std::string name;  // relative to the naming root, '/' separated
  std::string path;  // to open
};

struct FolderScan {
  std::vector<ImageFile> images;        // sorted by name
  std::vector<SkippedFile> ignored;     // files without an image extension
};

bool HasImageExtension(const std::string& path);

// Lists `folder` recursively (hidden entries and `exclude`'s subtree left out); names are relative
// to `root`. Throws BatchError when the folder is missing or unreadable.
FolderScan ScanFolder(const std::string& folder, const std::string& root,
                      const std::string& exclude = {});

// The image pairs (id1 < id2) of a job, sorted by pair id, without duplicates. `images` are the
// folder's images in name order; `queries` the query folder's (kQuery only). Throws BatchError for
// a pair list naming unknown images or a malformed line.
std::vector<std::pair<int64_t, int64_t>> GeneratePairs(const PairingOptions& options,
                                                       const std::vector<ColmapImage>& images,
                                                       const std::vector<ColmapImage>& queries);

// Descriptors as COLMAP stores them: uint8 unchanged; float (RootSIFT, unit length) scaled by 512,
// rounded and clamped to 0..255 as COLMAP does with its own float descriptors.
core::DescriptorMatrix ToColmapDescriptors(const core::DescriptorMatrix& d);

}  // namespace fm::matcher::detail
