// PartitionView: one thread that, while the view is watched, polls every context's JSON API (a few contexts at
// once, each request bounded by a short timeout), turns counters into rates, and keeps the merged picture.
#include "daqx/executive/partition_view.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <Poco/Dynamic/Var.h>
#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include "control_routes.hpp"
#include "daqx/executive/headline_counters.hpp"
#include "partition_snapshot.hpp"

namespace daqx {
namespace {

using Clock = std::chrono::steady_clock;
using Poco::JSON::Array;
using Poco::JSON::Object;
using http::ApplicationSnapshot;
using http::ContextSnapshot;
using http::PoolSnapshot;
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

// What one context answered, parsed; or why it did not.
struct Answer {
  ContextSnapshot::Status status = ContextSnapshot::Status::up;
  std::string reason;
  Object::Ptr executive;
  Array::Ptr applications, transports, pools;
};

double number_or(const Object::Ptr& object, const std::string& key, double fallback) {
  if (!object || !object->has(key) || object->isNull(key)) return fallback;
  try {
    return object->getValue<double>(key);
  } catch (const Poco::Exception&) {
    return fallback;
  }
}

std::string string_or(const Object::Ptr& object, const std::string& key) {
  if (!object || !object->has(key) || object->isNull(key)) return {};
  try {
    return object->getValue<std::string>(key);
  } catch (const Poco::Exception&) {
    return {};
  }
}

bool has_labels(const Object::Ptr& metric) {
  const Object::Ptr labels = metric->getObject("labels");
  return labels && labels->size() != 0;
}

}  // namespace

struct PartitionView::Impl {
  struct ContextState {  // the poller's own, per context: the counters of the last answer, for rates
    std::map<std::string, double> counters;
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

  std::optional<std::string> fetch_text(std::size_t index, const std::string& path, Answer& answer) {
    const std::string& url = partition.contexts[index].url;
    if (local != nullptr && url == local_url) {
      http::Request request;
      request.method = "GET";
      request.target = path;
      static const http::AccessCheck open;
      const http::Reply reply = http::handle_request(*local, request, open);
      if (reply.status == 200) return reply.body;
      answer.status = ContextSnapshot::Status::refused;
      answer.reason = "HTTP " + std::to_string(reply.status) + " for " + path;
      return std::nullopt;
    }
    const HttpReply reply = ControlClient(url, options.timeout, access).get(path);
    if (reply.status == 200) return reply.body;
    if (!reply.answered()) {
      answer.status = ContextSnapshot::Status::unreachable;
      answer.reason = reply.body.empty() ? std::string("no answer") : reply.body;
    } else {
      answer.status = ContextSnapshot::Status::refused;
      std::string body = reply.body.substr(0, 300);
      try {  // an /api error is {"error": "..."}: its text reads better than the document
        Poco::JSON::Parser parser;
        const Object::Ptr error = parser.parse(reply.body).extract<Object::Ptr>();
        if (error && error->has("error")) body = error->getValue<std::string>("error");
      } catch (...) {
      }
      answer.reason = "HTTP " + std::to_string(reply.status) + " for " + path + ": " + body;
    }
    return std::nullopt;
  }

  Answer poll(std::size_t index) {
    Answer answer;
    try {
      Poco::JSON::Parser parser;
      auto get = [&](const char* path) -> Poco::Dynamic::Var {
        if (answer.status != ContextSnapshot::Status::up) return {};
        if (stopping.load()) {  // stop() waits for the polls under way: no more requests for them
          answer.status = ContextSnapshot::Status::unreachable;
          answer.reason = "not polled: the view is stopping";
          return {};
        }
        const std::optional<std::string> text = fetch_text(index, path, answer);
        if (!text) return {};
        parser.reset();
        return parser.parse(*text);
      };
      const Poco::Dynamic::Var executive = get("/api/executive");
      const Poco::Dynamic::Var applications = get("/api/applications");
      const Poco::Dynamic::Var transports = get("/api/transports");
      const Poco::Dynamic::Var pools = get("/api/pools");
      if (answer.status != ContextSnapshot::Status::up) return answer;
      answer.executive = executive.extract<Object::Ptr>();
      answer.applications = applications.extract<Array::Ptr>();
      answer.transports = transports.extract<Array::Ptr>();
      answer.pools = pools.extract<Array::Ptr>();
    } catch (const Poco::Exception& error) {
      answer.status = ContextSnapshot::Status::refused;
      answer.reason = "not the JSON expected: " + error.displayText();
    } catch (const std::exception& error) {
      answer.status = ContextSnapshot::Status::refused;
      answer.reason = std::string("not the JSON expected: ") + error.what();
    }
    return answer;
  }

