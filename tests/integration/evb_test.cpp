// Process-level tests of the event builder that are not about a transport: the whole event builder in one
// executive, frames handed over without a transport, with slow consumers, file output and a memory budget.
// The scenarios over transports (2x2, 2x2_failBU, 3x1_incompleteEvents, ...) are in tests/transport/.
#include <Poco/JSON/Parser.h>
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../support/evb_run.hpp"
#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Clock = std::chrono::steady_clock;

namespace {

// An application of the in-process event builder; its instance is its TID modulo 100.
struct EvbApplication {
  std::string cls;
  std::uint32_t tid = 0;
  PartitionProperties properties;
};
using EvbApplications = std::vector<EvbApplication>;

// The whole event builder in one executive (frames handed over without a transport), with extra applications.
// `wrapper` goes before the executive (ExecutiveProcess), e.g. on_private_tmpfs(...).
struct InProcessEvb {
  std::uint16_t control = free_port();
  std::unique_ptr<ExecutiveProcess> process;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(control); }

  InProcessEvb(const std::string& name, const EvbApplications& applications, std::vector<std::string> wrapper = {}) {
    PartitionBuilder partition(name);
    ContextBuilder context = partition.context(url());
    context.module("libdaqx_evb.so");
    for (const EvbApplication& a : applications)
      context.application(a.cls, a.tid, a.tid % 100).properties(a.properties);
    const std::string xml = partition.xml();
    const bool wrapped = !wrapper.empty();
    process = std::make_unique<ExecutiveProcess>(write_file(name + ".xml", xml), url(), std::vector<std::string>{},
                                                 executive_program(), std::move(wrapper));
    const bool ready = process->wait_ready();
    INFO(process->output());
    if (wrapped && !ready)
      FAIL("the executive did not start in its own mount namespace: this test needs root (CAP_SYS_ADMIN) to mount "
           "a tmpfs there, and must not be skipped without it");
    REQUIRE(ready);
  }
  double metric(std::uint32_t tid, const std::string& name) const { return process->metric(tid, name); }
  std::string state(std::uint32_t tid) const {
    Poco::JSON::Object::Ptr app = process->application(tid);
    return app ? app->getValue<std::string>("state") : std::string("unreachable");
  }
  std::string reason(std::uint32_t tid) const {
    Poco::JSON::Object::Ptr app = process->application(tid);
    return app && app->has("reason") ? app->getValue<std::string>("reason") : std::string();
  }
  // A path as the executive sees it (in its mount namespace, if it has one of its own).
  std::string seen_by_executive(const std::string& path) const {
    return "/proc/" + std::to_string(process->pid()) + "/root" + path;
  }
};

// A wrapper running the executive in a mount namespace of its own with a tmpfs (mount options `options`:
// "ro", "size=2m") on `directory`: a read-only or small filesystem for it alone, nothing left mounted after.
std::vector<std::string> on_private_tmpfs(const std::string& directory, const std::string& options) {
  std::filesystem::create_directories(directory);
  return {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
          "mount -t tmpfs -o " + options + " daqx-test " + directory + " && exec \"$0\" \"$@\""};
}

// The files in a directory whose names end with `suffix`, sorted.
std::vector<std::string> files_in(const std::string& directory, const std::string& suffix) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    if (entry.path().string().ends_with(suffix)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// daqx-evb-dump --verify over files: read back with the event file reader, every fragment checked.
ProcessResult dump_event_files(const std::vector<std::string>& files) {
  std::vector<std::string> argv{program_directory() + "/../apps/evb/daqx-evb-dump", "--verify"};
  argv.insert(argv.end(), files.begin(), files.end());
  return run_process(argv, std::chrono::seconds(60));
}

// A BU writing files of fileSize bytes to directory (and as the extra properties say), two RUs, the EvM.
EvbApplications file_output_evb(const std::string& directory, std::uint64_t file_size,
                                const PartitionProperties& extra = {}) {
  PartitionProperties bu_properties{
      {"output", "file", ""}, {"outputDirectory", directory, ""}, {"fileSize", std::to_string(file_size), "unsigned"}};
  bu_properties.insert(bu_properties.end(), extra.begin(), extra.end());
  return {{"evb::BU", bu(0), bu_properties},
          {"evb::RU", ru(0), {{"fragmentSpread", "1000", "unsigned"}}},
          {"evb::RU", ru(1), {}},
          {"evb::EvM", kEvm, {}}};
}

// A file output event builder, enabled, writing at 2 MB/s: a file stays open long enough to be removed.
std::unique_ptr<InProcessEvb> writing_slowly(const std::string& name, const std::string& directory,
                                             std::uint64_t file_size) {
  auto evb = std::make_unique<InProcessEvb>(
      name, file_output_evb(directory, file_size, {{"outputBandwidth", "2", "double"}}));
  REQUIRE(evb->process->transition("configure").status == 200);
  REQUIRE(evb->process->transition("enable").status == 200);
  return evb;
}

}  // namespace

