// The JSON shapes of the control API (documented in docs/control-api.md), written and read with Poco::JSON.
#include <unistd.h>

#include <cmath>
#include <sstream>

#include <Poco/Dynamic/Var.h>
#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>
#include <Poco/JSONString.h>

#include "control_routes.hpp"
#include "daqx/streams/external_sink.hpp"
#include "daqx/streams/external_sink.hpp"
#include "json_writing.hpp"
#include "daqx/control/module_listing.hpp"
#include "daqx/control/executive_identity.hpp"
#include "daqx/executive/run_number.hpp"

namespace daqx::http {
namespace {

using Poco::JSON::Array;
using Poco::JSON::Object;

Object::Ptr labels_object(const std::vector<std::pair<std::string, std::string>>& labels) {
  Object::Ptr object = new_object();
  for (const auto& [name, value] : labels) object->set(name, value);
  return object;
}

const char* kind_name(Metric::Kind kind) {
  switch (kind) {
    case Metric::Kind::counter: return "counter";
    case Metric::Kind::histogram: return "histogram";
    case Metric::Kind::state_set: return "state_set";
    case Metric::Kind::gauge: break;
  }
  return "gauge";
}

Array::Ptr metrics_array(const std::vector<Metric>& metrics) {
  Array::Ptr array = new Array;
  for (const Metric& metric : metrics) {
    Object::Ptr object = new_object();
    object->set("name", metric.name);
    object->set("kind", std::string(kind_name(metric.kind)));
    object->set("value", number(metric.value));
    object->set("help", metric.help);
    object->set("labels", labels_object(metric.labels));
    // false: for people only (a rate, a percentile, a setting); /metrics leaves it out
    object->set("exported", metric.audience == Metric::Audience::everyone);
    if (metric.kind == Metric::Kind::state_set) {
      Array::Ptr states = new Array;
      for (const std::string& state : metric.states) states->add(state);
      object->set("states", states);
      const auto current = static_cast<std::size_t>(metric.value);
      object->set("state", current < metric.states.size() ? metric.states[current] : std::string());
    }
    if (metric.kind == Metric::Kind::histogram) {
      Array::Ptr buckets = new Array;
      const HistogramSnapshot& histogram = metric.histogram;
      for (std::size_t i = 0; i < histogram.upper_bounds.size() && i < histogram.cumulative.size(); ++i) {
        Object::Ptr bucket = new_object();
        bucket->set("le", histogram.upper_bounds[i]);
        bucket->set("count", histogram.cumulative[i]);
        buckets->add(bucket);
      }
      object->set("buckets", buckets);
      object->set("sum", number(histogram.sum));
      object->set("count", histogram.count);
    }
    array->add(object);
  }
  return array;
}

Array::Ptr params_array(const std::vector<ParamView>& params) {
  Array::Ptr array = new Array;
  for (const ParamView& param : params) {
    Object::Ptr object = new_object();
    object->set("name", param.name);
    object->set("type", param.type);
    object->set("value", param.value);
    object->set("default", param.default_value);
    object->set("unit", param.unit);
    object->set("help", param.help);
    array->add(object);
  }
  return array;
}

Array::Ptr int_array(const std::vector<int>& values) {
  Array::Ptr array = new Array;
  for (int value : values) array->add(value);
  return array;
}

Object::Ptr application_object(const ApplicationStatus& application) {
  Object::Ptr object = new_object();
  object->set("tid", application.tid);
  object->set("class", application.class_name);
  object->set("instance", application.instance);
  object->set("name", application.name);
  object->set("state", std::string(to_string(application.state)));
  object->set("reason", application.reason);
  object->set("run", application.run);
  object->set("parameters", params_array(application.params));
  object->set("metrics", metrics_array(application.metrics));
  return object;
}

// A body that is a JSON object, or the reason it is not.
std::string parse_object(const std::string& body, Object::Ptr& object, const char* example) {
  if (body.empty()) return std::string("empty body: expected a JSON object like ") + example;
  Poco::Dynamic::Var document;
  try {
    Poco::JSON::Parser parser;
    parser.setDepth(16);  // our bodies are flat; a deep one is only an attempt to exhaust the stack
    document = parser.parse(body);
  } catch (const Poco::Exception& error) {
    return "bad JSON: " + error.message();
  }
  if (document.type() != typeid(Object::Ptr)) {
    return std::string("bad JSON: expected an object like ") + example;
  }
  object = document.extract<Object::Ptr>();
  return {};
}

// A string, number or boolean member as text; the reason when it is something else.
std::string scalar_member(const Object::Ptr& object, const std::string& key, std::string& text) {
  if (!object->has(key)) return "missing \"" + key + "\"";
  const Poco::Dynamic::Var member = object->get(key);
  if (member.isEmpty() || !(member.isString() || member.isNumeric() || member.isBoolean())) {
    return "\"" + key + "\" must be a string";
  }
  text = member.convert<std::string>();
  return {};
}

// A run number: a JSON whole number from 1 to kMaxRunNumber (a larger one would not survive a JSON reader or
// Prometheus's doubles); text, fractions, signs and 0 are refused, so a typo never starts the wrong run.
std::string run_member(const Poco::Dynamic::Var& member, std::uint64_t& run) {
  static const std::string expected = "\"run\" must be a whole number from 1 to " + std::to_string(kMaxRunNumber);
  if (member.isBoolean() || !member.isInteger()) return expected + ", not " + member.toString();
  if (member.isSigned()) {
    const auto value = member.convert<Poco::Int64>();
    if (value <= 0) return expected + ", not " + std::to_string(value);
    run = static_cast<std::uint64_t>(value);
  } else {
    run = member.convert<Poco::UInt64>();
  }
  if (run == 0 || run > kMaxRunNumber) return expected + ", not " + std::to_string(run);
  return {};
}

}  // namespace

std::string json_error(const std::string& reason) {
  Object::Ptr object = new_object();
  object->set("error", reason);
  return stringify(object);
}

std::string json_ok() {
  Object::Ptr object = new_object();
  object->set("ok", true);
  return stringify(object);
}

std::string json_application(const ApplicationStatus& application) {
  return stringify(application_object(application));
}

std::string json_applications(const std::vector<ApplicationStatus>& applications) {
  Array::Ptr array = new Array;
  for (const ApplicationStatus& application : applications) array->add(application_object(application));
  return stringify(array);
}

std::string json_transition_result(const TransitionResult& result) {
  Object::Ptr object = new_object();
  object->set("ok", result.ok);
  object->set("message", result.message);
  // Every refused /api answer carries "error", so a client reads failures one way.
  if (!result.ok) object->set("error", result.message.empty() ? std::string("refused") : result.message);
  Array::Ptr states = new Array;
  for (const auto& [tid, state] : result.states) {
    Object::Ptr entry = new_object();
    entry->set("tid", tid);
    entry->set("state", std::string(to_string(state)));
    states->add(entry);
  }
  object->set("states", states);
  return stringify(object);
}

std::string json_pools(const std::vector<PoolStatus>& pools) {
  Array::Ptr array = new Array;
  for (const PoolStatus& pool : pools) {
    Object::Ptr object = new_object();
    object->set("name", pool.stats.name);
    object->set("allocator", pool.stats.allocator);
    object->set("numa_node", pool.numa_node);
    object->set("bytes_reserved", pool.stats.bytes_reserved);
    Array::Ptr classes = new Array;
    for (const mem::SizeClassStats& size_class : pool.stats.classes) {
      Object::Ptr entry = new_object();
      entry->set("block_size", size_class.block_size);
      entry->set("blocks_total", size_class.blocks_total);
      entry->set("blocks_used", size_class.blocks_used);
      entry->set("blocks_free", size_class.blocks_free);
      entry->set("chunks", size_class.chunks);
      entry->set("max_chunks", size_class.max_chunks);
      entry->set("high_water", size_class.high_water);
      entry->set("failed_allocations", size_class.failed_allocations);
      entry->set("double_releases", size_class.double_releases);
      classes->add(entry);
    }
    object->set("classes", classes);
    Array::Ptr chunks = new Array;
    for (const ChunkView& chunk : pool.chunks) {
      Object::Ptr entry = new_object();
      entry->set("address", static_cast<std::uint64_t>(chunk.address));
      entry->set("bytes", static_cast<std::uint64_t>(chunk.bytes));
      chunks->add(entry);
    }
    object->set("chunks", chunks);
    array->add(object);
  }
  return stringify(array);
}

std::string json_threads(const std::vector<ThreadStatus>& threads) {
  Array::Ptr array = new Array;
  for (const ThreadStatus& thread : threads) {
    Object::Ptr object = new_object();
    object->set("name", thread.name);
    object->set("kernel_tid", thread.kernel_tid);
    object->set("cores_wanted", int_array(thread.cores_wanted));
    object->set("cores", int_array(thread.cores));
    array->add(object);
  }
  return stringify(array);
}

namespace {

Object::Ptr capabilities_object(const TransportCapabilities& c) {
  Object::Ptr object = new_object();
  object->set("memory_registration", c.memory_registration);
  object->set("rdma_device", c.rdma_device);
  object->set("inline_bytes", c.inline_bytes);
  object->set("gather_limit", c.gather_limit);
  object->set("coalescing", c.coalescing);
  object->set("busy_polling", c.busy_polling);
  object->set("credit_flow", c.credit_flow);
  object->set("posted_receive_buffers", c.posted_receive_buffers);
  object->set("numa_placement", c.numa_placement);
  object->set("shared_memory_pools", c.shared_memory_pools);
  object->set("plain_tcp_port", c.plain_tcp_port);
  object->set("frames_on_plain_tcp", c.frames_on_plain_tcp);
  object->set("connection_manager", c.connection_manager);
  return object;
}

}  // namespace

}  // namespace daqx::http

