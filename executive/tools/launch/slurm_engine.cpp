// The slurm engine: inside an allocation, every context becomes a task of one srun step (--multi-prog, each
// task on the node its context's host names), a restarted context a one-task step of its own (--overlap, so it
// starts while the first step runs). srun carries each task's output back, labelled, and its standard input to
// every task: closing it stops the executives as SIGTERM would (srun's own SIGTERM kills them outright).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "engine.hpp"
#include "partition_copy.hpp"
#include "remote_limits.hpp"
#include "run_command.hpp"
#include "slurm_allocation.hpp"

namespace daqx::launch {
namespace {

constexpr auto kCommandLimit = std::chrono::seconds(60);

// The wait status a task's end is reported with by srun ("Killed", "Terminated", "Exited with exit code 3").
int status_from_text(const std::string& text) {
  const std::string exited = "Exited with exit code ";
  if (text.rfind(exited, 0) == 0) return (std::atoi(text.c_str() + exited.size()) & 0xff) << 8;
  for (int number = 1; number < 32; ++number)
    if (text == strsignal(number)) return number;
  return 1 << 8;  // some other end: a failure, whatever it was
}

// "srun: error: h1: task 1: Killed", "srun: error: h1: tasks 0,2-3: Terminated": the tasks and their end.
bool parse_task_end(const std::string& line, std::vector<int>& tasks, std::string& how) {
  const std::size_t at = line.find(": task");
  if (line.rfind("srun: error: ", 0) != 0 || at == std::string::npos) return false;
  std::size_t list = line.find(' ', at + 2);
  const std::size_t colon = line.find(':', list == std::string::npos ? at + 2 : list);
  if (list == std::string::npos || colon == std::string::npos) return false;
  std::stringstream ranges(line.substr(list + 1, colon - list - 1));
  for (std::string range; std::getline(ranges, range, ',');) {
    const std::size_t dash = range.find('-');
    const int first = std::atoi(range.c_str());
    const int last = dash == std::string::npos ? first : std::atoi(range.c_str() + dash + 1);
    for (int task = first; task <= last && last - first < 100000; ++task) tasks.push_back(task);
  }
  how = line.substr(colon + 1);
  how.erase(0, how.find_first_not_of(' '));
  return !tasks.empty();
}

// One srun: the step of every context, or of one restarted context. Its output (stdout and stderr of srun,
// labelled by task) is read by a thread of its own and written to each task's log; srun's reports of tasks that
// ended are how each task's end is known while the others run on.
class SlurmStep {
 public:
  SlurmStep(const std::vector<std::string>& argv, std::vector<int> log_fds) : log_fds_(std::move(log_fds)) {
    ends_.resize(log_fds_.size());
    int output[2];
    if (pipe2(output, O_CLOEXEC) != 0) throw LaunchError(std::string("pipe: ") + std::strerror(errno));
    try {
      // srun is told nothing from the allocation's own task layout: it would fight the layout given here.
      srun_ = std::make_unique<ChildProcess>(argv, Environment{}, output[1],
                                             std::vector<std::string>{"SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                                                                      "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_DISTRIBUTION"});
    } catch (const std::exception& error) {
      close(output[0]);
      close(output[1]);
      throw LaunchError(error.what());
    }
    close(output[1]);
    reader_ = std::thread([this, fd = output[0]] { read_output(fd); });
  }
  ~SlurmStep() {
    srun_.reset();  // kills srun if it still runs, which ends the step: its output closes
    if (reader_.joinable()) reader_.join();
    for (int fd : log_fds_) close(fd);
  }

  // The task's wait status once it has ended: reported by srun, or srun itself gone.
  std::optional<int> poll(std::size_t task) {
    const std::optional<int> srun_status = srun_->poll();
    std::lock_guard lock(mutex_);
    if (ends_[task]) return ends_[task];
    if (srun_status && output_closed_) ends_[task] = unreported_end(*srun_status);
    return ends_[task];
  }
  void close_input() { srun_->close_input(); }
  void kill_srun() { srun_->signal(SIGKILL); }
  bool srun_running() { return !srun_->poll(); }

 private:
  void read_output(int fd) {
    std::string pending;
    char buffer[8192];
    for (;;) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buffer, static_cast<std::size_t>(n));
      for (std::size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1))
        route(pending.substr(0, end));
    }
    if (!pending.empty()) route(pending);
    close(fd);
    std::lock_guard lock(mutex_);
    output_closed_ = true;
  }

