// The control server over loopback: every route, every kind of bad request, and a server that keeps answering.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "daqx/control/control_client.hpp"
#include "daqx/control/control_server.hpp"
#include "daqx/services/text.hpp"

namespace {

using daqx::Command;
using daqx::State;
using daqx::Tid;

// ---------------------------------------------------------------------------------------------------------------
// The model: a small executive of four applications with a real state machine (next_state) and parameters that are
// checked and can only change while Halted. tid 4 fails its enable hook when its parameter says so.

struct TestApplication {
  Tid tid;
  std::string class_name;
  std::uint32_t instance;
  State state = State::halted;
  std::string reason;
  std::vector<daqx::ParamView> params;
};

class TestExecutive : public daqx::ControlModel {
 public:
  TestExecutive() {
    auto params = [](std::string rate) {
      return std::vector<daqx::ParamView>{
          {"events_per_second", "unsigned", rate, "1000", "Hz", "how many events to generate"},
          {"output", "string", "/dev/null", "/dev/null", "", "where events go <not> \"anywhere\""},
          {"fail_on_enable", "bool", "false", "false", "", "makes the enable hook throw"}};
    };
    applications_ = {{1, "evb::EvM", 0, State::halted, "", params("1000")},
                     {2, "evb::RU", 0, State::halted, "", params("1000")},
                     {3, "evb::BU", 0, State::halted, "", params("1000")},
                     {4, "test::Fragile<&>", 1, State::halted, "", params("5")}};
  }

  std::atomic<bool> throw_from_pools{false};
  // The connect command: how often it was asked, and whether the connection that is down comes up when asked.
  std::atomic<int> connect_requests{0};
  std::atomic<bool> down_connection_comes_up{false};
  // The executive has shut down its transports (as ExecutiveCore::shutdown does): no connections are listed.
  std::atomic<bool> transports_gone{false};

  State state_of(Tid tid) const {
    std::lock_guard lock(mutex_);
    const TestApplication* application = find(tid);
    if (application == nullptr) throw std::out_of_range("no application " + std::to_string(tid));
    return application->state;
  }

  std::string context_url() const override { return "http://127.0.0.1:9001"; }
  std::string partition_name() const override { return "two-by-two <test>"; }

  std::vector<daqx::ApplicationStatus> applications() const override {
    std::lock_guard lock(mutex_);
    std::vector<daqx::ApplicationStatus> statuses;
    for (const TestApplication& application : applications_) statuses.push_back(status_of(application));
    return statuses;
  }

  std::optional<daqx::ApplicationStatus> application(Tid tid) const override {
    std::lock_guard lock(mutex_);
    const TestApplication* application = find(tid);
    if (application == nullptr) return std::nullopt;
    return status_of(*application);
  }

  daqx::TransitionResult transition(std::optional<Tid> tid, Command command) override {
    std::lock_guard lock(mutex_);
    daqx::TransitionResult result;
    std::vector<TestApplication*> targets;
    if (tid) {
      TestApplication* application = find(*tid);
      if (application == nullptr) {
        result.http_status = 404;
        result.message = "no application with tid " + std::to_string(*tid);
        return result;
      }
      targets.push_back(application);
    } else {
      for (TestApplication& application : applications_) targets.push_back(&application);
    }
    // All or nothing: a refused command changes no state.
    for (TestApplication* application : targets) {
      if (!daqx::next_state(application->state, command)) {
        result.http_status = 409;
        result.message = "tid " + std::to_string(application->tid) + ": " +
                         daqx::illegal_transition_reason(application->state, command);
        append_states(result, targets);
        return result;
      }
    }
    result.ok = true;
    result.http_status = 200;
    result.message = std::string(daqx::to_string(command)) + " done";
    for (TestApplication* application : targets) {
      if (command == Command::enable && param(*application, "fail_on_enable") == "true") {
        application->state = State::failed;
        application->reason = "enable hook threw: <disk> & \"full\"";
        result.ok = false;
        result.http_status = daqx::kApplicationRefusedStatus;
        result.message = "tid " + std::to_string(application->tid) + ": " + application->reason;
        continue;
      }
      application->state = *daqx::next_state(application->state, command);
      if (application->state == State::halted) application->reason.clear();
    }
    append_states(result, targets);
    return result;
  }

  std::string set_parameter(Tid tid, const std::string& name, const std::string& value) override {
    std::lock_guard lock(mutex_);
    TestApplication* application = find(tid);
    if (application == nullptr) return "no application with tid " + std::to_string(tid);
    if (application->state != State::halted) {
      return "parameters change only while Halted, and it is " + std::string(daqx::to_string(application->state));
    }
    for (daqx::ParamView& param : application->params) {
      if (param.name != name) continue;
      if (param.type == "unsigned" && (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)) {
        return "not an unsigned integer: '" + value + "'";
      }
      if (param.type == "bool" && value != "true" && value != "false") return "not a boolean: '" + value + "'";
      param.value = value;
      return {};
    }
    return "unknown parameter '" + name + "'";
  }

  std::vector<daqx::PoolStatus> pools() const override {
    if (throw_from_pools) throw std::runtime_error("pool registry unavailable");
    daqx::PoolStatus pool;
    pool.stats.name = "evb/ru/0/pool";
    pool.stats.allocator = "numa:0";
    pool.stats.bytes_reserved = 1u << 20;
    pool.stats.classes = {{4096, 64, 3, 61, 1, 4, 10, 0, 0}, {65536, 16, 16, 0, 1, 1, 16, 7, 0}};
    pool.numa_node = 0;
    pool.chunks = {{0x7f0000001000u, 1u << 20}};
    return {pool};
  }

  std::vector<daqx::ThreadStatus> threads() const override {
    return {{"pt/tcp/recv-0", 1234, {2}, {2}}, {"evb/ru/0/work", 1235, {3}, {0, 1, 2, 3}}};
  }

  std::vector<daqx::TransportStatus> transports() const override {
    if (transports_gone) return {};
    daqx::TransportStatus tcp;
    tcp.protocol = "tcp";
    tcp.endpoint = "tcp://127.0.0.1:40000";
    tcp.params = {{"mode", "string", "throughput", "throughput", "", "packing of small frames"}};
    tcp.metrics = {{"frames_sent", daqx::Metric::Kind::counter, 42, "Frames sent", {}},
                   {"sends_would_block", daqx::Metric::Kind::counter, 3, "Sends that would block", {}}};
    daqx::MetricSink settings;
    settings.setting("busy_poll", 1, "a setting: JSON only");
    tcp.metrics.push_back(settings.metrics()[0]);
    tcp.connections = {
        {1, "10.0.0.2:40000", true, {{"frames_sent", daqx::Metric::Kind::counter, 40, "Frames sent", {}},
                                     {"bytes_sent", daqx::Metric::Kind::counter, 4e9, "Bytes sent", {}}}},
        {2, "10.0.0.3:40000", false, {{"frames_sent", daqx::Metric::Kind::counter, 2, "Frames sent", {}}}},
        {3, "10.0.0.4:51234", true, {}}};  // accepted from a peer: not ours to open
    tcp.connections[0].outgoing = tcp.connections[1].outgoing = true;
    tcp.connections[0].peer_endpoint = "tcp://10.0.0.2:40000";
    tcp.connections[0].peer_context = "http://10.0.0.2:9000";
    tcp.connections[1].peer_endpoint = "tcp://10.0.0.3:40000";
    tcp.connections[1].peer_context = "http://10.0.0.3:9000";
    tcp.connections[1].up = second_up_.load();
    return {tcp};
  }

  void open_connections() override {
    ++connect_requests;
    if (down_connection_comes_up) second_up_ = true;
  }

  std::vector<daqx::Metric> executive_metrics() const override {
    return {{"frames_dispatched", daqx::Metric::Kind::counter, 1e6, "Frames handed to local applications", {}},
            {"uptime_seconds", daqx::Metric::Kind::gauge, 12.5, "Seconds since start", {}},
            {"bad_frames", daqx::Metric::Kind::counter, std::nan(""), "Frames refused", {}}};
  }

 private:
  static void append_states(daqx::TransitionResult& result, const std::vector<TestApplication*>& targets) {
    for (const TestApplication* application : targets) result.states.emplace_back(application->tid, application->state);
  }

  static std::string param(const TestApplication& application, const std::string& name) {
    for (const daqx::ParamView& param : application.params) {
      if (param.name == name) return param.value;
    }
    return {};
  }

