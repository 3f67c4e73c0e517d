#include "fm/ui/options_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "fm/core/knn.h"
#include "fm/matcher/verify.h"

namespace fm::ui {

namespace {

QSpinBox* IntBox(const QString& name, int lo, int hi, const QString& tip,
                 const QString& special = {}) {
  auto* b = new QSpinBox;
  b->setObjectName(name);
  b->setRange(lo, hi);
  b->setToolTip(tip);
  b->setAccelerated(true);
  if (!special.isEmpty()) b->setSpecialValueText(special);
  return b;
}

QDoubleSpinBox* RealBox(const QString& name, double lo, double hi, double step, int decimals,
                        const QString& tip, const QString& special = {}) {
  auto* b = new QDoubleSpinBox;
  b->setObjectName(name);
  b->setRange(lo, hi);
  b->setSingleStep(step);
  b->setDecimals(decimals);
  b->setToolTip(tip);
  b->setAccelerated(true);
  if (!special.isEmpty()) b->setSpecialValueText(special);
  return b;
}

QComboBox* Choice(const QString& name, const QStringList& items, const QString& tip) {
  auto* c = new QComboBox;
  c->setObjectName(name);
  c->addItems(items);
  c->setToolTip(tip);
  return c;
}

QCheckBox* Flag(const QString& name, const QString& text, const QString& tip) {
  auto* c = new QCheckBox(text);
  c->setObjectName(name);
  c->setToolTip(tip);
  return c;
}

void SetCombo(QComboBox* c, const QString& text) {
  const int i = c->findText(text);
  if (i >= 0) c->setCurrentIndex(i);
}

}  // namespace

OptionsPanel::OptionsPanel(QWidget* parent, GpuProbe gpu_probe) : QWidget(parent) {
  setObjectName("fm_options_panel");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);

  auto* sift_box = new QGroupBox(tr("Features (SIFT)"));
  auto* sf = new QFormLayout(sift_box);
  sf->addRow(tr("Max features"),
             max_features_ = IntBox("max_features", 0, 1000000,
                                    tr("Keep the N strongest features by response"), tr("all")));
  max_features_->setSingleStep(500);
  sf->addRow(
      tr("Octave layers"),
      octave_layers_ = IntBox("octave_layers", 0, 12, tr("Layers per octave of the scale space")));
  sf->addRow(tr("Contrast threshold"),
             contrast_ = RealBox("contrast_threshold", 0, 1, 0.005, 4,
                                 tr("Larger values give fewer, stronger features")));
  sf->addRow(tr("Edge threshold"),
             edge_ = RealBox("edge_threshold", 0, 1000, 1, 2,
                             tr("Larger values keep more edge-like features")));
  sf->addRow(tr("Sigma"),
             sigma_ = RealBox("sigma", 0, 20, 0.1, 2, tr("Gaussian sigma of the first octave")));
  sf->addRow(tr("Max image size"),
             max_image_size_ =
                 IntBox("max_image_size", 0, 100000,
                        tr("Downscale images whose longer side exceeds this before extraction"),
                        tr("keep")));
  max_image_size_->setSingleStep(256);
  sf->addRow(QString(),
             root_sift_ = Flag("root_sift", tr("RootSIFT descriptors"),
                               tr("L1-normalise and square-root the descriptors (float)")));
  layout->addWidget(sift_box);

  auto* match_box = new QGroupBox(tr("Matching"));
  auto* mf = new QFormLayout(match_box);
  mf->addRow(tr("Neighbours k"), k_ = IntBox("k", 0, 2048, tr("Neighbours searched per feature")));
  mf->addRow(tr("Metric"), metric_ = Choice("metric", {"l2", "ip", "cosine", "pearson"},
                                            tr("Distance between descriptors")));
  mf->addRow(
      tr("Ratio test"),
      ratio_ = RealBox(
          "ratio", 0, 1, 0.05, 3,
          tr("Lowe's ratio: nearest / second-nearest distance must be below this (1 = off)")));
  mf->addRow(tr("Max distance"),
             max_distance_ = RealBox("max_distance", 0, 1e7, 10, 2,
                                     tr("Drop matches farther than this"), tr("no limit")));
  mf->addRow(tr("CPU threads"),
             threads_ = IntBox("threads", 0, 1024, tr("Threads of the CPU backend"), tr("all")));
  mf->addRow(QString(),
             mutual_ = Flag("mutual", tr("Mutual nearest neighbours"),
                            tr("Keep a match only if it is also nearest in the other direction")));
  layout->addWidget(match_box);

