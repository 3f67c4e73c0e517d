// Error reporting for the desktop app: a dialog that says what happened, never blocks a worker
// and never ends the program.
#pragma once

#include <QString>

class QMessageBox;
class QWidget;

namespace fm::ui {

// Object name of every error dialog, so tests (and scripts) can find one.
inline constexpr const char* kErrorDialogName = "fm_error_dialog";

// Shows a window-modal, non-blocking warning box (deleted when closed) and returns it.
// `details` (optional) goes into the expandable "Show Details" part.
QMessageBox* ShowError(QWidget* parent, const QString& title, const QString& text,
                       const QString& details = {});

}  // namespace fm::ui
