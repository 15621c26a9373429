// evb::bu::EvmProxy (evm_proxy.hpp): the requests to the EvM and the run and generation they are for; and the
// BU's handling of what the EvM says (runs, resets, RUs down, the end and failure of a run), which acts on
// the BU's slots and tells the proxy.
#include "bu/evm_proxy.hpp"

#include <algorithm>

#include "bu/bu.hpp"
#include "daqx/apps/text.hpp"

namespace daqx::evb::bu {
using apps::concatenate;

void EvmProxy::start(std::uint64_t incarnation) {
  loss_.reset();
  incarnation_ = incarnation;
  run_ = 0;
  generation_ = 0;
  discards_.clear();
  put(requests_sent_, 0);
  put(resets_, 0);
}

void EvmProxy::new_run(std::uint32_t run) {
  run_ = run;
  generation_ = 0;
  loss_.set_run_ended(false);
  put(run_published_, run);
}

void EvmProxy::take_reset(std::uint32_t generation) {
  bump(resets_);
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
  if (!running_) return;
  std::uint32_t busy = 0, in_output = 0;
  for (const BuilderSlot& s : slots_) {
    if (s.state == BuilderSlot::State::offered || s.state == BuilderSlot::State::building) ++busy;
    if (s.state == BuilderSlot::State::output) ++in_output;
  }
  const auto total = static_cast<std::uint32_t>(slots_.size());
  const SlotLimit limit = bu::slot_limit(config_, total, in_output, batch_bytes_);
  put(output_state_, limit.output_state);
  put(slot_limit_, limit.slots);
  Request r;
  r.run = run_;
  r.generation = generation_;
  r.incarnation = incarnation_;
  r.state = limit.output_state;
  r.total_slots = total;
  r.priority = builder_priority(total, busy + in_output);
  if (generation_ != 0)
    for (std::uint32_t i = 0; i < total && busy + r.free_slots.size() < limit.slots; ++i)
      if (slots_[i].state == BuilderSlot::State::free) r.free_slots.push_back(i);
  r.discards = discards_;
  if (!heartbeat && r.free_slots.empty() && r.discards.empty()) return;
  const std::size_t bytes = request_bytes(r);
  mem::Ref frame = context_.allocate_frame(bytes);
  if (!frame) return;  // the pool is short: on_pool_available or the next tick tries again
  if (!encode(r, frame.data() + kFrameHeaderSize, bytes)) return;
  frame.resize(kFrameHeaderSize + bytes);
  if (outbox_.send(config_.evm, function::request, run_, std::move(frame), frame_flags::send_now) != SendStatus::ok)
    return;
  for (std::uint32_t i : r.free_slots) {
    slots_[i].state = BuilderSlot::State::offered;
    slots_[i].run = run_;
    slots_[i].generation = generation_;
  }
  discards_.clear();
  bump(requests_sent_);
  last_request_ = Clock::now();
}

// Everything held is let go: slots being offered or built (their events are counted abandoned; the EvM counts
// them lost when it dropped us, or they belong to a run that is over). Slots with the output stay its own
// until it gives them back.
void BU::abandon_slots() {
  for (BuilderSlot& s : slots_) {
    if (s.state == BuilderSlot::State::output) continue;
    if (s.state == BuilderSlot::State::building) bump(events_abandoned_, s.count - s.built);
    s.state = BuilderSlot::State::free;
    s.blocks.clear();
    s.count = 0;
  }
  evm_.drop_discards();
}

void BU::new_run(std::uint32_t run) {
  abandon_slots();
  assembly_.new_run();
  for (BuilderSlot& slot : slots_) slot.finished_first = 0;
  evm_.new_run(run);
}

void BU::on_control(Frame&& frame) {
  std::optional<Control> c = decode_control(frame.payload(), frame.payload_size_in_head());
  if (!c || frame.header.initiator != config_.evm) {
    bump(malformed_);
    return;
  }
  if (!running_) return;
  evm_.heard(Clock::now());
  if (c->run != evm_.run()) {
    if (c->kind == ControlKind::end_of_run) return;  // the end of an earlier run
    new_run(c->run);
    evm_.request(true);  // with no generation yet: the EvM answers with a reset
  }
  switch (c->kind) {
    case ControlKind::heartbeat:
    case ControlKind::bu_down:
      break;
    case ControlKind::reset:
      // The EvM may repeat a reset while our answer is on its way: the one we already took changes nothing.
      if (c->generation == evm_.generation()) break;
      abandon_slots();
      evm_.take_reset(c->generation);
      break;
    case ControlKind::ru_down: {
      const std::size_t index = contributor_index_.find(c->subject);
      if (index == TidIndex::npos) break;
      assembly_.contributor_down(index);  // events that waited only for it are built
      break;
    }
    case ControlKind::end_of_run:
      evm_.run_ended();
      break;
    case ControlKind::run_failed:
      running_ = false;
      abandon_slots();
      context().fail(concatenate({"the run failed: ", c->text}));
      break;
  }
}

// The output is done with the slot: give its batch back (if it is still ours to give) and offer it again.
void BU::finish_slot(std::uint32_t index, std::uint32_t run, std::uint32_t generation) {
  if (index >= slots_.size()) return;
  BuilderSlot& s = slots_[index];
  if (running_ && run == evm_.run() && generation == evm_.generation() && s.count != 0)
    evm_.give_back({s.first_event, s.count, index, s.incomplete, s.corrupt});
  if (run == evm_.run()) s.finished_first = std::max(s.finished_first, s.first_event);
  s.state = BuilderSlot::State::free;
  s.blocks.clear();
  s.count = 0;
  if (running_) evm_.schedule_request();
}

}  // namespace daqx::evb::bu
