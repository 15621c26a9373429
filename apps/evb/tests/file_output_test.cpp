// The BU's event files as a specification: what a file holds, how it is named, rotated and paced, and how
// failures are reported. Every test writes into a fresh directory under /tmp and removes it.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "daqx/evb/consumer.hpp"
#include "files/event_file_reader.hpp"
#include "files/event_stream_reader.hpp"
#include "files/event_file_writer.hpp"

using namespace daqx::evb;
namespace fs = std::filesystem;

namespace {

// A directory of its own for one test, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/daqx-evb-files-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::byte content(std::uint64_t event, std::uint32_t contributor, std::size_t index) {
  return static_cast<std::byte>((event * 31 + contributor * 7 + index * 13 + index / 251) & 0xff);
}

// One event with its bytes owned here, and the view a writer takes of it: each fragment cut into pieces of
// at most piece_size bytes.
struct OwnedEvent {
  std::vector<std::vector<std::byte>> data;
  std::vector<std::vector<std::span<const std::byte>>> pieces;
  std::vector<EventRecordView::Fragment> fragments;
  EventRecordView view;

  OwnedEvent(std::uint32_t run, std::uint64_t event, std::uint32_t flags, const std::vector<std::size_t>& sizes,
             std::size_t piece_size) {
    data.resize(sizes.size());
    pieces.resize(sizes.size());
    for (std::size_t f = 0; f < sizes.size(); ++f) {
      const auto contributor = static_cast<std::uint32_t>(100 + f);
      data[f].resize(sizes[f]);
      for (std::size_t i = 0; i < sizes[f]; ++i) data[f][i] = content(event, contributor, i);
      for (std::size_t at = 0; at < sizes[f]; at += piece_size) {
        pieces[f].push_back(std::span<const std::byte>(data[f]).subspan(at, std::min(piece_size, sizes[f] - at)));
      }
      fragments.push_back({contributor, sizes[f], pieces[f]});
    }
    view.run = run;
    view.event = event;
    view.flags = flags;
    view.fragments = fragments;
  }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
};

bool same_bytes(std::span<const std::byte> a, const std::vector<std::byte>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

std::vector<std::string> files_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

FileOutputConfig config_for(const std::string& directory, std::uint64_t max_file_bytes = 1ull << 30,
                            double max_bytes_per_second = 0) {
  FileOutputConfig config;
  config.directory = directory;
  config.max_file_bytes = max_file_bytes;
  config.max_bytes_per_second = max_bytes_per_second;
  return config;
}

}  // namespace

// ---- content -------------------------------------------------------------------------------------------

TEST_CASE("events written are read back byte for byte with their run, event, flags and contributors",
          "[file_output]") {
  TempDir dir;
  const std::vector<std::vector<std::size_t>> shapes = {
      {24, 1000, 4096}, {0, 1, 7, 8, 9}, {65536 + 3}, {}, {17, 123457}};
  std::vector<std::unique_ptr<OwnedEvent>> events;
  {
    FileWriter writer(config_for(dir.path()), 42, 7);
    for (std::size_t e = 0; e < shapes.size(); ++e) {
      const std::uint32_t flags = e == 1 ? event_flags::incomplete : e == 4 ? event_flags::corrupt : 0;
      events.push_back(std::make_unique<OwnedEvent>(42, 1000 + e, flags, shapes[e], 1000 + e * 333));
      writer.write(events.back()->view);
    }
  }
  const auto file = read_event_file(dir / event_file_name(42, 7, 0));
  INFO(file.problem);
  REQUIRE(file.ok());
  REQUIRE(file.records.size() == shapes.size());
  for (std::size_t e = 0; e < shapes.size(); ++e) {
    const auto& record = file.records[e];
    const auto& written = *events[e];
    CHECK(record.run == 42);
    CHECK(record.event == written.view.event);
    CHECK(record.flags == written.view.flags);
    REQUIRE(record.fragments.size() == shapes[e].size());
    for (std::size_t f = 0; f < shapes[e].size(); ++f) {
      CHECK(record.fragments[f].contributor == 100 + f);
      CHECK(same_bytes(record.fragments[f].bytes, written.data[f]));
    }
  }
}

