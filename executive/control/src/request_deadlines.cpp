// RequestDeadlines: one watcher thread for every connection of a server.
#include "request_deadlines.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <utility>


namespace daqx::http {

RequestDeadlines::Watch::Watch(Watch&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(std::exchange(other.id_, 0)) {}

RequestDeadlines::Watch& RequestDeadlines::Watch::operator=(Watch&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void RequestDeadlines::Watch::release() noexcept {
  if (owner_ != nullptr) owner_->release(id_);
  owner_ = nullptr;
}

bool RequestDeadlines::Watch::expired() const noexcept { return owner_ != nullptr && owner_->expired(id_); }

RequestDeadlines::RequestDeadlines() : thread_([this] { run(); }) {}

RequestDeadlines::~RequestDeadlines() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

RequestDeadlines::Watch RequestDeadlines::watch(int fd, Clock::duration limit, int how) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    entries_.emplace(id, Entry{fd, how, Clock::now() + limit});
  }
  changed_.notify_all();
  return Watch(this, id);
}

std::uint64_t RequestDeadlines::expired_total() const {
  std::lock_guard lock(mutex_);
  return expired_total_;
}

void RequestDeadlines::expire_all() {
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, entry] : entries_) entry.deadline = Clock::now();
  }
  changed_.notify_all();
  // The watcher shuts them down; a connection released meanwhile is no longer its business.
}

void RequestDeadlines::release(std::uint64_t id) noexcept {
  std::lock_guard lock(mutex_);
  entries_.erase(id);
}

bool RequestDeadlines::expired(std::uint64_t id) const noexcept {
  std::lock_guard lock(mutex_);
  auto entry = entries_.find(id);
  return entry != entries_.end() && entry->second.expired;
}

void RequestDeadlines::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    Clock::time_point next = Clock::time_point::max();
    // A few entries at most (one per server thread): a scan is cheaper than keeping them ordered.
    for (auto& [id, entry] : entries_) {
      if (entry.expired) continue;
      if (entry.deadline <= now) {
        // Under the mutex: the owner cannot release (and then close) the descriptor while it is shut down here.
        ::shutdown(entry.fd, entry.how);
        entry.expired = true;
        ++expired_total_;
      } else {
        next = std::min(next, entry.deadline);
      }
    }
    if (next == Clock::time_point::max())
      changed_.wait(lock);
    else
      changed_.wait_until(lock, next);
  }
}

}  // namespace daqx::http
