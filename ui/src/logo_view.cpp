#include "fm/ui/logo_view.h"

#include <QAction>
#include <QDoubleSpinBox>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStyle>
#include <QTableWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include "fm/ui/error_dialog.h"
#include "fm/ui/zoom_view.h"

namespace fm::ui {

namespace {

enum Column { kScene, kRank, kLogo, kConfidence, kInliers, kCandidates, kInlierRatio, kColumns };

QColor LogoColor(int64_t id) {
  static const QColor colors[] = {QColor(255, 210, 0),  QColor(0, 220, 255),
                                  QColor(255, 90, 200), QColor(120, 255, 80),
                                  QColor(255, 140, 40), QColor(170, 130, 255)};
  return colors[static_cast<std::size_t>(id) % std::size(colors)];
}

QTableWidgetItem* Cell(const QString& text, bool number = false) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
  if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QString LastFolder(const QString& key) { return QSettings().value("folders/" + key).toString(); }
void RememberFolder(const QString& key, const QString& file) {
  QSettings().setValue("folders/" + key, QFileInfo(file).absolutePath());
}

const QString kImageFilter =
    QObject::tr("Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp *.pgm *.ppm);;All files (*)");

}  // namespace

LogoView::LogoView(QWidget* parent)
    : QWidget(parent), controller_(new LogoController(this)), scene_view_(new ZoomView) {
  setObjectName("fm_logo_view");
  QStyle* st = style();

  new_ = new QAction(st->standardIcon(QStyle::SP_FileIcon), tr("New Library..."), this);
  connect(new_, &QAction::triggered, this, &LogoView::ChooseNewLibrary);
  open_ = new QAction(st->standardIcon(QStyle::SP_DialogOpenButton), tr("Open Library..."), this);
  connect(open_, &QAction::triggered, this, &LogoView::ChooseLibrary);
  add_ = new QAction(st->standardIcon(QStyle::SP_FileDialogNewFolder), tr("Add Logos..."), this);
  connect(add_, &QAction::triggered, this, &LogoView::ChooseLogos);
  remove_ = new QAction(st->standardIcon(QStyle::SP_TrashIcon), tr("Remove Selected"), this);
  remove_->setShortcut(QKeySequence::Delete);
  remove_->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(remove_, &QAction::triggered, this, &LogoView::RemoveSelected);
  query_ = new QAction(st->standardIcon(QStyle::SP_MediaPlay), tr("Query Scenes..."), this);
  query_->setToolTip(tr("Find the library's logos in one or several scene images"));
  connect(query_, &QAction::triggered, this, &LogoView::ChooseScenes);
  cancel_ = new QAction(st->standardIcon(QStyle::SP_MediaStop), tr("Cancel"), this);
  cancel_->setToolTip(tr("Stop the query after the current scene (Esc)"));
  // Esc as in the Match view, but only where this view has the focus: the Match view's Esc
  // belongs to the whole window.
  cancel_->setShortcut(QKeySequence(Qt::Key_Escape));
  cancel_->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  addAction(cancel_);
  connect(cancel_, &QAction::triggered, this, &LogoView::CancelQuery);

  auto* toolbar = new QToolBar;
  toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  for (QAction* a : {new_, open_, add_, remove_}) toolbar->addAction(a);
  toolbar->addSeparator();
  toolbar->addAction(query_);
  toolbar->addAction(cancel_);

  library_label_ = new QLabel(tr("No library open: create one (New Library) or open a .db file."));
  library_label_->setObjectName("fm_library_label");
  library_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  // Left: the logos and the query settings.
  logos_ = new QListWidget;
  // Delete removes a logo only where the logos are: the key in the results table or a field does
  // nothing to the library.
  logos_->addAction(remove_);
  logos_->setObjectName("fm_logo_list");
  logos_->setViewMode(QListView::IconMode);
  logos_->setIconSize(QSize(96, 96));
  logos_->setGridSize(QSize(124, 140));
  logos_->setResizeMode(QListView::Adjust);
  logos_->setMovement(QListView::Static);
  logos_->setWordWrap(true);
  logos_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  connect(logos_, &QListWidget::itemSelectionChanged, this, &LogoView::UpdateActions);

  auto* qbox = new QGroupBox(tr("Query"));
  auto* qf = new QFormLayout(qbox);
  const matcher::LogoQueryOptions defaults;
  qf->addRow(tr("Min confidence"), min_confidence_ = new QDoubleSpinBox);
  min_confidence_->setRange(0, 1);
  min_confidence_->setSingleStep(0.05);
  min_confidence_->setToolTip(tr("Detections less likely to be right than this are dropped"));
  qf->addRow(tr("Min inliers"), min_inliers_ = new QSpinBox);
  min_inliers_->setRange(0, 10000);
  qf->addRow(tr("Max instances"), max_instances_ = new QSpinBox);
  max_instances_->setRange(0, 100);
  max_instances_->setToolTip(tr("Instances of one logo searched per scene"));
  qf->addRow(tr("Keep best"), top_ = new QSpinBox);
  top_->setRange(0, 1000);
  top_->setSpecialValueText(tr("all"));
  qf->addRow(tr("Ratio test"), ratio_ = new QDoubleSpinBox);
  ratio_->setRange(0, 1);
  ratio_->setSingleStep(0.05);
  ratio_->setDecimals(3);
  qf->addRow(tr("Threshold (px)"), threshold_ = new QDoubleSpinBox);
  threshold_->setRange(0, 1000);
  threshold_->setSingleStep(0.5);
  problem_ = new QLabel;
  problem_->setWordWrap(true);
  problem_->setStyleSheet("color: #e0504a; font-weight: bold;");
  problem_->hide();
  qf->addRow(problem_);
  SetQueryOptions(defaults);
  for (auto* s : qbox->findChildren<QSpinBox*>())
    connect(s, &QSpinBox::valueChanged, this, &LogoView::UpdateActions);
  for (auto* s : qbox->findChildren<QDoubleSpinBox*>())
    connect(s, &QDoubleSpinBox::valueChanged, this, &LogoView::UpdateActions);

  auto* left = new QWidget;
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  left_layout->addWidget(new QLabel(tr("<b>Logos</b>")));
  left_layout->addWidget(logos_, 1);
  left_layout->addWidget(qbox);

  // Centre: the scene over the ranked results.
  table_ = new QTableWidget(0, kColumns);
  table_->setObjectName("fm_logo_results");
  table_->setHorizontalHeaderLabels({tr("Scene"), tr("#"), tr("Logo"), tr("Confidence"),
                                     tr("Inliers"), tr("Candidates"), tr("Inlier ratio")});
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  connect(table_, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
    if (row < 0) return;
    const QVariant v = table_->item(row, kScene)->data(Qt::UserRole);
    ShowDetection(v.toPoint().x(), v.toPoint().y());
  });
  auto* centre = new QSplitter(Qt::Vertical);
  centre->addWidget(scene_view_);
  centre->addWidget(table_);
  centre->setStretchFactor(0, 3);
  centre->setStretchFactor(1, 1);