TEST_CASE("the file header names the format, the run, the builder, the sequence and the creation time",
          "[file_output]") {
  TempDir dir;
  const auto before = std::chrono::system_clock::now();
  {
    FileWriter writer(config_for(dir.path()), 123456, 4242);
    OwnedEvent event(123456, 1, 0, {100}, 100);
    writer.write(event.view);
  }
  const auto file = read_event_file(dir / "run123456_bu4242_0000.daqx");
  REQUIRE(file.ok());
  REQUIRE(file.data.size() >= 64);
  CHECK(std::memcmp(file.data.data(), "DAQXEVB1", 8) == 0);
  CHECK(file.version == kEventFileVersion);
  CHECK(file.run == 123456);
  CHECK(file.builder == 4242);
  CHECK(file.sequence == 0);
  const auto created = std::chrono::system_clock::time_point(std::chrono::nanoseconds(file.created_ns));
  CHECK(created >= before - std::chrono::seconds(1));
  CHECK(created <= std::chrono::system_clock::now() + std::chrono::seconds(1));
}

TEST_CASE("the file header carries the operator's run number at offset 40, and 0 when the run had none",
          "[file_output]") {
  TempDir dir;
  {
    FileWriter numbered(config_for(dir.path()), 3, 7, 9007199254740991ull);
    OwnedEvent event(3, 1, 0, {100}, 100);
    numbered.write(event.view);
    FileWriter unnumbered(config_for(dir.path()), 4, 7);
    OwnedEvent other(4, 1, 0, {100}, 100);
    unnumbered.write(other.view);
  }
  const auto file = read_event_file(dir / event_file_name(3, 7, 0));
  REQUIRE(file.ok());
  CHECK(file.version == 2);
  CHECK(file.run_number == 9007199254740991ull);
  for (int i = 0; i < 8; ++i)  // little-endian, as every field
    CHECK(std::to_integer<int>(file.data[40 + i]) == (i < 6 ? 0xff : i == 6 ? 0x1f : 0));
  const auto without = read_event_file(dir / event_file_name(4, 7, 0));
  REQUIRE(without.ok());
  CHECK(without.run_number == 0);
}

TEST_CASE("a version 1 file still reads, with run number 0", "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path()), 8, 2, 77);
    OwnedEvent event(8, 1, 0, {64}, 64);
    writer.write(event.view);
  }
  const fs::path path = dir / event_file_name(8, 2, 0);
  {
    // What a version 1 writer left: version 1 and the run number's bytes reserved, zero.
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    const char version[4] = {1, 0, 0, 0};
    const char zeros[8] = {};
    file.seekp(8);
    file.write(version, 4);
    file.seekp(40);
    file.write(zeros, 8);
  }
  const auto file = read_event_file(path);
  INFO(file.problem);
  REQUIRE(file.ok());
  CHECK(file.version == 1);
  CHECK(file.run_number == 0);
  CHECK(file.records.size() == 1);
}

TEST_CASE("a file of a version newer than the reader's is refused, naming the versions it knows",
          "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path()), 8, 2);
    OwnedEvent event(8, 1, 0, {64}, 64);
    writer.write(event.view);
  }
  const fs::path path = dir / event_file_name(8, 2, 0);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    const char version[4] = {3, 0, 0, 0};
    file.seekp(8);
    file.write(version, 4);
  }
  const auto file = read_event_file(path);
  CHECK_THAT(file.problem, Catch::Contains("format version 3") && Catch::Contains("1 to 2"));
}

TEST_CASE("a record is its header, a fragment table and each fragment padded to 8 bytes, little-endian",
          "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path()), 5, 9);
    OwnedEvent event(5, 0x0102030405060708ull, event_flags::incomplete, {3, 8}, 2);
    writer.write(event.view);
  }
  const auto file = read_event_file(dir / event_file_name(5, 9, 0));
  REQUIRE(file.ok());
  const std::byte* record = &file.data[kFileHeaderBytes];
  const std::uint8_t expected_head[] = {'E', 'V', 'N', 'T', 1, 0, 0, 0,  8, 7, 6, 5, 4, 3, 2, 1,
                                        5,   0,   0,   0,   2, 0, 0, 0,  80, 0, 0, 0, 0, 0, 0, 0};
  CHECK(std::memcmp(record, expected_head, sizeof expected_head) == 0);
  const std::uint8_t expected_table[] = {100, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
                                         101, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0};
  CHECK(std::memcmp(record + 32, expected_table, sizeof expected_table) == 0);
  CHECK(record[64 + 3] == std::byte{0});  // padding of the 3-byte fragment
  CHECK(record[72] == content(0x0102030405060708ull, 101, 0));
  const std::byte* trailer = record + 80;
  CHECK(std::memcmp(trailer, "TRLR", 4) == 0);
  CHECK(file.data.size() == kFileHeaderBytes + 80 + kTrailerRecordBytes);
}

