// The featmatch CLI as a user runs it: exit codes, outputs, --help of every subcommand.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../matcher/test_images.h"

namespace {

namespace fs = std::filesystem;

const std::string kData = fm::test::SampleDir();

struct RunResult {
  int code = -1;
  std::string out;
};

// Runs the CLI with a shell command line (after `env`, variable assignments for the child),
// capturing stdout and stderr.
RunResult Cli(const std::string& args, const std::string& env = "") {
  RunResult r;
  const std::string cmd =
      (env.empty() ? "" : "env " + env + " ") + std::string(FM_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class Cli_ : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fm::test::HaveSamples()) GTEST_SKIP() << "OpenCV sample data not installed";
    dir_ = fs::temp_directory_path() /
           ("fm_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
};

TEST_F(Cli_, MatchWritesSummaryDrawingAndReport) {
  auto r = Cli("match " + kData + "/box.png " + kData + "/box_in_scene.png --backend cpu --draw " +
               Path("m.png") + " --report " + Path("r.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("verified inliers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("homography"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(Path("m.png")));
  EXPECT_GT(fs::file_size(Path("m.png")), 10000u);
  std::ifstream in(Path("r.json"));
  auto j = nlohmann::json::parse(in);
  EXPECT_GT(j["features"]["a"].get<int>(), 100);
  EXPECT_TRUE(j["geometry"]["verified"].get<bool>());
  EXPECT_GE(j["geometry"]["inliers"].get<int>(), 20);
  EXPECT_EQ(j["match_list"].size(), j["matches"].get<std::size_t>());
}

TEST_F(Cli_, JsonOnStdout) {
  auto r = Cli("match " + kData + "/box.png " + kData + "/box_in_scene.png --backend cpu --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("geometry"));
}

TEST_F(Cli_, ExtractThenMatchFeatureFilesGivesTheSameCounts) {
  auto e = Cli("extract " + kData + "/box.png " + kData + "/box_in_scene.png --out " + Path("f"));
  ASSERT_EQ(e.code, 0) << e.out;
  ASSERT_TRUE(fs::exists(Path("f/box.png.fmf")));
  auto a = Cli("match " + Path("f/box.png.fmf") + " " + Path("f/box_in_scene.png.fmf") +
               " --backend cpu --json");
  auto b = Cli("match " + kData + "/box.png " + kData + "/box_in_scene.png --backend cpu --json");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["features"], jb["features"]);
  EXPECT_EQ(ja["matches"], jb["matches"]);
}

TEST_F(Cli_, ExtractSkipsBadImagesAndSaysSo) {
  std::ofstream(Path("bad.png")) << "not an image";
  auto e = Cli("extract " + kData + "/box.png " + Path("bad.png") + " --out " + Path("f"));
  EXPECT_EQ(e.code, 5) << e.out;  // partial
  EXPECT_NE(e.out.find("bad.png"), std::string::npos);
  EXPECT_TRUE(fs::exists(Path("f/box.png.fmf")));
  auto all_bad = Cli("extract " + Path("bad.png") + " --out " + Path("g"));
  EXPECT_EQ(all_bad.code, 3) << all_bad.out;
}

TEST_F(Cli_, BadInputsHaveDocumentedExitCodes) {
  auto r = Cli("match " + Path("missing.png") + " " + kData + "/box.png");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("no such file"), std::string::npos) << r.out;

  std::ofstream(Path("text.png")) << "this is text";
  r = Cli("match " + Path("text.png") + " " + kData + "/box.png");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("not a readable image"), std::string::npos) << r.out;

  std::ofstream(Path("broken.fmf")) << "garbage";
  r = Cli("match " + Path("broken.fmf") + " " + kData + "/box.png");
  EXPECT_EQ(r.code, 3) << r.out;

  r = Cli("match " + kData + "/box.png " + kData + "/box_in_scene.png --ratio 3");
  EXPECT_EQ(r.code, 2) << r.out;
  r = Cli("match " + kData + "/box.png");
  EXPECT_EQ(r.code, 2) << r.out;
  r = Cli("match " + kData + "/box.png " + kData + "/box.png --metric manhattan");
  EXPECT_EQ(r.code, 2) << r.out;
  r = Cli("frobnicate");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST_F(Cli_, UniformImageGivesAnEmptyResultNotAnError) {
  // A uniform grey PGM written by hand: no features, so no matches, exit 0.
  std::ofstream pgm(Path("grey.pgm"), std::ios::binary);
  pgm << "P5\n64 64\n255\n" << std::string(64 * 64, '\x80');
  pgm.close();
  auto r = Cli("match " + Path("grey.pgm") + " " + kData + "/box.png --backend cpu --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["features"]["a"].get<int>(), 0);
  EXPECT_EQ(j["matches"].get<int>(), 0);
}

TEST_F(Cli_, GpuRequestedWithoutGpu) {
  // The child sees no GPU on any machine: an invalid first index hides every device.
  auto r = Cli("match " + kData + "/box.png " + kData + "/box_in_scene.png --backend gpu",
               "CUDA_VISIBLE_DEVICES=-1");
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_NE(r.out.find("GPU"), std::string::npos) << r.out;
}

TEST_F(Cli_, EverySubcommandHasHelp) {
  auto top = Cli("--help");
  ASSERT_EQ(top.code, 0) << top.out;
  for (const char* sub : {"match", "extract"}) {
    auto r = Cli(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub << ": " << r.out;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
  }
}

}  // namespace
