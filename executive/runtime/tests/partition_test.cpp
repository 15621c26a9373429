// The partition format: every mistake reported at its line, every field read back, and the second round of
// checks against what the loaded modules declare.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "daqx/executive/partition.hpp"
#include "daqx/services/text.hpp"

using namespace daqx;
using namespace daqx::config;

namespace {

const std::string kPartitions = std::string(DAQX_TEST_DATA_DIR) + "/partitions";

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

// A bad file states what must be reported: "<!-- expect: LINE: substring -->", once per message.
struct Expectation {
  int line = 0;
  std::string substring;
};

std::vector<Expectation> expectations_of(const std::string& path) {
  std::vector<Expectation> expectations;
  std::ifstream file(path);
  const std::string opening = "<!-- expect: ";
  for (std::string line; std::getline(file, line);) {
    if (line.rfind(opening, 0) != 0) continue;
    const std::size_t colon = line.find(": ", opening.size());
    const std::size_t closing = line.rfind(" -->");
    Expectation expectation;
    expectation.line = std::stoi(line.substr(opening.size(), colon - opening.size()));
    expectation.substring = line.substr(colon + 2, closing - colon - 2);
    expectations.push_back(expectation);
  }
  return expectations;
}

std::vector<std::string> messages_of_loading(const std::string& path) {
  try {
    load_partition(path);
  } catch (const ConfigError& error) {
    return error.messages();
  }
  return {};
}

// The line a message is reported at: "file:LINE: reason".
int line_of_message(const std::string& message, const std::string& file) {
  return std::stoi(message.substr(file.size() + 1));
}

// The 1-based line of the first occurrence of `needle` in `text`, so tests need not count lines by hand.
int line_in(const std::string& text, const std::string& needle) {
  const std::size_t where = text.find(needle);
  REQUIRE(where != std::string::npos);
  return static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(where), '\n')) + 1;
}

std::vector<std::string> sorted_files(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().extension() == ".xml") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// What the loaded modules would provide, declared in the test.
class TestCatalogue final : public Catalogue {
 public:
  std::map<std::string, std::vector<ParamSpec>, std::less<>> classes;
  std::map<std::string, std::vector<ParamSpec>, std::less<>> protocols;

  const std::vector<ParamSpec>* application_params(std::string_view class_name) const override {
    const auto found = classes.find(class_name);
    return found == classes.end() ? nullptr : &found->second;
  }
  const std::vector<ParamSpec>* transport_params(std::string_view protocol) const override {
    const auto found = protocols.find(protocol);
    return found == protocols.end() ? nullptr : &found->second;
  }
  std::vector<std::string> application_classes() const override { return names(classes); }
  std::vector<std::string> transport_protocols() const override { return names(protocols); }

 private:
  static std::vector<std::string> names(const std::map<std::string, std::vector<ParamSpec>, std::less<>>& known) {
    std::vector<std::string> listed;
    for (const auto& [name, specs] : known) listed.push_back(name);
    return listed;
  }
};

ParamSpec spec(std::string name, ParamType type, std::string default_value) {
  ParamSpec declared;
  declared.name = std::move(name);
  declared.type = type;
  declared.default_value = std::move(default_value);
  return declared;
}

TestCatalogue nton_catalogue() {
  TestCatalogue catalogue;
  ParamSpec frame_size = spec("frameSize", ParamType::unsigned_integer, "4096");
  frame_size.min = 64;
  frame_size.max = 65535;
  catalogue.classes["nton::Sender"] = {frame_size, spec("receivers", ParamType::applications, "")};
  catalogue.classes["nton::Receiver"] = {spec("sink", ParamType::boolean, "false")};
  catalogue.protocols["tcp"] = {spec("lowLatency", ParamType::boolean, "false")};
  catalogue.protocols["ibv"] = {spec("queueDepth", ParamType::unsigned_integer, "128")};
  return catalogue;
}

// Three contexts: a sender at a, a receiver at b on the same network, another at c on a network of its own.
const std::string kThreeContexts = R"(<Partition name="three-contexts">
  <Context url="http://a:9001">
    <Endpoint protocol="tcp" hostname="a" port="9101" network="data"/>
    <Module path="libdaqx_nton.so"/>
    <Application class="nton::Sender" id="10" network="data">
      <Properties>
        <frameSize type="unsigned">4096</frameSize>
        <receivers type="applications">class:nton::Receiver</receivers>
      </Properties>
    </Application>
    <Application class="nton::Receiver" id="11"/>
  </Context>
  <Context url="http://b:9002">
    <Endpoint protocol="tcp" hostname="b" port="9102" network="data"/>
    <Application class="nton::Receiver" id="20" instance="1" network="data"/>
  </Context>
  <Context url="http://c:9003">
    <Endpoint protocol="ibv" hostname="c" port="9103" network="other"/>
    <Application class="nton::Receiver" id="21" instance="2" network="other"/>
  </Context>
</Partition>
)";

}  // namespace