TEST_CASE("the trailer counts the events and bytes of its file and names its first and last event",
          "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path()), 1, 2);
    for (std::uint64_t e = 10; e < 20; ++e) {
      OwnedEvent event(1, e, 0, {500, 64}, 128);
      writer.write(event.view);
    }
  }
  const std::string path = dir / event_file_name(1, 2, 0);
  const auto file = read_event_file(path);
  REQUIRE(file.ok());
  CHECK(file.trailer.events == 10);
  CHECK(file.trailer.file_bytes == fs::file_size(path));
  CHECK(file.trailer.first_event == 10);
  CHECK(file.trailer.last_event == 19);
  CHECK(file.trailer.closed_ns >= file.created_ns);
}

TEST_CASE("an event of more pieces than IOV_MAX is written whole", "[file_output]") {
  TempDir dir;
  const long iov_max = ::sysconf(_SC_IOV_MAX);
  const std::size_t pieces_wanted = static_cast<std::size_t>(iov_max > 0 ? iov_max : 1024) * 3 + 17;
  // Pieces of 1..7 bytes: most fragments need padding, and partial iovecs are likely across the batches.
  OwnedEvent event(3, 77, 0, {pieces_wanted * 3 + 5, 4099}, 3);
  REQUIRE(event.pieces[0].size() > static_cast<std::size_t>(iov_max));
  {
    FileWriter writer(config_for(dir.path()), 3, 1);
    writer.write(event.view);
  }
  const auto file = read_event_file(dir / event_file_name(3, 1, 0));
  INFO(file.problem);
  REQUIRE(file.ok());
  REQUIRE(file.records.size() == 1);
  REQUIRE(file.records[0].fragments.size() == 2);
  CHECK(same_bytes(file.records[0].fragments[0].bytes, event.data[0]));
  CHECK(same_bytes(file.records[0].fragments[1].bytes, event.data[1]));
}

TEST_CASE("pieces that do not add up to the fragment's size are refused before anything is written",
          "[file_output]") {
  TempDir dir;
  FileWriter writer(config_for(dir.path()), 1, 1);
  OwnedEvent good(1, 1, 0, {100}, 10);
  writer.write(good.view);
  OwnedEvent bad(1, 2, 0, {100}, 10);
  bad.fragments[0].size = 101;
  CHECK_THROWS_WITH(writer.write(bad.view), Catch::Contains("event 2") && Catch::Contains("101"));
  writer.close();
  const auto file = read_event_file(dir / event_file_name(1, 1, 0));
  CHECK(file.ok());
  CHECK(file.records.size() == 1);
}

TEST_CASE("an event of another run is refused: a file holds one run", "[file_output]") {
  TempDir dir;
  FileWriter writer(config_for(dir.path()), 1, 1);
  OwnedEvent other_run(2, 1, 0, {100}, 10);
  CHECK_THROWS_WITH(writer.write(other_run.view), Catch::Contains("run 2") && Catch::Contains("run 1"));
  CHECK(writer.stats().events == 0);
}

// ---- naming and closing --------------------------------------------------------------------------------

TEST_CASE("a file is written as NAME.open and renamed to NAME when closed", "[file_output]") {
  TempDir dir;
  FileWriter writer(config_for(dir.path()), 42, 7);
  OwnedEvent event(42, 1, 0, {1000}, 1000);
  writer.write(event.view);
  CHECK(writer.stats().current_file == dir / "run000042_bu7_0000.daqx.open");
  CHECK(files_in(dir.path()) == std::vector<std::string>{"run000042_bu7_0000.daqx.open"});
  writer.close();
  CHECK(writer.stats().current_file.empty());
  CHECK(files_in(dir.path()) == std::vector<std::string>{"run000042_bu7_0000.daqx"});
  CHECK(writer.stats().files_closed == 1);
}

