// Widget tests of the logo view under the offscreen platform: a library built from generated
// logos finds the logo pasted into a generated scene; bad files give dialogs.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <QAction>
#include <QDropEvent>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QFileDialog>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QSplitter>
#include <QElapsedTimer>
#include <QTimer>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "../matcher/test_images.h"
#include "fm/matcher/logo_eval.h"
#include "fm/matcher/backend.h"
#include "fm/matcher/logo_library.h"
#include "fm/ui/logo_view.h"
#include "fm/ui/main_window.h"
#include "ui_test_util.h"

namespace fm {
namespace {

using test::App;
using test::WaitFor;

class LogoViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::HaveSamples())
      GTEST_SKIP() << "OpenCV sample images not found in " << test::SampleDir();
    App();
    ASSERT_TRUE(dir_.isValid());
    window_ = std::make_unique<ui::MainWindow>();
    window_->resize(1280, 800);
    window_->show();
    view_ = window_->logoView();
    QObject::connect(view_, &ui::LogoView::queryFinished, [this] { ++queries_; });
    QObject::connect(view_, &ui::LogoView::errorShown,
                     [this](const QString& t, const QString& m) { errors_ << t + ": " + m; });
    // Wait for a library reopened from the settings of an earlier test to settle.
    ASSERT_TRUE(WaitFor([&] { return !view_->controller()->busy(); }));
  }
  void TearDown() override {
    test::CloseErrorDialogs();
    window_.reset();
  }

  QString Write(const std::string& name, const cv::Mat& image) {
    const QString path = dir_.filePath(QString::fromStdString(name) + ".png");
    EXPECT_TRUE(cv::imwrite(path.toStdString(), image));
    return path;
  }
  bool Idle() {
    return WaitFor([&] { return !view_->controller()->busy(); });
  }
  // A new library `name` in the test's folder holding box.png.
  void OpenBoxLibrary(const QString& name) {
    view_->OpenLibrary(dir_.filePath(name), true);
    ASSERT_TRUE(Idle());
    view_->AddLogos({QString::fromStdString(test::Sample("box.png"))});
    ASSERT_TRUE(Idle());
  }

  QTemporaryDir dir_;
  std::unique_ptr<ui::MainWindow> window_;
  ui::LogoView* view_ = nullptr;
  int queries_ = 0;
  QStringList errors_;
};

TEST_F(LogoViewTest, FindsTheLogoInAGeneratedScene) {
  const auto logos = matcher::MakeEvalLogos(test::SampleDir());
  const auto backgrounds = matcher::LoadEvalBackgrounds(test::SampleDir());
  ASSERT_GE(logos.size(), 3u);
  ASSERT_FALSE(backgrounds.empty());
  const matcher::EvalLogo* box = nullptr;
  for (const auto& l : logos)
    if (l.name == "box") box = &l;
  ASSERT_NE(box, nullptr);

  matcher::LogoEvalOptions scene_options;
  scene_options.min_logo_width = 120;
  scene_options.max_logo_width = 200;
  scene_options.max_rotation_deg = 30;
  scene_options.occlusion_probability = 0;
  cv::RNG rng(7);
  const matcher::EvalScene scene =
      matcher::MakeEvalScene({box}, backgrounds[0], false, false, rng, scene_options);
  ASSERT_EQ(scene.truth.size(), 1u);
  const QString scene_path = Write("scene", scene.image);
  cv::RNG rng_negative(3);
  const matcher::EvalScene negative =
      matcher::MakeEvalScene({}, backgrounds[0], false, false, rng_negative, scene_options);
  const QString negative_path = Write("empty_scene", negative.image);

  // A library of three logos: box and two others.
  QStringList files;
  for (const auto& l : logos) {
    if (files.size() == 3) break;
    if (&l != box && files.size() == 2) continue;
    files << Write(l.name, l.image);
  }
  if (!files.contains(dir_.filePath("box.png"))) files.back() = Write("box", box->image);

  view_->OpenLibrary(dir_.filePath("logos.db"), true);
  ASSERT_TRUE(Idle());
  ASSERT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
  view_->AddLogos(files);
  ASSERT_TRUE(Idle());
  ASSERT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
  EXPECT_EQ(view_->logoCount(), 3);

  view_->Query({scene_path, negative_path});
  ASSERT_TRUE(WaitFor([&] { return queries_ == 1 && !view_->controller()->busy(); }));
  ASSERT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
  ASSERT_EQ(view_->sceneResults().size(), 2u);

  // The first row is the top detection of the first scene: the box, where it was pasted.
  QTableWidget* table = view_->results();
  ASSERT_GE(table->rowCount(), 2);
  EXPECT_EQ(table->item(0, 0)->text(), "scene.png");
  EXPECT_EQ(table->item(0, 2)->text(), "box");
  const auto& dets = view_->sceneResults()[0]->result.detections;
  ASSERT_FALSE(dets.empty());
  EXPECT_EQ(dets[0].name, "box");
  EXPECT_LT(matcher::QuadCornerError(dets[0].quad, scene.truth[0].quad), 5.0);
  EXPECT_EQ(table->item(0, 4)->text().toInt(), dets[0].inliers);

  // The negative scene is listed with no logo.
  const int last = table->rowCount() - 1;
  EXPECT_EQ(table->item(last, 0)->text(), "empty_scene.png");
  EXPECT_EQ(table->item(last, 2)->text(), "no logo found");

  // Clicking the result shows the logo beside its matched region.
  table->setCurrentCell(0, 2);
  auto* logo = view_->findChild<QLabel*>("fm_logo_image");
  auto* region = view_->findChild<QLabel*>("fm_region_image");
  ASSERT_NE(logo, nullptr);
  ASSERT_NE(region, nullptr);
  EXPECT_FALSE(logo->pixmap().isNull());
  EXPECT_FALSE(region->pixmap().isNull());
  EXPECT_TRUE(view_->findChild<QLabel*>("fm_logo_detail")->text().contains("box"));

  // Removing a logo updates the list.
  view_->RemoveLogos({"box"});
  ASSERT_TRUE(Idle());
  EXPECT_EQ(view_->logoCount(), 2);
}

