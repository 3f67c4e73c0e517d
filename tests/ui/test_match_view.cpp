// Widget tests of the match view under the offscreen platform: the counts shown are the
// library's, parameter changes reuse features, bad files give a dialog, requests queue.
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QMouseEvent>
#include <QSettings>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "../matcher/test_images.h"
#include "fm/matcher/backend.h"
#include "fm/matcher/image.h"
#include "fm/matcher/pipeline.h"
#include "fm/matcher/sift.h"
#include "fm/ui/main_window.h"
#include "fm/ui/match_canvas.h"
#include "fm/ui/match_controller.h"
#include "fm/ui/match_view.h"
#include "fm/ui/options_panel.h"
#include "ui_test_util.h"

namespace fm {
namespace {

using test::App;
using test::WaitFor;

struct Counts {
  int64_t features_a = 0, features_b = 0, matches = 0, inliers = 0;
};

// What the library computes for the same images and options (CPU backend).
Counts LibraryCounts(const std::string& a, const std::string& b, const matcher::SiftOptions& sift,
                     const matcher::MatchOptions& match) {
  const core::Features fa = matcher::ExtractFeatures(matcher::LoadGrayImage(a), sift);
  const core::Features fb = matcher::ExtractFeatures(matcher::LoadGrayImage(b), sift);
  matcher::BackendOptions bo;
  bo.kind = matcher::BackendKind::kCpu;
  auto backend = matcher::CreateKnnBackend(bo);
  const matcher::MatchResult r = matcher::MatchFeatures(fa, fb, match, *backend);
  return {r.features_a, r.features_b, static_cast<int64_t>(r.matches.size()), r.num_inliers()};
}

class MatchViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::HaveSamples())
      GTEST_SKIP() << "OpenCV sample images not found in " << test::SampleDir();
    App();
    window_ = std::make_unique<ui::MainWindow>();
    window_->resize(1280, 800);
    window_->show();
    view_ = window_->matchView();
    view_->options()->ResetToDefaults();
    matcher::BackendOptions bo;
    bo.kind = matcher::BackendKind::kCpu;
    view_->options()->SetBackend(bo);
    QObject::connect(view_, &ui::MatchView::matchFinished, [this] { ++finished_; });
    QObject::connect(
        view_, &ui::MatchView::errorShown,
        [this](const QString& title, const QString& text) { errors_ << title + ": " + text; });
  }
  void TearDown() override {
    test::CloseErrorDialogs();
    window_.reset();
  }

  void SetAutoRun(bool on) { view_->findChild<QCheckBox*>("auto_run")->setChecked(on); }

  void OpenSamples() {
    view_->OpenImage(0, QString::fromStdString(a_));
    view_->OpenImage(1, QString::fromStdString(b_));
    ASSERT_TRUE(WaitFor([&] { return view_->imageReady(0) && view_->imageReady(1); }));
  }

  // box.png against box_in_scene.png matched once, re-running on changes turned off.
  void MatchSamplesOnce() {
    SetAutoRun(false);
    OpenSamples();
    view_->Run();
    ASSERT_TRUE(WaitFinished(1));
  }

  // Two other sample images matched once with the panel's options; their verification.
  void MatchOnce(const char* a, const char* b, const matcher::Verification** v) {
    SetAutoRun(false);
    view_->OpenImage(0, QString::fromStdString(test::Sample(a)));
    view_->OpenImage(1, QString::fromStdString(test::Sample(b)));
    ASSERT_TRUE(WaitFor([&] { return view_->imageReady(0) && view_->imageReady(1); }));
    view_->Run();
    ASSERT_TRUE(WaitFinished(1)) << errors_.join("\n").toStdString();
    *v = &view_->outcome()->result.verification;
  }

  // Waits for `n` finished matches and for the controller to go idle.
  bool WaitFinished(int n) {
    return WaitFor([&] { return finished_ >= n && !view_->busy(); });
  }

  Counts Shown() const {
    auto number = [&](const char* name) {
      auto* label = view_->findChild<QLabel*>(name);
      EXPECT_NE(label, nullptr) << name;
      bool ok = false;
      const int64_t v = label ? label->text().toLongLong(&ok) : -1;
      EXPECT_TRUE(ok) << name << " shows '" << (label ? label->text().toStdString() : "") << "'";
      return v;
    };
    return {number("fm_features_a"), number("fm_features_b"), number("fm_matches"),
            number("fm_inliers")};
  }

  const std::string a_ = test::Sample("box.png");
  const std::string b_ = test::Sample("box_in_scene.png");
  std::unique_ptr<ui::MainWindow> window_;
  ui::MatchView* view_ = nullptr;
  int finished_ = 0;
  QStringList errors_;
};

void ExpectSame(const Counts& shown, const Counts& lib) {
  EXPECT_EQ(shown.features_a, lib.features_a);
  EXPECT_EQ(shown.features_b, lib.features_b);
  EXPECT_EQ(shown.matches, lib.matches);
  EXPECT_EQ(shown.inliers, lib.inliers);
}

// A file named like a PNG that holds text, in `dir`; empty when it cannot be written.
QString WriteNotAnImage(const QTemporaryDir& dir) {
  const QString path = dir.filePath("broken.png");
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write("this is not a PNG file at all") <= 0) return {};
  return path;
}

