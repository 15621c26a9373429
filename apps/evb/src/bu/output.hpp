// evb::bu::EventOutput, where the BU's built events go: discarded, handed to a consumer in the same executive, or
// written to files by an output worker, which owns a slot from the moment it is queued until it posts the slot
// back (the dispatch thread does not touch it between). It owns the worker, its queue, the consumer, and the
// counts of what went to files.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bu/bu_configuration.hpp"
#include "bu/built_event_record.hpp"
#include "bu/slot_table.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/evb/consumer.hpp"
#include "files/event_file_writer.hpp"

namespace daqx::evb::bu {

class EventOutput {
 public:
  // Run on the dispatch thread (posted there): the output is done with a slot, or failed (the BU fails with it).
  using SlotFinished = std::function<void(std::uint32_t index, std::uint32_t run, std::uint32_t generation)>;
  using Failed = std::function<void(const std::string& reason)>;

  // References into the BU that owns the output: they outlive it.
  EventOutput(const BuConfiguration& config, ApplicationContext& context, SlotTable& slots,
              const std::vector<Tid>& contributors, SlotFinished finished, Failed failed)
      : config_(config), context_(context), slots_(slots), contributors_(contributors),
        finished_(std::move(finished)), failed_(std::move(failed)) {}

  // Configure, dispatch thread: the consumer events go to (output consumer), or none.
  void set_consumer(std::shared_ptr<EventConsumerService> consumer) { consumer_ = std::move(consumer); }
  // Enable, dispatch thread: nothing written yet in this run.
  void reset_counts() noexcept;
  // Enable: the file output's worker starts (run_number: the operator's, for file headers).
  void start(std::uint64_t run_number);
  // Dispatch thread: a built slot, given to the output (its state is then output) unless the output discards
  // (false: the slot is finished now, by the caller).
  bool take(std::uint32_t index);
  // Stop, halt: the worker ends; slots it never got to come back unwritten.
  void stop();
  // Closing the last file failed when the worker ended: the reason, once ("" if none). Clear: halt forgets it.
  std::string take_failure();
  void clear_failure();

  // What went to files, set by the worker from its writer's stats: this run's events and bytes (restarted at
  // enable), and the files the writer closed (its own count: a new writer starts it again).
  struct RunCounters : CounterSet {
    Counter events{*this, "output_events", "events written to files"};
    Counter bytes{*this, "output_bytes", "bytes written to files"};
  };
  struct WriterCounters : CounterSet {
    Counter files_closed{*this, "files_closed", "output files closed (rotated or at stop)"};
  };
  const RunCounters& run_counters() const noexcept { return run_counters_; }
  const WriterCounters& writer_counters() const noexcept { return writer_counters_; }

 private:
  void loop(std::stop_token stop, std::uint64_t run_number);
  void write_slot(FileWriter& writer, const BuilderSlot& slot, RecordPieces& pieces);

  const BuConfiguration& config_;
  ApplicationContext& context_;
  SlotTable& slots_;
  const std::vector<Tid>& contributors_;
  SlotFinished finished_;
  Failed failed_;
  std::shared_ptr<EventConsumerService> consumer_;

  // The worker's queue of built slots (file output).
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<std::uint32_t> queue_;
  std::string failure_;  // closing the last file failed when the worker ended: stop() reports it
  RunCounters run_counters_;
  WriterCounters writer_counters_;
  std::jthread worker_;  // last: ends before what it uses goes
};

}  // namespace daqx::evb::bu
