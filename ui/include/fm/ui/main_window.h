// The featmatch desktop window.
#pragma once

#include <QMainWindow>

namespace fm::ui {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
};

}  // namespace fm::ui
