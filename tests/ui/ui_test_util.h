// Helpers for widget tests: one offscreen QApplication per test program, waiting on the event
// loop, finding error dialogs.
#pragma once

#include <QApplication>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMessageBox>
#include <QSettings>
#include <QTabWidget>
#include <QTest>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <functional>

#include "fm/ui/application.h"
#include "fm/ui/error_dialog.h"
#include "fm/ui/main_window.h"

namespace fm::test {

// Creates the application on first use, on the offscreen platform, with settings in a private
// temporary folder so the tests neither read nor change a user's settings.
inline QApplication* App() {
  static QApplication* app = [] {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    // The offscreen platform warns about every top-level window; keep the test log readable.
    static QtMessageHandler previous = qInstallMessageHandler(
        [](QtMsgType type, const QMessageLogContext& context, const QString& message) {
          if (message.contains("propagateSizeHints")) return;
          previous(type, context, message);
        });
    static int argc = 1;
    static char name[] = "fm_ui_tests";
    static char* argv[] = {name, nullptr};
    auto* a = new ui::Application(argc, argv);
    QApplication::setOrganizationName("featmatch-tests");
    QApplication::setApplicationName("fm_ui_tests");
    static QTemporaryDir settings_dir;
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settings_dir.path());
    return a;
  }();
  return app;
}

// The last child of `root` of type W (a button, an action) whose text is `text`; null if none.
template <typename W>
W* ChildByText(QObject* root, const QString& text) {
  W* found = nullptr;
  for (W* w : root->findChildren<W*>())
    if (w->text() == text) found = w;
  return found;
}

// Runs the event loop until `done` holds or `timeout_ms` passes; returns done().
inline bool WaitFor(const std::function<bool()>& done, int timeout_ms = 60000) {
  QElapsedTimer timer;
  timer.start();
  while (!done()) {
    if (timer.elapsed() > timeout_ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return true;
}

// The visible error dialogs (ShowError's), newest last.
inline QList<QMessageBox*> ErrorDialogs() {
  QList<QMessageBox*> out;
  for (QWidget* w : QApplication::topLevelWidgets())
    if (auto* box = qobject_cast<QMessageBox*>(w))
      if (box->objectName() == ui::kErrorDialogName && box->isVisible()) out << box;
  return out;
}

inline void CloseErrorDialogs() {
  for (QMessageBox* box : ErrorDialogs()) box->close();
  QCoreApplication::processEvents();
}

// Brings `view` forward as its tab and makes the window the active one, so that keys pressed
// with QTest go through the window's shortcut map as a user's do. False when the window does not
// become active.
inline bool ShowInActiveWindow(ui::MainWindow* window, QWidget* view) {
  window->tabs()->setCurrentWidget(view);
  window->activateWindow();
  return QTest::qWaitForWindowActive(window);
}

}  // namespace fm::test
