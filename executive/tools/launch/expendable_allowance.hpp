// Which contexts the run may lose and still go on. The partition's <Launch><Expendable> rules say how many
// applications of a class may be lost; a context that has ended for good (no restart rule, or its restarts used
// up) is lost within them when each of its applications is of such a class and no class goes past its
// allowance. What was lost is kept for the live table, the summary and the final report.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daqx/executive/partition.hpp"

namespace daqx::launch {

class ExpendableAllowance {
 public:
  explicit ExpendableAllowance(const config::LaunchConfig& rules) : rules_(rules) {}

  struct Verdict {
    bool run_goes_on = false;
    // Going on: "1 evb::BU lost, 2 allowed: the run goes on" (and lost() ends with what was lost).
    // Not: why the allowance does not cover it ("3 evb::BU lost, 2 allowed by the partition's <Expendable> at
    // p.xml:12"); empty when the partition has no <Expendable> rule at all.
    std::string message;
  };
  // `context` ended for good, for `why` ("died (killed by signal 9 (Killed))").
  Verdict lose(const config::ContextConfig& context, const std::string& why);

  // Why the context was lost, or null when it was not.
  const std::string* lost_because(const std::string& url) const;
  // One "lost: evb::BU 203, ... (context URL, why)" per lost context, in the order they were lost.
  const std::vector<std::string>& lost() const { return lost_lines_; }

 private:
  const config::LaunchConfig& rules_;
  std::map<std::string, std::uint32_t> lost_per_class_;  // applications lost so far, by class
  std::map<std::string, std::string> lost_contexts_;     // url -> why
  std::vector<std::string> lost_lines_;
};

}  // namespace daqx::launch
