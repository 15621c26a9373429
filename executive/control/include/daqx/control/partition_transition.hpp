// Driving the contexts of a partition through a transition (configure, enable, stop, halt) in phases, the contexts
// of a phase at once over a bounded fan-out, each with its own deadline, and every context's outcome kept for the
// report that daqx-launch and daqxctl print.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daqx/control/control_request_pool.hpp"
#include "daqx/executive/partition.hpp"

namespace daqx {

// Contexts (URLs) in the order a transition takes them: one vector per phase.
using ContextPhases = std::vector<std::vector<std::string>>;

// The phases of a partition: consecutive contexts of the partition file that host the same set of application
// classes form one phase. Configure and enable take the phases in file order, stop and halt in reverse; the
// contexts of one phase go at once. An event builder's file lists the BU contexts, then the RU contexts, then the
// EvM's (docs/evb-partitions.md): three phases, so the EvM is enabled once every BU and RU is, and stopped before
// any of them. Contexts `filter` turns down are left out, and a phase left empty with them.
ContextPhases transition_phases(const config::Partition& partition,
                                const std::function<bool(const std::string& url)>& filter = {});

// stop and halt bring a partition down: phases in reverse, and on past a context that did not do it.
bool brings_down(const std::string& command) noexcept;

struct TransitionRequest {
  std::string command;                    // configure, enable, stop or halt
  std::optional<std::uint64_t> run;       // enable: the run it starts
  std::string path = "/api/transition";   // or /api/applications/TID/transition: one application
  std::chrono::milliseconds deadline = std::chrono::seconds(60);  // each context's answer must come within this
};

struct ContextOutcome {
  enum class Result { done, refused, no_answer, not_asked };
  std::string url;
  Result result = Result::not_asked;
  int status = 0;        // the HTTP status of its answer
  bool timed_out = false;  // no_answer: its deadline passed (else the connection failed: reason says how)
  std::string reason;    // refused: the executive's message; no_answer: why
  std::string states;    // "tid:state ..." after the command, as the context answered
};

struct TransitionOutcome {
  std::string command;
  std::vector<ContextOutcome> contexts;  // phase by phase as taken, the contexts not asked last
  std::size_t phases = 0;
  double seconds = 0;  // from the first request to the last answer

  std::size_t count(ContextOutcome::Result result) const noexcept;
  bool ok() const noexcept { return count(ContextOutcome::Result::done) == contexts.size(); }
  // One line per context that did not do it ("URL configure: no answer within 3 s", "URL enable: refused (409):
  // ..."), and one for the contexts not asked when a phase stopped the transition.
  std::vector<std::string> failure_lines() const;
  // "configure: 64/64 contexts in 1.02 s (2 phases)", with what did not go when something did not.
  std::string total_line() const;
};

// Takes every context of `phases` through `request`: configure and enable phase after phase in order, ending
// after a phase in which a context did not do it (the later phases rely on it: receivers are ready before senders
// start); stop and halt phase after phase in reverse, going on past one that did not, to bring down all it can.
// The contexts of a phase are asked over `pool`, at most its fan-out at once.
TransitionOutcome run_transition(const ContextPhases& phases, const TransitionRequest& request,
                                 ControlRequestPool& pool);

}  // namespace daqx
