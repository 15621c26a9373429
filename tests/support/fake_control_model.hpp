// A fake control model for tests of the control server: four applications with the real state machine
// (next_state), parameters that are checked and change only while Halted, fixed pools, threads, transports and
// executive counters, and switches that make it throw, bring a connection up or tear its transports down.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daqx/control/control_server.hpp"

namespace daqx::test {

// One application of the fake: tid 4 (test::Fragile<&>) fails its enable hook when its fail_on_enable says so.
struct FakeApplication {
  Tid tid;
  std::string class_name;
  std::uint32_t instance;
  State state = State::halted;
  std::string reason;
  std::vector<ParamView> params;
};

class FakeControlModel : public ControlModel {
 public:
  FakeControlModel();

  std::atomic<bool> throw_from_pools{false};
  // The connect command: how often it was asked, and whether the connection that is down comes up when asked.
  std::atomic<int> connect_requests{0};
  std::atomic<bool> down_connection_comes_up{false};
  // The executive has shut down its transports (as ExecutiveCore::shutdown does): no connections are listed.
  std::atomic<bool> transports_gone{false};

  // The state of an application; std::out_of_range for a tid it does not have.
  State state_of(Tid tid) const;

  std::string context_url() const override { return "http://127.0.0.1:9001"; }
  std::string partition_name() const override { return "two-by-two <test>"; }
  std::vector<ApplicationStatus> applications() const override;
  std::optional<ApplicationStatus> application(Tid tid) const override;
  TransitionResult transition(std::optional<Tid> tid, Command command) override;
  std::string set_parameter(Tid tid, const std::string& name, const std::string& value) override;
  std::vector<PoolStatus> pools() const override;
  std::vector<ThreadStatus> threads() const override;
  std::vector<TransportStatus> transports() const override;
  void open_connections() override;
  std::vector<Metric> executive_metrics() const override;

 private:
  FakeApplication* find(Tid tid);
  const FakeApplication* find(Tid tid) const { return const_cast<FakeControlModel*>(this)->find(tid); }

  mutable std::mutex mutex_;
  std::vector<FakeApplication> applications_;
  std::atomic<bool> second_up_{false};
};

// The fake served on a free port of 127.0.0.1 by a control server of 2 threads, started; with a security, the
// server asks for its token.
struct ServedControlModel {
  FakeControlModel model;
  ControlServer server;
  explicit ServedControlModel(const ControlServerSecurity& security = {});
  std::uint16_t port() const { return server.port(); }
};

// Whether the server on `port` still answers GET /api/applications with the fake's four applications.
bool still_answers(std::uint16_t port);

}  // namespace daqx::test