TEST_CASE("a file removed while written fails its close, naming it: the next write opens a new file", "[file_output]") {
  TempDir dir;
  FileWriter writer(config_for(dir.path()), 42, 7);
  OwnedEvent event(42, 1, 0, {1000}, 1000);
  writer.write(event.view);
  REQUIRE(::unlink((dir / "run000042_bu7_0000.daqx.open").c_str()) == 0);
  writer.write(event.view);  // into the nameless file: nothing says so yet
  CHECK_THROWS_WITH(writer.close(), Catch::Contains(dir / "run000042_bu7_0000.daqx.open") &&
                                        Catch::Contains("was removed while being written") &&
                                        Catch::Contains("2 events are lost"));
  CHECK(writer.stats().files_closed == 0);
  CHECK(files_in(dir.path()).empty());
  writer.write(event.view);
  writer.close();
  CHECK(files_in(dir.path()) == std::vector<std::string>{"run000042_bu7_0001.daqx"});
}

TEST_CASE("an output directory is checked by a file created and removed there", "[file_output]") {
  TempDir dir;
  check_output_directory(dir / "new/run7");  // created, parents included
  CHECK(fs::is_directory(dir / "new/run7"));
  CHECK(files_in(dir / "new/run7").empty());  // the probe is gone
  std::ofstream(dir / "plain") << "a file, not a directory";
  CHECK_THROWS_WITH(check_output_directory(dir / "plain"), Catch::Contains(dir / "plain") &&
                                                              Catch::Contains("Not a directory"));
  // /proc takes no new file, even from root.
  CHECK_THROWS_WITH(check_output_directory("/proc"), Catch::Contains("cannot write event files in /proc"));
}

TEST_CASE("a write after close opens the next file in sequence", "[file_output]") {
  TempDir dir;
  FileWriter writer(config_for(dir.path()), 42, 7);
  OwnedEvent event(42, 1, 0, {1000}, 1000);
  writer.write(event.view);
  writer.close();
  writer.close();  // nothing open: nothing happens
  writer.write(event.view);
  writer.close();
  CHECK(files_in(dir.path()) ==
        std::vector<std::string>{"run000042_bu7_0000.daqx", "run000042_bu7_0001.daqx"});
  CHECK(read_event_file(dir / "run000042_bu7_0001.daqx").sequence == 1);
}

TEST_CASE("the destructor closes the current file", "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path()), 8, 3);
    OwnedEvent event(8, 1, 0, {10}, 10);
    writer.write(event.view);
  }
  CHECK(files_in(dir.path()) == std::vector<std::string>{"run000008_bu3_0000.daqx"});
  CHECK(read_event_file(dir / "run000008_bu3_0000.daqx").ok());
}

TEST_CASE("no file is created before the first event", "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path()), 8, 3);
    writer.close();
  }
  CHECK(files_in(dir.path()).empty());
}

TEST_CASE("a file being written reads as not closed cleanly, with the events written so far", "[file_output]") {
  TempDir dir;
  FileWriter writer(config_for(dir.path()), 8, 3);
  for (std::uint64_t e = 1; e <= 3; ++e) {
    OwnedEvent event(8, e, 0, {100, 200}, 64);
    writer.write(event.view);
  }
  const auto file = read_event_file(writer.stats().current_file);
  CHECK_FALSE(file.ok());
  CHECK_FALSE(file.has_trailer);
  CHECK_THAT(file.problem, Catch::Contains("not closed cleanly"));
  CHECK(file.records.size() == 3);
}

TEST_CASE("an existing file of the same name is never overwritten: the writer takes the next sequence",
          "[file_output]") {
  TempDir dir;
  std::ofstream(dir / "run000009_bu1_0000.daqx") << "from an earlier attempt";
  std::ofstream(dir / "run000009_bu1_0001.daqx.open") << "from a writer that crashed";
  {
    FileWriter writer(config_for(dir.path()), 9, 1);
    OwnedEvent event(9, 1, 0, {10}, 10);
    writer.write(event.view);
  }
  CHECK(files_in(dir.path()) == std::vector<std::string>{"run000009_bu1_0000.daqx", "run000009_bu1_0001.daqx.open",
                                                         "run000009_bu1_0002.daqx"});
  CHECK(fs::file_size(dir / "run000009_bu1_0000.daqx") == std::strlen("from an earlier attempt"));
}

// ---- rotation ------------------------------------------------------------------------------------------

