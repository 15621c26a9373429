// What the HTTP control server needs from an executive: read-only views and the few commands.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/counters.hpp"
#include "daqx/api/frame.hpp"
#include "daqx/api/parameters.hpp"
#include "daqx/executive/state.hpp"
#include "daqx/api/transport.hpp"
#include "daqx/mempool/stats.hpp"

namespace daqx {

// How a control operation refused because a transition is in progress begins ("nothing done: busy: configure has
// been in progress for 2.4 s ...").
inline constexpr std::string_view kBusyRefusal = "nothing done: busy: ";

struct ParamView {
  std::string name;
  std::string type;
  std::string value;
  std::string default_value;
  std::string unit;
  std::string help;
};

struct ApplicationStatus {
  Tid tid = kNoTid;
  std::string class_name;
  std::uint32_t instance = 0;
  std::string name;  // hierarchical
  State state = State::halted;
  std::string reason;  // why it failed, when it did
  std::uint64_t run = 0;  // the run it was enabled in (0: none), until stopped or halted
  std::vector<ParamView> params;
  std::vector<Metric> metrics;
};

// The status of a transition an application refused: the request was well formed and legal, the application
// could not carry it out (RFC 9110 15.5.21, Unprocessable Content).
inline constexpr int kApplicationRefusedStatus = 422;

struct TransitionResult {
  bool ok = false;
  // 200 done, 404 unknown application, 409 illegal transition or busy, 422 an application refused (its hook threw
  // or called fail()), 503 the context is shutting down.
  int http_status = 200;
  std::string message;
  std::vector<std::pair<Tid, State>> states;  // the states after the command
};

struct ThreadStatus {
  std::string name;        // hierarchical, e.g. "pt/tcp/recv-0"
  int kernel_tid = 0;
  std::vector<int> cores_wanted;  // from the policy; empty: not pinned
  std::vector<int> cores;         // read back from the kernel
};

struct TransportStatus {
  std::string protocol;
  std::string endpoint;  // as listened on
  TransportCapabilities capabilities;
  std::vector<ParamView> params;
  std::vector<Metric> metrics;
  std::vector<ConnectionInfo> connections;
  // The partition's connection plan for this endpoint: connections named at configure, and those the plan sends
  // here from other contexts.
  std::size_t planned_outgoing = 0;
  std::size_t planned_incoming = 0;
};

struct ChunkView {  // for tests that check placement with move_pages from outside
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
};

struct PoolStatus {
  mem::PoolStats stats;
  int numa_node = -1;
  std::vector<ChunkView> chunks;
};

class ControlModel {
 public:
  virtual ~ControlModel() = default;
  virtual std::string context_url() const = 0;
  virtual std::string partition_name() const = 0;
  virtual std::vector<ApplicationStatus> applications() const = 0;
  virtual std::optional<ApplicationStatus> application(Tid tid) const = 0;
  // One application, or every application of the context when tid is nothing.
  virtual TransitionResult transition(std::optional<Tid> tid, Command command) = 0;
  // The same for an enable that starts run `run` (0: none given; another command must give 0). A model
  // without runs ignores it; the executive's rules are in docs/control-api.md ("Run numbers").
  virtual TransitionResult run_transition(std::optional<Tid> tid, Command command, std::uint64_t run) {
    (void)run;
    return transition(tid, command);
  }
  // The run this executive's applications are enabled in; 0 when none is on.
  virtual std::uint64_t run_number() const { return 0; }
  // How long that run has been on here, in seconds; negative when none is on (or the model does not know).
  virtual double run_seconds() const { return -1; }
  // Only while Halted; returns the reason when refused (unknown name, bad value, wrong state). A refusal because a
  // transition is in progress starts with kBusyRefusal (answered 409, as a busy transition is).
  virtual std::string set_parameter(Tid tid, const std::string& name, const std::string& value) = 0;
  virtual std::vector<PoolStatus> pools() const = 0;
  virtual std::vector<ThreadStatus> threads() const = 0;
  virtual std::vector<TransportStatus> transports() const = 0;
  // Executive-wide counters: frames dispatched locally, bad frames, uptime, ...
  virtual std::vector<Metric> executive_metrics() const = 0;
  // The connect command: every transport starts opening the connections it has not opened yet (with
  // connect-on-first-use, those that carried no frame). Does not wait: transports() shows them come up.
  virtual void open_connections() {}
};

}  // namespace daqx