  auto* verify_box = new QGroupBox(tr("Verification"));
  auto* vf = new QFormLayout(verify_box);
  vf->addRow(tr("Model"), model_ = Choice("model", {"homography", "fundamental", "none"},
                                          tr("Geometric model fitted to the matches")));
  vf->addRow(tr("USAC method"),
             usac_ = Choice("usac", {"magsac", "default", "accurate", "prosac", "fast", "parallel"},
                            tr("OpenCV USAC variant")));
  vf->addRow(tr("Threshold (px)"),
             threshold_ = RealBox("threshold", 0, 1000, 0.5, 2,
                                  tr("Inlier reprojection / Sampson threshold in pixels")));
  vf->addRow(tr("Confidence"),
             confidence_ = RealBox("confidence", 0, 1, 0.001, 4, tr("RANSAC confidence")));
  vf->addRow(tr("Max iterations"),
             max_iterations_ = IntBox("max_iterations", 0, 10000000, tr("RANSAC iteration limit")));
  max_iterations_->setSingleStep(1000);
  vf->addRow(tr("Min inliers"),
             min_inliers_ =
                 IntBox("min_inliers", 0, 100000, tr("Inliers needed to call the pair verified")));
  vf->addRow(tr("Max NFA"),
             max_nfa_ = RealBox("max_nfa", 0, 1e6, 0.1, 3,
                                tr("Most false alarms a verified model may have: how often "
                                   "matches at random would fit as well (0 = no test)")));
  vf->addRow(QString(),
             guided_ = Flag("guided", tr("Guided matching"),
                            tr("Once a model is verified, match again among the features it "
                               "allows, and keep those matches when they verify")));
  layout->addWidget(verify_box);

  auto* backend_box = new QGroupBox(tr("Backend"));
  auto* bf = new QFormLayout(backend_box);
  bf->addRow(tr("kNN on"), kind_ = Choice("backend", {"auto", "cpu", "gpu"},
                                          tr("auto takes the GPU when one is present")));
  gpu_label_ = new QLabel;
  gpu_label_->setObjectName("gpu_name");
  gpu_label_->setWordWrap(true);
  std::string gpu_name;
  if (gpu_probe(&gpu_name)) {
    gpu_label_->setText(tr("GPU: %1").arg(QString::fromStdString(gpu_name)));
  } else {
    gpu_label_->setText(tr("No GPU available: matching runs on the CPU"));
    if (auto* model = qobject_cast<QStandardItemModel*>(kind_->model()))
      model->item(2)->setEnabled(false);
  }
  bf->addRow(QString(), gpu_label_);
  bf->addRow(tr("Device"), device_ = IntBox("device", 0, 64, tr("GPU ordinal")));
  bf->addRow(
      tr("Selection"),
      select_ = Choice("select", {"auto", "tbis", "merge-queue", "quick-multiselect", "sort"},
                       tr("GPU k-selection algorithm")));
  bf->addRow(tr("Precision"), precision_ = Choice("precision", {"exact", "fp32", "tf32", "fp16"},
                                                  tr("GPU scoring precision")));
  bf->addRow(tr("Memory budget"),
             memory_ = RealBox("gpu_memory", 0, 1, 0.05, 2,
                               tr("Fraction of free GPU memory the search may use")));
  layout->addWidget(backend_box);

  auto_run_ = Flag("auto_run", tr("Re-run when a parameter changes"),
                   tr("Matching starts again shortly after each change; features are reused"));
  auto_run_->setChecked(true);
  layout->addWidget(auto_run_);
  auto* reset = new QPushButton(tr("Restore defaults"));
  reset->setObjectName("reset_options");
  connect(reset, &QPushButton::clicked, this, &OptionsPanel::ResetToDefaults);
  layout->addWidget(reset);
  // Not in the panel's layout: whoever shows the panel places it (see problemLabel()).
  problem_ = new QLabel(this);
  problem_->setObjectName("options_problem");
  problem_->setWordWrap(true);
  problem_->setStyleSheet("color: #e0504a; font-weight: bold;");
  problem_->hide();
  layout->addStretch(1);

