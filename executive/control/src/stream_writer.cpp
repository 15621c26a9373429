// Streaming answers of external subscribers, written by one thread with non-blocking sends.
#include "stream_writer.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include <Poco/Exception.h>

#include "daqx/streams/external_record.hpp"

namespace daqx::http {
namespace {

using Clock = std::chrono::steady_clock;

// A keep-alive record goes to a client that got nothing for this long, so that it (and any proxy) sees the stream
// is alive, and a client that went away is found by the write failing.
constexpr auto kKeepAlive = std::chrono::seconds(1);
// Acknowledge at least every this many records written (and whenever the client has nothing more queued).
constexpr std::uint64_t kAcknowledgeEvery = 16;

constexpr const char* kHead =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: application/x-daqx-stream\r\n"
    "Transfer-Encoding: chunked\r\n"
    "Cache-Control: no-store\r\n"
    "Connection: close\r\n"
    "Server: daqx\r\n"
    "\r\n";

// One chunk holding one record: its size line, the record's header and bytes (copied: the socket is the wire), CRLF.
void append_chunk(std::string& out, const streams::RecordHeader& header, const mem::Ref& bytes) {
  char size_line[24];
  const int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", streams::kRecordHeaderBytes + header.length);
  out.append(size_line, static_cast<std::size_t>(n));
  std::byte encoded[streams::kRecordHeaderBytes];
  streams::encode(header, encoded);
  out.append(reinterpret_cast<const char*>(encoded), sizeof encoded);
  for (const mem::Block* block = bytes ? bytes.head() : nullptr; block != nullptr; block = block->next())
    out.append(reinterpret_cast<const char*>(block->data()), block->size());
  out.append("\r\n");
}

}  // namespace

// ---- StreamClient ----

StreamClient::~StreamClient() { count_->fetch_sub(1, std::memory_order_relaxed); }

void StreamClient::push(streams::StreamRecord record) {
  {
    std::lock_guard lock(mutex_);
    records_.push_back(std::move(record));
  }
  wake();
}

void StreamClient::close(const std::string&) {
  {
    std::lock_guard lock(mutex_);
    ended_ = true;  // the answer's records cannot carry the reason: the last chunk ends the stream
  }
  wake();
}

void StreamClient::take(std::deque<streams::StreamRecord>& into, bool& ended) {
  std::lock_guard lock(mutex_);
  for (auto& record : records_) into.push_back(std::move(record));
  records_.clear();
  if (ended_) ended = true;
}

void StreamClient::wake() noexcept {
  const int fd = wake_fd_.load(std::memory_order_acquire);
  if (fd < 0) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(fd, &one, sizeof one);  // a full counter still wakes the writer
}

// ---- StreamWriter ----

struct StreamWriter::Connection {
  Poco::Net::StreamSocket socket;
  std::shared_ptr<StreamClient> client;
  std::string out;  // bytes being written: the head, then one chunk at a time
  std::size_t written = 0;
  std::size_t total_written = 0;
  std::uint64_t out_sequence = 0;  // the record in `out` (0: the head, a keep-alive or the end)
  std::deque<streams::StreamRecord> queue;
  bool ended = false;          // the publisher ended the stream
  bool last_chunk_out = false;  // the end is in `out`
  std::uint64_t acknowledged = 0;
  std::uint64_t written_through = 0;  // the last record written whole
  Clock::time_point last_write = Clock::now();

  void acknowledge(bool now) {
    if (written_through == acknowledged) return;
    if (!now && written_through - acknowledged < kAcknowledgeEvery) return;
    if (streams::ExternalSubscription* subscription = client->subscription()) subscription->acknowledge(written_through);
    acknowledged = written_through;
  }