  // "3: text" goes to task 3's log without its label; srun's own lines go to the logs they concern.
  void route(const std::string& line) {
    std::size_t digits = 0;
    while (digits < line.size() && line[digits] == ' ') ++digits;
    const std::size_t first_digit = digits;
    while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits])) != 0) ++digits;
    if (digits > first_digit && line.compare(digits, 2, ": ") == 0) {
      const std::size_t task = std::strtoul(line.c_str() + first_digit, nullptr, 10);
      if (task < log_fds_.size()) {
        write_line(log_fds_[task], line.substr(digits + 2));
        return;
      }
    }
    std::vector<int> tasks;
    std::string how;
    if (parse_task_end(line, tasks, how)) {
      std::lock_guard lock(mutex_);
      for (int task : tasks)
        if (task >= 0 && static_cast<std::size_t>(task) < ends_.size()) {
          ends_[static_cast<std::size_t>(task)] = status_from_text(how);
          write_line(log_fds_[static_cast<std::size_t>(task)], line);
        }
      return;
    }
    for (int fd : log_fds_) write_line(fd, line);  // about the whole step
  }

  // srun reports every task that ends otherwise than with exit code 0, and exits with the worst of those ends
  // (128 + signal for a signal). A task it did not report therefore exited 0, as long as srun's own exit is
  // explained by the reported ones; otherwise (srun killed, or failing before the tasks ran) srun's end is theirs.
  int unreported_end(int srun_status) const {
    int worst = 0;
    for (const std::optional<int>& end : ends_)
      if (end) worst = std::max(worst, WIFSIGNALED(*end) ? 128 + WTERMSIG(*end) : WEXITSTATUS(*end));
    return WIFEXITED(srun_status) && WEXITSTATUS(srun_status) == worst ? 0 : srun_status;
  }

  static void write_line(int fd, const std::string& line) {
    const std::string text = line + "\n";
    (void)!write(fd, text.data(), text.size());
  }

  std::vector<int> log_fds_;  // the engine's own copies, closed with the step
  std::unique_ptr<ChildProcess> srun_;
  std::thread reader_;
  std::mutex mutex_;
  std::vector<std::optional<int>> ends_;
  bool output_closed_ = false;
};

class SlurmEngine;

class SlurmTask final : public ContextProcess {
 public:
  SlurmTask(SlurmEngine& engine, std::shared_ptr<SlurmStep> step, std::size_t task, std::string node, std::string host,
            std::string log_path)
      : engine_(engine), step_(std::move(step)), task_(task), node_(std::move(node)), host_(std::move(host)),
        log_path_(std::move(log_path)) {}
  ~SlurmTask() override;
  std::optional<int> poll() override { return step_->poll(task_); }
  // The end of srun's input reaches every task of its step as the end of its own: they stop as on SIGTERM.
  void request_stop() override { step_->close_input(); }
  void kill() override;
  std::string where() const override { return "node " + node_ + " (host " + host_ + ") through slurm"; }

 private:
  // The executive logs its pid when it is ready; the last such line is the one now running.
  std::string executive_pid() const {
    std::ifstream log(log_path_);
    std::string pid;
    for (std::string line; std::getline(log, line);) {
      const std::size_t at = line.find("ready (pid ");
      if (at != std::string::npos) pid = line.substr(at + 11, line.find(')', at) - at - 11);
    }
    return pid.find_first_not_of("0123456789") == std::string::npos ? pid : "";
  }

  SlurmEngine& engine_;
  std::shared_ptr<SlurmStep> step_;
  std::size_t task_;
  std::string node_, host_, log_path_;
};

