// ptshm: the shared-memory peer transport, on the shared connection layer (pt/base). Two contexts of one host
// pass frames as references (chunk, offset, length) into pools both have mapped, through one single-producer
// single-consumer ring per direction in a segment made for each connection; the receiver's applications see
// the sender's blocks themselves (zero copy), and their release sends the reference back through the return
// ring. docs/ptshm.md tells the whole story.
//
// What is its own: the registrar that gives every shared chunk of this executive an id and keeps its memfd,
// connection set-up over a Unix socket (hello with the segment and two eventfds, then one message per chunk,
// each memfd passed with SCM_RIGHTS), the rings, the receiver's checks of everything the peer wrote, and the
// return path from any application thread. Connection handling, delivery, waiting and counters are pt/base's.
#pragma once

#include <sys/un.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daqx/pt/connection_transport.hpp"
#include "daqx/pt/frame_assembler.hpp"
#include "ring.hpp"
#include "settings.hpp"
#include "wire.hpp"

namespace daqx::ptshm {

// A mapping of a peer's memory (a chunk, or a connection's segment), unmapped when destroyed.
struct Mapping {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  Mapping() = default;
  Mapping(std::byte* b, std::size_t n) : base(b), bytes(n) {}
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  ~Mapping();
};

// ptshm's own counts, beside those every transport keeps.
struct ShmCounters : CounterSet {
  Counter frames_copied{*this, "frames_copied",
                        "frames copied into the transport's shared pool because their blocks were not in shared memory"};
  Counter copy_pool_waits{*this, "copy_pool_waits", "times a frame waited for the copy pool"};
  Counter chunks_mapped{*this, "chunks_mapped", "peers' chunks mapped (once per chunk and connection)"};
  Counter returns_dropped{*this, "returns_dropped", "block returns that found no room (a peer that broke the ring protocol)"};
  Counter wakeups_sent{*this, "wakeups_sent", "eventfd writes to a peer that had said it sleeps"};
  Counter frames_packed{*this, "frames_packed",
                        "small frames copied into packs in throughput mode (one reference and one return per pack)"};
  Counter chunks_passed_on{*this, "chunks_passed_on",
                           "peers' chunks announced to other peers, so that blocks received in them go on by reference"};
  Counter pass_on_waits{*this, "pass_on_waits",
                        "frames of peers' blocks copied while their chunk's memfd was on its way from that peer"};
  Counter pass_on_limited{*this, "pass_on_limited",
                          "frames of peers' blocks copied because their connection held passOnBlocks of them"};
  Counter chunk_requests_answered{*this, "chunk_requests_answered",
                                  "chunks' memfds sent again to a receiver that passes blocks of them on"};
  Counter chunk_memfds_received{*this, "chunk_memfds_received",
                                "peers' chunks' memfds received again, to pass their blocks on"};
};

class ShmTransport final : public pt::ConnectionTransport, private mem::ForeignRelease {
 public:
  explicit ShmTransport(TransportHost& host);
  ~ShmTransport() override;
  void listen(const EndpointAddress& local) override;

 private:
  // One shared chunk of this executive's pools, by id (the registrar's table; ids are never reused).
  struct SharedChunk {
    std::byte* base = nullptr;  // null once deregistered
    std::size_t bytes = 0;
    int fd = -1;  // our duplicate of the pool's memfd, passed to peers
  };
  static constexpr std::size_t kMaxSharedChunks = kMaxChunks;

  // What lets descriptors reported by a waiter name their connection and what they are.
  struct Tag {
    void* connection = nullptr;
    enum Kind { socket, wake } kind = socket;
  };

  // A frame on the ring, kept until the receiver gave back every block of it.
  struct Slot {
    mem::Ref frame;
    std::uint32_t outstanding = 0;  // blocks not given back yet
    std::uint32_t peer_blocks = 0;  // of them, blocks of a peer's chunk (passed on)
  };

  struct Outgoing : pt::OutgoingConnection {
    using OutgoingConnection::OutgoingConnection;
    sockaddr_un address{};
    socklen_t address_length = 0;
    int socket = -1;
    int frames_wake = -1;   // we write it when the receiver sleeps
    int returns_wake = -1;  // the receiver writes it when we sleep
    Mapping segment;
    RingProducer<FrameEntry> frames;
    RingConsumer<ReturnEntry> returns;
    std::vector<Slot> slots;
    std::vector<std::uint32_t> free_slots;
    std::size_t blocks_in_flight = 0;  // on the ring or held by the receiver: at most ring_entries
    std::size_t peer_blocks_in_flight = 0;  // of them, peers' blocks passed on: at most passOnBlocks
    std::size_t announced = 0;         // chunk ids below this are known to the receiver
    std::atomic<std::uint64_t> frames_copied{0};
    std::vector<bool> chunk_sent_again;  // chunk ids the receiver asked for (once each); send thread
    std::uint64_t frames_seen_by_reaper = 0;  // send thread: counters.frames_sent at its last look (reap_send)
    std::size_t pumps_since_returns = 0;      // posting threads, under mutex (pump)
    std::size_t bytes_since_returns = 0;      // put on the ring since that look; the same
    Tag socket_tag{this, Tag::socket};
    Tag wake_tag{this, Tag::wake};
  };

