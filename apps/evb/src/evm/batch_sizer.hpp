// How many events the EvM puts in one batch (one BU resource slot): by default about batchBytes of event data
// in all (the RUs' super-fragments and the trigger fragment), from the sizes the RUs report, so a batch costs the
// same few frames whatever the fragment size; small fragments get large batches, large fragments small ones
// (within bounds). The whole batch, not each RU's share, is what is sized: a BU holds all of it until it is
// built, so with many RUs a per-RU target made slots of many MiB, and the first slots of a run then filled
// together, interleaved, and built nothing for seconds (8x8 at 16 KiB: 8 MiB per slot).
// eventsPerRequest, when set, fixes the count instead. Dispatch thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace daqx::evb::evm {

struct BatchSizing {
  std::uint32_t fixed_events = 0;        // eventsPerRequest; 0: sized in bytes
  std::uint64_t batch_bytes = 2u << 20;  // target event bytes of a whole batch, every contributor's
  std::uint32_t min_events = 8;          // bounds of a sized batch
  std::uint32_t max_events = 4096;
  std::uint64_t trigger_bytes = 0;       // the EvM's own fragment per event, part of every event
};

class BatchSizer {
 public:
  // A new run with `contributors` RUs reporting: sizes start unknown (the batch is min_events until one report
  // shows data; with no RUs, the trigger fragment's size decides at once).
  void start(const BatchSizing& sizing, std::size_t contributors);

  // An RU's status: its counters since its enable (super-fragments and their bytes). Differences between
  // reports give its recent bytes per event; a counter that went back (a restarted RU) starts it over.
  void observe(std::size_t contributor, std::uint64_t fragments_sent, std::uint64_t bytes_sent);

  // Events per batch now.
  std::uint32_t events_per_batch() const noexcept { return events_; }
  // The recent bytes of one whole event (the trigger fragment and every contributor's super-fragment; an RU
  // that has not reported yet counts as the mean of those that have), 0 while unknown.
  double bytes_per_event() const noexcept { return event_bytes_; }

 private:
  struct Seen {
    std::uint64_t fragments = 0;
    std::uint64_t bytes = 0;
    double bytes_per_event = 0;  // smoothed over reports
  };
  void resize();
  // One RU's bytes per event went from before to after: the sum and the count of those reporting follow.
  void account(double before, double after) noexcept;

  BatchSizing sizing_;
  std::vector<Seen> seen_;
  double reported_sum_ = 0;          // of seen_'s bytes_per_event
  std::size_t reporting_ = 0;        // seen_ with bytes_per_event != 0
  std::size_t reports_since_summed_ = 0;
  double event_bytes_ = 0;
  std::uint32_t events_ = 8;
};

}  // namespace daqx::evb::evm
