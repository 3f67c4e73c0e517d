// The batch controller: scan, extract (parallel, committed in name order), generate pairs, match
// in batches on the kNN backend, verify on CPU threads, commit in transactions.
//
// Threads of the matching stage:
//   controller thread: reads features from the database (bounded LRU cache), groups the pairs by
//     their second image, concatenates the first images' descriptors and runs one kNN search of
//     the concatenation against the second image, splits and filters the result per pair;
//   verification workers (--threads): USAC on each pair;
//   writer: commits finished pairs every `commit_pairs` pairs or `commit_seconds`.
// A pair is done when its two_view_geometries row exists; matches and geometry are written in the
// same transaction, so a rerun redoes exactly the pairs that were not committed.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <thread>
#include <unordered_map>
#include <utility>

#include "batch_internal.h"
#include "fm/core/timer.h"
#include "fm/matcher/batch.h"
#include "fm/matcher/guided.h"
#include "fm/matcher/image.h"

namespace fm::matcher {
namespace {

namespace fs = std::filesystem;

int ResolveThreads(int threads) {
  if (threads > 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

// A bounded blocking queue; Close() wakes everyone, Push then fails and Pop drains what is left.
template <typename T>
class Queue {
 public:
  explicit Queue(std::size_t capacity) : capacity_(capacity) {}
  bool Push(T v) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(v));
    not_empty_.notify_one();
    return true;
  }
  // Waits up to `timeout` for an item; false when none (timeout, or closed and empty).
  bool Pop(T* out, std::chrono::milliseconds timeout, bool* closed_and_empty) {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) {
      *closed_and_empty = closed_;
      return false;
    }
    *out = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    *closed_and_empty = false;
    return true;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<T> items_;
  std::size_t capacity_;
  bool closed_ = false;
};

struct ImageData {
  core::DescriptorMatrix descriptors;
  // Keypoints in COLMAP's pixel convention (x, y as stored), so that the estimated matrices are
  // in the convention COLMAP reads them.
  std::shared_ptr<const std::vector<core::Keypoint>> keypoints;
};

// Least-recently-used cache of images' features read from the database.
class FeatureCache {
 public:
  FeatureCache(ColmapDatabase& db, std::size_t capacity) : db_(db), capacity_(capacity) {}
  std::shared_ptr<const ImageData> Get(int64_t image_id) {
    auto it = map_.find(image_id);
    if (it != map_.end()) {
      order_.splice(order_.begin(), order_, it->second.second);
      return it->second.first;
    }
    auto data = std::make_shared<ImageData>();
    data->descriptors = db_.ReadDescriptors(image_id);
    auto kps = std::make_shared<std::vector<core::Keypoint>>();
    for (const auto& c : db_.ReadKeypoints(image_id)) {
      core::Keypoint k;
      k.x = c.x;
      k.y = c.y;
      kps->push_back(k);
    }
    if (static_cast<int64_t>(kps->size()) != data->descriptors.rows())
      throw DatabaseError(db_.path() + ": image " + std::to_string(image_id) + " has " +
                          std::to_string(kps->size()) + " keypoints but " +
                          std::to_string(data->descriptors.rows()) + " descriptors");
    data->keypoints = std::move(kps);
    order_.push_front(image_id);
    map_[image_id] = {data, order_.begin()};
    while (map_.size() > capacity_) {
      map_.erase(order_.back());
      order_.pop_back();
    }
    return data;
  }

