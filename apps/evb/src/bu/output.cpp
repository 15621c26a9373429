// Where the BU's built events go: discarded, handed to a consumer in the same executive, or written to files
// by an output worker, which owns a slot from the moment it is queued until it posts the slot back (the
// dispatch thread does not touch it between).
#include <algorithm>

#include "bu/bu.hpp"
#include "daqx/apps/text.hpp"

namespace daqx::evb {
using apps::concatenate;
using apps::to_text;

void BU::slot_built(std::uint32_t index) {
  BuilderSlot& s = slots_[index];
  std::uint64_t held = 0;
  for (const mem::Ref& block : s.blocks) held += block.capacity();
  batch_bytes_ = recent_batch_bytes(batch_bytes_, held);
  switch (config_.output) {
    case OutputKind::discard:
      finish_slot(index, s.run, s.generation);
      return;
    case OutputKind::file: {
      s.state = BuilderSlot::State::output;
      std::lock_guard lock(output_mutex_);
      output_queue_.push_back(index);
      output_changed_.notify_one();
      break;
    }
    case OutputKind::consumer: {
      s.state = BuilderSlot::State::output;
      // The slot comes back when the consumer has dropped every event of it (the last `hold`).
      ApplicationContext* ctx = &context();
      const std::uint32_t run = s.run, generation = s.generation;
      std::shared_ptr<const void> hold(nullptr, [this, ctx, index, run, generation](const void*) {
        ctx->post_task([this, index, run, generation] { finish_slot(index, run, generation); });
      });
      for (std::uint32_t i = 0; i < s.count; ++i) {
        const EventUnderConstruction& e = s.events[i];
        BuiltEvent event;
        event.run = s.run;
        event.event = s.first_event + i;
        event.flags = e.flags;
        event.builder = context().tid();
        event.hold = hold;
        for (std::size_t c = 0; c < e.contributions.size(); ++c)
          if (e.contributions[c].done)
            event.fragments.push_back({contributors_[c], e.contributions[c].size, e.contributions[c].pieces});
        consumer_->consume(std::move(event));
      }
      break;
    }
  }
  publish();
  evm_.schedule_request();
}

void BU::output_loop(std::stop_token stop, std::uint64_t run_number) {
  std::unique_ptr<FileWriter> writer;  // one per run: the run is in the file names
  std::uint32_t writer_run = 0;
  std::vector<EventRecordView::Fragment> fragments;
  std::vector<std::span<const std::byte>> spans;
  bool failed = false;  // after a failure nothing more is written (the BU has failed); slots only go back
  // Closes the current file where only the log is left to tell of a failure to: the run is over for it.
  // Returns the failure, or "".
  const auto close_and_log = [&](std::string_view when) -> std::string {
    if (!writer) return {};
    try {
      writer->close();
      files_closed_.store(writer->stats().files_closed, std::memory_order_relaxed);
    } catch (const std::exception& error) {
      context().log(LogLevel::error, concatenate({"output: closing the file", when, ": ", error.what()}));
      return concatenate({"output: ", error.what()});
    }
    return {};
  };
  for (;;) {
    std::uint32_t index = 0;
    {
      std::unique_lock lock(output_mutex_);
      // stop() waits (bounded) for the backlog before it asks this loop to end; once it asks, what is still
      // queued goes back unwritten (stop_output). Not "once the queue is empty": a BU stopped before its EvM
      // keeps receiving events, and with a slow output the queue would never empty and stop never return.
      if (!output_changed_.wait(lock, stop, [&] { return !output_queue_.empty(); }) || stop.stop_requested()) break;
      index = output_queue_.front();
      output_queue_.pop_front();
    }
    const BuilderSlot& s = slots_[index];
    if (!failed) try {
      if (writer && writer_run != s.run) {  // the last run's file: closed here, so an error is reported
        writer->close();
        writer.reset();
      }
      if (!writer) {
        writer = std::make_unique<FileWriter>(config_.files, s.run, context().tid(), run_number);
        writer_run = s.run;
      }
      write_slot(*writer, s, fragments, spans);
      output_events_.store(writer->stats().events, std::memory_order_relaxed);
      output_bytes_.store(writer->stats().bytes, std::memory_order_relaxed);
      files_closed_.store(writer->stats().files_closed, std::memory_order_relaxed);
    } catch (const std::exception& error) {
      failed = true;
      const std::string reason = concatenate({"output: ", error.what()});
      // The file being written is closed before the failure is told, so whoever sees Failed finds the files
      // settled: the last one cut back to its last whole record and closed, or left NAME.open if even that
      // failed (disk full).
      close_and_log(" after the failure");
      writer.reset();
      context().post_task([this, reason] {
        running_ = false;
        context().fail(reason);
      });
    }
    const std::uint32_t run = s.run, generation = s.generation;
    context().post_task([this, index, run, generation] { finish_slot(index, run, generation); });
  }
  // The last file of the run closes here (stop, halt): a failure to (disk full, file removed) is the run's
  // too, so stop() reports it.
  if (std::string failure = close_and_log(""); !failure.empty()) {
    std::lock_guard lock(output_mutex_);
    output_failure_ = std::move(failure);
  }
}

void BU::write_slot(FileWriter& writer, const BuilderSlot& s, std::vector<EventRecordView::Fragment>& fragments,
                    std::vector<std::span<const std::byte>>& spans) {
  for (std::uint32_t i = 0; i < s.count; ++i) {
    const EventUnderConstruction& e = s.events[i];
    fragments.clear();
    spans.clear();
    for (const Contribution& part : e.contributions) spans.insert(spans.end(), part.pieces.begin(), part.pieces.end());
    std::size_t at = 0;
    for (std::size_t c = 0; c < e.contributions.size(); ++c) {
      const Contribution& part = e.contributions[c];
      if (!part.done) continue;
      fragments.push_back({contributors_[c], part.size, std::span(spans).subspan(at, part.pieces.size())});
      at += part.pieces.size();
    }
    EventRecordView view;
    view.run = s.run;
    view.event = s.first_event + i;
    view.flags = e.flags;
    view.fragments = fragments;
    writer.write(view);
  }
}

void BU::stop_output() {
  if (!output_worker_.joinable()) return;
  output_worker_.request_stop();
  output_changed_.notify_all();
  output_worker_.join();
  // Slots it never got to come back unwritten (halt, or stop after its wait ran out).
  std::deque<std::uint32_t> left;
  {
    std::lock_guard lock(output_mutex_);
    left.swap(output_queue_);
  }
  for (std::uint32_t index : left) {
    const std::uint32_t run = slots_[index].run, generation = slots_[index].generation;
    context().post_task([this, index, run, generation] { finish_slot(index, run, generation); });
  }
}

}  // namespace daqx::evb