  // Right: the logo beside the region it matched.
  auto* right = new QWidget;
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(4, 0, 4, 0);
  rl->addWidget(new QLabel(tr("<b>Logo</b>")));
  logo_image_ = new QLabel;
  logo_image_->setObjectName("fm_logo_image");
  logo_image_->setMinimumWidth(240);
  logo_image_->setFixedHeight(240);
  // The pixmap is scaled to the label, never the label to the pixmap.
  logo_image_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  logo_image_->setAlignment(Qt::AlignCenter);
  logo_image_->setStyleSheet("background: #26282c;");
  logo_image_->installEventFilter(this);  // rescaled on resize
  rl->addWidget(logo_image_);
  rl->addWidget(new QLabel(tr("<b>Matched region</b> (mapped back onto the logo)")));
  region_image_ = new QLabel;
  region_image_->setObjectName("fm_region_image");
  region_image_->setMinimumWidth(240);
  region_image_->setFixedHeight(240);
  // The pixmap is scaled to the label, never the label to the pixmap.
  region_image_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  region_image_->setAlignment(Qt::AlignCenter);
  region_image_->setStyleSheet("background: #26282c;");
  region_image_->installEventFilter(this);
  rl->addWidget(region_image_);
  detail_ = new QLabel(tr("Click a result to compare the logo with its matched region."));
  detail_->setObjectName("fm_logo_detail");
  detail_->setWordWrap(true);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  rl->addWidget(detail_);
  rl->addStretch(1);

  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(left);
  splitter->addWidget(centre);
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setStretchFactor(2, 0);
  splitter->setSizes({300, 900, 280});

