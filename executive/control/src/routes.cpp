// Which path and method does what: the route table of the control server and its error answers.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string_view>

#include <Poco/Exception.h>
#include <Poco/URI.h>

#include "connect_wait.hpp"
#include "control_routes.hpp"
#include "daqx/api/named_services.hpp"
#include "daqx/control/partition_view.hpp"
#include "daqx/services/number_text.hpp"
#include "daqx/services/text.hpp"
#include "daqx/streams/external_record.hpp"
#include "daqx/streams/external_sink.hpp"
#include "stream_writer.hpp"

namespace daqx::http {
namespace {

constexpr const char* kGetMethods = "GET, HEAD";
constexpr const char* kPostMethods = "POST";

bool is_api(std::string_view path) { return path == "/api" || path.starts_with("/api/"); }

// A request's target, decoded: the path and the query's parameters.
struct Target {
  std::string path;
  Poco::URI::QueryParameters query;
};

// /api answers in JSON, so a client reads every failure the same way; a browser gets a small page. Reasons
// quote what the client sent (paths, methods, values): made one line of UTF-8 here, where every error passes.
Reply error_reply(std::string_view path, int status, const std::string& reason) {
  Reply reply;
  reply.status = status;
  const std::string text = strings::printable(reason);
  if (is_api(path)) {
    reply.content_type = kJsonType;
    reply.body = json_error(text);
  } else if (path == "/metrics") {
    reply.content_type = kTextType;
    reply.body = text + "\n";
  } else {
    reply.content_type = kHtmlType;
    reply.body = html_error_page(status, text);
  }
  return reply;
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  if (path.size() > 1 && path.ends_with('/')) path.remove_suffix(1);  // "/api/pools/" is "/api/pools"
  std::size_t start = 1;
  while (start <= path.size() && path.size() > 1) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    segments.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return segments;
}

// A TID in a path: decimal digits that fit a Tid. Nothing when it is not one.
std::optional<Tid> parse_tid(std::string_view text) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value > std::numeric_limits<Tid>::max()) return std::nullopt;
  return static_cast<Tid>(value);
}

// GET /partition or /api/partition of a partition view.
Reply partition_view(PartitionView& view, const std::string& path) {
  Reply reply;
  if (path == "/partition") {
    reply.content_type = kHtmlType;
    reply.body = view.html();
  } else {
    reply.content_type = kJsonType;
    reply.body = view.json();
  }
  return reply;
}

// Everything one request needs; each route is a member so it reaches the model, the path and the body alike.
class Router {
 public:
  Router(ControlModel& model, const Request& request, const Target& target, const AccessCheck& access, Pages& pages)
      : model_(model), request_(request), path_(target.path), query_(target.query), segments_(split_path(path_)),
        access_(access), pages_(pages) {}

  Reply route() {
    const auto& s = segments_;
    if (s.empty()) {
      return get([&] {
        return html(html_status_page(model_, access_.changes_need_token(), pages_.rates, pages_.partition_view != nullptr));
      });
    }
    if (s.size() == 1 && s[0] == "metrics") return get([&] { return metrics(); });
    if (path_ == "/partition" || path_ == "/api/partition") {
      if (pages_.partition_view == nullptr)
        return error_reply(path_, 404, "this executive serves no partition view: " + strings::quoted(path_));
      return get([&] { return partition_view(*pages_.partition_view, path_); });
    }
    if (s.size() == 2 && s[0] == "app") return get([&] { return application_page(s[1]); });
    if (s[0] != "api" || s.size() < 2) return not_found();

    if (s.size() == 2) {
      if (s[1] == "applications") return get([&] { return json_reply(200, json_applications(model_.applications())); });
      if (s[1] == "transition") return post([&] { return transition(std::nullopt); });
      if (s[1] == "connect") return post([&] { return connect_all(); });
      if (s[1] == "pools") return get([&] { return json_reply(200, json_pools(model_.pools())); });
      if (s[1] == "threads") return get([&] { return json_reply(200, json_threads(model_.threads())); });
      if (s[1] == "transports") return get([&] { return json_reply(200, json_transports(model_.transports())); });
      if (s[1] == "summary") return get([&] { return json_reply(200, json_summary(model_)); });
      if (s[1] == "executive") {
        return get([&] {
          return json_reply(200, json_executive(model_.partition_name(), model_.context_url(), model_.run_number(),
                                                model_.run_seconds(), model_.executive_metrics()));
        });
      }
      return not_found();
    }
    if (s[1] != "applications") return not_found();
    if (s.size() == 3) return get([&] { return application_json(s[2]); });
    if (s.size() == 4 && s[3] == "transition") {
      return post([&] { return with_tid(s[2], [&](Tid tid) { return transition(tid); }); });
    }
    if (s.size() == 4 && s[3] == "parameters") {
      return post([&] { return with_tid(s[2], [&](Tid tid) { return set_parameter(tid); }); });
    }
    if (s.size() == 4 && s[3] == "streams") return get([&] { return with_tid(s[2], [&](Tid tid) { return streams_of(tid); }); });
    if (s.size() == 5 && s[3] == "streams") {
      return get([&] { return with_tid(s[2], [&](Tid tid) { return subscribe(tid, std::string(s[4])); }); });
    }
    return not_found();
  }

