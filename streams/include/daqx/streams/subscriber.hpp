// streams::Subscriber, owned by an application that subscribes to streams of publishers in any context: it
// subscribes (again every second until accepted, and after the publisher ended the subscription), hands each
// event to the handler on the dispatch thread and acknowledges what it consumed so that the publisher may send
// more. Dispatch thread, except report().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "daqx/api/application.hpp"
#include "daqx/mempool/ref.hpp"
#include "daqx/streams/policy.hpp"
#include "daqx/streams/protocol.hpp"

namespace daqx::streams {

struct StreamEvent {
  std::uint64_t subscription = 0;
  std::uint64_t sequence = 0;
  std::uint64_t key = 0;
  std::uint64_t dropped = 0;  // by the publisher's policy for this subscription, in all
  mem::Ref bytes;             // the event's bytes (shared with other subscribers in the same context: never change)
};

class Subscriber {
 public:
  using Handler = std::function<void(const StreamEvent&)>;
  Subscriber(ApplicationContext& context, Handler handler);
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  void subscribe(Tid publisher, const std::string& stream, const Policy& policy);
  void unsubscribe_all();
  void report(MetricSink& sink) const;

 private:
  struct Wanted {
    Tid publisher = kNoTid;
    std::string stream;
    Policy policy;
    std::uint64_t subscription = 0;  // 0: not accepted (yet)
    std::uint64_t transaction = 0;   // of the last subscribe sent
    std::uint64_t consumed = 0;      // last sequence handed to the handler
    std::uint64_t acknowledged = 0;
  };
  void on_reply(Frame&& frame);
  void on_data(Frame&& frame);
  void send_control(const Wanted& w, ControlKind kind, std::uint64_t transaction);
  void retry();  // dispatch thread, every second: subscribes not accepted yet

  ApplicationContext& context_;
  Handler handler_;
  std::vector<Wanted> wanted_;
  std::uint64_t next_transaction_ = 1;
  std::atomic<bool> retrying_{false};
  std::jthread ticker_;

  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> refusals_{0};
  std::atomic<std::uint64_t> malformed_{0};
};

}  // namespace daqx::streams
