#include "fm/ui/zoom_view.h"

#include <QGraphicsPixmapItem>
#include <QGraphicsPolygonItem>
#include <QGraphicsSimpleTextItem>
#include <QWheelEvent>
#include <cmath>

namespace fm::ui {

namespace {
constexpr int kOutlineKey = 1;  // item data key marking outline items
}

ZoomView::ZoomView(QWidget* parent) : QGraphicsView(parent), scene_(new QGraphicsScene(this)) {
  setScene(scene_);
  setRenderHints(QPainter::Antialiasing | QPainter::SmoothPixmapTransform);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setBackgroundBrush(QColor(38, 40, 44));
  pixmap_ = scene_->addPixmap(QPixmap());
  pixmap_->setTransformationMode(Qt::SmoothTransformation);
}

void ZoomView::SetImage(const QImage& image) {
  ClearOutlines();
  pixmap_->setPixmap(image.isNull() ? QPixmap() : QPixmap::fromImage(image));
  scene_->setSceneRect(pixmap_->boundingRect());
  Fit();
}

void ZoomView::ClearOutlines() {
  for (QGraphicsItem* item : scene_->items())
    if (item->data(kOutlineKey).toBool()) {
      scene_->removeItem(item);
      delete item;
    }
}

void ZoomView::AddOutline(const QPolygonF& polygon, const QString& caption, const QColor& color,
                          bool highlight) {
  QPen pen(color, highlight ? 4 : 2);
  pen.setCosmetic(true);
  auto* poly = scene_->addPolygon(polygon, pen);
  poly->setData(kOutlineKey, true);
  poly->setZValue(highlight ? 3 : 2);
  if (highlight) poly->setBrush(QColor(color.red(), color.green(), color.blue(), 40));
  auto* text = scene_->addSimpleText(caption);
  text->setData(kOutlineKey, true);
  text->setFlag(QGraphicsItem::ItemIgnoresTransformations);
  QFont font = text->font();
  font.setBold(true);
  font.setPointSize(highlight ? 12 : 10);
  text->setFont(font);
  text->setBrush(color);
  text->setPen(QPen(Qt::black, 0.5));
  text->setPos(polygon.isEmpty() ? QPointF() : polygon.first());
  text->setTransform(QTransform::fromTranslate(0, -text->boundingRect().height() - 2));
  text->setZValue(4);
}

void ZoomView::Fit() {
  if (!pixmap_->pixmap().isNull()) fitInView(pixmap_, Qt::KeepAspectRatio);
  fit_ = true;
}

void ZoomView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  const double factor = std::pow(1.2, steps);
  const double z = transform().m11() * factor;
  if (z < 0.02 || z > 40) return;
  scale(factor, factor);
  fit_ = false;
  event->accept();
}

void ZoomView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (fit_) Fit();
}

}  // namespace fm::ui