 private:
  template <typename Handler>
  Reply get(Handler handler) {
    if (request_.method != "GET" && request_.method != "HEAD") return method_not_allowed(kGetMethods);
    return handler();
  }

  template <typename Handler>
  Reply post(Handler handler) {
    if (request_.method != "POST") return method_not_allowed(kPostMethods);
    if (request_.body_too_large) {
      return error_reply(path_, 413, "request body larger than " + std::to_string(kMaxRequestBody) + " bytes");
    }
    if (request_.body_incomplete)
      return error_reply(path_, 400, "request body cut off before its end (fewer bytes than its Content-Length, or no last chunk)");
    return handler();
  }

  template <typename Handler>
  Reply with_tid(std::string_view text, Handler handler) {
    const std::optional<Tid> tid = parse_tid(text);
    if (!tid) return error_reply(path_, 400, "not an application id: " + strings::quoted(text));
    return handler(*tid);
  }

  Reply method_not_allowed(const char* allowed) {
    Reply reply = error_reply(path_, 405, "method " + strings::quoted(request_.method) + " not allowed here: use " + allowed);
    reply.allow = allowed;
    return reply;
  }

  Reply not_found() { return error_reply(path_, 404, "no such page: " + strings::quoted(path_)); }

  Reply no_such_application(Tid tid) { return error_reply(path_, 404, "no application with tid " + std::to_string(tid)); }

  static Reply html(std::string body) {
    Reply reply;
    reply.content_type = kHtmlType;
    reply.body = std::move(body);
    return reply;
  }

  Reply metrics() {
    Reply reply;
    reply.content_type = kMetricsType;
    reply.body = prometheus_metrics(model_, control_metrics());
    return reply;
  }

  // The control server's own: its refusals, and how many of its places for connect waits and streaming clients
  // are taken, so that an operator answered 503 busy sees what ran out.
  std::vector<Metric> control_metrics() const {
    MetricSink sink;
    sink.gauge("connect_waits", static_cast<double>(pages_.connect_waits.load(std::memory_order_relaxed)),
               "POST /api/connect waits in progress; at most " + std::to_string(kMaxConnectWaits) +
                   ", more are answered 503 busy");
    const unsigned streaming = pages_.stream_clients ? pages_.stream_clients->load(std::memory_order_relaxed) : 0;
    sink.gauge("stream_clients", static_cast<double>(streaming),
               "streaming clients connected; at most " + std::to_string(kMaxStreamClients) +
                   ", more are answered 503 busy");
    std::vector<Metric> metrics = access_.metrics();
    metrics.insert(metrics.end(), sink.metrics().begin(), sink.metrics().end());
    return metrics;
  }

  Reply application_page(std::string_view text) {
    return with_tid(text, [&](Tid tid) {
      const std::optional<ApplicationStatus> application = model_.application(tid);
      if (!application) return no_such_application(tid);
      return html(html_application_page(model_, *application, access_.changes_need_token(), pages_.rates));
    });
  }

  Reply application_json(std::string_view text) {
    return with_tid(text, [&](Tid tid) {
      const std::optional<ApplicationStatus> application = model_.application(tid);
      if (!application) return no_such_application(tid);
      return json_reply(200, http::json_application(*application));
    });
  }

  Reply transition(std::optional<Tid> tid) {
    std::optional<Command> command;
    std::uint64_t run = 0;
    if (std::string reason = parse_transition_body(request_.body, command, run); !reason.empty()) {
      return error_reply(path_, 400, reason);
    }
    const TransitionResult result = model_.run_transition(tid, *command, run);
    const bool valid_status = result.http_status >= 200 && result.http_status <= 599;
    return json_reply(valid_status ? result.http_status : 500, json_transition_result(result));
  }

