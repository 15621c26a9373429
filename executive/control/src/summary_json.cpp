// GET /api/summary: one context in one small document for the watchers of a partition (daqx-launch --drive,
// daqxctl watch, the dashboards): states, unlabelled counters and gauges, the subscriptions to each application's
// streams, connection counts, pool levels. No help texts, parameters or per-connection entries, so that its size
// does not grow with the partition.
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

#include <map>
#include <set>
#include <tuple>

#include "control_routes.hpp"
#include "daqx/streams/publisher.hpp"
#include "json_writing.hpp"

namespace daqx::http {
namespace {

using Poco::JSON::Array;
using Poco::JSON::Object;

// Unlabelled metrics only: a labelled one is per peer (its count grows with the partition) or part of a total.
void add_metrics(Object::Ptr object, const std::vector<Metric>& metrics) {
  Object::Ptr counters = new_object();
  Object::Ptr gauges = new_object();
  for (const Metric& metric : metrics) {
    if (!metric.labels.empty()) continue;
    if (metric.kind == Metric::Kind::counter) counters->set(metric.name, number(metric.value));
    else if (metric.kind == Metric::Kind::gauge) gauges->set(metric.name, number(metric.value));
  }
  object->set("counters", counters);
  object->set("gauges", gauges);
}

// The subscriptions to an application's streams (docs/monitoring.md, "Counters"): its metrics labelled stream,
// subscriber and policy, one entry each with their counters and gauges under their names without "subscriber_".
// At most kSummarySubscriptionsListed of them, so that the summary stays small; "subscriptions_total" counts all.
void add_subscriptions(Object::Ptr object, const std::vector<Metric>& metrics) {
  using Key = std::tuple<std::string, std::string, std::string>;  // stream, subscriber, policy
  std::map<Key, std::pair<Object::Ptr, Object::Ptr>> found;       // its counters and gauges
  std::set<Key> unlisted;
  for (const Metric& metric : metrics) {
    if (metric.labels.size() != 3 || !metric.name.starts_with(streams::kSubscriptionMetricPrefix)) continue;
    const std::string* stream = nullptr;
    const std::string* subscriber = nullptr;
    const std::string* policy = nullptr;
    for (const auto& [label, value] : metric.labels) {
      if (label == streams::kStreamLabel) stream = &value;
      else if (label == streams::kSubscriberLabel) subscriber = &value;
      else if (label == streams::kPolicyLabel) policy = &value;
    }
    if (stream == nullptr || subscriber == nullptr || policy == nullptr) continue;
    Key key{*stream, *subscriber, *policy};
    auto at = found.find(key);
    if (at == found.end()) {
      if (found.size() >= kSummarySubscriptionsListed) {
        unlisted.insert(std::move(key));
        continue;
      }
      at = found.emplace(std::move(key), std::pair{new_object(), new_object()}).first;
    }
    const std::string name = metric.name.substr(streams::kSubscriptionMetricPrefix.size());
    if (metric.kind == Metric::Kind::counter) at->second.first->set(name, number(metric.value));
    else if (metric.kind == Metric::Kind::gauge) at->second.second->set(name, number(metric.value));
  }
  Array::Ptr subscriptions = new Array;
  for (const auto& [key, values] : found) {
    Object::Ptr entry = new_object();
    entry->set("stream", std::get<0>(key));
    entry->set("subscriber", std::get<1>(key));
    entry->set("policy", std::get<2>(key));
    entry->set("counters", values.first);
    entry->set("gauges", values.second);
    subscriptions->add(entry);
  }
  object->set("subscriptions", subscriptions);
  object->set("subscriptions_total", found.size() + unlisted.size());
}

Object::Ptr transport_object(const TransportStatus& transport) {
  Object::Ptr object = new_object();
  object->set("protocol", transport.protocol);
  object->set("endpoint", transport.endpoint);
  std::size_t up = 0;
  Array::Ptr down = new Array;
  for (const ConnectionInfo& connection : transport.connections) {
    if (connection.up) ++up;
    else if (down->size() < kSummaryDownListed) down->add(connection.remote);
  }
  object->set("connections_up", up);
  object->set("connections_total", transport.connections.size());
  object->set("connections_down", down);
  add_metrics(object, transport.metrics);
  return object;
}

Object::Ptr pool_object(const PoolStatus& pool) {
  Object::Ptr object = new_object();
  std::uint64_t bytes_total = 0, bytes_used = 0, blocks_total = 0, blocks_used = 0, failed = 0;
  for (const mem::SizeClassStats& size_class : pool.stats.classes) {
    bytes_total += size_class.block_size * size_class.blocks_total;
    bytes_used += size_class.block_size * size_class.blocks_used;
    blocks_total += size_class.blocks_total;
    blocks_used += size_class.blocks_used;
    failed += size_class.failed_allocations;
  }
  object->set("name", pool.stats.name);
  object->set("bytes_reserved", pool.stats.bytes_reserved);
  object->set("bytes_total", bytes_total);
  object->set("bytes_used", bytes_used);
  object->set("blocks_total", blocks_total);
  object->set("blocks_used", blocks_used);
  object->set("failed_allocations", failed);
  return object;
}

}  // namespace

std::string json_summary(const ControlModel& model) {
  Object::Ptr object = new_object();
  object->set("partition", model.partition_name());
  object->set("context", model.context_url());
  object->set("run", model.run_number());
  const double run_seconds = model.run_seconds();
  object->set("run_seconds", run_seconds < 0 ? Poco::Dynamic::Var() : number(run_seconds));
  Object::Ptr executive = new_object();
  add_metrics(executive, model.executive_metrics());
  object->set("executive", executive);
  Array::Ptr applications = new Array;
  for (const ApplicationStatus& application : model.applications()) {
    Object::Ptr entry = new_object();
    entry->set("tid", application.tid);
    entry->set("class", application.class_name);
    entry->set("instance", application.instance);
    entry->set("name", application.name);
    entry->set("state", std::string(to_string(application.state)));
    entry->set("reason", application.reason);
    entry->set("run", application.run);
    add_metrics(entry, application.metrics);
    add_subscriptions(entry, application.metrics);
    applications->add(entry);
  }
  object->set("applications", applications);
  Array::Ptr transports = new Array;
  for (const TransportStatus& transport : model.transports()) transports->add(transport_object(transport));
  object->set("transports", transports);
  Array::Ptr pools = new Array;
  for (const PoolStatus& pool : model.pools()) pools->add(pool_object(pool));
  object->set("pools", pools);
  return stringify(object);
}

}  // namespace daqx::http
