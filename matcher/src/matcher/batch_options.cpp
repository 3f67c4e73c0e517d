// Batch options, pairing, folder scanning, summaries and result tables.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "batch_internal.h"
#include "fm/matcher/batch.h"

namespace fm::matcher {

namespace fs = std::filesystem;

bool PairingOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (mode == PairMode::kSequential && overlap < 1) return bad("sequential overlap must be >= 1");
  if (mode == PairMode::kQuery && query_folder.empty()) return bad("query mode needs a folder");
  if (mode == PairMode::kList && list_file.empty()) return bad("list mode needs a file");
  return true;
}

PairingOptions PairingOptions::Parse(const std::string& spec) {
  PairingOptions p;
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
  if (kind == "exhaustive" && colon == std::string::npos) {
    p.mode = PairMode::kExhaustive;
  } else if (kind == "sequential") {
    p.mode = PairMode::kSequential;
    if (!arg.empty()) {
      try {
        std::size_t used = 0;
        p.overlap = std::stoi(arg, &used);
        if (used != arg.size()) throw std::invalid_argument("trailing text");
      } catch (const std::exception&) {
        throw std::invalid_argument("sequential:N needs a whole number N, got '" + arg + "'");
      }
    }
  } else if (kind == "query") {
    p.mode = PairMode::kQuery;
    p.query_folder = arg;
  } else if (kind == "list") {
    p.mode = PairMode::kList;
    p.list_file = arg;
  } else {
    throw std::invalid_argument("unknown pairing '" + spec +
                                "' (use exhaustive, sequential:N, query:FOLDER or list:FILE)");
  }
  std::string why;
  if (!p.Check(&why)) throw std::invalid_argument("pairing '" + spec + "': " + why);
  return p;
}

std::string PairingOptions::ToString() const {
  switch (mode) {
    case PairMode::kExhaustive: return "exhaustive";
    case PairMode::kSequential: return "sequential:" + std::to_string(overlap);
    case PairMode::kQuery: return "query:" + query_folder;
    case PairMode::kList: return "list:" + list_file;
  }
  return "unknown";
}

bool BatchOptions::Check(std::string* why) const {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (folder.empty()) return bad("no image folder given");
  if (database.empty()) return bad("no database path given");
  if (!pairs.Check(why)) return false;
  if (!sift.Check(why)) return false;
  if (!match.Check(why)) return false;
  if (!backend.Check(why)) return false;
  if (max_batch_rows < 1) return bad("max batch rows must be >= 1");
  if (max_batch_images < 1) return bad("max batch images must be >= 1");
  if (commit_pairs < 1) return bad("commit every must be >= 1 pair");
  if (!(commit_seconds > 0)) return bad("commit interval must be > 0 s");
  if (cache_images < 2) return bad("the image cache must hold at least 2 images");
  if (max_pairs < 0) return bad("max pairs must be >= 0 (0 = all)");
  return true;
}

const char* BatchStageName(BatchStage s) {
  switch (s) {
    case BatchStage::kIdle: return "idle";
    case BatchStage::kScanning: return "scanning";
    case BatchStage::kExtracting: return "extracting";
    case BatchStage::kPairing: return "pairing";
    case BatchStage::kMatching: return "matching";
    case BatchStage::kDone: return "done";
    case BatchStage::kCancelled: return "cancelled";
    case BatchStage::kFailed: return "failed";
  }
  return "unknown";
}

nlohmann::json BatchSummaryToJson(const BatchSummary& s) {
  using nlohmann::json;
  auto files = [](const std::vector<SkippedFile>& v) {
    json a = json::array();
    for (const auto& f : v) a.push_back({{"path", f.path}, {"reason", f.reason}});
    return a;
  };
  return json{{"status", BatchStageName(s.stage)},
              {"error", s.error},
              {"database", s.database},
              {"pairing", s.pairing},
              {"backend", s.backend},
              {"images",
               {{"found", s.images_found},
                {"extracted", s.images_extracted},
                {"reused", s.images_reused},
                {"bad", files(s.bad_images)},
                {"ignored", files(s.ignored_files)}}},
              {"pairs",
               {{"total", s.pairs_total},
                {"previous", s.pairs_previous},
                {"matched", s.pairs_matched},
                {"verified", s.pairs_verified}}},
              {"seconds",
               {{"extract", s.extract_seconds},
                {"match", s.match_seconds},
                {"total", s.total_seconds}}},
              {"match_pairs_per_second", s.match_pairs_per_second}};
}

bool PairResult::verified() const {
  switch (config) {
    case TwoViewConfig::kCalibrated:
    case TwoViewConfig::kUncalibrated:
    case TwoViewConfig::kPlanar:
    case TwoViewConfig::kPanoramic:
    case TwoViewConfig::kPlanarOrPanoramic:
      return inliers > 0;
    default:
      return false;
  }
}

std::vector<PairResult> ReadPairResults(const std::string& database_path) {
  ColmapDatabase db(database_path, ColmapDatabase::Mode::kReadOnly);
  std::map<int64_t, std::string> names;
  for (const auto& im : db.ReadImages()) names[im.image_id] = im.name;
  std::vector<PairResult> out;
  for (const auto& row : db.ReadPairRows()) {
    PairResult r;
    std::tie(r.image_id1, r.image_id2) = ColmapPairImages(row.pair_id);
    r.name1 = names.count(r.image_id1) ? names[r.image_id1] : std::string();
    r.name2 = names.count(r.image_id2) ? names[r.image_id2] : std::string();
    r.matches = row.matches;
    r.inliers = row.inliers;
    r.config = row.config;
    out.push_back(std::move(r));
  }
  return out;
}

