// ptshm between two transports of one process, each with a small host of its own: frames cross as references
// (the receiver's memory is the sender's block), frames from pools that are not shared are copied and counted,
// blocks come back when released, and a peer that writes garbage into its ring loses only its own connection.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hostile_peer.hpp"
#include "ring.hpp"
#include "settings.hpp"
#include "shm_transport.hpp"
#include "transport_test_host.hpp"
#include "wire.hpp"

namespace daqx::ptshm {
namespace {

using namespace std::chrono_literals;

using test::frame_of;
using test::metric;
using test::wait_until;

// The shared test host with ptshm's parameters.
class TestHost : public test::TransportTestHost {
 public:
  explicit TestHost(const std::vector<std::pair<std::string, std::string>>& values = {})
      : TransportTestHost("shm", with_values(values)) {}

 private:
  static ParamSet with_values(const std::vector<std::pair<std::string, std::string>>& values) {
    ParamSet params(parameter_specs());
    for (const auto& [name, value] : values) REQUIRE(params.set(name, value).empty());
    return params;
  }
};

// The mapping of this process that holds address, as /proc/self/maps names it.
std::string mapping_of(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  while (std::getline(maps, line)) {
    std::uintptr_t begin = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    std::uintptr_t end = std::stoull(line.substr(line.find('-') + 1, line.find(' ') - line.find('-') - 1), nullptr, 16);
    if (at >= begin && at < end) return line;
  }
  return {};
}

std::uint16_t unique_port(int which) { return static_cast<std::uint16_t>(20000 + (getpid() * 7 + which) % 40000); }

// Posts frame from sender to peer and takes it out of receiver's host once it arrived there.
Frame post_and_take(ShmTransport& sender, PeerId peer, TestHost& receiver, mem::Ref frame) {
  const std::size_t before = receiver.delivered();
  REQUIRE(sender.post(peer, frame) == SendStatus::ok);
  REQUIRE(wait_until([&] { return receiver.delivered() == before + 1; }));
  return receiver.take(before);
}

// A sender on one side, a receiver on the other, connected.
struct Pair {
  TestHost sender_host;
  TestHost receiver_host;
  std::unique_ptr<ShmTransport> sender;
  std::unique_ptr<ShmTransport> receiver;
  EndpointAddress address{"shm", "127.0.0.1", 0, "local"};
  PeerId peer = 0;

