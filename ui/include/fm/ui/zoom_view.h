// An image with outlines on top, zoomed with the wheel, panned by dragging, fitted on resize
// until the user zooms.
#pragma once

#include <QGraphicsView>
#include <QImage>
#include <QPolygonF>

class QGraphicsPixmapItem;

namespace fm::ui {

class ZoomView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit ZoomView(QWidget* parent = nullptr);

  void SetImage(const QImage& image);
  void ClearOutlines();
  // A closed outline with a caption at its first corner; `highlight` draws it thicker.
  void AddOutline(const QPolygonF& polygon, const QString& caption, const QColor& color,
                  bool highlight);
  void Fit();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  QGraphicsScene* scene_;
  QGraphicsPixmapItem* pixmap_;
  bool fit_ = true;
};

}  // namespace fm::ui
