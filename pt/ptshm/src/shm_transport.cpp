// ptshm implementation: the shared-chunk registrar, connection set-up over a Unix socket, frames by reference
// through the rings, every check of what the peer wrote, and the return of blocks from any thread.
#include "shm_transport.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

#include "daqx/mempool/allocator.hpp"
#include "daqx/pt/socket_address.hpp"

namespace daqx::ptshm {
namespace {

using pt::errno_text;
using State = pt::OutgoingConnection::State;
constexpr std::uint64_t kEntriesPerRound = 256;  // then let other connections have the thread
constexpr std::size_t kReturnsEvery = 64;         // posts between two looks at the returns ring (pump),
constexpr std::size_t kReturnBytesEvery = 4u << 20;  // or bytes posted, whichever comes first

// The transport whose receive thread is in a round on this thread (see ShmTransport::released), else null.
thread_local const void* returns_deferred_by = nullptr;

void close_fd(int& fd) noexcept {
  if (fd >= 0) close(fd);
  fd = -1;
}

void wake(int fd) noexcept {
  if (fd < 0) return;
  const std::uint64_t one = 1;
  // A full eventfd (never here: it is read on every wake-up) would only mean the sleeper is already woken.
  [[maybe_unused]] ssize_t written = write(fd, &one, sizeof one);
}

void drain(int fd) noexcept {
  std::uint64_t count = 0;
  [[maybe_unused]] ssize_t got = read(fd, &count, sizeof count);
}

std::byte* map_shared(int fd, std::size_t bytes) noexcept {
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return memory == MAP_FAILED ? nullptr : static_cast<std::byte*>(memory);
}

// The token a peer's block carries in our receive pool: which return path (index and generation) and the
// sender's slot.
std::uint64_t make_token(std::uint32_t path, std::uint16_t generation, std::uint32_t slot) noexcept {
  return (static_cast<std::uint64_t>(generation) << 48) | (static_cast<std::uint64_t>(path & 0xffff) << 32) | slot;
}

}  // namespace

// ---- Mapping ----------------------------------------------------------------------------------------------

Mapping::Mapping(Mapping&& other) noexcept
    : base(std::exchange(other.base, nullptr)), bytes(std::exchange(other.bytes, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (base != nullptr) munmap(base, bytes);
    base = std::exchange(other.base, nullptr);
    bytes = std::exchange(other.bytes, 0);
  }
  return *this;
}

Mapping::~Mapping() {
  if (base != nullptr) munmap(base, bytes);
}

ShmTransport::PeerChunk::~PeerChunk() { close_fd(fd); }

// ---- life cycle -------------------------------------------------------------------------------------------

ShmTransport::ShmTransport(TransportHost& host)
    : ConnectionTransport(host, &ptshm::describe),
      settings_(Settings::from(host.params())),
      pack_bytes_(connection_settings().pack_bytes),
      chunks_(new SharedChunk[kMaxSharedChunks]),
      paths_(new std::unique_ptr<ReturnPath>[kMaxPaths]) {
  // Every shared chunk of the executive gets an id and keeps its memfd here, now and when pools grow.
  register_memory(std::make_unique<pt::CountingRegistrar>(
      "ptshm",
      [this](std::byte* base, std::size_t bytes, mem::RegistrationKey& key) {
        return register_chunk(base, bytes, key);
      },
      [this](const mem::RegistrationKey& key) { deregister_chunk(key); }));
  // Received frames are descriptors over the peers' memory (Pool::wrap_foreign): no memory of our own but one
  // small class (a pool needs one).
  mem::PoolConfig descriptors = mem::PoolConfig::geometric("recv", 64, 64, 64, 64);
  descriptors.views = settings_.receive_descriptors;
  receive_pool_ = &this->host().make_pool("recv", descriptors);
  unpublished_paths_.reserve(256);  // no allocation in released() for up to 256 incoming connections
  receive_pool_->set_foreign_release(this);
  receive_pool_->on_available([this] { request_resume(); });
  // Frames from pools that are not shared are copied here (counted), so that they can go all the same.
  copy_pool_ = &this->host().make_pool("copy", copy_pool_config(settings_));
  copy_pool_->on_available([this] {
    copy_pool_waiting_.store(false, std::memory_order_relaxed);
    request_attention();
  });
  start_threads();
}

ShmTransport::~ShmTransport() {
  receive_pool_->set_foreign_release(nullptr);
  // Peers' memory that applications still hold stays mapped (and is lost with the process) rather than pulled
  // from under them.
  for (std::size_t i = 0; i < path_count_; ++i) {
    ReturnPath& path = *paths_[i];
    std::lock_guard lock(path.mutex);
    if (path.outstanding.load() == 0) continue;
    for (Mapping& chunk : path.chunks) chunk.base = nullptr;
    // The blocks out point at their chunks' registration records (Block::key): those stay too, for as long as
    // the process (as the mappings do).
    static std::mutex kept_mutex;
    static std::vector<std::unique_ptr<PeerChunk>> kept;
    std::lock_guard keep(kept_mutex);
    for (auto& chunk : path.peer_chunks)
      if (chunk) kept.push_back(std::move(chunk));
    path.segment.base = nullptr;
  }
  for (std::size_t id = 0; id < chunk_count_.load(); ++id) close_fd(chunks_[id].fd);
}

void ShmTransport::listen(const EndpointAddress& local) {
  local_ = local;
  socklen_t length = 0;
  sockaddr_un address = endpoint_socket_address(local.hostname, local.port, length);
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket: " + errno_text(errno));
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), length) != 0)
    throw std::runtime_error("bind to the shm endpoint " + local.text() + " (abstract socket @" +
                             std::string(address.sun_path + 1, length - offsetof(sockaddr_un, sun_path) - 1) +
                             "): " + errno_text(errno));
  if (::listen(listen_fd_, 256) != 0) throw std::runtime_error("listen: " + errno_text(errno));
  receive_waiter().add(listen_fd_, &listen_fd_);
}

void ShmTransport::stop_endpoints() noexcept {
  if (listen_fd_ < 0) return;
  receive_waiter().remove(listen_fd_);
  close_fd(listen_fd_);
}

// ---- registrar --------------------------------------------------------------------------------------------

