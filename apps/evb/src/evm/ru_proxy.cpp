// evb::evm::RuProxy: one readout unit's record and the EvM's messaging to it.
#include "evm/ru_proxy.hpp"

#include <algorithm>

#include "daqx/apps/text.hpp"

namespace daqx::evb::evm {

void RuProxy::start_run() {
  state_ = State::unknown;
  incarnation_ = 0;
  told_ = 0;
}

void RuProxy::go_down() {
  state_ = State::down;
  link_.outbox().drop(tid());
}

void RuProxy::flush_allocations(std::uint32_t run, const AllocationLog& log) {
  if (state_ != State::alive) return;  // told nothing more once down (and nothing is assigned before it reports)
  // At most a 4 KiB frame, and each frame only as large as what it carries: every RU is told every batch, so a
  // frame of one or two assignments (64 or 88 bytes) in a 4 KiB block held, with hundreds of RUs, megabytes
  // of the EvM's pool resident while the frames waited for their sends (measured over ptofi: 8.9 MiB resident at
  // 64 RUs x 64 BUs, against 2.2 at 4 x 4).
  constexpr std::size_t kRoom = 4096 - kFrameHeaderSize;
  const std::size_t per_frame = assignments_that_fit(kRoom);
  while (told_ < log.end()) {
    const std::span<const Assignment> untold = log.since(told_);
    const std::span<const Assignment> batch = untold.first(std::min(per_frame, untold.size()));
    const std::size_t bytes = allocate_bytes(batch.size());
    mem::Ref frame = link_.context().allocate_frame(bytes);
    if (!frame) break;  // pool exhausted: the rest go with the next flush (tick)
    const std::optional<std::size_t> used = encode_allocate(run, batch, frame.data() + kFrameHeaderSize, bytes);
    if (!used) break;
    frame.resize(kFrameHeaderSize + *used);
    link_.outbox().send(tid(), function::allocate, run, std::move(frame), frame_flags::send_now);
    told_ += batch.size();
  }
}

void RuProxy::publish() {
  published_state_->store(state_ == State::alive ? 1 : state_ == State::down ? 2 : 0, std::memory_order_relaxed);
}

void RuProxy::report(MetricSink& sink) const {
  sink.state("ru_state", published_state_->load(std::memory_order_relaxed), {"not_heard", "taking_part", "down"},
             "this RU as the EvM sees it: not yet heard, taking part, down", {{"ru", apps::to_text(std::uint64_t{tid()})}});
}

}  // namespace daqx::evb::evm
