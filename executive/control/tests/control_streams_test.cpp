// External subscribers through the control port: a real streams::Publisher (on a test context) offering a stream
// on the fake model's application 3, read by raw clients as the chunked answer of records it is; refusals with
// their statuses; a client that does not read slows nobody; clients that leave, the publisher's halt, the limit.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../../../tests/support/fake_control_model.hpp"
#include "../../../tests/support/http_exchange.hpp"
#include "../../../tests/support/json_reader.hpp"
#include "daqx/streams/external_record.hpp"
#include "daqx/streams/publisher.hpp"
#include "loop_context.hpp"

using namespace daqx;
using namespace daqx::test;
using Clock = std::chrono::steady_clock;

namespace {

constexpr Tid kPublisherTid = 3;  // the fake model's evb::BU

// A client of one streaming answer, read as it comes: its status, then one record per chunk.
class StreamReader {
 public:
  StreamReader(std::uint16_t port, const std::string& target) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    const std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    REQUIRE(::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  }
  ~StreamReader() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Reads what has come within `wait`; false when the server closed the connection.
  bool read_some(std::chrono::milliseconds wait = std::chrono::milliseconds(10)) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return true;
    char buffer[65536];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    bytes_.append(buffer, static_cast<std::size_t>(n));
    parse();
    return true;
  }
  int status() const { return status_; }
  bool ended() const { return ended_; }  // the last chunk came
  std::vector<streams::RecordHeader> records;
  std::vector<std::uint64_t> keys;  // from each record's 8 bytes
  std::size_t keep_alives = 0;

 private:
  void parse() {
    if (status_ == 0) {
      const std::size_t end = bytes_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      status_ = std::stoi(bytes_.substr(9, 3));
      head_ = bytes_.substr(0, end);
      bytes_.erase(0, end + 4);
      if (status_ != 200) return;
      REQUIRE(head_.find("Transfer-Encoding: chunked") != std::string::npos);
      REQUIRE(head_.find(streams::kRecordContentType) != std::string::npos);
    }
    for (;;) {
      const std::size_t line = bytes_.find("\r\n");
      if (line == std::string::npos) return;
      const std::size_t size = std::stoul(bytes_.substr(0, line), nullptr, 16);
      if (bytes_.size() < line + 2 + size + 2) return;
      if (size == 0) {
        ended_ = true;
        return;
      }
      const std::string chunk = bytes_.substr(line + 2, size);
      REQUIRE(bytes_.substr(line + 2 + size, 2) == "\r\n");
      bytes_.erase(0, line + 2 + size + 2);
      const auto* data = reinterpret_cast<const std::byte*>(chunk.data());
      const streams::ParsedRecordHeader header = streams::parse_record_header({data, chunk.size()});
      INFO(header.error);
      REQUIRE(header.header);
      REQUIRE(chunk.size() == streams::kRecordHeaderBytes + header.header->length);
      if (header.header->sequence == 0) {
        ++keep_alives;
        continue;
      }
      REQUIRE(header.header->length == sizeof(std::uint64_t));
      std::uint64_t key = 0;
      std::memcpy(&key, chunk.data() + streams::kRecordHeaderBytes, sizeof key);
      CHECK(key == header.header->key);
      records.push_back(*header.header);
      keys.push_back(key);
    }
  }
  int fd_ = -1;
  int status_ = 0;
  bool ended_ = false;
  std::string head_;
  std::string bytes_;
};

struct StreamSetup {
  ServedControlModel served;
  streams::test::Bus bus;
  streams::test::LoopContext context{bus, kPublisherTid, "publisher"};
  streams::Publisher publisher{context};
  streams::StreamId events = publisher.offer("events");

  streams::Published publish(std::uint64_t key) {
    return publisher.publish(events, key, [&] {
      mem::Ref bytes = context.pool().allocate(sizeof key);
      std::memcpy(bytes.data(), &key, sizeof key);
      return bytes;
    });
  }
  // Pumps the publisher's dispatch stand-in until `done` holds or 20 s pass.
  bool until(const std::function<bool()>& done) {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!done()) {
      if (Clock::now() > deadline) return false;
      bus.pump();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
  double metric(const std::string& name) {
    MetricSink sink;
    publisher.report(sink);
    for (const Metric& m : sink.metrics())
      if (m.name == name && m.labels.empty()) return m.value;
    return -1;
  }
};

}  // namespace

TEST_CASE("GET .../streams lists an application's streams, and a stream request that cannot be served is refused "
          "with its status and reason", "[http][streams]") {
  StreamSetup s;
  const std::uint16_t port = s.served.port();
  const HttpAnswer list = get(port, "/api/applications/3/streams");
  INFO(list.body);
  REQUIRE(list.status == 200);
  const Json streams = parse_json(list.body);
  REQUIRE(streams.size() == 1);
  CHECK(streams[0]["name"].string == "events");
  CHECK(streams[0]["subscribers"].number == 0);

  require_json_error(get(port, "/api/applications/9/streams"), 404);
  require_json_error(get(port, "/api/applications/1/streams"), 404);  // an application that offers none
  require_json_error(get(port, "/api/applications/3/streams/nosuch"), 404);
  CHECK_THAT(get(port, "/api/applications/3/streams/nosuch").body, Catch::Contains("it offers events"));
  require_json_error(get(port, "/api/applications/3/streams/events?policy=bogus"), 400);
  require_json_error(get(port, "/api/applications/3/streams/events?policy=block,depth:0"), 400);
  require_json_error(get(port, "/api/applications/3/streams/events?policy=" + std::string(5000, 'x')), 400);
  require_json_error(get(port, "/api/applications/3/streams/events?rate=5"), 400);
  require_json_error(post(port, "/api/applications/3/streams/events", ""), 405);
  s.publisher.halt("halted for the test");
  require_json_error(get(port, "/api/applications/3/streams/events"), 409);
  CHECK(s.metric("stream_subscribers") == 0);
}