std::string ShmTransport::register_chunk(std::byte* base, std::size_t bytes, mem::RegistrationKey& key) {
  // Chunks that are not in shared memory are accepted and left without a key: frames in them are copied.
  const int fd = mem::shared_memory_fd(base);
  if (fd < 0) return {};
  std::lock_guard lock(chunks_mutex_);
  const std::size_t id = chunk_count_.load(std::memory_order_relaxed);
  if (id >= kMaxSharedChunks) {
    host().log(LogLevel::warning,
               "more than " + std::to_string(kMaxSharedChunks) + " shared chunks: frames in the others are copied");
    return {};
  }
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return "dup of a chunk's memfd: " + errno_text(errno);
  chunks_[id] = SharedChunk{base, bytes, copy};
  key.handle = &chunks_[id];
  key.key = id;
  chunk_count_.store(id + 1, std::memory_order_release);
  return {};
}

void ShmTransport::deregister_chunk(const mem::RegistrationKey& key) noexcept {
  std::lock_guard lock(chunks_mutex_);
  auto* chunk = static_cast<SharedChunk*>(key.handle);
  close_fd(chunk->fd);
  chunk->base = nullptr;  // never announced again; peers that mapped it keep their mapping
}

ShmTransport::ChainFacts ShmTransport::chain_facts(const mem::Ref& frame) noexcept {
  ChainFacts facts;
  for (const mem::Block* block = frame.head(); block != nullptr; block = block->next()) {
    std::size_t id = 0;
    bool peer = false, waiting = false;
    if (shared_chunk_of(*block, id, peer, waiting) == nullptr) facts.shared = false;
    facts.highest_chunk = std::max(facts.highest_chunk, id);
    facts.peer_blocks += peer ? 1 : 0;
    facts.waiting = facts.waiting || waiting;
    ++facts.blocks;
  }
  return facts;
}

const ShmTransport::SharedChunk* ShmTransport::shared_chunk_of(const mem::Block& block, std::size_t& id,
                                                               bool& peer, bool& waiting) noexcept {
  const mem::RegistrationKey& key = block.key(registration_slot());
  peer = false;
  if (key.handle != nullptr) {  // our own pools' memory
    id = key.key;
    return static_cast<const SharedChunk*>(key.handle);
  }
  if (key.descriptor == nullptr) return nullptr;  // memory no peer can map
  peer = true;
  auto& chunk = *static_cast<PeerChunk*>(key.descriptor);
  const std::uint32_t passed = chunk.passed_on.load(std::memory_order_acquire);
  if (passed == 0) return pass_on(chunk, id, waiting);
  if (passed == kNeverPassedOn) return nullptr;
  id = passed - 1;
  return &chunks_[id];
}

const ShmTransport::SharedChunk* ShmTransport::pass_on(PeerChunk& chunk, std::size_t& id, bool& waiting) noexcept {
  // The block being passed on keeps its path and this record (outstanding > 0). First its memfd, from the peer.
  using Memfd = PeerChunk::Memfd;
  int fd = -1;
  bool refused = false;
  {
    std::lock_guard lock(chunk.path->mutex);
    if (chunk.memfd == Memfd::not_asked) {
      ChunkRequest request;
      request.id = chunk.id;
      const bool sent = chunk.path->socket >= 0 &&
                        send_message(chunk.path->socket, &request, sizeof request, nullptr, 0).empty();
      chunk.memfd = sent ? Memfd::asked : Memfd::refused;  // a peer gone (or its socket full): copied for good
    }
    if (chunk.memfd == Memfd::asked) {
      waiting = true;  // this frame is copied; the answer comes to the receive thread (take_chunk)
      return nullptr;
    }
    refused = chunk.memfd == Memfd::refused;
    fd = std::exchange(chunk.fd, -1);  // here: ours to give to the table (-1: another thread took it just now)
  }
  std::lock_guard lock(chunks_mutex_);
  std::uint32_t passed = chunk.passed_on.load(std::memory_order_relaxed);
  if (passed == 0 && fd < 0 && !refused) {
    waiting = true;  // the thread that took the memfd is about to enter it
    return nullptr;
  }
  if (passed == 0) {
    const std::size_t next = chunk_count_.load(std::memory_order_relaxed);
    // Ids are never reused (a peer keeps its mapping under an id): a peer's chunk takes one for as long as we run.
    if (fd >= 0 && next < kMaxSharedChunks) {
      chunks_[next] = SharedChunk{chunk.base, chunk.bytes, std::exchange(fd, -1)};
      chunk_count_.store(next + 1, std::memory_order_release);
      passed = static_cast<std::uint32_t>(next + 1);
      shm_counters_.chunks_passed_on.add();
    } else {
      passed = kNeverPassedOn;  // its blocks are copied, and counted in frames_copied
      if (next >= kMaxSharedChunks)
        host().log(LogLevel::warning, "more than " + std::to_string(kMaxSharedChunks) +
                                          " shared chunks: frames in a peer's chunk are copied");
    }
    chunk.passed_on.store(passed, std::memory_order_release);
  }
  close_fd(fd);
  if (passed == kNeverPassedOn) return nullptr;
  id = passed - 1;
  return &chunks_[id];
}

bool ShmTransport::answer_requests(Outgoing& c, std::string& error) noexcept {
  for (;;) {
    union {
      ChunkRequest request;
      std::byte raw[64];
    } message{};
    int fds[1];
    const long got = receive_message(c.socket, &message, sizeof message, fds, 1, error);
    close_fd(fds[0]);  // a request carries none
    if (got == -1) return true;  // nothing more now
    if (got == 0) {
      error = "closed by the peer";
      return false;
    }
    if (got < 0) return false;
    if (got != sizeof(ChunkRequest) || message.request.magic != kChunkRequestMagic) {
      error = "the receiver sent a message that is not a chunk request";
      return false;
    }
    const std::uint32_t id = message.request.id;
    if (id >= c.announced || (id < c.chunk_sent_again.size() && c.chunk_sent_again[id])) {
      error = "the receiver asked for chunk " + std::to_string(id) + " (announced: " + std::to_string(c.announced) +
              ", each at most once)";
      return false;
    }
    if (c.chunk_sent_again.size() <= id) c.chunk_sent_again.resize(id + 1);
    c.chunk_sent_again[id] = true;
    std::lock_guard lock(chunks_mutex_);
    const SharedChunk& chunk = chunks_[id];
    if (chunk.base == nullptr || chunk.fd < 0) continue;  // gone since: the receiver copies its blocks
    ChunkMessage answer;
    answer.id = id;
    answer.bytes = chunk.bytes;
    // Unanswered (the socket full), the receiver copies that chunk's blocks: nothing else depends on it.
    if (send_message(c.socket, &answer, sizeof answer, &chunk.fd, 1).empty()) shm_counters_.chunk_requests_answered.add();
  }
}

