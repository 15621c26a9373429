// evb::evm::BuProxy: one builder unit's record and the EvM's messaging to it.
#include "evm/bu_proxy.hpp"

#include <algorithm>
#include <vector>

#include "daqx/apps/text.hpp"

namespace daqx::evb::evm {

void BuProxy::start_run(std::uint32_t run) {
  state_ = State::unknown;
  generation_ = (run << 16) | 1;  // unique per run: a request from an earlier run is always refused
  incarnation_ = 0;
  credits_.clear();
  outstanding_.clear();
  events_in_flight_ = 0;
  drops_ = 0;
  counters_->reset();
}

void BuProxy::begin_readmission(std::uint64_t incarnation, Clock::time_point now) {
  incarnation_ = incarnation;
  state_ = State::unknown;
  last_reset_ = now;
}

std::uint64_t BuProxy::abandon_work() {
  const std::uint64_t lost = events_in_flight_;
  counters_->lost.add_single_writer(lost);
  outstanding_.clear();
  events_in_flight_ = 0;
  credits_.clear();
  return lost;
}

void BuProxy::mark_dropped(const std::string& why) {
  ++drops_;
  state_ = State::dropped;
  dropped_because_ = why;
  ++generation_;
}

BuProxy::Returned BuProxy::take_request(const Request& request, Clock::time_point now) {
  Returned returned;
  last_heard_ = now;
  priority_ = request.priority;
  output_state_ = request.state;
  for (const Discard& d : request.discards) {
    auto it = outstanding_.find(d.slot);
    if (it == outstanding_.end() || it->second.first_event != d.first_event || it->second.count != d.count) {
      ++returned.unexpected;  // never assigned to this BU, or given back twice: a double build
      continue;
    }
    outstanding_.erase(it);
    events_in_flight_ -= d.count;
    counters_->completed.add_single_writer(d.count);
    returned.completed += d.count;
    returned.incomplete += d.incomplete;
    returned.corrupt += d.corrupt;
  }
  for (std::uint32_t slot : request.free_slots) {
    const bool held =
        std::any_of(credits_.begin(), credits_.end(), [slot](const Credit& c) { return c.slot == slot; });
    if (held || outstanding_.count(slot) != 0) {
      ++returned.unexpected;  // a slot offered while its batch is out: the BU lost track
      continue;
    }
    credits_.push_back({slot});
  }
  return returned;
}

Assignment BuProxy::assign_front_credit(std::uint32_t count, std::uint64_t first_event) {
  const std::uint32_t slot = credits_.front().slot;
  credits_.pop_front();
  const Assignment a{tid(), generation_, slot, count, first_event};
  outstanding_[slot] = {a.first_event, count};
  events_in_flight_ += count;
  counters_->assigned.add_single_writer(count);
  return a;
}

void BuProxy::publish() {
  published_->state.store(state_ == State::alive ? 1 : state_ == State::dropped ? 2 : 0, std::memory_order_relaxed);
  counters_->credits.set(credits_.size());
  published_->output_state.store(output_state_, std::memory_order_relaxed);
}

void BuProxy::report(MetricSink& sink) const {
  std::vector<std::pair<std::string, std::string>> l{{"bu", apps::to_text(std::uint64_t{tid()})}};
  counters_->report(sink, l);
  sink.state("bu_state", published_->state.load(std::memory_order_relaxed), {"not_heard", "taking_part", "dropped"},
             "this BU as the EvM sees it: not yet heard, taking part, dropped", l);
  sink.state("bu_output_state", published_->output_state.load(std::memory_order_relaxed),
             {"running", "throttled", "blocked"}, "this BU's output as it last said: running, throttled, blocked", l);
}

}  // namespace daqx::evb::evm
