// Process-level tests of control port access: real executives guarded by a bearer token, over TLS with a
// certificate made at run time, bound to their context's address; daqxctl and daqx-launch presenting the token.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"
#include "../support/partition_builder.hpp"
#include "../support/process.hpp"

using namespace daqx::test;
using Catch::Contains;

namespace {

constexpr const char* kToken = "c2VjcmV0LXRva2Vu-42";

// One probe in one context, with <Control> when control is given.
std::string probe_partition(const std::string& name, const std::string& url,
                            const std::optional<ControlSettings>& control) {
  PartitionBuilder partition(name);
  if (control) partition.control(*control);
  partition.context(url).module("libdaqx_test_probe.so").application("test::Probe", 1);
  return partition.xml();
}

// <Control tokenFile reads>: a guarded executive (reads empty: open).
ControlSettings token_control(const std::string& token_path, const std::string& reads = "") {
  return {token_path, reads, "", "", "", "", ""};  // tokenFile, reads, tls, certificate, key, ca, bind
}

// The token file, readable by its owner only (anything else is refused).
std::string token_file(const std::string& name, const std::string& token = kToken) {
  const std::string path = write_file(name, token + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

std::string transition_body(const std::string& command) { return R"({"command":")" + command + R"("})"; }

// Makes every ControlClient built in its scope (ExecutiveProcess's among them) use `access`.
class DefaultAccess {
 public:
  explicit DefaultAccess(const daqx::ControlAccess& access) : before_(daqx::default_control_access()) {
    daqx::set_default_control_access(access);
  }
  ~DefaultAccess() { daqx::set_default_control_access(before_); }

 private:
  daqx::ControlAccess before_;
};

ProcessResult openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, std::chrono::seconds(60));
}

// A CA of its own and a server certificate it signed, for `names` (subjectAltName entries, e.g. "IP:127.0.0.1").
struct TestCertificates {
  std::string ca;           // PEM, what clients verify against
  std::string certificate;  // PEM, the server's
  std::string key;          // PEM, the server's private key
};

TestCertificates make_certificates(const std::string& name, const std::string& names) {
  if (::access("/usr/bin/openssl", X_OK) != 0)
    skip_for_environment("DAQX_TRANSPORT_REQUIRE", 77, "no /usr/bin/openssl to make test certificates");
  const std::string base = scratch_directory() + "/" + name;
  TestCertificates made{base + "-ca.pem", base + "-server.pem", base + "-server.key"};
  const std::string extensions = write_file(name + "-ext.cnf", "subjectAltName=" + names + "\nbasicConstraints=CA:FALSE\n");
  for (const std::vector<std::string>& step : std::vector<std::vector<std::string>>{
           {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", base + "-ca.key", "-out", made.ca, "-days", "2",
            "-subj", "/CN=daqx test CA " + name},
           {"req", "-newkey", "rsa:2048", "-nodes", "-keyout", made.key, "-out", base + "-server.csr", "-subj",
            "/CN=daqx test server"},
           {"x509", "-req", "-in", base + "-server.csr", "-CA", made.ca, "-CAkey", base + "-ca.key", "-CAcreateserial",
            "-out", made.certificate, "-days", "2", "-extfile", extensions}}) {
    const ProcessResult result = openssl(step);
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
  }
  return made;
}

ControlSettings tls_control(const TestCertificates& made, const std::string& token_path) {
  return {token_path, "", "true", made.certificate, made.key, made.ca, ""};
}

// Whether a TCP connection to address:port is accepted (a refused one fails at once on loopback).
bool accepts_connections(const char* address, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(port);
  ::inet_pton(AF_INET, address, &peer.sin_addr);
  const bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) == 0;
  ::close(fd);
  return connected;
}

std::vector<std::string> module_env() { return {"DAQX_MODULE_PATH=" + module_directory()}; }

}  // namespace