TEST_F(MatchViewTest, CountsShownAreTheLibrarys) {
  SetAutoRun(false);
  OpenSamples();
  EXPECT_TRUE(view_->runAction()->isEnabled());
  view_->Run();
  ASSERT_TRUE(WaitFinished(1)) << errors_.join("\n").toStdString();
  EXPECT_TRUE(errors_.isEmpty()) << errors_.join("\n").toStdString();
  const Counts lib = LibraryCounts(a_, b_, {}, {});
  ASSERT_GT(lib.matches, 20);  // a real match, not an empty result
  ASSERT_GT(lib.inliers, 10);
  ExpectSame(Shown(), lib);
  // The model's strength beside "verified", as the report gives it.
  const auto& v = view_->outcome()->result.verification;
  ASSERT_TRUE(v.verified);
  EXPECT_TRUE(view_->findChild<QLabel*>("fm_model")->text().contains(
      QString("verified (NFA 10^%1)").arg(v.log10_nfa, 0, 'f', 1)))
      << view_->findChild<QLabel*>("fm_model")->text().toStdString();
  const QString times = view_->findChild<QLabel*>("fm_times")->text();
  EXPECT_TRUE(times.contains("knn")) << times.toStdString();
  EXPECT_TRUE(times.contains("verify")) << times.toStdString();
  EXPECT_TRUE(view_->saveDrawingAction()->isEnabled());
}

TEST_F(MatchViewTest, ParameterChangeReusesFeaturesAndUpdatesCounts) {
  SetAutoRun(true);
  OpenSamples();  // both images ready: the first match starts by itself
  ASSERT_TRUE(WaitFinished(1)) << errors_.join("\n").toStdString();
  ASSERT_FALSE(view_->outcome()->features_cached_a && view_->outcome()->features_cached_b);

  view_->options()->ratioBox()->setValue(0.6);  // re-runs after a short delay
  ASSERT_TRUE(WaitFinished(2)) << errors_.join("\n").toStdString();
  auto outcome = view_->outcome();
  ASSERT_NE(outcome, nullptr);
  EXPECT_FLOAT_EQ(outcome->request.match.filter.ratio, 0.6f);
  EXPECT_TRUE(outcome->features_cached_a);
  EXPECT_TRUE(outcome->features_cached_b);
  EXPECT_TRUE(view_->findChild<QLabel*>("fm_times")->text().contains("extract A cached"));
  matcher::MatchOptions m;
  m.filter.ratio = 0.6f;
  const Counts lib = LibraryCounts(a_, b_, {}, m);
  ExpectSame(Shown(), lib);

  // A SIFT setting is part of the cache key: features are extracted again.
  matcher::SiftOptions s;
  s.contrast_threshold = 0.06;
  view_->options()->SetSift(s);
  ASSERT_TRUE(WaitFinished(3)) << errors_.join("\n").toStdString();
  EXPECT_FALSE(view_->outcome()->features_cached_a);
  ExpectSame(Shown(), LibraryCounts(a_, b_, s, m));
}

TEST_F(MatchViewTest, SecondRequestWinsOverTheFirst) {
  SetAutoRun(false);
  OpenSamples();
  view_->Run();
  view_->options()->ratioBox()->setValue(0.65);
  view_->Run();  // while the first runs: queued, the first's result is dropped
  ASSERT_TRUE(WaitFinished(1)) << errors_.join("\n").toStdString();
  ASSERT_NE(view_->outcome(), nullptr);
  EXPECT_FLOAT_EQ(view_->outcome()->request.match.filter.ratio, 0.65f);
  matcher::MatchOptions m;
  m.filter.ratio = 0.65f;
  ExpectSame(Shown(), LibraryCounts(a_, b_, {}, m));
}

TEST_F(MatchViewTest, ReplacingAnImageDropsTheRunningMatch) {
  SetAutoRun(false);
  OpenSamples();
  view_->Run();
  const std::string other = test::Sample("graf1.png");
  view_->OpenImage(1, QString::fromStdString(other));  // while the match runs
  ASSERT_TRUE(WaitFor([&] { return view_->imageReady(1) && !view_->busy(); }));
  EXPECT_EQ(finished_, 0);  // the box/box_in_scene result was not shown
  EXPECT_EQ(view_->outcome(), nullptr);
  view_->Run();
  ASSERT_TRUE(WaitFinished(1)) << errors_.join("\n").toStdString();
  EXPECT_EQ(finished_, 1);
  EXPECT_EQ(view_->outcome()->request.path_b.toStdString(), other);
  ExpectSame(Shown(), LibraryCounts(a_, other, {}, {}));
}

TEST_F(MatchViewTest, BadFileGivesAnErrorDialogNotACrash) {
  QTemporaryDir dir;
  const QString broken = WriteNotAnImage(dir);
  ASSERT_FALSE(broken.isEmpty());
  view_->OpenImage(0, broken);
  ASSERT_TRUE(WaitFor([] { return !test::ErrorDialogs().isEmpty(); }, 20000));
  const QString text = test::ErrorDialogs().last()->text();
  EXPECT_TRUE(text.contains("broken.png")) << text.toStdString();
  EXPECT_FALSE(view_->imageReady(0));
  EXPECT_FALSE(view_->runAction()->isEnabled());
  test::CloseErrorDialogs();

  view_->OpenImage(1, dir.filePath("does_not_exist.jpg"));
  ASSERT_TRUE(WaitFor([] { return !test::ErrorDialogs().isEmpty(); }, 20000));
  EXPECT_TRUE(test::ErrorDialogs().last()->text().contains("does_not_exist.jpg"));
  test::CloseErrorDialogs();

  // The view still works afterwards.
  ASSERT_NO_FATAL_FAILURE(MatchSamplesOnce());
  ExpectSame(Shown(), LibraryCounts(a_, b_, {}, {}));
}

