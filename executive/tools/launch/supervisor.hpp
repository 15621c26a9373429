// Watches every context the launcher started, whatever engine placed it: notices one that ended without
// being asked to, restarts it by its restart rule (backoff doubling up to a limit, at most so many times) and
// brings a restarted one back to where the partition is (configured, connected, enabled in the current run),
// so that, e.g., the event builder takes a restarted BU back without an operator. One that ends for good is
// lost without ending the run when the partition's <Expendable> rules allow it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daqx/control/control_request_pool.hpp"
#include "address_owner.hpp"
#include "engine.hpp"
#include "expendable_allowance.hpp"

namespace daqx::launch {

// How far the partition has been driven: what a restarted context is brought back to.
enum class Target { started, configured, enabled };

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;

  // `bring_up(url, target)` drives one (re)started context to `target`; false when it could not.
  using BringUp = std::function<bool(const std::string& url, Target target)>;

  Supervisor(Engine& engine, std::vector<ContextLaunch> contexts, const config::LaunchConfig& rules,
             std::chrono::milliseconds ready_timeout, BringUp bring_up);
  ~Supervisor();  // kills what still runs

  // Starts every context and waits until each answers on its control URL as the executive started for it (its
  // launch instance, its context URL), within ready_timeout of its own start, asking them over `pool` (its threads,
  // its fan-out); false (every context that failed named with its host and the tail of its log, those not up yet
  // listed) as soon as one ended, missed its deadline or its URL answered as another process (which is left
  // alone), or when `interrupted()` (called between rounds) became true.
  bool start_all(const std::function<bool()>& interrupted, daqx::ControlRequestPool& pool);

  // One round of watching: exits noticed, restarts due started, restarted ones brought up. Returns false
  // once a context has ended for good without being asked to (no restart rule, or restarts used up) and the
  // partition's <Expendable> rules do not let the run lose it.
  bool tick();
  void set_target(Target target) { target_ = target; }
  // Called before each message tick() prints, e.g. to take a table drawn in place off the terminal first.
  void set_before_message(std::function<void()> before_message) { before_message_ = std::move(before_message); }

  // Whether the context is up and answering (not dead, not between restarts, not lost).
  bool is_up(const std::string& url) const;
  // The contexts lost within the partition's allowance, and why.
  const ExpendableAllowance& expendable() const { return expendable_; }
  // Asks every context to stop (the engine's way: SIGTERM, end of the session), waits up to `grace`, then
  // kills what is left on its host. True when every one ended cleanly (exit code 0).
  bool stop_all(std::chrono::seconds grace);

  struct Summary {
    std::string url;
    std::string where;
    unsigned restarts = 0;
    std::string last_failure;  // empty: never failed
  };
  std::vector<Summary> summary() const;
  unsigned total_restarts() const;

 private:
  enum class Phase { starting, up, waiting_restart, ended, lost };
  struct Context {
    ContextLaunch launch;
    const config::LaunchRestartRule* rule = nullptr;
    std::unique_ptr<ContextProcess> process;
    Phase phase = Phase::starting;
    Clock::time_point since{};
    Clock::time_point restart_at{};
    unsigned restarts = 0;
    bool stopping = false;
    std::string where;
    std::string last_failure;
  };

  int open_log(const Context& context) const;  // appended to, with a banner line; throws LaunchError
  void launch(Context& context);
  void started(Context& context);
  // Whether the executive started for `context` answers on its URL (not another process: AddressOwner).
  AddressOwner owner(const Context& context) const;
  bool wait_until_answering(const std::function<bool()>& interrupted, daqx::ControlRequestPool& pool);
  void failed(Context& context, const std::string& why);

  Engine& engine_;
  std::vector<Context> contexts_;
  std::chrono::milliseconds ready_timeout_;
  BringUp bring_up_;
  std::function<void()> before_message_;
  Target target_ = Target::started;
  std::string unavailable_;  // set once the engine can start nothing more (the allocation ended)
  ExpendableAllowance expendable_;
};

// The last `lines` lines of a log file, indented, for a message.
std::string log_tail(const std::string& path, int lines);

}  // namespace daqx::launch
