// Feature file encoding. Layout (little-endian), see docs/feature_format.md:
//   header (48 bytes) | metadata | keypoints (count x 24 bytes) | descriptors | CRC-32 (4 bytes)
#include "fm/core/feature_io.h"

#include <array>
#include <cerrno>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace fm::core {
namespace {

static_assert(std::endian::native == std::endian::little, "feature files assume little-endian");

constexpr std::array<uint8_t, 8> kMagic = {0x89, 'F', 'M', 'F', '\r', '\n', 0x1a, '\n'};
constexpr std::size_t kHeaderSize = 48;
constexpr std::size_t kKeypointSize = 24;
constexpr uint32_t kMaxDim = 1u << 16;
constexpr uint32_t kMaxMetadata = 1u << 24;

struct Header {
  uint8_t magic[8];
  uint32_t version;
  uint8_t descriptor_type;
  uint8_t reserved0;
  uint16_t header_size;
  uint32_t dim;
  int32_t width;
  int32_t height;
  uint32_t metadata_size;
  uint64_t count;
  uint32_t keypoint_size;
  uint32_t reserved1;
};
static_assert(sizeof(Header) == kHeaderSize);

const std::array<uint32_t, 256>& CrcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int b = 0; b < 8; ++b) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

template <typename T>
void Put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

}  // namespace

