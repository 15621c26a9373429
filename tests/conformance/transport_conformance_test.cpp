// The transport conformance suite: the module DAQX_TRANSPORT names, loaded into this process, and what every
// transport owes its host, each case run between transports with small hosts of their own and chosen by the
// capabilities the transport declares, never by its name.
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "daqx/api/module.hpp"
#include "daqx/api/multipart.hpp"
#include "daqx/mempool/allocator.hpp"
#include "executive_process.hpp"
#include "process.hpp"
#include "transport_profile.hpp"
#include "transport_test_host.hpp"

namespace daqx::test {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// The transport class of the module under test and what it declares, for the parameters a case gives it.
struct TransportUnderTest {
  TransportProfile profile;
  const TransportClass* transport_class = nullptr;

  // The class's parameters with the suite's settings and then the case's; only those it declares.
  ParamSet params(const Settings& settings) const {
    ParamSet params(transport_class->params);
    Settings all{{"reconnectMax", "300"}};
    if (!profile.provider.empty()) all.emplace_back("provider", profile.provider);
    all.insert(all.end(), settings.begin(), settings.end());
    for (const auto& [name, value] : all) {
      if (params.spec(name) == nullptr) continue;
      const std::string refused = params.set(name, value);
      if (!refused.empty()) throw std::invalid_argument(name + "=" + value + ": " + refused);
    }
    return params;
  }
  TransportCapabilities capabilities(const Settings& settings = {}) const {
    return transport_class->capabilities(params(settings));
  }
};

bool has_rdma_device() {
  std::error_code error;
  const std::filesystem::path devices("/sys/class/infiniband");
  return std::filesystem::is_directory(devices, error) &&
         std::filesystem::directory_iterator(devices, error) != std::filesystem::directory_iterator();
}

// First line of every case: the module loaded (once), or the program ends as skipped (77) when it is not built
// (failed where DAQX_TRANSPORT_REQUIRE=1) or this machine cannot run it.
const TransportUnderTest& transport_under_test() {
  static const TransportUnderTest loaded = [] {
    TransportUnderTest t{transport_profile(), nullptr};
    const std::string path = t.profile.module_path();
    if (!std::filesystem::exists(path))
      skip_for_environment("DAQX_TRANSPORT_REQUIRE", transport_skip_exit_code,
                           "over " + t.profile.name + ": " + t.profile.module + " is not built (looked in " +
                               module_directory() + ")");
    // Never closed: the transports' threads and pools run the module's code until the program ends.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) throw std::runtime_error("dlopen " + path + ": " + dlerror());
    using Entry = const ModuleDescriptor* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, DAQX_MODULE_ENTRY_NAME));
    if (entry == nullptr) throw std::runtime_error(path + " has no " DAQX_MODULE_ENTRY_NAME "()");
    const ModuleDescriptor* module = entry();
    if (module->abi_version != kModuleAbiVersion)
      throw std::runtime_error(path + " is built for module ABI " + std::to_string(module->abi_version) +
                               ", this program for " + std::to_string(kModuleAbiVersion));
    for (const TransportClass& c : module->transports)
      if (c.protocol == t.profile.protocol) t.transport_class = &c;
    if (t.transport_class == nullptr) throw std::runtime_error(path + " has no transport for " + t.profile.protocol);
    if (t.capabilities().rdma_device && !has_rdma_device())
      skip_for_environment("DAQX_TRANSPORT_REQUIRE", transport_skip_exit_code,
                           "over " + t.profile.name + ": it needs an RDMA device and /sys/class/infiniband lists none "
                           "(it runs in the soft-RoCE guest of tests/rdma-vm)");
    return t;
  }();
  return loaded;
}

// One transport of the module with a host of its own, listening on the profile's address: 127.0.0.1, or in the
// soft-RoCE guest the address its RDMA device sits on (DAQX_TEST_HOST).
struct Peer {
  Peer(const TransportUnderTest& t, const Settings& settings)
      : host(t.profile.protocol, t.params(settings)),
        transport(t.transport_class->create(host)),
        address{t.profile.protocol, t.profile.host, free_port(), "data"} {
    try {
      transport->listen(address);
    } catch (...) {
      stop();  // a transport is stopped before it is destroyed, whatever happened
      throw;
    }
  }
  void stop() {
    if (stopped) return;
    transport->stop();
    stopped = true;
  }
  // A pool of the sender's application, as the executive would make it: in shared memory when the transport
  // passes blocks by reference.
  mem::Pool& application_pool(std::size_t block_bytes = 64 * 1024) {
    const std::string allocator =
        transport->capabilities().shared_memory_pools ? mem::shared_allocator("heap") : std::string("heap");
    return host.add_pool("app/pool", mem::PoolConfig::geometric("", 256, block_bytes, 1 << 20, 64 << 20), allocator);
  }
  // The pool the transport receives into.
  mem::Pool& receive_pool() {
    mem::Pool* pool = host.pool("pt/" + host.protocol() + "/recv");
    REQUIRE(pool != nullptr);
    return *pool;
  }

  TransportTestHost host;  // outlives the transport, whose pools it holds
  std::unique_ptr<Transport> transport;
  EndpointAddress address;
  bool stopped = false;
};

// The transports of a case. All are stopped, then every frame their hosts hold is released, before any is
// destroyed: a frame one host holds may be a block of another's pool.
class Peers {
 public:
  Peers() = default;
  Peers(const Peers&) = delete;
  Peers& operator=(const Peers&) = delete;
  ~Peers() {
    for (auto& peer : peers_) peer->stop();
    for (auto& peer : peers_) peer->host.release_delivered();
  }
  Peer& add(const Settings& settings = {}) {
    peers_.push_back(std::make_unique<Peer>(transport_under_test(), settings));
    return *peers_.back();
  }
  // from names to as a peer and waits until that connection is up.
  PeerId connect(Peer& from, const Peer& to) {
    const PeerId peer = from.transport->connect(to.address);
    from.transport->open_connections();
    INFO("connecting to " << to.address.text() << "; logs:\n" << from.host.logs());
    REQUIRE(wait_until([&] {
      for (const ConnectionInfo& c : from.transport->connections())
        if (c.outgoing && c.peer == peer && c.up) return true;
      return false;
    }));
    return peer;
  }

