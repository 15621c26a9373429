// daqx-evb-dump --follow against a real streams::Publisher behind a real control server (the fake control model's
// application 3): it reads the stream's records as the program runs, checks each event as a file's, and says
// what it found in its exit status: every event good, a damaged one, a refusal.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/process.hpp"
#include "daqx/streams/publisher.hpp"
#include "files/event_file_reader.hpp"
#include "files/event_file_writer.hpp"
#include "loop_context.hpp"

using namespace daqx;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

constexpr Tid kPublisherTid = 3;  // the fake model's evb::BU

// `count` events of one fragment each as the BU writes them, read back: the bytes its stream carries.
std::vector<std::vector<std::byte>> event_records(std::uint64_t count) {
  char pattern[] = "/tmp/daqx-evb-follow-XXXXXX";
  REQUIRE(::mkdtemp(pattern) != nullptr);
  const std::string directory = pattern;
  std::vector<std::vector<std::byte>> records;
  {
    evb::FileOutputConfig config;
    config.directory = directory;
    evb::FileWriter writer(config, 1, 3);
    for (std::uint64_t e = 1; e <= count; ++e) {
      const std::vector<std::byte> fragment(e * 3, static_cast<std::byte>(e));
      const std::span<const std::byte> pieces[1] = {fragment};
      const evb::EventRecordView::Fragment fragments[1] = {{7, fragment.size(), pieces}};
      writer.write({1, e, 0, fragments});
    }
  }
  for (const auto& entry : fs::directory_iterator(directory)) {
    const evb::EventFile file = evb::read_event_file(entry.path().string());
    REQUIRE(file.ok());
    for (const auto& record : file.records) {
      const auto bytes = file.data.subspan(record.offset, record.bytes);
      records.emplace_back(bytes.begin(), bytes.end());
    }
  }
  fs::remove_all(directory);
  return records;
}

struct Followed {
  int exit_code = -1;
  std::string output;
};

// A publisher of stream `events` served on a control port, and daqx-evb-dump --follow run against it.
struct FollowSetup {
  test::ServedControlModel served;
  streams::test::Bus bus;
  streams::test::LoopContext context{bus, kPublisherTid, "publisher"};
  streams::Publisher publisher{context};
  streams::StreamId stream = publisher.offer("events");

  // Runs the program with `arguments` after the URL of `target`; publishes `events` (in turn, again and again) once
  // it has subscribed, pumping the publisher, until the program exits (at most 60 s). With `halt_after`, the
  // publisher halts once that many events are published (the stream's end).
  Followed follow(const std::string& target, std::vector<std::string> arguments,
                  const std::vector<std::vector<std::byte>>& events, std::size_t halt_after = 0) {
    const std::string log = "/tmp/daqx-evb-follow-" + std::to_string(::getpid()) + ".log";
    std::vector<std::string> argv{test::program_directory() + "/daqx-evb-dump", "--follow",
                                  "http://127.0.0.1:" + std::to_string(served.port()) + target};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    const pid_t child = test::start_process(argv, log);
    Followed result;
    std::size_t next = 0;
    int status = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (::waitpid(child, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
        FAIL("daqx-evb-dump --follow ran past 60 s: " << test::read_text(log));
      }
      if (halt_after != 0 && next == halt_after) {
        publisher.halt("the test's stream ends");
        halt_after = 0;
      }
      while (!events.empty() && publisher.subscriptions() == 1 &&
             (halt_after == 0 || next < halt_after)) {
        const auto& bytes = events[next % events.size()];
        const auto published = publisher.publish(stream, next + 1, [&] {
          mem::Ref ref = context.pool().allocate(bytes.size());
          std::memcpy(ref.data(), bytes.data(), bytes.size());
          return ref;
        });
        if (published != streams::Published::offered) break;
        ++next;
      }
      bus.pump();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.output = test::read_text(log);
    std::remove(log.c_str());
    return result;
  }
};

}  // namespace

TEST_CASE("daqx-evb-dump --follow reads N events of a stream, each checked as an event file's record",
          "[evb][follow]") {
  FollowSetup s;
  const auto events = event_records(10);
  const Followed followed =
      s.follow("/api/applications/3/streams/events?policy=block,depth:8", {"--count", "50", "--events"}, events);
  INFO(followed.output);
  CHECK(followed.exit_code == 0);
  CHECK_THAT(followed.output, Catch::Contains("events 50 (first 1, last 10)"));
  CHECK_THAT(followed.output, Catch::Contains("records 1..50"));
  CHECK_THAT(followed.output, Catch::Contains("  event 7  flags -  fragments 1  bytes 21  record 7\n"));
  CHECK_THAT(followed.output, Catch::Contains("result: ok"));
}

TEST_CASE("daqx-evb-dump --follow exits 1 on a damaged event, and on a refusal with its status and reason",
          "[evb][follow]") {
  FollowSetup s;
  auto events = event_records(3);
  events[2][0] = std::byte{0};  // the third event's record magic
  const Followed damaged = s.follow("/api/applications/3/streams/events?policy=block", {"--count", "10"}, events);
  INFO(damaged.output);
  CHECK(damaged.exit_code == 1);
  CHECK_THAT(damaged.output, Catch::Contains("record 3: ") && Catch::Contains("no record here"));
  CHECK_THAT(damaged.output, Catch::Contains("events 2"));
  CHECK_THAT(damaged.output, Catch::Contains("result: FAILED"));

  const Followed unknown = s.follow("/api/applications/3/streams/nosuch", {}, {});
  INFO(unknown.output);
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.output, Catch::Contains("refused: 404") && Catch::Contains("it offers events"));

  const Followed bad_policy = s.follow("/api/applications/3/streams/events?policy=sample:0", {}, {});
  INFO(bad_policy.output);
  CHECK(bad_policy.exit_code == 1);
  CHECK_THAT(bad_policy.output, Catch::Contains("refused: 400"));
}

TEST_CASE("daqx-evb-dump --follow reads to the stream's end: the publisher halts, the last chunk comes, exit 0",
          "[evb][follow]") {
  FollowSetup s;
  const Followed followed =
      s.follow("/api/applications/3/streams/events?policy=block,depth:4", {}, event_records(2), 20);
  INFO(followed.output);
  CHECK(followed.exit_code == 0);
  CHECK_THAT(followed.output, Catch::Contains("the stream ended"));
  CHECK_THAT(followed.output, Catch::Contains("result: ok"));
}

TEST_CASE("daqx-evb-dump --follow: usage errors exit 2", "[evb][follow]") {
  const std::string program = test::program_directory() + "/daqx-evb-dump";
  const auto no_url = test::run_process({program, "--follow"}, std::chrono::seconds(20));
  CHECK(no_url.exit_code == 2);
  const auto bad_count = test::run_process({program, "--count", "0", "--follow", "http://127.0.0.1:1/x"},
                                           std::chrono::seconds(20));
  CHECK(bad_count.exit_code == 2);
  CHECK_THAT(bad_count.output, Catch::Contains("--count"));
  const auto files_too = test::run_process({program, "--follow", "http://127.0.0.1:1/x", "file.daqx"},
                                           std::chrono::seconds(20));
  CHECK(files_too.exit_code == 2);
  const auto not_url = test::run_process({program, "--follow", "127.0.0.1:1"}, std::chrono::seconds(20));
  CHECK(not_url.exit_code == 2);
}
