// What places and starts a context's executive: the local machine, OpenSSH, or Slurm. The launcher sees every
// running context through the same ContextProcess, so supervision, logs and stopping are engine-blind.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "daqx/control/control_fanout.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/services/host_limits.hpp"

namespace daqx::launch {

using Environment = std::vector<std::pair<std::string, std::string>>;

// Everything one context needs to run, wherever it runs.
struct ContextLaunch {
  const config::ContextConfig* context = nullptr;
  std::string executive;                    // the program's path on the context's host
  std::vector<std::string> extra_arguments;  // after --config and --context (log level and format, ...)
  Environment environment;                  // set for the executive on its host
  std::string ssh_target;                   // ssh: where to connect ("user@node"); the context's host if empty
  std::string work_dir;                     // ssh: the folder on the host that receives the partition
  std::string log_path;                     // the local file that collects the context's output
  std::string instance;                     // this launch's instance (--launch-instance): how its executive is known
};

// One started context, as the engine that started it can watch and stop it.
class ContextProcess {
 public:
  virtual ~ContextProcess() = default;  // leaves nothing running
  // The wait status (of the executive, or of the ssh or srun client standing for it) once it ended.
  virtual std::optional<int> poll() = 0;
  // Asks it to stop (as SIGTERM does); poll() tells when it has.
  virtual void request_stop() = 0;
  // Kills the executive itself (SIGKILL, on its host) and whatever stands for it here.
  virtual void kill() = 0;
  // "host 10.0.0.3 over ssh", for messages.
  virtual std::string where() const = 0;
};

class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  // Once, before any context starts: e.g. the partition copied to every host. Throws LaunchError naming
  // every host that failed, having left nothing behind that the engine's destructor would not remove.
  virtual void prepare(const std::string& partition_path, const std::vector<ContextLaunch>& contexts) = 0;
  // Starts (or starts again) one context; its output is appended to log_fd (the engine keeps its own copy
  // if it needs one). Throws LaunchError.
  virtual std::unique_ptr<ContextProcess> start(const ContextLaunch& context, int log_fd) = 0;
  // Starts every context at once, log_fds[i] for contexts[i]. By default one after the other; an engine that
  // can start them together (Slurm: one step, one task per context) does.
  virtual std::vector<std::unique_ptr<ContextProcess>> start_all(const std::vector<const ContextLaunch*>& contexts,
                                                                 const std::vector<int>& log_fds);
  // Why no context can be (re)started any more (the Slurm allocation ended), or empty.
  virtual std::string unavailable() { return {}; }
  // The limits an executive of this context gets on its host, for the plan before start: what its executive
  // prints there with --host-limits (ssh, slurm), or this machine's, read here (local). Called from several
  // threads at once, before prepare(). Throws LaunchError naming the host when it cannot be asked.
  virtual HostLimits host_limits(const ContextLaunch&) { return HostLimits::here(); }
};

// The arguments every engine gives the executive after its path.
std::vector<std::string> executive_arguments(const std::string& partition_path, const ContextLaunch& context);

struct SshOptions {
  std::string program = "ssh";
  std::string config_file;               // -F; empty: the user's own ssh configuration
  std::vector<std::string> options;      // further -o NAME=VALUE
  unsigned fanout = daqx::kDefaultControlFanout;  // hosts the partition is copied to (and removed from) at a time
};

struct SlurmOptions {
  std::string partition_copy;  // where the partition goes on the nodes (sbcast); empty: /tmp/daqx-launch.JOB.PID.xml
};

std::unique_ptr<Engine> make_local_engine();
std::unique_ptr<Engine> make_ssh_engine(SshOptions options);
// Throws LaunchError outside a Slurm allocation.
std::unique_ptr<Engine> make_slurm_engine(SlurmOptions options);

}  // namespace daqx::launch
