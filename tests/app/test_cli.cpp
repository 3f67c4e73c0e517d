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
    dir_ =
        fs::temp_directory_path() /
        ("fm_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& n) const { return (dir_ / n).string(); }
  // `match A B ARGS` of two sample images run twice: its --json report and its summary.
  void MatchTwice(const std::string& a, const std::string& b, const std::string& args,
                  nlohmann::json* report, std::string* summary) {
    const std::string cmd = "match " + kData + "/" + a + " " + kData + "/" + b + " " + args;
    auto r = Cli(cmd + " --json");
    ASSERT_EQ(r.code, 0) << r.out;
    *report = nlohmann::json::parse(r.out);
    auto s = Cli(cmd);
    ASSERT_EQ(s.code, 0) << s.out;
    *summary = s.out;
  }
  fs::path dir_;
};

// Under the default backend `match` searches two images of the size of the samples on the CPU,
// which finishes before a GPU would have started, and says so; the same matches as asked of the
// CPU by name.
TEST_F(Cli_, AutoMatchesSmallImagesOnTheCpuAndSaysWhy) {
  const std::string pair = "match " + kData + "/box.png " + kData + "/box_in_scene.png ";
  auto r = Cli(pair);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("backend: cpu ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(auto: the search, about"), std::string::npos) << r.out;
  auto a = Cli(pair + "--json"), c = Cli(pair + "--backend cpu --json");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(c.code, 0) << c.out;
  const auto ja = nlohmann::json::parse(a.out), jc = nlohmann::json::parse(c.out);
  EXPECT_EQ(ja["backend"].get<std::string>().rfind("cpu", 0), 0u) << ja["backend"];
  EXPECT_EQ(ja["match_list"], jc["match_list"]);
}

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