TEST_F(MatchViewTest, InvalidOptionsAreRejectedByCheck) {
  SetAutoRun(false);
  OpenSamples();
  view_->findChild<QSpinBox*>("k")->setValue(1);  // ratio test needs k >= 2
  EXPECT_FALSE(view_->runAction()->isEnabled());
  auto* problem = view_->findChild<QLabel*>("options_problem");
  ASSERT_NE(problem, nullptr);
  EXPECT_FALSE(problem->isHidden());
  matcher::MatchOptions m;
  m.k = 1;
  std::string why;
  ASSERT_FALSE(m.Check(&why));
  // Check()'s reason, with the CLI's flag named by the panel's label.
  const QString shown = view_->options()->InPanelTerms(QString::fromStdString(why));
  EXPECT_TRUE(problem->text().contains(shown)) << problem->text().toStdString();
  EXPECT_FALSE(problem->text().contains("--")) << problem->text().toStdString();
  EXPECT_TRUE(problem->text().contains("“Ratio test” = 1")) << problem->text().toStdString();
  // In sight at the window's size, not below the end of the scrolled panel; and on Run too.
  EXPECT_FALSE(problem->visibleRegion().isEmpty());
  EXPECT_TRUE(view_->runAction()->toolTip().contains(shown))
      << view_->runAction()->toolTip().toStdString();

  view_->Run();  // asked anyway: a dialog, no match
  ASSERT_FALSE(test::ErrorDialogs().isEmpty());
  EXPECT_EQ(finished_, 0);
  test::CloseErrorDialogs();

  view_->options()->ratioBox()->setValue(1.0);  // k = 1 without the ratio test is valid
  EXPECT_TRUE(view_->runAction()->isEnabled());
  EXPECT_TRUE(problem->isHidden());
}

TEST_F(MatchViewTest, HoverShowsDistanceAndRatio) {
  ASSERT_NO_FATAL_FAILURE(MatchSamplesOnce());
  auto outcome = view_->outcome();
  ui::MatchCanvas* canvas = view_->canvas();
  // Midpoint of the line of the first inlier.
  const auto& inliers = outcome->result.verification.inliers;
  int first = -1;
  for (std::size_t i = 0; i < inliers.size(); ++i)
    if (inliers[i]) {
      first = static_cast<int>(i);
      break;
    }
  ASSERT_GE(first, 0);
  const auto& m = outcome->result.matches[static_cast<std::size_t>(first)];
  const auto& ka = outcome->features_a->keypoints[static_cast<std::size_t>(m.query)];
  const auto& kb = outcome->features_b->keypoints[static_cast<std::size_t>(m.train)];
  const QPointF pa = canvas->ScenePoint(0, ka.x, ka.y);
  const QPointF pb = canvas->ScenePoint(1, kb.x, kb.y);
  // Near the A end, where lines are not yet bunched together.
  const QPointF p = pa + 0.02 * (pb - pa);
  const QPoint vp = canvas->mapFromScene(p);
  QMouseEvent move(QEvent::MouseMove, QPointF(vp), canvas->viewport()->mapToGlobal(QPointF(vp)),
                   Qt::NoButton, Qt::NoButton, Qt::NoModifier);
  QCoreApplication::sendEvent(canvas->viewport(), &move);
  const int hovered = canvas->hovered();
  ASSERT_GE(hovered, 0);
  EXPECT_EQ(hovered, canvas->MatchAt(p));
  const auto& h = outcome->result.matches[static_cast<std::size_t>(hovered)];
  const QString info = view_->findChild<QLabel*>("fm_match_info")->text();
  EXPECT_TRUE(info.contains(QString("distance %1").arg(h.distance, 0, 'f', 2)))
      << info.toStdString();
  EXPECT_TRUE(info.contains(QString("ratio %1").arg(h.ratio, 0, 'f', 3))) << info.toStdString();

  // A click keeps it selected.
  QMouseEvent press(QEvent::MouseButtonPress, QPointF(vp),
                    canvas->viewport()->mapToGlobal(QPointF(vp)), Qt::LeftButton, Qt::LeftButton,
                    Qt::NoModifier);
  QMouseEvent release(QEvent::MouseButtonRelease, QPointF(vp),
                      canvas->viewport()->mapToGlobal(QPointF(vp)), Qt::LeftButton, Qt::NoButton,
                      Qt::NoModifier);
  QCoreApplication::sendEvent(canvas->viewport(), &press);
  QCoreApplication::sendEvent(canvas->viewport(), &release);
  EXPECT_EQ(canvas->selected(), hovered);

  // Far away from every line: nothing.
  EXPECT_EQ(canvas->MatchAt(QPointF(-500, -500)), -1);
}

