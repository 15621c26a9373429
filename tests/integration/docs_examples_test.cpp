// Every example in docs/ works as written: each partition is checked by the real executive against the real
// modules, and every option of daqx-executive, daqx-launch and daqxctl the examples use exists.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <map>
#include <regex>
#include <set>
#include <utility>
#include <cctype>

#include "../support/doc_blocks.hpp"
#include "../support/executive_process.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

ProcessResult check_partition(const std::string& path, const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {executive_program(), "--check", "--config", path};
  argv.insert(argv.end(), more.begin(), more.end());
  return run_process(argv, std::chrono::seconds(60), {"DAQX_MODULE_PATH=" + module_directory()});
}

// The modules a partition names, by file name: a block may need one this build does not make (ptibv without
// rdma-core's headers), which is then the reason it cannot be checked here.
std::vector<std::string> missing_modules(const std::string& xml) {
  std::vector<std::string> missing;
  const std::regex module(R"re(<Module\s+path="([^"]+)")re");
  for (std::sregex_iterator it(xml.begin(), xml.end(), module), end; it != end; ++it) {
    const std::string path = (*it)[1].str();
    const std::string name = path.substr(path.rfind('/') + 1);
    if (::access((module_directory() + "/" + name).c_str(), R_OK) != 0) missing.push_back(name);
  }
  return missing;
}

// Ends a test that checked every partition it could (its failures, if any, stand) as skipped when a module of this
// project was not built here for some, or as failed where DAQX_TRANSPORT_REQUIRE=1 (CI builds them all).
void skip_unless_all_checked(const std::string& what, const std::vector<std::string>& unchecked) {
  if (unchecked.empty()) return;
  std::string list;
  for (const std::string& where : unchecked) list += "\n  " + where;
  skip_for_environment("DAQX_TRANSPORT_REQUIRE", 77, what + " not checked for lack of a module:" + list);
}

struct HelpOptions {
  std::set<std::string> all;          // every long option the help shows: "--config", "--list-params"
  std::set<std::string> with_values;  // those it shows with a value: "--config PARTITION.xml"
};

HelpOptions options_in_help(const std::string& program) {
  const ProcessResult help = run_process({tool_program(program), "--help"}, std::chrono::seconds(30));
  HelpOptions options;
  const std::regex option(R"((--[a-z][a-z0-9-]*)( [A-Z][A-Z0-9_.]*)?)");
  for (std::sregex_iterator it(help.output.begin(), help.output.end(), option), end; it != end; ++it) {
    options.all.insert((*it)[1].str());
    if ((*it)[2].matched) options.with_values.insert((*it)[1].str());
  }
  options.all.insert("--help");
  return options;
}

struct OptionUse {
  std::string program;
  std::string option;
  std::string where;
};

// The long options given to daqx-executive, daqx-launch or daqxctl on each command line of a text, up to the end
// of that command (a pipe, ;, && or the end of the line; a trailing backslash continues it).
// A token right after an option that takes a value is that value, even when it looks like an option
// (daqx-launch --sbatch-option --time=08:00:00).
std::vector<OptionUse> option_uses(const DocBlock& block, const std::map<std::string, HelpOptions>& known) {
  std::vector<OptionUse> uses;
  const std::regex program(R"((^|[\s/"'`(])(daqx-executive|daqx-launch|daqxctl)(?=\s|$))");
  const std::regex token(R"(\S+)");
  std::string text = std::regex_replace(block.text, std::regex(R"(\\\n)"), " ");
  std::size_t line_start = 0;
  int line = block.line;
  while (line_start <= text.size()) {
    const std::size_t line_end = std::min(text.find('\n', line_start), text.size());
    const std::string command_line = text.substr(line_start, line_end - line_start);
    for (std::sregex_iterator p(command_line.begin(), command_line.end(), program), end; p != end; ++p) {
      const std::size_t from = static_cast<std::size_t>(p->position(2) + p->length(2));
      const std::size_t to = std::min(command_line.find_first_of("|;&", from), command_line.size());
      const std::string arguments = command_line.substr(from, to - from);
      const HelpOptions& help = known.at((*p)[2].str());
      bool value_next = false;
      for (std::sregex_iterator t(arguments.begin(), arguments.end(), token); t != end; ++t) {
        const std::string word = t->str();
        if (std::exchange(value_next, false)) continue;
        if (word.rfind("--", 0) != 0 || word == "--" || word.size() < 3 || !std::islower(static_cast<unsigned char>(word[2])))
          continue;
        // "--config=FILE" names --config; prose writes alternatives as "--token-file/--ca-file".
        const std::string name = word.substr(0, word.find_first_of("=/"));
        uses.push_back({(*p)[2].str(), name, block.file + ":" + std::to_string(line)});
        if (const std::size_t slash = word.find("/--"); slash != std::string::npos && word.find('=') > slash)
          uses.push_back({(*p)[2].str(), word.substr(slash + 1, word.find_first_of("=/", slash + 1) - slash - 1),
                          block.file + ":" + std::to_string(line)});
        value_next = name == word && help.with_values.count(name) == 1;
      }
    }
    if (line_end == text.size()) break;
    line_start = line_end + 1;
    ++line;
  }
  return uses;
}

}  // namespace

TEST_CASE("every partition in docs/*.md passes daqx-executive --check against the real modules", "[docs][process]") {
  const std::vector<DocBlock> partitions = doc_partitions();
  REQUIRE(partitions.size() >= 2);
  std::vector<std::string> unchecked;
  for (const DocBlock& block : partitions) {
    INFO("the partition at " << block.where());
    if (const std::vector<std::string> missing = missing_modules(block.text); !missing.empty()) {
      // A module of this project not built here (a transport without its library) is a gap CI must not have;
      // a reader's own module (docs/writing-an-application.md's) is built and run by the install test instead.
      if (missing.front().rfind("libdaqx_", 0) == 0)
        unchecked.push_back(block.where() + " (needs " + missing.front() + ", not built here)");
      else
        WARN(block.where() << " not checked here: its module " << missing.front() << " is not one of this build's");
      continue;
    }
    // Named after the document and padded so that its lines are the document's: a message reads
    // ".../configuration.md.xml:31: unknown property ...", the line of the mistake in configuration.md.
    const std::string name = block.file.substr(block.file.rfind('/') + 1) + "-" + std::to_string(block.line) + ".xml";
    const ProcessResult result = check_partition(write_file(name, aligned_text(block)));
    INFO(result.output);
    CHECK(result.exit_code == 0);
  }
  skip_unless_all_checked("partitions in docs/", unchecked);
}

TEST_CASE("every partition in config/ passes daqx-executive --check", "[docs][process]") {
  std::vector<std::string> unchecked;
  for (const std::string& path : files_ending_with(config_directory(), ".xml")) {
    INFO(path);
    const std::vector<std::string> missing = missing_modules(read_text(path));
    if (!missing.empty()) {
      unchecked.push_back(path + " (needs " + missing.front() + ", not built here)");
      continue;
    }
    const ProcessResult result = check_partition(path);
    INFO(result.output);
    CHECK(result.exit_code == 0);
  }
  skip_unless_all_checked("partitions in config/", unchecked);
}

TEST_CASE("daqx-executive --check reports a parameter no module declares at its line and exits 2", "[docs][process]") {
  // What the complete example of docs/configuration.md once had: a pttcp parameter that does not exist.
  const std::string partition = write_file("check-unknown-parameter.xml", R"(<Partition name="check">
  <Context url="http://localhost:9001">
    <Endpoint protocol="tcp" hostname="localhost" port="9101" network="data">
      <Properties>
        <lowLatency type="bool">true</lowLatency>
      </Properties>
    </Endpoint>
    <Module path="libdaqx_pttcp.so"/>
    <Module path="libdaqx_nton.so"/>
    <Application class="nton::Receiver" id="20" network="data">
      <Properties><dispatch>sometimes</dispatch></Properties>
    </Application>
  </Context>
</Partition>
)");
  const ProcessResult result = check_partition(partition);
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(partition + ":5: unknown property 'lowLatency' for protocol tcp"));
  CHECK_THAT(result.output, Contains(partition + ":11: property 'dispatch'") &&
                                Contains("'sometimes' is not thread, inline or auto"));
}

TEST_CASE("daqx-executive --check reports a module it cannot load and a context not in the partition",
          "[docs][process]") {
  const std::string partition = write_file("check-missing-module.xml", R"(<Partition name="check">
  <Context url="http://localhost:9001">
    <Module path="libdaqx_nonexistent.so"/>
  </Context>
</Partition>
)");
  const ProcessResult missing = check_partition(partition);
  INFO(missing.output);
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Contains(partition + ":3: ") && Contains("libdaqx_nonexistent.so"));
  const ProcessResult elsewhere = check_partition(partition, {"--context", "http://localhost:9002"});
  CHECK(elsewhere.exit_code == 2);
  CHECK_THAT(elsewhere.output, Contains("context http://localhost:9002 is not in this partition"));
}

