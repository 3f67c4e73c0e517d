#include "fm/ui/batch_view.h"

#include <QAbstractTableModel>
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStyle>
#include <QTableView>
#include <QVBoxLayout>

#include "fm/matcher/colmap_database.h"
#include "fm/ui/batch_runner.h"
#include "fm/ui/error_dialog.h"
#include "fm/ui/options_panel.h"

namespace fm::ui {

// The pairs of a database for a QTableView (scales to hundreds of thousands of rows).
class PairTableModel : public QAbstractTableModel {
 public:
  enum Column { kImage1, kImage2, kMatches, kInliers, kModel, kVerified, kColumns };
  using QAbstractTableModel::QAbstractTableModel;

  void Set(std::shared_ptr<const std::vector<matcher::PairResult>> pairs) {
    beginResetModel();
    pairs_ = std::move(pairs);
    endResetModel();
  }
  int rowCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() || !pairs_ ? 0 : static_cast<int>(pairs_->size());
  }
  int columnCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() ? 0 : kColumns;
  }
  QVariant headerData(int section, Qt::Orientation o, int role) const override {
    if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* names[] = {"Image 1", "Image 2", "Matches", "Inliers", "Model", "Verified"};
    return QObject::tr(names[section]);
  }
  QVariant data(const QModelIndex& index, int role) const override {
    if (!index.isValid() || !pairs_) return {};
    const auto& p = (*pairs_)[static_cast<std::size_t>(index.row())];
    if (role == Qt::DisplayRole) {
      switch (index.column()) {
        case kImage1:
          return QString::fromStdString(p.name1);
        case kImage2:
          return QString::fromStdString(p.name2);
        case kMatches:
          return static_cast<qlonglong>(p.matches);
        case kInliers:
          return static_cast<qlonglong>(p.inliers);
        case kModel:
          return QString(matcher::TwoViewConfigName(p.config));
        case kVerified:
          return p.verified() ? QObject::tr("yes") : QObject::tr("no");
      }
    }
    if (role == Qt::TextAlignmentRole && (index.column() == kMatches || index.column() == kInliers))
      return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && index.column() == kVerified)
      return p.verified() ? QColor(40, 150, 60) : QColor(200, 70, 60);
    return {};
  }

 private:
  std::shared_ptr<const std::vector<matcher::PairResult>> pairs_;
};

namespace {

QString Duration(double seconds) {
  if (seconds < 0) return QObject::tr("unknown");
  const int s = static_cast<int>(seconds + 0.5);
  if (s < 60) return QObject::tr("%1 s").arg(s);
  if (s < 3600) return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60);
  return QObject::tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

QWidget* Row(QLineEdit* edit, QPushButton* browse) {
  auto* w = new QWidget;
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(edit, 1);
  l->addWidget(browse);
  return w;
}

// What a cancelled job kept, in the words of the Match and Logos views' cancel lines.
QString CancelledLine(const matcher::BatchSummary& s) {
  const QString resume = QObject::tr("Run / Resume continues where it stopped");
  // Pairs are made once every image is extracted: none in the summary means the job stopped
  // while extracting.
  if (s.pairs_total > 0)
    return QObject::tr("Cancelled after %1 of %2 pairs; their results are kept in the database. %3")
        .arg(s.pairs_previous + s.pairs_matched)
        .arg(s.pairs_total)
        .arg(resume);
  const int64_t images =
      s.images_extracted + s.images_reused + static_cast<int64_t>(s.bad_images.size());
  if (images == 0) return QObject::tr("Cancelled before any image was extracted. %1").arg(resume);
  return QObject::tr(
             "Cancelled after extracting %1 of %2 images; their features are kept in the "
             "database. %3")
      .arg(images)
      .arg(s.images_found)
      .arg(resume);
}

}  // namespace

