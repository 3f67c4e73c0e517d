// Basic feature types shared by every layer that knows no OpenCV.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fm::core {

// Element type of a descriptor matrix. Values are part of the feature file format.
enum class DescriptorType : uint8_t {
  kUint8 = 1,    // SIFT's natural 0..255 values
  kFloat32 = 2,  // RootSIFT or other real-valued descriptors
};

const char* DescriptorTypeName(DescriptorType t);
std::size_t DescriptorTypeSize(DescriptorType t);

// A row-major matrix of descriptors (rows x dim) of one element type, owning its bytes.
class DescriptorMatrix {
 public:
  DescriptorMatrix() = default;
  DescriptorMatrix(DescriptorType type, int64_t rows, int32_t dim);

  static DescriptorMatrix FromUint8(std::span<const uint8_t> data, int64_t rows, int32_t dim);
  static DescriptorMatrix FromFloat(std::span<const float> data, int64_t rows, int32_t dim);

  DescriptorType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int32_t dim() const { return dim_; }
  bool empty() const { return rows_ == 0; }
  std::size_t size_bytes() const { return bytes_.size(); }

  const uint8_t* bytes() const { return bytes_.data(); }
  uint8_t* bytes() { return bytes_.data(); }
  // Typed access; throws std::logic_error when the type does not match.
  const uint8_t* u8() const;
  uint8_t* u8();
  const float* f32() const;
  float* f32();

  // Row i as float (converts uint8). `out` must hold dim() floats.
  void RowAsFloat(int64_t i, float* out) const;
  // A copy of rows [begin, begin+count).
  DescriptorMatrix Slice(int64_t begin, int64_t count) const;
  // Rows of `other` appended (same type and dim required).
  void Append(const DescriptorMatrix& other);

 private:
  DescriptorType type_ = DescriptorType::kUint8;
  int64_t rows_ = 0;
  int32_t dim_ = 0;
  std::vector<uint8_t> bytes_;
};

// A keypoint as SIFT reports it (image coordinates, pixels).
struct Keypoint {
  float x = 0, y = 0;
  float size = 0;
  float angle = -1;
  float response = 0;
  int32_t octave = 0;
};

struct Features {
  std::vector<Keypoint> keypoints;
  DescriptorMatrix descriptors;
  int32_t image_width = 0;
  int32_t image_height = 0;

  int64_t size() const { return static_cast<int64_t>(keypoints.size()); }
};

}  // namespace fm::core
