// evb::bu::EvmProxy (evm_proxy.hpp): the requests to the EvM and the run and generation they are for.
#include "bu/evm_proxy.hpp"

namespace daqx::evb::bu {

void EvmProxy::start(std::uint64_t incarnation) {
  loss_.reset();
  incarnation_ = incarnation;
  run_ = 0;
  generation_ = 0;
  discards_.clear();
  run_counters_.reset();
}

void EvmProxy::new_run(std::uint32_t run) {
  run_ = run;
  generation_ = 0;
  loss_.set_run_ended(false);
  gauges_.run.set(run);
}

void EvmProxy::take_reset(std::uint32_t generation) {
  run_counters_.resets.add_single_writer();
  generation_ = generation;
  request(true);
}

void EvmProxy::schedule_request() {
  if (request_posted_) return;
  request_posted_ = true;
  context_.post_task([this] {
    request_posted_ = false;
    request(false);
  });
}

void EvmProxy::request(bool heartbeat) {
  if (!slots_.running()) return;
  const SlotTable::Occupancy occupancy = slots_.occupancy();
  const std::uint32_t busy = occupancy.offered + occupancy.building;
  const std::uint32_t total = slots_.size();
  const SlotLimit limit = bu::slot_limit(config_, total, occupancy.in_output, slots_.batch_bytes());
  output_state_.store(limit.output_state, std::memory_order_relaxed);
  gauges_.slot_limit.set(limit.slots);
  Request r;
  r.run = run_;
  r.generation = generation_;
  r.incarnation = incarnation_;
  r.state = limit.output_state;
  r.total_slots = total;
  r.priority = builder_priority(total, busy + occupancy.in_output);
  if (generation_ != 0 && busy < limit.slots) slots_.collect_free(limit.slots - busy, r.free_slots);
  r.discards = discards_;
  if (!heartbeat && r.free_slots.empty() && r.discards.empty()) return;
  const std::size_t bytes = request_bytes(r);
  mem::Ref frame = context_.allocate_frame(bytes);
  if (!frame) return;  // the pool is short: on_pool_available or the next tick tries again
  if (!encode(r, frame.data() + kFrameHeaderSize, bytes)) return;
  frame.resize(kFrameHeaderSize + bytes);
  if (outbox_.send(config_.evm, function::request, run_, std::move(frame), frame_flags::send_now) != SendStatus::ok)
    return;
  slots_.offer(r.free_slots, run_, generation_);
  discards_.clear();
  run_counters_.requests_sent.add_single_writer();
  last_request_ = Clock::now();
}

}  // namespace daqx::evb::bu
