// featmatch batch as a user runs it: exit codes, summary files, a run killed with SIGKILL or
// stopped with SIGINT and run again ends with the same database as an uninterrupted run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../matcher/test_batch_data.h"

namespace {

namespace fs = std::filesystem;

std::string Dir(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("fm_batch_cli_" + std::to_string(::getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// Starts the CLI with `args`, output to `log`; returns the child's pid.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(FM_CLI_PATH));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(FM_CLI_PATH, argv.data());
    ::_exit(127);
  }
  return pid;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Exit code, or 128 + signal for a killed process.
int Finish(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int RunCli(const std::vector<std::string>& args, const std::string& log) {
  return Finish(Spawn(args, log));
}

std::vector<std::string> Args(const std::string& folder, const std::string& db,
                              std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"batch",  folder,  "--db",      db,         "--backend",
                                "cpu",    "--model", "homography", "--threads", "1"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Polls `table` of `db` until it has at least `rows` rows (or the process ended); true if so.
bool WaitForRows(pid_t pid, const std::string& db, const std::string& table, int64_t rows) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(db) && fm::test::CountRows(db, table) >= rows) return true;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

class BatchCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fm::test::HaveSamples()) return;
    folder_ = new fm::test::BatchFolder(fm::test::MakeBatchFolder(
        Dir("photos"), {"graf1.png", "box_in_scene.png", "building.jpg", "baboon.jpg"}, 3));
    reference_ = new std::string(Dir("ref") + "/ref.db");
    code_ = RunCli(Args(folder_->dir, *reference_,
                     {"--summary", Dir("ref_summary") + "/s.json", "--commit-every", "5"}),
                Dir("ref_log") + "/log.txt");
  }
  static void TearDownTestSuite() {
    delete folder_;
    delete reference_;
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("fm_batch_cli_" + std::to_string(::getpid())), ec);
  }
  void SetUp() override {
    if (!fm::test::HaveSamples()) GTEST_SKIP() << "OpenCV sample images not installed";
  }
  static fm::test::BatchFolder* folder_;
  static std::string* reference_;
  static int code_;
};
fm::test::BatchFolder* BatchCli::folder_ = nullptr;
std::string* BatchCli::reference_ = nullptr;
int BatchCli::code_ = -1;

TEST_F(BatchCli, FinishesWithSummaryAndReportsTheBadImage) {
  EXPECT_EQ(code_, 5) << "exit code 5: finished, some inputs skipped";
  const std::string summary_path =
      (fs::path(*reference_).parent_path().parent_path() / "ref_summary" / "s.json").string();
  const auto j = nlohmann::json::parse(ReadFile(summary_path));
  EXPECT_EQ(j["status"], "done");
  const int n = static_cast<int>(folder_->views.size());
  EXPECT_EQ(j["pairs"]["total"], n * (n - 1) / 2);
  ASSERT_EQ(j["images"]["bad"].size(), 1u);
  EXPECT_NE(j["images"]["bad"][0]["path"].get<std::string>().find(folder_->corrupt),
            std::string::npos);
  ASSERT_EQ(j["images"]["ignored"].size(), 1u);
  EXPECT_EQ(j["pair_results"].size(), static_cast<std::size_t>(n * (n - 1) / 2));
  int verified = 0;
  for (const auto& p : j["pair_results"]) verified += p["verified"].get<bool>() ? 1 : 0;
  EXPECT_GE(verified, 4 * 3);  // the three views of each photograph
}