TEST_CASE("a file is closed once an event makes it reach the maximum size, and no event is split",
          "[file_output]") {
  TempDir dir;
  constexpr std::uint64_t kMax = 10000;
  std::uint64_t bytes_written = 0;
  {
    FileWriter writer(config_for(dir.path(), kMax), 11, 2);
    for (std::uint64_t e = 1; e <= 20; ++e) {
      OwnedEvent event(11, e, 0, {1000 + e * 97, 500}, 256);
      writer.write(event.view);
    }
    CHECK(writer.stats().events == 20);
    bytes_written = writer.stats().bytes + kTrailerRecordBytes;  // the destructor's trailer still to come
  }
  const auto names = files_in(dir.path());
  REQUIRE(names.size() >= 3);
  std::uint64_t next_event = 1;
  std::uint64_t bytes_on_disk = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(names[i] == event_file_name(11, 2, static_cast<std::uint32_t>(i)));
    const auto file = read_event_file(dir / names[i]);
    INFO(names[i] << ": " << file.problem);
    REQUIRE(file.ok());
    REQUIRE_FALSE(file.records.empty());
    for (const auto& record : file.records) CHECK(record.event == next_event++);
    const std::uint64_t before_trailer = file.data.size() - kTrailerRecordBytes;
    if (i + 1 < names.size()) {
      CHECK(before_trailer >= kMax);                              // full ...
      CHECK(before_trailer - file.records.back().bytes < kMax);  // ... by its last event
    }
    bytes_on_disk += file.data.size();
  }
  CHECK(next_event == 21);
  CHECK(bytes_on_disk == bytes_written);
}

TEST_CASE("an event larger than the maximum file size gets a file of its own", "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path(), 4096), 11, 2);
    for (std::uint64_t e = 1; e <= 3; ++e) {
      OwnedEvent event(11, e, 0, {10000}, 4096);
      writer.write(event.view);
    }
    CHECK(writer.stats().files_closed == 3);
  }
  const auto names = files_in(dir.path());
  REQUIRE(names.size() == 3);
  for (const auto& name : names) CHECK(read_event_file(dir / name).records.size() == 1);
}

// ---- pacing --------------------------------------------------------------------------------------------

TEST_CASE("a rate limit makes writing take at least as long as the limit allows", "[file_output][slow]") {
  TempDir dir;
  FileWriter writer(config_for(dir.path(), 1ull << 30, 40e6), 1, 1);
  OwnedEvent event(1, 1, 0, {64 * 1024}, 64 * 1024);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 64; ++i) writer.write(event.view);  // 4 MiB: 0.1 s at 40 MB/s
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed.count() >= 0.05);
}

TEST_CASE("without a rate limit writing does not sleep", "[file_output]") {
  TempDir dir;
  FileWriter writer(config_for(dir.path()), 1, 1);
  OwnedEvent event(1, 1, 0, {64 * 1024}, 64 * 1024);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 16; ++i) writer.write(event.view);  // 1 MiB
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed.count() < 5.0);  // generous: a slow sanitizer build on a busy machine
}

// ---- failures ------------------------------------------------------------------------------------------

TEST_CASE("missing directories are created, parents included", "[file_output]") {
  TempDir dir;
  const std::string nested = dir / "a/b/c";
  {
    FileWriter writer(config_for(nested), 1, 1);
    OwnedEvent event(1, 1, 0, {10}, 10);
    writer.write(event.view);
  }
  CHECK(files_in(nested) == std::vector<std::string>{event_file_name(1, 1, 0)});
}

TEST_CASE("a directory that cannot be created gives an error naming the path", "[file_output]") {
  TempDir dir;
  std::ofstream(dir / "plain") << "a file, not a directory";
  const std::string impossible = dir / "plain/sub";
  FileWriter writer(config_for(impossible), 1, 1);
  OwnedEvent event(1, 1, 0, {10}, 10);
  CHECK_THROWS_WITH(writer.write(event.view), Catch::Contains(dir / "plain") && Catch::Contains("Not a directory"));
}