  static daqx::ApplicationStatus status_of(const TestApplication& application) {
    daqx::ApplicationStatus status;
    status.tid = application.tid;
    status.class_name = application.class_name;
    status.instance = application.instance;
    status.name = "test/" + application.class_name + "/" + std::to_string(application.instance);
    status.state = application.state;
    status.reason = application.reason;
    status.params = application.params;
    status.metrics = {
        {"frames_received", daqx::Metric::Kind::counter, 100.0 * application.tid, "Frames received", {}},
        {"queue depth.now", daqx::Metric::Kind::gauge, 2, "Frames waiting\nin the queue", {}},
        {"frames_from_peer", daqx::Metric::Kind::counter, 7, "Frames from one peer",
         {{"peer", "host \"a\"\\b\nc"}, {"tid", "must not duplicate the tid label"}, {"note", "bad \xff byte"}}}};
    daqx::MetricSink sink;
    sink.derived("frame_rate", 50, "a rate: JSON only");
    daqx::LatencyHistogram latency;
    latency.record(std::chrono::microseconds(3));
    latency.record(std::chrono::milliseconds(20));
    sink.histogram("build_latency_seconds", latency.snapshot(), "Build latency");
    sink.state("output_state", 1, {"running", "throttled", "blocked"}, "Output");
    status.metrics.insert(status.metrics.end(), sink.metrics().begin(), sink.metrics().end());
    return status;
  }

  TestApplication* find(Tid tid) {
    for (TestApplication& application : applications_) {
      if (application.tid == tid) return &application;
    }
    return nullptr;
  }
  const TestApplication* find(Tid tid) const { return const_cast<TestExecutive*>(this)->find(tid); }

  mutable std::mutex mutex_;
  std::vector<TestApplication> applications_;
  std::atomic<bool> second_up_{false};
};

// ---------------------------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client over a socket: it sends exactly the bytes given, so malformed requests can be sent too.

struct HttpAnswer {
  int status = 0;  // 0: the connection closed without an answer
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  std::string header(const std::string& name) const {
    auto found = headers.find(name);
    return found == headers.end() ? std::string() : found->second;
  }
};

class Connection {
 public:
  explicit Connection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket failed");
    timeval timeout{10, 0};  // a hang fails the test instead of blocking it
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect failed");
    }
  }
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends what it can; a server that refuses the rest has closed, which the answer then tells.
  void send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) return;
      bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
  }
  void finish_sending() { ::shutdown(fd_, SHUT_WR); }

  HttpAnswer receive() {
    std::string raw;
    char buffer[65536];
    for (;;) {
      const ssize_t count = ::recv(fd_, buffer, sizeof buffer, 0);
      if (count <= 0) break;
      raw.append(buffer, static_cast<std::size_t>(count));
    }
    return parse(raw);
  }

 private:
  static HttpAnswer parse(const std::string& raw) {
    HttpAnswer answer;
    const std::size_t header_end = raw.find("\r\n\r\n");
    if (!raw.starts_with("HTTP/1.") || header_end == std::string::npos) return answer;
    answer.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
    std::size_t line_start = raw.find("\r\n") + 2;
    while (line_start < header_end) {
      const std::size_t line_end = raw.find("\r\n", line_start);
      const std::string line = raw.substr(line_start, line_end - line_start);
      const std::size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      answer.headers[name] = value;
      line_start = line_end + 2;
    }
    answer.body = raw.substr(header_end + 4);
    if (answer.headers.count("content-length")) {
      answer.body.resize(std::min(answer.body.size(), std::stoul(answer.headers["content-length"])));
    }
    return answer;
  }

  int fd_;
};

// Sends a whole request and says so (half-close), so a malformed one is answered at once instead of after the
// server's receive timeout.
HttpAnswer round_trip(std::uint16_t port, std::string_view bytes) {
  Connection connection(port);
  connection.send(bytes);
  connection.finish_sending();
  return connection.receive();
}

HttpAnswer request(std::uint16_t port, const std::string& method, const std::string& target,
                   const std::optional<std::string>& body = std::nullopt) {
  std::string text = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                     "\r\nConnection: close\r\n";
  if (body) text += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body->size()) + "\r\n";
  text += "\r\n";
  if (body) text += *body;
  return round_trip(port, text);
}

HttpAnswer get(std::uint16_t port, const std::string& target) { return request(port, "GET", target); }
HttpAnswer post(std::uint16_t port, const std::string& target, const std::string& body) {
  return request(port, "POST", target, body);
}

// ---------------------------------------------------------------------------------------------------------------
// A strict JSON reader, independent of the server's Poco::JSON, so what the server writes is checked from outside.

struct Json {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<std::string> keys;  // object member names, in order
  std::vector<Json> items;        // array elements, or object member values

  bool is(Type wanted) const { return type == wanted; }
  bool has(const std::string& key) const {
    for (const std::string& name : keys) {
      if (name == key) return true;
    }
    return false;
  }
  const Json& operator[](const std::string& key) const {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return items[i];
    }
    throw std::runtime_error("no member \"" + key + "\"");
  }
  const Json& operator[](std::size_t index) const { return items.at(index); }
  std::size_t size() const { return items.size(); }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : text_(text) {}

  Json document() {
    Json value = read_value(0);
    skip_space();
    if (at_ < text_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("invalid JSON at offset " + std::to_string(at_) + ": " + what);
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }
  char peek() {
    skip_space();
    if (at_ >= text_.size()) fail("unexpected end");
    return text_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  Json read_value(int depth) {
    if (depth > 64) fail("too deep");
    Json value;
    const char c = peek();
    if (c == '{') {
      value.type = Json::Type::object;
      ++at_;
      if (peek() == '}') {
        ++at_;
        return value;
      }
      for (;;) {
        if (peek() != '"') fail("expected a member name");
        value.keys.push_back(read_string());
        expect(':');
        value.items.push_back(read_value(depth + 1));
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect('}');
        return value;
      }
    }
    if (c == '[') {
      value.type = Json::Type::array;
      ++at_;
      if (peek() == ']') {
        ++at_;
        return value;
      }
      for (;;) {
        value.items.push_back(read_value(depth + 1));
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect(']');
        return value;
      }
    }
    if (c == '"') {
      value.type = Json::Type::string;
      value.string = read_string();
      return value;
    }
    if (literal("true") || literal("false")) {
      value.type = Json::Type::boolean;
      value.boolean = text_[at_ - 1] == 'e' && text_[at_ - 2] == 'u';
      return value;
    }
    if (literal("null")) return value;
    return read_number();
  }

  Json read_number() {
    const std::size_t start = at_;
    auto digits = [&] {
      const std::size_t first = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - first;
    };
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    if (at_ < text_.size() && text_[at_] == '0') {
      ++at_;
    } else if (digits() == 0) {
      fail("expected a value");
    }
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      if (digits() == 0) fail("expected an exponent");
    }
    Json value;
    value.type = Json::Type::number;
    value.number = std::strtod(std::string(text_.substr(start, at_ - start)).c_str(), nullptr);
    return value;
  }

  std::string read_string() {
    ++at_;  // the opening quote
    std::string text;
    for (;;) {
      if (at_ >= text_.size()) fail("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return text;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        text += c;
        continue;
      }
      if (at_ >= text_.size()) fail("unterminated escape");
      const char escaped = text_[at_++];
      switch (escaped) {
        case '"': text += '"'; break;
        case '\\': text += '\\'; break;
        case '/': text += '/'; break;
        case 'b': text += '\b'; break;
        case 'f': text += '\f'; break;
        case 'n': text += '\n'; break;
        case 'r': text += '\r'; break;
        case 't': text += '\t'; break;
        case 'u': append_utf8(text, read_code_point()); break;
        default: fail("bad escape");
      }
    }
  }

  unsigned read_hex4() {
    if (at_ + 4 > text_.size()) fail("short \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 3; ++i) {
      const char c = text_[at_++];
      value <<= 4;
      if (c >= '0' && c <= '9') value += static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') value += static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') value += static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit");
    }
    return value;
  }

  unsigned read_code_point() {
    const unsigned first = read_hex4();
    if (first < 0xD800 || first > 0xDBFF) return first;
    if (!literal("\\u")) fail("lone surrogate");
    const unsigned second = read_hex4();
    return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
  }

  static void append_utf8(std::string& text, unsigned code) {
    if (code < 0x80) {
      text += static_cast<char>(code);
    } else if (code < 0x800) {
      text += static_cast<char>(0xC0 | (code >> 6));
      text += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      text += static_cast<char>(0xE0 | (code >> 12));
      text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      text += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      text += static_cast<char>(0xF0 | (code >> 18));
      text += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      text += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

Json parse_json(const std::string& text) { return JsonReader(text).document(); }

// ---------------------------------------------------------------------------------------------------------------
// A checker of the Prometheus text exposition format 0.0.4: it lists every problem it finds and the samples it read.

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct ExpositionCheck {
  std::vector<std::string> problems;
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family -> counter, gauge, ...
  std::map<std::string, std::string> helps;

  const Sample* find(const std::string& name, const std::map<std::string, std::string>& labels) const {
    for (const Sample& sample : samples) {
      if (sample.name != name) continue;
      bool all = true;
      for (const auto& [label, value] : labels) {
        auto found = sample.labels.find(label);
        all = all && found != sample.labels.end() && found->second == value;
      }
      if (all) return &sample;
    }
    return nullptr;
  }
};

bool metric_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

bool label_name_char(char c, bool first) { return c != ':' && metric_name_char(c, first); }

std::size_t read_name(std::string_view line, std::size_t at, bool (*valid)(char, bool)) {
  std::size_t end = at;
  while (end < line.size() && valid(line[end], end == at)) ++end;
  return end;
}

bool valid_value(const std::string& text) {
  if (text == "+Inf" || text == "-Inf" || text == "NaN") return true;
  if (text.empty()) return false;
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

ExpositionCheck check_exposition(const std::string& text) {
  ExpositionCheck check;
  std::set<std::string> closed;  // families whose samples ended: they may not come back
  std::set<std::string> series;
  std::string current;
  auto problem = [&](std::size_t number, const std::string& what) {
    check.problems.push_back("line " + std::to_string(number) + ": " + what);
  };
  auto enter_family = [&](const std::string& family, std::size_t number) {
    if (family == current) return;
    if (closed.count(family)) problem(number, "family " + family + " is interleaved with another");
    if (!current.empty()) closed.insert(current);
    current = family;
  };
  if (!text.empty() && text.back() != '\n') check.problems.push_back("the text does not end with a newline");
  std::size_t number = 0;
  std::size_t start = 0;
  std::set<std::string> with_samples;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (line.empty()) continue;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const bool help = line[2] == 'H';
      const std::size_t name_end = read_name(line, 7, metric_name_char);
      const std::string family = line.substr(7, name_end - 7);
      if (family.empty() || name_end >= line.size() || line[name_end] != ' ') {
        problem(number, "bad " + std::string(help ? "HELP" : "TYPE") + " line: " + line);
        continue;
      }
      enter_family(family, number);
      if (with_samples.count(family)) problem(number, "HELP or TYPE after samples of " + family);
      auto& seen = help ? check.helps : check.types;
      if (seen.count(family)) problem(number, "second " + std::string(help ? "HELP" : "TYPE") + " of " + family);
      const std::string rest = line.substr(name_end + 1);
      if (!help) {
        static const std::set<std::string> types = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (!types.count(rest)) problem(number, "unknown type '" + rest + "'");
      } else {
        for (std::size_t i = 0; i < rest.size(); ++i) {
          if (rest[i] == '\\' && (i + 1 >= rest.size() || (rest[i + 1] != '\\' && rest[i + 1] != 'n'))) {
            problem(number, "bad escape in HELP");
          }
          if (rest[i] == '\\') ++i;
        }
      }
      seen[family] = rest;
      continue;
    }
    if (line.starts_with("#")) continue;  // a comment

    Sample sample;
    std::size_t at = read_name(line, 0, metric_name_char);
    sample.name = line.substr(0, at);
    if (sample.name.empty()) {
      problem(number, "no metric name: " + line);
      continue;
    }
    std::string label_key;
    if (at < line.size() && line[at] == '{') {
      ++at;
      while (at < line.size() && line[at] != '}') {
        const std::size_t label_end = read_name(line, at, label_name_char);
        const std::string label = line.substr(at, label_end - at);
        if (label.empty() || label_end + 1 >= line.size() || line[label_end] != '=' || line[label_end + 1] != '"') {
          problem(number, "bad label in: " + line);
          break;
        }
        at = label_end + 2;
        std::string value;
        bool closed_quote = false;
        while (at < line.size()) {
          const char c = line[at++];
          if (c == '"') {
            closed_quote = true;
            break;
          }
          if (c == '\\') {
            const char escaped = at < line.size() ? line[at++] : '\0';
            if (escaped == '\\') value += '\\';
            else if (escaped == '"') value += '"';
            else if (escaped == 'n') value += '\n';
            else problem(number, "bad escape in a label value: " + line);
            continue;
          }
          value += c;
        }
        if (!closed_quote) problem(number, "unterminated label value: " + line);
        if (!sample.labels.emplace(label, value).second) problem(number, "label " + label + " twice: " + line);
        if (at < line.size() && line[at] == ',') ++at;
      }
      if (at >= line.size() || line[at] != '}') {
        problem(number, "labels not closed: " + line);
        continue;
      }
      label_key = line.substr(sample.name.size(), at + 1 - sample.name.size());
      ++at;
    }
    if (at >= line.size() || line[at] != ' ') {
      problem(number, "no space before the value: " + line);
      continue;
    }
    std::string value = line.substr(at + 1);
    if (const std::size_t space = value.find(' '); space != std::string::npos) {
      const std::string timestamp = value.substr(space + 1);
      value = value.substr(0, space);
      if (timestamp.empty() || timestamp.find_first_not_of("-0123456789") != std::string::npos) {
        problem(number, "bad timestamp: " + line);
      }
    }
    if (!valid_value(value)) problem(number, "bad value '" + value + "': " + line);
    sample.value = value == "NaN" ? std::nan("") : std::strtod(value.c_str(), nullptr);

    std::string family = sample.name;
    if (!check.types.count(family)) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (family.ends_with(suffix)) family.resize(family.size() - std::string_view(suffix).size());
      }
    }
    enter_family(family, number);
    if (!check.types.count(family)) problem(number, "sample before the TYPE of its family: " + line);
    if (!check.helps.count(family)) problem(number, "sample before the HELP of its family: " + line);
    with_samples.insert(family);
    if (!series.insert(sample.name + label_key).second) problem(number, "series twice: " + line);
    check.samples.push_back(std::move(sample));
  }
  return check;
}

