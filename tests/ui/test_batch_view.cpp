// Widget tests of the batch view under the offscreen platform: a folder is matched into a
// database, the table shows its pairs, a cancelled run resumes, bad input gives a dialog.
#include <gtest/gtest.h>

#include <QAbstractItemModel>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include "../matcher/test_images.h"
#include "fm/matcher/batch.h"
#include "fm/ui/batch_runner.h"
#include "fm/ui/batch_view.h"
#include "fm/ui/main_window.h"
#include "ui_test_util.h"

namespace fm {
namespace {

using test::App;
using test::WaitFor;

class BatchViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::HaveSamples())
      GTEST_SKIP() << "OpenCV sample images not found in " << test::SampleDir();
    App();
    ASSERT_TRUE(dir_.isValid());
    ASSERT_TRUE(QDir().mkpath(dir_.filePath("images")));
    for (const char* name : {"box.png", "box_in_scene.png", "graf1.png", "graf3.png"})
      ASSERT_TRUE(QFile::copy(QString::fromStdString(test::Sample(name)),
                              dir_.filePath(QString("images/") + name)));
    window_ = std::make_unique<ui::MainWindow>();
    window_->show();
    view_ = window_->batchView();
    QObject::connect(view_, &ui::BatchView::batchFinished, [this] { ++finished_; });
    QObject::connect(view_, &ui::BatchView::pairsShown, [this](int) { ++shown_; });
    QObject::connect(view_, &ui::BatchView::errorShown,
                     [this](const QString& t, const QString& m) { errors_ << t + ": " + m; });
    view_->SetFolder(dir_.filePath("images"));
    view_->SetDatabase(dir_.filePath("pairs.db"));
    view_->SetPairing({});
  }
  void TearDown() override {
    test::CloseErrorDialogs();
    window_.reset();
  }
  bool WaitRun(int n) {
    return WaitFor([&] { return finished_ >= n && shown_ >= n && !view_->running(); }, 120000);
  }

  QTemporaryDir dir_;
  std::unique_ptr<ui::MainWindow> window_;
  ui::BatchView* view_ = nullptr;
  int finished_ = 0, shown_ = 0;
  QStringList errors_;
};

TEST_F(BatchViewTest, MatchesAFolderAndShowsThePairs) {
  view_->Run();
  ASSERT_TRUE(WaitRun(1)) << errors_.join("\n").toStdString();
  ASSERT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
  EXPECT_EQ(view_->lastSummary().stage, matcher::BatchStage::kDone);
  EXPECT_EQ(view_->lastSummary().pairs_total, 6);
  ASSERT_EQ(view_->pairRows(), 6);

  // The table shows what the database holds.
  const auto pairs = matcher::ReadPairResults(dir_.filePath("pairs.db").toStdString());
  ASSERT_EQ(pairs.size(), 6u);
  QAbstractItemModel* model = view_->table()->model();
  for (int row = 0; row < 6; ++row) {
    const auto& p = pairs[static_cast<std::size_t>(row)];
    EXPECT_EQ(model->data(model->index(row, 0)).toString().toStdString(), p.name1);
    EXPECT_EQ(model->data(model->index(row, 1)).toString().toStdString(), p.name2);
    EXPECT_EQ(model->data(model->index(row, 2)).toLongLong(), p.matches);
    EXPECT_EQ(model->data(model->index(row, 3)).toLongLong(), p.inliers);
  }
  // graf1/graf3 is a real pair: verified with many inliers.
  bool graf = false;
  for (const auto& p : pairs)
    if (p.name1 == "graf1.png" && p.name2 == "graf3.png") graf = p.verified() && p.inliers > 50;
  EXPECT_TRUE(graf);

  // Running again resumes: nothing left to match.
  view_->Run();
  ASSERT_TRUE(WaitRun(2));
  EXPECT_EQ(view_->lastSummary().pairs_previous, 6);
  EXPECT_EQ(view_->lastSummary().pairs_matched, 0);
  EXPECT_EQ(view_->pairRows(), 6);
}

TEST_F(BatchViewTest, ADatabaseThatCannotBeShownChangesNothing) {
  view_->Run();
  ASSERT_TRUE(WaitRun(1)) << errors_.join("\n").toStdString();
  ASSERT_EQ(view_->pairRows(), 6);
  const QString text = dir_.filePath("notes.db");
  {
    QFile f(text);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("these are notes, not a database");
  }
  view_->ShowDatabase(text);
  ASSERT_TRUE(WaitFor([&] { return !errors_.isEmpty(); }));
  EXPECT_TRUE(errors_[0].contains("notes.db")) << errors_[0].toStdString();
  test::CloseErrorDialogs();
  // The field Run writes to, the table and the summary are the run's still.
  EXPECT_EQ(view_->findChild<QLineEdit*>("fm_batch_database")->text(), dir_.filePath("pairs.db"));
  EXPECT_EQ(view_->pairRows(), 6);
  EXPECT_EQ(view_->lastSummary().stage, matcher::BatchStage::kDone);
  // A new job's table is empty until its own pairs arrive, not the last database's.
  view_->SetDatabase(dir_.filePath("second.db"));
  view_->Run();
  EXPECT_EQ(view_->pairRows(), 0);
  ASSERT_TRUE(WaitRun(2)) << errors_.join("\n").toStdString();
  EXPECT_EQ(view_->pairRows(), 6);
}