mem::Ref ShmTransport::shared_copy(const mem::Ref& frame) noexcept {
  mem::Ref copy = copy_pool_->allocate_chain(frame.total_size());
  if (!copy) return copy;
  mem::Block* to = copy.head();
  std::size_t to_at = 0;
  for (const mem::Block* from = frame.head(); from != nullptr; from = from->next()) {
    std::size_t from_at = 0;
    while (from_at < from->size()) {
      if (to_at == to->size()) {
        to = to->next();
        to_at = 0;
      }
      const std::size_t piece = std::min(from->size() - from_at, to->size() - to_at);
      std::memcpy(to->data() + to_at, from->data() + from_at, piece);
      from_at += piece;
      to_at += piece;
    }
  }
  return copy;
}

bool ShmTransport::packable(const mem::Ref& frame) const noexcept {
  if (frame.size() > kPackFrameMax || frame.head()->next() != nullptr) return false;
  // The application's transportMode (header flags) overrides the endpoint's mode, as for every coalescing transport.
  const auto flags = static_cast<std::uint8_t>(frame.data()[frame_offset::flags]);
  return (flags & frame_flags::coalesce) != 0 ||
         (connection_settings().throughput_mode && (flags & frame_flags::send_now) == 0);
}

mem::Ref ShmTransport::make_pack(Outgoing& c, std::uint64_t& frames) noexcept {
  // At least one frame's room, whatever packSize says.
  const std::size_t capacity = std::max(std::min(pack_bytes_, kPackBlockMax), kPackFrameMax);
  mem::Ref pack = copy_pool_->allocate(capacity);
  if (!pack) return pack;
  std::size_t used = 0;
  frames = 0;
  while (!c.queue.empty() && packable(c.queue.front()) && used + c.queue.front().size() <= capacity) {
    const mem::Ref& frame = c.queue.front();
    std::memcpy(pack.data() + used, frame.data(), frame.size());
    used += frame.size();
    ++frames;
    c.pop_front();  // copied: its block goes back to its pool now
  }
  pack.resize(used);
  return pack;
}

// ---- send side --------------------------------------------------------------------------------------------

std::unique_ptr<pt::OutgoingConnection> ShmTransport::make_outgoing(const EndpointAddress& remote) {
  auto c = std::make_unique<Outgoing>(connection_settings().send_queue);
  c->address = endpoint_socket_address(remote.hostname, remote.port, c->address_length);
  c->slots.resize(settings_.ring_entries);
  c->free_slots.reserve(settings_.ring_entries);
  return c;
}

void ShmTransport::start_connect(pt::OutgoingConnection& base) {
  auto& c = static_cast<Outgoing&>(base);
  std::string error = open_link(c);
  if (!error.empty()) {
    teardown(c, error);
    return;
  }
  connection_up(c);
}