TEST_CASE("daqx-executive --check checks one context only when given one, and opens no port", "[docs][process]") {
  // The second context names a class nobody provides; checking the first alone passes.
  const std::uint16_t port = free_port();
  const std::string first = "http://localhost:" + std::to_string(port);
  const std::string partition = write_file("check-one-context.xml", "<Partition name=\"check\">\n  <Context url=\"" +
                                                                        first + R"(">
    <Module path="libdaqx_nton.so"/>
    <Application class="nton::Receiver" id="20"/>
  </Context>
  <Context url="http://localhost:9002">
    <Module path="libdaqx_nton.so"/>
    <Application class="nton::Nobody" id="21"/>
  </Context>
</Partition>
)");
  const ProcessResult one = check_partition(partition, {"--context", first});
  INFO(one.output);
  CHECK(one.exit_code == 0);
  CHECK_THAT(one.output, Contains("is valid (1 context checked)"));
  const ProcessResult all = check_partition(partition);
  CHECK(all.exit_code == 2);
  CHECK_THAT(all.output, Contains(partition + ":8: unknown application class 'nton::Nobody'"));
}

TEST_CASE("every option of daqx-executive, daqx-launch and daqxctl used in docs/ exists", "[docs][process]") {
  std::map<std::string, HelpOptions> known;
  for (const char* program : {"daqx-executive", "daqx-launch", "daqxctl"}) {
    known[program] = options_in_help(program);
    INFO(program << " --help");
    REQUIRE(known[program].all.size() > 3);
  }
  std::vector<DocBlock> examples = doc_inline_code();
  for (DocBlock& block : doc_blocks())
    if (block.language != "xml" && block.language != "cpp" && block.language != "c++" && block.language != "json")
      examples.push_back(std::move(block));
  std::size_t checked = 0;
  for (const DocBlock& block : examples) {
    for (const OptionUse& use : option_uses(block, known)) {
      ++checked;
      INFO(use.where << ": " << use.program << " " << use.option);
      CHECK(known[use.program].all.count(use.option) == 1);
    }
  }
  CHECK(checked > 20);  // the docs use dozens; none found means this test reads them wrong
}
