// The control server's routes and renderers, apart from the HTTP library: a request in, a reply out.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "access_check.hpp"
#include "daqx/executive/control.hpp"
#include "page_rates.hpp"

namespace daqx {
class PartitionView;
}
namespace daqx::streams {
struct StreamDescription;
}

namespace daqx::http {

// Control bodies are a few hundred bytes; a larger limit would only let a client tie up memory.
inline constexpr std::size_t kMaxRequestBody = 1u << 20;
// At most this many POST /api/connect waits at once per server. They hold no server thread (the server parks
// them, pending_replies.hpp), only a descriptor and a few hundred bytes each, so this bounds memory and the work
// of polling them, not the threads that status reads, stop and halt need.
inline constexpr unsigned kMaxConnectWaits = 32;

inline constexpr const char* kJsonType = "application/json";
inline constexpr const char* kHtmlType = "text/html; charset=utf-8";
inline constexpr const char* kTextType = "text/plain; charset=utf-8";
inline constexpr const char* kMetricsType = "text/plain; version=0.0.4; charset=utf-8";

struct Request {
  std::string method;  // as sent: "GET", "POST", ...
  std::string target;  // as sent: path and query, percent-encoded
  std::string body;
  bool body_too_large = false;  // longer than kMaxRequestBody: not read, answered 413
  bool body_incomplete = false;  // the connection ended before Content-Length bytes came
  std::string framing_error;     // the body's length could not be read ("bad Content-Length: ..."): answered 400
  std::string authorization;     // the Authorization header as sent; empty when absent
};

class PendingReply;
class StreamClient;

struct Reply {
  int status = 200;
  std::string content_type = kJsonType;
  std::string body;
  std::string allow;  // for 405: the methods the path accepts
  std::string www_authenticate;  // for 401: how to authenticate (RFC 6750)
  std::string location;          // for 302: where to
  // Set when the answer is not known yet (a wait): the server then parks the connection off its request threads
  // and asks this for the answer until it has one; the fields above are unused.
  std::shared_ptr<PendingReply> pending;
  // Set when the answer is a stream (GET .../streams/<name>): the server hands the connection to its stream writer
  // (stream_writer.hpp), which writes the answer's head and the records; the fields above are unused.
  std::shared_ptr<StreamClient> stream;
};

// An answer that comes later: POST /api/connect waits for connections. The server asks poll() every few
// milliseconds from one thread of its own, never from a request thread, until it gives the answer; when the server
// stops first it takes stopped() instead. The object is released as soon as it is answered, or when its client
// goes away.
class PendingReply {
 public:
  virtual ~PendingReply() = default;
  virtual std::optional<Reply> poll() = 0;
  virtual Reply stopped() = 0;
};

// The connect command's answer: the outgoing connections of every transport, and those still down.
struct ConnectResult {
  struct Down {
    std::string protocol;
    PeerId peer = 0;
    std::string remote;
  };
  std::size_t up = 0;
  std::size_t total = 0;
  double seconds = 0;  // from the command to the answer
  std::vector<Down> down;
};

// What the pages of one server keep between requests.
struct Pages {
  PageRates rates;                          // the rates on the executive's own pages
  PartitionView* partition_view = nullptr;  // when set, /partition and /api/partition serve it
  // Connect waits in progress (parked off the server's threads for up to 120 s): at most kMaxConnectWaits, more
  // are answered 503 at once.
  std::atomic<unsigned> connect_waits{0};
  std::atomic<bool> stopping{false};  // the executive is stopping: waits in progress end at once (503)
  // Streaming clients connected (or still settling): at most kMaxStreamClients (stream_writer.hpp); shared with
  // each client, which the publisher may release after the server is gone. Null: this server streams nothing.
  std::shared_ptr<std::atomic<unsigned>> stream_clients;
};

// Checks the request against `access` (401, 403), then routes it to the model. An exception from the model becomes
// a 500 with its reason; only a failure to build even that (out of memory) escapes. Without `pages` the pages show
// no rates, there is no partition view and no wait (what PartitionView itself uses to read its own executive).
// A reply with `pending` set must be polled while `pages` and `model` live (the server does, and stops first).
Reply handle_request(ControlModel& model, const Request& request, const AccessCheck& access, Pages* pages = nullptr);

// The routes of daqx-launch's dashboard server: /partition and /api/partition of `view`, / leading to /partition.
Reply handle_dashboard_request(PartitionView& view, const Request& request, const AccessCheck& access);

// JSON (json.cpp). Every function returns one complete document.
std::string json_error(const std::string& reason);
std::string json_ok();
std::string json_application(const ApplicationStatus& application);
std::string json_applications(const std::vector<ApplicationStatus>& applications);
std::string json_transition_result(const TransitionResult& result);
std::string json_pools(const std::vector<PoolStatus>& pools);
std::string json_threads(const std::vector<ThreadStatus>& threads);
std::string json_transports(const std::vector<TransportStatus>& transports);
// `run_seconds` negative: no run (null in the document).
std::string json_executive(const std::string& partition, const std::string& context, std::uint64_t run,
                           double run_seconds, const std::vector<Metric>& metrics);
std::string json_connect_result(const ConnectResult& result);
// GET /api/applications/<tid>/streams: [{"name": "events", "published": 1234, "subscribers": 2}]; each
// subscription's counters are the application's metrics, labelled by stream, subscriber and policy.
std::string json_streams(const std::vector<streams::StreamDescription>& streams);
// GET /api/summary (summary_json.cpp): the context's states, unlabelled counters and gauges, connection counts and
// pool levels in one document whose size does not grow with the partition: what the watchers poll every second.
std::string json_summary(const ControlModel& model);
// Remote addresses of connections down that a transport of the summary names; the count of all is beside them.
inline constexpr std::size_t kSummaryDownListed = 8;
// Subscriptions listed per application in the summary (a publisher may have 64 per stream, 16 streams).
inline constexpr std::size_t kSummarySubscriptionsListed = 32;
// A reply of `status` with a JSON document as its body.
Reply json_reply(int status, std::string body);

// Bodies of the POST routes. Each returns the reason when the body is not what the route takes, else empty.
// {"command":"enable","run":1234}: "run" (a whole number from 1 to kMaxRunNumber) goes with enable only; 0 in
// `run` when the body has none.
std::string parse_transition_body(const std::string& body, std::optional<Command>& command, std::uint64_t& run);
std::string parse_parameter_body(const std::string& body, std::string& name, std::string& value);

// HTML (html.cpp).
// `changes_need_token`: the command buttons and forms then ask for the bearer token.
// `partition_view`: the page links to /partition.
std::string html_status_page(const ControlModel& model, bool changes_need_token, PageRates& rates, bool partition_view);
std::string html_application_page(const ControlModel& model, const ApplicationStatus& application,
                                  bool changes_need_token, PageRates& rates);
std::string html_error_page(int status, const std::string& reason);
std::string html_escape(const std::string& text);

// Prometheus text exposition format 0.0.4 (metrics.cpp); `control` are the control server's own counters.
std::string prometheus_metrics(const ControlModel& model, const std::vector<Metric>& control);

}  // namespace daqx::http
