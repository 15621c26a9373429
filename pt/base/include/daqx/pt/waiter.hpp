// How a transport thread sleeps when it has nothing to do: one epoll set over the descriptors it serves
// (sockets, completion channels, event queues) and an eventfd other threads write to wake it. Deadlines
// have nanosecond resolution (epoll_pwait2), so a 200 us timer fires after about 200 us, not 1 ms.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>

namespace daqx::pt {

class Waiter {
 public:
  using Clock = std::chrono::steady_clock;

  Waiter();  // throws std::runtime_error when epoll or eventfd cannot be had
  ~Waiter();
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // Descriptors and the tag their readiness is reported with (never null).
  void add(int fd, void* tag, std::uint32_t events = EPOLLIN);
  void modify(int fd, void* tag, std::uint32_t events);
  void remove(int fd) noexcept;

  // From any thread: the waiting thread returns from wait_until() at once (or from its next one).
  void wake() noexcept;

  // Sleeps until a descriptor is ready, wake() is called, or the deadline passes; then calls
  // on_ready(tag, events) for each ready descriptor. Returns how many were ready (wake-ups not counted).
  template <typename OnReady>
  int wait_until(Clock::time_point deadline, OnReady&& on_ready) {
    return dispatch(collect(deadline, true), on_ready);
  }
  // The same without sleeping: for threads that poll.
  template <typename OnReady>
  int poll(OnReady&& on_ready) {
    return dispatch(collect(Clock::time_point{}, false), on_ready);
  }

 private:
  static constexpr int kBatch = 64;
  int collect(Clock::time_point deadline, bool sleep) noexcept;  // fills events_, drains wake-ups
  template <typename OnReady>
  int dispatch(int count, OnReady& on_ready) {
    int ready = 0;
    for (int i = 0; i < count; ++i) {
      if (events_[i].data.ptr == &wake_fd_) continue;
      on_ready(events_[i].data.ptr, events_[i].events);
      ++ready;
    }
    return ready;
  }

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  epoll_event events_[kBatch]{};
};

}  // namespace daqx::pt