// ---------------------------------------------------------------------------------------------------------------

struct ServedExecutive {
  TestExecutive model;
  daqx::ControlServer server{model, "127.0.0.1", 0};
  ServedExecutive() { server.start(); }
  std::uint16_t port() const { return server.port(); }
};

bool still_answers(std::uint16_t port) {
  const HttpAnswer answer = get(port, "/api/applications");
  return answer.status == 200 && parse_json(answer.body).size() == 4;
}

void require_json_error(const HttpAnswer& answer, int status) {
  INFO(answer.body);
  REQUIRE(answer.status == status);
  REQUIRE(answer.header("content-type").starts_with("application/json"));
  const Json error = parse_json(answer.body);
  REQUIRE(error.is(Json::Type::object));
  REQUIRE(error["error"].is(Json::Type::string));
  REQUIRE_FALSE(error["error"].string.empty());
}

std::string command_body(const std::string& command) { return R"({"command":")" + command + R"("})"; }

}  // namespace

TEST_CASE("the control server listens on a free port when asked for port 0 and tells which", "[http]") {
  ServedExecutive served;
  REQUIRE(served.port() != 0);
  REQUIRE(get(served.port(), "/").status == 200);
}

TEST_CASE("a control server on a port already taken is refused with the reason", "[http]") {
  ServedExecutive served;
  TestExecutive other;
  try {
    daqx::ControlServer second(other, "127.0.0.1", served.port());
    FAIL("a second server listened on a port already taken");
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    REQUIRE(message == "cannot listen on 127.0.0.1:" + std::to_string(served.port()) + ": Address already in use");
  }
  REQUIRE(still_answers(served.port()));
}

TEST_CASE("a control server on an address not of this host is refused with the reason", "[http]") {
  TestExecutive model;
  // 192.0.2.0/24 is reserved for documentation: never an address of this machine.
  REQUIRE_THROWS_WITH(daqx::ControlServer(model, "192.0.2.1", 0),
                      Catch::StartsWith("cannot listen on 192.0.2.1:0: Cannot assign requested address"));
}

TEST_CASE("the status page shows partition, context, applications, pools, connections, threads and counters",
          "[http]") {
  ServedExecutive served;
  const HttpAnswer page = get(served.port(), "/");
  REQUIRE(page.status == 200);
  REQUIRE(page.header("content-type") == "text/html; charset=utf-8");
  const std::string& html = page.body;
  CHECK(html.find("<noscript><meta http-equiv=\"refresh\" content=\"5\"></noscript>") != std::string::npos);
  CHECK(html.find("<main id=\"live\"") != std::string::npos);  // redrawn in place by its script
  CHECK(html.find("two-by-two &lt;test&gt;") != std::string::npos);
  CHECK(html.find("http://127.0.0.1:9001") != std::string::npos);
  for (const char* link : {"href=\"/app/1\"", "href=\"/app/2\"", "href=\"/app/3\"", "href=\"/app/4\""}) {
    CHECK(html.find(link) != std::string::npos);
  }
  CHECK(html.find("evb::RU") != std::string::npos);
  CHECK(html.find("test::Fragile&lt;&amp;&gt;") != std::string::npos);
  CHECK(html.find("evb/ru/0/pool") != std::string::npos);
  CHECK(html.find("numa:0") != std::string::npos);
  CHECK(html.find("65536") != std::string::npos);
  CHECK(html.find("10.0.0.2:40000") != std::string::npos);
  CHECK(html.find("10.0.0.3:40000") != std::string::npos);
  CHECK(html.find("class=\"down\"") != std::string::npos);
  CHECK(html.find("pt/tcp/recv-0") != std::string::npos);
  CHECK(html.find("0,1,2,3") != std::string::npos);
  CHECK(html.find("frames_dispatched") != std::string::npos);
  CHECK(html.find("1000000") != std::string::npos);
  // Nothing from the model reaches the page unescaped.
  CHECK(html.find("<test>") == std::string::npos);
  CHECK(html.find("Fragile<&>") == std::string::npos);
}

