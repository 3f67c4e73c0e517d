#include "fm/ui/match_canvas.h"

#include <QDragEnterEvent>
#include <QGraphicsItem>
#include <QGraphicsPixmapItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QMimeData>
#include <QPainter>
#include <QScrollBar>
#include <QStyleOptionGraphicsItem>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace fm::ui {

namespace {

constexpr double kMinZoom = 0.02;
constexpr double kMaxZoom = 40.0;
const QSize kPlaceholder(640, 480);

const QColor kInlier(70, 225, 90);
const QColor kOutlier(235, 60, 60, 150);
const QColor kUnverified(80, 200, 255, 190);
const QColor kKeypoint(255, 200, 40, 150);
const QColor kHover(255, 255, 255);
const QColor kSelected(255, 230, 0);

double SegmentDistance(const QPointF& p, const QPointF& a, const QPointF& b) {
  const QPointF ab = b - a;
  const double len2 = QPointF::dotProduct(ab, ab);
  double t = len2 > 0 ? QPointF::dotProduct(p - a, ab) / len2 : 0;
  t = std::clamp(t, 0.0, 1.0);
  const QPointF d = p - (a + t * ab);
  return std::sqrt(QPointF::dotProduct(d, d));
}

}  // namespace

// Keypoints and match lines of one outcome, painted in a few batched calls.
class MatchOverlay : public QGraphicsItem {
 public:
  std::shared_ptr<const MatchOutcome> outcome;
  QPointF offset[2];
  QRectF bounds;
  bool show_keypoints = true, show_inliers = true, show_outliers = true;
  int hovered = -1, selected = -1;

  QRectF boundingRect() const override { return bounds; }
  void SetBounds(const QRectF& r) {
    prepareGeometryChange();
    bounds = r;
  }

  // 0 = inlier, 1 = outlier, 2 = no verified model (none ran, or it failed verification: the
  // points it agrees with are no inliers, as the batch stores none for it).
  int Kind(int i) const {
    const auto& v = outcome->result.verification;
    if (v.model == matcher::GeometryModel::kNone || v.inliers.empty() || !v.verified) return 2;
    return v.inliers[static_cast<std::size_t>(i)] ? 0 : 1;
  }
  bool Visible(int i) const {
    const int kind = Kind(i);
    return kind == 2 || (kind == 0 ? show_inliers : show_outliers);
  }
  QPointF End(int side, int feature) const {
    const auto& f = side == 0 ? *outcome->features_a : *outcome->features_b;
    const auto& k = f.keypoints[static_cast<std::size_t>(feature)];
    return offset[side] + QPointF(k.x, k.y);
  }
  QLineF Line(int i) const {
    const auto& m = outcome->result.matches[static_cast<std::size_t>(i)];
    return {End(0, m.query), End(1, m.train)};
  }

  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) override {
    if (!outcome) return;
    // Only what is on screen is drawn (keypoints are many; lines are tested by their box).
    const QRectF exposed = option->exposedRect.adjusted(-10, -10, 10, 10);
    painter->setRenderHint(QPainter::Antialiasing, true);
    const double scale = std::max(1e-6, painter->worldTransform().m11());
    if (show_keypoints) {
      QPen pen(kKeypoint, 1.0);
      pen.setCosmetic(true);
      painter->setPen(pen);
      painter->setBrush(Qt::NoBrush);
      const double r = 3.0 / scale;
      for (int side = 0; side < 2; ++side) {
        const auto& f = side == 0 ? *outcome->features_a : *outcome->features_b;
        for (const auto& k : f.keypoints) {
          const QPointF p = offset[side] + QPointF(k.x, k.y);
          if (exposed.contains(p)) painter->drawEllipse(p, r, r);
        }
      }
    }
    QVector<QLineF> lines[3];
    const int n = static_cast<int>(outcome->result.matches.size());
    for (int i = 0; i < n; ++i)
      if (Visible(i)) {
        const QLineF line = Line(i);
        if (exposed.intersects(QRectF(line.p1(), line.p2()).normalized().adjusted(-1, -1, 1, 1)))
          lines[Kind(i)].push_back(line);
      }
    const QColor colors[3] = {kOutlier, kUnverified, kInlier};
    const int order[3] = {1, 2, 0};  // outliers below, inliers on top
    for (int j = 0; j < 3; ++j) {
      QPen pen(colors[j], 1.0);
      pen.setCosmetic(true);
      painter->setPen(pen);
      painter->drawLines(lines[order[j]]);
    }
    for (int which : {selected, hovered}) {
      if (which < 0 || which >= n) continue;
      const QColor c = which == selected ? kSelected : kHover;
      const QLineF line = Line(which);
      QPen shadow(QColor(0, 0, 0, 200), 5.0);
      shadow.setCosmetic(true);
      painter->setPen(shadow);
      painter->drawLine(line);
      QPen pen(c, 2.5);
      pen.setCosmetic(true);
      painter->setPen(pen);
      painter->drawLine(line);
      const double r = 9.0 / scale;
      painter->drawEllipse(line.p1(), r, r);
      painter->drawEllipse(line.p2(), r, r);
    }
  }
};

