// daqx-launch's transitions and connect step over the shared fan-out, each context's failure named on stderr.
#include "partition_drive.hpp"

#include <cstdio>
#include <vector>

#include "daqx/control/partition_connect.hpp"
#include "daqx/control/partition_transition.hpp"

namespace daqx::launch {
namespace {

// Connection requests that ask a context to open without waiting must be answered at once: this is ample.
constexpr auto kAskDeadline = std::chrono::seconds(10);

bool report(const TransitionOutcome& outcome, bool total) {
  for (const std::string& line : outcome.failure_lines()) std::fprintf(stderr, "daqx-launch: %s\n", line.c_str());
  if (total) {
    std::printf("daqx-launch: %s\n", outcome.total_line().c_str());
    std::fflush(stdout);
  }
  return outcome.ok();
}

// The connections one context has not up, and the answer of one that refused or did not answer; false for either.
bool report(const ContextConnections& context, std::chrono::seconds limit) {
  if (!context.answered()) {
    std::fprintf(stderr, "daqx-launch: %s connect: no answer: %s\n", context.url.c_str(), context.error.c_str());
    return false;
  }
  if (!context.error.empty()) {
    std::fprintf(stderr, "daqx-launch: %s connect: refused (%d): %s\n", context.url.c_str(), context.status,
                 context.error.c_str());
    return false;
  }
  for (const DownConnection& down : context.down)
    std::fprintf(stderr, "daqx-launch: %s: connection to %s (%s) not up within %llds\n", context.url.c_str(),
                 down.remote.c_str(), down.protocol.c_str(), static_cast<long long>(limit.count()));
  return context.all_up();
}

}  // namespace

bool transition_one(const std::string& url, const std::string& command, const DriveSettings& settings,
                    ControlRequestPool& pool, std::optional<std::uint64_t> run) {
  return report(
      run_transition({{url}}, TransitionRequest{.command = command, .run = run, .deadline = settings.deadline}, pool),
      false);
}

bool transition_all(const config::Partition& partition, const std::string& command, const DriveSettings& settings,
                    ControlRequestPool& pool, std::optional<std::uint64_t> run, const ContextFilter& filter,
                    std::vector<std::string>* driven_elsewhere) {
  const TransitionOutcome outcome = run_transition(
      transition_phases(partition, filter), TransitionRequest{.command = command, .run = run, .deadline = settings.deadline}, pool);
  if (driven_elsewhere != nullptr)
    for (const ContextOutcome& context : outcome.contexts)
      if (context.result == ContextOutcome::Result::refused && context.status == 409 &&
          context.states.find(":Failed") == std::string::npos)
        driven_elsewhere->push_back(context.url);
  return report(outcome, true);
}

bool connect_all(const config::Partition& partition, std::chrono::seconds limit, ControlRequestPool& pool) {
  std::vector<std::string> urls;
  for (const config::ContextConfig& context : partition.contexts) urls.push_back(context.url);
  const auto started = std::chrono::steady_clock::now();
  bool ok = true;
  std::size_t up = 0, total = 0;
  for (const ContextConnections& context : connect_contexts(urls, limit, pool, kAskDeadline)) {
    ok = report(context, limit) && ok;
    up += context.up;
    total += context.total;
  }
  std::printf("daqx-launch: %zu/%zu connections up in %.2f s\n", up, total,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  std::fflush(stdout);
  return ok;
}

bool connect_one(const std::string& url, std::chrono::seconds limit, ControlRequestPool& pool) {
  return report(connect_contexts({url}, limit, pool, kAskDeadline).front(), limit);
}

}  // namespace daqx::launch
