// The peer transport interface: one per endpoint protocol (tcp, ofi, ibv, ...), loaded from a module, and
// the capabilities a transport declares so that callers check what it offers, never its name.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "daqx/api/counters.hpp"
#include "daqx/api/frame.hpp"
#include "daqx/api/parameters.hpp"
#include "daqx/api/status.hpp"
#include "daqx/services/log.hpp"
#include "daqx/mempool/pool.hpp"
#include "daqx/mempool/registrar.hpp"

namespace daqx {

using PeerId = std::uint32_t;

struct EndpointAddress {
  std::string protocol;
  std::string hostname;
  std::uint16_t port = 0;
  std::string network;
  std::string text() const { return protocol + "://" + hostname + ":" + std::to_string(port); }
};

enum class DeliverStatus {
  accepted,  // the executive owns the frame now
  busy,      // the target's queue is full: keep the frame, stop reading this peer, retry on resume
  rejected   // bad frame (unknown target, ...): counted; the transport drops it and closes that connection
};

// What a transport offers and needs. The executive shows it (status page, JSON API, --capabilities) and
// tests choose their cases by it; nothing decides anything by a transport's name.
struct TransportCapabilities {
  bool memory_registration = false;     // registers every pool with a device before it sends or receives from it
  bool rdma_device = false;             // needs an RDMA device (InfiniBand, RoCE, iWARP)
  std::size_t inline_bytes = 0;         // frames up to this size go inline, copied into the request (0: never)
  std::size_t gather_limit = 0;         // pieces one message gathers from a frame's blocks (0: no limit, a byte stream)
  bool coalescing = false;              // packs small frames into one message or write (throughput mode)
  bool busy_polling = true;             // its threads can poll instead of sleeping (waitMode=busy)
  bool credit_flow = false;             // sends only into buffers the receiver has posted (stalls count credit_waits)
  bool posted_receive_buffers = false;  // keeps receive buffers posted per incoming connection (in use at rest)
  bool numa_placement = false;          // its own pools follow its numaNode parameter
  // Passes blocks by reference to peers on this host (shared memory): the executive then makes every pool whose
  // allocator no policy rule names in shared memory (the shared variant of what it would use), for zero copy.
  bool shared_memory_pools = false;
  // What can reach its endpoint besides a daqx peer, for tests of hostile peers:
  bool plain_tcp_port = false;          // the endpoint's port accepts plain TCP connections
  bool frames_on_plain_tcp = false;     // ... and reads daqx frames straight from them
  std::string connection_manager;       // how connections are made: "tcp", "libfabric" or "rdma_cm"
  // What it needs, from its parameters, for the plan before start (daqx-launch --plan, docs/deploying.md):
  std::size_t descriptors_per_connection = 0;  // file descriptors each connection keeps open (a socket: 1)
  std::size_t pool_bytes = 0;                  // the most its own pools (receive, credit, copies) grow to
  std::size_t receive_bytes_per_incoming = 0;  // receive memory each incoming connection adds besides them
  std::size_t threads = 0;                     // threads it runs, whatever the number of connections
};

// One line for pages and listings: "memory registration, RDMA device, inline 256 B, 16 pieces per message, ...".
std::string describe_capabilities(const TransportCapabilities& capabilities);

struct ConnectionInfo {
  PeerId peer = 0;
  std::string remote;  // host:port
  bool up = false;
  std::vector<Metric> metrics;  // frames, bytes, would-blocks, errors, reconnects
  bool outgoing = false;  // we connected (named by connect()); else accepted from a peer
  // Filled by the executive for the connections it opened (outgoing): what it connected to, the same across
  // reconnects (remote may carry a port the system chose). /metrics labels a connection by these.
  std::string peer_endpoint{};  // the peer's endpoint as configured, e.g. "tcp://10.0.0.2:31101"
  std::string peer_context{};   // the URL of the context that endpoint belongs to
  bool planned = false;         // in the partition's connection plan (else opened by a frame at first use)
};

// What the executive gives a transport.
class TransportHost {
 public:
  virtual ~TransportHost() = default;
  virtual const ParamSet& params() const noexcept = 0;  // the transport's declared parameters
  virtual const std::string& protocol() const noexcept = 0;  // the endpoint protocol it serves ("tcp", ...)
  // The largest frame to accept; anything longer closes the connection that sent it.
  virtual std::uint32_t max_frame_size() const noexcept = 0;
  // A received frame whose header passed check_header(); the executive checks the target and stages it for
  // the target (or, for an application with inline dispatch, runs its handler now, on the calling thread).
  // Call from the transport's receive thread only.
  virtual DeliverStatus deliver(Frame&& frame, PeerId from) noexcept = 0;
  // The end of a batch of deliveries (a round of completions): what was staged becomes visible to the
  // targets, each woken at most once. Frames are not seen by their targets before this.
  virtual void deliveries_done() noexcept = 0;
  // Registered once: the executive calls it when a target that said busy has room again.
  virtual void on_deliver_ready(std::function<void()> callback) = 0;
  // Whether every application of this executive handles frames from transports inline (on the receive
  // thread): then a transport thread that polls before sleeping (pollTime) competes with no dispatch thread.
  virtual bool handlers_inline() const noexcept = 0;
  // Tells senders that got would_block for this peer that they may retry.
  virtual void send_ready(PeerId peer) noexcept = 0;
  virtual void connection_changed(PeerId peer, bool up, const std::string& reason) = 0;
  // Whether an application of this executive is Enabled. A peer going away in a run loses frames and is worth a
  // warning; between runs and at shutdown (stop, halt, exit) peers closing is what is expected.
  virtual bool run_going() const noexcept { return true; }
  // Incoming connections the partition's connection plan sends to this endpoint (0: not known). A transport that
  // divides its receive memory among incoming connections divides it among at least this many from the start.
  virtual std::size_t planned_incoming() const noexcept { return 0; }
  // A pool named "<name>" under the transport's prefix ("pt/tcp/..."), allocator chosen by the policy.
  virtual mem::Pool& make_pool(const std::string& name, const mem::PoolConfig& config) = 0;
  // A thread named e.g. "pt/tcp/recv-0", pinned as the policy says.
  virtual std::jthread start_thread(const std::string& name, std::function<void(std::stop_token)> body) = 0;
  virtual void log(LogLevel level, const std::string& message) = 0;
  // For networks that must know memory before they touch it (RDMA): registers every chunk of every pool
  // of this executive, those there now and those made or grown later, once each. The slot is the same in
  // every pool, so Block::key(slot) finds the registration of any block a frame is made of. Throws
  // std::runtime_error when a chunk cannot be registered.
  virtual std::size_t register_memory(mem::Registrar& registrar) = 0;
  // Deregisters every chunk registered under slot; the transport calls it before it closes what the
  // registrations belong to (its domain or protection domain).
  virtual void deregister_memory(std::size_t slot) noexcept = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view protocol() const noexcept = 0;
  // Configure time: start listening on this context's endpoint.
  virtual void listen(const EndpointAddress& local) = 0;
  // Names a remote endpoint; whether it connects now or on first post is the transport's parameter.
  virtual PeerId connect(const EndpointAddress& remote) = 0;
  // Sends a frame (header already written). ok: the transport owns it and returns it to its pool when
  // sent; would_block: the caller keeps it and waits for TransportHost::send_ready; error: released.
  virtual SendStatus post(PeerId peer, mem::Ref& frame) noexcept = 0;
  // Sends frames in order to one peer, as post() would each, in one call: returns how many it took (they are
  // gone from the span); when that is fewer than frames.size(), `stopped` says why the next one was not taken
  // (would_block: the caller keeps it and the rest; error: it was released, the caller keeps the rest). Not pure:
  // by default one post() per frame; a transport that can do better (one lock, one push to the wire) overrides it.
  virtual std::size_t post_batch(PeerId peer, std::span<mem::Ref> frames, SendStatus& stopped) noexcept;
  // The connect command: starts opening every connection named by connect() that is neither up nor
  // opening (with connect-on-first-use, those that have not carried a frame yet). Does not wait: the
  // caller watches connections(). Transports that open every connection at once have nothing to do.
  virtual void open_connections() {}
  virtual void stop() = 0;  // close connections and end threads; every block goes back
  virtual void report(MetricSink& sink) const = 0;
  virtual std::vector<ConnectionInfo> connections() const = 0;
  // What this transport, as configured, offers.
  virtual TransportCapabilities capabilities() const = 0;
};

}  // namespace daqx