 private:
  ColmapDatabase& db_;
  std::size_t capacity_;
  std::list<int64_t> order_;
  std::unordered_map<int64_t,
                     std::pair<std::shared_ptr<const ImageData>, std::list<int64_t>::iterator>>
      map_;
};

struct VerifyJob {
  int64_t id1 = 0, id2 = 0;
  std::vector<core::Match> matches;  // query in id1, train in id2
  std::shared_ptr<const ImageData> a, b;
};

struct PairOutput {
  int64_t id1 = 0, id2 = 0;
  ColmapMatches matches;
  TwoViewGeometryRecord geometry;
};

// A match as the database stores it: the two keypoints' indices.
std::array<uint32_t, 2> ColmapMatchOf(const core::Match& m) {
  return {static_cast<uint32_t>(m.query), static_cast<uint32_t>(m.train)};
}

PairOutput VerifyPair(const VerifyJob& job, const MatchOptions& match) {
  const VerifyOptions& options = match.verify;
  PairOutput out;
  out.id1 = job.id1;
  out.id2 = job.id2;
  out.matches.reserve(job.matches.size());
  for (const auto& m : job.matches) out.matches.push_back(ColmapMatchOf(m));
  if (options.model == GeometryModel::kNone) {
    out.geometry.config = TwoViewConfig::kUndefined;
    return out;
  }
  Verification v = VerifyMatches(*job.a->keypoints, *job.b->keypoints, job.matches, options);
  if (!v.verified || v.matrix.empty()) {
    out.geometry.config = TwoViewConfig::kDegenerate;
    return out;
  }
  // Guided: the pair's features matched again under its model; the matches table keeps the
  // search's matches, the geometry the guided inliers (as COLMAP's own guided matching does).
  const std::vector<core::Match>* inlier_source = &job.matches;
  GuidedPass pass;
  if (match.guided) {
    pass = RunGuidedPass(*job.a->keypoints, job.a->descriptors, *job.b->keypoints,
                         job.b->descriptors, job.matches, v, options, match.metric, match.filter);
    if (pass.applied) {
      v = std::move(pass.verification);
      inlier_source = &pass.matches;
    }
  }
  for (std::size_t i = 0; i < inlier_source->size(); ++i)
    if (v.inliers[i]) out.geometry.inlier_matches.push_back(ColmapMatchOf((*inlier_source)[i]));
  std::array<double, 9> m{};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) m[r * 3 + c] = v.matrix.at<double>(r, c);
  if (options.model == GeometryModel::kHomography) {
    out.geometry.config = TwoViewConfig::kPlanarOrPanoramic;
    out.geometry.H = m;
  } else {
    out.geometry.config = TwoViewConfig::kUncalibrated;
    out.geometry.F = m;
  }
  return out;
}

// SIFT's memory estimate for an image as ExtractFeatures will run it (after --max-image-size).
int64_t SiftWorkEstimate(int width, int height, const SiftOptions& sift) {
  const int longer = std::max(width, height);
  if (sift.max_image_size > 0 && longer > sift.max_image_size) {
    const double scale = static_cast<double>(sift.max_image_size) / longer;
    width = std::max(1, static_cast<int>(width * scale));
    height = std::max(1, static_cast<int>(height * scale));
  }
  return SiftMemoryEstimate(width, height, sift);
}

// The key under which the database keeps the stamp of image `name`'s file as it was extracted.
std::string SourceKey(const std::string& name) { return "source:" + name; }

// A file's size and modification time: what a rerun compares to know that an image it would reuse
// from the database is still the file it was extracted from.
std::string SourceStamp(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto time = fs::last_write_time(path, ec);
  return std::to_string(ec ? 0 : size) + " bytes, modified " +
         std::to_string(ec ? 0 : time.time_since_epoch().count());
}

// The matching settings a database's matches were made with, as stored beside them.
std::string BatchMatchSettings(const MatchOptions& m) {
  return FilterAndVerifySettingsToJson(m).dump();
}

bool IsVerifiedConfig(TwoViewConfig c) {
  return c == TwoViewConfig::kCalibrated || c == TwoViewConfig::kUncalibrated ||
         c == TwoViewConfig::kPlanar || c == TwoViewConfig::kPanoramic ||
         c == TwoViewConfig::kPlanarOrPanoramic;
}

fs::path Normal(const std::string& p) {
  std::error_code ec;
  return fs::weakly_canonical(fs::absolute(p, ec), ec).lexically_normal();
}

// The deepest folder holding both paths.
fs::path CommonRoot(const fs::path& a, const fs::path& b) {
  fs::path out;
  auto ia = a.begin(), ib = b.begin();
  for (; ia != a.end() && ib != b.end() && *ia == *ib; ++ia, ++ib) out /= *ia;
  return out;
}

// One batch run per database at a time. Two runs would both extract the folder's images and match
// the same pairs: the second fails on the first's rows halfway (SQLite's "UNIQUE constraint
// failed"), or both spend the work twice. The lock is an flock() on a file beside the database,
// not on the database itself: closing any descriptor of the database file would drop the POSIX
// locks SQLite holds on it in this process. The kernel drops the lock when its holder dies
// (kill -9), so a stale lock file never blocks a rerun.
class RunLock {
 public:
  RunLock() = default;
  // Throws BatchError when another run (of any process, or another controller of this one) holds
  // the lock. Where no lock file can be made (a missing or read-only folder) it holds nothing:
  // opening the database then fails with the message that says what is wrong.
  explicit RunLock(const std::string& database) {
    path_ = Normal(database).string() + "-featmatch.lock";
    // The holder removes the file when it ends; a file opened just before that is not the one the
    // next run locks, so the lock counts only when the path still names the locked file.
    for (int attempt = 0; attempt < 100; ++attempt) {
      const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) break;
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        const std::string holder = ReadHolder(fd);
        ::close(fd);
        if (err != EWOULDBLOCK) break;  // a file system without locks: SQLite's own guard stays
        throw BatchError(database + ": the database is in use by another featmatch batch run" +
                         holder + "; wait for it to end (or stop it), or choose another --db");
      }
      struct stat held {}, named {};
      if (::fstat(fd, &held) == 0 && ::stat(path_.c_str(), &named) == 0 &&
          held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
        fd_ = fd;
        const std::string pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd_, 0) == 0 && ::write(fd_, pid.data(), pid.size()) < 0) {
          // The process id is for the message of a refused run only.
        }
        return;
      }
      ::close(fd);
    }
    path_.clear();
  }
  ~RunLock() { Release(); }
  RunLock(RunLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}
  RunLock& operator=(RunLock&& o) noexcept {
    if (this != &o) {
      Release();
      fd_ = std::exchange(o.fd_, -1);
      path_ = std::move(o.path_);
    }
    return *this;
  }

  void Release() {
    if (fd_ < 0) return;
    ::unlink(path_.c_str());  // while still locked: see the constructor
    ::close(fd_);
    fd_ = -1;
  }

 private:
  static std::string ReadHolder(int fd) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string pid(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return "";
    return " (process " + pid + ")";
  }

  int fd_ = -1;
  std::string path_;
};

}  // namespace