MatchCanvas::MatchCanvas(QWidget* parent)
    : QGraphicsView(parent), scene_(new QGraphicsScene(this)) {
  setScene(scene_);
  setObjectName("fm_match_canvas");
  setRenderHints(QPainter::Antialiasing | QPainter::SmoothPixmapTransform);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
  setAcceptDrops(true);
  viewport()->setMouseTracking(true);
  setMinimumSize(320, 240);
  for (int side = 0; side < 2; ++side) {
    pixmaps_[side] = scene_->addPixmap(QPixmap());
    pixmaps_[side]->setTransformationMode(Qt::SmoothTransformation);
    pixmaps_[side]->setZValue(0);
    hints_[side] = scene_->addSimpleText(
        side == 0 ? tr("Image A\n\nOpen with Ctrl+O\nor drop a file here")
                  : tr("Image B\n\nOpen with Ctrl+Shift+O\nor drop a file here"));
    QFont font = hints_[side]->font();
    font.setPointSize(22);
    hints_[side]->setFont(font);
    hints_[side]->setBrush(QColor(170, 170, 170));
  }
  overlay_ = new MatchOverlay;
  overlay_->setZValue(10);
  overlay_->setFlag(QGraphicsItem::ItemUsesExtendedStyleOption);  // fills exposedRect
  overlay_->setAcceptedMouseButtons(Qt::NoButton);
  scene_->addItem(overlay_);
  Relayout();
}

QPointF MatchCanvas::OffsetOf(int side) const { return overlay_->offset[side]; }

QPointF MatchCanvas::ScenePoint(int side, float x, float y) const {
  return OffsetOf(side) + QPointF(x, y);
}

void MatchCanvas::Relayout() {
  QSize s[2];
  for (int side = 0; side < 2; ++side)
    s[side] = sizes_[side].isEmpty() ? kPlaceholder : sizes_[side];
  const double gap = std::max(24.0, 0.04 * std::max(s[0].width(), s[1].width()));
  // Both panes centred on the same horizontal axis.
  const double h = std::max(s[0].height(), s[1].height());
  overlay_->offset[0] = QPointF(0, (h - s[0].height()) / 2);
  overlay_->offset[1] = QPointF(s[0].width() + gap, (h - s[1].height()) / 2);
  for (int side = 0; side < 2; ++side) {
    pixmaps_[side]->setPos(overlay_->offset[side]);
    const bool empty = sizes_[side].isEmpty();
    hints_[side]->setVisible(empty);
    const QRectF tr = hints_[side]->boundingRect();
    hints_[side]->setPos(overlay_->offset[side] + QPointF((s[side].width() - tr.width()) / 2,
                                                          (s[side].height() - tr.height()) / 2));
  }
  overlay_->SetBounds(QRectF(0, 0, s[0].width() + gap + s[1].width(), h));
  // Room above the panes for their captions.
  scene_->setSceneRect(overlay_->bounds.adjusted(-gap, -(gap + 0.1 * h), gap, gap));
  if (fit_) Fit();
  viewport()->update();
}

void MatchCanvas::drawBackground(QPainter* painter, const QRectF& rect) {
  painter->fillRect(rect, QColor(38, 40, 44));
  QPen pen(QColor(110, 110, 110), 2, Qt::DashLine);
  pen.setCosmetic(true);
  painter->setPen(pen);
  for (int side = 0; side < 2; ++side) {
    if (!sizes_[side].isEmpty()) continue;
    painter->drawRect(QRectF(OffsetOf(side), QSizeF(kPlaceholder)));
  }
}

void MatchCanvas::SetImage(int side, const QImage& image) {
  if (side < 0 || side > 1) return;
  pixmaps_[side]->setPixmap(image.isNull() ? QPixmap() : QPixmap::fromImage(image));
  sizes_[side] = image.isNull() ? QSize() : image.size();
  fit_ = true;
  Relayout();
}

void MatchCanvas::SetTitle(int side, const QString& title) {
  if (side < 0 || side > 1) return;
  titles_[side] = title;
  viewport()->update();
}

void MatchCanvas::drawForeground(QPainter* painter, const QRectF&) {
  // Captions are drawn in viewport pixels (their size does not change with the zoom), just above
  // their pane, elided and clipped to the pane's width on screen: zoomed out, a caption wider
  // than its pane would otherwise run over the other pane and its caption.
  painter->save();
  painter->resetTransform();
  QFont font = painter->font();
  font.setBold(true);
  painter->setFont(font);
  const QFontMetrics metrics(font);
  for (int side = 0; side < 2; ++side) {
    if (sizes_[side].isEmpty() || titles_[side].isEmpty()) continue;
    const QRectF pane =
        mapFromScene(QRectF(OffsetOf(side), QSizeF(sizes_[side]))).boundingRect();
    const int width = static_cast<int>(pane.width());
    const QString text = metrics.elidedText(titles_[side], Qt::ElideMiddle, width);
    if (text.isEmpty()) continue;
    const QRectF box(pane.left(), pane.top() - metrics.height() - 4, pane.width(),
                     metrics.height());
    painter->setClipRect(box);
    painter->setPen(QColor(225, 225, 225));
    painter->drawText(box, Qt::AlignLeft | Qt::AlignVCenter, text);
  }
  painter->restore();
}

