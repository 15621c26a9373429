// Control port access from the client's and the configuration's side: token files, <Control> read back, and where
// a client finds its token and CA.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "daqx/control/control_client.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/control/token_file.hpp"
#include "../../../tests/support/partition_builder.hpp"

namespace {

// A scratch folder for this test program, removed at exit.
struct Scratch {
  std::string path;
  Scratch() {
    char pattern[] = "/tmp/daqx-access-XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

const std::string& scratch() {
  static Scratch folder;
  return folder.path;
}

std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) {
  const std::string path = scratch() + "/" + name;
  std::ofstream(path, std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

// Sets an environment variable for one scope, restoring what was there.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    if (old_.empty())
      ::unsetenv(name_);
    else
      ::setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

}  // namespace

TEST_CASE("a token file gives its one line without the line break", "[access]") {
  CHECK(daqx::read_token_file(write("newline", "abc-123\n")) == "abc-123");
  CHECK(daqx::read_token_file(write("crlf", "abc-123\r\n")) == "abc-123");
  CHECK(daqx::read_token_file(write("bare", "abc-123")) == "abc-123");
}

TEST_CASE("a token file that group or others may read is refused, saying how to fix it", "[access]") {
  const std::string path = write("public", "abc-123\n", 0644);
  REQUIRE_THROWS_WITH(daqx::read_token_file(path),
                      Catch::Contains("group or others may read it (mode 0644)") && Catch::Contains("chmod 600 " + path));
  CHECK_THROWS_WITH(daqx::read_token_file(write("group", "abc-123\n", 0640)), Catch::Contains("mode 0640"));
}

TEST_CASE("a missing, empty or multi-line token file is refused with the reason", "[access]") {
  CHECK_THROWS_WITH(daqx::read_token_file(scratch() + "/absent"),
                    Catch::StartsWith("token file " + scratch() + "/absent: No such file or directory"));
  CHECK_THROWS_WITH(daqx::read_token_file(write("empty", "")), Catch::EndsWith(": empty"));
  CHECK_THROWS_WITH(daqx::read_token_file(write("newline-only", "\n")), Catch::EndsWith(": empty"));
  CHECK_THROWS_WITH(daqx::read_token_file(write("two-lines", "abc\ndef\n")), Catch::Contains("line break"));
  CHECK_THROWS_WITH(daqx::read_token_file(write("blank", "abc def")), Catch::Contains("blank"));
  CHECK_THROWS_WITH(daqx::read_token_file(scratch()), Catch::Contains("not a regular file"));
}

TEST_CASE("<Control> is read with its paths taken from the partition file's folder", "[access][partition]") {
  // Written out, not built: this reads the format itself, down to the line <Control> is on.
  const daqx::config::Partition partition = daqx::config::parse_partition(R"(<Partition name="guarded">
  <Control tokenFile="secrets/token" reads="token" tls="true" certificate="tls/server.pem" key="/etc/daqx/server.key"
           ca="tls/ca.pem" bind="any"/>
  <Context url="https://localhost:9001"/>
</Partition>)", "/opt/partitions/guarded.xml");
  const daqx::config::ControlConfig& control = partition.control;
  CHECK(control.present);
  CHECK(control.token_file == "/opt/partitions/secrets/token");
  CHECK(control.reads == daqx::config::ControlConfig::Reads::token);
  CHECK(control.tls);
  CHECK(control.certificate == "/opt/partitions/tls/server.pem");
  CHECK(control.key == "/etc/daqx/server.key");
  CHECK(control.ca == "/opt/partitions/tls/ca.pem");
  CHECK(control.bind == daqx::config::ControlConfig::Bind::any);
  CHECK(control.where.line == 2);
  REQUIRE(partition.contexts.size() == 1);
  CHECK(partition.contexts[0].tls);
  CHECK(partition.contexts[0].host == "localhost");
  CHECK(partition.contexts[0].port == 9001);
}

TEST_CASE("without <Control> the control port is open, plain and bound to the context's address", "[access][partition]") {
  daqx::test::PartitionBuilder built("open");
  built.context("http://localhost:9001");
  const daqx::config::Partition partition = daqx::config::parse_partition(built.xml(), "open.xml");
  CHECK_FALSE(partition.control.present);
  CHECK(partition.control.token_file.empty());
  CHECK(partition.control.reads == daqx::config::ControlConfig::Reads::open);
  CHECK_FALSE(partition.control.tls);
  CHECK(partition.control.bind == daqx::config::ControlConfig::Bind::context);
  CHECK_FALSE(partition.contexts[0].tls);
}

TEST_CASE("a client's token and CA come from the command line, else the environment, else the partition",
          "[access]") {
  const std::string partition_token = write("partition-token", "from-partition\n");
  const std::string environment_token = write("environment-token", "from-environment\n");
  const std::string command_line_token = write("command-line-token", "from-command-line\n");
  daqx::test::PartitionBuilder built("p");
  daqx::test::ControlSettings control;
  control.token_file = "partition-token";
  control.tls = "true";
  control.certificate = "s.pem";
  control.key = "s.key";
  control.ca = "ca.pem";
  built.control(control);
  built.context("https://localhost:9001");
  const daqx::config::Partition partition = daqx::config::parse_partition(built.xml(), scratch() + "/p.xml");

  daqx::ControlAccess access = daqx::ControlAccess::from(&partition);
  CHECK(access.token == "from-partition");
  CHECK(access.ca_file == scratch() + "/ca.pem");
  {
    ScopedEnvironment token("DAQX_TOKEN_FILE", environment_token);
    ScopedEnvironment ca("DAQX_CA_FILE", "/environment/ca.pem");
    access = daqx::ControlAccess::from(&partition);
    CHECK(access.token == "from-environment");
    CHECK(access.ca_file == "/environment/ca.pem");
    access = daqx::ControlAccess::from(&partition, {command_line_token, "/command/line/ca.pem"});
    CHECK(access.token == "from-command-line");
    CHECK(access.ca_file == "/command/line/ca.pem");
  }
  access = daqx::ControlAccess::from(nullptr);
  CHECK(access.token.empty());
  CHECK(access.ca_file.empty());
}

TEST_CASE("a client whose token file cannot be used is told why before it sends anything", "[access]") {
  const std::string path = write("readable-token", "abc\n", 0604);
  REQUIRE_THROWS_WITH(daqx::ControlAccess::from(nullptr, {path, ""}), Catch::Contains("chmod 600"));
}

TEST_CASE("ControlClient takes https URLs and refuses other schemes", "[access]") {
  CHECK_NOTHROW(daqx::ControlClient("https://localhost:9001"));
  CHECK_THROWS_AS(daqx::ControlClient("ftp://localhost:9001"), std::invalid_argument);
}