TEST_CASE("a directory where no file can be created gives an error naming the file's path", "[file_output]") {
  // /proc refuses new files even to root; a read-only directory of our own shows the same for other users.
  std::vector<std::string> directories = {"/proc"};
  TempDir dir;
  if (::geteuid() != 0) {
    fs::create_directory(dir / "read-only");
    fs::permissions(dir / "read-only", fs::perms::owner_read | fs::perms::owner_exec);
    directories.push_back(dir / "read-only");
  }
  for (const auto& directory : directories) {
    FileWriter writer(config_for(directory), 1, 1);
    OwnedEvent event(1, 1, 0, {10}, 10);
    CHECK_THROWS_WITH(writer.write(event.view), Catch::Contains(directory + "/" + event_file_name(1, 1, 0)));
    CHECK(writer.stats().current_file.empty());
  }
}

TEST_CASE("a failed write names the file and leaves it ending at its last whole event", "[file_output]") {
  // A file size limit makes the kernel accept part of the event and then refuse the rest (EFBIG).
  TempDir dir;
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  const auto saved_handler = std::signal(SIGXFSZ, SIG_IGN);
  std::string message;
  FileOutputStats stats;
  {
    FileWriter writer(config_for(dir.path()), 1, 1);
    OwnedEvent small(1, 1, 0, {1000}, 100);
    writer.write(small.view);
    rlimit limited = saved;
    limited.rlim_cur = 64 * 1024;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
    OwnedEvent large(1, 2, 0, {256 * 1024}, 4096);
    try {
      writer.write(large.view);
    } catch (const std::runtime_error& error) {
      message = error.what();
    }
    writer.write(small.view);  // the file goes on after the failed event
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &saved) == 0);
    stats = writer.stats();
  }
  std::signal(SIGXFSZ, saved_handler);
  CHECK_THAT(message, Catch::Contains(dir / event_file_name(1, 1, 0)) && Catch::Contains("event 2"));
  CHECK(stats.events == 2);
  const auto file = read_event_file(dir / event_file_name(1, 1, 0));
  INFO(file.problem);
  REQUIRE(file.ok());
  REQUIRE(file.records.size() == 2);
  CHECK(file.records[0].event == 1);
  CHECK(file.records[1].event == 1);
}

// ---- reading -------------------------------------------------------------------------------------------

TEST_CASE("the reader names the offset of a damaged record", "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path()), 1, 1);
    for (std::uint64_t e = 1; e <= 3; ++e) {
      OwnedEvent event(1, e, 0, {100}, 100);
      writer.write(event.view);
    }
  }
  const std::string path = dir / event_file_name(1, 1, 0);
  const auto good = read_event_file(path);
  REQUIRE(good.ok());
  const auto second = good.records[1].offset;
  {
    std::fstream damage(path, std::ios::in | std::ios::out | std::ios::binary);
    damage.seekp(static_cast<std::streamoff>(second));
    damage.put('X');
  }
  const auto file = read_event_file(path);
  CHECK_FALSE(file.ok());
  CHECK_THAT(file.problem, Catch::Contains("offset " + std::to_string(second)));
  CHECK(file.records.size() == 1);
}

TEST_CASE("one record on its own (as the BU's stream sends it) parses as in its file, and one cut short or with a "
          "byte changed in its table is refused with the reason", "[file_output]") {
  TempDir dir;
  OwnedEvent event(5, 77, event_flags::incomplete, {24, 1001, 4096}, 500);
  {
    FileWriter writer(config_for(dir.path()), 5, 1);
    writer.write(event.view);
  }
  const auto file = read_event_file(dir / event_file_name(5, 1, 0));
  REQUIRE(file.ok());
  const EventFileRecord& in_file = file.records.front();
  std::vector<std::byte> alone(file.data.begin() + static_cast<std::ptrdiff_t>(in_file.offset),
                               file.data.begin() + static_cast<std::ptrdiff_t>(in_file.offset + in_file.bytes));
  EventFileRecord record;
  REQUIRE(parse_event_record(alone, 0, record).empty());
  CHECK(record.bytes == alone.size());
  CHECK(record.event == 77);
  CHECK(record.run == 5);
  CHECK(record.flags == event_flags::incomplete);
  REQUIRE(record.fragments.size() == 3);
  for (std::size_t f = 0; f < 3; ++f) {
    CHECK(record.fragments[f].contributor == 100 + f);
    CHECK(same_bytes(record.fragments[f].bytes, event.data[f]));
  }

  std::vector<std::byte> cut(alone.begin(), alone.end() - 8);
  CHECK_THAT(parse_event_record(cut, 0, record), Catch::Contains("runs past the end"));
  std::vector<std::byte> reserved = alone;
  reserved[kEventRecordHeaderBytes + 4] = std::byte{1};  // the first table entry's reserved field
  CHECK_THAT(parse_event_record(reserved, 0, record), Catch::Contains("fragment 0: reserved field not zero"));
  std::vector<std::byte> head_only(alone.begin(), alone.begin() + 20);
  CHECK_THAT(parse_event_record(head_only, 0, record), Catch::Contains("record header cut short"));
}