std::string ShmTransport::open_link(Outgoing& c) {
  c.socket = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.socket < 0) return "socket: " + errno_text(errno);
  if (::connect(c.socket, reinterpret_cast<sockaddr*>(&c.address), c.address_length) != 0)
    return "connect: " + errno_text(errno);
  // The connection's segment: made by the sender, sealed at its size, mapped by both.
  const SegmentLayout layout = SegmentLayout::of(settings_.ring_entries);
  int segment = memfd_create("daqx-shm-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (segment < 0) return "memfd_create: " + errno_text(errno);
  if (ftruncate(segment, static_cast<off_t>(layout.bytes)) != 0 ||
      fcntl(segment, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    std::string error = "segment of " + std::to_string(layout.bytes) + " B: " + errno_text(errno);
    close(segment);
    return error;
  }
  std::byte* memory = map_shared(segment, layout.bytes);
  if (memory == nullptr) {
    close(segment);
    return "mmap of the segment: " + errno_text(errno);
  }
  c.segment = Mapping(memory, layout.bytes);
  auto* header = new (memory) SegmentHeader{};
  header->ring_entries = settings_.ring_entries;
  c.frames = RingProducer<FrameEntry>(&header->frames, reinterpret_cast<FrameEntry*>(memory + layout.frames_at),
                                      settings_.ring_entries);
  c.returns = RingConsumer<ReturnEntry>(&header->returns, reinterpret_cast<ReturnEntry*>(memory + layout.returns_at),
                                        settings_.ring_entries);
  c.frames_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  c.returns_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (c.frames_wake < 0 || c.returns_wake < 0) {
    close(segment);
    return "eventfd: " + errno_text(errno);
  }
  HelloMessage hello;
  hello.ring_entries = settings_.ring_entries;
  hello.pid = static_cast<std::uint32_t>(getpid());
  hello.segment_bytes = layout.bytes;
  const int fds[3] = {segment, c.frames_wake, c.returns_wake};
  std::string error = send_message(c.socket, &hello, sizeof hello, fds, 3);
  close(segment);  // the mapping and the peer keep it
  if (!error.empty()) return error;
  c.free_slots.clear();
  for (std::size_t slot = settings_.ring_entries; slot-- > 0;) c.free_slots.push_back(static_cast<std::uint32_t>(slot));
  c.blocks_in_flight = 0;
  c.announced = 0;
  // Readable: a chunk request (answer_requests), or the peer has gone.
  send_waiter().add(c.socket, &c.socket_tag, EPOLLIN | EPOLLRDHUP);
  send_waiter().add(c.returns_wake, &c.wake_tag, EPOLLIN);
  // Every chunk there is now; those made later go before the first frame in them.
  return announce_chunks(c, chunk_count_.load(std::memory_order_acquire));
}

std::string ShmTransport::announce_chunks(Outgoing& c, std::size_t up_to) noexcept {
  // Under the table's lock: a peer's chunk we passed on is retired (its memfd closed) when its path unmaps.
  std::lock_guard lock(chunks_mutex_);
  for (; c.announced < up_to; ++c.announced) {
    const SharedChunk& chunk = chunks_[c.announced];
    if (chunk.base == nullptr || chunk.fd < 0) continue;
    ChunkMessage message;
    message.id = static_cast<std::uint32_t>(c.announced);
    message.bytes = chunk.bytes;
    std::string error = send_message(c.socket, &message, sizeof message, &chunk.fd, 1);
    if (!error.empty()) return "announcing chunk " + std::to_string(c.announced) + ": " + error;
  }
  return {};
}

std::size_t ShmTransport::close_link(pt::OutgoingConnection& base) noexcept {
  auto& c = static_cast<Outgoing&>(base);
  if (c.socket >= 0) send_waiter().remove(c.socket);
  if (c.returns_wake >= 0) send_waiter().remove(c.returns_wake);
  close_fd(c.socket);
  close_fd(c.returns_wake);
  close_fd(c.frames_wake);
  c.frames = {};
  c.returns = {};
  c.segment = Mapping{};
  // The frames the peer held come back to their pools: after a teardown nobody gives them back.
  for (Slot& slot : c.slots) {
    slot.frame.reset();
    slot.outstanding = 0;
    slot.peer_blocks = 0;
  }
  c.free_slots.clear();
  c.blocks_in_flight = 0;
  c.peer_blocks_in_flight = 0;
  c.announced = 0;
  c.chunk_sent_again.clear();
  return 0;
}

void ShmTransport::pump(pt::OutgoingConnection& base) noexcept {
  auto& c = static_cast<Outgoing&>(base);
  if (c.state != State::up || !c.failure.empty() || !c.frames || c.queue.empty()) return;
  std::optional<std::uint64_t> room = c.frames.room();
  if (!room) {
    c.failure = "the peer's frames ring has an impossible head";
    request_attention(c);
    return;
  }
  // Blocks the receiver gave back are taken here, on the posting thread, every kReturnsEvery posts or
  // kReturnBytesEvery bytes (a look at the returns ring costs two cache lines the receiver writes; a pool
  // class of large blocks has few of them: 64 of 1 MiB in an application's pool) or when the ring or the slots
  // run short: their descriptors are this thread's own again (it allocates the next frames from them) instead
  // of being released by the send thread, maybe on the other core, and the send thread leaves the connection
  // alone while frames are posted (reap_send).
  if (++c.pumps_since_returns >= kReturnsEvery || c.bytes_since_returns >= kReturnBytesEvery ||
      c.free_slots.size() < kReturnsEvery || c.blocks_in_flight + kReturnsEvery > settings_.ring_entries) {
    c.pumps_since_returns = 0;
    c.bytes_since_returns = 0;
    bool returned = false;
    if (!take_returns(c, returned, c.failure)) {
      request_attention(c);
      return;
    }
  }
  std::uint64_t frames_put = 0;  // counted once for the lot
  std::uint64_t bytes_put = 0;
  // Puts a frame of `facts` on the ring under a free slot (the caller checked the room); the slot keeps it.
  auto put_on_ring = [&](mem::Ref&& frame, const ChainFacts& facts, std::uint32_t flags) {
    const std::uint32_t slot = c.free_slots.back();
    c.free_slots.pop_back();
    for (const mem::Block* block = frame.head(); block != nullptr; block = block->next()) {
      // chain_facts found every block's chunk (facts.shared): known now, no lock, no lookup.
      std::size_t id = 0;
      bool peer = false, waiting = false;
      static_cast<void>(shared_chunk_of(*block, id, peer, waiting));
      FrameEntry entry;
      entry.chunk = static_cast<std::uint32_t>(id);
      entry.flags = block->next() == nullptr ? kLastBlock | flags : 0;
      entry.offset = static_cast<std::uint64_t>(block->data() - chunks_[id].base);
      entry.length = static_cast<std::uint32_t>(block->size());
      entry.token = slot;
      c.frames.write(entry);
    }
    *room -= facts.blocks;
    c.blocks_in_flight += facts.blocks;
    c.peer_blocks_in_flight += facts.peer_blocks;
    c.slots[slot].outstanding = static_cast<std::uint32_t>(facts.blocks);
    c.slots[slot].peer_blocks = static_cast<std::uint32_t>(facts.peer_blocks);
    c.slots[slot].frame = std::move(frame);
  };
  auto announced = [&](const ChainFacts& facts) {
    if (facts.highest_chunk < c.announced) return true;
    std::string error = announce_chunks(c, chunk_count_.load(std::memory_order_acquire));
    if (error.empty()) return true;
    c.failure = error;
    request_attention(c);
    return false;
  };
  while (!c.queue.empty()) {
    const bool ring_has_room = *room > 0 && !c.free_slots.empty() && c.blocks_in_flight < settings_.ring_entries;
    if (packable(c.queue.front())) {
      // Throughput: small frames are copied together into one block of the copy pool and go as one reference
      // (one ring entry, one return for the lot); their own blocks go back to their pools at once. Held first,
      // as on any coalescing transport, until a pack's worth is queued or the pack timeout has passed.
      if (hold_for_packing(c, c.queued_bytes, pack_bytes_) || !ring_has_room) break;
      std::uint64_t frames = 0;
      mem::Ref pack = make_pack(c, frames);
      if (pack) {
        const ChainFacts facts = chain_facts(pack);
        if (!announced(facts)) break;  // the frames are lost with the connection, as any queued ones
        const std::size_t bytes = pack.total_size();
        put_on_ring(std::move(pack), facts, kPacked);
        c.bytes_since_returns += bytes;
        frames_put += frames;
        bytes_put += bytes;
        shm_counters_.frames_packed.add(frames);
        continue;
      }
      shm_counters_.copy_pool_waits.add();  // no block for a pack now: this frame goes by reference
    }
    mem::Ref& front = c.queue.front();
    // One walk of the chain per frame tells all the send path needs of it.
    ChainFacts facts = chain_facts(front);
    // Blocks received from a peer and passed on by reference keep that peer's memory until this receiver gives
    // them back: a slow or stopped receiver may hold passOnBlocks of them, so that it cannot take a third
    // context's pool away from it (a BU's records hold the RUs' blocks).
    const bool pass_on_full =
        facts.peer_blocks > 0 && c.peer_blocks_in_flight + facts.peer_blocks > settings_.pass_on_blocks;
    const bool waiting_for_memfd = facts.waiting;  // facts are of the copy below
    if (!facts.shared || facts.blocks > settings_.ring_entries || pass_on_full) {
      // From a pool that is not shared (the heap), of more blocks than the ring holds (a multipart message of
      // thousands of parts), or of a peer's blocks beyond passOnBlocks: copied once into ours (blocks of up to
      // 1 MiB), and counted, so zero copy is provable.
      mem::Ref copy = shared_copy(front);
      if (!copy) {
        shm_counters_.copy_pool_waits.add();
        copy_pool_waiting_.store(true, std::memory_order_relaxed);
        break;
      }
      front = std::move(copy);
      facts = chain_facts(front);
      c.frames_copied.fetch_add(1, std::memory_order_relaxed);
      shm_counters_.frames_copied.add();
      if (pass_on_full) shm_counters_.pass_on_limited.add();
      if (waiting_for_memfd) shm_counters_.pass_on_waits.add();
    }
    const std::size_t blocks = facts.blocks;
    if (blocks > settings_.ring_entries) {
      // Can never fit, even copied: lost, and counted as an error of the connection, as any frame the wire refuses.
      c.counters.send_errors.add(1);
      host().log(LogLevel::warning, "a frame of " + std::to_string(blocks) +
                                        " blocks cannot go over shm (ringEntries=" +
                                        std::to_string(settings_.ring_entries) + "): dropped");
      c.pop_front();
      continue;
    }
    if (blocks > *room || c.free_slots.empty() || c.blocks_in_flight + blocks > settings_.ring_entries) break;
    if (!announced(facts)) break;
    const std::size_t bytes = front.total_size();
    c.bytes_since_returns += bytes;
    put_on_ring(c.take_front(), facts, 0);
    ++frames_put;
    bytes_put += bytes;
  }
  c.flush_now = false;
  if (frames_put == 0) return;
  c.counters.frames_sent.add(frames_put);
  c.counters.bytes_sent.add(bytes_put);
  c.counters.messages_sent.add(1);
  // One system call only when the receiver said it sleeps.
  if (c.frames.publish()) {
    wake(c.frames_wake);
    shm_counters_.wakeups_sent.add();
  }
}

bool ShmTransport::take_returns(Outgoing& c, bool& any, std::string& error) noexcept {
  if (!c.returns) return true;
  const std::optional<std::uint64_t> ready = c.returns.available();
  if (!ready) {
    error = "the peer's returns ring has an impossible tail";
    return false;
  }
  for (std::uint64_t i = 0; i < *ready; ++i) {
    const ReturnEntry entry = c.returns.read(i);
    if (entry.token >= c.slots.size() || c.slots[entry.token].outstanding == 0) {
      error = "the peer gave back a block it did not hold (token " + std::to_string(entry.token) + ")";
      return false;
    }
    Slot& slot = c.slots[entry.token];
    --c.blocks_in_flight;
    if (--slot.outstanding == 0) {
      c.peer_blocks_in_flight -= slot.peer_blocks;
      slot.peer_blocks = 0;
      slot.frame.reset();  // every block of the frame is back: to its pool (a peer's: to that peer)
      c.free_slots.push_back(entry.token);
    }
  }
  c.returns.consume(*ready);
  c.returns.release();
  any = any || *ready > 0;
  return true;
}

bool ShmTransport::reap_send() {
  bool any = false;
  const bool copy_pool_back = !copy_pool_waiting_.load(std::memory_order_relaxed);
  for (std::size_t i = 0, n = outgoing_count(); i < n; ++i) {
    auto& c = static_cast<Outgoing&>(outgoing(static_cast<PeerId>(i)));
    // A thread that posted since the last look took the returns itself (pump): no lock to fight it for.
    // Once it stops posting the frame count stands still and this thread takes them (or sleeps, and the
    // receiver's next return wakes it).
    const std::uint64_t posted = c.counters.frames_sent.load();
    const bool posting = posted != c.frames_seen_by_reaper;
    c.frames_seen_by_reaper = posted;
    if (posting) continue;
    with_lock(c, [&] {
      if (c.state != State::up) return;
      bool returned = false;
      std::string error;
      if (!take_returns(c, returned, error)) {
        teardown(c, error);
        return;
      }
      any = any || returned;
      if ((returned || copy_pool_back) && !c.queue.empty()) pump(c);
    });
  }
  return any;
}

void ShmTransport::on_send_ready(void* tag, std::uint32_t) {
  auto* t = static_cast<Tag*>(tag);
  auto& c = *static_cast<Outgoing*>(t->connection);
  with_lock(c, [&] {
    if (c.state != State::up) return;
    if (t->kind == Tag::socket) {
      // The receiver writes only chunk requests to the socket; hung up means it has gone.
      std::string error;
      if (!answer_requests(c, error)) teardown(c, error);
      return;
    }
    drain(c.returns_wake);
    bool returned = false;
    std::string error;
    if (!take_returns(c, returned, error)) {
      teardown(c, error);
      return;
    }
    if (!c.queue.empty()) pump(c);
  });
}

pt::ConnectionTransport::SleepCheck ShmTransport::ready_to_sleep_send() {
  // Connections whose poster takes the returns raise the flag too: when the poster stops because its pool ran
  // dry, the next return must wake this thread at once (a timed look, say every millisecond, held 1 MiB frames
  // from a 64-block class to 64 per millisecond).
  for (std::size_t i = 0, n = outgoing_count(); i < n; ++i) {
    auto& c = static_cast<Outgoing&>(outgoing(static_cast<PeerId>(i)));
    std::lock_guard lock(c.mutex);
    if (c.state == State::up && c.returns && !c.returns.prepare_to_sleep()) return SleepCheck::look_again;
  }
  return SleepCheck::sleep;
}

void ShmTransport::outgoing_metrics(const pt::OutgoingConnection& base, std::vector<Metric>& metrics) const {
  const auto& c = static_cast<const Outgoing&>(base);
  metrics.push_back({"frames_copied",
                     Metric::Kind::counter,
                     static_cast<double>(c.frames_copied.load(std::memory_order_relaxed)),
                     "frames copied into shared memory (their pool was not shared)",
                     {}});
  metrics.push_back({"blocks_in_flight",
                     Metric::Kind::gauge,
                     static_cast<double>(c.blocks_in_flight),
                     "blocks on the ring or held by the receiver",
                     {}});
}

// ---- receive side -----------------------------------------------------------------------------------------

void ShmTransport::accept_connections() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        host().log(LogLevel::warning, "accept on " + local_.text() + ": " + errno_text(errno));
      return;
    }
    if (over_incoming_limit("a local peer")) {
      close(fd);  // before its hello is read or a segment mapped
      continue;
    }
    auto connection = std::make_unique<Incoming>();
    connection->packs = pt::FrameAssembler(connection_settings().max_frame_size);
    connection->socket = fd;
    connection->remote = "local peer";
    auto& c = static_cast<Incoming&>(adopt(std::move(connection)));
    receive_waiter().add(fd, &c.socket_tag, EPOLLIN | EPOLLRDHUP);
    read_messages(c);
  }
}

