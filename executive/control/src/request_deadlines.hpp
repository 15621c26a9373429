// Deadlines that cover a whole request, not each read: a client that sends its request a byte at a time, or
// never finishes its TLS handshake, holds a server thread until its deadline and no longer.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace daqx::http {

// One thread that shuts down the sockets whose deadline passed. Shutting down (not closing: the descriptor stays
// its owner's) makes a read blocked on it return at once, so the owner ends the request itself.
class RequestDeadlines {
 public:
  using Clock = std::chrono::steady_clock;

  // A socket watched until the watch is released (or destroyed, which must happen before the socket is closed:
  // a descriptor number reused by another socket must never be shut down).
  class Watch {
   public:
    Watch() = default;
    Watch(Watch&& other) noexcept;
    Watch& operator=(Watch&& other) noexcept;
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    ~Watch() { release(); }

    void release() noexcept;  // the deadline no longer applies
    bool expired() const noexcept;  // the deadline passed and the socket was shut down

   private:
    friend class RequestDeadlines;
    Watch(RequestDeadlines* owner, std::uint64_t id) : owner_(owner), id_(id) {}
    RequestDeadlines* owner_ = nullptr;
    std::uint64_t id_ = 0;
  };

  RequestDeadlines();
  ~RequestDeadlines();  // every Watch must be released first
  RequestDeadlines(const RequestDeadlines&) = delete;
  RequestDeadlines& operator=(const RequestDeadlines&) = delete;

  // Shuts `fd` down with `how` (SHUT_RD: reads end and an answer can still be sent; SHUT_RDWR: both) when
  // `limit` passes before the watch is released.
  Watch watch(int fd, Clock::duration limit, int how);

  std::uint64_t expired_total() const;  // sockets shut down so far

  // Shuts down every watched socket now (the server is stopping).
  void expire_all();

 private:
  struct Entry {
    int fd;
    int how;
    Clock::time_point deadline;
    bool expired = false;
  };
  void release(std::uint64_t id) noexcept;
  bool expired(std::uint64_t id) const noexcept;
  void run();

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint64_t, Entry> entries_;  // mutex_
  std::uint64_t next_id_ = 1;               // mutex_
  std::uint64_t expired_total_ = 0;         // mutex_
  bool stopping_ = false;                   // mutex_
  std::thread thread_;                      // last: started when everything above is ready
};

}  // namespace daqx::http
