#include "fm/ui/match_view.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStyle>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <cmath>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "fm/core/feature_io.h"
#include "fm/matcher/draw.h"
#include "fm/matcher/image.h"
#include "fm/ui/error_dialog.h"
#include "fm/ui/match_canvas.h"
#include "fm/ui/options_panel.h"

namespace fm::ui {

namespace {

QLabel* Value(const QString& name) {
  auto* l = new QLabel(QStringLiteral("–"));
  l->setObjectName(name);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont f = l->font();
  f.setBold(true);
  l->setFont(f);
  return l;
}

QLabel* Caption(const QString& text) {
  auto* l = new QLabel(text);
  l->setStyleSheet("color: #707070;");
  return l;
}

QString Ms(double ms) { return QString::number(ms, 'f', ms < 10 ? 2 : 1); }

}  // namespace

MatchView::MatchView(QWidget* parent)
    : QWidget(parent),
      controller_(new MatchController(this)),
      canvas_(new MatchCanvas),
      options_(new OptionsPanel),
      toolbar_(new QToolBar),
      rerun_timer_(new QTimer(this)) {
  setObjectName("fm_match_view");
  QStyle* st = style();

  // ---- actions --------------------------------------------------------------------------------
  open_a_ =
      new QAction(st->standardIcon(QStyle::SP_DialogOpenButton), tr("Open Image &A..."), this);
  open_a_->setShortcut(QKeySequence::Open);
  open_a_->setToolTip(tr("Open the first image (Ctrl+O)"));
  connect(open_a_, &QAction::triggered, this, [this] { ChooseImage(0); });
  open_b_ = new QAction(st->standardIcon(QStyle::SP_DirOpenIcon), tr("Open Image &B..."), this);
  open_b_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  open_b_->setToolTip(tr("Open the second image (Ctrl+Shift+O)"));
  connect(open_b_, &QAction::triggered, this, [this] { ChooseImage(1); });
  run_ = new QAction(st->standardIcon(QStyle::SP_MediaPlay), tr("&Run Match"), this);
  run_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_R), QKeySequence(Qt::Key_F5)});
  run_->setToolTip(tr("Match the two images (Ctrl+R, F5)"));
  connect(run_, &QAction::triggered, this, &MatchView::Run);
  cancel_ = new QAction(st->standardIcon(QStyle::SP_MediaStop), tr("&Cancel"), this);
  cancel_->setShortcut(QKeySequence(Qt::Key_Escape));
  connect(cancel_, &QAction::triggered, this, &MatchView::CancelMatch);
  save_drawing_ =
      new QAction(st->standardIcon(QStyle::SP_DialogSaveButton), tr("Save &Drawing..."), this);
  save_drawing_->setShortcut(QKeySequence::Save);
  connect(save_drawing_, &QAction::triggered, this, &MatchView::ChooseDrawingFile);
  save_report_ = new QAction(st->standardIcon(QStyle::SP_FileDialogDetailedView),
                             tr("Save &Report (JSON)..."), this);
  save_report_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
  connect(save_report_, &QAction::triggered, this, &MatchView::ChooseReportFile);
  zoom_in_ = new QAction(tr("Zoom &In"), this);
  zoom_in_->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  connect(zoom_in_, &QAction::triggered, canvas_, &MatchCanvas::ZoomIn);
  zoom_out_ = new QAction(tr("Zoom &Out"), this);
  zoom_out_->setShortcut(QKeySequence::ZoomOut);
  connect(zoom_out_, &QAction::triggered, canvas_, &MatchCanvas::ZoomOut);
  zoom_fit_ = new QAction(tr("&Fit to Window"), this);
  zoom_fit_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  connect(zoom_fit_, &QAction::triggered, canvas_, &MatchCanvas::Fit);
  zoom_actual_ = new QAction(tr("Actual &Size"), this);
  zoom_actual_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
  connect(zoom_actual_, &QAction::triggered, canvas_, &MatchCanvas::ZoomActual);
  show_keypoints_ = new QAction(tr("Show &Keypoints"), this);
  show_keypoints_->setCheckable(true);
  show_keypoints_->setChecked(true);
  show_keypoints_->setShortcut(QKeySequence(Qt::Key_K));
  connect(show_keypoints_, &QAction::toggled, canvas_, &MatchCanvas::SetShowKeypoints);
  show_outliers_ = new QAction(tr("Show &Outliers"), this);
  show_outliers_->setCheckable(true);
  show_outliers_->setChecked(true);
  show_outliers_->setShortcut(QKeySequence(Qt::Key_L));
  connect(show_outliers_, &QAction::toggled, canvas_, &MatchCanvas::SetShowOutliers);
  swap_ = new QAction(tr("S&wap A and B"), this);
  swap_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_W));
  swap_->setToolTip(tr("Exchange the two images (Ctrl+W)"));
  connect(swap_, &QAction::triggered, this, &MatchView::SwapImages);

  toolbar_->setObjectName("fm_match_toolbar");
  toolbar_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toolbar_->addAction(open_a_);
  toolbar_->addAction(open_b_);
  toolbar_->addSeparator();
  toolbar_->addAction(run_);
  toolbar_->addSeparator();
  toolbar_->addAction(zoom_fit_);
  toolbar_->addAction(zoom_in_);
  toolbar_->addAction(zoom_out_);
  toolbar_->addSeparator();
  toolbar_->addAction(show_keypoints_);
  toolbar_->addAction(show_outliers_);
  toolbar_->addSeparator();
  toolbar_->addAction(save_drawing_);
  toolbar_->addAction(save_report_);

  // ---- status area ----------------------------------------------------------------------------
  auto* status = new QFrame;
  status->setObjectName("fm_match_status");
  status->setFrameShape(QFrame::StyledPanel);
  auto* grid = new QGridLayout(status);
  grid->setContentsMargins(8, 6, 8, 6);
  grid->setHorizontalSpacing(10);
  features_[0] = Value("fm_features_a");
  features_[1] = Value("fm_features_b");
  matches_ = Value("fm_matches");
  inliers_ = Value("fm_inliers");
  model_ = new QLabel;
  model_->setObjectName("fm_model");
  times_ = new QLabel;
  times_->setObjectName("fm_times");
  times_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  backend_ = new QLabel;
  backend_->setObjectName("fm_backend");
  info_ = new QLabel(tr("Hover or click a match line to see its distance and ratio."));
  info_->setObjectName("fm_match_info");
  info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stage_ = new QLabel;
  stage_->setObjectName("fm_stage");
  progress_ = new QProgressBar;
  progress_->setRange(0, 0);
  progress_->setMaximumWidth(160);
  progress_->setVisible(false);
  cancel_button_ = new QPushButton(tr("Cancel"));
  cancel_button_->setVisible(false);
  connect(cancel_button_, &QPushButton::clicked, this, &MatchView::CancelMatch);

  int c = 0;
  grid->addWidget(Caption(tr("Features A")), 0, c++);
  grid->addWidget(features_[0], 0, c++);
  grid->addWidget(Caption(tr("Features B")), 0, c++);
  grid->addWidget(features_[1], 0, c++);
  grid->addWidget(Caption(tr("Matches")), 0, c++);
  grid->addWidget(matches_, 0, c++);
  grid->addWidget(Caption(tr("Inliers")), 0, c++);
  grid->addWidget(inliers_, 0, c++);
  grid->addWidget(model_, 0, c++);
  grid->setColumnStretch(c, 1);
  grid->addWidget(stage_, 0, c++, Qt::AlignRight);
  grid->addWidget(progress_, 0, c++);
  grid->addWidget(cancel_button_, 0, c++);
  auto* legend =
      new QLabel(tr("<span style='color:#46e15a'>&#9644;</span> inlier &nbsp; "
                    "<span style='color:#eb3c3c'>&#9644;</span> outlier &nbsp; "
                    "<span style='color:#50c8ff'>&#9644;</span> not verified &nbsp; "
                    "<span style='color:#ffc828'>&#9675;</span> keypoint"));
  legend->setObjectName("fm_legend");
  grid->addWidget(legend, 3, c - 3, 1, 3, Qt::AlignRight);
  grid->addWidget(times_, 1, 0, 1, c);
  grid->addWidget(backend_, 2, 0, 1, c);
  grid->addWidget(info_, 3, 0, 1, c - 3);

  // ---- layout ---------------------------------------------------------------------------------
  auto* scroll = new QScrollArea;
  scroll->setWidget(options_);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(options_->sizeHint().width() + 24);
  auto* run_button = new QPushButton(st->standardIcon(QStyle::SP_MediaPlay), tr("Run match"));
  run_button->setObjectName("fm_run_button");
  connect(run_button, &QPushButton::clicked, run_, &QAction::trigger);
  connect(run_, &QAction::changed, run_button, [this, run_button] {
    run_button->setEnabled(run_->isEnabled());
    run_button->setToolTip(run_->toolTip());
  });
  // Why Run is disabled, between the panel and the button: inside the scrolled panel it was out
  // of sight at the usual window sizes.
  problem_ = options_->problemLabel();
  auto* side = new QWidget;
  auto* side_layout = new QVBoxLayout(side);
  side_layout->setContentsMargins(0, 0, 0, 0);
  side_layout->addWidget(scroll, 1);
  side_layout->addWidget(problem_);
  side_layout->addWidget(run_button);

  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->setObjectName("fm_match_splitter");
  splitter->addWidget(canvas_);
  splitter->addWidget(side);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 0);
  splitter->setCollapsible(0, false);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(toolbar_);
  layout->addWidget(splitter, 1);
  layout->addWidget(status);

  // ---- wiring ---------------------------------------------------------------------------------
  rerun_timer_->setSingleShot(true);
  rerun_timer_->setInterval(350);
  connect(rerun_timer_, &QTimer::timeout, this, [this] {
    if (imageReady(0) && imageReady(1) && options_->Valid()) Run();
  });
  connect(options_, &OptionsPanel::changed, this, [this] {
    UpdateActions();
    if (options_->autoRun() && imageReady(0) && imageReady(1)) rerun_timer_->start();
  });
  connect(canvas_, &MatchCanvas::filesDropped, this, [this](int side, const QStringList& paths) {
    if (paths.size() >= 2) {
      OpenImage(0, paths[0]);
      OpenImage(1, paths[1]);
    } else if (!paths.isEmpty()) {
      OpenImage(side, paths[0]);
    }
  });
  connect(canvas_, &MatchCanvas::matchHovered, this,
          [this](int i) { ShowMatchInfo(i >= 0 ? i : canvas_->selected()); });
  connect(canvas_, &MatchCanvas::matchSelected, this, &MatchView::ShowMatchInfo);

  connect(controller_, &MatchController::imageLoaded, this,
          [this](int side, const QString& path, const QImage& image) {
            if (path != loading_[side]) return;  // a newer file was chosen meanwhile
            CommitImage(side, path, image);
          });
  connect(controller_, &MatchController::imageFailed, this,
          [this](int side, const QString& path, const QString& message) {
            if (path != loading_[side]) return;
            // The pane keeps what it showed: its image, caption and result still belong together.
            loading_[side].clear();
            UpdateActions();
            stage_->setText(paths_[side].isEmpty()
                                ? tr("Could not open %1").arg(QFileInfo(path).fileName())
                                : tr("Could not open %1; still showing %2")
                                      .arg(QFileInfo(path).fileName(),
                                           QFileInfo(paths_[side]).fileName()));
            // The open cancelled a match of the pair still shown: run it again.
            if (!outcome_ && options_->autoRun() && imageReady(0) && imageReady(1) &&
                options_->Valid())
              Run();
            Error(tr("Cannot open image %1").arg(side == 0 ? "A" : "B"),
                  tr("%1 could not be opened.\n\n%2").arg(QFileInfo(path).fileName(), message));
          });
  connect(controller_, &MatchController::started, this, [this] {
    cancelling_ = false;
    SetBusy(true, tr("Starting"));
  });
  connect(controller_, &MatchController::progress, this, [this](const QString& stage) {
    if (cancelling_) return;  // the worker finishes its stage; the line keeps saying why
    SetBusy(true, stage);
  });
  connect(controller_, &MatchController::queued, this, [this] {
    cancelling_ = false;
    SetBusy(true, tr("Restarting with the new settings"));
  });
  connect(controller_, &MatchController::cancelled, this, [this] {
    cancelling_ = false;
    SetBusy(false);
    // Opening an image cancels the match of the old pair: the loading line stays.
    bool loading = false;
    for (const QString& l : loading_) loading = loading || !l.isEmpty();
    if (!loading) stage_->setText(tr("Cancelled"));
  });
  connect(controller_, &MatchController::failed, this,
          [this](const QString& title, const QString& message) {
            cancelling_ = false;
            SetBusy(false);
            stage_->setText(tr("Failed"));
            Error(title, options_->InPanelTerms(message));
          });
  connect(controller_, &MatchController::finished, this, [this](auto outcome) {
    cancelling_ = false;
    SetBusy(false);
    // An image was replaced while this match ran: its result belongs to the old pair.
    if (outcome->request.path_a != paths_[0] || outcome->request.path_b != paths_[1]) {
      stage_->setText(tr("Discarded the result of the previous images"));
      return;
    }
    ShowOutcome(std::move(outcome));
    emit matchFinished();
  });
  connect(&save_watcher_, &QFutureWatcher<QString>::finished, this, [this] {
    const QString error = save_watcher_.result();
    const QString path = saving_path_;
    progress_->setVisible(busy());
    if (!busy())
      stage_->setText(error.isEmpty() ? tr("Saved %1").arg(QFileInfo(path).fileName())
                                      : tr("Drawing not saved"));
    UpdateActions();
    if (!error.isEmpty()) Error(tr("Cannot save the drawing"), error);
    emit drawingSaved(path, error);
  });
  UpdateActions();
}

