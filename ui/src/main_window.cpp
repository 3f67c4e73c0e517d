#include "fm/ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>

#include "fm/matcher/backend.h"
#include "fm/ui/batch_view.h"
#include "fm/ui/logo_view.h"
#include "fm/ui/match_canvas.h"
#include "fm/ui/match_view.h"
#include "fm/ui/options_panel.h"

// Resources of a static library are registered by hand (outside any namespace).
static void InitFeatmatchResources() { Q_INIT_RESOURCE(featmatch); }

namespace fm::ui {

namespace {
constexpr int kMaxRecent = 10;
}

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      tabs_(new QTabWidget),
      match_view_(new MatchView),
      logo_view_(new LogoView),
      batch_view_(new BatchView(match_view_->options())) {
  InitFeatmatchResources();
  setWindowTitle(tr("featmatch"));
  setWindowIcon(QIcon(":/featmatch/featmatch.png"));
  setObjectName("fm_main_window");
  tabs_->setObjectName("fm_tabs");
  tabs_->setDocumentMode(true);
  tabs_->addTab(match_view_, tr("Match"));
  tabs_->addTab(logo_view_, tr("Logos"));
  tabs_->addTab(batch_view_, tr("Batch"));
  setCentralWidget(tabs_);
  BuildMenus();
  connect(tabs_, &QTabWidget::currentChanged, this,
          [this] { match_view_->SetActive(tabs_->currentWidget() == match_view_); });
  // Opening an image from another view brings the match view forward.
  for (QAction* a : {match_view_->openA(), match_view_->openB()})
    connect(a, &QAction::triggered, this, [this] { tabs_->setCurrentWidget(match_view_); });

  std::string gpu;
  auto* device =
      new QLabel(matcher::GpuAvailable(&gpu) ? tr("GPU: %1").arg(QString::fromStdString(gpu))
                                             : tr("No GPU: kNN runs on the CPU"));
  device->setObjectName("fm_device_label");
  statusBar()->addPermanentWidget(device);
  connect(match_view_, &MatchView::imageOpened, this, [this](int, const QString& path) {
    AddRecentFile(path);
    statusBar()->showMessage(tr("Opened %1").arg(QDir::toNativeSeparators(path)), 4000);
  });
  connect(match_view_, &MatchView::pairChanged, this,
          [this](const QString& pair) { setWindowTitle(tr("featmatch — %1").arg(pair)); });
  connect(match_view_->canvas(), &MatchCanvas::zoomChanged, this, [this](double z) {
    statusBar()->showMessage(tr("Zoom %1%").arg(qRound(z * 100)), 1500);
  });

  QSettings settings;
  match_view_->LoadSettings(settings);
  logo_view_->LoadSettings(settings);
  // Logo queries use the backend chosen in the match view's panel.
  auto sync_backend = [this] {
    try {
      logo_view_->controller()->SetBackend(match_view_->options()->backend());
    } catch (const std::exception&) {
      // an invalid panel is reported there; the logo view keeps its backend
    }
  };
  sync_backend();
  connect(match_view_->options(), &OptionsPanel::changed, this, sync_backend);
  if (!restoreGeometry(settings.value("window/geometry").toByteArray())) resize(1440, 900);
  tabs_->setCurrentIndex(settings.value("window/tab", 0).toInt());
}

MainWindow::~MainWindow() = default;

void MainWindow::BuildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(match_view_->openA());
  file->addAction(match_view_->openB());
  recent_a_ = file->addMenu(tr("Open Recent as &A"));
  recent_b_ = file->addMenu(tr("Open Recent as B"));
  file->addSeparator();
  file->addAction(match_view_->saveDrawingAction());
  file->addAction(match_view_->saveReportAction());
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* match = menuBar()->addMenu(tr("&Match"));
  match->addAction(match_view_->runAction());
  match->addAction(match_view_->cancelAction());
  match->addSeparator();
  match->addAction(match_view_->swapAction());

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(match_view_->zoomInAction());
  view->addAction(match_view_->zoomOutAction());
  view->addAction(match_view_->zoomFitAction());
  view->addAction(match_view_->zoomActualAction());
  view->addSeparator();
  view->addAction(match_view_->keypointsAction());
  view->addAction(match_view_->outliersAction());