class SlurmEngine final : public Engine {
 public:
  explicit SlurmEngine(SlurmOptions options) : options_(std::move(options)), allocation_(current_allocation()) {
    if (options_.partition_copy.empty())
      options_.partition_copy = "/tmp/daqx-launch." + allocation_.job_id + "." + std::to_string(getpid()) + ".xml";
  }
  ~SlurmEngine() override {
    std::remove(local_copy_.c_str());
    if (!multi_prog_.empty()) std::remove(multi_prog_.c_str());
    // The copies sbcast left on the nodes, while the allocation lasts (after it, the nodes' /tmp keeps them).
    if (!local_copy_.empty() && unavailable().empty()) {
      std::string nodes;
      for (const SlurmNode& node : allocation_.nodes) nodes += (nodes.empty() ? "" : ",") + node.name;
      run_command({"srun", "--jobid=" + allocation_.job_id, "--overlap", "--overcommit", "--quiet",
                   "--nodes=" + std::to_string(allocation_.nodes.size()), "--ntasks-per-node=1", "-w", nodes, "rm", "-f",
                   options_.partition_copy},
                  "", std::chrono::seconds(20));
    }
  }

  std::string name() const override { return "slurm"; }
  const std::string& job() const { return allocation_.job_id; }

  void prepare(const std::string& partition_path, const std::vector<ContextLaunch>& contexts) override {
    for (const ContextLaunch& context : contexts) nodes_[context.context->url] = node_of(context).name;
    // sbcast, Slurm's own broadcast, puts the copy on every node of the allocation: no shared file system needed.
    local_copy_ = options_.partition_copy + ".source";
    std::ofstream(local_copy_) << partition_for_hosts(partition_path);
    const CommandResult sent = run_command({"sbcast", "--force", local_copy_, options_.partition_copy}, "", kCommandLimit);
    if (!sent.ok()) throw LaunchError("sbcast of the partition to the nodes of job " + allocation_.job_id + ": " + sent.describe());
  }

  // The executive's answer from a one-task step on the context's node, in the context's environment.
  HostLimits host_limits(const ContextLaunch& context) override {
    const SlurmNode& node = node_of(context);
    std::vector<std::string> argv{"srun", "--jobid=" + allocation_.job_id, "--overlap", "--overcommit", "-N1", "-n1",
                                  "-w", node.name, "--quiet"};
    if (!context.environment.empty()) {
      argv.push_back("env");
      for (const auto& [name, value] : context.environment) argv.push_back(name + "=" + value);
    }
    argv.insert(argv.end(), {context.executive, kHostLimitsArgument});
    return read_host_limits(run_command(argv, "", kCommandLimit),
                            "host " + context.context->host + " (node " + node.name + ")");
  }

  std::unique_ptr<ContextProcess> start(const ContextLaunch& context, int log_fd) override {
    const std::string& node = nodes_.at(context.context->url);
    std::vector<std::string> argv = srun_prefix(1, {node});
    for (std::string& word : task_command(context)) argv.push_back(std::move(word));
    auto step = std::make_shared<SlurmStep>(argv, std::vector<int>{dup_cloexec(log_fd)});
    return std::make_unique<SlurmTask>(*this, step, 0, node, context.context->host, context.log_path);
  }

  std::vector<std::unique_ptr<ContextProcess>> start_all(const std::vector<const ContextLaunch*>& contexts,
                                                         const std::vector<int>& log_fds) override {
    // One step for all: task i is context i, on its node (arbitrary distribution over the list given with -w).
    std::vector<std::string> task_nodes;
    std::string program;
    for (std::size_t i = 0; i < contexts.size(); ++i) {
      task_nodes.push_back(nodes_.at(contexts[i]->context->url));
      program += std::to_string(i);
      for (const std::string& word : task_command(*contexts[i])) program += " " + word;
      program += "\n";
    }
    const std::string program_path = options_.partition_copy + ".multi-prog";
    std::ofstream(program_path) << program;
    multi_prog_ = program_path;
    std::vector<std::string> argv = srun_prefix(contexts.size(), task_nodes);
    argv.insert(argv.end(), {"--multi-prog", program_path});
    std::vector<int> fds;
    for (int fd : log_fds) fds.push_back(dup_cloexec(fd));
    auto step = std::make_shared<SlurmStep>(argv, fds);
    std::vector<std::unique_ptr<ContextProcess>> tasks;
    for (std::size_t i = 0; i < contexts.size(); ++i)
      tasks.push_back(std::make_unique<SlurmTask>(*this, step, i, task_nodes[i], contexts[i]->context->host,
                                                  contexts[i]->log_path));
    return tasks;
  }

