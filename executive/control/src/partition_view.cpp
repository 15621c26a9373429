// PartitionView: one thread that, while the view is watched, asks every context for GET /api/summary over a
// ContextPoller (a bounded number of requests in flight over its pool's few threads, each bounded by a short
// timeout), turns counters into rates, and keeps the merged picture.
#include "daqx/control/partition_view.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include "control_routes.hpp"
#include "daqx/control/context_summary.hpp"
#include "daqx/control/headline_counters.hpp"
#include "partition_snapshot.hpp"

namespace daqx {
namespace {

using Clock = std::chrono::steady_clock;
using Poco::JSON::Object;
using http::ApplicationSnapshot;
using http::ContextSnapshot;
using http::PoolSnapshot;
using http::SubscriptionSnapshot;
using http::TransportSnapshot;

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A counter's name without the "_total" Prometheus convention may add, so the headlines below find it either way.
std::string base_name(std::string name) {
  if (name.ends_with("_total")) name.resize(name.size() - 6);
  return name;
}

// What one context answered, read; or why it did not.
struct Answer {
  ContextSnapshot::Status status = ContextSnapshot::Status::up;
  std::string reason;
  ContextSummary summary;
};

// A reply of GET /api/summary as an Answer: unreachable without an answer, refused with an error or a document
// that is not the summary.
Answer answer_of(int status, const std::string& body) {
  Answer answer;
  if (status == 0) {
    answer.status = ContextSnapshot::Status::unreachable;
    answer.reason = body.empty() ? std::string("no answer") : body;
    return answer;
  }
  if (status != 200) {
    answer.status = ContextSnapshot::Status::refused;
    std::string text = body.substr(0, 300);
    try {  // an /api error is {"error": "..."}: its text reads better than the document
      Poco::JSON::Parser parser;
      const Object::Ptr error = parser.parse(body).extract<Object::Ptr>();
      if (error && error->has("error")) text = error->getValue<std::string>("error");
    } catch (...) {
    }
    answer.reason = "HTTP " + std::to_string(status) + " for /api/summary: " + text;
    return answer;
  }
  try {
    answer.summary = parse_context_summary(body);
  } catch (const std::exception& error) {
    answer.status = ContextSnapshot::Status::refused;
    answer.reason = error.what();
  }
  return answer;
}

}  // namespace

struct PartitionView::Impl {
  struct ContextState {  // the poller's own, per context: the counters of the last answer, for rates
    std::unordered_map<std::string, double> counters;
    Clock::time_point sampled_at{};
    bool sampled = false;
    std::uint64_t run = 0;
  };

  Impl(const config::Partition& partition_in, ControlAccess access_in, PartitionViewOptions options_in)
      : partition(partition_in), access(std::move(access_in)), options(options_in) {
    if (options.max_parallel == 0) options.max_parallel = 1;
    snapshot.partition = partition.name;
    snapshot.interval_seconds = std::chrono::duration<double>(options.interval).count();
    for (const config::ContextConfig& context : partition.contexts) {
      states.emplace_back();
      snapshot.contexts.push_back(configured(context));
    }
    merge(snapshot);
  }

  // What the partition says a context holds, before it answers (and while it does not).
  static ContextSnapshot configured(const config::ContextConfig& context) {
    ContextSnapshot view;
    view.url = context.url;
    for (const config::ApplicationConfig& application : context.applications) {
      ApplicationSnapshot app;
      app.tid = application.id;
      app.class_name = application.class_name;
      app.instance = application.instance;
      view.applications.push_back(std::move(app));
    }
    return view;
  }

  // This executive itself, through the same route as over HTTP.
  Answer ask_local() const {
    http::Request request;
    request.method = "GET";
    request.target = "/api/summary";
    static const http::AccessCheck open;
    const http::Reply reply = http::handle_request(*local, request, open);
    return answer_of(reply.status, reply.body);
  }