 private:
  std::vector<std::unique_ptr<Peer>> peers_;
};

// A sender connected to a receiver, and a pool of the sender's application with blocks up to block_bytes.
struct Pair {
  explicit Pair(const Settings& sender_settings = {}, const Settings& receiver_settings = {},
                std::size_t block_bytes = 64 * 1024)
      : sender(peers.add(sender_settings)),
        receiver(peers.add(receiver_settings)),
        peer(peers.connect(sender, receiver)),
        pool(sender.application_pool(block_bytes)) {}

  Peers peers;
  Peer& sender;
  Peer& receiver;
  PeerId peer;
  mem::Pool& pool;
};

// The size of a frame larger than the receiver's largest receive block (and than a sender's 64 KiB blocks): no
// transport can hand it over in one block.
std::uint32_t beyond_any_block(Peer& receiver) {
  return static_cast<std::uint32_t>(std::max<std::size_t>(receiver.receive_pool().max_block_size(), 64 * 1024) * 3 / 2);
}

// What a receiver holds when nothing is under way: its posted receive buffers. A credit-flow transport sends a
// credit message as a connection comes up, and that message's block comes back only when its send completes
// (under the sanitizers, after the sender already saw the connection up), so the count waits for it.
std::size_t blocks_at_rest(Peer& receiver) {
  wait_until([&] { return receiver.host.blocks_in_use("/credit") == 0; });
  return receiver.host.blocks_in_use();
}

// ---- Frames with a pattern: every byte says which frame it belongs to and where it stands --------------------

constexpr Tid target_of(std::uint64_t sequence) { return static_cast<Tid>(100 + sequence % 7); }
constexpr Tid initiator_of(std::uint64_t sequence) { return static_cast<Tid>(200 + sequence % 5); }

std::byte pattern_byte(std::uint64_t sequence, std::size_t at) noexcept {
  return static_cast<std::byte>((sequence * 131 + at * 7 + (at >> 8)) & 0xff);
}

// Writes the header and the pattern of frame `sequence` over the whole chain.
void write_pattern(mem::Ref& frame, std::uint64_t sequence) {
  const auto bytes = static_cast<std::uint32_t>(frame.total_size());
  REQUIRE(frame.size() >= kFrameHeaderSize);
  std::size_t at = 0;
  for (mem::Block* block = frame.head(); block != nullptr; block = block->next())
    for (std::size_t i = 0; i < block->size(); ++i, ++at) block->data()[i] = pattern_byte(sequence, at);
  FrameHeader header;
  header.total_length = bytes;
  header.target = target_of(sequence);
  header.initiator = initiator_of(sequence);
  header.transaction = sequence;
  encode_header(header, frame.data());
}

// Frame `sequence` of `bytes` from pool: one block, or a chain where it is larger than the pool's largest block.
mem::Ref pattern_frame(mem::Pool& pool, std::uint32_t bytes, std::uint64_t sequence) {
  mem::Ref frame = bytes <= pool.max_block_size() ? pool.allocate(bytes) : pool.allocate_chain(bytes);
  REQUIRE(frame);
  write_pattern(frame, sequence);
  return frame;
}

// How a received frame differs from frame `sequence` of `bytes` as it was posted; empty when it does not.
std::string difference(const Frame& frame, std::uint64_t sequence, std::uint32_t bytes) {
  const std::string which = "frame " + std::to_string(sequence) + ": ";
  if (frame.header.transaction != sequence)
    return which + "frame " + std::to_string(frame.header.transaction) + " arrived in its place";
  if (frame.header.total_length != bytes || frame.data.total_size() != bytes)
    return which + std::to_string(frame.data.total_size()) + " bytes (header says " +
           std::to_string(frame.header.total_length) + "), posted " + std::to_string(bytes);
  if (frame.header.target != target_of(sequence) || frame.header.initiator != initiator_of(sequence))
    return which + "target " + std::to_string(frame.header.target) + " initiator " +
           std::to_string(frame.header.initiator);
  std::size_t at = 0;
  for (const mem::Block* block = frame.data.head(); block != nullptr; block = block->next())
    for (std::size_t i = 0; i < block->size(); ++i, ++at)
      if (at >= kFrameHeaderSize && block->data()[i] != pattern_byte(sequence, at))
        return which + "byte " + std::to_string(at) + " differs";
  return {};
}

// What one host received, checked frame by frame in delivery order against what was posted to it.
struct Arrivals {
  Arrivals(TransportTestHost& receiving, std::vector<std::uint32_t> posted)
      : host(receiving), sizes(std::move(posted)) {}

  TransportTestHost& host;
  std::vector<std::uint32_t> sizes;        // bytes of each frame posted, by sequence
  std::size_t checked = 0;                 // frames taken and checked
  std::vector<std::size_t> chain_lengths;  // blocks of each frame checked
  std::size_t views = 0;                   // frames whose head block was a view into a larger message
  std::string problem;                     // the first difference

