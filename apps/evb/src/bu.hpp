// evb::BU, a builder unit: offers its free resource slots to the EvM, assembles each event by holding
// references into the blocks the EvM and the RUs send (no copy), checks that every contributor gave exactly
// one super-fragment with the right event id, size and CRC, passes built events to its output (discard,
// files, or a consumer in the same executive), then gives the slot back. A slow output first throttles (fewer
// slots offered), then blocks (none).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "daqx/apps/rate_meter.hpp"
#include "daqx/evb/consumer.hpp"
#include "daqx/evb/protocol.hpp"
#include "daqx/api/application.hpp"
#include "common/evm_loss_policy.hpp"
#include "dispatch.hpp"
#include "file_output.hpp"
#include "outbox.hpp"

namespace daqx::evb {

enum class OutputKind { discard, file, consumer };

struct BuConfiguration {
  Tid evm = kNoTid;
  std::vector<Tid> rus;             // contributors besides the EvM, from the "rus" selector
  std::uint32_t slots = 16;         // resource slots, each a credit for one batch of events
  OutputKind output = OutputKind::discard;
  FileOutputConfig files;           // output "file"
  std::string consumer;             // output "consumer": the name a downstream application published
  double throttle_level = 0.5;      // fraction of slots waiting for the output at which fewer are offered
  double block_level = 0.9;         // ... at which none are offered
  bool check_data = true;           // verify every super-fragment's headers and CRCs
  std::uint64_t memory_budget = 128ull << 20;  // received blocks the slots in use may hold (transport pool: 256 MiB)
  double request_interval = 0.1;    // s between requests when nothing else prompts one (liveness)
  double evm_timeout = 5.0;         // s of EvM silence after which this unit fails
};

class BU final : public Application {
 public:
  static std::vector<ParamSpec> parameters();
  explicit BU(ApplicationContext& context);
  ~BU() override;

  void configure() override;
  void enable() override;
  void stop() override;
  void halt() override;
  void report(MetricSink& sink) const override;

 private:
  struct Contribution {
    std::uint32_t size = 0;      // the super-fragment's size, from its first piece
    std::uint32_t received = 0;
    bool done = false;
    std::vector<std::span<const std::byte>> pieces;
  };
  struct EventUnderConstruction {
    std::uint32_t contributions_done = 0;
    bool built = false;
    std::uint32_t flags = 0;
    std::vector<Contribution> contributions;  // by contributor index: EvM first, then the RUs
  };
  struct Slot {
    enum class State { free, offered, building, output } state = State::free;
    std::uint32_t run = 0;
    std::uint32_t generation = 0;  // when offered
    std::uint64_t first_event = 0;
    std::uint64_t finished_first = 0;  // first event of the last batch this slot finished in this run
    std::uint32_t count = 0;
    std::uint32_t built = 0;
    std::uint32_t incomplete = 0;
    std::uint32_t corrupt = 0;
    Clock::time_point first_data{};
    std::vector<EventUnderConstruction> events;  // capacity kept between batches
    std::vector<mem::Ref> blocks;                // every block holding this batch's pieces
  };

  // Dispatch thread.
  void on_fragments(Frame&& frame);
  void on_control(Frame&& frame);
  void tick();
  void heard_evm();
  void start_building(Slot& slot, const BlockHeader& header);
  void try_build(Slot& slot, std::uint32_t index);
  void slot_built(std::uint32_t index);
  void finish_slot(std::uint32_t index, std::uint32_t run, std::uint32_t generation);
  void abandon_slots();
  void request(bool heartbeat);
  void schedule_request();
  void new_run(std::uint32_t run);
  void publish();
  int contributor_index(Tid tid) const noexcept;

  // Output worker (file output).
  void output_loop(std::stop_token stop, std::uint64_t run_number);  // run_number: the operator's, for file headers
  void write_slot(FileWriter& writer, const Slot& slot, std::vector<EventRecordView::Fragment>& fragments,
                  std::vector<std::span<const std::byte>>& spans);
  void stop_output();

  BuConfiguration config_;
  Outbox outbox_;
  Ticker ticker_;
  std::vector<Tid> contributors_;  // EvM, then RUs

  // Dispatch thread only.
  bool running_ = false;
  bool request_posted_ = false;
  EvmLossPolicy evm_loss_;
  std::uint32_t run_ = 0;
  std::uint32_t generation_ = 0;
  std::uint64_t incarnation_ = 0;
  Clock::time_point last_request_{};
  std::vector<Slot> slots_;
  std::vector<bool> contributor_down_;
  std::vector<Discard> discards_;  // given back with the next request
  std::shared_ptr<EventConsumerService> consumer_;
  std::vector<double> latencies_;  // build latency samples (us) since the last publication
  Clock::time_point latency_published_{};
  std::uint32_t problems_logged_ = 0;
  std::uint64_t batch_bytes_ = 0;  // received block bytes of a batch, largest recent; 0: none built yet

  // The output worker's queue of built slots (file output).
  std::mutex output_mutex_;
  std::condition_variable_any output_changed_;
  std::deque<std::uint32_t> output_queue_;
  std::string output_failure_;  // closing the last file failed when the worker ended: stop() reports it
  std::jthread output_worker_;
  std::atomic<std::uint64_t> output_events_{0};
  std::atomic<std::uint64_t> output_bytes_{0};
  std::atomic<std::uint64_t> files_closed_{0};

  // Published.
  Counter events_built_{0};
  Counter bytes_built_{0};
  Counter events_incomplete_{0};
  Counter events_corrupt_{0};
  Counter events_abandoned_{0};
  Counter fragments_received_{0};
  Counter blocks_received_{0};
  Counter duplicate_pieces_{0};
  Counter stale_blocks_{0};
  Counter protocol_errors_{0};
  Counter malformed_{0};
  Counter requests_sent_{0};
  Counter resets_{0};
  Counter slots_offered_{0};
  Counter slots_building_{0};
  Counter slots_in_output_{0};
  Counter blocks_held_{0};
  Counter output_state_{0};
  Counter slot_limit_{0};
  std::atomic<std::uint64_t> batch_bytes_published_{0};
  Counter run_published_{0};
  LatencyHistogram build_latency_;  // every event of this run, for /metrics (the median is for people)
  std::atomic<double> latency_median_us_{0};
  std::atomic<double> latency_p99_us_{0};
  apps::RateMeter rate_;
};

}  // namespace daqx::evb