MatchView::~MatchView() { save_watcher_.waitForFinished(); }

bool MatchView::busy() const { return controller_->busy(); }

void MatchView::CancelMatch() {
  controller_->Cancel();
  if (!busy()) return;
  // The worker stops at its next check (a kNN search and the guided pass look at the cancel as
  // they go; an extraction or a USAC run finishes first), which can take a while: say that the
  // cancel is pending, and that pressing again is useless.
  cancelling_ = true;
  stage_->setText(tr("Cancelling… (an extraction or a verification finishes first)"));
  cancel_button_->setEnabled(false);
  cancel_->setEnabled(false);
}

void MatchView::Error(const QString& title, const QString& text) {
  ShowError(this, title, text);
  emit errorShown(title, text);
}

void MatchView::OpenImage(int side, const QString& path) {
  if (side < 0 || side > 1 || path.isEmpty()) return;
  loading_[side] = path;
  rerun_timer_->stop();
  controller_->Cancel();  // a match of the previous image is out of date
  cancelling_ = false;
  UpdateActions();
  stage_->setText(tr("Loading %1").arg(QFileInfo(path).fileName()));
  controller_->LoadImage(side, path);
}

void MatchView::CommitImage(int side, const QString& path, const QImage& image) {
  loading_[side].clear();
  paths_[side] = path;
  ready_[side] = true;
  ClearResult();
  canvas_->SetImage(side, image);
  canvas_->SetTitle(side, QString("%1: %2  (%3 × %4)")
                              .arg(side == 0 ? "A" : "B", QFileInfo(path).fileName())
                              .arg(image.width())
                              .arg(image.height()));
  if (!busy()) stage_->setText(tr("Opened %1").arg(QFileInfo(path).fileName()));
  UpdateActions();
  emit imageOpened(side, path);
  emit pairChanged(PairTitle());
  if (options_->autoRun() && imageReady(0) && imageReady(1) && options_->Valid()) Run();
}