  // Takes and checks what arrived since the last call (then released); true once every frame posted is checked
  // or one differed.
  bool take_new() {
    const std::size_t arrived = host.delivered();
    for (; checked < arrived && problem.empty(); ++checked) {
      if (checked >= sizes.size()) {
        problem = "more frames arrived than were posted";
        break;
      }
      Frame frame = host.take(checked);
      chain_lengths.push_back(frame.data.chain_length());
      if (frame.data.head()->is_view()) ++views;
      problem = difference(frame, checked, sizes[checked]);
    }
    return !problem.empty() || checked == sizes.size();
  }
  // Waits for every frame posted; true when all came, intact and in order.
  bool all_arrive() {
    const bool ended = wait_until([&] { return take_new(); });
    INFO(problem << " (" << checked << " of " << sizes.size() << " checked)");
    CHECK(ended);
    CHECK(problem.empty());
    return ended && problem.empty();
  }
};

// Posts frame, retrying through would_block for a bounded time; the final status.
SendStatus post_waiting(Transport& sender, PeerId peer, mem::Ref& frame) {
  SendStatus status = SendStatus::would_block;
  wait_until([&] {
    status = sender.post(peer, frame);
    return status != SendStatus::would_block;
  });
  return status;
}

// ---- Multipart messages: part `index` of message `sequence` has the pattern of frame sequence * 10000 + index ----

// The message as send_parts makes it: a head of header and part table, the parts' blocks linked after it.
mem::Ref multipart_message(mem::Pool& pool, const std::vector<std::uint32_t>& sizes, std::uint64_t sequence) {
  std::vector<mem::Ref> parts;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) {
      parts.emplace_back();
      continue;
    }
    mem::Ref part = sizes[i] <= pool.max_block_size() ? pool.allocate(sizes[i]) : pool.allocate_chain(sizes[i]);
    REQUIRE(part);
    std::size_t at = 0;
    for (mem::Block* block = part.head(); block != nullptr; block = block->next())
      for (std::size_t b = 0; b < block->size(); ++b, ++at) block->data()[b] = pattern_byte(sequence * 10000 + i, at);
    parts.push_back(std::move(part));
  }
  REQUIRE(check_parts(parts) == MultipartCheck::ok);
  mem::Ref frame = pool.allocate_chain(kFrameHeaderSize + part_table_size(parts.size()));
  REQUIRE(frame);
  write_part_table(parts, frame);
  link_parts(frame, parts);
  FrameHeader header;
  header.flags = frame_flags::multipart;
  header.total_length = static_cast<std::uint32_t>(frame.total_size());
  header.target = target_of(sequence);
  header.initiator = initiator_of(sequence);
  header.transaction = sequence;
  encode_header(header, frame.data());
  return frame;
}

// Splits a received message and says how its parts differ from message `sequence`'s; empty when they do not.
std::string parts_difference(Frame& frame, std::uint64_t sequence, const std::vector<std::uint32_t>& sizes,
                             std::vector<mem::Ref>& parts) {
  const std::string which = "message " + std::to_string(sequence) + ": ";
  if (frame.header.transaction != sequence)
    return which + "message " + std::to_string(frame.header.transaction) + " arrived in its place";
  const MultipartCheck check = take_parts(frame, parts);
  if (check != MultipartCheck::ok) return which + std::string(to_string(check));
  if (parts.size() != sizes.size())
    return which + std::to_string(parts.size()) + " parts, sent " + std::to_string(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string part = which + "part " + std::to_string(i) + ": ";
    const std::size_t bytes = parts[i] ? parts[i].total_size() : 0;
    if (bytes != sizes[i]) return part + std::to_string(bytes) + " bytes, sent " + std::to_string(sizes[i]);
    std::size_t at = 0;
    for (const mem::Block* block = parts[i].head(); block != nullptr; block = block->next())
      for (std::size_t b = 0; b < block->size(); ++b, ++at)
        if (block->data()[b] != pattern_byte(sequence * 10000 + i, at)) return part + "byte " + std::to_string(at) + " differs";
  }
  return {};
}

// Posts the messages in order and checks each as it arrives: split into its parts, every part intact and in
// place, the parts released before the next is taken.
void multipart_messages_arrive(Pair& pair, const std::vector<std::vector<std::uint32_t>>& messages) {
  for (std::uint64_t sequence = 0; sequence < messages.size(); ++sequence) {
    mem::Ref frame = multipart_message(pair.pool, messages[sequence], sequence);
    REQUIRE(post_waiting(*pair.sender.transport, pair.peer, frame) == SendStatus::ok);
  }
  std::vector<mem::Ref> parts;
  for (std::uint64_t sequence = 0; sequence < messages.size(); ++sequence) {
    INFO("message " << sequence << " of " << messages[sequence].size() << " parts; receiver's logs:\n"
                    << pair.receiver.host.logs());
    REQUIRE(wait_until([&] { return pair.receiver.host.delivered() > sequence; }));
    Frame frame = pair.receiver.host.take(sequence);
    CHECK((frame.header.flags & frame_flags::multipart) != 0);
    const std::string problem = parts_difference(frame, sequence, messages[sequence], parts);
    INFO(problem);
    CHECK(problem.empty());
    parts.clear();
  }
  CHECK(pair.receiver.host.delivered() == messages.size());
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);
}

bool no_thread_left(Peer& peer) {
  return wait_until([&] { return peer.host.threads_running() == 0; });
}

// Posts frames in order with post_batch, going on through would_block for a bounded time, with `meanwhile` run
// between tries (a receiver that holds frames releases them there, or nothing more gets through); the final
// status: ok when every frame was taken.
SendStatus post_batch_waiting(Transport& sender, PeerId peer, std::span<mem::Ref> frames,
                              const std::function<void()>& meanwhile = [] {}) {
  std::size_t taken = 0;
  SendStatus status = SendStatus::would_block;
  wait_until([&] {
    status = SendStatus::ok;
    taken += sender.post_batch(peer, frames.subspan(taken), status);
    if (taken == frames.size()) {
      status = SendStatus::ok;
      return true;
    }
    meanwhile();
    return status != SendStatus::would_block;
  });
  return status;
}

