#include "fm/ui/logo_controller.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QtConcurrent/QtConcurrentRun>
#include <atomic>
#include <map>
#include <mutex>
#include <opencv2/imgproc.hpp>

#include "fm/matcher/image.h"

namespace fm::ui {

struct LogoController::State {
  std::unique_ptr<matcher::LogoLibrary> library;
  std::map<int64_t, QImage> logo_images;  // by logo id, at the stored size
  std::mutex backend_mutex;               // guards the two below (set from the GUI thread)
  matcher::BackendOptions backend;
  bool backend_dirty = true;
  // Under auto (worker thread only): nothing chosen yet; a CPU backend chosen for queries that
  // end before a GPU would have started, each query then weighed again; or the choice settled
  // (the GPU, or the CPU where none can be used) and kept.
  enum class AutoChoice { kNone, kCpuForSmall, kSettled } auto_choice = AutoChoice::kNone;
  std::string backend_note;  // how the library's backend was chosen (worker thread only)
  std::atomic<bool> cancel{false};
};

namespace {

QString Q(const std::string& s) { return QString::fromStdString(s); }

QImage ToQImage(const cv::Mat& m) {
  cv::Mat bgr;
  if (m.channels() == 1) {
    cv::cvtColor(m, bgr, cv::COLOR_GRAY2BGR);
  } else if (m.channels() == 4) {
    cv::cvtColor(m, bgr, cv::COLOR_BGRA2BGR);
  } else {
    bgr = m;
  }
  QImage view(bgr.data, bgr.cols, bgr.rows, static_cast<qsizetype>(bgr.step),
              QImage::Format_BGR888);
  return view.convertToFormat(QImage::Format_RGB32);
}

// The logo as stored: its source image at the stored size, or, when the source is gone, its
// keypoints on a blank canvas.
QImage LogoImage(const matcher::LogoLibrary& lib, const matcher::LogoInfo& info) {
  const cv::Size size(std::max(1, info.width), std::max(1, info.height));
  try {
    if (!info.source.empty() && QFileInfo::exists(Q(info.source))) {
      cv::Mat img = matcher::LoadColorImage(info.source);
      if (img.size() != size) cv::resize(img, img, size, 0, 0, cv::INTER_AREA);
      return ToQImage(img);
    }
  } catch (const std::exception&) {
    // fall through to the drawing of the keypoints
  }
  cv::Mat canvas(size, CV_8UC3, cv::Scalar(60, 60, 60));
  for (const auto& k : lib.LogoFeatures(info.id).keypoints)
    cv::circle(canvas, cv::Point2f(k.x, k.y), std::max(1, static_cast<int>(k.size / 2)),
               cv::Scalar(40, 200, 255), 1, cv::LINE_AA);
  return ToQImage(canvas);
}

QString Summary(const matcher::LogoLibrary& lib) {
  const auto& s = lib.settings();
  return QObject::tr("%1 logos, %2 descriptors  ·  SIFT contrast %3%4, logos at most %5 px")
      .arg(lib.size())
      .arg(lib.num_descriptors())
      .arg(s.sift.contrast_threshold)
      .arg(s.sift.root_sift ? QObject::tr(", RootSIFT") : QString())
      .arg(s.max_logo_side);
}

// Runs fn; returns an empty string or "title\nmessage".
template <typename Fn>
QString Guard(Fn&& fn) {
  try {
    fn();
    return {};
  } catch (const matcher::LogoLibraryError& e) {
    return QObject::tr("Logo library") + '\n' + Q(e.what());
  } catch (const matcher::ImageError& e) {
    return QObject::tr("Cannot use image") + '\n' + Q(e.what());
  } catch (const cv::Exception& e) {
    return QObject::tr("OpenCV error") + '\n' + Q(e.what());
  } catch (const std::bad_alloc&) {
    return QObject::tr("Out of memory") + '\n' + QObject::tr("There was not enough memory.");
  } catch (const std::exception& e) {
    return QObject::tr("Logo library") + '\n' + Q(e.what());
  } catch (...) {
    return QObject::tr("Logo library") + '\n' + QObject::tr("An unknown error occurred.");
  }
}

}  // namespace

LogoController::LogoController(QObject* parent)
    : QObject(parent), state_(std::make_shared<State>()) {
  qRegisterMetaType<std::shared_ptr<const SceneResult>>();
  qRegisterMetaType<QList<LogoEntry>>();
  pool_.setMaxThreadCount(1);  // one operation at a time, in order
}

LogoController::~LogoController() {
  state_->cancel = true;
  pool_.waitForDone();
}

void LogoController::Post(std::function<void()> fn) {
  QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection);
}