TEST_CASE("every bad partition file is refused with each expected message at its line, in file order", "[partition]") {
  const std::vector<std::string> files = sorted_files(kPartitions + "/bad");
  REQUIRE(files.size() >= 18);
  for (const std::string& path : files) {
    INFO("file " << path);
    const std::vector<Expectation> expectations = expectations_of(path);
    REQUIRE_FALSE(expectations.empty());
    const std::vector<std::string> messages = messages_of_loading(path);
    INFO("messages:\n" << [&] {
      std::string all;
      for (const std::string& message : messages) all += message + "\n";
      return all;
    }());
    for (const Expectation& expectation : expectations) {
      INFO("expected at line " << expectation.line << ": " << expectation.substring);
      const std::string prefix = path + ":" + std::to_string(expectation.line) + ": ";
      CHECK(std::any_of(messages.begin(), messages.end(), [&](const std::string& message) {
        return message.rfind(prefix, 0) == 0 && message.find(expectation.substring) != std::string::npos;
      }));
    }
    // Nothing else is reported: a check that fires where it should not would show up here.
    CHECK(messages.size() == expectations.size());
    std::vector<int> lines;
    for (const std::string& message : messages) lines.push_back(line_of_message(message, path));
    CHECK(std::is_sorted(lines.begin(), lines.end()));
  }
}

TEST_CASE("a ConfigError's text is its messages, one per line", "[partition]") {
  const ConfigError error({"a.xml:3: first", "a.xml:7: second"});
  CHECK(std::string(error.what()) == "a.xml:3: first\na.xml:7: second");
  CHECK(error.messages().size() == 2);
}

TEST_CASE("a missing partition file is reported as unreadable, without a line", "[partition]") {
  const std::string path = kPartitions + "/no-such-file.xml";
  const std::vector<std::string> messages = messages_of_loading(path);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] == path + ": cannot read: No such file or directory");
}

TEST_CASE("a folder given as a partition file is reported as unreadable", "[partition]") {
  const std::string path = kPartitions + "/good";
  const std::vector<std::string> messages = messages_of_loading(path);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] == path + ": cannot read: Is a directory");
}

