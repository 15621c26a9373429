// Requests to many executives at once over a fixed number of worker threads, whatever the number of contexts, each
// bounded by its own deadline: a context that does not answer costs its own deadline and holds no other back.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "daqx/executive/control_client.hpp"

namespace daqx {

// Requests in flight at once by default: 64 one-second configures take two rounds; the launcher's threads stay
// few at any partition size.
constexpr unsigned kDefaultControlFanout = 32;
constexpr unsigned kMaxControlFanout = 1024;

// Runs task(0) .. task(count - 1) on min(workers, count) threads (none when count is 0 or 1: on the caller's),
// each taking the next index as it finishes one, and returns once all have run. Tasks run concurrently, so what
// they share must be safe for that; what one throws is thrown here once all have ended.
void for_each_fanned_out(std::size_t count, unsigned workers, const std::function<void(std::size_t)>& task);

struct ControlRequest {
  std::string url;
  std::string method = "POST";  // GET or POST
  std::string path;
  std::string body;  // POST: JSON
  // The whole answer must come within this (each step of the request: connect, send, every read of the answer).
  std::chrono::milliseconds deadline = std::chrono::seconds(60);
};

// Sends each request on a connection of its own (the control server answers one request per connection, so that
// no idle connection holds one of its few threads), at most `workers` at once. The replies are in the order of
// `requests`; one that did not come is a reply with status 0 (timed_out when its deadline passed), a URL that is
// not one too.
std::vector<HttpReply> send_fanned_out(const std::vector<ControlRequest>& requests, unsigned workers);

}  // namespace daqx