  QMenu* logos = menuBar()->addMenu(tr("&Logos"));
  logos->addActions(logo_view_->menuActions());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keyboard Shortcuts"), QKeySequence::HelpContents, this, [this] {
    QStringList rows;
    for (QAction* a : {match_view_->openA(), match_view_->openB(), match_view_->runAction(),
                       match_view_->cancelAction(), match_view_->saveDrawingAction(),
                       match_view_->saveReportAction(), match_view_->zoomInAction(),
                       match_view_->zoomOutAction(), match_view_->zoomFitAction(),
                       match_view_->zoomActualAction(), match_view_->keypointsAction(),
                       match_view_->outliersAction(), match_view_->swapAction()}) {
      QStringList keys;
      for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
      rows << QString("<tr><td><b>%1</b></td><td>%2</td></tr>")
                  .arg(keys.join(", ").toHtmlEscaped(), a->text().remove('&').remove("..."));
    }
    rows << tr(
        "<tr><td><b>Wheel</b></td><td>Zoom at the cursor</td></tr>"
        "<tr><td><b>Drag</b></td><td>Pan</td></tr>"
        "<tr><td><b>Hover / click</b></td><td>Inspect / select a match</td></tr>");
    QMessageBox::information(this, tr("Keyboard shortcuts"),
                             "<table cellspacing='6'>" + rows.join("") + "</table>");
  });
  help->addAction(tr("&About featmatch"), this, &MainWindow::ShowAbout);
  RebuildRecentMenus();
}

QStringList MainWindow::RecentFiles() { return QSettings().value("recent/files").toStringList(); }

void MainWindow::AddRecentFile(const QString& path) {
  QStringList files = RecentFiles();
  const QString abs = QFileInfo(path).absoluteFilePath();
  files.removeAll(abs);
  files.prepend(abs);
  while (files.size() > kMaxRecent) files.removeLast();
  QSettings().setValue("recent/files", files);
  RebuildRecentMenus();
}

void MainWindow::RebuildRecentMenus() {
  const QStringList files = RecentFiles();
  for (int side = 0; side < 2; ++side) {
    QMenu* menu = side == 0 ? recent_a_ : recent_b_;
    menu->clear();
    for (int i = 0; i < files.size(); ++i) {
      const QString path = files[i];
      QAction* a =
          menu->addAction(QString("&%1  %2").arg((i + 1) % 10).arg(QFileInfo(path).fileName()));
      a->setToolTip(path);
      connect(a, &QAction::triggered, this, [this, side, path] {
        tabs_->setCurrentWidget(match_view_);
        match_view_->OpenImage(side, path);
      });
    }
    if (files.isEmpty()) menu->addAction(tr("(none)"))->setEnabled(false);
    menu->addSeparator();
    menu->addAction(tr("Clear List"), this, [this] {
      QSettings().remove("recent/files");
      RebuildRecentMenus();
    });
  }
}

void MainWindow::ShowAbout() {
  std::string gpu;
  const bool has_gpu = matcher::GpuAvailable(&gpu);
  QMessageBox::about(
      this, tr("About featmatch"),
      tr("<h3>featmatch</h3><p>Feature matching: SIFT / RootSIFT features, exact k-nearest "
         "neighbours on the GPU or the CPU, ratio and mutual filters, USAC verification.</p>"
         "<p>%1</p>")
          .arg(has_gpu ? tr("GPU: %1").arg(QString::fromStdString(gpu))
                       : tr("No GPU available: the CPU backend is used.")));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/tab", tabs_->currentIndex());
  match_view_->SaveSettings(settings);
  logo_view_->SaveSettings(settings);
  event->accept();
}

void MainWindow::FailScreenshots(const QString& why) {
  delete tour_;
  tour_ = nullptr;
  emit screenshotsDone(false, why);
}

