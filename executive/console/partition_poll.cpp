#include "partition_poll.hpp"

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <future>

#include "daqx/executive/control_client.hpp"

namespace daqx::console {
namespace {

using Poco::JSON::Array;
using Poco::JSON::Object;

// Thrown inside poll_context when an answer cannot be used; becomes the sample's error.
struct NoAnswer {
  std::string reason;
};

Poco::Dynamic::Var get_json(const ControlClient& client, const std::string& path) {
  const HttpReply reply = client.get(path);
  if (!reply.answered()) throw NoAnswer{reply.body};
  if (reply.status != 200) throw NoAnswer{"GET " + path + " answered " + std::to_string(reply.status)};
  try {
    return Poco::JSON::Parser().parse(reply.body);
  } catch (const Poco::Exception& error) {
    throw NoAnswer{"GET " + path + ": not JSON: " + error.displayText()};
  }
}

Array::Ptr array_of(const Poco::Dynamic::Var& value, const std::string& path) {
  if (value.type() != typeid(Array::Ptr)) throw NoAnswer{"GET " + path + ": not a JSON array"};
  return value.extract<Array::Ptr>();
}

bool labelled(const Object::Ptr& metric) {
  const Object::Ptr labels = metric->has("labels") ? metric->getObject("labels") : Object::Ptr();
  return labels && labels->size() != 0;
}

// Per-peer (labelled) counters are left out: they are parts of an unlabelled total or per-peer detail.
void read_counters(const Array::Ptr& metrics, std::map<std::string, double>& into, const std::string& prefix = {}) {
  for (std::size_t m = 0; metrics && m < metrics->size(); ++m) {
    const Object::Ptr metric = metrics->getObject(static_cast<unsigned>(m));
    if (!metric || metric->optValue<std::string>("kind", "gauge") != "counter" || labelled(metric)) continue;
    into[prefix + metric->getValue<std::string>("name")] += metric->getValue<double>("value");
  }
}

void read_applications(const ControlClient& client, ContextSample& sample) {
  const auto asked = Clock::now();
  const Array::Ptr apps = array_of(get_json(client, "/api/applications"), "/api/applications");
  sample.at = asked + (Clock::now() - asked) / 2;
  for (std::size_t i = 0; i < apps->size(); ++i) {
    const Object::Ptr app = apps->getObject(static_cast<unsigned>(i));
    if (!app) continue;
    UnitSample unit;
    unit.name = app->optValue<std::string>("name", "");
    unit.class_name = app->optValue<std::string>("class", "");
    unit.tid = app->optValue<std::uint32_t>("tid", 0);
    unit.state = app->optValue<std::string>("state", "");
    unit.reason = app->optValue<std::string>("reason", "");
    unit.run = app->optValue<std::uint64_t>("run", 0);
    read_counters(app->getArray("metrics"), unit.counters);
    if (unit.run != 0) sample.run = unit.run;
    sample.units.push_back(std::move(unit));
  }
}

void read_transports(const ControlClient& client, ContextSample& sample) {
  const Array::Ptr transports = array_of(get_json(client, "/api/transports"), "/api/transports");
  for (std::size_t t = 0; t < transports->size(); ++t) {
    const Object::Ptr transport = transports->getObject(static_cast<unsigned>(t));
    if (!transport) continue;
    read_counters(transport->getArray("metrics"), sample.transport_counters,
                  transport->optValue<std::string>("protocol", "?") + " ");
    const Array::Ptr connections = transport->getArray("connections");
    for (std::size_t c = 0; connections && c < connections->size(); ++c) {
      const Object::Ptr connection = connections->getObject(static_cast<unsigned>(c));
      if (!connection) continue;
      ++sample.connections_total;
      if (connection->optValue<bool>("up", false)) ++sample.connections_up;
    }
  }
}

void read_pools(const ControlClient& client, ContextSample& sample) {
  const Array::Ptr pools = array_of(get_json(client, "/api/pools"), "/api/pools");
  for (std::size_t p = 0; p < pools->size(); ++p) {
    const Object::Ptr pool = pools->getObject(static_cast<unsigned>(p));
    if (!pool) continue;
    PoolUse use;
    use.name = pool->optValue<std::string>("name", "");
    const Array::Ptr classes = pool->getArray("classes");
    for (std::size_t c = 0; classes && c < classes->size(); ++c) {
      const Object::Ptr size_class = classes->getObject(static_cast<unsigned>(c));
      if (!size_class) continue;
      const double block = size_class->optValue<double>("block_size", 0);
      use.bytes_used += block * size_class->optValue<double>("blocks_used", 0);
      use.bytes_total += block * size_class->optValue<double>("blocks_total", 0);
    }
    sample.pools.push_back(std::move(use));
  }
}

}  // namespace

ContextSample poll_context(const std::string& url, PollDetail detail, std::chrono::milliseconds timeout) {
  ContextSample sample;
  sample.url = url;
  sample.at = Clock::now();
  try {
    const ControlClient client(url, timeout);
    read_applications(client, sample);
    if (detail == PollDetail::full) {
      read_transports(client, sample);
      read_pools(client, sample);
    }
    sample.answered = true;
  } catch (const NoAnswer& error) {
    sample.error = error.reason.empty() ? "no answer" : error.reason;
    sample.units.clear();
  } catch (const Poco::Exception& error) {  // a field of the wrong type: not our API
    sample.error = "unreadable answer: " + error.displayText();
    sample.units.clear();
  } catch (const std::exception& error) {  // a URL the client cannot use
    sample.error = error.what();
    sample.units.clear();
  }
  return sample;
}

std::vector<ContextSample> poll_contexts(const std::vector<std::string>& urls, PollDetail detail,
                                         std::chrono::milliseconds timeout) {
  std::vector<std::future<ContextSample>> pending;
  pending.reserve(urls.size());
  for (const std::string& url : urls)
    pending.push_back(std::async(std::launch::async, [url, detail, timeout] { return poll_context(url, detail, timeout); }));
  std::vector<ContextSample> samples;
  samples.reserve(urls.size());
  for (auto& answer : pending) samples.push_back(answer.get());
  return samples;
}

}  // namespace daqx::console