BatchView::BatchView(const OptionsPanel* options, QWidget* parent)
    : QWidget(parent),
      options_(options),
      runner_(new BatchRunner(this)),
      model_(new PairTableModel(this)) {
  setObjectName("fm_batch_view");
  QStyle* st = style();

  folder_ = new QLineEdit;
  folder_->setObjectName("fm_batch_folder");
  folder_->setPlaceholderText(tr("folder of images (searched recursively)"));
  auto* browse_folder = new QPushButton(tr("Browse..."));
  connect(browse_folder, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("Image folder"),
        folder_->text().isEmpty() ? QSettings().value("folders/batch").toString()
                                  : folder_->text());
    if (!dir.isEmpty()) SetFolder(dir);
  });
  database_ = new QLineEdit;
  database_->setObjectName("fm_batch_database");
  database_->setPlaceholderText(tr("COLMAP database (.db), created or resumed"));
  auto* browse_db = new QPushButton(tr("Browse..."));
  connect(browse_db, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Database"), database_->text(),
                                                      tr("COLMAP database (*.db)"), nullptr,
                                                      QFileDialog::DontConfirmOverwrite);
    if (!path.isEmpty()) SetDatabase(path);
  });
  mode_ = new QComboBox;
  mode_->setObjectName("fm_batch_mode");
  mode_->addItem(tr("Exhaustive: every pair"), "exhaustive");
  mode_->addItem(tr("Sequential: each image with the next N"), "sequential");
  mode_->addItem(tr("Query folder against the folder"), "query");
  mode_->addItem(tr("Pair list file"), "list");
  overlap_ = new QSpinBox;
  overlap_->setRange(0, 100000);
  overlap_->setValue(matcher::PairingOptions{}.overlap);
  query_folder_ = new QLineEdit;
  auto* browse_query = new QPushButton(tr("Browse..."));
  connect(browse_query, &QPushButton::clicked, this, [this] {
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Query folder"), query_folder_->text());
    if (!dir.isEmpty()) query_folder_->setText(dir);
  });
  list_file_ = new QLineEdit;
  auto* browse_list = new QPushButton(tr("Browse..."));
  connect(browse_list, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Pair list"), list_file_->text(),
                                                   tr("Text (*.txt);;All files (*)"));
    if (!f.isEmpty()) list_file_->setText(f);
  });

  auto* job = new QGroupBox(tr("Job"));
  auto* form = new QFormLayout(job);
  form->addRow(tr("Folder"), Row(folder_, browse_folder));
  form->addRow(tr("Database"), Row(database_, browse_db));
  form->addRow(tr("Pairs"), mode_);
  overlap_row_ = overlap_;
  form->addRow(tr("Neighbours"), overlap_);
  query_row_ = Row(query_folder_, browse_query);
  form->addRow(tr("Query folder"), query_row_);
  list_row_ = Row(list_file_, browse_list);
  form->addRow(tr("Pair list"), list_row_);
  auto* note =
      new QLabel(tr("Extraction, matching, verification and backend settings are those of "
                    "the Match view's panel."));
  note->setWordWrap(true);
  note->setStyleSheet("color: #707070;");
  form->addRow(note);
  problem_ = new QLabel;
  problem_->setObjectName("fm_batch_problem");
  problem_->setWordWrap(true);
  problem_->setStyleSheet("color: #e0504a; font-weight: bold;");
  problem_->hide();
  form->addRow(problem_);

  run_ = new QPushButton(st->standardIcon(QStyle::SP_MediaPlay), tr("Run / Resume"));
  run_->setObjectName("fm_batch_run");
  run_->setToolTip(tr("Starts the job; with an existing database, continues where it stopped"));
  connect(run_, &QPushButton::clicked, this, &BatchView::Run);
  cancel_ = new QPushButton(st->standardIcon(QStyle::SP_MediaStop), tr("Cancel"));
  cancel_->setObjectName("fm_batch_cancel");
  cancel_->setToolTip(tr("Stop after the images or pairs in flight; Run / Resume continues (Esc)"));
  connect(cancel_, &QPushButton::clicked, this, &BatchView::Cancel);
  // Esc as in the Match view, while this view is shown (the current tab), and at once: a
  // button's own shortcut clicks it a tenth of a second later, pairs that go on being matched.
  cancel_key_ = new QAction(tr("Cancel"), this);
  cancel_key_->setShortcut(QKeySequence(Qt::Key_Escape));
  addAction(cancel_key_);
  connect(cancel_key_, &QAction::triggered, this, &BatchView::Cancel);
  open_db_ = new QPushButton(st->standardIcon(QStyle::SP_DialogOpenButton), tr("Show Database..."));
  connect(open_db_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Show database"), database_->text(),
                                                      tr("COLMAP database (*.db);;All files (*)"));
    if (!path.isEmpty()) ShowDatabase(path);
  });
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  buttons->addStretch(1);
  buttons->addWidget(open_db_);

  progress_ = new QProgressBar;
  progress_->setObjectName("fm_batch_progress");
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setFormat("%v / %m");
  stage_ = new QLabel(tr("Idle"));
  stage_->setObjectName("fm_batch_stage");
  rate_ = new QLabel;
  rate_->setObjectName("fm_batch_rate");
  eta_ = new QLabel;
  eta_->setObjectName("fm_batch_eta");
  auto* prog = new QGroupBox(tr("Progress"));
  auto* pl = new QGridLayout(prog);
  // The stage line has a row of its own: a cancelled job's line says what was kept and would
  // squeeze the progress bar beside it.
  stage_->setWordWrap(true);
  pl->addWidget(stage_, 0, 0, 1, 2);
  pl->addWidget(progress_, 1, 0, 1, 2);
  pl->addWidget(rate_, 2, 0);
  pl->addWidget(eta_, 2, 1);
  pl->setColumnStretch(1, 1);

  summary_label_ = new QLabel;
  summary_label_->setObjectName("fm_batch_summary");
  summary_label_->setWordWrap(true);
  summary_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* left = new QWidget;
  auto* ll = new QVBoxLayout(left);
  ll->addWidget(job);
  ll->addLayout(buttons);
  ll->addWidget(prog);
  ll->addWidget(summary_label_);
  ll->addStretch(1);
  left->setMinimumWidth(440);
  left->setMaximumWidth(600);

  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  table_ = new QTableView;
  table_->setObjectName("fm_batch_pairs");
  table_->setModel(proxy);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);
  table_->setAlternatingRowColors(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->setDefaultSectionSize(22);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  db_label_ = new QLabel(tr("No database shown"));
  db_label_->setObjectName("fm_batch_db_label");
  db_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* right = new QWidget;
  auto* rl = new QVBoxLayout(right);
  rl->addWidget(db_label_);
  rl->addWidget(table_, 1);

  auto* layout = new QHBoxLayout(this);
  layout->addWidget(left);
  layout->addWidget(right, 1);

  connect(mode_, &QComboBox::currentIndexChanged, this, [this] {
    UpdateModeFields();
    UpdateActions();
  });
  for (QLineEdit* e : {folder_, database_, query_folder_, list_file_})
    connect(e, &QLineEdit::textChanged, this, &BatchView::UpdateActions);
  connect(overlap_, &QSpinBox::valueChanged, this, &BatchView::UpdateActions);
  if (options_) connect(options_, &OptionsPanel::changed, this, &BatchView::UpdateActions);

  connect(runner_, &BatchRunner::started, this, [this](const QString& db) {
    cancelling_ = false;
    stage_->setText(tr("Starting"));
    progress_->setRange(0, 0);
    rate_->clear();
    eta_->clear();
    summary_label_->clear();
    db_label_->setText(tr("Database: %1").arg(QDir::toNativeSeparators(db)));
    UpdateActions();
  });
  connect(runner_, &BatchRunner::progress, this, [this](const matcher::BatchProgress& p) {
    // The work in flight still reports; the line keeps saying that the cancel is pending.
    if (!cancelling_) stage_->setText(QString(matcher::BatchStageName(p.stage)));
    if (p.total > 0) {
      progress_->setRange(0, static_cast<int>(std::min<int64_t>(p.total, INT32_MAX)));
      progress_->setValue(static_cast<int>(std::min<int64_t>(p.done, INT32_MAX)));
    } else {
      progress_->setRange(0, 0);
    }
    const bool matching = p.stage == matcher::BatchStage::kMatching;
    rate_->setText(tr("%1 %2/s  ·  elapsed %3")
                       .arg(p.per_second, 0, 'f', p.per_second < 10 ? 2 : 1)
                       .arg(matching ? tr("pairs") : tr("images"))
                       .arg(Duration(p.elapsed_seconds)));
    eta_->setText(tr("time left: %1").arg(Duration(p.eta_seconds)));
  });
  connect(runner_, &BatchRunner::finished, this, [this](const matcher::BatchSummary& s) {
    cancelling_ = false;
    summary_ = s;
    ShowSummary(s);
    UpdateActions();
    if (s.stage == matcher::BatchStage::kFailed)
      Error(tr("The batch failed"), QString::fromStdString(s.error));
    emit batchFinished(s);
  });
  connect(runner_, &BatchRunner::pairsLoaded, this,
          [this](const QString& db, std::shared_ptr<const std::vector<matcher::PairResult>> pairs) {
            model_->Set(pairs);
            database_->setText(db);
            int verified = 0;
            for (const auto& p : *pairs) verified += p.verified() ? 1 : 0;
            db_label_->setText(tr("Database: %1  ·  %2 pairs, %3 verified")
                                   .arg(QDir::toNativeSeparators(db))
                                   .arg(pairs->size())
                                   .arg(verified));
            emit pairsShown(static_cast<int>(pairs->size()));
          });
  connect(runner_, &BatchRunner::loadFailed, this,
          [this](const QString& db, const QString& t, const QString& m) {
            Error(t, tr("%1 cannot be shown: %2").arg(QDir::toNativeSeparators(db), m));
          });
  connect(runner_, &BatchRunner::failed, this, [this](const QString& t, const QString& m) {
    cancelling_ = false;
    stage_->setText(tr("Failed"));
    progress_->setRange(0, 1);
    progress_->setValue(0);
    UpdateActions();
    Error(t, m);
  });

  QSettings s;
  folder_->setText(s.value("batch/folder").toString());
  database_->setText(s.value("batch/database").toString());
  mode_->setCurrentIndex(std::max(0, mode_->findData(s.value("batch/mode", "exhaustive"))));
  overlap_->setValue(s.value("batch/overlap", overlap_->value()).toInt());
  UpdateModeFields();
  UpdateActions();
}