namespace detail {

void MemoryBudget::Acquire(int64_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  freed_.wait(lock, [&] { return capacity_ <= 0 || in_use_ == 0 || in_use_ + bytes <= capacity_; });
  in_use_ += bytes;
}

void MemoryBudget::Release(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ -= bytes;
  }
  freed_.notify_all();
}

int64_t MemoryBudget::InUse() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

}  // namespace detail

struct BatchController::Impl {
  mutable std::mutex mu;
  std::condition_variable finished_cv;
  ProgressFn progress_fn;
  std::thread thread;
  std::atomic<bool> cancel{false};
  bool running = false;
  BatchProgress progress;
  BatchSummary summary;

  BatchOptions options;
  detail::FolderScan scan, query_scan;
  std::unique_ptr<core::KnnBackend> backend;  // under auto made once the pairs are known
  std::string backend_why;  // why auto took the CPU for a small job, after its description
  core::Stopwatch clock;
  RunLock run_lock;  // held from Start until the run's connections are closed

  void Report(BatchStage stage, int64_t done, int64_t total, double stage_seconds) {
    BatchProgress p;
    p.stage = stage;
    p.done = done;
    p.total = total;
    p.elapsed_seconds = clock.ElapsedMs() / 1000.0;
    p.per_second = stage_seconds > 0 ? done / stage_seconds : 0;
    p.eta_seconds = p.per_second > 0 ? (total - done) / p.per_second : -1;
    ProgressFn fn;
    {
      std::lock_guard<std::mutex> lock(mu);
      progress = p;
      fn = progress_fn;
    }
    if (fn) {
      try {
        fn(p);
      } catch (...) {
      }
    }
  }