  // Sends what it can now; false when the client is gone or the stream is over (written whole).
  bool service(short revents) {
    if ((revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
    client->take(queue, ended);
    for (;;) {
      if (written == out.size()) {
        out.clear();
        written = 0;
        if (out_sequence != 0) written_through = out_sequence;
        out_sequence = 0;
        if (last_chunk_out) return false;
        if (!queue.empty()) {
          streams::StreamRecord& record = queue.front();
          const std::size_t length = record.bytes ? record.bytes.total_size() : 0;
          append_chunk(out, {record.sequence, record.key, record.dropped, static_cast<std::uint32_t>(length)},
                       record.bytes);
          out_sequence = record.sequence;
          queue.pop_front();
        } else {
          acknowledge(true);
          if (ended) {
            out = "0\r\n\r\n";
            last_chunk_out = true;
          } else if (Clock::now() - last_write >= kKeepAlive) {
            append_chunk(out, {}, mem::Ref{});
          } else {
            return true;
          }
        }
        acknowledge(false);
      }
      int sent = 0;
      try {
        sent = socket.sendBytes(out.data() + written, static_cast<int>(out.size() - written));
      } catch (const Poco::Exception&) {
        return false;  // reset, broken pipe: the client is gone
      }
      if (sent <= 0) return true;  // the socket is full: poll says when it has room
      written += static_cast<std::size_t>(sent);
      total_written += static_cast<std::size_t>(sent);
      last_write = Clock::now();
    }
  }
};

StreamWriter::StreamWriter() {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd for the stream writer");
  thread_ = std::thread([this] { run(); });
}

StreamWriter::~StreamWriter() {
  stop();
  ::close(wake_fd_);
}

void StreamWriter::adopt(Poco::Net::StreamSocket socket, std::shared_ptr<StreamClient> client) {
  auto connection = std::make_unique<Connection>();
  connection->socket = std::move(socket);
  connection->client = std::move(client);
  connection->out = kHead;
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      connection->client->set_wake(wake_fd_);
      arrived_.push_back(std::move(connection));
    }
  }
  if (connection) {  // the writer stopped: the stream ends before it began
    if (streams::ExternalSubscription* subscription = connection->client->subscription()) subscription->cancel();
    return;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof one);
}

void StreamWriter::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void StreamWriter::run() {
  std::vector<std::unique_ptr<Connection>> connections;
  std::vector<pollfd> fds;
  auto finish = [](Connection& connection) {
    if (streams::ExternalSubscription* subscription = connection.client->subscription()) subscription->cancel();
    connection.client->set_wake(-1);
    try {
      connection.socket.close();
    } catch (...) {
    }
  };
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      for (auto& connection : arrived_) {
        try {
          connection->socket.setBlocking(false);
          connections.push_back(std::move(connection));
        } catch (...) {
          finish(*connection);
        }
      }
      arrived_.clear();
      if (stopping_) break;
    }
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    for (const auto& connection : connections) {
      const bool has_bytes = connection->written < connection->out.size();
      fds.push_back(pollfd{connection->socket.impl()->sockfd(), static_cast<short>(has_bytes ? POLLOUT : 0), 0});
    }
    // At least every keep-alive period, to write keep-alives to idle clients.
    ::poll(fds.data(), fds.size(), static_cast<int>(std::chrono::milliseconds(kKeepAlive).count()));
    if ((fds[0].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const ssize_t read = ::read(wake_fd_, &count, sizeof count);
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < connections.size(); ++i) {
      if (connections[i]->service(fds[i + 1].revents)) {
        connections[kept++] = std::move(connections[i]);
      } else {
        finish(*connections[i]);
        connections[i].reset();
      }
    }
    connections.resize(kept);
  }
  // Stopping: the last chunk where the client is between chunks (never inside one, nor before the head), then
  // every subscription cancelled.
  for (auto& connection : connections) {
    if (connection->total_written >= std::strlen(kHead) && connection->written == connection->out.size()) {
      try {
        connection->socket.sendBytes("0\r\n\r\n", 5);
      } catch (...) {
      }
    }
    finish(*connection);
  }
}

}  // namespace daqx::http