// Frames 0.. of the sizes given, from pool, to post as one batch.
std::vector<mem::Ref> pattern_batch(mem::Pool& pool, const std::vector<std::uint32_t>& sizes) {
  std::vector<mem::Ref> batch;
  batch.reserve(sizes.size());
  for (std::uint64_t sequence = 0; sequence < sizes.size(); ++sequence)
    batch.push_back(pattern_frame(pool, sizes[sequence], sequence));
  return batch;
}

// How many frames of the batch still hold a block: those post_batch did not take.
std::size_t frames_held(const std::vector<mem::Ref>& batch) {
  return static_cast<std::size_t>(std::count_if(batch.begin(), batch.end(), [](const mem::Ref& f) { return bool(f); }));
}

// ---- The cases -------------------------------------------------------------------------------------------------

TEST_CASE("frames of 64 B, 4 KiB, 64 KiB and one larger than a receive block arrive intact, in order, with their "
          "header, the largest as a chain",
          "[conformance]") {
  transport_under_test();
  Pair pair;
  const std::uint32_t largest = beyond_any_block(pair.receiver);
  Arrivals arrivals{pair.receiver.host, {64, 4096, 65536, largest, 64}};
  for (std::uint64_t sequence = 0; sequence < arrivals.sizes.size(); ++sequence) {
    mem::Ref frame = pattern_frame(pair.pool, arrivals.sizes[sequence], sequence);
    REQUIRE(post_waiting(*pair.sender.transport, pair.peer, frame) == SendStatus::ok);
  }
  REQUIRE(arrivals.all_arrive());
  INFO("the frame of " << largest << " bytes arrived in " << arrivals.chain_lengths[3] << " block(s)");
  CHECK(arrivals.chain_lengths[3] > 1);
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);
  CHECK(wait_until([&] { return pair.pool.blocks_in_use() == 0; }));
}

TEST_CASE("a receiver that answers busy stops its sender without errors, and once it accepts again every frame "
          "arrives once, in order, and the sender is told it may post again",
          "[conformance]") {
  transport_under_test();
  Pair pair({{"sendQueue", "16"}}, {}, 4096);
  constexpr std::uint32_t kBytes = 4096;
  // Whatever the wire buffers (socket buffers, rings, credits) is bounded: posting stops well before this.
  constexpr std::uint64_t kMostFrames = 20000;

  pair.receiver.host.set_busy(true);
  std::uint64_t posted = 0;
  mem::Ref refused;
  for (; posted < kMostFrames; ++posted) {
    mem::Ref frame = pattern_frame(pair.pool, kBytes, posted);
    const SendStatus status = pair.sender.transport->post(pair.peer, frame);
    if (status == SendStatus::would_block) {
      refused = std::move(frame);
      break;
    }
    REQUIRE(status == SendStatus::ok);
  }
  INFO(posted << " frames posted before would_block");
  REQUIRE(refused);  // the sender was stopped: would_block
  CHECK(wait_until([&] { return pair.receiver.host.busy_answers() > 0; }));
  CHECK(pair.receiver.host.delivered() == 0);
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);
  CHECK(metric(*pair.sender.transport, "sends_would_block") >= 1);

  pair.receiver.host.set_busy(false);
  REQUIRE(pair.receiver.host.resume_delivery());
  Arrivals arrivals{pair.receiver.host, std::vector<std::uint32_t>(posted + 1 + 100, kBytes)};
  CHECK(wait_until([&] {
    arrivals.take_new();  // the receiver drains meanwhile, and the sender's queue with it
    return pair.sender.host.send_ready_count(pair.peer) > 0;
  }));
  // The refused frame and more after it, as a poster does once told it may go on. The receiver goes on draining
  // while they wait: told "ready" when a few had gone, the sender may still have its ring full of frames that
  // only the receiver's releases give back.
  auto post_draining = [&](mem::Ref& frame) {
    SendStatus status = SendStatus::would_block;
    wait_until([&] {
      arrivals.take_new();
      status = pair.sender.transport->post(pair.peer, frame);
      return status != SendStatus::would_block;
    });
    return status;
  };
  REQUIRE(post_draining(refused) == SendStatus::ok);
  for (std::uint64_t sequence = posted + 1; sequence < arrivals.sizes.size(); ++sequence) {
    mem::Ref frame = pattern_frame(pair.pool, kBytes, sequence);
    REQUIRE(post_draining(frame) == SendStatus::ok);
  }
  REQUIRE(arrivals.all_arrive());
  // Once: nothing more arrives after both stopped.
  pair.sender.stop();
  pair.receiver.stop();
  CHECK(pair.receiver.host.delivered() == arrivals.sizes.size());
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);
}