TEST_CASE("an application page shows state, reason, parameters, metrics and the command buttons", "[http]") {
  ServedExecutive served;
  REQUIRE(post(served.port(), "/api/applications/4/parameters", R"({"name":"fail_on_enable","value":"true"})")
              .status == 200);
  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("configure")).status == 200);
  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("enable")).status == 422);

  const HttpAnswer page = get(served.port(), "/app/4");
  REQUIRE(page.status == 200);
  REQUIRE(page.header("content-type") == "text/html; charset=utf-8");
  const std::string& html = page.body;
  CHECK(html.find("state-Failed") != std::string::npos);
  CHECK(html.find("enable hook threw: &lt;disk&gt; &amp; &quot;full&quot;") != std::string::npos);
  CHECK(html.find("<disk>") == std::string::npos);
  for (const char* text : {"events_per_second", "unsigned", "Hz", "how many events to generate", "fail_on_enable",
                           "where events go &lt;not&gt; &quot;anywhere&quot;", "frames_received", "queue depth.now"}) {
    INFO(text);
    CHECK(html.find(text) != std::string::npos);
  }
  for (const char* command : {"configure", "enable", "stop", "halt"}) {
    CHECK(html.find("{command: '" + std::string(command) + "'}") != std::string::npos);
  }
  CHECK(html.find("/api/applications/4/transition") != std::string::npos);
  CHECK(html.find("/api/applications/4/parameters") != std::string::npos);
}

TEST_CASE("an application page of an unknown tid is a 404 page, of a non-numeric one a 400 page", "[http]") {
  ServedExecutive served;
  const HttpAnswer unknown = get(served.port(), "/app/99");
  REQUIRE(unknown.status == 404);
  REQUIRE(unknown.header("content-type") == "text/html; charset=utf-8");
  CHECK(unknown.body.find("no application with tid 99") != std::string::npos);
  const HttpAnswer not_numeric = get(served.port(), "/app/<b>");
  REQUIRE(not_numeric.status == 400);
  CHECK(not_numeric.body.find("&lt;b&gt;") != std::string::npos);
  CHECK(not_numeric.body.find("<b>") == std::string::npos);
}

TEST_CASE("GET /api/applications lists every application with its parameters and metrics", "[http]") {
  ServedExecutive served;
  const HttpAnswer answer = get(served.port(), "/api/applications");
  REQUIRE(answer.status == 200);
  REQUIRE(answer.header("content-type") == "application/json");
  const Json applications = parse_json(answer.body);
  REQUIRE(applications.is(Json::Type::array));
  REQUIRE(applications.size() == 4);
  for (std::size_t i = 0; i < applications.size(); ++i) {
    const Json& application = applications[i];
    CHECK(application["tid"].number == static_cast<double>(i + 1));
    CHECK(application["class"].is(Json::Type::string));
    CHECK(application["instance"].is(Json::Type::number));
    CHECK(application["name"].is(Json::Type::string));
    CHECK(application["state"].string == "Halted");
    CHECK(application["reason"].is(Json::Type::string));
    const Json& parameters = application["parameters"];
    REQUIRE(parameters.size() == 3);
    for (const char* key : {"name", "type", "value", "default", "unit", "help"}) {
      CHECK(parameters[0][key].is(Json::Type::string));
    }
    const Json& metrics = application["metrics"];
    REQUIRE(metrics.size() == 6);
    for (std::size_t m = 0; m < metrics.size(); ++m) {
      CHECK(metrics[m]["name"].is(Json::Type::string));
      CHECK((metrics[m]["kind"].string == "counter" || metrics[m]["kind"].string == "gauge" ||
             metrics[m]["kind"].string == "histogram" || metrics[m]["kind"].string == "state_set"));
      CHECK(metrics[m]["exported"].is(Json::Type::boolean));
      CHECK(metrics[m]["value"].is(Json::Type::number));
      CHECK(metrics[m]["help"].is(Json::Type::string));
      CHECK(metrics[m]["labels"].is(Json::Type::object));
    }
  }
  CHECK(applications[1]["class"].string == "evb::RU");
  CHECK(applications[3]["class"].string == "test::Fragile<&>");
  CHECK(applications[3]["instance"].number == 1);
  CHECK(applications[0]["parameters"][1]["help"].string == "where events go <not> \"anywhere\"");
  CHECK(applications[0]["metrics"][1]["help"].string == "Frames waiting\nin the queue");
  CHECK(applications[0]["metrics"][2]["labels"]["peer"].string == "host \"a\"\\b\nc");
}

TEST_CASE("GET /api/applications/<tid> answers one application, 404 when unknown, 400 when not a number", "[http]") {
  ServedExecutive served;
  const HttpAnswer one = get(served.port(), "/api/applications/3");
  REQUIRE(one.status == 200);
  const Json application = parse_json(one.body);
  CHECK(application["tid"].number == 3);
  CHECK(application["class"].string == "evb::BU");
  CHECK(application["state"].string == "Halted");

  require_json_error(get(served.port(), "/api/applications/99"), 404);
  require_json_error(get(served.port(), "/api/applications/0"), 404);
  require_json_error(get(served.port(), "/api/applications/abc"), 400);
  require_json_error(get(served.port(), "/api/applications/-1"), 400);
  require_json_error(get(served.port(), "/api/applications/4294967296"), 400);
  require_json_error(get(served.port(), "/api/applications/99999999999999999999999"), 400);
  CHECK(parse_json(get(served.port(), "/api/applications/abc").body)["error"].string ==
        "not an application id: 'abc'");
  REQUIRE(still_answers(served.port()));
}

TEST_CASE("a transition through the API changes the application's state", "[http]") {
  ServedExecutive served;
  const HttpAnswer answer = post(served.port(), "/api/applications/2/transition", command_body("configure"));
  REQUIRE(answer.status == 200);
  const Json result = parse_json(answer.body);
  CHECK(result["ok"].boolean == true);
  CHECK(result["message"].is(Json::Type::string));
  REQUIRE(result["states"].size() == 1);
  CHECK(result["states"][0]["tid"].number == 2);
  CHECK(result["states"][0]["state"].string == "Configured");
  CHECK(served.model.state_of(2) == State::configured);
  CHECK(served.model.state_of(1) == State::halted);
  CHECK(parse_json(get(served.port(), "/api/applications/2").body)["state"].string == "Configured");

  // Commands are case-insensitive, as command_from_string is.
  REQUIRE(post(served.port(), "/api/applications/2/transition", command_body("Enable")).status == 200);
  CHECK(served.model.state_of(2) == State::enabled);
}

TEST_CASE("an illegal transition is refused with 409 and the reason, and changes nothing", "[http]") {
  ServedExecutive served;
  const HttpAnswer answer = post(served.port(), "/api/applications/1/transition", command_body("enable"));
  REQUIRE(answer.status == 409);
  const Json result = parse_json(answer.body);
  CHECK(result["ok"].boolean == false);
  CHECK(result["message"].string == "tid 1: " + daqx::illegal_transition_reason(State::halted, Command::enable));
  CHECK(result["error"].string == result["message"].string);
  CHECK(result["states"][0]["state"].string == "Halted");
  CHECK(served.model.state_of(1) == State::halted);
}

TEST_CASE("a transition of an unknown application is a 404", "[http]") {
  ServedExecutive served;
  const HttpAnswer answer = post(served.port(), "/api/applications/77/transition", command_body("configure"));
  require_json_error(answer, 404);
  CHECK(parse_json(answer.body)["ok"].boolean == false);
  require_json_error(post(served.port(), "/api/applications/x7/transition", command_body("configure")), 400);
}

TEST_CASE("a context-wide transition drives every application of the context", "[http]") {
  ServedExecutive served;
  for (const auto& [command, state] : std::vector<std::pair<std::string, std::string>>{
           {"configure", "Configured"}, {"enable", "Enabled"}, {"stop", "Configured"}, {"halt", "Halted"}}) {
    const HttpAnswer answer = post(served.port(), "/api/transition", command_body(command));
    INFO(command << ": " << answer.body);
    REQUIRE(answer.status == 200);
    const Json result = parse_json(answer.body);
    REQUIRE(result["states"].size() == 4);
    for (std::size_t i = 0; i < 4; ++i) CHECK(result["states"][i]["state"].string == state);
  }
  require_json_error(post(served.port(), "/api/transition", command_body("stop")), 409);
}

TEST_CASE("a failing hook answers 422 and leaves the application Failed with its reason until halted", "[http]") {
  ServedExecutive served;
  REQUIRE(post(served.port(), "/api/applications/4/parameters", R"({"name":"fail_on_enable","value":"true"})")
              .status == 200);
  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("configure")).status == 200);
  const HttpAnswer failed = post(served.port(), "/api/applications/4/transition", command_body("enable"));
  REQUIRE(failed.status == 422);
  CHECK(parse_json(failed.body)["states"][0]["state"].string == "Failed");
  const Json application = parse_json(get(served.port(), "/api/applications/4").body);
  CHECK(application["state"].string == "Failed");
  CHECK(application["reason"].string == "enable hook threw: <disk> & \"full\"");

  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("enable")).status == 409);
  REQUIRE(post(served.port(), "/api/applications/4/transition", command_body("halt")).status == 200);
  CHECK(served.model.state_of(4) == State::halted);
}