template <typename Fn>
void LogoController::Submit(Fn&& fn) {
  if (outstanding_++ == 0) emit busyChanged(true);
  pool_.start([this, state = state_, fn = std::forward<Fn>(fn)]() mutable {
    const QString error = Guard([&] { fn(*state); });
    Post([this, error] {
      if (!error.isEmpty()) emit failed(error.section('\n', 0, 0), error.section('\n', 1));
      if (--outstanding_ == 0) emit busyChanged(false);
    });
  });
}

void LogoController::SetBackend(const matcher::BackendOptions& options) {
  std::lock_guard lock(state_->backend_mutex);
  const auto& b = state_->backend;
  if (b.kind == options.kind && b.device == options.device &&
      b.select_algo == options.select_algo && b.precision == options.precision &&
      b.memory_fraction == options.memory_fraction)
    return;
  state_->backend = options;
  state_->backend_dirty = true;
}

void LogoController::OpenLibrary(const QString& path, bool create) {
  Submit([this, path, create](State& s) {
    Post([this, path] { emit progress(tr("Opening %1").arg(QFileInfo(path).fileName())); });
    // A logo whose stored features are damaged is left out, so that the rest of the library
    // opens; the user is told which, and how to remove it.
    auto lib = std::make_unique<matcher::LogoLibrary>(
        create ? matcher::LogoLibrary::Create(path.toStdString())
               : matcher::LogoLibrary::Open(path.toStdString(), true));
    const auto damaged = lib->Damaged();
    s.library = std::move(lib);
    if (!damaged.empty()) {
      QString list;
      for (const auto& [name, why] : damaged)
        list += QString("\n• %1").arg(QString::fromStdString(why));
      const QString message =
          tr("%n logo(s) of %1 could not be read and were left out; the others can be used.%2\n\n"
             "Remove a damaged logo with: featmatch logos remove LIBRARY NAME",
             nullptr, static_cast<int>(damaged.size()))
              .arg(QFileInfo(path).fileName(), list);
      Post([this, message] { emit failed(tr("Damaged logos"), message); });
    }
    {
      std::lock_guard lock(s.backend_mutex);
      s.backend_dirty = true;
    }
    s.logo_images.clear();
    QList<LogoEntry> entries;
    for (const auto& info : s.library->List()) {
      QImage full = LogoImage(*s.library, info);
      s.logo_images[info.id] = full;
      entries.push_back(
          {info, full.scaled(128, 128, Qt::KeepAspectRatio, Qt::SmoothTransformation)});
    }
    const QString summary = Summary(*s.library);
    Post([this, path, entries, summary] {
      library_path_ = path;
      emit libraryChanged(path, entries, summary);
    });
  });
}

void LogoController::AddLogos(const QStringList& files) {
  Submit([this, files](State& s) {
    if (!s.library) throw matcher::LogoLibraryError("Open or create a logo library first.");
    QStringList problems;
    for (const QString& file : files) {
      Post([this, file] { emit progress(tr("Adding %1").arg(QFileInfo(file).fileName())); });
      const QString error = Guard([&] {
        const auto info = s.library->AddFile(file.toStdString());
        s.logo_images[info.id] = LogoImage(*s.library, info);
      });
      if (!error.isEmpty()) problems << QFileInfo(file).fileName() + ": " + error.section('\n', 1);
    }
    QList<LogoEntry> entries;
    for (const auto& info : s.library->List()) {
      if (!s.logo_images.count(info.id)) s.logo_images[info.id] = LogoImage(*s.library, info);
      entries.push_back({info, s.logo_images[info.id].scaled(128, 128, Qt::KeepAspectRatio,
                                                             Qt::SmoothTransformation)});
    }
    const QString summary = Summary(*s.library);
    const QString path = Q(s.library->path());
    Post([this, path, entries, summary] { emit libraryChanged(path, entries, summary); });
    if (!problems.isEmpty())
      throw matcher::LogoLibraryError(
          tr("%n logo(s) could not be added:\n", "", static_cast<int>(problems.size()))
              .toStdString() +
          problems.join('\n').toStdString());
  });
}

void LogoController::RemoveLogos(const QStringList& names) {
  Submit([this, names](State& s) {
    if (!s.library) throw matcher::LogoLibraryError("Open or create a logo library first.");
    for (const QString& name : names) s.library->Remove(name.toStdString());
    QList<LogoEntry> entries;
    for (const auto& info : s.library->List())
      entries.push_back({info, s.logo_images[info.id].scaled(128, 128, Qt::KeepAspectRatio,
                                                             Qt::SmoothTransformation)});
    const QString summary = Summary(*s.library);
    const QString path = Q(s.library->path());
    Post([this, path, entries, summary] { emit libraryChanged(path, entries, summary); });
  });
}