  // Extracts the files not yet in the database and returns every usable image, in name order.
  std::vector<ColmapImage> Extract(ColmapDatabase& db, const std::vector<detail::ImageFile>& files,
                                   int64_t* done, int64_t total) {
    const int threads = ResolveThreads(options.match.threads);
    const std::string settings = options.sift.ToJson();
    std::vector<ColmapImage> usable;
    std::vector<std::pair<std::size_t, int64_t>> todo;  // file index, existing image id (0: new)
    std::vector<std::optional<ColmapImage>> found(files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
      auto im = db.FindImage(files[i].name);
      if (im && db.HasFeatures(im->image_id)) {
        found[i] = im;
        ++summary.images_reused;
        ++*done;
      } else {
        todo.emplace_back(i, im ? im->image_id : 0);
      }
    }
    core::Stopwatch sw;
    detail::MemoryBudget memory(AvailableMemoryBytes());
    const std::size_t chunk = static_cast<std::size_t>(std::max(2, 2 * threads));
    struct Extracted {
      bool ok = false;
      std::string reason;
      core::Features features;
    };
    for (std::size_t begin = 0; begin < todo.size() && !cancel.load(); begin += chunk) {
      const std::size_t end = std::min(todo.size(), begin + chunk);
      std::vector<Extracted> results(end - begin);
      std::atomic<std::size_t> next{begin};
      auto work = [&] {
        for (std::size_t t = next++; t < end; t = next++) {
          Extracted& r = results[t - begin];
          const auto& file = files[todo[t].first];
          try {
            // The pixels as stored, as COLMAP reads them: an EXIF orientation is not applied,
            // so that keypoints and camera sizes agree with what the reconstruction sees.
            cv::Mat img = LoadGrayImageAsStored(file.path);
            const int64_t need = SiftWorkEstimate(img.cols, img.rows, options.sift);
            memory.Acquire(need);
            try {
              r.features = ExtractFeatures(img, options.sift, cv::Mat(), file.path);
            } catch (...) {
              memory.Release(need);
              throw;
            }
            memory.Release(need);
            r.ok = true;
          } catch (const ImageError& e) {
            r.reason = e.what();  // names the file
          } catch (const cv::Exception& e) {
            r.reason = file.path + ": " + e.msg;
          } catch (const std::exception& e) {
            r.reason = file.path + ": " + e.what();
          }
        }
      };
      std::vector<std::thread> pool;
      const int n = static_cast<int>(std::min<std::size_t>(threads, end - begin));
      for (int w = 1; w < n; ++w) pool.emplace_back(work);
      work();
      for (auto& t : pool) t.join();

      ColmapDatabase::Transaction tx(db);
      db.SetSetting("sift", settings);
      for (std::size_t t = begin; t < end; ++t) {
        Extracted& r = results[t - begin];
        const auto& file = files[todo[t].first];
        if (!r.ok) {
          summary.bad_images.push_back({file.path, r.reason});
          continue;
        }
        int64_t id = todo[t].second;
        if (id == 0) {
          const int64_t cam =
              db.AddCamera(DefaultCamera(r.features.image_width, r.features.image_height));
          id = db.AddImage({0, file.name, cam});
        }
        std::vector<ColmapKeypoint> kps;
        kps.reserve(r.features.keypoints.size());
        for (const auto& k : r.features.keypoints) kps.push_back(ToColmapKeypoint(k));
        db.WriteKeypoints(id, kps);
        db.WriteDescriptors(id, detail::ToColmapDescriptors(r.features.descriptors));
        db.SetSetting(SourceKey(file.name), SourceStamp(file.path));
        found[todo[t].first] = ColmapImage{id, file.name, 0};
        ++summary.images_extracted;
      }
      tx.Commit();
      *done += static_cast<int64_t>(end - begin);
      Report(BatchStage::kExtracting, *done, total, sw.ElapsedMs() / 1000.0);
    }
    for (auto& f : found)
      if (f) usable.push_back(*f);
    summary.extract_seconds += sw.ElapsedMs() / 1000.0;
    return usable;
  }