TEST_CASE("a transition body that is not a command is refused with 400 and the valid commands", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();
  for (const std::string target : {"/api/transition", "/api/applications/1/transition"}) {
    INFO(target);
    const HttpAnswer bad_json = post(port, target, R"({"command": "configure")");
    require_json_error(bad_json, 400);
    CHECK(parse_json(bad_json.body)["error"].string.starts_with("bad JSON: "));
    require_json_error(post(port, target, ""), 400);
    CHECK(parse_json(post(port, target, "").body)["error"].string.starts_with("empty body"));
    require_json_error(post(port, target, "[\"configure\"]"), 400);
    require_json_error(post(port, target, "\"configure\""), 400);
    require_json_error(post(port, target, "{}"), 400);
    require_json_error(post(port, target, R"({"command": null})"), 400);
    require_json_error(post(port, target, R"({"command": {"name": "configure"}})"), 400);
    require_json_error(post(port, target, std::string(100000, '[')), 400);
    const HttpAnswer unknown = post(port, target, command_body("reboot"));
    require_json_error(unknown, 400);
    CHECK(parse_json(unknown.body)["error"].string ==
          "unknown command 'reboot': one of configure, enable, stop, halt");
    const HttpAnswer missing = post(port, target, R"({"verb":"configure"})");
    CHECK(parse_json(missing.body)["error"].string.find("configure, enable, stop, halt") != std::string::npos);
  }
  // A POST without Content-Length has no body, and is not left waiting for one.
  const HttpAnswer no_length =
      round_trip(port, "POST /api/transition HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  require_json_error(no_length, 400);
  CHECK(served.model.state_of(1) == State::halted);
  REQUIRE(still_answers(port));
}

TEST_CASE("parameters are set while Halted, refused with 400 when wrong and 409 when not Halted", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();
  const std::string target = "/api/applications/1/parameters";
  const HttpAnswer set = post(port, target, R"({"name":"events_per_second","value":"250"})");
  REQUIRE(set.status == 200);
  CHECK(parse_json(set.body)["ok"].boolean == true);
  CHECK(parse_json(get(port, "/api/applications/1").body)["parameters"][0]["value"].string == "250");
  // A number is taken in its text form.
  REQUIRE(post(port, target, R"({"name":"events_per_second","value":300})").status == 200);
  CHECK(parse_json(get(port, "/api/applications/1").body)["parameters"][0]["value"].string == "300");

  const HttpAnswer bad_value = post(port, target, R"({"name":"events_per_second","value":"fast"})");
  require_json_error(bad_value, 400);
  CHECK(parse_json(bad_value.body)["error"].string == "not an unsigned integer: 'fast'");
  const HttpAnswer unknown_name = post(port, target, R"({"name":"colour","value":"red"})");
  require_json_error(unknown_name, 400);
  CHECK(parse_json(unknown_name.body)["error"].string == "unknown parameter 'colour'");
  require_json_error(post(port, target, R"({"name":"events_per_second"})"), 400);
  require_json_error(post(port, target, R"({"value":"1"})"), 400);
  require_json_error(post(port, target, R"({"name":"","value":"1"})"), 400);
  require_json_error(post(port, target, "name=events_per_second&value=1"), 400);
  require_json_error(post(port, target, ""), 400);
  require_json_error(post(port, "/api/applications/99/parameters", R"({"name":"output","value":"x"})"), 404);
  require_json_error(post(port, "/api/applications/one/parameters", R"({"name":"output","value":"x"})"), 400);

  REQUIRE(post(port, "/api/applications/1/transition", command_body("configure")).status == 200);
  const HttpAnswer not_halted = post(port, target, R"({"name":"events_per_second","value":"5"})");
  require_json_error(not_halted, 409);
  CHECK(parse_json(not_halted.body)["error"].string.find("only while Halted") != std::string::npos);
  CHECK(parse_json(get(port, "/api/applications/1").body)["parameters"][0]["value"].string == "300");
}

TEST_CASE("pools, threads, transports and the executive are served as JSON", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();

  const HttpAnswer pools_answer = get(port, "/api/pools");
  REQUIRE(pools_answer.status == 200);
  const Json pools = parse_json(pools_answer.body);
  REQUIRE(pools.size() == 1);
  CHECK(pools[0]["name"].string == "evb/ru/0/pool");
  CHECK(pools[0]["allocator"].string == "numa:0");
  CHECK(pools[0]["numa_node"].number == 0);
  CHECK(pools[0]["bytes_reserved"].number == 1 << 20);
  REQUIRE(pools[0]["classes"].size() == 2);
  const Json& large = pools[0]["classes"][1];
  CHECK(large["block_size"].number == 65536);
  CHECK(large["blocks_total"].number == 16);
  CHECK(large["blocks_used"].number == 16);
  CHECK(large["blocks_free"].number == 0);
  CHECK(large["high_water"].number == 16);
  CHECK(large["failed_allocations"].number == 7);
  REQUIRE(pools[0]["chunks"].size() == 1);
  CHECK(pools[0]["chunks"][0]["address"].number == static_cast<double>(0x7f0000001000u));
  CHECK(pools[0]["chunks"][0]["bytes"].number == 1 << 20);

  const Json threads = parse_json(get(port, "/api/threads").body);
  REQUIRE(threads.size() == 2);
  CHECK(threads[1]["name"].string == "evb/ru/0/work");
  CHECK(threads[1]["kernel_tid"].number == 1235);
  CHECK(threads[1]["cores_wanted"].size() == 1);
  CHECK(threads[1]["cores"].size() == 4);

  const Json transports = parse_json(get(port, "/api/transports").body);
  REQUIRE(transports.size() == 1);
  CHECK(transports[0]["protocol"].string == "tcp");
  CHECK(transports[0]["endpoint"].string == "tcp://127.0.0.1:40000");
  CHECK(transports[0]["parameters"][0]["name"].string == "mode");
  CHECK(transports[0]["metrics"][0]["value"].number == 42);
  REQUIRE(transports[0]["connections"].size() == 3);
  CHECK(transports[0]["connections"][0]["remote"].string == "10.0.0.2:40000");
  CHECK(transports[0]["connections"][0]["up"].boolean == true);
  CHECK(transports[0]["connections"][0]["outgoing"].boolean == true);
  CHECK(transports[0]["connections"][1]["up"].boolean == false);
  CHECK(transports[0]["connections"][2]["outgoing"].boolean == false);
  CHECK(transports[0]["connections"][0]["metrics"][1]["value"].number == 4e9);

  const Json executive = parse_json(get(port, "/api/executive").body);
  CHECK(executive["partition"].string == "two-by-two <test>");
  CHECK(executive["context"].string == "http://127.0.0.1:9001");
  REQUIRE(executive["metrics"].size() == 3);
  CHECK(executive["metrics"][0]["value"].number == 1e6);
  CHECK(executive["metrics"][2]["value"].is(Json::Type::null));  // NaN has no JSON spelling
}

TEST_CASE("/metrics is valid Prometheus text exposition with the daqx names and labels", "[http]") {
  ServedExecutive served;
  REQUIRE(post(served.port(), "/api/applications/2/transition", command_body("configure")).status == 200);
  const HttpAnswer answer = get(served.port(), "/metrics");
  REQUIRE(answer.status == 200);
  REQUIRE(answer.header("content-type").starts_with("text/plain; version=0.0.4"));
  const ExpositionCheck check = check_exposition(answer.body);
  INFO(answer.body);
  auto value = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    const Sample* sample = check.find(name, labels);
    if (sample == nullptr) FAIL("no sample " << name);
    return sample == nullptr ? -1.0 : sample->value;
  };
  for (const std::string& problem : check.problems) FAIL_CHECK(problem);
  REQUIRE(check.problems.empty());

  // A state set: one series per state, 1 for the current one; "application_instance", as Prometheus keeps
  // "instance" for its target.
  CHECK(check.types.at("daqx_application_state") == "gauge");
  const Sample* configured = check.find("daqx_application_state", {{"tid", "2"}, {"state", "Configured"}});
  REQUIRE(configured != nullptr);
  CHECK(configured->labels == std::map<std::string, std::string>{{"tid", "2"},
                                                                 {"class", "evb::RU"},
                                                                 {"application_instance", "0"},
                                                                 {"state", "Configured"}});
  CHECK(configured->value == 1);
  for (const char* state : {"Halted", "Enabled", "Failed"}) CHECK(value("daqx_application_state", {{"tid", "2"}, {"state", state}}) == 0);
  CHECK(answer.body.find("daqx_application_state{tid=\"1\",class=\"evb::EvM\",application_instance=\"0\",state=\"Halted\"} 1\n") !=
        std::string::npos);
  CHECK(value("daqx_application_output_state", {{"tid", "2"}, {"state", "throttled"}}) == 1);
  CHECK(value("daqx_application_output_state", {{"tid", "2"}, {"state", "running"}}) == 0);
  for (const Sample& sample : check.samples) {
    INFO(sample.name);
    CHECK(sample.labels.count("instance") == 0);
  }

  // Histograms in seconds: cumulative buckets, +Inf equal to the count, the sum in seconds.
  CHECK(check.types.at("daqx_application_build_latency_seconds") == "histogram");
  CHECK(value("daqx_application_build_latency_seconds_bucket", {{"tid", "2"}, {"le", "1e-06"}}) == 0);
  CHECK(value("daqx_application_build_latency_seconds_bucket", {{"tid", "2"}, {"le", "5e-06"}}) == 1);
  CHECK(value("daqx_application_build_latency_seconds_bucket", {{"tid", "2"}, {"le", "0.025"}}) == 2);
  CHECK(value("daqx_application_build_latency_seconds_bucket", {{"tid", "2"}, {"le", "+Inf"}}) == 2);
  CHECK(value("daqx_application_build_latency_seconds_count", {{"tid", "2"}}) == 2);
  CHECK(value("daqx_application_build_latency_seconds_sum", {{"tid", "2"}}) == Approx(0.020003));
  // Rates and settings are for the JSON API: Prometheus computes rates, and settings are not measurements.
  CHECK(check.types.count("daqx_application_frame_rate") == 0);
  CHECK(check.types.count("daqx_transport_busy_poll") == 0);
  // What was built.
  const Sample* build = check.find("daqx_build_info", {});
  REQUIRE(build != nullptr);
  CHECK(build->value == 1);
  CHECK(!build->labels.at("version").empty());
  CHECK(!build->labels.at("compiler").empty());
  CHECK(build->labels.count("build_type") == 1);

  CHECK(check.types.at("daqx_application_frames_received_total") == "counter");
  CHECK(check.helps.at("daqx_application_frames_received_total") == "Frames received");
  const Sample* received = check.find("daqx_application_frames_received_total", {{"tid", "3"}});
  REQUIRE(received != nullptr);
  CHECK(received->value == 300);
  // Sanitized name, HELP with an escaped newline, label values escaped and read back intact.
  CHECK(check.types.at("daqx_application_queue_depth_now") == "gauge");
  CHECK(check.helps.at("daqx_application_queue_depth_now") == "Frames waiting\\nin the queue");
  const Sample* from_peer = check.find("daqx_application_frames_from_peer_total", {{"tid", "4"}});
  REQUIRE(from_peer != nullptr);
  CHECK(from_peer->labels.at("peer") == "host \"a\"\\b\nc");
  CHECK(from_peer->labels.at("class") == "test::Fragile<&>");
  CHECK(from_peer->labels.at("note") == "bad \xef\xbf\xbd byte");  // Prometheus wants UTF-8: U+FFFD for a stray byte

  CHECK(check.types.at("daqx_pool_blocks") == "gauge");
  for (const char* name : {"daqx_pool_blocks", "daqx_pool_blocks_used", "daqx_pool_blocks_free",
                           "daqx_pool_blocks_high_water", "daqx_pool_failed_allocations_total"}) {
    INFO(name);
    CHECK(check.find(name, {{"pool", "evb/ru/0/pool"}, {"block_size", "4096"}}) != nullptr);
  }
  CHECK(check.types.at("daqx_pool_failed_allocations_total") == "counter");
  CHECK(value("daqx_pool_failed_allocations_total", {{"block_size", "65536"}}) == 7);

  CHECK(value("daqx_transport_frames_sent_total", {{"protocol", "tcp"}}) == 42);
  CHECK(value("daqx_transport_sends_would_block_total", {{"protocol", "tcp"}}) == 3);
  // Connections by what they go to (stable across reconnects), only from the side that opened them.
  CHECK(value("daqx_transport_connection_up", {{"peer_endpoint", "tcp://10.0.0.2:40000"},
                                               {"peer_context", "http://10.0.0.2:9000"}}) == 1);
  CHECK(value("daqx_transport_connection_up", {{"peer_endpoint", "tcp://10.0.0.3:40000"}}) == 0);
  CHECK(value("daqx_transport_connection_bytes_sent_total",
              {{"protocol", "tcp"}, {"peer_endpoint", "tcp://10.0.0.2:40000"}}) == 4e9);
  CHECK(answer.body.find("10.0.0.4:51234") == std::string::npos);
  for (const Sample& sample : check.samples) CHECK(sample.labels.count("remote") == 0);

  CHECK(value("daqx_executive_frames_dispatched_total", {}) == 1e6);
  CHECK(value("daqx_executive_uptime_seconds", {}) == 12.5);
  CHECK(std::isnan(value("daqx_executive_bad_frames_total", {})));

  for (const auto& [family, type] : check.types) {
    INFO(family);
    if (type == "counter") CHECK(family.ends_with("_total"));
    if (type != "counter") CHECK_FALSE(family.ends_with("_total"));
  }
}