TEST_F(BatchViewTest, CancelledRunResumesToTheSameResult) {
  view_->Run();
  view_->Cancel();
  ASSERT_TRUE(WaitRun(1)) << errors_.join("\n").toStdString();
  // The cancel came before the worker started the controller, which clears its cancel flag when
  // it starts: the cancel is still honoured.
  EXPECT_EQ(view_->lastSummary().stage, matcher::BatchStage::kCancelled);
  const QString line = view_->findChild<QLabel*>("fm_batch_stage")->text();
  EXPECT_TRUE(line.startsWith("Cancelled before any image was extracted")) << line.toStdString();
  view_->Run();
  ASSERT_TRUE(WaitRun(2)) << errors_.join("\n").toStdString();
  EXPECT_EQ(view_->lastSummary().stage, matcher::BatchStage::kDone);
  EXPECT_EQ(view_->pairRows(), 6);
  EXPECT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
}

TEST_F(BatchViewTest, CancelSaysItIsPendingAndKeepsTheCommittedPairs) {
  // Two more images: six make fifteen pairs in five batches (one per corpus image), so that
  // matching is still under way when the cancel arrives.
  for (const char* name : {"aero1.jpg", "aero3.jpg"})
    ASSERT_TRUE(QFile::copy(QString::fromStdString(test::Sample(name)),
                            dir_.filePath(QString("images/") + name)));
  QPushButton* cancel = test::ChildByText<QPushButton>(view_, "Cancel");
  ASSERT_NE(cancel, nullptr);
  // Cancel by its key: Esc on the Batch tab, through the window's shortcut map.
  ASSERT_TRUE(test::ShowInActiveWindow(window_.get(), view_));
  auto* stage = view_->findChild<QLabel*>("fm_batch_stage");
  ASSERT_NE(stage, nullptr);
  bool pressed = false, pending_shown = false, disabled = false;
  QObject guard;  // ends the connection with the test
  // Cancel as matching starts: the first batch of pairs is in flight, the others not begun.
  QObject::connect(view_->runner(), &ui::BatchRunner::progress, &guard,
                   [&](const matcher::BatchProgress& p) {
                     if (pressed || p.stage != matcher::BatchStage::kMatching) return;
                     EXPECT_TRUE(cancel->isEnabled());
                     QTest::keyClick(view_, Qt::Key_Escape);
                     pressed = true;
                     pending_shown = stage->text().startsWith("Cancelling");
                     disabled = !cancel->isEnabled();
                   });
  view_->Run();
  // Progress of the work in flight still arrives; the line keeps saying that the cancel is
  // pending until the job has stopped.
  bool kept = true;
  ASSERT_TRUE(WaitFor(
      [&] {
        if (pressed && view_->running() && !stage->text().startsWith("Cancelling")) kept = false;
        return finished_ >= 1 && shown_ >= 1 && !view_->running();
      },
      120000))
      << errors_.join("\n").toStdString();
  ASSERT_TRUE(pressed);
  EXPECT_TRUE(pending_shown) << stage->text().toStdString();
  EXPECT_TRUE(disabled);
  EXPECT_TRUE(kept);
  const matcher::BatchSummary first = view_->lastSummary();
  ASSERT_EQ(first.stage, matcher::BatchStage::kCancelled);
  ASSERT_EQ(first.pairs_total, 15);
  // The pairs committed before the stop are in the database and in the table.
  const int kept_pairs = view_->pairRows();
  EXPECT_EQ(kept_pairs, first.pairs_matched);
  EXPECT_LT(kept_pairs, 15);
  const QString expected =
      QString("Cancelled after %1 of 15 pairs; their results are kept").arg(kept_pairs);
  EXPECT_TRUE(stage->text().startsWith(expected)) << stage->text().toStdString();
  EXPECT_FALSE(cancel->isEnabled());
  // Run / Resume matches only the pairs that were not kept.
  view_->Run();
  ASSERT_TRUE(WaitRun(2)) << errors_.join("\n").toStdString();
  EXPECT_EQ(view_->lastSummary().stage, matcher::BatchStage::kDone);
  EXPECT_EQ(view_->lastSummary().pairs_previous, kept_pairs);
  EXPECT_EQ(view_->pairRows(), 15);
  EXPECT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
}

TEST_F(BatchViewTest, SequentialPairingIsBound) {
  matcher::PairingOptions p;
  p.mode = matcher::PairMode::kSequential;
  p.overlap = 1;  // each image with the next one in name order: 3 pairs of 4 images
  view_->SetPairing(p);
  EXPECT_EQ(view_->options().pairs.mode, matcher::PairMode::kSequential);
  EXPECT_EQ(view_->options().pairs.overlap, 1);
  view_->Run();
  ASSERT_TRUE(WaitRun(1)) << errors_.join("\n").toStdString();
  EXPECT_EQ(view_->lastSummary().pairs_total, 3);
  EXPECT_EQ(view_->pairRows(), 3);
}

TEST_F(BatchViewTest, MissingFolderGivesADialog) {
  view_->SetFolder(dir_.filePath("no_such_folder"));
  view_->Run();
  ASSERT_TRUE(WaitFor([] { return !test::ErrorDialogs().isEmpty(); }, 20000));
  EXPECT_FALSE(errors_.isEmpty());
  EXPECT_TRUE(errors_.join("\n").contains("no_such_folder")) << errors_.join("\n").toStdString();
  EXPECT_FALSE(view_->running());
}

}  // namespace
}  // namespace fm