void MainWindow::StartScreenshots(const ScreenshotPlan& plan) {
  if (!QDir().mkpath(plan.dir)) {
    emit screenshotsDone(false, tr("cannot create %1").arg(plan.dir));
    return;
  }
  delete tour_;
  tour_ = new QObject(this);
  tour_dir_ = plan.dir;
  auto* timeout = new QTimer(tour_);
  timeout->setSingleShot(true);
  connect(timeout, &QTimer::timeout, this,
          [this] { FailScreenshots(tr("the views did not finish within 300 s")); });
  timeout->start(300000);
  auto fail = [this](const QString& title, const QString& text) {
    FailScreenshots(title + ": " + text);
  };
  connect(match_view_, &MatchView::errorShown, tour_, fail);
  connect(logo_view_, &LogoView::errorShown, tour_, fail);
  connect(batch_view_, &BatchView::errorShown, tour_, fail);

  auto* step = new QObject(tour_);
  connect(match_view_, &MatchView::matchFinished, step, [this, step, plan] {
    delete step;
    // Select the first inlier so the picture shows a highlighted match.
    if (auto o = match_view_->outcome()) {
      const auto& inl = o->result.verification.inliers;
      for (std::size_t i = 0; i < inl.size(); ++i)
        if (inl[i]) {
          match_view_->canvas()->SelectMatch(static_cast<int>(i));
          break;
        }
    }
    ScreenshotLogos(plan);
  });
  tabs_->setCurrentWidget(match_view_);
  match_view_->OpenImage(0, plan.image_a);
  match_view_->OpenImage(1, plan.image_b);
}

void MainWindow::ScreenshotLogos(const ScreenshotPlan& plan) {
  if (plan.logos.isEmpty() || plan.scenes.isEmpty()) return ScreenshotBatch(plan);
  auto* temp = new QTemporaryDir;
  connect(tour_, &QObject::destroyed, [temp] { delete temp; });
  auto* step = new QObject(tour_);
  connect(logo_view_, &LogoView::libraryOpened, step, [this, step, plan] {
    delete step;
    auto* added = new QObject(tour_);
    connect(logo_view_->controller(), &LogoController::busyChanged, added,
            [this, added, plan](bool busy) {
              if (busy) return;
              delete added;
              auto* queried = new QObject(tour_);
              connect(logo_view_, &LogoView::queryFinished, queried, [this, queried, plan] {
                delete queried;
                if (logo_view_->results()->rowCount() > 0) logo_view_->results()->selectRow(0);
                ScreenshotBatch(plan);
              });
              logo_view_->Query(plan.scenes);
            });
    logo_view_->AddLogos(plan.logos);
  });
  logo_view_->OpenLibrary(QDir(temp->path()).filePath("logos.db"), true);
}

void MainWindow::ScreenshotBatch(const ScreenshotPlan& plan) {
  if (plan.batch_folder.isEmpty()) {
    QTimer::singleShot(300, this, [this] { GrabViews(tour_dir_); });
    return;
  }
  auto* temp = new QTemporaryDir;
  connect(tour_, &QObject::destroyed, [temp] { delete temp; });
  auto* step = new QObject(tour_);
  connect(batch_view_, &BatchView::pairsShown, step, [this, step] {
    delete step;
    QTimer::singleShot(300, this, [this] { GrabViews(tour_dir_); });
  });
  batch_view_->SetFolder(plan.batch_folder);
  batch_view_->SetDatabase(QDir(temp->path()).filePath("batch.db"));
  batch_view_->SetPairing({});
  batch_view_->Run();
}

void MainWindow::GrabViews(const QString& dir) {
  QStringList written;
  for (int i = 0; i < tabs_->count(); ++i) {
    tabs_->setCurrentIndex(i);
    QApplication::processEvents();
    const QString name = tabs_->tabText(i).remove('&').toLower().replace(' ', '_');
    const QString path = QDir(dir).filePath(name + ".png");
    if (!grab().save(path)) return FailScreenshots(tr("cannot write %1").arg(path));
    written << path;
  }
  tabs_->setCurrentIndex(0);
  delete tour_;
  tour_ = nullptr;
  emit screenshotsDone(true, written.join('\n'));
}

}  // namespace fm::ui