TEST_CASE("the exposition checker finds the mistakes it is meant to find", "[http]") {
  CHECK(check_exposition("# HELP a x\n# TYPE a gauge\na 1\n").problems.empty());
  CHECK_FALSE(check_exposition("a 1\n").problems.empty());                                    // no HELP or TYPE
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na{b=\"1} 1\n").problems.empty());  // unterminated
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na one\n").problems.empty());      // bad value
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na{x=\"1\",x=\"2\"} 1\n").problems.empty());
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\nb 1\na{c=\"d\"} 2\n")
                  .problems.empty());  // interleaved
  CHECK_FALSE(check_exposition("# HELP a x\n# TYPE a gauge\na 1\na 2\n").problems.empty());  // same series twice
}

TEST_CASE("unknown paths answer 404: JSON under /api, a page elsewhere", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();
  for (const char* target : {"/api", "/api/nothing", "/api/applications/1/nothing", "/api/applications/1/transition/x",
                             "/api/pools/1"}) {
    INFO(target);
    require_json_error(get(port, target), 404);
  }
  const HttpAnswer page = get(port, "/nothing/here");
  REQUIRE(page.status == 404);
  CHECK(page.header("content-type") == "text/html; charset=utf-8");
  REQUIRE(get(port, "/app").status == 404);
  REQUIRE(get(port, "/metrics/x").status == 404);
  REQUIRE(still_answers(port));
}

TEST_CASE("POST /api/connect asks the transports to open their connections and waits for the outgoing ones: 504 "
          "naming those still down when its timeout passes, 200 once all are up", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();
  // One of the two outgoing connections stays down (the accepted one does not count).
  const auto started = std::chrono::steady_clock::now();
  const HttpAnswer timed_out = post(served.port(), "/api/connect?timeout=600", "");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(timed_out.body);
  REQUIRE(timed_out.status == 504);
  CHECK(timed_out.header("content-type") == "application/json");
  const Json result = parse_json(timed_out.body);
  CHECK(result["up"].number == 1);
  CHECK(result["total"].number == 2);
  CHECK(result["seconds"].number >= 0.6);
  CHECK(waited < 5);
  REQUIRE(result["down"].size() == 1);
  CHECK(result["down"][0]["protocol"].string == "tcp");
  CHECK(result["down"][0]["peer"].number == 2);
  CHECK(result["down"][0]["remote"].string == "10.0.0.3:40000");
  // Asked at once, and again while it waited (every 250 ms): a peer that was not listening gets another try.
  CHECK(served.model.connect_requests >= 2);

  // Once asked, it comes up: 200 at once, nothing down. The default timeout needs no query.
  served.model.down_connection_comes_up = true;
  const HttpAnswer all_up = post(port, "/api/connect", "");
  INFO(all_up.body);
  REQUIRE(all_up.status == 200);
  const Json up = parse_json(all_up.body);
  CHECK(up["up"].number == 2);
  CHECK(up["total"].number == 2);
  CHECK(up["down"].size() == 0);
  CHECK(up["seconds"].number < 5);

  // The query's number by the strict syntax: decoded escapes included (a NUL, blanks, a '+') and nothing cut short.
  for (const char* bad : {"soon", "-1", "120001", "", "1.5", "5%00x", "5%00", "%205", "5%20", "5%0D", "5%0A", "%2B5",
                          "0x10", "1e3", "99999999999999999999"})
    require_json_error(post(port, std::string("/api/connect?timeout=") + bad, ""), 400);
  CHECK_THAT(post(port, "/api/connect?timeout=5%00x", "").body,
             Catch::Contains("timeout (milliseconds, 0 to 120000): '5\\\\x00x' is not an unsigned integer: it holds a NUL byte"));
  CHECK_THAT(post(port, "/api/connect?timeout=120001", "").body,
             Catch::Contains("'120001' is out of range for an unsigned integer: above the maximum 120000"));
  const HttpAnswer wrong_method = get(port, "/api/connect");
  require_json_error(wrong_method, 405);
  CHECK(wrong_method.header("allow") == "POST");
}