TEST_CASE("a partition covering every element and attribute is read field by field", "[partition]") {
  const std::string path = kPartitions + "/good/full.xml";
  const std::string text = read_text(path);
  const Partition partition = load_partition(path);

  CHECK(partition.name == "full");
  CHECK(partition.file == path);
  CHECK(partition.where.file == path);
  CHECK(partition.where.line == line_in(text, "<Partition"));

  REQUIRE(partition.policy.size() == 5);
  const PolicyRule& first_thread = partition.policy[0];
  CHECK(first_thread.kind == PolicyRule::Kind::thread);
  CHECK(first_thread.pattern == "pt/tcp/*");
  CHECK(first_thread.cores == std::vector<int>{1});
  CHECK(first_thread.context.empty());
  CHECK(first_thread.where.line == line_in(text, "pt/tcp/*"));
  const PolicyRule& sender_thread = partition.policy[1];
  CHECK(sender_thread.cores == std::vector<int>{0, 2, 4, 5});
  CHECK(sender_thread.context == "http://localhost:9001");
  const PolicyRule& numa_pool = partition.policy[2];
  CHECK(numa_pool.kind == PolicyRule::Kind::pool);
  CHECK(numa_pool.pattern == "nton/*/pool");
  CHECK(numa_pool.allocator == "numa:0");
  CHECK(numa_pool.cores.empty());
  CHECK(partition.policy[3].allocator == "hugepage");
  CHECK(partition.policy[3].context == "http://node-b:9002");
  CHECK(partition.policy[4].allocator == "heap");
  CHECK(partition.policy[4].where.line == line_in(text, "allocator=\"heap\""));

  // <Launch>: read by daqx-launch; host rules and restart rules in file order, first match wins.
  const LaunchConfig& launch = partition.launch;
  CHECK(launch.engine == "ssh");
  REQUIRE(launch.hosts.size() == 2);
  CHECK(launch.hosts[0].pattern == "node-a");
  CHECK(launch.hosts[0].ssh_target == "daq@node-a.example");
  CHECK(launch.hosts[0].prefix == "/opt/daqx");
  CHECK(launch.hosts[0].work_dir == "/var/tmp/daqx");
  REQUIRE(launch.hosts[0].environment.size() == 2);
  CHECK(launch.hosts[0].environment[0] == std::pair<std::string, std::string>{"LD_LIBRARY_PATH", "/opt/daqx/lib"});
  CHECK(launch.hosts[0].environment[1] == std::pair<std::string, std::string>{"EMPTY", ""});
  CHECK(launch.hosts[1].executive == "/usr/local/bin/daqx-executive");
  CHECK(launch.host_rule("node-a") == &launch.hosts[0]);
  CHECK(launch.host_rule("node-b") == &launch.hosts[1]);
  CHECK(launch.host_rule("other") == nullptr);
  REQUIRE(launch.restarts.size() == 2);
  CHECK(launch.restarts[0].policy == LaunchRestartRule::Policy::on_failure);
  CHECK(launch.restarts[0].max_restarts == 4);
  CHECK(launch.restarts[0].backoff_seconds == 0.25);
  CHECK(launch.restarts[0].max_backoff_seconds == 8);
  CHECK(launch.restarts[0].where.line == line_in(text, "maxRestarts=\"4\""));
  CHECK(launch.restart_rule("http://node-b:9002") == &launch.restarts[0]);
  CHECK(launch.restart_rule("http://node-a:9001")->policy == LaunchRestartRule::Policy::never);
  // Expendable rules: how many of a class may be lost, as max or as min remaining of those in the partition.
  REQUIRE(launch.expendables.size() == 2);
  CHECK(launch.expendables[0].class_name == "nton::Receiver");
  CHECK(launch.expendables[0].max_lost == 1u);
  CHECK_FALSE(launch.expendables[0].min_left.has_value());
  CHECK(launch.expendables[0].losses_allowed == 1);
  CHECK(launch.expendables[0].where.line == line_in(text, "<Expendable class=\"nton::Receiver\""));
  CHECK(launch.expendables[1].min_left == 1u);
  CHECK(launch.expendables[1].losses_allowed == 1);  // 2 monitors, 1 to remain
  CHECK(launch.expendable_rule("nton::Monitor") == &launch.expendables[1]);
  CHECK(launch.expendable_rule("nton::Sender") == nullptr);

  REQUIRE(partition.contexts.size() == 2);
  const ContextConfig& local = partition.contexts[0];
  CHECK(local.url == "http://localhost:9001");
  CHECK(local.host == "localhost");
  CHECK(local.port == 9001);
  CHECK(local.where.line == line_in(text, "<Context url=\"http://localhost:9001\""));

  REQUIRE(local.endpoints.size() == 2);
  const EndpointConfig& data = local.endpoints[0];
  CHECK(data.protocol == "tcp");
  CHECK(data.hostname == "localhost");
  CHECK(data.port == 9101);
  CHECK(data.network == "data");
  CHECK(data.where.line == line_in(text, "port=\"9101\""));
  REQUIRE(data.properties.size() == 1);
  CHECK(data.properties[0].name == "lowLatency");
  CHECK(data.properties[0].type == ParamType::boolean);
  CHECK(data.properties[0].value == "true");
  CHECK(data.properties[0].where.line == line_in(text, "<lowLatency"));
  CHECK(local.endpoints[1].network == "control");
  CHECK(local.endpoints[1].properties.empty());

  REQUIRE(local.modules.size() == 1);
  CHECK(local.modules[0].path == "libdaqx_nton.so");
  CHECK(local.modules[0].where.line == line_in(text, "<Module path=\"libdaqx_nton.so\""));

  REQUIRE(local.applications.size() == 2);
  const ApplicationConfig& sender = local.applications[0];
  CHECK(sender.class_name == "nton::Sender");
  CHECK(sender.id == 10);
  CHECK(sender.instance == 0);
  CHECK(sender.network == "data");
  CHECK(sender.where.line == line_in(text, "class=\"nton::Sender\""));
  REQUIRE(sender.properties.size() == 4);
  CHECK(sender.properties[0].name == "frameSize");
  CHECK(sender.properties[0].type == ParamType::unsigned_integer);
  CHECK(sender.properties[0].value == "65536");
  CHECK(sender.properties[1].name == "receivers");
  CHECK(sender.properties[1].type == ParamType::applications);
  CHECK(sender.properties[1].value == "class:nton::Receiver");
  CHECK(sender.properties[2].name == "label");
  CHECK_FALSE(sender.properties[2].type.has_value());
  CHECK(sender.properties[2].value == "first sender");  // blanks and line breaks around a value do not count
  CHECK(sender.properties[3].name == "note");
  CHECK(sender.properties[3].value == "a <raw> value");
  const ApplicationConfig& monitor = local.applications[1];
  CHECK(monitor.class_name == "nton::Monitor");
  CHECK(monitor.id == 11);
  CHECK(monitor.instance == 0);  // the default
  CHECK(monitor.network.empty());
  CHECK(monitor.properties.empty());

  const ContextConfig& remote = partition.contexts[1];
  CHECK(remote.host == "node-b");
  CHECK(remote.port == 9002);
  CHECK(remote.modules.at(0).path == "/opt/daqx/lib/libdaqx_nton.so");
  CHECK(remote.endpoints.at(0).protocol == "ibv");
  CHECK(remote.applications.at(0).instance == 1);
}

TEST_CASE("every good partition file loads", "[partition]") {
  for (const std::string& path : sorted_files(kPartitions + "/good")) {
    INFO("file " << path);
    CHECK_NOTHROW(load_partition(path));
  }
}

