#include "slurm_allocation.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <pugixml.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "engine.hpp"
#include "partition_copy.hpp"
#include "run_command.hpp"

namespace daqx::launch {
namespace {

constexpr auto kScontrolLimit = std::chrono::seconds(30);

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// "NodeName=h0 Arch=x86_64 ... NodeAddr=10.0.0.1 NodeHostName=h0 ..." -> the value of `key`.
std::string field(const std::string& line, const std::string& key) {
  for (const std::string& word : words(line))
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  return "";
}

std::set<std::string> addresses_of(const std::string& name) {
  std::set<std::string> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) out.insert(text);
  }
  freeaddrinfo(found);
  return out;
}

// "http://host:port" with the host replaced; anything else unchanged.
std::string with_host(const std::string& url, const std::map<std::string, std::string>& hosts) {
  const std::size_t start = url.find("://");
  if (start == std::string::npos) return url;
  const std::size_t host_begin = start + 3;
  const std::size_t colon = url.find(':', host_begin);
  const std::string host = url.substr(host_begin, colon == std::string::npos ? std::string::npos : colon - host_begin);
  const auto to = hosts.find(host);
  if (to == hosts.end()) return url;
  return url.substr(0, host_begin) + to->second + (colon == std::string::npos ? "" : url.substr(colon));
}

}  // namespace

const SlurmNode* SlurmAllocation::node_for_host(const std::string& host) const {
  for (const SlurmNode& node : nodes)
    if (host == node.name || host == node.host_name || host == node.address) return &node;
  const std::set<std::string> wanted = addresses_of(host);
  for (const SlurmNode& node : nodes) {
    const std::set<std::string> theirs = addresses_of(node.address.empty() ? node.name : node.address);
    if (std::any_of(wanted.begin(), wanted.end(), [&](const std::string& a) { return theirs.count(a) != 0; })) return &node;
  }
  return nullptr;
}

SlurmAllocation current_allocation() {
  SlurmAllocation allocation;
  allocation.job_id = environment("SLURM_JOB_ID");
  std::string node_list = environment("SLURM_JOB_NODELIST");
  if (node_list.empty()) node_list = environment("SLURM_NODELIST");
  if (allocation.job_id.empty() || node_list.empty())
    throw LaunchError("the slurm engine runs inside an allocation (SLURM_JOB_ID and SLURM_JOB_NODELIST are not set): "
                      "start daqx-launch under salloc or sbatch, or write the batch script with --write-sbatch FILE");
  const CommandResult names = run_command({"scontrol", "show", "hostnames", node_list}, "", kScontrolLimit);
  if (!names.ok()) throw LaunchError("scontrol show hostnames " + node_list + ": " + names.describe());
  for (const std::string& name : words(names.output)) {
    const CommandResult shown = run_command({"scontrol", "-o", "show", "node", name}, "", kScontrolLimit);
    if (!shown.ok()) throw LaunchError("scontrol show node " + name + ": " + shown.describe());
    SlurmNode node{name, field(shown.output, "NodeAddr"), field(shown.output, "NodeHostName")};
    if (node.address.empty()) node.address = name;
    allocation.nodes.push_back(node);
  }
  if (allocation.nodes.empty()) throw LaunchError("allocation " + allocation.job_id + " has no nodes");
  return allocation;
}

std::vector<std::pair<std::string, SlurmNode>> place_on_allocation(const std::string& partition_path,
                                                                    const config::Partition& partition,
                                                                    const SlurmAllocation& allocation,
                                                                    const std::string& output_path) {
  std::vector<std::pair<std::string, SlurmNode>> placement;
  std::map<std::string, std::string> hosts;  // partition host -> node address
  for (const config::ContextConfig& context : partition.contexts) {
    if (hosts.count(context.host) != 0) continue;
    if (placement.size() == allocation.nodes.size())
      throw LaunchError("the partition names more hosts than allocation " + allocation.job_id + " has nodes (" +
                        std::to_string(allocation.nodes.size()) + "): ask for one node per host");
    const SlurmNode& node = allocation.nodes[placement.size()];
    placement.emplace_back(context.host, node);
    hosts[context.host] = node.address;
  }
  // From the copy for hosts: the placed partition lives in another folder, so its relative paths are made absolute.
  const std::string text = partition_for_hosts(partition_path);
  pugi::xml_document document;
  const pugi::xml_parse_result parsed = document.load_buffer(text.data(), text.size(), pugi::parse_default | pugi::parse_comments);
  if (!parsed) throw LaunchError("cannot read " + partition_path + ": " + parsed.description());
  for (pugi::xpath_node found : document.select_nodes("//Context[@url] | //Thread[@context] | //Pool[@context]")) {
    pugi::xml_attribute url = found.node().attribute(found.node().attribute("url") ? "url" : "context");
    url.set_value(with_host(url.value(), hosts).c_str());
  }
  for (pugi::xpath_node found : document.select_nodes("//Endpoint[@hostname]")) {
    pugi::xml_attribute name = found.node().attribute("hostname");
    const auto to = hosts.find(name.value());
    if (to != hosts.end()) name.set_value(to->second.c_str());
  }
  if (!document.save_file(output_path.c_str(), "  "))
    throw LaunchError("cannot write the placed partition to " + output_path);
  return placement;
}

std::string sbatch_script(const config::Partition& partition, const std::string& launcher,
                          const std::vector<std::string>& launcher_arguments,
                          const std::vector<std::string>& sbatch_options) {
  std::map<std::string, int> per_host;
  for (const config::ContextConfig& context : partition.contexts) ++per_host[context.host];
  int most = 0;
  for (const auto& [host, count] : per_host) most = std::max(most, count);
  std::string script = "#!/bin/bash\n";
  script += "#SBATCH --job-name=" + shell_quote("daqx-" + partition.name) + "\n";
  script += "#SBATCH --nodes=" + std::to_string(per_host.size()) + "\n";
  script += "#SBATCH --ntasks-per-node=" + std::to_string(most) + "\n";
  for (const std::string& option : sbatch_options) script += "#SBATCH " + option + "\n";
  script += "# Written by daqx-launch --write-sbatch: partition '" + partition.name + "', " +
            std::to_string(partition.contexts.size()) + " contexts on " + std::to_string(per_host.size()) +
            " hosts. Submit it with sbatch; daqx-launch then starts every context as a task of this job\n"
            "# and stops them all when the job ends (Slurm's SIGTERM reaches it first).\n";
  script.append("exec ").append(shell_quote(launcher)).append(" --engine slurm");
  for (const std::string& argument : launcher_arguments) script.append(" ").append(shell_quote(argument));
  return script + "\n";
}

}  // namespace daqx::launch
