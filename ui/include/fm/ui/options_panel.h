// The parameter panel of the match view, bound to the option structs the CLI uses
// (matcher::SiftOptions, MatchOptions with FilterOptions and VerifyOptions, BackendOptions):
// the structs hold the defaults, their Check() decides what is valid.
#pragma once

#include <QString>
#include <string>
#include <QWidget>

#include "fm/matcher/backend.h"
#include "fm/matcher/pipeline.h"
#include "fm/matcher/sift.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSettings;
class QSpinBox;

namespace fm::ui {

class OptionsPanel : public QWidget {
  Q_OBJECT

 public:
  // gpu_probe: whether a GPU is present (and its name); matcher::GpuAvailable unless a caller
  // (a test) decides.
  using GpuProbe = bool (*)(std::string* name);
  explicit OptionsPanel(QWidget* parent = nullptr, GpuProbe gpu_probe = &matcher::GpuAvailable);

  matcher::SiftOptions sift() const;
  matcher::MatchOptions match() const;
  matcher::BackendOptions backend() const;

  void SetSift(const matcher::SiftOptions& o);
  void SetMatch(const matcher::MatchOptions& o);
  void SetBackend(const matcher::BackendOptions& o);
  void ResetToDefaults();

  // Runs every struct's Check(); `why` gets the first problem, in the panel's words.
  bool Valid(QString* why = nullptr) const;
  // A message of the option structs or the pipeline with every command-line flag it names
  // ("--ratio 1") replaced by the label of the panel's field ("Ratio test = 1"): the structs
  // word their messages for the CLI, and the panel's fields are named after the flags.
  QString InPanelTerms(const QString& message) const;
  // Says why the options are invalid (hidden when they are valid); the match view places it
  // where it stays in sight.
  QLabel* problemLabel() const { return problem_; }
  bool autoRun() const;

  void Save(QSettings& settings) const;
  void Load(QSettings& settings);

  // The widgets, by option name (tests and keyboard users reach them by object name too).
  QDoubleSpinBox* ratioBox() const { return ratio_; }
  QComboBox* backendBox() const { return kind_; }

 signals:
  void changed();  // any option changed (after validation state was updated)

 private:
  void Revalidate();

  // SIFT
  QSpinBox* max_features_;
  QSpinBox* octave_layers_;
  QDoubleSpinBox* contrast_;
  QDoubleSpinBox* edge_;
  QDoubleSpinBox* sigma_;
  QCheckBox* root_sift_;
  QSpinBox* max_image_size_;
  // Matching
  QSpinBox* k_;
  QComboBox* metric_;
  QDoubleSpinBox* ratio_;
  QCheckBox* mutual_;
  QDoubleSpinBox* max_distance_;
  QSpinBox* threads_;
  // Verification
  QComboBox* model_;
  QComboBox* usac_;
  QDoubleSpinBox* threshold_;
  QDoubleSpinBox* confidence_;
  QSpinBox* max_iterations_;
  QSpinBox* min_inliers_;
  QDoubleSpinBox* max_nfa_;
  QCheckBox* guided_;
  // Backend
  QComboBox* kind_;
  QLabel* gpu_label_;
  QSpinBox* device_;
  QComboBox* select_;
  QComboBox* precision_;
  QDoubleSpinBox* memory_;
  // State
  QCheckBox* auto_run_;
  QLabel* problem_;
  bool loading_ = false;
};

}  // namespace fm::ui
