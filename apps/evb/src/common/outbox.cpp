// Per-target send queues behind ApplicationContext::send and send_batch.
#include "common/outbox.hpp"

#include <algorithm>
#include <array>

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
  wait(it->second, OutgoingFrame{target, function, transaction, std::move(frame), flags});
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

void Outbox::send_batch(Tid target, std::span<OutgoingFrame> frames) {
  for (OutgoingFrame& f : frames) f.target = target;
  auto it = waiting_.find(target);
  std::size_t done = 0;
  if (it == waiting_.end() || it->second.empty()) {
    bool blocked = false;
    done = send_run(target, frames, blocked);
    if (done == frames.size()) return;
    if (it == waiting_.end()) it = waiting_.try_emplace(target).first;
  }
  for (; done < frames.size(); ++done) wait(it->second, std::move(frames[done]));
}

// A frame refused with an error was released with its connection; one refused with no_route is still ours and
// goes the same way (the per-frame send() drops both): the frames after it are tried, as their own sends would be.
std::size_t Outbox::send_run(Tid target, std::span<OutgoingFrame> frames, bool& blocked) {
  blocked = false;
  bool failed = false;
  std::size_t done = 0;
  while (done < frames.size()) {
    const BatchSendResult result = context_.send_batch(frames.subspan(done));
    done += result.sent;
    if (done == frames.size()) break;
    if (result.status == SendStatus::would_block) {
      ++would_blocks_;
      blocked = true;
      break;
    }
    frames[done++].data.reset();
    ++errors_;
    failed = true;
  }
  if (failed) failed_.push_back(target);
  return done;
}

void Outbox::wait(Queue& queue, OutgoingFrame&& frame) {
  queue.push_back(std::move(frame));
  ++waiting_total_;
}

bool Outbox::flush() {
  if (waiting_total_ == 0) return true;
  std::array<OutgoingFrame, kMaxBatchFrames>& batch = retry_;
  for (auto& [target, queue] : waiting_) {
    bool blocked = false;
    while (!queue.empty() && !blocked) {
      const std::size_t n = std::min(queue.size(), batch.size());
      for (std::size_t i = 0; i < n; ++i) batch[i] = std::move(queue[i]);
      const std::size_t done = send_run(target, std::span(batch).first(n), blocked);
      for (std::size_t i = done; i < n; ++i) queue[i] = std::move(batch[i]);  // still waiting, in order
      queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(done));
      waiting_total_ -= done;
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
