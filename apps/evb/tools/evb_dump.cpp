// daqx-evb-dump: reads the BU's event files, checks their structure (and with --verify the synthetic
// super-fragments of test mode) and prints a summary per file. Format and usage: docs/evb-files.md.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daqx/evb/consumer.hpp"
#include "daqx/services/version.hpp"
#include "files/event_file_reader.hpp"
#include "files/event_record_check.hpp"

namespace {

using namespace daqx::evb;

constexpr std::size_t kProblemsShown = 10;  // per file, so a bad file does not flood the terminal

void usage(std::FILE* out, const char* program) {
  std::fprintf(out,
               "usage: %s [--verify] [--events] FILE...\n"
               "       %s --version | --help\n"
               "Reads event files written by the BU, checks their structure and prints a summary per file.\n"
               "  --verify  also check every fragment as a test-mode super-fragment (headers, sizes, CRC-32C)\n"
               "  --events  print one line per event\n"
               "Exit status: 0 all files good, 1 a file is damaged, not closed cleanly or fails --verify,\n"
               "2 usage error.\n",
               program, program);
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

  std::uint64_t payload = 0, fragments = 0;
  std::uint64_t clean = 0, incomplete = 0, corrupt = 0, other = 0;
  std::uint64_t verified = 0, failed = 0, failed_flagged = 0;
  std::vector<std::string> problems;
  for (const auto& record : file.records) {
    if (record.flags == 0) ++clean;
    if (record.flags & event_flags::incomplete) ++incomplete;
    if (record.flags & event_flags::corrupt) ++corrupt;
    if (record.flags & ~(event_flags::incomplete | event_flags::corrupt)) ++other;
    std::uint64_t record_payload = 0;
    for (const auto& fragment : record.fragments) record_payload += fragment.bytes.size();
    fragments += record.fragments.size();
    std::string verdict;
    if (options.verify) {
      RecordVerdict check = verify_event_record(record);
      verified += check.checked;
      // A record flagged corrupt holds what was built, faithfully: its failures are counted apart.
      (check.flagged ? failed_flagged : failed) += check.failed;
      if (!check.problems.empty()) verdict = check.problems.front();
      for (std::string& line : check.problems)
        if (!check.flagged && problems.size() < kProblemsShown) problems.push_back(std::move(line));
    }
    payload += record_payload;
    if (options.events) {
      std::printf("  event %llu  flags %s  fragments %zu  bytes %llu  offset %llu%s%s\n",
                  static_cast<unsigned long long>(record.event), flag_names(record.flags).c_str(),
                  record.fragments.size(), static_cast<unsigned long long>(record_payload),
                  static_cast<unsigned long long>(record.offset), verdict.empty() ? "" : "  FAILED: ",
                  verdict.c_str());
    }
  }

  std::printf("  events %zu", file.records.size());
  if (!file.records.empty()) {
    std::printf(" (first %llu, last %llu)", static_cast<unsigned long long>(file.records.front().event),
                static_cast<unsigned long long>(file.records.back().event));
  }
  std::printf(", fragments %llu, bytes %zu (fragment bytes %llu)\n", static_cast<unsigned long long>(fragments),
              file.data.size(), static_cast<unsigned long long>(payload));
  std::printf("  flags: none %llu, incomplete %llu, corrupt %llu, other %llu\n",
              static_cast<unsigned long long>(clean), static_cast<unsigned long long>(incomplete),
              static_cast<unsigned long long>(corrupt), static_cast<unsigned long long>(other));
  if (options.verify) {
    std::printf("  verify: %llu fragments checked, %llu failed", static_cast<unsigned long long>(verified),
                static_cast<unsigned long long>(failed));
    if (failed_flagged > 0) {
      std::printf(", %llu more failed in events flagged corrupt", static_cast<unsigned long long>(failed_flagged));
    }
    std::printf("\n");
    for (const auto& problem : problems) std::printf("    %s\n", problem.c_str());
    if (failed > problems.size()) {
      std::printf("    ... %llu more\n", static_cast<unsigned long long>(failed - problems.size()));
    }
  }
  if (!file.problem.empty()) std::printf("  problem: %s\n", file.problem.c_str());
  const bool good = file.ok() && failed == 0;
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
  if (options.files.empty()) {
    usage(stderr, argv[0]);
    return 2;
  }
  bool all_good = true;
  for (const auto& path : options.files) all_good = dump(path, options) && all_good;
  return all_good ? 0 : 1;
}
