// matcher::BatchController driven from the GUI: Start and Wait run on a worker thread, the
// controller's progress callbacks become signals on the GUI thread, and every failure (including
// BatchError from Start) becomes failed(). A Start while a batch runs cancels it and starts the
// new one once it has stopped (its committed pairs stay in its database).
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "fm/matcher/batch.h"

namespace fm::ui {

class BatchRunner : public QObject {
  Q_OBJECT

 public:
  explicit BatchRunner(QObject* parent = nullptr);
  ~BatchRunner() override;  // cancels and waits

  void Start(const matcher::BatchOptions& options);
  void Cancel();
  bool running() const;
  // Reads the pairs of a database (off the GUI thread); results arrive through pairsLoaded.
  void LoadPairs(const QString& database);

 signals:
  void started(const QString& database);
  void progress(const fm::matcher::BatchProgress& progress);
  void finished(const fm::matcher::BatchSummary& summary);
  void pairsLoaded(const QString& database,
                   std::shared_ptr<const std::vector<fm::matcher::PairResult>> pairs);
  void failed(const QString& title, const QString& message);
  // A database that LoadPairs could not read (the batch itself did not fail).
  void loadFailed(const QString& database, const QString& title, const QString& message);

 private:
  struct Work {
    std::optional<matcher::BatchSummary> summary;
    std::shared_ptr<const std::vector<matcher::PairResult>> pairs;
    QString database;
    QString error_title, error;
  };
  void Launch(const matcher::BatchOptions& options);
  void OnDone();

  std::shared_ptr<matcher::BatchController> controller_;
  // Set by Cancel for the batch launched last. BatchController::Start clears the controller's own
  // flag, and Start runs on the worker: a Cancel made before it got there would be lost.
  std::shared_ptr<std::atomic<bool>> cancel_requested_;
  QFutureWatcher<Work> watcher_;
  QFutureWatcher<Work> pairs_watcher_;
  std::optional<matcher::BatchOptions> pending_;
};

}  // namespace fm::ui

Q_DECLARE_METATYPE(fm::matcher::BatchProgress)
Q_DECLARE_METATYPE(fm::matcher::BatchSummary)
Q_DECLARE_METATYPE(std::shared_ptr<const std::vector<fm::matcher::PairResult>>)
