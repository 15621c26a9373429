// The executive's control model: transitions one at a time, the run number, parameter changes, and the status
// and metrics of its applications, pools, threads and transports.
#include "executive_core.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "application_host.hpp"
#include "daqx/services/log.hpp"
#include "transport_binding.hpp"

namespace daqx::detail {

std::vector<ApplicationStatus> ExecutiveCore::applications() const {
  std::lock_guard lock(control_mutex_);
  std::vector<ApplicationStatus> list;
  for (const auto& host : hosts_) list.push_back(host->status());
  return list;
}

std::optional<ApplicationStatus> ExecutiveCore::application(Tid tid) const {
  std::lock_guard lock(control_mutex_);
  ApplicationHost* host = routes_.local_application(tid);
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
  delivery_.applications_enabled.store(enabled, std::memory_order_release);
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
  ApplicationHost* host = routes_.local_application(*tid);
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
  ApplicationHost* host = routes_.local_application(tid);
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
    status.planned_outgoing = routes_.planned_outgoing(binding->transport());
    status.planned_incoming = binding->planned_incoming();
    routes_.label_outgoing(binding->transport(), status.connections);
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
  delivery_.counters.report(sink);
  sink.gauge("applications", static_cast<double>(hosts_.size()), "applications hosted");
  sink.gauge("modules", static_cast<double>(modules_.modules().size()), "modules loaded");
  return sink.metrics();
}

}  // namespace daqx::detail
