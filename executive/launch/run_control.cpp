#include "run_control.hpp"

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "daqx/executive/control_client.hpp"

namespace daqx::launch {
namespace {

using Clock = std::chrono::steady_clock;

std::string human_rate(const std::string& name, double value) {
  char text[64];
  if (name.find("byte") != std::string::npos) {
    std::snprintf(text, sizeof text, "%.3f GB/s", value / 1e9);
  } else {
    std::snprintf(text, sizeof text, "%.0f/s", value);
  }
  return text;
}

// One line per application with its rate gauges; returns false when an application is Failed.
// "evb/bu/1" -> "evb/bu": applications of one class are summed under this name.
std::string kind_of(const std::string& name) {
  const std::size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(0, slash);
}

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

bool print_rates(const config::Partition& partition, double elapsed, std::map<std::string, double>& last_counters,
                 const ContextFilter& filter) {
  bool healthy = true;
  std::map<std::string, std::map<std::string, double>> kind_rates;  // kind -> rate gauge -> sum
  std::map<std::string, int> kind_count;
  for (const auto& c : partition.contexts) {
    if (filter && !filter(c.url)) {
      std::printf("%7.1fs %-24s (not up: restarting)\n", elapsed, c.url.c_str());
      continue;
    }
    daqx::HttpReply reply = daqx::ControlClient(c.url, std::chrono::seconds(3)).get("/api/applications");
    if (reply.status != 200) {
      std::printf("%7.1fs %s: no answer\n", elapsed, c.url.c_str());
      healthy = false;
      continue;
    }
    Poco::JSON::Array::Ptr apps = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
    for (std::size_t i = 0; i < apps->size(); ++i) {
      Poco::JSON::Object::Ptr app = apps->getObject(static_cast<unsigned>(i));
      std::string name = app->getValue<std::string>("name");
      std::string state = app->getValue<std::string>("state");
      std::string line;
      Poco::JSON::Array::Ptr metrics = app->getArray("metrics");
      for (std::size_t m = 0; metrics && m < metrics->size(); ++m) {
        Poco::JSON::Object::Ptr metric = metrics->getObject(static_cast<unsigned>(m));
        std::string metric_name = metric->getValue<std::string>("name");
        double value = metric->getValue<double>("value");
        // Per-peer metrics (labelled) would overwrite each other under one name: the summary keeps the rest.
        const bool labelled = metric->has("labels") && metric->getObject("labels") && metric->getObject("labels")->size() != 0;
        const bool counter = metric->optValue<std::string>("kind", "gauge") == "counter";
        if (!labelled) last_counters[name + " " + metric_name + (counter ? "" : " ")] = value;
        if (metric_name.find("rate") != std::string::npos) {
          line += "  " + metric_name + " " + human_rate(metric_name, value);
          kind_rates[kind_of(name)][metric_name] += value;
        }
      }
      ++kind_count[kind_of(name)];
      if (state == "Failed") {
        healthy = false;
        line += "  FAILED: " + app->optValue<std::string>("reason", "");
      }
      std::printf("%7.1fs %-24s %-10s%s\n", elapsed, name.c_str(), state.c_str(), line.c_str());
    }
  }
  // With several applications of a kind, their sum is what the partition does (e.g. all BUs together).
  for (const auto& [kind, rates] : kind_rates) {
    if (kind_count[kind] < 2) continue;
    std::string line;
    for (const auto& [metric_name, value] : rates) line += "  " + metric_name + " " + human_rate(metric_name, value);
    const std::string label = kind + "/* (" + std::to_string(kind_count[kind]) + ")";
    std::printf("%7.1fs %-24s %-10s%s\n", elapsed, label.c_str(), "total", line.c_str());
  }
  std::fflush(stdout);
  return healthy;
}

// After the run: per kind of application, the sum of its throughput counters and their average rate.
void print_totals(const std::map<std::string, double>& counters, double seconds) {
  std::map<std::string, std::map<std::string, double>> sums;
  for (const auto& [key, value] : counters) {
    const std::size_t space = key.find(' ');
    if (key.ends_with(" ")) continue;  // a gauge (see print_rates): a level, not an amount
    const std::string app = key.substr(0, space), metric_name = key.substr(space + 1);
    const bool throughput = metric_name.find("bytes") != std::string::npos || metric_name.ends_with("_built") ||
                            metric_name.ends_with("_completed") || metric_name.ends_with("_sent") ||
                            metric_name.ends_with("_received");
    if (throughput && metric_name.find("rate") == std::string::npos) sums[kind_of(app)][metric_name] += value;
  }
  if (sums.empty() || seconds <= 0) return;
  std::printf("daqx-launch: totals over %.1fs (average rate)\n", seconds);
  for (const auto& [kind, metrics] : sums)
    for (const auto& [metric_name, value] : metrics) {
      if (value == 0) continue;
      const bool bytes = metric_name.find("bytes") != std::string::npos;
      if (bytes)
        std::printf("  %-16s %-28s %10.3f GB  (%.3f GB/s)\n", kind.c_str(), metric_name.c_str(), value / 1e9,
                    value / 1e9 / seconds);
      else
        std::printf("  %-16s %-28s %10.0f     (%.0f/s)\n", kind.c_str(), metric_name.c_str(), value, value / seconds);
    }
}


}  // namespace daqx::launch
