// The local engine: every executive is a child of the launcher on this machine.
#include <signal.h>

#include "child_process.hpp"
#include "engine.hpp"

namespace daqx::launch {
namespace {

class LocalProcess final : public ContextProcess {
 public:
  LocalProcess(const std::vector<std::string>& argv, const Environment& environment, int log_fd)
      : child_(argv, environment, log_fd) {}
  std::optional<int> poll() override { return child_.poll(); }
  void request_stop() override {
    child_.close_input();
    child_.signal(SIGTERM);
  }
  void kill() override { child_.signal(SIGKILL); }
  std::string where() const override { return "this machine (pid " + std::to_string(child_.pid()) + ")"; }

 private:
  ChildProcess child_;
};

class LocalEngine final : public Engine {
 public:
  std::string name() const override { return "local"; }
  void prepare(const std::string& partition_path, const std::vector<ContextLaunch>&) override { partition_ = partition_path; }
  std::unique_ptr<ContextProcess> start(const ContextLaunch& context, int log_fd) override {
    std::vector<std::string> argv{context.executive};
    for (std::string& a : executive_arguments(partition_, context)) argv.push_back(std::move(a));
    return std::make_unique<LocalProcess>(argv, context.environment, log_fd);
  }

 private:
  std::string partition_;
};

}  // namespace

std::vector<std::string> executive_arguments(const std::string& partition_path, const ContextLaunch& context) {
  std::vector<std::string> arguments{"--config", partition_path, "--context", context.context->url, "--stop-on-stdin-eof"};
  if (!context.instance.empty()) arguments.insert(arguments.end(), {"--launch-instance", context.instance});
  arguments.insert(arguments.end(), context.extra_arguments.begin(), context.extra_arguments.end());
  return arguments;
}

std::vector<std::unique_ptr<ContextProcess>> Engine::start_all(const std::vector<const ContextLaunch*>& contexts,
                                                               const std::vector<int>& log_fds) {
  std::vector<std::unique_ptr<ContextProcess>> started;
  for (std::size_t i = 0; i < contexts.size(); ++i) started.push_back(start(*contexts[i], log_fds[i]));
  return started;
}

std::unique_ptr<Engine> make_local_engine() { return std::make_unique<LocalEngine>(); }

}  // namespace daqx::launch
