#include "fm/ui/batch_runner.h"

#include <QMetaObject>
#include <QtConcurrent/QtConcurrentRun>
#include <opencv2/core.hpp>

#include "fm/matcher/colmap_database.h"

namespace fm::ui {

namespace {

template <typename Fn>
bool Guard(Fn&& fn, QString* title, QString* message) {
  try {
    fn();
    return true;
  } catch (const matcher::BatchError& e) {
    *title = QObject::tr("Cannot run the batch");
    *message = QString::fromStdString(e.what());
  } catch (const cv::Exception& e) {
    *title = QObject::tr("OpenCV error");
    *message = QString::fromStdString(e.what());
  } catch (const std::bad_alloc&) {
    *title = QObject::tr("Out of memory");
    *message = QObject::tr("There was not enough memory for the batch.");
  } catch (const std::exception& e) {
    *title = QObject::tr("Batch matching");
    *message = QString::fromStdString(e.what());
  } catch (...) {
    *title = QObject::tr("Batch matching");
    *message = QObject::tr("An unknown error occurred.");
  }
  return false;
}

}  // namespace

BatchRunner::BatchRunner(QObject* parent)
    : QObject(parent), controller_(std::make_shared<matcher::BatchController>()) {
  qRegisterMetaType<matcher::BatchProgress>();
  qRegisterMetaType<matcher::BatchSummary>();
  qRegisterMetaType<std::shared_ptr<const std::vector<matcher::PairResult>>>();
  controller_->SetProgressCallback([this](const matcher::BatchProgress& p) {
    QMetaObject::invokeMethod(
        this, [this, p] { emit progress(p); }, Qt::QueuedConnection);
  });
  connect(&watcher_, &QFutureWatcher<Work>::finished, this, &BatchRunner::OnDone);
  connect(&pairs_watcher_, &QFutureWatcher<Work>::finished, this, [this] {
    const Work w = pairs_watcher_.result();
    if (w.pairs) {
      emit pairsLoaded(w.database, w.pairs);
    } else {
      emit loadFailed(w.database, w.error_title, w.error);
    }
  });
}

BatchRunner::~BatchRunner() {
  pending_.reset();
  controller_->Cancel();
  watcher_.waitForFinished();
  pairs_watcher_.waitForFinished();
}

bool BatchRunner::running() const { return watcher_.isRunning(); }

void BatchRunner::Start(const matcher::BatchOptions& options) {
  if (running()) {
    pending_ = options;
    controller_->Cancel();
    return;
  }
  Launch(options);
}

void BatchRunner::Cancel() {
  pending_.reset();
  if (cancel_requested_) *cancel_requested_ = true;
  controller_->Cancel();
}

void BatchRunner::Launch(const matcher::BatchOptions& options) {
  cancel_requested_ = std::make_shared<std::atomic<bool>>(false);
  emit started(QString::fromStdString(options.database));
  watcher_.setFuture(QtConcurrent::run([c = controller_, options,
                                        cancel = cancel_requested_]() -> Work {
    Work w;
    w.database = QString::fromStdString(options.database);
    Guard(
        [&] {
          c->Start(options);
          // A cancel asked for before Start was cleared by it: pass it on.
          if (*cancel) c->Cancel();
          c->Wait();
          w.summary = c->Summary();
          // The pair table of the database as it now is (also after a cancel or a failure, the
          // committed pairs are there).
          w.pairs = std::make_shared<const std::vector<matcher::PairResult>>(
              matcher::ReadPairResults(options.database));
        },
        &w.error_title, &w.error);
    return w;
  }));
}

void BatchRunner::OnDone() {
  const Work w = watcher_.result();
  if (pending_) {
    const matcher::BatchOptions next = *pending_;
    pending_.reset();
    Launch(next);
    return;
  }
  if (w.summary) emit finished(*w.summary);
  if (w.pairs) emit pairsLoaded(w.database, w.pairs);
  if (!w.error.isEmpty()) emit failed(w.error_title, w.error);
}

void BatchRunner::LoadPairs(const QString& database) {
  pairs_watcher_.setFuture(QtConcurrent::run([database]() -> Work {
    Work w;
    w.database = database;
    Guard(
        [&] {
          w.pairs = std::make_shared<const std::vector<matcher::PairResult>>(
              matcher::ReadPairResults(database.toStdString()));
        },
        &w.error_title, &w.error);
    return w;
  }));
}

}  // namespace fm::ui
