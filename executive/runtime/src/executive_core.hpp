// The executive's insides: what it builds from its partition (modules, pools, transports, hosted applications,
// routes) and the control model over them. The parts it hosts see it only through ContextServices.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connection_plan.hpp"
#include "context_services.hpp"
#include "daqx/executive/control.hpp"
#include "daqx/executive/partition.hpp"
#include "module_loader.hpp"
#include "threads.hpp"

namespace daqx::detail {

class ApplicationHost;
class TransportBinding;

class ExecutiveCore final : public ControlModel {
 public:
  ExecutiveCore(config::Partition partition, const std::string& context_url, std::size_t inbox_capacity);
  ~ExecutiveCore() override;
  void shutdown();

  // ControlModel (executive_control_model.cpp)
  void open_connections() override;
  std::string context_url() const override { return context_->url; }
  std::string partition_name() const override { return partition_.name; }
  std::vector<ApplicationStatus> applications() const override;
  std::optional<ApplicationStatus> application(Tid tid) const override;
  TransitionResult transition(std::optional<Tid> tid, Command command) override;
  TransitionResult run_transition(std::optional<Tid> tid, Command command, std::uint64_t run) override;
  std::uint64_t run_number() const override { return run_.load(std::memory_order_relaxed); }
  double run_seconds() const override;
  std::string set_parameter(Tid tid, const std::string& name, const std::string& value) override;
  std::vector<PoolStatus> pools() const override { return pools_.status(); }
  std::vector<ThreadStatus> threads() const override { return threads_.list(); }
  std::vector<TransportStatus> transports() const override;
  std::vector<Metric> executive_metrics() const override;

 private:
  // Building (executive_core.cpp).
  void load_modules();
  void make_plan();
  void make_transports();
  void make_applications(std::size_t inbox_capacity);
  void make_routes();
  // Control (executive_control_model.cpp).
  TransitionResult transition_locked(std::optional<Tid> tid, Command command, std::uint64_t run);
  TransitionResult context_transition(Command command, std::uint64_t run);
  // The answer to a transition or parameter change asked while another transition runs.
  std::string busy_reason();
  void update_run();  // after a transition: the run of the Enabled applications, or 0

  config::Partition partition_;
  const config::ContextConfig* context_ = nullptr;
  Policy policy_;
  ThreadRegistry threads_;
  ModuleRegistry modules_;
  PoolRegistry pools_;  // destroyed after the hosts and bindings: every Ref is back by then
  RouteTable routes_;   // built once before any application starts
  DeliveryState delivery_;
  std::optional<ContextServices> services_;  // what hosts and bindings see of this; set once context_ is known
  std::vector<std::unique_ptr<TransportBinding>> bindings_;
  std::vector<std::unique_ptr<ApplicationHost>> hosts_;  // in partition order
  ConnectionPlan plan_;                                  // this context's, made before the transports
  std::size_t context_index_ = 0;                        // this context's index in partition_.contexts
  ModuleRegistry plan_modules_;                          // other contexts' modules, for their classes' parameters

  // Transitions (and parameter changes, and the shutdown) one at a time. Held while hooks run, which may take
  // long: a second transition asked meanwhile is refused at once as busy (try_lock), never queued on a request
  // thread. Taken before control_mutex_.
  std::mutex transition_mutex_;
  // What the transition in progress is, for the busy answer (control_mutex_).
  std::string transition_in_progress_;
  std::chrono::steady_clock::time_point transition_started_;
  // The structure (hosts_, bindings_, peer names) and the parameters: held only briefly, never across a hook, so
  // status reads are answered while a transition runs.
  mutable std::recursive_mutex control_mutex_;
  bool shut_down_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<std::uint64_t> run_{0};  // the run the Enabled applications are in; 0: none
  std::atomic<std::int64_t> run_started_ns_{0};  // steady clock, when run_ took its value
};

}  // namespace daqx::detail
