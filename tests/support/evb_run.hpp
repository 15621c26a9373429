// An event builder of separate executives for process-level tests: N RUs, M BUs and the EvM, one executive
// each, their endpoints on the transport of a profile. The TIDs of the units are shared with in-process tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executive_process.hpp"
#include "transport_profile.hpp"

namespace daqx::test {

constexpr std::uint32_t kEvm = 10;
constexpr std::uint32_t ru(int i) { return 100 + static_cast<std::uint32_t>(i); }
constexpr std::uint32_t bu(int i) { return 200 + static_cast<std::uint32_t>(i); }

struct EvbUnit {
  std::string cls;
  std::uint32_t tid = 0;
  int instance = 0;
  PartitionProperties properties;
  std::uint16_t control = free_port();
  std::uint16_t data = free_port();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(control); }
};

// Contexts in the order the launcher needs (BUs, then `others` such as the BUs' monitors, RUs, the EvM last). The
// constructor starts every executive and requires each to answer.
class EvbRun {
 public:
  EvbRun(const TransportProfile& profile, const std::string& name, int rus, int bus,
         const PartitionProperties& evm_properties, const PartitionProperties& ru_properties = {},
         const PartitionProperties& bu_properties = {}, const PartitionProperties& endpoint_properties = {},
         const std::vector<EvbUnit>& others = {});

  void start(std::uint32_t tid);  // (again) the executive of a unit
  ExecutiveProcess& process(std::uint32_t tid) { return *processes_.at(tid); }
  const EvbUnit& unit(std::uint32_t tid) const;
  std::vector<std::uint32_t> tids() const;

  void bring_up(std::uint32_t tid);  // configure and enable one unit
  // The launcher's order: configure and enable in partition order (the EvM last), stop in reverse.
  void start_run();
  void stop_run(const std::vector<std::uint32_t>& skip = {});
  // Ends every executive still running with SIGTERM: each must exit 0 (a sanitizer report or a hang would not).
  void finish();

  double metric(std::uint32_t tid, const std::string& name) { return process(tid).metric(tid, name); }
  // Requires the unit's counter to reach target while it keeps growing (ExecutiveProcess::wait_progress): a busy
  // machine may make it slow, only a stall fails, with the counter's course in the report.
  void require_progress(std::uint32_t tid, const std::string& name, double target);
  double sum(const std::vector<std::uint32_t>& units, const std::string& name);
  std::string state(std::uint32_t tid);
  std::string reason(std::uint32_t tid);
  bool wait_state(std::uint32_t tid, const std::string& wanted, std::chrono::seconds limit);
  // Blocks in use in the unit's first pool whose name contains `pool`.
  double pool_blocks(std::uint32_t tid, const std::string& pool);
  // Whether that pool is empty, or gets empty within 10 s: blocks a stopped or halted unit handed to its
  // transport come back when the transport is done with them (sent, or its connection torn down), which
  // may be just after the transition has answered.
  bool pool_empty(std::uint32_t tid, const std::string& pool);
  // Whether the unit's transport receive pool holds no more than its open connections keep posted.
  bool receive_pool_at_rest(std::uint32_t tid);
  // Every running unit's state, reason and non-zero metrics (application, transport, per connection, pools):
  // what a failed wait reports, so that a stall can be told from a failed run and pinned to a connection.
  std::string picture();

 private:
  void add_context(PartitionBuilder& partition, const EvbUnit& u) const;

  const TransportProfile& profile_;
  PartitionProperties endpoint_properties_;  // every unit's endpoint
  std::vector<EvbUnit> units_;
  std::string path_;
  std::map<std::uint32_t, std::unique_ptr<ExecutiveProcess>> processes_;
};

}  // namespace daqx::test
