// Reading GET /api/summary into a ContextSummary with Poco::JSON, every shape error named.
#include "daqx/control/context_summary.hpp"

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <stdexcept>

namespace daqx {
namespace {

using Poco::JSON::Array;
using Poco::JSON::Object;

double number_or(const Object::Ptr& object, const std::string& key, double fallback) {
  if (!object->has(key) || object->isNull(key)) return fallback;
  return object->getValue<double>(key);
}

std::string text_of(const Object::Ptr& object, const std::string& key) {
  return object->has(key) && !object->isNull(key) ? object->getValue<std::string>(key) : std::string();
}

std::map<std::string, double> numbers_of(const Object::Ptr& object, const std::string& key) {
  std::map<std::string, double> values;
  const Object::Ptr numbers = object->getObject(key);
  if (!numbers) return values;
  for (const auto& [name, value] : *numbers)
    if (!value.isEmpty()) values.emplace(name, value.convert<double>());
  return values;
}

Array::Ptr array_of(const Object::Ptr& object, const std::string& key) {
  const Array::Ptr array = object->getArray(key);
  if (!array) throw std::runtime_error("GET /api/summary: no array \"" + key + "\"");
  return array;
}

}  // namespace

ContextSummary parse_context_summary(const std::string& json) {
  ContextSummary summary;
  try {
    Poco::JSON::Parser parser;
    const Poco::Dynamic::Var document = parser.parse(json);
    if (document.type() != typeid(Object::Ptr)) throw std::runtime_error("GET /api/summary: not a JSON object");
    const Object::Ptr object = document.extract<Object::Ptr>();
    summary.run = static_cast<std::uint64_t>(number_or(object, "run", 0));
    summary.run_seconds = number_or(object, "run_seconds", NAN);
    if (const Object::Ptr executive = object->getObject("executive")) {
      summary.executive_counters = numbers_of(executive, "counters");
      const std::map<std::string, double> gauges = numbers_of(executive, "gauges");
      if (const auto uptime = gauges.find("uptime_seconds"); uptime != gauges.end()) summary.uptime_seconds = uptime->second;
    }
    const Array::Ptr applications = array_of(object, "applications");
    for (std::size_t i = 0; i < applications->size(); ++i) {
      const Object::Ptr entry = applications->getObject(static_cast<unsigned>(i));
      if (!entry) throw std::runtime_error("GET /api/summary: an application that is not an object");
      UnitSummary unit;
      unit.tid = static_cast<std::uint32_t>(number_or(entry, "tid", 0));
      unit.class_name = text_of(entry, "class");
      unit.instance = static_cast<std::uint32_t>(number_or(entry, "instance", 0));
      unit.name = text_of(entry, "name");
      unit.state = text_of(entry, "state");
      unit.reason = text_of(entry, "reason");
      unit.run = static_cast<std::uint64_t>(number_or(entry, "run", 0));
      unit.counters = numbers_of(entry, "counters");
      unit.gauges = numbers_of(entry, "gauges");
      if (const Array::Ptr subscriptions = entry->getArray("subscriptions")) {
        for (std::size_t k = 0; k < subscriptions->size(); ++k) {
          const Object::Ptr item = subscriptions->getObject(static_cast<unsigned>(k));
          if (!item) throw std::runtime_error("GET /api/summary: a subscription that is not an object");
          unit.subscriptions.push_back(SubscriptionSummary{text_of(item, "stream"), text_of(item, "subscriber"),
                                                           text_of(item, "policy"), numbers_of(item, "counters"),
                                                           numbers_of(item, "gauges")});
        }
      }
      unit.subscriptions_total =
          static_cast<std::size_t>(number_or(entry, "subscriptions_total", static_cast<double>(unit.subscriptions.size())));
      summary.units.push_back(std::move(unit));
    }
    const Array::Ptr transports = array_of(object, "transports");
    for (std::size_t i = 0; i < transports->size(); ++i) {
      const Object::Ptr entry = transports->getObject(static_cast<unsigned>(i));
      if (!entry) throw std::runtime_error("GET /api/summary: a transport that is not an object");
      TransportSummary transport;
      transport.protocol = text_of(entry, "protocol");
      transport.endpoint = text_of(entry, "endpoint");
      transport.connections_up = static_cast<std::size_t>(number_or(entry, "connections_up", 0));
      transport.connections_total = static_cast<std::size_t>(number_or(entry, "connections_total", 0));
      if (const Array::Ptr down = entry->getArray("connections_down"))
        for (std::size_t d = 0; d < down->size(); ++d) transport.down.push_back(down->getElement<std::string>(static_cast<unsigned>(d)));
      transport.counters = numbers_of(entry, "counters");
      transport.gauges = numbers_of(entry, "gauges");
      summary.transports.push_back(std::move(transport));
    }
    const Array::Ptr pools = array_of(object, "pools");
    for (std::size_t i = 0; i < pools->size(); ++i) {
      const Object::Ptr entry = pools->getObject(static_cast<unsigned>(i));
      if (!entry) throw std::runtime_error("GET /api/summary: a pool that is not an object");
      PoolSummary pool;
      pool.name = text_of(entry, "name");
      pool.bytes_reserved = static_cast<std::uint64_t>(number_or(entry, "bytes_reserved", 0));
      pool.bytes_total = static_cast<std::uint64_t>(number_or(entry, "bytes_total", 0));
      pool.bytes_used = static_cast<std::uint64_t>(number_or(entry, "bytes_used", 0));
      pool.blocks_total = static_cast<std::uint64_t>(number_or(entry, "blocks_total", 0));
      pool.blocks_used = static_cast<std::uint64_t>(number_or(entry, "blocks_used", 0));
      pool.failed_allocations = static_cast<std::uint64_t>(number_or(entry, "failed_allocations", 0));
      summary.pools.push_back(std::move(pool));
    }
  } catch (const Poco::Exception& error) {
    throw std::runtime_error("GET /api/summary: not the JSON expected: " + error.displayText());
  }
  return summary;
}

}  // namespace daqx