  std::string unavailable() override {
    const CommandResult shown = run_command({"scontrol", "-o", "show", "job", allocation_.job_id}, "", std::chrono::seconds(20));
    if (!shown.ok()) return "allocation " + allocation_.job_id + " is gone (" + shown.describe() + ")";
    const std::size_t at = shown.output.find("JobState=");
    const std::string state = at == std::string::npos ? "" : shown.output.substr(at + 9, shown.output.find(' ', at) - at - 9);
    if (state != "RUNNING") return "allocation " + allocation_.job_id + " has ended (" + state + ")";
    return {};
  }

  // A one-task step on the node that kills the executive there: how a task of a shared step is killed alone.
  void kill_on_node(const std::string& node, const std::string& pid) const {
    run_command({"srun", "--jobid=" + allocation_.job_id, "--overlap", "--overcommit", "-N1", "-n1", "-w", node,
                 "--quiet", "kill", "-KILL", pid},
                "", std::chrono::seconds(20));
  }

 private:
  const SlurmNode& node_of(const ContextLaunch& context) const {
    const SlurmNode* node = allocation_.node_for_host(context.context->host);
    if (node != nullptr) return *node;
    std::string names;
    for (const SlurmNode& n : allocation_.nodes) names += (names.empty() ? "" : ", ") + n.name + " (" + n.address + ")";
    throw LaunchError("host " + context.context->host + " of context " + context.context->url +
                      " is not a node of allocation " + allocation_.job_id + " (" + names +
                      "): name the nodes in the partition, or let Slurm place the contexts (--slurm-placement slurm)");
  }

  std::vector<std::string> srun_prefix(std::size_t tasks, const std::vector<std::string>& task_nodes) const {
    std::set<std::string> distinct(task_nodes.begin(), task_nodes.end());
    std::string list;
    for (const std::string& node : task_nodes) list += (list.empty() ? "" : ",") + node;
    // --overlap: a restart's step starts while this one runs; --overcommit: more contexts on a node than the
    // allocation has CPUs there is the partition's choice; --kill-on-bad-exit=0: one task's end is not the
    // step's; --label: each line says whose it is.
    return {"srun", "--jobid=" + allocation_.job_id, "--job-name=daqx", "--overlap", "--overcommit",
            "--ntasks=" + std::to_string(tasks), "--nodes=" + std::to_string(distinct.size()), "-w", list,
            "--distribution=arbitrary", "--kill-on-bad-exit=0", "--label", "--unbuffered", "--input=all"};
  }

  // env NAME=VALUE ... EXECUTIVE ARGS: as words, for a command line or a line of the multi-prog file, which
  // splits at blanks: a word with a blank in it cannot go through and is refused here.
  std::vector<std::string> task_command(const ContextLaunch& context) const {
    std::vector<std::string> words;
    if (!context.environment.empty()) {
      words.push_back("env");
      for (const auto& [name, value] : context.environment) words.push_back(name + "=" + value);
    }
    words.push_back(context.executive);
    for (std::string& argument : executive_arguments(options_.partition_copy, context)) words.push_back(std::move(argument));
    for (const std::string& word : words)
      if (word.empty() || word.find_first_of(" \t\n'\"\\") != std::string::npos)
        throw LaunchError("'" + word + "' (for " + context.context->url +
                          ") cannot be passed through srun --multi-prog: no blanks, quotes or backslashes");
    return words;
  }

  static int dup_cloexec(int fd) {
    const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) throw LaunchError(std::string("dup: ") + std::strerror(errno));
    return copy;
  }

  SlurmOptions options_;
  SlurmAllocation allocation_;
  std::map<std::string, std::string> nodes_;  // context URL -> node name
  std::string local_copy_;
  std::string multi_prog_;
};

SlurmTask::~SlurmTask() {
  // The last task of a step to go takes srun with it: nothing is left behind once the launcher lets go.
  if (step_.use_count() == 1 && step_->srun_running()) step_->kill_srun();
}

void SlurmTask::kill() {
  if (poll()) return;
  const std::string pid = executive_pid();
  if (!pid.empty()) engine_.kill_on_node(node_, pid);
  if (step_.use_count() == 1) step_->kill_srun();  // a step of its own: srun's end is the task's end
}

}  // namespace

std::unique_ptr<Engine> make_slurm_engine(SlurmOptions options) { return std::make_unique<SlurmEngine>(std::move(options)); }

}  // namespace daqx::launch