TEST_CASE("a guarded executive answers a change without a token 401, a wrong token 403, the right one 200",
          "[executive][process][access]") {
  const std::uint16_t port = free_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const std::string partition = write_file(
      "guarded.xml", probe_partition("guarded", url, token_control(token_file("guarded.token"))));
  ExecutiveProcess executive(partition, url);
  REQUIRE(executive.wait_ready());  // reads are open

  const daqx::HttpReply none = daqx::ControlClient(url, std::chrono::seconds(10), {}).post("/api/transition", transition_body("configure"));
  CHECK(none.status == 401);
  CHECK_THAT(none.body, Contains("bearer token"));
  const daqx::HttpReply wrong =
      daqx::ControlClient(url, std::chrono::seconds(10), {"not-the-token", ""}).post("/api/transition", transition_body("configure"));
  CHECK(wrong.status == 403);
  CHECK(executive.application(1)->getValue<std::string>("state") == "Halted");

  const daqx::HttpReply right =
      daqx::ControlClient(url, std::chrono::seconds(10), {kToken, ""}).post("/api/transition", transition_body("configure"));
  INFO(right.body);
  CHECK(right.status == 200);
  CHECK(executive.application(1)->getValue<std::string>("state") == "Configured");
  const daqx::HttpReply metrics = executive.get("/metrics");
  CHECK(control_refusals(metrics, "no_token") == 1);
  CHECK(control_refusals(metrics, "bad_token") == 1);
  CHECK(executive.stop() == 0);
}

TEST_CASE("daqxctl presents the token from --token-file, DAQX_TOKEN_FILE or the partition, and says when it has none",
          "[tools][process][access]") {
  const std::uint16_t port = free_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const std::string token = token_file("ctl.token");
  const std::string guarded = write_file("ctl-guarded.xml", probe_partition("ctl", url, token_control("ctl.token")));
  // The same executive described without <Control>: daqxctl then knows of no token.
  const std::string bare = write_file("ctl-bare.xml", probe_partition("ctl", url, std::nullopt));
  ExecutiveProcess executive(guarded, url);
  REQUIRE(executive.wait_ready());
  const auto daqxctl = [](const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv{tool_program("daqxctl")};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, std::chrono::seconds(60), env);
  };

  ProcessResult refused = daqxctl({"--config", bare, "configure"});
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Contains("(401)") && Contains("--token-file"));
  ProcessResult from_partition = daqxctl({"--config", guarded, "configure"});
  INFO(from_partition.output);
  CHECK(from_partition.exit_code == 0);
  ProcessResult from_option = daqxctl({"--config", bare, "--token-file", token, "halt"});
  INFO(from_option.output);
  CHECK(from_option.exit_code == 0);
  ProcessResult from_environment = daqxctl({"--url", url, "configure"}, {"DAQX_TOKEN_FILE=" + token});
  INFO(from_environment.output);
  CHECK(from_environment.exit_code == 0);
  ProcessResult wrong = daqxctl({"--url", url, "--token-file", token_file("wrong.token", "wrong"), "halt"});
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.output, Contains("(403)"));
  CHECK(executive.application(1)->getValue<std::string>("state") == "Configured");
  CHECK(executive.stop() == 0);
}

TEST_CASE("with reads=\"token\" a read without the token is 401 and one with it is answered",
          "[executive][process][access]") {
  const std::uint16_t port = free_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const std::string partition = write_file(
      "closed.xml", probe_partition("closed", url, token_control("closed.token", "token")));
  token_file("closed.token");
  DefaultAccess access({kToken, ""});
  ExecutiveProcess executive(partition, url);
  REQUIRE(executive.wait_ready());
  CHECK(daqx::ControlClient(url, std::chrono::seconds(10), {}).get("/api/applications").status == 401);
  CHECK(daqx::ControlClient(url, std::chrono::seconds(10), {"wrong", ""}).get("/metrics").status == 403);
  CHECK(executive.get("/api/applications").status == 200);
  CHECK(executive.stop() == 0);
}

TEST_CASE("an executive whose token file others can read does not start, and says why", "[executive][process][access]") {
  const std::uint16_t port = free_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const std::string token = write_file("public.token", std::string(kToken) + "\n");
  ::chmod(token.c_str(), 0644);
  const std::string partition = write_file("public.xml", probe_partition("public", url, token_control("public.token")));
  ProcessResult result = run_process({executive_program(), "--config", partition, "--context", url},
                                     std::chrono::seconds(30), module_env());
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("token file " + token) && Contains("chmod 600"));
}

