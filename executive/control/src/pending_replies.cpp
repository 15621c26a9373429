// Parked connections, polled by one thread and answered when their reply is known.
#include "pending_replies.hpp"

#include <poll.h>

#include <chrono>
#include <exception>

#include <Poco/Exception.h>
#include <Poco/Timespan.h>

#include "reply_writer.hpp"

namespace daqx::http {
namespace {

// How often each parked reply is asked: a wait answers within this of its connections coming up.
constexpr auto kPollInterval = std::chrono::milliseconds(10);
// A client that does not take its answer within this loses it: the one thread answering must not stall on it.
constexpr long kSendTimeoutMicroseconds = 200'000;

Reply failed_reply(const std::string& reason) {
  Reply reply;
  reply.status = 500;
  reply.body = json_error("internal error: " + reason);
  return reply;
}

// The connection was reset or is closed both ways while its answer was pending. A client that only closed its
// sending side is not taken for gone: it may have half-closed after its request and still read the answer (a
// client that closed both ways looks the same until something is written to it, so it keeps its place until its
// wait's timeout, at most 120 s).
bool client_gone(const Poco::Net::StreamSocket& socket) {
  pollfd fd{};
  fd.fd = socket.impl()->sockfd();
  fd.events = 0;  // POLLHUP and POLLERR are reported anyway
  return ::poll(&fd, 1, 0) > 0 && (fd.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace

PendingReplies::PendingReplies() : thread_([this] { run(); }) {}

PendingReplies::~PendingReplies() { stop(); }

void PendingReplies::park(Poco::Net::StreamSocket socket, std::shared_ptr<PendingReply> pending) {
  Parked parked{std::move(socket), std::move(pending)};
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      arrived_.push_back(std::move(parked));
      wake_.notify_all();
      return;
    }
  }
  answer_stopped(parked);
}

void PendingReplies::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PendingReplies::answer(Parked& parked, const Reply& reply) {
  try {
    parked.socket.setSendTimeout(Poco::Timespan(0, kSendTimeoutMicroseconds));
    write_reply(parked.socket, reply);
    parked.socket.close();
  } catch (...) {
    // The client went away: nobody to answer.
  }
}

void PendingReplies::answer_stopped(Parked& parked) {
  try {
    answer(parked, parked.pending->stopped());
  } catch (...) {
    // Not even the answer could be made (out of memory): the connection just closes.
  }
}

bool PendingReplies::settled(Parked& parked) {
  if (client_gone(parked.socket)) return true;
  std::optional<Reply> reply;
  try {
    reply = parked.pending->poll();
  } catch (const std::exception& error) {
    reply = failed_reply(error.what());
  } catch (...) {
    reply = failed_reply("unknown exception");
  }
  if (!reply) return false;
  answer(parked, *reply);
  return true;
}

void PendingReplies::run() {
  std::vector<Parked> waiting;  // only this thread's
  std::vector<Parked> still;    // those not settled in a round (kept to reuse its memory)
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, waiting.empty() ? std::chrono::hours(1) : kPollInterval,
                     [&] { return stopping_ || !arrived_.empty(); });
      for (Parked& parked : arrived_) waiting.push_back(std::move(parked));
      arrived_.clear();
      if (stopping_) break;
    }
    // Polled without the mutex: a poll asks the model, and park() must not wait for that.
    for (Parked& parked : waiting)
      if (!settled(parked)) still.push_back(std::move(parked));
    waiting.swap(still);
    still.clear();  // the settled ones are released now, which gives their places among the waits back
  }
  for (Parked& parked : waiting) answer_stopped(parked);
}

}  // namespace daqx::http
