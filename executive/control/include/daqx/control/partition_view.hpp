// The whole partition at a glance: polls every context's GET /api/summary in the background (one request per
// context per round over a fixed pool of threads) and keeps the merged picture (states, rates, pools,
// connections, who does not answer, what needs attention) that GET /api/partition and GET /partition serve.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "daqx/executive/control.hpp"
#include "daqx/control/context_poller.hpp"
#include "daqx/control/control_client.hpp"
#include "daqx/executive/partition.hpp"

namespace daqx {

struct PartitionViewOptions {
  std::chrono::milliseconds interval{1000};  // from the start of one round of polls to the next
  std::chrono::milliseconds timeout{1500};   // a context that takes longer to answer is marked unreachable
  // Polling stops this long after the last request for the view, so that the contexts of a large partition are
  // not polled by every executive all the time; it resumes with the next request.
  std::chrono::milliseconds idle_after{std::chrono::seconds(60)};
  unsigned max_parallel = 8;  // contexts polled at once (requests in flight) by a pool of the view's own
  // A poller to share (daqx-launch: the one over the pool of its transitions and live table), which must outlive
  // the view; null: the view starts a poller of its own when it is first watched and ends it when it idles.
  ContextPoller* poller = nullptr;
};

// Thread-safe. Polls only from its own threads, never from the caller's: a request for the view reads the last
// picture and returns at once, but for the first request after idling, which waits for the first round (at most
// timeout + 0.5 s), so that a page loaded then shows states rather than "waiting".
class PartitionView {
 public:
  // `access`: the token and CA presented to the executives. The partition is copied.
  PartitionView(const config::Partition& partition, ControlAccess access, PartitionViewOptions options = {});
  ~PartitionView();  // stops, as stop() does
  PartitionView(const PartitionView&) = delete;
  PartitionView& operator=(const PartitionView&) = delete;

  // The context `url` is this process: it is read from `model` directly rather than over HTTP (a busy control
  // port must not make an executive look unreachable to itself), through the same GET routes. Before start(); the
  // model must outlive the view.
  void set_local(const std::string& url, ControlModel& model);

  void start();  // the polling thread; once. It sleeps until the view is first asked for.
  void stop();   // idempotent; after it returns no context is polled any more

  // GET /api/partition (docs/control-api.md, "Partition view"): one JSON document.
  std::string json();
  // GET /partition: the page, complete without JavaScript; its script polls /api/partition and redraws.
  std::string html();

  const std::string& partition_name() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace daqx
