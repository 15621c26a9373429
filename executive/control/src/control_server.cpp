// ControlServer: the executive's routes (routes.cpp) on an HttpServer, with the pages' state and, when given, the
// partition view.
#include "daqx/control/control_server.hpp"

#include "http_server.hpp"

namespace daqx {

struct ControlServer::Impl {
  Impl(ControlModel& model, const std::string& host, std::uint16_t port, unsigned threads,
       const ControlServerSecurity& security, PartitionView* view)
      : server([this, &model](const http::Request& request,
                              const http::AccessCheck& access) { return http::handle_request(model, request, access, &pages); },
               host, port, threads, security) {
    pages.partition_view = view;
    pages.stream_clients = std::make_shared<std::atomic<unsigned>>(0);
  }
  http::Pages pages;  // before the server: its requests use it until the server is stopped
  http::HttpServer server;
};

ControlServer::ControlServer(ControlModel& model, const std::string& host, std::uint16_t port, unsigned threads,
                             const ControlServerSecurity& security, PartitionView* partition_view)
    : impl_(std::make_unique<Impl>(model, host, port, threads, security, partition_view)) {}

ControlServer::~ControlServer() = default;  // the server stops first: it is the last member of Impl

void ControlServer::start() { impl_->server.start(); }
void ControlServer::begin_stop() noexcept { impl_->pages.stopping.store(true, std::memory_order_relaxed); }
void ControlServer::stop() {
  begin_stop();  // connect waits end, so the stop does not wait for them
  impl_->server.stop();
}
std::uint16_t ControlServer::port() const noexcept { return impl_->server.port(); }

}  // namespace daqx
