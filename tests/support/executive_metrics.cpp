// Reading pools and transports of a running executive over its JSON API.
#include "executive_metrics.hpp"

#include <Poco/JSON/Parser.h>

#include <cmath>
#include <cstdlib>

namespace daqx::test {

Poco::JSON::Array::Ptr get_array(const ExecutiveProcess& executive, const std::string& path) {
  HttpReply reply = executive.get(path);
  if (reply.status != 200) return nullptr;
  return Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
}

double control_refusals(const HttpReply& metrics, const std::string& reason) {
  const std::string series = "daqx_control_refused_total{reason=\"" + reason + "\"} ";
  const std::size_t at = metrics.body.find(series);
  return at == std::string::npos ? -1 : std::atof(metrics.body.c_str() + at + series.size());
}

double labelled_metric(const ExecutiveProcess& executive, std::uint32_t tid, const std::string& name,
                       const std::string& label, const std::string& value) {
  Poco::JSON::Object::Ptr app = executive.application(tid);
  Poco::JSON::Array::Ptr metrics = app ? app->getArray("metrics") : nullptr;
  for (std::size_t i = 0; metrics && i < metrics->size(); ++i) {
    Poco::JSON::Object::Ptr m = metrics->getObject(static_cast<unsigned>(i));
    if (m->getValue<std::string>("name") != name) continue;
    Poco::JSON::Object::Ptr labels = m->getObject("labels");
    if (labels && labels->has(label) && labels->getValue<std::string>(label) == value) return m->getValue<double>("value");
  }
  return std::nan("");
}

double pool_blocks_used(const ExecutiveProcess& executive, const std::string& pool) {
  Poco::JSON::Array::Ptr pools = get_array(executive, "/api/pools");
  for (std::size_t i = 0; pools && i < pools->size(); ++i) {
    Poco::JSON::Object::Ptr p = pools->getObject(static_cast<unsigned>(i));
    if (p->getValue<std::string>("name").find(pool) == std::string::npos) continue;
    double used = 0;
    Poco::JSON::Array::Ptr classes = p->getArray("classes");
    for (std::size_t c = 0; classes && c < classes->size(); ++c)
      used += classes->getObject(static_cast<unsigned>(c))->getValue<double>("blocks_used");
    return used;
  }
  return -1;
}

double transport_metric(const ExecutiveProcess& executive, const std::string& name) {
  Poco::JSON::Array::Ptr transports = get_array(executive, "/api/transports");
  double total = 0;
  bool found = false;
  for (std::size_t t = 0; transports && t < transports->size(); ++t) {
    Poco::JSON::Array::Ptr metrics = transports->getObject(static_cast<unsigned>(t))->getArray("metrics");
    for (std::size_t i = 0; metrics && i < metrics->size(); ++i) {
      Poco::JSON::Object::Ptr m = metrics->getObject(static_cast<unsigned>(i));
      if (m->getValue<std::string>("name") != name) continue;
      total += m->getValue<double>("value");
      found = true;
    }
  }
  return found ? total : std::nan("");
}

double connection_metric(const ExecutiveProcess& executive, const std::string& peer_context, const std::string& name) {
  Poco::JSON::Array::Ptr transports = get_array(executive, "/api/transports");
  for (std::size_t t = 0; transports && t < transports->size(); ++t) {
    Poco::JSON::Array::Ptr connections = transports->getObject(static_cast<unsigned>(t))->getArray("connections");
    for (std::size_t c = 0; connections && c < connections->size(); ++c) {
      Poco::JSON::Object::Ptr connection = connections->getObject(static_cast<unsigned>(c));
      if (!connection->getValue<bool>("outgoing") || connection->optValue<std::string>("peer_context", "") != peer_context)
        continue;
      Poco::JSON::Array::Ptr metrics = connection->getArray("metrics");
      for (std::size_t i = 0; metrics && i < metrics->size(); ++i) {
        Poco::JSON::Object::Ptr m = metrics->getObject(static_cast<unsigned>(i));
        if (m->getValue<std::string>("name") == name) return m->getValue<double>("value");
      }
    }
  }
  return std::nan("");
}

std::string transport_parameter(const ExecutiveProcess& executive, const std::string& name) {
  Poco::JSON::Array::Ptr transports = get_array(executive, "/api/transports");
  for (std::size_t t = 0; transports && t < transports->size(); ++t) {
    Poco::JSON::Array::Ptr parameters = transports->getObject(static_cast<unsigned>(t))->getArray("parameters");
    for (std::size_t i = 0; parameters && i < parameters->size(); ++i) {
      Poco::JSON::Object::Ptr p = parameters->getObject(static_cast<unsigned>(i));
      if (p->getValue<std::string>("name") == name) return p->getValue<std::string>("value");
    }
  }
  return "";
}

double receive_blocks_at_rest(const ExecutiveProcess& executive, const TransportProfile& profile) {
  if (!profile.capabilities.posted_receive_buffers) return 0;
  // A transport with a shared receive queue keeps the buffers of closed connections posted there for the
  // next ones, so it says how many it holds; the others say what their open connections hold.
  const double posted = transport_metric(executive, "receive_buffers_posted");
  if (!std::isnan(posted)) return posted;
  const double held = transport_metric(executive, "receive_buffers_held");
  if (!std::isnan(held)) return held;
  const std::string depth = transport_parameter(executive, "recvDepth");
  if (depth.empty()) return std::nan("");
  return std::stod(depth) * transport_metric(executive, "incoming_connections");
}


}  // namespace daqx::test
