// Building an executive from its partition (modules, checks, pools, transports, applications, routes),
// the control model over it, and an orderly shutdown.
#include "executive_core.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "daqx/executive/executive.hpp"
#include "daqx/services/text.hpp"
#include "http/control_routes.hpp"
#include "daqx/services/open_file_limit.hpp"
#include "param_listing.hpp"
#include "resource_plan_estimate.hpp"

namespace daqx::detail {
namespace {

std::string where(const config::SourceLocation& location) { return location.text() + ": "; }

}  // namespace

// ---- TransportBinding ---------------------------------------------------------------------------------

TransportBinding::TransportBinding(ExecutiveCore& core, const TransportClass& cls, ParamSet params,
                                   EndpointAddress local, std::size_t index, std::size_t planned_incoming)
    : core_(core), class_(cls), params_(std::move(params)), local_(std::move(local)), index_(index),
      planned_incoming_(planned_incoming) {
  staged_to_.reserve(64);  // no allocation on the receive path for up to 64 local applications
}

TransportBinding::~TransportBinding() {
  // A transport is stopped before it goes (its own hooks run in stop()), also when create() failed half-way.
  if (transport_) transport_->stop();
}

void TransportBinding::create() {
  transport_ = class_.create(*this);
  transport_->listen(local_);
}

std::uint32_t TransportBinding::max_frame_size() const noexcept { return kDefaultMaxFrameSize; }

DeliverStatus TransportBinding::deliver(Frame&& frame, PeerId) noexcept {
  ApplicationHost* target = core_.local_application(frame.header.target);
  if (target == nullptr) {
    core_.note_bad_frame();
    frame.data.reset();
    return DeliverStatus::rejected;
  }
  DeliveryLane& lane = target->lane(index_);
  // Inline dispatch: the handler runs here and now, unless the application is busy or a frame of this lane is
  // still waiting (it must not be overtaken).
  if (target->dispatches_inline() && lane.drained() && target->try_dispatch_inline(frame)) {
    core_.note_delivered();
    return DeliverStatus::accepted;
  }
  if (!lane.has_room()) {
    publish(target);  // what this round staged there must be seen, or the room never comes back
    target->add_deliver_waiter(&deliver_ready_);
    // Once more after registering: the lane may have drained before we registered, and then nobody would
    // tell us to resume.
    if (!lane.has_room()) return DeliverStatus::busy;
  }
  lane.stage(std::move(frame));
  if (std::find(staged_to_.begin(), staged_to_.end(), target) == staged_to_.end()) staged_to_.push_back(target);
  core_.note_delivered();
  return DeliverStatus::accepted;
}

void TransportBinding::publish(ApplicationHost* target) noexcept {
  if (target->lane(index_).publish()) target->wake();
}

bool TransportBinding::handlers_inline() const noexcept { return core_.all_inline(); }

void TransportBinding::deliveries_done() noexcept {
  // One release store per lane and at most one wake-up per application, for the whole batch.
  for (ApplicationHost* target : staged_to_) publish(target);
  staged_to_.clear();
}

void TransportBinding::on_deliver_ready(std::function<void()> callback) { deliver_ready_ = std::move(callback); }

void TransportBinding::send_ready(PeerId peer) noexcept { core_.notify_peer_ready(transport_.get(), peer); }

bool TransportBinding::run_going() const noexcept { return core_.applications_enabled(); }

void TransportBinding::connection_changed(PeerId peer, bool up, const std::string& reason) {
  // Down in a run is a loss; between runs and at shutdown peers closing is expected (the transport has said
  // already whether frames went with it).
  daqx::log(up || !run_going() ? LogLevel::info : LogLevel::warning, prefix(),
            "connection " + std::to_string(peer) + (up ? " up" : " down") + (reason.empty() ? "" : ": " + reason));
  // A connection that went down will not say send_ready: wake its waiters so they see the error.
  if (!up) core_.notify_peer_ready(transport_.get(), peer);
}

mem::Pool& TransportBinding::make_pool(const std::string& name, const mem::PoolConfig& config) {
  mem::PoolConfig named = config;
  named.name = prefix() + "/" + name;
  return core_.make_pool(named.name, named);
}

std::jthread TransportBinding::start_thread(const std::string& name, std::function<void(std::stop_token)> body) {
  return core_.threads().start(prefix() + "/" + name, std::move(body));
}

void TransportBinding::log(LogLevel level, const std::string& message) { daqx::log(level, prefix(), message); }

std::size_t TransportBinding::register_memory(mem::Registrar& registrar) { return core_.add_registrar(registrar); }

void TransportBinding::deregister_memory(std::size_t slot) noexcept { core_.remove_registrar(slot); }

// ---- ExecutiveCore: construction -----------------------------------------------------------------------

ExecutiveCore::ExecutiveCore(config::Partition partition, const std::string& context_url, std::size_t inbox_capacity)
    : partition_(std::move(partition)), threads_(policy_) {
  context_ = partition_.find_context(context_url);
  if (context_ == nullptr) {
    std::string known;
    for (const auto& c : partition_.contexts) known += (known.empty() ? "" : ", ") + c.url;
    throw config::ConfigError({partition_.file + ": context " + context_url +
                               " is not in this partition (it has: " + known + ")"});
  }
  policy_ = Policy(partition_, context_->url);
  if (std::vector<std::string> unfit = detail::check_policy_on_this_machine(partition_, context_->url); !unfit.empty())
    throw config::ConfigError(std::move(unfit));
  load_modules();
  std::vector<std::string> problems = config::check_against_catalogue(partition_, *context_, modules_);
  if (!problems.empty()) throw config::ConfigError(problems);
  make_plan();
  make_transports();
  // Before any application makes its pool: a transport that passes blocks by reference to local peers wants them
  // in shared memory.
  shared_pools_ = std::any_of(bindings_.begin(), bindings_.end(),
                              [](const auto& b) { return b->transport().capabilities().shared_memory_pools; });
  make_applications(inbox_capacity);
  make_routes();
  for (auto& host : hosts_) {
    try {
      host->start();
    } catch (const std::exception& e) {
      throw std::runtime_error(where(host->tid() ? partition_.application(host->tid())->where : context_->where) +
                               "cannot create application " + std::to_string(host->tid()) + " (" +
                               host->class_name() + "): " + e.what());
    }
  }
}

void ExecutiveCore::load_modules() {
  std::string partition_dir = std::filesystem::path(partition_.file).parent_path().string();
  std::vector<std::string> problems;
  for (const config::ModuleConfig& module : context_->modules) {
    std::string error = modules_.load(module.path, partition_dir);
    if (!error.empty()) problems.push_back(where(module.where) + error);
  }
  if (!problems.empty()) throw config::ConfigError(problems);
}

void ExecutiveCore::make_transports() {
  for (const config::EndpointConfig& endpoint : context_->endpoints) {
    const TransportClass* cls = modules_.transport_class(endpoint.protocol);
    ParamSet params(cls->params);
    params.set_together(config::assignments(endpoint.properties));  // checked already
    EndpointAddress local{endpoint.protocol, endpoint.hostname, endpoint.port, endpoint.network};
    // One transport per protocol serves every endpoint of it in this context; a second endpoint of the
    // same protocol (another network) gets its own instance.
    auto binding = std::make_unique<TransportBinding>(*this, *cls, std::move(params), local, bindings_.size(),
                                                      plan_.incoming(context_index_, endpoint.network));
    try {
      binding->create();
    } catch (const std::exception& e) {
      throw std::runtime_error(where(endpoint.where) + "cannot listen on " + local.text() + ": " + e.what());
    }
    bindings_.push_back(std::move(binding));
  }
}

void ExecutiveCore::make_applications(std::size_t inbox_capacity) {
  for (const config::ApplicationConfig& app : context_->applications) {
    const ApplicationClass* cls = modules_.application_class(app.class_name);
    ParamSet params(*modules_.application_params(app.class_name));
    params.set_together(config::assignments(app.properties));  // checked already
    for (const ParamSpec& spec : cls->params) {
      if (spec.type != ParamType::applications) continue;
      std::string error;
      params.set_resolved(spec.name, config::resolve_selector(partition_, params.text(spec.name), error));
      if (!error.empty())
        throw config::ConfigError({where(app.where) + "application " + std::to_string(app.id) + " parameter '" +
                                   spec.name + "': " + error});
    }
    hosts_.push_back(
        std::make_unique<ApplicationHost>(*this, app, *cls, std::move(params), inbox_capacity, bindings_.size()));
  }
  all_inline_.store(std::all_of(hosts_.begin(), hosts_.end(), [](const auto& h) { return h->dispatches_inline(); }),
                    std::memory_order_release);
}

void ExecutiveCore::make_plan() {
  context_index_ = static_cast<std::size_t>(context_ - partition_.contexts.data());
  std::set<std::string> tried;  // module paths of other contexts, each loaded at most once
  const std::string partition_dir = std::filesystem::path(partition_.file).parent_path().string();
  const auto class_params = [&](const config::ContextConfig& context, std::string_view class_name) {
    if (const std::vector<ParamSpec>* params = modules_.application_params(class_name)) return params;
    if (const std::vector<ParamSpec>* params = plan_modules_.application_params(class_name)) return params;
    for (const config::ModuleConfig& module : context.modules)
      if (tried.insert(module.path).second) plan_modules_.load(module.path, partition_dir);  // else: not known here
    return plan_modules_.application_params(class_name);
  };
  plan_ = ConnectionPlan::of_context(partition_, class_params, context_index_);
  // Every connection is a descriptor or more: a plan the process cannot open is refused now, with the numbers,
  // not found out at the thousandth connection.
  const std::size_t connections = plan_.outgoing(context_index_) + plan_.incoming(context_index_);
  const OpenFileLimit limit = raise_open_file_limit();
  if (limit.soft != 0 && descriptors_needed(connections) > limit.soft)
    throw config::ConfigError({where(context_->where) + "context " + context_->url + " plans " +
                               std::to_string(plan_.outgoing(context_index_)) + " outgoing and " +
                               std::to_string(plan_.incoming(context_index_)) + " incoming connections, about " +
                               std::to_string(descriptors_needed(connections)) +
                               " file descriptors, but this process may open " + std::to_string(limit.soft) +
                               " (hard limit " + std::to_string(limit.hard) +
                               "): raise the limit (ulimit -Hn, LimitNOFILE=, limits.conf) or split the context"});
}

void ExecutiveCore::make_routes() {
  std::map<std::pair<TransportBinding*, std::string>, RemoteEndpoint*> known;  // one connection per remote endpoint
  for (const auto& host : hosts_) routes_[host->tid()] = Route{host.get(), nullptr, ""};
  for (std::size_t index = 0; index < partition_.contexts.size(); ++index) {
    const config::ContextConfig& other = partition_.contexts[index];
    if (&other == context_) continue;
    for (const config::ApplicationConfig& app : other.applications) {
      if (app.network.empty()) continue;
      auto endpoint = std::find_if(other.endpoints.begin(), other.endpoints.end(),
                                   [&](const config::EndpointConfig& e) { return e.network == app.network; });
      if (endpoint == other.endpoints.end()) continue;
      auto binding = std::find_if(bindings_.begin(), bindings_.end(), [&](const auto& b) {
        return b->local().network == app.network && b->local().protocol == endpoint->protocol;
      });
      if (binding == bindings_.end()) continue;  // we are not on that network: no route (send says so)
      EndpointAddress address{endpoint->protocol, endpoint->hostname, endpoint->port, endpoint->network};
      RemoteEndpoint*& remote = known[{binding->get(), address.text()}];
      if (remote == nullptr) {
        remotes_.push_back(std::make_unique<RemoteEndpoint>());
        remote = remotes_.back().get();
        remote->binding = binding->get();
        remote->address = std::move(address);
        remote->context = other.url;
        remote->planned = plan_.connects(index, app.network);
        // Named in partition order, so that peer ids are the same in every run of the same partition.
        if (remote->planned) remote->peer.store(remote->binding->transport().connect(remote->address));
      }
      routes_[app.id] = Route{nullptr, remote, app.network};
    }
  }
}

PeerId ExecutiveCore::connection_to(RemoteEndpoint& remote) noexcept {
  std::lock_guard lock(remotes_mutex_);
  PeerId peer = remote.peer.load(std::memory_order_acquire);
  if (peer != kNoPeer) return peer;  // another sender named it meanwhile
  try {
    peer = remote.binding->transport().connect(remote.address);
  } catch (const std::exception& e) {
    daqx::log(LogLevel::error, remote.binding->prefix(),
              "cannot connect to " + remote.address.text() + " (context " + remote.context + "): " + e.what());
    return kNoPeer;
  }
  daqx::log(LogLevel::info, remote.binding->prefix(),
            "connection to " + remote.address.text() + " (context " + remote.context +
                ") opened at first use: no application here declared it sends there");
  remote.peer.store(peer, std::memory_order_release);
  return peer;
}

ExecutiveCore::~ExecutiveCore() { shutdown(); }

void ExecutiveCore::shutdown() {
  // After the transition in progress, if any: its hooks use the hosts this clears.
  std::lock_guard transitions(transition_mutex_);
  std::lock_guard lock(control_mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  // From here peers closing are part of the shutdown, not a loss to warn about.
  applications_enabled_.store(false, std::memory_order_release);
  // Applications first, in reverse order (senders usually come after receivers), then the network.
  for (auto it = hosts_.rbegin(); it != hosts_.rend(); ++it) {
    ApplicationHost& host = **it;
    if (host.state() == State::enabled) host.run(Command::stop);
    if (host.state() != State::halted) host.run(Command::halt);
  }
  for (auto& binding : bindings_) binding->transport().stop();
  // A transport should have deregistered at stop(); none may outlive its registrar in the pools.
  for (std::size_t slot = 0; slot < mem::kMaxRegistrars; ++slot) remove_registrar(slot);
  for (auto it = hosts_.rbegin(); it != hosts_.rend(); ++it) (*it)->finish();
  hosts_.clear();
  routes_.clear();
  {
    std::lock_guard remotes(remotes_mutex_);
    remotes_.clear();
  }
  bindings_.clear();
  // pools_ go with the object, after everything that could hold a block.
}

ApplicationHost* ExecutiveCore::local_application(Tid tid) const noexcept {
  const Route* r = route(tid);
  return r == nullptr ? nullptr : r->local;
}

mem::Pool& ExecutiveCore::make_pool(const std::string& name, const mem::PoolConfig& config) {
  mem::PoolConfig named = config;
  named.name = name;
  // The partition's rules first; then where the pool's maker would like it (a transport near its device).
  std::string allocator = policy_.allocator_for_pool(name);
  const bool placed_by_rule = !allocator.empty();
  if (!placed_by_rule)
    allocator = config.preferred_numa_node >= 0 ? std::string("numa:").append(std::to_string(config.preferred_numa_node)) : std::string("heap");
  // A pool whose blocks go to other processes (ptshm's own) is in shared memory, with the pages and node asked
  // for; so is every pool no rule places when a transport passes blocks to local peers (zero copy by default).
  if (config.shared_memory || (!placed_by_rule && shared_pools_)) allocator = mem::shared_allocator(allocator);
  auto pool = std::make_unique<mem::Pool>(named, mem::make_allocator(allocator));
  std::lock_guard lock(pools_mutex_);
  // A pool made after a transport registered memory is registered with it too, before anyone uses it.
  for (std::size_t slot = 0; slot < registrars_.size(); ++slot)
    if (registrars_[slot] != nullptr) pool->add_registrar(*registrars_[slot], slot);
  pools_.push_back(std::move(pool));
  return *pools_.back();
}

std::size_t ExecutiveCore::add_registrar(mem::Registrar& registrar) {
  std::lock_guard lock(pools_mutex_);
  std::size_t slot = 0;
  while (slot < registrars_.size() && registrars_[slot] != nullptr) ++slot;
  if (slot == registrars_.size())
    throw std::runtime_error("more than " + std::to_string(registrars_.size()) + " transports register memory");
  std::size_t done = 0;
  try {
    for (; done < pools_.size(); ++done) pools_[done]->add_registrar(registrar, slot);
  } catch (...) {
    for (std::size_t undo = 0; undo < done; ++undo) pools_[undo]->remove_registrar(slot);
    throw;
  }
  registrars_[slot] = &registrar;
  return slot;
}

void ExecutiveCore::remove_registrar(std::size_t slot) noexcept {
  std::lock_guard lock(pools_mutex_);
  if (slot >= registrars_.size() || registrars_[slot] == nullptr) return;
  for (auto& pool : pools_) pool->remove_registrar(slot);
  registrars_[slot] = nullptr;
}

void ExecutiveCore::notify_peer_ready(const void* transport, PeerId peer) noexcept {
  for (const auto& host : hosts_)
    if (host->waiting_for_peer(transport, peer)) host->notify_send_ready();
}

// ---- ControlModel -------------------------------------------------------------------------------------

std::vector<ApplicationStatus> ExecutiveCore::applications() const {
  std::lock_guard lock(control_mutex_);
  std::vector<ApplicationStatus> list;
  for (const auto& host : hosts_) list.push_back(host->status());
  return list;
}

std::optional<ApplicationStatus> ExecutiveCore::application(Tid tid) const {
  std::lock_guard lock(control_mutex_);
  ApplicationHost* host = local_application(tid);
  if (host == nullptr) return std::nullopt;
  return host->status();
}

TransitionResult ExecutiveCore::transition(std::optional<Tid> tid, Command command) {
  return run_transition(tid, command, 0);
}

std::string ExecutiveCore::busy_reason() {
  std::lock_guard lock(control_mutex_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - transition_started_).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", seconds);
  return std::string(kBusyRefusal) + (transition_in_progress_.empty() ? std::string("a transition") : transition_in_progress_) +
         " has been in progress for " + text + " s in context " + context_->url + "; ask again when it is done";
}

// One run at a time per executive: an enable joins the run that is on (when it names none, or the same one)
// and is refused when it names another, so every Enabled application and every log line agree on the run.
// One transition at a time: one asked while another runs is answered at once (409, busy) and not queued, so a
// slow hook never keeps request threads waiting and every client gets its own clear answer.
TransitionResult ExecutiveCore::run_transition(std::optional<Tid> tid, Command command, std::uint64_t run) {
  std::unique_lock transitions(transition_mutex_, std::try_to_lock);
  if (!transitions.owns_lock()) {
    TransitionResult busy;
    busy.http_status = 409;
    busy.message = busy_reason();
    return busy;
  }
  if (shut_down_) {
    TransitionResult closing;
    closing.http_status = 503;
    closing.message = "nothing done: context " + context_->url + " is shutting down";
    return closing;
  }
  {
    std::lock_guard lock(control_mutex_);
    transition_in_progress_ = std::string(to_string(command)) + (tid ? " of application " + std::to_string(*tid) : "");
    transition_started_ = std::chrono::steady_clock::now();
  }
  if (command == Command::enable) {
    const std::uint64_t on = run_.load(std::memory_order_relaxed);
    if (run != 0 && on != 0 && run != on) {
      TransitionResult refused;
      refused.http_status = 409;
      refused.message = "nothing done: run " + std::to_string(on) + " is on in context " + context_->url +
                        ": stop it before enabling run " + std::to_string(run);
      return refused;
    }
    if (run == 0) run = on;
    // Lines logged by the enable hooks already belong to the run.
    if (run != 0) set_log_run(run);
  } else {
    run = 0;
  }
  TransitionResult result = transition_locked(tid, command, run);
  update_run();
  if (result.ok && command == Command::enable)
    daqx::log(LogLevel::info, "executive", run != 0 ? "run " + std::to_string(run) + " enabled" : "enabled without a run number");
  return result;
}

void ExecutiveCore::update_run() {
  std::uint64_t run = 0;
  bool enabled = false;
  for (const auto& host : hosts_) {
    if (host->state() != State::enabled) continue;
    enabled = true;
    if (host->run_number() != 0) run = host->run_number();
  }
  if (run != run_.load(std::memory_order_relaxed))
    run_started_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  run_.store(run, std::memory_order_relaxed);
  applications_enabled_.store(enabled, std::memory_order_release);
  set_log_run(run);
}

double ExecutiveCore::run_seconds() const {
  if (run_.load(std::memory_order_relaxed) == 0) return -1;
  const std::chrono::steady_clock::duration started(run_started_ns_.load(std::memory_order_relaxed));
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch() - started).count();
}

// Under transition_mutex_: the hosts stay while hooks run, and control_mutex_ is free for status reads.
TransitionResult ExecutiveCore::transition_locked(std::optional<Tid> tid, Command command, std::uint64_t run) {
  if (!tid) return context_transition(command, run);
  ApplicationHost* host = local_application(*tid);
  if (host == nullptr) {
    TransitionResult result;
    result.http_status = 404;
    result.message = "no application " + std::to_string(*tid) + " in context " + context_->url;
    return result;
  }
  return host->run(command, run);
}

// The whole context: receivers (earlier in the partition) get ready before senders start, and senders stop before
// receivers. Stop and halt bring a context down from any mix of states, without per-application steps: stop stops
// every Enabled application and leaves the others as they are (a Failed one stays Failed, with its reason); halt
// stops the Enabled ones first, then halts every application. Configure and enable are all or nothing: every
// application is checked before any hook runs. A stop with nothing Enabled is refused as before.
TransitionResult ExecutiveCore::context_transition(Command command, std::uint64_t run) {
  std::vector<ApplicationHost*> order;
  for (const auto& host : hosts_) order.push_back(host.get());
  if (command == Command::stop || command == Command::halt) std::reverse(order.begin(), order.end());
  const bool any_enabled =
      std::any_of(order.begin(), order.end(), [](const ApplicationHost* host) { return host->state() == State::enabled; });
  const bool bring_down = command == Command::halt || (command == Command::stop && any_enabled);
  TransitionResult all;
  if (!bring_down) {
    for (ApplicationHost* host : order) {
      State from = host->state();
      if (!next_state(from, command)) {
        all.http_status = 409;
        all.message += std::string(all.message.empty() ? "" : "; ") + "application " + std::to_string(host->tid()) +
                       " (" + host->class_name() + "): " + illegal_transition_reason(from, command);
      }
      all.states.emplace_back(host->tid(), from);
    }
    if (all.http_status == 409) {
      std::sort(all.states.begin(), all.states.end());
      all.message = "nothing done: " + all.message;
      return all;
    }
    all.states.clear();
  }
  // The steps: for stop and halt only those legal from each application's state.
  std::vector<std::pair<ApplicationHost*, Command>> steps;
  std::vector<std::string> left;  // applications a stop left as they were, and why
  if (bring_down) {
    for (ApplicationHost* host : order) {
      const State from = host->state();
      if (from == State::enabled) {
        steps.emplace_back(host, Command::stop);
      } else if (command == Command::stop && from == State::failed) {
        const ApplicationStatus status = host->status();
        left.push_back("application " + std::to_string(host->tid()) + " (" + host->class_name() + ") stays Failed" +
                       (status.reason.empty() ? "" : ": " + status.reason));
      }
    }
    if (command == Command::halt)
      for (ApplicationHost* host : order) steps.emplace_back(host, Command::halt);
  } else {
    for (ApplicationHost* host : order) steps.emplace_back(host, command);
  }
  all.ok = true;
  std::vector<std::string> messages;
  std::map<Tid, State> states;
  for (ApplicationHost* host : order) states[host->tid()] = host->state();
  for (const auto& [host, step] : steps) {
    TransitionResult one = host->run(step, run);
    for (const auto& [tid, state] : one.states) states[tid] = state;
    if (!one.ok) {
      all.ok = false;
      all.http_status = std::max(all.http_status, one.http_status);
      messages.push_back(one.message);
    }
  }
  for (const auto& [tid, state] : states) all.states.emplace_back(tid, state);
  for (const std::string& m : messages) all.message += (all.message.empty() ? "" : "; ") + m;
  if (all.ok) {
    all.message = std::string(to_string(command)) + ": done";
    for (const std::string& l : left) all.message += "; " + l;
  }
  return all;
}

std::string ExecutiveCore::set_parameter(Tid tid, const std::string& name, const std::string& value) {
  // Not while a transition reads the parameters (and may change the state they may be set in).
  std::unique_lock transitions(transition_mutex_, std::try_to_lock);
  if (!transitions.owns_lock()) return busy_reason();
  std::lock_guard lock(control_mutex_);
  ApplicationHost* host = local_application(tid);
  if (host == nullptr) return "no application " + std::to_string(tid) + " in context " + context_->url;
  if (host->state() != State::halted)
    return "parameters can be changed only while Halted (application " + std::to_string(tid) + " is " +
           std::string(to_string(host->state())) + ")";
  const ParamSpec* spec = host->params().spec(name);
  if (spec != nullptr && spec->type == ParamType::applications) {
    std::string error;
    std::vector<Tid> tids = config::resolve_selector(partition_, value, error);
    if (!error.empty()) return error;
    for (Tid t : tids)
      if (!config::shares_network(partition_, tid, t))
        return "application " + std::to_string(t) + " shares no network with application " + std::to_string(tid);
    auto& params = const_cast<ParamSet&>(host->params());
    std::string refused = params.set(name, value);
    if (refused.empty()) params.set_resolved(name, tids);
    return refused;
  }
  // The parameters belong to the host; while Halted nothing else reads them.
  return const_cast<ParamSet&>(host->params()).set(name, value);
}

std::vector<PoolStatus> ExecutiveCore::pools() const {
  std::lock_guard lock(pools_mutex_);
  std::vector<PoolStatus> list;
  for (const auto& pool : pools_) {
    PoolStatus status;
    status.stats = pool->stats();
    status.numa_node = pool->allocator().numa_node();
    for (const auto& chunk : pool->chunks())
      status.chunks.push_back(ChunkView{reinterpret_cast<std::uintptr_t>(chunk.base), chunk.bytes});
    list.push_back(std::move(status));
  }
  return list;
}

std::vector<TransportStatus> ExecutiveCore::transports() const {
  std::lock_guard lock(control_mutex_);
  std::vector<TransportStatus> list;
  for (const auto& binding : bindings_) {
    TransportStatus status;
    status.protocol = binding->local().protocol;
    status.endpoint = binding->local().text();
    status.capabilities = binding->transport().capabilities();
    for (const ParamSpec& spec : binding->params().specs())
      status.params.push_back(ParamView{spec.name, std::string(to_string(spec.type)), binding->params().text(spec.name),
                                        spec.default_value, spec.unit, spec.help});
    MetricSink sink;
    binding->transport().report(sink);
    status.metrics = sink.metrics();
    status.connections = binding->transport().connections();
    std::map<PeerId, const RemoteEndpoint*> named;  // what each outgoing connection goes to, for stable labels
    {
      std::lock_guard remotes(remotes_mutex_);
      for (const auto& remote : remotes_) {
        const PeerId peer = remote->peer.load(std::memory_order_acquire);
        if (remote->binding == binding.get() && peer != kNoPeer) named[peer] = remote.get();
        if (remote->binding == binding.get() && remote->planned) ++status.planned_outgoing;
      }
    }
    status.planned_incoming = binding->planned_incoming();
    for (ConnectionInfo& connection : status.connections) {
      if (!connection.outgoing) continue;
      auto name = named.find(connection.peer);
      if (name == named.end()) continue;
      connection.peer_endpoint = name->second->address.text();
      connection.peer_context = name->second->context;
      connection.planned = name->second->planned;
    }
    list.push_back(std::move(status));
  }
  return list;
}

void ExecutiveCore::open_connections() {
  std::lock_guard lock(control_mutex_);
  for (const auto& binding : bindings_) binding->transport().open_connections();
}

std::vector<Metric> ExecutiveCore::executive_metrics() const {
  MetricSink sink;
  double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  sink.gauge("uptime_seconds", uptime, "seconds since this executive started");
  sink.counter("frames_from_transports", static_cast<double>(frames_from_transports_.load()),
               "frames received from peer transports and queued for an application");
  sink.counter("bad_frames", static_cast<double>(bad_frames_.load()),
               "frames refused on receive (bad header, unknown target); each closed its connection");
  sink.gauge("applications", static_cast<double>(hosts_.size()), "applications hosted");
  sink.gauge("modules", static_cast<double>(modules_.modules().size()), "modules loaded");
  return sink.metrics();
}

}  // namespace daqx::detail

