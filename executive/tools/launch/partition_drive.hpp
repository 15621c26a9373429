// How daqx-launch takes a partition through its transitions and opens its connections: the phases and fan-out
// shared with daqxctl (daqx/control/partition_transition.hpp), and the launcher's report of every context.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daqx/control/control_request_pool.hpp"
#include "daqx/executive/partition.hpp"
#include "run_control.hpp"

namespace daqx::launch {

struct DriveSettings {
  unsigned fanout = kDefaultControlFanout;                        // --fanout: requests in flight at once
  std::chrono::milliseconds deadline = std::chrono::seconds(60);  // --transition-timeout: each context's answer
};

// One context (a restarted one brought back): false, with the reason on stderr, when it did not do it.
// The requests go over `pool` (made with settings.fanout), shared with the connect and the live table.
bool transition_one(const std::string& url, const std::string& command, const DriveSettings& settings,
                    ControlRequestPool& pool, std::optional<std::uint64_t> run = {});
// Every context that `filter` lets through (all when empty), in phases (transition_phases): a line on stderr per
// context that did not do it, the total on stdout. False when one did not. `driven_elsewhere`, when given, gets
// the contexts that refused because they were not in a state the command goes from (409) with none of their
// applications Failed: the launcher drove them to one, so someone else has driven them since.
bool transition_all(const config::Partition& partition, const std::string& command, const DriveSettings& settings,
                    ControlRequestPool& pool, std::optional<std::uint64_t> run = {}, const ContextFilter& filter = {},
                    std::vector<std::string>* driven_elsewhere = nullptr);

// Every outgoing connection opened and up within `limit` (POST /api/connect), for all contexts or one.
bool connect_all(const config::Partition& partition, std::chrono::seconds limit, ControlRequestPool& pool);
bool connect_one(const std::string& url, std::chrono::seconds limit, ControlRequestPool& pool);

}  // namespace daqx::launch