  // The rate of a counter since the last answer; kNoRate on the first or after a reset (a restarted context).
  static double rate(const ContextState& before, std::unordered_map<std::string, double>& now, const std::string& key,
                     double value, double seconds) {
    now[key] = value;
    const auto found = before.counters.find(key);
    if (found == before.counters.end() || seconds <= 0 || value < found->second) return http::kNoRate;
    return (value - found->second) / seconds;
  }

  // Rates of every counter of `counters`, under `prefix` in the state's counters.
  static std::vector<std::pair<std::string, double>> counter_rates(const std::map<std::string, double>& counters,
                                                                   const std::string& prefix, const ContextState& state,
                                                                   std::unordered_map<std::string, double>& now,
                                                                   double seconds) {
    std::vector<std::pair<std::string, double>> rates;
    rates.reserve(counters.size());
    for (const auto& [counter, value] : counters) {
      if (std::isnan(value)) continue;
      const std::string name = base_name(counter);
      rates.emplace_back(name, rate(state, now, prefix + name, value, seconds));
    }
    return rates;
  }

  static double pick(const std::vector<std::pair<std::string, double>>& rates, const auto& names) {
    for (const auto& name : names)
      for (const auto& [counter, value] : rates)
        if (counter == counter_name(name)) return value;
    return http::kNoRate;
  }

  static double rate_of(const std::map<std::string, double>& counters, const char* name, const std::string& prefix,
                        const ContextState& state, std::unordered_map<std::string, double>& now, double seconds) {
    const auto found = counters.find(name);
    if (found == counters.end()) return http::kNoRate;
    return rate(state, now, prefix + name, found->second, seconds);
  }

  static double value_of(const std::map<std::string, double>& values, const char* name) {
    const auto found = values.find(name);
    return found == values.end() || std::isnan(found->second) ? 0 : found->second;
  }

