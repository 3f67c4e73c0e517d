#include "fm/ui/main_window.h"

#include <QLabel>
#include <QMenuBar>
#include <QStatusBar>

#include "fm/matcher/backend.h"

namespace fm::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("featmatch");
  auto* label = new QLabel(tr("featmatch: open two images to match them"), this);
  label->setAlignment(Qt::AlignCenter);
  setCentralWidget(label);
  auto* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  std::string gpu;
  statusBar()->showMessage(matcher::GpuAvailable(&gpu)
                               ? tr("GPU: %1").arg(QString::fromStdString(gpu))
                               : tr("No GPU: matching runs on the CPU"));
  resize(1200, 800);
}

}  // namespace fm::ui