QString MatchView::PairTitle() const {
  const QString a = paths_[0].isEmpty() ? tr("(no image A)") : QFileInfo(paths_[0]).fileName();
  const QString b = paths_[1].isEmpty() ? tr("(no image B)") : QFileInfo(paths_[1]).fileName();
  return QString("%1 ↔ %2").arg(a, b);
}

void MatchView::SwapImages() {
  if (paths_[0].isEmpty() && paths_[1].isEmpty()) return;
  const QString a = paths_[0], b = paths_[1];
  // Reopened from the cache: no disk read when both were loaded.
  if (!b.isEmpty()) OpenImage(0, b);
  if (!a.isEmpty()) OpenImage(1, a);
  if (b.isEmpty()) {
    ClearResult();
    paths_[0].clear();
    loading_[0].clear();
    ready_[0] = false;
    canvas_->SetImage(0, QImage());
    canvas_->SetTitle(0, QString());
  }
  if (a.isEmpty()) {
    ClearResult();
    paths_[1].clear();
    loading_[1].clear();
    ready_[1] = false;
    canvas_->SetImage(1, QImage());
    canvas_->SetTitle(1, QString());
  }
  UpdateActions();
}

void MatchView::ClearResult() {
  outcome_.reset();
  canvas_->SetOutcome(nullptr);
  for (auto* l : {features_[0], features_[1], matches_, inliers_}) l->setText(QStringLiteral("–"));
  model_->clear();
  times_->clear();
  info_->setText(tr("Hover or click a match line to see its distance and ratio."));
}

