// A small HTTP server that serves a PartitionView only (GET /partition, GET /api/partition; / leads to the page):
// what daqx-launch runs beside the partition it launched.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "daqx/control/control_server.hpp"
#include "daqx/control/partition_view.hpp"

namespace daqx {

class DashboardServer {
 public:
  // Binds at once: throws std::runtime_error "cannot listen on HOST:PORT: REASON". Port 0 picks a free one.
  // `security`: the token that reads need (reads_need_token) and TLS; by default open, plain HTTP. The view is
  // borrowed and must outlive the server.
  DashboardServer(PartitionView& view, const std::string& host, std::uint16_t port,
                  const ControlServerSecurity& security = {});
  ~DashboardServer();  // stops
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  void start();
  void stop();  // idempotent
  std::uint16_t port() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace daqx
