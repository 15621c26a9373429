// Partitions a text editor (or someone meaning harm) can produce: encodings, byte-order marks, entity tricks,
// enormous files, deep nesting, numbers out of range, modules that are no shared objects, policies naming CPUs
// and NUMA nodes the machine lacks. Each ends in "file:line: reason" from a real executive, never a crash, a hang
// or memory without bound.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string_view>

#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"
#include "daqx/services/text.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

std::string url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

// A partition of one context on loopback whose body starts at line 3.
std::string partition_text(std::uint16_t port, const std::string& body, const std::string& policy = "") {
  return "<Partition name=\"hostile\">\n" + policy + "  <Context url=\"" + url(port) + "\">\n" + body +
         "  </Context>\n</Partition>\n";
}

const std::string kProbe = "    <Module path=\"libdaqx_test_probe.so\"/>\n";

// Bounded in time; a hang would end as a timeout, which every check below refuses.
ProcessResult check(const std::string& path, const std::string& context = "") {
  std::vector<std::string> argv = {executive_program(), "--check", "--config", path};
  if (!context.empty()) argv.insert(argv.end(), {"--context", context});
  return run_process(argv, std::chrono::seconds(120), {"DAQX_MODULE_PATH=" + module_directory()});
}

// Started for real, under an address-space limit, so memory without bound ends the test instead of the machine
// (not under a sanitizer, whose shadow memory alone is larger).
ProcessResult start(const std::string& path, const std::string& context, const std::string& limit_kib = "4000000") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const std::string limit = "unlimited";
  (void)limit_kib;
#else
  const std::string& limit = limit_kib;
#endif
  return run_process({"/bin/sh", "-c", "ulimit -v " + limit + " && exec \"$0\" \"$@\"", executive_program(),
                      "--config", path, "--context", context},
                     std::chrono::seconds(120), {"DAQX_MODULE_PATH=" + module_directory()});
}

// A refusal: exit code 2 with "path:line: " and the reason, in one message of valid UTF-8.
void require_refusal(const ProcessResult& result, const std::string& path, int line, const std::string& reason) {
  INFO(outcome(result) << "\n" << result.output);
  CHECK(result.exited);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains(path + ":" + std::to_string(line) + ": ") && Contains(reason));
  CHECK(daqx::strings::valid_utf8(result.output) == result.output);
}

// "<P" as UTF-16: each ASCII byte followed (LE) or preceded (BE) by a zero.
std::string utf16(std::string_view ascii, bool little_endian) {
  std::string wide = little_endian ? "\xFF\xFE" : "\xFE\xFF";
  for (char c : ascii) wide += little_endian ? std::string{c, '\0'} : std::string{'\0', c};
  return wide;
}

// A loopback listener that only counts who connects: the proof that nothing was fetched.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~Listener() { ::close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  std::uint16_t port() const { return port_; }
  bool connected() const {
    pollfd ready{fd_, POLLIN, 0};
    return ::poll(&ready, 1, 0) > 0;
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace

TEST_CASE("a partition file with a UTF-8 byte-order mark is read as if it had none", "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  const std::string path = write_file("bom.xml", "\xEF\xBB\xBF" + partition_text(port, kProbe +
                                      "    <Application class=\"test::Probe\" id=\"1\"/>\n"));
  const ProcessResult checked = check(path);
  INFO(checked.output);
  CHECK(checked.exit_code == 0);
  ExecutiveProcess executive(path, url(port));
  REQUIRE(executive.wait_ready());
  CHECK(executive.stop() == 0);
}

TEST_CASE("a partition file in UTF-16 or UTF-32, or declaring another encoding, is refused at line 1 with the "
          "encoding it is in", "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  const std::string text = partition_text(port, kProbe);
  struct Case {
    std::string name, bytes, reason;
    int line;
  };
  const std::vector<Case> cases = {
      {"utf16le", utf16(text, true), "the file is UTF-16LE", 1},
      {"utf16be", utf16(text, false), "the file is UTF-16BE", 1},
      {"utf32le", std::string("\xFF\xFE\0\0", 4) + "<", "the file is UTF-32LE", 1},
      {"utf16-without-mark", utf16(text, true).substr(2), "a NUL byte", 1},
      {"nul-on-line-3", std::string("<Partition name=\"x\">\n\n  <Context\0", 33), "a NUL byte", 3},
      {"latin1-declared", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n" + text, "encoding 'ISO-8859-1'", 1},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string path = write_file(c.name + ".xml", c.bytes);
      require_refusal(check(path), path, c.line, c.reason);
      require_refusal(start(path, url(port)), path, c.line, c.reason);
    }
  }
}

