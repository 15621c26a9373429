// One hosted application: its context (sending, pool, handlers), its inbox and dispatch thread, its state.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bounded_queue.hpp"
#include "context_services.hpp"
#include "delivery_lane.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/executive/control.hpp"
#include "daqx/api/module.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/executive/state.hpp"

namespace daqx::detail {

// "nton::Sender" instance 0 -> "nton/sender/0": the hierarchical name matched by policy rules.
std::string hierarchical_name(const std::string& class_name, std::uint32_t instance);
// The frame pool of the application so named: "<name>/pool".
mem::PoolConfig application_pool_config(const std::string& name);

// What the host counts of one application's frames and sends, on its status next to the application's own.
struct HostCounters : CounterSet {
  Counter frames_dispatched{*this, "frames_dispatched", "frames handed to a handler of this application"};
  Counter frames_dispatched_inline{*this, "frames_dispatched_inline",
                                   "of those, frames handled on a transport's receive thread or a local sender's worker (inline dispatch)"};
  Counter batches_dispatched{*this, "batches_dispatched",
                             "calls of batch handlers (bind_batch): frames_dispatched / this is the mean batch"};
  Counter frames_unhandled{*this, "frames_unhandled", "frames for a function code with no handler (dropped)"};
  Counter sends_would_block{*this, "sends_would_block", "sends refused for lack of room at the target (retried)"};
  Counter handler_exceptions{*this, "handler_exceptions", "handlers or tasks that threw"};
};

class ApplicationHost final : public ApplicationContext {
 public:
  // lanes: one delivery lane per transport binding of the executive (DeliveryLane), inbox_capacity frames each.
  ApplicationHost(ContextServices& services, const config::ApplicationConfig& config, const ApplicationClass& cls,
                  ParamSet params, std::size_t inbox_capacity, std::size_t lanes);
  ~ApplicationHost() override;

  // Creates the application object and starts the dispatch thread.
  void start();
  // Ends the dispatch thread and destroys the application; frames still queued go back to their pools.
  void finish();

  // ApplicationContext
  Tid tid() const noexcept override { return config_.id; }
  const std::string& class_name() const noexcept override { return config_.class_name; }
  std::uint32_t instance() const noexcept override { return config_.instance; }
  const std::string& name() const noexcept override { return name_; }
  const ParamSet& params() const noexcept override { return params_; }
  void bind(std::uint16_t function, FrameHandler handler) override;
  void bind_batch(std::uint16_t function, BatchHandler handler) override;
  mem::Pool& pool() override { return *pool_; }
  mem::Ref allocate_frame(std::size_t payload_bytes) noexcept override;
  std::size_t allocate_frames(std::size_t payload_bytes, std::span<mem::Ref> frames) noexcept override;
  SendStatus send(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref& frame,
                  std::uint8_t flags) noexcept override;
  BatchSendResult send_batch(std::span<OutgoingFrame> frames) noexcept override;
  void on_send_ready(std::function<void()> callback) override;
  void on_pool_available(std::function<void()> callback) override;
  bool post_task(std::function<void()> fn) override;
  std::jthread start_worker(const std::string& suffix, std::function<void(std::stop_token)> body) override;
  std::vector<ApplicationInfo> applications() const override;
  void fail(const std::string& reason) override;
  void set_condition(const std::string& condition) override;
  void log(LogLevel level, const std::string& message) override;
  std::optional<std::uint32_t> losses_allowed(const std::string& class_name) const override;
  std::uint64_t run_number() const noexcept override { return run_.load(std::memory_order_acquire); }

  // Executive side.
  // Queues a frame for this application: ok, or would_block with the frame given back in `data`.
  SendStatus enqueue(const FrameHeader& header, mem::Ref& data, ApplicationHost* waiting_sender) noexcept;
  // Queues a run of frames whose headers are written (their header fields in headers[i]): how many it took, in
  // order; the caller keeps the rest (would_block, the sender registered to be told when there is room).
  std::size_t enqueue(std::span<const FrameHeader> headers, std::span<mem::Ref> data, ApplicationHost* waiting_sender) noexcept;
  // A transport or another application can take frames again: run our on_send_ready callback.
  void notify_send_ready() noexcept;
  // Runs a state machine command; the hook runs on the calling (control) thread. `run` is the run an enable
  // starts (run_number() from before the hook on); stop and halt end it once their hook has returned.
  TransitionResult run(Command command, std::uint64_t run = 0);
  State state() const;
  ApplicationStatus status() const;
  // Remembers that a transport peer said would_block to us, so send_ready(peer) reaches us.
  void wait_for_peer(const void* transport, std::uint32_t peer);
  bool waiting_for_peer(const void* transport, std::uint32_t peer) noexcept;
  // Registered by a transport binding that got `busy` from this inbox: called when there is room again.
  void add_deliver_waiter(std::function<void()>* resume);
  // The lane transport binding `binding` delivers into (its receive thread is the lane's producer).
  DeliveryLane& lane(std::size_t binding) noexcept { return *lanes_[binding]; }
  // Inline dispatch: whether frames from transports may be handled on the receive thread; and the handling
  // itself, when the application is not busy (false: it is; queue the frame instead).
  bool dispatches_inline() const noexcept { return inline_; }
  bool try_dispatch_inline(Frame& frame) noexcept;
  // Whether frames for this function go to a batch handler (a transport then stages them in the lane and hands
  // them over at the end of its round: dispatch_lane_inline). Read by receive threads; bind only before enable.
  bool takes_batches(std::uint16_t function) const noexcept {
    return function < batch_functions_.size() && batch_functions_[function].load(std::memory_order_relaxed);
  }
  // Function codes below this are looked up by receive threads in a table; a batch handler of a higher code is
  // handed inline frames one at a time (as a batch of one), and batches on the dispatch thread as any other.
  static constexpr std::size_t kBatchFunctionTable = 256;
  // Inline dispatch of what a lane holds, in batches, when the application is not busy; false: it is (or tasks
  // wait): the caller publishes the lane for the dispatch thread instead.
  bool dispatch_lane_inline(std::size_t binding) noexcept;
  void wake() noexcept;