  explicit Pair(int which) {
    address.port = unique_port(which);
    receiver = std::make_unique<ShmTransport>(receiver_host);
    receiver->listen(address);
    sender = std::make_unique<ShmTransport>(sender_host);
    peer = sender->connect(address);
    REQUIRE(wait_until([&] { return !sender->connections().empty() && sender->connections()[0].up; }));
  }
  ~Pair() {
    sender->stop();
    receiver->stop();
  }
  // An application pool of the sender, from the allocator named.
  mem::Pool& application_pool(const std::string& allocator) {
    return sender_host.add_pool("app/" + allocator, mem::PoolConfig::geometric("", 4096, 65536, 1 << 20, 4 << 20),
                                allocator);
  }
  // Posts frame and takes it out of the receiver once it arrived.
  Frame send_one(mem::Ref frame) { return post_and_take(*sender, peer, receiver_host, std::move(frame)); }
};

TEST_CASE(
    "a frame from a shared pool crosses as a reference: the receiver's bytes are the sender's block, nothing "
    "is copied, and the block goes back when the receiver releases it",
    "[ptshm]") {
  Pair pair(1);
  mem::Pool& pool = pair.application_pool("shm");
  mem::Ref frame = frame_of(pool, 8192, std::byte{0x11});
  std::byte* sent = frame.data();
  Frame received = pair.send_one(std::move(frame));
  REQUIRE(received.data.total_size() == 8192);
  CHECK(received.header.target == 7);
  CHECK(received.data.head()->is_foreign());
  // The receiver's memory is a mapping of the sender's memfd chunk...
  CHECK_THAT(mapping_of(received.data.data()), Catch::Contains("memfd:daqx-shm"));
  // ... and the same physical block: what the receiver writes, the sender's block shows (it is still held by the
  // connection until the receiver gives it back).
  received.data.data()[100] = std::byte{0x5a};
  CHECK(sent[100] == std::byte{0x5a});
  CHECK(metric(*pair.sender, "frames_copied") == 0);
  CHECK(pool.blocks_in_use() == 1);
  received.data.reset();
  CHECK(wait_until([&] { return pool.blocks_in_use() == 0; }));
}

TEST_CASE(
    "a frame from a pool that is not shared is copied into the transport's shared pool, counted, and arrives "
    "intact",
    "[ptshm]") {
  Pair pair(2);
  mem::Pool& heap = pair.application_pool("heap");
  Frame received = pair.send_one(frame_of(heap, 4096, std::byte{0x22}));
  CHECK(metric(*pair.sender, "frames_copied") == 1);
  CHECK(received.data.data()[4000] == std::byte{0x22});
  CHECK(heap.blocks_in_use() == 0);  // the original went back at once: the copy travels
}

TEST_CASE("a shared copy sent to two peers reaches both, and its blocks go back once both released them", "[ptshm]") {
  TestHost sender_host, first_host, second_host;
  EndpointAddress first{"shm", "127.0.0.1", unique_port(3), "local"};
  EndpointAddress second{"shm", "127.0.0.1", unique_port(4), "local"};
  auto first_receiver = std::make_unique<ShmTransport>(first_host);
  first_receiver->listen(first);
  auto second_receiver = std::make_unique<ShmTransport>(second_host);
  second_receiver->listen(second);
  auto sender = std::make_unique<ShmTransport>(sender_host);
  mem::Pool& pool =
      sender_host.add_pool("app/pool", mem::PoolConfig::geometric("", 4096, 4096, 1 << 20, 1 << 20), "shm");
  const PeerId a = sender->connect(first), b = sender->connect(second);
  mem::Ref frame = frame_of(pool, 4096, std::byte{0x33});
  mem::Ref copy = frame.share();
  REQUIRE(wait_until(
      [&] { return sender->connections().size() == 2 && sender->connections()[0].up && sender->connections()[1].up; }));
  REQUIRE(sender->post(a, frame) == SendStatus::ok);
  REQUIRE(sender->post(b, copy) == SendStatus::ok);
  REQUIRE(wait_until([&] { return first_host.delivered() == 1 && second_host.delivered() == 1; }));
  Frame one = first_host.take(0), two = second_host.take(0);
  CHECK(one.data.data()[64] == std::byte{0x33});
  CHECK(two.data.data()[64] == std::byte{0x33});
  one.data.reset();
  std::this_thread::sleep_for(50ms);
  CHECK(pool.blocks_in_use() == 1);  // the second still holds it
  two.data.reset();
  CHECK(wait_until([&] { return pool.blocks_in_use() == 0; }));
  sender->stop();
  first_receiver->stop();
  second_receiver->stop();
}

// A relay: the first context sends to the second, which sends what it received on to the third (as a BU
// passes the RUs' blocks on to a monitor).
struct Relay {
  TestHost first_host, second_host, third_host;
  EndpointAddress second_address{"shm", "127.0.0.1", 0, "local"};
  EndpointAddress third_address{"shm", "127.0.0.1", 0, "local"};
  std::unique_ptr<ShmTransport> first, second, third;
  PeerId to_second = 0, to_third = 0;

