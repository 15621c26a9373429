// The fake control model: all or nothing transitions under one lock, and fixed answers for the rest.
#include "fake_control_model.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "http_exchange.hpp"
#include "json_reader.hpp"

namespace daqx::test {

namespace {

void append_states(TransitionResult& result, const std::vector<FakeApplication*>& targets) {
  for (const FakeApplication* application : targets) result.states.emplace_back(application->tid, application->state);
}

std::string param(const FakeApplication& application, const std::string& name) {
  for (const ParamView& param : application.params) {
    if (param.name == name) return param.value;
  }
  return {};
}

// Metrics of every kind, with names, help and labels that need sanitizing or escaping on every page.
ApplicationStatus status_of(const FakeApplication& application) {
  ApplicationStatus status;
  status.tid = application.tid;
  status.class_name = application.class_name;
  status.instance = application.instance;
  status.name = "test/" + application.class_name + "/" + std::to_string(application.instance);
  status.state = application.state;
  status.reason = application.reason;
  status.params = application.params;
  status.metrics = {
      {"frames_received", Metric::Kind::counter, 100.0 * application.tid, "Frames received", {}},
      {"queue depth.now", Metric::Kind::gauge, 2, "Frames waiting\nin the queue", {}},
      {"frames_from_peer", Metric::Kind::counter, 7, "Frames from one peer",
       {{"peer", "host \"a\"\\b\nc"}, {"tid", "must not duplicate the tid label"}, {"note", "bad \xff byte"}}}};
  MetricSink sink;
  sink.derived("frame_rate", 50, "a rate: JSON only");
  LatencyHistogram latency;
  latency.record(std::chrono::microseconds(3));
  latency.record(std::chrono::milliseconds(20));
  sink.histogram("build_latency_seconds", latency.snapshot(), "Build latency");
  sink.state("output_state", 1, {"running", "throttled", "blocked"}, "Output");
  status.metrics.insert(status.metrics.end(), sink.metrics().begin(), sink.metrics().end());
  return status;
}

}  // namespace

FakeControlModel::FakeControlModel() {
  auto params = [](std::string rate) {
    return std::vector<ParamView>{
        {"events_per_second", "unsigned", rate, "1000", "Hz", "how many events to generate"},
        {"output", "string", "/dev/null", "/dev/null", "", "where events go <not> \"anywhere\""},
        {"fail_on_enable", "bool", "false", "false", "", "makes the enable hook throw"}};
  };
  applications_ = {{1, "evb::EvM", 0, State::halted, "", params("1000")},
                   {2, "evb::RU", 0, State::halted, "", params("1000")},
                   {3, "evb::BU", 0, State::halted, "", params("1000")},
                   {4, "test::Fragile<&>", 1, State::halted, "", params("5")}};
}

State FakeControlModel::state_of(Tid tid) const {
  std::lock_guard lock(mutex_);
  const FakeApplication* application = find(tid);
  if (application == nullptr) throw std::out_of_range("no application " + std::to_string(tid));
  return application->state;
}

std::vector<ApplicationStatus> FakeControlModel::applications() const {
  std::lock_guard lock(mutex_);
  std::vector<ApplicationStatus> statuses;
  for (const FakeApplication& application : applications_) statuses.push_back(status_of(application));
  return statuses;
}

std::optional<ApplicationStatus> FakeControlModel::application(Tid tid) const {
  std::lock_guard lock(mutex_);
  const FakeApplication* application = find(tid);
  if (application == nullptr) return std::nullopt;
  return status_of(*application);
}

TransitionResult FakeControlModel::transition(std::optional<Tid> tid, Command command) {
  std::lock_guard lock(mutex_);
  TransitionResult result;
  std::vector<FakeApplication*> targets;
  if (tid) {
    FakeApplication* application = find(*tid);
    if (application == nullptr) {
      result.http_status = 404;
      result.message = "no application with tid " + std::to_string(*tid);
      return result;
    }
    targets.push_back(application);
  } else {
    for (FakeApplication& application : applications_) targets.push_back(&application);
  }
  // All or nothing: a refused command changes no state.
  for (FakeApplication* application : targets) {
    if (!next_state(application->state, command)) {
      result.http_status = 409;
      result.message =
          "tid " + std::to_string(application->tid) + ": " + illegal_transition_reason(application->state, command);
      append_states(result, targets);
      return result;
    }
  }
  result.ok = true;
  result.http_status = 200;
  result.message = std::string(to_string(command)) + " done";
  for (FakeApplication* application : targets) {
    if (command == Command::enable && param(*application, "fail_on_enable") == "true") {
      application->state = State::failed;
      application->reason = "enable hook threw: <disk> & \"full\"";
      result.ok = false;
      result.http_status = kApplicationRefusedStatus;
      result.message = "tid " + std::to_string(application->tid) + ": " + application->reason;
      continue;
    }
    application->state = *next_state(application->state, command);
    if (application->state == State::halted) application->reason.clear();
  }
  append_states(result, targets);
  return result;
}

std::string FakeControlModel::set_parameter(Tid tid, const std::string& name, const std::string& value) {
  std::lock_guard lock(mutex_);
  FakeApplication* application = find(tid);
  if (application == nullptr) return "no application with tid " + std::to_string(tid);
  if (application->state != State::halted) {
    return "parameters change only while Halted, and it is " + std::string(to_string(application->state));
  }
  for (ParamView& param : application->params) {
    if (param.name != name) continue;
    if (param.type == "unsigned" && (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)) {
      return "not an unsigned integer: '" + value + "'";
    }
    if (param.type == "bool" && value != "true" && value != "false") return "not a boolean: '" + value + "'";
    param.value = value;
    return {};
  }
  return "unknown parameter '" + name + "'";
}

std::vector<PoolStatus> FakeControlModel::pools() const {
  if (throw_from_pools) throw std::runtime_error("pool registry unavailable");
  PoolStatus pool;
  pool.stats.name = "evb/ru/0/pool";
  pool.stats.allocator = "numa:0";
  pool.stats.bytes_reserved = 1u << 20;
  pool.stats.classes = {{4096, 64, 3, 61, 1, 4, 10, 0, 0}, {65536, 16, 16, 0, 1, 1, 16, 7, 0}};
  pool.numa_node = 0;
  pool.chunks = {{0x7f0000001000u, 1u << 20}};
  return {pool};
}

std::vector<ThreadStatus> FakeControlModel::threads() const {
  return {{"pt/tcp/recv-0", 1234, {2}, {2}}, {"evb/ru/0/work", 1235, {3}, {0, 1, 2, 3}}};
}

// One tcp transport: two outgoing connections (the second down until asked to come up) and one accepted.
std::vector<TransportStatus> FakeControlModel::transports() const {
  if (transports_gone) return {};
  TransportStatus tcp;
  tcp.protocol = "tcp";
  tcp.endpoint = "tcp://127.0.0.1:40000";
  tcp.params = {{"mode", "string", "throughput", "throughput", "", "packing of small frames"}};
  tcp.metrics = {{"frames_sent", Metric::Kind::counter, 42, "Frames sent", {}},
                 {"sends_would_block", Metric::Kind::counter, 3, "Sends that would block", {}}};
  MetricSink settings;
  settings.setting("busy_poll", 1, "a setting: JSON only");
  tcp.metrics.push_back(settings.metrics()[0]);
  tcp.connections = {
      {1, "10.0.0.2:40000", true, {{"frames_sent", Metric::Kind::counter, 40, "Frames sent", {}},
                                   {"bytes_sent", Metric::Kind::counter, 4e9, "Bytes sent", {}}}},
      {2, "10.0.0.3:40000", false, {{"frames_sent", Metric::Kind::counter, 2, "Frames sent", {}}}},
      {3, "10.0.0.4:51234", true, {}}};  // accepted from a peer: not ours to open
  tcp.connections[0].outgoing = tcp.connections[1].outgoing = true;
  tcp.connections[0].peer_endpoint = "tcp://10.0.0.2:40000";
  tcp.connections[0].peer_context = "http://10.0.0.2:9000";
  tcp.connections[1].peer_endpoint = "tcp://10.0.0.3:40000";
  tcp.connections[1].peer_context = "http://10.0.0.3:9000";
  tcp.connections[1].up = second_up_.load();
  return {tcp};
}

void FakeControlModel::open_connections() {
  ++connect_requests;
  if (down_connection_comes_up) second_up_ = true;
}

std::vector<Metric> FakeControlModel::executive_metrics() const {
  return {{"frames_dispatched", Metric::Kind::counter, 1e6, "Frames handed to local applications", {}},
          {"uptime_seconds", Metric::Kind::gauge, 12.5, "Seconds since start", {}},
          {"bad_frames", Metric::Kind::counter, std::nan(""), "Frames refused", {}}};
}

FakeApplication* FakeControlModel::find(Tid tid) {
  for (FakeApplication& application : applications_) {
    if (application.tid == tid) return &application;
  }
  return nullptr;
}

ServedControlModel::ServedControlModel(const ControlServerSecurity& security)
    : server(model, "127.0.0.1", 0, 2, security) {
  server.start();
}

bool still_answers(std::uint16_t port) {
  const HttpAnswer answer = get(port, "/api/applications");
  return answer.status == 200 && parse_json(answer.body).size() == 4;
}

}  // namespace daqx::test
