#include "fm/matcher/cv_matcher.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace fm::matcher {
namespace {

// Copies a descriptor Mat (CV_8U or CV_32F, one channel) into a DescriptorMatrix of `type`.
core::DescriptorMatrix ToDescriptors(const cv::Mat& m, core::DescriptorType type,
                                     const char* what) {
  if (m.channels() != 1 || (m.depth() != CV_8U && m.depth() != CV_32F))
    CV_Error(cv::Error::StsUnsupportedFormat,
             std::string("KnnDescriptorMatcher: ") + what +
                 " descriptors must be CV_8U or CV_32F with one channel");
  core::DescriptorMatrix out(type, m.rows, m.cols);
  cv::Mat conv;
  const int want = type == core::DescriptorType::kUint8 ? CV_8U : CV_32F;
  if (m.depth() != want) m.convertTo(conv, want);
  else conv = m;
  const std::size_t row_bytes = static_cast<std::size_t>(m.cols) * conv.elemSize();
  for (int r = 0; r < m.rows; ++r) std::memcpy(out.bytes() + r * row_bytes, conv.ptr(r), row_bytes);
  return out;
}

// OpenCV's rule for compactResult: a query is dropped when every mask is given and its row is
// all zero in each of them.
bool MaskedOut(const std::vector<cv::Mat>& masks, int query) {
  if (masks.empty()) return false;
  for (const auto& m : masks)
    if (m.empty() || cv::countNonZero(m.row(query)) > 0) return false;
  return true;
}

void Compact(std::vector<std::vector<cv::DMatch>>& matches, const std::vector<cv::Mat>& masks) {
  std::vector<std::vector<cv::DMatch>> kept;
  kept.reserve(matches.size());
  for (std::size_t q = 0; q < matches.size(); ++q)
    if (!MaskedOut(masks, static_cast<int>(q))) kept.push_back(std::move(matches[q]));
  matches = std::move(kept);
}

}  // namespace

KnnDescriptorMatcher::KnnDescriptorMatcher(int norm_type, const BackendOptions& backend)
    : norm_type_(norm_type), options_(backend) {
  if (norm_type != cv::NORM_L2 && norm_type != cv::NORM_L2SQR)
    throw std::invalid_argument(
        "KnnDescriptorMatcher supports NORM_L2 and NORM_L2SQR only (got norm " +
        std::to_string(norm_type) + "); use cv::BFMatcher for Hamming or L1 norms");
  std::string why;
  if (!options_.Check(&why)) throw std::invalid_argument("KnnDescriptorMatcher: " + why);
}

KnnDescriptorMatcher::KnnDescriptorMatcher(int norm_type,
                                           std::shared_ptr<core::KnnBackend> backend)
    : KnnDescriptorMatcher(norm_type, BackendOptions{}) {
  if (!backend) throw std::invalid_argument("KnnDescriptorMatcher: null backend");
  backend_ = std::move(backend);
  backend_note_ = "backend: " + backend_->description() + " (given)";
}

cv::Ptr<KnnDescriptorMatcher> KnnDescriptorMatcher::create(int norm_type,
                                                           const BackendOptions& backend) {
  return cv::makePtr<KnnDescriptorMatcher>(norm_type, backend);
}

void KnnDescriptorMatcher::add(cv::InputArrayOfArrays descriptors) {
  if (descriptors.empty()) return;
  if (descriptors.isMatVector() || descriptors.isUMatVector() || descriptors.isVector()) {
    std::vector<cv::Mat> mats;
    descriptors.getMatVector(mats);
    for (const auto& m : mats) trainDescCollection.push_back(m.clone());
  } else {
    trainDescCollection.push_back(descriptors.getMat().clone());
  }
  trained_ = false;
}

void KnnDescriptorMatcher::clear() {
  cv::DescriptorMatcher::clear();
  corpus_ = core::DescriptorMatrix();
  image_start_.clear();
  trained_ = false;
}

bool KnnDescriptorMatcher::empty() const { return trainDescCollection.empty(); }