TEST_CASE("a receiver that holds every frame stalls its sender on credits without errors, and releasing them lets "
          "the rest through",
          "[conformance]") {
  const TransportUnderTest& t = transport_under_test();
  if (!t.capabilities().credit_flow) skip_test("it does not send on credits (no credit_flow)");
  // A small receive side: the 256 buffers of 4 KiB the held frames pin run out after a few hundred frames of
  // 3000 B. A send queue longer than the receive pool has buffers: it fills only once the sender is stalled.
  constexpr std::uint64_t kSendQueue = 512, kReceiveDepth = 4;
  Pair pair({{"sendQueue", std::to_string(kSendQueue)}},
            {{"recvBufferSize", "4096"}, {"recvDepth", std::to_string(kReceiveDepth)}, {"recvPoolSize", "1048576"}},
            4096);
  constexpr std::uint32_t kBytes = 3000;
  constexpr std::uint64_t kMostFrames = 20000;

  // Posts until the sender is stalled on credits: its queue full, credit_waits counted, and the receiver out of
  // buffers to post (so no credit can come back while it holds). A full queue or a credit wait alone is not a
  // stall: the receiver grants more credits as long as its pool has buffers, and posting goes on.
  std::uint64_t posted = 0;
  mem::Ref refused;
  auto stalled = [&] {
    return metric(*pair.sender.transport, "credit_waits") > 0 &&
           metric(*pair.receiver.transport, "receive_pool_waits") > 0;
  };
  for (;;) {
    REQUIRE(posted < kMostFrames);
    if (!refused) refused = pattern_frame(pair.pool, kBytes, posted);
    SendStatus status = pair.sender.transport->post(pair.peer, refused);
    if (status == SendStatus::would_block)
      wait_until([&] {
        status = pair.sender.transport->post(pair.peer, refused);
        return status != SendStatus::would_block || stalled();
      });
    if (status == SendStatus::ok) {
      ++posted;
      continue;
    }
    REQUIRE(status == SendStatus::would_block);
    INFO(posted << " frames posted, the next refused");
    REQUIRE(stalled());
    break;
  }
  // Stalled: frames wait at the sender that the receiver has no buffer for. How many of the queue still got
  // through depends on how the transport grants credits (per connection, or from a shared receive queue, as
  // ptibv does), so only that some wait is asserted; that all of them arrive once released is asserted below.
  CHECK(pair.receiver.host.delivered() < posted);
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);

  Arrivals arrivals{pair.receiver.host, std::vector<std::uint32_t>(posted + 1 + 100, kBytes)};
  arrivals.take_new();  // checked and released: the receiver posts buffers again, and credits flow
  REQUIRE(arrivals.problem.empty());
  REQUIRE(post_waiting(*pair.sender.transport, pair.peer, refused) == SendStatus::ok);
  for (std::uint64_t sequence = posted + 1; sequence < arrivals.sizes.size(); ++sequence) {
    mem::Ref frame = pattern_frame(pair.pool, kBytes, sequence);
    arrivals.take_new();
    REQUIRE(post_waiting(*pair.sender.transport, pair.peer, frame) == SendStatus::ok);
  }
  REQUIRE(arrivals.all_arrive());
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);
}

TEST_CASE("small frames posted back to back in throughput mode go packed and arrive one by one, in order, intact, "
          "and releasing them returns every block",
          "[conformance]") {
  const TransportUnderTest& t = transport_under_test();
  Settings throughput{{"mode", "throughput"}};
  const auto capabilities = t.capabilities(throughput);
  if (!capabilities.coalescing) skip_test("it does not pack frames together (no coalescing)");
  // A transport of messages copies the frames of a message that fills at most a quarter of its receive buffer
  // (the buffer goes back at once) and hands out those of fuller messages as views into it: with 16 KiB buffers,
  // messages beyond 4 KiB.
  const bool of_messages = capabilities.gather_limit != 0;
  if (of_messages) throughput.emplace_back("recvBufferSize", "16384");
  Pair pair(throughput, throughput, 4096);
  const std::size_t at_rest = blocks_at_rest(pair.receiver);  // posted receive buffers, where it keeps them
  Arrivals arrivals{pair.receiver.host, {}};
  for (std::uint32_t i = 0; i < 500; ++i) arrivals.sizes.push_back(64 + (i * 37) % 400);
  // Larger ones too, so that packed messages go beyond 4 KiB.
  for (std::uint32_t i = 0; i < 200; ++i) arrivals.sizes.push_back(1200 + (i * 53) % 800);
  for (std::uint64_t sequence = 0; sequence < arrivals.sizes.size(); ++sequence) {
    mem::Ref frame = pattern_frame(pair.pool, arrivals.sizes[sequence], sequence);
    REQUIRE(post_waiting(*pair.sender.transport, pair.peer, frame) == SendStatus::ok);
  }
  REQUIRE(arrivals.all_arrive());
  const double frames = metric(*pair.sender.transport, "frames_sent");
  const double messages = metric(*pair.sender.transport, "messages_sent");
  INFO(frames << " frames went in " << messages << " messages; " << arrivals.views << " arrived as views");
  CHECK(frames == static_cast<double>(arrivals.sizes.size()));
  CHECK(messages < frames);
  if (of_messages) CHECK(arrivals.views > 0);
  INFO("in use: " << pair.receiver.host.pools_in_use());
  CHECK(wait_until([&] { return pair.receiver.host.blocks_in_use() == at_rest; }));
  CHECK(wait_until([&] { return pair.pool.blocks_in_use() == 0; }));
}

TEST_CASE("a frame posted as a chain of several blocks arrives whole", "[conformance]") {
  transport_under_test();
  Pair pair({}, {}, 4096);
  // Four full blocks and a short one, linked by hand as an application would build them.
  mem::Ref frame = pair.pool.allocate(4096);
  REQUIRE(frame);
  for (std::uint32_t bytes : {4096u, 4096u, 4096u, 1000u}) {
    mem::Ref block = pair.pool.allocate(bytes);
    REQUIRE(block);
    frame.append(std::move(block));
  }
  REQUIRE(frame.chain_length() == 5);
  write_pattern(frame, 0);
  Arrivals arrivals{pair.receiver.host, {static_cast<std::uint32_t>(frame.total_size())}};
  REQUIRE(post_waiting(*pair.sender.transport, pair.peer, frame) == SendStatus::ok);
  REQUIRE(arrivals.all_arrive());
  CHECK(wait_until([&] { return pair.pool.blocks_in_use() == 0; }));
}

