// Reads a partition file into a Partition, reporting every mistake with its line rather than the first one.
#include "daqx/executive/partition.hpp"

#include "daqx/services/number_text.hpp"
#include "daqx/services/text.hpp"

#include <pugixml.hpp>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "xml_well_formed.hpp"

namespace daqx::config {
namespace {

using strings::concatenate;
using strings::equals_ignoring_case;
using strings::quoted;
using strings::trim;

constexpr std::string_view kPortRange = "(1-65535)";
constexpr std::string_view kKnownTypes = "bool, int, unsigned, double, string, list, applications";
// Far above any real partition (a thousand applications take some hundred kilobytes), low enough that the text,
// its parse tree and its line index stay well within an executive's memory whatever a file holds.
constexpr std::size_t kMaxPartitionBytes = std::size_t{16} << 20;


std::string lowercase(std::string_view text) {
  std::string lowered(text);
  for (char& c : lowered)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return lowered;
}

std::string tag(std::string_view name) { return concatenate({"<", strings::printable(name), ">"}); }

// Every number of the partition is read by numbers::parse (the strict syntax of docs/configuration.md).
numbers::Parsed<std::uint16_t> parse_port(std::string_view text) { return numbers::parse<std::uint16_t>(text, 1); }

// "0", "1-3", "0,2,4-5": sorted and without repeats. CPUs beyond CPU_SETSIZE cannot be pinned to.
std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::set<int> cpus;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = trim(text.substr(start, comma - start));
    start = comma + 1;
    const std::size_t dash = item.find('-');
    const std::optional<int> first = numbers::parse<int>(item.substr(0, dash), 0, CPU_SETSIZE - 1).value;
    const std::optional<int> last =
        dash == std::string_view::npos ? first : numbers::parse<int>(item.substr(dash + 1), 0, CPU_SETSIZE - 1).value;
    if (!first || !last || *first > *last) return std::nullopt;
    for (int cpu = *first; cpu <= *last; ++cpu) cpus.insert(cpu);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

bool is_allocator(std::string_view allocator) noexcept {
  constexpr std::string_view numa_prefix = "numa:";
  constexpr std::string_view shared_prefix = "shm:";
  if (allocator == "shm") return true;
  // The shared-memory variants: "shm:hugepage", "shm:numa:<node>" (not "shm:heap", not "shm:shm:...").
  if (allocator.substr(0, shared_prefix.size()) == shared_prefix) {
    allocator.remove_prefix(shared_prefix.size());
    if (allocator == "heap") return false;
  }
  if (allocator == "heap" || allocator == "hugepage") return true;
  return allocator.substr(0, numa_prefix.size()) == numa_prefix &&
         numbers::parse<unsigned>(allocator.substr(numa_prefix.size())).value.has_value();
}

// Splits "http://host:port" or "https://host:port"; returns the reason when the URL is not of that form.
std::string split_context_url(std::string_view url, std::string& host, std::uint16_t& port, bool& tls) {
  constexpr std::string_view plain = "http://";
  constexpr std::string_view secure = "https://";
  const std::string form_error =
      concatenate({"context URL ", quoted(url), " is not of the form http://host:port or https://host:port"});
  tls = url.substr(0, secure.size()) == secure;
  if (!tls && url.substr(0, plain.size()) != plain) return form_error;
  const std::string_view authority = url.substr(tls ? secure.size() : plain.size());
  if (authority.find_first_of("/?#@ \t") != std::string_view::npos) return form_error;
  std::size_t colon = 0;
  if (!authority.empty() && authority.front() == '[') {  // an IPv6 literal: http://[::1]:9000
    const std::size_t bracket = authority.find(']');
    if (bracket == std::string_view::npos || bracket + 1 >= authority.size() || authority[bracket + 1] != ':')
      return form_error;
    host = std::string(authority.substr(1, bracket - 1));
    colon = bracket + 1;
  } else {
    colon = authority.rfind(':');
    if (colon == std::string_view::npos) return form_error;
    host = std::string(authority.substr(0, colon));
  }
  if (host.empty()) return form_error;
  const std::string_view port_text = authority.substr(colon + 1);
  const numbers::Parsed<std::uint16_t> parsed = parse_port(port_text);
  if (!parsed)
    return concatenate({"context URL ", quoted(url), " has port ", quoted(port_text), ", which is not a port number ",
                        kPortRange, ": ", parsed.error});
  port = *parsed;
  return {};
}

// Byte offsets where lines begin, to turn pugixml's offsets into the line numbers people read. 32 bits suffice:
// text longer than kMaxPartitionBytes is refused before it is indexed.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts_.push_back(static_cast<std::uint32_t>(i + 1));
  }
  int line_of(std::ptrdiff_t offset) const {
    if (offset < 0) return 1;
    const auto after = std::upper_bound(starts_.begin(), starts_.end(), static_cast<std::uint64_t>(offset),
                                        [](std::uint64_t value, std::uint32_t start) { return value < start; });
    return static_cast<int>(after - starts_.begin());
  }