TEST_F(LogoViewTest, BadFilesGiveDialogs) {
  const QString junk = dir_.filePath("junk.db");
  {
    QFile f(junk);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("not a database");
  }
  view_->OpenLibrary(junk, false);
  ASSERT_TRUE(Idle());
  ASSERT_FALSE(test::ErrorDialogs().isEmpty());
  EXPECT_FALSE(errors_.isEmpty());
  test::CloseErrorDialogs();
  errors_.clear();

  view_->OpenLibrary(dir_.filePath("fresh.db"), true);
  ASSERT_TRUE(Idle());
  ASSERT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
  // A blank image has no features: refused with its name; the readable logo is still added.
  const QString blank = Write("blank", cv::Mat(200, 200, CV_8UC3, cv::Scalar(128, 128, 128)));
  view_->AddLogos({blank, QString::fromStdString(test::Sample("box.png"))});
  ASSERT_TRUE(Idle());
  ASSERT_EQ(errors_.size(), 1);
  EXPECT_TRUE(errors_[0].contains("blank.png")) << errors_[0].toStdString();
  EXPECT_EQ(view_->logoCount(), 1);
  test::CloseErrorDialogs();
}

TEST_F(LogoViewTest, ALibraryWithADamagedLogoOpensWithTheRest) {
  const std::string db = dir_.filePath("damaged.db").toStdString();
  {
    matcher::LogoLibrary lib = matcher::LogoLibrary::Create(db);
    lib.AddFile(test::Sample("box.png"));
    lib.AddFile(test::Sample("LinuxLogo.jpg"), "tux");
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "UPDATE logos SET features = substr(features, 1, 200) || x'DEADBEEF' "
                         "|| substr(features, 205) WHERE name = 'tux'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  view_->OpenLibrary(QString::fromStdString(db), false);
  ASSERT_TRUE(Idle());
  EXPECT_EQ(view_->logoCount(), 1);  // box
  ASSERT_EQ(errors_.size(), 1);
  EXPECT_TRUE(errors_[0].contains("tux")) << errors_[0].toStdString();
  EXPECT_TRUE(errors_[0].contains("featmatch logos remove")) << errors_[0].toStdString();
  test::CloseErrorDialogs();
}

TEST_F(LogoViewTest, OneQueryAtATimeAndDeleteOnlyInTheLogoList) {
  ASSERT_NO_FATAL_FAILURE(OpenBoxLibrary("one.db"));
  const QString scene = QString::fromStdString(test::Sample("box_in_scene.png"));
  view_->Query({scene, scene, scene});
  ASSERT_TRUE(view_->controller()->busy());
  view_->Query({QString::fromStdString(test::Sample("graf1.png"))});  // refused, not interleaved
  ASSERT_TRUE(WaitFor([&] { return queries_ == 1 && !view_->controller()->busy(); }));
  ASSERT_EQ(view_->sceneResults().size(), 3u);
  for (const auto& r : view_->sceneResults()) EXPECT_EQ(r->path, scene);
  ASSERT_EQ(errors_.size(), 1);
  EXPECT_TRUE(errors_[0].contains("busy")) << errors_[0].toStdString();
  test::CloseErrorDialogs();
  // Delete removes logos only from the logo list: the action's shortcut belongs to the list (and
  // its children), not to the whole view, where Delete in the results table removed a logo.
  // (Key events through the shortcut map are not delivered under the offscreen platform, so the
  // binding is checked, not a key press.)
  auto* list = view_->findChild<QListWidget*>("fm_logo_list");
  ASSERT_NE(list, nullptr);
  QAction* remove = nullptr;
  for (QAction* a : view_->findChildren<QAction*>())
    if (a->shortcut() == QKeySequence(QKeySequence::Delete)) remove = a;
  ASSERT_NE(remove, nullptr);
  EXPECT_EQ(remove->shortcutContext(), Qt::WidgetWithChildrenShortcut);
  EXPECT_TRUE(list->actions().contains(remove));
  EXPECT_FALSE(view_->actions().contains(remove));
  EXPECT_FALSE(view_->results()->actions().contains(remove));
}

TEST_F(LogoViewTest, InvalidQuerySettingsAreRejectedByCheck) {
  matcher::LogoQueryOptions o;
  o.ratio = 0;  // outside (0, 1]
  std::string why;
  ASSERT_FALSE(o.Check(&why));
  view_->SetQueryOptions(o);
  view_->Query({QString::fromStdString(test::Sample("box_in_scene.png"))});
  ASSERT_FALSE(test::ErrorDialogs().isEmpty());
  EXPECT_TRUE(test::ErrorDialogs().last()->text().contains(QString::fromStdString(why)));
  EXPECT_EQ(queries_, 0);
  EXPECT_FALSE(view_->controller()->busy());
}

// Drops `file` on `target` as a file manager would.
void Drop(QWidget* target, const QString& file) {
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(file)});
  const QPoint at = target->rect().center();
  QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(target, &enter);
  QDropEvent drop(QPointF(at), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(target, &drop);
}

