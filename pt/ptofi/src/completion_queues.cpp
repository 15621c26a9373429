// ptofi's completion queues: opened as endpoints need room.
#include "completion_queues.hpp"

#include <stdexcept>

namespace daqx::ptofi {

void CompletionQueues::open(fid_domain* domain, const fi_cq_attr& attributes, std::function<void(fid_cq*)> opened,
                            const std::string& what_failed) {
  domain_ = domain;
  attributes_ = attributes;
  opened_ = std::move(opened);
  std::string error;
  if (create(error) == nullptr) throw std::runtime_error(what_failed + ": " + error);
}

CompletionQueue* CompletionQueues::create(std::string& error) {
  auto queue = std::make_unique<CompletionQueue>();
  fid_cq* cq = nullptr;
  fi_cq_attr attributes = attributes_;
  const int result = fi_cq_open(domain_, &attributes, &cq, nullptr);
  if (result != 0) {
    error = "fi_cq_open of " + std::to_string(attributes_.size) + " entries (" + std::to_string(queues_.size()) +
            " open): " + fabric_error(result);
    return nullptr;
  }
  queue->cq.reset(cq);
  if (opened_) opened_(cq);  // may throw: the queue closes with it
  // The queues' fids first, in order; anything added after them (the event queue) stays last.
  wait_objects_.insert(wait_objects_.begin() + static_cast<std::ptrdiff_t>(queues_.size()), &cq->fid);
  queues_.push_back(std::move(queue));
  count_.store(queues_.size(), std::memory_order_relaxed);
  return queues_.back().get();
}

CompletionQueue* CompletionQueues::reserve(std::size_t need, std::string& error) {
  if (need > attributes_.size) {
    error = "an endpoint needs " + std::to_string(need) + " completion entries, a completion queue has " +
            std::to_string(attributes_.size) + ": lower sendDepth";
    return nullptr;
  }
  for (auto& queue : queues_)  // first fit: the queues are few (one per tens of connections)
    if (queue->reserved + need <= attributes_.size) {
      queue->reserved += need;
      return queue.get();
    }
  CompletionQueue* opened = nullptr;
  try {
    opened = create(error);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (opened == nullptr) {
    error = "no completion queue has room for another connection and no other could be opened (" + error + ")";
    return nullptr;
  }
  opened->reserved = need;
  return opened;
}

void CompletionQueues::release(CompletionQueue& queue, std::size_t need) noexcept {
  queue.reserved -= std::min(queue.reserved, need);
}

void CompletionQueues::close() noexcept {
  queues_.clear();
  wait_objects_.clear();
  count_.store(0, std::memory_order_relaxed);
}

}  // namespace daqx::ptofi