TEST_CASE("multipart messages (a small header part, payload chains, a part larger than a receive block, an empty "
          "part, 100 parts of 64 B, a message of a few hundred bytes) arrive split into their parts, intact and in "
          "order, and every block goes back",
          "[conformance][multipart]") {
  transport_under_test();
  Pair pair({}, {}, 4096);
  const std::size_t at_rest = blocks_at_rest(pair.receiver);
  // Small messages are copied out of their receive buffers whole (transports of messages): the parts are then
  // views of the copy's block.
  multipart_messages_arrive(pair, {{24, 10000, 64},
                                   {16, beyond_any_block(pair.receiver), 0, 1},
                                   std::vector<std::uint32_t>(100, 64),
                                   {32, 4096, 4096, 4096},
                                   {8, 100, 200}});
  CHECK(wait_until([&] { return pair.pool.blocks_in_use() == 0; }));
  INFO("receiver in use: " << pair.receiver.host.pools_in_use());
  CHECK(wait_until([&] { return pair.receiver.host.blocks_in_use() == at_rest; }));
}

TEST_CASE("a multipart message of 1000 parts, more blocks than a message gathers or a shared-memory ring holds, "
          "arrives whole and split into its parts",
          "[conformance][multipart]") {
  transport_under_test();
  // ptshm's smallest ring: the message's 1001 blocks go copied (into blocks of up to 1 MiB) rather than not at all.
  const Settings small_ring{{"ringEntries", "256"}};
  Pair pair(small_ring, small_ring, 4096);
  const std::size_t at_rest = blocks_at_rest(pair.receiver);
  std::vector<std::uint32_t> sizes(1000, 64);
  sizes.front() = 48;
  sizes.back() = 5000;  // a chain of two blocks at the end
  multipart_messages_arrive(pair, {sizes, sizes});
  CHECK(wait_until([&] { return pair.pool.blocks_in_use() == 0; }));
  INFO("receiver in use: " << pair.receiver.host.pools_in_use());
  CHECK(wait_until([&] { return pair.receiver.host.blocks_in_use() == at_rest; }));
}

TEST_CASE("a frame shared and posted to two peers reaches both, and its block goes back once both released it",
          "[conformance]") {
  transport_under_test();
  Peers peers;
  Peer& sender = peers.add();
  Peer& first = peers.add();
  Peer& second = peers.add();
  const PeerId to_first = peers.connect(sender, first);
  const PeerId to_second = peers.connect(sender, second);
  mem::Pool& pool = sender.application_pool();
  mem::Ref frame = pattern_frame(pool, 8192, 0);
  mem::Ref copy = frame.share();
  REQUIRE(copy.shared());
  REQUIRE(post_waiting(*sender.transport, to_first, frame) == SendStatus::ok);
  REQUIRE(post_waiting(*sender.transport, to_second, copy) == SendStatus::ok);
  REQUIRE(wait_until([&] { return first.host.delivered() == 1 && second.host.delivered() == 1; }));
  Frame one = first.host.take(0), two = second.host.take(0);
  CHECK(difference(one, 0, 8192).empty());
  CHECK(difference(two, 0, 8192).empty());
  one.data.reset();
  // Passed by reference, the block is the second receiver's until it lets go.
  if (sender.transport->capabilities().shared_memory_pools) CHECK(pool.blocks_in_use() == 1);
  two.data.reset();
  CHECK(wait_until([&] { return pool.blocks_in_use() == 0; }));
}

TEST_CASE("a receiver that goes away holding frames takes its sender's connection down with a reason, posts to it "
          "fail without harm, and every block on both sides comes back",
          "[conformance]") {
  transport_under_test();
  // No reconnection within the case: the connection stays down, so what a post does is what it does when down.
  Pair pair(Settings{{"reconnectMin", "60000"}, {"reconnectMax", "60000"}});
  for (std::uint64_t sequence = 0; sequence < 10; ++sequence) {
    mem::Ref frame = pattern_frame(pair.pool, 4096, sequence);
    REQUIRE(post_waiting(*pair.sender.transport, pair.peer, frame) == SendStatus::ok);
  }
  REQUIRE(wait_until([&] { return pair.receiver.host.delivered() == 10; }));

  pair.receiver.stop();  // as if it died holding them
  TransportTestHost::ConnectionChange down;
  INFO("sender's logs:\n" << pair.sender.host.logs());
  CHECK(wait_until([&] {
    for (const auto& change : pair.sender.host.connection_changes())
      if (change.peer == pair.peer && !change.up) down = change;
    return !down.reason.empty();
  }));
  INFO("went down: " << down.reason);
  mem::Ref late = pattern_frame(pair.pool, 4096, 10);
  const SendStatus status = pair.sender.transport->post(pair.peer, late);
  CHECK((status == SendStatus::error || status == SendStatus::would_block));
  late.reset();

  pair.receiver.host.release_delivered();
  INFO("receiver in use: " << pair.receiver.host.pools_in_use());
  CHECK(wait_until([&] { return pair.receiver.host.blocks_in_use() == 0; }));
  CHECK(wait_until([&] { return pair.pool.blocks_in_use() == 0; }));
  pair.sender.stop();
  INFO("sender in use: " << pair.sender.host.pools_in_use());
  CHECK(wait_until([&] { return pair.sender.host.blocks_in_use() == 0; }));
  CHECK(no_thread_left(pair.sender));
  CHECK(no_thread_left(pair.receiver));
}

TEST_CASE("transports stopped with frames posted give every block of every pool back and leave no thread",
          "[conformance]") {
  transport_under_test();
  Pair pair;
  for (std::uint64_t sequence = 0; sequence < 64; ++sequence) {
    mem::Ref frame = pattern_frame(pair.pool, sequence % 2 == 0 ? 65536 : 512, sequence);
    const SendStatus status = pair.sender.transport->post(pair.peer, frame);
    REQUIRE((status == SendStatus::ok || status == SendStatus::would_block));
  }
  // At once, with frames on the way: some queued, some in flight, some delivered and held.
  pair.sender.stop();
  pair.receiver.stop();
  pair.receiver.host.release_delivered();
  INFO("sender in use: " << pair.sender.host.pools_in_use() << "; receiver in use: " << pair.receiver.host.pools_in_use());
  CHECK(wait_until([&] { return pair.sender.host.blocks_in_use() == 0; }));
  CHECK(wait_until([&] { return pair.receiver.host.blocks_in_use() == 0; }));
  CHECK(no_thread_left(pair.sender));
  CHECK(no_thread_left(pair.receiver));
}