  stage_ = new QLabel;
  stage_->setObjectName("fm_logo_stage");
  progress_ = new QProgressBar;
  progress_->setRange(0, 0);
  progress_->setMaximumWidth(200);
  progress_->hide();
  auto* status = new QHBoxLayout;
  status->setContentsMargins(8, 2, 8, 4);
  status->addWidget(library_label_, 1);
  status->addWidget(stage_);
  status->addWidget(progress_);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(toolbar);
  layout->addWidget(splitter, 1);
  layout->addLayout(status);

  connect(controller_, &LogoController::busyChanged, this, [this](bool busy) {
    progress_->setVisible(busy);
    // queryFinished comes just before the worker goes idle: its summary stays on the line, only
    // the progress of other work is cleared.
    if (!busy) {
      // A query that failed before its first scene ends without queryFinished.
      querying_ = cancelling_ = false;
      stage_->setText(summary_);
    }
    if (busy) summary_.clear();
    UpdateActions();
  });
  connect(controller_, &LogoController::progress, this, [this](const QString& what) {
    // The scene under way still reports; the line keeps saying that the cancel is pending.
    if (!cancelling_) stage_->setText(what);
  });
  connect(controller_, &LogoController::failed, this, &LogoView::Error);
  connect(controller_, &LogoController::libraryChanged, this,
          [this](const QString& path, const QList<LogoEntry>& entries, const QString& summary) {
            logos_->clear();
            for (const LogoEntry& e : entries) {
              auto* item = new QListWidgetItem(QIcon(QPixmap::fromImage(e.thumbnail)),
                                               QString("%1\n%2 features")
                                                   .arg(QString::fromStdString(e.info.name))
                                                   .arg(e.info.num_features));
              item->setData(Qt::UserRole, QString::fromStdString(e.info.name));
              item->setToolTip(tr("%1\nfrom %2\n%3 × %4 px, added %5")
                                   .arg(QString::fromStdString(e.info.name),
                                        QString::fromStdString(e.info.source))
                                   .arg(e.info.width)
                                   .arg(e.info.height)
                                   .arg(QString::fromStdString(e.info.added)));
              logos_->addItem(item);
            }
            library_label_->setText(
                tr("Library %1  ·  %2").arg(QDir::toNativeSeparators(path), summary));
            QSettings().setValue("logos/library", path);
            UpdateActions();
            emit libraryOpened(path);
          });
  connect(controller_, &LogoController::sceneDone, this,
          [this](int, int, std::shared_ptr<const SceneResult> r) {
            scenes_.push_back(std::move(r));
            AddSceneRows(static_cast<int>(scenes_.size()) - 1);
            if (scenes_.size() == 1) table_->selectRow(0);
          });
  connect(controller_, &LogoController::queryFinished, this,
          [this](int done, int tried, int total, bool cancelled) {
            querying_ = cancelling_ = false;
            int found = 0;
            for (const auto& r : scenes_) found += static_cast<int>(r->result.detections.size());
            // The table keeps every scene queried before the cancel: say how many, and that
            // they stay.
            if (!cancelled) {
              summary_ = tr("%1 scene(s) queried; %2 detection(s)").arg(done).arg(found);
            } else if (tried == 0) {
              summary_ = tr("Cancelled before the first of %1 scene(s) was queried").arg(total);
            } else if (done == tried) {
              summary_ = tr("Cancelled after %1 of %2 scenes; their results are kept "
                            "(%3 detection(s))")
                             .arg(done)
                             .arg(total)
                             .arg(found);
            } else {
              summary_ = tr("Cancelled after %1 of %2 scenes; the results of %3 are kept "
                            "(%4 detection(s))")
                             .arg(tried)
                             .arg(total)
                             .arg(done)
                             .arg(found);
            }
            stage_->setText(summary_);
            UpdateActions();
            emit queryFinished();
          });

  // Drag and drop: onto the logo list adds logos, onto the scene or the results queries them.
  for (QWidget* w : {static_cast<QWidget*>(logos_), scene_view_->viewport(),
                     static_cast<QWidget*>(table_->viewport())}) {
    w->setAcceptDrops(true);
    w->installEventFilter(this);
  }
  logos_->setDragDropMode(QAbstractItemView::DropOnly);

  const QString last = QSettings().value("logos/library").toString();
  if (!last.isEmpty() && QFileInfo::exists(last)) controller_->OpenLibrary(last, false);
  UpdateActions();
}

