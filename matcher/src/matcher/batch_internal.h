// Pieces of the batch controller that tests of the library reach only through BatchController:
// folder scanning, pair generation, descriptor conversion.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
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

// Memory that the batch's concurrent extractions hold together. Each takes SIFT's estimate for
// its image before SIFT runs and gives it back after, so that two large images do not each pass
// the memory check alone and then run out of memory together. An extraction that finds the
// budget taken waits for the others; one with nothing else running always starts (SIFT's own
// check then refuses an image too large for the machine).
class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t capacity) : capacity_(capacity) {}  // <= 0: no bound
  void Acquire(int64_t bytes);
  void Release(int64_t bytes);
  int64_t InUse() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable freed_;
  int64_t capacity_;
  int64_t in_use_ = 0;
};

}  // namespace fm::matcher::detail