void KnnDescriptorMatcher::train() {
  if (trained_) return;
  bool all_u8 = true;
  int dim = -1;
  for (const auto& m : trainDescCollection) {
    if (m.empty()) continue;
    if (dim >= 0 && m.cols != dim)
      CV_Error(cv::Error::StsBadSize,
               "KnnDescriptorMatcher: train descriptors have different dimensions (" +
                   std::to_string(dim) + " and " + std::to_string(m.cols) + ")");
    dim = m.cols;
    all_u8 = all_u8 && m.depth() == CV_8U;
  }
  const auto type = all_u8 ? core::DescriptorType::kUint8 : core::DescriptorType::kFloat32;
  corpus_ = core::DescriptorMatrix(type, 0, std::max(dim, 0));
  image_start_.assign(1, 0);
  for (const auto& m : trainDescCollection) {
    if (!m.empty()) corpus_.Append(ToDescriptors(m, type, "train"));
    image_start_.push_back(corpus_.rows());
  }
  trained_ = true;
}

cv::Ptr<cv::DescriptorMatcher> KnnDescriptorMatcher::clone(bool empty_train_data) const {
  auto m = cv::makePtr<KnnDescriptorMatcher>(norm_type_, options_);
  m->backend_ = backend_;  // handles and device memory are shared, not copied
  m->backend_note_ = backend_note_;
  if (!empty_train_data) {
    for (const auto& d : trainDescCollection) m->trainDescCollection.push_back(d.clone());
  }
  return m;
}

core::KnnBackend& KnnDescriptorMatcher::Backend() const {
  if (!backend_) backend_ = CreateKnnBackend(options_, &backend_note_);
  return *backend_;
}

std::string KnnDescriptorMatcher::backendDescription() const {
  Backend();
  return backend_note_;
}

cv::DMatch KnnDescriptorMatcher::ToMatch(int query_idx, int64_t global, float dist) const {
  const auto it = std::upper_bound(image_start_.begin(), image_start_.end(), global);
  const int img = static_cast<int>(it - image_start_.begin()) - 1;
  const int train_idx = static_cast<int>(global - image_start_[img]);
  const float d = norm_type_ == cv::NORM_L2 ? std::sqrt(std::max(dist, 0.0f)) : dist;
  return cv::DMatch(query_idx, train_idx, img, d);
}

core::KnnResult KnnDescriptorMatcher::Search(const cv::Mat& query, int64_t k,
                                             const std::vector<cv::Mat>& masks) {
  const int64_t n = corpus_.rows();
  if (query.cols != corpus_.dim())
    CV_Error(cv::Error::StsBadSize, "KnnDescriptorMatcher: query descriptors have dimension " +
                                        std::to_string(query.cols) + ", train descriptors " +
                                        std::to_string(corpus_.dim()));
  const bool use_u8 = corpus_.type() == core::DescriptorType::kUint8 && query.depth() == CV_8U;
  core::DescriptorMatrix q = ToDescriptors(
      query, use_u8 ? core::DescriptorType::kUint8 : core::DescriptorType::kFloat32, "query");
  const core::DescriptorMatrix* c = &corpus_;
  core::DescriptorMatrix corpus_f;
  if (!use_u8 && corpus_.type() == core::DescriptorType::kUint8) {
    corpus_f = core::DescriptorMatrix(core::DescriptorType::kFloat32, n, corpus_.dim());
    for (int64_t i = 0; i < n; ++i) corpus_.RowAsFloat(i, corpus_f.f32() + i * corpus_.dim());
    c = &corpus_f;
  }
  // Masks: search deep enough that k allowed neighbours survive the most-masked query row.
  bool any_mask = false;
  int64_t max_masked = 0;
  for (std::size_t im = 0; im < masks.size() && im + 1 < image_start_.size(); ++im) {
    if (masks[im].empty()) continue;
    any_mask = true;
    CV_Assert(masks[im].type() == CV_8UC1 && masks[im].rows == query.rows &&
              masks[im].cols == image_start_[im + 1] - image_start_[im]);
  }
  if (any_mask) {
    for (int r = 0; r < query.rows; ++r) {
      int64_t masked = 0;
      for (std::size_t im = 0; im < masks.size() && im + 1 < image_start_.size(); ++im)
        if (!masks[im].empty()) masked += masks[im].cols - cv::countNonZero(masks[im].row(r));
      max_masked = std::max(max_masked, masked);
    }
  }
  core::KnnParams params;
  params.k = std::min<int64_t>(std::max<int64_t>(n, 1), k + max_masked);
  core::KnnResult raw = Backend().Search(q, *c, params);
  if (!any_mask && raw.k == k) return raw;
  core::KnnResult out = core::KnnResult::Padded(raw.rows, k);
  for (int64_t r = 0; r < raw.rows; ++r) {
    int64_t o = 0;
    for (int64_t j = 0; j < raw.k && o < k; ++j) {
      const int64_t g = raw.index(r, j);
      if (g < 0) break;
      if (any_mask) {
        const auto it = std::upper_bound(image_start_.begin(), image_start_.end(), g);
        const std::size_t img = static_cast<std::size_t>(it - image_start_.begin()) - 1;
        if (img < masks.size() && !masks[img].empty() &&
            !masks[img].at<uint8_t>(static_cast<int>(r), static_cast<int>(g - image_start_[img])))
          continue;
      }
      out.distances[r * k + o] = raw.distance(r, j);
      out.indices[r * k + o] = g;
      ++o;
    }
  }
  return out;
}