int LogoView::logoCount() const { return logos_->count(); }

QList<QAction*> LogoView::menuActions() const {
  return {new_, open_, add_, remove_, query_, cancel_};
}

bool LogoView::eventFilter(QObject* watched, QEvent* event) {
  const auto type = event->type();
  // The previews follow their labels' size: the first detection is often shown before the
  // layout has given the labels their final width (a hidden tab, a window not shown yet).
  if (type == QEvent::Resize && watched == logo_image_) FitImage(logo_image_, logo_source_);
  if (type == QEvent::Resize && watched == region_image_)
    FitImage(region_image_, region_source_);
  if (type != QEvent::DragEnter && type != QEvent::DragMove && type != QEvent::Drop)
    return QWidget::eventFilter(watched, event);
  auto* drop = static_cast<QDropEvent*>(event);
  QStringList files;
  if (drop->mimeData() && drop->mimeData()->hasUrls())
    for (const QUrl& url : drop->mimeData()->urls())
      if (url.isLocalFile()) files << url.toLocalFile();
  if (files.isEmpty()) return QWidget::eventFilter(watched, event);
  drop->acceptProposedAction();
  if (type == QEvent::Drop) {
    if (watched == logos_) {
      AddLogos(files);
    } else {
      Query(files);
    }
  }
  return true;
}

void LogoView::SaveSettings(QSettings& s) const {
  const matcher::LogoQueryOptions o = queryOptions();
  s.beginGroup("logo_query");
  s.setValue("min_confidence", o.min_confidence);
  s.setValue("min_inliers", o.min_inliers);
  s.setValue("max_instances", o.max_instances);
  s.setValue("top", o.top);
  s.setValue("ratio", o.ratio);
  s.setValue("threshold", o.threshold);
  s.endGroup();
}

void LogoView::LoadSettings(QSettings& s) {
  matcher::LogoQueryOptions o;
  s.beginGroup("logo_query");
  o.min_confidence = s.value("min_confidence", o.min_confidence).toDouble();
  o.min_inliers = s.value("min_inliers", o.min_inliers).toInt();
  o.max_instances = s.value("max_instances", o.max_instances).toInt();
  o.top = s.value("top", o.top).toInt();
  o.ratio = s.value("ratio", o.ratio).toFloat();
  o.threshold = s.value("threshold", o.threshold).toDouble();
  s.endGroup();
  SetQueryOptions(o);
}

void LogoView::Error(const QString& title, const QString& text) {
  ShowError(this, title, text);
  emit errorShown(title, text);
}

matcher::LogoQueryOptions LogoView::queryOptions() const {
  matcher::LogoQueryOptions o;
  o.min_confidence = min_confidence_->value();
  o.min_inliers = min_inliers_->value();
  o.max_instances = max_instances_->value();
  o.top = top_->value();
  o.ratio = static_cast<float>(ratio_->value());
  o.threshold = threshold_->value();
  return o;
}

void LogoView::SetQueryOptions(const matcher::LogoQueryOptions& o) {
  min_confidence_->setValue(o.min_confidence);
  min_inliers_->setValue(o.min_inliers);
  max_instances_->setValue(o.max_instances);
  top_->setValue(o.top);
  ratio_->setValue(o.ratio);
  threshold_->setValue(o.threshold);
}

void LogoView::UpdateActions() {
  const bool lib = controller_->hasLibrary();
  std::string why;
  const bool valid = queryOptions().Check(&why);
  problem_->setVisible(!valid);
  problem_->setText(valid ? QString() : tr("Cannot query: %1").arg(QString::fromStdString(why)));
  add_->setEnabled(lib);
  remove_->setEnabled(lib && !logos_->selectedItems().isEmpty());
  // One query at a time: a second started while the first runs would interleave their scenes
  // in the table (cancel the first, then query again).
  query_->setEnabled(lib && logos_->count() > 0 && valid && !controller_->busy());
  // Pressing Cancel again while the current scene finishes would do nothing.
  cancel_->setEnabled(querying_ && !cancelling_);
}

void LogoView::CancelQuery() {
  if (!querying_ || cancelling_) return;
  controller_->CancelQuery();
  cancelling_ = true;
  // The scene under way stops at its next check (its search of the library looks at the cancel
  // every few dozen features; an extraction or a USAC run finishes first): say at once that the
  // cancel is pending rather than leave "Querying..." on the line.
  stage_->setText(tr("Cancelling… (an extraction or a verification finishes first)"));
  UpdateActions();
}

