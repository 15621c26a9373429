// pttcp: the TCP peer transport, on the shared connection layer (pt/base). What is its own: sockets, the
// gather writes straight from Ref chains (each frame at once, or many coalesced into one write in throughput
// mode), and the byte-stream reader that turns what arrives back into frames.
//
// Outgoing connections carry frames to peers' endpoints; incoming ones (accepted on our endpoint) carry
// frames to us. The send thread's waiter holds the outgoing sockets, the receive thread's the listener and
// the incoming sockets.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "daqx/pt/connection_transport.hpp"
#include "daqx/pt/socket_address.hpp"
#include "frame_reader.hpp"
#include "settings.hpp"

namespace daqx::pttcp {

class TcpTransport final : public pt::ConnectionTransport {
 public:
  explicit TcpTransport(TransportHost& host);
  void listen(const EndpointAddress& local) override;

 private:
  struct Outgoing : pt::OutgoingConnection {
    using OutgoingConnection::OutgoingConnection;
    pt::SocketAddress address;   // resolved when a connection starts
    bool unresolved_told = false;  // the host name did not resolve, and the log said so once
    int fd = -1;
    std::size_t head_written = 0;  // bytes of queue.front() already written
    bool output_armed = false;     // EPOLLOUT requested: the socket was full (or connecting)
  };
  struct Incoming : pt::IncomingConnection {
    int fd = -1;
    std::unique_ptr<FrameReader> reader;
    bool reading = true;            // EPOLLIN requested; off while delivery or the pool waits
    bool waiting_for_pool = false;
    Clock::time_point last_byte;    // when a byte last came (or reading last resumed): for stallTimeout
  };

  // Outgoing (pt::ConnectionTransport).
  std::unique_ptr<pt::OutgoingConnection> make_outgoing(const EndpointAddress& remote) override;
  void start_connect(pt::OutgoingConnection& c) override;
  void pump(pt::OutgoingConnection& c) noexcept override;
  std::size_t close_link(pt::OutgoingConnection& c) noexcept override;
  void on_send_ready(void* tag, std::uint32_t events) override;
  // Writes as much of the queue as the socket takes; false (with error) when the connection failed.
  bool flush(Outgoing& c, std::string& error) noexcept;
  void arm_output(Outgoing& c, bool on) noexcept;

  // Incoming.
  void on_receive_ready(void* tag, std::uint32_t events) override;
  void accept_connections();
  void serve(Incoming& c);  // reads and delivers until the socket is drained or the connection pauses
  void stop_reading(Incoming& c) noexcept;
  void close_wire(pt::IncomingConnection& c) noexcept override;
  void delivery_paused(pt::IncomingConnection& c) override;
  void resume_wire(pt::IncomingConnection& c) override;
  void receive_housekeeping(Clock::time_point now) override;
  void close_stalled(Clock::time_point now);
  void stop_endpoints() noexcept override;
  void report_wire(MetricSink& sink) const override;

  Settings settings_;
  mem::Pool* receive_pool_ = nullptr;
  EndpointAddress local_;
  int listen_fd_ = -1;
  Clock::time_point next_stall_check_{};  // receive thread
  std::atomic<std::uint64_t> stalled_{0};     // connections closed: stallTimeout in the middle of a frame
};

}  // namespace daqx::pttcp