  void Match(ColmapDatabase& db, const std::vector<std::pair<int64_t, int64_t>>& todo,
             int64_t previous, int64_t total) {
    const int threads = ResolveThreads(options.match.threads);
    Queue<VerifyJob> verify_queue(static_cast<std::size_t>(4 * threads + 16));
    Queue<PairOutput> write_queue(static_cast<std::size_t>(4 * threads + 16));
    std::mutex error_mu;
    std::exception_ptr error;
    auto fail = [&](std::exception_ptr e) {
      {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = e;
      }
      verify_queue.Close();
      write_queue.Close();
    };
    core::Stopwatch sw;
    std::atomic<int64_t> committed{0};
    Report(BatchStage::kMatching, previous, total, 0);

    std::vector<std::thread> verifiers;
    for (int w = 0; w < threads; ++w) {
      verifiers.emplace_back([&] {
        try {
          VerifyJob job;
          bool closed = false;
          for (;;) {
            if (!verify_queue.Pop(&job, std::chrono::milliseconds(200), &closed)) {
              if (closed) break;
              continue;
            }
            // Once cancelled, the pairs still queued are left for the next run (nothing of
            // them is written), so the run stops at the pair under way.
            if (cancel.load()) continue;
            if (!write_queue.Push(VerifyPair(job, options.match))) break;
          }
        } catch (...) {
          fail(std::current_exception());
        }
      });
    }
    std::thread writer([&] {
      try {
        ColmapDatabase wdb(options.database, ColmapDatabase::Mode::kReadWrite);
        std::vector<PairOutput> pending;
        core::Stopwatch since_commit;
        auto flush = [&] {
          if (pending.empty()) return;
          ColmapDatabase::Transaction tx(wdb);
          wdb.SetSetting("match", BatchMatchSettings(options.match));
          for (const auto& p : pending) {
            wdb.WriteMatches(p.id1, p.id2, p.matches);
            wdb.WriteTwoViewGeometry(p.id1, p.id2, p.geometry);
          }
          tx.Commit();
          committed += static_cast<int64_t>(pending.size());
          pending.clear();
          since_commit.Reset();
          Report(BatchStage::kMatching, previous + committed.load(), total,
                 sw.ElapsedMs() / 1000.0);
        };
        const auto wait = std::chrono::milliseconds(
            std::max<int64_t>(1, static_cast<int64_t>(options.commit_seconds * 250)));
        for (;;) {
          PairOutput out;
          bool closed = false;
          if (write_queue.Pop(&out, wait, &closed)) pending.push_back(std::move(out));
          if (static_cast<int>(pending.size()) >= options.commit_pairs ||
              since_commit.ElapsedMs() >= options.commit_seconds * 1000.0 || closed)
            flush();
          if (closed) break;
        }
        flush();
      } catch (...) {
        fail(std::current_exception());
      }
    });

    // Producer: group the pairs by their second image (the kNN corpus).
    try {
      std::vector<std::pair<int64_t, int64_t>> by_corpus = todo;
      std::stable_sort(by_corpus.begin(), by_corpus.end(),
                       [](const auto& x, const auto& y) { return x.second < y.second; });
      FeatureCache cache(db, static_cast<std::size_t>(options.cache_images));
      core::KnnParams params;
      params.k = std::min<int64_t>(options.match.k, 2);  // the filters read two neighbours
      params.metric = options.match.metric;
      params.threads = options.match.threads;
      const int64_t limit = options.max_pairs > 0 ? options.max_pairs : INT64_MAX;
      int64_t produced = 0;
      std::size_t g = 0;
      bool stop = false;
      while (g < by_corpus.size() && !stop) {
        const int64_t corpus_id = by_corpus[g].second;
        std::size_t g_end = g;
        while (g_end < by_corpus.size() && by_corpus[g_end].second == corpus_id) ++g_end;
        const auto corpus = cache.Get(corpus_id);
        std::size_t c = g;
        while (c < g_end && !stop) {
          if (cancel.load()) {
            stop = true;
            break;
          }
          // One batch: query images of this corpus image, concatenated under the limits.
          std::vector<std::shared_ptr<const ImageData>> members;
          std::vector<int64_t> member_ids, offsets;
          core::DescriptorMatrix concat;
          int64_t rows = 0;
          std::size_t c_end = c;
          while (c_end < g_end && produced + static_cast<int64_t>(members.size()) < limit &&
                 static_cast<int>(members.size()) < options.max_batch_images) {
            auto q = cache.Get(by_corpus[c_end].first);
            if (!members.empty() && rows + q->descriptors.rows() > options.max_batch_rows) break;
            offsets.push_back(rows);
            rows += q->descriptors.rows();
            if (concat.dim() == 0 && concat.rows() == 0) {
              concat = q->descriptors;
            } else {
              concat.Append(q->descriptors);
            }
            members.push_back(q);
            member_ids.push_back(by_corpus[c_end].first);
            ++c_end;
          }
          if (members.empty()) {
            stop = true;
            break;
          }
          core::KnnResult knn;
          const bool search = rows > 0 && corpus->descriptors.rows() > 0;
          if (search) knn = backend->Search(concat, corpus->descriptors, params);
          for (std::size_t m = 0; m < members.size(); ++m) {
            if (cancel.load()) {  // the members' mutual checks and pairs left for the next run
              stop = true;
              break;
            }
            VerifyJob job;
            job.id1 = member_ids[m];
            job.id2 = corpus_id;
            job.a = members[m];
            job.b = corpus;
            const int64_t n = members[m]->descriptors.rows();
            if (search && n > 0) {
              core::KnnResult part;
              part.rows = n;
              part.k = knn.k;
              part.distances.assign(knn.distances.begin() + offsets[m] * knn.k,
                                    knn.distances.begin() + (offsets[m] + n) * knn.k);
              part.indices.assign(knn.indices.begin() + offsets[m] * knn.k,
                                  knn.indices.begin() + (offsets[m] + n) * knn.k);
              core::KnnResult backward;
              if (options.match.filter.mutual) {
                core::KnnParams pb = params;
                pb.k = 1;
                backward = backend->Search(corpus->descriptors, members[m]->descriptors, pb);
              }
              job.matches = core::FilterMatches(
                  part, options.match.filter.mutual ? &backward : nullptr, options.match.metric,
                  options.match.filter);
            }
            if (!verify_queue.Push(std::move(job))) {
              stop = true;
              break;
            }
            ++produced;
          }
          if (produced >= limit) stop = true;
          c = c_end;
        }
        g = g_end;
      }
    } catch (...) {
      fail(std::current_exception());
    }
    verify_queue.Close();
    for (auto& t : verifiers) t.join();
    write_queue.Close();
    writer.join();
    summary.pairs_matched = committed.load();
    summary.match_seconds = sw.ElapsedMs() / 1000.0;
    summary.match_pairs_per_second =
        summary.match_seconds > 0 ? summary.pairs_matched / summary.match_seconds : 0;
    if (error) std::rethrow_exception(error);
  }

