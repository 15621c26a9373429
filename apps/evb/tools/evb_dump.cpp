// daqx-evb-dump: reads the BU's event files, or with --follow a BU's event stream through its control port, checks
// their structure (and with --verify the synthetic super-fragments of test mode) and prints a summary per file or
// stream. Format and usage: docs/evb-files.md; the stream: docs/monitoring.md, "External subscribers".
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <istream>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/apps/text.hpp"
#include "daqx/control/control_client.hpp"
#include "daqx/evb/consumer.hpp"
#include "daqx/services/number_text.hpp"
#include "daqx/services/version.hpp"
#include "files/event_file_reader.hpp"
#include "files/event_record_check.hpp"
#include "files/event_stream_reader.hpp"

namespace {

using namespace daqx::evb;

constexpr std::size_t kProblemsShown = 10;  // per file, so a bad file does not flood the terminal
// The control port writes a keep-alive record every second to an idle stream: this long without a byte, the
// stream (or the way to it) is gone.
constexpr auto kFollowSilence = std::chrono::seconds(10);

void usage(std::FILE* out, const char* program) {
  std::fprintf(out,
               "usage: %s [--verify] [--events] FILE...\n"
               "       %s [--verify] [--events] [--count N] [--token-file FILE] [--ca-file FILE] --follow URL\n"
               "       %s --version | --help\n"
               "Reads event files written by the BU, checks their structure and prints a summary per file.\n"
               "With --follow, reads a BU's event stream through its executive's control port instead, checks\n"
               "every event as a file's and prints a summary at the end.\n"
               "  --verify           also check every fragment as a test-mode super-fragment (headers, sizes,\n"
               "                     CRC-32C)\n"
               "  --events           print one line per event\n"
               "  --follow URL       subscribe to a stream, URL like\n"
               "                     http://HOST:PORT/api/applications/TID/streams/events?policy=sample:10\n"
               "                     (policy: docs/monitoring.md; none: drop-newest)\n"
               "  --count N          with --follow: stop after N events (else at the end of the stream)\n"
               "  --token-file FILE  with --follow: the bearer token, where the port asks for one on reads (else\n"
               "                     $DAQX_TOKEN_FILE)\n"
               "  --ca-file FILE     with --follow to https://: the CA the port's certificate chains to (else\n"
               "                     $DAQX_CA_FILE)\n"
               "Exit status: 0 all files good (--follow: N events, or all up to the end of the stream, good),\n"
               "1 a file is damaged, not closed cleanly or fails --verify (--follow: a damaged record, a refusal,\n"
               "the connection lost), 2 usage error.\n",
               program, program, program);
}

std::string utc_time(std::uint64_t ns) {
  const auto seconds = static_cast<time_t>(ns / 1000000000u);
  tm parts{};
  if (gmtime_r(&seconds, &parts) == nullptr) return "?";
  char text[64];
  const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
  std::snprintf(text + length, sizeof text - length, ".%09lluZ",
                static_cast<unsigned long long>(ns % 1000000000u));
  return text;
}

std::string flag_names(std::uint32_t flags) {
  if (flags == 0) return "-";
  std::string names;
  auto add = [&names](std::string_view name) {
    if (!names.empty()) names.push_back(',');
    names.append(name);
  };
  if (flags & event_flags::incomplete) add("incomplete");
  if (flags & event_flags::corrupt) add("corrupt");
  if (flags & ~(event_flags::incomplete | event_flags::corrupt)) {
    char other[16];
    std::snprintf(other, sizeof other, "0x%x", flags & ~(event_flags::incomplete | event_flags::corrupt));
    add(other);
  }
  return names;
}

struct Options {
  bool verify = false;
  bool events = false;
  std::vector<std::string> files;
  std::string follow;           // --follow URL; "" reads files
  std::uint64_t count = 0;      // --follow: events to read; 0: up to the end of the stream
  daqx::ControlAccess::Files access;  // --token-file, --ca-file
};

// The counts and checks of the events read, a file's or a stream's.
class EventTally {
 public:
  explicit EventTally(const Options& options) : options_(options) {}

  // Checks one event (with --verify) and prints its line (with --events); `where` ends its line, e.g. its offset.
  void add(const EventFileRecord& record, const std::string& where) {
    ++events_;
    if (events_ == 1) first_ = record.event;
    last_ = record.event;
    if (record.flags == 0) ++clean_;
    if (record.flags & event_flags::incomplete) ++incomplete_;
    if (record.flags & event_flags::corrupt) ++corrupt_;
    if (record.flags & ~(event_flags::incomplete | event_flags::corrupt)) ++other_;
    std::uint64_t record_payload = 0;
    for (const auto& fragment : record.fragments) record_payload += fragment.bytes.size();
    fragments_ += record.fragments.size();
    std::string verdict;
    if (options_.verify) {
      RecordVerdict check = verify_event_record(record);
      verified_ += check.checked;
      // A record flagged corrupt holds what was built, faithfully: its failures are counted apart.
      (check.flagged ? failed_flagged_ : failed_) += check.failed;
      if (!check.problems.empty()) verdict = check.problems.front();
      for (std::string& line : check.problems)
        if (!check.flagged && problems_.size() < kProblemsShown) problems_.push_back(std::move(line));
    }
    payload_ += record_payload;
    if (options_.events) {
      std::printf("  event %llu  flags %s  fragments %zu  bytes %llu  %s%s%s\n",
                  static_cast<unsigned long long>(record.event), flag_names(record.flags).c_str(),
                  record.fragments.size(), static_cast<unsigned long long>(record_payload), where.c_str(),
                  verdict.empty() ? "" : "  FAILED: ", verdict.c_str());
    }
  }

