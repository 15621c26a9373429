// The EvM's BU drop and readmission policy.
#include "evm/bu_drop_policy.hpp"

#include <algorithm>

#include "daqx/apps/text.hpp"
#include "common/dispatch.hpp"

namespace daqx::evb::evm {
using apps::concatenate;
using apps::to_text;

std::optional<std::string> BuDropPolicy::check_liveness(const BuProxy& bu, Clock::time_point now) const {
  if (bu.state() != BuProxy::State::alive || now - bu.last_heard() <= seconds(bu_timeout_)) return std::nullopt;
  return concatenate({"no request for ", to_text(seconds_between(bu.last_heard(), now)), " s"});
}

BuDropPolicy::Admission BuDropPolicy::admit(BuProxy& bu, const Request& request) const {
  const bool current = request.generation == bu.generation() && request.incarnation == bu.incarnation();
  if (current && bu.state() == BuProxy::State::alive) return Admission::current;
  if (current && bu.state() == BuProxy::State::unknown) {
    bu.take_in();  // it took the reset
    return bu.drops() != 0 ? Admission::taken_in_again : Admission::taken_in;
  }
  return Admission::refused;
}

bool BuDropPolicy::readmit(BuProxy& bu, const Request& request, Clock::time_point now) const {
  if (request.incarnation == bu.incarnation() && now - bu.last_reset() <= seconds(0.05)) return false;
  bu.begin_readmission(request.incarnation, now);
  return true;
}

std::uint64_t BuDropPolicy::drop(BuProxy& bu, const std::string& why) const {
  const std::uint64_t lost = bu.abandon_work();
  bu.mark_dropped(why);
  return lost;
}

std::string BuDropPolicy::drop_message(const BuProxy& bu, const std::string& why, std::uint64_t lost) {
  return concatenate({"BU ", to_text(std::uint64_t{bu.tid()}), " dropped: ", why, "; ", to_text(lost), " events lost"});
}

std::optional<std::string> BuDropPolicy::no_builder_left(const std::vector<BuProxy>& bus) {
  const bool none_alive =
      std::none_of(bus.begin(), bus.end(), [](const BuProxy& bu) { return bu.state() == BuProxy::State::alive; });
  const bool any_dropped = std::any_of(bus.begin(), bus.end(), [](const BuProxy& bu) { return bu.drops() != 0; });
  if (!none_alive || !any_dropped) return std::nullopt;
  std::string condition = "no builder unit left, nothing is assigned until one is taken in again:";
  for (const BuProxy& bu : bus)
    condition.append(concatenate({bu.tid() == bus.front().tid() ? " BU " : "; BU ", to_text(std::uint64_t{bu.tid()}),
                                  bu.drops() != 0 ? concatenate({" dropped: ", bu.dropped_because()})
                                                 : std::string(" never heard")}));
  return condition;
}

std::string BuDropPolicy::out_of_run(const std::vector<BuProxy>& bus) {
  std::string listed;
  for (const BuProxy& bu : bus)
    if (bu.drops() != 0 && bu.state() != BuProxy::State::alive)
      listed.append(concatenate({listed.empty() ? "BU " : "; BU ", to_text(std::uint64_t{bu.tid()}), " dropped: ",
                                 bu.dropped_because()}));
  return listed;
}

}  // namespace daqx::evb::evm