TEST_CASE("over TLS with a test certificate, daqxctl with --ca-file drives the executive, and a plain request fails "
          "cleanly and the executive keeps serving",
          "[tools][process][access][tls]") {
  const TestCertificates made = make_certificates("tls", "DNS:localhost,IP:127.0.0.1");
  const std::uint16_t port = free_port();
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  const std::string token = token_file("tls.token");
  const std::string partition = write_file("tls.xml", probe_partition("tls", url, tls_control(made, token)));
  DefaultAccess access({kToken, made.ca});
  ExecutiveProcess executive(partition, url);
  REQUIRE(executive.wait_ready());

  // daqxctl with the URL only: the CA and token from its options.
  ProcessResult configure = run_process({tool_program("daqxctl"), "--url", url, "--ca-file", made.ca, "--token-file",
                                         token, "configure"}, std::chrono::seconds(60));
  INFO(configure.output);
  CHECK(configure.exit_code == 0);
  CHECK(executive.application(1)->getValue<std::string>("state") == "Configured");
  // A connect wait is parked off the request threads and answered from there, over the same TLS session.
  const daqx::HttpReply connected = executive.post("/api/connect?timeout=2000", "");
  INFO(connected.body);
  CHECK(connected.status == 200);
  CHECK_THAT(connected.body, Contains("\"total\""));
  // A name the certificate carries works as well as the address.
  ProcessResult by_name = run_process({tool_program("daqxctl"), "--url", "https://localhost:" + std::to_string(port),
                                       "--ca-file", made.ca, "status"}, std::chrono::seconds(60));
  INFO(by_name.output);
  CHECK(by_name.exit_code == 0);

  // Plain HTTP to the TLS port: the client is told, at once, and the executive goes on.
  const auto started = std::chrono::steady_clock::now();
  const daqx::HttpReply plain = daqx::ControlClient("http://127.0.0.1:" + std::to_string(port), std::chrono::seconds(10), {kToken, ""})
                                    .get("/api/applications");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(8));
  CHECK_FALSE(plain.answered());
  CHECK_THAT(plain.body, Contains("https://"));
  const daqx::HttpReply metrics = executive.get("/metrics");
  REQUIRE(metrics.status == 200);
  CHECK(control_refusals(metrics, "tls") >= 1);
  CHECK(executive.transition("halt").status == 200);
  CHECK(executive.running());
  CHECK_THAT(executive.output(), Contains("did not complete a TLS handshake"));
  CHECK(executive.stop() == 0);
}

TEST_CASE("over TLS with reads guarded by the token, daqx-evb-dump --follow reads a BU's stream with --ca-file and "
          "--token-file, and without the token it is refused 401 and says why",
          "[tools][process][access][tls][stream]") {
  const TestCertificates made = make_certificates("tls-stream", "IP:127.0.0.1");
  const std::string url = "https://127.0.0.1:" + std::to_string(free_port());
  const std::string token = token_file("tls-stream.token");
  PartitionBuilder builder("tls-stream");
  ControlSettings control = tls_control(made, token);
  control.reads = "token";
  builder.control(control);
  ContextBuilder context = builder.context(url);
  context.module("libdaqx_evb.so");
  context.application("evb::BU", 200, 0);
  context.application("evb::RU", 100, 0);
  context.application("evb::EvM", 10, 0);
  const std::string partition = write_file("tls-stream.xml", builder.xml());
  DefaultAccess access({kToken, made.ca});
  ExecutiveProcess executive(partition, url);
  REQUIRE(executive.wait_ready());
  REQUIRE(executive.transition("configure").status == 200);
  REQUIRE(executive.transition("enable").status == 200);
  const std::string stream = url + "/api/applications/200/streams/events?policy=sample:10";
  const std::string dump = program_directory() + "/../apps/evb/daqx-evb-dump";

  const ProcessResult follow = run_process({dump, "--verify", "--count", "50", "--ca-file", made.ca, "--token-file",
                                            token, "--follow", stream}, std::chrono::seconds(60));
  INFO(follow.output);
  CHECK(follow.exit_code == 0);
  CHECK_THAT(follow.output, Contains("events 50 (first "));
  CHECK_THAT(follow.output, Contains("result: ok"));

  const ProcessResult without = run_process({dump, "--count", "5", "--ca-file", made.ca, "--follow", stream},
                                            std::chrono::seconds(60));
  INFO(without.output);
  CHECK(without.exit_code == 1);
  CHECK_THAT(without.output, Contains("401"));
  CHECK(executive.transition("stop").status == 200);
  CHECK(executive.stop() == 0);
}