TEST_F(LogoViewTest, DroppedLogosAreAddedAndDroppedScenesQueried) {
  view_->OpenLibrary(dir_.filePath("drops.db"), true);
  ASSERT_TRUE(Idle());
  auto* list = view_->findChild<QListWidget*>("fm_logo_list");
  ASSERT_NE(list, nullptr);
  Drop(list, QString::fromStdString(test::Sample("box.png")));
  ASSERT_TRUE(Idle());
  ASSERT_EQ(view_->logoCount(), 1);
  // box_in_scene.png holds the box of box.png.
  Drop(view_->results()->viewport(), QString::fromStdString(test::Sample("box_in_scene.png")));
  ASSERT_TRUE(WaitFor([&] { return queries_ == 1 && !view_->controller()->busy(); }));
  ASSERT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
  ASSERT_EQ(view_->sceneResults().size(), 1u);
  ASSERT_FALSE(view_->sceneResults()[0]->result.detections.empty());
  EXPECT_EQ(view_->results()->item(0, 2)->text(), "box");
}

TEST_F(LogoViewTest, TheQuerySummaryStaysOnTheStatusLine) {
  ASSERT_NO_FATAL_FAILURE(OpenBoxLibrary("summary.db"));
  view_->Query({QString::fromStdString(test::Sample("box_in_scene.png"))});
  ASSERT_TRUE(WaitFor([&] { return queries_ == 1 && !view_->controller()->busy(); }));
  auto* stage = view_->findChild<QLabel*>("fm_logo_stage");
  ASSERT_NE(stage, nullptr);
  // Still there once everything queued behind the query has been delivered.
  WaitFor([] { return false; }, 200);
  EXPECT_EQ(stage->text(), "1 scene(s) queried; 1 detection(s)") << stage->text().toStdString();
}