int BatchView::pairRows() const { return model_->rowCount(); }
bool BatchView::running() const { return runner_->running(); }

void BatchView::Error(const QString& title, const QString& text) {
  ShowError(this, title, text);
  emit errorShown(title, text);
}

void BatchView::SetFolder(const QString& folder) {
  folder_->setText(folder);
  QSettings().setValue("folders/batch", folder);
  if (database_->text().isEmpty()) database_->setText(QDir(folder).filePath("featmatch.db"));
}

void BatchView::SetDatabase(const QString& database) { database_->setText(database); }

void BatchView::SetPairing(const matcher::PairingOptions& p) {
  mode_->setCurrentIndex(static_cast<int>(p.mode));
  overlap_->setValue(p.overlap);
  query_folder_->setText(QString::fromStdString(p.query_folder));
  list_file_->setText(QString::fromStdString(p.list_file));
}

matcher::BatchOptions BatchView::options() const {
  matcher::BatchOptions o;
  o.folder = folder_->text().trimmed().toStdString();
  o.database = database_->text().trimmed().toStdString();
  o.pairs.mode = static_cast<matcher::PairMode>(mode_->currentIndex());
  o.pairs.overlap = overlap_->value();
  o.pairs.query_folder = query_folder_->text().trimmed().toStdString();
  o.pairs.list_file = list_file_->text().trimmed().toStdString();
  if (options_) {
    o.sift = options_->sift();
    o.match = options_->match();
    o.backend = options_->backend();
  }
  return o;
}

