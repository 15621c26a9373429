// evb::Monitor (monitor.hpp): parameters, the subscription's life, and the checks of each event.
#include "monitor/monitor.hpp"

#include <stdexcept>

#include "common/dispatch.hpp"
#include "daqx/apps/text.hpp"
#include "daqx/evb/consumer.hpp"
#include "files/event_file_reader.hpp"
#include "files/event_record_check.hpp"

namespace daqx::evb::monitor {
using apps::checked_by;
using apps::concatenate;
using apps::param;

namespace {
constexpr std::uint32_t kMaxProblemsLogged = 20;  // the first problems go to the log; all are counted

// The policy's text is refused where it is set (partition, parameters API), with parse_policy's reason (which
// names the policy).
std::string check_policy(const ParamSet& p) {
  const streams::ParsedPolicy parsed = streams::parse_policy(p.string("policy"));
  return parsed.policy ? std::string() : parsed.error;
}

std::string check_stream(const ParamSet& p) {
  const std::string problem = streams::check_stream_name(p.string("stream"));
  return problem.empty() ? problem : concatenate({"stream: ", problem});
}
}  // namespace

std::vector<ParamSpec> Monitor::parameters() {
  return {
      // It sends the publisher its subscribe and acknowledgements: a connection is planned there. The events
      // come back over a connection the publisher opens at its first send (no parameter of the BU names us).
      param("publisher", ParamType::applications, "class:evb::BU", "",
            "the application whose stream this monitor subscribes to (exactly one, e.g. a BU's id)"),
      checked_by(param("stream", ParamType::string, "events", "", "the publisher's stream"), check_stream),
      checked_by(param("policy", ParamType::string, "sample:100", "",
                       "how the publisher treats this subscriber: block, drop-newest, drop-oldest, keep-last, "
                       "sample:N, rate:R, sample:N/rate:R, each optionally with ,depth:D"),
                 check_policy),
      param("verify", ParamType::boolean, "true", "",
            "check each event's record and its test-mode super-fragments as daqx-evb-dump --verify does"),
  };
}

Monitor::Monitor(ApplicationContext& context)
    : Application(context), subscriber_(context, [this](const streams::StreamEvent& e) { on_event(e); }) {}

void Monitor::configure() {
  const ParamSet& p = context().params();
  publisher_ = exactly_one(p, "publisher");
  stream_ = p.string("stream");
  policy_ = *streams::parse_policy(p.string("policy")).policy;  // checked when it was set
  verify_ = p.boolean("verify");
}

void Monitor::enable() {
  run_on_dispatch(context(), [this] {
    run_counters_.reset();
    subscription_ = sequence_ = dropped_ = 0;
    problems_logged_ = 0;
    subscriber_.subscribe(publisher_, stream_, policy_);
  });
}

void Monitor::stop() {
  run_on_dispatch(context(), [this] { subscriber_.unsubscribe_all(); });
}

void Monitor::halt() {
  run_on_dispatch(context(), [this] { subscriber_.unsubscribe_all(); });
}

void Monitor::on_event(const streams::StreamEvent& e) {
  if (e.subscription != subscription_) {  // a new subscription numbers its records and its drops from the start
    subscription_ = e.subscription;
    sequence_ = 0;
    dropped_ = 0;
    run_counters_.subscriptions.add_single_writer();
  }
  if (e.sequence > sequence_ + 1) run_counters_.gaps.add_single_writer(e.sequence - sequence_ - 1);
  if (e.sequence > sequence_) sequence_ = e.sequence;
  if (e.dropped > dropped_) {
    run_counters_.dropped.add_single_writer(e.dropped - dropped_);
    dropped_ = e.dropped;
  }
  run_counters_.events.add_single_writer();
  run_counters_.bytes.add_single_writer(e.bytes ? e.bytes.total_size() : 0);
  run_counters_.last_event.set(e.key);
  if (!verify_) return;
  if (std::string problem = check(e); !problem.empty()) {
    run_counters_.verify_failures.add_single_writer();
    if (problems_logged_++ < kMaxProblemsLogged)
      context().log(LogLevel::error, concatenate({"stream ", stream_, " of ", std::to_string(publisher_), ": ", problem}));
  }
}

std::string Monitor::check(const streams::StreamEvent& e) {
  if (!e.bytes) return concatenate({"event ", std::to_string(e.key), ": no bytes"});
  // The record is parsed in one piece: an event that came as a chain (views of a BU's blocks in the same
  // context, or a transport's blocks) is gathered first. A monitor's copy, never the publisher's.
  std::span<const std::byte> bytes = e.bytes.bytes();
  if (e.bytes.head()->next() != nullptr) {
    contiguous_.clear();
    for (const mem::Block* b = e.bytes.head(); b != nullptr; b = b->next())
      contiguous_.insert(contiguous_.end(), b->data(), b->data() + b->size());
    bytes = contiguous_;
  }
  EventFileRecord record;
  if (std::string problem = parse_event_record(bytes, 0, record); !problem.empty()) return problem;
  if (record.bytes != bytes.size()) {
    return concatenate({"event ", std::to_string(record.event), ": a record of ", std::to_string(record.bytes),
                        " bytes in an event of ", std::to_string(bytes.size())});
  }
  if (record.event != e.key)
    return concatenate({"event ", std::to_string(record.event), " sent with key ", std::to_string(e.key)});
  if (record.flags & event_flags::corrupt) run_counters_.corrupt.add_single_writer();
  const RecordVerdict verdict = verify_event_record(record);
  // An event its BU flagged corrupt is streamed as built, faithfully: counted as such, not as a failure here.
  if (!verdict.ok() && !verdict.flagged) return verdict.problems.front();
  return {};
}

void Monitor::report(MetricSink& sink) const {
  run_counters_.report(sink);
  subscriber_.report(sink);
}

}  // namespace daqx::evb::monitor