  // The new picture of context `index` from its answer; `state` keeps the counters for the next rates.
  ContextSnapshot update(std::size_t index, const Answer& answer, const ContextSnapshot& before, ContextState& state,
                         Clock::time_point when) const {
    if (answer.status != ContextSnapshot::Status::up) {
      // Who it held stays on the page; what it no longer tells (states, rates, pools, links) does not.
      ContextSnapshot view = before;
      for (ApplicationSnapshot& app : view.applications) {
        app.state = "Unknown";
        app.reason.clear();
        app.events_per_second = app.bytes_per_second = http::kNoRate;
        app.rates.clear();
        app.subscriptions.clear();
        app.subscriptions_total = 0;
      }
      view.transports.clear();
      view.pools.clear();
      view.run = 0;
      view.run_seconds = view.uptime_seconds = http::kNoRate;
      view.status = answer.status;
      view.reason = answer.reason;
      state.sampled = false;  // rates start again when it is back (it may have restarted)
      return view;
    }
    const ContextSummary& summary = answer.summary;
    ContextSnapshot view;
    view.url = partition.contexts[index].url;
    view.status = ContextSnapshot::Status::up;
    view.last_seen_ms = unix_ms();
    // No rate over a gap (the view was idle, or the context slow to answer): it would be an average, not now.
    const bool recent = state.sampled && when - state.sampled_at <= 5 * std::max(options.interval, options.timeout);
    const double seconds = recent ? std::chrono::duration<double>(when - state.sampled_at).count() : 0;
    std::unordered_map<std::string, double> counters;
    view.run = summary.run;
    view.run_seconds = summary.run_seconds;
    view.uptime_seconds = summary.uptime_seconds;

    for (const UnitSummary& unit : summary.units) {
      ApplicationSnapshot app;
      app.tid = unit.tid;
      app.class_name = unit.class_name;
      app.instance = unit.instance;
      app.name = unit.name;
      app.state = unit.state;
      app.reason = unit.reason;
      app.run = unit.run;
      app.rates = counter_rates(unit.counters, "app/" + std::to_string(app.tid) + "/", state, counters, seconds);
      app.events_per_second = pick(app.rates, kHeadlineItemCounters);
      app.bytes_per_second = pick(app.rates, kHeadlineByteCounters);
      for (const SubscriptionSummary& subscription : unit.subscriptions) {
        SubscriptionSnapshot row;
        row.stream = subscription.stream;
        row.subscriber = subscription.subscriber;
        row.policy = subscription.policy;
        // A subscriber that subscribes again with another policy is a new subscription: its own rates.
        const std::string prefix = "app/" + std::to_string(app.tid) + "/stream/" + row.stream + "/" + row.subscriber +
                                   "/" + row.policy + "/";
        row.delivered_per_second = rate_of(subscription.counters, "delivered", prefix, state, counters, seconds);
        row.dropped_per_second = rate_of(subscription.counters, "dropped", prefix, state, counters, seconds);
        row.skipped_per_second = rate_of(subscription.counters, "skipped", prefix, state, counters, seconds);
        row.delivered = value_of(subscription.counters, "delivered");
        row.dropped = value_of(subscription.counters, "dropped");
        row.queued = value_of(subscription.gauges, "queued");
        row.lag = value_of(subscription.gauges, "lag");
        app.subscriptions.push_back(std::move(row));
      }
      app.subscriptions_total = unit.subscriptions_total;
      view.applications.push_back(std::move(app));
    }

    for (const TransportSummary& summary_transport : summary.transports) {
      TransportSnapshot transport;
      transport.protocol = summary_transport.protocol;
      transport.endpoint = summary_transport.endpoint;
      const std::string prefix = "transport/" + transport.protocol + "/" + transport.endpoint + "/";
      const auto& moved = summary_transport.counters;
      transport.frames_sent_per_second = rate_of(moved, "frames_sent", prefix, state, counters, seconds);
      transport.frames_received_per_second = rate_of(moved, "frames_received", prefix, state, counters, seconds);
      transport.bytes_sent_per_second = rate_of(moved, "bytes_sent", prefix, state, counters, seconds);
      transport.bytes_received_per_second = rate_of(moved, "bytes_received", prefix, state, counters, seconds);
      transport.connections_up = static_cast<unsigned>(summary_transport.connections_up);
      transport.connections_total = static_cast<unsigned>(summary_transport.connections_total);
      if (const auto starved = summary_transport.gauges.find("connections_starved"); starved != summary_transport.gauges.end())
        transport.connections_starved = static_cast<unsigned>(std::max(0.0, starved->second));
      transport.down = summary_transport.down;
      view.transports.push_back(std::move(transport));
    }

    for (const PoolSummary& summary_pool : summary.pools)
      view.pools.push_back(PoolSnapshot{summary_pool.name, summary_pool.bytes_reserved, summary_pool.bytes_used,
                                        summary_pool.blocks_total, summary_pool.blocks_used,
                                        summary_pool.failed_allocations});

    // A new run starts every rate again: counters are per run and would show a drop as a reset anyway.
    if (view.run != state.run) counters.clear();
    state.run = view.run;
    state.counters = std::move(counters);
    state.sampled_at = when;
    state.sampled = true;
    return view;
  }

