#include "supervisor.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "child_process.hpp"
#include "daqx/control/control_client.hpp"
#include "daqx/services/log_line.hpp"

namespace daqx::launch {
namespace {

// The executives' own time format (docs/operations.md), so a banner sorts among their lines.
std::string utc_now() {
  std::string text;
  append_utc_time(text, std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count());
  return text;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

constexpr std::size_t kListedNotUp = 10;  // contexts named when a launch stops before they answered

}  // namespace

std::string log_tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > static_cast<std::size_t>(lines) ? all.size() - lines : 0; i < all.size(); ++i)
    out += "    | " + all[i] + "\n";
  if (all.empty()) out = "    (the log is empty)\n";
  return out;
}

Supervisor::Supervisor(Engine& engine, std::vector<ContextLaunch> contexts, const config::LaunchConfig& rules,
                       std::chrono::milliseconds ready_timeout, BringUp bring_up)
    : engine_(engine), ready_timeout_(ready_timeout), bring_up_(std::move(bring_up)), expendable_(rules) {
  for (ContextLaunch& launch : contexts) {
    Context context;
    context.rule = rules.restart_rule(launch.context->url);
    context.launch = std::move(launch);
    contexts_.push_back(std::move(context));
  }
}

Supervisor::~Supervisor() {
  for (Context& context : contexts_)
    if (context.process && !context.process->poll()) context.process->kill();
}

