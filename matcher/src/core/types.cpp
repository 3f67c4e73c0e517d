#include "fm/core/types.h"

#include <algorithm>
#include <cstring>

namespace fm::core {

const char* DescriptorTypeName(DescriptorType t) {
  switch (t) {
    case DescriptorType::kUint8: return "uint8";
    case DescriptorType::kFloat32: return "float32";
  }
  return "unknown";
}

std::size_t DescriptorTypeSize(DescriptorType t) {
  return t == DescriptorType::kFloat32 ? 4 : 1;
}

DescriptorMatrix::DescriptorMatrix(DescriptorType type, int64_t rows, int32_t dim)
    : type_(type), rows_(rows), dim_(dim) {
  if (rows < 0 || dim < 0) throw std::invalid_argument("descriptor matrix with negative size");
  bytes_.assign(static_cast<std::size_t>(rows) * static_cast<std::size_t>(dim) *
                    DescriptorTypeSize(type),
                0);
}

DescriptorMatrix DescriptorMatrix::FromUint8(std::span<const uint8_t> data, int64_t rows,
                                             int32_t dim) {
  if (static_cast<int64_t>(data.size()) != rows * dim)
    throw std::invalid_argument("descriptor data size does not match rows x dim");
  DescriptorMatrix m(DescriptorType::kUint8, rows, dim);
  if (!data.empty()) std::memcpy(m.bytes_.data(), data.data(), data.size());
  return m;
}

DescriptorMatrix DescriptorMatrix::FromFloat(std::span<const float> data, int64_t rows,
                                             int32_t dim) {
  if (static_cast<int64_t>(data.size()) != rows * dim)
    throw std::invalid_argument("descriptor data size does not match rows x dim");
  DescriptorMatrix m(DescriptorType::kFloat32, rows, dim);
  if (!data.empty()) std::memcpy(m.bytes_.data(), data.data(), data.size() * sizeof(float));
  return m;
}

const uint8_t* DescriptorMatrix::u8() const {
  if (type_ != DescriptorType::kUint8) throw std::logic_error("descriptors are not uint8");
  return bytes_.data();
}
uint8_t* DescriptorMatrix::u8() {
  if (type_ != DescriptorType::kUint8) throw std::logic_error("descriptors are not uint8");
  return bytes_.data();
}
const float* DescriptorMatrix::f32() const {
  if (type_ != DescriptorType::kFloat32) throw std::logic_error("descriptors are not float32");
  return reinterpret_cast<const float*>(bytes_.data());
}
float* DescriptorMatrix::f32() {
  if (type_ != DescriptorType::kFloat32) throw std::logic_error("descriptors are not float32");
  return reinterpret_cast<float*>(bytes_.data());
}

void DescriptorMatrix::RowAsFloat(int64_t i, float* out) const {
  const std::size_t off = static_cast<std::size_t>(i) * static_cast<std::size_t>(dim_);
  if (type_ == DescriptorType::kUint8) {
    const uint8_t* r = bytes_.data() + off;
    for (int32_t j = 0; j < dim_; ++j) out[j] = static_cast<float>(r[j]);
  } else {
    std::memcpy(out, f32() + off, static_cast<std::size_t>(dim_) * sizeof(float));
  }
}

DescriptorMatrix DescriptorMatrix::Slice(int64_t begin, int64_t count) const {
  if (begin < 0 || count < 0 || begin + count > rows_)
    throw std::out_of_range("descriptor slice out of range");
  DescriptorMatrix m(type_, count, dim_);
  const std::size_t row_bytes = static_cast<std::size_t>(dim_) * DescriptorTypeSize(type_);
  if (count)
    std::memcpy(m.bytes_.data(), bytes_.data() + static_cast<std::size_t>(begin) * row_bytes,
                static_cast<std::size_t>(count) * row_bytes);
  return m;
}

void DescriptorMatrix::Append(const DescriptorMatrix& other) {
  if (other.rows_ == 0) return;
  if (rows_ == 0 && bytes_.empty()) {
    *this = other;
    return;
  }
  if (other.type_ != type_ || other.dim_ != dim_)
    throw std::invalid_argument("cannot append descriptors of another type or dimension");
  bytes_.insert(bytes_.end(), other.bytes_.begin(), other.bytes_.end());
  rows_ += other.rows_;
}

}  // namespace fm::core