  // Under auto, once the pairs to match are known: the CPU where it is estimated to make all
  // their searches before a GPU would have started (a few small images; no CUDA call is made
  // then), else CreateKnnBackend's choice. The searches' work is the pairs of descriptors of all
  // the pairs, each image's count as stored.
  void ChooseBackend(ColmapDatabase& db, const std::vector<std::pair<int64_t, int64_t>>& todo) {
    std::unordered_map<int64_t, int64_t> rows;
    auto rows_of = [&](int64_t id) {
      auto it = rows.find(id);
      if (it == rows.end()) it = rows.emplace(id, db.NumKeypoints(id)).first;
      return it->second;
    };
    int64_t pairs = 0;  // of descriptors, over all the searches one way
    for (const auto& [a, b] : todo) pairs += rows_of(a) * rows_of(b);
    // As searches of the mean pair's size, one a pair (two with the mutual check).
    const int64_t n = std::max<int64_t>(static_cast<int64_t>(todo.size()), 1);
    SearchWork work;
    work.queries = (pairs + n - 1) / n;
    work.corpus = 1;
    work.dim = 128;
    work.float_descriptors = options.sift.root_sift;
    const int64_t searches = n * (options.match.filter.mutual ? 2 : 1);
    work.searches = static_cast<int>(std::min<int64_t>(searches, INT32_MAX));
    std::string note;
    backend = CreateKnnBackendFor(options.backend, work, &note);
    // The note is "backend: <description> (auto: <why>)"; the why is kept where it is the size.
    const auto at = note.rfind(" (auto: ");
    if (AutoTakesTheCpuFor(options.backend, work) && at != std::string::npos)
      backend_why = note.substr(at);
  }