int Supervisor::open_log(const Context& context) const {
  // Appended, never truncated on a restart: the log of the run that died is what explains the restart.
  const int fd = open(context.launch.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw LaunchError("cannot write " + context.launch.log_path + ": " + std::strerror(errno));
  std::string banner = "---- daqx-launch " + utc_now() + ": ";
  banner.append(context.restarts == 0 ? "start" : "restart " + std::to_string(context.restarts));
  banner.append(" of ").append(context.launch.context->url).append(" through ").append(engine_.name()).append("\n");
  (void)!write(fd, banner.data(), banner.size());
  return fd;
}

void Supervisor::started(Context& context) {
  context.where = context.process->where();
  context.phase = Phase::starting;
  context.since = Clock::now();
}

void Supervisor::launch(Context& context) {
  const int fd = open_log(context);
  try {
    context.process = engine_.start(context.launch, fd);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  started(context);
}

AddressOwner Supervisor::owner(const Context& context) const {
  const std::string& url = context.launch.context->url;
  return owner_of(ControlClient(url, std::chrono::seconds(1)).get("/api/executive"), url, context.launch.instance);
}

bool Supervisor::start_all(const std::function<bool()>& interrupted, daqx::ControlRequestPool& pool) {
  std::vector<const ContextLaunch*> launches;
  std::vector<int> fds;
  try {
    for (Context& context : contexts_) {
      launches.push_back(&context.launch);
      fds.push_back(open_log(context));
    }
    std::vector<std::unique_ptr<ContextProcess>> processes = engine_.start_all(launches, fds);
    for (std::size_t i = 0; i < contexts_.size(); ++i) {
      contexts_[i].process = std::move(processes[i]);
      started(contexts_[i]);
    }
  } catch (const LaunchError& error) {
    for (int fd : fds) close(fd);
    std::fprintf(stderr, "daqx-launch: the contexts cannot start: %s\n", error.what());
    return false;
  }
  for (int fd : fds) close(fd);
  return wait_until_answering(interrupted, pool);
}

bool Supervisor::wait_until_answering(const std::function<bool()>& interrupted, daqx::ControlRequestPool& pool) {
  // Rounds over the contexts not up yet, at most one every kReadyPoll: each asked once per round on the launcher's
  // request pool (its fixed threads, --fanout requests in flight), each request bounded by kReadyAsk, so a context
  // that takes the connection and says nothing costs a round that much and holds no thread of its own.
  constexpr auto kReadyPoll = std::chrono::milliseconds(100);
  constexpr auto kReadyAsk = std::chrono::seconds(1);
  enum class Outcome { pending, up, ended, late, another };
  std::vector<Outcome> outcomes(contexts_.size(), Outcome::pending);
  std::vector<AddressOwner> owners(contexts_.size());
  std::vector<std::optional<int>> statuses(contexts_.size());
  std::vector<std::size_t> pending(contexts_.size());
  for (std::size_t i = 0; i < contexts_.size(); ++i) pending[i] = i;
  bool stop = false, was_interrupted = false;
  while (!pending.empty() && !stop) {
    const Clock::time_point round_start = Clock::now();
    std::vector<daqx::ControlRequest> requests;
    std::vector<std::size_t> asked;
    for (std::size_t index : pending) {
      Context& context = contexts_[index];
      if ((statuses[index] = context.process->poll())) {
        outcomes[index] = Outcome::ended;
        stop = true;  // the launch has failed: the others need not be waited for
      } else if (round_start - context.since > ready_timeout_) {
        outcomes[index] = Outcome::late;
        stop = true;
      } else {
        requests.push_back({context.launch.context->url, "GET", "/api/executive", "", kReadyAsk});
        asked.push_back(index);
      }
    }
    if (stop) break;
    // Written by the pool's threads, one slot each.
    pool.run(requests, [&](std::size_t i, HttpReply reply) {
      owners[asked[i]] = owner_of(reply, requests[i].url, contexts_[asked[i]].launch.instance);
    });
    pending.clear();
    for (std::size_t index : asked) {
      switch (owners[index].kind) {
        case AddressOwner::Kind::ours: outcomes[index] = Outcome::up; break;
        case AddressOwner::Kind::another: outcomes[index] = Outcome::another; stop = true; break;
        case AddressOwner::Kind::nobody: pending.push_back(index); break;
      }
    }
    if (stop) break;
    if (!pending.empty() && interrupted()) {
      was_interrupted = stop = true;
      break;
    }
    std::this_thread::sleep_until(round_start + kReadyPoll);
  }
  std::vector<std::string> not_up, ended_too;
  for (std::size_t i = 0; i < contexts_.size(); ++i) {
    Context& context = contexts_[i];
    const char* url = context.launch.context->url.c_str();
    switch (outcomes[i]) {
      case Outcome::up:
        context.phase = Phase::up;
        break;
      case Outcome::ended:
        std::fprintf(stderr, "daqx-launch: context %s on %s failed to start (%s); log %s:\n%s", url, context.where.c_str(),
                     describe_wait_status(*statuses[i]).c_str(), context.launch.log_path.c_str(),
                     log_tail(context.launch.log_path, 20).c_str());
        context.last_failure = "failed to start (" + describe_wait_status(*statuses[i]) + ")";
        context.phase = Phase::ended;  // reported: stop_all need not report it again
        break;
      case Outcome::another:
        // Its own executive, not up (it cannot listen there), is stopped with the others; the other process is
        // neither asked nor told anything.
        std::fprintf(stderr, "daqx-launch: context %s: its control address is served by another process, %s, not by the "
                             "executive this launcher started on %s: not driven; log %s:\n%s",
                     url, owners[i].who.c_str(), context.where.c_str(), context.launch.log_path.c_str(),
                     log_tail(context.launch.log_path, 8).c_str());
        context.last_failure = "its control address is served by another process (" + owners[i].who + ")";
        break;
      case Outcome::late:
        std::fprintf(stderr, "daqx-launch: context %s on %s did not answer within %.0f s of its start; log %s:\n%s", url,
                     context.where.c_str(), seconds(ready_timeout_), context.launch.log_path.c_str(),
                     log_tail(context.launch.log_path, 20).c_str());
        context.last_failure = "did not answer within " + std::to_string(static_cast<int>(seconds(ready_timeout_))) + " s";
        break;
      case Outcome::pending:
        // Not looked at since the launch failed: one that has ended meanwhile is listed as such.
        if (const std::optional<int> status = context.process->poll()) {
          context.last_failure = "failed to start (" + describe_wait_status(*status) + ")";
          context.phase = Phase::ended;
          ended_too.push_back(context.launch.context->url);
        } else {
          not_up.push_back(context.launch.context->url);
        }
        break;
    }
  }
  if (!stop) return true;
  if (was_interrupted) std::fprintf(stderr, "daqx-launch: interrupted while the contexts were starting\n");
  // Named, not described (their logs say more): the launch stopped before they answered.
  const auto list = [&](const std::vector<std::string>& urls, const char* what) {
    if (urls.empty()) return;
    std::string listed;
    for (std::size_t i = 0; i < urls.size() && i < kListedNotUp; ++i) listed.append(i == 0 ? "" : ", ").append(urls[i]);
    if (urls.size() > kListedNotUp) listed.append(" and ").append(std::to_string(urls.size() - kListedNotUp)).append(" more");
    std::fprintf(stderr, "daqx-launch: %zu of %zu contexts %s: %s\n", urls.size(), contexts_.size(), what, listed.c_str());
  };
  list(ended_too, "had ended too");
  list(not_up, "had not answered yet");
  return false;
}

void Supervisor::failed(Context& context, const std::string& why) {
  if (before_message_) before_message_();
  context.last_failure = why;
  if (unavailable_.empty()) unavailable_ = engine_.unavailable();
  if (!unavailable_.empty()) {
    std::fprintf(stderr, "daqx-launch: context %s on %s %s, and %s: nothing can be restarted\n",
                 context.launch.context->url.c_str(), context.where.c_str(), why.c_str(), unavailable_.c_str());
    context.phase = Phase::ended;
    return;
  }
  const bool may_restart = context.rule != nullptr &&
                           context.rule->policy == config::LaunchRestartRule::Policy::on_failure &&
                           context.restarts < context.rule->max_restarts;
  if (!may_restart) {
    const std::string not_restarted =
        context.rule == nullptr || context.rule->policy == config::LaunchRestartRule::Policy::never
            ? "its restart policy is never"
            : "it was restarted " + std::to_string(context.restarts) + " times already, the most its rule allows";
    const ExpendableAllowance::Verdict verdict = expendable_.lose(*context.launch.context, why);
    if (verdict.run_goes_on) {
      std::fprintf(stderr, "daqx-launch: %s; %s; %s; log %s:\n%s", expendable_.lost().back().c_str(),
                   not_restarted.c_str(), verdict.message.c_str(), context.launch.log_path.c_str(),
                   log_tail(context.launch.log_path, 8).c_str());
      context.phase = Phase::lost;
      return;
    }
    std::fprintf(stderr, "daqx-launch: context %s on %s %s; %s%s%s; log %s:\n%s", context.launch.context->url.c_str(),
                 context.where.c_str(), why.c_str(), not_restarted.c_str(), verdict.message.empty() ? "" : "; ",
                 verdict.message.c_str(), context.launch.log_path.c_str(), log_tail(context.launch.log_path, 20).c_str());
    context.phase = Phase::ended;
    return;
  }
  const double delay = std::min(context.rule->max_backoff_seconds,
                                context.rule->backoff_seconds * std::pow(2.0, static_cast<double>(context.restarts)));
  std::fprintf(stderr, "daqx-launch: context %s on %s %s; restarting it in %.1f s (restart %u of at most %u); log %s:\n%s",
               context.launch.context->url.c_str(), context.where.c_str(), why.c_str(), delay, context.restarts + 1,
               context.rule->max_restarts, context.launch.log_path.c_str(), log_tail(context.launch.log_path, 8).c_str());
  context.phase = Phase::waiting_restart;
  context.restart_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
}

bool Supervisor::tick() {
  bool healthy = true;
  for (Context& context : contexts_) {
    switch (context.phase) {
      case Phase::starting:
      case Phase::up:
        if (const std::optional<int> status = context.process->poll()) {
          failed(context, (context.phase == Phase::starting ? "died while starting (" : "died (") + describe_wait_status(*status) + ")");
        } else if (context.phase == Phase::starting) {
          const AddressOwner answering = owner(context);
          if (answering.kind == AddressOwner::Kind::another) {
            context.process->kill();
            failed(context, "cannot be brought back: its control address is served by another process, " + answering.who);
          } else if (answering.kind == AddressOwner::Kind::ours) {
            if (before_message_) before_message_();
            std::printf("daqx-launch: %s is back on %s (restart %u)\n", context.launch.context->url.c_str(),
                        context.where.c_str(), context.restarts);
            std::fflush(stdout);
            if (target_ == Target::started || bring_up_(context.launch.context->url, target_)) {
              context.phase = Phase::up;
            } else {
              context.process->kill();
              failed(context, "could not be brought back into the run");
            }
          } else if (Clock::now() - context.since > ready_timeout_) {
            context.process->kill();
            failed(context, "did not answer within " + std::to_string(static_cast<int>(seconds(ready_timeout_))) + " s of its restart");
          }
        }
        break;
      case Phase::waiting_restart:
        if (Clock::now() >= context.restart_at) {
          ++context.restarts;
          try {
            launch(context);
          } catch (const LaunchError& error) {
            failed(context, std::string("cannot be restarted: ") + error.what());
          }
        }
        break;
      case Phase::ended:
      case Phase::lost:
        break;
    }
    if (context.phase == Phase::ended) healthy = false;
  }
  return healthy;
}

bool Supervisor::is_up(const std::string& url) const {
  for (const Context& context : contexts_)
    if (context.launch.context->url == url) return context.phase == Phase::up;
  return false;
}

bool Supervisor::stop_all(std::chrono::seconds grace) {
  for (Context& context : contexts_) {
    context.stopping = true;
    if (context.process && !context.process->poll()) context.process->request_stop();
  }
  const auto deadline = Clock::now() + grace;
  bool all_clean = true;
  for (Context& context : contexts_) {
    if (!context.process) continue;
    while (!context.process->poll() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::optional<int> status = context.process->poll();
    if (!status) {
      std::fprintf(stderr, "daqx-launch: %s on %s did not stop within %lld s: killing it\n", context.launch.context->url.c_str(),
                   context.where.c_str(), static_cast<long long>(grace.count()));
      context.process->kill();
      const auto kill_deadline = Clock::now() + std::chrono::seconds(10);
      while (!context.process->poll() && Clock::now() < kill_deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      all_clean = false;
    } else if (!exited_cleanly(*status) && context.phase != Phase::ended && context.phase != Phase::waiting_restart &&
               context.phase != Phase::lost) {
      std::fprintf(stderr, "daqx-launch: %s on %s ended with %s; log %s:\n%s", context.launch.context->url.c_str(),
                   context.where.c_str(), describe_wait_status(*status).c_str(), context.launch.log_path.c_str(),
                   log_tail(context.launch.log_path, 10).c_str());
      all_clean = false;
    }
    context.process.reset();
  }
  return all_clean;
}

std::vector<Supervisor::Summary> Supervisor::summary() const {
  std::vector<Summary> out;
  for (const Context& context : contexts_)
    out.push_back({context.launch.context->url, context.where, context.restarts, context.last_failure});
  return out;
}

unsigned Supervisor::total_restarts() const {
  unsigned total = 0;
  for (const Context& context : contexts_) total += context.restarts;
  return total;
}

}  // namespace daqx::launch