// A cancel made while a scene is under way stops that scene too, not only the scenes after it:
// graf1 at three times its size takes seconds to extract, the cancel is made as the scene's
// progress arrives, and the query sees it before it searches the library. The scene is not
// counted as queried.
TEST_F(LogoViewTest, ACancelStopsTheSceneUnderWay) {
  ASSERT_NO_FATAL_FAILURE(OpenBoxLibrary("midway.db"));
  const cv::Mat image = cv::imread(test::Sample("graf1.png"));
  ASSERT_FALSE(image.empty());
  cv::Mat large;
  cv::resize(image, large, cv::Size(), 3.0, 3.0, cv::INTER_CUBIC);
  const QString scene = dir_.filePath("large_scene.png");
  ASSERT_TRUE(cv::imwrite(scene.toStdString(), large));
  int done = -1, tried = -1, total = -1;
  bool cancelled = false;
  QObject guard;  // ends the connections with the test
  QObject::connect(view_->controller(), &ui::LogoController::progress, &guard,
                   [&](const QString& what) {
                     if (what.startsWith("Querying")) view_->controller()->CancelQuery();
                   });
  QObject::connect(view_->controller(), &ui::LogoController::queryFinished, &guard,
                   [&](int d, int t, int n, bool c) {
                     done = d;
                     tried = t;
                     total = n;
                     cancelled = c;
                   });
  view_->Query({scene});
  ASSERT_TRUE(WaitFor([&] { return total >= 0 && !view_->controller()->busy(); }, 120000));
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(done, 0);
  EXPECT_EQ(tried, 0);
  EXPECT_EQ(total, 1);
  EXPECT_TRUE(view_->sceneResults().empty());
}

TEST_F(LogoViewTest, CancelSaysItIsPendingAndKeepsTheScenesAlreadyQueried) {
  ASSERT_NO_FATAL_FAILURE(OpenBoxLibrary("cancel.db"));
  // The view's Cancel by its key, Esc pressed where the view has the focus (the key goes through
  // the window's shortcut map, as a user's does).
  QAction* cancel = test::ChildByText<QAction>(view_, "Cancel");
  ASSERT_NE(cancel, nullptr);
  ASSERT_TRUE(test::ShowInActiveWindow(window_.get(), view_));
  auto* stage = view_->findChild<QLabel*>("fm_logo_stage");
  ASSERT_NE(stage, nullptr);
  const auto sample = [](const char* name) { return QString::fromStdString(test::Sample(name)); };
  // The graf scenes are large enough that the second scene is still being queried when the
  // first one's result arrives and Cancel is pressed.
  const QStringList scenes = {sample("box_in_scene.png"), sample("graf1.png"), sample("graf3.png"),
                              sample("graf1.png"), sample("box_in_scene.png")};
  bool pressed = false, pending_shown = false, disabled = false;
  QObject guard;  // ends the connection with the test
  QObject::connect(view_->controller(), &ui::LogoController::sceneDone, &guard,
                   [&](int index, int, std::shared_ptr<const ui::SceneResult>) {
                     if (index != 0) return;
                     EXPECT_TRUE(cancel->isEnabled());
                     view_->results()->setFocus();
                     QTest::keyClick(view_->results(), Qt::Key_Escape);
                     pressed = true;
                     pending_shown = stage->text().startsWith("Cancelling");
                     disabled = !cancel->isEnabled();
                   });
  view_->Query(scenes);
  // Until the query ends, the scene under way still reports its progress: the line keeps
  // saying that the cancel is pending.
  bool kept = true;
  ASSERT_TRUE(WaitFor(
      [&] {
        if (pressed && queries_ == 0 && !stage->text().startsWith("Cancelling")) kept = false;
        return queries_ == 1 && !view_->controller()->busy();
      },
      120000))
      << stage->text().toStdString();
  ASSERT_TRUE(pressed);
  EXPECT_TRUE(pending_shown) << stage->text().toStdString();
  EXPECT_TRUE(disabled);
  EXPECT_TRUE(kept);
  // The query stopped after the scene that was running; what it found stays in the table.
  const int done = static_cast<int>(view_->sceneResults().size());
  EXPECT_GE(done, 1);
  EXPECT_LT(done, scenes.size());
  ASSERT_GE(view_->results()->rowCount(), done);
  EXPECT_EQ(view_->results()->item(0, 0)->text(), "box_in_scene.png");
  EXPECT_EQ(view_->results()->item(0, 2)->text(), "box");
  WaitFor([] { return false; }, 200);  // whatever was queued behind the query
  const QString expected =
      QString("Cancelled after %1 of %2 scenes; their results are kept").arg(done).arg(5);
  EXPECT_TRUE(stage->text().startsWith(expected)) << stage->text().toStdString();
  EXPECT_FALSE(cancel->isEnabled());  // nothing left to cancel
  EXPECT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
}