bool KnnDescriptorMatcher::BeginMatch(cv::InputArray query_descriptors,
                                      cv::InputArrayOfArrays masks, bool compact_result,
                                      std::vector<std::vector<cv::DMatch>>& matches,
                                      cv::Mat& query, std::vector<cv::Mat>& mask_vec) {
  matches.clear();
  train();
  query = query_descriptors.getMat();
  if (query.empty() || corpus_.rows() == 0) {
    if (!compact_result) matches.resize(query.rows);
    return false;
  }
  if (!masks.empty()) masks.getMatVector(mask_vec);
  return true;
}

void KnnDescriptorMatcher::knnMatchImpl(cv::InputArray query_descriptors,
                                        std::vector<std::vector<cv::DMatch>>& matches, int k,
                                        cv::InputArrayOfArrays masks, bool compact_result) {
  if (k <= 0) CV_Error(cv::Error::StsBadArg, "KnnDescriptorMatcher: k must be positive");
  cv::Mat query;
  std::vector<cv::Mat> mask_vec;
  if (!BeginMatch(query_descriptors, masks, compact_result, matches, query, mask_vec)) return;
  const core::KnnResult r = Search(query, k, mask_vec);
  matches.resize(query.rows);
  for (int q = 0; q < query.rows; ++q) {
    auto& row = matches[q];
    for (int64_t j = 0; j < r.k; ++j) {
      if (r.index(q, j) < 0) break;
      row.push_back(ToMatch(q, r.index(q, j), r.distance(q, j)));
    }
  }
  if (compact_result) Compact(matches, mask_vec);
}

void KnnDescriptorMatcher::radiusMatchImpl(cv::InputArray query_descriptors,
                                           std::vector<std::vector<cv::DMatch>>& matches,
                                           float max_distance, cv::InputArrayOfArrays masks,
                                           bool compact_result) {
  cv::Mat query;
  std::vector<cv::Mat> mask_vec;
  if (!BeginMatch(query_descriptors, masks, compact_result, matches, query, mask_vec)) return;
  const int64_t n = corpus_.rows();
  // Deepen the search until every query's last neighbour lies outside the radius.
  int64_t k = std::min<int64_t>(n, 32);
  core::KnnResult r;
  for (;;) {
    r = Search(query, k, mask_vec);
    bool deeper = false;
    for (int64_t q = 0; q < r.rows && k < n; ++q) {
      const int64_t last = r.index(q, k - 1);
      if (last >= 0 && ToMatch(0, last, r.distance(q, k - 1)).distance < max_distance) {
        deeper = true;
        break;
      }
    }
    if (!deeper) break;
    k = std::min<int64_t>(n, k * 4);
  }
  matches.resize(query.rows);
  for (int q = 0; q < query.rows; ++q) {
    for (int64_t j = 0; j < r.k; ++j) {
      if (r.index(q, j) < 0) break;
      const cv::DMatch m = ToMatch(q, r.index(q, j), r.distance(q, j));
      if (!(m.distance < max_distance)) break;
      matches[q].push_back(m);
    }
  }
  // cv::BFMatcher's radiusMatch drops every query left without matches.
  if (compact_result)
    matches.erase(std::remove_if(matches.begin(), matches.end(),
                                 [](const std::vector<cv::DMatch>& m) { return m.empty(); }),
                  matches.end());
}

}  // namespace fm::matcher
