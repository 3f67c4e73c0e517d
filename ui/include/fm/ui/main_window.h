// The featmatch desktop window: the match view (and the other views) in tabs, menus with the
// keyboard shortcuts, recent files, and settings that persist between sessions.
#pragma once

#include <QMainWindow>
#include <QStringList>

class QMenu;
class QTabWidget;

namespace fm::ui {

class MatchView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  MatchView* matchView() const { return match_view_; }
  QTabWidget* tabs() const { return tabs_; }

  // Opens images A and B, matches them, then writes a PNG of every view into `dir` (one per tab,
  // named after it) and emits screenshotsDone. For documentation and for checking the UI.
  void StartScreenshots(const QString& dir, const QString& image_a, const QString& image_b);

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

  QTabWidget* tabs_;
  MatchView* match_view_;
  QMenu* recent_a_ = nullptr;
  QMenu* recent_b_ = nullptr;
};

}  // namespace fm::ui