TEST_CASE("the reader refuses a file that is not an event file", "[file_output]") {
  TempDir dir;
  std::ofstream(dir / "other") << std::string(200, 'x');
  std::ofstream(dir / "short") << "DAQXEVB1";
  CHECK_THAT(read_event_file(dir / "other").problem, Catch::Contains("not an event file"));
  CHECK_THAT(read_event_file(dir / "short").problem, Catch::Contains("fewer than a file header"));
  CHECK_THROWS_WITH(read_event_file(dir / "missing"), Catch::Contains(dir / "missing"));
}

TEST_CASE("a trailer whose counts disagree with the records is reported", "[file_output]") {
  TempDir dir;
  {
    FileWriter writer(config_for(dir.path()), 1, 1);
    OwnedEvent event(1, 1, 0, {100}, 100);
    writer.write(event.view);
  }
  const std::string path = dir / event_file_name(1, 1, 0);
  const auto size = fs::file_size(path);
  {
    std::fstream damage(path, std::ios::in | std::ios::out | std::ios::binary);
    damage.seekp(static_cast<std::streamoff>(size - kTrailerRecordBytes + 8));
    damage.put('\x05');  // 5 events
  }
  const auto file = read_event_file(path);
  CHECK(file.has_trailer);
  CHECK_FALSE(file.ok());
  CHECK_THAT(file.problem, Catch::Contains("5 events"));
}

TEST_CASE("stats count events, bytes on disk and closed files", "[file_output]") {
  TempDir dir;
  FileOutputStats stats;
  {
    FileWriter writer(config_for(dir.path(), 5000), 1, 1);
    for (std::uint64_t e = 1; e <= 7; ++e) {
      OwnedEvent event(1, e, 0, {1500}, 700);
      writer.write(event.view);
    }
    writer.close();
    stats = writer.stats();
  }
  std::uint64_t on_disk = 0;
  for (const auto& name : files_in(dir.path())) on_disk += fs::file_size(dir / name);
  CHECK(stats.events == 7);
  CHECK(stats.bytes == on_disk);
  CHECK(stats.files_closed == files_in(dir.path()).size());
}

// ---- the same events streamed (daqx-evb-dump --follow) ----------------------------------------------------

namespace {

// The stream a subscriber gets of a file's events: each record's bytes after a stream record header numbered from
// `first`, a keep-alive after every third.
std::vector<std::byte> streamed(const EventFile& file, std::uint64_t first = 1) {
  std::vector<std::byte> out;
  auto append = [&out](const daqx::streams::RecordHeader& header, std::span<const std::byte> bytes) {
    const std::size_t at = out.size();
    out.resize(at + daqx::streams::kRecordHeaderBytes);
    daqx::streams::encode(header, out.data() + at);
    out.insert(out.end(), bytes.begin(), bytes.end());
  };
  std::uint64_t sequence = first;
  for (const auto& record : file.records) {
    append({sequence, record.event, 2 * sequence, static_cast<std::uint32_t>(record.bytes)},
           file.data.subspan(record.offset, record.bytes));
    if (sequence++ % 3 == 0) append({}, {});
  }
  return out;
}

struct StreamRead {
  std::vector<StreamedEvent> events;
  std::size_t keep_alives = 0;
  std::string problem;
};

StreamRead read_stream(std::span<const std::byte> bytes, std::size_t piece) {
  StreamRead read;
  EventStreamReader reader;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    reader.feed(bytes.subspan(at, std::min(piece, bytes.size() - at)));
    while (auto event = reader.next()) {
      if (event->keep_alive()) {
        ++read.keep_alives;
      } else {
        read.events.push_back(std::move(*event));
      }
    }
  }
  read.problem = reader.problem();
  if (read.problem.empty() && reader.pending_bytes() != 0) read.problem = "a record cut short";
  return read;
}