TEST_CASE("the example in docs/configuration.md loads", "[partition]") {
  const std::string document = read_text(std::string(DAQX_TEST_DATA_DIR) + "/../../docs/configuration.md");
  const std::string opening = "```xml\n";
  const std::size_t start = document.find(opening);
  REQUIRE(start != std::string::npos);
  const std::size_t end = document.find("```", start + opening.size());
  REQUIRE(end != std::string::npos);
  const Partition partition = parse_partition(document.substr(start + opening.size(), end - start - opening.size()),
                                              "configuration.md");
  CHECK_FALSE(partition.contexts.empty());
}

TEST_CASE("a partition read from text names the file it was given", "[partition]") {
  const std::string xml = "<Partition name=\"p\">\n  <Context url=\"http://h:1\">\n    <Bad/>\n  </Context>\n</Partition>";
  try {
    parse_partition(xml, "from-text.xml");
    FAIL("the unknown element was not reported");
  } catch (const ConfigError& error) {
    REQUIRE(error.messages().size() == 1);
    CHECK(error.messages()[0] == "from-text.xml:3: unknown element <Bad> in <Context>");
  }
}

TEST_CASE("whatever bytes a partition holds, each message is one line of UTF-8 that escapes them, and the first "
          "byte that is not XML is named", "[partition]") {
  // Stray text with a line break, control and non-UTF-8 bytes; an element name with bytes that are not UTF-8.
  const std::string xml = "<Partition name=\"p\">\n  <Context url=\"http://h:1\">\xff\xff" "9\n  \x18x\n"
                          "    <Thr\x9b\x9e" "d/>\n  </Context>\n</Partition>";
  try {
    parse_partition(xml, "bytes.xml");
    FAIL("the partition was not refused");
  } catch (const ConfigError& error) {
    REQUIRE(!error.messages().empty());
    for (const std::string& message : error.messages()) {
      INFO(message);
      CHECK(message.starts_with("bytes.xml:"));
      CHECK(message.find('\n') == std::string::npos);
      CHECK(daqx::strings::valid_utf8(message) == message);
    }
    // The first byte that is not XML: a partition file is UTF-8 without control characters.
    CHECK_THAT(std::string(error.what()), Catch::Contains("bytes.xml:2: malformed XML: a byte that is not UTF-8 (\\xff)"));
  }
}

TEST_CASE("line numbers are right with Windows line ends", "[partition]") {
  const std::string xml = "<Partition name=\"p\">\r\n  <Context url=\"http://h:1\">\r\n\r\n    <Bad/>\r\n  </Context>\r\n</Partition>\r\n";
  try {
    parse_partition(xml, "crlf.xml");
    FAIL("the unknown element was not reported");
  } catch (const ConfigError& error) {
    REQUIRE(error.messages().size() == 1);
    CHECK(error.messages()[0] == "crlf.xml:4: unknown element <Bad> in <Context>");
  }
}

TEST_CASE("an attribute on a line of its own is reported at that line", "[partition]") {
  const std::string xml =
      "<Partition name=\"p\">\n  <Context url=\"http://h:1\">\n    <Application class=\"a::B\"\n"
      "                 id=\"x\"/>\n  </Context>\n</Partition>";
  try {
    parse_partition(xml, "attribute.xml");
    FAIL("the bad id was not reported");
  } catch (const ConfigError& error) {
    REQUIRE(error.messages().size() == 1);
    CHECK(error.messages()[0] == "attribute.xml:4: id: 'x' is not an unsigned integer: only decimal digits are accepted");
  }
}

TEST_CASE("an empty document is malformed XML at line 1", "[partition]") {
  try {
    parse_partition("", "empty.xml");
    FAIL("the empty document was accepted");
  } catch (const ConfigError& error) {
    REQUIRE(error.messages().size() == 1);
    CHECK(error.messages()[0].rfind("empty.xml:1: malformed XML: ", 0) == 0);
  }
}

// The only message of parse_partition(xml), which must refuse it.
std::string only_refusal(const std::string& xml, const std::string& file) {
  try {
    parse_partition(xml, file);
  } catch (const ConfigError& error) {
    REQUIRE(error.messages().size() == 1);
    return error.messages()[0];
  }
  FAIL("the partition was accepted");
  return {};
}

TEST_CASE("a UTF-8 byte-order mark is skipped and lines still count from it", "[partition]") {
  const std::string xml = "\xEF\xBB\xBF<Partition name=\"p\">\n  <Context url=\"http://h:1\">\n    <Bad/>\n  </Context>\n</Partition>";
  CHECK(only_refusal(xml, "bom.xml") == "bom.xml:3: unknown element <Bad> in <Context>");
}

TEST_CASE("UTF-16, UTF-32 and NUL bytes are refused with the encoding and the line", "[partition]") {
  CHECK(only_refusal(std::string("\xFF\xFE<\0", 4), "le.xml").starts_with("le.xml:1: the file is UTF-16LE"));
  CHECK(only_refusal(std::string("\xFE\xFF\0<", 4), "be.xml").starts_with("be.xml:1: the file is UTF-16BE"));
  CHECK(only_refusal(std::string("\0\0\xFE\xFF", 4), "32.xml").starts_with("32.xml:1: the file is UTF-32BE"));
  CHECK(only_refusal(std::string("<P\n\n\0", 5), "nul.xml").starts_with("nul.xml:3: a NUL byte"));
}

