// Starting, driving and reading an event builder spread over executives, one per unit.
#include "evb_run.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "executive_metrics.hpp"

namespace daqx::test {

EvbRun::EvbRun(const TransportProfile& profile, const std::string& name, int rus, int bus,
               const PartitionProperties& evm_properties, const PartitionProperties& ru_properties,
               const PartitionProperties& bu_properties, const PartitionProperties& endpoint_properties,
               const std::vector<EvbUnit>& others)
    : profile_(profile), endpoint_properties_(endpoint_properties) {
  for (int j = 0; j < bus; ++j) units_.push_back({"evb::BU", bu(j), j, bu_properties});
  units_.insert(units_.end(), others.begin(), others.end());
  for (int i = 0; i < rus; ++i) units_.push_back({"evb::RU", ru(i), i, ru_properties});
  units_.push_back({"evb::EvM", kEvm, 0, evm_properties});
  PartitionBuilder partition(name);
  for (const EvbUnit& u : units_) add_context(partition, u);
  path_ = write_file(name + ".xml", partition.xml());
  for (const EvbUnit& u : units_) start(u.tid);
  for (const EvbUnit& u : units_) {
    const bool ready = process(u.tid).wait_ready();
    INFO("unit " << u.tid << ":\n" << process(u.tid).output());
    REQUIRE(ready);
  }
}

void EvbRun::add_context(PartitionBuilder& partition, const EvbUnit& u) const {
  ContextBuilder context = partition.context(u.url());
  profile_.add_endpoint(context, u.data, Traffic::throughput).properties(endpoint_properties_);
  context.module(profile_.module).module("libdaqx_evb.so");
  context.application(u.cls, u.tid, static_cast<std::uint32_t>(u.instance), "data").properties(u.properties);
}

void EvbRun::start(std::uint32_t tid) { processes_[tid] = std::make_unique<ExecutiveProcess>(path_, unit(tid).url()); }

const EvbUnit& EvbRun::unit(std::uint32_t tid) const {
  for (const EvbUnit& u : units_)
    if (u.tid == tid) return u;
  throw std::out_of_range("no unit " + std::to_string(tid));
}

std::vector<std::uint32_t> EvbRun::tids() const {
  std::vector<std::uint32_t> all;
  for (const EvbUnit& u : units_) all.push_back(u.tid);
  return all;
}

void EvbRun::bring_up(std::uint32_t tid) {
  REQUIRE(process(tid).transition("configure").status == 200);
  REQUIRE(process(tid).transition("enable").status == 200);
}

void EvbRun::start_run() {
  for (std::uint32_t tid : tids()) REQUIRE(process(tid).transition("configure").status == 200);
  for (std::uint32_t tid : tids()) REQUIRE(process(tid).transition("enable").status == 200);
}

void EvbRun::stop_run(const std::vector<std::uint32_t>& skip) {
  std::vector<std::uint32_t> order = tids();
  std::reverse(order.begin(), order.end());
  for (std::uint32_t tid : order)
    if (std::find(skip.begin(), skip.end(), tid) == skip.end()) process(tid).transition("stop");
}

void EvbRun::finish() {
  for (auto& [tid, p] : processes_)
    if (p->running()) {
      INFO("unit " << tid << ":\n" << p->output());
      CHECK(p->stop() == 0);
    }
}

void EvbRun::require_progress(std::uint32_t tid, const std::string& name, double target) {
  const ExecutiveProcess::Progress progress = process(tid).wait_progress(tid, name, target);
  // The course of the counter, also when it arrives: a run on a busy machine shows whether it was slow or stuck.
  std::printf("progress of unit %u %s: %s\n", tid, name.c_str(), progress.trace.c_str());
  INFO("unit " << tid << " " << name << " after " << progress.seconds << " s: " << progress.trace << "\n"
                << process(tid).output());
  const std::string units = progress.reached ? std::string() : picture();
  INFO("every unit when it failed:\n" << units);
  REQUIRE(progress.reached);
}

double EvbRun::sum(const std::vector<std::uint32_t>& units, const std::string& name) {
  double total = 0;
  for (std::uint32_t tid : units) total += metric(tid, name);
  return total;
}

std::string EvbRun::state(std::uint32_t tid) {
  Poco::JSON::Object::Ptr app = process(tid).application(tid);
  return app ? app->getValue<std::string>("state") : std::string("unreachable");
}

std::string EvbRun::reason(std::uint32_t tid) {
  Poco::JSON::Object::Ptr app = process(tid).application(tid);
  return app && app->has("reason") ? app->getValue<std::string>("reason") : std::string();
}

bool EvbRun::wait_state(std::uint32_t tid, const std::string& wanted, std::chrono::seconds limit) {
  const bool reached = wait_until([&] { return state(tid) == wanted; }, limit);
  if (!reached) std::printf("unit %u not %s after %lld s; every unit:\n%s", tid, wanted.c_str(),
                            static_cast<long long>(limit.count()), picture().c_str());
  return reached;
}

std::string EvbRun::picture() {
  std::string text;
  for (auto& [tid, p] : processes_) {
    text.append("== unit ").append(std::to_string(tid));
    if (!p->running()) {
      text.append(": not running\n");
      continue;
    }
    text.append(": ").append(state(tid));
    const std::string why = reason(tid);
    if (!why.empty()) text.append(" (").append(why).append(")");
    text.append("\n");
    const HttpReply metrics = p->get("/metrics");
    std::size_t at = 0;
    while (at < metrics.body.size()) {
      std::size_t end = metrics.body.find('\n', at);
      if (end == std::string::npos) end = metrics.body.size();
      const std::string line = metrics.body.substr(at, end - at);
      at = end + 1;
      // Samples only, and only those that say something: "name{labels} value" with a value other than 0.
      if (line.empty() || line[0] == '#' || line.ends_with(" 0")) continue;
      text.append("  ").append(line).append("\n");
    }
  }
  return text;
}

double EvbRun::pool_blocks(std::uint32_t tid, const std::string& pool) { return pool_blocks_used(process(tid), pool); }

bool EvbRun::pool_empty(std::uint32_t tid, const std::string& pool) {
  if (wait_until([&] { return pool_blocks(tid, pool) == 0; }, std::chrono::seconds(10))) return true;
  std::printf("unit %u: %.0f blocks of its pool '%s' still in use after 10 s\n", tid, pool_blocks(tid, pool),
              pool.c_str());
  return false;
}

bool EvbRun::receive_pool_at_rest(std::uint32_t tid) {
  return wait_until([&] {
    return pool_blocks(tid, profile_.receive_pool) == receive_blocks_at_rest(process(tid), profile_);
  }, std::chrono::seconds(10));
}

}  // namespace daqx::test