  // POST /api/connect[?timeout=ms]: opens every outgoing connection of every transport ahead of a run and
  // waits until all are up (200) or the timeout passes (504, naming those still down). The wait is a pending
  // reply: the server parks it off its request threads, so waits never take the threads that status reads, stop
  // and halt need; at most kMaxConnectWaits wait at once (more are 503 at once).
  Reply connect_all() {
    std::uint64_t timeout_ms = 10000;
    for (const auto& [key, value] : query_) {
      if (key != "timeout") continue;
      const numbers::Parsed<std::uint64_t> parsed = numbers::parse_unsigned(value, 0, 120000);
      if (!parsed) return error_reply(path_, 400, "timeout (milliseconds, 0 to 120000): " + parsed.error);
      timeout_ms = *parsed;
    }
    Reply reply;  // once the executive is stopping, the wait's first poll answers 503
    reply.pending = start_connect_wait(model_, pages_, std::chrono::milliseconds(static_cast<std::int64_t>(timeout_ms)));
    if (reply.pending == nullptr) {
      access_.count_busy_refusal();
      return error_reply(path_, 503,
                         "busy: " + std::to_string(kMaxConnectWaits) +
                             " connect waits are in progress on this executive; ask again when one is answered");
    }
    return reply;
  }

  // The stream directory of application tid (streams/external_sink.hpp), or the reply that says why there is none.
  std::shared_ptr<streams::StreamDirectory> directory(Tid tid, Reply& refusal) {
    if (!model_.application(tid)) {
      refusal = no_such_application(tid);
      return nullptr;
    }
    auto found = std::static_pointer_cast<streams::StreamDirectory>(find_service(streams::directory_service_name(tid)));
    if (!found) refusal = error_reply(path_, 404, "application " + std::to_string(tid) + " offers no streams");
    return found;
  }

  // GET /api/applications/<tid>/streams: the streams an application offers, with their counts.
  Reply streams_of(Tid tid) {
    Reply refusal;
    const auto found = directory(tid, refusal);
    if (!found) return refusal;
    return json_reply(200, json_streams(found->streams()));
  }

  // GET /api/applications/<tid>/streams/<name>?policy=TEXT: the stream as a chunked answer of records, written by
  // the server's stream writer; refusals before it starts, each with its status.
  Reply subscribe(Tid tid, const std::string& name) {
    Reply refusal;
    const auto found = directory(tid, refusal);
    if (!found) return refusal;
    std::string policy_text = "drop-newest";
    for (const auto& [key, value] : query_) {
      if (key == "policy") policy_text = value;
      else return error_reply(path_, 400, "unknown query parameter " + strings::quoted(key) + ": only policy");
    }
    const streams::ParsedPolicy policy = streams::parse_policy(policy_text);
    if (!policy.policy) return error_reply(path_, 400, policy.error);
    if (request_.method == "HEAD") {  // the answer's head alone: no subscription for it
      Reply reply;
      reply.content_type = streams::kRecordContentType;
      return reply;
    }
    if (!pages_.stream_clients)
      return error_reply(path_, 503, "streams are served by the control server only");
    if (pages_.stream_clients->fetch_add(1) >= kMaxStreamClients) {
      pages_.stream_clients->fetch_sub(1);
      access_.count_busy_refusal();
      return error_reply(path_, 503, "busy: " + std::to_string(kMaxStreamClients) +
                                         " streaming clients are connected to this executive, the most it serves");
    }
    auto client = std::make_shared<StreamClient>(pages_.stream_clients);  // lowers the count when it goes
    streams::StreamDirectory::Attached attached = found->attach(name, *policy.policy, client);
    if (!attached.subscription) {
      using Refusal = streams::StreamDirectory::Refusal;
      const int status = attached.refusal == Refusal::unknown_stream ? 404
                         : attached.refusal == Refusal::not_offering ? 409
                         : attached.refusal == Refusal::full         ? 503
                                                                     : 400;
      return error_reply(path_, status, attached.error);
    }
    client->subscribed(std::move(attached.subscription));
    Reply reply;
    reply.stream = std::move(client);
    return reply;
  }