TEST_F(MatchViewTest, ZoomAndFit) {
  OpenSamples();
  ui::MatchCanvas* canvas = view_->canvas();
  EXPECT_TRUE(canvas->fitting());
  const double fit = canvas->zoom();
  view_->zoomInAction()->trigger();
  EXPECT_NEAR(canvas->zoom(), fit * 1.25, 1e-9);
  EXPECT_FALSE(canvas->fitting());
  view_->zoomActualAction()->trigger();
  EXPECT_NEAR(canvas->zoom(), 1.0, 1e-9);
  view_->zoomFitAction()->trigger();
  EXPECT_NEAR(canvas->zoom(), fit, 1e-9);
  EXPECT_TRUE(canvas->fitting());
}

TEST_F(MatchViewTest, ShortcutsActOnlyInTheVisibleView) {
  SetAutoRun(false);
  OpenSamples();
  EXPECT_TRUE(view_->runAction()->isEnabled());
  window_->tabs()->setCurrentIndex(1);  // Logos
  EXPECT_FALSE(view_->runAction()->isEnabled());
  EXPECT_FALSE(view_->zoomInAction()->isEnabled());
  // Opening a recent file from another view brings the match view back.
  QMenu* recent = nullptr;
  for (QMenu* m : window_->findChildren<QMenu*>())
    if (m->title() == "Open Recent as B") recent = m;
  ASSERT_NE(recent, nullptr);
  ASSERT_FALSE(recent->actions().isEmpty());
  recent->actions().first()->trigger();
  EXPECT_EQ(window_->tabs()->currentWidget(), view_);
  ASSERT_TRUE(WaitFor([&] { return view_->imageReady(1); }));
  EXPECT_TRUE(view_->runAction()->isEnabled());
}

TEST_F(MatchViewTest, SwapExchangesTheImages) {
  SetAutoRun(true);
  OpenSamples();
  ASSERT_TRUE(WaitFinished(1));
  const Counts before = Shown();
  view_->swapAction()->trigger();
  ASSERT_TRUE(WaitFinished(2)) << errors_.join("\n").toStdString();
  EXPECT_EQ(view_->imagePath(0).toStdString(), b_);
  EXPECT_EQ(view_->imagePath(1).toStdString(), a_);
  const Counts after = Shown();
  EXPECT_EQ(after.features_a, before.features_b);
  EXPECT_EQ(after.features_b, before.features_a);
  ExpectSame(after, LibraryCounts(b_, a_, {}, {}));
  EXPECT_TRUE(window_->windowTitle().contains("box_in_scene.png ↔ box.png"))
      << window_->windowTitle().toStdString();
}

TEST_F(MatchViewTest, SavesDrawingAndReport) {
  ASSERT_NO_FATAL_FAILURE(MatchSamplesOnce());
  QTemporaryDir dir;
  QString why;
  const QString png = dir.filePath("drawing.png");
  ASSERT_TRUE(view_->SaveDrawing(png, &why)) << why.toStdString();
  const cv::Mat drawn = cv::imread(png.toStdString());
  const cv::Mat a = cv::imread(a_), b = cv::imread(b_);
  ASSERT_FALSE(drawn.empty());
  EXPECT_EQ(drawn.cols, a.cols + b.cols);

  const QString json = dir.filePath("report.json");
  ASSERT_TRUE(view_->SaveReport(json, &why)) << why.toStdString();
  std::ifstream in(json.toStdString());
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["inputs"]["a"], a_);
  const nlohmann::json expected = matcher::MatchResultToJson(
      view_->outcome()->result, *view_->outcome()->features_a, *view_->outcome()->features_b);
  EXPECT_EQ(report["matches"], expected["matches"]);

  EXPECT_FALSE(view_->SaveReport(dir.filePath("no/such/folder/r.json"), &why));
  EXPECT_FALSE(why.isEmpty());
}

TEST_F(MatchViewTest, DroppingTwoFilesOpensBoth) {
  auto* canvas = view_->canvas();
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(a_)),
                QUrl::fromLocalFile(QString::fromStdString(b_))});
  const QPoint at = canvas->viewport()->rect().center();
  QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(canvas->viewport(), &enter);
  EXPECT_TRUE(enter.isAccepted());
  QDropEvent drop(QPointF(at), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(canvas->viewport(), &drop);
  ASSERT_TRUE(WaitFor([&] { return view_->imageReady(0) && view_->imageReady(1); }));
  EXPECT_EQ(view_->imagePath(0).toStdString(), a_);
  EXPECT_EQ(view_->imagePath(1).toStdString(), b_);
}

TEST_F(MatchViewTest, SettingsAndRecentFilesPersist) {
  SetAutoRun(false);
  OpenSamples();
  view_->options()->ratioBox()->setValue(0.72);
  EXPECT_FALSE(window_->windowIcon().isNull());  // the bundled icon is found
  window_->close();                              // saves settings
  window_ = std::make_unique<ui::MainWindow>();
  view_ = window_->matchView();
  EXPECT_NEAR(view_->options()->ratioBox()->value(), 0.72, 1e-9);
  const QStringList recent = ui::MainWindow::RecentFiles();
  ASSERT_GE(recent.size(), 2);
  EXPECT_TRUE(recent.contains(QString::fromStdString(a_)));
  EXPECT_TRUE(recent.contains(QString::fromStdString(b_)));
}