namespace detail {

bool HasImageExtension(const std::string& path) {
  static const char* kExt[] = {".jpg", ".jpeg", ".jpe", ".png", ".bmp", ".dib", ".tif", ".tiff",
                               ".webp", ".pgm", ".ppm", ".pbm", ".pnm", ".pxm", ".jp2",
                               ".sr", ".ras", ".exr", ".hdr", ".pic"};
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* e : kExt)
    if (ext == e) return true;
  return false;
}

FolderScan ScanFolder(const std::string& folder, const std::string& root,
                      const std::string& exclude) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) throw BatchError(folder + ": no such folder");
  if (!fs::is_directory(folder, ec)) throw BatchError(folder + ": is not a folder");
  const fs::path base = fs::weakly_canonical(root, ec);
  const fs::path skip = exclude.empty() ? fs::path() : fs::weakly_canonical(exclude, ec);
  FolderScan scan;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw BatchError(folder + ": cannot list the folder (" + ec.message() + ")");
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw BatchError(folder + ": cannot list the folder (" + ec.message() + ")");
    const fs::path p = it->path();
    const std::string leaf = p.filename().string();
    if (!leaf.empty() && leaf[0] == '.') {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec)) {
      if (!skip.empty() && fs::weakly_canonical(p, ec) == skip) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) {
      if (it->is_symlink(ec)) scan.ignored.push_back({p.string(), "broken symbolic link"});
      continue;
    }
    // The file's own name, under its folder's resolved path: a symbolic link is named as the
    // link, not as its target (which may be another image of the folder, or lie outside it).
    const std::string name = (fs::weakly_canonical(p.parent_path(), ec) / p.filename())
                                 .lexically_relative(base)
                                 .generic_string();
    if (HasImageExtension(leaf)) {
      scan.images.push_back({name, p.string()});
    } else {
      scan.ignored.push_back({p.string(), "not an image file (by its extension)"});
    }
  }
  std::sort(scan.images.begin(), scan.images.end(),
            [](const ImageFile& a, const ImageFile& b) { return a.name < b.name; });
  std::sort(scan.ignored.begin(), scan.ignored.end(),
            [](const SkippedFile& a, const SkippedFile& b) { return a.path < b.path; });
  return scan;
}

std::vector<std::pair<int64_t, int64_t>> GeneratePairs(const PairingOptions& options,
                                                       const std::vector<ColmapImage>& images,
                                                       const std::vector<ColmapImage>& queries) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  auto add = [&](int64_t a, int64_t b) {
    if (a == b) return;
    pairs.emplace_back(std::min(a, b), std::max(a, b));
  };
  const int64_t n = static_cast<int64_t>(images.size());
  switch (options.mode) {
    case PairMode::kExhaustive:
      pairs.reserve(static_cast<std::size_t>(n * (n - 1) / 2));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) add(images[i].image_id, images[j].image_id);
      break;
    case PairMode::kSequential:
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n && j <= i + options.overlap; ++j)
          add(images[i].image_id, images[j].image_id);
      break;
    case PairMode::kQuery:
      for (const auto& q : queries)
        for (const auto& im : images) add(q.image_id, im.image_id);
      break;
    case PairMode::kList: {
      std::map<std::string, int64_t> ids;
      for (const auto& im : images) ids[im.name] = im.image_id;
      std::ifstream in(options.list_file);
      if (!in) throw BatchError(options.list_file + ": cannot read the pair list");
      std::string line;
      int line_no = 0;
      std::vector<std::string> unknown;
      while (std::getline(in, line)) {
        ++line_no;
        const auto hash = line.find('#');
        if (hash != std::string::npos) line.resize(hash);
        std::istringstream ls(line);
        std::string a, b, extra;
        if (!(ls >> a)) continue;
        if (!(ls >> b) || (ls >> extra))
          throw BatchError(options.list_file + ":" + std::to_string(line_no) +
                           ": expected two image names separated by a space");
        const bool ka = ids.count(a) != 0, kb = ids.count(b) != 0;
        if (!ka) unknown.push_back(a);
        if (!kb) unknown.push_back(b);
        if (ka && kb) {
          if (a == b)
            throw BatchError(options.list_file + ":" + std::to_string(line_no) +
                             ": an image cannot be paired with itself");
          add(ids[a], ids[b]);
        }
      }
      if (!unknown.empty()) {
        std::string msg = options.list_file + ": " + std::to_string(unknown.size()) +
                          " name(s) are not usable images of the folder (first: '" + unknown[0] +
                          "'); names are paths relative to the folder";
        throw BatchError(msg);
      }
      break;
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

core::DescriptorMatrix ToColmapDescriptors(const core::DescriptorMatrix& d) {
  if (d.type() == core::DescriptorType::kUint8) return d;
  core::DescriptorMatrix out(core::DescriptorType::kUint8, d.rows(), d.dim());
  const float* src = d.f32();
  uint8_t* dst = out.u8();
  const std::size_t n = static_cast<std::size_t>(d.rows()) * d.dim();
  for (std::size_t i = 0; i < n; ++i) {
    const float v = std::round(512.0f * src[i]);
    dst[i] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
  }
  return out;
}

}  // namespace detail
}  // namespace fm::matcher
