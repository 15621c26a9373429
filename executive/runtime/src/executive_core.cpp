// Building an executive from its partition (modules, checks, plan, transports, applications, routes), and its
// orderly shutdown.
#include "executive_core.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "application_host.hpp"
#include "daqx/services/open_file_limit.hpp"
#include "transport_binding.hpp"

namespace daqx::detail {
namespace {

std::string where(const config::SourceLocation& location) { return location.text() + ": "; }

}  // namespace

ExecutiveCore::ExecutiveCore(config::Partition partition, const std::string& context_url, std::size_t inbox_capacity)
    : partition_(std::move(partition)), threads_(policy_), pools_(policy_) {
  context_ = partition_.find_context(context_url);
  if (context_ == nullptr) {
    std::string known;
    for (const auto& c : partition_.contexts) known += (known.empty() ? "" : ", ") + c.url;
    throw config::ConfigError({partition_.file + ": context " + context_url +
                               " is not in this partition (it has: " + known + ")"});
  }
  policy_ = Policy(partition_, context_->url);
  services_.emplace(ContextServices{partition_, *context_, threads_, pools_, routes_, delivery_});
  if (std::vector<std::string> unfit = detail::check_policy_on_this_machine(partition_, context_->url); !unfit.empty())
    throw config::ConfigError(std::move(unfit));
  load_modules();
  std::vector<std::string> problems = config::check_against_catalogue(partition_, *context_, modules_);
  if (!problems.empty()) throw config::ConfigError(problems);
  make_plan();
  make_transports();
  // Before any application makes its pool: a transport that passes blocks by reference to local peers wants them
  // in shared memory.
  if (std::any_of(bindings_.begin(), bindings_.end(),
                  [](const auto& b) { return b->transport().capabilities().shared_memory_pools; }))
    pools_.share_unplaced_pools();
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
    auto binding = std::make_unique<TransportBinding>(*services_, *cls, std::move(params), local, bindings_.size(),
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
        std::make_unique<ApplicationHost>(*services_, app, *cls, std::move(params), inbox_capacity, bindings_.size()));
  }
  delivery_.all_inline.store(std::all_of(hosts_.begin(), hosts_.end(), [](const auto& h) { return h->dispatches_inline(); }),
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
  for (const auto& host : hosts_) routes_.add_local(host->tid(), *host);
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
      // Routes are added in partition order, so that peer ids are the same in every run of the same partition.
      RemoteEndpoint& remote = routes_.remote_endpoint(
          (*binding)->transport(), EndpointAddress{endpoint->protocol, endpoint->hostname, endpoint->port, endpoint->network},
          other.url, plan_.connects(index, app.network));
      routes_.add_remote(app.id, remote, app.network);
    }
  }
}

ExecutiveCore::~ExecutiveCore() { shutdown(); }

void ExecutiveCore::shutdown() {
  // After the transition in progress, if any: its hooks use the hosts this clears.
  std::lock_guard transitions(transition_mutex_);
  std::lock_guard lock(control_mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  // From here peers closing are part of the shutdown, not a loss to warn about.
  delivery_.applications_enabled.store(false, std::memory_order_release);
  // Applications first, in reverse order (senders usually come after receivers), then the network.
  for (auto it = hosts_.rbegin(); it != hosts_.rend(); ++it) {
    ApplicationHost& host = **it;
    if (host.state() == State::enabled) host.run(Command::stop);
    if (host.state() != State::halted) host.run(Command::halt);
  }
  for (auto& binding : bindings_) binding->transport().stop();
  // A transport should have deregistered at stop(); none may outlive its registrar in the pools.
  pools_.remove_every_registrar();
  for (auto it = hosts_.rbegin(); it != hosts_.rend(); ++it) (*it)->finish();
  hosts_.clear();
  routes_.clear();
  bindings_.clear();
  // pools_ go with the object, after everything that could hold a block.
}

}  // namespace daqx::detail