void MatchCanvas::SetOutcome(std::shared_ptr<const MatchOutcome> outcome) {
  outcome_ = std::move(outcome);
  overlay_->outcome = outcome_;
  overlay_->hovered = -1;
  overlay_->selected = -1;
  overlay_->update();
  viewport()->update();
}

void MatchCanvas::SetShowKeypoints(bool on) {
  overlay_->show_keypoints = on;
  overlay_->update();
}
void MatchCanvas::SetShowOutliers(bool on) {
  overlay_->show_outliers = on;
  overlay_->update();
}
void MatchCanvas::SetShowInliers(bool on) {
  overlay_->show_inliers = on;
  overlay_->update();
}

int MatchCanvas::selected() const { return overlay_->selected; }
int MatchCanvas::hovered() const { return overlay_->hovered; }

void MatchCanvas::SelectMatch(int index) {
  const int n = outcome_ ? static_cast<int>(outcome_->result.matches.size()) : 0;
  if (index >= n) index = -1;
  if (overlay_->selected == index) return;
  overlay_->selected = index;
  overlay_->update();
  emit matchSelected(index);
}

int MatchCanvas::MatchAt(const QPointF& p, double tolerance_px) const {
  if (!outcome_) return -1;
  const double tol = tolerance_px / std::max(1e-6, zoom());
  int best = -1;
  double best_d = tol;
  const int n = static_cast<int>(outcome_->result.matches.size());
  for (int i = 0; i < n; ++i) {
    if (!overlay_->Visible(i)) continue;
    const QLineF line = overlay_->Line(i);
    const double d = SegmentDistance(p, line.p1(), line.p2());
    // Inliers win ties so that the drawn-on-top line is the one picked.
    if (d < best_d || (d == best_d && best >= 0 && overlay_->Kind(i) == 0)) {
      best_d = d;
      best = i;
    }
  }
  return best;
}

int MatchCanvas::SideAt(const QPointF& p) const {
  const double a_right = OffsetOf(0).x() + (sizes_[0].isEmpty() ? kPlaceholder : sizes_[0]).width();
  const double b_left = OffsetOf(1).x();
  return p.x() < (a_right + b_left) / 2 ? 0 : 1;
}

double MatchCanvas::zoom() const { return transform().m11(); }

void MatchCanvas::ScaleBy(double factor) {
  const double target = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
  factor = target / zoom();
  scale(factor, factor);
  fit_ = false;
  emit zoomChanged(zoom());
}

void MatchCanvas::ZoomIn() {
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  ScaleBy(1.25);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
}
void MatchCanvas::ZoomOut() {
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  ScaleBy(1 / 1.25);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
}
void MatchCanvas::ZoomActual() {
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  ScaleBy(1.0 / zoom());
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
}

void MatchCanvas::Fit() {
  fitInView(scene_->sceneRect(), Qt::KeepAspectRatio);
  fit_ = true;
  emit zoomChanged(zoom());
}

void MatchCanvas::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  ScaleBy(std::pow(1.2, steps));
  event->accept();
}

void MatchCanvas::mousePressEvent(QMouseEvent* event) {
  press_pos_ = event->position().toPoint();
  QGraphicsView::mousePressEvent(event);
}

void MatchCanvas::mouseMoveEvent(QMouseEvent* event) {
  QGraphicsView::mouseMoveEvent(event);
  if (event->buttons() != Qt::NoButton) return;  // panning
  const int index = MatchAt(mapToScene(event->position().toPoint()));
  if (index != overlay_->hovered) {
    overlay_->hovered = index;
    overlay_->update();
    emit matchHovered(index);
  }
}

void MatchCanvas::mouseReleaseEvent(QMouseEvent* event) {
  QGraphicsView::mouseReleaseEvent(event);
  if (event->button() != Qt::LeftButton) return;
  if ((event->position().toPoint() - press_pos_).manhattanLength() > 4) return;  // was a drag
  SelectMatch(MatchAt(mapToScene(event->position().toPoint())));
}

void MatchCanvas::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (fit_) Fit();
}

namespace {
QStringList LocalFiles(const QMimeData* mime) {
  QStringList paths;
  if (!mime || !mime->hasUrls()) return paths;
  for (const QUrl& url : mime->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  return paths;
}
}  // namespace

void MatchCanvas::dragEnterEvent(QDragEnterEvent* event) {
  if (LocalFiles(event->mimeData()).isEmpty()) return event->ignore();
  event->acceptProposedAction();
}

void MatchCanvas::dragMoveEvent(QDragMoveEvent* event) {
  if (LocalFiles(event->mimeData()).isEmpty()) return event->ignore();
  event->acceptProposedAction();
}

void MatchCanvas::dropEvent(QDropEvent* event) {
  const QStringList paths = LocalFiles(event->mimeData());
  if (paths.isEmpty()) return event->ignore();
  event->acceptProposedAction();
  emit filesDropped(SideAt(mapToScene(event->position().toPoint())), paths);
}

}  // namespace fm::ui
