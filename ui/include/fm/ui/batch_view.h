// The batch view: a folder, a pairing mode and a database; run with progress, pairs/s and time
// left; cancel and resume; a table of the pairs (matches, inliers, model) in the database.
#pragma once

#include <QString>
#include <QWidget>
#include <memory>
#include <vector>

#include "fm/matcher/batch.h"

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace fm::ui {

class BatchRunner;
class OptionsPanel;
class PairTableModel;

class BatchView : public QWidget {
  Q_OBJECT

 public:
  // Extraction, matching and backend settings come from `options` (the match view's panel).
  explicit BatchView(const OptionsPanel* options, QWidget* parent = nullptr);

  void SetFolder(const QString& folder);
  void SetDatabase(const QString& database);
  void SetPairing(const matcher::PairingOptions& pairing);
  // The job as the form describes it (may be invalid: Check says why).
  matcher::BatchOptions options() const;
  // Starts (or resumes) the job of the form.
  void Run();
  // Stops the running job once the images or pairs in flight are done (they cannot be
  // interrupted); the stage line says so until it has stopped. What was committed is kept.
  void Cancel();
  // Shows the pairs of an existing database.
  void ShowDatabase(const QString& database);

  BatchRunner* runner() const { return runner_; }
  QTableView* table() const { return table_; }
  int pairRows() const;
  bool running() const;
  const matcher::BatchSummary& lastSummary() const { return summary_; }

 signals:
  void batchFinished(const fm::matcher::BatchSummary& summary);
  void pairsShown(int rows);
  void errorShown(const QString& title, const QString& text);

 private:
  void Error(const QString& title, const QString& text);
  void UpdateModeFields();
  void UpdateActions();
  void ShowSummary(const matcher::BatchSummary& s);

  const OptionsPanel* options_;
  BatchRunner* runner_;
  PairTableModel* model_;
  QLineEdit* folder_;
  QLineEdit* database_;
  QComboBox* mode_;
  QSpinBox* overlap_;
  QLineEdit* query_folder_;
  QLineEdit* list_file_;
  QWidget* overlap_row_;
  QWidget* query_row_;
  QWidget* list_row_;
  QPushButton* run_;
  QPushButton* cancel_;
  QAction* cancel_key_;  // Esc
  QPushButton* open_db_;
  QProgressBar* progress_;
  QLabel* stage_;
  QLabel* rate_;
  QLabel* eta_;
  QLabel* summary_label_;
  QLabel* db_label_;
  QLabel* problem_;
  QTableView* table_;
  matcher::BatchSummary summary_;
  bool cancelling_ = false;  // Cancel was pressed and the job has not stopped yet
};

}  // namespace fm::ui