TEST_F(BatchCli, KilledRunsResumeToTheSameDatabase) {
  const std::string dir = Dir("kill");
  const std::string db = dir + "/k.db";
  // Killed during extraction, then during matching, then run to the end. On a loaded machine a
  // run may get past the stage before the kill lands; that attempt starts again from the saved
  // state (a few times at most).
  const int64_t n = static_cast<int64_t>(folder_->views.size());
  auto kill_during = [&](const std::string& table, int64_t rows, int64_t limit,
                         const std::string& log) {
    // The database is in WAL mode: committed work may still be in its -wal file.
    const std::vector<std::string> parts = {"", "-wal"};
    for (const auto& p : parts) {
      fs::remove(db + p + ".saved");
      if (fs::exists(db + p)) fs::copy_file(db + p, db + p + ".saved");
    }
    for (int attempt = 0; attempt < 4; ++attempt) {
      for (const auto& p : {"", "-wal", "-shm"}) fs::remove(db + p);
      for (const auto& p : parts)
        if (fs::exists(db + p + ".saved")) fs::copy_file(db + p + ".saved", db + p);
      const pid_t pid = Spawn(Args(folder_->dir, db, {"--commit-every", "1"}), log);
      if (!WaitForRows(pid, db, table, rows)) {
        ADD_FAILURE() << ReadFile(log);
        return false;
      }
      ::kill(pid, SIGKILL);
      if (Finish(pid) == 128 + SIGKILL && fm::test::CountRows(db, table) < limit) return true;
    }
    ADD_FAILURE() << "every attempt got past the stage before SIGKILL landed";
    return false;
  };
  ASSERT_TRUE(kill_during("images", 2, n, dir + "/1.txt"));
  ASSERT_TRUE(kill_during("two_view_geometries", 3, n * (n - 1) / 2, dir + "/2.txt"));
  const int64_t pairs_at_kill = fm::test::CountRows(db, "two_view_geometries");
  EXPECT_EQ(fm::test::CountRows(db, "matches"), pairs_at_kill);  // committed together

  EXPECT_EQ(RunCli(Args(folder_->dir, db), dir + "/3.txt"), 5) << ReadFile(dir + "/3.txt");
  const std::string log = ReadFile(dir + "/3.txt");
  EXPECT_NE(log.find(std::to_string(n) + " reused"), std::string::npos) << log;
  EXPECT_EQ(fm::test::DumpDatabase(db), fm::test::DumpDatabase(*reference_));
}

TEST_F(BatchCli, InterruptStopsCleanlyWithCode130) {
  const std::string dir = Dir("sigint");
  const std::string db = dir + "/i.db";
  const int64_t total = fm::test::CountRows(*reference_, "two_view_geometries");
  // The signal goes out once two pairs are committed. On a loaded machine the run may finish
  // every remaining pair before the signal lands; then there was nothing to interrupt and the
  // scenario is repeated from scratch (a few times at most).
  bool interrupted = false;
  for (int attempt = 0; attempt < 4 && !interrupted; ++attempt) {
    fs::remove(db);
    const pid_t pid = Spawn(Args(folder_->dir, db, {"--commit-every", "1"}), dir + "/1.txt");
    ASSERT_TRUE(WaitForRows(pid, db, "two_view_geometries", 2)) << ReadFile(dir + "/1.txt");
    ::kill(pid, SIGINT);
    const int code = Finish(pid);
    if (code != 130 && fm::test::CountRows(db, "two_view_geometries") == total) continue;
    interrupted = true;
    EXPECT_EQ(code, 130) << ReadFile(dir + "/1.txt");
    EXPECT_NE(ReadFile(dir + "/1.txt").find("run the same command again"), std::string::npos);
  }
  ASSERT_TRUE(interrupted) << "every attempt finished before SIGINT arrived";
  EXPECT_EQ(RunCli(Args(folder_->dir, db, {"--summary", dir + "/s.csv"}), dir + "/2.txt"), 5);
  EXPECT_EQ(fm::test::DumpDatabase(db), fm::test::DumpDatabase(*reference_));
  const std::string csv = ReadFile(dir + "/s.csv");
  EXPECT_EQ(csv.rfind("kind,name1,name2,matches,inliers,config,note\n", 0), 0u);
  EXPECT_NE(csv.find("bad_image,"), std::string::npos);
  EXPECT_NE(csv.find("pair,a_00.png,a_01.png,"), std::string::npos);
}