  ResetToDefaults();

  auto notify = [this] { Revalidate(); };
  for (auto* s : findChildren<QSpinBox*>()) connect(s, &QSpinBox::valueChanged, this, notify);
  for (auto* s : findChildren<QDoubleSpinBox*>())
    connect(s, &QDoubleSpinBox::valueChanged, this, notify);
  for (auto* c : findChildren<QComboBox*>())
    connect(c, &QComboBox::currentIndexChanged, this, notify);
  for (auto* c : findChildren<QCheckBox*>())
    if (c != auto_run_) connect(c, &QCheckBox::toggled, this, notify);
}

matcher::SiftOptions OptionsPanel::sift() const {
  matcher::SiftOptions o;
  o.max_features = max_features_->value();
  o.octave_layers = octave_layers_->value();
  o.contrast_threshold = contrast_->value();
  o.edge_threshold = edge_->value();
  o.sigma = sigma_->value();
  o.root_sift = root_sift_->isChecked();
  o.max_image_size = max_image_size_->value();
  return o;
}

matcher::MatchOptions OptionsPanel::match() const {
  matcher::MatchOptions o;
  o.k = k_->value();
  o.metric = core::ParseMetric(metric_->currentText().toStdString());
  o.filter.ratio = static_cast<float>(ratio_->value());
  o.filter.mutual = mutual_->isChecked();
  o.filter.max_distance = static_cast<float>(max_distance_->value());
  o.threads = threads_->value();
  o.verify.model = matcher::ParseGeometryModel(model_->currentText().toStdString());
  o.verify.method = matcher::ParseUsacMethod(usac_->currentText().toStdString());
  o.verify.threshold = threshold_->value();
  o.verify.confidence = confidence_->value();
  o.verify.max_iterations = max_iterations_->value();
  o.verify.min_inliers = min_inliers_->value();
  o.verify.max_nfa = max_nfa_->value();
  o.guided = guided_->isChecked();
  return o;
}

matcher::BackendOptions OptionsPanel::backend() const {
  matcher::BackendOptions o;
  o.kind = matcher::ParseBackendKind(kind_->currentText().toStdString());
  o.device = device_->value();
  o.select_algo = select_->currentText().toStdString();
  o.precision = precision_->currentText().toStdString();
  o.memory_fraction = memory_->value();
  return o;
}

void OptionsPanel::SetSift(const matcher::SiftOptions& o) {
  const bool was = loading_;
  loading_ = true;
  max_features_->setValue(o.max_features);
  octave_layers_->setValue(o.octave_layers);
  contrast_->setValue(o.contrast_threshold);
  edge_->setValue(o.edge_threshold);
  sigma_->setValue(o.sigma);
  root_sift_->setChecked(o.root_sift);
  max_image_size_->setValue(o.max_image_size);
  loading_ = was;
  Revalidate();
}

void OptionsPanel::SetMatch(const matcher::MatchOptions& o) {
  const bool was = loading_;
  loading_ = true;
  k_->setValue(static_cast<int>(o.k));
  SetCombo(metric_, core::MetricName(o.metric));
  ratio_->setValue(o.filter.ratio);
  mutual_->setChecked(o.filter.mutual);
  max_distance_->setValue(o.filter.max_distance);
  threads_->setValue(o.threads);
  SetCombo(model_, matcher::GeometryModelName(o.verify.model));
  SetCombo(usac_, matcher::UsacMethodName(o.verify.method));
  threshold_->setValue(o.verify.threshold);
  confidence_->setValue(o.verify.confidence);
  max_iterations_->setValue(o.verify.max_iterations);
  min_inliers_->setValue(o.verify.min_inliers);
  max_nfa_->setValue(o.verify.max_nfa);
  guided_->setChecked(o.guided);
  loading_ = was;
  Revalidate();
}