  // Sums per kind and over the partition, the usual state, and what needs attention: one pass over the contexts
  // and one over the applications, whatever their number.
  static void merge(http::PartitionSnapshot& snapshot) {
    std::map<std::string, http::KindSnapshot> kinds;
    std::unordered_map<std::string, unsigned> states;
    snapshot.applications = snapshot.failed = snapshot.contexts_unreachable = 0;
    snapshot.connections_up = snapshot.connections_down = snapshot.connections_starved = 0;
    snapshot.contexts_needing_attention = 0;
    snapshot.subscriptions = 0;
    snapshot.run = 0;
    snapshot.run_seconds = http::kNoRate;
    auto add = [](double& sum, double value) {
      if (std::isnan(value)) return;
      sum = std::isnan(sum) ? value : sum + value;
    };
    for (const ContextSnapshot& context : snapshot.contexts) {
      if (context.status == ContextSnapshot::Status::unreachable || context.status == ContextSnapshot::Status::refused)
        ++snapshot.contexts_unreachable;
      if (context.run > snapshot.run) {
        snapshot.run = context.run;
        snapshot.run_seconds = context.run_seconds;
      } else if (context.run != 0 && context.run == snapshot.run && !std::isnan(context.run_seconds) &&
                 (std::isnan(snapshot.run_seconds) || context.run_seconds > snapshot.run_seconds)) {
        snapshot.run_seconds = context.run_seconds;  // the first context enabled in it says how long it has been on
      }
      for (const ApplicationSnapshot& app : context.applications) {
        ++snapshot.applications;
        snapshot.subscriptions += app.subscriptions_total;
        ++states[app.state];
        if (app.state == "Failed") ++snapshot.failed;
        http::KindSnapshot& kind = kinds[app.class_name];
        kind.class_name = app.class_name;
        ++kind.applications;
        ++kind.states[app.state];
        add(kind.events_per_second, app.events_per_second);
        add(kind.bytes_per_second, app.bytes_per_second);
      }
      for (const TransportSnapshot& transport : context.transports) {
        snapshot.connections_up += transport.connections_up;
        snapshot.connections_down += transport.connections_total - std::min(transport.connections_up, transport.connections_total);
        snapshot.connections_starved += transport.connections_starved;
      }
    }
    snapshot.usual_state.clear();
    unsigned most = 0;
    for (const auto& [state, count] : states)
      if (count > most || (count == most && state < snapshot.usual_state)) {
        most = count;
        snapshot.usual_state = state;
      }
    for (ContextSnapshot& context : snapshot.contexts) {
      context.attention = context_attention(context);
      bool applications_need_attention = false;
      for (ApplicationSnapshot& app : context.applications) {
        // The applications of a context that does not answer are Unknown: the context's line says why.
        app.attention = context.status == ContextSnapshot::Status::up ? application_attention(app, snapshot.usual_state)
                                                                      : std::string();
        applications_need_attention = applications_need_attention || !app.attention.empty();
      }
      if (!context.attention.empty() || applications_need_attention) ++snapshot.contexts_needing_attention;
    }
    snapshot.kinds.clear();
    for (auto& [name, kind] : kinds) snapshot.kinds.push_back(std::move(kind));
  }

  // A rate of zero is no reason: at a few events per second per application a one-second window often holds none.
  static std::string application_attention(const ApplicationSnapshot& app, const std::string& usual_state) {
    if (app.state == "Failed") return "Failed";
    if (app.state != usual_state) return "not " + usual_state;
    return {};
  }

  static std::string context_attention(const ContextSnapshot& context) {
    if (context.status == ContextSnapshot::Status::unreachable || context.status == ContextSnapshot::Status::refused)
      return http::to_string(context.status);
    std::vector<std::string> why;
    unsigned down = 0, starved = 0;
    std::uint64_t failed = 0;
    for (const TransportSnapshot& transport : context.transports) {
      down += transport.connections_total - std::min(transport.connections_up, transport.connections_total);
      starved += transport.connections_starved;
    }
    for (const PoolSnapshot& pool : context.pools) failed += pool.failed_allocations;
    if (down != 0) why.push_back(std::to_string(down) + (down == 1 ? " connection down" : " connections down"));
    if (starved != 0) why.push_back(std::to_string(starved) + (starved == 1 ? " connection starved" : " connections starved"));
    if (failed != 0) why.push_back(std::to_string(failed) + " failed allocations");
    std::string text;
    for (const std::string& reason : why) text += (text.empty() ? "" : ", ") + reason;
    return text;
  }

  // Polls every context once: the executive itself directly, the others over the poller. Each answer is in the
  // picture as soon as it comes (its context's entry replaced, O(1) under the lock), so one context that takes
  // its whole timeout delays no other; the sums are made again when the picture is next read.
  void round(ContextPoller& poller) {
    auto take = [&](std::size_t index, const Answer& answer) {
      const Clock::time_point when = Clock::now();
      std::lock_guard lock(mutex);
      snapshot.contexts[index] = update(index, answer, snapshot.contexts[index], states[index], when);
      merged = false;
    };
    std::vector<std::string> urls;
    std::vector<std::size_t> indices;
    for (std::size_t i = 0; i < partition.contexts.size(); ++i) {
      const std::string& url = partition.contexts[i].url;
      if (local != nullptr && url == local_url) {
        take(i, ask_local());
        continue;
      }
      urls.push_back(url);
      indices.push_back(i);
    }
    poller.round(urls, "/api/summary", options.timeout, [&](std::size_t at, HttpReply reply) {
      take(indices[at], answer_of(reply.status, reply.body));
    });
    {
      std::lock_guard lock(mutex);
      if (stopping.load()) return;  // a round cut short by stop(): not a complete one
      snapshot.polled = true;
      ++rounds;
    }
    round_done.notify_all();
  }

