// Process-level test support: real daqx-executive processes from real partition files, over HTTP.
#pragma once

#include <sys/types.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daqx/control/control_client.hpp"

namespace daqx::test {

// Paths of the build tree, compiled in by CMake.
std::string executive_program();
std::string tool_program(const std::string& name);  // daqxctl, daqx-launch
std::string module_directory();
std::string config_directory();  // the repository's config/

// A port nobody listens on now (bound once and released: good enough on a test machine), never one this program
// was given before.
std::uint16_t free_port();

// A scratch directory per test program run, removed at exit.
std::string scratch_directory();
// Writes text to scratch/name and returns the path.
std::string write_file(const std::string& name, const std::string& text);

// A metric value of an application of the executive at `url`, whoever started it (NaN when absent or
// unreachable).
double application_metric(const std::string& url, std::uint32_t tid, const std::string& name);

class ExecutiveProcess {
 public:
  // The build tree's executive gets DAQX_MODULE_PATH = module_directory(); any other `program` (an installed
  // one) runs without DAQX_MODULE_PATH and finds its modules as an installed program does.
  // `wrapper` goes before the program, e.g. {"/usr/sbin/ip", "netns", "exec", NAME} to run it in a namespace;
  // its first word must be a path, and it must exec the program in place so pid() stays the executive's.
  ExecutiveProcess(const std::string& partition_path, const std::string& context_url,
                   std::vector<std::string> extra_args = {}, const std::string& program = executive_program(),
                   std::vector<std::string> wrapper = {});
  ~ExecutiveProcess();  // SIGKILL if still running
  ExecutiveProcess(const ExecutiveProcess&) = delete;
  ExecutiveProcess& operator=(const ExecutiveProcess&) = delete;

  // Polls the control API until it answers; false if the process died or the time ran out. The limit is a bound
  // against a hang, not a speed check: a sanitizer build in an emulated guest on a busy machine starts slowly.
  bool wait_ready(std::chrono::milliseconds limit = std::chrono::seconds(120));
  HttpReply get(const std::string& path) const { return client_.get(path); }
  HttpReply post(const std::string& path, const std::string& body) const { return client_.post(path, body); }
  HttpReply transition(const std::string& command) const;
  HttpReply transition(std::uint32_t tid, const std::string& command) const;
  Poco::JSON::Object::Ptr application(std::uint32_t tid) const;
  // A metric value of an application (NaN when absent or unreachable).
  double metric(std::uint32_t tid, const std::string& name) const;
  // Polls until metric(tid, name) >= value or the limit passes.
  bool wait_metric(std::uint32_t tid, const std::string& name, double value,
                   std::chrono::milliseconds limit = std::chrono::seconds(30)) const;
  // Waits until metric(tid, name) >= target as long as it keeps moving: fails only when the value has not grown
  // for `stall` (or the process is gone), so a slow machine passes and a stuck one fails. The report says which,
  // with the value sampled every second.
  struct Progress {
    bool reached = false;
    double value = 0;  // the last value read
    double seconds = 0;
    std::string trace;  // "t=1s 240, t=2s 511, ..." and why it ended
  };
  Progress wait_progress(std::uint32_t tid, const std::string& name, double target,
                         std::chrono::seconds stall = std::chrono::seconds(60));

  // SIGTERM and wait; returns the exit code (or 128+signal), -1 if it had to be killed after `grace`.
  int stop(std::chrono::seconds grace = std::chrono::seconds(20));
  void kill_now();  // SIGKILL
  bool running();
  pid_t pid() const noexcept { return pid_; }
  std::string output() const;  // everything it printed so far

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string log_path_;
  ControlClient client_;
};

}  // namespace daqx::test