TEST_CASE("a BU whose consumer is slow throttles, then blocks, keeps building as the consumer frees slots, and "
          "the run drains", "[evb][output]") {
  InProcessEvb evb("evb-slow-consumer",
                   {{"evb::Consumer", 300, {{"name", "slow", ""}, {"delay", "1500", "double"}}},
                    {"evb::BU", bu(0), {{"output", "consumer", ""}, {"consumer", "slow", ""}, {"slots", "8", "unsigned"}}},
                    {"evb::RU", ru(0), {}},
                    {"evb::EvM", kEvm, {}}});
  REQUIRE(evb.process->transition("configure").status == 200);
  REQUIRE(evb.process->transition("enable").status == 200);
  double worst = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (Clock::now() < deadline && worst < 2) {
    worst = std::max(worst, evb.metric(bu(0), "output_state"));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(worst == 2);  // blocked: every slot waits for the consumer
  const double consumed = evb.metric(300, "events");
  REQUIRE(evb.process->wait_metric(300, "events", consumed + 200, std::chrono::seconds(20)));
  REQUIRE(evb.process->transition("stop").status == 200);
  CHECK(evb.metric(kEvm, "drained") == 1);
  CHECK(evb.metric(kEvm, "events_completed") == evb.metric(kEvm, "events_assigned"));
  CHECK(evb.metric(300, "events") == evb.metric(kEvm, "events_completed"));
  CHECK(evb.metric(300, "check_failures") == 0);
  CHECK(evb.metric(300, "events_incomplete") == 0);
  CHECK(evb.process->stop() == 0);
}

TEST_CASE("file output writes every event, rotates files by size, and daqx-evb-dump verifies them", "[evb][output]") {
  const std::string directory = scratch_directory() + "/evb-files";
  InProcessEvb evb("evb-files",
                   {{"evb::BU", bu(0),
                     {{"output", "file", ""}, {"outputDirectory", directory, ""}, {"fileSize", "1000000", "unsigned"}}},
                    {"evb::RU", ru(0), {{"fragmentSpread", "1000", "unsigned"}}},
                    {"evb::RU", ru(1), {}},
                    {"evb::EvM", kEvm, {{"maxEvents", "600", "unsigned"}}}});
  REQUIRE(evb.process->transition("configure").status == 200);
  REQUIRE(evb.process->transition("enable").status == 200);
  REQUIRE(evb.process->wait_metric(kEvm, "events_completed", 600, std::chrono::seconds(30)));
  REQUIRE(evb.process->transition("stop").status == 200);
  CHECK(evb.metric(bu(0), "output_events") == 600);
  CHECK(evb.metric(bu(0), "events_corrupt") == 0);

  const std::vector<std::string> files = files_in(directory, "");
  INFO(files.size() << " files");
  CHECK(files.size() > 5);  // ~ 600 x 35 kB in files of 1 MB
  CHECK(evb.metric(bu(0), "files_closed") == static_cast<double>(files.size()));
  for (const std::string& f : files) CHECK(f.ends_with(".daqx"));  // closed: renamed from .open
  const ProcessResult dump = dump_event_files(files);
  INFO(dump.output);
  CHECK(dump.exit_code == 0);
  CHECK(evb.process->stop() == 0);
}

TEST_CASE("daqx-evb-dump --follow reads a running BU's stream through its control port, every sampled event "
          "verified", "[evb][stream]") {
  InProcessEvb evb("evb-follow", {{"evb::BU", bu(0), {}},
                                  {"evb::RU", ru(0), {{"fragmentSpread", "1000", "unsigned"}}},
                                  {"evb::RU", ru(1), {}},
                                  {"evb::EvM", kEvm, {}}});
  REQUIRE(evb.process->transition("configure").status == 200);
  REQUIRE(evb.process->transition("enable").status == 200);
  const ProcessResult follow = run_process(
      {program_directory() + "/../apps/evb/daqx-evb-dump", "--verify", "--count", "100", "--follow",
       evb.url() + "/api/applications/" + std::to_string(bu(0)) + "/streams/events?policy=sample:10"},
      std::chrono::seconds(60));
  INFO(follow.output);
  CHECK(follow.exit_code == 0);
  CHECK_THAT(follow.output, Catch::Contains("events 100 (first "));
  CHECK_THAT(follow.output, Catch::Contains("verify: ") && Catch::Contains(" fragments checked, 0 failed"));
  CHECK_THAT(follow.output, Catch::Contains("result: ok"));
  REQUIRE(evb.process->transition("stop").status == 200);
  CHECK(evb.process->stop() == 0);
}

TEST_CASE("each subscription to a BU's stream is a row of the partition's page and JSON: its subscriber, policy, "
          "rates and counts, from the executive's summary, the monitors in the BU's own executive",
          "[evb][stream][dashboard]") {
  constexpr std::uint32_t kSampler = 300, kRecorder = 301;
  InProcessEvb evb("evb-stream-rows",
                   {{"evb::BU", bu(0), {}},
                    {"evb::RU", ru(0), {}},
                    {"evb::EvM", kEvm, {}},
                    {"evb::Monitor", kSampler, {{"publisher", std::to_string(bu(0)), "applications"}, {"policy", "sample:10", ""}}},
                    {"evb::Monitor", kRecorder,
                     {{"publisher", std::to_string(bu(0)), "applications"}, {"policy", "block", ""}, {"verify", "true", ""}}}});
  REQUIRE(evb.process->transition("configure").status == 200);
  REQUIRE(evb.process->transition("enable").status == 200);
  REQUIRE(evb.process->wait_metric(kSampler, "events_received", 50, std::chrono::seconds(30)));

  // The summary: one entry per subscription, its counters under their names without "subscriber_".
  const daqx::HttpReply summary = evb.process->get("/api/summary");
  REQUIRE(summary.status == 200);
  INFO(summary.body.substr(0, 4000));
  CHECK_THAT(summary.body, Catch::Contains("\"subscriptions_total\":2"));
  CHECK_THAT(summary.body, Catch::Contains("\"policy\":\"sample:10\"") &&
                               Catch::Contains("\"subscriber\":\"tid " + std::to_string(kSampler) + "\""));
  CHECK_THAT(summary.body, Catch::Contains("\"policy\":\"block\"") &&
                               Catch::Contains("\"subscriber\":\"tid " + std::to_string(kRecorder) + "\""));

  // The partition's view: rates come from two answers, so wait for a delivered rate, then read the rows.
  Poco::JSON::Object::Ptr sampler;
  const bool rated = wait_until(
      [&] {
        const daqx::HttpReply reply = evb.process->get("/api/partition");
        if (reply.status != 200) return false;
        Poco::JSON::Parser parser;
        const auto view = parser.parse(reply.body).extract<Poco::JSON::Object::Ptr>();
        if (view->getObject("totals")->getValue<int>("subscriptions") != 2) return false;
        const auto applications = view->getArray("contexts")->getObject(0)->getArray("applications");
        for (std::size_t i = 0; i < applications->size(); ++i) {
          const auto app = applications->getObject(static_cast<unsigned>(i));
          if (app->getValue<std::uint32_t>("tid") != bu(0)) continue;
          const auto rows = app->getArray("subscriptions");
          for (std::size_t k = 0; rows && k < rows->size(); ++k) {
            const auto row = rows->getObject(static_cast<unsigned>(k));
            if (row->getValue<std::string>("policy") == "sample:10" && !row->isNull("delivered_per_second") &&
                row->getValue<double>("delivered_per_second") > 0)
              sampler = row;
          }
        }
        return sampler != nullptr;
      },
      std::chrono::seconds(30));
  REQUIRE(rated);
  CHECK(sampler->getValue<std::string>("stream") == "events");
  CHECK(sampler->getValue<std::string>("subscriber") == "tid " + std::to_string(kSampler));
  CHECK(sampler->getValue<double>("delivered") > 0);
  CHECK(sampler->getValue<double>("skipped_per_second") > 0);  // it takes 1 in 10
  for (const char* field : {"dropped", "queued", "lag"}) CHECK(sampler->has(field));

  // The page, drawn by the server: the streams table with both rows.
  const daqx::HttpReply page = evb.process->get("/partition");
  REQUIRE(page.status == 200);
  CHECK_THAT(page.body, Catch::Contains("<table id=\"subscriptions\">"));
  CHECK_THAT(page.body, Catch::Contains("<td class=\"policy\">sample:10</td>") &&
                            Catch::Contains("<td class=\"policy\">block</td>"));
  CHECK_THAT(page.body, Catch::Contains("<td class=\"subscriber\">tid " + std::to_string(kRecorder) + "</td>"));

  REQUIRE(evb.process->transition("stop").status == 200);
  CHECK(evb.metric(kRecorder, "events_received") > 0);
  CHECK(evb.metric(kRecorder, "events_dropped_by_publisher") == 0);  // block: nothing dropped for it
  CHECK(evb.metric(kRecorder, "verify_failures") == 0);
  CHECK(evb.process->stop() == 0);
}

TEST_CASE("a BU offers only as many slots as its memory budget can hold once it knows how big a batch is",
          "[evb][output]") {
  // A batch is 8 events of 512 KiB in 4 blocks of 1 MiB: with a 24 MiB budget at most 6 slots are in use.
  // (Why it matters: part-filled slots holding more than the transport's receive pool stopped a 4x4 run at
  // 1 MiB in the benchmark; that needs many processes and is checked there, not here.)
  InProcessEvb evb("evb-memory-budget",
                   {{"evb::BU", bu(0), {{"slots", "32", "unsigned"}, {"memoryBudget", "25165824", "unsigned"}}},
                    {"evb::RU", ru(0),
                     {{"sources", "1", "unsigned"},
                      {"fragmentSize", "524000", "unsigned"},
                      {"blockSize", "1048576", "unsigned"}}},
                    {"evb::EvM", kEvm, {{"maxEvents", "800", "unsigned"}}}});
  REQUIRE(evb.process->transition("configure").status == 200);
  REQUIRE(evb.process->transition("enable").status == 200);
  REQUIRE(evb.process->wait_metric(kEvm, "events_completed", 800, std::chrono::seconds(60)));
  CHECK(evb.metric(bu(0), "slot_limit") <= 6);
  CHECK(evb.metric(bu(0), "slot_limit") >= 1);
  REQUIRE(evb.process->transition("stop").status == 200);
  CHECK(evb.metric(bu(0), "events_built") == 800);
  CHECK(evb.process->stop() == 0);
}

// ---- file output failures: a directory that cannot take files, a full disk, a file removed under the writer --

TEST_CASE("a BU refuses at configure an output directory it cannot write: read-only, not a directory, cannot be "
          "created", "[evb][output][files]") {
  const std::string read_only = scratch_directory() + "/evb-read-only";
  const std::string not_directory = write_file("evb-not-a-directory", "a file\n");
  const std::string writable = scratch_directory() + "/evb-writable";
  InProcessEvb evb("evb-unwritable", file_output_evb(read_only, 1000000), on_private_tmpfs(read_only, "ro"));
  // Each refusal leaves the BU Failed with the reason; halt, a new directory through the control API, again.
  const auto configure_with = [&](const std::string& directory) {
    REQUIRE(evb.process->post("/api/applications/" + std::to_string(bu(0)) + "/parameters",
                              "{\"name\":\"outputDirectory\",\"value\":\"" + directory + "\"}")
                .status == 200);
    return evb.process->transition("configure").status;
  };
  const auto halt = [&] { REQUIRE(evb.process->transition("halt").status == 200); };

  CHECK(configure_with(read_only) != 200);
  CHECK(evb.state(bu(0)) == "Failed");
  CHECK_THAT(evb.reason(bu(0)), Catch::Contains(read_only) && Catch::Contains("Read-only file system"));
  halt();
  CHECK(configure_with(read_only + "/run7") != 200);  // cannot be created: its parent is read-only
  CHECK_THAT(evb.reason(bu(0)), Catch::Contains(read_only + "/run7") && Catch::Contains("Read-only file system"));
  halt();
  CHECK(configure_with(not_directory) != 200);
  CHECK_THAT(evb.reason(bu(0)), Catch::Contains(not_directory) && Catch::Contains("Not a directory"));
  halt();
  CHECK(configure_with(not_directory + "/run7") != 200);
  CHECK_THAT(evb.reason(bu(0)), Catch::Contains("Not a directory"));
  halt();
  CHECK(configure_with(writable) == 200);
  CHECK(evb.state(bu(0)) == "Configured");
  CHECK(files_in(writable, "").empty());  // the probe file is gone
  CHECK(evb.process->stop() == 0);
}

TEST_CASE("a BU whose disk fills during a run fails with the reason, its executive lives on, and the files it "
          "wrote read back whole", "[evb][output][files]") {
  const std::string directory = scratch_directory() + "/evb-full";
  InProcessEvb evb("evb-disk-full", file_output_evb(directory, 300000), on_private_tmpfs(directory, "size=2m"));
  REQUIRE(evb.process->transition("configure").status == 200);
  REQUIRE(evb.process->transition("enable").status == 200);
  const bool failed = wait_until([&] { return evb.state(bu(0)) == "Failed"; }, std::chrono::seconds(60));
  INFO(evb.process->output());
  REQUIRE(failed);
  const std::string reason = evb.reason(bu(0));
  CHECK_THAT(reason, Catch::Contains("No space left on device") && Catch::Contains(directory + "/run"));
  CHECK(evb.process->running());

  // As the executive sees the directory (its tmpfs is in its own mount namespace).
  const std::string seen = evb.seen_by_executive(directory);
  const std::vector<std::string> closed = files_in(seen, ".daqx");
  const std::vector<std::string> open = files_in(seen, ".open");
  INFO(closed.size() << " files closed, " << open.size() << " left open");
  CHECK(closed.size() >= 3);  // 2 MB in files of 300 kB
  const ProcessResult closed_dump = dump_event_files(closed);
  INFO(closed_dump.output);
  CHECK(closed_dump.exit_code == 0);
  // The file being written when the disk filled: cut back to its last whole record, then closed if the trailer
  // still fitted, else left NAME.open with whole records and only the trailer missing.
  CHECK(open.size() <= 1);
  for (const std::string& file : open) {
    const ProcessResult open_dump = dump_event_files({file});
    INFO(open_dump.output);
    CHECK_THAT(open_dump.output, Catch::Contains("problem: no trailer: the file was not closed cleanly") &&
                                     Catch::Contains(" 0 failed"));
  }
  CHECK(evb.process->transition(bu(0), "halt").status == 200);  // Failed -> Halted: the BU can be set up again
  CHECK(evb.process->stop() == 0);
}

TEST_CASE("a BU whose open event file is removed under it fails when it closes that file, and its other files "
          "read back whole", "[evb][output][files]") {
  const std::string directory = scratch_directory() + "/evb-removed";
  const auto run = writing_slowly("evb-file-removed", directory, 1000000);  // a file a second
  InProcessEvb& evb = *run;
  REQUIRE(evb.process->wait_metric(bu(0), "files_closed", 1));
  std::string removed;
  REQUIRE(wait_until([&] {
    for (const std::string& file : files_in(directory, ".open"))
      if (::unlink(file.c_str()) == 0) removed = file;  // else renamed meanwhile: the next one
    return !removed.empty();
  }));
  const bool failed = wait_until([&] { return evb.state(bu(0)) == "Failed"; }, std::chrono::seconds(30));
  INFO(evb.process->output());
  REQUIRE(failed);
  CHECK_THAT(evb.reason(bu(0)), Catch::Contains(removed) && Catch::Contains("was removed while being written"));
  CHECK(evb.process->running());
  const std::vector<std::string> closed = files_in(directory, ".daqx");
  CHECK(closed.size() >= 1);
  CHECK(files_in(directory, ".open").empty());  // nothing more written after the failure
  const ProcessResult dump = dump_event_files(closed);
  INFO(dump.output);
  CHECK(dump.exit_code == 0);
  CHECK(evb.process->transition(bu(0), "halt").status == 200);  // Failed -> Halted: the BU can be set up again
  CHECK(evb.process->stop() == 0);
}

TEST_CASE("a BU whose open event file is removed and not closed before the run stops fails the stop with the reason",
          "[evb][output][files]") {
  const std::string directory = scratch_directory() + "/evb-removed-at-stop";
  const auto run = writing_slowly("evb-file-removed-at-stop", directory, 1000000000);  // closed only by the stop
  InProcessEvb& evb = *run;
  REQUIRE(evb.process->wait_metric(bu(0), "output_events", 10));
  const std::vector<std::string> open = files_in(directory, ".open");
  REQUIRE(open.size() == 1);
  REQUIRE(::unlink(open.front().c_str()) == 0);
  // The launcher's order: the EvM stops (and drains) first, the BU last.
  for (std::uint32_t tid : {kEvm, ru(1), ru(0)}) REQUIRE(evb.process->transition(tid, "stop").status == 200);
  CHECK(evb.process->transition(bu(0), "stop").status != 200);
  CHECK(evb.state(bu(0)) == "Failed");
  CHECK_THAT(evb.reason(bu(0)), Catch::Contains(open.front()) && Catch::Contains("was removed while being written"));
  CHECK(files_in(directory, "").empty());
  CHECK(evb.process->transition(bu(0), "halt").status == 200);
  CHECK(evb.process->stop() == 0);
}

TEST_CASE("a BU stopped on its own while its EvM still assigns events and its output writes slowly stops after its "
          "bounded wait, with its file closed whole, and a context-wide stop then brings down the rest",
          "[evb][output][files]") {
  const std::string directory = scratch_directory() + "/evb-bu-stopped-alone";
  const auto run = writing_slowly("evb-bu-stopped-alone", directory, 1000000000);  // closed only by the stop
  InProcessEvb& evb = *run;
  REQUIRE(evb.process->wait_metric(bu(0), "output_events", 10));
  // The EvM goes on assigning events to this BU while it stops, and 2 MB/s never empties its output queue: the
  // stop used to wait for an empty queue and never returned.
  const auto asked = Clock::now();
  const daqx::HttpReply stopped = evb.process->transition(bu(0), "stop");
  INFO(stopped.body << evb.process->output());
  CHECK(stopped.status == 200);
  CHECK(Clock::now() - asked < std::chrono::seconds(9));  // the 5 s wait for the backlog, then what is left goes back
  CHECK(evb.state(bu(0)) == "Configured");
  CHECK(files_in(directory, ".open").empty());
  const std::vector<std::string> closed = files_in(directory, ".daqx");
  REQUIRE(closed.size() == 1);
  const ProcessResult dump = dump_event_files(closed);
  INFO(dump.output);
  CHECK(dump.exit_code == 0);
  CHECK(evb.process->transition("stop").status == 200);  // the EvM and RUs, still Enabled
  CHECK(evb.process->transition("halt").status == 200);
  CHECK(evb.process->stop() == 0);
}
