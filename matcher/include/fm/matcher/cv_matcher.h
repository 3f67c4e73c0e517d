// A drop-in cv::DescriptorMatcher backed by featmatch's exact kNN engine (the GPU when present,
// the CPU backend otherwise). Code written for cv::BFMatcher runs on it by changing one line:
//
//   cv::Ptr<cv::DescriptorMatcher> m = cv::BFMatcher::create(cv::NORM_L2);
//   cv::Ptr<cv::DescriptorMatcher> m = fm::matcher::KnnDescriptorMatcher::create(cv::NORM_L2);
//
// Supported: knnMatch, match, radiusMatch (with one query set against the train collection, or
// query vs train), masks (one per train image), a train collection with imgIdx, add / train /
// clear / empty / clone. Descriptors: CV_8U or CV_32F rows (mixed types are compared as float).
// Norms: NORM_L2 (Euclidean distance, as BFMatcher reports it) and NORM_L2SQR. Results are
// exact; ties go to the lower train index (images in the order added, rows within an image).
#pragma once

#include <memory>
#include <opencv2/features2d.hpp>
#include <string>

#include "fm/core/knn.h"
#include "fm/matcher/backend.h"

namespace fm::matcher {

class KnnDescriptorMatcher : public cv::DescriptorMatcher {
 public:
  // Throws std::invalid_argument for a norm other than NORM_L2 / NORM_L2SQR.
  explicit KnnDescriptorMatcher(int norm_type = cv::NORM_L2,
                                const BackendOptions& backend = BackendOptions{});
  // Uses a backend the caller made (shared with clones).
  KnnDescriptorMatcher(int norm_type, std::shared_ptr<core::KnnBackend> backend);

  static cv::Ptr<KnnDescriptorMatcher> create(int norm_type = cv::NORM_L2,
                                              const BackendOptions& backend = BackendOptions{});

  void add(cv::InputArrayOfArrays descriptors) override;
  void clear() override;
  bool empty() const override;
  bool isMaskSupported() const override { return true; }
  void train() override;
  cv::Ptr<cv::DescriptorMatcher> clone(bool empty_train_data = false) const override;

  int normType() const { return norm_type_; }
  // The backend in use ("cpu (...)" or "gpu (...)") and how it was chosen.
  std::string backendDescription() const;

 protected:
  void knnMatchImpl(cv::InputArray query_descriptors,
                    std::vector<std::vector<cv::DMatch>>& matches, int k,
                    cv::InputArrayOfArrays masks = cv::noArray(),
                    bool compact_result = false) override;
  void radiusMatchImpl(cv::InputArray query_descriptors,
                       std::vector<std::vector<cv::DMatch>>& matches, float max_distance,
                       cv::InputArrayOfArrays masks = cv::noArray(),
                       bool compact_result = false) override;

 private:
  core::KnnBackend& Backend() const;
  // The start of every match call: clears `matches`, trains, takes the query and the masks.
  // False when there is nothing to search (matches then holds one empty list per query unless
  // compact_result).
  bool BeginMatch(cv::InputArray query_descriptors, cv::InputArrayOfArrays masks,
                  bool compact_result, std::vector<std::vector<cv::DMatch>>& matches,
                  cv::Mat& query, std::vector<cv::Mat>& mask_vec);
  // Sorted (distance, global train index) lists, k per query, masks applied.
  core::KnnResult Search(const cv::Mat& query, int64_t k, const std::vector<cv::Mat>& masks);
  cv::DMatch ToMatch(int query_idx, int64_t global, float dist) const;

  int norm_type_;
  BackendOptions options_;
  mutable std::shared_ptr<core::KnnBackend> backend_;
  mutable std::string backend_note_;
  // The train collection merged into one corpus (built by train()).
  core::DescriptorMatrix corpus_;
  std::vector<int64_t> image_start_;  // first global row of each train image, plus the total
  bool trained_ = false;
};

}  // namespace fm::matcher