void LogoView::OpenLibrary(const QString& path, bool create) {
  controller_->OpenLibrary(path, create);
}
void LogoView::AddLogos(const QStringList& files) { controller_->AddLogos(files); }
void LogoView::RemoveLogos(const QStringList& names) { controller_->RemoveLogos(names); }

void LogoView::Query(const QStringList& scenes) {
  if (controller_->busy()) {
    Error(tr("Query"), tr("The library is busy (a query or a change is running): cancel it or "
                          "wait for it, then query again."));
    return;
  }
  std::string why;
  const matcher::LogoQueryOptions o = queryOptions();
  if (!o.Check(&why)) {
    Error(tr("Invalid query settings"), QString::fromStdString(why));
    return;
  }
  scenes_.clear();
  shown_scene_ = -1;
  table_->setRowCount(0);
  scene_view_->SetImage(QImage());
  FitImage(logo_image_, {});
  FitImage(region_image_, {});
  querying_ = true;
  cancelling_ = false;
  controller_->Query(scenes, o);
  UpdateActions();
}

void LogoView::AddSceneRows(int s) {
  const SceneResult& r = *scenes_[static_cast<std::size_t>(s)];
  const QString name = QFileInfo(r.path).fileName();
  const auto& dets = r.result.detections;
  const int n = std::max<int>(1, static_cast<int>(dets.size()));
  for (int i = 0; i < n; ++i) {
    const int row = table_->rowCount();
    table_->insertRow(row);
    auto* scene = Cell(name);
    scene->setToolTip(r.path);
    scene->setData(Qt::UserRole, QPoint(s, dets.empty() ? -1 : i));
    table_->setItem(row, kScene, scene);
    if (dets.empty()) {
      table_->setItem(row, kLogo, Cell(tr("no logo found")));
      for (int c : {kRank, kConfidence, kInliers, kCandidates, kInlierRatio})
        table_->setItem(row, c, Cell(QString()));
      continue;
    }
    const auto& d = dets[static_cast<std::size_t>(i)];
    table_->setItem(row, kRank, Cell(QString::number(i + 1), true));
    auto* logo = Cell(QString::fromStdString(d.name));
    logo->setForeground(LogoColor(d.logo_id).darker(130));
    table_->setItem(row, kLogo, logo);
    table_->setItem(row, kConfidence, Cell(QString::number(d.confidence, 'f', 3), true));
    table_->setItem(row, kInliers, Cell(QString::number(d.inliers), true));
    table_->setItem(row, kCandidates, Cell(QString::number(d.candidates), true));
    table_->setItem(row, kInlierRatio, Cell(QString::number(d.inlier_ratio, 'f', 2), true));
  }
}

void LogoView::ShowDetection(int s, int detection) {
  if (s < 0 || s >= static_cast<int>(scenes_.size())) return;
  const SceneResult& r = *scenes_[static_cast<std::size_t>(s)];
  if (s != shown_scene_) {
    scene_view_->SetImage(r.scene);
    shown_scene_ = s;
  }
  scene_view_->ClearOutlines();
  const auto& dets = r.result.detections;
  for (int i = 0; i < static_cast<int>(dets.size()); ++i) {
    const auto& d = dets[static_cast<std::size_t>(i)];
    QPolygonF poly;
    for (const auto& p : d.quad) poly << QPointF(p.x, p.y);
    scene_view_->AddOutline(poly,
                            QString("%1. %2  %3")
                                .arg(i + 1)
                                .arg(QString::fromStdString(d.name))
                                .arg(d.confidence, 0, 'f', 2),
                            LogoColor(d.logo_id), i == detection);
  }
  if (detection < 0 || detection >= static_cast<int>(dets.size())) {
    FitImage(logo_image_, {});
    FitImage(region_image_, {});
    detail_->setText(dets.empty() ? tr("No library logo was found in %1 (%2 features).")
                                        .arg(QFileInfo(r.path).fileName())
                                        .arg(r.result.scene_features)
                                  : QString());
    return;
  }
  const auto& d = dets[static_cast<std::size_t>(detection)];
  FitImage(logo_image_, r.logos[static_cast<std::size_t>(detection)]);
  FitImage(region_image_, r.regions[static_cast<std::size_t>(detection)]);
  detail_->setText(
      tr("<b>%1</b> in %2<br>confidence %3 · %4 inliers of %5 candidates (ratio %6)<br>"
         "outline: (%7, %8) (%9, %10) (%11, %12) (%13, %14)<br>times: extract %15 ms, kNN %16 ms, "
         "verify %17 ms · %18")
          .arg(QString::fromStdString(d.name), QFileInfo(r.path).fileName())
          .arg(d.confidence, 0, 'f', 3)
          .arg(d.inliers)
          .arg(d.candidates)
          .arg(d.inlier_ratio, 0, 'f', 2)
          .arg(d.quad[0].x, 0, 'f', 0)
          .arg(d.quad[0].y, 0, 'f', 0)
          .arg(d.quad[1].x, 0, 'f', 0)
          .arg(d.quad[1].y, 0, 'f', 0)
          .arg(d.quad[2].x, 0, 'f', 0)
          .arg(d.quad[2].y, 0, 'f', 0)
          .arg(d.quad[3].x, 0, 'f', 0)
          .arg(d.quad[3].y, 0, 'f', 0)
          .arg(r.result.extract_ms, 0, 'f', 1)
          .arg(r.result.knn_ms, 0, 'f', 1)
          .arg(r.result.verify_ms, 0, 'f', 1)
          .arg(QString::fromStdString(r.backend_note.empty() ? "backend: " + r.result.backend
                                                             : r.backend_note)));
}