TEST_CASE("bytes that are not UTF-8 in names and values are refused at their line and quoted as valid UTF-8",
          "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  SECTION("a Latin-1 class name") {
    const std::string path =
        write_file("latin1-class.xml", partition_text(port, kProbe + "    <Application class=\"test::Caf\xE9\" id=\"1\"/>\n"));
    require_refusal(check(path), path, 4, "malformed XML: a byte that is not UTF-8 (\\xe9)");
    require_refusal(start(path, url(port)), path, 4, "malformed XML: a byte that is not UTF-8 (\\xe9)");
  }
  SECTION("a port with a stray byte") {
    const std::string path = write_file(
        "latin1-port.xml",
        partition_text(port, "    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"80\xFF\" network=\"d\"/>\n"));
    require_refusal(check(path), path, 3, "malformed XML: a byte that is not UTF-8 (\\xff)");
  }
  SECTION("a property value with a stray byte") {
    const std::string path = write_file("latin1-value.xml", partition_text(port, kProbe +
        "    <Application class=\"test::Probe\" id=\"1\">\n      <Properties><level>\xB9</level></Properties>\n"
        "    </Application>\n"));
    require_refusal(check(path), path, 5, "malformed XML: a byte that is not UTF-8 (\\xb9)");
  }
}

TEST_CASE("a <!DOCTYPE> is refused at its line before anything in it is expanded or fetched",
          "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  Listener listener;
  const std::string secret = write_file("secret.txt", "the-secret-content-of-a-file");
  SECTION("billion laughs") {
    std::string entities = "<!ENTITY lol \"lol\">\n";
    for (int level = 1; level <= 9; ++level) {
      std::string references;
      for (int i = 0; i < 10; ++i) references += "&lol" + (level == 1 ? std::string() : std::to_string(level - 1)) + ";";
      entities += "<!ENTITY lol" + std::to_string(level) + " \"" + references + "\">\n";
    }
    const std::string path = write_file("laughs.xml", "<?xml version=\"1.0\"?>\n<!DOCTYPE Partition [\n" + entities +
                                                          "]>\n<Partition name=\"&lol9;\"/>\n");
    require_refusal(check(path), path, 2, "a <!DOCTYPE>");
    require_refusal(start(path, url(port), "1000000"), path, 2, "a <!DOCTYPE>");
  }
  SECTION("external entities naming a file and a loopback URL") {
    const std::string path = write_file(
        "external.xml", "<!-- a comment first -->\n<!DOCTYPE Partition [\n  <!ENTITY file SYSTEM \"file://" + secret +
                            "\">\n  <!ENTITY web SYSTEM \"http://127.0.0.1:" + std::to_string(listener.port()) +
                            "/partition\">\n  <!ENTITY % remote SYSTEM \"http://127.0.0.1:" +
                            std::to_string(listener.port()) + "/dtd\"> %remote;\n]>\n" +
                            partition_text(port, "    <Module path=\"&file;&web;\"/>\n"));
    for (const ProcessResult& result : {check(path), start(path, url(port))}) {
      require_refusal(result, path, 2, "a <!DOCTYPE>");
      CHECK_THAT(result.output, !Contains("the-secret-content"));
    }
    CHECK_FALSE(listener.connected());
  }
  SECTION("a DTD nested a hundred thousand deep") {
    std::string nested = "<!DOCTYPE Partition [\n";
    for (int i = 0; i < 100000; ++i) nested += "<![INCLUDE[";
    const std::string path = write_file("nested-dtd.xml", nested + "\n]>\n<Partition name=\"x\"/>\n");
    require_refusal(check(path), path, 1, "a <!DOCTYPE>");
  }
}