bool ShmTransport::read_messages(Incoming& c) {
  while (!c.closed) {
    union {
      HelloMessage hello;
      ChunkMessage chunk;
      std::byte raw[64];
    } message{};
    int fds[3];
    std::string error;
    const long got = receive_message(c.socket, &message, sizeof message, fds, 3, error);
    if (got == -1) return true;
    bool taken = false;
    if (got == 0) {
      close_incoming(c, "closed by the peer", c.partial_blocks > 0 ? pt::Ending::truncated : pt::Ending::normal);
    } else if (got < 0) {
      close_incoming(c, error, pt::Ending::bad);
    } else if (!c.hello) {
      if (got != sizeof(HelloMessage) || message.hello.magic != kHelloMagic) {
        close_incoming(c, "bad magic: the first message is not ptshm's hello", pt::Ending::bad);
      } else {
        taken = take_hello(c, message.hello, fds);
      }
    } else if (got != sizeof(ChunkMessage) || message.chunk.magic != kChunkMagic) {
      close_incoming(c, "bad magic: a message that is not a chunk announcement", pt::Ending::bad);
    } else {
      taken = take_chunk(c, message.chunk, fds[0]);
    }
    // Descriptors taken are kept by the take_ functions (set to -1 there); the rest are closed.
    for (int& fd : fds) close_fd(fd);
    if (!taken) return false;
  }
  return false;
}

