// evb::ru::EvmProxy: the RU's messaging with the EvM; everything on the dispatch thread.
#include "ru/evm_proxy.hpp"

#include <utility>

#include "daqx/apps/text.hpp"

namespace daqx::evb::ru {
using apps::concatenate;
using apps::to_text;

EvmProxy::EvmProxy(ApplicationContext& context, const RuConfiguration& config, Outbox& outbox, BuProxy& builders,
                   Unit unit)
    : context_(context), config_(config), outbox_(outbox), builders_(builders), unit_(std::move(unit)) {
  context.bind(function::allocate, [this](Frame&& f) { on_allocate(std::move(f)); });
  context.bind(function::control, [this](Frame&& f) { on_control(std::move(f)); });
}

void EvmProxy::start() {
  evm_loss_.reset();
  run_ = 0;
  incarnation_ = new_incarnation();
  last_status_ = {};
  counters_.reset();
  last_status_sent_.store(0, std::memory_order_relaxed);
}

void EvmProxy::on_allocate(Frame&& frame) {
  if (!unit_.running()) return;
  std::optional<Allocate> message = decode_allocate(frame.payload(), frame.payload_size_in_head());
  if (!message || frame.header.initiator != config_.evm) {
    counters_.malformed.add_single_writer();
    return;
  }
  evm_loss_.heard(Clock::now());
  if (message->run != run_) {
    counters_.stale_frames.add_single_writer();  // from another run (we have not heard its heartbeat yet, or it is over)
    return;
  }
  counters_.allocations.add_single_writer();
  for (const Assignment& a : message->assignments) builders_.add(a);
  builders_.pump();
}

void EvmProxy::on_control(Frame&& frame) {
  std::optional<Control> c = decode_control(frame.payload(), frame.payload_size_in_head());
  if (!c || frame.header.initiator != config_.evm) {
    counters_.malformed.add_single_writer();
    return;
  }
  if (!unit_.running()) return;
  evm_loss_.heard(Clock::now());
  if (c->run != run_) {
    if (c->kind == ControlKind::end_of_run) return;  // the end of an earlier run
    run_ = c->run;  // a new run: whatever was queued belongs to the old one
    evm_loss_.set_run_ended(false);
    builders_.start_run(run_);
    gauges_.run.set(run_);
    send_status();
  }
  switch (c->kind) {
    case ControlKind::heartbeat:
    case ControlKind::reset:
      break;
    case ControlKind::bu_down:
      counters_.bu_downs.add_single_writer();
      builders_.drop(c->subject, c->generation);
      builders_.pump();
      break;
    case ControlKind::ru_down:
      if (c->subject == context_.tid()) {
        unit_.end_run();
        context_.fail(concatenate({"the EvM declared this RU down: ", c->text}));
      }
      break;
    case ControlKind::end_of_run:
      evm_loss_.set_run_ended(true);
      break;
    case ControlKind::run_failed:
      unit_.end_run();
      context_.fail(concatenate({"the run failed: ", c->text}));
      break;
  }
}

// BuProxy dropped the work of a BU whose connection was lost; the EvM decides whether the BU is dropped.
void EvmProxy::report_lost_builder(Tid bu, std::uint32_t generation) {
  const Control c{ControlKind::bu_down, run_, generation, bu,
                  concatenate({"RU ", to_text(std::uint64_t{context_.tid()}), " lost its connection to it"})};
  mem::Ref frame = control_frame(context_, c);
  if (!frame) return;
  outbox_.send(config_.evm, function::control, run_, std::move(frame), frame_flags::send_now);
}

// A status that cannot go now (no block, or the connection to the EvM is busy) is tried again at the next
// tick, not a whole heartbeatInterval later: the EvM declares an RU dead after ruTimeout without one, and an
// RU busy sending fragments must not look dead.
void EvmProxy::send_status() {
  mem::Ref frame = context_.allocate_frame(64);
  const RuStatus status{run_, incarnation_, builders_.fragments_sent(), builders_.bytes_sent()};
  const std::optional<std::size_t> used = frame ? encode(status, frame.data() + kFrameHeaderSize, 64) : std::nullopt;
  if (used) frame.resize(kFrameHeaderSize + *used);
  if (!used || !outbox_.send_if_idle(config_.evm, function::ru_status, std::move(frame), frame_flags::send_now)) {
    counters_.status_retries.add_single_writer();
    return;
  }
  last_status_ = Clock::now();
  counters_.status_reports.add_single_writer();
  last_status_sent_.store(last_status_.time_since_epoch().count(), std::memory_order_relaxed);
}

void EvmProxy::send_status_if_due(Clock::time_point now) {
  if (now - last_status_ >= seconds(config_.heartbeat_interval)) send_status();
}

bool EvmProxy::check_evm_alive(Clock::time_point now) {
  std::optional<std::string> reason = evm_loss_.check(now, config_.evm, config_.evm_timeout);
  if (!reason) return true;
  unit_.end_run();
  context_.fail(*reason);
  return false;
}

}  // namespace daqx::evb::ru