TEST_F(BatchCli, SecondWriterIsRefusedAndTheFirstFinishesIntact) {
  const std::string dir = Dir("two_writers");
  const std::string db = dir + "/w.db";
  const int64_t n = static_cast<int64_t>(folder_->views.size());
  // The second run starts while the first is extracting. On a loaded machine the first may be
  // done before the second gets going (then the second finds everything done); that attempt is
  // repeated from scratch.
  bool met = false;
  for (int attempt = 0; attempt < 4 && !met; ++attempt) {
    for (const auto& p : {"", "-wal", "-shm"}) fs::remove(db + p);
    const pid_t first = Spawn(Args(folder_->dir, db, {"--commit-every", "1"}), dir + "/1.txt");
    ASSERT_TRUE(WaitForRows(first, db, "images", 1)) << ReadFile(dir + "/1.txt");
    const int second = RunCli(Args(folder_->dir, db), dir + "/2.txt");
    const int first_code = Finish(first);
    const std::string log = ReadFile(dir + "/2.txt");
    if (second != 3 && log.find(std::to_string(n) + " reused") != std::string::npos) continue;
    met = true;
    EXPECT_EQ(second, 3) << log;
    EXPECT_NE(log.find("in use by another featmatch batch run"), std::string::npos) << log;
    EXPECT_EQ(first_code, 5) << ReadFile(dir + "/1.txt");
  }
  ASSERT_TRUE(met) << "every first run ended before the second started";
  EXPECT_EQ(fm::test::DumpDatabase(db), fm::test::DumpDatabase(*reference_));
  // Once the first has ended, the same command runs (and has nothing left to do).
  EXPECT_EQ(RunCli(Args(folder_->dir, db), dir + "/3.txt"), 5) << ReadFile(dir + "/3.txt");
  EXPECT_EQ(fm::test::DumpDatabase(db), fm::test::DumpDatabase(*reference_));
}

TEST(BatchCliErrors, ClearMessages) {
  const std::string dir = Dir("errors");
  fs::create_directories(dir + "/empty");
  fs::create_directories(dir + "/text");
  std::ofstream(dir + "/text/readme.txt") << "x";
  EXPECT_EQ(RunCli(Args(dir + "/empty", dir + "/o.db"), dir + "/1.txt"), 3);
  EXPECT_NE(ReadFile(dir + "/1.txt").find("holds no files"), std::string::npos);
  EXPECT_EQ(RunCli(Args(dir + "/text", dir + "/o.db"), dir + "/2.txt"), 3);
  EXPECT_NE(ReadFile(dir + "/2.txt").find("no images in the folder"), std::string::npos);
  EXPECT_EQ(RunCli({"batch", dir + "/text", "--db", dir + "/o.db", "--pairs", "sequential:x"},
                dir + "/3.txt"),
            2);
  EXPECT_NE(ReadFile(dir + "/3.txt").find("sequential:N"), std::string::npos);
  if (fm::test::HaveSamples()) {
    fs::create_directories(dir + "/one");
    fs::copy_file(fm::test::Sample("box.png"), dir + "/one/box.png");
    // A path no one can create a file in (also for root).
    EXPECT_EQ(RunCli(Args(dir + "/one", "/proc/fm_no_such_dir/out.db"), dir + "/4.txt"), 3);
    EXPECT_NE(ReadFile(dir + "/4.txt").find("/proc/fm_no_such_dir/out.db"), std::string::npos)
        << ReadFile(dir + "/4.txt");
    EXPECT_EQ(RunCli(Args(dir + "/one", "/proc/out.db"), dir + "/5.txt"), 3);
    EXPECT_NE(ReadFile(dir + "/5.txt").find("cannot open the database"), std::string::npos)
        << ReadFile(dir + "/5.txt");
  }
}

}  // namespace