// ---- Batches: post_batch, as the executive uses it for an application's send_batch ---------------------------

// Once every frame arrived and was released: both transports stopped, every block of every pool (the
// transports' own, the application's) is back. Counted after the stop, because what a receiver keeps posted
// at rest is posted while its connection comes up, after the sender sees it up.
void every_block_back(Pair& pair) {
  pair.sender.stop();
  pair.receiver.stop();
  INFO("sender in use: " << pair.sender.host.pools_in_use() << "; receiver in use: " << pair.receiver.host.pools_in_use());
  CHECK(wait_until([&] { return pair.sender.host.blocks_in_use() == 0; }));
  CHECK(wait_until([&] { return pair.receiver.host.blocks_in_use() == 0; }));
}

TEST_CASE("a batch of frames of 64 B, 4 KiB and chains larger than a receive block, posted in one call, arrives in "
          "order and intact, and every block comes back on both sides",
          "[conformance][batch]") {
  transport_under_test();
  Pair pair;
  const std::uint32_t largest = beyond_any_block(pair.receiver);
  Arrivals arrivals{pair.receiver.host, {}};
  for (std::uint32_t i = 0; i < 24; ++i) arrivals.sizes.push_back(i % 3 == 0 ? 64u : i % 3 == 1 ? 4096u : largest);
  std::vector<mem::Ref> batch = pattern_batch(pair.pool, arrivals.sizes);
  REQUIRE(post_batch_waiting(*pair.sender.transport, pair.peer, batch) == SendStatus::ok);
  CHECK(frames_held(batch) == 0);  // every frame taken is gone from the caller's span
  REQUIRE(arrivals.all_arrive());
  for (std::size_t i = 2; i < arrivals.sizes.size(); i += 3) {
    INFO("frame " << i << " of " << largest << " bytes arrived in " << arrivals.chain_lengths[i] << " block(s)");
    CHECK(arrivals.chain_lengths[i] > 1);
  }
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);
  CHECK(metric(*pair.sender.transport, "frames_sent") == static_cast<double>(arrivals.sizes.size()));
  CHECK(wait_until([&] { return pair.pool.blocks_in_use() == 0; }));
  every_block_back(pair);
}

TEST_CASE("a batch larger than the send queue, posted before its connection is up, is taken in part with "
          "would_block, and the rest, posted once the sender is told it may go on, arrives once and in order",
          "[conformance][batch]") {
  transport_under_test();
  constexpr std::size_t kSendQueue = 16;
  Peers peers;
  // Connected at first use: the batch's first frame asks for the connection, and until it is up nothing leaves
  // the queue, so the call takes what the queue holds and no more.
  Peer& sender = peers.add({{"connectAt", "first-use"}, {"sendQueue", std::to_string(kSendQueue)}});
  Peer& receiver = peers.add();
  const PeerId peer = sender.transport->connect(receiver.address);
  mem::Pool& pool = sender.application_pool(4096);
  Arrivals arrivals{receiver.host, {}};
  for (std::uint32_t i = 0; i < 6 * kSendQueue; ++i) arrivals.sizes.push_back(i % 2 == 0 ? 64u : 4096u);
  std::vector<mem::Ref> batch = pattern_batch(pool, arrivals.sizes);

  SendStatus stopped = SendStatus::ok;
  const std::size_t taken = sender.transport->post_batch(peer, batch, stopped);
  INFO(taken << " of " << batch.size() << " frames taken");
  REQUIRE(stopped == SendStatus::would_block);
  CHECK(taken > 0);
  CHECK(taken < batch.size());
  // The ones taken are gone from the span, the rest are still the caller's, untouched.
  for (std::size_t i = 0; i < batch.size(); ++i) {
    INFO("frame " << i);
    CHECK(static_cast<bool>(batch[i]) == (i >= taken));
  }
  CHECK(metric(*sender.transport, "sends_would_block") >= 1);

  // The connection opens, the queue drains, and the sender is told it may post again.
  CHECK(wait_until([&] {
    arrivals.take_new();
    return sender.host.send_ready_count(peer) > 0;
  }));
  REQUIRE(post_batch_waiting(*sender.transport, peer, std::span(batch).subspan(taken), [&] { arrivals.take_new(); }) ==
          SendStatus::ok);
  REQUIRE(arrivals.all_arrive());
  // Once: nothing more arrives after both stopped.
  sender.stop();
  receiver.stop();
  CHECK(receiver.host.delivered() == batch.size());
  CHECK(metric(*sender.transport, "send_errors") == 0);
  CHECK(wait_until([&] { return sender.host.blocks_in_use() == 0; }));
  CHECK(wait_until([&] { return receiver.host.blocks_in_use() == 0; }));
}

