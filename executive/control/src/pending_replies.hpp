// Connections whose answer comes later (POST /api/connect's wait), parked off the server's request threads: one
// thread polls them all and answers each when its reply is known, so a wait of two minutes costs a descriptor and
// a few hundred bytes, never a thread that status reads, stop and halt need.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <Poco/Net/StreamSocket.h>

#include "control_routes.hpp"

namespace daqx::http {

class PendingReplies {
 public:
  PendingReplies();   // starts the thread that polls
  ~PendingReplies();  // stop()
  PendingReplies(const PendingReplies&) = delete;
  PendingReplies& operator=(const PendingReplies&) = delete;

  // Takes the connection (its request read whole) and answers it with `pending`'s reply once poll() gives one,
  // then closes it. A connection reset by its client is dropped and `pending` released at once. After stop(), it
  // is answered stopped() at once.
  void park(Poco::Net::StreamSocket socket, std::shared_ptr<PendingReply> pending);

  // Answers every parked connection with its stopped() reply, closes them and ends the thread; afterwards no
  // PendingReply is called again. Idempotent.
  void stop();

 private:
  struct Parked {
    Poco::Net::StreamSocket socket;
    std::shared_ptr<PendingReply> pending;
  };
  void run();
  static bool settled(Parked& parked);  // answered now, or its client gone: done with
  static void answer(Parked& parked, const Reply& reply);
  static void answer_stopped(Parked& parked);

  std::mutex mutex_;
  std::condition_variable wake_;  // a new connection, or stop
  std::vector<Parked> arrived_;   // mutex_: parked since the thread last looked
  bool stopping_ = false;         // mutex_
  std::thread thread_;            // last: it uses the members above
};

}  // namespace daqx::http
