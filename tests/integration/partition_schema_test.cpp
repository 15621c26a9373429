// The partition schema (config/daqx-partition.xsd) accepts every partition the project ships or documents and
// refuses the mistakes a schema can see, checked with xmllint as a user or an editor would use it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <regex>
#include <set>

#include "../support/doc_blocks.hpp"
#include "../support/executive_process.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

std::string schema_path() { return source_directory() + "/config/daqx-partition.xsd"; }

std::string xmllint() {
  const std::string program = find_program("xmllint");
  if (program.empty())
    skip_for_environment("DAQX_TRANSPORT_REQUIRE", 77, "no xmllint (Debian's libxml2-utils) to validate with");
  return program;
}

ProcessResult validate(const std::string& path) {
  return run_process({xmllint(), "--noout", "--schema", schema_path(), path}, std::chrono::seconds(60));
}

// The lines a bad partition file says it has mistakes on ("<!-- expect: 7: ... -->").
std::set<int> expected_lines(const std::string& path) {
  std::set<int> lines;
  const std::string text = read_text(path);
  const std::regex expect(R"(expect: ([0-9]+):)");
  for (std::sregex_iterator it(text.begin(), text.end(), expect), end; it != end; ++it)
    lines.insert(std::stoi((*it)[1].str()));
  return lines;
}

// The lines xmllint reports errors at: "file:7: element Pool: Schemas validity error ..." or "file:5: parser error".
std::set<int> reported_lines(const std::string& output, const std::string& path) {
  std::set<int> lines;
  const std::regex error(std::regex_replace(path, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                         R"(:([0-9]+): .*error)");
  for (std::sregex_iterator it(output.begin(), output.end(), error), end; it != end; ++it)
    lines.insert(std::stoi((*it)[1].str()));
  return lines;
}

}  // namespace

TEST_CASE("the partition schema is itself a valid XML schema", "[schema]") {
  // xmllint validates a document against it; an empty partition file fails on the document, not on the schema.
  const ProcessResult result = validate(config_directory() + "/local-nton.xml");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK_FALSE(Contains("failed to compile").match(result.output));
}

TEST_CASE("the partition schema accepts every partition in config/", "[schema]") {
  const std::vector<std::string> files = files_ending_with(config_directory(), ".xml");
  REQUIRE(files.size() >= 5);
  for (const std::string& path : files) {
    const ProcessResult result = validate(path);
    INFO(result.output);
    CHECK(result.exit_code == 0);
  }
}

TEST_CASE("the partition schema accepts every partition in docs/, in files and in the Markdown", "[schema]") {
  std::size_t validated = 0;
  for (const std::string& path : files_ending_with(docs_directory(), ".xml")) {
    const ProcessResult result = validate(path);
    INFO(result.output);
    CHECK(result.exit_code == 0);
    ++validated;
  }
  for (const DocBlock& block : doc_partitions()) {
    INFO("the partition at " << block.where());
    // Padded so that xmllint's line numbers are the document's.
    const std::string name = block.file.substr(block.file.rfind('/') + 1) + "-" + std::to_string(block.line) + ".xml";
    const ProcessResult result = validate(write_file(name, aligned_text(block)));
    INFO(result.output);
    CHECK(result.exit_code == 0);
    ++validated;
  }
  CHECK(validated >= 2);
}

