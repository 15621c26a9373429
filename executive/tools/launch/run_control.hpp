// Watching a partition the launcher drives (its transitions: partition_drive.hpp): what it shows of the run, its
// table of rates and summary.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daqx/control/context_poller.hpp"
#include "daqx/executive/partition.hpp"
#include "expendable_allowance.hpp"
#include "live_view.hpp"
#include "partition_poll.hpp"
#include "unit_rates.hpp"

namespace daqx::launch {

// Which contexts take part (the others are dead or between restarts); all when empty.
using ContextFilter = std::function<bool(const std::string& url)>;

// What --drive shows while the run goes and at its end: a table of every unit with its state and rates and the
// totals per kind (redrawn in place on a terminal, plain lines otherwise; folded to the totals and the units that
// need attention in a large partition), then the run's summary. Each sample is one GET /api/summary per context
// over `poller`'s fixed threads.
class RunDisplay {
 public:
  // `planned_seconds`: the --run time, shown as "elapsed / planned"; 0 when the run goes until stopped.
  // `lost`: the contexts the run has lost within the partition's allowance (shown as lost), if any.
  RunDisplay(const config::Partition& partition, ContextPoller& poller, double planned_seconds, std::uint64_t run,
             const ExpendableAllowance* lost = nullptr);

  // Reads every context that `filter` lets through (the others show as lost or restarting) and shows the table.
  // False, with the reason on stderr, when an application is Failed, a context that should answer (not lost,
  // not restarting) has not answered kMissedSamples samples in a row, or one has been driven outside this
  // launcher (an application no longer Enabled in this run, and not Failed: driven_elsewhere()).
  bool sample(double elapsed, const ContextFilter& filter = {});
  // The contexts found driven outside this launcher so far, each once, in the order found.
  const std::vector<std::string>& driven_elsewhere() const { return driven_elsewhere_; }

  // Takes a table drawn in place off the terminal, so that a message printed next stays readable.
  void before_message() { view_.erase(); }

  // After stop: the final counts, the summary (per unit and per kind) and every counter into `counters_path`.
  void summary(double enabled_seconds, const std::string& counters_path, const ContextFilter& filter = {});

 private:
  std::vector<console::ContextSample> poll(const ContextFilter& filter) const;

  const config::Partition& partition_;
  ContextPoller& poller_;
  double planned_seconds_;
  std::uint64_t run_;
  const ExpendableAllowance* lost_;
  console::RateTracker rates_;
  console::LiveView view_;
  // A context killed (or whose node went down) stops answering before its engine reports its end (srun tells of
  // a task's death a few seconds late on a loaded node): ending the run at the first silent sample would beat its
  // restart rule to it. One that stays silent this many samples (each waits up to 3 s) is hung: the run ends.
  static constexpr int kMissedSamples = 3;
  std::map<std::string, int> missed_;  // url -> samples in a row it did not answer
  std::vector<std::string> driven_elsewhere_;
};

}  // namespace daqx::launch
