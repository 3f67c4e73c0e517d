// The match view: two image panes with keypoints and matches, the parameter panel and a status
// area with counts, per-stage times and the match under the mouse.
#pragma once

#include <QFutureWatcher>
#include <QString>
#include <QWidget>
#include <memory>

#include "fm/ui/match_controller.h"

class QAction;
class QLabel;
class QProgressBar;
class QPushButton;
class QSettings;
class QTimer;
class QToolBar;

namespace fm::ui {

class MatchCanvas;
class OptionsPanel;

class MatchView : public QWidget {
  Q_OBJECT

 public:
  explicit MatchView(QWidget* parent = nullptr);
  ~MatchView() override;  // waits for a drawing being saved


  // Opens an image into pane `side` (0 = A, 1 = B); loads off the GUI thread. The pane keeps its
  // previous image and result until the new image has loaded; if it cannot be loaded, they stay.
  void OpenImage(int side, const QString& path);
  // The image shown in pane `side` (empty when none).
  QString imagePath(int side) const { return paths_[side]; }
  // Whether pane `side` shows an image and no other is being loaded into it.
  bool imageReady(int side) const { return ready_[side] && loading_[side].isEmpty(); }
  // Matches the two open images with the panel's options (queued if a match runs).
  void Run();
  // Writes the drawing (DrawMatchResult, PNG/JPEG by extension) or the JSON report of the last
  // result. On failure returns false with `why`.
  bool SaveDrawing(const QString& path, QString* why) const;
  bool SaveReport(const QString& path, QString* why) const;
  // SaveDrawing off the GUI thread (a drawing of two large images takes a while): Save Drawing
  // is disabled meanwhile and drawingSaved() reports the end. False when a save already runs.
  bool StartSaveDrawing(const QString& path);
  bool savingDrawing() const { return save_watcher_.isRunning(); }
  // Cancels the running match (Esc): the stage line says so until the worker has stopped.
  void CancelMatch();

  MatchController* controller() const { return controller_; }
  OptionsPanel* options() const { return options_; }
  MatchCanvas* canvas() const { return canvas_; }
  std::shared_ptr<const MatchOutcome> outcome() const { return outcome_; }
  bool busy() const;

  // Actions for the window's menus (they carry the shortcuts).
  QAction* openA() const { return open_a_; }
  QAction* openB() const { return open_b_; }
  QAction* runAction() const { return run_; }
  QAction* cancelAction() const { return cancel_; }
  QAction* saveDrawingAction() const { return save_drawing_; }
  QAction* saveReportAction() const { return save_report_; }
  QAction* zoomInAction() const { return zoom_in_; }
  QAction* zoomOutAction() const { return zoom_out_; }
  QAction* zoomFitAction() const { return zoom_fit_; }
  QAction* zoomActualAction() const { return zoom_actual_; }
  QAction* keypointsAction() const { return show_keypoints_; }
  QAction* outliersAction() const { return show_outliers_; }
  QAction* swapAction() const { return swap_; }
  // Exchanges images A and B (and re-runs when re-running is on).
  void SwapImages();

  void SaveSettings(QSettings& settings) const;
  void LoadSettings(QSettings& settings);

  // Whether the view is the one on screen: its run, save and zoom shortcuts act only then.
  void SetActive(bool active);

 signals:
  void imageOpened(int side, const QString& path);
  // The pair shown changed (a new image, or a swap); `title` names it for the window.
  void pairChanged(const QString& title);
  void matchFinished();
  // A drawing started by StartSaveDrawing was written (`error` empty) or could not be.
  void drawingSaved(const QString& path, const QString& error);
  void errorShown(const QString& title, const QString& text);

 public slots:
  void ChooseImage(int side);
  void ChooseDrawingFile();
  void ChooseReportFile();

 private:
  void Error(const QString& title, const QString& text);
  QString PairTitle() const;
  void ShowOutcome(std::shared_ptr<const MatchOutcome> outcome);
  void ShowMatchInfo(int index);
  void UpdateActions();
  void ClearResult();
  void SetBusy(bool busy, const QString& stage = {});
  void CommitImage(int side, const QString& path, const QImage& image);
  QString LastFolder(const QString& key) const;
  void RememberFolder(const QString& key, const QString& file) const;

  MatchController* controller_;
  MatchCanvas* canvas_;
  OptionsPanel* options_;
  QToolBar* toolbar_;
  QTimer* rerun_timer_;
  QString paths_[2];
  QString loading_[2];  // a file being loaded into the pane, not shown yet
  bool ready_[2] = {false, false};
  bool cancelling_ = false;  // Esc was pressed; the worker has not stopped yet
  QFutureWatcher<QString> save_watcher_;  // a drawing being saved; its result is the error
  QString saving_path_;
  bool active_ = true;
  std::shared_ptr<const MatchOutcome> outcome_;

  QLabel* features_[2];
  QLabel* matches_;
  QLabel* inliers_;
  QLabel* model_;
  QLabel* times_;
  QLabel* backend_;
  QLabel* info_;
  QLabel* stage_;
  QLabel* problem_;  // why Run is disabled, above the Run button
  QProgressBar* progress_;
  QPushButton* cancel_button_;

  QAction* open_a_;
  QAction* open_b_;
  QAction* run_;
  QAction* cancel_;
  QAction* save_drawing_;
  QAction* save_report_;
  QAction* zoom_in_;
  QAction* zoom_out_;
  QAction* zoom_fit_;
  QAction* zoom_actual_;
  QAction* show_keypoints_;
  QAction* show_outliers_;
  QAction* swap_;
};

}  // namespace fm::ui
