// featmatch-gui: the Qt 6 desktop app. Parses the command line and opens the main window.
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>
#include <cstring>

#include "fm/ui/application.h"
#include "fm/ui/main_window.h"
#include "fm/ui/match_view.h"

int main(int argc, char** argv) {
  // --help and --version print and exit: they need no display.
  for (int i = 1; i < argc; ++i) {
    for (const char* info : {"-h", "--help", "--help-all", "-v", "--version"}) {
      if (std::strcmp(argv[i], info) == 0) qputenv("QT_QPA_PLATFORM", "minimal");
    }
  }
  fm::ui::Application app(argc, argv);

  QCommandLineParser parser;
  parser.setApplicationDescription(
      "featmatch desktop app: match images, see features and matches.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("A", "first image to open (optional)");
  parser.addPositionalArgument("B", "second image to open (optional)");
  QCommandLineOption screenshot("screenshot",
                                "open A and B, match them, save a PNG of every view into DIR "
                                "and quit",
                                "DIR");
  parser.addOption(screenshot);
  QCommandLineOption logo("logo", "with --screenshot: a logo for the Logos view (repeatable)",
                          "FILE");
  QCommandLineOption scene(
      "scene", "with --screenshot: a scene queried in the Logos view (repeatable)", "FILE");
  QCommandLineOption batch("batch-folder", "with --screenshot: a folder matched in the Batch view",
                           "DIR");
  parser.addOption(logo);
  parser.addOption(scene);
  parser.addOption(batch);
  parser.process(app);
  const QStringList images = parser.positionalArguments();

  fm::ui::MainWindow window;
  if (parser.isSet(screenshot)) {
    if (images.size() != 2) {
      std::fprintf(stderr, "featmatch-gui: --screenshot needs two images A and B\n");
      return 2;
    }
    window.resize(1600, 1000);
    window.show();
    int code = 0;
    QObject::connect(
        &window, &fm::ui::MainWindow::screenshotsDone, &app, [&](bool ok, const QString& message) {
          std::fprintf(ok ? stdout : stderr, "%s%s\n",
                       ok ? "" : "featmatch-gui: screenshots failed: ", qPrintable(message));
          code = ok ? 0 : 1;
          app.exit(code);
        });
    fm::ui::ScreenshotPlan plan;
    plan.dir = parser.value(screenshot);
    plan.image_a = images[0];
    plan.image_b = images[1];
    plan.logos = parser.values(logo);
    plan.scenes = parser.values(scene);
    plan.batch_folder = parser.value(batch);
    QTimer::singleShot(0, &window, [&] { window.StartScreenshots(plan); });
    app.exec();
    return code;
  }
  window.show();
  for (int side = 0; side < images.size() && side < 2; ++side)
    window.matchView()->OpenImage(side, images[side]);
  return app.exec();
}