void MatchView::Run() {
  if (!imageReady(0) || !imageReady(1)) {
    Error(tr("Nothing to match"),
          tr("Open two images first: File > Open Image A (Ctrl+O) and Open Image B "
             "(Ctrl+Shift+O), or drop them on the panes."));
    return;
  }
  QString why;
  if (!options_->Valid(&why)) {
    Error(tr("Invalid settings"), why);
    return;
  }
  rerun_timer_->stop();
  MatchRequest r;
  r.path_a = paths_[0];
  r.path_b = paths_[1];
  r.sift = options_->sift();
  r.match = options_->match();
  r.backend = options_->backend();
  controller_->Run(r);
}

void MatchView::SetBusy(bool busy, const QString& stage) {
  progress_->setVisible(busy || savingDrawing());
  cancel_button_->setVisible(busy);
  cancel_button_->setEnabled(busy);
  cancel_->setEnabled(active_ && busy);
  stage_->setText(stage);
}

void MatchView::UpdateActions() {
  QString why;
  const bool valid = options_->Valid(&why);
  run_->setEnabled(active_ && imageReady(0) && imageReady(1) && valid);
  // The reason Run is disabled, where the pointer is when the button does not react.
  if (!imageReady(0) || !imageReady(1)) {
    run_->setToolTip(tr("Open two images first (Ctrl+O, Ctrl+Shift+O)"));
  } else if (!valid) {
    run_->setToolTip(tr("Cannot run: %1").arg(why));
  } else {
    run_->setToolTip(tr("Match the two images (Ctrl+R, F5)"));
  }
  save_drawing_->setEnabled(active_ && outcome_ != nullptr && !savingDrawing());
  save_report_->setEnabled(active_ && outcome_ != nullptr);
  cancel_->setEnabled(active_ && busy() && !cancelling_);
  for (QAction* a : {zoom_in_, zoom_out_, zoom_fit_, zoom_actual_, show_keypoints_, show_outliers_})
    a->setEnabled(active_);
  swap_->setEnabled(active_ && (!paths_[0].isEmpty() || !paths_[1].isEmpty()));
}