void BatchView::UpdateModeFields() {
  const auto mode = static_cast<matcher::PairMode>(mode_->currentIndex());
  auto* form = qobject_cast<QFormLayout*>(overlap_row_->parentWidget()->layout());
  if (form) {
    form->setRowVisible(overlap_row_, mode == matcher::PairMode::kSequential);
    form->setRowVisible(query_row_, mode == matcher::PairMode::kQuery);
    form->setRowVisible(list_row_, mode == matcher::PairMode::kList);
  }
}

void BatchView::UpdateActions() {
  std::string why;
  bool valid = false;
  try {
    valid = options().Check(&why);
  } catch (const std::exception& e) {
    why = e.what();
  }
  problem_->setVisible(!valid && !folder_->text().isEmpty());
  problem_->setText(valid ? QString() : tr("Cannot run: %1").arg(QString::fromStdString(why)));
  run_->setEnabled(valid && !running());
  // Pressing Cancel again while the work in flight finishes would do nothing.
  cancel_->setEnabled(running() && !cancelling_);
  cancel_key_->setEnabled(cancel_->isEnabled());
}

void BatchView::Run() {
  matcher::BatchOptions o;
  std::string why;
  try {
    o = options();
    if (!o.Check(&why)) {
      Error(tr("Cannot run the batch"), QString::fromStdString(why));
      return;
    }
  } catch (const std::exception& e) {
    Error(tr("Cannot run the batch"), QString::fromStdString(e.what()));
    return;
  }
  QSettings s;
  s.setValue("batch/folder", folder_->text());
  s.setValue("batch/database", database_->text());
  s.setValue("batch/mode", mode_->currentData());
  s.setValue("batch/overlap", overlap_->value());
  // The table shows the job's database from now on: the pairs of the one shown before would
  // read as this job's while it runs.
  model_->Set(nullptr);
  db_label_->setText(
      tr("Database: %1  ·  running").arg(QDir::toNativeSeparators(database_->text())));
  runner_->Start(o);
  UpdateActions();
}