// ---- Executive (public) --------------------------------------------------------------------------------

namespace daqx {

Executive::Executive(config::Partition partition, const std::string& context_url, std::size_t inbox_capacity)
    : core_(std::make_unique<detail::ExecutiveCore>(std::move(partition), context_url, inbox_capacity)) {}

Executive::~Executive() = default;

ControlModel& Executive::control() noexcept { return *core_; }

void Executive::shutdown() { core_->shutdown(); }

std::string Executive::list_params(const std::vector<std::string>& modules, bool json,
                                   std::vector<std::string>* not_loaded) {
  detail::ModuleRegistry registry;
  for (const std::string& module : modules) {
    const std::string error = registry.load(module, ".");
    if (!error.empty()) throw std::runtime_error(error);
  }
  if (modules.empty()) {
    std::set<std::string> names;
    for (const std::string& directory : detail::ModuleRegistry::search_path()) {
      std::error_code error;
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(directory, error))
        if (entry.path().extension() == ".so") files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const std::filesystem::path& file : files) {
        if (!names.insert(file.filename().string()).second) continue;  // shadowed, as a bare name would be
        const std::string reason = registry.load(file.string(), ".");
        if (!reason.empty() && not_loaded != nullptr) not_loaded->push_back(reason);
      }
    }
  }
  return json ? detail::param_listing_json(registry) : detail::param_listing_text(registry);
}

