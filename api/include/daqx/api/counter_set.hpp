// A set of counters declared once: each member names itself, its help and its kind where it is declared, and the
// set gives reset, snapshot and report from that one declaration, so that no counter is named again in a reset
// list, a copy or a report body.
//
//   struct ReceiverCounters : daqx::CounterSet {
//     daqx::Counter frames_received{*this, "frames_received", "data frames received"};
//     daqx::Counter senders{*this, "senders", "senders heard from", daqx::Metric::Kind::gauge};
//   };
//   counters.frames_received.add();   counters.reset();   counters.report(sink);
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "daqx/api/counters.hpp"

namespace daqx {

class CounterSet;

// One value of a set, updated with relaxed atomics by whichever thread did the work and read by the reporter.
class Counter {
 public:
  // `name` and `help` must outlive the counter (string literals): they are kept, not copied.
  Counter(CounterSet& set, std::string_view name, std::string_view help, Metric::Kind kind = Metric::Kind::counter);
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // From any thread.
  void add(std::uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  // Only from the one thread that writes this counter: no locked instruction on the hot path.
  void add_single_writer(std::uint64_t n = 1) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // A gauge that goes down too (any thread).
  void sub(std::uint64_t n = 1) noexcept { value_.fetch_sub(n, std::memory_order_relaxed); }
  void set(std::uint64_t value) noexcept { value_.store(value, std::memory_order_relaxed); }
  std::uint64_t exchange(std::uint64_t value) noexcept { return value_.exchange(value, std::memory_order_relaxed); }
  // A high-water mark: raised to `value` if that is higher (any thread).
  void raise_to(std::uint64_t value) noexcept;
  std::uint64_t load() const noexcept { return value_.load(std::memory_order_relaxed); }

  std::string_view name() const noexcept { return name_; }
  std::string_view help() const noexcept { return help_; }
  Metric::Kind kind() const noexcept { return kind_; }

 private:
  std::atomic<std::uint64_t> value_{0};
  std::string_view name_;
  std::string_view help_;
  Metric::Kind kind_;
};

// The values of a set at one moment, in declaration order; added up for totals (closed connections, past runs).
struct CounterValues {
  std::vector<std::uint64_t> values;

  CounterValues& operator+=(const CounterValues& other);
};

// Derive from it and declare the counters as members (see above). Not copyable or movable: each member
// registers itself with the set that holds it.
class CounterSet {
 public:
  CounterSet() = default;
  CounterSet(const CounterSet&) = delete;
  CounterSet& operator=(const CounterSet&) = delete;

  void reset() noexcept;  // every member to 0
  CounterValues snapshot() const;
  // Each member as a metric of its kind, with its name and help (and `labels` on each).
  void report(MetricSink& sink, const MetricLabels& labels = {}) const;
  // Values taken earlier (a snapshot, or a sum of them) reported with this set's names, kinds and help.
  void report_values(MetricSink& sink, const CounterValues& values, const MetricLabels& labels = {}) const;

  std::size_t size() const noexcept { return counters_.size(); }
  // Where `member` is in a snapshot of this set (a member of another set: size()).
  std::size_t index(const Counter& member) const noexcept;
  const Counter& operator[](std::size_t index) const noexcept { return *counters_[index]; }

 private:
  friend class Counter;
  std::vector<Counter*> counters_;  // in declaration order
};

}  // namespace daqx