TEST_CASE("an enormous partition file is refused at the line where it passes 16 MiB, in bounded memory and time",
          "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  SECTION("200 MB of blank lines after the partition") {
    const std::string path = scratch_directory() + "/blank.xml";
    {
      std::ofstream out(path, std::ios::binary);
      out << partition_text(port, kProbe);
      const std::string block(1 << 20, '\n');
      for (int i = 0; i < 200; ++i) out << block;
    }
    const int line = 6 + (16 << 20) - static_cast<int>(partition_text(port, kProbe).size());
    require_refusal(start(path, url(port), "1000000"), path, line, "goes on past 16 MiB");
    require_refusal(check(path), path, line, "goes on past 16 MiB");
  }
  SECTION("a million applications") {
    const std::string path = scratch_directory() + "/million.xml";
    {
      std::ofstream out(path, std::ios::binary);
      out << "<Partition name=\"many\">\n  <Context url=\"" << url(port) << "\">\n" << kProbe;
      for (int id = 1; id <= 1000000; ++id)
        out << "    <Application class=\"test::Probe\" id=\"" << id << "\" instance=\"" << id << "\"/>\n";
      out << "  </Context>\n</Partition>\n";
    }
    std::string head(16 << 20, '\0');
    std::ifstream(path, std::ios::binary).read(head.data(), static_cast<std::streamsize>(head.size()));
    const int line = 1 + static_cast<int>(std::count(head.begin(), head.end(), '\n'));
    require_refusal(start(path, url(port), "1000000"), path, line, "goes on past 16 MiB");
  }
  SECTION("/dev/zero, which never ends") {
    require_refusal(start("/dev/zero", url(port), "1000000"), "/dev/zero", 1, "goes on past 16 MiB");
  }
  SECTION("twenty thousand applications, under the limit, are checked") {
    std::string body = kProbe;
    for (int id = 1; id <= 20000; ++id)
      body += "    <Application class=\"test::Probe\" id=\"" + std::to_string(id) + "\" instance=\"" +
              std::to_string(id) + "\"/>\n";
    const std::string path = write_file("many.xml", partition_text(port, body));
    const ProcessResult result = check(path);
    INFO(result.output.substr(0, 2000));
    CHECK(result.exit_code == 0);
  }
}

TEST_CASE("elements nested a hundred thousand deep are refused at the first that does not belong",
          "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  std::string open, close;
  for (int i = 0; i < 100000; ++i) {
    open += "<Deep>";
    close += "</Deep>";
  }
  SECTION("in a property") {
    const std::string path = write_file("deep-property.xml", partition_text(port, kProbe +
        "    <Application class=\"test::Probe\" id=\"1\">\n      <Properties><level>" + open + close +
        "</level></Properties>\n    </Application>\n"));
    require_refusal(check(path), path, 5, "holds text, not the element <Deep>");
    require_refusal(start(path, url(port)), path, 5, "holds text, not the element <Deep>");
  }
  SECTION("in the partition") {
    const std::string path = write_file("deep-partition.xml", partition_text(port, open + "\n" + close + "\n"));
    require_refusal(check(path), path, 3, "unknown element <Deep> in <Context>");
  }
  SECTION("unclosed") {
    const std::string path = write_file("deep-unclosed.xml", partition_text(port, open + "\n"));
    require_refusal(check(path), path, 4, "malformed XML");
  }
}

