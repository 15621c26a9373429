// The interface applications are written against: lifecycle hooks, frame handlers, sending, pools,
// worker threads and parameters. Applications include public headers only and build out of tree.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "daqx/api/batch.hpp"
#include "daqx/api/counters.hpp"
#include "daqx/api/frame.hpp"
#include "daqx/api/multipart.hpp"
#include "daqx/api/parameters.hpp"
#include "daqx/api/status.hpp"
#include "daqx/services/log.hpp"
#include "daqx/mempool/pool.hpp"

namespace daqx {

using FrameHandler = std::function<void(Frame&&)>;

// Static facts about another application of the partition, for finding peers.
struct ApplicationInfo {
  Tid tid = kNoTid;
  std::string class_name;
  std::uint32_t instance = 0;
  std::string context_url;
  bool local = false;  // in this executive: frames are handed over without a transport
};

// What the executive offers one application. Handlers run one at a time, so an application needs no locks
// between its handlers, its tasks and its callbacks: by default on the application's own dispatch thread,
// behind its inbox.
//
// Inline dispatch (the executive parameter `dispatch`: inline, or auto for a class that declares
// ApplicationClass::handlers_may_run_inline): a frame that arrives over a transport is handled directly on
// that transport's receive thread, with no queue and no thread wake-up between the wire and the handler.
// Still one at a time: when the application is busy (its dispatch thread runs a task, or another transport's
// thread a handler) the frame is queued for the dispatch thread instead, in order. The contract for such a
// handler:
// - it must not block: no waiting on locks other threads hold for long, no sleeping, no blocking I/O, no
//   waiting for a frame (the thread it runs on is the one that would bring it);
// - it should be short: every frame behind it on that connection, and on every connection of that transport,
//   waits for it;
// - it may send (send() never blocks: would_block and on_send_ready as always), allocate, keep or forward the
//   frame, post tasks and touch the application's state as any handler does;
// - it must not rely on which thread it runs on (no thread_local state shared with the dispatch thread).
// The same holds for frames a local application sends from one of its worker threads (start_worker): when the
// target is idle, its handlers run on that worker, a batch at a time, as if the worker were a receive thread.
// Frames that local applications send from anywhere else (their handlers, tasks, hooks) and tasks always go
// through the dispatch thread, so handlers never nest; and tasks posted before a frame arrives run before its
// handler (the frame then waits for the dispatch thread too).
class ApplicationContext {
 public:
  virtual ~ApplicationContext() = default;

  virtual Tid tid() const noexcept = 0;
  virtual const std::string& class_name() const noexcept = 0;
  virtual std::uint32_t instance() const noexcept = 0;
  // Hierarchical name used for threads and pools and matched by the partition's policy, e.g. "nton/sender/0".
  virtual const std::string& name() const noexcept = 0;
  virtual const ParamSet& params() const noexcept = 0;

  // Binds a handler to a function code; call from the constructor or configure().
  virtual void bind(std::uint16_t function, FrameHandler handler) = 0;
  // Binds a handler of batches (batch.hpp) to a function code instead: consecutive frames for it that arrive
  // together are handed over in one call, at most kMaxBatchFrames at a time. The same rules as for bind() (one at
  // a time, inline or on the dispatch thread). Not pure, so that a test double need not batch: by default every
  // frame comes alone, as a batch of one.
  virtual void bind_batch(std::uint16_t function, BatchHandler handler);

  // The application's frame pool (named "<name>/pool", allocator chosen by the policy). allocate_frame
  // gives a block with room for the header and payload_bytes (chained if larger than the largest block);
  // empty when the pool is exhausted: back off until on_pool_available().
  virtual mem::Pool& pool() = 0;
  virtual mem::Ref allocate_frame(std::size_t payload_bytes) noexcept = 0;
  // Up to frames.size() frames of payload_bytes each, into the empty Refs of frames, in one call (one visit to
  // the pool): returns how many it made, fewer when the pool ran dry (back off until on_pool_available(), as for
  // allocate_frame). Not pure, as bind_batch: by default one allocate_frame() per frame.
  virtual std::size_t allocate_frames(std::size_t payload_bytes, std::span<mem::Ref> frames) noexcept;

  // Writes the header into frame's first kFrameHeaderSize bytes and hands it to the target: directly to a
  // local application's queue, else to the transport of the shared network. On ok the frame is gone;
  // on would_block or no_route the caller still holds it (see SendStatus).
  virtual SendStatus send(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref& frame,
                          std::uint8_t flags = 0) noexcept = 0;

