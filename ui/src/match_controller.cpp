#include "fm/ui/match_controller.h"

#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>
#include <mutex>
#include <new>
#include <opencv2/core.hpp>

#include "fm/core/timer.h"
#include "fm/matcher/image.h"

namespace fm::ui {

// The kNN backend, kept between runs while its options stay the same (a GPU backend is costly to
// create). Used by one match worker at a time.
struct MatchController::BackendSlot {
  std::mutex mutex;
  std::string key;
  std::unique_ptr<core::KnnBackend> backend;
  std::string note;
  // `backend` is the CPU that `auto` took for a search too small to wait for a GPU's start: the
  // first larger search makes the backend again (the GPU where there is one), which then stays.
  bool cpu_for_small = false;
};

namespace {

std::string BackendKey(const matcher::BackendOptions& o) {
  return std::string(matcher::BackendKindName(o.kind)) + '|' + std::to_string(o.device) + '|' +
         o.select_algo + '|' + o.precision + '|' + std::to_string(o.memory_fraction);
}

QString Q(const std::string& s) { return QString::fromStdString(s); }

// Runs `fn`, turning every exception into a title and a message.
template <typename Fn>
bool Guard(Fn&& fn, QString* title, QString* message) {
  try {
    fn();
    return true;
  } catch (const core::Cancelled&) {
    *message = QObject::tr("cancelled");  // the controller drops it: a cancel is not a failure
  } catch (const matcher::ImageError& e) {
    *title = QObject::tr("Cannot use image");
    *message = Q(e.what());
  } catch (const cv::Exception& e) {
    *title = QObject::tr("OpenCV error");
    *message = Q(e.what());
  } catch (const std::bad_alloc&) {
    *title = QObject::tr("Out of memory");
    *message = QObject::tr(
        "There was not enough memory for this work. Try a smaller "
        "\"max image size\" or fewer features.");
  } catch (const std::invalid_argument& e) {
    *title = QObject::tr("Invalid input");
    *message = Q(e.what());
  } catch (const std::exception& e) {
    *title = QObject::tr("Matching failed");
    *message = Q(e.what());
  } catch (...) {
    *title = QObject::tr("Matching failed");
    *message = QObject::tr("An unknown error occurred.");
  }
  return false;
}

QImage ToQImage(const cv::Mat& bgr) {
  QImage view(bgr.data, bgr.cols, bgr.rows, static_cast<qsizetype>(bgr.step),
              QImage::Format_BGR888);
  return view.convertToFormat(QImage::Format_RGB32);  // deep copy
}

}  // namespace

MatchController::MatchController(QObject* parent)
    : QObject(parent),
      cache_(std::make_shared<FeatureCache>()),
      backend_(std::make_shared<BackendSlot>()) {
  qRegisterMetaType<std::shared_ptr<const MatchOutcome>>();
  connect(&match_watcher_, &QFutureWatcher<Work>::finished, this, &MatchController::OnMatchDone);
  for (int side = 0; side < 2; ++side) {
    connect(&image_watchers_[side], &QFutureWatcher<ImageWork>::finished, this, [this, side] {
      const ImageWork w = image_watchers_[side].result();
      if (w.side != side) return;
      if (w.error.isEmpty()) {
        emit imageLoaded(side, w.path, w.image);
      } else {
        emit imageFailed(side, w.path, w.error);
      }
    });
  }
}

MatchController::~MatchController() {
  match_watcher_.waitForFinished();
  for (auto& w : image_watchers_) w.waitForFinished();
}

bool MatchController::busy() const { return match_watcher_.isRunning(); }

void MatchController::LoadImage(int side, const QString& path) {
  if (side < 0 || side > 1) return;
  // A newer load for the same pane replaces the older; QFutureWatcher reports the newest only.
  auto& watcher = image_watchers_[side];
  watcher.setFuture(QtConcurrent::run([cache = cache_, side, path]() -> ImageWork {
    ImageWork w;
    w.side = side;
    w.path = path;
    QString title;
    Guard([&] { w.image = ToQImage(*cache->Color(path).mat); }, &title, &w.error);
    return w;
  }));
}

void MatchController::Run(const MatchRequest& request) {
  if (busy()) {
    pending_ = request;
    drop_current_ = true;
    *cancel_ = true;
    emit queued();
    return;
  }
  Start(request);
}

void MatchController::Cancel() {
  const bool had_work = busy() || pending_.has_value();
  pending_.reset();
  if (busy()) {
    drop_current_ = true;
    *cancel_ = true;
  }
  if (had_work && !busy()) emit cancelled();
}

void MatchController::Start(const MatchRequest& request) {
  drop_current_ = false;
  emit started();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  match_watcher_.setFuture(
      QtConcurrent::run([this, request, cancel = cancel_] { return Execute(request, *cancel); }));
}

void MatchController::OnMatchDone() {
  const Work work = match_watcher_.result();
  const bool dropped = drop_current_;
  drop_current_ = false;
  if (pending_) {
    const MatchRequest next = *pending_;
    pending_.reset();
    Start(next);
    return;
  }
  if (dropped) {
    emit cancelled();
  } else if (work.outcome) {
    emit finished(work.outcome);
  } else {
    emit failed(work.error_title, work.error);
  }
}

MatchController::Work MatchController::Execute(const MatchRequest& request,
                                               const std::atomic<bool>& cancel) {
  Work work;
  auto outcome = std::make_shared<MatchOutcome>();
  outcome->request = request;
  const bool ok = Guard(
      [&] {
        core::Stopwatch total;
        std::string why;
        if (request.path_a.isEmpty() || request.path_b.isEmpty())
          throw std::invalid_argument("Open two images first (File > Open Image A / B).");
        if (!request.sift.Check(&why)) throw std::invalid_argument("SIFT settings: " + why);
        if (!request.match.Check(&why)) throw std::invalid_argument("Matching settings: " + why);
        if (!request.backend.Check(&why)) throw std::invalid_argument("Backend settings: " + why);

        const QString name_a = QFileInfo(request.path_a).fileName();
        const QString name_b = QFileInfo(request.path_b).fileName();
        emit progress(tr("Loading %1").arg(name_a));
        const auto color_a = cache_->Color(request.path_a);
        if (cancel) return;
        emit progress(tr("Extracting features of %1").arg(name_a));
        const auto fa = cache_->Features(request.path_a, request.sift);
        if (cancel) return;
        emit progress(tr("Loading %1").arg(name_b));
        const auto color_b = cache_->Color(request.path_b);
        if (cancel) return;
        emit progress(tr("Extracting features of %1").arg(name_b));
        const auto fb = cache_->Features(request.path_b, request.sift);

        if (cancel) return;
        emit progress(tr("Matching %1 features against %2")
                          .arg(fa.features->size())
                          .arg(fb.features->size()));
        {
          std::lock_guard lock(backend_->mutex);
          const std::string key = BackendKey(request.backend);
          // Under auto the app stays on the CPU while each match's search would end before a
          // GPU had started (as `featmatch match` does); once one would not, the GPU is brought
          // up and kept for every match after it, small ones too.
          const matcher::SearchWork search =
              matcher::SearchWorkOf(fa.features->descriptors, fb.features->descriptors,
                                    request.match.filter.mutual ? 2 : 1);
          const bool small = matcher::AutoTakesTheCpuFor(request.backend, search);
          if (!backend_->backend || backend_->key != key || backend_->cpu_for_small) {
            backend_->backend.reset();
            backend_->backend =
                matcher::CreateKnnBackendFor(request.backend, search, &backend_->note);
            backend_->key = key;
            backend_->cpu_for_small = small;
          }
          outcome->result = matcher::MatchFeatures(*fa.features, *fb.features, request.match,
                                                   *backend_->backend, nullptr, &cancel);
          outcome->backend_note = backend_->note;
        }
        outcome->color_a = color_a.mat;
        outcome->color_b = color_b.mat;
        outcome->load_ms_a = color_a.load_ms;
        outcome->load_ms_b = color_b.load_ms;
        outcome->features_a = fa.features;
        outcome->features_b = fb.features;
        outcome->extract_ms_a = fa.extract_ms;
        outcome->extract_ms_b = fb.extract_ms;
        outcome->features_cached_a = fa.cached;
        outcome->features_cached_b = fb.cached;
        outcome->total_ms = total.ElapsedMs();
      },
      &work.error_title, &work.error);
  if (ok && !cancel) work.outcome = outcome;
  if (ok && cancel) work.error = tr("cancelled");
  return work;
}

}  // namespace fm::ui