void BatchView::Cancel() {
  if (!running() || cancelling_) return;
  runner_->Cancel();
  cancelling_ = true;
  // The images being extracted and the pairs being matched are finished and committed first,
  // which can take a while: say at once that the cancel is pending.
  stage_->setText(tr("Cancelling… (the images or pairs in flight finish first)"));
  UpdateActions();
}

void BatchView::ShowDatabase(const QString& database) {
  // The database field (what Run writes to) takes the file once its pairs are shown, not before:
  // a file that is not a COLMAP database leaves the field, the table and the summary as they were.
  runner_->LoadPairs(database);
}

void BatchView::ShowSummary(const matcher::BatchSummary& s) {
  progress_->setRange(
      0, static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(s.pairs_total, INT32_MAX))));
  progress_->setValue(
      static_cast<int>(std::min<int64_t>(s.pairs_previous + s.pairs_matched, INT32_MAX)));
  QString state;
  switch (s.stage) {
    case matcher::BatchStage::kDone:
      state = tr("Done");
      break;
    case matcher::BatchStage::kCancelled:
      state = CancelledLine(s);
      break;
    case matcher::BatchStage::kFailed:
      state = tr("Failed");
      break;
    default:
      state = QString(matcher::BatchStageName(s.stage));
  }
  stage_->setText(state);
  rate_->setText(tr("%1 pairs/s  ·  elapsed %2")
                     .arg(s.match_pairs_per_second, 0, 'f', s.match_pairs_per_second < 10 ? 2 : 1)
                     .arg(Duration(s.total_seconds)));
  eta_->setText(s.stage == matcher::BatchStage::kDone ? QString() : tr("stopped before the end"));
  QString text = tr("<b>%1</b><br>%2 images found: %3 extracted, %4 reused from the database")
                     .arg(state)
                     .arg(s.images_found)
                     .arg(s.images_extracted)
                     .arg(s.images_reused);
  if (!s.bad_images.empty()) {
    text += tr("<br><span style='color:#d9534f'>%1 unreadable image(s) skipped</span>")
                .arg(s.bad_images.size());
    QStringList bad;
    for (std::size_t i = 0; i < s.bad_images.size() && i < 5; ++i)
      bad << QString::fromStdString(s.bad_images[i].path + ": " + s.bad_images[i].reason)
                 .toHtmlEscaped();
    text += "<br>" + bad.join("<br>");
  }
  text += tr("<br>pairs: %1 in the job, %2 already done before, %3 matched now, %4 verified")
              .arg(s.pairs_total)
              .arg(s.pairs_previous)
              .arg(s.pairs_matched)
              .arg(s.pairs_verified);
  text += tr("<br>time: extract %1, match %2 (%3 pairs/s), total %4")
              .arg(Duration(s.extract_seconds), Duration(s.match_seconds))
              .arg(s.match_pairs_per_second, 0, 'f', 1)
              .arg(Duration(s.total_seconds));
  text += tr("<br>pairing %1 · %2")
              .arg(QString::fromStdString(s.pairing).toHtmlEscaped(),
                   QString::fromStdString(s.backend).toHtmlEscaped());
  summary_label_->setText(text);
}

}  // namespace fm::ui