void MatchView::SetActive(bool active) {
  active_ = active;
  UpdateActions();
}

void MatchView::ShowOutcome(std::shared_ptr<const MatchOutcome> outcome) {
  outcome_ = std::move(outcome);
  const MatchOutcome& o = *outcome_;
  const auto& r = o.result;
  canvas_->SetOutcome(outcome_);
  features_[0]->setText(QString::number(r.features_a));
  features_[1]->setText(QString::number(r.features_b));
  matches_->setText(QString::number(r.matches.size()));
  inliers_->setText(QString::number(r.num_inliers()));
  const auto& v = r.verification;
  if (v.model == matcher::GeometryModel::kNone) {
    model_->setText(tr("verification off"));
    model_->setStyleSheet("");
  } else if (v.verified) {
    QString text = std::isfinite(v.log10_nfa)
                       ? tr("✔ %1 verified (NFA 10^%2)")
                             .arg(matcher::GeometryModelName(v.model))
                             .arg(v.log10_nfa, 0, 'f', 1)
                       : tr("✔ %1 verified").arg(matcher::GeometryModelName(v.model));
    if (r.guided.applied)
      text += tr(" · guided: %1 → %2 inliers").arg(r.guided.inliers_before).arg(v.num_inliers);
    model_->setText(text);
    model_->setStyleSheet("color: #3fae4f; font-weight: bold;");
  } else {
    // Enough inliers, too few distinct points among them: say so, not "no model".
    const int min_inliers = o.request.match.verify.min_inliers;
    const QString at_points =
        matcher::InliersTooCrowded(v, o.request.match.verify)
            ? (v.distinct_inliers == 1
                   ? tr(" (%1 inliers at one point)").arg(v.num_inliers)
                   : tr(" (%1 inliers at %2 distinct points)")
                         .arg(v.num_inliers)
                         .arg(v.distinct_inliers))
        : matcher::InliersByChance(v, o.request.match.verify)
            ? tr(" (%1 inliers, as random matches would give: NFA 10^%2)")
                  .arg(v.num_inliers)
                  .arg(v.log10_nfa, 0, 'f', 1)
            : QString();
    model_->setText(tr("✘ no %1 with %2 inliers%3")
                        .arg(matcher::GeometryModelName(o.request.match.verify.model))
                        .arg(min_inliers)
                        .arg(at_points));
    model_->setStyleSheet("color: #d9534f; font-weight: bold;");
  }
  QStringList t;
  t << tr("load A %1").arg(Ms(o.load_ms_a)) << tr("load B %1").arg(Ms(o.load_ms_b));
  t << (o.features_cached_a ? tr("extract A cached") : tr("extract A %1").arg(Ms(o.extract_ms_a)));
  t << (o.features_cached_b ? tr("extract B cached") : tr("extract B %1").arg(Ms(o.extract_ms_b)));
  for (const auto& s : r.times)
    t << QString("%1 %2").arg(QString::fromStdString(s.stage), Ms(s.ms));
  times_->setText(tr("Times (ms): %1  ·  this run %2").arg(t.join(", "), Ms(o.total_ms)));
  backend_->setText(
      QString::fromStdString(o.backend_note.empty() ? "backend: " + r.backend : o.backend_note));
  stage_->setText(tr("Done"));
  ShowMatchInfo(-1);
  UpdateActions();
}