TEST_CASE("a <!DOCTYPE> is refused at its line, in any case of letters", "[partition]") {
  const std::string xml = "<?xml version=\"1.0\"?>\n<!doctype Partition [<!ENTITY a \"b\">]>\n<Partition name=\"&a;\"/>";
  CHECK(only_refusal(xml, "dtd.xml").starts_with("dtd.xml:2: a <!DOCTYPE>: a partition file may not have one"));
}

TEST_CASE("an XML declaration of an encoding other than UTF-8 is refused at its line", "[partition]") {
  const std::string xml = "<?xml version=\"1.0\"\n  encoding=\"windows-1252\"?>\n<Partition name=\"p\"><Context url=\"http://h:1\"/></Partition>";
  CHECK(only_refusal(xml, "enc.xml").starts_with("enc.xml:2: the XML declaration says encoding 'windows-1252'"));
}

TEST_CASE("text past 16 MiB is refused at the line where it passes the limit", "[partition]") {
  std::string xml = "<Partition name=\"p\">\n";
  xml.append((std::size_t{16} << 20) - xml.size() - 2, ' ');
  xml += "\n\n\n";  // the first byte past the limit is the last of these, on line 4
  CHECK(only_refusal(xml, "big.xml").starts_with("big.xml:4: the file goes on past 16 MiB"));
}

TEST_CASE("a partition finds contexts by URL and applications by TID", "[partition]") {
  const Partition partition = parse_partition(kThreeContexts, "three.xml");
  REQUIRE(partition.find_context("http://b:9002") != nullptr);
  CHECK(partition.find_context("http://b:9002")->host == "b");
  CHECK(partition.find_context("http://b:9009") == nullptr);
  REQUIRE(partition.context_of(21) != nullptr);
  CHECK(partition.context_of(21)->url == "http://c:9003");
  REQUIRE(partition.application(11) != nullptr);
  CHECK(partition.application(11)->class_name == "nton::Receiver");
  CHECK(partition.context_of(99) == nullptr);
  CHECK(partition.application(99) == nullptr);
}

TEST_CASE("a selector picks applications by class, by id or all, in partition order", "[partition]") {
  const Partition partition = parse_partition(kThreeContexts, "three.xml");
  std::string error = "stale";
  CHECK(resolve_selector(partition, "class:nton::Receiver", error) == std::vector<std::uint32_t>{11, 20, 21});
  CHECK(error.empty());
  CHECK(resolve_selector(partition, "*", error) == std::vector<std::uint32_t>{10, 11, 20, 21});
  CHECK(resolve_selector(partition, "21, 10,20", error) == std::vector<std::uint32_t>{10, 20, 21});
  CHECK(resolve_selector(partition, "20", error) == std::vector<std::uint32_t>{20});
  CHECK(error.empty());
}

TEST_CASE("an empty selector picks nothing and is no mistake", "[partition]") {
  const Partition partition = parse_partition(kThreeContexts, "three.xml");
  std::string error;
  CHECK(resolve_selector(partition, "", error).empty());
  CHECK(error.empty());
}

TEST_CASE("a selector naming an unknown id or class gives the reason", "[partition]") {
  const Partition partition = parse_partition(kThreeContexts, "three.xml");
  std::string error;
  CHECK(resolve_selector(partition, "10,7,8", error).empty());
  CHECK(error == "no application with id 7, 8 in the partition");
  CHECK(resolve_selector(partition, "class:evb::BU", error).empty());
  CHECK(error == "no application of class 'evb::BU' in the partition");
  CHECK(resolve_selector(partition, "10,x", error).empty());
  CHECK(error.find("'x' in '10,x' is not an application id") == 0);
}

TEST_CASE("applications share a network in one context, or on a network the receiver's context serves",
          "[partition]") {
  const Partition partition = parse_partition(kThreeContexts, "three.xml");
  CHECK(shares_network(partition, 10, 11));  // same context, though 11 has no network
  CHECK(shares_network(partition, 10, 20));  // both on "data", served at b
  CHECK_FALSE(shares_network(partition, 10, 21));  // "data" and "other"
  CHECK_FALSE(shares_network(partition, 11, 20));  // 11 is local only
  CHECK_FALSE(shares_network(partition, 10, 99));  // no such application
}