TEST_CASE("the partition schema accepts every partition fragment in docs/*.md where it belongs", "[schema]") {
  // A fragment of what a partition holds (<Control>, <Launch>) goes into a partition, one of what a context holds
  // (<Endpoint>, <Application>) into a context; the wrapping opens on the line before the block, so xmllint's
  // lines are the document's.
  const std::set<std::string> in_partition = {"Control", "Policy", "Launch", "Context"};
  const std::set<std::string> in_context = {"Endpoint", "Module", "Application"};
  std::size_t validated = 0;
  std::vector<std::string> mixed;
  for (const DocBlock& block : doc_blocks()) {
    if (block.language != "xml") continue;
    const std::vector<std::string> roots = top_level_elements(block.text);
    if (roots.empty() || roots.front() == "Partition") continue;
    const bool partition_level = std::all_of(roots.begin(), roots.end(), [&](const std::string& r) { return in_partition.count(r) == 1; });
    const bool context_level = std::all_of(roots.begin(), roots.end(), [&](const std::string& r) { return in_context.count(r) == 1; });
    INFO("the fragment at " << block.where());
    if (!partition_level && !context_level) {
      mixed.push_back(block.where());
      continue;
    }
    const bool has_context = std::find(roots.begin(), roots.end(), "Context") != roots.end();
    std::string text = std::string(static_cast<std::size_t>(block.line - 2), '\n');
    text += context_level ? "<Partition name=\"fragment\"><Context url=\"http://localhost:9001\">\n"
                          : "<Partition name=\"fragment\">\n";
    text += block.text;
    text += context_level ? "</Context></Partition>\n"
                          : has_context ? "</Partition>\n" : "<Context url=\"http://localhost:9001\"/></Partition>\n";
    const std::string name = block.file.substr(block.file.rfind('/') + 1) + "-" + std::to_string(block.line) + ".xml";
    const ProcessResult result = validate(write_file(name, text));
    INFO(result.output);
    CHECK(result.exit_code == 0);
    ++validated;
  }
  CHECK(validated >= 5);
  // A fragment holding elements of both levels (an endpoint and the policy beside it) has no one place to go:
  // write it as two blocks.
  INFO("fragments mixing partition-level and context-level elements: " << mixed.size());
  CHECK(mixed.empty());
}

TEST_CASE("the partition schema accepts every good partition of the tests", "[schema]") {
  const std::vector<std::string> files = files_ending_with(source_directory() + "/tests/data/partitions/good", ".xml");
  REQUIRE_FALSE(files.empty());
  for (const std::string& path : files) {
    const ProcessResult result = validate(path);
    INFO(result.output);
    CHECK(result.exit_code == 0);
  }
}

TEST_CASE("the partition schema refuses schema-level mistakes at the lines the executive reports them", "[schema]") {
  // Mistakes of form the schema sees: unknown or missing elements and attributes, values of the wrong form, text
  // where none belongs, duplicates and policy rules naming no context. (Others, such as two <Policy> or a
  // property value against its stated type, only the executive sees.)
  const std::string bad = source_directory() + "/tests/data/partitions/bad/";
  for (const char* name :
       {"unknown_element.xml", "unknown_attribute.xml", "missing_attribute.xml", "bad_port.xml", "bad_number.xml",
        "id_zero.xml", "bad_context_url.xml", "bad_allocator.xml", "bad_cores.xml", "bad_launch.xml",
        "control_tls_value.xml", "no_context.xml", "root_not_partition.xml", "duplicate_id.xml",
        "duplicate_endpoint.xml", "policy_unknown_context.xml", "duplicate_property.xml", "bad_expendable.xml"}) {
    const std::string path = bad + name;
    const ProcessResult result = validate(path);
    INFO(result.output);
    CHECK(result.exit_code != 0);
    const std::set<int> reported = reported_lines(result.output, path);
    const std::set<int> expected = expected_lines(path);
    CHECK_FALSE(reported.empty());
    for (int line : reported) {
      INFO("xmllint reports line " << line << ", which is not a line the executive reports");
      CHECK(expected.count(line) == 1);
    }
  }
  // These two are refused too, at lines of their own: xmllint names the element holding stray text, and the
  // parser stops where it sees a tag mismatch rather than where the executive's parser does.
  for (const char* name : {"stray_text.xml", "malformed_xml.xml"}) {
    const ProcessResult result = validate(bad + name);
    INFO(result.output);
    CHECK(result.exit_code != 0);
    CHECK_FALSE(reported_lines(result.output, bad + name).empty());
  }
}

TEST_CASE("a partition that names the schema with xsi:noNamespaceSchemaLocation is valid for xmllint and the executive",
          "[schema]") {
  // What an editor follows to find the schema; the executive accepts the attribute on <Partition>.
  const std::string path = source_directory() + "/tests/data/partitions/good/schema_location.xml";
  REQUIRE_THAT(read_text(path), Contains("xsi:noNamespaceSchemaLocation=\"../../../../config/daqx-partition.xsd\""));
  CHECK(::access((source_directory() + "/tests/data/partitions/good/../../../../config/daqx-partition.xsd").c_str(),
                 R_OK) == 0);
  const ProcessResult schema = validate(path);
  INFO(schema.output);
  CHECK(schema.exit_code == 0);
  const ProcessResult executive = run_process({executive_program(), "--check", "--config", path},
                                              std::chrono::seconds(60), {"DAQX_MODULE_PATH=" + module_directory()});
  INFO(executive.output);
  CHECK(executive.exit_code == 0);
}