  // Sends a batch in order, to one target or several, as one send() per frame would (same statuses, same order per
  // target) but paying the route, the connection's lock and the wake-up of the receiver once per run of frames to
  // one target. Stops at the first frame not taken: see BatchSendResult. Not pure, as bind_batch: by default one
  // send() per frame.
  virtual BatchSendResult send_batch(std::span<OutgoingFrame> frames) noexcept;

  // Sends parts (a header part and payload parts, each a Ref: a block or a chain) as one multipart message
  // (multipart.hpp): one frame whose head holds the part table, with the parts' blocks linked after it as they
  // are, never copied; the receiver splits it with take_parts() and gets each part as its own Ref. The statuses
  // are send()'s for the whole message: ok, and every part is gone; would_block or no_route, and the caller holds
  // every part as it gave it (would_block also when the pool had no block for the table: on_pool_available tells
  // when it has); error, and every part was released (its connection failed, or check_parts() refused the parts,
  // which is logged: too many, a shared block before the last, an empty block). Not pure: every context has it
  // through allocate_frame() and send().
  virtual SendStatus send_parts(Tid target, std::uint16_t function, std::uint64_t transaction,
                                std::span<mem::Ref> parts, std::uint8_t flags = 0) noexcept;

  // Called on the dispatch thread when a send that said would_block may succeed, and when the pool has
  // blocks again after an allocation failed.
  virtual void on_send_ready(std::function<void()> callback) = 0;
  virtual void on_pool_available(std::function<void()> callback) = 0;

  // Runs fn on the application's dispatch thread (thread-safe; use from worker threads or timers).
  virtual bool post_task(std::function<void()> fn) = 0;

  // Starts a worker named "<name>/<suffix>", pinned as the policy says; it must return when stop() says so.
  // What it sends to a local application with inline dispatch may be handled on it (above): so it must not hold
  // a lock while it sends that the target's handlers could want.
  virtual std::jthread start_worker(const std::string& suffix, std::function<void(std::stop_token)> body) = 0;

  // The partition's applications, for finding peers; resolved selectors are in params().applications().
  virtual std::vector<ApplicationInfo> applications() const = 0;

  // The run this application was enabled in: the number the operator's enable command carried (daqxctl
  // enable --run N, or one allocated from the run file), or 0 when it carried none. Set before the enable()
  // hook runs and kept until stop() or halt() has returned, so the hooks and every thread of the run read it.
  // Not pure, so an application context made outside the executive (a test double) need not know runs.
  virtual std::uint64_t run_number() const noexcept { return 0; }

  // Puts the application into Failed with this reason (e.g. a peer died and the policy says fail).
  virtual void fail(const std::string& reason) = 0;
  // What keeps the application from its work while it is not Failed (an EvM whose builder units are all
  // dropped), shown as its status reason; "" when nothing does. Cleared when it halts. Not pure, as run_number.
  virtual void set_condition(const std::string& condition) { (void)condition; }
  virtual void log(LogLevel level, const std::string& message) = 0;

  // How many applications of `class_name` the partition lets the run lose and still go on (its
  // <Launch><Expendable> rule), for an application that watches its peers (the EvM its builder units); nothing
  // when the partition has no rule for the class. Not pure, as run_number.
  virtual std::optional<std::uint32_t> losses_allowed(const std::string& class_name) const {
    (void)class_name;
    return std::nullopt;
  }
};

// An application: the lifecycle hooks run on the control thread, never concurrently with each other;
// throwing from one puts the application in Failed with the exception's text as the reason.
class Application {
 public:
  explicit Application(ApplicationContext& context) : context_(context) {}
  virtual ~Application() = default;
  Application(const Application&) = delete;
  Application& operator=(const Application&) = delete;

  virtual void configure() {}  // Halted -> Configured: read parameters, allocate, connect
  virtual void enable() {}     // Configured -> Enabled: start producing
  virtual void stop() {}       // Enabled -> Configured: stop producing, drain
  virtual void halt() {}       // Configured or Failed -> Halted: release everything

  // Counters for the status page, JSON and /metrics. Called from the control thread at any time, so read
  // only atomics or values the application publishes for it.
  virtual void report(MetricSink&) const {}

 protected:
  ApplicationContext& context() const noexcept { return context_; }

 private:
  ApplicationContext& context_;
};

}  // namespace daqx
