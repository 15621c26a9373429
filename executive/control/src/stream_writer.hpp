// External subscribers of streams (GET /api/applications/<tid>/streams/<name>?policy=...): each is a connection
// whose answer is a chunked stream of records (daqx/streams/external_record.hpp) that a publisher pushes through its
// sink. One thread of the control server writes them all with non-blocking sends, so a client that reads slowly
// or not at all holds no thread and slows nobody: its records wait in its sink, at most its policy's depth of them
// (the publisher sends no more until the writer acknowledges what it wrote), and beyond that its policy drops.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <Poco/Net/StreamSocket.h>

#include "daqx/streams/external_sink.hpp"

namespace daqx::http {

// At most this many streaming clients per executive; more are answered 503. Each costs a descriptor, its records
// in flight (at most its depth) and its place in the writer's poll.
inline constexpr unsigned kMaxStreamClients = 64;

// One external subscriber: the sink a publisher pushes to (its dispatch thread) and the writer drains.
class StreamClient final : public streams::ExternalSink {
 public:
  // `count` (the server's number of clients, already raised for this one) is lowered when the client is gone,
  // which may be after the server (the publisher holds the sink until it settles the cancellation).
  explicit StreamClient(std::shared_ptr<std::atomic<unsigned>> count) : count_(std::move(count)) {}
  ~StreamClient() override;

  void push(streams::StreamRecord record) override;
  void close(const std::string& reason) override;

  // The publisher's side, kept while the client is connected; set once, before the writer adopts the client.
  void subscribed(std::shared_ptr<streams::ExternalSubscription> subscription) { subscription_ = std::move(subscription); }
  streams::ExternalSubscription* subscription() const noexcept { return subscription_.get(); }

  // The writer's: the records pushed since it last took them; whether the publisher ended the stream.
  void take(std::deque<streams::StreamRecord>& into, bool& ended);
  void set_wake(int fd) noexcept { wake_fd_.store(fd, std::memory_order_release); }

 private:
  void wake() noexcept;

  std::shared_ptr<std::atomic<unsigned>> count_;
  std::shared_ptr<streams::ExternalSubscription> subscription_;
  std::mutex mutex_;
  std::deque<streams::StreamRecord> records_;  // mutex_
  bool ended_ = false;                         // mutex_
  std::atomic<int> wake_fd_{-1};               // the writer's eventfd, once adopted
};

class StreamWriter {
 public:
  StreamWriter();   // starts the thread
  ~StreamWriter();  // stop()
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // Takes the connection (its request read whole) and streams client's records to it until the client goes away,
  // the publisher ends the stream or the writer stops.
  void adopt(Poco::Net::StreamSocket socket, std::shared_ptr<StreamClient> client);

  // Ends every stream (its last chunk, if the client takes it at once), cancels its subscription and ends the
  // thread. Idempotent.
  void stop();

 private:
  struct Connection;
  void run();

  int wake_fd_ = -1;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> arrived_;  // mutex_
  bool stopping_ = false;                              // mutex_
  std::thread thread_;                                 // last: it uses the members above
};

}  // namespace daqx::http