uint32_t Crc32(const void* data, std::size_t size, uint32_t crc) {
  const auto& t = CrcTable();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = t[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string EncodeFeatures(const Features& f, const std::string& metadata) {
  const auto& d = f.descriptors;
  if (static_cast<int64_t>(f.keypoints.size()) != d.rows() && !(d.rows() == 0 && d.dim() == 0))
    throw FeatureFileError("cannot encode features: " + std::to_string(f.keypoints.size()) +
                           " keypoints but " + std::to_string(d.rows()) + " descriptors");
  if (metadata.size() > kMaxMetadata) throw FeatureFileError("feature metadata is too large");
  Header h{};
  std::memcpy(h.magic, kMagic.data(), 8);
  h.version = kFeatureFileVersion;
  h.descriptor_type = static_cast<uint8_t>(d.type());
  h.header_size = kHeaderSize;
  h.dim = static_cast<uint32_t>(d.dim());
  h.width = f.image_width;
  h.height = f.image_height;
  h.metadata_size = static_cast<uint32_t>(metadata.size());
  h.count = f.keypoints.size();
  h.keypoint_size = kKeypointSize;
  std::string out;
  out.reserve(kHeaderSize + metadata.size() + f.keypoints.size() * kKeypointSize +
              d.size_bytes() + 4);
  out.append(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(metadata);
  for (const auto& k : f.keypoints) {
    Put(out, k.x);
    Put(out, k.y);
    Put(out, k.size);
    Put(out, k.angle);
    Put(out, k.response);
    Put(out, k.octave);
  }
  out.append(reinterpret_cast<const char*>(d.bytes()), d.size_bytes());
  uint32_t crc = Crc32(out.data(), out.size());
  Put(out, crc);
  return out;
}

namespace {

// Checks the header at p (at least kHeaderSize bytes, or all of a shorter file) of a file of
// `size` bytes, up to the size it announces; returns the header. Throws FeatureFileError.
Header CheckHeader(const uint8_t* p, std::size_t size, const std::string& what) {
  auto fail = [&](const std::string& why) -> FeatureFileError {
    return FeatureFileError(what + ": " + why);
  };
  if (size < kHeaderSize + 4) {
    if (size >= 8 && std::memcmp(p, kMagic.data(), 8) == 0)
      throw fail("truncated feature file (" + std::to_string(size) + " bytes)");
    throw fail("not a featmatch feature file (too short)");
  }
  Header h;
  std::memcpy(&h, p, sizeof(h));
  if (std::memcmp(h.magic, kMagic.data(), 8) != 0)
    throw fail("not a featmatch feature file (bad magic bytes)");
  if (h.version != kFeatureFileVersion)
    throw fail("unsupported feature file version " + std::to_string(h.version) +
               " (this build reads version " + std::to_string(kFeatureFileVersion) + ")");
  if (h.header_size != kHeaderSize || h.keypoint_size != kKeypointSize)
    throw fail("inconsistent header (header or keypoint record size)");
  if (h.descriptor_type != static_cast<uint8_t>(DescriptorType::kUint8) &&
      h.descriptor_type != static_cast<uint8_t>(DescriptorType::kFloat32))
    throw fail("unknown descriptor type " + std::to_string(h.descriptor_type));
  if (h.dim > kMaxDim) throw fail("descriptor dimension " + std::to_string(h.dim) + " too large");
  if (h.metadata_size > kMaxMetadata) throw fail("metadata size out of range");
  if (h.count > 0 && h.dim == 0) throw fail("features with zero-dimensional descriptors");
  const auto type = static_cast<DescriptorType>(h.descriptor_type);
  // Expected size, with every product checked against overflow.
  const uint64_t limit = std::numeric_limits<uint64_t>::max() / 4;
  const uint64_t row_bytes =
      static_cast<uint64_t>(h.dim) * DescriptorTypeSize(type) + kKeypointSize;
  if (h.count > limit / row_bytes) throw fail("feature count out of range");
  const uint64_t expected = kHeaderSize + h.metadata_size + h.count * row_bytes + 4;
  if (size < expected)
    throw fail("truncated feature file: " + std::to_string(size) + " bytes, header announces " +
               std::to_string(expected));
  if (size > expected)
    throw fail("feature file has " + std::to_string(size - expected) +
               " unexpected trailing bytes");
  return h;
}

}  // namespace

Features DecodeFeatures(const void* data, std::size_t size, std::string* metadata,
                        const std::string& what) {
  auto fail = [&](const std::string& why) -> FeatureFileError {
    return FeatureFileError(what + ": " + why);
  };
  const auto* p = static_cast<const uint8_t*>(data);
  const Header h = CheckHeader(p, size, what);
  const auto type = static_cast<DescriptorType>(h.descriptor_type);
  uint32_t stored_crc;
  std::memcpy(&stored_crc, p + size - 4, 4);
  if (Crc32(p, size - 4) != stored_crc)
    throw fail("checksum mismatch: the file is corrupted");

  std::size_t off = kHeaderSize;
  if (metadata) metadata->assign(reinterpret_cast<const char*>(p + off), h.metadata_size);
  off += h.metadata_size;
  Features f;
  f.image_width = h.width;
  f.image_height = h.height;
  f.keypoints.resize(h.count);
  for (auto& k : f.keypoints) {
    std::memcpy(&k.x, p + off, 4);
    std::memcpy(&k.y, p + off + 4, 4);
    std::memcpy(&k.size, p + off + 8, 4);
    std::memcpy(&k.angle, p + off + 12, 4);
    std::memcpy(&k.response, p + off + 16, 4);
    std::memcpy(&k.octave, p + off + 20, 4);
    off += kKeypointSize;
  }
  f.descriptors =
      DescriptorMatrix(type, static_cast<int64_t>(h.count), static_cast<int32_t>(h.dim));
  std::memcpy(f.descriptors.bytes(), p + off, f.descriptors.size_bytes());
  return f;
}

bool WriteFileWhole(const std::string& path, const std::string& bytes, std::string* why) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& reason, const std::string& tmp) {
    std::error_code ec;
    if (!tmp.empty()) fs::remove(tmp, ec);
    if (why) *why = reason;
    return false;
  };
  std::error_code ec;
  const auto status = fs::status(path, ec);
  const bool in_place = fs::exists(status) && !fs::is_regular_file(status);
  const std::string tmp = in_place ? std::string() : path + ".tmp";
  {
    std::ofstream out(in_place ? path : tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail(std::string("cannot open for writing: ") + std::strerror(errno), tmp);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) return fail("write failed (disk full?)", tmp);
    out.close();
    if (!out) return fail("write failed on close (disk full?)", tmp);
  }
  if (in_place) return true;
  fs::rename(tmp, path, ec);
  if (ec) return fail("cannot replace it: " + ec.message(), tmp);
  return true;
}

void WriteFeatureFile(const std::string& path, const Features& features,
                      const std::string& metadata) {
  std::string why;
  if (!WriteFileWhole(path, EncodeFeatures(features, metadata), &why))
    throw FeatureFileError(path + ": " + why);
}

Features ReadFeatureFile(const std::string& path, std::string* metadata) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw FeatureFileError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw FeatureFileError(path + ": is a directory");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw FeatureFileError(path + ": cannot read (" + ec.message() + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FeatureFileError(path + ": cannot open for reading");
  // The header first: a file that is not one, or whose size disagrees with its header, is
  // refused before the rest of it is read.
  {
    std::string head(static_cast<std::size_t>(std::min<uintmax_t>(size, kHeaderSize + 4)), '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    if (!in) throw FeatureFileError(path + ": read error");
    CheckHeader(reinterpret_cast<const uint8_t*>(head.data()), static_cast<std::size_t>(size),
                path);
    in.seekg(0);
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw FeatureFileError(path + ": read error");
  return DecodeFeatures(bytes.data(), bytes.size(), metadata, path);
}

}  // namespace fm::core