  struct ReturnPath;
  // A peer's chunk mapped here. Blocks received in it carry `registration` (Block::key), whose slot of this
  // transport points back here: an application that sends such a block on over ptshm (a BU's record to a
  // monitor) has it go by reference, the chunk being announced to the next peer as one of ours (pass_on). Its
  // memfd is not kept from the announcement (a descriptor per chunk and peer, most never passed on): the first
  // block passed on asks the peer for it once more, and is copied meanwhile. The receive thread makes it
  // (take_chunk); it lives as long as its mapping (unmap_if_done).
  struct PeerChunk {
    enum class Memfd : std::uint8_t { not_asked, asked, here, refused };
    ReturnPath* path = nullptr;
    std::uint32_t id = 0;  // the peer's
    std::byte* base = nullptr;
    std::size_t bytes = 0;
    // Where its memfd is; `fd` holds it while `here` until pass_on moves it into chunks_. Under the path's mutex.
    Memfd memfd = Memfd::not_asked;
    int fd = -1;
    mem::Chunk registration;
    // Its id in chunks_ plus one once passed on; kNeverPassedOn when it cannot be. Set under chunks_mutex_.
    std::atomic<std::uint32_t> passed_on{0};
    PeerChunk() = default;
    PeerChunk(const PeerChunk&) = delete;
    PeerChunk& operator=(const PeerChunk&) = delete;
    ~PeerChunk();
  };
  static constexpr std::uint32_t kNeverPassedOn = ~std::uint32_t{0};

  // The way back for the blocks of one incoming connection: any application thread that releases one of them
  // writes its token into the returns ring, under the path's mutex (the ring has one producer at a time). It
  // outlives its connection while applications hold blocks: the peer's memory stays mapped until the last one
  // is released.
  struct ReturnPath {
    std::mutex mutex;
    std::uint16_t generation = 0;
    bool open = false;
    // Blocks out with applications: raised by the receive thread for each block it hands out (no lock: the path
    // is open then), lowered under the mutex by whoever releases one.
    std::atomic<std::size_t> outstanding{0};
    bool unpublished = false;  // returns written by the receive thread and not yet made visible (see released)
    RingProducer<ReturnEntry> returns;
    int returns_wake = -1;
    int socket = -1;  // the connection's, while it is open: chunk requests go on it (pass_on)
    std::vector<Mapping> chunks;  // the peer's chunks by id (receive thread adds, under the mutex)
    std::vector<std::unique_ptr<PeerChunk>> peer_chunks;  // the same ids: what passes them on
    Mapping segment;
  };
  static constexpr std::size_t kMaxPaths = 65535;

  struct Incoming : pt::IncomingConnection {
    int socket = -1;
    int frames_wake = -1;
    bool hello = false;
    std::uint32_t ring_entries = 0;  // of the peer's rings: no frame has more blocks
    std::uint32_t path = 0;          // index in paths_
    ReturnPath* return_path = nullptr;
    RingConsumer<FrameEntry> frames;
    mem::Ref partial;  // blocks of the frame being assembled
    pt::FrameAssembler packs;  // packs (kPacked) cut into their frames, views of the pack's block
    std::size_t partial_blocks = 0;
    std::size_t partial_bytes = 0;
    bool waiting_for_pool = false;
    Tag socket_tag{this, Tag::socket};
    Tag wake_tag{this, Tag::wake};
  };

  // Registrar.
  std::string register_chunk(std::byte* base, std::size_t bytes, mem::RegistrationKey& key);
  void deregister_chunk(const mem::RegistrationKey& key) noexcept;

