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
  TestHost() : TransportTestHost("shm", ParamSet(parameter_specs())) {}
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
  Frame send_one(mem::Ref frame) {
    const std::size_t before = receiver_host.delivered();
    REQUIRE(sender->post(peer, frame) == SendStatus::ok);
    REQUIRE(wait_until([&] { return receiver_host.delivered() == before + 1; }));
    return receiver_host.take(before);
  }
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
