// Driving a partition through the control API and watching it: transitions in partition order (or reverse),
// opening every connection before a run, and the per-second rate lines and end-of-run totals the launcher prints.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "daqx/executive/partition.hpp"

namespace daqx::launch {

// Which contexts take part (the others are dead or between restarts); all when empty.
using ContextFilter = std::function<bool(const std::string& url)>;

// POST /api/transition to one context; `run` goes with enable. False (reason printed) when refused.
bool transition_one(const std::string& url, const std::string& command, std::optional<std::uint64_t> run = {});
bool transition_all(const config::Partition& partition, const std::string& command, bool reverse,
                    std::optional<std::uint64_t> run = {}, const ContextFilter& filter = {});

// Every outgoing connection opened and up within `limit` (POST /api/connect), for all contexts or one.
bool connect_all(const config::Partition& partition, std::chrono::seconds limit);
bool connect_one(const std::string& url, std::chrono::seconds limit);

// One line per application with its rates, and per kind of application their sum; false when an application
// is Failed or a context that should answer does not. `last_counters` keeps every counter seen, for totals.
bool print_rates(const config::Partition& partition, double elapsed, std::map<std::string, double>& last_counters,
                 const ContextFilter& filter = {});
void print_totals(const std::map<std::string, double>& counters, double seconds);

}  // namespace daqx::launch