TEST_CASE("a shared network name is not enough when the receiver's context has no endpoint on it", "[partition]") {
  // parse_partition refuses such a partition; the executive may still be handed one built in code.
  Partition partition;
  ContextConfig sending;
  sending.url = "http://a:1";
  sending.endpoints.push_back(EndpointConfig{"tcp", "a", 2, "data", {}, {}});
  sending.applications.push_back(ApplicationConfig{"x::Sender", 1, 0, "data", {}, {}});
  ContextConfig receiving;
  receiving.url = "http://b:1";
  receiving.applications.push_back(ApplicationConfig{"x::Receiver", 2, 0, "data", {}, {}});
  partition.contexts = {sending, receiving};
  CHECK_FALSE(shares_network(partition, 1, 2));
}

TEST_CASE("a context whose classes, protocols and properties the modules declare passes the catalogue checks",
          "[partition]") {
  const std::string xml = R"(<Partition name="clean">
  <Context url="http://a:9001">
    <Endpoint protocol="tcp" hostname="a" port="9101" network="data">
      <Properties><lowLatency>yes</lowLatency></Properties>
    </Endpoint>
    <Application class="nton::Sender" id="10" network="data">
      <Properties>
        <frameSize>65535</frameSize>
        <receivers type="applications">class:nton::Receiver</receivers>
      </Properties>
    </Application>
  </Context>
  <Context url="http://b:9002">
    <Endpoint protocol="tcp" hostname="b" port="9102" network="data"/>
    <Application class="nton::Receiver" id="20" network="data"/>
  </Context>
</Partition>)";
  const Partition partition = parse_partition(xml, "clean.xml");
  const TestCatalogue catalogue = nton_catalogue();
  for (const ContextConfig& context : partition.contexts)
    CHECK(check_against_catalogue(partition, context, catalogue).empty());
}

TEST_CASE("the catalogue checks report a selected application that shares no network with the selecting one",
          "[partition]") {
  const Partition partition = parse_partition(kThreeContexts, "three.xml");
  const TestCatalogue catalogue = nton_catalogue();
  const std::vector<std::string> messages =
      check_against_catalogue(partition, *partition.find_context("http://a:9001"), catalogue);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] == "three.xml:" + std::to_string(line_in(kThreeContexts, "<receivers")) +
                           ": application 10 parameter 'receivers' selects application 21 in context http://c:9003,"
                           " with which it shares no network");
}

TEST_CASE("the catalogue checks look at the given context only", "[partition]") {
  const Partition partition = parse_partition(kThreeContexts, "three.xml");
  const TestCatalogue catalogue = nton_catalogue();
  CHECK(check_against_catalogue(partition, *partition.find_context("http://b:9002"), catalogue).empty());
  CHECK(check_against_catalogue(partition, *partition.find_context("http://c:9003"), catalogue).empty());
}

TEST_CASE("the catalogue checks report unknown classes, protocols and properties and bad values, in file order",
          "[partition]") {
  const std::string xml = R"(<Partition name="mistakes">
  <Context url="http://a:9001">
    <Application class="nton::Sendr" id="9">
      <Properties><frameSize>1</frameSize></Properties>
    </Application>
    <Endpoint protocol="udp" hostname="a" port="9100" network="data"/>
    <Endpoint protocol="tcp" hostname="a" port="9101" network="data">
      <Properties>
        <lowLatency>true</lowLatency>
        <nagle>false</nagle>
      </Properties>
    </Endpoint>
    <Application class="nton::Sender" id="10" network="data">
      <Properties>
        <frameSize>65536</frameSize>
        <receivers type="list">20</receivers>
        <window>8</window>
      </Properties>
    </Application>
    <Application class="nton::Sender" id="11" instance="1" network="data">
      <Properties>
        <frameSize type="unsigned">32</frameSize>
        <receivers>class:evb::BU</receivers>
      </Properties>
    </Application>
    <Application class="nton::Sender" id="12" instance="2">
      <Properties>
        <receivers>20,30</receivers>
      </Properties>
    </Application>
  </Context>
  <Context url="http://b:9002">
    <Endpoint protocol="tcp" hostname="b" port="9102" network="data"/>
    <Application class="nton::Receiver" id="20" network="data"/>
  </Context>
</Partition>)";
  const Partition partition = parse_partition(xml, "mistakes.xml");
  const TestCatalogue catalogue = nton_catalogue();
  const std::vector<std::string> messages = check_against_catalogue(partition, partition.contexts[0], catalogue);
  const auto at = [&](const std::string& needle, const std::string& reason) {
    return "mistakes.xml:" + std::to_string(line_in(xml, needle)) + ": " + reason;
  };
  const std::vector<std::string> expected = {
      at("nton::Sendr", "unknown application class 'nton::Sendr' (loaded modules provide: nton::Receiver, nton::Sender)"),
      at("protocol=\"udp\"", "unknown endpoint protocol 'udp' (loaded modules provide: ibv, tcp)"),
      at("<nagle>", "unknown property 'nagle' for protocol tcp (it declares: lowLatency)"),
      at("<frameSize>65536", "property 'frameSize' of application class nton::Sender: '65536' is out of range for an unsigned integer: "
                              "above the maximum 65535"),
      at("<receivers type=\"list\">",
         "property 'receivers' is stated as list but application class nton::Sender declares it as applications"),
      at("<window>", "unknown property 'window' for application class nton::Sender (it declares: frameSize, receivers)"),
      at("<frameSize type=\"unsigned\">32",
         "property 'frameSize' of application class nton::Sender: '32' is out of range for an unsigned integer: below "
         "the minimum 64"),
      at("class:evb::BU", "application 11 parameter 'receivers': no application of class 'evb::BU' in the partition"),
      at("20,30", "application 12 parameter 'receivers': no application with id 30 in the partition"),
  };
  CHECK(messages == expected);
}

