// The transport threads' epoll set and wake-up eventfd.
#include "daqx/pt/waiter.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace daqx::pt {

Waiter::Waiter() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    int error = errno;
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
    throw std::runtime_error(std::string("epoll/eventfd: ") + std::strerror(error));
  }
  add(wake_fd_, &wake_fd_);
}

Waiter::~Waiter() {
  close(epoll_fd_);
  close(wake_fd_);
}

void Waiter::add(int fd, void* tag, std::uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.ptr = tag;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0)
    throw std::runtime_error(std::string("epoll_ctl(ADD): ") + std::strerror(errno));
}

void Waiter::modify(int fd, void* tag, std::uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.ptr = tag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event);  // only fails for a descriptor that is not in the set
}

void Waiter::remove(int fd) noexcept { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

void Waiter::wake() noexcept {
  std::uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof one) < 0) {
    // Only a counter overflow after 2^64 wake-ups could fail: nothing to do.
  }
}

int Waiter::collect(Clock::time_point deadline, bool sleep) noexcept {
  timespec timeout{0, 0};
  if (sleep) {
    auto wait = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()).count());
    timeout.tv_sec = static_cast<time_t>(wait / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(wait % 1'000'000'000);
  }
  int count = epoll_pwait2(epoll_fd_, events_, kBatch, &timeout, nullptr);
  if (count < 0) return 0;  // EINTR: the caller's loop comes back
  for (int i = 0; i < count; ++i) {
    if (events_[i].data.ptr != &wake_fd_) continue;
    std::uint64_t value = 0;
    while (read(wake_fd_, &value, sizeof value) > 0) {
    }
  }
  return count;
}

}  // namespace daqx::pt