  explicit Relay(int which, const std::vector<std::pair<std::string, std::string>>& second_params = {})
      : second_host(second_params) {
    second_address.port = unique_port(which);
    third_address.port = unique_port(which + 1);
    third = std::make_unique<ShmTransport>(third_host);
    third->listen(third_address);
    second = std::make_unique<ShmTransport>(second_host);
    second->listen(second_address);
    first = std::make_unique<ShmTransport>(first_host);
    to_second = first->connect(second_address);
    to_third = second->connect(third_address);
    REQUIRE(wait_until([&] {
      return !first->connections().empty() && first->connections()[0].up && !second->connections().empty() &&
             second->connections()[0].up;
    }));
  }
  ~Relay() {
    first->stop();
    second->stop();
    third->stop();
  }
  // Sends frame from the first to the second and returns what the second received.
  Frame to_relay(mem::Ref frame) { return post_and_take(*first, to_second, second_host, std::move(frame)); }
  // The first block of one of the first's chunks that the second passes on is copied while the second asks the
  // first for that chunk's memfd (once); from then on, that chunk's blocks go by reference.
  void prime(mem::Pool& pool, std::uint32_t bytes) {
    const double copied = metric(*second, "frames_copied"), received = metric(*second, "chunk_memfds_received");
    Frame first_block = pass_on(to_relay(frame_of(pool, bytes, std::byte{0x01})).data);
    CHECK(metric(*second, "frames_copied") == copied + 1);
    CHECK(metric(*second, "pass_on_waits") >= 1);
    REQUIRE(wait_until([&] { return metric(*second, "chunk_memfds_received") == received + 1; }));
    // The first counts its answer once it is sent: the second may have it before the count is made.
    CHECK(wait_until([&] { return metric(*first, "chunk_requests_answered") == received + 1; }));
  }
  // The second passes data on to the third; what the third received.
  Frame pass_on(mem::Ref data) { return post_and_take(*second, to_third, third_host, std::move(data)); }
};

TEST_CASE(
    "a block received from a peer and sent on to a third context goes by reference: the third sees the first's "
    "block itself, nothing is copied, and it goes back to the first once the third released it",
    "[ptshm]") {
  Relay relay(30);
  mem::Pool& pool = relay.first_host.add_pool("app/pool", mem::PoolConfig::geometric("", 4096, 65536, 1 << 20, 4 << 20),
                                              "shm");
  relay.prime(pool, 16384);
  mem::Ref frame = frame_of(pool, 16384, std::byte{0x61});
  std::byte* sent = frame.data();
  Frame relayed = relay.to_relay(std::move(frame));
  REQUIRE(relayed.data.head()->is_foreign());
  Frame received = relay.pass_on(std::move(relayed.data));
  REQUIRE(received.data.total_size() == 16384);
  CHECK(received.data.data()[9000] == std::byte{0x61});
  received.data.data()[200] = std::byte{0x7e};  // the same physical block as the first's
  CHECK(sent[200] == std::byte{0x7e});
  CHECK(metric(*relay.second, "frames_copied") == 1);  // the one that primed the chunk
  CHECK(metric(*relay.second, "chunks_passed_on") == 1);
  CHECK(pool.blocks_in_use() == 1);  // held through the second's connection to the third
  received.data.reset();
  CHECK(wait_until([&] { return pool.blocks_in_use() == 0; }));

  SECTION("a chain mixing the relay's own block and views of a peer's blocks keeps its bytes and order") {
    mem::Pool& own = relay.second_host.add_pool("app/own", mem::PoolConfig::geometric("", 4096, 4096, 1 << 20, 1 << 20),
                                                "shm");
    Frame a = relay.to_relay(frame_of(pool, 16384, std::byte{0x01}));
    Frame b = relay.to_relay(frame_of(pool, 16384, std::byte{0x02}));
    // A frame whose header is the relay's own block, followed by a view of each received frame's payload.
    mem::Ref head = frame_of(own, 64, std::byte{0x00});
    FrameHeader header = decode_header(head.data());  // to 7 from 3, as frame_of makes it
    header.total_length = 64 + 1000 + 2000;
    encode_header(header, head.data());
    head.append(a.data.view(kFrameHeaderSize, 1000));
    head.append(b.data.view(kFrameHeaderSize + 100, 2000));
    a.data.reset();
    b.data.reset();
    Frame c = relay.pass_on(std::move(head));
    REQUIRE(c.data.total_size() == 3064);
    std::vector<std::byte> bytes;
    for (const mem::Block* block = c.data.head(); block != nullptr; block = block->next())
      bytes.insert(bytes.end(), block->data(), block->data() + block->size());
    REQUIRE(bytes.size() == 3064);
    CHECK(bytes[64] == std::byte{0x01});
    CHECK(bytes[64 + 999] == std::byte{0x01});
    CHECK(bytes[64 + 1000] == std::byte{0x02});
    CHECK(bytes[3063] == std::byte{0x02});
    CHECK(metric(*relay.second, "frames_copied") == 1);
    CHECK(metric(*relay.second, "chunks_passed_on") == 1);  // the same chunk of the first's: passed on once
    c.data.reset();
    CHECK(wait_until([&] { return pool.blocks_in_use() == 0 && own.blocks_in_use() == 0; }));
  }

  SECTION("when the first goes away, what the third holds stays readable, and comes back when released") {
    Frame kept = relay.pass_on(relay.to_relay(frame_of(pool, 4096, std::byte{0x33})).data);
    // Its connection to the second closes: its slots give its blocks back to its pool at once, while the second
    // and the third keep their mappings of its chunk for as long as they hold blocks of it.
    relay.first->stop();
    CHECK(wait_until([&] { return pool.blocks_in_use() == 0; }));
    CHECK(kept.data.data()[4000] == std::byte{0x33});
    kept.data.reset();
    CHECK(wait_until([&] { return relay.second_host.blocks_in_use() == 0; }));
  }
}

TEST_CASE(
    "a relay passes on at most passOnBlocks of a peer's blocks at once to one receiver: beyond, it copies them "
    "(counted), so a stopped receiver cannot hold a third context's pool",
    "[ptshm]") {
  Relay relay(40, {{"passOnBlocks", "4"}});
  mem::Pool& pool = relay.first_host.add_pool("app/pool", mem::PoolConfig::geometric("", 4096, 4096, 1 << 20, 1 << 20),
                                              "shm");
  relay.prime(pool, 4096);
  std::vector<Frame> held;
  for (int i = 0; i < 10; ++i)
    held.push_back(relay.pass_on(relay.to_relay(frame_of(pool, 4096, static_cast<std::byte>(i))).data));
  for (int i = 0; i < 10; ++i) CHECK(held[static_cast<std::size_t>(i)].data.data()[4000] == static_cast<std::byte>(i));
  CHECK(metric(*relay.second, "frames_copied") == 7);  // 6 and the one that primed the chunk
  CHECK(metric(*relay.second, "pass_on_limited") == 6);
  CHECK(pool.blocks_in_use() == 4);  // the first's blocks the third holds: the rest went back when copied
  held.clear();
  CHECK(wait_until([&] { return pool.blocks_in_use() == 0; }));
  // Given back, the room is there again: the next goes by reference.
  Frame next = relay.pass_on(relay.to_relay(frame_of(pool, 4096, std::byte{0x77})).data);
  CHECK(metric(*relay.second, "frames_copied") == 7);
}

TEST_CASE(
    "a peer that writes garbage into its ring loses only its own connection, counted in bad_streams, while an "
    "honest peer goes on",
    "[ptshm][faults]") {
  Pair pair(5);
  mem::Pool& pool = pair.application_pool("shm");
  struct Case {
    const char* what;
    std::function<void(HostilePeer&)> act;
    const char* logged;
  };
  const std::vector<Case> cases{
      {"offset past the chunk",
       [](HostilePeer& p) {
         p.write({0, kLastBlock, HostilePeer::kChunkBytes - 100, 4096, 0});
       },
       "outside its chunk"},
      {"length wrapping around",
       [](HostilePeer& p) {
         p.write({0, kLastBlock, 64, 0xffffffffu, 0});
       },
       "outside its chunk"},
      {"unknown chunk",
       [](HostilePeer& p) {
         p.write({9, kLastBlock, 0, 64, 0});
       },
       "never announced"},
      {"unknown flags",
       [](HostilePeer& p) {
         p.write({0, 0x80, 0, 64, 0});
       },
       "unknown flags"},
      {"tail far ahead", [](HostilePeer& p) { p.set_tail(1u << 30); }, "impossible tail"},
      {"not a frame",
       [](HostilePeer& p) {
         p.write({0, kLastBlock, 0, 64, 0});
       },
       "bad frame"},
      {"a pack after a frame's first block",
       [](HostilePeer& p) {
         p.write({0, 0, 0, 64, 0});
         p.write({0, kLastBlock | kPacked, 64, 64, 1});
       },
       "a pack that is not a frame's only block"},
      {"a pack that is not a last block",
       [](HostilePeer& p) {
         p.write({0, kPacked, 0, 64, 0});
       },
       "a pack that is not a frame's only block"},
      {"a pack of garbage",
       [](HostilePeer& p) {
         p.write({0, kLastBlock | kPacked, 0, 64, 0});
       },
       "in a pack"},
      {"a pack that ends within a frame",
       [](HostilePeer& p) {
         // One good 64-byte frame, then the header of a 4096-byte one of which the pack holds only 96 bytes.
         FrameHeader header;
         header.total_length = 64;
         header.target = 1;
         encode_header(header, p.chunk() + 8192);
         header.total_length = 4096;
         encode_header(header, p.chunk() + 8192 + 64);
         p.write({0, kLastBlock | kPacked, 8192, 160, 0});
       },
       "a pack that ends within a frame"},
  };
  double bad = 0;
  for (const Case& c : cases) {
    INFO(c.what);
    HostilePeer peer(pair.address.hostname, pair.address.port);
    c.act(peer);
    ++bad;
    CHECK(wait_until([&] { return metric(*pair.receiver, "bad_streams") == bad; }));
    CHECK_THAT(pair.receiver_host.logs(), Catch::Contains(c.logged));
    // The honest sender's connection is untouched.
    CHECK(pair.send_one(frame_of(pool, 4096, std::byte{0x44})).data.data()[100] == std::byte{0x44});
  }
  CHECK(wait_until([&] { return pool.blocks_in_use() == 0; }));
  CHECK(metric(*pair.sender, "send_errors") == 0);
}

TEST_CASE(
    "a receiver that writes the sender anything but a chunk request it may make loses its connection, with the "
    "reason, and a valid request is answered with the chunk's memfd once",
    "[ptshm][faults]") {
  struct Case {
    const char* what;
    std::vector<ChunkRequest> requests;  // sent in order; garbage if empty
    const char* logged;
  };
  const std::vector<Case> cases{
      {"not a request", {}, "not a chunk request"},
      {"a chunk never announced", {ChunkRequest{kChunkRequestMagic, 60000}}, "asked for chunk 60000"},
      {"the same chunk twice", {ChunkRequest{kChunkRequestMagic, 0}, ChunkRequest{kChunkRequestMagic, 0}},
       "each at most once"},
  };
  int which = 50;
  for (const Case& c : cases) {
    INFO(c.what);
    // The "receiver" is a bare socket at the address: it accepts the sender, reads what the sender announces and
    // then writes the requests.
    const std::uint16_t port = unique_port(which++);
    socklen_t length = 0;
    sockaddr_un name = endpoint_socket_address("127.0.0.1", port, length);
    const int listener = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&name), length) == 0);
    REQUIRE(::listen(listener, 1) == 0);
    TestHost host;
    auto sender = std::make_unique<ShmTransport>(host);
    host.add_pool("app/pool", mem::PoolConfig::geometric("", 4096, 4096, 1 << 20, 1 << 20), "shm");  // chunks to announce
    sender->connect(EndpointAddress{"shm", "127.0.0.1", port, "local"});
    const int peer = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    REQUIRE(peer >= 0);
    REQUIRE(wait_until([&] { return !sender->connections().empty() && sender->connections()[0].up; }));
    if (c.requests.empty()) {
      const char garbage[5] = {'h', 'e', 'l', 'l', 'o'};
      REQUIRE(send_message(peer, garbage, sizeof garbage, nullptr, 0).empty());
    }
    for (const ChunkRequest& request : c.requests) REQUIRE(send_message(peer, &request, sizeof request, nullptr, 0).empty());
    CHECK(wait_until([&] { return sender->connections().empty() || !sender->connections()[0].up; }));
    bool named = false;
    for (const auto& change : host.connection_changes()) named = named || change.reason.find(c.logged) != std::string::npos;
    CHECK(named);
    if (c.requests.size() == 2) CHECK(metric(*sender, "chunk_requests_answered") == 1);
    sender->stop();
    ::close(peer);
    ::close(listener);
  }
}

TEST_CASE("when the receiver goes away, every block it held comes back to the sender's pool", "[ptshm][faults]") {
  auto pair = std::make_unique<Pair>(6);
  mem::Pool& pool = pair->application_pool("shm");
  for (int i = 0; i < 10; ++i) {
    mem::Ref frame = frame_of(pool, 4096, std::byte{0x55});
    REQUIRE(pair->sender->post(pair->peer, frame) == SendStatus::ok);
  }
  REQUIRE(wait_until([&] { return pair->receiver_host.delivered() == 10; }));
  CHECK(pool.blocks_in_use() == 10);  // held by the receiver's "applications"
  pair->receiver->stop();             // as if it died: its socket closes
  CHECK(wait_until([&] { return pool.blocks_in_use() == 0; }));
  pair->sender->stop();
}

}  // namespace
}  // namespace daqx::ptshm