TEST_CASE("an application selected by a local-only application must be in its context", "[partition]") {
  const std::string xml = R"(<Partition name="local-only">
  <Context url="http://a:9001">
    <Application class="nton::Sender" id="10">
      <Properties><receivers>*</receivers></Properties>
    </Application>
    <Application class="nton::Receiver" id="11"/>
  </Context>
  <Context url="http://b:9002">
    <Application class="nton::Receiver" id="20" instance="1"/>
  </Context>
</Partition>)";
  const Partition partition = parse_partition(xml, "local.xml");
  const std::vector<std::string> messages = check_against_catalogue(partition, partition.contexts[0], nton_catalogue());
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].find("application 10 parameter 'receivers' selects application 20 in context http://b:9002") !=
        std::string::npos);
}

TEST_CASE("a catalogue that cannot list what it knows still names the unknown class", "[partition]") {
  class SilentCatalogue final : public Catalogue {
   public:
    const std::vector<ParamSpec>* application_params(std::string_view) const override { return nullptr; }
    const std::vector<ParamSpec>* transport_params(std::string_view) const override { return nullptr; }
  };
  const Partition partition = parse_partition(kThreeContexts, "three.xml");
  const std::vector<std::string> messages =
      check_against_catalogue(partition, *partition.find_context("http://b:9002"), SilentCatalogue());
  REQUIRE(messages.size() == 2);
  CHECK(messages[0] == "three.xml:" + std::to_string(line_in(kThreeContexts, "hostname=\"b\"")) +
                           ": unknown endpoint protocol 'tcp'");
  CHECK(messages[1] == "three.xml:" + std::to_string(line_in(kThreeContexts, "id=\"20\"")) +
                           ": unknown application class 'nton::Receiver'");
}

namespace {

// load_partition of `xml` written to a file of its own (the socket check runs on files only); its messages.
std::vector<std::string> messages_of_loading_text(const std::string& xml, const std::string& name) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".xml");
  std::ofstream(path) << xml;
  std::vector<std::string> messages = messages_of_loading(path.string());
  std::filesystem::remove(path);
  return messages;
}

// This machine's name and its IPv4 address as the resolver gives it; empty when the name does not resolve here.
std::pair<std::string, std::string> own_name_and_address() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return {};
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name, nullptr, &hints, &found) != 0 || found == nullptr) return {};
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(found);
  return {name, text};
}

std::string two_contexts(const std::string& first_url, const std::string& second_url) {
  return "<Partition name=\"p\">\n  <Context url=\"" + first_url + "\"/>\n  <Context url=\"" + second_url +
         "\"/>\n</Partition>\n";
}

}  // namespace

TEST_CASE("a host name and its address on one port are one socket: refused naming both", "[partition][sockets]") {
  const auto [name, address] = own_name_and_address();
  INFO("this machine's name must resolve to an IPv4 address (/etc/hosts) for this test");
  REQUIRE_FALSE(name.empty());
  REQUIRE(name != address);
  const std::vector<std::string> messages =
      messages_of_loading_text(two_contexts("http://" + name + ":9001", "http://" + address + ":9001"), "name-and-address");
  REQUIRE(messages.size() == 1);
  CHECK_THAT(messages[0], Catch::Contains(":3: context URL 'http://" + address + ":9001' is the same socket as context URL 'http://" +
                                          name + ":9001' at line 2 (both are " + address + ":9001)"));
}

TEST_CASE("sockets that differ in port or address, or are on machines apart, pass the socket check", "[partition][sockets]") {
  // Ports apart; loopback addresses apart (127.0.0.2 is another socket than 127.0.0.1).
  CHECK(messages_of_loading_text(two_contexts("http://localhost:9001", "http://127.0.0.1:9002"), "ports").empty());
  CHECK(messages_of_loading_text(two_contexts("http://127.0.0.1:9001", "http://127.0.0.2:9001"), "loopbacks").empty());
  // Names this machine does not know are compared as written: two of them are two machines, a wildcard on one takes
  // nothing from the other, and the loopback address of one is not that of the other.
  const std::string apart = R"(<Partition name="apart">
  <Context url="http://node-a.invalid:9001">
    <Endpoint protocol="tcp" hostname="0.0.0.0" port="9101" network="data"/>
  </Context>
  <Context url="http://node-b.invalid:9001">
    <Endpoint protocol="tcp" hostname="localhost" port="9101" network="data"/>
  </Context>
  <Context url="http://node-c.invalid:9001">
    <Endpoint protocol="tcp" hostname="127.0.0.1" port="9101" network="data"/>
  </Context>
</Partition>
)";
  const std::vector<std::string> apart_messages = messages_of_loading_text(apart, "apart");
  INFO((apart_messages.empty() ? std::string() : apart_messages[0]));
  CHECK(apart_messages.empty());
}