  // "events N (first F, last L), fragments ..., bytes B (fragment bytes P)", the flags and --verify's lines.
  void print(std::uint64_t bytes) const {
    std::printf("  events %llu", static_cast<unsigned long long>(events_));
    if (events_ > 0) {
      std::printf(" (first %llu, last %llu)", static_cast<unsigned long long>(first_),
                  static_cast<unsigned long long>(last_));
    }
    std::printf(", fragments %llu, bytes %llu (fragment bytes %llu)\n", static_cast<unsigned long long>(fragments_),
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(payload_));
    std::printf("  flags: none %llu, incomplete %llu, corrupt %llu, other %llu\n",
                static_cast<unsigned long long>(clean_), static_cast<unsigned long long>(incomplete_),
                static_cast<unsigned long long>(corrupt_), static_cast<unsigned long long>(other_));
    if (!options_.verify) return;
    std::printf("  verify: %llu fragments checked, %llu failed", static_cast<unsigned long long>(verified_),
                static_cast<unsigned long long>(failed_));
    if (failed_flagged_ > 0) {
      std::printf(", %llu more failed in events flagged corrupt", static_cast<unsigned long long>(failed_flagged_));
    }
    std::printf("\n");
    for (const auto& problem : problems_) std::printf("    %s\n", problem.c_str());
    if (failed_ > problems_.size()) {
      std::printf("    ... %llu more\n", static_cast<unsigned long long>(failed_ - problems_.size()));
    }
  }

  std::uint64_t events() const noexcept { return events_; }
  bool verified_good() const noexcept { return failed_ == 0; }

