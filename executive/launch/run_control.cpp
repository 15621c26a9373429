#include "run_control.hpp"

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "daqx/executive/control_client.hpp"
#include "rate_table.hpp"
#include "run_summary.hpp"

namespace daqx::launch {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

bool transition_one(const std::string& url, const std::string& command, std::optional<std::uint64_t> run) {
  std::string body = "{\"command\":\"" + command + "\"";
  if (run) body += ",\"run\":" + std::to_string(*run);
  body += "}";
  // A stop may drain for a while (the event builder's EvM waits for its builders): a long answer time.
  const HttpReply reply = ControlClient(url, std::chrono::seconds(60)).post("/api/transition", body);
  if (reply.status == 200) return true;
  std::fprintf(stderr, "daqx-launch: %s %s: %s\n", url.c_str(), command.c_str(),
               reply.answered() ? reply.body.c_str() : ("no answer: " + reply.body).c_str());
  return false;
}

bool transition_all(const config::Partition& partition, const std::string& command, bool reverse,
                    std::optional<std::uint64_t> run, const ContextFilter& filter) {
  std::vector<const config::ContextConfig*> order;
  for (const auto& c : partition.contexts)
    if (!filter || filter(c.url)) order.push_back(&c);
  if (reverse) std::reverse(order.begin(), order.end());
  bool ok = true;
  for (const auto* c : order) ok = transition_one(c->url, command, run) && ok;
  return ok;
}

namespace {

// Waits for one context's connections (POST /api/connect?timeout=ms), adds its counts; false when one stays down.
bool wait_connections(const std::string& url, Clock::time_point deadline, std::chrono::seconds limit, std::size_t& up,
                      std::size_t& total) {
  const auto left = std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
  const HttpReply reply = ControlClient(url, std::chrono::milliseconds(left + 5000)).post("/api/connect?timeout=" + std::to_string(left), "{}");
  if (reply.status != 200 && reply.status != 504) {
    std::fprintf(stderr, "daqx-launch: %s connect: %s\n", url.c_str(),
                 reply.answered() ? reply.body.c_str() : ("no answer: " + reply.body).c_str());
    return false;
  }
  try {
    Poco::JSON::Object::Ptr result = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Object::Ptr>();
    up += result->getValue<std::size_t>("up");
    total += result->getValue<std::size_t>("total");
    Poco::JSON::Array::Ptr down = result->getArray("down");
    for (std::size_t i = 0; down && i < down->size(); ++i) {
      Poco::JSON::Object::Ptr entry = down->getObject(static_cast<unsigned>(i));
      std::fprintf(stderr, "daqx-launch: %s: connection to %s (%s) not up within %llds\n", url.c_str(),
                   entry->getValue<std::string>("remote").c_str(), entry->getValue<std::string>("protocol").c_str(),
                   static_cast<long long>(limit.count()));
    }
  } catch (const Poco::Exception& error) {
    std::fprintf(stderr, "daqx-launch: %s connect: unreadable answer: %s\n", url.c_str(), error.displayText().c_str());
    return false;
  }
  return reply.status == 200;
}

}  // namespace

// --connect: every context opens its outgoing connections, all first without waiting so that they come up
// together, then each waits for its own within what is left of `limit`. False when one stays down.
bool connect_all(const config::Partition& partition, std::chrono::seconds limit) {
  const auto started = Clock::now();
  const auto deadline = started + limit;
  for (const auto& c : partition.contexts) ControlClient(c.url, std::chrono::seconds(10)).post("/api/connect?timeout=0", "{}");
  bool ok = true;
  std::size_t up = 0, total = 0;
  for (const auto& c : partition.contexts) ok = wait_connections(c.url, deadline, limit, up, total) && ok;
  std::printf("daqx-launch: %zu/%zu connections up in %.2f s\n", up, total,
              std::chrono::duration<double>(Clock::now() - started).count());
  std::fflush(stdout);
  return ok;
}

bool connect_one(const std::string& url, std::chrono::seconds limit) {
  std::size_t up = 0, total = 0;
  return wait_connections(url, Clock::now() + limit, limit, up, total);
}

RunDisplay::RunDisplay(const config::Partition& partition, ContextPoller& poller, double planned_seconds,
                       std::uint64_t run, const ExpendableAllowance* lost)
    : partition_(partition),
      poller_(poller),
      planned_seconds_(planned_seconds),
      run_(run),
      lost_(lost),
      view_(stdout, console::LiveView::mode_for(stdout)) {}

std::vector<console::ContextSample> RunDisplay::poll(const ContextFilter& filter) const {
  std::vector<std::string> asked;
  for (const auto& c : partition_.contexts)
    if (!filter || filter(c.url)) asked.push_back(c.url);
  std::vector<console::ContextSample> answers = console::poll_contexts(poller_, asked, std::chrono::seconds(3));
  // In partition order, with the contexts between restarts or lost in their place.
  std::vector<console::ContextSample> samples;
  auto answer = answers.begin();
  for (const auto& c : partition_.contexts) {
    if (!filter || filter(c.url)) {
      samples.push_back(std::move(*answer++));
      continue;
    }
    console::ContextSample restarting;
    restarting.url = c.url;
    restarting.down_state = "restarting";
    if (const std::string* why = lost_ != nullptr ? lost_->lost_because(c.url) : nullptr) {
      restarting.down_state = console::kLostState;
      restarting.error = *why;
    }
    samples.push_back(std::move(restarting));
  }
  return samples;
}

bool RunDisplay::sample(double elapsed, const ContextFilter& filter) {
  const std::vector<console::ContextSample> samples = poll(filter);
  const std::vector<console::UnitRates> units = rates_.update(samples);
  const bool terminal = view_.mode() == console::LiveView::Mode::in_place;
  const std::string when = console::elapsed_of(elapsed, planned_seconds_);
  // Plain lines start with the time, right-aligned so that "9.0 / 20 s" and "10.0 / 20 s" line up.
  const std::string prefix = std::string(when.size() < 12 ? 12 - when.size() : 0, ' ') + when + "  ";
  view_.show(console::unit_table(units, terminal ? console::Layout::terminal : console::Layout::plain,
                                 "run " + std::to_string(run_) + "  " + when + "  partition " + partition_.name, prefix));
  bool healthy = true;
  for (const console::ContextSample& context : samples) {
    int& missed = missed_[context.url];
    if (context.answered || context.down_state == "restarting" || context.down_state == console::kLostState) {
      missed = 0;
      continue;
    }
    ++missed;
    std::fprintf(stderr, "daqx-launch: %s does not answer (%d of %d samples): %s\n", context.url.c_str(), missed,
                 kMissedSamples, context.error.c_str());
    if (missed >= kMissedSamples) healthy = false;
  }
  for (const console::UnitRates& unit : units) {
    if (unit.state != "Failed") continue;
    std::fprintf(stderr, "daqx-launch: %s on %s Failed: %s\n", unit.name.c_str(), unit.context.c_str(), unit.reason.c_str());
    healthy = false;
  }
  return healthy;
}

void RunDisplay::summary(double enabled_seconds, const std::string& counters_path, const ContextFilter& filter) {
  const std::vector<console::ContextSample> samples = poll(filter);
  rates_.update(samples);  // the last counts, after stop drained the run
  std::printf("daqx-launch: summary of run %llu\n", static_cast<unsigned long long>(run_));
  for (const std::string& line : console::run_summary(rates_.totals(), samples, enabled_seconds, run_))
    std::printf("  %s\n", line.c_str());
  if (console::write_counters(counters_path, samples, run_))
    std::printf("daqx-launch: every counter at the end of run %llu: %s\n", static_cast<unsigned long long>(run_),
                counters_path.c_str());
  else
    std::fprintf(stderr, "daqx-launch: cannot write %s\n", counters_path.c_str());
  std::fflush(stdout);
}

}  // namespace daqx::launch