std::vector<std::string> Executive::check(const config::Partition& partition, const std::string& context_url) {
  std::vector<std::string> problems;
  const std::string partition_dir = std::filesystem::path(partition.file).parent_path().string();
  const auto where = [](const config::SourceLocation& at) { return at.text() + ": "; };
  bool found = false;
  for (const config::ContextConfig& context : partition.contexts) {
    if (!context_url.empty() && partition.find_context(context_url) != &context) continue;
    found = true;
    // Only for a context named on the command line: that says this host runs it, and another host may have
    // other CPUs and nodes.
    if (!context_url.empty())
      for (std::string& problem : detail::check_policy_on_this_machine(partition, context.url))
        problems.push_back(std::move(problem));
    detail::ModuleRegistry registry;
    bool loaded = true;
    for (const config::ModuleConfig& module : context.modules) {
      const std::string error = registry.load(module.path, partition_dir);
      if (!error.empty()) {
        problems.push_back(where(module.where) + error);
        loaded = false;
      }
    }
    if (!loaded) continue;  // every class of a missing module would be reported as unknown
    for (std::string& problem : config::check_against_catalogue(partition, context, registry))
      problems.push_back(std::move(problem));
    // Selectors left at their defaults are resolved when applications are made; a default that selects
    // nothing that exists is as much a mistake as a written one.
    for (const config::ApplicationConfig& application : context.applications) {
      const ApplicationClass* cls = registry.application_class(application.class_name);
      if (cls == nullptr) continue;  // reported above
      for (const ParamSpec& spec : cls->params) {
        if (spec.type != ParamType::applications) continue;
        const bool written = std::any_of(application.properties.begin(), application.properties.end(),
                                         [&](const config::Property& p) { return p.name == spec.name; });
        if (written) continue;  // checked with the properties
        std::string error;
        config::resolve_selector(partition, spec.default_value, error);
        if (!error.empty())
          problems.push_back(where(application.where) + "application " + std::to_string(application.id) +
                             " parameter '" + spec.name + "' (default '" + spec.default_value + "'): " + error);
      }
    }
  }
  if (!found) {
    std::string known;
    for (const auto& c : partition.contexts) known += (known.empty() ? "" : ", ") + c.url;
    problems.push_back(partition.file + ": context " + context_url + " is not in this partition (it has: " + known +
                       ")");
  }
  return problems;
}

