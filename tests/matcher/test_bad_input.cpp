// Bad images: a clear error or an empty result, never a crash.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <limits>
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
    dir_ =
        fs::temp_directory_path() /
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

TEST_F(BadInput, PipeNamedLikeAnImage) {
  // A FIFO has no size to read; it is named for what it is, not "Operation not supported".
  ASSERT_EQ(::mkfifo(Path("pipe.png").c_str(), 0600), 0);
  ExpectImageError(Path("pipe.png"), "not a regular file");
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

TEST_F(BadInput, TruncatedJpeg) {
  // A JPEG made here (noise compresses poorly: tens of kilobytes), no sample file needed.
  cv::Mat noise(200, 300, CV_8UC3);
  cv::randu(noise, 0, 255);
  std::vector<uchar> jpg;
  ASSERT_TRUE(cv::imencode(".jpg", noise, jpg));
  const std::string bytes(jpg.begin(), jpg.end());
  ASSERT_GT(bytes.size(), 20000u);
  std::ofstream(Path("whole.jpg"), std::ios::binary) << bytes;
  ASSERT_FALSE(LoadGrayImage(Path("whole.jpg")).empty());  // the whole file loads
  // libjpeg would decode it with a warning and gray rows; the loader refuses it.
  for (std::size_t keep : {bytes.size() / 3, bytes.size() - 2}) {
    std::ofstream(Path("cut.jpg"), std::ios::binary) << bytes.substr(0, keep);
    ExpectImageError(Path("cut.jpg"), "truncated JPEG");
  }
  // Bytes after the end-of-image marker (some cameras append data) are no reason to refuse.
  std::ofstream(Path("tail.jpg"), std::ios::binary) << bytes << std::string(5000, '\x42');
  EXPECT_FALSE(LoadGrayImage(Path("tail.jpg")).empty());
}

TEST_F(BadInput, ExifOrientationAppliedForViewingNotForTheBatch) {
  // A 64 x 32 JPEG with an EXIF orientation of 6 (rotate 90 degrees clockwise to view).
  cv::Mat img(32, 64, CV_8UC1);
  cv::randu(img, 0, 255);
  std::vector<uchar> jpg;
  ASSERT_TRUE(cv::imencode(".jpg", img, jpg));
  const unsigned char exif[] = {0xFF, 0xE1, 0x00, 0x22, 'E', 'x', 'i', 'f', 0, 0,  // APP1, 34 B
                                'I', 'I', 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00,    // TIFF, IFD at 8
                                0x01, 0x00,                                      // one entry
                                0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00,  // 0x0112 SHORT 1
                                0x06, 0x00, 0x00, 0x00,                          // value 6
                                0x00, 0x00, 0x00, 0x00};                         // no next IFD
  std::ofstream out(Path("rot.jpg"), std::ios::binary);
  out.write(reinterpret_cast<const char*>(jpg.data()), 2);  // SOI
  out.write(reinterpret_cast<const char*>(exif), sizeof exif);
  out.write(reinterpret_cast<const char*>(jpg.data()) + 2,
            static_cast<std::streamsize>(jpg.size() - 2));
  out.close();
  EXPECT_EQ(LoadGrayImage(Path("rot.jpg")).size(), cv::Size(32, 64));  // turned upright
  EXPECT_EQ(LoadGrayImageAsStored(Path("rot.jpg")).size(), cv::Size(64, 32));  // as COLMAP reads
}

TEST_F(BadInput, MasksOnAnyNonZeroColourAtAnyDepth) {
  cv::Mat m16(8, 8, CV_16UC1, cv::Scalar(0));
  m16.at<uint16_t>(2, 3) = 196;  // scaled to 8 bits this would be 0
  ASSERT_TRUE(cv::imwrite(Path("m16.png"), m16));
  cv::Mat on = LoadMaskImage(Path("m16.png"));
  ASSERT_EQ(on.type(), CV_8UC1);
  EXPECT_EQ(cv::countNonZero(on), 1);
  EXPECT_EQ(on.at<uint8_t>(2, 3), 255);
  cv::Mat bgr(8, 8, CV_8UC3, cv::Scalar(0, 0, 0));
  bgr.at<cv::Vec3b>(5, 1) = cv::Vec3b(1, 0, 0);  // gray would round it to 0
  ASSERT_TRUE(cv::imwrite(Path("m3.png"), bgr));
  on = LoadMaskImage(Path("m3.png"));
  EXPECT_EQ(cv::countNonZero(on), 1);
  EXPECT_EQ(on.at<uint8_t>(5, 1), 255);
}

TEST(SiftMemory, ImagesTooLargeForMemoryAreRefusedWithTheSizeThatFits) {
  const SiftOptions o;
  const int64_t gib = int64_t{1} << 30;
  // About 236 bytes a pixel with three layers an octave (measured: 11 GB for 48 Mpx).
  EXPECT_NEAR(static_cast<double>(SiftMemoryEstimate(8000, 6000, o)) / (8000.0 * 6000.0), 236.0,
              2.0);
  EXPECT_NO_THROW(CheckSiftMemory(4000, 3000, o, 8 * gib));
  EXPECT_NO_THROW(CheckSiftMemory(30000, 30000, o, -1));  // unknown: not checked
  try {
    CheckSiftMemory(30000, 30000, o, 8 * gib);
    FAIL() << "a 900-megapixel image was let through with 8 GiB";
  } catch (const ImageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("30000 x 30000"), std::string::npos) << what;
    EXPECT_NE(what.find("--max-image-size"), std::string::npos) << what;
    // The size it names fits: its estimate is within the memory given.
    const auto at = what.find("side of ");
    ASSERT_NE(at, std::string::npos) << what;
    const int side = std::stoi(what.substr(at + 8));
    EXPECT_LE(SiftMemoryEstimate(side, side, o), 8 * gib);
    EXPECT_GT(side, 1000);
  }
  try {
    CheckSiftMemory(30000, 30000, o, 8 * gib, "big.png");
    FAIL() << "refused above, let through with a name";
  } catch (const ImageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("big.png: image of 30000 x 30000", 0), 0u) << e.what();
  }
  EXPECT_GT(AvailableMemoryBytes(), 0);  // Linux: /proc/meminfo
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
  m = MatchOptions{};
  m.metric = core::Metric::kInnerProduct;  // negated dot products: the ratio test passes nothing
  EXPECT_FALSE(m.Check(&why));
  m.filter.ratio = 1;
  EXPECT_TRUE(m.Check(&why)) << why;
  s = SiftOptions{};
  s.edge_threshold = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(s.Check(&why));
  BackendOptions b;
  b.precision = "int4";
  EXPECT_FALSE(b.Check(&why));
  b = BackendOptions{};
  b.select_algo = "bogus";
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
