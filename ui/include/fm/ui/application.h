// The QApplication of featmatch-gui. Work that can fail runs in workers that turn every
// exception into an error signal; as a last line of defence, an exception that still reaches
// event delivery is caught here and shown in a dialog instead of ending the program.
#pragma once

#include <QApplication>

namespace fm::ui {

class Application : public QApplication {
  Q_OBJECT

 public:
  Application(int& argc, char** argv);
  bool notify(QObject* receiver, QEvent* event) override;
};

}  // namespace fm::ui