 private:
  std::vector<std::uint32_t> starts_;
};

int line_at(std::string_view text, std::size_t offset) {
  const std::string_view before = text.substr(0, offset);
  return 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
}

// What the text must be before pugixml sees it: not too large, UTF-8, and without a document type. pugixml
// neither fetches nor expands DTDs and entities, but a partition never needs one, and one is how files that
// mean harm begin (entity bombs, external entities); refused outright, it cannot be half-understood.
void refuse_unreadable_text(std::string_view xml, const std::string& file) {
  const auto refuse = [&](int line, std::initializer_list<std::string_view> reason) {
    throw ConfigError({concatenate({file, ":", std::to_string(line), ": ", concatenate(reason)})});
  };
  if (xml.size() > kMaxPartitionBytes)
    refuse(line_at(xml, kMaxPartitionBytes),
           {"the file goes on past ", std::to_string(kMaxPartitionBytes >> 20),
            " MiB, the most a partition file may hold (is it the right file?)"});
  struct Mark {
    std::string_view bytes;
    std::string_view encoding;
  };
  // UTF-32 first: its little-endian mark begins with UTF-16's.
  for (const Mark& mark : {Mark{std::string_view("\xFF\xFE\0\0", 4), "UTF-32LE"},
                           Mark{std::string_view("\0\0\xFE\xFF", 4), "UTF-32BE"}, Mark{"\xFF\xFE", "UTF-16LE"},
                           Mark{"\xFE\xFF", "UTF-16BE"}})
    if (xml.substr(0, mark.bytes.size()) == mark.bytes)
      refuse(1, {"the file is ", mark.encoding, " (by its byte-order mark); a partition file is UTF-8: convert it, "
                 "e.g. iconv -f ", mark.encoding, " -t UTF-8"});
  if (const std::size_t nul = xml.find('\0'); nul != std::string_view::npos)
    refuse(line_at(xml, nul), {"a NUL byte: a partition file is UTF-8 text (is it UTF-16 without a byte-order "
                               "mark, or not text at all?)"});
  // Anywhere, comments included: a false alarm in a comment costs an edit, a missed one could cost a host.
  constexpr std::string_view doctype = "<!DOCTYPE";
  for (std::size_t at = xml.find("<!"); at != std::string_view::npos; at = xml.find("<!", at + 2))
    if (equals_ignoring_case(xml.substr(at, doctype.size()), doctype))
      refuse(line_at(xml, at), {"a <!DOCTYPE>: a partition file may not have one (no DTD or entity is ever read, ",
                                "fetched or expanded)"});
  // pugixml reads leniently: what it would take of XML that is not well formed is refused here.
  if (const std::optional<XmlFault> fault = first_well_formedness_fault(xml))
    refuse(line_at(xml, fault->offset), {"malformed XML: ", fault->reason});
}

struct Finding {
  int line = 0;
  std::string reason;
};

class PartitionReader {
 public:
  PartitionReader(std::string_view xml, const std::string& file) : file_(file), buffer_(xml), lines_(xml) {}

  Partition read() {
    // In place, so that attribute names point into our buffer and give their own line.
    const pugi::xml_parse_result result = document_.load_buffer_inplace(
        buffer_.data(), buffer_.size(), pugi::parse_default | pugi::parse_declaration, pugi::encoding_utf8);
    if (!result) {
      report(lines_.line_of(result.offset), {"malformed XML: ", result.description()});
      fail();
    }
    check_declaration();
    const pugi::xml_node root = document_.document_element();
    for (pugi::xml_node top : document_.children()) {
      if (top.type() == pugi::node_element && top != root)
        report(line_of(top), {"a second top-level element ", tag(top.name()), "; a partition file holds one <Partition>"});
      else if (top.type() == pugi::node_pcdata || top.type() == pugi::node_cdata)
        report_text(top, "the document");
    }
    if (std::string_view(root.name()) != "Partition") {
      report(line_of(root), {"the root element is ", tag(root.name()), ", expected <Partition>"});
      fail();
    }
    read_partition(root);
    if (!findings_.empty()) fail();
    return std::move(partition_);
  }

 private:
  using ChildReader = std::function<bool(pugi::xml_node child, std::string_view name)>;

  // The text is read as UTF-8 whatever it declares: a declaration of another encoding would have its names
  // silently read differently from what the editor shows, so it is refused.
  void check_declaration() {
    const pugi::xml_node declaration = document_.first_child();
    if (declaration.type() != pugi::node_declaration) return;
    const pugi::xml_attribute encoding = declaration.attribute("encoding");
    if (encoding && !equals_ignoring_case(encoding.value(), "UTF-8") && !equals_ignoring_case(encoding.value(), "UTF8"))
      report(line_of(encoding, declaration), {"the XML declaration says encoding ", quoted(encoding.value()),
                                              "; a partition file is UTF-8: convert it and declare UTF-8"});
  }