bool ShmTransport::take_hello(Incoming& c, const HelloMessage& hello, const int* fds) {
  const std::uint32_t entries = hello.ring_entries;
  const SegmentLayout layout = SegmentLayout::of(entries);
  std::string problem;
  if (hello.version != 1) {
    problem = "hello of version " + std::to_string(hello.version) + " (this is 1)";
  } else if (entries < 64 || entries > (1u << 20) || (entries & (entries - 1)) != 0) {
    problem = "rings of " + std::to_string(entries) + " entries";
  } else if (hello.segment_bytes != layout.bytes || fds[0] < 0 || fds[1] < 0 || fds[2] < 0) {
    problem = "a hello without its segment or eventfds";
  } else if (!sealed_against_shrinking(fds[0]) || descriptor_size(fds[0]) < layout.bytes) {
    problem = "a segment that is not sealed at its size";
  }
  std::byte* memory = problem.empty() ? map_shared(fds[0], layout.bytes) : nullptr;
  if (problem.empty() && memory == nullptr) problem = "mmap of the segment: " + errno_text(errno);
  if (!problem.empty()) {
    close_incoming(c, "bad hello: " + problem, pt::Ending::bad);
    return false;
  }
  std::uint32_t index = 0;
  ReturnPath* path = open_path(index);
  if (path == nullptr) {
    munmap(memory, layout.bytes);
    close_incoming(c, "too many connections over the life of this transport", pt::Ending::bad);
    return false;
  }
  auto* header = reinterpret_cast<SegmentHeader*>(memory);
  {
    std::lock_guard lock(path->mutex);
    path->segment = Mapping(memory, layout.bytes);
    path->returns = RingProducer<ReturnEntry>(&header->returns,
                                              reinterpret_cast<ReturnEntry*>(memory + layout.returns_at), entries);
    path->returns_wake = fds[2];
    path->socket = c.socket;
    path->open = true;
  }
  const_cast<int*>(fds)[2] = -1;
  c.frames = RingConsumer<FrameEntry>(&header->frames, reinterpret_cast<const FrameEntry*>(memory + layout.frames_at),
                                      entries);
  c.frames_wake = fds[1];
  const_cast<int*>(fds)[1] = -1;
  c.path = index;
  c.ring_entries = entries;
  c.return_path = path;
  c.hello = true;
  c.remote = "pid " + std::to_string(hello.pid);
  receive_waiter().add(c.frames_wake, &c.wake_tag, EPOLLIN);
  incoming_up(c);
  return true;
}

bool ShmTransport::take_chunk(Incoming& c, const ChunkMessage& chunk, int& fd) {
  ReturnPath& path = *c.return_path;
  if (chunk.id < path.chunks.size() && path.chunks[chunk.id].base != nullptr) {
    // Mapped already: the memfd we asked for to pass the chunk on (pass_on), else a chunk announced twice.
    std::lock_guard lock(path.mutex);
    PeerChunk& peer = *path.peer_chunks[chunk.id];
    if (peer.memfd == PeerChunk::Memfd::asked) {
      if (fd >= 0 && chunk.bytes == peer.bytes && sealed_against_shrinking(fd) && descriptor_size(fd) >= peer.bytes) {
        peer.fd = std::exchange(fd, -1);
        peer.memfd = PeerChunk::Memfd::here;
        shm_counters_.chunk_memfds_received.add();
      } else {
        // Not what was asked for, or dropped on the way (this process at its open-file limit): the chunk's blocks
        // are copied when passed on, and the connection goes on.
        peer.memfd = PeerChunk::Memfd::refused;
        host().log(LogLevel::warning, "chunk " + std::to_string(chunk.id) + " of " + c.remote +
                                          " came back without a usable memfd: its blocks are copied when passed on");
      }
      return true;
    }
  }
  std::string problem;
  if (fd < 0) {
    problem = "without its memfd";
  } else if (chunk.id >= kMaxChunks) {
    problem = "with id " + std::to_string(chunk.id) + " (at most " + std::to_string(kMaxChunks - 1) + ")";
  } else if (chunk.bytes == 0 || !sealed_against_shrinking(fd) || descriptor_size(fd) < chunk.bytes) {
    problem = "not sealed at its size";
  } else if (chunk.id < c.return_path->chunks.size() && c.return_path->chunks[chunk.id].base != nullptr) {
    problem = "announced twice";
  }
  std::byte* memory = problem.empty() ? map_shared(fd, chunk.bytes) : nullptr;
  if (problem.empty() && memory == nullptr) problem = "that cannot be mapped: " + errno_text(errno);
  if (!problem.empty()) {
    close_incoming(c, "bad chunk " + std::to_string(chunk.id) + ": " + problem, pt::Ending::bad);
    return false;
  }
  auto peer = std::make_unique<PeerChunk>();
  peer->path = c.return_path;
  peer->id = chunk.id;
  peer->base = memory;
  peer->bytes = chunk.bytes;
  peer->registration.base = memory;
  peer->registration.bytes = chunk.bytes;
  if (registration_slot() < mem::kMaxRegistrars) peer->registration.keys[registration_slot()].descriptor = peer.get();
  {
    std::lock_guard lock(c.return_path->mutex);
    auto& chunks = c.return_path->chunks;
    if (chunks.size() <= chunk.id) {
      chunks.resize(chunk.id + 1);
      c.return_path->peer_chunks.resize(chunk.id + 1);
    }
    chunks[chunk.id] = Mapping(memory, chunk.bytes);
    c.return_path->peer_chunks[chunk.id] = std::move(peer);
  }
  shm_counters_.chunks_mapped.add();
  return true;
}