  void Run() {
    try {
      ColmapDatabase db(options.database, ColmapDatabase::Mode::kReadWrite);
      const int64_t total_images =
          static_cast<int64_t>(scan.images.size() + query_scan.images.size());
      int64_t done = 0;
      Report(BatchStage::kExtracting, 0, total_images, 0);
      std::vector<ColmapImage> images = Extract(db, scan.images, &done, total_images);
      std::vector<ColmapImage> queries;
      if (options.pairs.mode == PairMode::kQuery && !cancel.load())
        queries = Extract(db, query_scan.images, &done, total_images);
      if (!cancel.load()) {
        Report(BatchStage::kPairing, 0, 0, 0);
        const auto pairs = detail::GeneratePairs(options.pairs, images, queries);
        const auto done_ids = db.GeometryPairIds();  // ascending
        std::vector<std::pair<int64_t, int64_t>> todo;
        for (const auto& p : pairs)
          if (!std::binary_search(done_ids.begin(), done_ids.end(),
                                  ColmapPairId(p.first, p.second)))
            todo.push_back(p);
        summary.pairs_total = static_cast<int64_t>(pairs.size());
        summary.pairs_previous = summary.pairs_total - static_cast<int64_t>(todo.size());
        if (!backend) ChooseBackend(db, todo);
        Match(db, todo, summary.pairs_previous, summary.pairs_total);

        std::vector<int64_t> job_ids;
        job_ids.reserve(pairs.size());
        for (const auto& p : pairs) job_ids.push_back(ColmapPairId(p.first, p.second));
        summary.pairs_verified = 0;
        int64_t in_db = 0;
        for (const auto& row : db.ReadPairRows()) {
          if (!std::binary_search(job_ids.begin(), job_ids.end(), row.pair_id)) continue;
          ++in_db;
          if (IsVerifiedConfig(row.config) && row.inliers > 0) ++summary.pairs_verified;
        }
        const bool complete = in_db == summary.pairs_total;
        summary.stage = complete ? BatchStage::kDone : BatchStage::kCancelled;
        if (complete) db.Checkpoint();
      } else {
        summary.stage = BatchStage::kCancelled;
      }
    } catch (const std::exception& e) {
      summary.stage = BatchStage::kFailed;
      summary.error = e.what();
    } catch (...) {
      summary.stage = BatchStage::kFailed;
      summary.error = "unknown error";
    }
    run_lock.Release();  // every connection of the run is closed by now
    // The threads its searches ran on; no backend where the run stopped before its pairs.
    summary.backend = backend ? backend->description() + backend_why : "none (no pair searched)";
    summary.total_seconds = clock.ElapsedMs() / 1000.0;
    Report(summary.stage, progress.done, progress.total, summary.match_seconds);
    std::lock_guard<std::mutex> lock(mu);
    running = false;
    finished_cv.notify_all();
  }
};

BatchController::BatchController() : impl_(std::make_unique<Impl>()) {}

BatchController::~BatchController() {
  Cancel();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void BatchController::SetProgressCallback(ProgressFn fn) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->progress_fn = std::move(fn);
}

