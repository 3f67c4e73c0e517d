// The logo view: a logo library (open or create a .db) with thumbnails of its logos, adding and
// removing logos, querying scene images; detections as a ranked table with scores, outlines on
// the scene, and the logo beside the region it matched.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "fm/ui/logo_controller.h"

class QAction;
class QDoubleSpinBox;
class QGraphicsScene;
class QGraphicsView;
class QLabel;
class QListWidget;
class QProgressBar;
class QSettings;
class QSpinBox;
class QTableWidget;

namespace fm::ui {

class ZoomView;

class LogoView : public QWidget {
  Q_OBJECT

 public:
  explicit LogoView(QWidget* parent = nullptr);

  void OpenLibrary(const QString& path, bool create);
  void AddLogos(const QStringList& files);
  void RemoveLogos(const QStringList& names);
  void Query(const QStringList& scenes);

  LogoController* controller() const { return controller_; }
  QTableWidget* results() const { return table_; }
  // Every scene result of the last query, in order.
  const std::vector<std::shared_ptr<const SceneResult>>& sceneResults() const { return scenes_; }
  int logoCount() const;
  // Stops the running query after its current scene (which cannot be interrupted); the status
  // line says so until it has stopped. The scenes already queried keep their results.
  void CancelQuery();
  QAction* cancelAction() const { return cancel_; }
  // Shows a scene and, when `detection` >= 0, that detection beside its logo.
  void ShowDetection(int scene, int detection);

  matcher::LogoQueryOptions queryOptions() const;
  void SetQueryOptions(const matcher::LogoQueryOptions& o);

  void SaveSettings(QSettings& settings) const;
  void LoadSettings(QSettings& settings);
  // The view's actions, for the window's menu.
  QList<QAction*> menuActions() const;

 signals:
  void queryFinished();
  void libraryOpened(const QString& path);
  void errorShown(const QString& title, const QString& text);

 public slots:
  void ChooseNewLibrary();
  void ChooseLibrary();
  void ChooseLogos();
  void RemoveSelected();
  void ChooseScenes();

 protected:
  // Image files dropped on the logo list are added; dropped anywhere else they are queried.
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void Error(const QString& title, const QString& text);
  void AddSceneRows(int scene_index);
  void UpdateActions();
  // Shows `image` in `label` scaled to fit the label's current size (again after every resize).
  void FitImage(QLabel* label, const QImage& image);

  LogoController* controller_;
  QListWidget* logos_;
  QLabel* library_label_;
  ZoomView* scene_view_;
  QTableWidget* table_;
  QLabel* logo_image_;
  QLabel* region_image_;
  QImage logo_source_, region_source_;  // unscaled, rescaled when their labels change size
  QString summary_;  // how the last query ended, kept on the status line once it is idle
  QLabel* detail_;
  QLabel* stage_;
  QProgressBar* progress_;
  QSpinBox* min_inliers_;
  QDoubleSpinBox* min_confidence_;
  QSpinBox* max_instances_;
  QSpinBox* top_;
  QDoubleSpinBox* ratio_;
  QDoubleSpinBox* threshold_;
  QLabel* problem_;
  QAction* new_;
  QAction* open_;
  QAction* add_;
  QAction* remove_;
  QAction* query_;
  QAction* cancel_;
  std::vector<std::shared_ptr<const SceneResult>> scenes_;
  int shown_scene_ = -1;
  bool querying_ = false;    // a query was handed to the controller and has not ended
  bool cancelling_ = false;  // its cancel is pending: the scene under way stops at its next check
};

}  // namespace fm::ui
