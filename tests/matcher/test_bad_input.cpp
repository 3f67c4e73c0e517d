// Bad images: a clear error or an empty result, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "fm/matcher/backend.h"
#include "fm/matcher/image.h"
#include "fm/matcher/pipeline.h"
#include "test_images.h"

namespace fm::matcher {
namespace {

namespace fs = std::filesystem;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fm_bad_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
};

void ExpectImageError(const std::string& path, const std::string& fragment) {
  try {
    LoadGrayImage(path);
    FAIL() << path << " was accepted";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST_F(BadInput, MissingFile) { ExpectImageError(Path("nope.png"), "no such file"); }

TEST_F(BadInput, TextFileNamedPng) {
  std::ofstream(Path("text.png")) << "hello, I am not an image\n";
  ExpectImageError(Path("text.png"), "not a readable image");
}

TEST_F(BadInput, EmptyFileAndDirectory) {
  std::ofstream(Path("empty.png")).close();
  ExpectImageError(Path("empty.png"), "empty file");
  fs::create_directories(Path("dir.png"));
  ExpectImageError(Path("dir.png"), "directory");
}

TEST_F(BadInput, TruncatedPng) {
  if (!test::HaveSamples()) GTEST_SKIP() << "OpenCV sample data (opencv-doc) not installed";
  std::ifstream in(test::Sample("box.png"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 2000u);
  std::ofstream(Path("trunc.png"), std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  // libpng stops at the missing rows; the loader reports the file instead of handing on a
  // half-decoded image.
  ExpectImageError(Path("trunc.png"), "not a readable image");
  std::ofstream(Path("header.png"), std::ios::binary) << bytes.substr(0, 40);
  ExpectImageError(Path("header.png"), "not a readable image");
}

TEST_F(BadInput, UniformImageHasNoFeaturesAndMatchesNothing) {
  cv::Mat grey(300, 400, CV_8UC1, cv::Scalar(128));
  auto a = ExtractFeatures(grey, SiftOptions{});
  EXPECT_EQ(a.size(), 0);
  EXPECT_EQ(a.descriptors.rows(), 0);
  cv::Mat noise(300, 400, CV_8UC1);
  cv::randu(noise, 0, 255);
  auto b = ExtractFeatures(noise, SiftOptions{});
  EXPECT_GT(b.size(), 0);
  BackendOptions bo;
  bo.kind = BackendKind::kCpu;
  auto backend = CreateKnnBackend(bo);
  auto r = MatchFeatures(a, b, MatchOptions{}, *backend);
  EXPECT_TRUE(r.matches.empty());
  EXPECT_FALSE(r.verification.verified);
  r = MatchFeatures(b, a, MatchOptions{}, *backend);
  EXPECT_TRUE(r.matches.empty());
}

TEST_F(BadInput, OnePixelImage) {
  cv::Mat one(1, 1, CV_8UC1, cv::Scalar(7));
  ASSERT_TRUE(cv::imwrite(Path("one.png"), one));
  cv::Mat img = LoadGrayImage(Path("one.png"));
  EXPECT_EQ(img.cols, 1);
  auto f = ExtractFeatures(img, SiftOptions{});
  EXPECT_EQ(f.size(), 0);
  EXPECT_EQ(f.image_width, 1);
}

TEST(Options, ChecksRejectBadValues) {
  std::string why;
  SiftOptions s;
  s.contrast_threshold = -1;
  EXPECT_FALSE(s.Check(&why));
  EXPECT_THROW(ExtractFeatures(cv::Mat(20, 20, CV_8UC1, cv::Scalar(0)), s), std::invalid_argument);
  MatchOptions m;
  m.k = 1;  // ratio test needs k >= 2
  EXPECT_FALSE(m.Check(&why));
  VerifyOptions v;
  v.confidence = 1.5;
  EXPECT_FALSE(v.Check(&why));
  BackendOptions b;
  b.precision = "int4";
  EXPECT_FALSE(b.Check(&why));
  EXPECT_THROW(ParseBackendKind("tpu"), std::invalid_argument);
}

TEST(Backend, AutoFallsBackToCpuAndSaysSo) {
  std::string note;
  auto b = CreateKnnBackend(BackendOptions{}, &note);
  ASSERT_TRUE(b);
  if (!GpuAvailable()) {
    EXPECT_EQ(b->name(), "cpu");
    EXPECT_NE(note.find("auto"), std::string::npos) << note;
    BackendOptions g;
    g.kind = BackendKind::kGpu;
    EXPECT_THROW(CreateKnnBackend(g), std::runtime_error);
  }
}

}  // namespace
}  // namespace fm::matcher