  Reply set_parameter(Tid tid) {
    std::string name;
    std::string value;
    if (std::string reason = parse_parameter_body(request_.body, name, value); !reason.empty()) {
      return error_reply(path_, 400, reason);
    }
    const std::optional<ApplicationStatus> application = model_.application(tid);
    if (!application) return no_such_application(tid);
    const std::string refusal = model_.set_parameter(tid, name, value);
    if (refusal.empty()) return json_reply(200, json_ok());
    // Parameters change only while Halted: otherwise the request was fine but came at the wrong time.
    const bool busy = refusal.starts_with(kBusyRefusal);
    return error_reply(path_, application->state == State::halted && !busy ? 400 : 409, refusal);
  }

  ControlModel& model_;
  const Request& request_;
  std::string path_;
  const Poco::URI::QueryParameters& query_;
  std::vector<std::string_view> segments_;  // views into path_
  const AccessCheck& access_;
  Pages& pages_;
};

// 401 says "show who you are", 403 "you are not allowed": a client tells a missing token from a wrong one.
Reply refused(std::string_view path, Refusal refusal) {
  if (refusal == Refusal::bad_token) return error_reply(path, 403, "the bearer token presented is not this partition's");
  Reply reply = error_reply(path, 401,
                            "this request needs the partition's bearer token (Authorization: Bearer TOKEN; "
                            "daqxctl --token-file FILE or DAQX_TOKEN_FILE)");
  reply.www_authenticate = "Bearer realm=\"daqx\"";
  return reply;
}

// The checks every request passes before its route (token, target, framing), then `route` with the target. The
// path and the query are decoded here, both at once, so a malformed escape anywhere in the target is a 400 before
// any route runs (never an exception in a route, answered 500).
template <typename Route>
Reply checked(const Request& request, const AccessCheck& access, Route route) {
  Target target;
  try {
    std::string target_error;
    try {
      const Poco::URI uri(request.target);
      target.path = uri.getPath();
      target.query = uri.getQueryParameters();
    } catch (const Poco::Exception& error) {
      if (target.path.empty()) target.path = request.target;
      target_error = error.message();
    }
    const std::string& path = target.path;
    // Before anything else looks at the request: a client without the token learns nothing from it.
    if (const Refusal refusal = access.check(request.method, request.authorization); refusal != Refusal::none)
      return refused(path, refusal);
    if (!target_error.empty()) return error_reply(path, 400, "bad request target: " + strings::printable(target_error, strings::kQuotedBytes));
    if (!path.starts_with('/')) return error_reply(path, 400, "bad request target: " + strings::quoted(request.target));
    if (!request.framing_error.empty()) return error_reply(path, 400, request.framing_error);
    return route(target);
  } catch (const Poco::Exception& error) {
    return error_reply(target.path, 500, "internal error: " + error.displayText());
  } catch (const std::exception& error) {
    return error_reply(target.path, 500, std::string("internal error: ") + error.what());
  } catch (...) {
    return error_reply(target.path, 500, "internal error: unknown exception");
  }
}

}  // namespace

Reply handle_request(ControlModel& model, const Request& request, const AccessCheck& access, Pages* pages) {
  Pages none;
  return checked(request, access, [&](const Target& target) {
    Reply reply = Router(model, request, target, access, pages != nullptr ? *pages : none).route();
    if (reply.pending != nullptr && pages == nullptr)  // the wait would outlive `none`: only a server parks waits
      return error_reply(target.path, 503, "connect waits are served by the control server only");
    if (reply.stream != nullptr && pages == nullptr)
      return error_reply(target.path, 503, "streams are served by the control server only");
    return reply;
  });
}

Reply handle_dashboard_request(PartitionView& view, const Request& request, const AccessCheck& access) {
  return checked(request, access, [&](const Target& target) {
    const std::string& path = target.path;
    if (path != "/" && path != "/partition" && path != "/api/partition")
      return error_reply(path, 404, "no such page: " + strings::quoted(path));
    if (request.method != "GET" && request.method != "HEAD") {
      Reply reply = error_reply(path, 405, "method " + strings::quoted(request.method) + " not allowed here: use " + kGetMethods);
      reply.allow = kGetMethods;
      return reply;
    }
    if (path == "/") {  // the dashboard is all this server has
      Reply reply;
      reply.status = 302;
      reply.content_type = kHtmlType;
      reply.location = "/partition";
      reply.body = "<a href=\"/partition\">/partition</a>\n";
      return reply;
    }
    return partition_view(view, path);
  });
}

}  // namespace daqx::http
