#include "fm/ui/application.h"

#include <QTimer>
#include <exception>

#include "fm/ui/error_dialog.h"

namespace fm::ui {

Application::Application(int& argc, char** argv) : QApplication(argc, argv) {
  setOrganizationName("featmatch");
  setApplicationName("featmatch");
  setApplicationVersion("0.1.0");
}

bool Application::notify(QObject* receiver, QEvent* event) {
  QString what;
  try {
    return QApplication::notify(receiver, event);
  } catch (const std::exception& e) {
    what = QString::fromLocal8Bit(e.what());
  } catch (...) {
    what = tr("an unknown error");
  }
  // Shown after the current event has unwound.
  QTimer::singleShot(0, this, [what] {
    ShowError(
        activeWindow(), tr("Unexpected error"),
        tr("An operation failed unexpectedly: %1\n\nYour work is kept; you can go on.").arg(what));
  });
  return false;
}

}  // namespace fm::ui
