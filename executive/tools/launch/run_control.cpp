#include "run_control.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "rate_table.hpp"
#include "run_summary.hpp"

namespace daqx::launch {

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
  // The launcher enabled every application of these contexts in this run: one found otherwise (and not Failed,
  // which is the application's own doing) was driven by someone else, e.g. another launcher or daqxctl.
  for (const console::ContextSample& context : samples) {
    if (!context.answered) continue;
    for (const console::UnitSample& unit : context.units) {
      if ((unit.state == "Enabled" && context.run == run_) || unit.state == "Failed") continue;
      if (std::find(driven_elsewhere_.begin(), driven_elsewhere_.end(), context.url) == driven_elsewhere_.end()) {
        driven_elsewhere_.push_back(context.url);
        const std::string in_run = context.run == 0 ? "no run" : "run " + std::to_string(context.run);
        std::fprintf(stderr, "daqx-launch: %s was driven outside this launcher: %s is %s in %s, where this launcher "
                             "enabled it in run %llu\n", context.url.c_str(), unit.name.c_str(), unit.state.c_str(),
                     in_run.c_str(), static_cast<unsigned long long>(run_));
      }
      healthy = false;
      break;
    }
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
