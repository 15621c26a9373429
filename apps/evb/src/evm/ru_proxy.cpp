// evb::RuProxy: one readout unit's record and the EvM's messaging to it.
#include "evm/ru_proxy.hpp"

#include <algorithm>

#include "daqx/apps/text.hpp"

namespace daqx::evb {

void RuProxy::start_run() {
  state_ = State::unknown;
  incarnation_ = 0;
  pending_.clear();
}

void RuProxy::go_down() {
  state_ = State::down;
  pending_.clear();
  link_.outbox().drop(tid());
}

void RuProxy::forget_bu(Tid bu) {
  std::erase_if(pending_, [bu](const Assignment& a) { return a.bu == bu; });
}

void RuProxy::flush_allocations(std::uint32_t run) {
  std::size_t done = 0;
  while (done < pending_.size()) {
    const std::size_t per_frame = assignments_that_fit(4096 - kFrameHeaderSize);
    const std::size_t n = std::min(per_frame, pending_.size() - done);
    Allocate message{run, {pending_.begin() + static_cast<std::ptrdiff_t>(done),
                           pending_.begin() + static_cast<std::ptrdiff_t>(done + n)}};
    mem::Ref frame = link_.context().allocate_frame(4096 - kFrameHeaderSize);
    if (!frame) break;  // pool exhausted: the rest go with the next flush (tick)
    const std::optional<std::size_t> used = encode(message, frame.data() + kFrameHeaderSize, 4096 - kFrameHeaderSize);
    if (!used) break;
    frame.resize(kFrameHeaderSize + *used);
    link_.outbox().send(tid(), function::allocate, run, std::move(frame), frame_flags::send_now);
    done += n;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
}

void RuProxy::publish() { put(*published_state_, state_ == State::alive ? 1 : state_ == State::down ? 2 : 0); }

void RuProxy::report(MetricSink& sink) const {
  sink.state("ru_state", static_cast<std::size_t>(read(*published_state_)), {"not_heard", "taking_part", "down"},
             "this RU as the EvM sees it: not yet heard, taking part, down", {{"ru", apps::to_text(std::uint64_t{tid()})}});
}

}  // namespace daqx::evb
