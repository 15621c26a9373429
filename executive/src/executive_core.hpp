// The executive's insides: modules, pools, transports, hosted applications, routes, control model.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "application_host.hpp"
#include "connection_plan.hpp"
#include "daqx/executive/control.hpp"
#include "daqx/executive/partition.hpp"
#include "module_loader.hpp"
#include "threads.hpp"

namespace daqx::detail {

class ExecutiveCore;

// The executive as one transport sees it (TransportHost), and the transport as the executive owns it.
class TransportBinding final : public TransportHost {
 public:
  TransportBinding(ExecutiveCore& core, const TransportClass& cls, ParamSet params, EndpointAddress local,
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
  const EndpointAddress& local() const noexcept { return local_; }
  const TransportClass& transport_class() const noexcept { return class_; }
  std::string prefix() const { return "pt/" + local_.protocol; }

 private:
  ExecutiveCore& core_;
  const TransportClass& class_;
  ParamSet params_;
  EndpointAddress local_;
  std::unique_ptr<Transport> transport_;
  std::function<void()> deliver_ready_;
  void publish(ApplicationHost* target) noexcept;

  std::size_t index_;                          // its lane in every application (ApplicationHost::lane)
  std::size_t planned_incoming_;               // the connection plan's incoming connections to this endpoint
  std::vector<ApplicationHost*> staged_to_;    // receive thread: applications with frames staged, not published
};

inline constexpr PeerId kNoPeer = ~PeerId{0};

// An endpoint of another context that applications here may send to, and this context's one connection to it:
// named at configure when the connection plan has it, else by the first frame sent there.
struct RemoteEndpoint {
  TransportBinding* binding = nullptr;  // the transport it is reached through
  EndpointAddress address;
  std::string context;                  // the URL of the context it belongs to
  bool planned = false;
  std::atomic<PeerId> peer{kNoPeer};    // kNoPeer until named; then for good
};

struct Route {
  ApplicationHost* local = nullptr;  // same context: direct hand-over
  RemoteEndpoint* remote = nullptr;  // else: through its connection
  std::string network;               // the target's network
};

class ExecutiveCore final : public ControlModel {
 public:
  ExecutiveCore(config::Partition partition, const std::string& context_url, std::size_t inbox_capacity);
  ~ExecutiveCore() override;
  void shutdown();

  // For hosts and bindings.
  const Route* route(Tid target) const noexcept {
    auto found = routes_.find(target);
    return found == routes_.end() ? nullptr : &found->second;
  }
  ApplicationHost* local_application(Tid tid) const noexcept;
  ThreadRegistry& threads() noexcept { return threads_; }
  const config::Partition& partition() const noexcept { return partition_; }
  const config::ContextConfig& context() const noexcept { return *context_; }
  mem::Pool& make_pool(const std::string& name, const mem::PoolConfig& config);
  std::size_t add_registrar(mem::Registrar& registrar);
  void remove_registrar(std::size_t slot) noexcept;
  void note_bad_frame() noexcept { bad_frames_.fetch_add(1, std::memory_order_relaxed); }
  void note_delivered() noexcept { frames_from_transports_.fetch_add(1, std::memory_order_relaxed); }
  // Every hosted application dispatches frames from transports inline (false until they are made).
  bool all_inline() const noexcept { return all_inline_.load(std::memory_order_acquire); }
  // An application is Enabled (read by transport threads without the control lock).
  bool applications_enabled() const noexcept { return applications_enabled_.load(std::memory_order_acquire); }
  void notify_peer_ready(const void* transport, PeerId peer) noexcept;
  void notify_all_deliveries_ready() noexcept;
  // The connection to `remote`, named now if it is not yet (a send outside the plan); kNoPeer when the transport
  // refused to name it (logged once).
  PeerId connection_to(RemoteEndpoint& remote) noexcept;

  // ControlModel
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
  std::vector<PoolStatus> pools() const override;
  std::vector<ThreadStatus> threads() const override { return threads_.list(); }
  std::vector<TransportStatus> transports() const override;
  std::vector<Metric> executive_metrics() const override;

 private:
  void load_modules();
  void make_plan();
  void make_transports();
  void make_applications(std::size_t inbox_capacity);
  void make_routes();
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

  mutable std::mutex pools_mutex_;
  std::vector<std::unique_ptr<mem::Pool>> pools_;  // destroyed last: every Ref is back by then
  std::array<mem::Registrar*, mem::kMaxRegistrars> registrars_{};  // pools_mutex_; slot -> registrar
  std::vector<std::unique_ptr<TransportBinding>> bindings_;
  std::vector<std::unique_ptr<ApplicationHost>> hosts_;  // in partition order
  std::unordered_map<Tid, Route> routes_;                // built once before any application starts
  ConnectionPlan plan_;                                  // this context's, made before the transports
  std::size_t context_index_ = 0;                        // this context's index in partition_.contexts
  ModuleRegistry plan_modules_;                          // other contexts' modules, for their classes' parameters
  // Every remote endpoint some route goes to (never shrinks: routes point into it). Naming a connection outside
  // the plan takes remotes_mutex_; the send path reads RemoteEndpoint::peer without it.
  std::vector<std::unique_ptr<RemoteEndpoint>> remotes_;
  mutable std::mutex remotes_mutex_;

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
  std::atomic<std::uint64_t> bad_frames_{0};
  std::atomic<std::uint64_t> frames_from_transports_{0};
  std::atomic<bool> all_inline_{false};
  std::atomic<bool> applications_enabled_{false};
  bool shared_pools_ = false;  // a transport passes blocks to local peers: pools no rule places are shared
  std::atomic<std::uint64_t> run_{0};  // the run the Enabled applications are in; 0: none
  std::atomic<std::int64_t> run_started_ns_{0};  // steady clock, when run_ took its value
};

}  // namespace daqx::detail
