#include "fm/ui/error_dialog.h"

#include <QMessageBox>

namespace fm::ui {

QMessageBox* ShowError(QWidget* parent, const QString& title, const QString& text,
                       const QString& details) {
  auto* box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, parent);
  box->setObjectName(kErrorDialogName);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setWindowModality(parent ? Qt::WindowModal : Qt::ApplicationModal);
  if (!details.isEmpty()) box->setDetailedText(details);
  box->open();
  return box;
}

}  // namespace fm::ui