  // The rate of a counter since the last answer; kNoRate on the first or after a reset (a restarted context).
  static double rate(const std::map<std::string, double>& before, std::map<std::string, double>& now,
                     const std::string& key, double value, double seconds) {
    now[key] = value;
    const auto found = before.find(key);
    if (found == before.end() || seconds <= 0 || value < found->second) return http::kNoRate;
    return (value - found->second) / seconds;
  }

  // Rates of every unlabelled counter of `metrics`, under `prefix` in the state's counters.
  static std::vector<std::pair<std::string, double>> counter_rates(const Array::Ptr& metrics, const std::string& prefix,
                                                                   const ContextState& state,
                                                                   std::map<std::string, double>& counters,
                                                                   double seconds) {
    std::vector<std::pair<std::string, double>> rates;
    for (std::size_t m = 0; metrics && m < metrics->size(); ++m) {
      const Object::Ptr metric = metrics->getObject(static_cast<unsigned>(m));
      if (!metric || string_or(metric, "kind") != "counter" || has_labels(metric)) continue;
      const std::string name = base_name(string_or(metric, "name"));
      const double value = number_or(metric, "value", http::kNoRate);
      if (std::isnan(value)) continue;
      rates.emplace_back(name, rate(state.counters, counters, prefix + name, value, seconds));
    }
    return rates;
  }

  static double pick(const std::vector<std::pair<std::string, double>>& rates, const auto& names) {
    for (const auto& name : names)
      for (const auto& [counter, value] : rates)
        if (counter == counter_name(name)) return value;
    return http::kNoRate;
  }