void MatchView::ShowMatchInfo(int index) {
  if (!outcome_ || index < 0 || index >= static_cast<int>(outcome_->result.matches.size())) {
    info_->setText(outcome_ ? tr("Hover or click a match line to see its distance and ratio.")
                            : QString());
    return;
  }
  const auto& r = outcome_->result;
  const auto& m = r.matches[static_cast<std::size_t>(index)];
  const auto& ka = outcome_->features_a->keypoints[static_cast<std::size_t>(m.query)];
  const auto& kb = outcome_->features_b->keypoints[static_cast<std::size_t>(m.train)];
  QString kind;
  const auto& v = r.verification;
  if (v.model == matcher::GeometryModel::kNone || v.inliers.empty()) {
    kind = tr("not verified");
  } else {
    kind = v.inliers[static_cast<std::size_t>(index)] ? tr("inlier") : tr("outlier");
  }
  info_->setText(tr("Match %1 of %2%3:  A #%4 (%5, %6)  ↔  B #%7 (%8, %9)  ·  distance %10  ·  "
                    "ratio %11  ·  %12")
                     .arg(index + 1)
                     .arg(r.matches.size())
                     .arg(index == canvas_->selected() ? tr(" (selected)") : QString())
                     .arg(m.query)
                     .arg(ka.x, 0, 'f', 1)
                     .arg(ka.y, 0, 'f', 1)
                     .arg(m.train)
                     .arg(kb.x, 0, 'f', 1)
                     .arg(kb.y, 0, 'f', 1)
                     .arg(m.distance, 0, 'f', 2)
                     .arg(m.ratio, 0, 'f', 3)
                     .arg(kind));
}

