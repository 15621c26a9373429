// ContextPoller: a round is one call of the pool, stopped through the poller's own stop source.
#include "daqx/control/context_poller.hpp"

namespace daqx {

ContextPoller::ContextPoller(ControlRequestPool& pool) : pool_(&pool) {}

ContextPoller::ContextPoller(unsigned fanout, ControlAccess access)
    : own_(std::make_unique<ControlRequestPool>(fanout, ControlRequestPool::kDefaultThreads, std::move(access))),
      pool_(own_.get()) {}

ContextPoller::~ContextPoller() = default;

void ContextPoller::round(const std::vector<std::string>& urls, const std::string& path,
                          std::chrono::milliseconds timeout, const Answered& answered) {
  std::vector<ControlRequest> requests;
  requests.reserve(urls.size());
  for (const std::string& url : urls)
    requests.push_back(ControlRequest{.url = url, .method = "GET", .path = path, .body = {}, .deadline = timeout});
  pool_->run(requests, answered, stopping_.get_token());
}

void ContextPoller::stop() { stopping_.request_stop(); }

}  // namespace daqx
