// Requests to many executives' control APIs over a fixed number of threads, whatever the number of contexts: each
// thread keeps several requests in flight at once and waits on their sockets together, so that how many requests
// wait in parallel (the fan-out) and how many threads the process has are two separate settings. Every request is
// bounded by its own deadline: a context that does not answer costs its own deadline and holds no other back.
// daqx-launch and daqxctl make one and use it for transitions, connect and watching.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "daqx/control/control_client.hpp"

namespace daqx {

// Requests in flight at once by default: 64 one-second configures take one round; threads do not grow with it.
constexpr unsigned kDefaultControlFanout = 64;
constexpr unsigned kMaxControlFanout = 1024;

struct ControlRequest {
  std::string url;
  std::string method = "POST";  // GET or POST
  std::string path;
  std::string body;  // POST: JSON
  // The whole answer must come within this from when the request is sent.
  std::chrono::milliseconds deadline = std::chrono::seconds(60);
};

class ControlRequestPool {
 public:
  static constexpr unsigned kDefaultThreads = 4;

  // `threads` workers (at least 1, at most `fanout`), started now and kept until the pool is destroyed, that keep
  // up to `fanout` requests in flight between them (at least 1). Every request presents `access`.
  explicit ControlRequestPool(unsigned fanout = kDefaultControlFanout, unsigned threads = kDefaultThreads,
                              ControlAccess access = default_control_access());
  ~ControlRequestPool();  // joins the workers; no call may be under way
  ControlRequestPool(const ControlRequestPool&) = delete;
  ControlRequestPool& operator=(const ControlRequestPool&) = delete;

  // Called on a worker thread with the index of the request in `requests` and its answer (status 0 and the reason
  // when there was none: timed_out when its deadline passed); must not throw.
  using Answered = std::function<void(std::size_t index, HttpReply reply)>;

  // Sends every request of `requests` (each on a connection of its own: the control server answers one request
  // per connection) and returns when every one has been answered, or once `stop` is requested after those in
  // flight (those not sent yet are not: `answered` is not called for them). Calls from several threads share the
  // workers, first come first sent.
  void run(const std::vector<ControlRequest>& requests, const Answered& answered, std::stop_token stop = {});

  // run() collecting the replies in the order of `requests`.
  std::vector<HttpReply> send(const std::vector<ControlRequest>& requests);

  unsigned threads() const noexcept;
  unsigned fanout() const noexcept;  // requests in flight at most, all threads together

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace daqx
