// featmatch-gui: the Qt 6 desktop app.
#include <QApplication>

#include "fm/ui/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("featmatch");
  QApplication::setApplicationName("featmatch");
  fm::ui::MainWindow window;
  window.show();
  return app.exec();
}