TEST_CASE("a batch larger than the receiver's credits is taken in part with would_block while the receiver holds "
          "its frames, and once it releases them the rest goes and every frame arrives once, in order",
          "[conformance][batch]") {
  const TransportUnderTest& t = transport_under_test();
  if (!t.capabilities().credit_flow) skip_test("it does not send on credits (no credit_flow)");
  // A small receive side: 128 buffers of 8 KiB. Frames larger than the transports copy out of their buffers
  // (pt::small_message_limit: messages of up to 4 KiB with these buffers) pin one each while the receiver holds
  // them, and no credit comes back meanwhile.
  constexpr std::uint64_t kSendQueue = 512, kReceiveDepth = 4, kFrames = 2000;
  Pair pair({{"sendQueue", std::to_string(kSendQueue)}},
            {{"recvBufferSize", "8192"}, {"recvDepth", std::to_string(kReceiveDepth)}, {"recvPoolSize", "1048576"}},
            8192);
  Arrivals arrivals{pair.receiver.host, std::vector<std::uint32_t>(kFrames, 6000)};
  std::vector<mem::Ref> batch = pattern_batch(pair.pool, arrivals.sizes);

  SendStatus stopped = SendStatus::ok;
  const std::size_t taken = pair.sender.transport->post_batch(pair.peer, batch, stopped);
  INFO(taken << " of " << batch.size() << " frames taken");
  REQUIRE(stopped == SendStatus::would_block);
  CHECK(taken > 0);
  CHECK(taken < batch.size());
  CHECK(frames_held(batch) == batch.size() - taken);
  // The rest of the batch offered again and again, nothing released, until the sender is stalled on credits:
  // it waits for them, the receiver for buffers its held frames pin, and part of the batch is still refused.
  std::size_t posted = taken;
  const bool stalled = wait_until([&] {
    stopped = SendStatus::ok;
    posted += pair.sender.transport->post_batch(pair.peer, std::span(batch).subspan(posted), stopped);
    return posted == batch.size() || (metric(*pair.sender.transport, "credit_waits") > 0 &&
                                      metric(*pair.receiver.transport, "receive_pool_waits") > 0);
  });
  INFO(posted << " frames posted when the sender stalled");
  REQUIRE(stalled);
  REQUIRE(posted < batch.size());
  CHECK(stopped == SendStatus::would_block);
  CHECK(pair.receiver.host.delivered() < posted);
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);

  // Released frame by frame as they are checked: credits flow again and the rest of the batch goes.
  REQUIRE(post_batch_waiting(*pair.sender.transport, pair.peer, std::span(batch).subspan(posted),
                             [&] { arrivals.take_new(); }) == SendStatus::ok);
  REQUIRE(arrivals.all_arrive());
  CHECK(metric(*pair.sender.transport, "send_errors") == 0);
  every_block_back(pair);
  CHECK(pair.receiver.host.delivered() == kFrames);  // once: nothing more after both stopped
}

TEST_CASE("a batch in throughput mode larger than a pack is taken in one call, split across packs, and arrives one "
          "frame at a time, in order, intact, every block back",
          "[conformance][batch]") {
  const TransportUnderTest& t = transport_under_test();
  // Packs of at least 4 KiB (the smallest packSize): the batch is many times that.
  const Settings throughput{{"mode", "throughput"}, {"packSize", "4096"}};
  if (!t.capabilities(throughput).coalescing) skip_test("it does not pack frames together (no coalescing)");
  Pair pair(throughput, throughput, 4096);
  Arrivals arrivals{pair.receiver.host, {}};
  for (std::uint32_t i = 0; i < 2000; ++i) arrivals.sizes.push_back(64 + (i * 37) % 600);
  std::size_t batch_bytes = 0;
  for (std::uint32_t bytes : arrivals.sizes) batch_bytes += bytes;
  std::vector<mem::Ref> batch = pattern_batch(pair.pool, arrivals.sizes);

  // The send queue (4096 frames by default) holds the whole batch: one call takes it.
  SendStatus stopped = SendStatus::ok;
  const std::size_t taken = pair.sender.transport->post_batch(pair.peer, batch, stopped);
  REQUIRE(taken == batch.size());
  REQUIRE(stopped == SendStatus::ok);
  REQUIRE(arrivals.all_arrive());
  const double frames = metric(*pair.sender.transport, "frames_sent");
  const double messages = metric(*pair.sender.transport, "messages_sent");
  INFO(batch_bytes << " bytes in " << frames << " frames went in " << messages << " messages");
  CHECK(frames == static_cast<double>(batch.size()));
  CHECK(messages < frames);  // packed
  // A transport of messages holds at most a receive buffer per message: the batch, larger than that, took several.
  if (pair.sender.transport->capabilities().gather_limit != 0) CHECK(messages > 1);
  CHECK(wait_until([&] { return pair.pool.blocks_in_use() == 0; }));
  every_block_back(pair);
}

TEST_CASE("a batch posted to a connection that failed has its first frame released with error and the rest left "
          "with the caller",
          "[conformance][batch]") {
  transport_under_test();
  // No reconnection within the case: the connection stays down.
  Pair pair(Settings{{"reconnectMin", "60000"}, {"reconnectMax", "60000"}});
  std::vector<mem::Ref> first = pattern_batch(pair.pool, std::vector<std::uint32_t>(4, 4096));
  REQUIRE(post_batch_waiting(*pair.sender.transport, pair.peer, first) == SendStatus::ok);
  REQUIRE(wait_until([&] { return pair.receiver.host.delivered() == first.size(); }));
  pair.receiver.stop();
  INFO("sender's logs:\n" << pair.sender.host.logs());
  REQUIRE(wait_until([&] {
    for (const auto& change : pair.sender.host.connection_changes())
      if (change.peer == pair.peer && !change.up) return true;
    return false;
  }));

  std::vector<mem::Ref> late = pattern_batch(pair.pool, std::vector<std::uint32_t>(5, 4096));
  SendStatus stopped = SendStatus::ok;
  const std::size_t taken = pair.sender.transport->post_batch(pair.peer, late, stopped);
  CHECK(taken == 0);
  CHECK(stopped == SendStatus::error);
  CHECK_FALSE(late.front());  // released
  for (std::size_t i = 1; i < late.size(); ++i) {
    INFO("frame " << i);
    CHECK(late[i]);  // still the caller's
  }
  late.clear();
  pair.receiver.host.release_delivered();
  every_block_back(pair);
}

}  // namespace
}  // namespace daqx::test
