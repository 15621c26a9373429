// What the executive gives a transport, made small for tests that run transports inside the test process: each
// transport gets a host of its own that records what the transport tells it and lets the test steer delivery.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/transport.hpp"
#include "wait_until.hpp"

namespace daqx::test {

// A total that transport reports under name (report()), -1 when it reports none of that name.
double metric(const Transport& transport, const std::string& name);

// A frame of `bytes` (header included) in one block of pool, to application 7 from 3, its payload filled with fill.
mem::Ref frame_of(mem::Pool& pool, std::uint32_t bytes, std::byte fill);

class TransportTestHost : public TransportHost {
 public:
  struct ConnectionChange {
    PeerId peer = 0;
    bool up = false;
    std::string reason;
  };

  // params: the transport's declared parameters, set as the test wants them.
  TransportTestHost(std::string protocol, ParamSet params);
  ~TransportTestHost() override;
  TransportTestHost(const TransportTestHost&) = delete;
  TransportTestHost& operator=(const TransportTestHost&) = delete;

  // ---- TransportHost ----------------------------------------------------------------------------------
  const ParamSet& params() const noexcept override { return params_; }
  const std::string& protocol() const noexcept override { return protocol_; }
  std::uint32_t max_frame_size() const noexcept override { return 1u << 24; }
  // Holds every frame it accepts until the test takes or releases it; answers busy while set_busy(true).
  DeliverStatus deliver(Frame&& frame, PeerId from) noexcept override;
  void deliveries_done() noexcept override {}
  void on_deliver_ready(std::function<void()> callback) override;
  bool handlers_inline() const noexcept override { return false; }
  void send_ready(PeerId peer) noexcept override;
  void connection_changed(PeerId peer, bool up, const std::string& reason) override;
  // "<name>" becomes "pt/<protocol>/<name>"; in shared memory when the config asks for it, else on the heap.
  mem::Pool& make_pool(const std::string& name, const mem::PoolConfig& config) override;
  // Counted while its body runs, so a test can see that none is left after stop().
  std::jthread start_thread(const std::string& name, std::function<void(std::stop_token)> body) override;
  void log(LogLevel level, const std::string& message) override;
  std::size_t register_memory(mem::Registrar& registrar) override;
  void deregister_memory(std::size_t slot) noexcept override;

  // ---- What a test steers ----------------------------------------------------------------------------
  // An application's pool, from the allocator named ("heap", "shm", ...); tracked like the transport's own.
  mem::Pool& add_pool(const std::string& name, mem::PoolConfig config, const std::string& allocator);
  // While busy, deliver() answers DeliverStatus::busy and takes nothing: the transport keeps the frame.
  void set_busy(bool busy) noexcept { busy_.store(busy, std::memory_order_relaxed); }
  // Calls what the transport registered with on_deliver_ready(), as the executive does when a queue has room;
  // false when it registered nothing.
  bool resume_delivery();
  // Moves out the i-th frame accepted (the order of delivery); the slot stays, empty.
  Frame take(std::size_t i);
  // Releases every frame held: their blocks go back to their pools.
  void release_delivered();

  // ---- What a test looks at ----------------------------------------------------------------------------
  std::size_t delivered();     // frames accepted so far (taken ones included)
  std::size_t busy_answers();  // times deliver() answered busy
  std::size_t send_ready_count(PeerId peer);
  std::vector<ConnectionChange> connection_changes();
  std::string logs();
  // A pool by its full name ("pt/tcp/recv", "app/pool"), nullptr when there is none.
  mem::Pool* pool(const std::string& name);
  // Blocks out of every pool made here (transport's and application's).
  std::size_t blocks_in_use();
  // Blocks out of the pools whose name ends in `suffix` ("/credit": credit messages still being sent).
  std::size_t blocks_in_use(std::string_view suffix);
  // "pt/tcp/recv 3, app/pool 1": the pools with blocks out, for messages.
  std::string pools_in_use();
  std::size_t threads_running() const noexcept { return threads_running_.load(); }

 private:
  mem::Pool& keep_pool(mem::PoolConfig config, const std::string& allocator);

  ParamSet params_;
  std::string protocol_;
  std::atomic<bool> busy_{false};
  std::atomic<int> threads_running_{0};
  std::mutex mutex_;  // everything below
  std::array<mem::Registrar*, 4> registrars_{};
  std::vector<std::unique_ptr<mem::Pool>> pools_;  // outlive every frame below
  std::vector<Frame> delivered_;
  std::size_t busy_answers_ = 0;
  std::function<void()> deliver_ready_;
  std::map<PeerId, std::size_t> send_ready_;
  std::vector<ConnectionChange> connection_changes_;
  std::string logs_;
};

}  // namespace daqx::test
