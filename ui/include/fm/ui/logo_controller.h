// Runs every operation on a logo library (open, create, add, remove, query) on one worker thread,
// in the order asked, and reports through signals. The library itself lives only on that worker
// (LogoLibrary is not shared between threads); the GUI gets copies of what it shows.
#pragma once

#include <QImage>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>
#include <memory>
#include <vector>

#include "fm/matcher/backend.h"
#include "fm/matcher/logo_library.h"

namespace fm::ui {

struct LogoEntry {
  matcher::LogoInfo info;
  QImage thumbnail;  // at most 128 x 128
};

// The result of one scene, with the pictures the view needs.
struct SceneResult {
  QString path;
  QImage scene;
  matcher::LogoQueryResult result;
  std::vector<QImage> logos;    // per detection: the logo image (its stored size)
  std::vector<QImage> regions;  // per detection: the scene region mapped back onto the logo
  // "backend: ..." and, under auto, why it was chosen (CreateKnnBackendFor's note)
  std::string backend_note;
};

class LogoController : public QObject {
  Q_OBJECT

 public:
  explicit LogoController(QObject* parent = nullptr);
  ~LogoController() override;  // cancels a query and waits for the worker

  // Opens `path`; with `create`, creates a new library there (an existing file is refused).
  void OpenLibrary(const QString& path, bool create);
  void AddLogos(const QStringList& image_files);
  void RemoveLogos(const QStringList& names);
  // Queries each scene in turn; CancelQuery stops after the current scene.
  void Query(const QStringList& scene_files, const matcher::LogoQueryOptions& options);
  void CancelQuery();
  // kNN backend of the queries (taken by the next query; creating it is part of that query).
  void SetBackend(const matcher::BackendOptions& options);

  bool busy() const { return outstanding_ > 0; }
  bool hasLibrary() const { return !library_path_.isEmpty(); }
  QString libraryPath() const { return library_path_; }

 signals:
  void busyChanged(bool busy);
  void progress(const QString& what);
  // The library's content after every change (and after opening).
  void libraryChanged(const QString& path, const QList<fm::ui::LogoEntry>& logos,
                      const QString& summary);
  void sceneDone(int index, int total, std::shared_ptr<const fm::ui::SceneResult> result);
  // `scenes_done` scenes gave results (sceneDone), `scenes_tried` were started (a scene that
  // failed is reported through failed()), of `scenes_total` asked for. `cancelled`: the query
  // stopped before its last scene.
  void queryFinished(int scenes_done, int scenes_tried, int scenes_total, bool cancelled);
  void failed(const QString& title, const QString& message);

 private:
  struct State;
  template <typename Fn>
  void Submit(Fn&& fn);
  void Post(std::function<void()> fn);  // runs fn on the GUI thread

  std::shared_ptr<State> state_;
  QThreadPool pool_;
  int outstanding_ = 0;
  QString library_path_;
};

}  // namespace fm::ui

Q_DECLARE_METATYPE(std::shared_ptr<const fm::ui::SceneResult>)
