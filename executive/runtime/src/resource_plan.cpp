// The plan before start: each context's needs from the partition's declared parameters, checked against its
// host's limits.
#include <algorithm>
#include <cstdio>
#include <map>

#include "application_host.hpp"
#include "resource_plan_estimate.hpp"
#include "threads.hpp"

namespace daqx {
namespace {

// An executive's own threads: main (waits for signals), the standard-input watch (--stop-on-stdin-eof), the
// partition view's poller, the control server's acceptor and its request threads (main.cpp).
constexpr std::size_t kExecutiveThreads = 4 + kControlRequestThreads;

bool on_huge_pages(const std::string& allocator) { return allocator.find("hugepage") != std::string::npos; }

std::string mebibytes(std::size_t bytes) {
  if (bytes == HostLimits::kUnlimited) return "unlimited";
  char text[32];
  if (bytes < (std::size_t{1} << 20) && bytes != 0)
    std::snprintf(text, sizeof text, "%zu KiB", (bytes + 1023) >> 10);
  else
    std::snprintf(text, sizeof text, "%zu MiB", (bytes + (std::size_t{1} << 20) - 1) >> 20);
  return text;
}

std::string count(std::size_t value) { return value == HostLimits::kUnlimited ? "unlimited" : std::to_string(value); }

std::string ports_text(const std::vector<std::uint16_t>& ports) {
  std::string text;
  for (std::uint16_t port : ports) {
    if (!text.empty()) text += ',';
    text += std::to_string(port);
  }
  return text.empty() ? "-" : text;
}

}  // namespace

namespace detail {

std::vector<ContextNeeds> estimate_needs(const config::Partition& partition, const ConnectionPlan& plan,
                                         const ModuleRegistry& modules) {
  std::vector<ContextNeeds> needs;
  needs.reserve(partition.contexts.size());
  // What each transport declares, once per protocol and set of properties: contexts mostly share them, and asking
  // may cost (ptofi asks libfabric about its provider).
  std::map<std::string, std::pair<TransportCapabilities, std::string>, std::less<>> declared;
  for (std::size_t c = 0; c < partition.contexts.size(); ++c) {
    const config::ContextConfig& context = partition.contexts[c];
    const Policy policy(partition, context.url);
    ContextNeeds n;
    n.url = context.url;
    n.host = context.host;
    n.outgoing = plan.outgoing(c);
    n.incoming = plan.incoming(c);
    n.descriptors = kExecutiveDescriptors;
    n.threads = kExecutiveThreads;
    n.listening_ports.push_back(context.port);
    bool locks_memory = false;
    for (const config::EndpointConfig& endpoint : context.endpoints) {
      if (endpoint.port != 0) n.listening_ports.push_back(endpoint.port);
      const TransportClass* transport = modules.transport_class(endpoint.protocol);
      if (transport == nullptr || !transport->capabilities) {
        n.not_counted.push_back("transport " + endpoint.protocol + " (its module is not loaded here)");
        continue;
      }
      std::string key = endpoint.protocol;
      for (const config::Property& property : endpoint.properties) key.append("\n").append(property.name).append("=").append(property.value);
      auto known = declared.find(key);
      if (known == declared.end()) {
        // The endpoint's properties over the transport's declared defaults (a wrong one is --check's to report).
        ParamSet params(transport->params);
        for (const config::Property& property : endpoint.properties) params.set(property.name, property.value);
        std::pair<TransportCapabilities, std::string> answer;
        try {
          answer.first = transport->capabilities(params);
        } catch (const std::exception& error) {
          answer.second = error.what();
        }
        known = declared.emplace(std::move(key), std::move(answer)).first;
      }
      if (!known->second.second.empty()) {
        n.not_counted.push_back("transport " + endpoint.protocol + " (" + known->second.second + ")");
        continue;
      }
      const TransportCapabilities& offered = known->second.first;
      const auto& outgoing = plan.outgoing_by_network(c);
      const auto found = outgoing.find(endpoint.network);
      const std::size_t incoming = plan.incoming(c, endpoint.network);
      const std::size_t connections = (found == outgoing.end() ? 0 : found->second) + incoming;
      n.descriptors += offered.descriptors_per_connection * connections;
      n.receive_bytes += offered.pool_bytes + offered.receive_bytes_per_incoming * incoming;
      n.pool_bytes += offered.pool_bytes;
      n.threads += offered.threads;
      // Memory registered with an RDMA device is pinned: it counts against RLIMIT_MEMLOCK (ptshm's registration
      // only names its shared chunks).
      locks_memory = locks_memory || (offered.memory_registration && offered.rdma_device);
      if (on_huge_pages(policy.allocator_for_pool("pt/" + endpoint.protocol + "/recv"))) n.huge_page_bytes += offered.pool_bytes;
    }
    for (const config::ApplicationConfig& application : context.applications) {
      const ApplicationClass* cls = modules.application_class(application.class_name);
      // Its dispatch thread (ApplicationHost::start) and the workers its class declares.
      n.threads += 1 + (cls == nullptr ? 0 : cls->workers);
      const std::string unknown = "the workers of " + application.class_name + " (its module is not loaded here)";
      if (cls == nullptr && std::find(n.not_counted.begin(), n.not_counted.end(), unknown) == n.not_counted.end())
        n.not_counted.push_back(unknown);
      const std::string name = hierarchical_name(application.class_name, application.instance);
      const std::size_t bytes = application_pool_config(name).max_bytes();
      n.pool_bytes += bytes;
      if (on_huge_pages(policy.allocator_for_pool(name + "/pool"))) n.huge_page_bytes += bytes;
    }
    // Every pool of the executive is registered once a transport registers memory (ExecutiveCore::add_registrar).
    if (locks_memory) n.registered_bytes = n.pool_bytes;
    needs.push_back(std::move(n));
  }
  return needs;
}

}  // namespace detail

std::string PlanShortfall::text() const {
  return "context " + context + ": " + resource + ": needs " + need + ", host " + host + " allows " + limit +
         (advice.empty() ? "" : ": " + advice);
}

std::vector<PlanShortfall> check_fit(const std::vector<ContextNeeds>& contexts,
                                     const std::function<const HostLimits*(const std::string& host)>& limits_of) {
  std::vector<PlanShortfall> shortfalls;
  struct HostTotal {
    std::string first_context;
    std::string where;
    const HostLimits* limits = nullptr;
    std::size_t huge_page_bytes = 0;
  };
  std::map<std::string, HostTotal> hosts;
  for (const ContextNeeds& n : contexts) {
    const HostLimits* limits = limits_of(n.host);
    if (limits == nullptr) continue;
    const std::string where = n.host == limits->host || limits->host.empty() ? n.host : n.host + " (" + limits->host + ")";
    // An executive raises its soft open-file limit to the hard one: the hard limit is what it gets.
    if (n.descriptors > limits->open_files)
      shortfalls.push_back({n.url, where, "open files", "about " + std::to_string(n.descriptors) + " descriptors",
                            count(limits->open_files) + " (hard RLIMIT_NOFILE)",
                            "raise the hard limit (ulimit -Hn, LimitNOFILE=, nofile in limits.conf) or split the context"});
    if (n.registered_bytes > limits->locked_bytes)
      shortfalls.push_back({n.url, where, "locked memory", mebibytes(n.registered_bytes) + " registered",
                            mebibytes(limits->locked_bytes) + " (RLIMIT_MEMLOCK)",
                            "raise ulimit -l (LimitMEMLOCK=, memlock in limits.conf) or shrink the pools"});
    for (std::uint16_t port : n.listening_ports)
      if (limits->ephemeral(port))
        shortfalls.push_back({n.url, where, "listening port", "port " + std::to_string(port),
                              "outgoing connections to take it first: it is inside the ephemeral port range " +
                                  std::to_string(limits->ephemeral_low) + "-" + std::to_string(limits->ephemeral_high) +
                                  " (net.ipv4.ip_local_port_range)",
                              "choose ports outside it, or reserve them (net.ipv4.ip_local_reserved_ports)"});
    // Summed per machine: host names that are the same machine (the local engine's) share its huge pages.
    HostTotal& total = hosts[limits->host.empty() ? n.host : limits->host];
    if (total.first_context.empty()) {
      total.first_context = n.url;
      total.where = where;
      total.limits = limits;
    }
    total.huge_page_bytes += n.huge_page_bytes;
  }
  for (const auto& [machine, total] : hosts) {
    const std::size_t free_bytes = total.limits->huge_pages_free * total.limits->huge_page_bytes;
    if (total.huge_page_bytes > free_bytes)
      shortfalls.push_back({total.first_context, total.where, "huge pages",
                            mebibytes(total.huge_page_bytes) + " for the pools its contexts place on huge pages",
                            mebibytes(free_bytes) + " free (HugePages_Free)",
                            "the rest comes from transparent or normal pages; reserve more (vm.nr_hugepages)", false});
  }
  return shortfalls;
}

std::vector<std::string> describe_needs(const std::vector<ContextNeeds>& contexts) {
  std::vector<std::string> lines;
  std::size_t width = 7;
  for (const ContextNeeds& n : contexts) width = std::max(width, n.url.size());
  char line[512];
  const auto row = [&](const std::string& name, const std::string& out, const std::string& in, const std::string& fds,
                       const std::string& receive, const std::string& pools, const std::string& registered,
                       const std::string& huge, const std::string& threads, const std::string& ports) {
    std::snprintf(line, sizeof line, "%-*s %6s %6s %7s %10s %10s %10s %10s %7s  %s", static_cast<int>(width),
                  name.c_str(), out.c_str(), in.c_str(), fds.c_str(), receive.c_str(), pools.c_str(),
                  registered.c_str(), huge.c_str(), threads.c_str(), ports.c_str());
    lines.emplace_back(line);
  };
  row("context", "out", "in", "fds", "recv max", "pools max", "registered", "hugepages", "threads", "listening ports");
  ContextNeeds total;
  std::size_t ports = 0;
  for (const ContextNeeds& n : contexts) {
    row(n.url, std::to_string(n.outgoing), std::to_string(n.incoming), std::to_string(n.descriptors),
        mebibytes(n.receive_bytes), mebibytes(n.pool_bytes), mebibytes(n.registered_bytes), mebibytes(n.huge_page_bytes),
        std::to_string(n.threads), ports_text(n.listening_ports));
    total.outgoing += n.outgoing;
    total.incoming += n.incoming;
    total.descriptors += n.descriptors;
    total.receive_bytes += n.receive_bytes;
    total.pool_bytes += n.pool_bytes;
    total.registered_bytes += n.registered_bytes;
    total.huge_page_bytes += n.huge_page_bytes;
    total.threads += n.threads;
    ports += n.listening_ports.size();
  }
  row("total (" + std::to_string(contexts.size()) + (contexts.size() == 1 ? " context)" : " contexts)"), std::to_string(total.outgoing),
      std::to_string(total.incoming), std::to_string(total.descriptors), mebibytes(total.receive_bytes),
      mebibytes(total.pool_bytes), mebibytes(total.registered_bytes), mebibytes(total.huge_page_bytes),
      std::to_string(total.threads), std::to_string(ports) + " ports");
  for (const ContextNeeds& n : contexts)
    for (const std::string& what : n.not_counted) lines.push_back("context " + n.url + ": not counted: " + what);
  return lines;
}

std::string describe_limits(const HostLimits& limits, const std::string& host) {
  const std::string name = host.empty() || host == limits.host ? limits.host : host + " (" + limits.host + ")";
  return "host " + name + ": open files " + count(limits.open_files) + ", locked memory " +
         mebibytes(limits.locked_bytes) + ", huge pages " + std::to_string(limits.huge_pages_free) + " free of " +
         mebibytes(limits.huge_page_bytes) + ", ephemeral ports " +
         (limits.ephemeral_high == 0 ? std::string("not known")
                                     : std::to_string(limits.ephemeral_low) + "-" + std::to_string(limits.ephemeral_high));
}

}  // namespace daqx
