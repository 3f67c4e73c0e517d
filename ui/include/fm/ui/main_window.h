// The featmatch desktop window: the match view (and the other views) in tabs, menus with the
// keyboard shortcuts, recent files, and settings that persist between sessions.
#pragma once

#include <QMainWindow>
#include <QStringList>

class QMenu;
class QTabWidget;

namespace fm::ui {

class BatchView;
class LogoView;
class MatchView;

// What --screenshot shows: a match of A and B; when logos and scenes are given, a new library of
// the logos (in a temporary folder) queried with the scenes; when a folder is given, a batch of it
// into a temporary database.
struct ScreenshotPlan {
  QString dir;
  QString image_a, image_b;
  QStringList logos;
  QStringList scenes;
  QString batch_folder;
};

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  MatchView* matchView() const { return match_view_; }
  LogoView* logoView() const { return logo_view_; }
  BatchView* batchView() const { return batch_view_; }
  QTabWidget* tabs() const { return tabs_; }

  // Runs the plan, then writes a PNG of every view into plan.dir (one per tab, named after it)
  // and emits screenshotsDone. For documentation and for checking the UI.
  void StartScreenshots(const ScreenshotPlan& plan);

  static QStringList RecentFiles();

 signals:
  void screenshotsDone(bool ok, const QString& message);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void BuildMenus();
  void AddRecentFile(const QString& path);
  void RebuildRecentMenus();
  void ShowAbout();
  void GrabViews(const QString& dir);
  void ScreenshotLogos(const ScreenshotPlan& plan);
  void ScreenshotBatch(const ScreenshotPlan& plan);
  void FailScreenshots(const QString& why);

  QTabWidget* tabs_;
  MatchView* match_view_;
  LogoView* logo_view_;
  BatchView* batch_view_;
  QObject* tour_ = nullptr;  // owns the connections of a running screenshot tour
  QString tour_dir_;
  QMenu* recent_a_ = nullptr;
  QMenu* recent_b_ = nullptr;
};

}  // namespace fm::ui
