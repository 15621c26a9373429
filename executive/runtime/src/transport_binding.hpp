// The executive as one transport sees it (TransportHost), and the transport as the executive owns it: frames
// received are handed to their application's delivery lane (or to its handler, inline), a batch at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "context_services.hpp"
#include "daqx/api/module.hpp"
#include "daqx/api/transport.hpp"

namespace daqx::detail {

class ApplicationHost;

class TransportBinding final : public TransportHost {
 public:
  TransportBinding(ContextServices& services, const TransportClass& cls, ParamSet params, EndpointAddress local,
                   std::size_t index, std::size_t planned_incoming);
  ~TransportBinding() override;
  void create();  // makes the transport object and listens

  const ParamSet& params() const noexcept override { return params_; }
  const std::string& protocol() const noexcept override { return class_.protocol; }
  std::uint32_t max_frame_size() const noexcept override;
  DeliverStatus deliver(Frame&& frame, PeerId from) noexcept override;
  void deliveries_done() noexcept override;
  bool handlers_inline() const noexcept override;
  void on_deliver_ready(std::function<void()> callback) override;
  void send_ready(PeerId peer) noexcept override;
  void connection_changed(PeerId peer, bool up, const std::string& reason) override;
  bool run_going() const noexcept override;
  std::size_t planned_incoming() const noexcept override { return planned_incoming_; }
  mem::Pool& make_pool(const std::string& name, const mem::PoolConfig& config) override;
  std::jthread start_thread(const std::string& name, std::function<void(std::stop_token)> body) override;
  void log(LogLevel level, const std::string& message) override;
  std::size_t register_memory(mem::Registrar& registrar) override;
  void deregister_memory(std::size_t slot) noexcept override;

  Transport& transport() noexcept { return *transport_; }
  const Transport& transport() const noexcept { return *transport_; }
  const EndpointAddress& local() const noexcept { return local_; }
  const TransportClass& transport_class() const noexcept { return class_; }
  std::string prefix() const { return "pt/" + local_.protocol; }

 private:
  void publish(ApplicationHost* target) noexcept;
  // Receive thread: remembers an application whose batch handler gets this round's frames at its end.
  void note_inline_batch(ApplicationHost* target);
  // Wakes the applications waiting for `peer` of this transport to take frames again.
  void notify_peer_ready(PeerId peer) noexcept;

  ContextServices& services_;
  const TransportClass& class_;
  ParamSet params_;
  EndpointAddress local_;
  std::unique_ptr<Transport> transport_;
  std::function<void()> deliver_ready_;

  std::size_t index_;                        // its lane in every application (ApplicationHost::lane)
  std::size_t planned_incoming_;             // the connection plan's incoming connections to this endpoint
  std::vector<ApplicationHost*> staged_to_;  // receive thread: applications with frames staged, not published
  Tid last_target_ = kNoTid;             // receive thread: the last frame's target and its host
  ApplicationHost* last_host_ = nullptr;
  std::uint64_t delivered_this_round_ = 0;  // receive thread: frames accepted since the last deliveries_done
  std::vector<ApplicationHost*> inline_batches_to_;  // receive thread: ... of which these take them inline, in batches
};

}  // namespace daqx::detail