void ShmTransport::unmap_if_done(ReturnPath& path) noexcept {
  if (path.open || path.outstanding.load(std::memory_order_acquire) != 0) return;
  {
    // Its chunks we passed on are announced to no new peer; the peers that mapped them keep their mappings.
    std::lock_guard lock(chunks_mutex_);
    for (const auto& chunk : path.peer_chunks) {
      const std::uint32_t passed = chunk ? chunk->passed_on.load(std::memory_order_relaxed) : 0;
      if (passed == 0 || passed == kNeverPassedOn) continue;
      close_fd(chunks_[passed - 1].fd);
      chunks_[passed - 1].base = nullptr;
    }
  }
  path.peer_chunks.clear();
  path.chunks.clear();
  path.segment = Mapping{};
}

ShmTransport::ReturnPath* ShmTransport::open_path(std::uint32_t& index) {
  // Paths are never reused: a token names its path for as long as any block of it is out. 65535 connections
  // over the life of a transport.
  if (path_count_ >= kMaxPaths) return nullptr;
  index = static_cast<std::uint32_t>(path_count_);
  paths_[index] = std::make_unique<ReturnPath>();
  ++path_count_;
  return paths_[index].get();
}

bool ShmTransport::deliver_packed(Incoming& c) {
  while (c.packs.messages_waiting() > 0) {
    Frame frame;
    switch (c.packs.next(frame)) {
      case pt::FrameAssembler::Result::frame:
        if (!deliver(c, frame)) return false;  // busy (kept as pending, resumed later) or closed
        break;
      case pt::FrameAssembler::Result::need_more:
        // A pack holds whole frames only.
        if (c.packs.mid_frame()) {
          close_incoming(c, "bad stream: a pack that ends within a frame", pt::Ending::bad);
          return false;
        }
        return true;
      case pt::FrameAssembler::Result::no_views:
        events().receive_pool_waits.add();  // back-pressure, as for a block: go on when a descriptor is back
        c.waiting_for_pool = true;
        return false;
      case pt::FrameAssembler::Result::bad:
        close_incoming(c, "bad stream: in a pack, " + c.packs.error(), pt::Ending::bad);
        return false;
    }
  }
  return true;
}

bool ShmTransport::serve(Incoming& c) {
  if (c.closed || c.paused || c.waiting_for_pool || !c.hello) return false;
  if (!deliver_packed(c)) return false;  // the rest of a pack first
  const std::optional<std::uint64_t> ready = c.frames.available();
  if (!ready) {
    close_incoming(c, "bad stream: the frames ring has an impossible tail", pt::Ending::bad);
    return false;
  }
  ReturnPath& path = *c.return_path;
  const std::uint32_t max_frame = connection_settings().max_frame_size;
  const std::uint64_t count = std::min(*ready, kEntriesPerRound);
  bool took = false;
  for (std::uint64_t i = 0; i < count; ++i) {
    const FrameEntry entry = c.frames.read(0);
    if (i + 1 < count) {
      // The next block's first line (its header), fetched from the sender's core while this frame is
      // delivered. Only an address inside the chunk is formed (the peer's offset could point anywhere); the
      // entry is checked in full when its turn comes.
      const FrameEntry next = c.frames.read(1);
      if (next.chunk < path.chunks.size() && path.chunks[next.chunk].base != nullptr &&
          next.offset < path.chunks[next.chunk].bytes)
        __builtin_prefetch(path.chunks[next.chunk].base + next.offset, 0, 3);
    }
    // Every field is the peer's word: checked before anything is made of it.
    if (entry.chunk >= path.chunks.size() || path.chunks[entry.chunk].base == nullptr) {
      // A chunk announced just before this frame may still be in the socket: read it first.
      if (!read_messages(c)) return took;
    }
    if (entry.chunk >= path.chunks.size() || path.chunks[entry.chunk].base == nullptr) {
      close_incoming(c, "bad stream: a block in chunk " + std::to_string(entry.chunk) + ", which was never announced",
                     pt::Ending::bad);
      return took;
    }
    const Mapping& chunk = path.chunks[entry.chunk];
    std::string problem;
    if ((entry.flags & ~(kLastBlock | kPacked)) != 0) {
      problem = "unknown flags " + std::to_string(entry.flags);
    } else if ((entry.flags & kPacked) != 0 && ((entry.flags & kLastBlock) == 0 || c.partial_blocks > 0)) {
      problem = "a pack that is not a frame's only block";
    } else if (entry.offset > chunk.bytes || entry.length > chunk.bytes - entry.offset) {
      problem = "a block (offset " + std::to_string(entry.offset) + ", length " + std::to_string(entry.length) +
                ") outside its chunk of " + std::to_string(chunk.bytes) + " B";
    } else if (c.partial_blocks + 1 > c.ring_entries) {
      problem = "a frame of more blocks than the ring holds";
    } else if (c.partial_bytes + entry.length > max_frame) {
      problem = "a frame above the maximum frame size (" + std::to_string(max_frame) + " B)";
    }
    if (!problem.empty()) {
      close_incoming(c, "bad stream: " + problem, pt::Ending::bad);
      return took;
    }
    mem::Ref block = receive_pool_->wrap_foreign(chunk.base + entry.offset, entry.length,
                                                 make_token(c.path, path.generation, entry.token),
                                                 &path.peer_chunks[entry.chunk]->registration);
    if (!block) {
      // Back-pressure: our applications hold every descriptor; read on when one is released.
      events().receive_pool_waits.add();
      c.waiting_for_pool = true;
      break;
    }
    path.outstanding.fetch_add(1, std::memory_order_relaxed);
    c.frames.consume(1);
    took = true;
    if ((entry.flags & kPacked) != 0) {
      c.packs.push(std::move(block), entry.length);
      if (!deliver_packed(c)) {
        if (!c.closed) c.frames.release();
        return took;
      }
      continue;
    }
    c.partial.append(std::move(block));
    ++c.partial_blocks;
    c.partial_bytes += entry.length;
    if ((entry.flags & kLastBlock) == 0) continue;
    const FrameCheck check = check_header(c.partial.data(), c.partial.size(), c.partial_bytes, max_frame);
    if (check != FrameCheck::ok) {
      close_incoming(c, "bad frame: " + std::string(to_string(check)), pt::Ending::bad);
      return took;
    }
    Frame frame;
    frame.header = decode_header(c.partial.data());
    frame.data = std::move(c.partial);
    c.partial_blocks = 0;
    c.partial_bytes = 0;
    if (!deliver(c, frame)) {
      if (!c.closed) c.frames.release();
      return took;
    }
  }
  c.frames.release();
  return took;
}