  void report(int line, std::initializer_list<std::string_view> reason) {
    findings_.push_back({line, concatenate(reason)});
  }

  [[noreturn]] void fail() {
    std::stable_sort(findings_.begin(), findings_.end(),
                     [](const Finding& a, const Finding& b) { return a.line < b.line; });
    std::vector<std::string> messages;
    messages.reserve(findings_.size());
    for (const Finding& finding : findings_)
      messages.push_back(concatenate({file_, ":", std::to_string(finding.line), ": ", finding.reason}));
    throw ConfigError(std::move(messages));
  }

  int line_of(pugi::xml_node node) const { return lines_.line_of(node.offset_debug()); }

  // An attribute's own line when it lies in our buffer (it always does with in-place UTF-8 parsing),
  // else its element's.
  int line_of(pugi::xml_attribute attribute, pugi::xml_node owner) const {
    const char* name = attribute.name();
    if (name >= buffer_.data() && name < buffer_.data() + buffer_.size())
      return lines_.line_of(name - buffer_.data());
    return line_of(owner);
  }

  SourceLocation where(pugi::xml_node node) const { return {file_, line_of(node)}; }

  void report_text(pugi::xml_node text, std::string_view parent) {
    std::string_view content = trim(text.value());
    if (content.empty()) return;
    constexpr std::size_t shown = 40;
    std::string excerpt(content.substr(0, shown));
    if (content.size() > shown) excerpt += "...";
    // The node starts right after the previous tag; the text itself may begin some lines further down.
    const std::string_view raw = text.value();
    const std::string_view leading = raw.substr(0, raw.find_first_not_of(" \t\r\n"));
    const int line = line_of(text) + static_cast<int>(std::count(leading.begin(), leading.end(), '\n'));
    report(line, {"unexpected text ", quoted(excerpt), " in ", parent});
  }

