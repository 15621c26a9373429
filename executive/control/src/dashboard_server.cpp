// DashboardServer: a PartitionView's two routes on an HttpServer, for daqx-launch.
#include "daqx/control/dashboard_server.hpp"

#include "http_server.hpp"

namespace daqx {

struct DashboardServer::Impl {
  Impl(PartitionView& view, const std::string& host, std::uint16_t port, const ControlServerSecurity& security)
      : server([&view](const http::Request& request,
                       const http::AccessCheck& access) { return http::handle_dashboard_request(view, request, access); },
               host, port, 4, security) {}
  http::HttpServer server;
};

DashboardServer::DashboardServer(PartitionView& view, const std::string& host, std::uint16_t port,
                                 const ControlServerSecurity& security)
    : impl_(std::make_unique<Impl>(view, host, port, security)) {}

DashboardServer::~DashboardServer() = default;

void DashboardServer::start() { impl_->server.start(); }
void DashboardServer::stop() { impl_->server.stop(); }
std::uint16_t DashboardServer::port() const noexcept { return impl_->server.port(); }

}  // namespace daqx
