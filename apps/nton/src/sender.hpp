// nton::Sender: sends frames round-robin to its receivers, at most `window` of them unacknowledged per
// receiver, until frameCount or duration is reached or stop() (the CMS N-to-N test's sending side).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/apps/rate_meter.hpp"
#include "daqx/apps/wakeup.hpp"

namespace daqx::nton {
using namespace daqx::apps;  // parameter helpers, rate meters, latency summaries, wake-ups

struct SenderConfiguration {
  std::vector<Tid> receivers;       // resolved from the "receivers" selector; frames go to them in this order
  std::uint64_t frame_size = 4096;  // payload bytes per frame, including the 32-byte data header
  std::vector<std::uint64_t> frame_sizes;  // if not empty: the sizes of successive frames, cycled (frameSizes)
  std::uint64_t frame_count = 0;    // frames to send in all, round-robin, then stop by itself; 0: no limit
  double duration = 0;              // seconds to send for, then stop by itself; 0: no limit
  std::uint64_t window = 64;        // frames outstanding per receiver without acknowledgement
  std::uint64_t ack_every = 16;     // receivers acknowledge every this many frames (carried in each frame)
  std::uint64_t batch = 1;          // frames allocated and sent in one call (to one receiver); 1: one by one
  std::uint64_t parts = 0;          // each frame a multipart message: the data header and this many payload parts
  bool pattern = true;              // fill payloads with a pattern of (sender, sequence) that receivers verify
};

struct SenderRun;
struct ReceiverProxy;
struct DataHeader;

// Counts of one run, restarted at enable; written by the sending worker only.
struct SenderRunCounters : CounterSet {
  Counter frames_sent{*this, "frames_sent", "data frames sent (end-of-run frames included)"};
  Counter bytes_sent{*this, "bytes_sent", "payload bytes sent (data headers included, frame headers not)"};
  Counter sends_deferred{*this, "sends_deferred", "sends refused for lack of room at the target, retried when told"};
  Counter pool_exhausted{*this, "pool_exhausted", "frame allocations that found the pool empty, retried when blocks came back"};
  Counter send_errors{*this, "send_errors", "sends that failed with the connection (that receiver is dropped)"};
};

// The acknowledgement handler's counts: acks_received restarts with the first acknowledgement of each run;
// stale_acks counts for the sender's life.
struct SenderAckCounters : CounterSet {
  Counter acks_received{*this, "acks_received", "acknowledgements received this run"};
  Counter stale_acks{*this, "stale_acks", "acknowledgements of another run or from an unknown application, ignored"};
};

class Sender final : public Application {
 public:
  static std::vector<ParamSpec> parameters();

  explicit Sender(ApplicationContext& context);
  ~Sender() override;

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  using Clock = std::chrono::steady_clock;

  // Worker thread.
  void send_loop(SenderRun& run, std::stop_token stop);
  void drain(SenderRun& run, std::stop_token stop);
  bool send_end_of_run(SenderRun& run, ReceiverProxy& receiver, std::stop_token stop,
                       Clock::time_point& stop_deadline, Clock::time_point patience);
  void prepare_data(mem::Ref& frame, const SenderRun& run, std::uint64_t sequence, std::size_t payload,
                    std::uint8_t flags) noexcept;
  // parts > 0: the same bytes as parts of their own (the data header, then the pattern cut into `parts`); false
  // when the pool ran dry (nothing kept).
  bool prepare_parts(std::span<mem::Ref> parts, const SenderRun& run, std::uint64_t sequence, std::size_t payload,
                     std::uint8_t flags) noexcept;
  DataHeader data_header(const SenderRun& run, std::uint64_t sequence, std::size_t payload,
                         std::uint8_t flags) const noexcept;
  // batch > 1: the frames of one batch, prepared for one receiver and sent from `at` on.
  struct PreparedBatch {
    explicit PreparedBatch(std::size_t capacity) : blocks(capacity), frames(capacity) {}
    std::vector<mem::Ref> blocks;       // allocate_frames fills these
    std::vector<OutgoingFrame> frames;  // ... moved here with their headers' fields
    std::size_t size = 0;
    std::size_t at = 0;
    bool asks = false;  // its last frame asks for an acknowledgement
    bool empty() const noexcept { return at == size; }
    void clear() noexcept {
      for (std::size_t i = at; i < size; ++i) frames[i].data.reset();
      size = at = 0;
    }
  };
  enum class BatchStep { sent, wait, lost, give_up };
  BatchStep send_batch_to(SenderRun& run, ReceiverProxy& receiver, PreparedBatch& batch,
                          std::uint64_t& data_frames) noexcept;
  void record_sent(ReceiverProxy& receiver, std::uint64_t sequence, std::size_t payload, bool asked) noexcept;
  void lose_receiver(const SenderRun& run, ReceiverProxy& receiver);
  void give_up(const std::string& reason);
  std::size_t payload_size() const noexcept;

  // Dispatch thread.
  void on_ack(Frame&& frame);

  // Control thread.
  void stop_worker();
  void retire(std::unique_ptr<SenderRun> run);

  SenderConfiguration config_;  // written by configure(); read by the worker that enable() starts afterwards
  std::uint32_t runs_ = 0;      // enables so far: each run numbers its frames from 1 again
  std::unique_ptr<SenderRun> run_owner_;  // the current run, owned by the control thread
  std::atomic<SenderRun*> run_{nullptr};  // the same, for the acknowledgement handler
  std::atomic<std::uint32_t> current_run_{0};
  std::jthread worker_;
  Wakeup wakeup_;

  // Written by the worker only.
  SenderRunCounters run_counters_;
  std::atomic<Clock::rep> started_at_{0};   // steady-clock time the run started sending; 0: not yet
  std::atomic<Clock::rep> finished_at_{0};  // ... and stopped sending (before draining); 0: still sending
  std::atomic<bool> done_{false};
  RateMeter send_rate_;

  // Written by the dispatch thread only; they belong to run acks_run_, so a report during enable() shows
  // no acknowledgements of the previous run.
  SenderAckCounters ack_counters_;
  std::atomic<std::uint64_t> frames_acked_{0};  // for the outstanding gauge
  std::atomic<std::uint32_t> acks_run_{0};
};

}  // namespace daqx::nton
