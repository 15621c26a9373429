// pttcp: the TCP peer transport, on the shared connection layer (pt/base). What is its own: sockets, the
// gather writes straight from Ref chains (each frame at once, or many coalesced into one write in throughput
// mode), and the byte-stream reader that turns what arrives back into frames.
//
// Outgoing connections carry frames to peers' endpoints; incoming ones (accepted on our endpoint) carry
// frames to us. The send thread's waiter holds the outgoing sockets, the receive thread's the listener and
// the incoming sockets.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "daqx/pt/connection_transport.hpp"
#include "daqx/pt/socket_address.hpp"
#include "frame_reader.hpp"

namespace daqx::pttcp {

struct Settings {
  bool throughput_mode = false;                 // coalesce frames into large writes (else send each at once)
  std::size_t pack_bytes = 256 * 1024;          // throughput mode: write when this much is queued...
  std::chrono::microseconds pack_timeout{200};  // ...or when the oldest queued frame is this old
  int send_buffer = 0;                          // SO_SNDBUF, 0: kernel default
  int receive_buffer = 0;                       // SO_RCVBUF, 0: kernel default
  std::size_t copy_threshold = 16 * 1024;       // received frames up to this size are copied from the staging buffer
  std::size_t staging_bytes = 256 * 1024;       // per incoming connection

  static Settings from(const ParamSet& params);
};

// The shared connection parameters and pttcp's own.
std::vector<ParamSpec> parameter_specs();
TransportCapabilities capabilities(const ParamSet& params);

class TcpTransport final : public pt::ConnectionTransport {
 public:
  explicit TcpTransport(TransportHost& host);
  ~TcpTransport() override;

  std::string_view protocol() const noexcept override { return "tcp"; }
  void listen(const EndpointAddress& local) override;
  TransportCapabilities capabilities() const override;

 private:
  struct Outgoing : pt::OutgoingConnection {
    using OutgoingConnection::OutgoingConnection;
    pt::SocketAddress address;
    int fd = -1;
    std::size_t head_written = 0;  // bytes of queue.front() already written
    bool output_armed = false;     // EPOLLOUT requested: the socket was full (or connecting)
  };
  struct Incoming : pt::IncomingConnection {
    int fd = -1;
    std::unique_ptr<FrameReader> reader;
    bool reading = true;            // EPOLLIN requested; off while delivery or the pool waits
    bool waiting_for_pool = false;
  };

  // Outgoing (pt::ConnectionTransport).
  std::unique_ptr<pt::OutgoingConnection> make_outgoing(const EndpointAddress& remote) override;
  void start_connect(pt::OutgoingConnection& c) override;
  void pump(pt::OutgoingConnection& c) noexcept override;
  std::size_t close_link(pt::OutgoingConnection& c) noexcept override;
  void on_timer(pt::OutgoingConnection& c) noexcept override;
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
  void stop_endpoints() noexcept override;
  void report_wire(MetricSink& sink) const override;

  Settings settings_;
  mem::Pool* receive_pool_ = nullptr;
  EndpointAddress local_;
  int listen_fd_ = -1;
};

}  // namespace daqx::pttcp