  // The new picture of context `index` from its answer; `state` keeps the counters for the next rates.
  ContextSnapshot update(std::size_t index, const Answer& answer, const ContextSnapshot& before, ContextState& state,
                         Clock::time_point when) {
    if (answer.status != ContextSnapshot::Status::up) {
      // Who it held stays on the page; what it no longer tells (states, rates, pools, links) does not.
      ContextSnapshot view = before;
      for (ApplicationSnapshot& app : view.applications) {
        app.state = "Unknown";
        app.reason.clear();
        app.events_per_second = app.bytes_per_second = http::kNoRate;
        app.rates.clear();
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
    ContextSnapshot view;
    view.url = partition.contexts[index].url;
    view.status = ContextSnapshot::Status::up;
    view.last_seen_ms = unix_ms();
    // No rate over a gap (the view was idle, or the context slow to answer): it would be an average, not now.
    const bool recent = state.sampled && when - state.sampled_at <= 5 * std::max(options.interval, options.timeout);
    const double seconds = recent ? std::chrono::duration<double>(when - state.sampled_at).count() : 0;
    std::map<std::string, double> counters;

    view.run = static_cast<std::uint64_t>(number_or(answer.executive, "run", 0));
    view.run_seconds = number_or(answer.executive, "run_seconds", http::kNoRate);
    const Array::Ptr executive_metrics = answer.executive ? answer.executive->getArray("metrics") : nullptr;
    for (std::size_t m = 0; executive_metrics && m < executive_metrics->size(); ++m) {
      const Object::Ptr metric = executive_metrics->getObject(static_cast<unsigned>(m));
      if (metric && string_or(metric, "name") == "uptime_seconds") view.uptime_seconds = number_or(metric, "value", http::kNoRate);
    }

    for (std::size_t a = 0; a < answer.applications->size(); ++a) {
      const Object::Ptr object = answer.applications->getObject(static_cast<unsigned>(a));
      if (!object) continue;
      ApplicationSnapshot app;
      app.tid = static_cast<std::uint32_t>(number_or(object, "tid", 0));
      app.class_name = string_or(object, "class");
      app.instance = static_cast<std::uint32_t>(number_or(object, "instance", 0));
      app.name = string_or(object, "name");
      app.state = string_or(object, "state");
      app.reason = string_or(object, "reason");
      app.run = static_cast<std::uint64_t>(number_or(object, "run", 0));
      app.rates = counter_rates(object->getArray("metrics"), "app/" + std::to_string(app.tid) + "/", state, counters,
                                seconds);
      app.events_per_second = pick(app.rates, kHeadlineItemCounters);
      app.bytes_per_second = pick(app.rates, kHeadlineByteCounters);
      view.applications.push_back(std::move(app));
    }

    for (std::size_t t = 0; t < answer.transports->size(); ++t) {
      const Object::Ptr object = answer.transports->getObject(static_cast<unsigned>(t));
      if (!object) continue;
      TransportSnapshot transport;
      transport.protocol = string_or(object, "protocol");
      transport.endpoint = string_or(object, "endpoint");
      const auto rates = counter_rates(object->getArray("metrics"), "transport/" + transport.protocol + "/" +
                                       transport.endpoint + "/", state, counters, seconds);
      transport.frames_sent_per_second = pick(rates, std::initializer_list<const char*>{"frames_sent"});
      transport.frames_received_per_second = pick(rates, std::initializer_list<const char*>{"frames_received"});
      transport.bytes_sent_per_second = pick(rates, std::initializer_list<const char*>{"bytes_sent"});
      transport.bytes_received_per_second = pick(rates, std::initializer_list<const char*>{"bytes_received"});
      const Array::Ptr connections = object->getArray("connections");
      for (std::size_t c = 0; connections && c < connections->size(); ++c) {
        const Object::Ptr connection = connections->getObject(static_cast<unsigned>(c));
        if (!connection) continue;
        if (connection->optValue<bool>("up", false))
          ++transport.connections_up;
        else
          transport.down.push_back(string_or(connection, "remote"));
      }
      view.transports.push_back(std::move(transport));
    }

    for (std::size_t p = 0; p < answer.pools->size(); ++p) {
      const Object::Ptr object = answer.pools->getObject(static_cast<unsigned>(p));
      if (!object) continue;
      PoolSnapshot pool;
      pool.name = string_or(object, "name");
      pool.bytes_reserved = static_cast<std::uint64_t>(number_or(object, "bytes_reserved", 0));
      const Array::Ptr classes = object->getArray("classes");
      for (std::size_t c = 0; classes && c < classes->size(); ++c) {
        const Object::Ptr size_class = classes->getObject(static_cast<unsigned>(c));
        if (!size_class) continue;
        const auto used = static_cast<std::uint64_t>(number_or(size_class, "blocks_used", 0));
        pool.blocks_used += used;
        pool.blocks_total += static_cast<std::uint64_t>(number_or(size_class, "blocks_total", 0));
        pool.bytes_used += used * static_cast<std::uint64_t>(number_or(size_class, "block_size", 0));
        pool.failed_allocations += static_cast<std::uint64_t>(number_or(size_class, "failed_allocations", 0));
      }
      view.pools.push_back(std::move(pool));
    }

    // A new run starts every rate again: counters are per run and would show a drop as a reset anyway.
    if (view.run != state.run) counters.clear();
    state.run = view.run;
    state.counters = std::move(counters);
    state.sampled_at = when;
    state.sampled = true;
    return view;
  }

  // Sums per kind and over the partition.
  static void merge(http::PartitionSnapshot& snapshot) {
    std::map<std::string, http::KindSnapshot> kinds;
    snapshot.applications = snapshot.failed = snapshot.contexts_unreachable = 0;
    snapshot.connections_up = snapshot.connections_down = 0;
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
        snapshot.connections_down += static_cast<unsigned>(transport.down.size());
      }
    }
    snapshot.kinds.clear();
    for (auto& [name, kind] : kinds) snapshot.kinds.push_back(std::move(kind));
  }

  // Polls every context, a few at once; each answer is in the picture as soon as it comes, so one context that
  // takes its whole timeout delays no other.
  void round() {
    const std::size_t count = partition.contexts.size();
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t i = next.fetch_add(1); i < count && !stopping.load(); i = next.fetch_add(1)) {
        const Answer answer = poll(i);
        const Clock::time_point when = Clock::now();
        std::lock_guard lock(mutex);
        snapshot.contexts[i] = update(i, answer, snapshot.contexts[i], states[i], when);
        merge(snapshot);
      }
    };
    const std::size_t workers = std::min<std::size_t>(options.max_parallel, count);
    std::vector<std::thread> threads;
    for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work);
    work();
    for (std::thread& worker : threads) worker.join();
    {
      std::lock_guard lock(mutex);
      snapshot.polled = true;
      ++rounds;
    }
    round_done.notify_all();
  }

  void run() {
    std::unique_lock lock(mutex);
    while (!stopping.load()) {
      if (Clock::now() - last_asked >= options.idle_after) {
        watched = false;
        wake.wait(lock, [&] { return stopping.load() || Clock::now() - last_asked < options.idle_after; });
        continue;
      }
      const auto started = Clock::now();
      lock.unlock();
      round();
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
  }
  impl_->wake.notify_all();
  impl_->round_done.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string PartitionView::json() { return http::partition_json(impl_->current()); }
std::string PartitionView::html() { return http::partition_page(impl_->current()); }
const std::string& PartitionView::partition_name() const noexcept { return impl_->partition.name; }

}  // namespace daqx