TEST_CASE("a TLS client that trusts another CA, or reaches a host the certificate does not name, is refused",
          "[executive][process][access][tls]") {
  const TestCertificates made = make_certificates("named", "DNS:elsewhere.example");
  const TestCertificates other = make_certificates("other", "DNS:localhost,IP:127.0.0.1");
  const std::uint16_t port = free_port();
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  const std::string partition =
      write_file("named.xml", probe_partition("named", url, tls_control(made, token_file("named.token"))));
  ExecutiveProcess executive(partition, url);
  // Its certificate names another host: even with the right CA, no client gets an answer here.
  daqx::HttpReply reply = daqx::ControlClient(url, std::chrono::seconds(10), {kToken, made.ca}).get("/api/executive");
  for (int attempt = 0; attempt < 600 && executive.running() && reply.body.find("Connection refused") != std::string::npos;
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // still starting
    reply = daqx::ControlClient(url, std::chrono::seconds(10), {kToken, made.ca}).get("/api/executive");
  }
  INFO(reply.body);
  CHECK_FALSE(reply.answered());
  CHECK_THAT(reply.body, Contains("Unacceptable certificate"));  // the host name check, not the chain
  const daqx::HttpReply wrong_ca = daqx::ControlClient(url, std::chrono::seconds(10), {kToken, other.ca}).get("/api/executive");
  INFO(wrong_ca.body);
  CHECK_FALSE(wrong_ca.answered());
  CHECK_THAT(wrong_ca.body, Contains("certificate verify failed"));
  CHECK(executive.running());
  CHECK(executive.stop() == 0);
}

TEST_CASE("the control server listens on its context's address only, unless bind=\"any\"",
          "[executive][process][access]") {
  const std::uint16_t port = free_port();
  const std::string url = "http://127.0.0.2:" + std::to_string(port);
  const std::string partition = write_file("bound.xml", probe_partition("bound", url, std::nullopt));
  {
    ExecutiveProcess executive(partition, url);
    REQUIRE(executive.wait_ready());
    CHECK(accepts_connections("127.0.0.2", port));
    CHECK_FALSE(accepts_connections("127.0.0.1", port));
    CHECK(executive.stop() == 0);
  }
  const ControlSettings bind_any{"", "", "", "", "", "", "any"};  // only bind="any"
  const std::string any = write_file("bound-any.xml", probe_partition("bound", url, bind_any));
  ExecutiveProcess executive(any, url);
  REQUIRE(executive.wait_ready());
  CHECK(accepts_connections("127.0.0.1", port));
  CHECK(executive.stop() == 0);
}

TEST_CASE("daqx-launch presents the partition's token and verifies its TLS certificate", "[tools][process][access][tls]") {
  const TestCertificates made = make_certificates("launch", "DNS:localhost,IP:127.0.0.1");
  const std::uint16_t port = free_port();
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  const std::string partition =
      write_file("launch-tls.xml", probe_partition("launch-tls", url, tls_control(made, token_file("launch.token"))));
  ProcessResult run = run_process({tool_program("daqx-launch"), "--config", partition, "--drive", "--run", "1",
                                   "--log-dir", scratch_directory() + "/launch-tls-logs"},
                                  std::chrono::seconds(90), module_env());
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.output, Contains("1 contexts of partition 'launch-tls' up"));
  CHECK_THAT(run.output, Contains("all contexts stopped cleanly"));
}