TEST_CASE("the XML well-formedness faults pugixml lets through are refused with their line, wherever they are",
          "[partition]") {
  const std::string head = "<Partition name=\"p\">\n  <Context url=\"http://h:1\">\n";
  const std::string tail = "\n  </Context>\n</Partition>";
  const struct {
    std::string element;
    std::string reason;
  } cases[] = {
      {"<Application class='a<b' id=\"1\"/>", "a '<' in the value of attribute 'class' of <Application>"},
      {"<Application class=\"a\" id=\"1\"><Properties><x>1 &lt 2</x></Properties></Application>",
       "an '&' that begins no reference"},
      {"<Application class=\"a&#xD800;\" id=\"1\"/>", "the character reference '&#xD800;' is not a character XML allows"},
      {"<Application class=\"a&#x;\" id=\"1\"/>", "the character reference '&#x;' is not a number"},
      {"<Application class=\"a\" id=\"1\" class=\"b\"/>", "attribute 'class' appears more than once on <Application>"},
      {"<Application class=\"a\x01" "b\" id=\"1\"/>", "a control character (\\x01) XML does not allow in a document"},
      {"<Application class=\"a\" id=\"1\"><Properties><x>bell\x07</x></Properties></Application>",
       "a control character (\\x07) XML does not allow in a document"},
      {"<Application class=\"a\xff" "b\" id=\"1\"/>", "a byte that is not UTF-8 (\\xff): a partition file is UTF-8"},
      {"<!-- \xc3\x28 --><Application class=\"a\" id=\"1\"/>", "a byte that is not UTF-8 (\\xc3): a partition file is UTF-8"},
  };
  for (const auto& c : cases) {
    INFO(c.element);
    CHECK(only_refusal(head + "    " + c.element + tail, "wf.xml").starts_with("wf.xml:3: malformed XML: " + c.reason));
  }
  // What is well formed passes the scan: references, '<' and '&' in comments and CDATA, '>' in values, tabs,
  // characters of several UTF-8 bytes.
  const std::string fine = head +
                           "    <!-- a < b & c\t\xc3\xa9\xe2\x82\xac --><Application class=\"a&amp;b&#38;&#x26;&lt;&gt;&quot;&apos;>\" id=\"1\">"
                           "<Properties><x><![CDATA[1 < 2 & 3]]></x></Properties></Application>" +
                           tail;
  try {
    parse_partition(fine, "fine.xml");
  } catch (const ConfigError& error) {
    CHECK(std::string(error.what()).find("malformed XML") == std::string::npos);
  }
}

TEST_CASE("a class's declared check refuses its properties at load, together and in any order, at the application",
          "[partition][catalogue]") {
  const std::string xml = R"(<Partition name="crossed">
  <Context url="http://a:9001">
    <Application class="test::Batch" id="10">
      <Properties>
        <maxEvents>4</maxEvents>
        <minEvents>2</minEvents>
      </Properties>
    </Application>
    <Application class="test::Batch" id="11" instance="1">
      <Properties>
        <minEvents>200</minEvents>
        <maxEvents>100</maxEvents>
      </Properties>
    </Application>
    <Application class="test::Batch" id="12" instance="2">
      <Properties>
        <minEvents>5000</minEvents>
      </Properties>
    </Application>
  </Context>
</Partition>)";
  TestCatalogue catalogue;
  ParamSpec low = spec("minEvents", ParamType::unsigned_integer, "8");
  low.check = [](const daqx::ParamSet& values) -> std::string {
    if (values.unsigned_integer("minEvents") <= values.unsigned_integer("maxEvents")) return {};
    return "minEvents (" + values.text("minEvents") + ") is above maxEvents (" + values.text("maxEvents") + ")";
  };
  catalogue.classes["test::Batch"] = {low, spec("maxEvents", ParamType::unsigned_integer, "4096")};
  const Partition partition = parse_partition(xml, "crossed.xml");
  const std::vector<std::string> messages = check_against_catalogue(partition, partition.contexts[0], catalogue);
  const auto at = [&](const std::string& needle, const std::string& reason) {
    return "crossed.xml:" + std::to_string(line_in(xml, needle)) + ": " + reason;
  };
  // Application 10 sets maxEvents below the default minEvents first, then minEvents: together they are fine.
  CHECK(messages == std::vector<std::string>{
                        at("id=\"11\"", "application 11 (application class test::Batch): minEvents (200) is above maxEvents (100)"),
                        at("id=\"12\"", "application 12 (application class test::Batch): minEvents (5000) is above maxEvents (4096)"),
                    });
}