TEST_F(LogoViewTest, ThePreviewsFitTheirBoxesAfterEveryResize) {
  // The detection is shown while the window is hidden (its labels not laid out yet).
  window_->hide();
  ASSERT_NO_FATAL_FAILURE(OpenBoxLibrary("fit.db"));
  view_->Query({QString::fromStdString(test::Sample("box_in_scene.png"))});
  ASSERT_TRUE(WaitFor([&] { return queries_ == 1 && !view_->controller()->busy(); }));
  ASSERT_FALSE(view_->sceneResults()[0]->result.detections.empty());
  auto* logo = view_->findChild<QLabel*>("fm_logo_image");
  ASSERT_NE(logo, nullptr);
  ASSERT_FALSE(logo->pixmap().isNull());
  window_->tabs()->setCurrentWidget(view_);
  window_->show();
  // The logo (wider than tall) fills its label's width, less the margin, or its height.
  auto fits = [&] {
    const QSize box = logo->size() - QSize(8, 8);
    const QSize shown = logo->pixmap().size();
    return std::abs(shown.width() - box.width()) <= 1 ||
           std::abs(shown.height() - box.height()) <= 1;
  };
  EXPECT_TRUE(WaitFor(fits, 2000)) << logo->pixmap().width() << " in " << logo->width();
  // A wider right-hand column: the preview grows with it.
  QSplitter* splitter = nullptr;
  for (auto* s : view_->findChildren<QSplitter*>())
    if (s->orientation() == Qt::Horizontal) splitter = s;
  ASSERT_NE(splitter, nullptr);
  const int before = logo->width();
  splitter->setSizes({250, 600, 400});
  ASSERT_TRUE(WaitFor([&] { return logo->width() > before + 50; }, 2000));
  EXPECT_TRUE(WaitFor(fits, 2000)) << logo->pixmap().width() << " in " << logo->width();
}

TEST_F(LogoViewTest, NewLibraryOnAnExistingFileAsksOnce) {
  const QString existing = dir_.filePath("existing.db");
  {
    matcher::LogoLibrary lib = matcher::LogoLibrary::Create(existing.toStdString());
    lib.AddFile(test::Sample("box.png"));
  }
  // Plays the user: picks the existing file in the file dialog, and answers every question box
  // with its "open" choice (or "yes"), counting the questions.
  QStringList questions;
  QTimer user;
  user.setInterval(20);
  QElapsedTimer since;
  since.start();
  bool gave_up = false;
  QObject::connect(&user, &QTimer::timeout, [&] {
    QWidget* modal = QApplication::activeModalWidget();
    if (since.elapsed() > 20000) {
      // A dialog this user does not know how to answer: closed, so that the test fails instead
      // of waiting on it.
      gave_up = true;
      if (modal) QMetaObject::invokeMethod(modal, "close", Qt::QueuedConnection);
      return;
    }
    if (auto* dialog = qobject_cast<QFileDialog*>(modal)) {
      // Typed into the name field, as a user would (selectFile waits for the folder's listing).
      if (auto* name = dialog->findChild<QLineEdit*>("fileNameEdit")) name->setText(existing);
      QMetaObject::invokeMethod(dialog, "accept", Qt::QueuedConnection);
    } else if (auto* box = qobject_cast<QMessageBox*>(modal)) {
      questions << box->text();
      QAbstractButton* answer = nullptr;
      for (QAbstractButton* b : box->buttons())
        if (b->text().contains("Open") || box->buttonRole(b) == QMessageBox::YesRole)
          answer = b;
      // Queued: the box's answer may open the next box, whose loop must not run inside this one.
      if (answer) {
        QMetaObject::invokeMethod(answer, "click", Qt::QueuedConnection);
      } else {
        QMetaObject::invokeMethod(box, "close", Qt::QueuedConnection);
      }
    }
  });
  user.start();
  view_->ChooseNewLibrary();
  user.stop();
  ASSERT_FALSE(gave_up) << "a dialog stayed open: " << questions.join("\n").toStdString();
  ASSERT_TRUE(Idle());
  ASSERT_EQ(questions.size(), 1) << questions.join("\n").toStdString();
  EXPECT_TRUE(questions[0].contains("existing.db")) << questions[0].toStdString();
  // Opened as it is, not replaced: its logo is still there.
  EXPECT_EQ(view_->controller()->libraryPath(), existing);
  EXPECT_EQ(view_->logoCount(), 1);
  EXPECT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
}


