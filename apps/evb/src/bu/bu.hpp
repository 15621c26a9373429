// evb::BU, a builder unit: offers its free resource slots to the EvM, assembles each event by holding
// references into the blocks the EvM and the RUs send (no copy), checks that every contributor gave exactly
// one super-fragment with the right event id, size and CRC, passes built events to its output (discard,
// files, or a consumer in the same executive), then gives the slot back. A slow output first throttles (fewer
// slots offered), then blocks (none). Its parts, by role: bu_configuration, resource_manager (slots, limits,
// priority), evm_proxy (EvmProxy: messaging with the EvM), event_assembly, output.
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

#include "bu/bu_configuration.hpp"
#include "bu/evm_proxy.hpp"
#include "bu/resource_manager.hpp"
#include "daqx/api/application.hpp"
#include "daqx/apps/rate_meter.hpp"
#include "daqx/evb/consumer.hpp"
#include "daqx/evb/protocol.hpp"
#include "dispatch.hpp"
#include "event_file_writer.hpp"
#include "outbox.hpp"

namespace daqx::evb {

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
  // Dispatch thread. Each group is in the file named for its role.
  void tick();  // bu.cpp
  void publish();
  int contributor_index(Tid tid) const noexcept;

  void on_control(Frame&& frame);  // evm_proxy.cpp: what the EvM says, acted on here and told to evm_
  void new_run(std::uint32_t run);
  void finish_slot(std::uint32_t index, std::uint32_t run, std::uint32_t generation);
  void abandon_slots();

  void on_fragments(Frame&& frame);  // event_assembly.cpp: events assembled from the contributions, checked
  void start_building(BuilderSlot& slot, const BlockHeader& header);
  void try_build(BuilderSlot& slot, std::uint32_t index);

  void slot_built(std::uint32_t index);  // output.cpp: discard, consumer, or queued for the file output worker

  // Output worker (file output), output.cpp.
  void output_loop(std::stop_token stop, std::uint64_t run_number);  // run_number: the operator's, for file headers
  void write_slot(FileWriter& writer, const BuilderSlot& slot, std::vector<EventRecordView::Fragment>& fragments,
                  std::vector<std::span<const std::byte>>& spans);
  void stop_output();

  BuConfiguration config_;
  Outbox outbox_;
  Ticker ticker_;
  std::vector<Tid> contributors_;  // EvM, then RUs

  // Dispatch thread only.
  bool running_ = false;
  std::vector<BuilderSlot> slots_;
  std::vector<bool> contributor_down_;
  std::shared_ptr<EventConsumerService> consumer_;
  std::vector<double> latencies_;  // build latency samples (us) since the last publication
  Clock::time_point latency_published_{};
  std::uint32_t problems_logged_ = 0;
  std::uint64_t batch_bytes_ = 0;  // received block bytes of a batch, largest recent; 0: none built yet
  EvmProxy evm_;  // after what it refers to

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
  Counter slots_offered_{0};
  Counter slots_building_{0};
  Counter slots_in_output_{0};
  Counter blocks_held_{0};
  std::atomic<std::uint64_t> batch_bytes_published_{0};
  LatencyHistogram build_latency_;  // every event of this run, for /metrics (the median is for people)
  std::atomic<double> latency_median_us_{0};
  std::atomic<double> latency_p99_us_{0};
  apps::RateMeter rate_;
};

}  // namespace daqx::evb
