// Feature file round trip and rejection of damaged files.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "fm/core/feature_io.h"

namespace fm::core {
namespace {

namespace fs = std::filesystem;

Features MakeFeatures(int64_t n, DescriptorType type, uint32_t seed) {
  std::mt19937 rng(seed);
  Features f;
  f.image_width = 640;
  f.image_height = 480;
  f.descriptors = DescriptorMatrix(type, n, 128);
  for (int64_t i = 0; i < n; ++i) {
    Keypoint k;
    k.x = static_cast<float>(rng() % 640) + 0.25f;
    k.y = static_cast<float>(rng() % 480) + 0.5f;
    k.size = 3.5f;
    k.angle = static_cast<float>(rng() % 360);
    k.response = 0.01f * static_cast<float>(i);
    k.octave = static_cast<int32_t>(rng());
    f.keypoints.push_back(k);
  }
  for (std::size_t i = 0; i < f.descriptors.size_bytes(); ++i)
    f.descriptors.bytes()[i] = static_cast<uint8_t>(rng());
  return f;
}

class FeatureFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fm_ff_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static void Spit(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  }
  fs::path dir_;
};

TEST_F(FeatureFile, RoundTripUint8AndFloat) {
  for (auto type : {DescriptorType::kUint8, DescriptorType::kFloat32}) {
    auto f = MakeFeatures(257, type, 1);
    WriteFeatureFile(Path("a.fmf"), f, "{\"sift\":true}");
    std::string meta;
    auto g = ReadFeatureFile(Path("a.fmf"), &meta);
    EXPECT_EQ(meta, "{\"sift\":true}");
    EXPECT_EQ(g.image_width, 640);
    EXPECT_EQ(g.image_height, 480);
    ASSERT_EQ(g.keypoints.size(), f.keypoints.size());
    EXPECT_EQ(g.descriptors.type(), type);
    EXPECT_EQ(g.descriptors.dim(), 128);
    for (std::size_t i = 0; i < f.keypoints.size(); ++i) {
      EXPECT_EQ(g.keypoints[i].x, f.keypoints[i].x);
      EXPECT_EQ(g.keypoints[i].octave, f.keypoints[i].octave);
    }
    EXPECT_EQ(
        0, std::memcmp(g.descriptors.bytes(), f.descriptors.bytes(), f.descriptors.size_bytes()));
  }
}

TEST_F(FeatureFile, EmptyFeatureSetRoundTrips) {
  Features f;
  f.descriptors = DescriptorMatrix(DescriptorType::kUint8, 0, 128);
  WriteFeatureFile(Path("e.fmf"), f);
  auto g = ReadFeatureFile(Path("e.fmf"));
  EXPECT_EQ(g.size(), 0);
}

void ExpectRejected(const std::string& path, const std::string& fragment) {
  try {
    ReadFeatureFile(path);
    FAIL() << "accepted a damaged file, expected: " << fragment;
  } catch (const FeatureFileError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST_F(FeatureFile, RejectsEveryKindOfDamage) {
  auto f = MakeFeatures(50, DescriptorType::kUint8, 2);
  WriteFeatureFile(Path("good.fmf"), f, "meta");
  const std::string good = Slurp(Path("good.fmf"));

  ExpectRejected(Path("missing.fmf"), "no such file");
  Spit(Path("text.fmf"), "this is just a text file, not features at all......................");
  ExpectRejected(Path("text.fmf"), "not a featmatch feature file");
  Spit(Path("empty.fmf"), "");
  ExpectRejected(Path("empty.fmf"), "not a featmatch feature file");

  // Every truncation length is rejected without reading out of bounds.
  for (std::size_t len : {std::size_t{8}, std::size_t{20}, std::size_t{47}, std::size_t{60},
                          good.size() / 2, good.size() - 1}) {
    Spit(Path("trunc.fmf"), good.substr(0, len));
    EXPECT_THROW(ReadFeatureFile(Path("trunc.fmf")), FeatureFileError) << len;
  }
  Spit(Path("trunc.fmf"), good.substr(0, good.size() - 100));
  ExpectRejected(Path("trunc.fmf"), "truncated");

  Spit(Path("long.fmf"), good + "xx");
  ExpectRejected(Path("long.fmf"), "trailing");

  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;  // a descriptor byte
  Spit(Path("flip.fmf"), flipped);
  ExpectRejected(Path("flip.fmf"), "checksum");

  std::string version = good;
  version[8] = 9;
  Spit(Path("ver.fmf"), version);
  ExpectRejected(Path("ver.fmf"), "version");

  std::string type = good;
  type[12] = 7;
  Spit(Path("type.fmf"), type);
  ExpectRejected(Path("type.fmf"), "descriptor type");

  // A huge count in the header must not make the reader allocate or read past the end.
  std::string count = good;
  for (int i = 32; i < 40; ++i) count[i] = static_cast<char>(0xFF);
  Spit(Path("count.fmf"), count);
  EXPECT_THROW(ReadFeatureFile(Path("count.fmf")), FeatureFileError);

  std::string count2 = good;
  count2[32] = static_cast<char>(count2[32] + 1);  // one more feature than stored
  Spit(Path("count2.fmf"), count2);
  ExpectRejected(Path("count2.fmf"), "truncated");

  // Every single-byte flip anywhere is caught.
  for (std::size_t i = 0; i < good.size(); i += 97) {
    std::string b = good;
    b[i] ^= 0x01;
    Spit(Path("b.fmf"), b);
    EXPECT_THROW(ReadFeatureFile(Path("b.fmf")), FeatureFileError) << "byte " << i;
  }

  fs::create_directories(Path("dir.fmf"));
  ExpectRejected(Path("dir.fmf"), "directory");
}

TEST(Crc32, KnownValue) {
  // CRC-32 of "123456789" is 0xCBF43926 (the standard check value).
  EXPECT_EQ(Crc32("123456789", 9), 0xCBF43926u);
}

}  // namespace
}  // namespace fm::core