void LogoView::FitImage(QLabel* label, const QImage& image) {
  (label == logo_image_ ? logo_source_ : region_source_) = image;
  if (image.isNull()) return label->clear();
  const QSize box(std::max(64, label->width() - 8), std::max(64, label->height() - 8));
  label->setPixmap(
      QPixmap::fromImage(image).scaled(box, Qt::KeepAspectRatio, Qt::SmoothTransformation));
}

void LogoView::ChooseNewLibrary() {
  QString start = LastFolder("library") + "/logos.db";
  for (;;) {
    // The dialog's own "replace it?" is off: an existing file is never replaced, and the one
    // question asked about it is the one below, with the choices that can be honoured.
    const QString path =
        QFileDialog::getSaveFileName(this, tr("New logo library"), start,
                                     tr("Logo library (*.db)"), nullptr,
                                     QFileDialog::DontConfirmOverwrite);
    if (path.isEmpty()) return;
    RememberFolder("library", path);
    if (!QFileInfo::exists(path)) return OpenLibrary(path, true);
    QMessageBox box(QMessageBox::Question, tr("New logo library"),
                    tr("%1 already exists. A new library never replaces a file: open this one, "
                       "or choose another name?")
                        .arg(QDir::toNativeSeparators(path)),
                    QMessageBox::NoButton, this);
    box.setObjectName("fm_library_exists");
    QPushButton* open = box.addButton(tr("Open It"), QMessageBox::AcceptRole);
    QPushButton* other = box.addButton(tr("Choose Another Name"), QMessageBox::ActionRole);
    box.addButton(QMessageBox::Cancel);
    box.setDefaultButton(other);
    box.exec();
    if (box.clickedButton() == open) return OpenLibrary(path, false);
    if (box.clickedButton() != other) return;
    start = path;
  }
}

void LogoView::ChooseLibrary() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open logo library"), LastFolder("library"),
                                   tr("Logo library (*.db);;All files (*)"));
  if (path.isEmpty()) return;
  RememberFolder("library", path);
  OpenLibrary(path, false);
}

void LogoView::ChooseLogos() {
  const QStringList files =
      QFileDialog::getOpenFileNames(this, tr("Add logos"), LastFolder("logos"), kImageFilter);
  if (files.isEmpty()) return;
  RememberFolder("logos", files.first());
  AddLogos(files);
}

void LogoView::RemoveSelected() {
  QStringList names;
  for (QListWidgetItem* item : logos_->selectedItems())
    names << item->data(Qt::UserRole).toString();
  if (!names.isEmpty()) RemoveLogos(names);
}

void LogoView::ChooseScenes() {
  const QStringList files =
      QFileDialog::getOpenFileNames(this, tr("Query scenes"), LastFolder("scenes"), kImageFilter);
  if (files.isEmpty()) return;
  RememberFolder("scenes", files.first());
  Query(files);
}

}  // namespace fm::ui