bool NoGpu(std::string*) { return false; }
bool SomeGpu(std::string* name) {
  if (name) *name = "Test GPU";
  return true;
}

TEST(OptionsPanelTest, SavedGpuChoiceFallsBackToAutoWithoutAGpu) {
  App();
  QSettings settings;
  settings.setValue("options/backend", "gpu");
  ui::OptionsPanel panel(nullptr, &NoGpu);
  panel.Load(settings);
  EXPECT_EQ(panel.backendBox()->currentText(), "auto");
  EXPECT_EQ(panel.backend().kind, matcher::BackendKind::kAuto);
  settings.remove("options/backend");
}

TEST(OptionsPanelTest, SavedGpuChoiceStaysWithAGpu) {
  App();
  QSettings settings;
  settings.setValue("options/backend", "gpu");
  ui::OptionsPanel panel(nullptr, &SomeGpu);
  panel.Load(settings);
  EXPECT_EQ(panel.backendBox()->currentText(), "gpu");
  EXPECT_EQ(panel.backend().kind, matcher::BackendKind::kGpu);
  settings.remove("options/backend");
}

// An object whose event handler throws, as a defect in a slot might.
class Thrower : public QObject {
 public:
  bool event(QEvent* e) override {
    if (e->type() == QEvent::User) throw std::runtime_error("thrown inside an event handler");
    return QObject::event(e);
  }
};

TEST(ApplicationTest, AnExceptionInEventDeliveryBecomesADialog) {
  App();
  Thrower thrower;
  QCoreApplication::postEvent(&thrower, new QEvent(QEvent::User));
  ASSERT_TRUE(WaitFor([] { return !test::ErrorDialogs().isEmpty(); }, 10000));
  EXPECT_TRUE(test::ErrorDialogs().last()->text().contains("thrown inside an event handler"));
  test::CloseErrorDialogs();
}

TEST_F(MatchViewTest, MessagesNameThePanelsFieldsNotTheCliFlags) {
  SetAutoRun(false);
  view_->findChild<QComboBox*>("metric")->setCurrentText("ip");  // the ratio test cannot work
  auto* problem = view_->findChild<QLabel*>("options_problem");
  ASSERT_NE(problem, nullptr);
  ASSERT_FALSE(problem->isHidden());
  EXPECT_FALSE(problem->text().contains("--")) << problem->text().toStdString();
  EXPECT_TRUE(problem->text().contains("“Ratio test” = 1")) << problem->text().toStdString();
  // The extraction's memory refusal names its flag too; flags that are no field stay as they are.
  const QString mapped = view_->options()->InPanelTerms(
      "downscale it to a longer side of 2000 or less (--max-image-size); see --help");
  EXPECT_EQ(mapped, "downscale it to a longer side of 2000 or less (“Max image size”); see --help");
  EXPECT_EQ(view_->options()->InPanelTerms("use --mutual"), "use “Mutual nearest neighbours”");
}

TEST_F(MatchViewTest, EscShowsThatTheCancelIsPendingUntilTheWorkerStops) {
  SetAutoRun(false);
  // Larger images than box.png: extraction takes long enough to cancel in the middle of it.
  view_->OpenImage(0, QString::fromStdString(test::Sample("graf1.png")));
  view_->OpenImage(1, QString::fromStdString(test::Sample("graf3.png")));
  ASSERT_TRUE(WaitFor([&] { return view_->imageReady(0) && view_->imageReady(1); }));
  auto* stage = view_->findChild<QLabel*>("fm_stage");
  ASSERT_NE(stage, nullptr);
  view_->Run();
  view_->cancelAction()->trigger();
  ASSERT_TRUE(view_->busy());
  EXPECT_TRUE(stage->text().startsWith("Cancelling")) << stage->text().toStdString();
  EXPECT_FALSE(view_->cancelAction()->isEnabled());
  // Stage messages of the worker still arrive; the line keeps saying that a cancel is pending.
  bool kept = true;
  ASSERT_TRUE(WaitFor([&] {
    if (view_->busy() && !stage->text().startsWith("Cancelling")) kept = false;
    return !view_->busy();
  }));
  EXPECT_TRUE(kept);
  ASSERT_TRUE(WaitFor([&] { return stage->text() == "Cancelled"; }, 5000))
      << stage->text().toStdString();
  EXPECT_EQ(finished_, 0);
}

