// evb::bu::EventOutput (output.hpp): discard, consumer, or the file output worker.
#include "bu/output.hpp"

#include <algorithm>

#include "daqx/apps/text.hpp"

namespace daqx::evb::bu {
using apps::concatenate;
using apps::to_text;

void EventOutput::reset_counts() noexcept {
  run_counters_.reset();
}

void EventOutput::start(std::uint64_t run_number) {
  if (config_.output == OutputKind::file)
    worker_ = context_.start_worker("output", [this, run_number](std::stop_token stop) { loop(stop, run_number); });
}

bool EventOutput::take(std::uint32_t index) {
  BuilderSlot& s = slots_.slot(index);
  switch (config_.output) {
    case OutputKind::discard:
      return false;
    case OutputKind::file: {
      s.state = BuilderSlot::State::output;
      std::lock_guard lock(mutex_);
      queue_.push_back(index);
      changed_.notify_one();
      break;
    }
    case OutputKind::consumer: {
      s.state = BuilderSlot::State::output;
      // The slot comes back when the consumer has dropped every event of it (the last `hold`).
      ApplicationContext* ctx = &context_;
      const std::uint32_t run = s.run, generation = s.generation;
      std::shared_ptr<const void> hold(nullptr, [this, ctx, index, run, generation](const void*) {
        ctx->post_task([this, index, run, generation] { finished_(index, run, generation); });
      });
      for (std::uint32_t i = 0; i < s.count; ++i) {
        const EventUnderConstruction& e = s.events[i];
        BuiltEvent event;
        event.run = s.run;
        event.event = s.first_event + i;
        event.flags = e.flags;
        event.builder = context_.tid();
        event.hold = hold;
        for (std::size_t c = 0; c < e.contributions.size(); ++c)
          if (e.contributions[c].done)
            event.fragments.push_back({contributors_[c], e.contributions[c].size, e.contributions[c].pieces});
        consumer_->consume(std::move(event));
      }
      break;
    }
  }
  return true;
}

std::string EventOutput::take_failure() {
  std::string failure;
  std::lock_guard lock(mutex_);
  failure.swap(failure_);
  return failure;
}

void EventOutput::clear_failure() {
  std::lock_guard lock(mutex_);
  failure_.clear();
}

void EventOutput::loop(std::stop_token stop, std::uint64_t run_number) {
  std::unique_ptr<FileWriter> writer;  // one per run: the run is in the file names
  std::uint32_t writer_run = 0;
  RecordPieces pieces;
  bool failed = false;  // after a failure nothing more is written (the BU has failed); slots only go back
  // Closes the current file where only the log is left to tell of a failure to: the run is over for it.
  // Returns the failure, or "".
  const auto close_and_log = [&](std::string_view when) -> std::string {
    if (!writer) return {};
    try {
      writer->close();
      writer_counters_.files_closed.set(writer->stats().files_closed);
    } catch (const std::exception& error) {
      context_.log(LogLevel::error, concatenate({"output: closing the file", when, ": ", error.what()}));
      return concatenate({"output: ", error.what()});
    }
    return {};
  };
  for (;;) {
    std::uint32_t index = 0;
    {
      std::unique_lock lock(mutex_);
      // stop() waits (bounded) for the backlog before it asks this loop to end; once it asks, what is still
      // queued goes back unwritten (stop_output). Not "once the queue is empty": a BU stopped before its EvM
      // keeps receiving events, and with a slow output the queue would never empty and stop never return.
      if (!changed_.wait(lock, stop, [&] { return !queue_.empty(); }) || stop.stop_requested()) break;
      index = queue_.front();
      queue_.pop_front();
    }
    const BuilderSlot& s = slots_.slot(index);
    if (!failed) try {
      if (writer && writer_run != s.run) {  // the last run's file: closed here, so an error is reported
        writer->close();
        writer.reset();
      }
      if (!writer) {
        writer = std::make_unique<FileWriter>(config_.files, s.run, context_.tid(), run_number);
        writer_run = s.run;
      }
      write_slot(*writer, s, pieces);
      run_counters_.events.set(writer->stats().events);
      run_counters_.bytes.set(writer->stats().bytes);
      writer_counters_.files_closed.set(writer->stats().files_closed);
    } catch (const std::exception& error) {
      failed = true;
      const std::string reason = concatenate({"output: ", error.what()});
      // The file being written is closed before the failure is told, so whoever sees Failed finds the files
      // settled: the last one cut back to its last whole record and closed, or left NAME.open if even that
      // failed (disk full).
      close_and_log(" after the failure");
      writer.reset();
      context_.post_task([this, reason] { failed_(reason); });
    }
    const std::uint32_t run = s.run, generation = s.generation;
    context_.post_task([this, index, run, generation] { finished_(index, run, generation); });
  }
  // The last file of the run closes here (stop, halt): a failure to (disk full, file removed) is the run's
  // too, so stop() reports it.
  if (std::string failure = close_and_log(""); !failure.empty()) {
    std::lock_guard lock(mutex_);
    failure_ = std::move(failure);
  }
}

void EventOutput::write_slot(FileWriter& writer, const BuilderSlot& s, RecordPieces& pieces) {
  for (std::uint32_t i = 0; i < s.count; ++i) writer.write(built_event_record(s, i, contributors_, pieces));
}

void EventOutput::stop() {
  if (!worker_.joinable()) return;
  worker_.request_stop();
  changed_.notify_all();
  worker_.join();
  // Slots it never got to come back unwritten (halt, or stop after its wait ran out).
  std::deque<std::uint32_t> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(queue_);
  }
  for (std::uint32_t index : left) {
    const std::uint32_t run = slots_.slot(index).run, generation = slots_.slot(index).generation;
    context_.post_task([this, index, run, generation] { finished_(index, run, generation); });
  }
}

}  // namespace daqx::evb::bu