TEST_F(Cli_, AModelOnInliersAtOnePointIsNotVerifiedAndSaysWhy) {
  // graf1.png and left01.jpg show nothing in common; many graffiti features match one point of
  // the chessboard photograph.
  auto r = Cli("match " + kData + "/graf1.png " + kData + "/left01.jpg --backend cpu --model " +
               "homography --report " + Path("r.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("NOT verified (its inliers lie at"), std::string::npos) << r.out;
  std::ifstream in(Path("r.json"));
  const auto j = nlohmann::json::parse(in);
  EXPECT_FALSE(j["geometry"]["verified"].get<bool>());
  EXPECT_LT(j["geometry"]["distinct_inliers"].get<int>(), 8);
  EXPECT_GE(j["geometry"]["inliers"].get<int>(), 8);
}

TEST_F(Cli_, AModelRandomMatchesFitAsWellIsNotVerifiedAndSaysWhy) {
  FM_REQUIRE_SAMPLES("aloeL.jpg", "home.jpg");
  // aloeL.jpg and home.jpg show different scenes; with the batch's settings a fundamental matrix
  // fits 15-17 of their matches at distinct points, as it would random ones.
  auto r = Cli("match " + kData + "/aloeL.jpg " + kData + "/home.jpg --backend cpu --mutual " +
               "--model fundamental --min-inliers 15 --report " + Path("r.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("NOT verified (random matches would fit as well: NFA 10^"),
            std::string::npos)
      << r.out;
  std::ifstream in(Path("r.json"));
  const auto j = nlohmann::json::parse(in);
  EXPECT_FALSE(j["geometry"]["verified"].get<bool>());
  EXPECT_GT(j["geometry"]["log10_nfa"].get<double>(), 0);
  EXPECT_EQ(j["settings"]["max_nfa"].get<double>(), 1.0);
  // Without the test the same model counts on its inliers alone.
  auto off = Cli("match " + kData + "/aloeL.jpg " + kData + "/home.jpg --backend cpu --mutual " +
                 "--model fundamental --min-inliers 15 --max-nfa 0 --json");
  ASSERT_EQ(off.code, 0) << off.out;
  const auto k = nlohmann::json::parse(off.out);
  EXPECT_EQ(k["geometry"]["verified"].get<bool>(),
            k["geometry"]["distinct_inliers"].get<int>() >= 15)
      << off.out;
  auto bad = Cli("match " + kData + "/box.png " + kData + "/box_in_scene.png --max-nfa -1");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("NFA"), std::string::npos) << bad.out;
}

TEST_F(Cli_, AVerifiedModelSaysHowStrongItIs) {
  nlohmann::json j;
  std::string summary;
  ASSERT_NO_FATAL_FAILURE(MatchTwice("box.png", "box_in_scene.png", "--backend cpu", &j, &summary));
  ASSERT_TRUE(j["geometry"]["verified"].get<bool>());
  const double nfa = j["geometry"]["log10_nfa"].get<double>();
  EXPECT_LT(nfa, -100);  // 79 inliers of 94 matches
  char expected[48];
  std::snprintf(expected, sizeof expected, "(NFA 10^%.1f)", nfa);
  EXPECT_NE(summary.find(expected), std::string::npos) << summary;
}

TEST_F(Cli_, GuidedMatchingMatchesAgainUnderTheModel) {
  FM_REQUIRE_SAMPLES("graf3.png");
  nlohmann::json j;
  std::string summary;
  ASSERT_NO_FATAL_FAILURE(
      MatchTwice("graf1.png", "graf3.png", "--backend cpu --guided", &j, &summary));
  EXPECT_TRUE(j["settings"]["guided"].get<bool>());
  ASSERT_TRUE(j.contains("guided")) << j.dump();
  EXPECT_GT(j["geometry"]["inliers"].get<int>(), j["guided"]["inliers_before"].get<int>());
  EXPECT_NE(summary.find("guided: matched again under the model"), std::string::npos) << summary;
  auto bad = Cli("match " + kData + "/graf1.png " + kData + "/graf3.png --guided --model none");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("guided matching needs a geometric model"), std::string::npos) << bad.out;
}

TEST_F(Cli_, JsonOnStdout) {
  auto r = Cli("match " + kData + "/box.png " + kData + "/box_in_scene.png --backend cpu --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("geometry"));
}

TEST_F(Cli_, ImagesAndTheirFeatureFilesMatchAlike) {
  // box.png is grayscale, graf1 and graf3 colour PNGs: match extracts from the same grayscale
  // decode as extract, so the matches, not only their counts, are the same.
  for (const auto& [a, b] : {std::pair<std::string, std::string>{"box.png", "box_in_scene.png"},
                             {"graf1.png", "graf3.png"}}) {
    auto e = Cli("extract " + kData + "/" + a + " " + kData + "/" + b + " --out " + Path("f"));
    ASSERT_EQ(e.code, 0) << e.out;
    auto from_files = Cli("match " + Path("f/" + a + ".fmf") + " " + Path("f/" + b + ".fmf") +
                          " --backend cpu --json");
    auto from_images =
        Cli("match " + kData + "/" + a + " " + kData + "/" + b + " --backend cpu --json");
    ASSERT_EQ(from_files.code, 0) << from_files.out;
    ASSERT_EQ(from_images.code, 0) << from_images.out;
    auto jf = nlohmann::json::parse(from_files.out), ji = nlohmann::json::parse(from_images.out);
    EXPECT_EQ(jf["features"], ji["features"]) << a;
    EXPECT_EQ(jf["matches"], ji["matches"]) << a;
    EXPECT_EQ(jf["match_list"], ji["match_list"]) << a;
    EXPECT_EQ(jf["geometry"]["inliers"], ji["geometry"]["inliers"]) << a;
  }
}

TEST_F(Cli_, ExtractKeepsAtMostMaxFeatures) {
  for (int n : {1, 10, 100}) {
    auto e = Cli("extract " + kData + "/box.png --json --max-features " + std::to_string(n) +
                 " --out " + Path("f" + std::to_string(n)));
    ASSERT_EQ(e.code, 0) << e.out;
    EXPECT_EQ(nlohmann::json::parse(e.out)[0]["features"].get<int>(), n) << e.out;
  }
}

TEST_F(Cli_, TruncatedJpegIsRefusedNotDecodedAsGray) {
  std::ifstream in(kData + "/baboon.jpg", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 20000u);
  std::ofstream(Path("cut.jpg"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(Path("whole.jpg"), std::ios::binary) << bytes;
  auto r = Cli("match " + Path("cut.jpg") + " " + kData + "/box.png --backend cpu");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("truncated JPEG"), std::string::npos) << r.out;
  r = Cli("extract " + Path("cut.jpg") + " " + Path("whole.jpg") + " --out " + Path("f"));
  EXPECT_EQ(r.code, 5) << r.out;
  EXPECT_TRUE(fs::exists(Path("f/whole.jpg.fmf")));
  EXPECT_FALSE(fs::exists(Path("f/cut.jpg.fmf")));
}

TEST_F(Cli_, OutputsThatCannotBeWrittenFailTheCommand) {
  const std::string pair = "match " + kData + "/box.png " + kData + "/box_in_scene.png ";
  // A full device: exit 1, for the report file and for the JSON on stdout.
  auto r = Cli(pair + "--backend cpu --report /dev/full");
  EXPECT_EQ(r.code, 1) << r.out;
  r = Cli(pair + "--backend cpu --json > /dev/full");
  EXPECT_EQ(r.code, 1) << r.out;
  // Checked before any work: a missing folder, an unknown image type, a drawing of features.
  r = Cli(pair + "--report " + Path("no/r.json"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("features)"), std::string::npos) << r.out;  // no summary: no work done
  r = Cli(pair + "--draw " + Path("d.xyz"));
  EXPECT_EQ(r.code, 2) << r.out;
  ASSERT_EQ(Cli("extract " + kData + "/box.png --out " + Path("f")).code, 0);
  r = Cli("match " + Path("f/box.png.fmf") + " " + Path("f/box.png.fmf") + " --report " +
          Path("r.json") + " --draw " + Path("d.png"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_FALSE(fs::exists(Path("r.json")));
  // extract: an output that cannot be written is a failure (1), not a skipped input.
  fs::create_directories(Path("g/box.png.fmf"));
  r = Cli("extract " + kData + "/box.png --out " + Path("g"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("cannot write"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(Path("g/box.png.fmf.tmp")));
}

TEST_F(Cli_, ReportsStayValidJsonForAnyFileName) {
  // A Linux file name need not be UTF-8: the JSON carries U+FFFD for the stray byte.
  const std::string name = Path("caf\xe9.png");
  fs::copy_file(kData + "/box.png", name);
  auto r = Cli("match '" + name + "' " + kData + "/box_in_scene.png --backend cpu --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["inputs"]["a"].get<std::string>().find("\xef\xbf\xbd"), std::string::npos);
  r = Cli("match '" + name + "' " + kData + "/box_in_scene.png --backend cpu --report " +
          Path("r.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(Path("r.json"));
  EXPECT_NO_THROW(nlohmann::json::parse(in));
}

TEST_F(Cli_, OptionsThatCannotWorkAreRefused) {
  const std::string pair = "match " + kData + "/box.png " + kData + "/box_in_scene.png ";
  auto r = Cli(pair + "--metric ip");  // the ratio test on negated dot products passes nothing
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--ratio 1"), std::string::npos) << r.out;
  EXPECT_EQ(Cli(pair + "--metric ip --ratio 1 --model none --backend cpu").code, 0);
  EXPECT_EQ(Cli(pair + "--edge-threshold inf").code, 2);
  EXPECT_EQ(Cli(pair + "--select bogus").code, 2);
}

TEST_F(Cli_, LogoAddThatAddsNothingLeavesNoLibrary) {
  std::ofstream(Path("notes.png")) << "not an image";
  auto r = Cli("logos add " + Path("lib.db") + " " + Path("notes.png"));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_FALSE(fs::exists(Path("lib.db"))) << r.out;
  // A later add with other settings then creates it with those.
  r = Cli("logos add " + Path("lib.db") + " " + kData + "/box.png --contrast-threshold 0.03");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(Path("lib.db")));
}

TEST_F(Cli_, OutputsAreCheckedBeforeTheWork) {
  for (const char* opt : {"--report", "--markdown"}) {
    auto r = Cli(std::string("logos eval --scenes 2 --seed 1 --backend cpu ") + opt + " " +
                 Path("missing/out.file"));
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("scenes"), std::string::npos) << "the evaluation ran first: " << r.out;
  }
  // A folder where the file should go is refused before the work too.
  fs::create_directories(Path("taken.json"));
  auto r = Cli("logos eval --scenes 2 --seed 1 --backend cpu --report " + Path("taken.json"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("is a folder"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("scenes"), std::string::npos) << "the evaluation ran first: " << r.out;
  fs::create_directories(Path("photos"));
  fs::copy_file(kData + "/box.png", Path("photos/box.png"));
  r = Cli("batch " + Path("photos") + " --db " + Path("b.db") + " --summary " + Path("taken.json"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("is a folder"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(Path("b.db"))) << "the batch ran first: " << r.out;
}

TEST_F(Cli_, LogoRemoveOfOneNameTwiceRemovesItOnce) {
  ASSERT_EQ(Cli("logos add " + Path("lib.db") + " " + kData + "/box.png").code, 0);
  auto r = Cli("logos remove " + Path("lib.db") + " box box");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Cli("logos add " + Path("lib.db") + " " + kData + "/box.png --name ''").code, 2);
}

TEST_F(Cli_, LogoDrawingsOfScenesWithOneNameAreKeptApart) {
  ASSERT_EQ(Cli("logos add " + Path("lib.db") + " " + kData + "/box.png").code, 0);
  fs::create_directories(Path("a"));
  fs::create_directories(Path("b"));
  fs::copy_file(kData + "/box_in_scene.png", Path("a/s.png"));
  fs::copy_file(kData + "/box_in_scene.png", Path("b/s.png"));
  auto r = Cli("logos query " + Path("lib.db") + " " + Path("a/s.png") + " " + Path("b/s.png") +
               " --backend cpu --draw " + Path("d"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(Path("d/s_logos.png"))) << r.out;
  EXPECT_TRUE(fs::exists(Path("d/s_logos.1.png"))) << r.out;
}

// `logos query` under auto chooses its backend at the first scene, by that scene's search times
// the scenes asked for: two scenes of a one-logo library are searched on the CPU, and say why;
// they find what --backend cpu finds.
TEST_F(Cli_, AutoQueriesASmallLibraryOnTheCpuAndSaysWhy) {
  ASSERT_EQ(Cli("logos add " + Path("lib.db") + " " + kData + "/box.png").code, 0);
  const std::string q = "logos query " + Path("lib.db") + " " + kData + "/box_in_scene.png " +
                        kData + "/box.png ";
  auto r = Cli(q);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("backend: cpu ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(auto: the searches, about"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("backend: cpu ("), r.out.find("box_in_scene.png  (")) << r.out;
  auto a = Cli(q + "--json"), c = Cli(q + "--backend cpu --json");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(c.code, 0) << c.out;
  const auto ja = nlohmann::json::parse(a.out), jc = nlohmann::json::parse(c.out);
  ASSERT_EQ(ja.size(), 2u);
  for (std::size_t i = 0; i < ja.size(); ++i) {
    EXPECT_EQ(ja[i]["backend"].get<std::string>().rfind("cpu", 0), 0u) << ja[i]["backend"];
    EXPECT_EQ(ja[i]["detections"], jc[i]["detections"]);
  }
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

TEST_F(Cli_, ReportNamesTheThreadsAskedFor) {
  // --threads 1 bounds the kNN search, and the report says one thread, not the machine's count.
  auto r = Cli("match " + kData + "/graf1.png " + kData + "/graf3.png --backend cpu --threads 1 "
               "--model none --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string backend = nlohmann::json::parse(r.out)["backend"];
  EXPECT_NE(backend.find("(1 thread,"), std::string::npos) << backend;
  r = Cli("match " + kData + "/graf1.png " + kData + "/graf3.png --backend cpu --threads 2 "
          "--model none --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string two = nlohmann::json::parse(r.out)["backend"];
  EXPECT_NE(two.find("(2 threads,"), std::string::npos) << two;
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

TEST_F(Cli_, HelpSaysWhetherTheMutualCheckIsOn) {
  // match leaves the cross check off, batch turns it on (docs/cli.md, docs/batch.md).
  for (const auto& [sub, want] : {std::pair<std::string, std::string>{"match", "off by default"},
                                  {"batch", "on by default"}}) {
    auto r = Cli(sub + " --help");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto at = r.out.find("--mutual");
    ASSERT_NE(at, std::string::npos) << r.out;
    const auto line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find(want), std::string::npos) << sub << ": " << line;
  }
}

}  // namespace

namespace {

TEST(CliUsage, AnUnknownCommandIsNamedWithTheCommandsThatExist) {
  auto r = Cli("bogus");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("featmatch: unknown command 'bogus'"), std::string::npos) << r.out;
  for (const char* command : {"match", "extract", "logos", "batch"})
    EXPECT_NE(r.out.find(command, r.out.find("(commands: ")), std::string::npos) << r.out;
  r = Cli("logos frobnicate");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("featmatch logos: unknown command 'frobnicate'"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("query"), std::string::npos) << r.out;
  // No command at all keeps CLI11's own words.
  r = Cli("");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("A subcommand is required"), std::string::npos) << r.out;
}

}  // namespace
