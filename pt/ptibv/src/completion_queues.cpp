// ptibv's completion queues: created as queue pairs need room, all reported on one completion channel.
#include "completion_queues.hpp"

#include <fcntl.h>

#include <cerrno>
#include <stdexcept>

#include "daqx/pt/socket_address.hpp"

namespace daqx::ptibv {
namespace {
constexpr unsigned kAckBatch = 64;  // completion events acknowledged together
}  // namespace

void CompletionQueues::open(ibv_context* context, std::size_t entries, bool with_channel) {
  context_ = context;
  entries_ = entries;
  if (with_channel) {
    channel_ = ibv_create_comp_channel(context_);
    if (channel_ == nullptr)
      throw std::runtime_error("ibv_create_comp_channel: " + pt::errno_text(errno) + " (waitMode=busy needs none)");
    const int flags = fcntl(channel_->fd, F_GETFL);
    if (flags < 0 || fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0)
      throw std::runtime_error("fcntl(O_NONBLOCK): " + pt::errno_text(errno));
  }
  std::string error;
  if (create(error) == nullptr) throw std::runtime_error(error);
}

CompletionQueue* CompletionQueues::create(std::string& error) {
  auto queue = std::make_unique<CompletionQueue>();
  // The queue is its own context: the channel's events name it.
  queue->cq = ibv_create_cq(context_, static_cast<int>(entries_), queue.get(), channel_, 0);
  if (queue->cq == nullptr) {
    error = "ibv_create_cq of " + std::to_string(entries_) + " entries (" + std::to_string(queues_.size()) +
            " open): " + pt::errno_text(errno);
    return nullptr;
  }
  queues_.push_back(std::move(queue));
  count_.store(queues_.size(), std::memory_order_relaxed);
  return queues_.back().get();
}

CompletionQueue* CompletionQueues::reserve(std::size_t need, std::string& error) {
  if (need > entries_) {
    error = "a queue pair needs " + std::to_string(need) + " completion entries, a completion queue has " +
            std::to_string(entries_) + ": lower sendDepth";
    return nullptr;
  }
  // First fit: the queues are few (one per few hundred connections).
  CompletionQueue* chosen = nullptr;
  for (auto& queue : queues_)
    if (queue->reserved + need <= entries_) {
      chosen = queue.get();
      break;
    }
  if (chosen == nullptr) chosen = create(error);
  if (chosen == nullptr) {
    error = "no completion queue has room for another connection and the device gives no more (" + error + ")";
    return nullptr;
  }
  chosen->reserved += need;
  return chosen;
}

void CompletionQueues::release(CompletionQueue& queue, std::size_t need) noexcept {
  queue.reserved -= std::min(queue.reserved, need);
}

bool CompletionQueues::arm() {
  bool asked = false;
  for (auto& queue : queues_) {
    if (queue->armed) continue;
    ibv_req_notify_cq(queue->cq, 0);
    queue->armed = true;
    asked = true;
  }
  return asked;
}

void CompletionQueues::take_events() {
  if (channel_ == nullptr) return;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &context) == 0) {
    auto* queue = static_cast<CompletionQueue*>(context);
    queue->armed = false;
    if (++queue->unacked >= kAckBatch) {
      ibv_ack_cq_events(queue->cq, queue->unacked);
      queue->unacked = 0;
    }
  }
}

void CompletionQueues::close() noexcept {
  for (auto& queue : queues_) {
    // ibv_destroy_cq waits for every event of the queue to be acknowledged.
    if (queue->unacked > 0) ibv_ack_cq_events(queue->cq, queue->unacked);
    ibv_destroy_cq(queue->cq);
  }
  queues_.clear();
  count_.store(0, std::memory_order_relaxed);
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  channel_ = nullptr;
}

}  // namespace daqx::ptibv