 private:
  // Fills in the header of a frame to send (the host's flags added) and writes it into the frame's first bytes.
  FrameHeader write_header(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref& frame,
                           std::uint8_t flags) const noexcept;
  // Hands frames with headers written to one route (a local application's inbox or a transport's peer): how many
  // were taken, in order; status says why the next was not.
  std::size_t deliver_run(const Route& route, std::span<const FrameHeader> headers, std::span<mem::Ref> frames,
                          SendStatus& status) noexcept;
  // A worker of a local application hands frames over in place (enqueue): with inline dispatch, when the
  // application is idle and nothing queued would be overtaken, their handlers run on the calling thread, a batch
  // at a time. False: nothing was handled, queue them.
  bool handle_in_place(std::span<const FrameHeader> headers, std::span<mem::Ref> data) noexcept;
  void dispatch_loop(std::stop_token stop);
  bool run_tasks();
  void run_overdue_tasks();  // dispatch thread, between frames
  void dispatch(Frame& frame);
  // Frames taken from one queue, in order: runs of one function with a batch handler go to it in one call. On the
  // dispatch thread, overdue tasks run between them (never on a receive thread dispatching inline).
  void dispatch(std::span<Frame> frames, bool dispatch_thread);
  // Takes up to kMaxBatchFrames frames from a lane and dispatches them; how many.
  std::size_t dispatch_from_lane(DeliveryLane& lane, bool dispatch_thread);
  void release_waiters();
  bool queues_half_empty() const noexcept;  // the inbox and every lane at most half full
  bool queues_empty() const noexcept;
  // Handlers, tasks and callbacks run one at a time: whoever runs them holds this (the dispatch thread, or a
  // receive thread dispatching inline). Never held across a wait.
  bool try_enter() noexcept { return !in_handlers_.exchange(true, std::memory_order_acquire); }
  // For handling frames off the dispatch thread (inline or in place): enters, unless busy or tasks wait (they go
  // first), and applies handlers bound meanwhile. False: not entered, queue the frames.
  bool enter_inline() noexcept;
  void leave() noexcept { in_handlers_.store(false, std::memory_order_release); }
  void apply_new_handlers();  // with the right to run handlers held

  ContextServices& services_;
  const config::ApplicationConfig& config_;
  const ApplicationClass& class_;
  std::string name_;
  ParamSet params_;
  mem::Pool* pool_ = nullptr;  // owned by the executive, which outlives every Ref
  std::unique_ptr<Application> application_;

  // Handlers: owned by the dispatch thread; bind() from other threads goes through pending_handlers_.
  struct Handler {
    FrameHandler single;
    BatchHandler batch;  // set instead of single by bind_batch
    explicit operator bool() const noexcept { return single || batch; }
  };
  void bind_handler(std::uint16_t function, Handler handler);
  std::vector<Handler> handlers_;
  std::mutex pending_mutex_;
  std::vector<std::pair<std::uint16_t, Handler>> pending_handlers_;
  std::atomic<bool> handlers_changed_{false};
  // Which function codes have a batch handler, for receive threads (takes_batches).
  std::array<std::atomic<bool>, kBatchFunctionTable> batch_functions_{};

  BoundedQueue<Frame> inbox_;
  // Frames taken from the inbox or a lane for one dispatch: used by whoever holds the right to run handlers.
  std::array<Frame, kMaxBatchFrames> taken_;
  std::vector<std::unique_ptr<DeliveryLane>> lanes_;  // one per transport binding
  bool inline_ = false;                               // the dispatch parameter, read at construction
  std::atomic<bool> takes_local_in_place_{false};     // inline_, from start() until finish()
  std::atomic<bool> in_handlers_{false};
  std::mutex tasks_mutex_;
  std::deque<std::function<void()>> tasks_;
  std::atomic<bool> has_tasks_{false};
  std::chrono::steady_clock::time_point tasks_ran_{};  // dispatch thread: when run_tasks last took a batch
  std::atomic<bool> sleeping_{false};
  std::atomic<std::uint32_t> wake_sequence_{0};
  std::jthread dispatcher_;

  // Senders told would_block by this inbox, and transports told busy: woken when it has drained to half.
  std::mutex waiters_mutex_;
  std::vector<ApplicationHost*> waiting_senders_;
  std::vector<std::function<void()>*> waiting_deliveries_;
  std::atomic<bool> has_waiters_{false};

  // Transport peers that said would_block to this application.
  std::mutex peer_wait_mutex_;
  std::vector<std::pair<const void*, std::uint32_t>> waiting_peers_;

  std::function<void()> send_ready_callback_;  // set before enable, read on the dispatch thread
  std::function<void()> pool_available_callback_;
  std::atomic<bool> send_ready_pending_{false};

  mutable std::mutex state_mutex_;
  State state_ = State::halted;
  std::string reason_;
  std::string condition_;  // set_condition: the status reason while reason_ (a failure's) is empty
  std::atomic<std::uint64_t> run_{0};  // read by the application's threads without the state lock

  void read_transport_mode();
  std::atomic<std::uint8_t> mode_flags_{0};  // frame_flags::send_now or coalesce, from transportMode

  HostCounters counters_;
};

}  // namespace daqx::detail