TEST_CASE("every number out of its type's or its declaration's range is refused with its line",
          "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  const auto property = [](const std::string& element) {
    return kProbe + "    <Application class=\"test::Probe\" id=\"1\">\n      <Properties>" + element +
           "</Properties>\n    </Application>\n";
  };
  struct Case {
    std::string name, body, reason;
    int line;
  };
  const std::vector<Case> cases = {
      {"unsigned-2-64", property("<n type=\"unsigned\">18446744073709551616</n>"), "out of range for an unsigned integer", 5},
      {"unsigned-negative", property("<n type=\"unsigned\">-1</n>"), "not an unsigned integer", 5},
      {"int-2-63", property("<n type=\"int\">9223372036854775808</n>"), "out of range for an integer", 5},
      {"int-below-2-63", property("<n type=\"int\">-9223372036854775809</n>"), "out of range for an integer", 5},
      {"double-1e400", property("<n type=\"double\">1e400</n>"), "out of range for a decimal number", 5},
      {"double-nan", property("<n type=\"double\">NaN</n>"), "not a decimal number", 5},
      {"double-inf", property("<n type=\"double\">inf</n>"), "not a decimal number", 5},
      {"bool-2", property("<n type=\"bool\">2</n>"), "not a boolean", 5},
      {"declared-2-64", property("<level>18446744073709551616</level>"), "out of range for an unsigned integer", 5},
      {"declared-negative", property("<level>-1</level>"), "not an unsigned integer", 5},
      {"declared-1e400", property("<level>1e400</level>"), "not an unsigned integer", 5},
      {"declared-above-max", property("<delayMs>60001</delayMs>"), "above the maximum 60000", 5},
      {"id-2-32", kProbe + "    <Application class=\"test::Probe\" id=\"4294967296\"/>\n", "out of range", 4},
      {"id-negative", kProbe + "    <Application class=\"test::Probe\" id=\"-1\"/>\n", "is not an unsigned integer: it is negative", 4},
      {"instance-2-64", kProbe + "    <Application class=\"test::Probe\" id=\"1\" instance=\"18446744073709551616\"/>\n",
       "out of range", 4},
      {"port-0", "    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"0\" network=\"d\"/>\n",
       "port (1-65535): '0' is out of range for an unsigned integer: below the minimum 1", 3},
      {"port-65536", "    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"65536\" network=\"d\"/>\n",
       "port (1-65535): ", 3},
      {"port-2-64", "    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"18446744073709551616\" network=\"d\"/>\n",
       "port (1-65535): ", 3},
      {"port-negative", "    <Endpoint protocol=\"tcp\" hostname=\"127.0.0.1\" port=\"-80\" network=\"d\"/>\n",
       "port (1-65535): ", 3},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string path = write_file(c.name + ".xml", partition_text(port, c.body));
      require_refusal(check(path), path, c.line, c.reason);
    }
  }
  SECTION("a context URL with port 70000") {
    const std::string path = write_file("context-port.xml", "<Partition name=\"x\">\n  <Context url=\"http://127.0.0.1:70000\"/>\n</Partition>\n");
    require_refusal(check(path), path, 2, "which is not a port number");
  }
  SECTION("restart counts and times out of range") {
    const std::string text = "<Partition name=\"x\">\n  <Context url=\"" + url(port) + "\"/>\n  <Launch>\n"
        "    <Restart pattern=\"*\" policy=\"on-failure\" maxRestarts=\"4294967296\"\n"
        "             backoff=\"1e400\" maxBackoff=\"nan\"/>\n  </Launch>\n</Partition>\n";
    const std::string path = write_file("restart.xml", text);
    const ProcessResult result = check(path);
    require_refusal(result, path, 4, "maxRestarts: '4294967296' is out of range for an unsigned integer");
    CHECK_THAT(result.output, Contains(path + ":5: backoff (seconds, 0 to 3600): '1e400'") &&
                                  Contains(path + ":5: maxBackoff (seconds, 0 to 3600): 'nan'"));
  }
  SECTION("a started executive refuses as --check does") {
    const std::string path = write_file("started.xml", partition_text(port, property("<level>18446744073709551616</level>")));
    require_refusal(start(path, url(port)), path, 5, "out of range for an unsigned integer");
  }
}

TEST_CASE("a module path that is no daqx shared object is refused at the <Module> line, without hanging",
          "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  const std::string text = write_file("module.txt", "#!/bin/sh\necho not a library\n");
  const std::string directory = scratch_directory() + "/module-directory";
  ::mkdir(directory.c_str(), 0755);
  const std::string fifo = scratch_directory() + "/module-fifo";
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  struct Case {
    std::string name, module, reason;
  };
  const std::vector<Case> cases = {
      {"a text file", text, "cannot load module"},
      {"a directory", directory, "is not a shared object: it is a directory"},
      {"/dev/zero", "/dev/zero", "is not a shared object: it is a character device"},
      {"a FIFO", fifo, "is not a shared object: it is a FIFO"},
      {"an ELF shared object without the entry point", module_directory() + "/../mempool/libdaqx_mempool.so",
       "is not a daqx module"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string path =
          write_file("module-" + std::to_string(&c - cases.data()) + ".xml",
                     partition_text(port, "    <Module path=\"" + c.module + "\"/>\n"));
      require_refusal(check(path), path, 3, c.reason);
      require_refusal(start(path, url(port)), path, 3, c.reason);
    }
  }
  SECTION("an ELF executable") {
    const std::string path = write_file("module-executable.xml",
                                        partition_text(port, "    <Module path=\"" + executive_program() + "\"/>\n"));
    const ProcessResult result = check(path);
    INFO(result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(path + ":3: ") &&
                                  (Contains("cannot load module") || Contains("is not a daqx module")));
  }
}