  void run() {
    std::unique_ptr<ContextPoller> own;  // when no poller is shared: made when watched, ended when idle
    std::unique_lock lock(mutex);
    while (!stopping.load()) {
      if (Clock::now() - last_asked >= options.idle_after) {
        watched = false;
        if (own) {  // its threads end while nobody watches
          own_poller = nullptr;
          lock.unlock();
          own.reset();
          lock.lock();
          continue;
        }
        wake.wait(lock, [&] { return stopping.load() || Clock::now() - last_asked < options.idle_after; });
        continue;
      }
      ContextPoller* poller = options.poller;
      if (poller == nullptr) {
        if (!own) {
          own = std::make_unique<ContextPoller>(options.max_parallel, access);
          own_poller = own.get();
        }
        poller = own.get();
      }
      const auto started = Clock::now();
      lock.unlock();
      round(*poller);
      lock.lock();
      wake.wait_until(lock, started + options.interval, [&] { return stopping.load(); });
    }
  }

  // Called for every request of the view: wakes the poller, and waits for one round when it was idle.
  http::PartitionSnapshot current() {
    std::unique_lock lock(mutex);
    last_asked = Clock::now();
    if (!watched && thread.joinable() && !stopping.load()) {
      watched = true;
      const std::uint64_t before = rounds;
      wake.notify_all();
      // Bounded: a context that takes its whole timeout shows as "waiting" on this first answer, not for long.
      round_done.wait_for(lock, options.timeout + std::chrono::milliseconds(500),
                          [&] { return rounds != before || stopping.load(); });
    }
    if (!merged) {
      merge(snapshot);
      merged = true;
    }
    http::PartitionSnapshot copy = snapshot;
    copy.time_ms = unix_ms();
    return copy;
  }

  const config::Partition partition;
  const ControlAccess access;
  PartitionViewOptions options;
  ControlModel* local = nullptr;
  std::string local_url;

  std::vector<ContextState> states;  // the poller's: each context's by the worker polling it, under `mutex`

  std::mutex mutex;  // guards what follows
  std::condition_variable wake;
  std::condition_variable round_done;
  http::PartitionSnapshot snapshot;
  bool merged = true;  // the sums of `snapshot` are those of its contexts
  ContextPoller* own_poller = nullptr;  // the view's own workers while it has them, for stop()
  std::uint64_t rounds = 0;
  bool watched = false;
  Clock::time_point last_asked{};
  std::atomic<bool> stopping{false};
  std::thread thread;
};

PartitionView::PartitionView(const config::Partition& partition, ControlAccess access, PartitionViewOptions options)
    : impl_(std::make_unique<Impl>(partition, std::move(access), options)) {}

PartitionView::~PartitionView() { stop(); }

void PartitionView::set_local(const std::string& url, ControlModel& model) {
  impl_->local = &model;
  impl_->local_url = url;
}

void PartitionView::start() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->thread.joinable() || impl_->stopping.load()) return;
  impl_->thread = std::thread([this] { impl_->run(); });
}

void PartitionView::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopping.exchange(true)) return;
    // The round under way ends after the requests in flight. A shared poller is not stopped: its owner's
    // other rounds go on; the view's round on it ends within one request timeout.
    if (impl_->own_poller != nullptr) impl_->own_poller->stop();
  }
  impl_->wake.notify_all();
  impl_->round_done.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string PartitionView::json() { return http::partition_json(impl_->current()); }
std::string PartitionView::html() { return http::partition_page(impl_->current()); }
const std::string& PartitionView::partition_name() const noexcept { return impl_->partition.name; }

}  // namespace daqx