// A file of `count` events of two fragments each, read back.
EventFile written_events(const TempDir& dir, std::uint64_t count) {
  {
    FileWriter writer(config_for(dir.path()), 6, 2);
    for (std::uint64_t e = 1; e <= count; ++e) {
      OwnedEvent event(6, e, e % 5 == 0 ? event_flags::incomplete : 0, {static_cast<std::size_t>(e * 13), 64}, 100);
      writer.write(event.view);
    }
  }
  const auto names = files_in(dir.path());
  REQUIRE(names.size() == 1);
  return read_event_file(dir / names[0]);
}

}  // namespace

TEST_CASE("a streamed event is the file's record: read from pieces of any size, every event and fragment whole",
          "[file_output][stream]") {
  TempDir dir;
  const EventFile file = written_events(dir, 20);
  REQUIRE(file.ok());
  const std::vector<std::byte> bytes = streamed(file);
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{40}, std::size_t{41}, std::size_t{4096},
                            bytes.size()}) {
    INFO("pieces of " << piece);
    const StreamRead read = read_stream(bytes, piece);
    REQUIRE(read.problem.empty());
    REQUIRE(read.events.size() == 20);
    CHECK(read.keep_alives == 6);
    for (std::size_t i = 0; i < read.events.size(); ++i) {
      const StreamedEvent& got = read.events[i];
      const EventFileRecord& want = file.records[i];
      CHECK(got.header.sequence == i + 1);
      CHECK(got.header.dropped == 2 * (i + 1));
      CHECK(got.record.event == want.event);
      CHECK(got.record.flags == want.flags);
      REQUIRE(got.record.fragments.size() == want.fragments.size());
      for (std::size_t f = 0; f < want.fragments.size(); ++f) {
        CHECK(got.record.fragments[f].contributor == want.fragments[f].contributor);
        CHECK(std::equal(got.record.fragments[f].bytes.begin(), got.record.fragments[f].bytes.end(),
                         want.fragments[f].bytes.begin(), want.fragments[f].bytes.end()));
      }
    }
  }
}

TEST_CASE("a damaged stream is named where and why, and nothing after it is read", "[file_output][stream]") {
  TempDir dir;
  const EventFile file = written_events(dir, 4);
  REQUIRE(file.ok());
  const std::vector<std::byte> good = streamed(file);
  const std::size_t second = daqx::streams::kRecordHeaderBytes + file.records[0].bytes;  // the second record

  auto problem_of = [](std::vector<std::byte> bytes) {
    const StreamRead read = read_stream(bytes, 5);
    return read.problem;
  };
  {
    auto bytes = good;
    bytes[second] = std::byte{0};  // its magic
    CHECK_THAT(problem_of(bytes), Catch::Contains("stream offset " + std::to_string(second)) &&
                                      Catch::Contains("no STRM magic"));
  }
  {
    auto bytes = good;
    bytes[second + daqx::streams::kRecordHeaderBytes] = std::byte{0};  // the event record's magic
    CHECK_THAT(problem_of(bytes), Catch::Contains("record 2: ") && Catch::Contains("no record here"));
  }
  {
    auto bytes = good;
    bytes[second + 8] = std::byte{3};  // record 3 after record 1
    CHECK_THAT(problem_of(bytes), Catch::Contains("record 3 after record 1"));
  }
  {
    auto bytes = good;
    bytes[second + 24] = std::byte{0};  // fewer dropped than the record before
    CHECK_THAT(problem_of(bytes), Catch::Contains("events dropped, fewer than"));
  }
  {
    // A length that holds the event and 8 bytes more: the event record does not fill its stream record.
    const std::vector<std::byte> one(file.data.begin() + static_cast<std::ptrdiff_t>(file.records[0].offset),
                                     file.data.begin() +
                                         static_cast<std::ptrdiff_t>(file.records[0].offset + file.records[0].bytes));
    std::vector<std::byte> bytes(daqx::streams::kRecordHeaderBytes);
    daqx::streams::encode({1, 1, 0, static_cast<std::uint32_t>(one.size() + 8)}, bytes.data());
    bytes.insert(bytes.end(), one.begin(), one.end());
    bytes.resize(bytes.size() + 8);
    CHECK_THAT(problem_of(bytes), Catch::Contains("hold an event record of"));
  }
  {
    auto bytes = good;
    bytes.resize(bytes.size() - 3);
    CHECK(problem_of(bytes) == "a record cut short");
  }
}
