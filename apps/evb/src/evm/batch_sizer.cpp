// Batches sized in bytes from what the RUs report.
#include "evm/batch_sizer.hpp"

#include <algorithm>
#include <cmath>

namespace daqx::evb::evm {

void BatchSizer::start(const BatchSizing& sizing, std::size_t contributors) {
  sizing_ = sizing;
  sizing_.min_events = std::max<std::uint32_t>(1, sizing_.min_events);
  sizing_.max_events = std::max(sizing_.min_events, sizing_.max_events);
  seen_.assign(contributors, Seen{});
  reported_sum_ = 0;
  reporting_ = 0;
  reports_since_summed_ = 0;
  event_bytes_ = 0;
  events_ = sizing_.fixed_events != 0 ? sizing_.fixed_events : sizing_.min_events;
  // Until an RU has reported, its sizes are unknown and may be far larger than the trigger fragment: batches
  // sized from the trigger alone would make a BU hold thousands of large events per slot, more than its
  // transport's receive pool, and stall. Only an EvM with no RUs sizes from its trigger fragment at once.
  if (sizing_.fixed_events == 0 && contributors == 0 && sizing_.trigger_bytes != 0) {
    event_bytes_ = static_cast<double>(sizing_.trigger_bytes);
    resize();
  }
}

void BatchSizer::observe(std::size_t contributor, std::uint64_t fragments_sent, std::uint64_t bytes_sent) {
  if (sizing_.fixed_events != 0 || contributor >= seen_.size()) return;
  Seen& s = seen_[contributor];
  const double before = s.bytes_per_event;
  if (fragments_sent < s.fragments || bytes_sent < s.bytes) s = Seen{};  // counters started over
  const std::uint64_t fragments = fragments_sent - s.fragments;
  const std::uint64_t bytes = bytes_sent - s.bytes;
  if (fragments == 0) {  // nothing sent since the last report: no news about sizes
    account(before, s.bytes_per_event);
    return;
  }
  const double recent = static_cast<double>(bytes) / static_cast<double>(fragments);
  // Smoothed so that one report of unusually large or small events does not swing the batch.
  s.bytes_per_event = s.bytes_per_event == 0 ? recent : 0.75 * s.bytes_per_event + 0.25 * recent;
  s.fragments = fragments_sent;
  s.bytes = bytes_sent;
  // The sum over the RUs kept as each one changes (a report costs the same whatever the number of RUs), and
  // summed afresh once per round of reports so rounding does not accumulate.
  if (++reports_since_summed_ < seen_.size()) {
    account(before, s.bytes_per_event);
  } else {
    reports_since_summed_ = 0;
    reported_sum_ = 0;
    reporting_ = 0;
    for (const Seen& each : seen_) {
      if (each.bytes_per_event == 0) continue;
      reported_sum_ += each.bytes_per_event;
      ++reporting_;
    }
  }
  const double reported = reported_sum_;
  const std::size_t reporting = reporting_;
  // An RU not heard from yet is assumed like the mean of the others: RUs of one partition carry similar
  // shares, and guessing 0 would make the first batches too large by the missing RUs' share.
  // (None reporting sizes: every report so far said 0 bytes, e.g. RUs without sources; nothing to size from.)
  const double unreported =
      reporting == 0 ? 0 : static_cast<double>(seen_.size() - reporting) * (reported / static_cast<double>(reporting));
  event_bytes_ = static_cast<double>(sizing_.trigger_bytes) + reported + unreported;
  resize();
}

void BatchSizer::account(double before, double after) noexcept {
  reported_sum_ += after - before;
  if (before == 0 && after != 0) ++reporting_;
  if (before != 0 && after == 0) --reporting_;
}

void BatchSizer::resize() {
  if (event_bytes_ <= 0) return;
  const double wanted = std::clamp(std::floor(static_cast<double>(sizing_.batch_bytes) / event_bytes_),
                                   static_cast<double>(sizing_.min_events), static_cast<double>(sizing_.max_events));
  // Hysteresis: a change under a quarter is noise from the sizes' spread; keeping the count steady keeps the
  // BUs' memory budget (learnt per batch) steady too.
  const double current = static_cast<double>(events_);
  if (std::abs(wanted - current) > 0.25 * current || wanted == sizing_.min_events || wanted == sizing_.max_events)
    events_ = static_cast<std::uint32_t>(wanted);
}

}  // namespace daqx::evb::evm