TEST_CASE("a policy naming CPUs or NUMA nodes this machine does not have is refused at the rule's line",
          "[executive][process][hostile]") {
  const std::uint16_t port = free_port();
  const std::string body = kProbe + "    <Application class=\"test::Probe\" id=\"1\"/>\n";
  SECTION("CPU 4096, past what any CPU set can hold") {
    const std::string path = write_file("cpu-4096.xml", partition_text(port, body,
        "  <Policy>\n    <Thread pattern=\"*\" cores=\"4096\"/>\n  </Policy>\n"));
    require_refusal(check(path), path, 3, "cores '4096' is not a CPU list");
    require_refusal(start(path, url(port)), path, 3, "cores '4096' is not a CPU list");
  }
  SECTION("CPU 1000, which this machine does not have") {
    const std::string path = write_file("cpu-1000.xml", partition_text(port, body,
        "  <Policy>\n    <Thread pattern=\"*\" cores=\"0,1000-1023\"/>\n  </Policy>\n"));
    require_refusal(check(path, url(port)), path, 3, "pins to CPU 1000, which this executive may not run on");
    require_refusal(start(path, url(port)), path, 3, "pins to CPU 1000, which this executive may not run on");
    // Without --context the host that runs the context is not known: only what every host refuses is checked.
    CHECK(check(path).exit_code == 0);
  }
  SECTION("NUMA node 64") {
    const std::string path = write_file("numa-64.xml", partition_text(port, body,
        "  <Policy>\n    <Pool pattern=\"*\" allocator=\"shm:numa:64\"/>\n  </Policy>\n"));
    require_refusal(check(path, url(port)), path, 3, "binds to NUMA node 64, which this machine does not have");
    require_refusal(start(path, url(port)), path, 3, "binds to NUMA node 64, which this machine does not have");
  }
  SECTION("NUMA node past 32 bits") {
    const std::string path = write_file("numa-huge.xml", partition_text(port, body,
        "  <Policy>\n    <Pool pattern=\"*\" allocator=\"numa:99999999999\"/>\n  </Policy>\n"));
    require_refusal(check(path), path, 3, "allocator 'numa:99999999999' is not");
  }
}

TEST_CASE("a context whose connection plan needs more file descriptors than its hard limit allows is refused at "
          "start with the numbers, after raising its soft limit as far as it goes",
          "[executive][process][hostile]") {
  // An EvM that sends to 150 units: 300 connections (its 150 out, and the 150 the units open to it).
  PartitionBuilder partition("descriptors");
  const std::uint16_t evm_port = free_port();
  ContextBuilder evm = partition.context(url(evm_port));
  evm.endpoint("tcp", "127.0.0.1", free_port(), "data");
  evm.module("libdaqx_pttcp.so").module("libdaqx_evb.so");
  evm.application("evb::EvM", 10, 0, "data");
  for (std::uint32_t i = 0; i < 150; ++i) {
    // Never started: only their places in the plan count.
    ContextBuilder unit = partition.context("http://127.0.0.1:" + std::to_string(41000 + 10 * i));
    unit.endpoint("tcp", "127.0.0.1", static_cast<std::uint16_t>(41001 + 10 * i), "data");
    unit.module("libdaqx_pttcp.so").module("libdaqx_evb.so");
    unit.application(i % 2 == 0 ? "evb::RU" : "evb::BU", 100 + i, i / 2, "data");
  }
  const std::string path = write_file("descriptors.xml", partition.xml());
  // Soft 64, hard 400: the executive raises soft to 400, and 300 connections and the margin do not fit in it.
  const ProcessResult limited = run_process(
      {"/usr/bin/prlimit", "--nofile=64:400", executive_program(), "--config", path, "--context", url(evm_port)},
      std::chrono::seconds(30), {"DAQX_MODULE_PATH=" + module_directory()});
  INFO(limited.output);
  CHECK(limited.exit_code == 2);
  CHECK_THAT(limited.output, Contains("plans 150 outgoing and 150 incoming connections, about 556 file descriptors"));
  CHECK_THAT(limited.output, Contains("this process may open 400 (hard limit 400)"));
  // With the hard limit the system gives, the same context starts.
  ExecutiveProcess executive(path, url(evm_port));
  REQUIRE(executive.wait_ready());
  CHECK(executive.stop() == 0);
}