void BatchController::Start(const BatchOptions& options) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->running) throw std::logic_error("BatchController: a batch is already running");
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  std::string why;
  if (!options.Check(&why)) throw BatchError("batch options: " + why);

  Impl& im = *impl_;
  im.options = options;
  im.summary = BatchSummary{};
  im.summary.database = options.database;
  im.summary.pairing = options.pairs.ToString();
  im.cancel = false;
  im.clock.Reset();

  // Names are relative to the folder; in query mode to the folder holding both folders, so that
  // one COLMAP image path serves both.
  fs::path root = Normal(options.folder);
  std::string exclude;
  if (options.pairs.mode == PairMode::kQuery) {
    std::error_code ec;
    if (!fs::is_directory(options.pairs.query_folder, ec))
      throw BatchError(options.pairs.query_folder + ": no such query folder");
    const fs::path q = Normal(options.pairs.query_folder);
    if (q == root) throw BatchError("the query folder is the image folder itself");
    root = CommonRoot(root, q);
    exclude = q.string();
  }
  auto describe_empty = [](const std::string& folder, const detail::FolderScan& s) {
    if (s.ignored.empty()) return folder + ": the folder holds no files";
    return folder + ": no images in the folder (" + std::to_string(s.ignored.size()) +
           " file(s), none with an image extension such as .jpg, .png, .tif)";
  };
  im.scan = detail::ScanFolder(options.folder, root.string(), exclude);
  if (im.scan.images.empty()) throw BatchError(describe_empty(options.folder, im.scan));
  im.query_scan = {};
  if (options.pairs.mode == PairMode::kQuery) {
    im.query_scan = detail::ScanFolder(options.pairs.query_folder, root.string());
    if (im.query_scan.images.empty())
      throw BatchError(describe_empty(options.pairs.query_folder, im.query_scan));
  }
  im.summary.images_found =
      static_cast<int64_t>(im.scan.images.size() + im.query_scan.images.size());
  im.summary.ignored_files = im.scan.ignored;
  im.summary.ignored_files.insert(im.summary.ignored_files.end(), im.query_scan.ignored.begin(),
                                  im.query_scan.ignored.end());
  if (options.pairs.mode == PairMode::kList) {
    // The list's lines and names are checked against the folder's images now, before any work
    // (names of images that turn out unreadable are refused again once they are known).
    std::vector<ColmapImage> named(im.scan.images.size());
    for (std::size_t i = 0; i < named.size(); ++i) {
      named[i].name = im.scan.images[i].name;
      named[i].image_id = static_cast<int64_t>(i) + 1;
    }
    detail::GeneratePairs(options.pairs, named, {});
  }

  // The database must be writable and hold features of the same extraction settings, and
  // matches made with the same matching settings: a rerun completes a run, it does not mix two.
  RunLock run_lock(options.database);
  try {
    ColmapDatabase db(options.database, ColmapDatabase::Mode::kReadWrite);
    const auto stored = db.GetSetting("sift");
    if (stored && *stored != options.sift.ToJson())
      throw BatchError(options.database +
                       ": holds features extracted with other settings (" + *stored +
                       "); use the same extraction options or a new database");
    const auto stored_match = db.GetSetting("match");
    if (stored_match && *stored_match != BatchMatchSettings(options.match))
      throw BatchError(options.database + ": holds matches made with other matching settings (" +
                       *stored_match + "); use the same matching options or a new database");
    // An image the run would reuse must still be the file it was extracted from: a file replaced
    // under the same name would keep its old features, camera size and matches.
    for (const auto* scan : {&im.scan, &im.query_scan}) {
      for (const auto& file : scan->images) {
        const auto stamp = db.GetSetting(SourceKey(file.name));
        if (!stamp) continue;
        const std::string now = SourceStamp(file.path);
        if (*stamp != now)
          throw BatchError(file.path + " changed since it was extracted into " +
                           options.database + " (then " + *stamp + ", now " + now +
                           "); restore it, or match the folder into a new database");
      }
    }
  } catch (const DatabaseError& e) {
    throw BatchError(e.what());
  }

  // A backend asked for by name is made now, so that a missing GPU stops the run before any
  // work; under auto it is chosen once the pairs are known (ChooseBackend).
  im.backend.reset();
  im.backend_why.clear();
  if (options.backend.kind == BackendKind::kAuto) {
    std::string why;
    if (!options.backend.Check(&why)) throw BatchError("backend options: " + why);
    im.summary.backend.clear();
  } else {
    try {
      im.backend = CreateKnnBackend(options.backend);
    } catch (const std::exception& e) {
      throw BatchError(e.what());
    }
    im.summary.backend = im.backend->description();
  }

  im.run_lock = std::move(run_lock);
  {
    std::lock_guard<std::mutex> lock(im.mu);
    im.running = true;
    im.progress = BatchProgress{};
    im.progress.stage = BatchStage::kScanning;
  }
  try {
    im.thread = std::thread([&im] { im.Run(); });
  } catch (...) {
    im.run_lock.Release();
    std::lock_guard<std::mutex> lock(im.mu);
    im.running = false;
    throw;
  }
}

void BatchController::Cancel() { impl_->cancel = true; }

void BatchController::Wait() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->finished_cv.wait(lock, [&] { return !impl_->running; });
}

bool BatchController::WaitFor(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->finished_cv.wait_for(lock, timeout, [&] { return !impl_->running; });
}

bool BatchController::Running() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->running;
}

BatchProgress BatchController::Progress() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->progress;
}

BatchSummary BatchController::Summary() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->running) {
    BatchSummary s;
    s.stage = impl_->progress.stage;
    return s;
  }
  return impl_->summary;
}

}  // namespace fm::matcher