namespace {

// Every context's modules, each path once; one that does not load here plans widely (and its needs go uncounted).
void load_every_module(const config::Partition& partition, detail::ModuleRegistry& registry) {
  std::set<std::string> loaded;
  const std::string partition_dir = std::filesystem::path(partition.file).parent_path().string();
  for (const config::ContextConfig& context : partition.contexts)
    for (const config::ModuleConfig& module : context.modules)
      if (loaded.insert(module.path).second) registry.load(module.path, partition_dir);
}

}  // namespace

std::vector<std::string> Executive::connection_plan(const config::Partition& partition,
                                                   const std::string& context_url) {
  detail::ModuleRegistry registry;
  load_every_module(partition, registry);
  const detail::ConnectionPlan plan(partition, [&](const config::ContextConfig&, std::string_view class_name) {
    return registry.application_params(class_name);
  });
  return detail::describe_plan(partition, plan, context_url);
}

std::vector<ContextNeeds> Executive::plan_resources(const config::Partition& partition) {
  detail::ModuleRegistry registry;
  load_every_module(partition, registry);
  const detail::ConnectionPlan plan(partition, [&](const config::ContextConfig&, std::string_view class_name) {
    return registry.application_params(class_name);
  });
  return detail::estimate_needs(partition, plan, registry);
}

