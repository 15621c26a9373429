// Per-target send queues behind ApplicationContext::send.
#include "common/outbox.hpp"

namespace daqx::evb {

SendStatus Outbox::send(Tid target, std::uint16_t function, std::uint64_t transaction, mem::Ref&& frame,
                        std::uint8_t flags) {
  auto it = waiting_.find(target);
  if (it == waiting_.end() || it->second.empty()) {
    const SendStatus status = context_.send(target, function, transaction, frame, flags);
    if (status == SendStatus::ok) return status;
    if (status != SendStatus::would_block) {
      ++errors_;
      failed_.push_back(target);
      frame.reset();
      return status;
    }
    ++would_blocks_;
    if (it == waiting_.end()) it = waiting_.try_emplace(target).first;
  }
  it->second.push_back(Pending{function, transaction, flags, std::move(frame)});
  ++waiting_total_;
  return SendStatus::ok;
}

bool Outbox::send_if_idle(Tid target, std::uint16_t function, mem::Ref&& frame, std::uint8_t flags) {
  if (waiting(target) != 0) return false;
  const SendStatus status = context_.send(target, function, 0, frame, flags);
  if (status == SendStatus::ok) return true;
  if (status == SendStatus::would_block) ++would_blocks_;
  else ++errors_;
  return false;
}

bool Outbox::flush() {
  for (auto& [target, queue] : waiting_) {
    while (!queue.empty()) {
      Pending& p = queue.front();
      const SendStatus status = context_.send(target, p.function, p.transaction, p.frame, p.flags);
      if (status == SendStatus::would_block) {
        ++would_blocks_;
        break;
      }
      if (status != SendStatus::ok) {
        ++errors_;
        failed_.push_back(target);
      }
      queue.pop_front();
      --waiting_total_;
    }
  }
  return waiting_total_ == 0;
}

std::size_t Outbox::drop(Tid target) {
  auto it = waiting_.find(target);
  if (it == waiting_.end()) return 0;
  const std::size_t n = it->second.size();
  waiting_total_ -= n;
  dropped_ += n;
  waiting_.erase(it);
  return n;
}

void Outbox::clear() {
  for (auto& [target, queue] : waiting_) dropped_ += queue.size();
  waiting_.clear();
  waiting_total_ = 0;
}

std::size_t Outbox::waiting(Tid target) const {
  auto it = waiting_.find(target);
  return it == waiting_.end() ? 0 : it->second.size();
}

}  // namespace daqx::evb
