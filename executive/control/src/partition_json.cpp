// GET /api/partition: the merged picture of the partition as one JSON document (docs/control-api.md,
// "Partition view"). Rates not known yet are null.
#include <Poco/Dynamic/Var.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

#include "json_writing.hpp"
#include "partition_snapshot.hpp"

namespace daqx::http {
namespace {

using Poco::JSON::Array;
using Poco::JSON::Object;

Object::Ptr subscription_object(const SubscriptionSnapshot& subscription) {
  Object::Ptr object = new_object();
  object->set("stream", subscription.stream);
  object->set("subscriber", subscription.subscriber);
  object->set("policy", subscription.policy);
  object->set("delivered_per_second", number(subscription.delivered_per_second));
  object->set("dropped_per_second", number(subscription.dropped_per_second));
  object->set("skipped_per_second", number(subscription.skipped_per_second));
  object->set("delivered", number(subscription.delivered));
  object->set("dropped", number(subscription.dropped));
  object->set("queued", number(subscription.queued));
  object->set("lag", number(subscription.lag));
  return object;
}

Object::Ptr application_object(const ApplicationSnapshot& app) {
  Object::Ptr object = new_object();
  object->set("tid", app.tid);
  object->set("class", app.class_name);
  object->set("instance", app.instance);
  object->set("name", app.name);
  object->set("state", app.state);
  object->set("reason", app.reason);
  object->set("run", app.run);
  object->set("events_per_second", number(app.events_per_second));
  object->set("bytes_per_second", number(app.bytes_per_second));
  Object::Ptr rates = new_object();
  for (const auto& [name, value] : app.rates) rates->set(name, number(value));
  object->set("rates", rates);
  object->set("attention", app.attention);
  Array::Ptr subscriptions = new Array;
  for (const SubscriptionSnapshot& subscription : app.subscriptions) subscriptions->add(subscription_object(subscription));
  object->set("subscriptions", subscriptions);
  object->set("subscriptions_total", app.subscriptions_total);
  return object;
}

Object::Ptr transport_object(const TransportSnapshot& transport) {
  Object::Ptr object = new_object();
  object->set("protocol", transport.protocol);
  object->set("endpoint", transport.endpoint);
  object->set("frames_sent_per_second", number(transport.frames_sent_per_second));
  object->set("frames_received_per_second", number(transport.frames_received_per_second));
  object->set("bytes_sent_per_second", number(transport.bytes_sent_per_second));
  object->set("bytes_received_per_second", number(transport.bytes_received_per_second));
  object->set("connections_up", transport.connections_up);
  object->set("connections_total", transport.connections_total);
  object->set("connections_starved", transport.connections_starved);
  Array::Ptr down = new Array;
  for (const std::string& remote : transport.down) down->add(remote);
  object->set("connections_down", down);
  return object;
}

Object::Ptr pool_object(const PoolSnapshot& pool) {
  Object::Ptr object = new_object();
  object->set("name", pool.name);
  object->set("bytes_reserved", pool.bytes_reserved);
  object->set("bytes_used", pool.bytes_used);
  object->set("blocks_total", pool.blocks_total);
  object->set("blocks_used", pool.blocks_used);
  object->set("failed_allocations", pool.failed_allocations);
  return object;
}

Object::Ptr context_object(const ContextSnapshot& context) {
  Object::Ptr object = new_object();
  object->set("url", context.url);
  object->set("status", std::string(to_string(context.status)));
  object->set("reason", context.reason);
  object->set("last_seen_ms", context.last_seen_ms == 0 ? Poco::Dynamic::Var() : Poco::Dynamic::Var(context.last_seen_ms));
  object->set("run", context.run);
  object->set("run_seconds", number(context.run_seconds));
  object->set("uptime_seconds", number(context.uptime_seconds));
  object->set("attention", context.attention);
  Array::Ptr applications = new Array;
  for (const ApplicationSnapshot& app : context.applications) applications->add(application_object(app));
  object->set("applications", applications);
  Array::Ptr transports = new Array;
  for (const TransportSnapshot& transport : context.transports) transports->add(transport_object(transport));
  object->set("transports", transports);
  Array::Ptr pools = new Array;
  for (const PoolSnapshot& pool : context.pools) pools->add(pool_object(pool));
  object->set("pools", pools);
  return object;
}

}  // namespace

const char* to_string(ContextSnapshot::Status status) {
  switch (status) {
    case ContextSnapshot::Status::waiting: return "waiting";
    case ContextSnapshot::Status::up: return "up";
    case ContextSnapshot::Status::unreachable: return "unreachable";
    case ContextSnapshot::Status::refused: return "refused";
  }
  return "unknown";
}

std::string partition_json(const PartitionSnapshot& snapshot) {
  Object::Ptr object = new_object();
  object->set("partition", snapshot.partition);
  object->set("time_ms", snapshot.time_ms);
  object->set("interval_seconds", snapshot.interval_seconds);
  object->set("polled", snapshot.polled);
  object->set("run", snapshot.run);
  object->set("run_seconds", number(snapshot.run_seconds));
  object->set("usual_state", snapshot.usual_state);
  object->set("fold_above", kFoldContextsAbove);
  object->set("subscriptions_shown", kSubscriptionsShown);
  Object::Ptr totals = new_object();
  totals->set("contexts", snapshot.contexts.size());
  totals->set("contexts_unreachable", snapshot.contexts_unreachable);
  totals->set("applications", snapshot.applications);
  totals->set("failed", snapshot.failed);
  totals->set("connections_up", snapshot.connections_up);
  totals->set("connections_down", snapshot.connections_down);
  totals->set("connections_starved", snapshot.connections_starved);
  totals->set("contexts_needing_attention", snapshot.contexts_needing_attention);
  totals->set("subscriptions", snapshot.subscriptions);
  object->set("totals", totals);
  Array::Ptr kinds = new Array;
  for (const KindSnapshot& kind : snapshot.kinds) {
    Object::Ptr entry = new_object();
    entry->set("class", kind.class_name);
    entry->set("applications", kind.applications);
    Object::Ptr states = new_object();
    for (const auto& [state, count] : kind.states) states->set(state, count);
    entry->set("states", states);
    entry->set("events_per_second", number(kind.events_per_second));
    entry->set("bytes_per_second", number(kind.bytes_per_second));
    kinds->add(entry);
  }
  object->set("kinds", kinds);
  Array::Ptr contexts = new Array;
  for (const ContextSnapshot& context : snapshot.contexts) contexts->add(context_object(context));
  object->set("contexts", contexts);
  return stringify(object);
}

}  // namespace daqx::http