 private:
  const Options& options_;
  std::uint64_t events_ = 0, first_ = 0, last_ = 0;
  std::uint64_t payload_ = 0, fragments_ = 0;
  std::uint64_t clean_ = 0, incomplete_ = 0, corrupt_ = 0, other_ = 0;
  std::uint64_t verified_ = 0, failed_ = 0, failed_flagged_ = 0;
  std::vector<std::string> problems_;
};

// Prints one file's summary; returns whether it is good.
bool dump(const std::string& path, const Options& options) {
  EventFile file;
  try {
    file = read_event_file(path);
  } catch (const std::exception& error) {
    std::printf("%s\n  problem: %s\n  result: FAILED\n", path.c_str(), error.what());
    return false;
  }

  std::printf("%s\n", path.c_str());
  if (file.version != 0) {
    std::printf("  run %u, builder %u, sequence %u, format %u, run number %llu, created %s", file.run, file.builder,
                file.sequence, file.version, static_cast<unsigned long long>(file.run_number),
                utc_time(file.created_ns).c_str());
    if (file.has_trailer) std::printf(", closed %s", utc_time(file.trailer.closed_ns).c_str());
    std::printf("\n");
  }

  EventTally tally(options);
  for (const auto& record : file.records) {
    tally.add(record, "offset " + std::to_string(record.offset));
  }
  tally.print(file.data.size());
  if (!file.problem.empty()) std::printf("  problem: %s\n", file.problem.c_str());
  const bool good = file.ok() && tally.verified_good();
  std::printf("  result: %s\n", good ? "ok" : "FAILED");
  return good;
}


// Reads the stream at options.follow until options.count events (or its end); prints its summary; returns whether
// everything read is good.
bool follow(const Options& options) {
  // The request's target: the URL from the first '/' after its host on (ControlClient takes the host and port).
  const std::size_t host = options.follow.find("://");
  const std::size_t target = options.follow.find('/', host == std::string::npos ? 0 : host + 3);
  if (host == std::string::npos || target == std::string::npos) {
    throw std::invalid_argument("not a stream's URL (http://HOST:PORT/api/applications/TID/streams/NAME?policy=P)");
  }
  std::printf("%s\n", options.follow.c_str());
  auto failed = [](const std::string& problem) {
    std::printf("  problem: %s\n  result: FAILED\n", problem.c_str());
    return false;
  };
  daqx::SentControlRequest request =
      daqx::ControlClient(options.follow, kFollowSilence, daqx::ControlAccess::from(nullptr, options.access))
          .send("GET", options.follow.substr(target), "");
  std::istream* body = nullptr;
  const daqx::HttpReply head = request.receive_head(kFollowSilence, body);
  if (head.status != 200 || body == nullptr) {
    return failed(head.answered() ? daqx::apps::concatenate({"refused: ", std::to_string(head.status), " ", head.body})
                                  : "no answer: " + head.body);
  }

  EventStreamReader reader;
  EventTally tally(options);
  std::uint64_t bytes = 0, keep_alives = 0, dropped = 0, first_sequence = 0, last_sequence = 0;
  std::string problem;
  bool ended = false;
  std::vector<char> piece(64 * 1024);
  while (problem.empty() && !ended && (options.count == 0 || tally.events() < options.count)) {
    // What one receive brought, no more (read() would wait for a whole piece): peek() waits for the next bytes
    // when none are buffered, readsome() takes those there are.
    if (body->rdbuf()->in_avail() <= 0 && body->peek() == std::char_traits<char>::eof() && body->bad()) {
      problem = "the stream broke off: the connection failed, or nothing came for " +
                std::to_string(kFollowSilence.count()) + " s";
      break;
    }
    const auto got = static_cast<std::size_t>(body->readsome(piece.data(), static_cast<std::streamsize>(piece.size())));
    if (got == 0) {
      ended = true;  // the last chunk: the publisher ended the subscription, or the executive stops
      if (reader.pending_bytes() > 0) {
        problem = daqx::apps::concatenate({"stream offset ", std::to_string(reader.offset()), ": the stream ended ",
                                           std::to_string(reader.pending_bytes()), " bytes into a record"});
      }
      break;
    }
    bytes += got;
    reader.feed(std::as_bytes(std::span<const char>(piece.data(), got)));
    while (auto event = reader.next()) {
      if (event->keep_alive()) {
        ++keep_alives;
        continue;
      }
      if (first_sequence == 0) first_sequence = event->header.sequence;
      last_sequence = event->header.sequence;
      dropped = event->header.dropped;
      tally.add(event->record, "record " + std::to_string(event->header.sequence));
      if (options.count != 0 && tally.events() == options.count) break;
    }
    if (!reader.problem().empty()) problem = reader.problem();
  }

  tally.print(bytes);
  std::printf("  records %llu..%llu, keep-alives %llu, dropped by the policy before the last %llu, %s\n",
              static_cast<unsigned long long>(first_sequence), static_cast<unsigned long long>(last_sequence),
              static_cast<unsigned long long>(keep_alives), static_cast<unsigned long long>(dropped),
              ended ? "the stream ended" : "stopped reading");
  if (!problem.empty()) return failed(problem);
  const bool good = tally.verified_good();
  std::printf("  result: %s\n", good ? "ok" : "FAILED");
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (!options_done && argument.size() > 1 && argument[0] == '-') {
      if (argument == "--verify") {
        options.verify = true;
      } else if (argument == "--events") {
        options.events = true;
      } else if (argument == "--follow" || argument == "--count" || argument == "--token-file" ||
                 argument == "--ca-file") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "%s: %s needs a value\n", argv[0], argv[i]);
          return 2;
        }
        const std::string value = argv[++i];
        if (argument == "--follow") {
          options.follow = value;
        } else if (argument == "--token-file") {
          options.access.token_file = value;
        } else if (argument == "--ca-file") {
          options.access.ca_file = value;
        } else {
          const auto count = daqx::numbers::parse_unsigned(value, 1);
          if (!count) {
            std::fprintf(stderr, "%s: --count: %s\n", argv[0], count.error.c_str());
            return 2;
          }
          options.count = *count;
        }
      } else if (argument == "--help" || argument == "-h") {
        usage(stdout, argv[0]);
        return 0;
      } else if (argument == "--version") {
        std::printf("daqx-evb-dump %s\n", daqx::version_line());
        return 0;
      } else if (argument == "--") {
        options_done = true;
      } else {
        std::fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
        usage(stderr, argv[0]);
        return 2;
      }
      continue;
    }
    options.files.emplace_back(argument);
  }
  if (!options.follow.empty()) {
    if (!options.files.empty()) {
      std::fprintf(stderr, "%s: --follow reads a stream, not files\n", argv[0]);
      return 2;
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a stream's lines as they come, not when a buffer fills
    try {
      return follow(options) ? 0 : 1;
    } catch (const std::exception& error) {  // a URL that is not one, a token file that cannot be used
      std::fprintf(stderr, "%s: --follow %s: %s\n", argv[0], options.follow.c_str(), error.what());
      return 2;
    }
  }
  if (options.count != 0 || !options.access.token_file.empty() || !options.access.ca_file.empty()) {
    std::fprintf(stderr, "%s: --count, --token-file and --ca-file go with --follow\n", argv[0]);
    return 2;
  }
  if (options.files.empty()) {
    usage(stderr, argv[0]);
    return 2;
  }
  bool all_good = true;
  for (const auto& path : options.files) all_good = dump(path, options) && all_good;
  return all_good ? 0 : 1;
}
