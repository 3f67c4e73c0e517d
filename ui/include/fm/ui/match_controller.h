// Runs image loading, feature extraction and matching off the GUI thread and reports through
// signals. One match runs at a time: a request made while one runs is queued (a newer one
// replaces an older queued one) and the running one is cancelled: it stops at the next stage
// boundary (load, extract A, extract B, match) or within the match (its kNN searches and guided
// pass look at the cancel as they go; a USAC run finishes first) and its result is dropped.
// Nothing thrown in a worker reaches the event loop: every failure becomes failed().
#pragma once

#include <QFutureWatcher>
#include <QImage>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "fm/matcher/backend.h"
#include "fm/matcher/pipeline.h"
#include "fm/matcher/sift.h"
#include "fm/ui/feature_cache.h"

namespace fm::ui {

struct MatchRequest {
  QString path_a, path_b;
  matcher::SiftOptions sift;
  matcher::MatchOptions match;
  matcher::BackendOptions backend;
};

// Everything a finished match produced, shared read-only with the views.
struct MatchOutcome {
  MatchRequest request;
  std::shared_ptr<const cv::Mat> color_a, color_b;
  std::shared_ptr<const core::Features> features_a, features_b;
  matcher::MatchResult result;
  std::string backend_note;  // which kNN backend ran and why
  double load_ms_a = 0, load_ms_b = 0;
  double extract_ms_a = 0, extract_ms_b = 0;
  bool features_cached_a = false, features_cached_b = false;
  double total_ms = 0;
};

class MatchController : public QObject {
  Q_OBJECT

 public:
  explicit MatchController(QObject* parent = nullptr);
  ~MatchController() override;  // waits for running workers

  // Starts (or queues) a match. Invalid options are reported through failed().
  void Run(const MatchRequest& request);
  // Drops a queued request and the result of the running one.
  void Cancel();
  // Loads the colour image of `path` for display in pane `side` (0 = A, 1 = B).
  void LoadImage(int side, const QString& path);

  bool busy() const;
  FeatureCache& cache() { return *cache_; }

 signals:
  void started();
  void progress(const QString& stage);  // may be emitted from a worker thread (queued)
  void queued();
  void finished(std::shared_ptr<const fm::ui::MatchOutcome> outcome);
  void cancelled();
  void failed(const QString& title, const QString& message);
  void imageLoaded(int side, const QString& path, const QImage& image);
  void imageFailed(int side, const QString& path, const QString& message);

 private:
  struct Work {
    std::shared_ptr<const MatchOutcome> outcome;
    QString error_title, error;
  };
  struct ImageWork {
    int side = 0;
    QString path;
    QImage image;
    QString error;
  };
  struct BackendSlot;

  void Start(const MatchRequest& request);
  void OnMatchDone();
  Work Execute(const MatchRequest& request, const std::atomic<bool>& cancel);

  std::shared_ptr<FeatureCache> cache_;  // shared with image loads that may outlive a watcher
  std::shared_ptr<BackendSlot> backend_;
  QFutureWatcher<Work> match_watcher_;
  QFutureWatcher<ImageWork> image_watchers_[2];
  int image_generation_[2] = {0, 0};
  std::optional<MatchRequest> pending_;
  bool drop_current_ = false;
  std::shared_ptr<std::atomic<bool>> cancel_;  // of the running match
};

}  // namespace fm::ui

Q_DECLARE_METATYPE(std::shared_ptr<const fm::ui::MatchOutcome>)