// A cancel made as the match stage starts stops that stage's searches: the controller reports it
// before an uncancelled match of the same (cached) features would have ended them. graf1 and
// graf3 at twice their size, about 25000 features each, so that the searches take a while on
// the CPU (half a second on two cores).
TEST(MatchControllerTest, ACancelStopsTheSearchesOfTheMatchStage) {
  FM_REQUIRE_SAMPLES("graf1.png", "graf3.png");
  App();
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  ui::MatchRequest request;
  for (int side = 0; side < 2; ++side) {
    const cv::Mat image = cv::imread(test::Sample(side == 0 ? "graf1.png" : "graf3.png"));
    ASSERT_FALSE(image.empty());
    cv::Mat large;
    cv::resize(image, large, cv::Size(), 2.0, 2.0, cv::INTER_CUBIC);
    const QString path = dir.filePath(side == 0 ? "a.png" : "b.png");
    ASSERT_TRUE(cv::imwrite(path.toStdString(), large));
    (side == 0 ? request.path_a : request.path_b) = path;
  }
  request.sift.contrast_threshold = 0.01;  // more features than the default gives
  request.match.filter.mutual = true;      // two searches
  request.backend.kind = matcher::BackendKind::kCpu;
  ui::MatchController controller;
  std::shared_ptr<const ui::MatchOutcome> outcome;
  int cancelled = 0, failed = 0;
  QObject::connect(&controller, &ui::MatchController::finished,
                   [&](std::shared_ptr<const ui::MatchOutcome> o) { outcome = std::move(o); });
  QObject::connect(&controller, &ui::MatchController::cancelled, [&] { ++cancelled; });
  QObject::connect(&controller, &ui::MatchController::failed,
                   [&](const QString&, const QString&) { ++failed; });
  controller.Run(request);  // extracts the features into the cache
  ASSERT_TRUE(WaitFor([&] { return outcome != nullptr; }, 120000));
  const std::string outcome_features = std::to_string(outcome->result.features_a) + " x " +
                                       std::to_string(outcome->result.features_b);
  double searches_ms = 0;
  for (const auto& t : outcome->result.times)
    if (t.stage == "knn" || t.stage == "knn_backward") searches_ms += t.ms;
  // Again, the cancel made while the worker waits at the match stage's message.
  QObject receiver;
  QElapsedTimer since_cancel;
  QObject::connect(
      &controller, &ui::MatchController::progress, &receiver,
      [&](const QString& stage) {
        if (!stage.startsWith("Matching")) return;
        controller.Cancel();
        since_cancel.start();
      },
      Qt::BlockingQueuedConnection);
  outcome.reset();
  controller.Run(request);
  ASSERT_TRUE(WaitFor([&] { return cancelled == 1 && !controller.busy(); }, 120000));
  const double stopped_ms = static_cast<double>(since_cancel.elapsed());
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(outcome, nullptr);
  EXPECT_LT(stopped_ms, searches_ms / 2)
      << "the uncancelled searches of " << outcome_features << " features took " << searches_ms
      << " ms; the cancel took " << stopped_ms << " ms to stop the match";
}

// Under auto the controller matches on the CPU while a match's search would end before a GPU had
// started, and says so; a larger match makes the backend again (the GPU where there is one), which
// then serves the small matches after it too. One thread, so that the estimates do not depend on
// the machine's cores.
TEST(MatchControllerTest, AutoStaysOnTheCpuUntilAMatchIsWorthAGpusStart) {
  FM_REQUIRE_SAMPLES("box.png", "box_in_scene.png", "graf1.png", "graf3.png");
  App();
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  ui::MatchRequest small;
  small.path_a = QString::fromStdString(test::Sample("box.png"));
  small.path_b = QString::fromStdString(test::Sample("box_in_scene.png"));
  small.backend.kind = matcher::BackendKind::kAuto;
  small.backend.threads = 1;
  ui::MatchRequest large = small;
  for (int side = 0; side < 2; ++side) {
    const cv::Mat image = cv::imread(test::Sample(side == 0 ? "graf1.png" : "graf3.png"));
    ASSERT_FALSE(image.empty());
    cv::Mat bigger;
    cv::resize(image, bigger, cv::Size(), 2.0, 2.0, cv::INTER_CUBIC);
    const QString path = dir.filePath(side == 0 ? "a.png" : "b.png");
    ASSERT_TRUE(cv::imwrite(path.toStdString(), bigger));
    (side == 0 ? large.path_a : large.path_b) = path;
  }
  large.sift.contrast_threshold = 0.01;  // about 25000 features an image
  ui::MatchController controller;
  std::shared_ptr<const ui::MatchOutcome> outcome;
  QObject::connect(&controller, &ui::MatchController::finished,
                   [&](std::shared_ptr<const ui::MatchOutcome> o) { outcome = std::move(o); });
  auto run = [&](const ui::MatchRequest& r) {
    outcome.reset();
    controller.Run(r);
    return WaitFor([&] { return outcome != nullptr; }, 120000);
  };
  const std::string waits = "ends before a GPU would have started";
  ASSERT_TRUE(run(small));
  EXPECT_NE(outcome->backend_note.find("backend: cpu ("), std::string::npos)
      << outcome->backend_note;
  EXPECT_NE(outcome->backend_note.find(waits), std::string::npos) << outcome->backend_note;
  const auto small_matches = outcome->result.matches.size();
  EXPECT_GT(small_matches, 50u);

  ASSERT_TRUE(run(large));
  matcher::SearchWork work;
  work.queries = outcome->result.features_a;
  work.corpus = outcome->result.features_b;
  work.dim = 128;
  ASSERT_GE(matcher::EstimatedCpuSeconds(work, 1), matcher::kGpuStartSeconds)
      << work.queries << " x " << work.corpus << " features";
  const std::string large_note = outcome->backend_note;
  EXPECT_EQ(large_note.find(waits), std::string::npos) << large_note;
  EXPECT_NE(large_note.find("(auto: "), std::string::npos) << large_note;

  ASSERT_TRUE(run(small));
  EXPECT_EQ(outcome->backend_note, large_note);
  EXPECT_EQ(outcome->result.matches.size(), small_matches);
}