  // Visits the child elements; `reader` returns false for an element it does not know. Stray text is a
  // mistake too: it is often a value put in the wrong place.
  void read_children(pugi::xml_node element, const ChildReader& reader) {
    for (pugi::xml_node child : element.children()) {
      if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata) {
        report_text(child, tag(element.name()));
      } else if (child.type() == pugi::node_element) {
        if (!reader(child, child.name()))
          report(line_of(child), {"unknown element ", tag(child.name()), " in ", tag(element.name())});
      }
    }
  }

  // Reports unknown, repeated, missing and empty required attributes; returns whether all required ones
  // are present and not empty.
  bool check_attributes(pugi::xml_node element, std::initializer_list<std::string_view> required,
                        std::initializer_list<std::string_view> optional) {
    const auto listed = [](std::initializer_list<std::string_view> names, std::string_view name) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    std::set<std::string_view> seen;
    for (pugi::xml_attribute attribute : element.attributes()) {
      const std::string_view name = attribute.name();
      if (!listed(required, name) && !listed(optional, name))
        report(line_of(attribute, element), {"unknown attribute ", quoted(name), " on ", tag(element.name())});
      else if (!seen.insert(name).second)
        report(line_of(attribute, element),
               {"attribute ", quoted(name), " appears more than once on ", tag(element.name())});
    }
    bool complete = true;
    for (std::string_view name : required) {
      const pugi::xml_attribute attribute = element.attribute(std::string(name).c_str());
      if (!attribute) {
        report(line_of(element), {tag(element.name()), " is missing the required attribute ", quoted(name)});
        complete = false;
      } else if (std::string_view(attribute.value()).empty()) {
        report(line_of(attribute, element), {"attribute ", quoted(name), " of ", tag(element.name()), " is empty"});
        complete = false;
      }
    }
    return complete;
  }

  static std::string_view value_of(pugi::xml_node element, const char* name) { return element.attribute(name).value(); }

  void read_partition(pugi::xml_node root) {
    partition_.file = file_;
    partition_.where = where(root);
    // What an editor needs to find the schema (config/daqx-partition.xsd): the XML Schema instance namespace
    // and where the schema is. Nothing else of XML namespaces is part of the format.
    check_attributes(root, {"name"}, {"xmlns:xsi", "xsi:noNamespaceSchemaLocation"});
    if (const pugi::xml_attribute xsi = root.attribute("xmlns:xsi");
        xsi && std::string_view(xsi.value()) != "http://www.w3.org/2001/XMLSchema-instance")
      report(line_of(xsi, root), {"xmlns:xsi is ", quoted(xsi.value()),
                                  ", not the XML Schema instance namespace http://www.w3.org/2001/XMLSchema-instance"});
    partition_.name = value_of(root, "name");
    int policy_line = 0;
    int launch_line = 0;
    read_children(root, [&](pugi::xml_node child, std::string_view name) {
      if (name == "Control") {
        if (partition_.control.present)
          report(line_of(child), {"a partition has at most one <Control>; the first is at line ",
                                  std::to_string(partition_.control.where.line)});
        else
          read_control(child);
      } else if (name == "Policy") {
        if (policy_line != 0)
          report(line_of(child), {"a partition has at most one <Policy>; the first is at line ",
                                  std::to_string(policy_line)});
        else
          policy_line = line_of(child);
        read_policy(child);
      } else if (name == "Context") {
        read_context(child);
      } else if (name == "Launch") {
        if (launch_line != 0)
          report(line_of(child), {"a partition has at most one <Launch>; the first is at line ",
                                  std::to_string(launch_line)});
        else
          launch_line = line_of(child);
        read_launch(child);
      } else {
        return false;
      }
      return true;
    });
    if (partition_.contexts.empty())
      report(line_of(root), {"partition ", quoted(partition_.name), " has no <Context>"});
    check_policy_contexts();
    check_expendable_classes();
    check_context_schemes();
  }

  // An attribute that must be one of a few words; reports anything else and returns the index of the word.
  std::size_t read_choice(pugi::xml_node element, const char* name, std::initializer_list<std::string_view> words) {
    const pugi::xml_attribute attribute = element.attribute(name);
    if (!attribute) return 0;
    const std::string_view value = attribute.value();
    std::size_t index = 0;
    std::string listed;
    for (std::string_view word : words) {
      if (value == word) return index;
      listed += concatenate({listed.empty() ? "" : " or ", word});
      ++index;
    }
    report(line_of(attribute, element), {name, " ", quoted(value), " is not ", listed});
    return 0;
  }

  // A file named by <Control>: relative paths are taken from the partition file's folder, so a partition and its
  // token or certificates can move together.
  std::string control_path(pugi::xml_node element, const char* name) {
    const pugi::xml_attribute attribute = element.attribute(name);
    const std::string value = attribute.value();
    if (attribute && value.empty())
      report(line_of(attribute, element), {"attribute ", quoted(name), " of <Control> is empty"});
    if (value.empty() || value.front() == '/') return value;
    // Not std::filesystem: its <iomanip> brings std::quoted, which ADL would find beside ours.
    const std::size_t slash = file_.rfind('/');
    return slash == std::string::npos ? value : concatenate({std::string_view(file_).substr(0, slash + 1), value});
  }

  void read_control(pugi::xml_node element) {
    ControlConfig& control = partition_.control;
    control.present = true;
    control.where = where(element);
    check_attributes(element, {}, {"tokenFile", "reads", "tls", "certificate", "key", "ca", "bind"});
    control.token_file = control_path(element, "tokenFile");
    control.certificate = control_path(element, "certificate");
    control.key = control_path(element, "key");
    control.ca = control_path(element, "ca");
    control.reads = read_choice(element, "reads", {"open", "token"}) == 1 ? ControlConfig::Reads::token
                                                                         : ControlConfig::Reads::open;
    control.tls = read_choice(element, "tls", {"false", "true"}) == 1;
    control.bind = read_choice(element, "bind", {"context", "any"}) == 1 ? ControlConfig::Bind::any
                                                                        : ControlConfig::Bind::context;
    const int line = control.where.line;
    if (control.tls && (control.certificate.empty() || control.key.empty()))
      report(line, {"<Control tls=\"true\"> needs both 'certificate' and 'key' (PEM files the executives serve)"});
    // Certificates without tls="true" would leave the port in plain HTTP while the file looks protected.
    for (const char* name : {"certificate", "key", "ca"})
      if (!control.tls && !std::string_view(element.attribute(name).value()).empty())
        report(line_of(element.attribute(name), element),
               {"attribute ", quoted(name), " of <Control> needs tls=\"true\""});
    read_children(element, [](pugi::xml_node, std::string_view) { return false; });
  }

  // One rule for the whole partition: tls="true" and https:// go together, so no context is reached in plain
  // HTTP by mistake, and a client knows from the URL alone what to speak.
  void check_context_schemes() {
    const ControlConfig& control = partition_.control;
    for (const ContextConfig& context : partition_.contexts) {
      if (context.host.empty()) continue;  // the URL was refused already
      if (context.tls && !control.tls)
        report(context.where.line,
               {"context URL ", quoted(context.url), " asks for TLS (https) but the partition has no ",
                "<Control tls=\"true\" certificate=... key=...>"});
      else if (!context.tls && control.tls)
        report(context.where.line,
               {"context URL ", quoted(context.url), " is plain HTTP but <Control> at line ",
                std::to_string(control.where.line), " sets tls=\"true\": write https://"});
    }
  }

  void read_policy(pugi::xml_node policy) {
    check_attributes(policy, {}, {});
    read_children(policy, [&](pugi::xml_node child, std::string_view name) {
      if (name == "Thread") {
        read_rule(child, PolicyRule::Kind::thread);
      } else if (name == "Pool") {
        read_rule(child, PolicyRule::Kind::pool);
      } else {
        return false;
      }
      return true;
    });
  }

  void read_rule(pugi::xml_node element, PolicyRule::Kind kind) {
    PolicyRule rule;
    rule.kind = kind;
    rule.where = where(element);
    const bool thread = kind == PolicyRule::Kind::thread;
    if (thread)
      check_attributes(element, {"pattern", "cores"}, {"context"});
    else
      check_attributes(element, {"pattern", "allocator"}, {"context"});
    rule.pattern = value_of(element, "pattern");
    rule.context = value_of(element, "context");
    if (thread) {
      const std::string_view cores = value_of(element, "cores");
      if (std::optional<std::vector<int>> cpus = parse_cpu_list(cores)) {
        rule.cores = std::move(*cpus);
      } else if (!cores.empty()) {  // a missing or empty list is reported as such above
        report(line_of(element.attribute("cores"), element),
               {"cores ", quoted(cores), " is not a CPU list (expected CPUs 0 to ", std::to_string(CPU_SETSIZE - 1),
                " and ranges, e.g. 0, 1-3 or 0,2,4-5)"});
      }
    } else {
      rule.allocator = value_of(element, "allocator");
      if (!rule.allocator.empty() && !is_allocator(rule.allocator))
        report(line_of(element.attribute("allocator"), element),
               {"allocator ", quoted(rule.allocator), " is not heap, hugepage, numa:<node>, shm, shm:hugepage or shm:numa:<node>"});
    }
    read_children(element, [](pugi::xml_node, std::string_view) { return false; });
    partition_.policy.push_back(std::move(rule));
  }

  // <Launch>: only daqx-launch acts on it, but a mistake in it is a mistake in the partition, found by anyone.
  void read_launch(pugi::xml_node element) {
    LaunchConfig& launch = partition_.launch;
    launch.where = where(element);
    check_attributes(element, {}, {"engine"});
    launch.engine = value_of(element, "engine");
    if (element.attribute("engine") && launch.engine != "local" && launch.engine != "ssh" && launch.engine != "slurm")
      report(line_of(element.attribute("engine"), element),
             {"engine ", quoted(launch.engine), " is not local, ssh or slurm"});
    read_children(element, [&](pugi::xml_node child, std::string_view name) {
      if (name == "Host") {
        read_launch_host(child);
      } else if (name == "Restart") {
        read_launch_restart(child);
      } else if (name == "Expendable") {
        read_launch_expendable(child);
      } else {
        return false;
      }
      return true;
    });
  }

  void read_launch_host(pugi::xml_node element) {
    LaunchHostRule rule;
    rule.where = where(element);
    check_attributes(element, {"pattern"}, {"sshTarget", "prefix", "executive", "workDir"});
    rule.pattern = value_of(element, "pattern");
    rule.ssh_target = value_of(element, "sshTarget");
    rule.prefix = value_of(element, "prefix");
    rule.executive = value_of(element, "executive");
    rule.work_dir = value_of(element, "workDir");
    for (const char* path : {"prefix", "executive", "workDir"}) {
      const pugi::xml_attribute attribute = element.attribute(path);
      if (attribute && std::string_view(attribute.value()).substr(0, 1) != "/")
        report(line_of(attribute, element), {path, " ", quoted(attribute.value()),
                                             " is not an absolute path (it names a place on the host)"});
    }
    read_children(element, [&](pugi::xml_node child, std::string_view name) {
      if (name != "Env") return false;
      if (check_attributes(child, {"name"}, {"value"})) {
        const std::string_view variable = value_of(child, "name");
        const bool valid = std::all_of(variable.begin(), variable.end(), [](char c) {
          return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        }) && !(variable[0] >= '0' && variable[0] <= '9');
        if (!valid)
          report(line_of(child.attribute("name"), child), {"environment variable name ", quoted(variable),
                                                           " is not a name (letters, digits and _)"});
        rule.environment.emplace_back(std::string(variable), value_of(child, "value"));
      }
      read_children(child, [](pugi::xml_node, std::string_view) { return false; });
      return true;
    });
    partition_.launch.hosts.push_back(std::move(rule));
  }

  void read_launch_restart(pugi::xml_node element) {
    LaunchRestartRule rule;
    rule.where = where(element);
    check_attributes(element, {"pattern", "policy"}, {"maxRestarts", "backoff", "maxBackoff"});
    rule.pattern = value_of(element, "pattern");
    const std::string_view policy = value_of(element, "policy");
    if (policy == "never") {
      rule.policy = LaunchRestartRule::Policy::never;
    } else if (policy == "on-failure") {
      rule.policy = LaunchRestartRule::Policy::on_failure;
    } else if (!policy.empty()) {
      report(line_of(element.attribute("policy"), element), {"restart policy ", quoted(policy), " is not never or on-failure"});
    }
    if (const pugi::xml_attribute count = element.attribute("maxRestarts")) {
      if (const numbers::Parsed<std::uint32_t> parsed = numbers::parse<std::uint32_t>(count.value()))
        rule.max_restarts = *parsed;
      else
        report(line_of(count, element), {"maxRestarts: ", parsed.error});
    }
    const auto seconds = [&](const char* name, double& into) {
      const pugi::xml_attribute attribute = element.attribute(name);
      if (!attribute) return;
      if (const numbers::Parsed<double> parsed = numbers::parse_real(attribute.value(), 0, 3600))
        into = *parsed;
      else
        report(line_of(attribute, element), {name, " (seconds, 0 to 3600): ", parsed.error});
    };
    seconds("backoff", rule.backoff_seconds);
    seconds("maxBackoff", rule.max_backoff_seconds);
    read_children(element, [](pugi::xml_node, std::string_view) { return false; });
    partition_.launch.restarts.push_back(std::move(rule));
  }

  void read_launch_expendable(pugi::xml_node element) {
    LaunchExpendableRule rule;
    rule.where = where(element);
    check_attributes(element, {"class"}, {"max", "min"});
    rule.class_name = value_of(element, "class");
    const auto count = [&](const char* name, std::optional<std::uint32_t>& into) {
      const pugi::xml_attribute attribute = element.attribute(name);
      if (!attribute) return;
      const numbers::Parsed<std::uint32_t> parsed = numbers::parse<std::uint32_t>(attribute.value(), 1);
      into = parsed.value;
      if (!parsed) report(line_of(attribute, element), {name, ": ", parsed.error});
    };
    count("max", rule.max_lost);
    count("min", rule.min_left);
    const bool has_max = element.attribute("max"), has_min = element.attribute("min");
    if (has_max == has_min)
      report(line_of(element), {"<Expendable> needs one of 'max' (how many may be lost) and 'min' (how many must remain)",
                                has_max ? ", not both" : ""});
    if (!rule.class_name.empty()) {
      for (const LaunchExpendableRule& earlier : partition_.launch.expendables)
        if (earlier.class_name == rule.class_name)
          report(line_of(element), {"the <Expendable> rule for class ", quoted(rule.class_name),
                                    " repeats the one at line ", std::to_string(earlier.where.line)});
    }
    read_children(element, [](pugi::xml_node, std::string_view) { return false; });
    partition_.launch.expendables.push_back(std::move(rule));
  }

  // Expendable rules count the applications of their class, so they are checked once every context is read:
  // a class with none, or a rule that would let every one of them be lost (or none), is a mistake.
  void check_expendable_classes() {
    for (LaunchExpendableRule& rule : partition_.launch.expendables) {
      if (rule.class_name.empty() || rule.max_lost.value_or(1) == 0 || rule.min_left.value_or(1) == 0 ||
          rule.max_lost.has_value() == rule.min_left.has_value())
        continue;  // reported where it was read
      std::uint32_t applications = 0;
      for (const ContextConfig& context : partition_.contexts)
        for (const ApplicationConfig& application : context.applications)
          applications += application.class_name == rule.class_name ? 1 : 0;
      const std::string count = std::to_string(applications);
      if (applications == 0) {
        report(rule.where.line, {"the <Expendable> rule names class ", quoted(rule.class_name),
                                 ", of which this partition has no application"});
      } else if (rule.max_lost && *rule.max_lost >= applications) {
        report(rule.where.line, {"max ", std::to_string(*rule.max_lost), " would let every ", rule.class_name, " (", count,
                                 " in this partition) be lost: at most ", std::to_string(applications - 1)});
      } else if (rule.min_left && *rule.min_left >= applications) {
        report(rule.where.line, {"min ", std::to_string(*rule.min_left), " lets no ", rule.class_name, " (", count,
                                 " in this partition) be lost: at most ", std::to_string(applications - 1)});
      } else {
        rule.losses_allowed = rule.max_lost ? *rule.max_lost : applications - *rule.min_left;
      }
    }
  }

  // Contexts may follow the policy, so rules are matched against them once all are read.
  void check_policy_contexts() {
    for (const PolicyRule& rule : partition_.policy)
      if (!rule.context.empty() && partition_.find_context(rule.context) == nullptr)
        report(rule.where.line, {"the policy rule for ", quoted(rule.pattern), " names context ", quoted(rule.context),
                                 ", which is not a context of this partition"});
  }

  void read_context(pugi::xml_node element) {
    ContextConfig context;
    context.where = where(element);
    if (check_attributes(element, {"url"}, {})) {
      context.url = value_of(element, "url");
      const int url_line = line_of(element.attribute("url"), element);
      const std::string reason = split_context_url(context.url, context.host, context.port, context.tls);
      if (!reason.empty()) {
        report(url_line, {reason});
      } else {
        const std::string key = concatenate({lowercase(context.host), ":", std::to_string(context.port)});
        const auto [first, inserted] = context_lines_.emplace(key, context.where.line);
        if (!inserted)
          report(url_line,
                 {"context URL ", quoted(context.url), " repeats the context at line ", std::to_string(first->second)});
      }
    }
    read_children(element, [&](pugi::xml_node child, std::string_view name) {
      if (name == "Endpoint") {
        read_endpoint(child, context);
      } else if (name == "Module") {
        read_module(child, context);
      } else if (name == "Application") {
        read_application(child, context);
      } else {
        return false;
      }
      return true;
    });
    check_networks(context);
    partition_.contexts.push_back(std::move(context));
  }

  // Endpoints may follow the applications that use them, hence a check once the context is read.
  void check_networks(const ContextConfig& context) {
    for (const ApplicationConfig& application : context.applications) {
      if (application.network.empty()) continue;
      const bool served = std::any_of(context.endpoints.begin(), context.endpoints.end(),
                                      [&](const EndpointConfig& endpoint) { return endpoint.network == application.network; });
      if (!served)
        report(application.where.line,
               {"application ", std::to_string(application.id), " (", application.class_name, ") uses network ",
                quoted(application.network), " but context ", context.url, " has no endpoint on it"});
    }
  }

  void read_endpoint(pugi::xml_node element, ContextConfig& context) {
    EndpointConfig endpoint;
    endpoint.where = where(element);
    check_attributes(element, {"protocol", "hostname", "port", "network"}, {});
    endpoint.protocol = value_of(element, "protocol");
    endpoint.hostname = value_of(element, "hostname");
    endpoint.network = value_of(element, "network");
    const pugi::xml_attribute port = element.attribute("port");
    if (port && !std::string_view(port.value()).empty()) {
      if (const numbers::Parsed<std::uint16_t> parsed = parse_port(port.value())) {
        endpoint.port = *parsed;
      } else {
        report(line_of(port, element), {"port ", kPortRange, ": ", parsed.error});
      }
    }
    if (!endpoint.hostname.empty() && endpoint.port != 0) {
      const std::string key = concatenate({lowercase(endpoint.hostname), ":", std::to_string(endpoint.port)});
      const auto [first, inserted] = endpoint_lines_.emplace(key, endpoint.where.line);
      if (!inserted)
        report(endpoint.where.line, {"endpoint ", endpoint.hostname, ":", std::to_string(endpoint.port),
                                     " is already declared at line ", std::to_string(first->second)});
    }
    endpoint.properties = read_properties_of(element);
    context.endpoints.push_back(std::move(endpoint));
  }

  void read_module(pugi::xml_node element, ContextConfig& context) {
    ModuleConfig module;
    module.where = where(element);
    check_attributes(element, {"path"}, {});
    module.path = value_of(element, "path");
    read_children(element, [](pugi::xml_node, std::string_view) { return false; });
    context.modules.push_back(std::move(module));
  }

  // An id or instance number into `number`; reports and returns false when it is not one.
  bool read_number(pugi::xml_node element, const char* name, std::uint32_t& number) {
    const pugi::xml_attribute attribute = element.attribute(name);
    const std::string_view text = attribute.value();
    const numbers::Parsed<std::uint32_t> parsed = numbers::parse<std::uint32_t>(text);
    if (parsed) {
      number = *parsed;
      return true;
    }
    report(line_of(attribute, element), {name, ": ", parsed.error});
    return false;
  }

  void read_application(pugi::xml_node element, ContextConfig& context) {
    ApplicationConfig application;
    application.where = where(element);
    check_attributes(element, {"class", "id"}, {"instance", "network"});
    application.class_name = value_of(element, "class");
    application.network = value_of(element, "network");

    // An id of 0 stands for "none valid" from here on: real ids start at 1.
    std::uint32_t id = 0;
    if (!value_of(element, "id").empty() && read_number(element, "id", id) && id == 0)
      report(line_of(element.attribute("id"), element), {"id 0 is not allowed: application ids start at 1"});
    std::uint32_t instance = 0;
    const bool instance_valid = !element.attribute("instance") || read_number(element, "instance", instance);

    application.id = id;
    application.instance = instance;
    if (id != 0) {
      const auto [first, inserted] = id_lines_.emplace(id, application.where.line);
      if (!inserted)
        report(application.where.line, {"application id ", std::to_string(id),
                                        " is already used by the application at line ", std::to_string(first->second)});
    }
    if (instance_valid && !application.class_name.empty()) {
      const auto [first, inserted] =
          class_instance_lines_.emplace(std::make_pair(application.class_name, instance), application.where.line);
      if (!inserted)
        report(application.where.line, {"application ", application.class_name, " instance ", std::to_string(instance),
                                        " is already declared at line ", std::to_string(first->second)});
    }
    application.properties = read_properties_of(element);
    context.applications.push_back(std::move(application));
  }

  // The one <Properties> an Endpoint or Application may have; any other child is unknown.
  std::vector<Property> read_properties_of(pugi::xml_node owner) {
    std::vector<Property> properties;
    int first_line = 0;
    read_children(owner, [&](pugi::xml_node child, std::string_view name) {
      if (name != "Properties") return false;
      if (first_line != 0) {
        report(line_of(child),
               {tag(owner.name()), " has more than one <Properties>; the first is at line ", std::to_string(first_line)});
      } else {
        first_line = line_of(child);
      }
      check_attributes(child, {}, {});
      read_children(child, [&](pugi::xml_node property, std::string_view) {
        properties.push_back(read_property(property));
        return true;  // any element name is a parameter name
      });
      return true;
    });
    std::map<std::string_view, int> first_lines;
    for (const Property& property : properties) {
      const auto [first, inserted] = first_lines.emplace(property.name, property.where.line);
      if (!inserted)
        report(property.where.line, {"property ", quoted(property.name), " is set more than once; the first is at line ",
                                     std::to_string(first->second)});
    }
    return properties;
  }

  Property read_property(pugi::xml_node element) {
    Property property;
    property.name = element.name();
    property.where = where(element);
    check_attributes(element, {}, {"type"});
    std::string text;
    for (pugi::xml_node part : element.children()) {
      if (part.type() == pugi::node_pcdata || part.type() == pugi::node_cdata)
        text += part.value();
      else if (part.type() == pugi::node_element)
        report(line_of(part), {"property ", quoted(property.name), " holds text, not the element ", tag(part.name())});
    }
    property.value = std::string(trim(text));
    if (const pugi::xml_attribute type = element.attribute("type")) {
      property.type = param_type_from_string(type.value());
      if (!property.type) {
        report(line_of(type, element), {"property ", quoted(property.name), " has the unknown type ", quoted(type.value()),
                                        " (known: ", kKnownTypes, ")"});
      } else {
        // Only the stated type is known here; the declaration (bounds too) is checked once modules are loaded.
        ParamSpec stated;
        stated.name = property.name;
        stated.type = *property.type;
        const std::string reason = validate_param(stated, property.value);
        if (!reason.empty())
          report(property.where.line,
                 {"property ", quoted(property.name), " (type ", to_string(*property.type), "): ", reason});
      }
    }
    return property;
  }

  std::string file_;
  std::string buffer_;  // parsed in place: it must outlive document_
  LineIndex lines_;
  pugi::xml_document document_;
  std::vector<Finding> findings_;
  Partition partition_;
  // Where each thing that must be unique in the partition was first seen, to name it in the message.
  std::map<std::string, int> context_lines_;  // lower-case host:port
  std::map<std::string, int> endpoint_lines_;  // lower-case hostname:port
  std::map<std::uint32_t, int> id_lines_;
  std::map<std::pair<std::string, std::uint32_t>, int> class_instance_lines_;
};

}  // namespace

Partition parse_partition(std::string_view xml, const std::string& file_name) {
  refuse_unreadable_text(xml, file_name);
  return PartitionReader(xml, file_name).read();
}

Partition load_partition(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw ConfigError({concatenate({path, ": cannot read: ", std::strerror(errno)})});
  // At most one byte past the limit, whatever the file is (/dev/zero, a file still being written): parse_partition
  // refuses what is over it, with the line.
  std::string content;
  char chunk[65536];
  std::size_t count = 0;
  while (content.size() <= kMaxPartitionBytes && (count = std::fread(chunk, 1, sizeof chunk, file)) > 0)
    content.append(chunk, count);
  const int read_error = std::ferror(file) != 0 ? errno : 0;  // a directory opens, then fails here with EISDIR
  std::fclose(file);
  if (read_error != 0) throw ConfigError({concatenate({path, ": cannot read: ", std::strerror(read_error)})});
  Partition partition = parse_partition(content, path);
  // Only of a file: it names hosts to look up, which parsing text alone (the fuzz target) must not do.
  if (std::vector<std::string> clashes = check_same_sockets(partition); !clashes.empty()) throw ConfigError(std::move(clashes));
  return partition;
}

}  // namespace daqx::config
