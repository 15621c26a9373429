// POST /api/connect's wait, polled by the server's pending replies (pending_replies.hpp).
#include "connect_wait.hpp"

namespace daqx::http {
namespace {

using Clock = std::chrono::steady_clock;

// A peer that refused (not listening yet) is asked again after this, so that its backoff gives it another try.
constexpr auto kAskAgainAfter = std::chrono::milliseconds(250);

Reply stopping_answer() { return json_reply(503, json_error("the executive's control server is stopping")); }

class ConnectWait final : public PendingReply {
 public:
  ConnectWait(ControlModel& model, Pages& pages, std::chrono::milliseconds timeout)
      : model_(model), pages_(pages), started_(Clock::now()), deadline_(started_ + timeout), asked_(started_) {}
  ~ConnectWait() override { pages_.connect_waits.fetch_sub(1); }
  ConnectWait(const ConnectWait&) = delete;
  ConnectWait& operator=(const ConnectWait&) = delete;

  std::optional<Reply> poll() override {
    ConnectResult result;
    for (const TransportStatus& transport : model_.transports()) {
      for (const ConnectionInfo& connection : transport.connections) {
        if (!connection.outgoing) continue;
        ++result.total;
        if (connection.up)
          ++result.up;
        else
          result.down.push_back({transport.protocol, connection.peer, connection.remote});
      }
    }
    // After the list is read, not before: the executive is told it is stopping before it tears its transports
    // down, so an empty list read after that is never taken for "all up".
    if (pages_.stopping.load(std::memory_order_relaxed)) return stopping_answer();
    const Clock::time_point now = Clock::now();
    if (result.up == result.total || now >= deadline_) {
      result.seconds = std::chrono::duration<double>(now - started_).count();
      return json_reply(result.up == result.total ? 200 : 504, json_connect_result(result));
    }
    if (now - asked_ >= kAskAgainAfter) {
      model_.open_connections();
      asked_ = now;
    }
    return std::nullopt;
  }

  Reply stopped() override { return stopping_answer(); }

 private:
  ControlModel& model_;
  Pages& pages_;
  const Clock::time_point started_;
  const Clock::time_point deadline_;
  Clock::time_point asked_;  // when the transports were last asked to open what is down
};

}  // namespace

std::shared_ptr<PendingReply> start_connect_wait(ControlModel& model, Pages& pages, std::chrono::milliseconds timeout) {
  if (pages.connect_waits.fetch_add(1) >= kMaxConnectWaits) {
    pages.connect_waits.fetch_sub(1);
    return nullptr;
  }
  std::shared_ptr<PendingReply> wait;
  try {
    wait = std::make_shared<ConnectWait>(model, pages, timeout);  // gives the place back from here on
  } catch (...) {
    pages.connect_waits.fetch_sub(1);
    throw;
  }
  model.open_connections();
  return wait;
}

}  // namespace daqx::http