TEST_F(MatchViewTest, GuidedMatchingIsACheckBoxOfThePanel) {
  auto* guided = view_->findChild<QCheckBox*>("guided");
  ASSERT_NE(guided, nullptr);
  EXPECT_FALSE(guided->isChecked());
  guided->setChecked(true);
  EXPECT_TRUE(view_->options()->match().guided);
  ASSERT_NO_FATAL_FAILURE(MatchSamplesOnce());
  const auto& r = view_->outcome()->result;
  ASSERT_TRUE(r.guided.applied);
  const QString shown = view_->findChild<QLabel*>("fm_model")->text();
  EXPECT_TRUE(shown.contains(QString("guided: %1 → %2 inliers")
                                 .arg(r.guided.inliers_before)
                                 .arg(r.verification.num_inliers)))
      << shown.toStdString();
}

TEST_F(MatchViewTest, EscapeKeyCancelsTheMatch) {
  FM_REQUIRE_SAMPLES("graf3.png");
  // The key itself, through the window's shortcut map, not the action triggered by the test.
  SetAutoRun(false);
  view_->OpenImage(0, QString::fromStdString(test::Sample("graf1.png")));
  view_->OpenImage(1, QString::fromStdString(test::Sample("graf3.png")));
  ASSERT_TRUE(WaitFor([&] { return view_->imageReady(0) && view_->imageReady(1); }));
  ASSERT_TRUE(test::ShowInActiveWindow(window_.get(), view_));
  auto* stage = view_->findChild<QLabel*>("fm_stage");
  ASSERT_NE(stage, nullptr);
  view_->Run();
  ASSERT_TRUE(view_->busy());
  QTest::keyClick(view_, Qt::Key_Escape);
  EXPECT_TRUE(stage->text().startsWith("Cancelling")) << stage->text().toStdString();
  ASSERT_TRUE(WaitFor([&] { return !view_->busy(); }));
  ASSERT_TRUE(WaitFor([&] { return stage->text() == "Cancelled"; }, 5000))
      << stage->text().toStdString();
  EXPECT_EQ(finished_, 0);
}

TEST_F(MatchViewTest, CaptionsStayWithinTheirPane) {
  ui::MatchCanvas* canvas = view_->canvas();
  QImage dark(300, 200, QImage::Format_RGB32);
  dark.fill(QColor(20, 20, 20));
  canvas->SetImage(0, dark);
  canvas->SetImage(1, dark);
  canvas->SetTitle(0, "A: an_image_whose_file_name_is_much_longer_than_its_pane_is_wide.png "
                      "(300 × 200)");
  canvas->SetTitle(1, QString());
  canvas->ZoomOut();
  canvas->ZoomOut();
  const QImage shot = canvas->viewport()->grab().toImage();
  const QPoint a_top = canvas->mapFromScene(canvas->ScenePoint(0, 0, 0));
  const QPoint b_top = canvas->mapFromScene(canvas->ScenePoint(1, 0, 0));
  ASSERT_EQ(a_top.y(), b_top.y());
  const int band = canvas->fontMetrics().height() + 8;
  // Caption pixels (light grey on the dark background) above pane A and above pane B.
  int over_a = 0, over_b = 0;
  for (int y = std::max(0, a_top.y() - band); y < a_top.y(); ++y)
    for (int x = 0; x < shot.width(); ++x) {
      const QColor c = shot.pixelColor(x, y);
      if (c.red() < 150 || c.green() < 150 || c.blue() < 150) continue;
      ++(x < b_top.x() ? over_a : over_b);
    }
  EXPECT_GT(over_a, 20);  // the caption is drawn...
  EXPECT_EQ(over_b, 0);   // ...and none of it over the other pane
}

TEST_F(MatchViewTest, AFailedOpenKeepsThePaneAsItWas) {
  ASSERT_NO_FATAL_FAILURE(MatchSamplesOnce());
  const Counts before = Shown();
  const auto outcome = view_->outcome();
  QTemporaryDir dir;
  const QString broken = WriteNotAnImage(dir);
  ASSERT_FALSE(broken.isEmpty());
  view_->OpenImage(1, broken);
  EXPECT_FALSE(view_->runAction()->isEnabled());  // while it loads
  ASSERT_TRUE(WaitFor([] { return !test::ErrorDialogs().isEmpty(); }, 20000));
  test::CloseErrorDialogs();
  // Image, caption, result and counts are still those of box_in_scene.png, together.
  EXPECT_EQ(view_->imagePath(1).toStdString(), b_);
  EXPECT_TRUE(view_->imageReady(1));
  EXPECT_TRUE(view_->canvas()->title(1).contains("box_in_scene.png"));
  EXPECT_EQ(view_->outcome(), outcome);
  ExpectSame(Shown(), before);
  EXPECT_TRUE(view_->runAction()->isEnabled());
  const QString stage = view_->findChild<QLabel*>("fm_stage")->text();
  EXPECT_TRUE(stage.contains("broken.png") && stage.contains("box_in_scene.png"))
      << stage.toStdString();
}