TEST_CASE("a stream over the control port brings every event of a block subscription in order, as records in chunks",
          "[http][streams]") {
  StreamSetup s;
  StreamReader reader(s.served.port(), "/api/applications/3/streams/events?policy=block,depth:4");
  REQUIRE(s.until([&] { return s.publisher.subscriptions() == 1; }));
  std::uint64_t next = 1;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (reader.keys.size() < 200 && Clock::now() < deadline) {
    while (next <= 200 && s.publish(next) == streams::Published::offered) ++next;
    s.bus.pump();  // the writer's acknowledgements are settled on the publisher's dispatch thread
    REQUIRE(reader.read_some());
  }
  REQUIRE(reader.status() == 200);
  REQUIRE(reader.keys.size() == 200);
  for (std::size_t i = 0; i < reader.records.size(); ++i) {
    CHECK(reader.records[i].sequence == i + 1);
    CHECK(reader.records[i].key == i + 1);
    CHECK(reader.records[i].dropped == 0);
  }
  // The publisher halts: the stream ends with its last chunk and the connection closes.
  s.publisher.halt();
  bool open = true;
  for (auto end = Clock::now() + std::chrono::seconds(20); open && Clock::now() < end;) open = reader.read_some();
  CHECK(reader.ended());
  CHECK_FALSE(open);
}

TEST_CASE("a streaming client that does not read never slows the publisher: its policy drops, counted, and when it "
          "leaves its subscription ends", "[http][streams]") {
  StreamSetup s;
  StreamReader stalled(s.served.port(), "/api/applications/3/streams/events?policy=drop-newest,depth:2");
  REQUIRE(s.until([&] { return s.publisher.subscriptions() == 1; }));
  for (std::uint64_t key = 1; key <= 100000; ++key) REQUIRE(s.publish(key) == streams::Published::offered);
  s.bus.pump();
  // Every event sent or dropped by its policy: sent only as far as the socket's buffers took them (then its
  // depth is full and the writer acknowledges no more), the rest dropped.
  CHECK(s.metric("stream_records_sent") + s.metric("stream_events_dropped") == 100000);
  CHECK(s.metric("stream_events_dropped") > 50000);
  stalled.close();
  // The writer finds it gone at its next write (a keep-alive within a second) and cancels the subscription.
  CHECK(s.until([&] { return s.publisher.subscriptions() == 0; }));
  CHECK(s.metric("stream_subscribers_lost") == 1);
}

TEST_CASE("at most 64 streaming clients per executive: the next is refused 503, and a place frees when one leaves",
          "[http][streams]") {
  StreamSetup s;
  std::vector<std::unique_ptr<StreamReader>> readers;
  for (int i = 0; i < 64; ++i)
    readers.push_back(std::make_unique<StreamReader>(s.served.port(), "/api/applications/3/streams/events?policy=sample:1000"));
  // The publisher takes at most 64 per stream by default too: either limit refuses the next, with 503.
  REQUIRE(s.until([&] { return s.publisher.subscriptions() == 64; }));
  const HttpAnswer refused = get(s.served.port(), "/api/applications/3/streams/events");
  INFO(refused.body);
  CHECK(refused.status == 503);
  readers.clear();
  REQUIRE(s.until([&] { return s.publisher.subscriptions() == 0; }));
  StreamReader again(s.served.port(), "/api/applications/3/streams/events?policy=sample:1000");
  CHECK(s.until([&] { return s.publisher.subscriptions() == 1; }));
}

TEST_CASE("1024 stream requests: 64 streams, every other one answered 503, and nothing left open once the "
          "clients leave", "[http][streams]") {
  StreamSetup s;
  constexpr int kRequests = 1024;  // 32 waves
  // In waves of 32, within the server's queue of 64 waiting connections (beyond it a connection is closed at once,
  // docs/control-api.md): every request gets its answer's head, 200 and a stream, or a refusal.
  constexpr int kWave = 32;
  std::vector<std::unique_ptr<StreamReader>> readers;
  int streaming = 0, refused = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  for (int wave = 0; wave < kRequests; wave += kWave) {
    const std::size_t first = readers.size();
    for (int i = 0; i < kWave; ++i)
      readers.push_back(
          std::make_unique<StreamReader>(s.served.port(), "/api/applications/3/streams/events?policy=sample:1000"));
    for (std::size_t r = first; r < readers.size(); ++r) {
      StreamReader& reader = *readers[r];
      while (reader.status() == 0 && Clock::now() < deadline) {
        s.bus.pump();
        if (!reader.read_some(std::chrono::milliseconds(20))) break;
      }
      REQUIRE(reader.status() != 0);
      if (reader.status() == 200) ++streaming;
      if (reader.status() == 503) ++refused;
    }
  }
  CHECK(streaming == 64);
  CHECK(refused == kRequests - 64);
  REQUIRE(s.until([&] { return s.publisher.subscriptions() == 64; }));
  readers.clear();
  // Every place frees: the writer finds each client gone at its next keep-alive and ends its subscription.
  REQUIRE(s.until([&] { return s.publisher.subscriptions() == 0; }));
  CHECK(s.metric("stream_subscribers_lost") == 64);
  StreamReader again(s.served.port(), "/api/applications/3/streams/events?policy=sample:1000");
  CHECK(s.until([&] { return s.publisher.subscriptions() == 1; }));
}