  // Outgoing (pt::ConnectionTransport).
  std::unique_ptr<pt::OutgoingConnection> make_outgoing(const EndpointAddress& remote) override;
  void start_connect(pt::OutgoingConnection& c) override;
  std::string open_link(Outgoing& c);
  void pump(pt::OutgoingConnection& c) noexcept override;
  // Frames whose blocks are not all in shared memory are copied into the copy pool; empty when it is dry.
  mem::Ref shared_copy(const mem::Ref& frame) noexcept;
  // Throughput mode: a frame of one block of at most kPackFrameMax bytes goes in a pack (unless it says send_now).
  bool packable(const mem::Ref& frame) const noexcept;
  // A block of the copy pool holding the packable frames at the front of the queue, back to back (they are
  // popped: their blocks go back); empty when the copy pool has none now. `frames` says how many it holds.
  mem::Ref make_pack(Outgoing& c, std::uint64_t& frames) noexcept;
  static constexpr std::size_t kPackFrameMax = 1024;      // larger frames go by reference: copying them costs more
  static constexpr std::size_t kPackBlockMax = 64 * 1024;  // a pack's block (packSize if smaller)
  // What the send path needs of a frame's chain, from one walk: all blocks in shared memory, how many, and the
  // highest chunk id among them (announced to the peer before the frame).
  struct ChainFacts {
    bool shared = true;
    std::size_t blocks = 0;
    std::size_t peer_blocks = 0;  // blocks of peers' chunks (passed on)
    bool waiting = false;         // one in a peer's chunk whose memfd is on its way: not shared yet
    std::size_t highest_chunk = 0;
  };
  ChainFacts chain_facts(const mem::Ref& frame) noexcept;
  // The chunk of ours a block is in, or null when no peer can map it (the heap, a full table): one of our pools'
  // (the registrar's), or a peer's chunk, announced as ours from its first block passed on (pass_on).
  const SharedChunk* shared_chunk_of(const mem::Block& block, std::size_t& id, bool& peer, bool& waiting) noexcept;
  const SharedChunk* pass_on(PeerChunk& chunk, std::size_t& id, bool& waiting) noexcept;
  // Send thread, under c's mutex: the receiver asks for chunk memfds again; false (with error) for a request
  // that is not one.
  bool answer_requests(Outgoing& c, std::string& error) noexcept;
  std::string announce_chunks(Outgoing& c, std::size_t up_to) noexcept;
  std::size_t close_link(pt::OutgoingConnection& c) noexcept override;
  void on_send_ready(void* tag, std::uint32_t events) override;
  bool reap_send() override;
  // Under c.mutex: blocks given back; false (with error) when the peer gave back what it did not have.
  bool take_returns(Outgoing& c, bool& any, std::string& error) noexcept;
  SleepCheck ready_to_sleep_send() override;
  void outgoing_metrics(const pt::OutgoingConnection& c, std::vector<Metric>& metrics) const override;

  // Incoming.
  void on_receive_ready(void* tag, std::uint32_t events) override;
  void accept_connections();
  // Reads the socket's messages (hello, chunks); false when the connection was closed.
  bool read_messages(Incoming& c);
  bool take_hello(Incoming& c, const HelloMessage& hello, const int* fds);
  bool take_chunk(Incoming& c, const ChunkMessage& chunk, int& fd);  // may keep fd (then sets it to -1)
  // Reads the ring and delivers; true when it took any entry.
  bool serve(Incoming& c);
  // Delivers the frames of the packs taken so far; false when it must stop (busy, no view, closed).
  bool deliver_packed(Incoming& c);
  bool reap_receive() override;
  SleepCheck ready_to_sleep_receive() override;
  void close_wire(pt::IncomingConnection& c) noexcept override;
  void delivery_paused(pt::IncomingConnection& c) override;
  void resume_wire(pt::IncomingConnection& c) override;
  void receive_housekeeping(Clock::time_point now) override;
  void receive_round_done() noexcept override;
  void stop_endpoints() noexcept override;
  void report_wire(MetricSink& sink) const override;
  ReturnPath* open_path(std::uint32_t& index);
  // Under the path's mutex: once it is closed and nothing of it is out, its mappings go, and the chunks of it we
  // passed on are no longer announced.
  void unmap_if_done(ReturnPath& path) noexcept;

  // mem::ForeignRelease: an application released a block of a peer (any thread).
  void released(std::uint64_t token) noexcept override;
  // Under the path's mutex: makes the returns written so far visible to the sender, waking it if it sleeps.
  void publish_returns(ReturnPath& path) noexcept;

  Settings settings_;
  std::size_t pack_bytes_ = 0;  // packSize: a pack's most bytes
  mem::Pool* receive_pool_ = nullptr;  // descriptors of peers' blocks
  mem::Pool* copy_pool_ = nullptr;     // shared memory, for frames that are not
  EndpointAddress local_;
  int listen_fd_ = -1;

  std::mutex chunks_mutex_;  // registration (rare); the send path reads ids below chunk_count_ without it
  std::unique_ptr<SharedChunk[]> chunks_;
  std::atomic<std::size_t> chunk_count_{0};

  std::unique_ptr<std::unique_ptr<ReturnPath>[]> paths_;
  std::size_t path_count_ = 0;  // receive thread
  // Receive thread: paths with returns written during this round (by handlers run inline) and published at its end.
  std::vector<ReturnPath*> unpublished_paths_;

  std::atomic<bool> copy_pool_waiting_{false};
  ShmCounters shm_counters_;
};

}  // namespace daqx::ptshm