TEST_F(MatchViewTest, ReportSaysWhichFeaturesCameFromTheCache) {
  ASSERT_NO_FATAL_FAILURE(MatchSamplesOnce());
  QTemporaryDir dir;
  QString why;
  auto read = [&](const QString& path) {
    EXPECT_TRUE(view_->SaveReport(path, &why)) << why.toStdString();
    std::ifstream in(path.toStdString());
    return nlohmann::json::parse(in);
  };
  const nlohmann::json first = read(dir.filePath("first.json"));
  EXPECT_FALSE(first["cached"]["features_a"].get<bool>());
  EXPECT_GT(first["times_ms"]["extract_a"].get<double>(), 0);
  EXPECT_GT(first["times_ms"]["load_a"].get<double>(), 0);

  view_->options()->ratioBox()->setValue(0.7);  // same features, matched again
  view_->Run();
  ASSERT_TRUE(WaitFinished(2));
  const nlohmann::json second = read(dir.filePath("second.json"));
  EXPECT_TRUE(second["cached"]["features_a"].get<bool>());
  EXPECT_TRUE(second["cached"]["features_b"].get<bool>());
  EXPECT_TRUE(second["times_ms"]["extract_a"].is_null());
  EXPECT_TRUE(second["times_ms"]["extract_b"].is_null());
  EXPECT_GT(second["times_ms"]["load_a"].get<double>(), 0);  // the time the image was read
}

TEST_F(MatchViewTest, DrawingIsSavedOffTheGuiThread) {
  ASSERT_NO_FATAL_FAILURE(MatchSamplesOnce());
  QTemporaryDir dir;
  QStringList saved;
  QObject::connect(view_, &ui::MatchView::drawingSaved,
                   [&](const QString& path, const QString& error) { saved << path + error; });
  const QString png = dir.filePath("drawing.png");
  ASSERT_TRUE(view_->StartSaveDrawing(png));
  // Back at once, with Save Drawing off until the worker is done; a second save is refused.
  EXPECT_TRUE(view_->savingDrawing());
  EXPECT_FALSE(view_->saveDrawingAction()->isEnabled());
  EXPECT_FALSE(view_->StartSaveDrawing(dir.filePath("other.png")));
  ASSERT_TRUE(WaitFor([&] { return !saved.isEmpty(); }));
  EXPECT_EQ(saved, QStringList{png});
  EXPECT_TRUE(view_->saveDrawingAction()->isEnabled());
  const cv::Mat drawn = cv::imread(png.toStdString());
  ASSERT_FALSE(drawn.empty());
  EXPECT_EQ(drawn.cols, cv::imread(a_).cols + cv::imread(b_).cols);

  ASSERT_TRUE(view_->StartSaveDrawing(dir.filePath("no/such/folder/d.png")));
  ASSERT_TRUE(WaitFor([&] { return saved.size() == 2; }));
  EXPECT_NE(saved[1], dir.filePath("no/such/folder/d.png"));  // an error came with it
  EXPECT_FALSE(test::ErrorDialogs().isEmpty());
}

TEST_F(MatchViewTest, InliersAtOnePointAreShownAsNotVerified) {
  FM_REQUIRE_SAMPLES("left01.jpg");
  // graf1.png and left01.jpg show nothing in common: the homography through the one chessboard
  // point many graffiti features match has enough inliers, but at one point.
  const matcher::Verification* p = nullptr;
  ASSERT_NO_FATAL_FAILURE(MatchOnce("graf1.png", "left01.jpg", &p));
  const auto& v = *p;
  EXPECT_FALSE(v.verified);
  const QString shown = view_->findChild<QLabel*>("fm_model")->text();
  const QString at = v.distinct_inliers == 1
                         ? QString("inliers at one point")
                         : QString("inliers at %1 distinct points").arg(v.distinct_inliers);
  EXPECT_TRUE(shown.contains(QString("(%1 ").arg(v.num_inliers) + at)) << shown.toStdString();
}

TEST_F(MatchViewTest, AModelRandomMatchesFitAsWellIsShownAsNotVerified) {
  FM_REQUIRE_SAMPLES("aloeL.jpg", "home.jpg");
  // Different scenes, the batch's settings: a fundamental matrix fits 15-17 matches at distinct
  // points, as many as random matches give.
  matcher::MatchOptions m;
  m.filter.mutual = true;
  m.verify.model = matcher::GeometryModel::kFundamental;
  m.verify.min_inliers = 15;
  view_->options()->SetMatch(m);
  const matcher::Verification* p = nullptr;
  ASSERT_NO_FATAL_FAILURE(MatchOnce("aloeL.jpg", "home.jpg", &p));
  const auto& v = *p;
  EXPECT_FALSE(v.verified);
  const QString shown = view_->findChild<QLabel*>("fm_model")->text();
  EXPECT_TRUE(shown.contains(QString("(%1 inliers, as random matches would give: NFA 10^")
                                 .arg(v.num_inliers)))
      << shown.toStdString();
  // The panel's "Max NFA" at 0 turns the test off: the inliers alone decide.
  auto* max_nfa = view_->findChild<QDoubleSpinBox*>("max_nfa");
  ASSERT_NE(max_nfa, nullptr);
  EXPECT_EQ(max_nfa->value(), 1.0);
  max_nfa->setValue(0);
  view_->Run();
  ASSERT_TRUE(WaitFinished(2)) << errors_.join("\n").toStdString();
  const auto& w = view_->outcome()->result.verification;
  EXPECT_EQ(w.verified, w.distinct_inliers >= 15) << w.distinct_inliers;
  EXPECT_FALSE(view_->findChild<QLabel*>("fm_model")->text().contains("random matches"));
}

}  // namespace
}  // namespace fm
