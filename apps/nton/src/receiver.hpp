// nton::Receiver: takes the frames of any number of Senders, verifies pattern and order per sender, releases
// each frame once checked and acknowledges every ackEvery frames (the CMS N-to-N test's receiving side).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <thread>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/nton/protocol.hpp"
#include "daqx/apps/rate_meter.hpp"
#include "sequence_logic.hpp"

namespace daqx::nton {
using namespace daqx::apps;  // parameter helpers, rate meters, latency summaries, wake-ups

struct ReceiverConfiguration {
  std::uint64_t ack_every = 16;  // acknowledge every this many frames when a frame does not say (senders do)
  bool verify = true;            // check the pattern of every frame that carries one
  bool batch = false;            // take data frames in batches (bind_batch)
  double hold_for = 0;           // seconds from the first frame during which frames are kept, not released
  double configure_delay = 0;    // seconds configure takes before it does anything (a slow configure, emulated)
};

// Counts of one run, restarted at enable; written by the dispatch thread, read by report().
struct ReceiverRunCounters : CounterSet {
  Counter frames_received{*this, "frames_received", "data frames received (end-of-run frames included)"};
  Counter bytes_received{*this, "bytes_received", "payload bytes received (data headers included)"};
  Counter pattern_errors{*this, "pattern_errors", "frames whose pattern differed from (sender, sequence)"};
  Counter sequence_errors{*this, "sequence_errors", "frames out of order per sender: gaps, duplicates, reorderings"};
  Counter malformed_frames{*this, "malformed_frames",
                           "frames too short, whose data header disagreed with the frame, or multipart messages "
                           "that could not be split into their parts"};
  Counter acks_sent{*this, "acks_sent", "acknowledgements sent"};
  Counter ack_delays{*this, "ack_delays", "acknowledgements that had to wait for a send or a pool block"};
  Counter send_errors{*this, "send_errors", "acknowledgements lost with their connection"};
};

// What the receiver has seen since configure; restarted at configure.
struct ReceiverConfigureGauges : CounterSet {
  Counter senders{*this, "senders", "senders heard from since configure", Metric::Kind::gauge};
  Counter frames_held{*this, "frames_held", "the most frames kept at once during a hold (holdFor)", Metric::Kind::gauge};
};

class Receiver final : public Application {
 public:
  static std::vector<ParamSpec> parameters();

  explicit Receiver(ApplicationContext& context);

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  using Clock = std::chrono::steady_clock;

  // Binds the data handler: batches or single frames.
  void bind_data(bool batches);
  // Dispatch thread.
  void on_data(Frame&& frame);
  void note_handler_thread() noexcept;  // handler_thread_, from a data handler
  // holdFor: keeps frames (and so the blocks they hold) until the hold ends, then takes them in order.
  void start_hold();
  void end_hold();
  // urgent: the sender asked (its window is full), so the ack must not wait for coalescing.
  void acknowledge(SenderState& sender, bool urgent);
  void send_pending_acks();
  void note_error(Counter& counter, const char* what, const DataHeader& header);
  // Runs fn on the dispatch thread, where the state below lives (or here when there is no such thread).
  void on_dispatch_thread(std::function<void()> fn);

  // Owned by the dispatch thread; configure() and enable() reach it through tasks.
  ReceiverConfiguration config_;
  SenderTable senders_;
  bool acks_pending_ = false;  // some sender has ack_pending set
  bool failed_ = false;
  std::uint32_t errors_logged_ = 0;
  RateMeter receive_rate_;
  enum class Hold { not_started, holding, over } hold_ = Hold::not_started;
  std::deque<Frame> held_;
  std::vector<mem::Ref> parts_;  // a multipart message's parts (take_parts), kept from message to message
  std::jthread hold_timer_;  // sleeps through the hold, then asks the dispatch thread to end it

  // Written by the dispatch thread, read by report().
  ReceiverRunCounters run_counters_;
  ReceiverConfigureGauges configure_gauges_;
  std::atomic<int> handler_thread_{0};  // the kernel thread that ran the last data handler (dispatch or inline)
};

}  // namespace daqx::nton
