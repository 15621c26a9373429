// Two rounds of POST /api/connect over a ControlRequestPool: open (timeout=0) everywhere, then wait on each for
// what is left.
#include "daqx/control/partition_connect.hpp"

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <algorithm>

namespace daqx {
namespace {

using Clock = std::chrono::steady_clock;

// The executive answers 504 itself when its wait is over: the HTTP deadline is this much longer than the wait.
constexpr auto kAnswerMargin = std::chrono::seconds(5);

std::string text_of(const Poco::JSON::Object::Ptr& object, const std::string& key) {
  if (!object || !object->has(key) || object->isNull(key)) return {};
  return object->get(key).convert<std::string>();
}

Poco::JSON::Object::Ptr json_object(const std::string& body) {
  try {
    const Poco::Dynamic::Var parsed = Poco::JSON::Parser().parse(body);
    if (parsed.type() == typeid(Poco::JSON::Object::Ptr)) return parsed.extract<Poco::JSON::Object::Ptr>();
  } catch (const Poco::Exception&) {
    // Not JSON: said by the caller.
  }
  return {};
}

// The status, and why when it is neither 200 nor 504.
void take_status(ContextConnections& context, const HttpReply& reply) {
  context.status = reply.status;
  if (!reply.answered()) {
    context.error = reply.body;
    return;
  }
  if (reply.status == 200 || reply.status == 504) return;
  const Poco::JSON::Object::Ptr answer = json_object(reply.body);
  if (!answer) {  // not our API: as good as no answer
    context.status = 0;
    context.error = "answered " + std::to_string(reply.status) + " without JSON";
    return;
  }
  context.error = text_of(answer, "error");
  if (context.error.empty()) context.error = "no reason given";
}

// What one context said of its wait (on a pool worker; each call for a context of its own).
void take_wait(ContextConnections& context, const HttpReply& reply, Clock::time_point started) {
  context.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  take_status(context, reply);
  if (reply.status != 200 && reply.status != 504) return;
  const Poco::JSON::Object::Ptr answer = json_object(reply.body);
  if (!answer) {  // not our API: as good as no answer
    context.status = 0;
    context.error = "answered " + std::to_string(reply.status) + " without JSON";
    return;
  }
  context.up = answer->optValue<std::size_t>("up", 0);
  context.total = answer->optValue<std::size_t>("total", 0);
  const Poco::JSON::Array::Ptr down = answer->getArray("down");
  for (std::size_t i = 0; down && i < down->size(); ++i) {
    const Poco::JSON::Object::Ptr entry = down->getObject(static_cast<unsigned>(i));
    context.down.push_back(DownConnection{text_of(entry, "protocol"), text_of(entry, "peer"), text_of(entry, "remote")});
  }
}

}  // namespace

std::vector<ContextConnections> connect_contexts(const std::vector<std::string>& urls, std::chrono::milliseconds limit,
                                                 ControlRequestPool& pool, std::chrono::milliseconds ask_deadline) {
  const auto started = Clock::now();
  const auto deadline = started + limit;
  std::vector<ContextConnections> contexts(urls.size());
  std::vector<ControlRequest> opening;
  for (const std::string& url : urls)
    opening.push_back(ControlRequest{.url = url, .method = "POST", .path = "/api/connect?timeout=0", .body = "{}",
                                     .deadline = ask_deadline});
  const std::vector<HttpReply> opened = pool.send(opening);
  std::vector<std::size_t> waiting;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    contexts[i].url = urls[i];
    take_status(contexts[i], opened[i]);
    if (contexts[i].status == 200 || contexts[i].status == 504)
      waiting.push_back(i);
    else
      contexts[i].seconds = std::chrono::duration<double>(Clock::now() - started).count();
  }
  // The waits go the pool's fan-out at a time, each taking what is left of the limit when its turn comes, so that
  // a wait that starts late ends in time too.
  for (std::size_t first = 0; first < waiting.size(); first += pool.fanout()) {
    const std::size_t end = std::min<std::size_t>(waiting.size(), first + pool.fanout());
    const auto left = std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    std::vector<ControlRequest> waits;
    for (std::size_t w = first; w < end; ++w)
      waits.push_back(ControlRequest{.url = contexts[waiting[w]].url, .method = "POST",
                                     .path = "/api/connect?timeout=" + std::to_string(left.count()), .body = "{}",
                                     .deadline = left + kAnswerMargin});
    pool.run(waits, [&](std::size_t w, HttpReply reply) { take_wait(contexts[waiting[first + w]], reply, started); });
  }
  return contexts;
}

}  // namespace daqx