namespace daqx {

std::string transport_capabilities_json(
    const std::vector<std::pair<std::string, TransportCapabilities>>& transports) {
  using namespace http;
  Array::Ptr array = new Array;
  for (const auto& [protocol, capabilities] : transports) {
    Object::Ptr object = new_object();
    object->set("protocol", protocol);
    object->set("capabilities", capabilities_object(capabilities));
    array->add(object);
  }
  return stringify(array);
}

}  // namespace daqx

namespace daqx::http {

std::string json_transports(const std::vector<TransportStatus>& transports) {
  Array::Ptr array = new Array;
  for (const TransportStatus& transport : transports) {
    Object::Ptr object = new_object();
    object->set("protocol", transport.protocol);
    object->set("endpoint", transport.endpoint);
    object->set("capabilities", capabilities_object(transport.capabilities));
    object->set("parameters", params_array(transport.params));
    object->set("metrics", metrics_array(transport.metrics));
    Object::Ptr plan = new_object();
    plan->set("outgoing", transport.planned_outgoing);
    plan->set("incoming", transport.planned_incoming);
    object->set("plan", plan);
    Array::Ptr connections = new Array;
    for (const ConnectionInfo& connection : transport.connections) {
      Object::Ptr entry = new_object();
      entry->set("peer", connection.peer);
      entry->set("remote", connection.remote);
      entry->set("up", connection.up);
      entry->set("outgoing", connection.outgoing);
      entry->set("peer_endpoint", connection.peer_endpoint);
      entry->set("peer_context", connection.peer_context);
      entry->set("planned", connection.planned);
      entry->set("metrics", metrics_array(connection.metrics));
      connections->add(entry);
    }
    object->set("connections", connections);
    array->add(object);
  }
  return stringify(array);
}

std::string json_executive(const std::string& partition, const std::string& context, std::uint64_t run,
                           double run_seconds, const std::vector<Metric>& metrics) {
  Object::Ptr object = new_object();
  object->set("partition", partition);
  object->set("context", context);
  // Which process this is: a launcher drives only the executives it started (docs/operations.md).
  object->set("pid", static_cast<Poco::Int64>(::getpid()));
  object->set("instance", launch_instance().empty() ? Poco::Dynamic::Var() : Poco::Dynamic::Var(launch_instance()));
  object->set("run", run);
  object->set("run_seconds", run_seconds < 0 ? Poco::Dynamic::Var() : number(run_seconds));
  object->set("metrics", metrics_array(metrics));
  return stringify(object);
}

Reply json_reply(int status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.content_type = kJsonType;
  reply.body = std::move(body);
  return reply;
}

std::string json_connect_result(const ConnectResult& result) {
  Object::Ptr object = new_object();
  object->set("up", result.up);
  object->set("total", result.total);
  object->set("seconds", number(result.seconds));
  Array::Ptr down = new Array;
  for (const ConnectResult::Down& connection : result.down) {
    Object::Ptr entry = new_object();
    entry->set("protocol", connection.protocol);
    entry->set("peer", connection.peer);
    entry->set("remote", connection.remote);
    down->add(entry);
  }
  object->set("down", down);
  return stringify(object);
}

std::string json_streams(const std::vector<streams::StreamDescription>& streams) {
  Array::Ptr array = new Array;
  for (const streams::StreamDescription& stream : streams) {
    Object::Ptr entry = new_object();
    entry->set("name", stream.name);
    entry->set("published", stream.published);
    entry->set("subscribers", stream.subscribers);
    array->add(entry);
  }
  return stringify(array);
}

std::string parse_transition_body(const std::string& body, std::optional<Command>& command, std::uint64_t& run) {
  static const std::string valid = "configure, enable, stop, halt";
  Object::Ptr object;
  if (std::string reason = parse_object(body, object, R"({"command":"configure"})"); !reason.empty()) return reason;
  std::string text;
  if (std::string reason = scalar_member(object, "command", text); !reason.empty()) {
    return reason + ": one of " + valid;
  }
  command = command_from_string(text);
  if (!command) return "unknown command '" + text + "': one of " + valid;
  run = 0;
  if (!object->has("run") || object->isNull("run")) return {};
  if (*command != Command::enable) return "\"run\" goes with enable only, not with " + text;
  if (std::string reason = run_member(object->get("run"), run); !reason.empty()) return reason;
  return {};
}

std::string parse_parameter_body(const std::string& body, std::string& name, std::string& value) {
  Object::Ptr object;
  if (std::string reason = parse_object(body, object, R"({"name":"...","value":"..."})"); !reason.empty()) {
    return reason;
  }
  if (std::string reason = scalar_member(object, "name", name); !reason.empty()) return reason;
  if (name.empty()) return "\"name\" is empty";
  return scalar_member(object, "value", value);
}

}  // namespace daqx::http
