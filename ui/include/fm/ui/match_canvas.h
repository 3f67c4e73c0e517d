// The two image panes of the match view in one zoomable scene: image A on the left, image B on
// the right, keypoints and match lines drawn over them. Wheel zooms at the cursor, dragging pans,
// hovering a line highlights it and clicking keeps it selected; files dropped on a side open
// there.
#pragma once

#include <QGraphicsView>
#include <QImage>
#include <QStringList>
#include <memory>

#include "fm/ui/match_controller.h"

class QGraphicsPixmapItem;
class QGraphicsSimpleTextItem;

namespace fm::ui {

class MatchOverlay;

class MatchCanvas : public QGraphicsView {
  Q_OBJECT

 public:
  explicit MatchCanvas(QWidget* parent = nullptr);

  // Shows an image in pane `side` (0 = A, 1 = B); a null image clears the pane.
  void SetImage(int side, const QImage& image);
  // A caption drawn above pane `side` (file name and size); constant size on screen, cut to the
  // pane's width on screen so that it never runs over the other pane.
  void SetTitle(int side, const QString& title);
  QString title(int side) const { return titles_[side]; }
  // Shows the keypoints and matches of a finished match (null clears them).
  void SetOutcome(std::shared_ptr<const MatchOutcome> outcome);
  std::shared_ptr<const MatchOutcome> outcome() const { return outcome_; }

  void SetShowKeypoints(bool on);
  void SetShowOutliers(bool on);
  void SetShowInliers(bool on);

  // Selected (clicked) and hovered match, -1 for none; index into outcome()->result.matches.
  int selected() const;
  int hovered() const;
  void SelectMatch(int index);
  // The visible match whose line passes nearest to `scene_pos` within `tolerance_px` screen
  // pixels, or -1.
  int MatchAt(const QPointF& scene_pos, double tolerance_px = 6) const;
  // Scene position of a keypoint of pane `side`.
  QPointF ScenePoint(int side, float x, float y) const;
  // Which pane a scene position falls in (0 or 1); nearest pane when between them.
  int SideAt(const QPointF& scene_pos) const;

  double zoom() const;
  bool fitting() const { return fit_; }

 public slots:
  void ZoomIn();
  void ZoomOut();
  void ZoomActual();
  void Fit();

 signals:
  // Index of the match under the mouse (hover) or clicked; -1 when none.
  void matchHovered(int index);
  void matchSelected(int index);
  void filesDropped(int side, const QStringList& paths);
  void zoomChanged(double zoom);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void drawBackground(QPainter* painter, const QRectF& rect) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;

 private:
  void Relayout();
  void ScaleBy(double factor);
  QPointF OffsetOf(int side) const;

  QGraphicsScene* scene_;
  QGraphicsPixmapItem* pixmaps_[2];
  QGraphicsSimpleTextItem* hints_[2];
  QString titles_[2];
  MatchOverlay* overlay_;
  QSize sizes_[2];
  std::shared_ptr<const MatchOutcome> outcome_;
  bool fit_ = true;
  QPoint press_pos_;
};

}  // namespace fm::ui