void OptionsPanel::SetBackend(const matcher::BackendOptions& o) {
  const bool was = loading_;
  loading_ = true;
  SetCombo(kind_, matcher::BackendKindName(o.kind));
  device_->setValue(o.device);
  SetCombo(select_, QString::fromStdString(o.select_algo));
  SetCombo(precision_, QString::fromStdString(o.precision));
  memory_->setValue(o.memory_fraction);
  loading_ = was;
  Revalidate();
}

void OptionsPanel::ResetToDefaults() {
  const bool was = loading_;
  loading_ = true;
  SetSift({});
  SetMatch({});
  SetBackend({});
  loading_ = was;
  Revalidate();
}

bool OptionsPanel::Valid(QString* why) const {
  std::string w;
  auto fail = [&](const QString& what) {
    if (why) *why = what + InPanelTerms(QString::fromStdString(w));
    return false;
  };
  try {
    if (!sift().Check(&w)) return fail(tr("SIFT: "));
    if (!match().Check(&w)) return fail(tr("Matching: "));
    if (!backend().Check(&w)) return fail(tr("Backend: "));
  } catch (const std::exception& e) {
    w = e.what();
    return fail(QString());
  }
  return true;
}

QString OptionsPanel::InPanelTerms(const QString& message) const {
  // "--flag" or "--flag value"; the field of a flag is the child named like it (-- and _).
  static const QRegularExpression flag(R"(--([a-z][a-z0-9-]*)(?: ([0-9][0-9.]*))?)");
  QString out;
  qsizetype last = 0;
  for (auto it = flag.globalMatch(message); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    QWidget* field = findChild<QWidget*>(m.captured(1).replace('-', '_'));
    QString label;
    if (auto* check = qobject_cast<QCheckBox*>(field)) {
      label = check->text();
    } else if (field) {
      for (auto* form : findChildren<QFormLayout*>())
        if (auto* l = qobject_cast<QLabel*>(form->labelForField(field))) label = l->text();
    }
    if (label.isEmpty()) continue;  // not a field of the panel: left as it is
    out += message.mid(last, m.capturedStart() - last);
    out += QString("“%1”").arg(label);
    if (m.hasCaptured(2)) out += " = " + m.captured(2);
    last = m.capturedEnd();
  }
  return out + message.mid(last);
}

bool OptionsPanel::autoRun() const { return auto_run_->isChecked(); }

void OptionsPanel::Revalidate() {
  if (loading_) return;
  QString why;
  if (Valid(&why)) {
    problem_->hide();
    problem_->clear();
  } else {
    problem_->setText(tr("Cannot run: %1").arg(why));
    problem_->show();
  }
  emit changed();
}

void OptionsPanel::Save(QSettings& s) const {
  s.beginGroup("options");
  for (auto* b : findChildren<QSpinBox*>()) s.setValue(b->objectName(), b->value());
  for (auto* b : findChildren<QDoubleSpinBox*>()) s.setValue(b->objectName(), b->value());
  for (auto* c : findChildren<QComboBox*>()) s.setValue(c->objectName(), c->currentText());
  for (auto* c : findChildren<QCheckBox*>()) s.setValue(c->objectName(), c->isChecked());
  s.endGroup();
}

void OptionsPanel::Load(QSettings& s) {
  loading_ = true;
  s.beginGroup("options");
  for (auto* b : findChildren<QSpinBox*>())
    if (s.contains(b->objectName())) b->setValue(s.value(b->objectName()).toInt());
  for (auto* b : findChildren<QDoubleSpinBox*>())
    if (s.contains(b->objectName())) b->setValue(s.value(b->objectName()).toDouble());
  for (auto* c : findChildren<QComboBox*>())
    if (s.contains(c->objectName())) SetCombo(c, s.value(c->objectName()).toString());
  for (auto* c : findChildren<QCheckBox*>())
    if (s.contains(c->objectName())) c->setChecked(s.value(c->objectName()).toBool());
  s.endGroup();
  // A GPU chosen on another machine (or before a driver change) falls back to auto.
  if (auto* model = qobject_cast<QStandardItemModel*>(kind_->model())) {
    QStandardItem* item = model->item(kind_->currentIndex());
    if (item && !item->isEnabled()) kind_->setCurrentIndex(0);
  }
  loading_ = false;
  Revalidate();
}

}  // namespace fm::ui