bool ShmTransport::reap_receive() {
  returns_deferred_by = this;  // until receive_round_done: this thread's releases are published at the round's end
  bool any = false;
  for_each_incoming([&](pt::IncomingConnection& c) { any = serve(static_cast<Incoming&>(c)) || any; });
  return any;
}

pt::ConnectionTransport::SleepCheck ShmTransport::ready_to_sleep_receive() {
  bool look_again = false;
  for_each_incoming([&](pt::IncomingConnection& base) {
    auto& c = static_cast<Incoming&>(base);
    if (look_again || !c.hello || c.paused || c.waiting_for_pool) return;
    if (!c.frames.prepare_to_sleep()) look_again = true;
  });
  return look_again ? SleepCheck::look_again : SleepCheck::sleep;
}

void ShmTransport::on_receive_ready(void* tag, std::uint32_t) {
  if (tag == &listen_fd_) {
    accept_connections();
    return;
  }
  auto* t = static_cast<Tag*>(tag);
  auto& c = *static_cast<Incoming*>(t->connection);
  if (c.closed) return;
  if (t->kind == Tag::socket) {
    read_messages(c);
    return;
  }
  drain(c.frames_wake);
  c.frames.awake();
  serve(c);
}

void ShmTransport::close_wire(pt::IncomingConnection& base) noexcept {
  auto& c = static_cast<Incoming&>(base);
  if (c.socket >= 0) receive_waiter().remove(c.socket);
  if (c.frames_wake >= 0) receive_waiter().remove(c.frames_wake);
  if (c.return_path != nullptr) {
    std::lock_guard lock(c.return_path->mutex);
    c.return_path->socket = -1;  // before it closes: a posting thread may be about to ask for a chunk on it
  }
  close_fd(c.socket);
  close_fd(c.frames_wake);
  c.frames = {};
  if (c.return_path != nullptr) {
    std::lock_guard lock(c.return_path->mutex);
    c.return_path->open = false;
    c.return_path->returns = {};
    close_fd(c.return_path->returns_wake);
    unmap_if_done(*c.return_path);
  }
  // A frame half assembled, a pack half delivered: their blocks are released (their returns go nowhere now).
  c.partial.reset();
  c.packs.reset();
  c.partial_blocks = 0;
  c.partial_bytes = 0;
}

void ShmTransport::delivery_paused(pt::IncomingConnection&) {}

void ShmTransport::resume_wire(pt::IncomingConnection& base) {
  auto& c = static_cast<Incoming&>(base);
  if (c.paused || c.closed) return;
  c.waiting_for_pool = false;
  serve(c);
}

void ShmTransport::receive_housekeeping(Clock::time_point) { forget_closed_incoming(); }

void ShmTransport::released(std::uint64_t token) noexcept {
  const std::uint32_t index = static_cast<std::uint32_t>(token >> 32) & 0xffff;
  const auto generation = static_cast<std::uint16_t>(token >> 48);
  if (index >= kMaxPaths) return;
  ReturnPath* path = paths_[index].get();
  if (path == nullptr) return;
  std::lock_guard lock(path->mutex);
  if (path->generation != generation || path->outstanding.load(std::memory_order_relaxed) == 0) return;
  path->outstanding.fetch_sub(1, std::memory_order_acq_rel);
  if (!path->open) {
    unmap_if_done(*path);
    return;
  }
  // The sender never has more blocks out than the ring holds, so an honest one always leaves room.
  const std::optional<std::uint64_t> room = path->returns.room();
  if (!room || *room == 0) {
    shm_counters_.returns_dropped.add();
    return;
  }
  ReturnEntry entry;
  entry.token = static_cast<std::uint32_t>(token);
  path->returns.write(entry);
  // Released by a handler this transport's receive thread runs inline: the round's returns are published together
  // at its end (receive_round_done), one store and one look at the sender's sleep flag for all of them. Any
  // other thread publishes at once: nobody would do it for it later.
  if (returns_deferred_by == this) {
    if (!path->unpublished) {
      path->unpublished = true;
      unpublished_paths_.push_back(path);
    }
    return;
  }
  publish_returns(*path);
}

void ShmTransport::publish_returns(ReturnPath& path) noexcept {
  path.unpublished = false;
  if (path.returns && path.returns.publish()) {
    wake(path.returns_wake);
    shm_counters_.wakeups_sent.add();
  }
}

void ShmTransport::receive_round_done() noexcept {
  returns_deferred_by = nullptr;
  for (ReturnPath* path : unpublished_paths_) {
    std::lock_guard lock(path->mutex);
    if (path->unpublished) publish_returns(*path);
  }
  unpublished_paths_.clear();
}

void ShmTransport::report_wire(MetricSink& sink) const {
  shm_counters_.report(sink);
  sink.gauge("shared_chunks", static_cast<double>(chunk_count_.load(std::memory_order_relaxed)),
             "chunks of this executive's pools in shared memory, announced to peers");
  sink.setting("ring_entries", settings_.ring_entries, "entries of each ring of a connection");
}

}  // namespace daqx::ptshm