TEST_CASE("connect waits leave the request threads: a server of 2 threads parks 32 of them and still answers reads at "
          "once, a 33rd is 503 busy, and each is answered when its connections come up, half-closed clients too",
          "[http]") {
  ServedExecutive served;  // 2 threads
  const std::uint16_t port = served.port();
  constexpr int kWaits = 32;  // kMaxConnectWaits
  std::vector<std::unique_ptr<Connection>> waits;
  for (int i = 0; i < kWaits; ++i) {
    waits.push_back(std::make_unique<Connection>(port));
    waits.back()->send("POST /api/connect?timeout=20000 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    if (i % 2 == 0) waits.back()->finish_sending();  // a client may half-close after its request
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto asked = std::chrono::steady_clock::now();
  const HttpAnswer extra = post(port, "/api/connect?timeout=20000", "");
  require_json_error(extra, 503);
  CHECK(parse_json(extra.body)["error"].string.find("busy: 32 connect waits") != std::string::npos);
  CHECK(still_answers(port));
  CHECK(get(port, "/api/transports").status == 200);
  CHECK(std::chrono::steady_clock::now() - asked < std::chrono::seconds(3));

  served.model.down_connection_comes_up = true;  // the next ask (every 250 ms per wait) brings it up
  for (auto& wait : waits) {
    const HttpAnswer answer = wait->receive();
    INFO(answer.body);
    REQUIRE(answer.status == 200);
    CHECK(parse_json(answer.body)["up"].number == 2);
  }
  // Every place is free again.
  CHECK(post(port, "/api/connect?timeout=1000", "").status == 200);
}

TEST_CASE("when the executive begins to stop, a connect wait in progress ends 503 and new ones are refused, even "
          "though its transports, torn down, list no connection: never read as all up", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();
  auto waiting = std::async(std::launch::async, [port] { return post(port, "/api/connect?timeout=20000", ""); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the wait is under way: one connection is down
  REQUIRE(waiting.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
  // main's order at SIGTERM: the server is told first, then the executive tears its transports down.
  served.server.begin_stop();
  served.model.transports_gone = true;
  REQUIRE(waiting.wait_for(std::chrono::seconds(3)) == std::future_status::ready);
  const HttpAnswer ended = waiting.get();
  require_json_error(ended, 503);
  CHECK(parse_json(ended.body)["error"].string.find("stopping") != std::string::npos);
  const HttpAnswer refused = post(port, "/api/connect?timeout=0", "");
  require_json_error(refused, 503);
  CHECK(still_answers(port));  // other requests are served until stop()
  served.server.begin_stop();  // idempotent
  served.server.stop();
}

TEST_CASE("a wrong method on a known path answers 405 with an Allow header", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();
  const HttpAnswer post_to_list = post(port, "/api/applications", "{}");
  require_json_error(post_to_list, 405);
  CHECK(post_to_list.header("allow") == "GET, HEAD");
  const HttpAnswer get_transition = get(port, "/api/transition");
  require_json_error(get_transition, 405);
  CHECK(get_transition.header("allow") == "POST");
  CHECK(request(port, "GET", "/api/applications/1/parameters").header("allow") == "POST");
  CHECK(request(port, "DELETE", "/api/applications/1").status == 405);
  const HttpAnswer put_page = request(port, "PUT", "/", std::string("x"));
  CHECK(put_page.status == 405);
  CHECK(put_page.header("allow") == "GET, HEAD");
  CHECK(request(port, "POST", "/metrics", std::string("x")).status == 405);
  CHECK(request(port, "OPTIONS", "/app/1").status == 405);
  REQUIRE(still_answers(port));
}

TEST_CASE("HEAD answers the headers of GET without a body", "[http]") {
  ServedExecutive served;
  const HttpAnswer head = request(served.port(), "HEAD", "/api/applications");
  REQUIRE(head.status == 200);
  CHECK(head.header("content-type") == "application/json");
  CHECK(head.body.empty());
  CHECK(std::stoul(head.header("content-length")) == get(served.port(), "/api/applications").body.size());
}

TEST_CASE("a malformed escape anywhere in the target is a 400 with a JSON reason, never a 500", "[http]") {
  ServedExecutive served;
  for (const char* target : {"/api/connect?%timeout=5", "/api/connect?timeout=%zz", "/api/pools?%", "/api/%zz"}) {
    INFO(target);
    const HttpAnswer answer = target == std::string("/api/pools?%") ? get(served.port(), target)
                                                                     : post(served.port(), target, "");
    require_json_error(answer, 400);
    CHECK_THAT(answer.body, Catch::Contains("bad request target"));
  }
  REQUIRE(still_answers(served.port()));
}

TEST_CASE("bytes a client sent are escaped in every error answer, which stays valid UTF-8", "[http]") {
  ServedExecutive served;
  const HttpAnswer page = get(served.port(), "/%F7%0A");
  REQUIRE(page.status == 404);
  CHECK(daqx::strings::valid_utf8(page.body) == page.body);
  CHECK_THAT(page.body, Catch::Contains("/\\xf7\\n"));
  const HttpAnswer api = get(served.port(), "/api/%FF");
  require_json_error(api, 404);
  CHECK(daqx::strings::valid_utf8(api.body) == api.body);
  CHECK_THAT(api.body, Catch::Contains("/api/\\\\xff"));  // JSON writes the backslash escaped
}

TEST_CASE("query strings and a trailing slash do not change the route", "[http]") {
  ServedExecutive served;
  CHECK(get(served.port(), "/api/pools/").status == 200);
  CHECK(get(served.port(), "/api/applications/2?verbose=1").status == 200);
  CHECK(get(served.port(), "/?refresh=no").status == 200);
  CHECK(get(served.port(), "/api/applications/%32").status == 200);  // percent-encoded "2"
}

TEST_CASE("a huge body is refused with 413 and the server keeps answering", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();
  const std::string ten_megabytes(10u << 20, 'x');
  const HttpAnswer huge = post(port, "/api/transition", ten_megabytes);
  require_json_error(huge, 413);

  // Announced but never sent: refused from the header alone.
  const HttpAnswer announced = round_trip(
      port, "POST /api/transition HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\nConnection: close\r\n\r\n");
  CHECK((announced.status == 413 || announced.status == 0));

  // Chunked, so the size shows only while reading.
  std::string chunked = "POST /api/applications/1/parameters HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                        "Connection: close\r\n\r\n";
  const std::string chunk(1u << 16, 'y');
  for (int i = 0; i < 40; ++i) chunked += "10000\r\n" + chunk + "\r\n";
  chunked += "0\r\n\r\n";
  require_json_error(round_trip(port, chunked), 413);

  // A small chunked body is read like any other.
  const std::string body = R"({"name":"output","value":"/tmp/x"})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  const HttpAnswer small = round_trip(port, "POST /api/applications/1/parameters HTTP/1.1\r\nHost: x\r\n"
                                          "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                                              std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n");
  CHECK(small.status == 200);
  REQUIRE(still_answers(port));
}

TEST_CASE("malformed requests and stalled clients do not stop the server", "[http]") {
  ServedExecutive served;
  const std::uint16_t port = served.port();
  CHECK(round_trip(port, "HELLO\r\n\r\n").status != 200);
  CHECK(round_trip(port, "GET\r\n\r\n").status != 200);
  CHECK(round_trip(port, "GET / HTTP/1.1\r\nHost: x\r\nBroken header line\r\n\r\n").status != 0);
  CHECK(round_trip(port, "GET /" + std::string(100000, 'a') + " HTTP/1.1\r\n\r\n").status != 200);
  CHECK(round_trip(port, std::string("\0\1\2\3\r\n\r\n", 8)).status != 200);
  CHECK(round_trip(port, "GET http://[::1 HTTP/1.1\r\nHost: x\r\n\r\n").status >= 400);
  CHECK(round_trip(port, "GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status == 400);
  const std::string bad_length = "POST /api/transition HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ";
  require_json_error(round_trip(port, bad_length + "-5\r\n\r\n{}"), 400);
  for (const char* length : {"abc", "99999999999999999999999"}) {
    INFO(length);
    require_json_error(round_trip(port, bad_length + length + "\r\n\r\n{}"), 400);
  }
  {
    // The client announces more than it sends, then stops sending.
    Connection short_body(port);
    short_body.send("POST /api/transition HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"command\":");
    short_body.finish_sending();
    require_json_error(short_body.receive(), 400);
  }
  {
    // A connection that says nothing holds only its own thread: others are served meanwhile.
    Connection silent(port);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(still_answers(port));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
  }
  {
    // More stalled connections than server threads: each is dropped after the server's timeout, then others are
    // served again.
    std::vector<std::unique_ptr<Connection>> stalled;
    for (int i = 0; i < 3; ++i) {
      stalled.push_back(std::make_unique<Connection>(port));
      stalled.back()->send("GET /api/pools HTTP/1.1\r\nHost: x\r\n");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto started = std::chrono::steady_clock::now();
    REQUIRE(still_answers(port));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(6));
  }
  { Connection closed_at_once(port); }
  REQUIRE(still_answers(port));
}

TEST_CASE("an exception from the model answers 500 with its reason and the server keeps answering", "[http]") {
  ServedExecutive served;
  served.model.throw_from_pools = true;
  const HttpAnswer json = get(served.port(), "/api/pools");
  require_json_error(json, 500);
  CHECK(parse_json(json.body)["error"].string == "internal error: pool registry unavailable");
  const HttpAnswer page = get(served.port(), "/");
  CHECK(page.status == 500);
  CHECK(page.body.find("pool registry unavailable") != std::string::npos);
  CHECK(get(served.port(), "/metrics").status == 500);
  served.model.throw_from_pools = false;
  CHECK(get(served.port(), "/api/pools").status == 200);
  REQUIRE(still_answers(served.port()));
}

TEST_CASE("the server answers many clients at once", "[http]") {
  ServedExecutive served;
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int client = 0; client < 8; ++client) {
    clients.emplace_back([&, client] {
      for (int i = 0; i < 25; ++i) {
        const char* target = (client + i) % 3 == 0 ? "/metrics" : (client + i) % 3 == 1 ? "/" : "/api/applications";
        if (get(served.port(), target).status == 200) ++answered;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  CHECK(answered == 8 * 25);
}

TEST_CASE("a Poco client (ControlClient, as daqxctl uses) drives the API", "[http]") {
  ServedExecutive served;
  const daqx::ControlClient client("http://127.0.0.1:" + std::to_string(served.port()));
  const daqx::HttpReply reply = client.post("/api/transition", command_body("configure"));
  REQUIRE(reply.status == 200);
  CHECK(parse_json(reply.body)["ok"].boolean == true);
  CHECK(served.model.state_of(3) == State::configured);
  const daqx::HttpReply status = client.get("/api/applications/3");
  REQUIRE(status.status == 200);
  CHECK(parse_json(status.body)["state"].string == "Configured");
}

TEST_CASE("after stop the port is closed, and stop may be called again", "[http]") {
  TestExecutive model;
  daqx::ControlServer server(model, "127.0.0.1", 0);
  server.start();
  const std::uint16_t port = server.port();
  REQUIRE(still_answers(port));
  server.stop();
  server.stop();
  REQUIRE_THROWS(Connection(port));
  REQUIRE_THROWS_AS(server.start(), std::logic_error);
}

TEST_CASE("a server stopped while a client waits on it ends without waiting for that client", "[http]") {
  TestExecutive model;
  daqx::ControlServer server(model, "127.0.0.1", 0);
  server.start();
  Connection stalled(server.port());
  stalled.send("GET / HTTP/1.1\r\n");  // never finished
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto started = std::chrono::steady_clock::now();
  server.stop();
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}

// ---------------------------------------------------------------------------------------------------------------
// Access: the bearer token, checked once for every request before any route.

namespace {

constexpr const char* kToken = "Zm9vYmFy-token_0123456789";

struct GuardedExecutive {
  TestExecutive model;
  daqx::ControlServer server;
  explicit GuardedExecutive(bool reads_need_token = false)
      : server(model, "127.0.0.1", 0, 2, daqx::ControlServerSecurity{kToken, reads_need_token, "", ""}) {
    server.start();
  }
  std::uint16_t port() const { return server.port(); }
};

// A request with the given Authorization header line (none when empty).
HttpAnswer with_authorization(std::uint16_t port, const std::string& method, const std::string& target,
                              const std::string& authorization, const std::string& body = "") {
  std::string text = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!authorization.empty()) text += "Authorization: " + authorization + "\r\n";
  text += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return round_trip(port, text);
}

double refused_count(std::uint16_t port, const std::string& reason) {
  const std::string metrics = get(port, "/metrics").body;
  const std::string series = "daqx_control_refused_total{reason=\"" + reason + "\"} ";
  const std::size_t at = metrics.find(series);
  return at == std::string::npos ? -1 : std::atof(metrics.c_str() + at + series.size());
}

}  // namespace

TEST_CASE("a change without a token is refused with 401 and a Bearer challenge, and changes nothing", "[http][access]") {
  GuardedExecutive served;
  const HttpAnswer answer = with_authorization(served.port(), "POST", "/api/transition", "", command_body("configure"));
  require_json_error(answer, 401);
  CHECK(answer.header("www-authenticate") == "Bearer realm=\"daqx\"");
  CHECK(served.model.state_of(1) == State::halted);
  // Every kind of change, and methods no route takes, are refused before routing.
  CHECK(with_authorization(served.port(), "POST", "/api/applications/1/parameters", "", R"({"name":"output","value":"x"})").status == 401);
  CHECK(with_authorization(served.port(), "POST", "/api/connect?timeout=0", "").status == 401);
  CHECK(with_authorization(served.port(), "DELETE", "/api/applications/1", "").status == 401);
  CHECK(with_authorization(served.port(), "PUT", "/no/such/page", "").status == 401);
  CHECK(served.model.connect_requests == 0);
}

TEST_CASE("a change with a wrong token is refused with 403", "[http][access]") {
  GuardedExecutive served;
  const std::string token(kToken);
  for (const std::string& wrong : {std::string("nope"), token.substr(0, token.size() - 1), token + "x",
                                   token.substr(0, token.size() - 1) + "Y"}) {
    INFO("token " << wrong);
    require_json_error(with_authorization(served.port(), "POST", "/api/transition", "Bearer " + wrong,
                                          command_body("configure")), 403);
  }
  CHECK(served.model.state_of(1) == State::halted);
}

TEST_CASE("a change with the token is done, and the scheme may be in any case", "[http][access]") {
  GuardedExecutive served;
  const HttpAnswer answer = with_authorization(served.port(), "POST", "/api/transition", std::string("Bearer ") + kToken,
                                               command_body("configure"));
  INFO(answer.body);
  REQUIRE(answer.status == 200);
  CHECK(served.model.state_of(1) == State::configured);
  CHECK(with_authorization(served.port(), "POST", "/api/transition", std::string("bearer   ") + kToken,
                           command_body("halt")).status == 200);
  CHECK(served.model.state_of(1) == State::halted);
}

TEST_CASE("an Authorization header that is not a bearer token counts as none: 401", "[http][access]") {
  GuardedExecutive served;
  for (const std::string& garbled : {std::string("Basic dXNlcjpwYXNz"), std::string("Bearer"), std::string("Bearer "),
                                     std::string(kToken), std::string("Bearer\t")}) {
    INFO("Authorization: " << garbled);
    CHECK(with_authorization(served.port(), "POST", "/api/transition", garbled, command_body("configure")).status == 401);
  }
}

TEST_CASE("reads are open by default when changes need a token, and the pages say that changes need it", "[http][access]") {
  GuardedExecutive served;
  CHECK(get(served.port(), "/api/applications").status == 200);
  CHECK(get(served.port(), "/metrics").status == 200);
  const HttpAnswer page = get(served.port(), "/app/1");
  REQUIRE(page.status == 200);
  CHECK(page.body.find("Changes need the partition's bearer token") != std::string::npos);
  CHECK(page.body.find("id=\"token\"") != std::string::npos);
  CHECK(page.body.find("Authorization") != std::string::npos);
  CHECK(get(served.port(), "/").body.find("Changes need the partition's bearer token") != std::string::npos);
  // An open executive says nothing of tokens.
  ServedExecutive open;
  CHECK(get(open.port(), "/app/1").body.find("bearer token") == std::string::npos);
}

TEST_CASE("with reads closed, a read needs the token too", "[http][access]") {
  GuardedExecutive served(/*reads_need_token=*/true);
  require_json_error(get(served.port(), "/api/applications"), 401);
  CHECK(get(served.port(), "/").status == 401);
  CHECK(with_authorization(served.port(), "GET", "/api/applications", "Bearer wrong").status == 403);
  CHECK(with_authorization(served.port(), "GET", "/api/applications", std::string("Bearer ") + kToken).status == 200);
  CHECK(with_authorization(served.port(), "HEAD", "/metrics", std::string("Bearer ") + kToken).status == 200);
}

TEST_CASE("refused requests are counted by reason on /metrics", "[http][access]") {
  GuardedExecutive served;
  CHECK(refused_count(served.port(), "no_token") == 0);
  with_authorization(served.port(), "POST", "/api/transition", "", command_body("configure"));
  with_authorization(served.port(), "POST", "/api/transition", "", command_body("configure"));
  with_authorization(served.port(), "POST", "/api/transition", "Bearer wrong", command_body("configure"));
  CHECK(refused_count(served.port(), "no_token") == 2);
  CHECK(refused_count(served.port(), "bad_token") == 1);
  CHECK(refused_count(served.port(), "tls") == 0);
}

TEST_CASE("ControlClient presents its token, and the default access applies to clients made after it is set", "[http][access]") {
  GuardedExecutive served;
  const std::string url = "http://127.0.0.1:" + std::to_string(served.port());
  CHECK(daqx::ControlClient(url).post("/api/transition", command_body("configure")).status == 401);
  CHECK(daqx::ControlClient(url, std::chrono::seconds(10), {"wrong", ""}).post("/api/transition", command_body("configure")).status == 403);
  const daqx::ControlAccess before = daqx::default_control_access();
  daqx::set_default_control_access({kToken, ""});
  const daqx::HttpReply reply = daqx::ControlClient(url).post("/api/transition", command_body("configure"));
  daqx::set_default_control_access(before);
  CHECK(reply.status == 200);
  CHECK(served.model.state_of(1) == State::configured);
}