// Under auto the logo queries stay on the CPU while a query (its first scene's features times the
// scenes asked for) would end before a GPU had started; the first query that would not brings the
// GPU up (or, without one, settles on the CPU), and the queries after it keep that backend.
TEST(LogoControllerTest, AutoStaysOnTheCpuUntilAQueryIsWorthAGpusStart) {
  FM_REQUIRE_SAMPLES("box.png", "box_in_scene.png");
  App();
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  ui::LogoController controller;
  matcher::BackendOptions backend;
  backend.kind = matcher::BackendKind::kAuto;
  backend.threads = 1;
  controller.SetBackend(backend);
  QStringList errors;
  std::vector<std::shared_ptr<const ui::SceneResult>> results;
  QObject::connect(&controller, &ui::LogoController::failed,
                   [&](const QString& t, const QString& m) { errors << t + ": " + m; });
  QObject::connect(&controller, &ui::LogoController::sceneDone,
                   [&](int, int, std::shared_ptr<const ui::SceneResult> r) {
                     results.push_back(r);
                     controller.CancelQuery();  // one scene of each query is enough
                   });
  auto idle = [&] { return WaitFor([&] { return !controller.busy(); }, 120000); };
  controller.OpenLibrary(dir.filePath("auto.db"), true);
  controller.AddLogos({QString::fromStdString(test::Sample("box.png"))});
  ASSERT_TRUE(idle());
  ASSERT_TRUE(errors.isEmpty()) << errors.join("\n").toStdString();
  const QString scene = QString::fromStdString(test::Sample("box_in_scene.png"));

  const std::string waits = "ends before a GPU would have started";
  controller.Query({scene}, {});
  ASSERT_TRUE(idle());
  ASSERT_EQ(results.size(), 1u);
  const std::string small_note = results[0]->backend_note;
  EXPECT_NE(small_note.find("backend: cpu ("), std::string::npos) << small_note;
  EXPECT_NE(small_note.find(waits), std::string::npos) << small_note;
  ASSERT_FALSE(results[0]->result.detections.empty());
  const int inliers = results[0]->result.detections[0].inliers;

  // The same scene asked for often enough that the query's searches would outlast the start.
  matcher::SearchWork work;
  work.queries = results[0]->result.scene_features;
  work.corpus = results[0]->result.library_descriptors;
  work.dim = 128;
  const int many = static_cast<int>(
      matcher::kGpuStartSeconds / matcher::EstimatedCpuSeconds(work, 1) * 2 + 1);
  controller.Query(QStringList(many, scene), {});
  ASSERT_TRUE(idle());
  ASSERT_EQ(results.size(), 2u);
  const std::string large_note = results[1]->backend_note;
  EXPECT_EQ(large_note.find(waits), std::string::npos) << large_note;
  EXPECT_EQ(large_note.rfind("backend: ", 0), 0u) << large_note;

  controller.Query({scene}, {});
  ASSERT_TRUE(idle());
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[2]->backend_note, large_note);
  ASSERT_FALSE(results[2]->result.detections.empty());
  EXPECT_EQ(results[2]->result.detections[0].inliers, inliers);

  // Choosing the backend again (here the CPU) starts over.
  backend.kind = matcher::BackendKind::kCpu;
  controller.SetBackend(backend);
  controller.Query({scene}, {});
  ASSERT_TRUE(idle());
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[3]->backend_note.find("auto"), std::string::npos) << results[3]->backend_note;
  EXPECT_EQ(results[3]->result.detections[0].inliers, inliers);
  EXPECT_TRUE(errors.isEmpty()) << errors.join("\n").toStdString();
}

}  // namespace
}  // namespace fm