std::string Executive::transport_capabilities(const std::string& module, const std::vector<std::string>& assignments) {
  detail::ModuleRegistry registry;
  std::string error = registry.load(module, ".");
  if (!error.empty()) throw std::runtime_error(error);
  const ModuleDescriptor& d = *registry.modules().front();
  if (d.transports.empty()) throw std::runtime_error("module " + d.name + " provides no transport");
  std::vector<std::pair<std::string, TransportCapabilities>> described;
  for (const TransportClass& t : d.transports) {
    ParamSet params(t.params);
    std::vector<std::pair<std::string, std::string>> values;
    for (const std::string& assignment : assignments) {
      const std::size_t equals = assignment.find('=');
      if (equals == std::string::npos) throw std::runtime_error(strings::quoted(assignment) + ": expected NAME=VALUE");
      values.emplace_back(assignment.substr(0, equals), assignment.substr(equals + 1));
    }
    // Together, as a partition's properties are: the checks see them all, in any order.
    if (const std::string refused = params.set_together(values); !refused.empty())
      throw std::runtime_error("transport " + t.protocol + ": " + refused);
    if (!t.capabilities) throw std::runtime_error("transport " + t.protocol + " declares no capabilities");
    described.emplace_back(t.protocol, t.capabilities(params));
  }
  return http::json_capabilities(described);
}

}  // namespace daqx