namespace {

// Writes `size` bytes to `path` whole or not at all (core::WriteFileWhole, as the CLI's outputs);
// `why` gets the reason on failure.
bool WriteFileAtomically(const QString& path, const char* data, qint64 size, QString* why) {
  std::string reason;
  if (core::WriteFileWhole(path.toStdString(), std::string(data, static_cast<std::size_t>(size)),
                           &reason))
    return true;
  if (why) *why = QObject::tr("Cannot write %1: %2").arg(path, QString::fromStdString(reason));
  return false;
}

// Draws `o` as DrawMatchResult does and writes it to `path` (PNG or JPEG by extension); returns
// the reason on failure, empty on success. Touches no widget: runs on a worker thread too.
QString WriteDrawing(const MatchOutcome& o, const QString& path, matcher::DrawOptions d) {
  try {
    const cv::Mat canvas = matcher::DrawMatchResult(*o.color_a, *o.color_b, *o.features_a,
                                                    *o.features_b, o.result, d);
    QString ext = QFileInfo(path).suffix().toLower();
    if (ext.isEmpty()) ext = "png";
    std::vector<uchar> bytes;
    // imencode throws for a type it has no encoder for (.gif): the same message as its refusal.
    if (!matcher::CanWriteImage("x." + ext.toStdString()) ||
        !cv::imencode("." + ext.toStdString(), canvas, bytes))
      return QObject::tr("OpenCV cannot encode images as .%1; use .png or .jpg.").arg(ext);
    QString why;
    if (!WriteFileAtomically(path, reinterpret_cast<const char*>(bytes.data()),
                             static_cast<qint64>(bytes.size()), &why))
      return why;
    return {};
  } catch (const std::bad_alloc&) {
    return QObject::tr("There was not enough memory to draw the two images.");
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

}  // namespace

bool MatchView::SaveDrawing(const QString& path, QString* why) const {
  if (!outcome_) {
    if (why) *why = tr("There is no match result to draw yet.");
    return false;
  }
  matcher::DrawOptions d;
  d.draw_keypoints = show_keypoints_->isChecked();
  d.draw_outliers = show_outliers_->isChecked();
  const QString error = WriteDrawing(*outcome_, path, d);
  if (why) *why = error;
  return error.isEmpty();
}

bool MatchView::StartSaveDrawing(const QString& path) {
  if (!outcome_ || savingDrawing()) return false;
  matcher::DrawOptions d;
  d.draw_keypoints = show_keypoints_->isChecked();
  d.draw_outliers = show_outliers_->isChecked();
  saving_path_ = path;
  // The worker holds its own reference to the outcome: a new result may replace outcome_ while
  // the old one is drawn.
  save_watcher_.setFuture(QtConcurrent::run(
      [o = outcome_, path, d] { return WriteDrawing(*o, path, d); }));
  progress_->setVisible(true);
  stage_->setText(tr("Saving %1…").arg(QFileInfo(path).fileName()));
  UpdateActions();
  return true;
}

bool MatchView::SaveReport(const QString& path, QString* why) const {
  if (!outcome_) {
    if (why) *why = tr("There is no match result to report yet.");
    return false;
  }
  try {
    const auto& o = *outcome_;
    const auto& m = o.request.match;
    nlohmann::json report = matcher::MatchResultToJson(o.result, *o.features_a, *o.features_b);
    report["inputs"] = {{"a", o.request.path_a.toStdString()},
                        {"b", o.request.path_b.toStdString()}};
    report["settings"] = matcher::MatchSettingsToJson(o.request.sift, m, o.request.backend);
    report["times_ms"]["load_a"] = o.load_ms_a;
    report["times_ms"]["load_b"] = o.load_ms_b;
    // Features reused from an earlier run were not extracted by this one: no time (null) rather
    // than a 0 that reads as measured, and "cached" says which.
    report["times_ms"]["extract_a"] =
        o.features_cached_a ? nlohmann::json(nullptr) : nlohmann::json(o.extract_ms_a);
    report["times_ms"]["extract_b"] =
        o.features_cached_b ? nlohmann::json(nullptr) : nlohmann::json(o.extract_ms_b);
    report["cached"] = {{"features_a", o.features_cached_a}, {"features_b", o.features_cached_b}};
    const std::string text = report.dump(2) + "\n";
    return WriteFileAtomically(path, text.data(), static_cast<qint64>(text.size()), why);
  } catch (const std::exception& e) {
    if (why) *why = QString::fromStdString(e.what());
    return false;
  }
}

QString MatchView::LastFolder(const QString& key) const {
  QSettings s;
  return s.value("folders/" + key).toString();
}

void MatchView::RememberFolder(const QString& key, const QString& file) const {
  QSettings s;
  s.setValue("folders/" + key, QFileInfo(file).absolutePath());
}

void MatchView::ChooseImage(int side) {
  const QString path = QFileDialog::getOpenFileName(
      this, side == 0 ? tr("Open image A") : tr("Open image B"), LastFolder("images"),
      tr("Images (*.png *.jpg *.jpeg *.bmp *.tif *.tiff *.webp *.pgm *.ppm);;All files (*)"));
  if (path.isEmpty()) return;
  RememberFolder("images", path);
  OpenImage(side, path);
}

void MatchView::ChooseDrawingFile() {
  if (!outcome_) return;
  QString suggestion = LastFolder("output");
  if (!suggestion.isEmpty()) suggestion += '/';
  suggestion += QFileInfo(paths_[0]).completeBaseName() + "_" +
                QFileInfo(paths_[1]).completeBaseName() + "_matches.png";
  const QString path = QFileDialog::getSaveFileName(this, tr("Save drawing"), suggestion,
                                                    tr("PNG image (*.png);;JPEG image (*.jpg)"));
  if (path.isEmpty()) return;
  RememberFolder("output", path);
  StartSaveDrawing(path);
}

void MatchView::ChooseReportFile() {
  if (!outcome_) return;
  QString suggestion = LastFolder("output");
  if (!suggestion.isEmpty()) suggestion += '/';
  suggestion += QFileInfo(paths_[0]).completeBaseName() + "_" +
                QFileInfo(paths_[1]).completeBaseName() + "_report.json";
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save report"), suggestion, tr("JSON (*.json)"));
  if (path.isEmpty()) return;
  RememberFolder("output", path);
  QString why;
  if (!SaveReport(path, &why)) Error(tr("Cannot save the report"), why);
}

void MatchView::SaveSettings(QSettings& s) const {
  options_->Save(s);
  s.setValue("view/keypoints", show_keypoints_->isChecked());
  s.setValue("view/outliers", show_outliers_->isChecked());
}

void MatchView::LoadSettings(QSettings& s) {
  options_->Load(s);
  show_keypoints_->setChecked(s.value("view/keypoints", true).toBool());
  show_outliers_->setChecked(s.value("view/outliers", true).toBool());
}

}  // namespace fm::ui
