// evb::evm::BuilderTotals, the EvM's sums over its BUs (credits waiting, events in flight, BUs taking part, BUs
// dropped this run, BUs out of the run now), kept as each BU changes instead of summed over all of them for every request: the EvM
// notes a BU after anything it does to it, and the totals follow the difference. Dispatch thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "evm/bu_proxy.hpp"

namespace daqx::evb::evm {

class BuilderTotals {
 public:
  // A new run of `builders` BUs, each noted as nothing (call note() for each).
  void start(std::size_t builders) {
    seen_.assign(builders, Seen{});
    credits_ = events_in_flight_ = alive_ = dropped_ = out_ = 0;
  }

  // BU `i` as it is now; what changed since it was last noted goes into the totals.
  void note(std::size_t i, const BuProxy& bu) {
    Seen& s = seen_[i];
    const bool alive = bu.state() == BuProxy::State::alive;
    const Seen now{bu.credits(), bu.events_in_flight(), alive, bu.drops() != 0, bu.drops() != 0 && !alive};
    credits_ += now.credits - s.credits;
    events_in_flight_ += now.events_in_flight - s.events_in_flight;
    alive_ += static_cast<std::size_t>(now.alive) - static_cast<std::size_t>(s.alive);
    dropped_ += static_cast<std::size_t>(now.dropped) - static_cast<std::size_t>(s.dropped);
    out_ += static_cast<std::size_t>(now.out) - static_cast<std::size_t>(s.out);
    s = now;
  }

  std::uint64_t credits() const noexcept { return credits_; }
  std::uint64_t events_in_flight() const noexcept { return events_in_flight_; }
  std::size_t alive() const noexcept { return alive_; }
  std::size_t dropped() const noexcept { return dropped_; }  // BUs dropped at least once this run
  std::size_t out() const noexcept { return out_; }          // BUs dropped and not taken in again (yet)

 private:
  struct Seen {
    std::uint64_t credits = 0;
    std::uint64_t events_in_flight = 0;
    bool alive = false;
    bool dropped = false;
    bool out = false;
  };
  std::vector<Seen> seen_;
  // Unsigned and updated by differences: wrap-around in the intermediate sums cancels out.
  std::uint64_t credits_ = 0;
  std::uint64_t events_in_flight_ = 0;
  std::size_t alive_ = 0;
  std::size_t dropped_ = 0;
  std::size_t out_ = 0;
};

}  // namespace daqx::evb::evm
