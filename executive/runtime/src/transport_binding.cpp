// The transport binding: receive-side delivery into applications' lanes, and the executive's services to a
// transport (pools, threads, memory registration, connection events).
#include "transport_binding.hpp"

#include <algorithm>
#include <utility>

#include "application_host.hpp"
#include "daqx/services/log.hpp"

namespace daqx::detail {

TransportBinding::TransportBinding(ContextServices& services, const TransportClass& cls, ParamSet params,
                                   EndpointAddress local, std::size_t index, std::size_t planned_incoming)
    : services_(services), class_(cls), params_(std::move(params)), local_(std::move(local)), index_(index),
      planned_incoming_(planned_incoming) {
  staged_to_.reserve(64);  // no allocation on the receive path for up to 64 local applications
  inline_batches_to_.reserve(64);
}

TransportBinding::~TransportBinding() {
  // A transport is stopped before it goes (its own hooks run in stop()), also when create() failed half-way.
  if (transport_) transport_->stop();
}

void TransportBinding::create() {
  transport_ = class_.create(*this);
  transport_->listen(local_);
}

std::uint32_t TransportBinding::max_frame_size() const noexcept { return kDefaultMaxFrameSize; }

DeliverStatus TransportBinding::deliver(Frame&& frame, PeerId) noexcept {
  // Frames of a stream have one target: its host is looked up once (the routes do not change once built).
  if (frame.header.target != last_target_ || last_host_ == nullptr) {
    last_host_ = services_.routes.local_application(frame.header.target);
    last_target_ = frame.header.target;
  }
  ApplicationHost* target = last_host_;
  if (target == nullptr) {
    services_.delivery.counters.bad_frames.add();
    frame.data.reset();
    return DeliverStatus::rejected;
  }
  DeliveryLane& lane = target->lane(index_);
  if (target->dispatches_inline()) {
    if (target->takes_batches(frame.header.function)) {
      // For a batch handler: staged now and handed over with the rest of the round (deliveries_done), or here
      // when the lane is full.
      if (!lane.has_room()) target->dispatch_lane_inline(index_);
      note_inline_batch(target);
    } else if (lane.drained() && target->try_dispatch_inline(frame)) {
      // Inline dispatch: the handler runs here and now, unless the application is busy or a frame of this lane
      // is still waiting (it must not be overtaken).
      ++delivered_this_round_;
      return DeliverStatus::accepted;
    }
  }
  if (!lane.has_room()) {
    publish(target);  // what this round staged there must be seen, or the room never comes back
    target->add_deliver_waiter(&deliver_ready_);
    // Once more after registering: the lane may have drained before we registered, and then nobody would
    // tell us to resume.
    if (!lane.has_room()) return DeliverStatus::busy;
  }
  lane.stage(std::move(frame));
  if (std::find(staged_to_.begin(), staged_to_.end(), target) == staged_to_.end()) staged_to_.push_back(target);
  ++delivered_this_round_;
  return DeliverStatus::accepted;
}

void TransportBinding::publish(ApplicationHost* target) noexcept {
  if (target->lane(index_).publish()) target->wake();
}

bool TransportBinding::handlers_inline() const noexcept {
  return services_.delivery.all_inline.load(std::memory_order_acquire);
}

void TransportBinding::deliveries_done() noexcept {
  // Batches for inline handlers: handed over here, on this thread, unless the application is busy (then its
  // dispatch thread takes them, published below).
  for (ApplicationHost* target : inline_batches_to_) target->dispatch_lane_inline(index_);
  inline_batches_to_.clear();
  // One release store per lane and at most one wake-up per application, for the whole batch.
  for (ApplicationHost* target : staged_to_) publish(target);
  staged_to_.clear();
  // Counted once a round: receive threads of several transports write the executive's count.
  if (delivered_this_round_ > 0) services_.delivery.counters.frames_from_transports.add(std::exchange(delivered_this_round_, 0));
}

void TransportBinding::note_inline_batch(ApplicationHost* target) {
  if (std::find(inline_batches_to_.begin(), inline_batches_to_.end(), target) == inline_batches_to_.end())
    inline_batches_to_.push_back(target);
}

void TransportBinding::on_deliver_ready(std::function<void()> callback) { deliver_ready_ = std::move(callback); }

void TransportBinding::notify_peer_ready(PeerId peer) noexcept {
  for (ApplicationHost* host : services_.routes.local_applications())
    if (host->waiting_for_peer(transport_.get(), peer)) host->notify_send_ready();
}

void TransportBinding::send_ready(PeerId peer) noexcept { notify_peer_ready(peer); }

bool TransportBinding::run_going() const noexcept {
  return services_.delivery.applications_enabled.load(std::memory_order_acquire);
}

void TransportBinding::connection_changed(PeerId peer, bool up, const std::string& reason) {
  // Down in a run is a loss; between runs and at shutdown peers closing is expected (the transport has said
  // already whether frames went with it).
  daqx::log(up || !run_going() ? LogLevel::info : LogLevel::warning, prefix(),
            "connection " + std::to_string(peer) + (up ? " up" : " down") + (reason.empty() ? "" : ": " + reason));
  // A connection that went down will not say send_ready: wake its waiters so they see the error.
  if (!up) notify_peer_ready(peer);
}

mem::Pool& TransportBinding::make_pool(const std::string& name, const mem::PoolConfig& config) {
  return services_.pools.make(prefix() + "/" + name, config);
}

std::jthread TransportBinding::start_thread(const std::string& name, std::function<void(std::stop_token)> body) {
  return services_.threads.start(prefix() + "/" + name, std::move(body));
}

void TransportBinding::log(LogLevel level, const std::string& message) { daqx::log(level, prefix(), message); }

std::size_t TransportBinding::register_memory(mem::Registrar& registrar) {
  return services_.pools.add_registrar(registrar);
}

void TransportBinding::deregister_memory(std::size_t slot) noexcept { services_.pools.remove_registrar(slot); }

}  // namespace daqx::detail