void LogoController::CancelQuery() { state_->cancel = true; }

void LogoController::Query(const QStringList& scenes, const matcher::LogoQueryOptions& options) {
  state_->cancel = false;
  Submit([this, scenes, options](State& s) {
    if (!s.library) throw matcher::LogoLibraryError("Open or create a logo library first.");
    if (s.library->size() == 0)
      throw matcher::LogoLibraryError("The library has no logos yet: add some first.");
    std::string why;
    if (!options.Check(&why)) throw std::invalid_argument("Query settings: " + why);
    {
      std::lock_guard lock(s.backend_mutex);
      const bool is_auto = s.backend.kind == matcher::BackendKind::kAuto;
      if (s.backend_dirty) {
        s.backend_note.clear();
        s.library->SetBackend(is_auto ? nullptr
                                      : matcher::CreateKnnBackend(s.backend, &s.backend_note));
        s.auto_choice = State::AutoChoice::kNone;
      }
      if (is_auto && s.auto_choice != State::AutoChoice::kSettled) {
        // Under auto the query's backend is chosen at its first scene, by that scene's features
        // times the scenes asked for (as `featmatch logos query` does): the app stays on the
        // CPU while a query would end before a GPU had started, and once one would not, brings
        // the GPU up and keeps it for every query after it, small ones too.
        const int n = std::max<int>(1, static_cast<int>(scenes.size()));
        s.library->SetBackendFactory(
            [&s, n, options = s.backend](const matcher::SearchWork& first) {
              matcher::SearchWork all = first;
              all.searches = n;
              const bool small = matcher::AutoTakesTheCpuFor(options, all);
              if (small && s.auto_choice == State::AutoChoice::kCpuForSmall)
                return std::unique_ptr<core::KnnBackend>();  // keep it
              s.auto_choice =
                  small ? State::AutoChoice::kCpuForSmall : State::AutoChoice::kSettled;
              return matcher::CreateKnnBackendFor(options, all, &s.backend_note);
            });
      }
      s.backend_dirty = false;
    }
    const int total = static_cast<int>(scenes.size());
    int done = 0, tried = 0;
    QStringList problems;
    for (const QString& path : scenes) {
      if (s.cancel) break;
      ++tried;
      Post([this, path, tried, total] {
        emit progress(
            tr("Querying %1 (%2 of %3)").arg(QFileInfo(path).fileName()).arg(tried).arg(total));
      });
      auto r = std::make_shared<SceneResult>();
      r->path = path;
      bool stopped = false;  // by the cancel, midway through the scene
      const QString error = Guard([&] {
        const cv::Mat scene = matcher::LoadColorImage(path.toStdString());
        try {
          r->result = s.library->QueryImage(scene, options, &s.cancel);
          r->backend_note = s.backend_note;
        } catch (const core::Cancelled&) {
          stopped = true;
          return;
        }
        r->scene = ToQImage(scene);
        for (const auto& d : r->result.detections) {
          const auto it = s.logo_images.find(d.logo_id);
          const QImage logo = it != s.logo_images.end() ? it->second : QImage();
          r->logos.push_back(logo);
          cv::Mat region;
          const cv::Size size =
              logo.isNull() ? cv::Size(128, 128) : cv::Size(logo.width(), logo.height());
          cv::warpPerspective(scene, region, cv::Mat(d.homography), size,
                              cv::INTER_LINEAR | cv::WARP_INVERSE_MAP);
          r->regions.push_back(ToQImage(region));
        }
      });
      if (stopped) {  // a scene stopped midway was not queried
        --tried;
        break;
      }
      if (!error.isEmpty()) {
        problems << QFileInfo(path).fileName() + ": " + error.section('\n', 1);
        continue;
      }
      const int index = done++;
      Post([this, index, total, r] { emit sceneDone(index, total, r); });
    }
    // A cancel that came once the last scene had passed its last check stopped nothing: the
    // query is complete.
    const bool cancelled = tried < total;
    Post([this, done, tried, total, cancelled] {
      emit queryFinished(done, tried, total, cancelled);
    });
    if (!problems.isEmpty())
      throw matcher::LogoLibraryError(
          tr("%n scene(s) could not be queried:\n", "", static_cast<int>(problems.size()))
              .toStdString() +
          problems.join('\n').toStdString());
  });
}

}  // namespace fm::ui
