// The run file: numbers from 1, each handed out once however many threads and processes ask, damage reported.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daqx/executive/run_number.hpp"
#include "daqx/services/text.hpp"

using Catch::Matchers::Contains;
using daqx::RunNumberError;
using daqx::RunNumberFile;

namespace {

class ScratchDirectory {
 public:
  ScratchDirectory() {
    char pattern[] = "/tmp/daqx-runs-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("a new run file hands out 1, then 2, and holds the last number and a newline", "[run_number]") {
  ScratchDirectory dir;
  RunNumberFile runs(dir / "runs");
  CHECK(runs.current() == 0);
  CHECK(runs.next() == 1);
  CHECK(contents(dir / "runs") == "1\n");
  CHECK(runs.next() == 2);
  CHECK(runs.current() == 2);
  CHECK(RunNumberFile(dir / "runs").next() == 3);
  // No temporary file is left beside it.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("a run file written by hand continues from its number", "[run_number]") {
  ScratchDirectory dir;
  std::ofstream(dir / "runs") << "99999\n";
  CHECK(RunNumberFile(dir / "runs").next() == 100000);
  CHECK(contents(dir / "runs") == "100000\n");
}

TEST_CASE("threads allocating at once get distinct numbers with none skipped", "[run_number]") {
  ScratchDirectory dir;
  constexpr int kThreads = 4;
  constexpr int kEach = 50;
  std::mutex mutex;
  std::vector<std::uint64_t> got;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        RunNumberFile runs(dir / "runs");
        for (int i = 0; i < kEach; ++i) {
          const std::uint64_t run = runs.next();
          std::lock_guard lock(mutex);
          got.push_back(run);
        }
      });
  }
  std::sort(got.begin(), got.end());
  std::vector<std::uint64_t> expected(kThreads * kEach);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = i + 1;
  CHECK(got == expected);
}

TEST_CASE("processes allocating at once, from a file none of them found, get distinct numbers", "[run_number]") {
  ScratchDirectory dir;
  const std::string path = dir / "runs";
  constexpr int kProcesses = 6;
  constexpr int kEach = 20;
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      try {
        RunNumberFile runs(path);
        for (int i = 0; i < kEach; ++i) {
          const std::uint64_t run = runs.next();
          if (::write(pipe_fds[1], &run, sizeof run) != sizeof run) std::_Exit(2);
        }
      } catch (...) {
        std::_Exit(1);
      }
      std::_Exit(0);
    }
    children.push_back(child);
  }
  ::close(pipe_fds[1]);
  std::vector<std::uint64_t> got;
  std::uint64_t run = 0;
  while (::read(pipe_fds[0], &run, sizeof run) == sizeof run) got.push_back(run);
  ::close(pipe_fds[0]);
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  std::sort(got.begin(), got.end());
  REQUIRE(got.size() == kProcesses * kEach);
  CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());
  CHECK(got.front() == 1);
  CHECK(got.back() == kProcesses * kEach);
  CHECK(RunNumberFile(path).current() == kProcesses * kEach);
}

TEST_CASE("an empty or damaged run file is an error naming the file, and is left as it was", "[run_number]") {
  ScratchDirectory dir;
  const std::string path = dir / "runs";
  for (const std::string& text : {std::string(), std::string("\n"), std::string("12a\n"), std::string("-3\n"),
                                  std::string("99999999999999999999\n"), std::string(100, '1')}) {
    INFO("contents '" << text << "'");
    std::ofstream(path, std::ios::trunc) << text;
    CHECK_THROWS_AS(RunNumberFile(path).next(), RunNumberError);
    CHECK_THROWS_WITH(RunNumberFile(path).next(), Contains("run file " + path));
    CHECK_THROWS_AS(RunNumberFile(path).current(), RunNumberError);
    CHECK(contents(path) == text);
  }
}

TEST_CASE("a run file holds the number and at most one line feed, read by the strict number syntax", "[run_number]") {
  ScratchDirectory dir;
  const std::string path = dir / "runs";
  using namespace std::string_literals;
  for (const std::string& text : {"5 \n"s, "5\r\n"s, "5\r"s, " 5\n"s, "\t5\n"s, "5\n\n"s, "+5\n"s, "0x10\n"s, "5\0\n"s,
                                  "5\0"s, "1e3\n"s, "5.0\n"s, "9007199254740992\n"s}) {
    INFO("contents '" << daqx::strings::printable(text) << "'");
    std::ofstream(path, std::ios::trunc | std::ios::binary) << text;
    CHECK_THROWS_WITH(RunNumberFile(path).current(), Contains("does not hold a run number: '"));
    CHECK_THROWS_AS(RunNumberFile(path).next(), RunNumberError);
    CHECK(contents(path) == text);
  }
  // The message quotes the bytes as one printable line.
  std::ofstream(path, std::ios::trunc | std::ios::binary) << "7\r\n";
  CHECK_THROWS_WITH(RunNumberFile(path).current(),
                    Contains("'7\\r' is not an unsigned integer: it ends with a blank, carriage return or line feed"));
  for (const std::string& text : {"41\n"s, "41"s, "041\n"s}) {
    INFO("contents '" << daqx::strings::printable(text) << "'");
    std::ofstream(path, std::ios::trunc | std::ios::binary) << text;
    CHECK(RunNumberFile(path).next() == 42);
  }
}

TEST_CASE("a run file in a missing directory is an error with the reason", "[run_number]") {
  ScratchDirectory dir;
  const std::string path = dir / "no/such/runs";
  CHECK_THROWS_WITH(RunNumberFile(path).next(), Contains(path) && Contains("No such file or directory"));
  CHECK(RunNumberFile(path).current() == 0);
}

TEST_CASE("the last run number allocatable is 2^53-1", "[run_number]") {
  ScratchDirectory dir;
  std::ofstream(dir / "runs") << daqx::kMaxRunNumber - 1 << "\n";
  CHECK(RunNumberFile(dir / "runs").next() == daqx::kMaxRunNumber);
  CHECK_THROWS_WITH(RunNumberFile(dir / "runs").next(), Contains("none left"));
}

TEST_CASE("a damaged run file's bytes are quoted in one printable line", "[run_number]") {
  ScratchDirectory dir;
  const std::string path = dir / "runs";
  std::ofstream(path, std::ios::trunc) << std::string("12\x01\n\x1b[2J\xff\n", 9);
  try {
    RunNumberFile(path).next();
    FAIL("a damaged run file was taken");
  } catch (const RunNumberError& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Contains("12\\x01\\n\\x1b[2J\\xff"));
    for (char c : message) CHECK(static_cast<unsigned char>(c) >= 0x20);
  }
}
